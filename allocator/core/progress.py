"""What a minimisation has reached, shared by ``minimize`` and the methods' anytime routines:
the step between possible peaks (``peak_granularity``) and the bookkeeping of the best
placement, the proven bound and their history (``Progress``), which runs the starting
heuristics and the fallback heuristic the method table declares (``Roles``; the registry's
``starting_heuristics`` and ``fallback_heuristic``).

It sits in ``core`` beside the registry because the methods' anytime routines (``minimalloc``'s,
``telamalloc``'s) use it: they run other methods by name through ``solve``, and nothing here
imports a method module.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from allocator.core.kernel_clock import work_clock
from allocator.core.problem import AllocationResult, MinimizeResult, Problem, Solution
from allocator.core.registry import MinimizeRequest, fallback_heuristic, solve, starting_heuristics
from allocator.core.validate import lower_bound

__all__ = ["FALLBACK_HEURISTIC", "STARTING_HEURISTICS", "Progress", "peak_granularity"]

#: the registry's ``starting_heuristics()`` and ``fallback_heuristic()`` (``Roles`` in the method
#: table say which, in which order and why), read once for the scripts that import them; the
#: allocator's own code asks the registry
STARTING_HEURISTICS: tuple[str, ...] = starting_heuristics()
FALLBACK_HEURISTIC: str = fallback_heuristic()


def peak_granularity(problem: Problem) -> int:
    """The step between possible peaks: every peak is a multiple of the gcd of the sizes, the
    alignments above 1 and the fixed offsets (shared by the anytime searches' probes).

    >>> from allocator.core.problem import Buffer
    >>> peak_granularity(Problem([Buffer("a", 0, 1, 12), Buffer("b", 0, 1, 8, alignment=4)]))
    4
    """
    _, _, sizes, alignments, fixed = problem.arrays(copy=False)
    values = np.concatenate((sizes, alignments[alignments > 1], fixed[fixed > 0]))
    return int(np.gcd.reduce(values)) if len(values) else 1


class Progress:
    """What a minimisation has reached: the best placement, the proven lower bound and their
    history. ``result`` is the ``MinimizeResult`` so far; ``improved`` records a change and
    hands that result to the caller's ``on_improve``.
    """

    def __init__(self, problem: Problem, request: MinimizeRequest) -> None:
        self.request = request
        self.capacity = problem.capacity  #: the most the answer may use (bytes), None for no limit
        self.free = problem.with_capacity(None)  #: the problem without its capacity: what is placed
        self.bound = lower_bound(self.free)  #: no placement has a lower peak (bytes); LOAD to begin with
        self.best: Solution | None = None  #: the best placement found (validated)
        self.best_peak = -1  #: its peak (bytes); -1 without one
        self.history: list[tuple[float, int, int]] = []
        self.probes: list[tuple[int, str, float]] = []
        self.stats: dict[str, float] = {"nodes": 0, "backtracks": 0}
        self.reason = ""
        self.ran_out = False  #: a run passed to ``keep`` ended with status "timeout"
        self.reported: tuple[int, int] | None = None  #: (peak, bound) last recorded by ``improved``

    def keep(self, solved: AllocationResult) -> None:
        """Keep ``solved``'s placement (validated by ``solve``) when it is the best so far."""
        self.ran_out |= solved.status == "timeout"
        if solved.solution is not None:
            self.offer(solved.solution, int(solved.peak or 0))

    def offer(self, placement: Solution, peak: int) -> None:
        """Keep a validated ``placement`` of peak ``peak`` when it is the best so far."""
        if self.best is None or peak < self.best_peak:
            self.best, self.best_peak = placement, peak

    def reached_bound(self) -> bool:
        """Whether the best placement meets the proven lower bound (it is optimal)."""
        return self.best is not None and self.best_peak <= self.bound

    def improved(self) -> None:
        """Record the current peak and bound (the peak or the bound improved) and report them;
        nothing when neither changed since the last call (a routine may call it after every
        step without reporting a placement twice)."""
        if self.reported == (self.best_peak, self.bound):
            return
        self.reported = (self.best_peak, self.bound)
        self.history.append((work_clock() - self.request.began, self.best_peak, self.bound))
        if self.request.on_improve is not None:
            self.request.on_improve(self.result(False))

    def result(self, timed_out: bool) -> MinimizeResult:
        """The result so far; ``timed_out``: the time or node budget ended the search."""
        request = self.request
        seconds = work_clock() - request.began
        if self.best is None:
            return MinimizeResult(request.method, None, None, self.bound, False, seconds, True, list(self.history),
                                  list(self.probes), dict(self.stats), self.capacity, self.reason)
        return MinimizeResult(request.method, self.best, self.best_peak, min(self.bound, self.best_peak),
                              self.best_peak <= self.bound, seconds, timed_out and self.best_peak > self.bound,
                              list(self.history), list(self.probes), dict(self.stats), self.capacity, self.reason)

    def run_heuristics(self, names: Sequence[str], until: float) -> None:
        """Run the methods ``names`` in turn on the problem without its capacity, each with what
        is left of the time up to ``until`` (none starts after it), keeping the best placement.

        They stop as soon as a placement meets the lower bound: it is optimal, and nothing a
        later heuristic finds can be lower (on a large trace that one heuristic packs at LOAD,
        the heuristics after it would take most of the time). Each placement that improves on
        the best is reported (``improved``) as soon as it exists, so that Ctrl-C during the
        next heuristic or the search after them keeps it."""
        for name in names:
            if work_clock() >= until or self.reached_bound():
                break
            self.keep(solve(self.free, name, timeout=max(until - work_clock(), 1e-3)))
            if self.best is not None:
                self.improved()

    def ensure_placement(self) -> bool:
        """Whether there is a placement to improve on: when no heuristic has placed the buffers,
        the registry's ``fallback_heuristic`` gets the rest of the time. Without one, ``reason``
        says why."""
        request = self.request
        if self.best is None and work_clock() < request.deadline:
            fallback = solve(self.free, fallback_heuristic(),
                             timeout=max(request.deadline - work_clock(), 1e-3))
            self.keep(fallback)
            if self.best is None:
                self.reason = f"no placement within {request.timeout:g} s: {fallback.reason}"
        if self.best is None:
            self.reason = self.reason or f"no placement within {request.timeout:g} s"
            return False
        return True

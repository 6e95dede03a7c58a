"""Anytime peak minimisation: the best placement found so far and a proven lower bound.

``minimize(problem, method=..., timeout=...)`` looks for the lowest peak. It checks its
arguments, then asks the registry what the method can do (``Capabilities``), never its name:

* a method with an anytime routine of its own (``Capabilities.anytime``) runs it:
  ``minimalloc`` starts from the best of the fast greedy heuristics (``STARTING_HEURISTICS``)
  and bisects between LOAD and that peak with the exact canonical search
  (``allocator.minimalloc.canonical_bisection``); ``auto`` starts from its own heuristics and
  bisects the same way; ``telamalloc`` runs its descent (``telamalloc_minimize``);
* any other method runs once, without a capacity, after ``FALLBACK_HEURISTIC`` has placed the
  buffers (in half of the time at most) as insurance: the method's own placement is reported
  when it returns one, the insurance only when it does not (``reason`` then says so), so a
  method that runs out of time costs no more than the timeout. Its peak is reported against
  LOAD, or against the method's own proven bound when its ``stats`` have a ``"bound"`` (the
  exact methods ``cpsat`` and ``mip`` do).

The result is ``optimal`` when the peak meets the lower bound. Peaks are multiples of
``peak_granularity`` (the gcd of all sizes, alignments and fixed offsets), so probes use that
granularity.

A capacity on the problem is an upper limit on the answer (decision recorded here, and what
``accelsim alloc --minimize --capacity`` means): the peak is still minimised, but no probe
goes above the capacity, and the search stops as soon as the lower bound passes it (proven:
nothing fits). ``MinimizeResult.status`` then says ``"infeasible"``; ``"timeout"`` when the
time (or node budget) ran out before any placement fitted. The placement returned is always
the best found, and fits only when ``MinimizeResult.fits``.

Time: ``timeout`` bounds the whole call. No probe starts after the deadline and each probe
stops within milliseconds of its own share of it (the compiled search reads the clock by
work done, not by nodes). A time limit is a limit, also when nothing was placed: a problem so
large that not even ``FALLBACK_HEURISTIC`` places it within the time gets a result without a
placement (``solution`` and ``peak`` None, status ``"timeout"``, ``reason`` says how far it
got) rather than an overrun. ``node_limit`` bounds the exact search's nodes instead, so that a
minimisation that gives up is deterministic (tests use it: they never race the clock); only a
method whose routine declares it (``Capabilities.node_limit``) takes one.

``Progress`` is the shared bookkeeping of a minimisation (best placement, bound, history,
``on_improve``), used here and by the routines that start from the greedy heuristics.

Reporting (decision of issue 22, so that Ctrl-C keeps every method's best): every routine
hands ``on_improve`` its first placement as soon as it exists, a starting heuristic's (or, for
a method run once, the insurance), and then every placement that lowers the peak and every
bound that rises, each validated; the last result reported is the answer so far. A routine
whose search builds placements of its own (``telamalloc``'s descent) validates them before
reporting them, only when a caller asked for reports.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from allocator.problem import AllocationResult, InvalidProblemError, MinimizeResult, Problem, Solution
from allocator.registry import METHODS, MinimizeRequest, check_problem, method_entry, solve
from allocator.validate import lower_bound

__all__ = ["FALLBACK_HEURISTIC", "STARTING_HEURISTICS", "MinimizeResult", "Progress", "minimize",
           "peak_granularity"]

#: heuristics tried, in this order, for the first incumbent of an anytime search (``minimalloc``'s,
#: ``telamalloc``'s), sharing the first third of the time; they stop early once one reaches the
#: lower bound (``Progress.run_heuristics``). greedy-by-size goes first: among the cheapest, and
#: the best of them on random instances too large for a second heuristic in the time (300,000
#: buffers in ``docs/bench/limits_minimize.csv``) and on pangu_2.6B's first pass. TelaMalloc's
#: row-by-row skyline follows: since its queue of floors replaced the O(n^2) scan it costs about
#: as much as a greedy placement, and it gives the lowest peak of the five on every trace
#: measured (at LOAD on G_1, pangu_2.6B and issue 14's 62,185-buffer stand-in, 0.26 % on S_1)
#: and the best of them on the challenging suite; then load-best-fit (at LOAD on G_1 and the
#: stand-in, 0.26 % on S_1)
STARTING_HEURISTICS = ("greedy-by-size", "telamalloc-heuristic", "load-best-fit", "best-fit", "first-fit")
#: what places the buffers when no starting heuristic did within its time (greedy-by-size: see
#: above), and the insurance placement of a method without an anytime routine
FALLBACK_HEURISTIC = "greedy-by-size"


def peak_granularity(problem: Problem) -> int:
    """The step between possible peaks: every peak is a multiple of the gcd of the sizes, the
    alignments above 1 and the fixed offsets (shared by the anytime searches' probes).

    >>> from allocator.problem import Buffer
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
        self.history.append((time.perf_counter() - self.request.began, self.best_peak, self.bound))
        if self.request.on_improve is not None:
            self.request.on_improve(self.result(False))

    def result(self, timed_out: bool) -> MinimizeResult:
        """The result so far; ``timed_out``: the time or node budget ended the search."""
        request = self.request
        seconds = time.perf_counter() - request.began
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
        later heuristic finds can be lower (on a 62,185-buffer trace that a heuristic packs at
        LOAD, the heuristics after it took most of the time). Each placement that improves on
        the best is reported (``improved``) as soon as it exists, so that Ctrl-C during the
        next heuristic or the search after them keeps it."""
        for name in names:
            if time.perf_counter() >= until or self.reached_bound():
                break
            self.keep(solve(self.free, name, timeout=max(until - time.perf_counter(), 1e-3)))
            if self.best is not None:
                self.improved()

    def ensure_placement(self) -> bool:
        """Whether there is a placement to improve on: when no heuristic has placed the buffers,
        ``FALLBACK_HEURISTIC`` gets the rest of the time. Without one, ``reason`` says why."""
        request = self.request
        if self.best is None and time.perf_counter() < request.deadline:
            fallback = solve(self.free, FALLBACK_HEURISTIC, timeout=max(request.deadline - time.perf_counter(), 1e-3))
            self.keep(fallback)
            if self.best is None:
                self.reason = f"no placement within {request.timeout:g} s: {fallback.reason}"
        if self.best is None:
            self.reason = self.reason or f"no placement within {request.timeout:g} s"
            return False
        return True


def _check_arguments(problem: object, method: object, timeout: object, node_limit: object,
                     load_share: object) -> None:
    check_problem(problem, "minimize")
    method_entry(method)  # a string naming a registered method
    assert isinstance(method, str)
    if (not isinstance(timeout, int | float) or isinstance(timeout, bool) or not math.isfinite(timeout)
            or timeout <= 0):
        raise InvalidProblemError(f"timeout must be a positive, finite number of seconds, got {timeout!r}")
    capabilities = METHODS[method].capabilities
    if node_limit is not None:
        if not isinstance(node_limit, int) or isinstance(node_limit, bool) or node_limit < 1:
            raise InvalidProblemError(f"node_limit must be a positive integer or None, got {node_limit!r}")
        if not capabilities.node_limit:
            able = ", ".join(sorted(name for name, entry in METHODS.items() if entry.capabilities.node_limit))
            raise InvalidProblemError(f"node_limit bounds the exact probes of an anytime search; method {method!r} "
                                      f"has none (methods with one: {able})")
    if capabilities.anytime is None and capabilities.needs_capacity:
        raise InvalidProblemError(f"method {method!r} needs a capacity and has no anytime search of its own: "
                                  "it cannot minimise a peak")
    if not isinstance(load_share, int | float) or isinstance(load_share, bool) or not 0 < load_share <= 1:
        raise InvalidProblemError(f"load_share must be a share of the time in (0, 1], got {load_share!r}")


def minimize(problem: Problem, method: str = "minimalloc", timeout: float = 10.0, options: object | None = None,
             load_share: float = 0.6, node_limit: int | None = None,
             on_improve: Callable[[MinimizeResult], None] | None = None) -> MinimizeResult:
    """Minimise the peak of ``problem`` within ``timeout`` seconds.

    A method with an anytime routine (``METHODS[method].anytime``) runs it:
    ``"minimalloc"`` the canonical bisection (see ``allocator.minimalloc.canonical_bisection``),
    ``"auto"`` the same from the best of its heuristics, ``"telamalloc"`` its own descent
    (``allocator.telamalloc.telamalloc_minimize``: bisection with step-limited searches, so its
    bound stays LOAD unless a probe proves a capacity infeasible). Any other registered method
    is run once without a capacity, after the insurance (see the module docstring), and its peak
    reported against LOAD or its own proven ``stats["bound"]``. ``options`` is the method's own
    options record, an instance of ``METHODS[method].options`` (``MiniMallocOptions`` for
    minimalloc and auto, ``TelaMallocOptions`` for telamalloc, ...), or None for its defaults;
    a method run once gets it too.
    ``load_share`` is the share of the time (and of ``node_limit``) given to the first probe at
    LOAD. Returns a validated placement, or none (status ``"timeout"``) when not even
    ``FALLBACK_HEURISTIC`` placed the buffers within the time.

    ``problem.capacity``, when set, is an upper limit on the answer (see the module
    docstring): with the canonical bisection no probe goes above it and a proof that nothing
    fits ends the search; with the other methods it only judges the result. Read
    ``result.status`` / ``result.fits``.

    ``timeout`` is in seconds, positive and finite. ``node_limit`` (only for a method whose
    routine declares ``Capabilities.node_limit``: ``minimalloc``, ``auto``) bounds the nodes of
    all exact probes together, split like the time (the first probe gets ``load_share`` of it,
    each later one half of what is left); with a timeout that does not bind, the result is then
    the same on every machine. ``on_improve`` is called with the result so far whenever the
    peak or the bound improves, so a caller interrupted by Ctrl-C (KeyboardInterrupt, which
    propagates) still has the best placement found.

    Raises ``TypeError`` when ``problem`` is not a ``Problem``, ``method`` not a string or
    ``options`` not the method's record (``InvalidOptionError`` for a field of the wrong type);
    ``InvalidProblemError`` (one line) for an unknown method, a timeout that is zero, negative,
    infinite or not a number, a bad ``node_limit`` or ``load_share``, or a method that needs a
    capacity and has no anytime routine.

    >>> from allocator.problem import Buffer
    >>> r = minimize(Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4), Buffer("c", 2, 4, 4)]), timeout=5)
    >>> r.peak, r.lower_bound, r.optimal, r.status
    (8, 8, True, 'solved')
    >>> r = minimize(Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4)], capacity=6), timeout=5)
    >>> r.peak, r.lower_bound, r.status
    (8, 8, 'infeasible')
    """
    _check_arguments(problem, method, timeout, node_limit, load_share)
    entry = METHODS[method]
    if options is not None:
        options = entry.record(options)  # the method's own record, its fields' types checked
    began = time.perf_counter()
    request = MinimizeRequest(method, float(timeout), began, began + timeout, options, float(load_share), node_limit,
                              on_improve)
    routine = entry.anytime
    if routine is not None:
        return routine(problem, request)
    return _run_once(problem, request)


def _run_once(problem: Problem, request: MinimizeRequest) -> MinimizeResult:
    """One run of a method without an anytime routine, with what is left after the insurance."""
    progress = Progress(problem, request)
    method, timeout = request.method, request.timeout
    insurance = None
    if method != FALLBACK_HEURISTIC:  # half of the time at most: the method gets the other half
        insurance = solve(progress.free, FALLBACK_HEURISTIC, timeout=timeout / 2)
        if insurance.solution is not None and request.on_improve is not None:
            # reported at once, so that a caller interrupted during the method's run (Ctrl-C) keeps a
            # placement; it stands in for the answer only if the method returns none (below)
            interim = copy.copy(progress)  # the same problem and bound, its own best and history
            interim.history = []
            interim.keep(insurance)
            interim.reason = f"{method} still running; the placement is {FALLBACK_HEURISTIC}'s, made first as insurance"
            interim.improved()
    solved = solve(progress.free, method, timeout=max(request.deadline - time.perf_counter(), 1e-3),
                   options=request.options)
    progress.keep(solved)
    if "bound" in solved.stats:
        progress.bound = max(progress.bound, int(solved.stats["bound"]))  # an exact method's proven bound on the peak
    if progress.best is None and insurance is not None:
        progress.keep(insurance)
        if progress.best is not None:
            progress.reason = (f"{method} returned no placement ({solved.reason or solved.status}); "
                               f"the placement is {FALLBACK_HEURISTIC}'s, made first as insurance")
    if progress.best is None:
        progress.reason = f"no placement within {timeout:g} s: {method}: {solved.reason or solved.status}"
        if insurance is not None:
            progress.reason += f"; the insurance, {FALLBACK_HEURISTIC} in half the time: {insurance.reason}"
        return progress.result(True)
    progress.improved()
    return progress.result(progress.ran_out or time.perf_counter() - request.began >= timeout * 0.99)

"""Anytime peak minimisation: the best placement found so far and a proven lower bound.

``minimize(problem, timeout=...)`` ignores the problem's capacity and looks for the lowest
peak. It starts from the best of the fast greedy heuristics (``STARTING_HEURISTICS``, the
row-by-row skyline of TelaMalloc first; so it always has a placement to return), takes LOAD
(the most bytes live at one step) as the lower bound, and then probes
capacities between the two with the exact canonical search:

1. LOAD itself first, with a share of the time: many real instances pack perfectly, and then
   the incumbent is proven optimal at once;
2. then bisection between the best lower bound and the incumbent's peak minus one step. A
   probe that finds a placement lowers the incumbent to that placement's peak; a probe whose
   search space is exhausted proves that capacity infeasible and raises the lower bound; a
   probe that runs out of its time moves the next probe halfway up towards the incumbent.

Peaks are multiples of the gcd of all sizes, alignments and fixed offsets, so probes use that
granularity. The result is ``optimal`` when the peak meets the lower bound.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from allocator.minimalloc import MiniMallocOptions, PreparedProblem, canonical_search
from allocator.problem import AllocationResult, InvalidProblemError, Problem, Solution
from allocator.registry import METHODS, solve
from allocator.telamalloc import STARTING_HEURISTICS, TelaMallocOptions, peak_granularity, telamalloc_minimize
from allocator.validate import check, lower_bound


@dataclass
class MinimizeResult:
    """The best placement found, its peak, the best proven lower bound and how they were reached."""

    method: str
    solution: Solution
    peak: int  #: highest address used by ``solution`` (bytes)
    lower_bound: int  #: no placement has a lower peak (bytes)
    optimal: bool  #: ``peak == lower_bound``
    seconds: float
    timed_out: bool  #: the time ran out before optimality was proven
    history: list[tuple[float, int, int]] = field(default_factory=list)  #: (seconds, peak, lower bound) on change
    probes: list[tuple[int, str, float]] = field(default_factory=list)  #: (capacity, outcome, seconds) per probe
    stats: dict[str, float] = field(default_factory=dict)

    @property
    def gap(self) -> float:
        """(peak - lower bound) / lower bound."""
        return (self.peak - self.lower_bound) / self.lower_bound if self.lower_bound else 0.0


def minimize(problem: Problem, method: str = "minimalloc", timeout: float = 10.0,
             options: MiniMallocOptions | TelaMallocOptions | None = None, load_share: float = 0.6) -> MinimizeResult:
    """Minimise the peak of ``problem`` within ``timeout`` seconds (its capacity is ignored).

    ``method="minimalloc"`` runs the anytime search above; ``"telamalloc"`` its own descent
    (``allocator.telamalloc.telamalloc_minimize``: bisection with step-limited searches, so
    its bound stays LOAD unless a probe proves a capacity infeasible); any other registered method is run
    once without a capacity and with the whole ``timeout``, and its peak reported against
    LOAD, or against the method's own proven bound when its ``stats`` have a ``"bound"``
    (the exact methods ``cpsat`` and ``mip`` do). If that method returns no placement the
    greedy heuristics supply one. ``load_share`` is the share of the time given to the first
    probe at LOAD. Always returns a validated placement.

    >>> from allocator.problem import Buffer
    >>> r = minimize(Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4), Buffer("c", 2, 4, 4)]), timeout=5)
    >>> r.peak, r.lower_bound, r.optimal
    (8, 8, True)
    """
    if method not in METHODS:
        raise InvalidProblemError(f"unknown allocator method {method!r}; known: {', '.join(sorted(METHODS))}")
    if not timeout > 0:
        raise InvalidProblemError(f"timeout must be positive seconds, got {timeout!r}")
    began = time.perf_counter()
    deadline = began + timeout
    free = problem.with_capacity(None)
    bound = lower_bound(free)
    history: list[tuple[float, int, int]] = []
    probes: list[tuple[int, str, float]] = []
    best: Solution | None = None
    best_peak = -1

    def keep(result: AllocationResult) -> None:
        nonlocal best, best_peak
        if result.solution is not None and (best is None or (result.peak or 0) < best_peak):
            best, best_peak = result.solution, int(result.peak or 0)

    if method == "telamalloc":
        tela = options if isinstance(options, TelaMallocOptions) else TelaMallocOptions()
        descent = telamalloc_minimize(problem, deadline, tela)
        placed = Solution({b.id: int(o) for b, o in zip(free.buffers, descent.offsets, strict=True)})
        check(free, placed)
        seconds = time.perf_counter() - began
        optimal = descent.peak <= descent.bound
        return MinimizeResult(method, placed, descent.peak, descent.bound, optimal, seconds,
                              not optimal and descent.timed_out,
                              [(t, peak, descent.bound) for t, peak in descent.history], [],
                              {"nodes": descent.stats["steps"], "probes": descent.stats["probes"]})
    starters = STARTING_HEURISTICS if method == "minimalloc" else (method,)
    for name in starters:
        if best is not None and time.perf_counter() - began > timeout / 3:
            break  # keep the time for the search; one heuristic already gave an incumbent
        result = solve(free, name, timeout=max(deadline - time.perf_counter(), 1e-3))
        keep(result)
        if method != "minimalloc" and "bound" in result.stats:
            bound = max(bound, int(result.stats["bound"]))  # an exact method's proven bound on the peak
    if best is None:  # the method ran out of time without a placement: fall back to the heuristics
        for name in STARTING_HEURISTICS:
            if best is not None and time.perf_counter() >= deadline:
                break  # one placement is enough once the time is up
            keep(solve(free, name))
    assert best is not None, "greedy heuristics always place every buffer"
    history.append((time.perf_counter() - began, best_peak, bound))
    stats: dict[str, float] = {"nodes": 0, "backtracks": 0}
    if method == "minimalloc" and best_peak > bound and len(problem):
        step = peak_granularity(problem)
        bound = -(-bound // step) * step
        data = PreparedProblem(free) if time.perf_counter() < deadline else None
        opts = options if isinstance(options, MiniMallocOptions) else MiniMallocOptions()
        first = True
        target = bound
        while data is not None and best_peak > bound:
            now = time.perf_counter()
            if now >= deadline:
                break
            if first:
                probe_deadline = now + load_share * (deadline - now)
                target = bound
            else:
                probe_deadline = now + max(0.5 * (deadline - now), min(1.0, deadline - now))
            outcome = canonical_search(free, target, opts, probe_deadline, prepared=data)
            stats["nodes"] += outcome.nodes
            stats["backtracks"] += outcome.backtracks
            probes.append((target, outcome.status, time.perf_counter() - now))
            if outcome.status == "solved":
                assert outcome.offsets is not None
                placement = Solution({b.id: int(o) for b, o in zip(free.buffers, outcome.offsets, strict=True)})
                check(free, placement)  # the heuristics' placements were validated by solve()
                best, best_peak = placement, placement.peak(free)
            elif outcome.status == "infeasible":
                bound = target + step
            highest = best_peak - step  # the next probe is in [bound, best_peak - step]
            if bound > highest:
                break
            if outcome.status == "timeout" and not first:
                target = (target + highest + step) // (2 * step) * step  # halfway up to the incumbent
            else:
                target = (bound + highest) // (2 * step) * step
            target = min(max(target, bound), highest)
            first = False
            history.append((time.perf_counter() - began, best_peak, bound))
    seconds = time.perf_counter() - began
    optimal = best_peak <= bound
    return MinimizeResult(
        method, best, best_peak, min(bound, best_peak), optimal, seconds, not optimal and seconds >= timeout * 0.99,
        history, probes, stats,
    )


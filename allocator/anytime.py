"""Anytime peak minimisation: the best placement found so far and a proven lower bound.

``minimize(problem, timeout=...)`` looks for the lowest peak. It starts from the best of the
fast greedy heuristics (``STARTING_HEURISTICS``, greedy-by-size then TelaMalloc's row-by-row
skyline and others, in the first third of the time; when none finishes in it,
``FALLBACK_HEURISTIC`` gets the rest of the time), takes
LOAD (the most bytes live at one step) as the lower bound, and then probes capacities between
the two with the exact canonical search:

1. LOAD itself first, with a share of the time: many real instances pack perfectly, and then
   the incumbent is proven optimal at once;
2. then bisection between the best lower bound and the incumbent's peak minus one step. A
   probe that finds a placement lowers the incumbent to that placement's peak; a probe whose
   search space is exhausted proves that capacity infeasible and raises the lower bound; a
   probe that runs out of its time moves the next probe halfway up towards the incumbent.

Peaks are multiples of the gcd of all sizes, alignments and fixed offsets, so probes use that
granularity. The result is ``optimal`` when the peak meets the lower bound.

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
got) rather than an overrun. A method other than ``minimalloc`` and ``telamalloc`` runs after
``FALLBACK_HEURISTIC`` has placed the buffers (in half of the time at most), as insurance: the
method's own placement is reported when it returns one, the insurance only when it does not
(``reason`` then says so), so a method that runs out of time costs no more than the timeout.
``node_limit`` bounds the exact search's nodes instead, so that a minimisation that gives up is
deterministic (tests use it: they never race the clock).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from allocator.minimalloc import MAX_VALUE, MiniMallocOptions, PreparedProblem, canonical_search
from allocator.problem import AllocationResult, InvalidProblemError, Problem, Solution, Status
from allocator.registry import METHODS, solve
from allocator.telamalloc import (
    FALLBACK_HEURISTIC,
    STARTING_HEURISTICS,
    TelaMallocOptions,
    peak_granularity,
    telamalloc_minimize,
)
from allocator.validate import check, lower_bound


@dataclass
class MinimizeResult:
    """The best placement found, its peak, the best proven lower bound and how they were reached."""

    method: str
    solution: Solution | None  #: the best placement found (validated), None if none in time; see ``fits``
    peak: int | None  #: highest address used by ``solution`` (bytes), None without one
    lower_bound: int  #: no placement has a lower peak (bytes)
    optimal: bool  #: ``peak == lower_bound``
    seconds: float
    timed_out: bool  #: the time (or the node budget) ran out before optimality was proven
    history: list[tuple[float, int, int]] = field(default_factory=list)  #: (seconds, peak, lower bound) on change
    probes: list[tuple[int, str, float]] = field(default_factory=list)  #: (capacity, outcome, seconds) per probe
    stats: dict[str, float] = field(default_factory=dict)
    capacity: int | None = None  #: the problem's capacity: the most the answer may use (bytes), None for no limit
    reason: str = ""  #: one line: why there is no placement, or whose placement it is when not the method's

    @property
    def gap(self) -> float:
        """(peak - lower bound) / lower bound (infinite without a placement)."""
        if self.peak is None:
            return math.inf
        return (self.peak - self.lower_bound) / self.lower_bound if self.lower_bound else 0.0

    @property
    def fits(self) -> bool:
        """There is a placement and it fits the capacity (any placement fits without one)."""
        return self.peak is not None and (self.capacity is None or self.peak <= self.capacity)

    @property
    def status(self) -> Status:
        """``"solved"`` when the placement fits, ``"infeasible"`` when the lower bound proves that
        nothing fits the capacity, ``"timeout"`` when the time or node budget ran out first, and
        ``"failed"`` when a method without proofs found nothing that fits."""
        if self.fits:
            return "solved"
        if self.capacity is not None and self.lower_bound > self.capacity:
            return "infeasible"
        return "timeout" if self.timed_out else "failed"


def _check_arguments(method: str, timeout: object, node_limit: object, load_share: object) -> None:
    if method not in METHODS:
        raise InvalidProblemError(f"unknown allocator method {method!r}; known: {', '.join(sorted(METHODS))}")
    if (not isinstance(timeout, int | float) or isinstance(timeout, bool) or not math.isfinite(timeout)
            or timeout <= 0):
        raise InvalidProblemError(f"timeout must be a positive, finite number of seconds, got {timeout!r}")
    if node_limit is not None:
        if not isinstance(node_limit, int) or isinstance(node_limit, bool) or node_limit < 1:
            raise InvalidProblemError(f"node_limit must be a positive integer or None, got {node_limit!r}")
        if method != "minimalloc":
            raise InvalidProblemError(f"node_limit bounds the exact probes of method 'minimalloc'; "
                                      f"method {method!r} has none")
    if not isinstance(load_share, int | float) or isinstance(load_share, bool) or not 0 < load_share <= 1:
        raise InvalidProblemError(f"load_share must be a share of the time in (0, 1], got {load_share!r}")


def minimize(problem: Problem, method: str = "minimalloc", timeout: float = 10.0,
             options: MiniMallocOptions | TelaMallocOptions | None = None, load_share: float = 0.6,
             node_limit: int | None = None,
             on_improve: Callable[[MinimizeResult], None] | None = None) -> MinimizeResult:
    """Minimise the peak of ``problem`` within ``timeout`` seconds.

    ``method="minimalloc"`` runs the anytime search above; ``"telamalloc"`` its own descent
    (``allocator.telamalloc.telamalloc_minimize``: bisection with step-limited searches, so
    its bound stays LOAD unless a probe proves a capacity infeasible); any other registered method is run
    once without a capacity and with the whole ``timeout``, and its peak reported against
    LOAD, or against the method's own proven bound when its ``stats`` have a ``"bound"``
    (the exact methods ``cpsat`` and ``mip`` do). If that method returns no placement,
    ``FALLBACK_HEURISTIC``'s, made first as insurance, is reported instead. ``load_share`` is
    the share of the time (and of ``node_limit``) given to the first probe at LOAD. Returns a
    validated placement, or none (status ``"timeout"``) when not even ``FALLBACK_HEURISTIC``
    placed the buffers within the time.

    ``problem.capacity``, when set, is an upper limit on the answer (see the module
    docstring): with ``"minimalloc"`` no probe goes above it and a proof that nothing fits
    ends the search; with the other methods it only judges the result. Read
    ``result.status`` / ``result.fits``.

    ``timeout`` is in seconds, positive and finite. ``node_limit`` (``"minimalloc"`` only)
    bounds the nodes of all exact probes together, split like the time (the first probe gets
    ``load_share`` of it, each later one half of what is left); with a timeout that does not
    bind, the result is then the same on every machine. ``on_improve`` is called with the
    result so far whenever the peak or the bound improves, so a caller interrupted by Ctrl-C
    (KeyboardInterrupt, which propagates) still has the best placement found.

    Raises ``InvalidProblemError`` (one line) for an unknown method, a timeout that is zero,
    negative, infinite or not a number, or a bad ``node_limit`` or ``load_share``.

    >>> from allocator.problem import Buffer
    >>> r = minimize(Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4), Buffer("c", 2, 4, 4)]), timeout=5)
    >>> r.peak, r.lower_bound, r.optimal, r.status
    (8, 8, True, 'solved')
    >>> r = minimize(Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4)], capacity=6), timeout=5)
    >>> r.peak, r.lower_bound, r.status
    (8, 8, 'infeasible')
    """
    _check_arguments(method, timeout, node_limit, load_share)
    began = time.perf_counter()
    deadline = began + timeout
    capacity = problem.capacity
    free = problem.with_capacity(None)
    bound = lower_bound(free)
    history: list[tuple[float, int, int]] = []
    probes: list[tuple[int, str, float]] = []
    best: Solution | None = None
    best_peak = -1
    method_timed_out = False
    stats: dict[str, float] = {"nodes": 0, "backtracks": 0}

    reason = ""

    def result(timed_out: bool) -> MinimizeResult:
        if best is None:
            return MinimizeResult(method, None, None, bound, False, time.perf_counter() - began, True,
                                  list(history), list(probes), dict(stats), capacity, reason)
        return MinimizeResult(method, best, best_peak, min(bound, best_peak), best_peak <= bound,
                              time.perf_counter() - began, timed_out and best_peak > bound, list(history),
                              list(probes), dict(stats), capacity, reason)

    def improved() -> None:
        history.append((time.perf_counter() - began, best_peak, bound))
        if on_improve is not None:
            on_improve(result(False))

    def keep(solved: AllocationResult) -> None:
        nonlocal best, best_peak, method_timed_out
        method_timed_out |= solved.status == "timeout"
        if solved.solution is not None and (best is None or (solved.peak or 0) < best_peak):
            best, best_peak = solved.solution, int(solved.peak or 0)

    if method == "telamalloc":
        tela = options if isinstance(options, TelaMallocOptions) else TelaMallocOptions()
        descent = telamalloc_minimize(problem, deadline, tela)
        if descent.offsets is None:
            reason = descent.reason
            return result(True)
        placed = Solution(dict(zip(free.ids, descent.offsets.tolist(), strict=True)))
        check(free, placed)
        seconds = time.perf_counter() - began
        optimal = descent.peak <= descent.bound
        return MinimizeResult(method, placed, descent.peak, descent.bound, optimal, seconds,
                              not optimal and descent.timed_out,
                              [(t, peak, descent.bound) for t, peak in descent.history], [],
                              {"nodes": descent.stats["steps"], "probes": descent.stats["probes"]}, capacity)
    if method != "minimalloc":
        # One run of the method with what is left after the insurance (see the module docstring)
        insurance = None
        if method != FALLBACK_HEURISTIC:  # half of the time at most: the method gets the other half
            insurance = solve(free, FALLBACK_HEURISTIC, timeout=timeout / 2)
        solved = solve(free, method, timeout=max(deadline - time.perf_counter(), 1e-3))
        keep(solved)
        if "bound" in solved.stats:
            bound = max(bound, int(solved.stats["bound"]))  # an exact method's proven bound on the peak
        if best is None and insurance is not None:
            keep(insurance)
            if best is not None:
                reason = (f"{method} returned no placement ({solved.reason or solved.status}); "
                          f"the placement is {FALLBACK_HEURISTIC}'s, made first as insurance")
        if best is None:
            reason = f"no placement within {timeout:g} s: {method}: {solved.reason or solved.status}"
            if insurance is not None:
                reason += f"; the insurance, {FALLBACK_HEURISTIC} in half the time: {insurance.reason}"
            return result(True)
        improved()
        return result(method_timed_out or time.perf_counter() - began >= timeout * 0.99)
    # the starting heuristics share the first third of the time, the rest is the search's
    start_deadline = began + timeout / 3
    for name in STARTING_HEURISTICS:
        if time.perf_counter() >= start_deadline:
            break
        keep(solve(free, name, timeout=max(start_deadline - time.perf_counter(), 1e-3)))
    if best is None and time.perf_counter() < deadline:
        fallback = solve(free, FALLBACK_HEURISTIC, timeout=max(deadline - time.perf_counter(), 1e-3))
        keep(fallback)
        if best is None:
            reason = f"no placement within {timeout:g} s: {fallback.reason}"
    if best is None:
        reason = reason or f"no placement within {timeout:g} s"
        return result(True)
    improved()
    step = peak_granularity(problem)
    bound = -(-bound // step) * step
    # no probe above the capacity (a peak above it is no answer) nor above the search's range
    ceiling = min(MAX_VALUE if capacity is None else capacity, MAX_VALUE) // step * step
    opts = options if isinstance(options, MiniMallocOptions) else MiniMallocOptions()
    data: PreparedProblem | None = None
    nodes_left = node_limit
    ran_out = False
    first = True
    target = bound
    while best_peak > bound:
        highest = min(best_peak - step, ceiling)
        if bound > highest:
            break  # the probes closed the gap, or proved that nothing fits the capacity
        now = time.perf_counter()
        if now >= deadline or (nodes_left is not None and nodes_left <= 0):
            ran_out = True
            break
        if data is None:
            data = PreparedProblem(free)
            continue  # read the clock again: preparing a large problem takes time
        if first:
            target = bound
            probe_deadline = now + load_share * (deadline - now)
            probe_nodes = None if nodes_left is None else max(1, int(load_share * nodes_left))
        else:
            probe_deadline = now + max(0.5 * (deadline - now), min(1.0, deadline - now))
            probe_nodes = None if nodes_left is None else max(nodes_left // 2, min(nodes_left, 10_000))
        target = min(max(target, bound), highest)
        outcome = canonical_search(free, target, opts, probe_deadline, prepared=data, node_limit=probe_nodes)
        stats["nodes"] += outcome.nodes
        stats["backtracks"] += outcome.backtracks
        if nodes_left is not None:
            nodes_left -= outcome.sequential_nodes
        probes.append((target, outcome.status, time.perf_counter() - now))
        if outcome.status == "solved":
            assert outcome.offsets is not None
            placement = Solution(dict(zip(free.ids, outcome.offsets.tolist(), strict=True)))
            check(free, placement)  # the heuristics' placements were validated by solve()
            best, best_peak = placement, placement.peak(free)
        elif outcome.status == "infeasible":
            bound = target + step
        highest = min(best_peak - step, ceiling)
        if outcome.status in ("timeout", "node_limit") and not first:
            target = (target + highest + step) // (2 * step) * step  # halfway up to the incumbent
        else:
            target = (bound + highest) // (2 * step) * step
        first = False
        if outcome.status in ("solved", "infeasible"):
            improved()
    return result(ran_out)

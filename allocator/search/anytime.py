"""Anytime peak minimisation: the best placement found so far and a proven lower bound.

``minimize(problem, method=..., timeout=...)`` looks for the lowest peak. It checks its
arguments, then asks the registry what the method can do (``Capabilities``), never its name:

* a method with an anytime routine of its own (``Capabilities.anytime``) runs it:
  ``minimalloc`` starts from the best of the fast greedy heuristics (the registry's
  ``starting_heuristics``) and bisects between LOAD and that peak with the exact canonical
  search (``allocator.methods.minimalloc.canonical_bisection``); ``auto`` starts from its own
  heuristics and bisects the same way; ``telamalloc`` runs its descent (``telamalloc_minimize``);
* any other method runs once, without a capacity, after the registry's ``fallback_heuristic``
  has placed the buffers (in half of the time at most) as insurance: the method's own
  placement is reported when it returns one, the insurance only when it does not (``reason``
  then says so), so a method that runs out of time costs no more than the timeout. Its peak is
  reported against LOAD, or against the method's own proven bound when its ``stats`` have a
  ``"bound"`` (the exact methods ``cpsat`` and ``mip`` do).

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
large that not even the fallback heuristic places it within the time gets a result without a
placement (``solution`` and ``peak`` None, status ``"timeout"``, ``reason`` says how far it
got) rather than an overrun. ``node_limit`` bounds the exact search's nodes instead, so that a
minimisation that gives up is deterministic (tests use it: they never race the clock); only a
method whose routine declares it (``Capabilities.node_limit``) takes one.

``allocator.core.progress.Progress`` is the shared bookkeeping of a minimisation (best
placement, bound, history, ``on_improve``), used here and by the methods' anytime routines.

Reporting (decision recorded here, so that Ctrl-C keeps every method's best): every routine
hands ``on_improve`` its first placement as soon as it exists, a starting heuristic's (or, for
a method run once, the insurance), and then every placement that lowers the peak and every
bound that rises, each validated; the last result reported is the answer so far. A routine
whose search builds placements of its own (``telamalloc``'s descent) validates them before
reporting them, only when a caller asked for reports.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

from allocator.core.kernel_clock import work_clock
from allocator.core.problem import InvalidProblemError, MinimizeResult, Problem
from allocator.core.progress import Progress
from allocator.core.registry import METHODS, MinimizeRequest, check_problem, fallback_heuristic, method_entry, solve

__all__ = ["MinimizeResult", "minimize"]

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
    ``"minimalloc"`` the canonical bisection (see ``allocator.methods.minimalloc.canonical_bisection``),
    ``"auto"`` the same from the best of its heuristics, ``"telamalloc"`` its own descent
    (``allocator.methods.telamalloc.telamalloc_minimize``: bisection with step-limited searches, so its
    bound stays LOAD unless a probe proves a capacity infeasible). Any other registered method
    is run once without a capacity, after the insurance (see the module docstring), and its peak
    reported against LOAD or its own proven ``stats["bound"]``. ``options`` is the method's own
    options record, an instance of ``METHODS[method].options`` (``MiniMallocOptions`` for
    minimalloc and auto, ``TelaMallocOptions`` for telamalloc, ...), or None for its defaults;
    a method run once gets it too.
    ``load_share`` is the share of the time (and of ``node_limit``) given to the first probe at
    LOAD. Returns a validated placement, or none (status ``"timeout"``) when not even the
    fallback heuristic (the registry's ``fallback_heuristic``) placed the buffers within the time.

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

    Raises ``TypeError`` when ``problem`` is not a ``Problem``, ``method`` not a string,
    ``options`` not the method's record (``InvalidOptionError`` for a field of the wrong type)
    or the method's anytime routine returns something other than a ``MinimizeResult``;
    ``InvalidProblemError`` (one line) for an unknown method, a timeout that is zero, negative,
    infinite or not a number, a bad ``node_limit`` or ``load_share``, or a method that needs a
    capacity and has no anytime routine.

    >>> from allocator.core.problem import Buffer
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
    began = work_clock()
    request = MinimizeRequest(method, float(timeout), began, began + timeout, options, float(load_share), node_limit,
                              on_improve)
    routine = entry.anytime
    if routine is not None:
        result = routine(problem, request)
        if not isinstance(result, MinimizeResult):
            # a registered routine's bug, named here rather than as an AttributeError in the caller
            raise TypeError(f"the anytime routine of method {method!r} returned a value of type "
                            f"{type(result).__qualname__}; a routine returns allocator.MinimizeResult")
        return result
    return _run_once(problem, request)


def _run_once(problem: Problem, request: MinimizeRequest) -> MinimizeResult:
    """One run of a method without an anytime routine, with what is left after the insurance."""
    progress = Progress(problem, request)
    method, timeout = request.method, request.timeout
    fallback = fallback_heuristic()
    insurance = None
    if method != fallback:  # half of the time at most: the method gets the other half
        insurance = solve(progress.free, fallback, timeout=timeout / 2)
        if insurance.solution is not None and request.on_improve is not None:
            # reported at once, so that a caller interrupted during the method's run (Ctrl-C) keeps a
            # placement; it stands in for the answer only if the method returns none (below)
            interim = copy.copy(progress)  # the same problem and bound, its own best and history
            interim.history = []
            interim.keep(insurance)
            interim.reason = f"{method} still running; the placement is {fallback}'s, made first as insurance"
            interim.improved()
    solved = solve(progress.free, method, timeout=max(request.deadline - work_clock(), 1e-3),
                   options=request.options)
    progress.keep(solved)
    if "bound" in solved.stats:
        progress.bound = max(progress.bound, int(solved.stats["bound"]))  # an exact method's proven bound on the peak
    if progress.best is None and insurance is not None:
        progress.keep(insurance)
        if progress.best is not None:
            progress.reason = (f"{method} returned no placement ({solved.reason or solved.status}); "
                               f"the placement is {fallback}'s, made first as insurance")
    if progress.best is None:
        progress.reason = f"no placement within {timeout:g} s: {method}: {solved.reason or solved.status}"
        if insurance is not None:
            progress.reason += f"; the insurance, {fallback} in half the time: {insurance.reason}"
        return progress.result(True)
    progress.improved()
    return progress.result(progress.ran_out or work_clock() - request.began >= timeout * 0.99)

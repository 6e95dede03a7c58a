"""The registry of placement methods and ``solve``, the one entry point over it.

A method is a plain function ``method(problem, deadline, **options) -> MethodOutput``;
``register`` adds it under a name. ``solve`` owns the shared contract so a method only
implements placement: it rejects unknown methods and options, proves the trivial
infeasibility (LOAD above the capacity) once for all methods, times the run, and validates
every returned placement with the independent validator before handing it back. Malformed
input never reaches a method: ``Problem`` refuses it when it is built (values beyond
``MAX_VALUE``, duplicate ids, pinned buffers that clash, ...).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from allocator.problem import AllocationResult, InvalidProblemError, Problem, Solution, Status, UnknownMethodError
from allocator.validate import InvalidSolutionError, lower_bound, validate


@dataclass
class MethodOutput:
    """What a method hands back to ``solve``.

    ``offsets`` is a complete placement or ``None``. ``status`` is the method's verdict; for
    ``"solved"`` the placement must fit the capacity.
    """

    status: Status
    offsets: dict[str, int] | None
    reason: str = ""
    stats: dict[str, float] = field(default_factory=dict)


MethodFunction = Callable[..., MethodOutput]


@dataclass(frozen=True)
class MethodEntry:
    name: str
    function: MethodFunction
    description: str  #: one line: what it does and which paper/section/compiler it follows


METHODS: dict[str, MethodEntry] = {}


def register(name: str, description: str) -> Callable[[MethodFunction], MethodFunction]:
    """Decorator adding a method to ``METHODS`` under ``name``."""

    def add(function: MethodFunction) -> MethodFunction:
        if name in METHODS:
            raise ValueError(f"allocator method {name!r} registered twice")
        METHODS[name] = MethodEntry(name, function, description)
        return function

    return add


def solve(problem: Problem, method: str = "greedy-by-size", timeout: float | None = None,
          **options: Any) -> AllocationResult:
    """Place every buffer of ``problem`` with ``method``; the result is validated.

    Parameters
    ----------
    problem : the buffers and the capacity (``None`` capacity: place without a limit and
        report the peak).
    method : a name in ``METHODS`` (``accelsim alloc --methods`` lists them).
    timeout : seconds, or ``None`` for no limit. A method that runs out of time returns
        status ``"timeout"`` with the best complete placement it has, if any.
    options : passed to the method (e.g. ``seed``); unknown options raise.

    Raises ``UnknownMethodError`` for an unknown method, ``InvalidProblemError`` for a bad
    timeout (or input a method cannot represent, e.g. ``mip`` beyond 2**52 units), and
    ``InvalidSolutionError`` if a method returns a placement that breaks a constraint (a bug
    in that method, never hidden).

    The result's ``stats["lower_bound"]`` is LOAD (``validate.lower_bound``), computed once
    here for every status: a caller that wants LOAD reads it there instead of computing it
    again.

    >>> from allocator.problem import Buffer
    >>> p = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4)], capacity=8)
    >>> r = solve(p, method="greedy-by-size")
    >>> r.status, r.peak, sorted(r.solution.offsets.values())
    ('solved', 8, [0, 4])
    >>> solve(p.with_capacity(7)).reason
    'LOAD 8 exceeds capacity 7'
    >>> r.stats["lower_bound"]
    8
    """
    if method not in METHODS:
        raise UnknownMethodError(f"unknown allocator method {method!r}; known: {', '.join(sorted(METHODS))}")
    if timeout is not None and not timeout > 0:
        raise InvalidProblemError(f"timeout must be positive seconds or None, got {timeout!r}")
    began = time.perf_counter()
    load = lower_bound(problem)
    if problem.capacity is not None and load > problem.capacity:
        return AllocationResult(
            method, "infeasible", None, None, f"LOAD {load} exceeds capacity {problem.capacity}",
            {"seconds": time.perf_counter() - began, "lower_bound": load},
        )
    deadline = None if timeout is None else began + timeout
    out = METHODS[method].function(problem, deadline, **options)
    seconds = time.perf_counter() - began
    solution = None if out.offsets is None else Solution(dict(out.offsets))
    peak = None
    if solution is not None:
        # "solved" must fit the capacity; other statuses may carry a placement that does not.
        checked = problem if out.status == "solved" else problem.with_capacity(None)
        report = validate(checked, solution)
        if not report.ok:
            raise InvalidSolutionError(f"method {method!r} returned an invalid placement: {report}")
        peak = solution.peak(problem)
    elif out.status == "solved":
        raise InvalidSolutionError(f"method {method!r} reported 'solved' without a placement")
    stats = {"seconds": seconds, "lower_bound": load, **out.stats}
    return AllocationResult(method, out.status, solution, peak, out.reason, stats)


# Importing the method modules registers them.
from allocator import exact, greedy, heuristics, minimalloc, telamalloc  # noqa: E402,F401

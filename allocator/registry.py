"""The registry of placement methods and ``solve``, the one entry point over it.

A method is a plain function ``method(problem, deadline, **options) -> MethodOutput``;
``register`` adds it under a name together with what it can do (``Capabilities``: whether it
proves infeasibility, needs a capacity, has its own anytime peak minimisation for
``allocator.minimize``). ``solve`` owns the shared contract so a method only implements
placement: it rejects unknown methods and options, refuses a problem without a capacity for a
method that needs one, proves the trivial infeasibility (LOAD above the capacity) once for all
methods, times the run, and validates every returned placement with the independent validator
before handing it back. Malformed input never reaches a method: ``Problem`` refuses it when it
is built (values beyond ``MAX_VALUE``, duplicate ids, pinned buffers that clash, ...).

This module imports no method: each method module registers itself when it is imported, and
the package's ``__init__`` imports them all, so ``METHODS`` is complete as soon as any part of
``allocator`` is imported (Python runs a package's ``__init__`` before any of its modules).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from allocator.problem import (
    AllocationResult,
    InvalidProblemError,
    MinimizeResult,
    Problem,
    Solution,
    Status,
    UnknownMethodError,
)
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
class MinimizeRequest:
    """What ``allocator.minimize`` hands a method's anytime routine, its arguments checked."""

    method: str  #: the registered name the result is reported under
    timeout: float  #: seconds for the whole call, positive and finite
    began: float  #: ``time.perf_counter()`` when the call began
    deadline: float  #: ``began + timeout``: no work starts after it
    options: object | None  #: the method's own options record, if the caller gave one (a routine ignores others)
    load_share: float  #: share of the time (and of ``node_limit``) for a first probe at LOAD, in (0, 1]
    node_limit: int | None  #: nodes of all exact probes together; only for a routine that declares ``node_limit``
    on_improve: Callable[[MinimizeResult], None] | None  #: called with the result so far on every improvement


#: a method's own peak minimisation: ``routine(problem, request) -> MinimizeResult``. It
#: minimises the peak of ``problem`` (the problem's capacity, when set, is an upper limit on the
#: answer) by ``request.deadline`` and returns a validated placement, or none.
AnytimeFunction = Callable[[Problem, MinimizeRequest], MinimizeResult]


@dataclass(frozen=True)
class Capabilities:
    """What a method declares it can do; ``solve`` and ``minimize`` act on these, never on names."""

    #: complete: given the time, it finds a placement under the capacity when one exists and
    #: proves the capacity infeasible otherwise (a heuristic's miss proves nothing)
    exact: bool = False
    #: refuses a problem without a capacity (it searches for a placement under one)
    needs_capacity: bool = False
    #: its own peak minimisation, which ``allocator.minimize`` runs; None: ``minimize`` runs the
    #: method once without a capacity (after an insurance placement) and reports that
    anytime: AnytimeFunction | None = None
    #: its anytime routine honours ``minimize(..., node_limit=...)`` (a deterministic budget)
    node_limit: bool = False

    def labels(self) -> tuple[str, ...]:
        """The capabilities as short words, for listings.

        >>> Capabilities(exact=True, needs_capacity=True).labels()
        ('exact', 'needs capacity')
        """
        flags = (("exact", self.exact), ("needs capacity", self.needs_capacity),
                 ("anytime", self.anytime is not None), ("node limit", self.node_limit))
        return tuple(label for label, on in flags if on)


@dataclass(frozen=True)
class MethodEntry:
    name: str
    function: MethodFunction
    description: str  #: one line: what it does and which paper/section/compiler it follows
    capabilities: Capabilities = Capabilities()  #: what it can do; solve and minimize act on it


METHODS: dict[str, MethodEntry] = {}


def register(name: str, description: str, *, exact: bool = False, needs_capacity: bool = False,
             anytime: AnytimeFunction | None = None, node_limit: bool = False,
             ) -> Callable[[MethodFunction], MethodFunction]:
    """Decorator adding a method to ``METHODS`` under ``name``, with its ``Capabilities``
    (keyword arguments of the same names; a heuristic declares none)."""
    if node_limit and anytime is None:
        raise ValueError(f"allocator method {name!r}: node_limit is a property of an anytime routine; give one")
    capabilities = Capabilities(exact=exact, needs_capacity=needs_capacity, anytime=anytime, node_limit=node_limit)

    def add(function: MethodFunction) -> MethodFunction:
        if name in METHODS:
            raise ValueError(f"allocator method {name!r} registered twice")
        METHODS[name] = MethodEntry(name, function, description, capabilities)
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
    timeout, a problem without a capacity for a method that ``needs_capacity`` (or input a
    method cannot represent, e.g. ``mip`` beyond 2**52 units), and
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
    if problem.capacity is None and METHODS[method].capabilities.needs_capacity:
        raise InvalidProblemError(f"{method} searches for a placement under a capacity; give the problem one "
                                  "(allocator.minimize finds the lowest peak)")
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

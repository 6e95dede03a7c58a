"""Every scheduler by name, what each can do, and the rules of the options they take.

A scheduler is a plain function ``function(graph, options) -> Schedule`` of one typed options
record (``scheduler.options.ScheduleOptions``). ``ENTRIES`` maps each name to its
``SchedulerEntry``: the function, named ``"module:function"`` and imported on first use, a
one-line description, and what it can do (``Capabilities``). Listing the names or reading the
capabilities imports nothing heavy (neither networkx, numpy nor OR-Tools), so the command line
builds its ``--scheduler`` choices from here for free.

Callers ask an entry what it can do; no code outside this module compares a scheduler's name
(``scheduler.order`` names the operator orders, two of which share a scheduler's name). Every
rule about which option a scheduler takes is checked here, once, with one message
(``ScheduleError``, a ``ValueError``): ``scheduler.make_schedule``, ``accelsim.RunOptions``,
``accelsim size`` and the sweep grid call ``check_options`` and its neighbours.

The scheduler's own online first-fit arena (``scheduler.arena``) is named here too
(``ONLINE_ARENA``): callers pass it where they would name an allocator method, to let that arena
decide the spills of a scheduler that takes an allocator.

Adding a scheduler: a module with its function and a row of ``BUILT_IN``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler.order import FIXED_ORDERS, PROGRAM, is_solvers_order
from scheduler.schedule import PlacedBy, Schedule, ScheduleError

if TYPE_CHECKING:
    import networkx as nx

    from scheduler.options import ScheduleOptions

#: the name of the scheduler's online first-fit arena where an allocator method could be named
#: (``allocator="online-first-fit"``, ``accelsim run --allocator online-first-fit``)
ONLINE_ARENA = "online-first-fit"
#: ``Schedule.placed_by`` of a schedule whose offsets the online arena chose
BY_ONLINE_ARENA = PlacedBy("online arena", ONLINE_ARENA)

#: a scheduler's function: ``function(graph, options) -> Schedule``
SchedulerFunction = Callable[["nx.DiGraph", "ScheduleOptions"], Schedule]


@dataclass(frozen=True)
class Capabilities:
    """What a scheduler declares it can do; every rule of ``check_options`` reads these, never names."""

    #: it chooses its own operator order
    reorders: bool = False
    #: it places its tensors itself: its offsets are part of its answer (an allocator may re-place them)
    own_offsets: bool = False
    #: it takes a replacement policy (``replacement=``, ``scheduler.replacement``)
    replacement: bool = False
    #: it takes an allocator that decides its spills (``allocator=``: an ``allocator.METHODS`` name or ``ONLINE_ARENA``)
    allocator: bool = False
    #: it accepts a graph with host operators (``frontend.host``): it keeps an order that waits for them
    host_operators: bool = False
    #: it takes a solver's wall-clock safety net (``CosmaOptions.time_limit``)
    time_limit: bool = False
    #: it takes an operator order (``order=``)
    order: bool = False
    #: it takes a fixed order (``fixed_order=``, ``scheduler.order.FIXED_ORDERS``); one a solver
    #: chooses (``min-peak``) makes it reorder
    fixed_order: bool = False


@dataclass(frozen=True)
class SchedulerEntry:
    """One scheduler: its name, its function (``"module:function"``), what it is and can do."""

    name: str
    function: str  #: ``"module:function"``, imported on first use
    description: str  #: one line: what it does and which paper or section it follows
    capabilities: Capabilities

    def resolve(self) -> SchedulerFunction:
        """The scheduler's function, importing its module."""
        module, _, attribute = self.function.partition(":")
        function: SchedulerFunction = getattr(importlib.import_module(module), attribute)
        return function

    def reorders_with(self, fixed_order: str) -> bool:
        """Whether it chooses its own order, given the ``fixed_order`` it would run with."""
        return self.capabilities.reorders or (self.capabilities.fixed_order and is_solvers_order(fixed_order))


#: the built-in schedulers, in the order ``SCHEDULERS`` (and ``accelsim run --scheduler``) lists them
BUILT_IN = (
    SchedulerEntry("program", "scheduler.methods:program",
                   "the program order with a replacement policy, its spills decided by an allocator method "
                   "placing each residency plan, or by the online first-fit arena (COSMA §V-A2 baselines)",
                   Capabilities(replacement=True, allocator=True, host_operators=True, order=True)),
    SchedulerEntry("min-peak", "scheduler.methods:min_peak",
                   "the order of minimum peak footprint (MPMF, CP-SAT), then as program (COSMA §III-E1)",
                   Capabilities(reorders=True, replacement=True, allocator=True)),
    SchedulerEntry("cosma", "scheduler.methods:cosma_joint",
                   "one CP-SAT model of order, addresses and spills minimising non-compulsory bytes "
                   "(COSMA §III-B to §III-D)",
                   Capabilities(reorders=True, own_offsets=True, time_limit=True)),
    SchedulerEntry("cosma-fs", "scheduler.methods:cosma_fixed",
                   "the same model for a fixed order: the program order or MPMF's (COSMA §III-E2)",
                   Capabilities(own_offsets=True, host_operators=True, time_limit=True, fixed_order=True)),
    SchedulerEntry("cosma-dnc", "scheduler.methods:cosma_divided",
                   "divide and conquer: the program order cut into parts, each solved by the joint model "
                   "(COSMA §IV)",
                   Capabilities(reorders=True, own_offsets=True, time_limit=True)),
)

#: every scheduler by name
ENTRIES: dict[str, SchedulerEntry] = {entry.name: entry for entry in BUILT_IN}
#: every scheduler's name, in order: what ``make_schedule`` and ``accelsim run --scheduler`` accept
SCHEDULERS: tuple[str, ...] = tuple(ENTRIES)
#: the scheduler of ``make_schedule``, ``accelsim run`` and ``accelsim size`` when none is named
DEFAULT_SCHEDULER = "program"


def scheduler_entry(name: object) -> SchedulerEntry:
    """``ENTRIES[name]``; ``ScheduleError`` naming the valid ones when it is not a scheduler's name.

    >>> scheduler_entry("cosma-fs").capabilities.fixed_order
    True
    >>> scheduler_entry("fast")
    Traceback (most recent call last):
    ...
    scheduler.schedule.ScheduleError: unknown scheduler 'fast'; valid: program, min-peak, cosma, ...
    """
    if not isinstance(name, str) or name not in ENTRIES:
        raise ScheduleError(f"unknown scheduler {name!r}; valid: {', '.join(ENTRIES)}")
    return ENTRIES[name]


def _names(wanted: Callable[[Capabilities], bool]) -> list[str]:
    return [entry.name for entry in ENTRIES.values() if wanted(entry.capabilities)]


def _and(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _shown(option: str, value: Any, names: Mapping[str, str], flags: Mapping[str, str]) -> str:
    """``option=value`` as the caller spells the option (``names``), with its flag (``flags``) if any."""
    flag = flags.get(option)
    return f"{names.get(option, option)}={value!r}" + (f" ({flag})" if flag else "")


def _target(schedulers: Sequence[str]) -> str:
    """``scheduler='cosma'``, or ``scheduler='program' or 'min-peak'`` for several."""
    return "scheduler=" + " or ".join(map(repr, dict.fromkeys(schedulers)))


def check_fixed_order(fixed_order: object) -> None:
    """Refuse a fixed order that is not one of ``scheduler.order.FIXED_ORDERS``."""
    if not isinstance(fixed_order, str) or fixed_order not in FIXED_ORDERS:
        raise ScheduleError(f"unknown fixed order {fixed_order!r}; valid values: {', '.join(map(repr, FIXED_ORDERS))}")


def check_allocator(allocator: object) -> None:
    """Refuse an allocator that is neither ``ONLINE_ARENA`` nor an ``allocator.METHODS`` name."""
    import allocator as alloc

    if allocator != ONLINE_ARENA and (not isinstance(allocator, str) or allocator not in alloc.METHODS):
        raise ScheduleError(f"unknown allocator {allocator!r}; valid: {ONLINE_ARENA}, "
                            f"{', '.join(sorted(alloc.METHODS))}")


def check_graph(name: str, graph: nx.DiGraph, fixed_order: str = PROGRAM) -> None:
    """Refuse a graph with host operators (``frontend.host``) for a scheduler that reorders:
    the accelerator may read a host operator's results only after the host ran it, a
    constraint only a kept order honours."""
    entry = scheduler_entry(name)
    if not graph.graph.get("host_ops"):
        return
    if entry.capabilities.host_operators and not entry.reorders_with(fixed_order):
        return
    keeping = [f"{e.name!r}" + (" with the program order" if e.capabilities.fixed_order else "")
               for e in ENTRIES.values() if e.capabilities.host_operators]
    raise ScheduleError(
        f"graph {graph.graph.get('name', '')!r} has host operators (frontend.host), whose results the "
        f"accelerator may read only after the host ran them; scheduler {name!r}"
        + (f" with fixed order {fixed_order!r}" if entry.capabilities.fixed_order else "")
        + f" chooses its own order without that constraint: use {' or '.join(keeping)}")


def _time_limit_refused(shown: str, schedulers: Sequence[str]) -> ScheduleError:
    solvers = ", ".join(_names(lambda c: c.time_limit))
    return ScheduleError(f"{shown} applies to the solver-based schedulers ({solvers}), not to {_target(schedulers)}")


def _online_timeout_refused(shown: str) -> ScheduleError:
    return ScheduleError(f"{shown} limits an allocator; the {ONLINE_ARENA!r} arena has no time limit")


def _allocator_option_refused(shown: str, schedulers: Sequence[str]) -> ScheduleError:
    takers = _and(_names(lambda c: c.allocator))
    return ScheduleError(f"{shown} applies to the {takers} schedulers' allocator, not to {_target(schedulers)}")


def check_options(
    scheduler: object, *, replacement: object = None, allocator: object = None, allocator_timeout: object = None,
    allocator_options: object = None, fixed_order: object = None, order: object = None, time_limit: object = None,
    re_place: bool = False, names: Mapping[str, str] | None = None, flags: Mapping[str, str] | None = None,
) -> SchedulerEntry:
    """``scheduler``'s entry, after refusing every given option it does not take (``ScheduleError``).

    An option is given when it is not None (``order`` also when it is not the program order,
    its default). ``re_place``: the caller re-places the schedule of a scheduler that places
    its own tensors with the ``allocator`` method named (``accelsim.RunOptions``), so a method
    is accepted there, and ``allocator_timeout`` limits it; the online arena is no such method.
    ``names`` maps an option to the caller's name for it (``{"allocator_timeout": "timeout"}``)
    and ``flags`` to its command-line flag, for the messages. The order of the rules is the
    order of the parameters; a fixed order is also checked to be one (``check_fixed_order``).

    >>> check_options("cosma", replacement="greedy")
    Traceback (most recent call last):
    ...
    scheduler.schedule.ScheduleError: replacement='greedy' applies to the program... schedulers, not to \
scheduler='cosma'
    """
    entry = scheduler_entry(scheduler)
    can, target = entry.capabilities, _target([entry.name])

    def shown(option: str, value: object) -> str:
        return _shown(option, value, names or {}, flags or {})

    if replacement is not None and not can.replacement:
        raise ScheduleError(f"{shown('replacement', replacement)} applies to the "
                            f"{_and(_names(lambda c: c.replacement))} schedulers, not to {target}")
    if order is not None and not (isinstance(order, str) and order == PROGRAM) and not can.order:
        ordered = _and([repr(name) for name in _names(lambda c: c.order)])
        fixed = _and(_names(lambda c: c.fixed_order))
        raise ScheduleError(f"{shown('order', order if isinstance(order, str) else 'a list of operators')} is the "
                            f"{ordered} scheduler's operator order; {target} chooses its own ({fixed} takes "
                            "fixed_order)")
    if fixed_order is not None and not can.fixed_order:
        raise ScheduleError(f"{shown('fixed_order', fixed_order)} applies to "
                            f"{_target(_names(lambda c: c.fixed_order))} only, not to {target}")
    if fixed_order is not None:
        check_fixed_order(fixed_order)
    if time_limit is not None and not can.time_limit:
        raise _time_limit_refused(shown("time_limit", time_limit), [entry.name])
    if allocator is not None and not can.allocator and (not re_place or allocator == ONLINE_ARENA):
        why = "places its tensors itself" if can.own_offsets else "takes no allocator"
        raise ScheduleError(f"{target} {why}; {shown('allocator', allocator)} decides the spills of the "
                            f"{_and(_names(lambda c: c.allocator))} schedulers")
    if allocator_timeout is not None and can.allocator and allocator == ONLINE_ARENA:
        raise _online_timeout_refused(shown("allocator_timeout", allocator_timeout))
    if allocator_timeout is not None and not can.allocator and re_place and allocator is None:
        raise ScheduleError(f"{shown('allocator_timeout', allocator_timeout)} limits a re-placing allocator; name "
                            f"one with allocator= (without it {target} keeps its own addresses)")
    for option, value in (("allocator_timeout", allocator_timeout), ("allocator_options", allocator_options)):
        if value is not None and not can.allocator and not re_place:
            raise _allocator_option_refused(shown(option, value), [entry.name])
    return entry


def reads_allocator_timeout(scheduler: str, allocator: str | None) -> bool:
    """Whether a loop of ``scheduler`` with ``allocator`` deciding its spills reads a wall-clock timeout
    (the online arena has none; a scheduler that places its own tensors takes no allocator)."""
    return scheduler_entry(scheduler).capabilities.allocator and allocator != ONLINE_ARENA


def check_limits(pairs: Iterable[tuple[str, str | None]], *, allocator_timeout: object = None,
                 time_limit: object = None, names: Mapping[str, str] | None = None,
                 flags: Mapping[str, str] | None = None) -> None:
    """Refuse a wall-clock limit that no (scheduler, allocator deciding its spills) pair reads, with
    the messages of ``check_options`` (``accelsim size``, which never re-places a schedule)."""
    chosen = list(pairs)
    schedulers = [name for name, _ in chosen]

    def shown(option: str, value: object) -> str:
        return _shown(option, value, names or {}, flags or {})

    if time_limit is not None and not any(scheduler_entry(s).capabilities.time_limit for s in schedulers):
        raise _time_limit_refused(shown("time_limit", time_limit), schedulers)
    if allocator_timeout is not None and not any(reads_allocator_timeout(s, a) for s, a in chosen):
        if any(scheduler_entry(s).capabilities.allocator for s in schedulers):
            raise _online_timeout_refused(shown("allocator_timeout", allocator_timeout))
        raise _allocator_option_refused(shown("allocator_timeout", allocator_timeout), schedulers)

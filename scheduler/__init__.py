"""Operator order and tensor residency: from a ``DataflowGraph`` to a ``Schedule``.

Public surface (what a user calls; everything else stays importable from its module)::

    from scheduler import make_schedule, min_capacity, check_schedule
    need, operator = min_capacity(graph)               # M_R, COSMA section V-A
    s = make_schedule(graph, capacity, "program")      # any of SCHEDULERS: program, min-peak, cosma, ...
    s = make_schedule(graph, capacity, "program", allocator="auto")  # spills decided by an allocator
    s.residencies, s.transfers, s.offsets              # what the allocator and the simulator consume
    check_schedule(graph, s)                           # [] when the schedule computes the graph correctly

``make_schedule`` is the one entry point ``accelsim run`` uses: it checks the options against
the scheduler registry (``scheduler.registry``: every scheduler by name, what each can do, the
rules of their options) and calls the scheduler's function with one ``ScheduleOptions``
(``scheduler.options``). The schedulers are built from a few pieces, one module each: operator
orders (``scheduler.order``), the online runs' bookkeeping (``scheduler.residents``), the
first-fit address arena (``scheduler.arena``), the live-byte planner (``scheduler.planner``),
the replacement policies (``scheduler.replacement``), the program-order baseline built on them
(``scheduler.baseline``), the allocation-aware spill loop (``scheduler.spill_loop``), the
load-timing planner that decides when each load is issued (``scheduler.load_timing``) and the
COSMA models (``scheduler.cosma``: joint, fixed order, minimum peak, divide and conquer).
``min_capacity`` and ``no_spill_capacity`` span a capacity sweep, ``budgets`` gives COSMA's
memory budgets M_R / M_H / M_P, ``CosmaOptions`` is the solvers' options record; the types every
scheduler returns (``Schedule``, ``Residency``, ``Transfer``, with ``ScheduleStats`` and
``PlacedBy``) and its errors live in ``scheduler.schedule``. ``scheduler.overlap.OverlapAnalysis``
bounds, from the graph alone, where operators and tensors can be in any order (COSMA §III-F).

Every default limit of a search counts work, never seconds (``allocator.METHODS[name].work_limit``
for the spill loop's allocator, ``CosmaOptions.deterministic_time`` for CP-SAT), so a schedule
is the same on every machine; wall-clock limits are opt-in safety nets that set
``stats.clock_stopped`` when they fire.

Importing this package imports nothing: each public name, and each module as an attribute
(``scheduler.cosma.min_peak``), is imported on first use, so reading ``scheduler.SCHEDULERS`` or
the registry loads neither networkx, numpy nor OR-Tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from allocator.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from scheduler.baseline import no_spill_capacity
    from scheduler.budget import min_capacity
    from scheduler.check import check_schedule
    from scheduler.cosma import budgets
    from scheduler.methods import make_schedule
    from scheduler.options import CosmaOptions
    from scheduler.registry import SCHEDULERS
    from scheduler.schedule import CapacityError, Residency, Schedule, ScheduleError, Transfer

#: each public name and the module that defines it
_HOMES = {
    "SCHEDULERS": "registry", "CapacityError": "schedule", "CosmaOptions": "options", "Residency": "schedule",
    "Schedule": "schedule", "ScheduleError": "schedule", "Transfer": "schedule", "budgets": "cosma",
    "check_schedule": "check", "make_schedule": "methods", "min_capacity": "budget",
    "no_spill_capacity": "baseline",
}

__all__ = [
    "SCHEDULERS", "CapacityError", "CosmaOptions", "Residency", "Schedule", "ScheduleError", "Transfer", "budgets",
    "check_schedule", "make_schedule", "min_capacity", "no_spill_capacity",
]

#: the modules, reachable as attributes after ``import scheduler`` alone
_SUBMODULES = ("arena", "baseline", "budget", "check", "cosma", "load_timing", "methods", "options", "order", "overlap",
               "planner", "registry", "replacement", "residents", "schedule", "spill_loop")


__getattr__, __dir__ = lazy_attributes('scheduler', globals(), _HOMES, _SUBMODULES)

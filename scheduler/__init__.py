"""Operator order and tensor residency: from a ``DataflowGraph`` to a ``Schedule``.

Public surface (what a user calls; everything else stays importable from its module)::

    from scheduler import make_schedule, min_capacity, check_schedule
    need, operator = min_capacity(graph)               # M_R, COSMA section V-A
    s = make_schedule(graph, capacity, "program")      # any of SCHEDULERS: program, min-peak, cosma, ...
    s = make_schedule(graph, capacity, "program", allocator="auto")  # spills decided by an allocator
    s.residencies, s.transfers, s.offsets              # what the allocator and the simulator consume
    check_schedule(graph, s)                           # [] when the schedule computes the graph correctly

``make_schedule`` is the one entry point ``accelsim run`` uses: it dispatches by name to the
program-order baseline (``scheduler.baseline.schedule``: first-fit arena, Belady or greedy
replacement), the allocation-aware spill loop (``scheduler.spill_loop.allocation_aware``) and
the COSMA models (``scheduler.cosma``: joint, fixed order, minimum peak, divide and conquer).
``min_capacity`` and ``no_spill_capacity`` span a budget sweep, ``budgets`` gives COSMA's
M_R / M_H / M_P, ``CosmaOptions`` is the solver's options record; the types every scheduler
returns (``Schedule``, ``Residency``, ``Transfer``) and its errors live in ``scheduler.schedule``.
``scheduler.overlap.OverlapAnalysis`` bounds, from the graph alone, where operators and tensors
can be in any order (COSMA §III-F).

Every default limit of a search counts work, never seconds (``allocator.METHODS[name].work_limit``
for the spill loop's allocator, ``CosmaOptions.deterministic_time`` for CP-SAT), so a schedule
is the same on every machine; wall-clock limits are opt-in safety nets that set
``stats["clock_stopped"]`` when they fire.
"""

# the modules, so that ``scheduler.cosma.min_peak`` and the like resolve after ``import scheduler``
from scheduler import baseline, budget, check, cosma, methods, order, overlap, schedule, spill_loop  # noqa: F401
from scheduler.baseline import no_spill_capacity
from scheduler.budget import min_capacity
from scheduler.check import check_schedule
from scheduler.cosma import CosmaOptions, budgets
from scheduler.methods import SCHEDULERS, make_schedule
from scheduler.schedule import CapacityError, Residency, Schedule, ScheduleError, Transfer

__all__ = [
    "SCHEDULERS", "CapacityError", "CosmaOptions", "Residency", "Schedule", "ScheduleError", "Transfer", "budgets",
    "check_schedule", "make_schedule", "min_capacity", "no_spill_capacity",
]

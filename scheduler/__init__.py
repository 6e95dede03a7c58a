"""Operator order and tensor residency: from a ``DataflowGraph`` to a ``Schedule``.

Public surface::

    from scheduler import schedule, min_capacity
    budget, operator = min_capacity(graph)            # M_R, COSMA section V-A
    s = schedule(graph, budget)                       # program order, first-fit arena, Belady
    s.residencies, s.transfers, s.offsets             # what the allocator / simulator consume
    s = allocation_aware(graph, budget, "auto")       # spills decided by an allocator that must place them
    s = make_schedule(graph, budget, "cosma")         # COSMA: order + addresses + spills, one CP-SAT model
    check_schedule(graph, s)                          # [] when the schedule computes the graph correctly

``schedule`` is the baseline of COSMA section V-A (see ``scheduler.baseline``); the types
every scheduler returns live in ``scheduler.schedule``. ``OverlapAnalysis`` bounds, from the
graph alone, where operators and tensors can be in any order (COSMA §III-F). ``scheduler.cosma``
holds the COSMA models (joint, fixed order, minimum peak, divide and conquer) and
``scheduler.methods`` the names and budgets ``accelsim run`` uses.

Every default limit of a search counts work, never seconds (``WORK_BUDGETS`` for the spill
loop's allocator, ``CosmaOptions.deterministic_time`` for CP-SAT), so a schedule is the same on
every machine; wall-clock limits are opt-in safety nets that set ``stats["clock_stopped"]``
when they fire.
"""

from scheduler.baseline import REPLACEMENTS, DeadlineReached, Planner, no_spill_capacity, plan_residencies, schedule
from scheduler.budget import min_capacity, onchip_sizes
from scheduler.check import check_schedule
from scheduler.cosma import CosmaOptions, MinPeak, break_nodes, budgets, cosma, cosma_dnc, footprint, min_peak
from scheduler.methods import BUDGETS, SCHEDULERS, make_schedule, resolve_budget
from scheduler.order import ORDERS, program_order, resolve_order
from scheduler.overlap import OverlapAnalysis
from scheduler.schedule import (
    TRANSFER_KINDS,
    CapacityError,
    Residency,
    Schedule,
    ScheduleError,
    Transfer,
    bytes_by_kind,
    live_bytes_over_time,
    peak_address,
    peak_live_bytes,
)
from scheduler.spill_loop import WORK_BUDGETS, Round, WorkBudget, allocation_aware

__all__ = [
    "BUDGETS", "ORDERS", "Round", "WORK_BUDGETS", "WorkBudget", "allocation_aware", "plan_residencies",
    "Planner", "DeadlineReached",
    "REPLACEMENTS", "SCHEDULERS", "TRANSFER_KINDS", "CapacityError", "CosmaOptions", "MinPeak",
    "OverlapAnalysis", "Residency", "Schedule", "ScheduleError", "Transfer", "break_nodes", "budgets",
    "bytes_by_kind", "check_schedule", "cosma", "cosma_dnc", "footprint", "live_bytes_over_time", "make_schedule",
    "min_capacity", "min_peak", "no_spill_capacity", "onchip_sizes", "peak_address", "peak_live_bytes",
    "program_order", "resolve_budget", "resolve_order", "schedule",
]

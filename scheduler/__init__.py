"""Operator order and tensor residency: from a ``DataflowGraph`` to a ``Schedule``.

Public surface::

    from scheduler import schedule, min_capacity
    budget, operator = min_capacity(graph)            # M_R, COSMA section V-A
    s = schedule(graph, budget)                       # program order, first-fit arena, Belady
    s.residencies, s.transfers, s.offsets             # what the allocator / simulator consume

``schedule`` is the baseline of COSMA section V-A (see ``scheduler.baseline``); the types
every scheduler returns live in ``scheduler.schedule``. ``OverlapAnalysis`` bounds, from the
graph alone, where operators and tensors can be in any order (COSMA §III-F).
"""

from scheduler.baseline import REPLACEMENTS, no_spill_capacity, schedule
from scheduler.budget import min_capacity, onchip_sizes
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
from scheduler.tiling import tile_weights

__all__ = [
    "ORDERS", "REPLACEMENTS", "TRANSFER_KINDS", "CapacityError", "OverlapAnalysis", "Residency", "Schedule",
    "ScheduleError", "Transfer", "bytes_by_kind", "live_bytes_over_time", "min_capacity", "no_spill_capacity",
    "onchip_sizes", "peak_address", "peak_live_bytes", "program_order", "resolve_order", "schedule", "tile_weights",
]

"""``make_schedule``, the one entry point over the scheduler registry, and the built-in schedulers' functions.

``make_schedule`` checks its options against the registry (``scheduler.registry``: which
scheduler takes which option, each rule with one message) and calls the scheduler's function
with one ``ScheduleOptions`` (``scheduler.options``). The functions here adapt that record to
the algorithms:

* ``program`` -- the program order (or ``options.order``) with a replacement policy
  (``"belady"`` or ``"greedy"``), its spills decided by an ``allocator.METHODS`` method placing
  each residency plan offline (``scheduler.spill_loop.allocation_aware``;
  ``allocator.DEFAULT_METHOD`` by default, as in ``accelsim run`` and
  ``accelsim.compile_and_simulate``, so the three give the same schedule), or by the TensorFlow
  Lite style online first-fit arena (``allocator=scheduler.registry.ONLINE_ARENA``,
  ``scheduler.baseline``);
* ``min_peak`` -- the same with the order of minimum peak footprint (MPMF, ``cosma.min_peak``);
* ``cosma_joint`` -- the joint CP-SAT model (``scheduler.cosma.cosma``);
* ``cosma_fixed`` -- addresses and replacement for a fixed order, ``fixed_order`` = the program
  order or MPMF's (COSMA §III-E2);
* ``cosma_divided`` -- divide and conquer over automatic break nodes (COSMA §IV).

A memory budget (``resolve_budget``) is ``"MR"`` (the largest single-operator footprint),
``"MP"`` (the minimum peak footprint), ``"MH"`` (their mean) or a number of bytes (COSMA §V-A2).

Every default limit here is work, not seconds (``CosmaOptions.deterministic_time`` for the
CP-SAT models and the MPMF order, ``allocator.METHODS[name].work_limit`` for the loop's
allocator), so the same call gives the same schedule on any machine; the wall-clock limits
(``CosmaOptions.time_limit``, ``allocator_timeout``) are safety nets, off by default, and a
schedule they cut short says so in ``stats.clock_stopped``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import networkx as nx

from allocator.core.defaults import DEFAULT_METHOD
from scheduler.baseline import schedule
from scheduler.budget import min_capacity
from scheduler.cosma import budgets as memory_budgets
from scheduler.cosma import cosma, cosma_dnc
from scheduler.cosma import min_peak as mpmf_order
from scheduler.options import DEFAULT_REPLACEMENT, DEFAULTS, CosmaOptions, ScheduleOptions
from scheduler.order import PROGRAM, is_solvers_order
from scheduler.registry import (
    DEFAULT_SCHEDULER,
    ONLINE_ARENA,
    check_fixed_order,
    check_graph,
    check_options,
    scheduler_entry,
)
from scheduler.schedule import Schedule, ScheduleError
from scheduler.spill_loop import allocation_aware

#: named memory budgets ``resolve_budget`` accepts
BUDGETS = ("MR", "MH", "MP")


def resolve_budget(
    graph: nx.DiGraph, budget: int | str, sizes: Mapping[str, int] | None = None, alignment: int = 1,
    options: CosmaOptions = DEFAULTS,
) -> int:
    """Bytes of the memory budget ``budget``: ``"MR"``, ``"MH"``, ``"MP"`` (``cosma.budgets``) or a positive integer.

    ``"MR"`` needs no solver; ``"MH"`` and ``"MP"`` solve for the minimum peak order.

    >>> from frontend.synthetic import chain
    >>> resolve_budget(chain(3, size=10), "MR"), resolve_budget(chain(3, size=10), 64)
    (30, 64)
    """
    if isinstance(budget, str) and budget.upper() == "MR":
        return min_capacity(graph, sizes, alignment)[0]
    if isinstance(budget, str) and budget.upper() in BUDGETS:
        return memory_budgets(graph, sizes, alignment, options)[budget.upper()]
    if isinstance(budget, int) and not isinstance(budget, bool) and budget > 0:
        return budget
    raise ScheduleError(f"budget {budget!r} is neither one of {', '.join(BUDGETS)} nor a positive number of bytes")


def make_schedule(
    graph: nx.DiGraph, capacity_bytes: int, method: str = DEFAULT_SCHEDULER, replacement: str = DEFAULT_REPLACEMENT,
    sizes: Mapping[str, int] | None = None, alignment: int = 1, options: CosmaOptions = DEFAULTS,
    fixed_order: str = PROGRAM, part_size: int = 40, allocator: str | None = None,
    allocator_timeout: float | None = None, allocator_options: Mapping[str, Any] | None = None,
    order: str | Sequence[str] = PROGRAM,
) -> Schedule:
    """Schedule ``graph`` in ``capacity_bytes`` with the scheduler called ``method`` (see ``SCHEDULERS``).

    Each option applies to the schedulers whose capabilities take it (``scheduler.registry``):
    ``replacement`` to ``"program"`` and ``"min-peak"``; ``fixed_order`` to ``"cosma-fs"``;
    ``part_size`` to ``"cosma-dnc"``; ``options`` (work limit, workers, seed) to every
    solver-based method, including the MPMF order of ``"min-peak"``. ``allocator``
    (``"program"`` and ``"min-peak"`` only) decides their spills: any ``allocator.METHODS``
    name runs the allocation-aware loop with it (``allocation_aware``;
    ``allocator.DEFAULT_METHOD`` when None, the default of ``accelsim run`` too;
    ``allocator_timeout`` is a wall-clock safety net in seconds for the loop,
    ``allocator_options`` go to ``allocator.solve``), and ``"online-first-fit"``
    (``scheduler.registry.ONLINE_ARENA``) is the baseline's online arena. ``order`` is the
    ``"program"`` scheduler's order (``"program"`` or a list of every operator). The result's
    ``status`` says whether a solver proved its answer (``"optimal"``), used up its work limit
    with one (``"feasible"``) or without (``"timeout"``: the best baseline is returned), or
    whether it is a heuristic; ``stats.clock_stopped`` is True when a wall-clock limit, not a
    work limit, ended a search (of the order, too, for ``"min-peak"`` and ``"cosma-fs"`` with
    the MPMF order). Unknown names and options a scheduler does not take raise
    ``ScheduleError`` naming them.

    >>> from frontend.synthetic import chain
    >>> make_schedule(chain(3, size=10), 30, "cosma").noncompulsory_bytes
    0
    """
    entry = scheduler_entry(method)
    check_fixed_order(fixed_order)
    check_options(method, allocator=allocator, allocator_timeout=allocator_timeout,
                  allocator_options=allocator_options)
    check_graph(method, graph, fixed_order)
    check_options(method, order=order)
    chosen = ScheduleOptions(
        capacity=capacity_bytes, replacement=replacement, sizes=sizes, alignment=alignment, solver=options,
        fixed_order=fixed_order, part_size=part_size, allocator=allocator, allocator_timeout=allocator_timeout,
        allocator_options=allocator_options, order=order)
    return entry.resolve()(graph, chosen)


# -- the built-in schedulers (``scheduler.registry.BUILT_IN``) ---------------------------------------


def spills_in_order(graph: nx.DiGraph, options: ScheduleOptions, order: str | Sequence[str]) -> Schedule:
    """A schedule of ``order`` with ``options.replacement``, its spills decided by
    ``options.allocator`` (the allocation-aware loop, or the online arena): what a scheduler that
    takes an allocator does once it has chosen its order."""
    if options.allocator == ONLINE_ARENA:
        result = schedule(graph, options.capacity, order, options.replacement, options.sizes, options.alignment)
        result.stats.clock_stopped = False  # the arena looks at no clock
        return result
    return allocation_aware(graph, options.capacity, options.allocator or DEFAULT_METHOD, order, options.replacement,
                            options.sizes, options.alignment, options.allocator_timeout, options.allocator_options)


def program(graph: nx.DiGraph, options: ScheduleOptions) -> Schedule:
    """The program order (or ``options.order``), its spills decided by the allocator."""
    return spills_in_order(graph, options, options.order)


def min_peak(graph: nx.DiGraph, options: ScheduleOptions) -> Schedule:
    """The order of minimum peak footprint (MPMF), its spills decided by the allocator."""
    best = mpmf_order(graph, options.sizes, options.alignment, options.solver)
    result = spills_in_order(graph, options, best.order)
    result.method = f"min-peak+{options.replacement}"
    result.stats.order_peak = best.peak
    result.stats.order_status_optimal = best.status == "optimal"
    result.stats.clock_stopped = bool(result.stats.clock_stopped or best.clock_stopped)
    return result


def cosma_joint(graph: nx.DiGraph, options: ScheduleOptions) -> Schedule:
    """COSMA's joint model: order, addresses and spills."""
    return cosma(graph, options.capacity, None, options.sizes, options.alignment, options.solver)


def cosma_fixed(graph: nx.DiGraph, options: ScheduleOptions) -> Schedule:
    """COSMA's model for a fixed order: the program order, or MPMF's (``options.fixed_order``)."""
    mpmf = (mpmf_order(graph, options.sizes, options.alignment, options.solver)
            if is_solvers_order(options.fixed_order) else None)
    result = cosma(graph, options.capacity, PROGRAM if mpmf is None else mpmf.order, options.sizes,
                   options.alignment, options.solver)
    result.method = result.method.replace("cosma-fs", f"cosma-fs[{options.fixed_order}]", 1)
    if mpmf is not None and mpmf.clock_stopped:
        result.stats.clock_stopped = True
    return result


def cosma_divided(graph: nx.DiGraph, options: ScheduleOptions) -> Schedule:
    """COSMA's divide and conquer, parts of at most ``options.part_size`` operators."""
    return cosma_dnc(graph, options.capacity, options.part_size, options.sizes, options.alignment, options.solver)

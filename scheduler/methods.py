"""Every scheduler by name, and the memory budgets they are compared at (COSMA §V-A2).

``SCHEDULERS`` lists the methods ``make_schedule`` and ``accelsim run --scheduler`` accept:

* ``"program"`` -- the program order with a replacement policy (``"belady"`` or ``"greedy"``),
  its spills decided by an ``allocator.METHODS`` method placing each residency plan offline
  (``scheduler.spill_loop.allocation_aware``; ``"auto"`` by default, as in ``accelsim run``
  and ``accelsim.compile_and_simulate``, so the three give the same schedule), or by the
  TensorFlow Lite style online first-fit arena (``allocator="online-first-fit"``,
  ``scheduler.baseline``);
* ``"min-peak"`` -- the same with the order of minimum peak footprint (MPMF, ``min_peak``);
* ``"cosma"`` -- the joint CP-SAT model (``scheduler.cosma.cosma``);
* ``"cosma-fs"`` -- addresses and replacement for a fixed order, ``fixed_order`` =
  ``"program"`` or ``"min-peak"`` (COSMA §III-E2);
* ``"cosma-dnc"`` -- divide and conquer over automatic break nodes (COSMA §IV).

A budget is ``"MR"`` (the largest single-operator footprint), ``"MP"`` (the minimum peak
footprint), ``"MH"`` (their mean) or a number of bytes.

Every default budget here is work, not seconds (``CosmaOptions.deterministic_time`` for the
CP-SAT models and the MPMF order, ``allocator.METHODS[name].work_limit`` for the loop's
allocator), so the same call gives the same schedule on any machine; the wall-clock limits
(``CosmaOptions.time_limit``, ``allocator_timeout``) are safety nets, off by default, and a
schedule they cut short says so in ``stats["clock_stopped"]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import networkx as nx

from scheduler.baseline import schedule
from scheduler.budget import min_capacity
from scheduler.cosma import DEFAULTS, CosmaOptions, budgets, cosma, cosma_dnc, min_peak
from scheduler.schedule import Schedule, ScheduleError
from scheduler.spill_loop import DEFAULT_ALLOCATOR, ONLINE, allocation_aware

#: scheduler names ``make_schedule`` accepts
SCHEDULERS = ("program", "min-peak", "cosma", "cosma-fs", "cosma-dnc")

#: named budgets ``resolve_budget`` accepts
BUDGETS = ("MR", "MH", "MP")


def resolve_budget(
    graph: nx.DiGraph, budget: int | str, sizes: Mapping[str, int] | None = None, alignment: int = 1,
    options: CosmaOptions = DEFAULTS,
) -> int:
    """Bytes of ``budget``: ``"MR"``, ``"MH"``, ``"MP"`` (see ``cosma.budgets``) or a positive integer.

    ``"MR"`` needs no solver; ``"MH"`` and ``"MP"`` solve for the minimum peak order.

    >>> from frontend.synthetic import chain
    >>> resolve_budget(chain(3, size=10), "MR"), resolve_budget(chain(3, size=10), 64)
    (30, 64)
    """
    if isinstance(budget, str) and budget.upper() == "MR":
        return min_capacity(graph, sizes, alignment)[0]
    if isinstance(budget, str) and budget.upper() in BUDGETS:
        return budgets(graph, sizes, alignment, options)[budget.upper()]
    if isinstance(budget, int) and not isinstance(budget, bool) and budget > 0:
        return budget
    raise ScheduleError(f"budget {budget!r} is neither one of {', '.join(BUDGETS)} nor a positive number of bytes")


def make_schedule(
    graph: nx.DiGraph, capacity_bytes: int, method: str = "program", replacement: str = "belady",
    sizes: Mapping[str, int] | None = None, alignment: int = 1, options: CosmaOptions = DEFAULTS,
    fixed_order: str = "program", part_size: int = 40, allocator: str | None = None,
    allocator_timeout: float | None = None, allocator_options: Mapping[str, Any] | None = None,
    order: str | Sequence[str] = "program",
) -> Schedule:
    """Schedule ``graph`` in ``capacity_bytes`` with the scheduler called ``method`` (see ``SCHEDULERS``).

    ``replacement`` applies to ``"program"`` and ``"min-peak"``; ``fixed_order`` to
    ``"cosma-fs"``; ``part_size`` to ``"cosma-dnc"``; ``options`` (budget, workers, seed)
    to every solver-based method, including the MPMF order of ``"min-peak"``. ``allocator``
    (``"program"`` and ``"min-peak"`` only) decides their spills: any ``allocator.METHODS``
    name runs the allocation-aware loop with it (``allocation_aware``; ``"auto"`` when None,
    the default of ``accelsim run`` too; ``allocator_timeout`` is a wall-clock safety net in
    seconds for the loop, ``allocator_options`` go to ``allocator.solve``), and
    ``"online-first-fit"`` is the baseline's online arena. ``order`` is the ``"program"``
    scheduler's order (``"program"`` or a list of every operator). The result's
    ``status`` says whether a solver proved its answer (``"optimal"``), used up its budget
    with one (``"feasible"``) or without (``"timeout"``: the best baseline is returned),
    or whether it is a heuristic; ``stats["clock_stopped"]`` is 1 when a wall-clock limit,
    not a work budget, ended a search (of the order, too, for ``"min-peak"`` and
    ``"cosma-fs"`` with the MPMF order). Unknown names raise ``ScheduleError`` listing the
    valid ones.

    >>> from frontend.synthetic import chain
    >>> make_schedule(chain(3, size=10), 30, "cosma").noncompulsory_bytes
    0
    """
    if method not in SCHEDULERS:
        raise ScheduleError(f"unknown scheduler {method!r}; valid values: {', '.join(map(repr, SCHEDULERS))}")
    if fixed_order not in ("program", "min-peak"):
        raise ScheduleError(f"unknown fixed order {fixed_order!r}; valid values: 'program', 'min-peak'")
    if method not in ("program", "min-peak"):
        if allocator is not None:
            raise ScheduleError(f"allocator={allocator!r} decides the spills of the 'program' and 'min-peak' "
                                f"schedulers; {method!r} places its own tensors (re-place its residencies with "
                                "allocator.solve)")
        if allocator_timeout is not None or allocator_options is not None:
            raise ScheduleError(f"allocator_timeout and allocator_options apply to the 'program' and 'min-peak' "
                                f"schedulers' allocator, not to {method!r}")
    chosen = DEFAULT_ALLOCATOR if allocator is None else allocator
    if allocator_timeout is not None and chosen == ONLINE:
        raise ScheduleError(f"allocator_timeout={allocator_timeout!r} limits an allocator's loop; the "
                            f"{ONLINE!r} arena has no time limit")

    reorders = method in ("min-peak", "cosma", "cosma-dnc") or (method == "cosma-fs" and fixed_order == "min-peak")
    if reorders and graph.graph.get("host_ops"):
        raise ScheduleError(
            f"graph {graph.graph.get('name', '')!r} has host operators (frontend.host), whose results the "
            f"accelerator may read only after the host ran them; scheduler {method!r}"
            + (" with fixed order 'min-peak'" if method == "cosma-fs" else "")
            + " chooses its own order without that constraint: use 'program' or 'cosma-fs' with the program order")
    if method != "program" and not (isinstance(order, str) and order == "program"):
        raise ScheduleError(f"order applies to the 'program' scheduler, not to {method!r}")

    def fixed(sequence: str | Sequence[str]) -> Schedule:
        if chosen == ONLINE:
            result = schedule(graph, capacity_bytes, sequence, replacement, sizes, alignment)
            result.placed_by = ONLINE
            result.stats["clock_stopped"] = 0.0
            return result
        return allocation_aware(graph, capacity_bytes, chosen, sequence, replacement, sizes, alignment,
                                allocator_timeout, allocator_options)

    if method == "program":
        return fixed(order)
    if method == "min-peak":
        best = min_peak(graph, sizes, alignment, options)
        result = fixed(best.order)
        result.method = f"min-peak+{replacement}"
        result.stats["order_peak"] = best.peak
        result.stats["order_status_optimal"] = float(best.status == "optimal")
        result.stats["clock_stopped"] = float(result.stats["clock_stopped"] or best.clock_stopped)
        return result
    if method == "cosma":
        return cosma(graph, capacity_bytes, None, sizes, alignment, options)
    if method == "cosma-fs":
        mpmf = None if fixed_order == "program" else min_peak(graph, sizes, alignment, options)
        result = cosma(graph, capacity_bytes, "program" if mpmf is None else mpmf.order, sizes, alignment, options)
        result.method = result.method.replace("cosma-fs", f"cosma-fs[{fixed_order}]", 1)
        if mpmf is not None and mpmf.clock_stopped:
            result.stats["clock_stopped"] = 1.0
        return result
    return cosma_dnc(graph, capacity_bytes, part_size, sizes, alignment, options)

"""Minimum SRAM: how much scratchpad a model needs to run at all, and to run without spilling.

``size(model, hw, pairs)`` answers, from one traced graph (``frontend.cache``: traced once,
reused for every probe):

* **M_R**, the smallest scratchpad that runs at all: the largest footprint of one operator's
  inputs and outputs (``scheduler.min_capacity``); it does not depend on the scheduler. It is
  given twice: with the config's weight tiles (``--tiling weights``, the graph every other figure
  here is measured on), and with ``--tiling auto``, which tiles for the scratchpad it runs in
  (``auto_min_capacity``: the smallest scratchpad whose own tiling fits in it, the least
  ``accelsim run`` can be given);
* for each scheduler/allocator pair, the **smallest SRAM with zero non-compulsory traffic**
  (no spill, no retrieve), found by bisection over multiples of the config's alignment;
* for each pair, the **peak address and the non-compulsory bytes at the config's own SRAM**.

Bisection. The lower end is M_R; the upper end is the online first-fit arena's no-spill size
(``scheduler.no_spill_capacity``), doubled until the pair moves no spilled byte there (for a
scheduler that takes an allocator, program and min-peak, the allocation-aware loop keeps the
online arena's schedule when it is better, so the arena's no-spill size always works for it). Each probe schedules
(and, for the loop, places) the graph at the middle size; zero non-compulsory bytes moves the
upper end down, otherwise the lower end up. Bisection assumes that more SRAM never makes a
pair spill more. That holds for a proven optimum, not always for heuristics and time-limited
solvers, so the answer is the smallest size at which a probe ran without spilling, and
``probes`` lists every probe for the record.

Traffic is the schedule's (``Schedule.noncompulsory_bytes``, per PE on a per-PE target, as
every size here is); no simulation runs, so sizing is quick. The sizes and peaks are in the
config's scope (per PE on the Pixel 6). ``accelsim size`` prints the table.

Work limits. Every probe's limits are work, as in ``accelsim run`` (the spill loop's nodes and
rounds, CP-SAT's deterministic time), so the bisection takes the same probes and gives the same
sizes on every machine. ``timeout`` and ``time_limit`` are wall-clock safety nets, off by
default; when one ends a probe's search, that pair's ``clock_stopped`` is True and its note says
so (``accelsim size`` exits with status 3). The pairs' compiled code is loaded (or compiled)
before the first probe, so a pair's ``seconds`` never include compiling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelsim.hw import HardwareConfig, load_hw
from accelsim.sources import is_saved_graph, is_traced
from accelsim.units import format_bytes
from allocator.core.defaults import DEFAULT_METHOD
from allocator.core.kernel_clock import work_clock
from frontend.limits import MAX_OPERATORS
from scheduler.registry import (
    DEFAULT_SCHEDULER,
    ONLINE_ARENA,
    check_allocator,
    check_limits,
    check_options,
    reads_allocator_timeout,
    scheduler_entry,
)

#: the allocator of a pair whose scheduler places its tensors itself (cosma*): its own addresses
OWN = "own"
#: the pairs ``size`` measures when none are given: the online arena and the default allocator
DEFAULT_PAIRS = ((DEFAULT_SCHEDULER, ONLINE_ARENA), (DEFAULT_SCHEDULER, DEFAULT_METHOD))
#: the most doublings of the upper end before a pair is reported as never free of spills
MAX_DOUBLINGS = 8


@dataclass
class PairSize:
    """What one scheduler/allocator pair needs."""

    scheduler: str
    allocator: str  #: for a scheduler that places its tensors itself (cosma*) "own" (its CP-SAT addresses)
    no_spill_bytes: int | None  #: the smallest SRAM found with zero non-compulsory traffic (None: none found)
    peak_bytes: int | None  #: highest address at the config's SRAM (None below M_R or on failure)
    noncompulsory_bytes: int | None  #: spill and retrieve bytes at the config's SRAM (same scope)
    probes: list[tuple[int, int]] = field(default_factory=list)  #: (SRAM bytes, non-compulsory bytes) per probe
    seconds: float = 0.0
    note: str = ""  #: why a cell is empty, or what the bisection could not assume
    #: a wall-clock limit (``timeout``, ``time_limit``) ended the search of at least one probe: the
    #: sizes may differ on another machine
    clock_stopped: bool = False


@dataclass
class SizeReport:
    """``size``'s answer for one model on one config."""

    model: str
    hw: str
    scope: str  #: "per PE (16 PEs)" or "chip"
    sram_bytes: int  #: the config's own SRAM
    min_capacity_bytes: int  #: M_R, with the config's weight tiles (``--tiling weights``)
    min_capacity_op: str  #: the operator that sets M_R
    #: the smallest scratchpad ``--tiling auto`` runs in (``auto_min_capacity``), and the operator that sets it
    auto_min_capacity_bytes: int
    auto_min_capacity_op: str
    alignment: int
    pairs: list[PairSize]

    def rows(self) -> list[dict[str, Any]]:
        """One flat dict per pair (the CSV's rows)."""
        return [{"model": self.model, "hw": self.hw, "scheduler": p.scheduler, "allocator": p.allocator,
                 "min_capacity_bytes": self.min_capacity_bytes,
                 "auto_min_capacity_bytes": self.auto_min_capacity_bytes, "no_spill_bytes": p.no_spill_bytes,
                 "sram_bytes": self.sram_bytes, "peak_bytes": p.peak_bytes,
                 "noncompulsory_bytes": p.noncompulsory_bytes, "probes": len(p.probes),
                 "deterministic": not p.clock_stopped, "seconds": round(p.seconds, 3), "note": p.note}
                for p in self.pairs]

    def format(self) -> str:
        """The table ``accelsim size`` prints."""
        def cell(n: int | None) -> str:
            if n is None:
                return "-"
            return f"{n:,} B" if n < 1024 else f"{format_bytes(n)} ({n:,} B)"

        lines = [f"accelsim size: {self.model} on {self.hw}, sizes {self.scope}; no-spill sizes with the config's "
                 "weight tiles",
                 f"  M_R, tiling weights {cell(self.min_capacity_bytes)}, set by {self.min_capacity_op}",
                 f"  M_R, tiling auto    {cell(self.auto_min_capacity_bytes)}, set by {self.auto_min_capacity_op} "
                 "(weights and rows tiled for that scratchpad)",
                 f"  config SRAM         {cell(self.sram_bytes)}", ""]
        header = ("scheduler", "allocator", "no-spill SRAM", "peak at config SRAM", "non-compulsory there", "probes")
        body = [(p.scheduler, p.allocator, cell(p.no_spill_bytes), cell(p.peak_bytes), cell(p.noncompulsory_bytes),
                 str(len(p.probes))) for p in self.pairs]
        widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
        for row in [header, *body]:
            lines.append("  " + "  ".join(text.ljust(w) for text, w in zip(row, widths, strict=True)).rstrip())
        notes = [f"  {p.scheduler}/{p.allocator}: {p.note}" for p in self.pairs if p.note]
        return "\n".join(lines + ([""] + notes if notes else []))


def check_pairs(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """``pairs`` checked by the scheduler registry: known schedulers, allocators that apply (``OWN``, or
    empty, for a scheduler that places its tensors itself); repeats dropped. Raises ``ValueError``."""
    checked = []
    for sched, alloc in pairs:
        if scheduler_entry(sched).capabilities.allocator:
            check_allocator(alloc)
        else:
            check_options(sched, allocator=None if alloc in (OWN, "") else alloc)
            alloc = OWN
        if (sched, alloc) not in checked:
            checked.append((sched, alloc))
    return checked


def _check_limits(chosen: Sequence[tuple[str, str]], timeout: float | None, time_limit: float | None) -> None:
    """Refuse a wall-clock limit that no chosen pair would read, as ``accelsim run`` refuses it."""
    check_limits([(s, None if a == OWN else a) for s, a in chosen], allocator_timeout=timeout, time_limit=time_limit,
                 names={"allocator_timeout": "timeout"},
                 flags={"allocator_timeout": "--timeout", "time_limit": "--time-limit"})


def _model_graph(model: Any, dtype: str, inputs: Any) -> Any:
    """The graph ``size`` measures: ``model`` itself, a saved graph, or a zoo or user model traced
    through the trace cache at ``inputs`` (a ``RunOptions``: its shapes, batch and model
    options), its operator count checked against ``inputs.max_operators``."""
    import networkx as nx

    import frontend
    from frontend.cache import cached_trace

    if isinstance(model, nx.DiGraph):
        graph = model
    elif is_saved_graph(model):
        graph = frontend.load_graph(str(model), inputs.max_operators)
    else:
        graph = cached_trace(str(model), dtype, inputs.input_shape, batch=inputs.batch,
                             options=dict(inputs.model_options) or None, tracing=inputs.tracing).graph
    frontend.check_operator_count(graph.number_of_nodes(), str(graph.graph.get("name", model)), inputs.max_operators)
    return graph


def size(
    model: Any,
    hw: str | Path | HardwareConfig = "pixel6",
    pairs: Sequence[tuple[str, str]] = DEFAULT_PAIRS,
    overrides: dict[str, Any] | None = None,
    timeout: float | None = None,
    time_limit: float | None = None,
    weights: bool = True,
    max_operators: int | None = MAX_OPERATORS,
    input_shape: Any = None,
    batch: int | None = None,
    model_options: dict[str, int] | None = None,
    trace_method: str = "auto",
    host: tuple[str, ...] = (),
) -> SizeReport:
    """The minimum SRAM of ``model`` on ``hw`` for each (scheduler, allocator) pair (see the module docstring).

    ``model`` is a zoo name or a user model spec (``path/to/file.py:FUNCTION``), traced once
    through the trace cache at ``input_shape``, ``batch`` and ``model_options`` (as
    ``RunOptions`` takes them), a ``.json`` graph or a ``DataflowGraph``. ``pairs`` are
    (scheduler, allocator): an allocator name or ``"online-first-fit"`` for a scheduler that
    takes an allocator (``program``, ``min-peak``), ``"own"`` for one that places its tensors
    itself (the cosma* schedulers). ``timeout`` is a wall-clock safety net in
    seconds for each allocation-aware loop (``scheduler.spill_loop.allocation_aware``),
    ``time_limit`` for each cosma* solve; both are off by default (see the module docstring).
    ``max_operators`` is ``RunOptions.max_operators``; ``trace_method`` and ``host`` its tracer
    choice (``--trace-method``, ``--host``).
    Raises ``ValueError`` for an unknown model, scheduler, allocator or hardware field, or a
    graph too large (``frontend.check_operator_count``).
    """
    import scheduler
    from accelsim.pipeline import (
        RunOptions,
        check_dram,
        check_model,
        dram_footprint_bytes,
        on_chip_graph,
    )

    inputs = RunOptions(input_shape=input_shape, batch=batch, model_options=model_options or {},
                        max_operators=max_operators, trace_method=trace_method, host=tuple(host))
    inputs.check(traced=not is_traced(model))
    check_model(model, inputs)
    config = load_hw(hw, overrides or {})
    chosen = check_pairs(pairs)
    _check_limits(chosen, timeout, time_limit)
    graph = _model_graph(model, config.dtype, inputs)
    wanted = (overrides or {}).get("dtype")
    if wanted is not None and "dtype" in graph.graph and str(wanted).strip() != graph.graph["dtype"]:
        raise ValueError(f"--set dtype={wanted} cannot apply to a graph already traced in {graph.graph['dtype']!r}; "
                         "trace the model again in that dtype")
    traced = graph
    graph, sizes, _ = on_chip_graph(graph, config, weights)
    check_dram(dram_footprint_bytes(graph, None, config, weights), config,
               "the model's inputs, outputs" + (" and weights" if weights else ""))
    align = config.alignment
    need, need_op = scheduler.min_capacity(graph, sizes, align)
    options = scheduler.CosmaOptions() if time_limit is None else scheduler.CosmaOptions(time_limit=time_limit)
    no_spill_online = scheduler.no_spill_capacity(graph, sizes=sizes, alignment=align)

    clocked: set[tuple[str, str]] = set()  # the pairs a wall-clock limit cut short in some probe

    def attempt(sched: str, alloc: str, capacity: int) -> scheduler.Schedule:
        if alloc == OWN:
            result = scheduler.make_schedule(graph, capacity, sched, sizes=sizes, alignment=align, options=options)
        else:
            result = scheduler.make_schedule(graph, capacity, sched, sizes=sizes, alignment=align, options=options,
                                             allocator=alloc, allocator_timeout=timeout
                                             if reads_allocator_timeout(sched, alloc) else None)
        if result.stats.clock_stopped:
            clocked.add((sched, alloc))
        return result

    results = []  # each pair's seconds by work_clock: a kernel compiled on first use is not counted
    for sched, alloc in chosen:
        began = work_clock()
        probes: list[tuple[int, int]] = []

        def spills(capacity: int, sched: str = sched, alloc: str = alloc, probes: list = probes) -> int:
            moved = attempt(sched, alloc, capacity).noncompulsory_bytes
            probes.append((capacity, moved))
            return moved

        found, note = _bisect_no_spill(spills, probes, need, max(-(-no_spill_online // align) * align, need), align)
        peak = moved_there = None
        if config.sram_bytes_per_pe >= need:
            at_config = attempt(sched, alloc, config.sram_bytes_per_pe)
            moved_there = at_config.noncompulsory_bytes
            peak = scheduler.schedule.peak_address(at_config)
        else:
            note = (note + "; " if note else "") + "the config's SRAM is below M_R"
        stopped = (sched, alloc) in clocked
        if stopped:
            note = (note + "; " if note else "") + "a wall-clock limit ended a search: not the deterministic answer"
        results.append(PairSize(sched, alloc, found, peak, moved_there, probes, work_clock() - began, note,
                                stopped))
    auto_need, auto_op = auto_min_capacity(traced, config, weights, (need, need_op))
    return SizeReport(str(graph.graph.get("name", model)), config.name, config.capacity_label,
                      config.sram_bytes_per_pe, need, need_op, auto_need, auto_op, align, results)


def _bisect_no_spill(spills: Any, probes: list[tuple[int, int]], need: int, high: int,
                     align: int) -> tuple[int | None, str]:
    """The smallest SRAM a probe found free of spills (module docstring), and a note: ``spills(capacity)``
    schedules there and records the probe in ``probes``; ``high`` is where the doubling starts."""
    low = need
    found: int | None = None
    for _ in range(MAX_DOUBLINGS + 1):
        if spills(high) == 0:
            found = high
            break
        low, high = high, high * 2
    if found is None:
        return None, f"spills even at {format_bytes(high // 2)}"
    if low == need < high and spills(low) == 0:
        high = low  # M_R itself needs no spill
    while high - low > align:  # invariant: spills at low, none at high
        middle = (low + high) // 2 // align * align
        if middle <= low:
            break
        if spills(middle) == 0:
            high = middle
        else:
            low = middle
    found = high  # every probe below it spilled: a probe without spills moved ``high`` down to it
    if any(moved > 0 and capacity > found for capacity, moved in probes):
        return found, "not monotone: a probe above the answer spilled (heuristic or time-limited)"
    return found, ""


def auto_min_capacity(graph: Any, config: HardwareConfig, weights: bool,
                      weights_need: tuple[int, str]) -> tuple[int, str]:
    """A smallest scratchpad (a multiple of the alignment) in which ``graph``, tiled by ``--tiling auto``
    for that very scratchpad (``accelsim.tiling``: weights, and rows where an operator cannot run
    whole), has its M_R: what ``accelsim run`` needs at least.

    ``weights_need`` is M_R with the config's weight tiles, and its operator. From there up the
    scratchpad doubles until its own tiling fits (a tile's concat holds the tiles and the output at
    once, so finer tiles can need more room than whole weights; at four times ``weight_tile_bytes``
    ``auto`` is the config's rule, which fits), then a bisection below it keeps a size that fits.
    Like the no-spill bisection, it assumes the answer has one boundary; the size returned fits.
    """
    import scheduler
    from accelsim.pipeline import on_chip_graph

    align = config.alignment

    def need_at(capacity: int) -> tuple[int, str]:
        tiled, sizes, _ = on_chip_graph(graph, config.with_sram(capacity), weights, "auto")
        return scheduler.min_capacity(tiled, sizes, align)

    def rounded(n: int) -> int:
        return max(-(-n // align) * align, align)

    low, high = 0, rounded(weights_need[0])
    best = need_at(high)
    while best[0] > high:  # invariant: nothing fits at low
        low, high = high, max(rounded(best[0]), 2 * high)
        best = need_at(high)
    while high - low > align:  # invariant: fits at high
        middle = (low + high) // 2 // align * align
        if middle <= low:
            break
        here = need_at(middle)
        if here[0] <= middle:
            high, best = middle, here
        else:
            low = middle
    return high, best[1]

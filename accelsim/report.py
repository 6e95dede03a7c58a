"""The report folder of a run and its terminal summary.

``write_report`` writes, into one folder:

* ``report.json`` -- ``SimReport.to_dict()``;
* ``layout.svg`` -- every residency as a rectangle in the (step x address) plane, the largest
  named with their tensors: the allocation the simulator checked. The address axis reaches a
  little above the peak (dotted line); the capacity is a red line when it is near the peak,
  else a note at the top says how far above the axis it is;
* ``memory.svg`` -- bytes allocated and highest address in use over simulated time, with the
  same byte axis, peak and capacity;
* ``roofline.svg`` -- every operator with MACs as a dot: its arithmetic intensity (MACs per
  byte it streams to and from the scratchpad) against the MACs per cycle it achieved (its
  MACs over its cycles with its stalls: the DMA wait before it and the SRAM streaming beyond
  its compute), under the compute ceiling (peak MACs per cycle) and the bandwidth ceilings of
  the scratchpad and of DRAM (bytes per cycle x intensity), on log axes. An operator that
  stalled also has a ring at its stall-free rate (MACs over its compute cycles), joined to
  the dot by a thin vertical segment; the operators losing the most cycles to stalls are
  named. A ring far below the roof is lost to mapping (a small GEMM on a big array), a long
  segment to waiting;
* ``trace.json`` -- the simulated timeline in Chrome trace-event format (open it in
  https://ui.perfetto.dev or chrome://tracing): one track for compute, one per DMA channel
  (reads and writes; slices on one track never overlap), and a counter track of scratchpad
  bytes. Times are microseconds of
  simulated time, rounded to whole nanoseconds.

The pictures are SVG written by ``accelsim.svg`` (no plotting library: importing matplotlib
alone would cost more than drawing them); every rectangle and point carries a tooltip with its
numbers when the file is opened in a browser. ``accelsim run --no-plots`` skips them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelsim.html_report import KIND_COLOURS, MAPPING_COLOURS, SPREAD_GAP, not_on_roofline, on_roofline, scope_note
from accelsim.svg import (
    FONT_SIZE,
    SMALL_FONT,
    Chart,
    LabelPlacer,
    LegendEntry,
    circle_element,
    pixel_line,
    short_label,
    spread_points,
    text_element,
    text_width,
)
from accelsim.units import byte_axis_top, byte_axis_unit, format_bytes

if TYPE_CHECKING:
    from accelsim.results import SimReport
    from accelsim.sim import OpRecord

_PID = 1
_COMPUTE_TID = 1


# --------------------------------------------------------------------------------------------
# terminal summary


#: how the summary names each tracer ``frontend.trace`` records in ``graph.graph["tracer"]``
TRACER_NAMES = {"fx": "torch.fx", "export": "torch.export"}


#: a summary row: label, value, note
SummaryRow = tuple[str, str, str]


def _table(rows: Sequence[SummaryRow], trailing: Sequence[SummaryRow] = ()) -> str:
    """The rows in aligned columns; ``trailing`` rows (a path of any length) follow in the same label
    column but take no part in the widths, so that no column moves with them."""
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    widths[0] = max([widths[0], *(len(r[0]) for r in trailing)])
    lines = [f"  {label:<{widths[0]}}  {value:<{widths[1]}}  {note}".rstrip() for label, value, note in rows]
    lines += [f"  {label:<{widths[0]}}  {value}  {note}".rstrip() for label, value, note in trailing]
    return "\n".join(lines)


def _percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "-"


def summary_title(report: SimReport) -> str:
    """The summary's first line: ``accelsim: resnet50 on pixel6 (int8)``, with the narrowed dtypes."""
    r = report
    narrowed = "".join(f"; {what} {dtype}" for what, dtype in
                       (("weights", r.precision.get("weights")), ("KV cache", r.precision.get("kv_cache"))) if dtype)
    return f"accelsim: {r.model} on {r.hw} ({r.dtype}{narrowed})"


def summary_rows(report: SimReport) -> list[SummaryRow]:
    """The rows of the run's summary (``format_summary``; report.html shows them as a table). Every
    byte figure says its scope: the capacity's (per PE on a target that splits tensors over its PEs)
    or the chip total (DRAM traffic, the graph's tensors). "utilization" is the whole run's, stalls
    included; report.html's operator table calls each operator's own figure mapping efficiency."""
    r = report
    traffic = r.dram_read_bytes + r.dram_write_bytes
    scope = r.capacity_scope
    rows = [
        ("scheduler", r.scheduler, _solver_note(r)),
        ("allocator", r.allocator, ""),
        ("capacity", format_bytes(r.capacity_bytes), f"{r.capacity_bytes:,} B {scope}"),
        ("M_R (min capacity)", format_bytes(r.min_capacity_bytes),
         f"{r.min_capacity_bytes:,} B {scope}, set by {r.min_capacity_op}"),
        ("tiled operators", f"{len(r.tiled_operators)}", ", ".join(r.tiled_operators[:4])
         + (" ..." if len(r.tiled_operators) > 4 else "")),
        ("peak address", format_bytes(r.peak_bytes),
         f"{scope}, {_percent(r.peak_bytes, r.capacity_bytes)} of capacity"),
        ("peak live bytes", format_bytes(r.peak_live_bytes), scope),
        ("operators", f"{r.n_ops:,}", f"{r.macs:,} MACs"),
        ("residencies", f"{r.n_residencies:,}", f"{r.spills:,} spills, {r.retrieves:,} retrieves"),
        ("cycles", f"{r.cycles:,}", _floor_note(r)),
        ("time", _seconds(r.seconds),
         f"at {r.clock_hz / 1e6:g} MHz; compute busy {_percent(r.compute_cycles, r.cycles)}, "
         f"DMA busy {_percent(r.dma_cycles, r.cycles)}"),
        ("utilization", f"{100 * r.utilization:.1f} %",
         f"of {r.peak_macs_per_cycle:,} MACs per cycle over the whole run, stalls included"),
        ("stalls", f"{sum(r.stall_cycles.values()):,} cycles",
         f"DMA wait {r.stall_cycles.get('dma_wait', 0):,} (bandwidth {r.dma_wait_split.get('bandwidth', 0):,}, "
         f"late loads {r.dma_wait_split.get('late', 0):,}), "
         f"SRAM bandwidth {r.stall_cycles.get('sram_bandwidth', 0):,}"),
        ("energy", format_joules(r.energy.get("total", 0.0)),
         f"compute {format_joules(r.energy.get('compute', 0.0))}, SRAM {format_joules(r.energy.get('sram', 0.0))}, "
         f"DRAM {format_joules(r.energy.get('dram', 0.0))}"),
        ("DRAM read", format_bytes(r.dram_read_bytes), f"{r.dram_read_bytes:,} B (chip total)"),
        ("DRAM write", format_bytes(r.dram_write_bytes), f"{r.dram_write_bytes:,} B (chip total)"),
        ("compulsory", format_bytes(r.compulsory_bytes),
         f"chip total: weights {format_bytes(r.weight_bytes)}, inputs {format_bytes(r.input_bytes)}, "
         f"outputs {format_bytes(r.output_bytes)}"),
        ("non-compulsory", format_bytes(r.noncompulsory_bytes),
         f"chip total, {_percent(r.noncompulsory_bytes, traffic)} of traffic"),
        *([("host operators", f"{len(r.host_ops)}",
            f"{', '.join(dict.fromkeys(h['kind'] for h in r.host_ops))}: "
            f"{format_bytes(r.to_host_bytes)} to the host, {format_bytes(r.from_host_bytes)} back "
            "(in the DRAM traffic; host time not simulated)")] if r.host_ops else []),
        ("memory check", "ok" if r.ok else "FAILED", "" if r.ok else r.memory_check),
        ("deterministic", "yes" if r.deterministic else "NO",
         "work limits only, no wall-clock limit fired" if r.deterministic else
         f"the wall-clock limit fired in {', '.join(r.clock_stopped)}: the answer depends on the machine"),
        ("wall time", _seconds(sum(r.stage_seconds.values())),
         ", ".join(f"{k} {v:.2f}s" for k, v in r.stage_seconds.items())),
    ]
    if r.tracer is not None:  # a graph built by hand was traced by nothing
        rows.insert(0, ("traced by", TRACER_NAMES.get(r.tracer, r.tracer), ""))
    return rows


def format_summary(report: SimReport) -> str:
    """A plain-text table of the run's key numbers (aligned columns, no colour): ``summary_title``,
    then ``summary_rows`` and the report folder. The folder's path is written after the table's
    columns are set, so that a long ``--out`` moves no column."""
    trailing = [("report", report.out_dir, "")] if report.out_dir else []
    return summary_title(report) + "\n" + _table(summary_rows(report), trailing)


def _floor_note(r: SimReport) -> str:
    """The cycles against the run's floor (``accelsim.sim.results``), the term that sets it and the
    other one: ``1.53× the floor 1,049,128 (compute-bound; DRAM alone 536,367)``."""
    floor = r.floor_cycles
    if not floor.get("cycles"):
        return "no floor: nothing ran"
    other = "dram" if floor["bound"] == "compute" else "compute"
    names = {"compute": "compute", "dram": "DRAM"}
    return (f"{r.cycles_over_floor:.2f}× the floor {floor['cycles']:,} "
            f"({names[floor['bound']]}-bound; {names[other]} alone {floor[other]:,})")


def _solver_note(r: SimReport) -> str:
    """The scheduler's status and, for a solver, its objective, bound and time."""
    note = r.scheduler_status + ("" if r.weights_on_chip else ", activations only")
    stats = r.scheduler_stats
    if "objective" in stats:
        note += (f", objective {format_bytes(int(stats['objective']))}, bound {format_bytes(int(stats['bound']))}, "
                 f"{stats['solve_seconds']:.2f} s")
    return note


def format_joules(joules: float) -> str:
    """Energy with a readable unit: ``format_joules(0.0123)`` is ``'12.30 mJ'``.

    >>> format_joules(0.0123), format_joules(4.5e-6), format_joules(2.0)
    ('12.30 mJ', '4.50 uJ', '2.000 J')
    """
    if joules >= 1:
        return f"{joules:.3f} J"
    if joules >= 1e-3:
        return f"{joules * 1e3:.2f} mJ"
    if joules >= 1e-6:
        return f"{joules * 1e6:.2f} uJ"
    return f"{joules * 1e9:.2f} nJ"


def _seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.3f} us"


# --------------------------------------------------------------------------------------------
# Chrome trace


def chrome_trace(report: SimReport) -> dict[str, Any]:
    """The simulated timeline as Chrome trace events (``ph: "X"`` complete events, microseconds),
    with a flow arrow (``ph: "s"`` / ``"f"``) from each load or retrieve to the operator that reads it."""
    assert report.sim is not None, "the report has no simulation result"
    ns_per_cycle = 1e9 / report.clock_hz

    def us(cycle: float) -> float:
        # whole nanoseconds, so an event ending at cycle c and the next starting there meet exactly
        return round(cycle * ns_per_cycle) / 1000

    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": _PID, "tid": 0, "name": "process_name",
         "args": {"name": f"{report.model} on {report.hw}"}},
    ]
    channels = report.hardware.dma.channels if report.hardware is not None else 1
    tracks = {"compute": _COMPUTE_TID} | {f"dma channel {c}": _COMPUTE_TID + 1 + c for c in range(channels)}
    for track, tid in tracks.items():
        events.append({"ph": "M", "pid": _PID, "tid": tid, "name": "thread_name", "args": {"name": track}})
        events.append({"ph": "M", "pid": _PID, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
    for o in report.sim.ops:
        events.append({
            "ph": "X", "pid": _PID, "tid": _COMPUTE_TID, "name": o.name, "cat": o.op,
            "ts": us(o.start_cycle), "dur": round(us(o.end_cycle) - us(o.start_cycle), 3),
            "args": {"step": o.step, "op": o.op, "macs": o.macs, "cycles": o.end_cycle - o.start_cycle,
                     "compute_cycles": o.compute_cycles, "ideal_cycles": o.ideal_cycles,
                     # an operator's own MACs / (compute cycles x peak): report.html's mapping efficiency
                     "mapping_efficiency": round(o.utilization, 4), "mapping": o.mapping,
                     "dma_wait_cycles": o.dma_stall_cycles, "sram_stall_cycles": o.sram_stall_cycles,
                     "dram_bytes": o.dram_read_bytes + o.dram_write_bytes, "energy_j": o.energy.get("total", 0.0)},
        })
    for t in report.sim.transfers:
        events.append({
            "ph": "X", "pid": _PID, "tid": _COMPUTE_TID + 1 + t.channel,
            "name": f"{t.kind} {t.tensor}", "cat": t.kind,
            "ts": us(t.start_cycle), "dur": round(us(t.end_cycle) - us(t.start_cycle), 3),
            "args": {"residency": t.residency, "step": t.step, "bytes": t.chip_bytes, "bytes_per_pe": t.nbytes,
                     "direction": "read" if t.to_chip else "write",
                     "compulsory": t.compulsory, "prefetched": t.prefetched,
                     "queued_us": us(t.queued_cycle)},
        })
    # flow arrows: each load or retrieve to the operator that reads what it brought (the operator
    # of the transfer's step); Perfetto and chrome://tracing draw them between the two slices
    reader = {o.step: o for o in report.sim.ops}
    for flow, t in enumerate(tr for tr in report.sim.transfers if tr.to_chip and tr.step in reader):
        o = reader[t.step]
        common = {"pid": _PID, "name": f"{t.tensor} -> {o.name}", "cat": "dataflow", "id": flow}
        events.append({"ph": "s", "tid": _COMPUTE_TID + 1 + t.channel, "ts": us(t.start_cycle), **common})
        events.append({"ph": "f", "bp": "e", "tid": _COMPUTE_TID, "ts": us(o.start_cycle), **common})
    for cycle, live, high in report.sim.memory_timeline:
        events.append({"ph": "C", "pid": _PID, "name": "scratchpad bytes", "ts": us(cycle),
                       "args": {"live": live, "highest address": high}})
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"model": report.model, "hw": report.hw, "cycles": report.cycles,
                      "clock_hz": report.clock_hz, "memory_check": report.memory_check},
    }


# --------------------------------------------------------------------------------------------
# pictures (SVG written by accelsim.svg; no plotting library)


#: the report's pictures, in the order they are written
PLOT_FILES = ("layout.svg", "memory.svg", "roofline.svg")
#: every file a report folder holds (``write_report``; the plots only with ``plots=True``)
REPORT_FILES = ("trace.json", *PLOT_FILES, "report.html", "report.json")
#: layout.svg names the tensors of this many of the largest residencies (step x byte area)
_TENSOR_LABELS = 12
#: roofline.svg names this many of the operators that lose the most cycles to stalls
_STALL_LABELS = 6
_PEAK_COLOUR = "#333333"


@dataclass(frozen=True)
class _ByteAxis:
    """The byte axis of layout.svg and memory.svg: scaled to the peak, the capacity in view only when near."""

    unit: str
    scale: float  #: bytes per axis unit
    top: float  #: bytes at the top of the axis
    capacity_in_view: bool


def _byte_axis(report: SimReport) -> _ByteAxis:
    """At the default capacity a small model's peak would fill the bottom few percent of an axis that
    reached the capacity; the axis follows the peak and reaches the capacity only when it is close."""
    top, in_view = byte_axis_top(report.peak_bytes, report.capacity_bytes)
    unit, scale = byte_axis_unit(top)
    return _ByteAxis(unit, scale, top, in_view)


def _capacity_legend(axis: _ByteAxis) -> list[LegendEntry]:
    return [LegendEntry("peak", _PEAK_COLOUR, "dash")] + (
        [LegendEntry("capacity", "red", "dash")] if axis.capacity_in_view else [])


def _capacity_marks(chart: Chart, report: SimReport, axis: _ByteAxis, placer: LabelPlacer) -> list[str]:
    """The peak as a dotted line and label; the capacity as a dashed red line and label when in view,
    else a note at the top of the plot saying how far above it is."""
    peak, cap = report.peak_bytes, report.capacity_bytes
    scope = scope_note(report.capacity_scope)
    share = f"{_percent(peak, cap)} of capacity"
    y_peak = chart.y(peak / axis.scale)
    marks = [chart.hline(peak / axis.scale, colour=_PEAK_COLOUR, width=1.0, dash="2,3")]
    marks.append(placer.place(f"peak {format_bytes(peak)}{scope}, {share}", [
        (chart.right - 4, y_peak - 4, "end"), (chart.right - 4, y_peak + 12, "end")], colour=_PEAK_COLOUR) or "")
    if axis.capacity_in_view:
        y_cap = chart.y(cap / axis.scale)
        marks.append(chart.hline(cap / axis.scale, colour="red"))
        marks.append(placer.place(f"capacity {format_bytes(cap)}{scope}", [
            (chart.left + 4, y_cap - 4, "start"), (chart.left + 4, y_cap + 12, "start")], colour="red") or "")
    else:
        note = f"capacity {format_bytes(cap)}{scope} is above this axis: the peak uses {_percent(peak, cap)} of it"
        marks.append(placer.place(note, [(chart.left + 6, chart.top + 14, "start")], colour="red", size=FONT_SIZE)
                     or text_element(chart.left + 6, chart.top + 14, note, colour="red", size=FONT_SIZE, halo=True))
    return [m for m in marks if m]


def _tensor_labels(chart: Chart, report: SimReport, scale: float, placer: LabelPlacer) -> list[str]:
    """The names of the tensors of the largest residencies (by steps x bytes, each tensor once):
    inside the rectangle when it holds the text (upwards in a tall narrow one), else just beside
    it with a short leader, where no other label is."""
    ranked = sorted(report.schedule.residencies, key=lambda r: (-r.size * (r.end - r.start), r.id))
    labels: list[str] = []
    named: set[str] = set()
    for r in ranked[: 4 * _TENSOR_LABELS]:
        if len(labels) >= 2 * _TENSOR_LABELS:  # a text and its leader per label
            break
        if r.tensor in named:
            continue
        offset = report.offsets[r.id]
        left, right = chart.x(r.start), chart.x(r.end)
        top, bottom = chart.y((offset + r.size) / scale), chart.y(offset / scale)
        text, centre, middle = short_label(r.tensor), (left + right) / 2, (top + bottom) / 2
        width = text_width(text, SMALL_FONT)
        candidates = []
        if width + 6 <= right - left and bottom - top >= SMALL_FONT + 3:
            candidates.append((centre, middle + 3.5, "middle"))
        if width + 6 <= bottom - top and right - left >= SMALL_FONT + 3:
            candidates.append((centre + 3, middle, "vertical"))
        inside = len(candidates)
        candidates += [(right + 10, middle + 3.5, "start"), (left - 10, middle + 3.5, "end")]
        chosen = placer.choose(text, candidates)
        if chosen is None:
            continue
        px, py, anchor = chosen
        labels.append(text_element(px, py, text, anchor=anchor, halo=True))
        if candidates.index(chosen) >= inside:  # beside: a leader from the rectangle's edge
            edge = right if anchor == "start" else left
            labels.append(pixel_line(edge, middle, px - 2 if anchor == "start" else px + 2, middle))
        named.add(r.tensor)
    return labels


def plot_layout(report: SimReport, path: str | Path) -> None:
    """layout.svg: residencies as (step x address) rectangles, coloured by tensor kind.

    One ``<rect>`` per residency in the group ``id="residencies"``, in schedule order, each
    with a tooltip naming the residency, its kind, steps, offset and size. The address axis
    reaches a little above the peak; the capacity is a line when it is near, else a note at
    the top. The largest residencies are labelled with their tensors' names (group
    ``id="tensor-labels"``).
    """
    sched = report.schedule
    tensors = report.graph.graph["tensors"]
    retrieved = {t.residency for t in sched.transfers if t.kind == "retrieve"}
    axis = _byte_axis(report)
    scale = axis.scale
    scope = scope_note(report.capacity_scope)
    kinds = []
    for r in sched.residencies:
        kinds.append("retrieved" if r.id in retrieved else tensors[r.tensor]["kind"])
    present = set(kinds)
    chart = Chart(
        title=f"{report.model} on {report.hw}: {len(sched.residencies)} residencies placed by {report.allocator}; "
              f"addresses{scope}",
        x_label="step (operator in schedule order)", y_label=f"address in {axis.unit}{scope}",
        x_range=(0, max(report.n_ops, 1)), y_range=(0, axis.top / scale),
        legend=[LegendEntry(k, c) for k, c in KIND_COLOURS.items() if k in present] + _capacity_legend(axis),
    )
    stroke = "black" if len(sched.residencies) < 2000 else None
    boxes = []
    for r, kind in zip(sched.residencies, kinds, strict=True):
        offset = report.offsets[r.id]
        boxes.append(chart.rect(
            r.start, r.end, offset / scale, (offset + r.size) / scale, fill=KIND_COLOURS[kind], stroke=stroke,
            stroke_width=0.3, opacity=0.85,
            tooltip=f"{r.id} ({kind}): steps {r.start}-{r.end}, offset {offset:,} B, {r.size:,} B{scope}"))
    chart.group("data", "residencies", boxes)
    placer = LabelPlacer(chart.plot_box())
    chart.group("overlay", "capacity", _capacity_marks(chart, report, axis, placer))
    chart.group("overlay", "tensor-labels", _tensor_labels(chart, report, scale, placer))
    Path(path).write_text(chart.to_svg(), encoding="utf-8")


def plot_memory(report: SimReport, path: str | Path) -> None:
    """memory.svg: bytes allocated and highest address in use over simulated time, under the peak
    and (when near, as in layout.svg) the capacity."""
    assert report.sim is not None, "the report has no simulation result"
    timeline = [*report.sim.memory_timeline, (report.cycles, 0, 0)]  # everything is freed at the end
    t_unit, t_scale = ("ms", 1e3) if report.seconds >= 1e-3 else ("us", 1e6)
    to_time = t_scale / report.clock_hz
    axis = _byte_axis(report)
    scale = axis.scale
    end = max(report.seconds * t_scale, 1e-9)
    chart = Chart(
        title=f"{report.model} on {report.hw}: scratchpad use over time",
        x_label=f"simulated time ({t_unit})", y_label=f"bytes in {axis.unit}{scope_note(report.capacity_scope)}",
        x_range=(0, end), y_range=(0, axis.top / scale), height=420,
        legend=[LegendEntry("bytes allocated", "#4c72b0"), LegendEntry("highest address in use", "#8172b3", "line"),
                *_capacity_legend(axis)],
    )
    xs = [cycle * to_time for cycle, _, _ in timeline]
    chart.add("data", chart.step_area(xs, [live / scale for _, live, _ in timeline], until=end, colour="#4c72b0"),
              chart.step_line(xs, [high / scale for _, _, high in timeline], until=end, colour="#8172b3"))
    chart.group("overlay", "capacity", _capacity_marks(chart, report, axis, LabelPlacer(chart.plot_box())))
    Path(path).write_text(chart.to_svg(), encoding="utf-8")


@dataclass(frozen=True)
class _OpPoint:
    """One operator on the roofline: where its stalls put it and where it would be without them."""

    name: str
    mapping: str
    intensity: float  #: MACs per byte streamed to and from the scratchpad (chip)
    achieved: float  #: MACs per cycle over its cycles with its stalls (DMA wait before it, SRAM streaming)
    stall_free: float  #: MACs per cycle over its compute cycles only
    cycles: float  #: its cycles with its stalls
    compute_cycles: float
    dma_stall: float
    sram_stall: float

    @property
    def stalls(self) -> float:
        return self.dma_stall + self.sram_stall

    @property
    def stalled(self) -> bool:
        return self.stalls > 0 and self.stall_free > self.achieved

    def tooltip(self) -> str:
        return (f"{self.name}: {self.intensity:.3g} MACs/B, {self.achieved:,.1f} MACs/cycle achieved "
                f"({self.cycles:,.0f} cycles), {self.stall_free:,.1f} stall-free ({self.compute_cycles:,.0f} "
                f"compute cycles); stalls {self.stalls:,.0f} cycles: DMA wait {self.dma_stall:,.0f}, "
                f"SRAM bandwidth {self.sram_stall:,.0f}")


def _roofline_points(report: SimReport) -> tuple[list[_OpPoint], list[OpRecord]]:
    """The operators with MACs, cycles and streamed bytes, in schedule order; and the others, which
    have no place on the roofline (no MACs: no intensity in MACs per byte)."""
    assert report.sim is not None
    points, others = [], []
    for o in report.sim.ops:
        duration = o.end_cycle - o.start_cycle
        if not on_roofline(o):
            others.append(o)
            continue
        cycles = duration + o.dma_stall_cycles
        compute = o.compute_cycles if o.compute_cycles > 0 else duration
        points.append(_OpPoint(o.name, o.mapping, o.macs / o.sram_bytes, o.macs / cycles, o.macs / compute,
                               cycles, compute, o.dma_stall_cycles, o.sram_stall_cycles))
    return points, others


def _stall_marks(chart: Chart, points: list[_OpPoint], at: list[tuple[float, float]],
                 placer: LabelPlacer) -> tuple[list[str], list[str], list[str]]:
    """For each stalled operator a thin vertical segment from its stall-free point (a ring) down to its
    achieved point ``at`` (pixels, spread); labels naming the operators that lose the most cycles to
    stalls (``short_label``: their numbers stay)."""
    segments, rings, labels = [], [], []
    for p, (px, py) in zip(points, at, strict=True):
        top = chart.y(p.stall_free) + py - chart.y(p.achieved)  # the ring moves with its dot
        placer.taken.append((px - 4, min(top, py) - 4, px + 4, py + 4))  # labels keep clear of them
        if not p.stalled:
            continue
        colour = MAPPING_COLOURS.get(p.mapping, "#333333")
        segments.append(pixel_line(px, top, px, py, colour=colour, width=0.8))
        rings.append(circle_element(px, top, colour=colour, radius=2.5, hollow=True, tooltip=p.tooltip()))
    ranked = sorted(range(len(points)), key=lambda i: (-points[i].stalls, points[i].name))
    for i in [i for i in ranked if points[i].stalled][:_STALL_LABELS]:
        p, (px, py) = points[i], at[i]
        text = f"{short_label(p.name, 32)} ({p.stalls:,.0f} stall cycles)"
        candidates = [(px + side * dx, py + 3.5 + dy, "start" if side > 0 else "end")
                      for dx in (8, 30, 60, 100) for dy in (0, 14, -14, 28, -28, 42, -42, 56, -56)
                      for side in (1, -1)]
        chosen = placer.choose(text, candidates)
        if chosen is None:
            continue
        lx, ly, anchor = chosen
        labels.append(text_element(lx, ly, text, anchor=anchor, halo=True))
        if abs(lx - px) > 10 or abs(ly - 3.5 - py) > 1:  # a leader from the dot to the label
            labels.append(pixel_line(px, py, lx - 2 if anchor == "start" else lx + 2, ly - 3.5))
    return segments, rings, labels


def _roofline_legend(report: SimReport, points: list[_OpPoint], spread: bool) -> list[LegendEntry]:
    hw = report.hardware
    assert hw is not None
    by_mapping: dict[str, int] = {}
    for p in points:
        by_mapping[p.mapping] = by_mapping.get(p.mapping, 0) + 1
    legend = [LegendEntry(f"roof: {hw.peak_macs_per_cycle:,} MACs/cycle, scratchpad {hw.sram_bytes_per_cycle_total:,} "
                          "B/cycle (chip)", "black", "line"),
              LegendEntry(f"DRAM {hw.dram_bytes_per_cycle:,.1f} B/cycle (chip; operands from DRAM)", "red", "dash")]
    legend += [LegendEntry(f"{mapping} ({n} operators): achieved, stalls included",
                           MAPPING_COLOURS.get(mapping, "#333333"), "dot") for mapping, n in sorted(by_mapping.items())]
    if any(p.stalled for p in points):
        legend += [LegendEntry("stall-free: MACs / compute cycles only", "#555555", "ring"),
                   LegendEntry("line from ring down to dot: rate lost to stalls", "#555555", "drop")]
    if spread:
        legend.append(LegendEntry("operators at the same point: spread around it, a thin line to it", "#555555",
                                  "spread"))
    return legend


def plot_roofline(report: SimReport, path: str | Path) -> None:
    """roofline.svg: MACs per cycle against arithmetic intensity, with the ceilings (log axes).

    Each operator with MACs is a dot at its achieved rate (its MACs over its cycles with its
    stalls: the DMA wait before it and the SRAM streaming beyond its compute); an operator that
    stalled also has a ring at its stall-free rate (MACs over its compute cycles), joined to
    the dot by a thin vertical segment, the rate its stalls cost. Tooltips give both rates and
    the stall cycles by cause; the operators losing the most cycles to stalls are named. Dots
    that would hide one another (the same layer repeated: a transformer's blocks) are spread
    around their centre (``accelsim.svg.spread_points``), each with its own tooltip. Operators
    without MACs have no intensity: a note names them by kind. A ceiling ``min(peak, bandwidth x
    intensity)`` is a straight line on log axes, so it is drawn through its three corners.
    """
    assert report.sim is not None and report.hardware is not None, "the report has no simulation result"
    hw = report.hardware
    points, others = _roofline_points(report)
    peak = hw.peak_macs_per_cycle
    sram_bw, dram_bw = hw.sram_bytes_per_cycle_total, hw.dram_bytes_per_cycle
    low = min([p.intensity for p in points] + [peak / sram_bw / 10, 0.1]) / 2
    high = max([p.intensity for p in points] + [peak / dram_bw * 10]) * 2
    y_low = min([p.achieved for p in points] + [dram_bw * low, sram_bw * low, peak]) / 2
    y_high = max([p.stall_free for p in points] + [peak]) * 2
    stalled = sum(report.stall_cycles.values())
    title = (f"{report.model} on {report.hw}: roofline (utilization {100 * report.utilization:.1f} % of peak, "
             f"stalls {_percent(stalled, report.cycles)} of the cycles)")
    scale = Chart(title=title, x_label="", y_label="", x_range=(low, high), y_range=(y_low, y_high), x_log=True,
                  y_log=True, width=1000, height=600, legend_inside=True)  # pixels, before the legend is known
    exact = [(scale.x(p.intensity), scale.y(p.achieved)) for p in points]
    at = spread_points(exact, SPREAD_GAP)
    chart = Chart(
        title=title, x_label="arithmetic intensity (MACs per byte streamed to and from the scratchpad, chip)",
        y_label="MACs per cycle (chip)", x_range=(low, high), y_range=(y_low, y_high), x_log=True, y_log=True,
        width=1000, height=600, legend=_roofline_legend(report, points, at != exact), legend_inside=True,
    )
    for bandwidth, colour, width, dash in ((sram_bw, "black", 1.4, None), (dram_bw, "red", 1.0, "6,4")):
        knee = peak / bandwidth
        xs = [low, knee, high] if low < knee < high else [low, high]
        chart.add("data", chart.polyline(xs, [min(peak, bandwidth * x) for x in xs], colour=colour, width=width,
                                         dash=dash))
    legend_box = chart.legend_box()
    placer = LabelPlacer(chart.plot_box(), [legend_box] if legend_box else [])
    segments, rings, labels = _stall_marks(chart, points, at, placer)
    note = not_on_roofline([(o.op, o.end_cycle - o.start_cycle + o.dma_stall_cycles) for o in others], report.cycles)
    corners = [(chart.left + 6, chart.top + 14, "start"), (chart.left + 6, chart.bottom - 8, "start"),
               (chart.right - 6, chart.top + 14, "end")]
    notes = [placer.place(note, corners, colour="#555555")
             or text_element(*corners[0][:2], note, colour="#555555", halo=True)] if note else []
    chart.group("data", "legs", [pixel_line(ex, ey, px, py, colour="#999999", width=0.6)  # spread: to where it is
                                 for (ex, ey), (px, py) in zip(exact, at, strict=True) if (ex, ey) != (px, py)])
    chart.group("data", "stalls", segments)
    chart.group("data", "stall-free", rings)
    for mapping in sorted({p.mapping for p in points}):
        colour = MAPPING_COLOURS.get(mapping, "#333333")
        chart.group("data", f"points-{mapping.replace(' ', '-').replace('(', '').replace(')', '')}", [
            circle_element(px, py, colour=colour, tooltip=p.tooltip())
            for p, (px, py) in zip(points, at, strict=True) if p.mapping == mapping])
    chart.group("overlay", "stall-labels", labels)
    chart.group("overlay", "not-drawn", notes)
    Path(path).write_text(chart.to_svg(), encoding="utf-8")


def write_report(report: SimReport, out_dir: str | Path, recorded_dir: str | Path | None = None,
                 plots: bool = True) -> dict[str, Path]:
    """Write report.json, report.html (``accelsim.html_report``: the run to explore in a browser),
    trace.json and (with ``plots``) layout.svg, memory.svg and roofline.svg into
    ``out_dir`` (created); returns the paths written, by file name.

    ``recorded_dir`` is the folder named in report.json's ``out_dir`` when the files are
    written elsewhere first (``accelsim.outputs.staged_folder``); default ``out_dir``.
    """
    clock = time.perf_counter()
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    names = tuple(name for name in REPORT_FILES if plots or name not in PLOT_FILES)
    paths = {name: folder / name for name in names}
    paths["trace.json"].write_text(json.dumps(chrome_trace(report)))
    if plots:
        plot_layout(report, paths["layout.svg"])
        plot_memory(report, paths["memory.svg"])
        plot_roofline(report, paths["roofline.svg"])
    report.out_dir = str(recorded_dir if recorded_dir is not None else folder)
    from accelsim.html_report import write_html

    write_html(report, paths["report.html"], format_summary(report), summary_rows(report))
    report.stage_seconds["report"] = time.perf_counter() - clock
    paths["report.json"].write_text(json.dumps(report.to_dict(), indent=1) + "\n")
    return paths

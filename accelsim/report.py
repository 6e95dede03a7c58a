"""The report folder of a run and its terminal summary.

``write_report`` writes, into one folder:

* ``report.json`` -- ``SimReport.to_dict()``;
* ``layout.png`` -- every residency as a rectangle in the (step x address) plane, with the
  capacity as a horizontal line: the allocation the simulator checked;
* ``memory.png`` -- bytes allocated and highest address in use over simulated time, against
  the capacity;
* ``roofline.png`` -- every operator with MACs as a point: its arithmetic intensity (MACs per
  byte it streams to and from the scratchpad) against the MACs per cycle it achieved (its
  MACs over its whole duration, stalls included), under the compute ceiling (peak MACs per
  cycle) and the bandwidth ceilings of the scratchpad and of DRAM (bytes per cycle x
  intensity). A point far below the roof is lost to mapping (a small GEMM on a big array) or
  to waiting;
* ``trace.json`` -- the simulated timeline in Chrome trace-event format (open it in
  https://ui.perfetto.dev or chrome://tracing): one track for compute, one per DMA channel
  (reads and writes; slices on one track never overlap), and a counter track of scratchpad
  bytes. Times are microseconds of
  simulated time, rounded to whole nanoseconds.

matplotlib is imported inside the plotting functions (Agg backend), so importing this module
is cheap.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelsim.hw import format_bytes

if TYPE_CHECKING:
    from accelsim.pipeline import SimReport

_PID = 1
_COMPUTE_TID = 1
_KIND_COLOURS = {
    "weight": "#4c72b0", "input": "#55a868", "activation": "#dd8452", "output": "#c44e52", "retrieved": "#8172b3",
}


# --------------------------------------------------------------------------------------------
# terminal summary


def _table(rows: list[tuple[str, str, str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = []
    for label, value, note in rows:
        line = f"  {label:<{widths[0]}}  {value:<{widths[1]}}  {note}"
        lines.append(line.rstrip())
    return "\n".join(lines)


def _percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "-"


def format_summary(report: SimReport) -> str:
    """A plain-text table of the run's key numbers (aligned columns, no colour)."""
    r = report
    traffic = r.dram_read_bytes + r.dram_write_bytes
    rows = [
        ("scheduler", r.scheduler, _solver_note(r)),
        ("allocator", r.allocator, ""),
        ("capacity", format_bytes(r.capacity_bytes), f"{r.capacity_bytes:,} B {r.capacity_scope}"),
        ("M_R (min capacity)", format_bytes(r.min_capacity_bytes),
         f"{r.min_capacity_bytes:,} B, set by {r.min_capacity_op}"),
        ("tiled operators", f"{len(r.tiled_operators)}", ", ".join(r.tiled_operators[:4])
         + (" ..." if len(r.tiled_operators) > 4 else "")),
        ("peak address", format_bytes(r.peak_bytes), f"{_percent(r.peak_bytes, r.capacity_bytes)} of capacity"),
        ("peak live bytes", format_bytes(r.peak_live_bytes), ""),
        ("operators", f"{r.n_ops:,}", f"{r.macs:,} MACs"),
        ("residencies", f"{r.n_residencies:,}", f"{r.spills:,} spills, {r.retrieves:,} retrieves"),
        ("cycles", f"{r.cycles:,}", f"at {r.clock_hz / 1e6:g} MHz; ideal bound {r.ideal_cycles:,} "
                                     f"(MACs / peak, element-wise at the vector rate)"),
        ("time", _seconds(r.seconds), f"compute busy {_percent(r.compute_cycles, r.cycles)}, "
                                     f"DMA busy {_percent(r.dma_cycles, r.cycles)}"),
        ("utilization", f"{100 * r.utilization:.1f} %", f"of {r.peak_macs_per_cycle:,} MACs per cycle"),
        ("stalls", f"{sum(r.stall_cycles.values()):,} cycles",
         f"DMA wait {r.stall_cycles.get('dma_wait', 0):,}, SRAM bandwidth {r.stall_cycles.get('sram_bandwidth', 0):,}"),
        ("energy", format_joules(r.energy.get("total", 0.0)),
         f"compute {format_joules(r.energy.get('compute', 0.0))}, SRAM {format_joules(r.energy.get('sram', 0.0))}, "
         f"DRAM {format_joules(r.energy.get('dram', 0.0))}"),
        ("DRAM read", format_bytes(r.dram_read_bytes), f"{r.dram_read_bytes:,} B (chip total)"),
        ("DRAM write", format_bytes(r.dram_write_bytes), f"{r.dram_write_bytes:,} B"),
        ("compulsory", format_bytes(r.compulsory_bytes),
         f"weights {format_bytes(r.weight_bytes)}, inputs {format_bytes(r.input_bytes)}, "
         f"outputs {format_bytes(r.output_bytes)}"),
        ("non-compulsory", format_bytes(r.noncompulsory_bytes),
         f"{_percent(r.noncompulsory_bytes, traffic)} of traffic"),
        ("memory check", "ok" if r.ok else "FAILED", "" if r.ok else r.memory_check),
        ("wall time", _seconds(sum(r.stage_seconds.values())),
         ", ".join(f"{k} {v:.2f}s" for k, v in r.stage_seconds.items())),
    ]
    if r.out_dir:
        rows.append(("report", r.out_dir, ""))
    title = f"accelsim: {r.model} on {r.hw} ({r.dtype})"
    return title + "\n" + _table(rows)


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
    """The simulated timeline as Chrome trace events (``ph: "X"`` complete events, microseconds)."""
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
                     "utilization": round(o.utilization, 4), "mapping": o.mapping,
                     "dma_wait_cycles": o.dma_stall_cycles, "sram_stall_cycles": o.sram_stall_cycles,
                     "energy_j": o.energy.get("total", 0.0)},
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
# plots


def _byte_unit(n: int) -> tuple[str, int]:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= 2 * scale:
            return unit, scale
    return "B", 1


def plot_layout(report: SimReport, path: str | Path) -> None:
    """layout.png: residencies as (step x address) rectangles, coloured by tensor kind."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Patch

    sched = report.schedule
    tensors = report.graph.graph["tensors"]
    retrieved = {t.residency for t in sched.transfers if t.kind == "retrieve"}
    unit, scale = _byte_unit(max(report.capacity_bytes, report.peak_bytes))
    groups: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in _KIND_COLOURS}
    for r in sched.residencies:
        kind = "retrieved" if r.id in retrieved else tensors[r.tensor]["kind"]
        lo = report.offsets[r.id] / scale
        groups[kind].append((r.start, r.end, lo, lo + r.size / scale))
    fig, ax = plt.subplots(figsize=(12, 5), dpi=110)
    for kind, boxes in groups.items():
        if not boxes:
            continue
        b = np.asarray(boxes, dtype=float)
        # four corners per residency: one PolyCollection draws thousands quickly
        verts = np.stack([b[:, [0, 2]], b[:, [1, 2]], b[:, [1, 3]], b[:, [0, 3]]], axis=1)
        ax.add_collection(PolyCollection(list(verts), facecolors=_KIND_COLOURS[kind], edgecolors="black",
                                         linewidths=0.2 if len(b) < 2000 else 0.0, alpha=0.85))
    cap = report.capacity_bytes / scale
    ax.axhline(cap, color="red", linestyle="--", linewidth=1.2)
    ax.text(0, cap, f" capacity {format_bytes(report.capacity_bytes)}", color="red", va="bottom", fontsize=8)
    ax.set_xlim(0, max(report.n_ops, 1))
    ax.set_ylim(0, max(cap, report.peak_bytes / scale) * 1.08)
    ax.set_xlabel("step (operator in schedule order)")
    ax.set_ylabel(f"address ({unit}, {report.capacity_scope})")
    ax.set_title(f"{report.model} on {report.hw}: {len(sched.residencies)} residencies placed by {report.allocator}")
    ax.legend(handles=[Patch(color=c, label=k) for k, c in _KIND_COLOURS.items() if groups[k]],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_memory(report: SimReport, path: str | Path) -> None:
    """memory.png: bytes allocated and highest address in use over simulated time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    assert report.sim is not None, "the report has no simulation result"
    timeline = np.asarray(report.sim.memory_timeline + [(report.cycles, 0, 0)], dtype=float)
    seconds = timeline[:, 0] / report.clock_hz
    t_unit, t_scale = ("ms", 1e3) if report.seconds >= 1e-3 else ("us", 1e6)
    unit, scale = _byte_unit(max(report.capacity_bytes, report.peak_bytes))
    fig, ax = plt.subplots(figsize=(12, 4), dpi=110)
    ax.step(seconds * t_scale, timeline[:, 2] / scale, where="post", color="#8172b3", linewidth=0.8,
            label="highest address in use")
    ax.fill_between(seconds * t_scale, timeline[:, 1] / scale, step="post", color="#4c72b0", alpha=0.6,
                    label="bytes allocated")
    ax.axhline(report.capacity_bytes / scale, color="red", linestyle="--", linewidth=1.2, label="capacity")
    ax.set_xlim(0, max(report.seconds * t_scale, 1e-9))
    ax.set_ylim(0, max(report.capacity_bytes, report.peak_bytes) / scale * 1.08)
    ax.set_xlabel(f"simulated time ({t_unit})")
    ax.set_ylabel(f"{unit} ({report.capacity_scope})")
    ax.set_title(f"{report.model} on {report.hw}: scratchpad use over time")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


_MAPPING_COLOURS = {"systolic-ws": "#4c72b0", "systolic-os": "#55a868", "lanes": "#dd8452", "ideal": "#8172b3",
                    "ideal (no GEMM shape)": "#937860"}


def plot_roofline(report: SimReport, path: str | Path) -> None:
    """roofline.png: achieved MACs per cycle against arithmetic intensity, with the ceilings."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    assert report.sim is not None and report.hardware is not None, "the report has no simulation result"
    hw = report.hardware
    points: dict[str, list[tuple[float, float]]] = {}
    for o in report.sim.ops:
        duration = o.end_cycle - o.start_cycle
        if o.macs <= 0 or duration <= 0 or o.sram_bytes <= 0:
            continue
        points.setdefault(o.mapping, []).append((o.macs / o.sram_bytes, o.macs / duration))
    peak = hw.peak_macs_per_cycle
    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=110)
    every = [p for group in points.values() for p in group]
    low = min([x for x, _ in every] + [peak / hw.sram_bytes_per_cycle_total / 10, 0.1])
    high = max([x for x, _ in every] + [peak / hw.dram_bytes_per_cycle * 10])
    xs = np.logspace(math.log10(low / 2), math.log10(high * 2), 200)
    ax.plot(xs, np.minimum(peak, hw.sram_bytes_per_cycle_total * xs), color="black", linewidth=1.4,
            label=f"roof: {peak:,} MACs/cycle, scratchpad {hw.sram_bytes_per_cycle_total:,} B/cycle")
    ax.plot(xs, np.minimum(peak, hw.dram_bytes_per_cycle * xs), color="red", linestyle="--", linewidth=1.0,
            label=f"DRAM {hw.dram_bytes_per_cycle:,.1f} B/cycle (operands from DRAM)")
    for mapping, group in sorted(points.items()):
        arr = np.asarray(group)
        ax.scatter(arr[:, 0], arr[:, 1], s=14, alpha=0.75, color=_MAPPING_COLOURS.get(mapping, "#333333"),
                   label=f"{mapping} ({len(group)} operators)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (MACs per byte streamed to and from the scratchpad)")
    ax.set_ylabel("achieved MACs per cycle")
    ax.set_title(f"{report.model} on {report.hw}: roofline ({100 * report.utilization:.1f} % of peak overall)")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_report(report: SimReport, out_dir: str | Path, recorded_dir: str | Path | None = None) -> dict[str, Path]:
    """Write report.json, layout.png, memory.png, roofline.png and trace.json into ``out_dir`` (created).

    ``recorded_dir`` is the folder named in report.json's ``out_dir`` when the files are
    written elsewhere first (``accelsim.outputs.staged_folder``); default ``out_dir``.
    """
    clock = time.perf_counter()
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {name: folder / name for name in ("trace.json", "layout.png", "memory.png", "roofline.png",
                                              "report.json")}
    paths["trace.json"].write_text(json.dumps(chrome_trace(report)))
    plot_layout(report, paths["layout.png"])
    plot_memory(report, paths["memory.png"])
    plot_roofline(report, paths["roofline.png"])
    report.out_dir = str(recorded_dir if recorded_dir is not None else folder)
    report.stage_seconds["report"] = time.perf_counter() - clock
    paths["report.json"].write_text(json.dumps(report.to_dict(), indent=1) + "\n")
    return paths

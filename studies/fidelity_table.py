"""The fidelity table of the README: mapped cycles, utilisation, stalls and energy against the ideal bound.

    python studies/fidelity_table.py [--models resnet50,mobilenet_v2,vit_b_16] [--out docs/fidelity]

For each model and bundled config, three runs of the same compiled program:

* **mapped**: the config as shipped (systolic arrays or lanes, DMA channels, prefetch depth,
  scratchpad bandwidth);
* **ideal compute**: the same memory system, but ``compute.kind=ideal`` at the config's peak
  MACs per cycle: what the mapping alone costs;
* **before**: the simulator as it was before the fidelity work, reproduced with overrides: ideal
  compute, one DMA channel, prefetch one step ahead, a scratchpad that never limits. It runs
  the current tracer, tiling, schedule and allocation under those overrides, so its cycles move
  with them: they are not the figures the old simulator printed.

Writes ``OUT/table.csv`` (one row per model, config and run) and ``OUT/table.md`` (the table,
generated from the CSV), and prints the markdown. ``docs/gen/readme_tables.py`` renders the
results page's table from the CSV, and ``tests/test_published_figures.py`` re-runs resnet50's
rows and compares them with it.
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import frontend  # noqa: E402
from accelsim import compile_and_simulate, load_hw  # noqa: E402
from accelsim.hw import format_bytes  # noqa: E402
from accelsim.report import format_joules  # noqa: E402

COLUMNS = (
    "model", "hw", "run", "cycles", "op_compute_cycles", "ideal_cycles", "utilization", "dma_wait_cycles",
    "sram_stall_cycles", "energy_j", "energy_compute_j", "energy_sram_j", "energy_dram_j", "dram_bytes",
    "simulate_s", "sim_events",
)


def ideal_compute(hw_name: str) -> dict[str, object]:
    """Overrides that replace the mapped compute by the ideal bound at the same peak."""
    return {"compute.kind": "ideal", "compute.macs_per_cycle": load_hw(hw_name).peak_macs_per_cycle}


def before(hw_name: str) -> dict[str, object]:
    """Overrides that turn a bundled config into the pre-fidelity simulator."""
    return ideal_compute(hw_name) | {"dma.channels": 1, "dma.prefetch_depth": 1,
                                     "sram_bandwidth_bytes_per_cycle": 1 << 24}


#: the columns a run measures in seconds of this machine; every other column is a deterministic
#: simulation output, which ``tests/test_published_figures.py`` re-derives from the current code
TIMING_COLUMNS = ("simulate_s",)
#: the three runs of every model and config, by the name of the ``run`` column
RUNS: dict[str, Any] = {"mapped": lambda hw_name: {}, "ideal compute": ideal_compute, "before": before}


def run_row(model: str, hw_name: str, run: str, graph: Any) -> dict[str, object]:
    """One row of the table: ``graph`` (``model`` traced at ``hw_name``'s dtype) run as ``run`` names."""
    report = compile_and_simulate(graph, hw_name, overrides=RUNS[run](hw_name))
    assert report.ok, report.memory_check
    return {
        "model": model, "hw": hw_name, "run": run, "cycles": report.cycles,
        "op_compute_cycles": sum(o["compute_cycles"] for o in report.ops),
        "ideal_cycles": report.ideal_cycles, "utilization": round(report.utilization, 5),
        "dma_wait_cycles": report.stall_cycles["dma_wait"],
        "sram_stall_cycles": report.stall_cycles["sram_bandwidth"],
        "energy_j": report.energy["total"], "energy_compute_j": report.energy["compute"],
        "energy_sram_j": report.energy["sram"], "energy_dram_j": report.energy["dram"],
        "dram_bytes": report.dram_read_bytes + report.dram_write_bytes,
        "simulate_s": round(report.stage_seconds["simulate"], 4), "sim_events": report.sim_events,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,mobilenet_v2,vit_b_16")
    parser.add_argument("--configs", default="pixel6,tpuv4")
    parser.add_argument("--out", default="docs/fidelity")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for model in args.models.split(","):
        for hw_name in args.configs.split(","):
            graph = frontend.trace_model(model, dtype=load_hw(hw_name).dtype)
            for run in RUNS:
                clock = time.perf_counter()
                rows.append(run_row(model, hw_name, run, graph))
                print(f"{model} {hw_name} {run}: {rows[-1]['cycles']:,} cycles ({time.perf_counter() - clock:.1f} s)")
    with open(out / "table.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    table = markdown(rows)
    (out / "table.md").write_text(table)
    print(table)


def markdown(rows: list[dict[str, Any]]) -> str:
    """The README table: one line per model and config, the mapped run beside the ideal-compute and old runs."""
    lines = [
        "| model | config | cycles | ideal compute | before | operators' compute: mapped / ideal | utilisation | "
        "DMA wait | SRAM stall | energy (compute / SRAM / DRAM) | DRAM traffic |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    by_key = {(r["model"], r["hw"], r["run"]): r for r in rows}
    for (model, hw, run), r in by_key.items():
        if run != "mapped":
            continue
        ideal = by_key[(model, hw, "ideal compute")]
        old = by_key[(model, hw, "before")]
        energy = (f"{format_joules(float(r['energy_j']))} ({format_joules(float(r['energy_compute_j']))} / "
                  f"{format_joules(float(r['energy_sram_j']))} / {format_joules(float(r['energy_dram_j']))})")
        lines.append(
            f"| {model} | {hw} | {int(r['cycles']):,} | {int(ideal['cycles']):,} | {int(old['cycles']):,} | "
            f"{int(r['op_compute_cycles']):,} / {int(r['ideal_cycles']):,} "
            f"({int(r['op_compute_cycles']) / int(r['ideal_cycles']):.2f}×) | "
            f"{100 * float(r['utilization']):.1f} % | {int(r['dma_wait_cycles']):,} | "
            f"{int(r['sram_stall_cycles']):,} | {energy} | {format_bytes(int(r['dram_bytes']))} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()

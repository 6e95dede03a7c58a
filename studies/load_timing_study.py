"""Cycles against the floor with the load-timing planner, and the SRAM curve of resnet50 on pixel6.

    OMP_NUM_THREADS=1 python studies/load_timing_study.py [--docs docs/load_timing] [--label after]

Two tables, each a CSV in ``--docs`` (``docs/gen/readme_tables.py`` renders them into
``docs/results/load-timing.md``):

* ``models.csv``: resnet50, mobilenet_v2 and vit_b_16 on both bundled configs at their default
  SRAM, and the decoder layer of ``studies/decoder_layer.py`` at 4,096 tokens on tpuv4,
  ``accelsim run``'s defaults: cycles, the floor and its two terms (``accelsim.sim.results``),
  the ratio, the DMA wait, the DRAM bytes and the peak address, M_R and the operators before and
  after tiling, or the one line that says why a model does not run;
* ``sram_curve.csv``: resnet50 on pixel6 from 64 KiB to 4 MiB per PE: cycles, DRAM bytes and the
  ratio to the floor at each point, or why the point does not run.

``--label`` names the code measured (a column of both files; rows of another label are kept, so
a run of the code before a change and one after sit side by side). Every figure is a
deterministic simulation output (work limits only); the script records no timing.
"""

from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

MODELS = ("resnet50", "mobilenet_v2", "vit_b_16")
#: the decoder layer with explicit attention at 4,096 tokens (``studies/decoder_layer.py``), by the
#: name its row carries; run on tpuv4 only (the issue's case: its softmax is 16x the CMEM)
DECODER = "decoder_layer (4,096 tokens)"
DECODER_SPEC = f"{Path(__file__).resolve().parent / 'decoder_layer.py'}:build"
CONFIGS = ("pixel6", "tpuv4")
KIB = 1024
SRAM_CURVE = tuple(k * KIB for k in (64, 128, 160, 192, 256, 384, 512, 1024, 2048, 4096))
MODEL_COLUMNS = ("label", "model", "hw", "cycles", "floor_cycles", "floor_compute", "floor_dram", "bound",
                 "cycles_over_floor", "dma_wait_cycles", "dram_bytes", "peak_bytes", "memory_check", "error",
                 "m_r_bytes", "traced_operators", "operators", "tiled_operators")
CURVE_COLUMNS = ("label", "sram_bytes", "status", "cycles", "floor_cycles", "cycles_over_floor", "dram_bytes",
                 "peak_bytes", "error", "m_r_bytes", "traced_operators", "operators", "tiled_operators")


def _graph_columns(report) -> dict[str, int]:
    """What tiling made of the graph: M_R, the operators traced and run, and how many traced
    operators run as tiles (weight or row tiles)."""
    return {"m_r_bytes": report.min_capacity_bytes, "traced_operators": len(report.ops), "operators": report.n_ops,
            "tiled_operators": sum(1 for op in report.ops if op.get("tiles"))}


def _floor(report) -> tuple[int, int, int, str]:
    """The floor and its terms, from the report, or recomputed from it where the code measured has none."""
    floor = getattr(report, "floor_cycles", None)
    if isinstance(floor, dict):
        return floor["cycles"], floor["compute"], floor["dram"], floor["bound"]
    import math

    compute = sum(o["compute_cycles"] + o["stall_cycles"]["sram_bandwidth"] for o in report.ops)
    dram = math.ceil((report.dram_read_bytes + report.dram_write_bytes) / report.hardware.dram_bytes_per_cycle)
    return max(compute, dram), compute, dram, "compute" if compute >= dram else "dram"


def model_row(label: str, hw: str, model: str, spec: str | None = None) -> dict[str, object]:
    """One row of ``models.csv``: ``model`` (or the run ``spec`` names) on ``hw`` at ``accelsim run``'s
    defaults, or the one line that says why it does not run."""
    from accelsim import compile_and_simulate

    row: dict[str, object] = {"label": label, "model": model, "hw": hw}
    try:
        report = compile_and_simulate(spec or model, hw)
    except ValueError as error:  # below M_R: the one line the CLI prints
        row.update(memory_check="does not run", error=str(error).splitlines()[0])
        return row
    floor, compute, dram, bound = _floor(report)
    row.update({
        "cycles": int(report.cycles), "floor_cycles": floor,
        "floor_compute": compute, "floor_dram": dram, "bound": bound,
        "cycles_over_floor": f"{report.cycles / floor:.3f}",
        "dma_wait_cycles": int(report.stall_cycles["dma_wait"]),
        "dram_bytes": report.dram_read_bytes + report.dram_write_bytes, "peak_bytes": report.peak_bytes,
        "memory_check": report.memory_check, **_graph_columns(report),
    })
    return row


def model_rows(label: str) -> list[dict[str, object]]:
    rows = []
    runs = [(hw, model, model) for hw in CONFIGS for model in MODELS] + [("tpuv4", DECODER, DECODER_SPEC)]
    for hw, model, spec in runs:
        rows.append(model_row(label, hw, model, spec))
        print(rows[-1], flush=True)
    return rows


def curve_row(label: str, sram: int) -> dict[str, object]:
    """One point of ``sram_curve.csv``: resnet50 on pixel6 at ``sram`` bytes per PE."""
    from accelsim import compile_and_simulate

    row: dict[str, object] = {"label": label, "sram_bytes": sram}
    try:
        report = compile_and_simulate("resnet50", "pixel6", sram=sram)
    except ValueError as error:  # below M_R: the one line the CLI prints
        row.update(status="does not run", error=str(error).splitlines()[0])
        return row
    floor = _floor(report)[0]
    row.update(status="runs" if report.memory_check == "ok" else "memory violation",
               cycles=int(report.cycles), floor_cycles=floor,
               cycles_over_floor=f"{report.cycles / floor:.3f}",
               dram_bytes=report.dram_read_bytes + report.dram_write_bytes, peak_bytes=report.peak_bytes,
               **_graph_columns(report))
    return row


def curve_rows(label: str) -> list[dict[str, object]]:
    rows = []
    for sram in SRAM_CURVE:
        rows.append(curve_row(label, sram))
        print(rows[-1], flush=True)
    return rows


def merge(path: Path, columns: tuple[str, ...], rows: list[dict[str, object]], label: str) -> None:
    """Write ``rows`` into ``path``, keeping the rows of other labels."""
    kept = []
    if path.exists():
        with path.open(newline="") as handle:
            kept = [r for r in csv.DictReader(handle) if r["label"] != label]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        for row in [*kept, *rows]:
            writer.writerow({c: row.get(c, "") for c in columns})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=Path("docs/load_timing"))
    parser.add_argument("--label", default="after")
    args = parser.parse_args()
    args.docs.mkdir(parents=True, exist_ok=True)
    merge(args.docs / "models.csv", MODEL_COLUMNS, model_rows(args.label), args.label)
    merge(args.docs / "sram_curve.csv", CURVE_COLUMNS, curve_rows(args.label), args.label)


if __name__ == "__main__":
    main()

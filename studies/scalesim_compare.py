"""accelsim's compute model against SCALE-Sim 3.0.0, layer by layer (the table in docs/scalesim/).

    OMP_NUM_THREADS=1 python studies/scalesim_compare.py [docs/scalesim]

Reads the SCALE-Sim reference cycles that ``studies/scalesim_reference.py`` recorded
(``{model}_scalesim.csv``), traces resnet50 and mobilenet_v2 with accelsim's frontend, and costs
every conv2d / linear operator with ``accelsim.compute.operator_cost`` on the configuration
SCALE-Sim ran: the ``tpuv4`` config with one 128 x 128 array and no fold overlap
(``SCALESIM_OVERRIDES``), weight stationary (``{model}_scalesim.csv``) and output stationary
(``{model}_scalesim_os.csv``). Dense layers are compared with SCALE-Sim's ``total_cycles``;
grouped layers (mobilenet_v2's depthwise convolutions, which SCALE-Sim's GEMM format cannot
express) are compared with the ideal bound, MACs / (128 x 128). Writes ``comparison.csv`` and
``comparison.md`` into the folder and prints the summary.
"""

from __future__ import annotations

import csv
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import frontend  # noqa: E402
from accelsim import load_hw  # noqa: E402
from accelsim.compute import operator_cost  # noqa: E402

MODELS = ("resnet50", "mobilenet_v2")
#: one 128 x 128 array, no fold overlap: SCALE-Sim's stall-free setting (the dataflow is set per run)
SCALESIM_OVERRIDES = {"compute.units": 1, "compute.fold_overlap": False}
DATAFLOWS = ("ws", "os")


def compare(folder: Path, model: str, dataflow: str = "ws") -> list[dict[str, Any]]:
    """One row per conv2d / linear operator of ``model``: accelsim's cycles beside the reference."""
    hw = load_hw("tpuv4", overrides={**SCALESIM_OVERRIDES, "compute.dataflow": dataflow})
    suffix = "" if dataflow == "ws" else f"_{dataflow}"
    with open(folder / f"{model}_scalesim{suffix}.csv") as handle:
        reference = {row["layer"]: row for row in csv.DictReader(handle)}
    graph = frontend.trace_model(model, dtype="int8")
    rows = []
    for name, node in graph.nodes(data=True):
        if node["op"] not in ("conv2d", "linear"):
            continue
        cost = operator_cost(macs=int(node["macs"]), elements=int(node["elements"]), gemm=node.get("gemm"),
                             compute=hw.compute, element_bytes=1, io_bytes=0, sram_bytes_per_cycle=1 << 30)
        t, k, n, groups = node["gemm"][0]
        row: dict[str, Any] = {"model": model, "dataflow": dataflow, "layer": name, "T": t, "K": k, "N": n,
                               "groups": groups,
                               "macs": node["macs"], "accelsim_cycles": cost.compute_cycles,
                               "ideal_cycles": cost.ideal_cycles}
        if name in reference:
            ref = reference[name]
            assert (int(ref["T"]), int(ref["K"]), int(ref["N"])) == (t, k, n), f"{name}: GEMM shapes differ"
            scalesim = int(ref["total_cycles"])
            row.update(scalesim_cycles=scalesim, error_pct=100 * (cost.compute_cycles - scalesim) / scalesim)
        else:
            row.update(scalesim_cycles="", error_pct="")
        rows.append(row)
    return rows


def summary(rows: list[dict[str, Any]]) -> str:
    dense = [r for r in rows if r["scalesim_cycles"] != ""]
    within = sum(1 for r in dense if abs(r["error_pct"]) <= 1.0)
    worst = max(dense, key=lambda r: abs(r["error_pct"]))
    grouped = [r for r in rows if r["groups"] > 1]
    lines = [f"{rows[0]['dataflow']}: dense layers within 1 % of SCALE-Sim: {within} of {len(dense)}, exact "
             f"{sum(1 for r in dense if r['accelsim_cycles'] == r['scalesim_cycles'])}; worst {worst['model']} "
             f"{worst['layer']} {worst['error_pct']:+.3f} % ({worst['accelsim_cycles']:,} vs "
             f"{worst['scalesim_cycles']:,} cycles)"]
    dense_total = sum(r["accelsim_cycles"] for r in dense), sum(r["ideal_cycles"] for r in dense)
    lines.append(f"dense layers: {dense_total[0]:,} cycles mapped vs {dense_total[1]:,} at the ideal bound "
                 f"({dense_total[0] / dense_total[1]:.2f}x)")
    if grouped:
        ratios = [r["accelsim_cycles"] / r["ideal_cycles"] for r in grouped]
        lines.append(f"grouped (depthwise) layers: {len(grouped)}, mapped / ideal bound {min(ratios):.0f}x to "
                     f"{max(ratios):.0f}x; {sum(r['accelsim_cycles'] for r in grouped):,} cycles vs "
                     f"{sum(r['ideal_cycles'] for r in grouped):,}")
    return "\n".join(lines)


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| model | dataflow | layer | T | K | N | groups | accelsim | SCALE-Sim | error | ideal bound |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ref = f"{r['scalesim_cycles']:,}" if r["scalesim_cycles"] != "" else "(grouped)"
        err = f"{r['error_pct']:+.3f} %" if r["error_pct"] != "" else "-"
        lines.append(f"| {r['model']} | {r['dataflow']} | {r['layer']} | {r['T']:,} | {r['K']:,} | {r['N']:,} | "
                     f"{r['groups']} | {r['accelsim_cycles']:,} | {ref} | {err} | {r['ideal_cycles']:,} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/scalesim")
    runs = {flow: [row for model in MODELS for row in compare(folder, model, flow)] for flow in DATAFLOWS}
    rows = [row for flow in DATAFLOWS for row in runs[flow]]
    with open(folder / "comparison.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    text = "\n".join(summary(runs[flow]) for flow in DATAFLOWS)
    (folder / "comparison.md").write_text(
        "# accelsim's compute model against SCALE-Sim 3.0.0\n\n"
        "Generated by `OMP_NUM_THREADS=1 python studies/scalesim_compare.py docs/scalesim` from the reference "
        "cycles recorded by `studies/scalesim_reference.py` (one 128x128 array, ws and os, 64 MiB SRAMs, no stalls)."
        "\n\n"
        + "\n".join(f"* {line}" for line in text.splitlines()) + "\n\n" + markdown(rows))
    print(text)


if __name__ == "__main__":
    main()

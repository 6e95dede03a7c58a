"""Every torchvision model through the whole flow: the coverage table of the README.

    python studies/zoo_coverage.py [--models NAME,NAME] [--out docs/zoo] [--timeout 900]

For each of the 121 names ``torchvision.models.list_models()`` gives (``frontend.zoo.torchvision_models``),
in a fresh process of its own (``--worker``): trace it at its default input shape once per
storage dtype of the bundled configs (bf16 for tpuv4, int8 for pixel6), then run the whole flow
(``accelsim.compile_and_simulate``, the defaults of ``accelsim run``) on each config. The trace
time is the CPU seconds of ``frontend.trace_model`` for the tpuv4 dtype, torch and torchvision
already imported (the first trace of a process also pays about 6 s of imports).

Writes ``OUT/coverage.csv`` (one row per model) and ``OUT/coverage.md`` (the README table,
generated from the CSV), and prints the markdown.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

COLUMNS = (
    "model", "status", "input_shapes", "operators", "host_ops", "macs", "trace_cpu_s",
    "tpuv4_mr_bytes", "tpuv4_cycles", "tpuv4_energy_j", "tpuv4_check",
    "pixel6_mr_bytes", "pixel6_cycles", "pixel6_energy_j", "pixel6_check", "error",
)
CONFIGS = ("tpuv4", "pixel6")


#: the columns measured in seconds of this machine; every other column is a deterministic output of
#: the tracer and the simulator, which ``tests/test_published_figures.py`` re-derives for resnet50
TIMING_COLUMNS = ("trace_cpu_s",)


def worker(name: str) -> dict[str, Any]:
    """Trace ``name`` and run it on both configs; the row of the table."""
    import torch  # noqa: F401  (imported before the clock starts)
    import torchvision  # noqa: F401

    import frontend

    def trace(dtype: str) -> tuple[Any, float]:
        start = time.process_time()
        graph = frontend.trace_model(name, dtype=dtype)
        return graph, round(time.process_time() - start, 2)

    return coverage_row(name, trace)


def coverage_row(name: str, trace: Callable[[str], tuple[Any, float | None]]) -> dict[str, Any]:
    """The row of ``name``: ``trace(dtype)`` gives its graph at each config's dtype (and the CPU
    seconds it took, or None), run on both configs with the defaults of ``accelsim run``."""
    import frontend
    from accelsim import compile_and_simulate, load_hw

    row: dict[str, Any] = {"model": name}
    shapes = frontend.zoo.default_input_shapes(name)
    row["input_shapes"] = " ".join("x".join(map(str, s)) for s in dict.fromkeys(shapes)) + (
        " (x2)" if len(shapes) == 2 and shapes[0] == shapes[1] else "")
    errors = []
    for hw_name in CONFIGS:
        try:
            hw = load_hw(hw_name)
            graph, seconds = trace(hw.dtype)
            if hw_name == "tpuv4":
                row["trace_cpu_s"] = seconds
                row["operators"] = graph.number_of_nodes()
                row["host_ops"] = len(graph.graph.get("host_ops", []))
                row["macs"] = sum(int(d["macs"]) for _, d in graph.nodes(data=True))
            report = compile_and_simulate(graph, hw=hw_name)
            row[f"{hw_name}_mr_bytes"] = report.min_capacity_bytes
            row[f"{hw_name}_cycles"] = report.cycles
            row[f"{hw_name}_energy_j"] = report.energy.get("total", 0.0)
            row[f"{hw_name}_check"] = report.memory_check
        except Exception as exc:  # the table records why a model does not run
            errors.append(f"{hw_name}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    ok = [h for h in CONFIGS if row.get(f"{h}_check") == "ok"]
    if len(ok) == len(CONFIGS):
        row["status"] = "runs with host operators" if row["host_ops"] else "runs"
    else:
        row["status"] = f"runs on {', '.join(ok)} only" if ok else "fails"
        row["error"] = "; ".join(errors) or "memory check failed"
    return row


def _format_row(r: dict[str, str]) -> str:
    from accelsim.hw import format_bytes
    from accelsim.report import format_joules

    def number(key: str, fmt: str = "{:,}") -> str:
        return fmt.format(int(r[key])) if r.get(key) else "-"

    def mr(key: str) -> str:
        return format_bytes(int(r[key])) if r.get(key) else "-"

    def energy(key: str) -> str:
        return format_joules(float(r[key])) if r.get(key) else "-"

    macs = f"{int(r['macs']) / 1e9:.2f} G" if r.get("macs") else "-"
    status = r["status"] + (f" ({r['error']})" if r.get("error") else "")
    return (f"| {r['model']} | {status} | {r['input_shapes']} | {number('operators')} | {number('host_ops')} | "
            f"{macs} | {mr('tpuv4_mr_bytes')} | {number('tpuv4_cycles')} | {energy('tpuv4_energy_j')} | "
            f"{mr('pixel6_mr_bytes')} | {number('pixel6_cycles')} | {r['trace_cpu_s'] or '-'} |")


def markdown(rows: list[dict[str, str]]) -> str:
    """The README table from the CSV rows."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    lines = [
        f"{len(rows)} models: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + ".",
        "",
        "| model | status | input | operators | host ops | MACs | M_R tpuv4 | cycles tpuv4 | energy tpuv4 "
        "| M_R pixel6 | cycles pixel6 | trace CPU s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [_format_row(r) for r in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated zoo names (default: all 121 torchvision names)")
    parser.add_argument("--out", default="docs/zoo")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per model before it counts as failed")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--markdown-only", action="store_true", help="rewrite OUT/coverage.md from OUT/coverage.csv")
    parser.add_argument("--update", action="store_true",
                        help="run only --models and replace their rows in OUT/coverage.csv, keeping the others")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.markdown_only:
        import frontend

        names = args.models.split(",") if args.models else frontend.zoo.torchvision_models()
        rows = []
        for name in names:
            try:
                done = subprocess.run([sys.executable, __file__, "--worker", name], capture_output=True, text=True,
                                      timeout=args.timeout, check=False)
                lines = done.stdout.strip().splitlines()
                row = json.loads(lines[-1]) if done.returncode == 0 and lines else {
                    "model": name, "status": "fails", "error": (done.stderr.strip().splitlines() or ["?"])[-1][:300]}
            except subprocess.TimeoutExpired:
                row = {"model": name, "status": "fails", "error": f"over {args.timeout:g} s"}
            rows.append(row)
            print(f"{name}: {row['status']} {row.get('error', '')}", file=sys.stderr, flush=True)
        if args.update:
            with open(out / "coverage.csv", newline="") as f:
                kept = {r["model"]: r for r in csv.DictReader(f)}
            kept.update({r["model"]: r for r in rows})
            rows = list(kept.values())
        with open(out / "coverage.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, COLUMNS)
            writer.writeheader()
            for row in rows:
                writer.writerow({k: row.get(k, "") for k in COLUMNS})
    with open(out / "coverage.csv", newline="") as f:
        table = markdown(list(csv.DictReader(f)))
    (out / "coverage.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()

"""Allocation-aware spilling against the online first fit and COSMA, over the model zoo.

For every zoo model on each hardware config, three SRAM sizes between M_R (the smallest that
runs at all) and the online first fit's no-spill size (``scheduler.no_spill_capacity``): the
1/4, 1/2 and 3/4 points. At each, every method compiles and simulates the model
(``accelsim.compile_and_simulate`` on the traced graph) and one CSV row records the
non-compulsory DRAM bytes (chip total), the cycles and the compile time (schedule plus
allocation stages). Methods:

* ``online-first-fit``, ``best-fit``, ``minimalloc``, ``auto``: the program order with Belady
  replacement; the first is the online arena, the others the allocation-aware loop
  (``scheduler.spill_loop.allocation_aware``) with that allocator;
* ``cosma-fs``: COSMA's fixed-order model (the optimum for the program order, within its
  time limit), ``cosma``: the joint model.

Usage::

    python studies/spill_study.py --csv docs/spill/study.csv              # the README's table
    python studies/spill_study.py --models resnet50 --hw pixel6 --methods auto,online-first-fit

A model whose no-spill size equals M_R has no spilling point and gets no rows. A method that
fails at a point (e.g. the solver found nothing) gets a row whose ``status`` says why.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

FIELDS = ("model", "hw", "point", "sram_bytes", "min_capacity_bytes", "no_spill_bytes", "method", "status",
          "noncompulsory_bytes", "cycles", "compile_s", "rounds", "online_kept", "scheduler_status", "placed_by")
METHODS = ("online-first-fit", "best-fit", "minimalloc", "auto", "cosma-fs", "cosma")
POINTS = (0.25, 0.5, 0.75)


def points(model: str, hw_name: str) -> tuple[object, list[tuple[float, int]], int, int]:
    """The traced graph, the (share, SRAM bytes) points, M_R and the no-spill size of ``model`` on ``hw_name``."""
    import scheduler
    from accelsim.hw import load_hw
    from accelsim.pipeline import on_chip_graph
    from frontend.cache import cached_trace

    hw = load_hw(hw_name)
    graph = cached_trace(model, dtype=hw.dtype).graph
    tiled, sizes, _ = on_chip_graph(graph, hw)
    need, _ = scheduler.min_capacity(tiled, sizes, hw.alignment)
    no_spill = scheduler.no_spill_capacity(tiled, sizes=sizes, alignment=hw.alignment)
    chosen = [(share, (need + int(share * (no_spill - need))) // hw.alignment * hw.alignment) for share in POINTS]
    return graph, [(share, max(size, need)) for share, size in chosen if no_spill > need], need, no_spill


def run_method(graph: object, hw_name: str, sram: int, method: str, time_limit: float) -> dict[str, object]:
    """One compile and simulation; the row's measured columns."""
    from accelsim.pipeline import CompileError, compile_and_simulate
    from scheduler.registry import ENTRIES

    options: dict[str, Any] = {"sram": sram}
    if method in ENTRIES:  # a scheduler of its own (the COSMA models); the others are allocator methods
        options.update(scheduler=method, time_limit=time_limit)
    else:
        options.update(allocator=method)
    try:
        report = compile_and_simulate(graph, hw_name, **options)
    except (CompileError, ValueError) as error:
        return {"status": f"error: {error}"[:200]}
    stats = report.scheduler_stats
    return {
        "status": "ok" if report.ok else f"memory check: {report.memory_check}",
        "noncompulsory_bytes": report.noncompulsory_bytes,
        "cycles": report.cycles,
        "compile_s": round(report.stage_seconds["schedule"] + report.stage_seconds["allocate"], 4),
        "rounds": int(stats.get("rounds", 0)),
        "online_kept": int(stats.get("online_kept", 0)),
        "scheduler_status": report.scheduler_status,
        "placed_by": report.allocator,
    }


def main(argv: list[str] | None = None) -> int:
    from frontend.zoo import SUPPORTED_MODELS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="all", help="comma-separated zoo names (default: all)")
    parser.add_argument("--hw", default="pixel6,tpuv4", help="comma-separated hardware configs")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--time-limit", type=float, default=10.0, help="seconds for cosma and cosma-fs")
    parser.add_argument("--csv", help="write the rows here (appends to and skips rows already there)")
    args = parser.parse_args(argv)
    models = list(SUPPORTED_MODELS) if args.models == "all" else args.models.split(",")
    methods = args.methods.split(",")
    done: set[tuple[str, str, str, str]] = set()
    out = None
    if args.csv:
        path = Path(args.csv)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            with path.open() as handle:
                done = {(r["model"], r["hw"], r["point"], r["method"]) for r in csv.DictReader(handle)}
        out = path.open("a", newline="")
        writer = csv.DictWriter(out, FIELDS)
        if not done:
            writer.writeheader()
    for model in models:
        for hw_name in args.hw.split(","):
            began = time.perf_counter()
            graph, chosen, need, no_spill = points(model, hw_name)
            if not chosen:
                print(f"{model} {hw_name}: no-spill size {no_spill} = M_R, no spilling point", flush=True)
            for share, sram in chosen:
                for method in methods:
                    key = (model, hw_name, str(share), method)
                    if key in done:
                        continue
                    row = {"model": model, "hw": hw_name, "point": share, "sram_bytes": sram,
                           "min_capacity_bytes": need, "no_spill_bytes": no_spill, "method": method,
                           **run_method(graph, hw_name, sram, method, args.time_limit)}
                    print(" ".join(f"{k}={row.get(k, '')}" for k in FIELDS if k not in ("min_capacity_bytes",
                                                                                          "no_spill_bytes")),
                          flush=True)
                    if out is not None:
                        writer.writerow(row)
                        out.flush()
            print(f"# {model} {hw_name}: {time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)
    if out is not None:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

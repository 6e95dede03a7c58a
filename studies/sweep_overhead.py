"""How much of a sweep's time is the work itself? Per-point overhead from a sweep folder.

    python studies/sweep_overhead.py DIR [--csv OUT]

Reads ``DIR/results.csv`` (each point's ``wall_s``: the worker's whole time for the point) and
``DIR/points/HASH.json`` (its ``stage_seconds``: tiling, scheduling, allocation, validation
and simulation as ``compile_and_simulate`` timed them) and prints, over the ok points, the
overhead = ``wall_s`` minus the stages: loading the graph (once per worker process), building
the point's hardware config, packing the report. Failed points (below M_R) have no stages;
their whole ``wall_s`` is listed apart.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import pandas as pd


def overheads(folder: Path) -> pd.DataFrame:
    table = pd.read_csv(folder / "results.csv")
    rows = []
    for r in table.itertuples():
        report = folder / "points" / f"{r.hash}.json"
        stages = sum(json.loads(report.read_text())["stage_seconds"].values()) if r.status == "ok" else None
        rows.append({"model": r.model, "hash": r.hash, "status": "ok" if r.status == "ok" else "failed",
                     "wall_s": r.wall_s, "stages_s": stages,
                     "overhead_s": None if stages is None else r.wall_s - stages})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--csv", help="write the per-point figures here")
    args = parser.parse_args()
    table = overheads(args.folder)
    ok = table[table["status"] == "ok"]
    over = sorted(ok["overhead_s"])
    if over:
        print(f"{len(ok)} ok points: overhead median {statistics.median(over):.4f} s, "
              f"90th percentile {over[int(0.9 * (len(over) - 1))]:.4f} s, max {over[-1]:.4f} s; "
              f"stages median {statistics.median(ok['stages_s']):.4f} s")
    failed = table[table["status"] == "failed"]
    if len(failed):
        print(f"{len(failed)} failed points (no stages): wall median {statistics.median(failed['wall_s']):.4f} s")
    if args.csv:
        table.to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()

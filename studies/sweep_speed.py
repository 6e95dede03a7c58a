"""Measure ``accelsim sweep`` on this machine: every zoo model × 4 SRAM sizes on pixel6 (96 points).

    python studies/sweep_speed.py [--csv docs/sweep/speed.csv] [--jobs N]

Runs the command as a user does (a subprocess each, so imports count) in five settings and
writes one CSV row per run: a cold trace cache (every model traced), a warm cache, a warm
cache without plots, the Dask executor (a LocalCluster) with a warm cache, and a re-run in a
finished folder (everything resumed). With the cold run's folder it also gives the per-point
overhead (``studies/sweep_overhead.py``: a point's wall time minus its compile stages). The
README's sweep table is rendered from the CSV by ``docs/gen/readme_tables.py``.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import frontend

sys.path.insert(0, str(Path(__file__).parent))
from sweep_overhead import overheads  # noqa: E402

GRID = "sram=256KiB,512KiB,1MiB,2MiB"


def run(label: str, out: Path, cache: Path, extra: list[str], jobs: int) -> dict[str, object]:
    command = [sys.executable, "-m", "accelsim", "sweep", *frontend.list_models(), "--hw", "pixel6", "--grid", GRID,
               "--out", str(out), "--jobs", str(jobs), *extra]
    env = dict(os.environ, ACCELSIM_CACHE_DIR=str(cache), OMP_NUM_THREADS="1")
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{label}: exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    summary = done.stdout.strip().splitlines()[0]
    print(f"{label}: {seconds:.1f} s: {summary}", flush=True)
    return {"run": label, "points": 96, "jobs": jobs, "seconds": round(seconds, 2), "summary": summary,
            "command": " ".join(["accelsim sweep MODELS --hw pixel6 --grid", GRID, "--out DIR", *extra])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", default="docs/sweep/speed.csv")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="accelsim-sweep-speed-"))
    cache = work / "cache"
    try:
        rows = [run("cold trace cache", work / "cold", cache, [], args.jobs),
                run("warm trace cache", work / "warm", cache, [], args.jobs),
                run("warm, --no-plots", work / "noplots", cache, ["--no-plots"], args.jobs),
                run("warm, --executor dask", work / "dask", cache, ["--no-plots", "--executor", "dask"], args.jobs),
                run("re-run, all resumed", work / "noplots", cache, ["--no-plots"], args.jobs)]
        table = overheads(work / "warm")
        ok = sorted(table[table["status"] == "ok"]["overhead_s"])
        for row in rows:
            row.update(overhead_median_s=round(statistics.median(ok), 4),
                       overhead_p90_s=round(ok[int(0.9 * (len(ok) - 1))], 4), overhead_max_s=round(ok[-1], 4))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    with open(args.csv, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()

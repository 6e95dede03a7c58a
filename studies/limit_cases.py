"""Issue 22's limit cases, timed as a user meets them: what a command asked for too much does.

Each row is one whole process (the ``accelsim`` command), measured from outside: wall and CPU
seconds (user + sys, from ``os.wait4``'s rusage), its maximum resident set, its exit status,
and, where the command reports it, the time of the limited stage itself (``alloc``'s ``time``
row, ``run``'s ``allocate`` stage). The promise is 10 % + 1 s over a ``--timeout``; a refusal
should come before the work it refuses.

    python studies/limit_cases.py            # every row, into docs/bench/limit_cases.csv

Rows (``key``):

* ``alloc-2M-auto``, ``alloc-2M-minimalloc``: ``accelsim alloc`` on 2,090,351 generated buffers
  (``studies/large_instances.py --buffers 2090351``) at LOAD, ``--timeout 10``;
* ``run-100k-timeout-2``: ``accelsim run`` on a 100,000-operator chain (``frontend.synthetic.chain``)
  with ``--allocator auto --timeout 2``: the allocate stage against the limit;
* ``run-100k-dag-spills-timeout-2``: the same on a 100,000-operator random DAG
  (``frontend.synthetic.random_dag``, seed 1) in 2 KiB per PE, where the spill loop plans many spills;
* ``idealloc-one-timeout-1``: ``accelsim alloc`` of one buffer with ``--method idealloc --timeout 1``;
* ``refuse-1M-operators``: ``accelsim run`` on a 1,000,000-operator chain (refused: over the operator limit);
* ``refuse-65M-points``: ``accelsim sweep`` over a 65,610,000-point grid (refused: over the point limit);
* ``refuse-gen-1e9``: ``accelsim gen non-overlapping 1000000000`` (refused: more memory than available).
"""

from __future__ import annotations

import csv
import datetime
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "bench" / "limit_cases.csv"
SCRIPT = Path(sys.executable).with_name("accelsim")
ACCELSIM = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "accelsim"]
COLUMNS = ("key", "command", "exit", "limit_s", "stage_s", "wall_s", "cpu_s", "max_rss_mib", "date")


def measure(command: list[str], cwd: Path) -> tuple[int, float, float, int, str]:
    """``(exit status, wall s, cpu s, max RSS KiB, stdout + stderr)`` of one whole process.

    Through ``/usr/bin/time``, a small process: the maximum resident set of a child forked by this
    (large) process would count this process's own memory (Linux keeps it across ``exec``)."""
    report = cwd / "time.txt"
    began = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-o", str(report), "-f", "%e %U %S %M", *command], cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - began
    fields = report.read_text().split()[-4:]  # after "Command exited with non-zero status N"
    return done.returncode, wall, float(fields[1]) + float(fields[2]), int(fields[3]), done.stdout


def stage_seconds(key: str, text: str) -> str:
    """The limited stage's own seconds, from the command's output ('' when it has none)."""
    if key.startswith("alloc") or key.startswith("idealloc"):
        found = re.search(r"^time\s+([0-9.]+) s", text, re.M)
    elif key.startswith("run"):
        found = re.search(r"allocate ([0-9.]+)s", text)
    else:
        found = None
    return found.group(1) if found else ""


PREPARE = """
import sys
from pathlib import Path

import allocator
import frontend
from allocator.core.validate import lower_bound
from frontend.synthetic import chain, random_dag

work = Path(sys.argv[1])
sys.path.insert(0, sys.argv[2])
from large_instances import large_random

starts, ends, sizes = large_random(2_090_351)
big = work / "random-2M.csv"
allocator.write_csv(big, allocator.Problem.from_arrays([f"b{i}" for i in range(len(starts))], starts, ends, sizes))
(work / "load.txt").write_text(str(lower_bound(allocator.read_csv(big))))
frontend.save_graph(chain(100_000, 4096), work / "chain100k.json")
frontend.save_graph(chain(1_000_000, 4096), work / "chain1m.json")
frontend.save_graph(random_dag(100_000, seed=1), work / "dag100k.json")
(work / "one.csv").write_text("id,lower,upper,size\\na,0,1,8\\n")
"""


def main() -> int:
    import numpy as np

    work = Path(tempfile.mkdtemp(prefix="accelsim-limits-"))
    # the inputs are made in a child process, so this one stays small
    subprocess.run([sys.executable, "-c", PREPARE, str(work), str(REPO / "studies")], check=True)
    load = int((work / "load.txt").read_text())
    values = ",".join(str(v) for v in np.arange(1, 91))
    rows = [
        ("alloc-2M-auto", ["alloc", "random-2M.csv", "--capacity", str(load), "--method", "auto", "--timeout", "10"],
         10),
        ("alloc-2M-minimalloc", ["alloc", "random-2M.csv", "--capacity", str(load), "--method", "minimalloc",
                                 "--timeout", "10"], 10),
        ("run-100k-timeout-2", ["run", "chain100k.json", "--allocator", "auto", "--timeout", "2", "--no-plots",
                                "--out", "run100k"], 2),
        ("run-100k-dag-spills-timeout-2", ["run", "dag100k.json", "--sram", "2KiB", "--allocator", "auto",
                                           "--timeout", "2", "--no-plots", "--out", "dag100k"], 2),
        ("idealloc-one-timeout-1", ["alloc", "one.csv", "--capacity", "64", "--method", "idealloc", "--timeout", "1"],
         1),
        ("refuse-1M-operators", ["run", "chain1m.json", "--no-plots", "--out", "run1m"], None),
        ("refuse-65M-points", ["sweep", "chain100k.json", "--grid", f"sram={values}", "--grid",
                               f"dram_latency_cycles={values}", "--grid", f"compute.units={values}", "--grid",
                               f"dma.channels={values}", "--out", "sweep", "--no-plots"], None),
        ("refuse-gen-1e9", ["gen", "non-overlapping", "1000000000", "gen.csv"], None),
    ]
    today = datetime.date.today().isoformat()
    written = []
    for key, args, limit in rows:
        status, wall, cpu, rss, text = measure([*ACCELSIM, *args], work)
        shown = " ".join(a if len(a) < 40 else a[:20] + "..." for a in args)
        written.append({"key": key, "command": f"accelsim {shown}", "exit": status, "limit_s": limit or "",
                        "stage_s": stage_seconds(key, text), "wall_s": f"{wall:.2f}", "cpu_s": f"{cpu:.2f}",
                        "max_rss_mib": f"{rss / 1024:.0f}", "date": today})
        print(written[-1], flush=True)
    with open(OUT, "w", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(written)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

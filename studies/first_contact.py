"""What a new user pays before any work: whole processes, timed as a user would meet them.

Every figure is a whole process (``python -c ...`` or the ``accelsim`` command), measured from
outside: wall time, and CPU time (user + sys of the process and its children, from the
``rusage`` that ``os.wait4`` returns, the same figure ``/usr/bin/time`` prints). On a shared
2-core machine the CPU time is the steadier figure; both are written.

    python studies/first_contact.py                       # every row, into docs/bench/first_contact.csv
    python studies/first_contact.py --only warm --repeat 3

Rows (``key``):

* ``import-numpy``, ``import-allocator``, ``import-scheduler``, ``import-accelsim``: ``python -c "import X"``;
* ``methods``, ``models``, ``configs``: ``accelsim alloc --methods``, ``accelsim models``, ``accelsim configs``;
* ``run-warm``: ``accelsim run resnet50 --hw pixel6`` with warm caches (trace and compiled code);
* ``alloc-A`` ... ``alloc-K``: ``accelsim alloc X.1048576.csv --capacity 1048576 --method minimalloc``,
  warm compiled code, one thread (``--threads 1``, as C++ MiniMalloc's reference times are);
* ``cold-alloc-C``: the same on C with an empty compile cache;
* ``cold-alloc-C-workers``: the same with the default workers (one per core), the command as
  issue 35 gives it: the portfolio's second worker adds its share of the search;
* ``cold-run``: ``accelsim run resnet50 --hw pixel6`` with every cache empty (compiled code and
  trace), as the first run after an install.

Each row is the median of ``--repeat`` runs (cold rows start from fresh empty caches each time).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUITE = REPO / "benchmarks" / "minimalloc" / "challenging"
OUT = REPO / "docs" / "bench" / "first_contact.csv"
#: the installed console script beside this interpreter (as a user types ``accelsim``), else ``python -m accelsim``
SCRIPT = Path(sys.executable).with_name("accelsim")
ACCELSIM = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "accelsim"]


def measure(command: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """``(cpu_seconds, wall_seconds, exit_status)`` of one whole process."""
    began = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - began
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.stderr is not None:
        error = process.stderr.read().decode(errors="replace").strip()
        process.stderr.close()
        if process.returncode not in (0, 3) and error:
            print(f"  {' '.join(command[2:])}: exit {process.returncode}: {error.splitlines()[-1]}", file=sys.stderr)
    return usage.ru_utime + usage.ru_stime, wall, process.returncode


def rows(only: str | None) -> list[tuple[str, list[str], bool]]:
    """``(key, command, cold)`` for every row whose key starts with ``only``."""
    table: list[tuple[str, list[str], bool]] = [
        ("import-numpy", [sys.executable, "-c", "import numpy"], False),
        ("import-allocator", [sys.executable, "-c", "import allocator"], False),
        ("import-scheduler", [sys.executable, "-c", "import scheduler"], False),
        ("import-accelsim", [sys.executable, "-c", "import accelsim"], False),
        ("methods", [*ACCELSIM, "alloc", "--methods"], False),
        ("models", [*ACCELSIM, "models"], False),
        ("configs", [*ACCELSIM, "configs"], False),
        ("run-warm", [*ACCELSIM, "run", "resnet50", "--hw", "pixel6", "--out", "{tmp}/run"], False),
    ]
    for letter in "ABCDEFGHIJK":
        table.append((f"alloc-{letter}", [*ACCELSIM, "alloc", str(SUITE / f"{letter}.1048576.csv"), "--capacity",
                                          "1048576", "--method", "minimalloc", "--threads", "1"], False))
    table.append(("cold-alloc-C", [*ACCELSIM, "alloc", str(SUITE / "C.1048576.csv"), "--capacity", "1048576",
                                   "--method", "minimalloc", "--threads", "1"], True))
    table.append(("cold-alloc-C-workers", [*ACCELSIM, "alloc", str(SUITE / "C.1048576.csv"), "--capacity",
                                           "1048576", "--method", "minimalloc"], True))
    table.append(("cold-run", [*ACCELSIM, "run", "resnet50", "--hw", "pixel6", "--out", "{tmp}/run"], True))
    return [row for row in table if only is None or row[0].startswith(only)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="rows whose key starts with this")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--csv", type=Path, default=OUT)
    args = parser.parse_args(argv)
    # the caches at their default places (the user's cache folder), as a user meets them
    base = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "ACCELSIM_CACHE_DIR")}
    base["OMP_NUM_THREADS"] = "1"
    measured = []
    with tempfile.TemporaryDirectory() as scratch:
        for key, command, cold in rows(args.only):
            cpu, wall, statuses = [], [], set()
            runs = args.repeat + (0 if cold else 1)  # a warm row's first run fills the caches and is not counted
            for attempt in range(runs):
                env = dict(base)
                if cold:  # every cache empty: a new home, so the user's cache folder is new too
                    fresh = Path(tempfile.mkdtemp(dir=scratch))
                    env.update(HOME=str(fresh), XDG_CACHE_HOME=str(fresh / ".cache"))
                out = Path(tempfile.mkdtemp(dir=scratch))
                line = [part.replace("{tmp}", str(out)) for part in command]
                c, w, status = measure(line, env)
                shutil.rmtree(out, ignore_errors=True)
                if cold or attempt > 0:
                    cpu.append(c)
                    wall.append(w)
                    statuses.add(status)
            words = ["accelsim", *command[len(ACCELSIM):]] if command[:len(ACCELSIM)] == ACCELSIM \
                else ["python", *command[1:]]
            row = {"key": key, "command": shlex.join(words).replace(str(REPO) + "/", "").replace("'{tmp}/run'", "OUT"),
                   "cpu_s": f"{statistics.median(cpu):.2f}", "wall_s": f"{statistics.median(wall):.2f}",
                   "runs": len(cpu), "exit": ",".join(map(str, sorted(statuses))),
                   "date": datetime.date.today().isoformat()}
            print(f"{key:18s} cpu {row['cpu_s']:>6s} s  wall {row['wall_s']:>6s} s  exit {row['exit']}")
            measured.append(row)
    previous = []
    if args.only and args.csv.exists():  # keep the rows not measured now
        with open(args.csv, newline="") as handle:
            previous = [r for r in csv.DictReader(handle) if not r["key"].startswith(args.only)]
    keys = [key for key, _, _ in rows(None)]
    merged = sorted(previous + measured, key=lambda r: keys.index(r["key"]) if r["key"] in keys else len(keys))
    with open(args.csv, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["key", "command", "cpu_s", "wall_s", "runs", "exit", "date"])
        writer.writeheader()
        writer.writerows(merged)
    print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

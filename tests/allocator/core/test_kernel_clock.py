"""Kernels compile on first use, and no clock of the library counts it (``allocator.core.kernel_clock``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

from allocator.core import kernel_cache  # noqa: F401  (installs the measurement, as every kernel module does)
from allocator.core.kernel_clock import ANNOUNCEMENT, kernel_seconds, work_clock

REPOSITORY = Path(__file__).resolve().parents[3]


def test_the_work_clock_stands_still_while_a_kernel_compiles():
    @njit(cache=False)
    def fresh(values):  # a kernel no test compiled before: this call compiles it
        total = 0
        for v in values:
            total += v * v
        return total

    kernels, work, wall = kernel_seconds(), work_clock(), time.perf_counter()
    assert fresh(np.arange(5)) == 30
    compiled = kernel_seconds() - kernels
    assert compiled > 0.0
    # what the work clock saw is the wall time less the compilation (each read a little apart)
    assert work_clock() - work <= time.perf_counter() - wall - compiled + 1e-3
    kernels = kernel_seconds()
    assert fresh(np.arange(5)) == 30  # compiled now: nothing more is counted
    assert kernel_seconds() == kernels


def alloc(csv: Path, numba_cache: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(numba_cache), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "accelsim", "alloc", str(csv), *extra], env=env, cwd=REPOSITORY,
                          capture_output=True, text=True, timeout=600)


def test_a_time_limit_bounds_the_search_not_the_first_compilation(tmp_path):
    """With an empty compile cache, compiling greedy-by-size's kernels takes far longer than the
    0.1 s limit, and the search itself a few milliseconds: the limit must not fire. The one line
    on standard error says why the run is slower, the first time only."""
    csv = tmp_path / "small.csv"
    csv.write_text("id,lower,upper,size\n" + "".join(f"b{i},{i},{i + 3},{8 + i}\n" for i in range(40)))
    cache = tmp_path / "numba"
    runs = [alloc(csv, cache, "--capacity", "4096", "--method", "greedy-by-size", "--timeout", "0.1")
            for _ in range(2)]
    for done in runs:
        assert done.returncode == 0, done.stderr
        assert "status     solved" in done.stdout
    first, second = runs
    announcement = ANNOUNCEMENT.split("{")[0]
    assert first.stderr.count(announcement) == 1, first.stderr
    assert announcement not in second.stderr
    loading = [float(line.split("(+ ")[1].split(" s")[0]) for done in runs for line in done.stdout.splitlines()
               if line.startswith("time")]
    assert loading[0] > loading[1]  # compiled the first time, loaded from the cache the second

"""Large seeded allocation instances, and the one-shot greedy methods timed on them.

    python studies/large_instances.py --buffers 300000                   # time the greedy methods
    python studies/large_instances.py --buffers 2000000 --csv big.csv    # write the 2M-buffer CSV
    python studies/large_instances.py --buffers 2000000 --timeout 10     # they stop at the limit

An instance has ``--buffers`` buffers with about ``--live`` of them live at any time (the
default 300 is about what a large activation trace keeps live). Lifetimes mix short buffers
(1 to 16 steps, nine in ten) with long ones (up to 1,000 steps); the time horizon is chosen
so that the lifetimes add up to ``live`` x horizon. Sizes are log-uniform from 64 B to 1 MiB.
Everything is drawn from ``numpy.random.default_rng(seed)``, so the same arguments give the
same instance (and the same CSV, byte for byte).

Timings: wall-clock seconds of ``allocator.solve`` (which also computes LOAD and validates the
placement), and wall-clock and CPU seconds of the method alone (its function called with the
same deadline). On a shared machine the wall-clock times are indicative only; the CPU time is
what the method would take on an idle core.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import allocator
from allocator.core.problem import Problem
from allocator.core.registry import METHODS
from allocator.core.sections import sweep_arrays

GREEDY = ("greedy-by-size", "best-fit", "first-fit")


def large_random(n: int, live: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(starts, ends, sizes)`` of ``n`` buffers with about ``live`` live at a time (int64 arrays).

    >>> starts, ends, sizes = large_random(1000, live=30, seed=1)
    >>> bool((ends > starts).all()), bool((sizes >= 64).all() and (sizes <= 2**20).all())
    (True, True)
    """
    if n < 1 or live < 1:
        raise ValueError(f"need at least one buffer and one live, got buffers={n}, live={live}")
    rng = np.random.default_rng(seed)
    long_lived = rng.random(n) < 0.1
    lifetimes = np.where(long_lived, rng.integers(1, 1001, n), rng.integers(1, 17, n)).astype(np.int64)
    horizon = max(1, int(round(int(lifetimes.sum()) / live)))
    starts = rng.integers(0, horizon, n).astype(np.int64)
    sizes = np.round(2.0 ** rng.uniform(6, 20, n)).astype(np.int64)
    return starts, starts + lifetimes, sizes


def to_problem(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray) -> Problem:
    """The arrays as a ``Problem`` with ids ``"0"``, ``"1"``, ... and no capacity."""
    return Problem.from_arrays([str(i) for i in range(len(starts))], starts, ends, sizes)


def write_csv(path: Path, starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray) -> None:
    """The arrays in MiniMalloc's CSV format (``id,lower,upper,size``), ids ``0, 1, ...``."""
    chunk = 100_000
    with path.open("w") as out:
        out.write("id,lower,upper,size\n")
        for begin in range(0, len(starts), chunk):
            rows = zip(range(begin, begin + chunk), starts[begin:begin + chunk].tolist(),
                       ends[begin:begin + chunk].tolist(), sizes[begin:begin + chunk].tolist(), strict=False)
            out.write("".join(f"{i},{s},{e},{z}\n" for i, s, e, z in rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buffers", type=int, default=300_000)
    parser.add_argument("--live", type=int, default=300, help="about how many buffers are live at a time")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv", type=Path, help="write the instance here and stop")
    parser.add_argument("--methods", default=",".join(GREEDY), help="comma-separated method names")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per method (default: none)")
    args = parser.parse_args()
    began = time.perf_counter()
    starts, ends, sizes = large_random(args.buffers, args.live, args.seed)
    if args.csv:
        write_csv(args.csv, starts, ends, sizes)
        print(f"wrote {args.csv}: {args.buffers:,} buffers in {time.perf_counter() - began:.1f} s")
        return
    cross = sweep_arrays(starts, ends, sizes)
    live = np.zeros(cross.n_sections + 1, np.int64)
    np.add.at(live, cross.first_section, 1)
    np.add.at(live, cross.last_section, -1)
    problem = to_problem(starts, ends, sizes)
    print(f"{args.buffers:,} buffers (seed {args.seed}), {int(np.cumsum(live).max())} live at most, "
          f"LOAD {int(cross.section_total.max()):,}; built in {time.perf_counter() - began:.1f} s")
    print(f"{'method':<16} {'status':<8} {'peak / LOAD':>12} {'solve s':>8} {'method s':>9} {'CPU s':>6}  reason")
    for name in args.methods.split(","):
        result = allocator.solve(problem, method=name, timeout=args.timeout)
        began, cpu = time.perf_counter(), time.process_time()
        deadline = None if args.timeout is None else began + args.timeout
        alone = METHODS[name].function(problem, deadline, METHODS[name].options())
        method_seconds, cpu_seconds = time.perf_counter() - began, time.process_time() - cpu
        ratio = f"{result.peak / cross.section_total.max():.4f}" if result.peak is not None else "-"
        print(f"{name:<16} {result.status:<8} {ratio:>12} {result.stats['seconds']:>8.2f} {method_seconds:>9.2f} "
              f"{cpu_seconds:>6.2f}  {result.reason or alone.reason}", flush=True)


if __name__ == "__main__":
    main()

"""A seeded stand-in for issue 14's 62,185-buffer trace of the IOPDDL family (G_1, S_1).

    python studies/iopddl_like.py huge.csv                  # 62,185 buffers, seed 0
    python studies/iopddl_like.py huge.csv --check          # and say which heuristics reach LOAD
    python studies/iopddl_like.py out.csv --buffers 100000 --seed 3

Issue 14 reports a 62,185-buffer trace "of the same family as G_1/S_1" that a starting
heuristic packs at LOAD (proven optimal with 0 search nodes) and that took 25 s on one thread.
That trace is not among the shared benchmarks, so this script builds one of that size from the
two real IOPDDL traces that are (``benchmarks/idealloc/iopddl/G_1.csv``, 816 buffers, and
``S_1.csv``, 28,526 buffers), exactly as follows:

1. the parts, in this order: S_1; S_1 mirrored in time (``lower' = T - upper``,
   ``upper' = T - lower`` with T its last ``upper``: the same buffers, lifetimes and overlap
   counts, but different orders for every heuristic); then copies of G_1, until adding a whole
   part would pass ``--buffers``; the last part is a uniformly drawn subset of one more G_1
   copy, of the size that makes the total exactly ``--buffers``;
2. the parts are laid back to back in time: each part's lifetimes are shifted so that it
   begins where the previous part ends (no buffer of one part overlaps a buffer of another);
3. the rows are shuffled, and the ids are the row numbers ``0 .. n-1``.

Sizes are unchanged. With the default 62,185 buffers that is S_1, mirrored S_1, six copies of
G_1 and 237 buffers of a seventh. ``numpy.random.default_rng(seed)`` draws the subset and the
shuffle, so the same arguments give the same file byte for byte.

What follows from the construction (``--check`` measures it): LOAD is G_1's (3,030,937,746
bytes: S_1's is 1,498,635,932), reached in every whole G_1 copy; a placement of the whole is a
placement of each part, each part's heuristic placement is the one it gets alone (the parts do
not overlap in time and the orders compare buffers by their own keys), and so ``load-best-fit``
and ``telamalloc-heuristic``, which pack G_1 at LOAD and S_1 within 0.3 % of S_1's LOAD (well
below G_1's LOAD), pack the whole at LOAD. That is the issue trace's property: a starting
heuristic proves it optimal. Its cost is S_1's twice over (two windows of about 43 million
time-overlapping pairs each), which is where the heuristics spend their time.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from allocator import Problem, read_csv, write_csv

#: the real IOPDDL traces the stand-in is built from: in $ACCELSIM_BENCHMARKS, as for the tests, or else
#: in the checkout's benchmarks folder
IOPDDL = Path(os.environ.get("ACCELSIM_BENCHMARKS", Path(__file__).resolve().parents[1] / "benchmarks"),
              "idealloc", "iopddl")
#: the size of the issue's trace
ISSUE_BUFFERS = 62_185


def read_trace(path: Path) -> np.ndarray:
    """The ``(lower, upper, size)`` rows of a MiniMalloc CSV as an int64 array of shape (n, 3), in file order."""
    starts, ends, sizes, _, _ = read_csv(path).arrays(copy=False)
    return np.column_stack((starts, ends, sizes)).astype(np.int64)


def as_problem(rows: np.ndarray) -> Problem:
    """The rows as a ``Problem`` with ids ``"0"``, ``"1"``, ... in row order and no capacity."""
    return Problem.from_arrays([str(i) for i in range(len(rows))], rows[:, 0], rows[:, 1], rows[:, 2])


def mirrored(rows: np.ndarray) -> np.ndarray:
    """The trace reversed in time: ``[lower, upper)`` becomes ``[T - upper, T - lower)``, T its last upper."""
    end = int(rows[:, 1].max())
    return np.column_stack((end - rows[:, 1], end - rows[:, 0], rows[:, 2]))


def iopddl_like(buffers: int = ISSUE_BUFFERS, seed: int = 0, folder: Path = IOPDDL) -> np.ndarray:
    """The stand-in's ``(lower, upper, size)`` rows (see the module docstring), an int64 array (buffers, 3).

    >>> rows = iopddl_like(30_000)
    >>> rows.shape, bool((rows[:, 1] > rows[:, 0]).all())
    ((30000, 3), True)
    """
    s_1, g_1 = read_trace(folder / "S_1.csv"), read_trace(folder / "G_1.csv")
    if buffers < 1:
        raise ValueError(f"need at least one buffer, got {buffers}")
    rng = np.random.default_rng(seed)
    parts: list[np.ndarray] = []
    count = 0
    for whole in (s_1, mirrored(s_1)):
        if count + len(whole) <= buffers:
            parts.append(whole)
            count += len(whole)
    while count + len(g_1) <= buffers:
        parts.append(g_1)
        count += len(g_1)
    if count < buffers:  # a subset of one more G_1 copy (or of S_1, for a total below S_1's size)
        source = g_1 if parts else s_1
        keep = np.sort(rng.choice(len(source), buffers - count, replace=False))
        parts.append(source[keep])
    shifted = []
    begin = 0
    for part in parts:  # back to back in time: each part starts where the previous one ended
        moved = part.copy()
        moved[:, :2] += begin - int(part[:, 0].min())
        begin = int(moved[:, 1].max())
        shifted.append(moved)
    rows = np.concatenate(shifted)
    return rows[rng.permutation(len(rows))]


def check(path: Path) -> None:
    """Read ``path`` back and print LOAD and each starting heuristic's peak (validated by ``solve``)."""
    from allocator import solve
    from allocator.core.progress import STARTING_HEURISTICS
    from allocator.core.validate import lower_bound

    problem = read_csv(path)
    load = lower_bound(problem)
    print(f"{path}: {len(problem):,} buffers, LOAD {load:,}")
    for name in STARTING_HEURISTICS:
        began = time.perf_counter()
        result = solve(problem, name)
        assert result.peak is not None
        print(f"  {name:22s} peak {result.peak:,} ({100 * (result.peak - load) / load:.3f} % over LOAD), "
              f"{time.perf_counter() - began:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path, help="the CSV to write")
    parser.add_argument("--buffers", type=int, default=ISSUE_BUFFERS, help=f"how many (default {ISSUE_BUFFERS:,})")
    parser.add_argument("--seed", type=int, default=0, help="draws the partial copy's buffers and the row order")
    parser.add_argument("--check", action="store_true", help="then run the starting heuristics on it")
    parser.add_argument("--folder", type=Path, default=IOPDDL, help=f"where G_1.csv and S_1.csv are (default {IOPDDL})")
    args = parser.parse_args()
    rows = iopddl_like(args.buffers, args.seed, args.folder)
    write_csv(args.output, as_problem(rows))
    print(f"wrote {args.output}: {len(rows):,} buffers")
    if args.check:
        check(args.output)


if __name__ == "__main__":
    main()

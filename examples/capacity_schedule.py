"""An experiment for issue 14: probe several capacities with doubling node limits instead of bisecting.

``allocator.minimize`` (minimalloc's anytime routine) probes LOAD first with 60 % of the time,
then bisects between the proven bound and the incumbent. The canonical search's difficulty is
far from monotone in the capacity: on challenging J a fixed search at 1,048,576 B solves in
528 nodes while the bisection's probes at 1,029,120 and 1,049,600 run out of time. This script
runs, in the same time, the alternative schedule: greedy-by-size's placement, then rounds that
probe ``--points`` evenly spaced capacities between the proven bound and the incumbent, each
with a node limit of ``20 x buffers`` doubled every round (a success lowers the incumbent, an
exhausted search raises the bound), and prints both results::

    OMP_NUM_THREADS=1 python examples/capacity_schedule.py J D --timeout 10

Measured (2026-11-23, 10 s, one thread, a quiet machine): J 1,039,360 against the bisection's
1,071,104; D 1,045,504 for both; but B 1,099,776 where the bisection's probe at LOAD proves
1,048,576 optimal. With 16 points instead of 8 it did worse on J and D (a loaded machine: J
1,051,648, D 1,053,696). So it is not the default: a schedule that keeps the LOAD probe's win
on B and the sweep's on J is still to be found and measured on the whole suite and the traces.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import allocator  # noqa: E402
from allocator.anytime import peak_granularity  # noqa: E402
from allocator.minimalloc import MiniMallocOptions, PreparedProblem, canonical_search  # noqa: E402

SUITE = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "minimalloc" / "challenging"


def sweep_schedule(problem: allocator.Problem, timeout: float, points: int) -> tuple[int, int, list[tuple]]:
    """The alternative schedule: (best peak, proven bound, log of improvements)."""
    began = time.perf_counter()
    deadline = began + timeout
    options = MiniMallocOptions(workers=1)
    start = allocator.solve(problem, "greedy-by-size")
    assert start.peak is not None
    best, bound, step = start.peak, allocator.lower_bound(problem), peak_granularity(problem)
    data = PreparedProblem(problem)
    budget = 20 * len(problem)
    log: list[tuple] = []
    while time.perf_counter() < deadline and bound < best:
        highest = best - step
        capacities = sorted({(bound + (highest - bound) * i // (points - 1)) // step * step for i in range(points)}
                            | {highest})
        for capacity in capacities:
            if capacity >= best or capacity < bound or time.perf_counter() >= deadline:
                continue
            outcome = canonical_search(problem, capacity, options, deadline, prepared=data, node_limit=budget)
            if outcome.status == "solved":
                assert outcome.offsets is not None
                placed = allocator.Solution(dict(zip(problem.ids, outcome.offsets.tolist(), strict=True)))
                allocator.check(problem, placed)
                best = placed.peak(problem)
                log.append((round(time.perf_counter() - began, 2), "solved", capacity, best, budget))
            elif outcome.status == "infeasible":
                bound = capacity + step
                log.append((round(time.perf_counter() - began, 2), "infeasible", capacity, budget))
        budget *= 2
    return best, bound, log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("instances", nargs="+", help="challenging-suite letters (A..K) or CSV paths")
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--points", type=int, default=8)
    args = parser.parse_args()
    for name in args.instances:
        path = Path(name) if name.endswith(".csv") else SUITE / f"{name}.1048576.csv"
        problem = allocator.read_csv(path, capacity=None)
        bisection = allocator.minimize(problem, "minimalloc", timeout=args.timeout,
                                       options=MiniMallocOptions(workers=1))
        best, bound, log = sweep_schedule(problem, args.timeout, args.points)
        print(f"{path.stem}: bisection {bisection.peak:,} (bound {bisection.lower_bound:,}); "
              f"{args.points}-point sweep {best:,} (bound {bound:,})")
        for entry in log:
            print("   ", entry)


if __name__ == "__main__":
    main()

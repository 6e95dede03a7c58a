"""The allocation-aware spill loop against the online first-fit arena on random DAGs.

Real models rarely need the loop's later rounds (their first plan usually fits); random DAGs
with sizes up to 4 KiB fragment much more. For 40 seeds of ``random_dag(30)`` at the 1/4, 1/2
and 3/4 points between M_R and the arena's no-spill size, print per allocator: how many points
the loop's own plan beats, ties and loses to the arena, its total non-compulsory bytes against
the arena's, and the range of rounds::

    OMP_NUM_THREADS=1 python studies/spill_random_dags.py greedy-by-size,best-fit
"""

from __future__ import annotations

import collections
import sys

import scheduler
from frontend.synthetic import random_dag
from scheduler.spill_loop import allocation_aware


def main(methods: list[str]) -> None:
    outcome: collections.Counter[tuple[str, str]] = collections.Counter()
    loop_total: collections.Counter[str] = collections.Counter()
    online_total = 0
    rounds: dict[str, list[int]] = {m: [] for m in methods}
    points = 0
    for seed in range(40):
        graph = random_dag(30, seed=seed, max_size=4096)
        need, _ = scheduler.min_capacity(graph)
        free = scheduler.no_spill_capacity(graph)
        if free <= need:
            continue
        for share in (0.25, 0.5, 0.75):
            capacity = int(need + share * (free - need))
            online = scheduler.baseline.schedule(graph, capacity).noncompulsory_bytes
            online_total += online
            points += 1
            for method in methods:
                result = allocation_aware(graph, capacity, method, timeout=60)
                fitted = result.stats.loop_noncompulsory_bytes
                loop = -1 if fitted is None else fitted  # -1: no plan fitted
                outcome[method, "fewer" if loop < online else "equal" if loop == online else "more"] += 1
                loop_total[method] += loop
                rounds[method].append(len(result.rounds))
    print(f"{points} points; online arena: {online_total:,} non-compulsory bytes in total")
    for method in methods:
        print(f"{method}: loop's plan moves fewer bytes at {outcome[method, 'fewer']}, as many at "
              f"{outcome[method, 'equal']}, more at {outcome[method, 'more']} points; total {loop_total[method]:,} "
              f"({loop_total[method] / online_total - 1:+.1%} against the arena); rounds {min(rounds[method])} "
              f"to {max(rounds[method])}")


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 else ["greedy-by-size", "best-fit", "auto"])

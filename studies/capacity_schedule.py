"""Issue 14's study: which capacities the anytime minimisation probes, and with how many nodes each.

``allocator.minimize`` lowers a peak by asking the exact canonical search (MiniMalloc,
Moffitt ASPLOS '23, §5-7) whether the buffers fit a capacity. Its difficulty is far from
monotone in the capacity: on challenging D (LOAD 986,112, one thread) it fits 1,031,168 in
10,000 nodes and 1,034,240 in 3,700, but not 1,032,192, 1,035,264-1,037,312 or 1,044,480 in
100,000; 1,024,000 and 1,025,024 in about 100,000, 1,018,880 in 318,000. A bisection that
gives each probe half of the time left can stall on the first hard capacity it meets, and one
that gives LOAD most of the time wastes it on the instances whose optimum lies above LOAD.
This schedule spreads the work instead:

* **Resumable probes.** The search is a portfolio of static preorders whose node limit
  doubles every round (``allocator.methods.minimalloc.canonical_search``, the paper's restarts). A
  probe here runs one round at a time and remembers where it stopped, so its next slice
  starts with the next, doubled, limit (``MiniMallocOptions.initial_node_factor``) and no
  round is searched twice: a capacity probed in many slices has had the rounds a single
  fixed-capacity run with the same nodes would have had. (Only the failed-state table, which
  one ``canonical_search`` keeps from round to round, starts empty in each slice: keeping a
  table per probe would cost 2**table_bits slots each.)
* **The floor probe.** The capacity at the proven lower bound (LOAD at first) gets
  ``floor_share`` of all nodes: when it fits, the peak is proven optimal at once (9 of the
  11 challenging instances and the traces pack at LOAD); when it is exhausted, the bound
  rises by a step and the floor moves up.
* **The sweep.** The other nodes go to ``SWEEP_POINTS`` capacities spread evenly between
  the bound and the incumbent's peak minus a step, in rounds: the probe that has spent the
  fewest nodes runs next (the lowest capacity among equals), which is Luby-like: every
  capacity gets the same doubling sequence of limits, and the cheap ones finish first. A
  fitting probe lowers the incumbent; the points are then spread again over the narrower
  gap, keeping the state of those that are still inside it. An exhausted probe raises the
  bound.

Everything is counted in nodes, so with ``node_limit`` the result is the same on every
machine; the clock only stops the schedule at the deadline.

**Not the default** (decision recorded here, measured with this script, one thread):
``allocator.minimize`` runs ``allocator.methods.minimalloc.canonical_bisection``, and this schedule
lives here, outside the package, with the comparison that decided it.
Under equal node budgets the two tie within the noise of single instances (mean over D, J and
three variants of each with 3 buffers left out, LOAD's share 0.6: 300,000 nodes, schedule
5.51 % over LOAD (5.20 % with a share of 0.5), bisection 5.31 %; 1,000,000 nodes, 4.83 % and
4.63 %; each wins on some instances), but at 10 s the bisection ended lower
on D and J themselves (1,025,024 and 1,029,120 against 1,039,360 and 1,036,288, back to back):
its midpoints, each with half of what is left, fall on capacities near 1,025,000 that the
search fits in about 10**5 nodes, where the sweep spreads its nodes over some 15 capacities.

Run as a script, it compares the two from the same incumbent (the best of
``STARTING_HEURISTICS``) under the same node budget, so the comparison does not depend on the
machine's load. ``--variants K`` adds, per instance, K copies with 3 seeded buffers left out
(similar instances whose best capacities lie elsewhere), because on a single instance either
schedule can be lucky: the search's difficulty is far from monotone in the capacity::

    OMP_NUM_THREADS=1 python studies/capacity_schedule.py D J --nodes 300000 --variants 3

Measured (2026-11-25, one thread, the kernel with the offset ceiling), mean % above LOAD over D,
J and 3 variants of each, LOAD's share 0.6 for both: 300,000 nodes, bisection 5.31 %, schedule
5.51 % (5.20 % with a share of 0.5); 1,000,000 nodes, bisection 4.63 %, schedule 4.83 %. Each
wins on some instances: a tie within the noise. With 1,000,000 nodes the schedule still proves
the 9 instances that fit at LOAD optimal (E needs the most: 604,480 nodes, where the
bisection's first probe needs 164,800). At 10 s (back to back, a quiet machine) the bisection
ended lower on D and J themselves: 1,025,024 and 1,029,120 against 1,039,360 and 1,036,288.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

import allocator
from allocator import MAX_VALUE, MinimizeResult, Problem, Solution
from allocator.core.progress import STARTING_HEURISTICS, Progress, peak_granularity
from allocator.core.registry import MinimizeRequest
from allocator.core.validate import check
from allocator.methods.minimalloc import (
    MiniMallocOptions,
    PreparedProblem,
    SearchOutcome,
    canonical_bisection,
    canonical_search,
    next_probe,
)

__all__ = ["SWEEP_POINTS", "CapacityProbe", "advance", "runs_per_round", "schedule_minimize", "sweep_capacities"]

#: capacities probed between the lower bound and the incumbent besides the floor probe
SWEEP_POINTS = 8


@dataclass
class CapacityProbe:
    """The search at one capacity, resumable: where its portfolio of restarts stopped."""

    capacity: int  #: bytes
    factor: int  #: node limit of each run of its next round, in multiples of the number of buffers
    spent: int = 0  #: nodes its rounds have cost so far (runs one after another)


def sweep_capacities(bound: int, highest: int, step: int, points: int) -> list[int]:
    """The sweep's capacities in ``(bound, highest]``, multiples of ``step`` (``bound`` and
    ``highest`` are, ``highest`` being the incumbent's peak minus a step):

    * ``points`` spread evenly over the gap, for large gains;
    * ``highest`` and the capacities 1, 3, 7, 15, ... steps below it (the incumbent minus 2**i
      steps), the likely fits: on the suite most capacities a few per cent above the best known
      peak fit within a few thousand nodes, those close to the best seldom within 10**5.

    >>> sweep_capacities(100, 180, 10, 4)
    [110, 120, 140, 150, 160, 170, 180]
    >>> sweep_capacities(100, 120, 10, 4), sweep_capacities(100, 100, 10, 4)
    ([110, 120], [])
    """
    steps = (highest - bound) // step
    if steps <= 0:
        return []
    chosen = {bound + step * max(1, steps * i // points) for i in range(1, points + 1)}
    below = 0
    while highest - below * step > bound:
        chosen.add(highest - below * step)
        below = 2 * below + 1
    return sorted(chosen)


def runs_per_round(options: MiniMallocOptions) -> int:
    """Runs in one round of ``canonical_search``'s portfolio."""
    return len(options.preorders) + options.random_preorders if options.portfolio else 1


def advance(probe: CapacityProbe, problem: Problem, data: PreparedProblem, options: MiniMallocOptions,
            deadline: float | None = None, node_budget: int | None = None) -> SearchOutcome:
    """Run the next round of ``probe``'s portfolio (every preorder with the probe's node limit)
    and, when it ends without a verdict, double the limit of the round after it.

    The slices of a probe are the rounds of one ``canonical_search`` at its capacity, none
    searched twice; what does not carry over from one slice to the next is the failed-state
    table (``canonical_search`` starts each call with an empty one). ``node_budget`` cuts the
    round short (status ``"node_limit"``, and the limit stays), as ``deadline`` does (``"timeout"``);
    a round that ends without a verdict has status ``"node_limit"`` too, and doubles
    ``probe.factor``. ``probe.spent`` grows by the round's nodes.
    """
    round_nodes = runs_per_round(options) * (probe.factor * data.n + 1)  # a run stopped at its limit L counts L + 1
    budget = round_nodes if node_budget is None else min(round_nodes, node_budget)
    outcome = canonical_search(problem, probe.capacity, replace(options, initial_node_factor=probe.factor),
                               deadline, prepared=data, node_limit=budget)
    probe.spent += outcome.sequential_nodes
    if outcome.status == "node_limit" and budget == round_nodes:
        probe.factor *= 2
    return outcome


def schedule_minimize(progress: Progress, options: MiniMallocOptions | None = None,
                      node_limit: int | None = None, floor_share: float = 0.5,
                      points: int = SWEEP_POINTS) -> MinimizeResult:
    """Lower the peak of ``progress``'s incumbent with resumable probes (see the module docstring).

    ``progress`` holds the starting placement, if any (without one ``FALLBACK_HEURISTIC``
    gets the time first) and LOAD as the bound. The probe at the bound gets ``floor_share``
    of the nodes, ``points`` capacities between the bound and the incumbent the rest. Probes
    step by ``peak_granularity``; none goes above the problem's capacity (nor ``MAX_VALUE``).
    The schedule ends when the bound meets the incumbent's peak, passes the capacity (nothing
    fits), or the deadline or ``node_limit`` (nodes of all probes together) is reached.
    """
    options = options or MiniMallocOptions()
    if not progress.ensure_placement():
        return progress.result(True)
    progress.improved()
    free, capacity, deadline = progress.free, progress.capacity, progress.request.deadline
    step = peak_granularity(free)
    progress.bound = -(-progress.bound // step) * step
    ceiling = min(MAX_VALUE if capacity is None else capacity, MAX_VALUE) // step * step
    nodes_left = node_limit
    probes: dict[int, CapacityProbe] = {}
    floor_spent = total_spent = 0
    data: PreparedProblem | None = None
    ran_out = False
    while True:
        highest, stop = next_probe(progress, step, ceiling, nodes_left)
        if stop is not None:
            ran_out = stop == "out"
            break
        now = time.perf_counter()
        if data is None:
            data = PreparedProblem(free)
            continue  # read the clock again: preparing a large problem takes time
        first_factor = options.initial_node_factor
        sweep = sweep_capacities(progress.bound, highest, step, points)
        for stale in [c for c in probes if c < progress.bound or c > highest]:
            del probes[stale]
        floor = probes.setdefault(progress.bound, CapacityProbe(progress.bound, first_factor))
        if floor_spent <= floor_share * total_spent or not sweep:
            probe, on_floor = floor, True
        else:
            probe = min((probes.setdefault(c, CapacityProbe(c, first_factor)) for c in sweep),
                        key=lambda p: (p.spent, p.capacity))
            on_floor = False
        before, factor = probe.spent, probe.factor
        outcome = advance(probe, free, data, options, deadline, nodes_left)
        progress.stats["nodes"] += outcome.nodes
        progress.stats["backtracks"] += outcome.backtracks
        spent = probe.spent - before
        total_spent += spent
        floor_spent += spent if on_floor else 0
        if nodes_left is not None:
            nodes_left -= spent
        progress.probes.append((probe.capacity, outcome.status, time.perf_counter() - now))
        if outcome.status == "solved":
            assert outcome.offsets is not None
            placement = Solution(dict(zip(free.ids, outcome.offsets.tolist(), strict=True)))
            check(free, placement)  # the heuristics' placements were validated by solve()
            progress.offer(placement, placement.peak(free))
            progress.improved()
        elif outcome.status == "infeasible":
            progress.bound = probe.capacity + step
            progress.improved()
        elif probe.factor == factor:
            ran_out = True  # the deadline, or the node budget, cut the round short
            break
    return progress.result(ran_out)


# --- the study: the schedule against the bisection under equal node budgets ---

#: MiniMalloc's challenging suite, named by letter on the command line
SUITE = Path(__file__).resolve().parents[1] / "benchmarks" / "minimalloc" / "challenging"


def instances(names: list[str], variants: int) -> list[tuple[str, Problem]]:
    """The named instances, each followed by ``variants`` copies with 3 seeded buffers left out."""
    found = []
    for name in names:
        path = Path(name) if name.endswith(".csv") else SUITE / f"{name}.1048576.csv"
        problem = allocator.read_csv(path, capacity=None)
        found.append((path.stem.split(".")[0], problem))
        rng = np.random.default_rng(7)
        for k in range(variants):
            dropped = set(rng.choice(len(problem), 3, replace=False).tolist())
            kept = [b for i, b in enumerate(problem.buffers) if i not in dropped]
            found.append((f"{path.stem.split('.')[0]}-{k}", Problem(kept)))
    return found


def run(problem: Problem, schedule: str, nodes: int, load_share: float) -> MinimizeResult:
    """One minimisation with ``schedule`` (``bisection`` or ``schedule``) from the best starting
    heuristic, bounded by ``nodes``."""
    began = time.perf_counter()
    request = MinimizeRequest("minimalloc", 3600.0, began, began + 3600.0, None, load_share, nodes, None)
    progress = Progress(problem, request)
    progress.run_heuristics(STARTING_HEURISTICS, began + 60)
    options = MiniMallocOptions(workers=1)
    if schedule == "bisection":
        return canonical_bisection(progress, options, nodes, load_share)
    return schedule_minimize(progress, options, nodes, load_share)


def main() -> None:
    parser = argparse.ArgumentParser(description="issue 14: the capacity schedule against the bisection")
    parser.add_argument("instances", nargs="+", help="challenging-suite letters (A..K) or CSV paths")
    parser.add_argument("--nodes", type=int, default=300_000, help="node budget of each minimisation")
    parser.add_argument("--variants", type=int, default=0, help="copies of each instance with 3 buffers left out")
    parser.add_argument("--load-share", type=float, default=0.6, help="the floor (LOAD) probe's share, as minimize's")
    args = parser.parse_args()
    for schedule in ("bisection", "schedule"):
        over = []
        for name, problem in instances(args.instances, args.variants):
            result = run(problem, schedule, args.nodes, args.load_share)
            assert result.peak is not None
            load = allocator.lower_bound(problem)
            over.append(100 * (result.peak - load) / load)
            print(f"{schedule:9s} {name:6s} peak {result.peak:>12,}  {over[-1]:5.2f} % over LOAD  "
                  f"optimal {result.optimal}  nodes {int(result.stats['nodes']):,}", flush=True)
        print(f"{schedule:9s} mean {np.mean(over):.2f} % over LOAD")


if __name__ == "__main__":
    main()

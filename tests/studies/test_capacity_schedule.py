"""The capacity schedule of ``studies/capacity_schedule.py`` (issue 14's alternative to the bisection).

Kept under test so that the study still runs, and means what it says, as the allocator changes.
Every search is bounded by a node budget; the timeouts are generous and never bind.
"""

import time

import pytest
from hypothesis import given, settings

from allocator import Buffer, Problem, Solution, lower_bound, minimize, read_csv, validate
from allocator.core.generators import generate
from allocator.core.progress import STARTING_HEURISTICS, Progress
from allocator.core.registry import MinimizeRequest
from allocator.methods.minimalloc import MiniMallocOptions, PreparedProblem, canonical_search
from studies.capacity_schedule import CapacityProbe, advance, schedule_minimize, sweep_capacities
from tests.allocator.search.test_anytime import small_problems  # up to 9 short-lived buffers, some pinned

#: a timeout that never binds: the node budgets decide
NO_RUSH = 600

#: one pinned buffer and an aligned one: LOAD 3 does not fit, 4 does
ALIGNED = [Buffer("a", 0, 2, 1, offset=1), Buffer("b", 0, 2, 2, alignment=2), Buffer("c", 2, 4, 1)]


def test_the_sweep_spreads_points_and_steps_down_from_the_incumbent():
    capacities = sweep_capacities(1000, 2000, 10, 8)
    assert capacities == sorted(set(capacities)) and all(1000 < c <= 2000 and c % 10 == 0 for c in capacities)
    assert {2000, 1990, 1970, 1930, 1850, 1690, 1370}.issubset(capacities)  # highest minus 0, 1, 3, 7, ... steps
    assert sum(c < 1500 for c in capacities) >= 3  # the even points reach down to the bound
    assert sweep_capacities(1000, 1000, 10, 8) == []


@pytest.mark.parametrize("case", ["fits", "exhausted"])
def test_a_probe_advanced_round_by_round_decides_as_one_search(benchmarks, case):
    # the slices of a probe are the rounds of one search at its capacity: same verdict, same
    # placement, same nodes (without the failed-state table, which a slice does not carry over)
    if case == "fits":
        problem, capacity = read_csv(benchmarks / "minimalloc" / "challenging" / "J.1048576.csv"), 1_044_480
    else:
        problem, capacity = Problem(ALIGNED), 3
    options = MiniMallocOptions(workers=1, failed_state_table=False)
    data = PreparedProblem(problem)
    whole = canonical_search(problem, capacity, options, prepared=data)
    probe = CapacityProbe(capacity, options.initial_node_factor)
    slices = 0
    while True:
        outcome = advance(probe, problem, data, options)
        slices += 1
        if outcome.status != "node_limit":
            break
    assert outcome.status == whole.status == ("solved" if case == "fits" else "infeasible")
    assert probe.spent == whole.sequential_nodes and slices == whole.runs // 3 + (whole.runs % 3 > 0)
    if case == "fits":
        assert outcome.offsets.tolist() == whole.offsets.tolist()
        placement = Solution(dict(zip(problem.ids, outcome.offsets.tolist(), strict=True)))
        assert validate(problem.with_capacity(capacity), placement).ok


def test_a_cut_round_keeps_its_limit():
    problem = generate("random", 60, seed=3)
    data = PreparedProblem(problem)
    probe = CapacityProbe(lower_bound(problem) - 1, 2)  # below LOAD: no placement, the search runs on
    outcome = advance(probe, problem, data, MiniMallocOptions(workers=1), node_budget=10)
    assert outcome.status in ("node_limit", "infeasible") and probe.spent <= 10
    if outcome.status == "node_limit":
        assert probe.factor == 2  # cut short: the same round runs again next time


def scheduled(problem: Problem, node_limit: int, load_share: float = 0.6):
    """``schedule_minimize`` from the best starting heuristic, as
    ``minimize`` would run it, bounded by ``node_limit``."""
    began = time.perf_counter()
    request = MinimizeRequest("minimalloc", NO_RUSH, began, began + NO_RUSH, None, load_share, node_limit, None)
    progress = Progress(problem, request)
    progress.run_heuristics(STARTING_HEURISTICS, began + NO_RUSH)
    return schedule_minimize(progress, MiniMallocOptions(workers=1), node_limit, load_share)


def test_the_schedule_ends_below_what_a_fixed_search_fits_j_in_a_few_hundred_nodes(benchmarks):
    # issue 14: a search at 1,048,576 fits J in about 500 nodes, yet a bisection ended above it
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / "J.1048576.csv")
    result = scheduled(problem, 200_000)
    assert validate(problem, result.solution).ok
    assert result.peak <= 1_048_576 and result.lower_bound == lower_bound(problem)
    assert result.stats["nodes"] <= 200_000 and result.timed_out


def test_the_schedule_proves_load_optimal_and_raises_the_bound_by_search():
    problem = Problem(ALIGNED)
    result = scheduled(problem, 10_000)
    assert result.optimal and result.peak == result.lower_bound == 4 and not result.timed_out
    assert (3, "infeasible") in [(c, o) for c, o, _ in result.probes]
    assert validate(problem, result.solution).ok


@settings(max_examples=40, deadline=None)
@given(small_problems())
def test_the_schedule_reaches_the_optimum_of_the_bisection(problem):
    pinned = [b for b in problem.buffers if b.offset is not None]
    if any(a.overlaps_in_time(b) and a.offset < b.offset + b.size and b.offset < a.offset + a.size
           for i, a in enumerate(pinned) for b in pinned[i + 1:]):
        return  # pinned buffers that overlap have no placement at all
    result = scheduled(problem, 1_000_000)
    assert validate(problem.with_capacity(None), result.solution).ok
    assert result.optimal and not result.timed_out
    assert result.peak == minimize(problem, timeout=NO_RUSH, node_limit=1_000_000).peak


def test_the_floor_probe_gets_the_load_share(benchmarks):
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / "D.1048576.csv")
    load = lower_bound(problem)
    only_floor = scheduled(problem, 20_000, load_share=1.0)
    assert only_floor.probes and {c for c, _, _ in only_floor.probes} == {load}
    shared = scheduled(problem, 20_000, load_share=0.5)
    assert shared.probes[0][0] == load and any(c > load for c, _, _ in shared.probes)
    for result in (only_floor, shared):
        assert validate(problem, result.solution).ok and result.timed_out

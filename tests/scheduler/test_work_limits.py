"""Default limits count work, never seconds; a wall-clock limit is a safety net that says when it fired.

The allocation-aware loop shares a node limit among its placements (each method's ``work_limit``), the
CP-SAT models stop at CP-SAT's deterministic time. No test here races the clock: the runs that
must be deterministic have no wall-clock limit at all, and the ones that must report a fired
limit get a limit already past before the first search starts.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

import allocator
import scheduler
from allocator.core.registry import NODE_LIMIT
from allocator.methods.minimalloc import MiniMallocOptions
from frontend.synthetic import random_dag
from scheduler import CosmaOptions, ScheduleError
from scheduler.cosma import DEFAULT_DETERMINISTIC_TIME, cosma, cosma_dnc
from scheduler.spill_loop import allocation_aware


def spill_point(graph, share):
    need, _ = scheduler.min_capacity(graph)
    return need + int(share * (scheduler.no_spill_capacity(graph) - need))


@pytest.fixture
def solve_calls(monkeypatch):
    """Every ``allocator.solve`` call the loop makes: (method, timeout, keyword options)."""
    calls = []
    original = allocator.solve

    def recording(problem, method="auto", timeout=None, **options):
        calls.append((method, timeout, dict(options)))
        return original(problem, method, timeout, **options)

    monkeypatch.setattr(allocator, "solve", recording)
    return calls


#: the share of the nodes left that a placement gets, per phase (the module docstring's rule)
SHARES = {"fit": 0.5, "relax": 0.25}


def replay(rounds, total):
    """The limits the module docstring's rule gives, for the outcomes the rounds had."""
    left, limits = total, []
    for r in rounds:
        if r.status == "no gain":
            limits.append(None)
            continue
        share = SHARES[r.phase]
        limit = left if left * share < total / 64 else left * share
        limit = max(int(limit), 1)
        limits.append(limit)
        if r.status != "solved":
            left -= limit
    return limits


def test_the_loop_shares_its_node_limit_and_is_deterministic(solve_calls):
    # the first plan of this DAG at its quarter point is beyond auto's heuristics, and the
    # exact search does not place it within the first share: later, smaller plans fit
    graph = random_dag(30, seed=3, max_size=4096)
    capacity = spill_point(graph, 0.25)
    runs = [allocation_aware(graph, capacity, "auto", work_limit=40_000) for _ in range(2)]
    first, second = runs
    assert first.rounds[0].status == "timeout" and first.rounds[0].limit == 20_000
    assert [r.limit for r in first.rounds] == replay(first.rounds, 40_000)
    assert first.stats.clock_stopped is False and not any(r.clock_stopped for r in first.rounds)
    # nothing but work bounded the runs: the same rounds and offsets twice
    assert [(r.status, r.limit, r.noncompulsory_bytes) for r in first.rounds] == \
        [(r.status, r.limit, r.noncompulsory_bytes) for r in second.rounds]
    assert first.offsets == second.offsets and first.placed_by == second.placed_by
    # every placement of auto got a node limit and no timeout
    placements = [(timeout, options) for method, timeout, options in solve_calls if method == "auto"]
    assert placements and all(timeout is None and options["node_limit"] >= 1 for timeout, options in placements)


def test_the_default_node_limit_is_the_entrys(solve_calls):
    graph = random_dag(30, seed=2, max_size=4096)
    allocation_aware(graph, spill_point(graph, 0.5), "auto")
    limits = [options["node_limit"] for method, _, options in solve_calls if method == "auto"]
    assert limits[0] == NODE_LIMIT // 2 == allocator.METHODS["auto"].work_limit.total // 2


def test_a_limit_in_the_allocator_options_replaces_the_loops(solve_calls):
    graph = random_dag(30, seed=3, max_size=4096)
    capacity = spill_point(graph, 0.25)
    result = allocation_aware(graph, capacity, "auto", allocator_options={"node_limit": 5_000})
    limits = {options["node_limit"] for method, _, options in solve_calls if method == "auto"}
    assert limits == {5_000} and all(r.limit is None for r in result.rounds)
    solve_calls.clear()
    record = MiniMallocOptions(node_limit=7_000, workers=1)
    allocation_aware(graph, capacity, "minimalloc", allocator_options={"options": record})
    calls = [options for method, _, options in solve_calls if method == "minimalloc"]
    assert calls and all("node_limit" not in options and options["options"] is record for options in calls)


def test_an_infinite_work_limit_sets_no_limit(solve_calls):
    graph = random_dag(30, seed=2, max_size=4096)
    allocation_aware(graph, spill_point(graph, 0.5), "auto", work_limit=math.inf)
    assert all("node_limit" not in options for method, _, options in solve_calls if method == "auto")


def test_a_timeout_that_fires_is_reported_and_the_online_arena_kept():
    graph = random_dag(30, seed=3, max_size=4096)
    capacity = spill_point(graph, 0.25)
    # a limit already past when the loop begins: the clock, not the work, ends it
    result = allocation_aware(graph, capacity, "auto", timeout=1e-9)
    assert result.stats.clock_stopped is True
    assert result.rounds == [] and result.placed_by.name == "online-first-fit"
    quiet = allocation_aware(graph, capacity, "best-fit")
    assert quiet.stats.clock_stopped is False


def test_every_work_limit_names_a_field_of_its_methods_options():
    from allocator.methods.idealloc import DEFAULT_RUNS

    limited = {name: entry.work_limit for name, entry in allocator.METHODS.items() if entry.work_limit is not None}
    assert set(limited) == {"auto", "minimalloc", "cpsat", "idealloc"}
    for name, limit in limited.items():
        fields = {f.name for f in dataclasses.fields(allocator.METHODS[name].options)}
        assert limit.option in fields, (name, limit.option)
    assert limited["idealloc"].total == DEFAULT_RUNS  # the count it makes without a deadline
    with pytest.raises(ScheduleError, match="work_limit"):
        allocation_aware(random_dag(10, seed=0), 10**9, "auto", work_limit=0)


def test_cosma_options_default_to_deterministic_time():
    options = CosmaOptions()
    assert options.time_limit is None and options.deterministic_time == DEFAULT_DETERMINISTIC_TIME
    for bad in (0, -1.0, math.inf, math.nan, True):
        with pytest.raises(ScheduleError, match="time_limit"):
            CosmaOptions(time_limit=bad)
        with pytest.raises(ScheduleError, match="deterministic_time"):
            CosmaOptions(deterministic_time=bad)


def test_cosma_reports_a_time_limit_that_fired():
    graph = random_dag(60, seed=1, max_size=4096)
    budget = scheduler.min_capacity(graph)[0]
    deterministic = cosma(graph, budget)
    assert deterministic.status == "optimal" and deterministic.stats.clock_stopped is False
    # a deadline already past when CP-SAT starts: every search ends at the clock
    cut = cosma(graph, budget, options=CosmaOptions(time_limit=1e-6))
    assert cut.stats.clock_stopped is True
    split = cosma_dnc(graph, budget, part_size=20, options=CosmaOptions(time_limit=1e-6))
    assert split.stats.clock_stopped is True
    assert cosma_dnc(graph, budget, part_size=20).stats.clock_stopped is False


def test_a_registered_method_brings_its_own_work_limit_into_the_loop():
    from allocator.core.registry import METHODS, MethodOutput, WorkLimit, register

    @dataclasses.dataclass(frozen=True)
    class StepsOptions:
        steps: int = 10**9  # "until the deadline": the loop must bound it

    seen: list[int] = []

    def greedy_with_steps(problem, deadline, options):
        seen.append(options.steps)
        placed = allocator.solve(problem.with_capacity(None), "best-fit")
        return MethodOutput("solved" if placed.peak <= problem.capacity else "failed", placed.solution.offsets)

    try:
        register("stepper", "best-fit that counts steps", options=StepsOptions,
                 work_limit=WorkLimit("steps", 1000, shared=True))(greedy_with_steps)
        graph = random_dag(30, seed=3, max_size=4096)
        allocation_aware(graph, spill_point(graph, 0.25), "stepper")
        assert seen and seen[0] == 500 and all(steps <= 500 for steps in seen)
        with pytest.raises(ValueError, match="'nope'"):
            register("stepper2", "x", options=StepsOptions, work_limit=WorkLimit("nope", 1, shared=False))
    finally:
        METHODS.pop("stepper", None)
        METHODS.pop("stepper2", None)

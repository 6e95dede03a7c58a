"""The allocation-aware spill loop: plans under per-step caps, placement by an allocator, termination."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import allocator
import scheduler
import scheduler.spill_loop
from allocator.methods.minimalloc import MiniMallocOptions
from frontend.synthetic import chain, random_dag
from scheduler import CapacityError, ScheduleError
from scheduler.budget import onchip_sizes
from scheduler.planner import plan_residencies, step_footprints
from scheduler.registry import BY_ONLINE_ARENA
from scheduler.schedule import PlacedBy
from scheduler.spill_loop import allocation_aware


def spill_points(graph, shares=(0.25, 0.5, 0.75)):
    """Capacities between M_R and the online arena's no-spill size."""
    need, _ = scheduler.min_capacity(graph)
    free = scheduler.no_spill_capacity(graph)
    return [need + int(share * (free - need)) for share in shares] if free > need else []


def assert_valid(graph, result):
    assert scheduler.check_schedule(graph, result) == []
    assert result.offsets is not None
    report = allocator.validate(result.problem(), allocator.Solution(result.offsets))
    assert report.ok, report


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), shares=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40))
def test_plan_keeps_every_step_within_its_cap(seed, shares):
    graph = random_dag(20, seed=seed, max_size=2048)
    order = list(graph.nodes)
    floors = step_footprints(graph, order, onchip_sizes(graph))
    top = sum(onchip_sizes(graph).values())
    caps = [int(shares[t % len(shares)] * top) for t in range(len(order))]
    plan = plan_residencies(graph, caps)
    assert plan.offsets is None
    assert scheduler.check_schedule(graph, plan) == []
    for t, live in enumerate(scheduler.schedule.live_bytes_over_time(plan)[:len(order)]):
        assert live <= max(caps[t], floors[t]), (t, live, caps[t], floors[t])


def test_plan_at_unbounded_caps_spills_nothing():
    graph = random_dag(25, seed=3)
    plan = plan_residencies(graph, [10**9] * 25)
    assert plan.noncompulsory_bytes == 0
    assert plan.stats.evictions == 0


@pytest.mark.parametrize("method", ["first-fit", "greedy-by-size", "best-fit"])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("replacement", ["belady", "greedy"])
def test_loop_result_is_a_valid_schedule_and_never_worse_than_the_online_arena(method, seed, replacement):
    graph = random_dag(30, seed=seed, max_size=4096)
    for capacity in spill_points(graph):
        result = allocation_aware(graph, capacity, method, replacement=replacement, max_rounds=20)
        assert_valid(graph, result)
        online = scheduler.baseline.schedule(graph, capacity, replacement=replacement)
        assert result.noncompulsory_bytes <= online.noncompulsory_bytes
        assert result.stats.online_noncompulsory_bytes == online.noncompulsory_bytes
        assert 1 <= len(result.rounds) <= 20
        fitting = [r for r in result.rounds if r.phase == "fit"]
        relaxing = result.rounds[len(fitting):]
        assert all(r.phase == "relax" for r in relaxing) and len(relaxing) <= scheduler.spill_loop.MAX_RELAX_ROUNDS
        # every phase-1 round that did not fit and was not its last lowered at least one cap
        for r in fitting[:-1]:
            assert r.status != "solved" and r.lowered >= 1
        if result.stats.fitted:
            assert fitting[-1].status == "solved"
            solved = [r.noncompulsory_bytes for r in result.rounds if r.status == "solved"]
            # each relaxation that fitted moved fewer bytes; the answer is the last of them
            assert solved == sorted(solved, reverse=True) and len(set(solved)) == len(solved)
            assert result.stats.loop_noncompulsory_bytes == solved[-1]
        else:
            assert not relaxing
        if result.placed_by == PlacedBy.by_allocator(method):
            assert result.noncompulsory_bytes == result.stats.loop_noncompulsory_bytes
            assert max(o + r.size for r in result.residencies for o in [result.offsets[r.id]]) <= capacity


def test_the_loop_spills_more_only_after_the_allocator_failed():
    # first-fit cannot place the first plan of this DAG at its 1/4 point; the loop lowers the
    # caps where it overflowed until a plan fits (found by the exploration in the docstring)
    graph = random_dag(30, seed=1, max_size=4096)
    capacity = spill_points(graph)[0]
    result = allocation_aware(graph, capacity, "first-fit")
    fitting = [r for r in result.rounds if r.phase == "fit"]
    assert len(fitting) >= 3
    assert fitting[0].status == "failed"
    assert fitting[-1].status == "solved"
    assert result.stats.fitted is True
    # each phase-1 re-plan moves at least as many bytes as the one before (caps only go down)
    moved = [r.noncompulsory_bytes for r in fitting]
    assert moved == sorted(moved) and moved[-1] > moved[0]
    assert_valid(graph, result)


def test_a_loop_that_cannot_fit_in_its_rounds_keeps_the_online_arena():
    graph = random_dag(30, seed=1, max_size=4096)
    capacity = spill_points(graph)[0]
    result = allocation_aware(graph, capacity, "first-fit", max_rounds=1)
    assert len(result.rounds) == 1 and result.rounds[0].status == "failed"
    assert result.stats.fitted is False and result.stats.online_kept is True
    assert result.stats.loop_noncompulsory_bytes is None and result.stats.as_report()["loop_noncompulsory_bytes"] == -1
    assert result.placed_by == BY_ONLINE_ARENA and result.placed_by.name == "online-first-fit"
    assert_valid(graph, result)


def test_an_exact_allocator_with_a_node_limit_is_deterministic():
    graph = random_dag(30, seed=2, max_size=4096)
    capacity = spill_points(graph)[1]
    limit = {"options": MiniMallocOptions(node_limit=20_000, workers=1)}
    runs = [allocation_aware(graph, capacity, "minimalloc", allocator_options=limit, timeout=600) for _ in range(2)]
    assert runs[0].offsets == runs[1].offsets
    assert [r.noncompulsory_bytes for r in runs[0].rounds] == [r.noncompulsory_bytes for r in runs[1].rounds]
    assert_valid(graph, runs[0])


def test_a_chain_fits_without_spilling_at_its_peak_live_bytes():
    graph = chain(6, size=10)
    peak = plan_residencies(graph, [10**6] * 6).stats.peak_live_bytes
    result = allocation_aware(graph, int(peak), "best-fit")
    assert result.noncompulsory_bytes == 0 and result.placed_by == PlacedBy("allocator", "best-fit")
    assert_valid(graph, result)


def test_bad_input_is_refused_naming_it():
    graph = chain(3, size=10)
    with pytest.raises(allocator.UnknownMethodError, match="'nope'"):
        allocation_aware(graph, 30, "nope")
    with pytest.raises(ScheduleError, match="max_rounds"):
        allocation_aware(graph, 30, "best-fit", max_rounds=0)
    with pytest.raises(ScheduleError, match="timeout"):
        allocation_aware(graph, 30, "best-fit", timeout=0)
    with pytest.raises(ScheduleError, match="replacement"):
        allocation_aware(graph, 30, "best-fit", replacement="none")
    with pytest.raises(CapacityError):
        allocation_aware(graph, 5, "best-fit")
    with pytest.raises(ScheduleError, match="caps has 2 entries for 3 steps"):
        plan_residencies(graph, [30, 30])


def test_make_schedule_selects_the_loop_or_the_online_arena():
    graph = random_dag(30, seed=2, max_size=4096)
    capacity = spill_points(graph)[1]
    online = scheduler.make_schedule(graph, capacity, "program", allocator="online-first-fit")
    assert online.placed_by == BY_ONLINE_ARENA and not online.rounds and online.stats.clock_stopped is False
    # the default is auto's loop, as in accelsim run and compile_and_simulate
    default = scheduler.make_schedule(graph, capacity, "program")
    looped_auto = allocation_aware(graph, capacity, "auto")
    assert default.rounds and default.offsets == looped_auto.offsets
    assert default.placed_by == looped_auto.placed_by == PlacedBy.by_allocator(allocator.DEFAULT_METHOD)
    looped = scheduler.make_schedule(graph, capacity, "program", allocator="best-fit")
    assert looped.rounds and looped.placed_by in (PlacedBy.by_allocator("best-fit"), BY_ONLINE_ARENA)
    peak_order = scheduler.make_schedule(graph, capacity, "min-peak", allocator="best-fit")
    assert peak_order.method == "min-peak+belady" and peak_order.rounds
    assert_valid(graph, peak_order)
    with pytest.raises(ScheduleError, match="cosma"):
        scheduler.make_schedule(graph, capacity, "cosma", allocator="best-fit")
    with pytest.raises(ScheduleError, match="no time limit"):
        scheduler.make_schedule(graph, capacity, "program", allocator="online-first-fit", allocator_timeout=1.0)
    with pytest.raises(ScheduleError, match="allocator_timeout"):
        scheduler.make_schedule(graph, capacity, "cosma", allocator_timeout=1.0)

"""The load-timing planner: issue steps that pass the independent checks, windows that fit, and the
wanted steps computed by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

import scheduler
from allocator import Solution, solve, validate
from frontend.synthetic import chain, random_dag, residual_block
from scheduler.check import check_schedule
from scheduler.load_timing import DEFAULT_ROUNDS, DmaModel, plan_load_timing, wanted_issue_steps
from scheduler.schedule import Residency, Schedule, Transfer

GRAPHS = {"chain": lambda: chain(8, size=2048, weight_size=4096), "residual": lambda: residual_block(3, 2048),
          "dag": lambda: random_dag(14, seed=3, max_size=4096)}
DMA = DmaModel(bytes_per_cycle=8.0, latency=20)


def _place(method: str):
    def place(planned: Schedule) -> dict[str, int] | None:
        result = solve(planned.problem(), method)
        return dict(result.solution.offsets) if result.solved and result.solution is not None else None
    return place


def _scheduled(name: str, factor: float) -> tuple:
    graph = GRAPHS[name]()
    need, _ = scheduler.min_capacity(graph)
    capacity = int(need * factor)
    sched = scheduler.make_schedule(graph, capacity, "program", allocator="best-fit")
    cycles = [100 + 37 * (k % 5) for k in range(len(sched.order))]
    return graph, sched, cycles


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("factor", [1.0, 1.5, 4.0])
@pytest.mark.parametrize("method", ["best-fit", None])
def test_every_plan_computes_the_graph_and_its_placement_validates(name, factor, method):
    graph, sched, cycles = _scheduled(name, factor)
    planned = plan_load_timing(sched, cycles, DMA, place=None if method is None else _place(method))
    assert check_schedule(graph, planned) == []
    assert validate(planned.problem(), Solution(planned.offsets)).ok
    by_id = {r.id: r for r in planned.residencies}
    before = {r.id: r for r in sched.residencies}
    for t in planned.transfers:
        if t.to_chip:
            r = by_id[t.residency]
            assert t.issue_step == r.start <= t.step == before[t.residency].start
            assert r.end == before[t.residency].end
    if method is None:  # the scheduler's own offsets stay where they were
        assert planned.offsets == sched.offsets


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_room_to_spare_prefetches_and_lookahead_zero_changes_nothing(name):
    graph, sched, cycles = _scheduled(name, 4.0)
    planned = plan_load_timing(sched, cycles, DMA, place=_place("best-fit"))
    assert any(t.issue_step < t.step for t in planned.transfers if t.to_chip)
    still = plan_load_timing(sched, cycles, DMA, lookahead=0, place=_place("best-fit"))
    assert still.residencies == sched.residencies
    assert all(t.issue_step == t.step for t in still.transfers if t.to_chip)
    limited = plan_load_timing(sched, cycles, DMA, lookahead=1, place=_place("best-fit"))
    assert all(t.step - t.issue_step <= 1 for t in limited.transfers if t.to_chip)


def test_the_same_input_gives_the_same_plan():
    _, sched, cycles = _scheduled("dag", 1.5)
    first = plan_load_timing(sched, cycles, DMA, place=_place("best-fit"))
    again = plan_load_timing(sched, cycles, DMA, place=_place("best-fit"))
    assert (first.residencies, first.transfers, first.offsets) == (again.residencies, again.transfers, again.offsets)


def test_a_plan_no_placement_takes_keeps_the_offsets_and_tries_the_rounds():
    graph, sched, cycles = _scheduled("chain", 4.0)
    calls = []

    def refuse(planned: Schedule) -> None:
        calls.append(planned)

    planned = plan_load_timing(sched, cycles, DMA, place=refuse)
    assert len(calls) == DEFAULT_ROUNDS == planned.stats.load_timing_rounds
    # each round asks for less room than the one before
    peaks = [max(sum(r.size for r in c.residencies if r.start <= k < r.end) for k in range(len(c.order)))
             for c in calls]
    assert peaks == sorted(peaks, reverse=True) and peaks[0] > peaks[-1]
    assert planned.offsets == sched.offsets and check_schedule(graph, planned) == []


def _two_weights() -> Schedule:
    """Four operators of 10 cycles; w2 (40 bytes) is needed at step 2 and w3 (80 bytes) at step 3."""
    residencies = [Residency("w2", "w2", 2, 3, 40), Residency("w3", "w3", 3, 4, 80)]
    transfers = [Transfer("load", "w2", "w2", 2, 40), Transfer("load", "w3", "w3", 3, 80)]
    return Schedule(["a", "b", "c", "d"], residencies, transfers, 1000, offsets={"w2": 0, "w3": 0})


def test_wanted_steps_by_hand():
    # operators start at 0, 10, 20, 30. At 4 bytes a cycle w3 takes 20 cycles: it must start by
    # 30 - 20 = 10, so at boundary 1; w2 takes 10 and must end before w3 starts (10): start by 0
    assert wanted_issue_steps(_two_weights(), [10] * 4, DmaModel(bytes_per_cycle=4.0)) == {"w2": 0, "w3": 1}
    # with 5 cycles of latency each: w3 starts by 5 (boundary 0), w2 by -10 (boundary 0)
    assert wanted_issue_steps(_two_weights(), [10] * 4, DmaModel(4.0, latency=5)) == {"w2": 0, "w3": 0}
    # at 8 bytes a cycle: w3 takes 10 cycles (start by 20: boundary 2), w2 5 (by 15: boundary 1)
    assert wanted_issue_steps(_two_weights(), [10] * 4, DmaModel(8.0)) == {"w2": 1, "w3": 2}
    # a per-PE target moves 4 x the bytes: as at 2 bytes a cycle
    assert wanted_issue_steps(_two_weights(), [10] * 4, DmaModel(8.0, chip_factor=4)) == {"w2": 0, "w3": 0}


def test_windows_grow_in_place_only_over_free_room():
    # both weights sit at offset 0: w3 cannot open before w2 has gone (step 3)
    planned = plan_load_timing(_two_weights(), [10] * 4, DmaModel(bytes_per_cycle=4.0))
    assert {r.id: r.start for r in planned.residencies} == {"w2": 0, "w3": 3}
    apart = replace(_two_weights(), offsets={"w2": 0, "w3": 40})
    planned = plan_load_timing(apart, [10] * 4, DmaModel(bytes_per_cycle=4.0))
    assert {r.id: r.start for r in planned.residencies} == {"w2": 0, "w3": 1}


def test_a_retrieval_never_opens_before_the_stay_it_brings_back_has_ended():
    graph, sched, cycles = _scheduled("dag", 1.0)
    planned = plan_load_timing(sched, cycles, DmaModel(bytes_per_cycle=0.5), place=_place("best-fit"))
    stays: dict[str, list[Residency]] = {}
    for r in planned.residencies:
        stays.setdefault(r.tensor, []).append(r)
    for rs in stays.values():
        rs.sort(key=lambda r: r.start)
        assert all(a.end <= b.start for a, b in zip(rs, rs[1:], strict=False))
    assert check_schedule(graph, planned) == []

"""The prefetch policy's issue steps, and the driver issuing fills at the steps a schedule plans."""

from __future__ import annotations

import pytest

import scheduler
from accelsim.sim import issue_step, issue_steps, simulate, with_issue_steps
from frontend.graph import add_operator, add_tensor, new_graph
from scheduler.schedule import Residency, Schedule, Transfer

# ------------------------------------------------------------------------------------------
# the policy


def _small_schedule() -> Schedule:
    """Fills at steps 0, 1, 3 and 4 (one planned already), a drain at 5."""
    residencies = [Residency(name, name, start, end, 64) for name, start, end in
                   [("a", 0, 1), ("b", 1, 2), ("c", 3, 4), ("d", 4, 5), ("e", 0, 5)]]
    transfers = [Transfer("load", "a", "a", 0, 64), Transfer("load", "b", "b", 1, 64),
                 Transfer("retrieve", "c", "c", 3, 64), Transfer("load", "d", "d", 4, 64, issue_step=4),
                 Transfer("store", "e", "e", 5, 64)]
    return Schedule(["o0", "o1", "o2", "o3", "o4"], residencies, transfers, capacity=1024)


def test_the_policy_issues_each_fill_depth_steps_early_but_not_before_the_first_operator():
    fills = [t for t in _small_schedule().transfers if t.to_chip]
    assert issue_steps(fills, 0) == {"a": 0, "b": 1, "c": 3, "d": 4}  # depth 0: every fill at its boundary
    assert issue_steps(fills, 1) == {"a": 0, "b": 0, "c": 2, "d": 4}  # d keeps the step the schedule planned
    assert issue_steps(fills, 2) == {"a": 0, "b": 0, "c": 1, "d": 4}
    assert issue_steps(fills, 9) == {"a": 0, "b": 0, "c": 0, "d": 4}
    assert [issue_step(s, 3) for s in range(6)] == [0, 0, 0, 0, 1, 2]
    with pytest.raises(ValueError, match="prefetch depth -1 is negative"):
        issue_step(3, -1)


def test_with_issue_steps_plans_only_the_unplanned_fills():
    schedule = _small_schedule()
    planned = with_issue_steps(schedule, 2)
    assert [(t.residency, t.issue_step) for t in planned.transfers] == [
        ("a", 0), ("b", 0), ("c", 1), ("d", 4), ("e", None)]
    assert all(t.issue_step is None for t in schedule.transfers[:3])  # the original is untouched
    assert planned.order == schedule.order and planned.residencies == schedule.residencies


@pytest.mark.parametrize("depth", [0, 1, 2, 4])
@pytest.mark.parametrize("channels", [1, 3])
def test_a_schedule_planned_by_the_policy_simulates_exactly_as_an_unplanned_one(chain_graph, toy_hw, depth, channels):
    graph = chain_graph()
    schedule = scheduler.baseline.schedule(graph, 3072, alignment=64)
    unplanned = simulate(graph, schedule, None, toy_hw(sram_bytes_per_pe=3072,
                                                     dma={"channels": channels, "prefetch_depth": depth}))
    # the hardware's depth no longer matters once every fill carries its issue step
    other = (depth + 3) % 5
    planned = simulate(graph, with_issue_steps(schedule, depth), None,
                       toy_hw(sram_bytes_per_pe=3072, dma={"channels": channels, "prefetch_depth": other}))
    assert unplanned.ok and planned == unplanned


# ------------------------------------------------------------------------------------------
# the driver issues fills at the planned steps


def _four_steps(w3_issue: int | None, offsets: dict[str, int] | None = None):
    """fc0 computes long (200 cycles), relu1 and relu2 are short (4), fc3 needs w3 (a 74-cycle load)."""
    g = new_graph("four", dtype="int8")
    add_tensor(g, "x", (1, 64), kind="input")
    add_tensor(g, "w0", (64, 64), kind="weight")
    add_tensor(g, "w3", (64, 64), kind="weight")
    add_operator(g, "fc0", "linear", inputs=["x", "w0"], outputs={"y0": (1, 64)}, macs=1024 * 200)
    add_operator(g, "relu1", "relu", inputs=["y0"], outputs={"y1": (1, 64)})
    add_operator(g, "relu2", "relu", inputs=["y1"], outputs={"y2": (1, 64)})
    add_operator(g, "fc3", "linear", inputs=["y2", "w3"], outputs={"out": (1, 64)}, macs=4096)
    g.graph["outputs"] = ["out"]
    g.graph["tensors"]["out"]["kind"] = "output"
    residencies = [
        Residency("x", "x", 0, 1, 64), Residency("w0", "w0", 0, 1, 4096), Residency("y0", "y0", 0, 2, 64),
        Residency("y1", "y1", 1, 3, 64), Residency("y2", "y2", 2, 4, 64), Residency("w3", "w3", 3, 4, 4096),
        Residency("out", "out", 3, 4, 64),
    ]
    transfers = [Transfer("load", "x", "x", 0, 64), Transfer("load", "w0", "w0", 0, 4096),
                 Transfer("load", "w3", "w3", 3, 4096, issue_step=w3_issue), Transfer("store", "out", "out", 4, 64)]
    placed = offsets or {"x": 0, "w0": 64, "y0": 4160, "y1": 4224, "y2": 4288, "w3": 4352, "out": 0}
    schedule = Schedule(["fc0", "relu1", "relu2", "fc3"], residencies, transfers, capacity=1 << 14, alignment=64,
                        offsets=placed)
    return g, schedule


def _w3(result):
    w3 = next(t for t in result.transfers if t.tensor == "w3")
    return w3.prefetched, w3.start_cycle, w3.end_cycle


@pytest.mark.parametrize("depth", [0, 1, 4])
def test_a_planned_issue_step_is_followed_whatever_the_prefetch_depth(toy_hw, depth):
    hw = toy_hw(dma={"prefetch_depth": depth})
    # load x [0, 11), load w0 [11, 85); fc0 [85, 285), relu1 [285, 289), relu2 [289, 293)
    early = simulate(*_four_steps(0), None, hw)
    assert [(o.start_cycle, o.end_cycle) for o in early.ops[:3]] == [(85, 285), (285, 289), (289, 293)]
    assert _w3(early) == (True, 85, 159)  # issued when fc0 starts: hidden behind its compute
    assert (early.ops[3].start_cycle, early.ops[3].dma_stall_cycles, early.cycles) == (293, 0, 308)
    two = simulate(*_four_steps(2), None, hw)
    assert _w3(two) == (True, 289, 363)  # issued when relu2 starts
    assert (two.ops[3].start_cycle, two.cycles) == (363, 378)
    own = simulate(*_four_steps(3), None, hw)
    assert _w3(own) == (False, 293, 367)  # issue step == step: at its own boundary
    assert (own.ops[3].start_cycle, own.ops[3].dma_stall_cycles, own.cycles) == (367, 74, 382)


def test_an_early_issue_step_still_waits_for_its_range_to_be_free(toy_hw):
    # w3 takes y0's range (y0 lives [0, 2)); y1 and y2 move out of the way. Planned at step 0, the
    # load may go when fc0 starts, but its range is free only once y0 dies at the boundary of step 2
    offsets = {"x": 0, "w0": 64, "y0": 4160, "y1": 8256, "y2": 8320, "w3": 4160, "out": 0}
    result = simulate(*_four_steps(0, offsets), None, toy_hw(dma={"prefetch_depth": 0}))
    assert result.ok, result.memory_check
    assert _w3(result) == (True, 289, 363) == (True, result.ops[2].start_cycle, result.ops[3].start_cycle)

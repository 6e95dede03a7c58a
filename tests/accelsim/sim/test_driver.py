"""The driver issues every fill at the step the schedule planned, where its residency starts, and runs
each operator once the fills it needs are in."""

from __future__ import annotations

import pytest

from accelsim.sim import SimulationError, simulate
from frontend.graph import add_operator, add_tensor, new_graph
from scheduler.schedule import Residency, Schedule, Transfer

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
        Residency("y1", "y1", 1, 3, 64), Residency("y2", "y2", 2, 4, 64),
        Residency("w3", "w3", 3 if w3_issue is None else w3_issue, 4, 4096),
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
    hw = toy_hw(dma={"prefetch_depth": depth})  # the planner's lookahead: the simulator never reads it
    # load x [0, 11), load w0 [11, 85); fc0 [85, 285), relu1 [285, 289), relu2 [289, 293)
    early = simulate(*_four_steps(0), None, hw)
    assert [(o.start_cycle, o.end_cycle) for o in early.ops[:3]] == [(85, 285), (285, 289), (289, 293)]
    # issued at boundary 0 with x and w0; the DMA serves them first (fc0 needs them)
    assert _w3(early) == (True, 85, 159)
    assert (early.ops[3].start_cycle, early.ops[3].dma_stall_cycles, early.cycles) == (293, 0, 308)
    two = simulate(*_four_steps(2), None, hw)
    assert _w3(two) == (True, 289, 363)  # issued at the boundary before relu2
    assert (two.ops[3].start_cycle, two.cycles) == (363, 378)
    own = simulate(*_four_steps(3), None, hw)
    assert _w3(own) == (False, 293, 367)  # issue step == step: at its own boundary
    assert (own.ops[3].start_cycle, own.ops[3].dma_stall_cycles, own.cycles) == (367, 74, 382)
    assert own == simulate(*_four_steps(None), None, hw)  # None is the step itself


def test_a_prefetch_window_placed_over_a_live_range_is_a_memory_violation(toy_hw):
    # w3's window [0, 4) shares y0's range while y0 lives [0, 2): the schedule's placement is wrong,
    # and the simulator says so at the moment the window opens
    offsets = {"x": 0, "w0": 64, "y0": 4160, "y1": 8256, "y2": 8320, "w3": 4160, "out": 0}
    result = simulate(*_four_steps(0, offsets), None, toy_hw())
    assert not result.ok
    assert "'w3'" in result.memory_check and "'y0'" in result.memory_check and "step 0" in result.memory_check


def test_the_same_window_after_y0_dies_runs_clean_and_later(toy_hw):
    offsets = {"x": 0, "w0": 64, "y0": 4160, "y1": 8256, "y2": 8320, "w3": 4160, "out": 0}
    result = simulate(*_four_steps(2, offsets), None, toy_hw())
    assert result.ok, result.memory_check
    assert _w3(result) == (True, 289, 363) == (True, result.ops[2].start_cycle, result.ops[3].start_cycle)


@pytest.mark.parametrize(("issue", "start", "message"), [
    (1, 3, "issued at step 1, but the residency lives on [3, 4)"),
    (None, 2, "load of residency 'w3' at step 3, but the residency lives on [2, 4)"),
])
def test_a_fill_issued_away_from_its_residency_start_is_refused(toy_hw, issue, start, message):
    graph, schedule = _four_steps(3)
    schedule.residencies[5] = Residency("w3", "w3", start, 4, 4096)
    schedule.transfers[2] = Transfer("load", "w3", "w3", 3, 4096, issue_step=issue)
    with pytest.raises(SimulationError, match=message.replace("[", r"\[").replace(")", r"\)")):
        simulate(graph, schedule, None, toy_hw())


def test_a_dma_wait_splits_into_what_bandwidth_forced_and_what_a_late_load_cost(toy_hw):
    hw = toy_hw()  # 64 bytes a cycle, 10 cycles of latency, one channel
    own = simulate(*_four_steps(3), None, hw)
    split = [(o.dma_bandwidth_stall_cycles, o.dma_late_stall_cycles) for o in own.ops]
    # fc0 needs x and w0 (4,160 bytes): no issue timing gets them across before 10 + 65 = 75; the
    # second latency (x [0, 11), w0 [11, 85)) costs the other 10. w3 could have crossed by
    # 10 + 129 = 139, long before fc3 may start (283): its 74 cycles are all a late load's.
    assert split == [(75, 10), (0, 0), (0, 0), (0, 74)]
    assert own.dma_wait_split == {"bandwidth": 75, "late": 84}
    early = simulate(*_four_steps(0), None, hw)
    assert [(o.dma_bandwidth_stall_cycles, o.dma_late_stall_cycles) for o in early.ops][3] == (0, 0)
    slow = simulate(*_four_steps(0), None, toy_hw(dram_bandwidth_bytes_per_s=8e9))
    # at 8 bytes a cycle all three loads (8,256 bytes) cross by 10 + 1,032 = 1,042 at the earliest,
    # while fc3 could start at 10 + 520 + 200 + 4 + 4 = 738: bandwidth forces 304 of its 314; the
    # other 10 are w3's own latency, paid after w0's on the one channel
    fc3 = slow.ops[3]
    assert (fc3.dma_bandwidth_stall_cycles, fc3.dma_late_stall_cycles) == (304, 10)

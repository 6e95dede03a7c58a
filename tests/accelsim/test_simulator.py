"""The SimPy model: the scratchpad's checks, exact cycle counts, prefetch, drains, corrupted offsets.

Fills issued at planned steps are pinned in ``tests/accelsim/sim/test_driver.py`` (the planner that
chooses them in ``tests/scheduler/test_load_timing.py``), input validation in
``tests/accelsim/sim/test_inputs.py``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scheduler
from accelsim.sim import MemoryViolation, Scratchpad, SimulationError, simulate
from allocator import validate
from allocator.core.problem import Solution
from frontend.graph import add_operator, add_tensor, new_graph
from scheduler.schedule import Residency, Schedule, Transfer

# ------------------------------------------------------------------------------------------
# Scratchpad


def test_scratchpad_rejects_overlap_naming_both_residencies_and_ranges():
    pad = Scratchpad(capacity=1024)
    pad.allocate("a", 0, 256, now=0, step=0)
    pad.allocate("b", 512, 256, now=0, step=0)
    with pytest.raises(MemoryViolation) as info:
        pad.allocate("c", 200, 100, now=42, step=3)
    error = info.value
    assert str(error) == "step 3 (cycle 42): residency 'c' [200, 300) overlaps live residency 'a' [0, 256)"
    assert (error.residency, error.other, error.range, error.other_range) == ("c", "a", (200, 300), (0, 256))
    assert (error.step, error.cycle) == (3, 42)
    with pytest.raises(MemoryViolation, match="'d' \\[500, 520\\) overlaps live residency 'b' \\[512, 768\\)"):
        pad.allocate("d", 500, 20, now=42)
    # a range touching a live one is fine: ranges are half-open
    pad.allocate("e", 256, 256, now=43)
    assert pad.live_bytes == 768 and len(pad) == 3


def test_scratchpad_rejects_out_of_bounds_and_misaligned():
    pad = Scratchpad(capacity=1024, alignment=64)
    with pytest.raises(MemoryViolation, match=r"'big' \[768, 1280\) lies outside the memory \[0, 1024\)"):
        pad.allocate("big", 768, 512, now=5, step=1)
    with pytest.raises(MemoryViolation, match="outside the memory"):
        pad.allocate("neg", -64, 64, now=5)
    with pytest.raises(MemoryViolation, match="offset 32 is not a multiple of the alignment 64"):
        pad.allocate("odd", 32, 64, now=5)


def test_scratchpad_free_and_reuse_and_peaks():
    pad = Scratchpad(capacity=1024)
    pad.allocate("a", 0, 512, now=0)
    pad.allocate("b", 512, 256, now=1)
    pad.free("a", now=2)
    pad.allocate("c", 0, 128, now=3)
    assert pad.range_of("c") == (0, 128)
    assert pad.peak_live_bytes == 768 and pad.peak_address == 768
    with pytest.raises(MemoryViolation, match="free of residency 'a', which is not live"):
        pad.free("a", now=4)
    with pytest.raises(MemoryViolation, match="'c' allocated twice"):
        pad.allocate("c", 256, 64, now=4)
    # one entry per moment: the state after the last change at that cycle
    assert pad.timeline == [(0, 512, 512), (1, 768, 768), (2, 256, 768), (3, 384, 768)]


# ------------------------------------------------------------------------------------------
# hand-built schedules with hand-computed timing


def _fc_relu():
    g = new_graph("fc_relu", dtype="int8")
    add_tensor(g, "x", (1, 64), kind="input")
    add_tensor(g, "w", (64, 64), kind="weight")
    add_operator(g, "fc", "linear", inputs=["x", "w"], outputs={"y": (1, 64)}, macs=4096)
    add_operator(g, "relu", "relu", inputs=["y"], outputs={"z": (1, 64)})
    g.graph["outputs"] = ["z"]
    g.graph["tensors"]["z"]["kind"] = "output"
    residencies = [
        Residency("x", "x", 0, 1, 64), Residency("w", "w", 0, 1, 4096),
        Residency("y", "y", 0, 2, 64), Residency("z", "z", 1, 2, 64),
    ]
    transfers = [Transfer("load", "x", "x", 0, 64), Transfer("load", "w", "w", 0, 4096),
                 Transfer("store", "z", "z", 2, 64)]
    offsets = {"x": 0, "w": 64, "y": 4160, "z": 0}
    return g, Schedule(["fc", "relu"], residencies, transfers, capacity=8192, alignment=64, offsets=offsets)


def test_exact_cycles_of_a_two_operator_program(toy_hw):
    graph, schedule = _fc_relu()
    result = simulate(graph, schedule, None, toy_hw())
    # load x: 10 + 64/64 = 11 cycles [0, 11); load w: 10 + 4096/64 = 74 [11, 85);
    # fc: 4096 MACs / 1024 = 4 [85, 89); relu: 64 elements / 16 = 4 [89, 93); store z: 11 [93, 104)
    assert result.cycles == 104
    assert result.seconds == pytest.approx(104e-9)
    assert [(o.name, o.start_cycle, o.end_cycle) for o in result.ops] == [("fc", 85, 89), ("relu", 89, 93)]
    assert [(t.kind, t.tensor, t.start_cycle, t.end_cycle) for t in result.transfers] == [
        ("load", "x", 0, 11), ("load", "w", 11, 85), ("store", "z", 93, 104),
    ]
    assert result.ops[0].stall_cycles == 85
    assert (result.dram_read_bytes, result.dram_write_bytes) == (4160, 64)
    assert (result.compulsory_bytes, result.noncompulsory_bytes) == (4224, 0)
    assert result.peak_bytes == 4224 and result.peak_live_bytes == 4224
    assert result.compute_cycles == 8 and result.dma_cycles == 96
    assert result.memory_check == "ok" and result.ok


def test_per_pe_transfers_move_every_pes_share(toy_hw):
    graph, schedule = _fc_relu()
    result = simulate(graph, schedule, None, toy_hw(n_pe=16, capacity_scope="per_pe"))
    # per-PE bytes x 16 PEs cross the DRAM interface: load w moves 65536 B = 1024 cycles + 10
    load_w = next(t for t in result.transfers if t.tensor == "w")
    assert (load_w.nbytes, load_w.chip_bytes) == (4096, 65536)
    assert load_w.end_cycle - load_w.start_cycle == 1034
    assert result.dram_read_bytes == 16 * 4160


@pytest.mark.parametrize("planned", [True, False])
def test_a_load_issued_a_step_early_overlaps_compute(toy_hw, planned):
    g = new_graph("two_fc", dtype="int8")
    add_tensor(g, "x", (1, 64), kind="input")
    add_tensor(g, "w0", (64, 64), kind="weight")
    add_tensor(g, "w1", (64, 64), kind="weight")
    add_operator(g, "fc0", "linear", inputs=["x", "w0"], outputs={"y": (1, 64)}, macs=102400)
    add_operator(g, "fc1", "linear", inputs=["y", "w1"], outputs={"z": (1, 64)}, macs=4096)
    issue = 0 if planned else 1
    residencies = [
        Residency("x", "x", 0, 1, 64), Residency("w0", "w0", 0, 1, 4096), Residency("y", "y", 0, 2, 64),
        Residency("w1", "w1", issue, 2, 4096), Residency("z", "z", 1, 2, 64),
    ]
    transfers = [
        Transfer("load", "x", "x", 0, 64), Transfer("load", "w0", "w0", 0, 4096),
        Transfer("load", "w1", "w1", 1, 4096, issue_step=issue), Transfer("store", "z", "z", 2, 64),
    ]
    offsets = {"x": 0, "w0": 64, "y": 4160, "w1": 4224, "z": 0}
    schedule = Schedule(["fc0", "fc1"], residencies, transfers, capacity=1 << 14, alignment=64, offsets=offsets)
    result = simulate(g, schedule, None, toy_hw())
    w1 = next(t for t in result.transfers if t.tensor == "w1")
    if planned:
        # issued at boundary 0 behind x and w0, w1 loads during fc0 [85, 185): [85, 159);
        # fc1 starts right after fc0 [185, 189); store z [189, 200)
        assert (w1.prefetched, w1.start_cycle, w1.end_cycle) == (True, 85, 159)
        assert [(o.start_cycle, o.end_cycle) for o in result.ops] == [(85, 185), (185, 189)]
        assert result.cycles == 200
        # live bytes peak while w1 is prefetched: x + w0 + y + w1
        assert result.peak_live_bytes == 64 + 4096 + 64 + 4096
    else:  # at its own boundary: fc1 waits the whole load [185, 259) and runs [259, 263)
        assert (w1.prefetched, w1.start_cycle, w1.end_cycle) == (False, 185, 259)
        assert [(o.start_cycle, o.end_cycle) for o in result.ops] == [(85, 185), (259, 263)]
        assert result.ops[1].dma_stall_cycles == 74 and result.cycles == 274


def _spill_and_retrieve(planned: bool = True):
    """y is spilled at step 1 and retrieved for c at step 2; ``planned``: the retrieval is issued at step 1,
    into x's range, free from then on."""
    g = new_graph("spill", dtype="int8")
    add_tensor(g, "x", (1, 64), kind="input")
    add_tensor(g, "v", (1, 64), kind="input")
    add_operator(g, "a", "relu", inputs=["x"], outputs={"y": (1, 64)})
    add_operator(g, "b", "relu", inputs=["v"], outputs={"u": (1, 64)})
    add_operator(g, "c", "add", inputs=["y", "u"], outputs={"out": (1, 64)})
    g.graph["outputs"] = ["out"]
    g.graph["tensors"]["out"]["kind"] = "output"
    residencies = [
        Residency("x", "x", 0, 1, 64), Residency("y", "y", 0, 1, 64), Residency("v", "v", 1, 2, 64),
        Residency("u", "u", 1, 3, 64), Residency("y#1", "y", 1 if planned else 2, 3, 64),
        Residency("out", "out", 2, 3, 64),
    ]
    transfers = [
        Transfer("load", "x", "x", 0, 64), Transfer("spill", "y", "y", 1, 64), Transfer("load", "v", "v", 1, 64),
        Transfer("retrieve", "y", "y#1", 2, 64, issue_step=1 if planned else None),
        Transfer("store", "out", "out", 3, 64),
    ]
    # v reuses y's range, y#1 reuses x's
    offsets = {"x": 0, "y": 64, "v": 64, "u": 128, "y#1": 0, "out": 192}
    return g, Schedule(["a", "b", "c"], residencies, transfers, capacity=256, alignment=64, offsets=offsets)


def test_a_range_is_reused_only_after_its_spill_completes(toy_hw):
    graph, schedule = _spill_and_retrieve()
    assert validate(schedule.problem(), Solution(schedule.offsets)).ok
    result = simulate(graph, schedule, None, toy_hw())
    timing = {t.kind + " " + t.residency: (t.start_cycle, t.end_cycle, t.prefetched) for t in result.transfers}
    # load x [0, 11); a [11, 15); spill y [15, 26); v waits for the spill: load v [26, 37); y#1,
    # issued at boundary 1 into x's freed range, waits for y's write-back and then for v (needed
    # first): [37, 48) during b [37, 41); c [48, 52); store out [52, 63)
    assert timing == {
        "load x": (0, 11, False), "spill y": (15, 26, False), "load v": (26, 37, False),
        "retrieve y#1": (37, 48, True), "store out": (52, 63, False),
    }
    assert [(o.start_cycle, o.end_cycle) for o in result.ops] == [(11, 15), (37, 41), (48, 52)]
    assert result.cycles == 63
    assert (result.dram_read_bytes, result.dram_write_bytes) == (192, 128)
    assert (result.compulsory_bytes, result.noncompulsory_bytes) == (192, 128)
    assert result.bytes_by_kind == {"load": 128, "store": 64, "spill": 64, "retrieve": 64}
    late = simulate(*_spill_and_retrieve(planned=False), None, toy_hw())
    # issued at its own boundary: after b [37, 41), y#1 [41, 52); c [52, 56); store out [56, 67)
    assert {t.residency: (t.start_cycle, t.end_cycle, t.prefetched) for t in late.transfers}["y#1"] == (41, 52, False)
    assert late.cycles == 67


def test_a_retrieve_waits_for_the_write_back_of_the_same_tensor(toy_hw):
    # y is moved within the scratchpad at step 1 (spilled from one range, retrieved into another):
    # the retrieve reads what the spill writes, so it may neither be prefetched nor overtake it
    g = new_graph("move", dtype="int8")
    add_tensor(g, "x", (1, 64), kind="input")
    add_operator(g, "a", "relu", inputs=["x"], outputs={"y": (1, 64)})
    add_operator(g, "b", "relu", inputs=["y"], outputs={"z": (1, 64)})
    residencies = [
        Residency("x", "x", 0, 1, 64), Residency("y", "y", 0, 1, 64), Residency("y#1", "y", 1, 2, 64),
        Residency("z", "z", 1, 2, 64),
    ]
    transfers = [
        Transfer("load", "x", "x", 0, 64), Transfer("spill", "y", "y", 1, 64),
        Transfer("retrieve", "y", "y#1", 1, 64), Transfer("store", "z", "z", 2, 64),
    ]
    offsets = {"x": 0, "y": 64, "y#1": 128, "z": 0}
    schedule = Schedule(["a", "b"], residencies, transfers, capacity=256, alignment=64, offsets=offsets)
    result = simulate(g, schedule, None, toy_hw())
    timing = {t.kind: (t.start_cycle, t.end_cycle, t.prefetched) for t in result.transfers}
    # load x [0, 11); a [11, 15); spill y [15, 26); retrieve y#1 [26, 37); b [37, 41); store z [41, 52)
    assert timing == {"load": (0, 11, False), "spill": (15, 26, False), "retrieve": (26, 37, False),
                      "store": (41, 52, False)}
    assert result.cycles == 52


def test_memory_timeline_returns_to_empty(toy_hw):
    graph, schedule = _spill_and_retrieve()
    result = simulate(graph, schedule, None, toy_hw())
    assert result.memory_timeline[-1] == (63, 0, 0)
    assert max(live for _, live, _ in result.memory_timeline) == result.peak_live_bytes == 192


def test_offsets_beyond_the_capacity_are_reported(toy_hw):
    graph, schedule = _fc_relu()
    offsets = dict(schedule.offsets, z=8192)
    result = simulate(graph, schedule, offsets, toy_hw())
    assert result.memory_check == "step 1 (cycle 89): residency 'z' [8192, 8256) lies outside the memory [0, 8192)"


def test_malformed_schedules_raise_simulation_error(toy_hw):
    graph, schedule = _fc_relu()
    with pytest.raises(SimulationError, match="residency 'y' has no offset"):
        simulate(graph, schedule, {"x": 0, "w": 64, "z": 0}, toy_hw())
    wrong_step = schedule.with_offsets(schedule.offsets)
    wrong_step.transfers[2] = Transfer("store", "z", "z", 1, 64)
    with pytest.raises(SimulationError, match="store of residency 'z' at step 1"):
        simulate(graph, wrong_step, None, toy_hw())
    unknown = schedule.with_offsets(schedule.offsets)
    unknown.transfers.append(Transfer("load", "q", "q", 0, 64))
    with pytest.raises(SimulationError, match="unknown residency 'q'"):
        simulate(graph, unknown, None, toy_hw())
    unplaced = schedule.with_offsets(schedule.offsets)
    unplaced.offsets = None
    with pytest.raises(SimulationError, match="no offsets"):
        simulate(graph, unplaced, None, toy_hw())


# ------------------------------------------------------------------------------------------
# a real schedule with one offset corrupted


@pytest.fixture
def scheduled_chain(chain_graph):
    graph = chain_graph()
    schedule = scheduler.baseline.schedule(graph, 3072, alignment=64)
    assert any(t.kind == "spill" for t in schedule.transfers), "the budget should force spills"
    return graph, schedule


def test_valid_schedule_simulates_cleanly(scheduled_chain, toy_hw):
    graph, schedule = scheduled_chain
    hw = toy_hw(sram_bytes_per_pe=3072)
    result = simulate(graph, schedule, None, hw)
    assert result.memory_check == "ok"
    assert result.peak_bytes <= 3072
    assert len(result.ops) == len(schedule.order)
    assert result.dram_read_bytes == schedule.read_bytes
    assert result.dram_write_bytes == schedule.write_bytes
    assert result.noncompulsory_bytes == schedule.noncompulsory_bytes > 0


def test_corrupted_offset_is_caught_at_the_step_it_starts(scheduled_chain, toy_hw):
    graph, schedule = scheduled_chain
    offsets = dict(schedule.offsets)
    # victim: a residency that starts while another (holder) is live and is no larger, so its
    # new range lies inside the holder's and overlaps nothing else
    victim, holder = next(
        (b, a) for a in schedule.residencies for b in schedule.residencies
        if a.start < b.start < a.end and b.size <= a.size
    )
    offsets[victim.id] = offsets[holder.id]
    assert not validate(schedule.problem(), Solution(offsets)).ok
    result = simulate(graph, schedule, offsets, toy_hw(sram_bytes_per_pe=3072))
    lo = offsets[holder.id]
    assert result.violation is not None
    assert result.violation.step == victim.start
    assert result.memory_check.startswith(f"step {victim.start} (cycle ")
    assert f"residency {victim.id!r} [{lo}, {lo + victim.size}) overlaps live residency {holder.id!r}" \
        in result.memory_check
    # the simulation stops there
    assert len(result.ops) == victim.start
    with pytest.raises(MemoryViolation) as info:
        simulate(graph, schedule, offsets, toy_hw(sram_bytes_per_pe=3072), raise_on_violation=True)
    assert (info.value.residency, info.value.other, info.value.step) == (victim.id, holder.id, victim.start)


# ------------------------------------------------------------------------------------------
# DMA channels sharing the DRAM link, prefetch depth, the scratchpad's bandwidth, energy


def test_dram_link_shares_bandwidth_fairly():
    import simpy

    from accelsim.sim import DramLink

    env = simpy.Environment()
    link = DramLink(env, bytes_per_cycle=10)
    ends = {}

    def mover(name, start, nbytes):
        yield env.timeout(start)
        yield link.transfer(nbytes)
        ends[name] = env.now

    env.process(mover("a", 0, 100))
    env.process(mover("b", 4, 50))
    env.run(until=100)
    # a alone moves 40 B by cycle 4; then 5 B/cycle each: b's 50 B take 10 cycles (ends at 14),
    # a has 10 B left, alone again: one more cycle. 150 B at 10 B/cycle = 15 cycles in all.
    assert ends == {"b": 14, "a": 15}
    assert link.busy_cycles == 15


def _two_weights():
    g = new_graph("two_w", dtype="int8")
    add_tensor(g, "w0", (64, 64), kind="weight")
    add_tensor(g, "w1", (64, 64), kind="weight")
    add_operator(g, "mix", "add", inputs=["w0", "w1"], outputs={"y": (1, 64)})
    g.graph["outputs"] = ["y"]
    g.graph["tensors"]["y"]["kind"] = "output"
    residencies = [Residency("w0", "w0", 0, 1, 4096), Residency("w1", "w1", 0, 1, 4096), Residency("y", "y", 0, 1, 64)]
    transfers = [Transfer("load", "w0", "w0", 0, 4096), Transfer("load", "w1", "w1", 0, 4096),
                 Transfer("store", "y", "y", 1, 64)]
    offsets = {"w0": 0, "w1": 4096, "y": 8192}
    return g, Schedule(["mix"], residencies, transfers, capacity=1 << 14, alignment=64, offsets=offsets)


def test_dma_channels_overlap_their_latencies_and_share_the_bandwidth(toy_hw):
    graph, schedule = _two_weights()
    one = simulate(graph, schedule, None, toy_hw())
    # one channel: 10 + 64 cycles each, back to back
    assert [(t.start_cycle, t.end_cycle, t.channel) for t in one.transfers[:2]] == [(0, 74, 0), (74, 148, 0)]
    two = simulate(graph, schedule, None, toy_hw(dma={"channels": 2}))
    # two channels: both pay their latency at once, then move 32 B/cycle each: 10 + 128
    assert sorted((t.start_cycle, t.end_cycle, t.channel) for t in two.transfers[:2]) == [(0, 138, 0), (0, 138, 1)]
    assert two.ops[0].start_cycle == 138 and two.ops[0].dma_stall_cycles == 138
    assert one.dram_read_bytes == two.dram_read_bytes == 8192


def _three_steps():
    """fc0 computes long; relu1 is short; fc2 needs w2, whose range is free from the start."""
    g = new_graph("three", dtype="int8")
    add_tensor(g, "x", (1, 64), kind="input")
    add_tensor(g, "w0", (64, 64), kind="weight")
    add_tensor(g, "w2", (64, 64), kind="weight")
    add_operator(g, "fc0", "linear", inputs=["x", "w0"], outputs={"y": (1, 64)}, macs=1024 * 200)
    add_operator(g, "relu1", "relu", inputs=["y"], outputs={"z": (1, 64)})
    add_operator(g, "fc2", "linear", inputs=["z", "w2"], outputs={"out": (1, 64)}, macs=4096)
    g.graph["outputs"] = ["out"]
    g.graph["tensors"]["out"]["kind"] = "output"
    residencies = [
        Residency("x", "x", 0, 1, 64), Residency("w0", "w0", 0, 1, 4096), Residency("y", "y", 0, 2, 64),
        Residency("z", "z", 1, 3, 64), Residency("w2", "w2", 2, 3, 4096), Residency("out", "out", 2, 3, 64),
    ]
    transfers = [Transfer("load", "x", "x", 0, 64), Transfer("load", "w0", "w0", 0, 4096),
                 Transfer("load", "w2", "w2", 2, 4096), Transfer("store", "out", "out", 3, 64)]
    offsets = {"x": 0, "w0": 64, "y": 4160, "z": 4224, "w2": 4288, "out": 0}
    return g, Schedule(["fc0", "relu1", "fc2"], residencies, transfers, capacity=1 << 14, alignment=64,
                       offsets=offsets)


def test_an_earlier_issue_step_loads_further_ahead(toy_hw):
    graph, schedule = _three_steps()
    timings = {}
    for depth in (0, 1, 2):  # w2 (needed at step 2) issued ``depth`` steps early
        early = [replace(r, start=2 - depth) if r.id == "w2" else r for r in schedule.residencies]
        fills = [replace(t, issue_step=2 - depth) if t.residency == "w2" else t for t in schedule.transfers]
        result = simulate(graph, replace(schedule, residencies=early, transfers=fills), None, toy_hw())
        assert result.ok
        w2 = next(t for t in result.transfers if t.tensor == "w2")
        timings[depth] = (w2.prefetched, w2.start_cycle, result.ops[2].start_cycle, result.cycles)
    # fc0 runs [85, 285), relu1 [285, 289); w2 takes 74 cycles
    assert timings[0] == (False, 289, 363, 378)  # loaded at its own boundary
    assert timings[1] == (True, 285, 359, 374)  # issued at the boundary before relu1
    assert timings[2] == (True, 85, 289, 304)  # issued with fc0's loads: hidden behind its compute


def test_prefetch_waits_for_the_range_to_be_freed(toy_hw):
    graph, schedule = _three_steps()
    # give w2 the range of y, which lives [0, 2) (z moves out of the way): the load may start
    # only once y dies at the boundary of step 2, whatever the depth
    offsets = dict(schedule.offsets, w2=4160, z=8256)
    moved = schedule.with_offsets(offsets)
    assert validate(moved.problem(), Solution(offsets)).ok
    result = simulate(graph, moved, None, toy_hw(dma={"prefetch_depth": 4}))
    assert result.ok
    w2 = next(t for t in result.transfers if t.tensor == "w2")
    assert not w2.prefetched and w2.start_cycle == result.ops[1].end_cycle


def test_a_range_claimed_by_an_earlier_step_blocks_a_deeper_prefetch(toy_hw):
    # a: x -> y; b: (y, w1) -> z; c: (z, w) -> out. w1 (step 1) covers [0, 128), where x lives
    # during a; w (step 2) covers [64, 128), free during a. With depth 2 w must still not be
    # loaded during a: w1 takes that range first.
    g = new_graph("claim", dtype="int8")
    add_tensor(g, "x", (1, 64), kind="input")
    add_tensor(g, "w1", (1, 128), kind="weight")
    add_tensor(g, "w", (1, 64), kind="weight")
    add_operator(g, "a", "relu", inputs=["x"], outputs={"y": (1, 64)})
    add_operator(g, "b", "mul", inputs=["y", "w1"], outputs={"z": (1, 64)})
    add_operator(g, "c", "add", inputs=["z", "w"], outputs={"out": (1, 64)})
    g.graph["outputs"] = ["out"]
    g.graph["tensors"]["out"]["kind"] = "output"
    residencies = [
        Residency("x", "x", 0, 1, 64), Residency("y", "y", 0, 2, 64), Residency("w1", "w1", 1, 2, 128),
        Residency("z", "z", 1, 3, 64), Residency("w", "w", 2, 3, 64), Residency("out", "out", 2, 3, 64),
    ]
    transfers = [Transfer("load", "x", "x", 0, 64), Transfer("load", "w1", "w1", 1, 128),
                 Transfer("load", "w", "w", 2, 64), Transfer("store", "out", "out", 3, 64)]
    offsets = {"x": 0, "y": 256, "w1": 0, "z": 320, "w": 64, "out": 384}
    schedule = Schedule(["a", "b", "c"], residencies, transfers, capacity=512, alignment=64, offsets=offsets)
    assert validate(schedule.problem(), Solution(offsets)).ok
    result = simulate(g, schedule, None, toy_hw(dma={"prefetch_depth": 2}))
    assert result.ok, result.memory_check
    w = next(t for t in result.transfers if t.tensor == "w")
    assert w.start_cycle >= result.ops[1].end_cycle  # w1 holds the range until b ends


def test_sram_bandwidth_makes_an_operator_memory_bound(toy_hw):
    graph, schedule = _fc_relu()
    fast = simulate(graph, schedule, None, toy_hw())
    slow = simulate(graph, schedule, None, toy_hw(sram_bandwidth_bytes_per_cycle=16))
    # relu reads y (64 B) and writes z (64 B): 8 cycles at 16 B/cycle, against 4 of compute
    relu = slow.ops[1]
    assert (relu.compute_cycles, relu.sram_stall_cycles, relu.end_cycle - relu.start_cycle) == (4, 4, 8)
    # fc streams x, w and y (4224 B): 264 cycles instead of 4
    assert slow.ops[0].sram_stall_cycles == 264 - 4
    assert slow.stall_cycles["sram_bandwidth"] == 260 + 4
    assert fast.stall_cycles["sram_bandwidth"] == 0
    assert slow.cycles == fast.cycles + 264


def test_energy_by_hand(toy_hw):
    graph, schedule = _fc_relu()
    result = simulate(graph, schedule, None, toy_hw())
    pj = 1e-12
    fc, relu = result.ops
    # fc: 4096 MACs x 1 pJ; streams x, w, y (4224 B) and receives the loads of x and w (4160 B) at 2 pJ/B;
    # those loads cross DRAM at 10 pJ/B. relu: 64 elements x 0.5 pJ; streams 128 B and hands the
    # store of z (64 B) to DRAM.
    assert fc.energy["compute"] == pytest.approx(4096 * pj)
    assert fc.energy["sram"] == pytest.approx((4224 + 4160) * 2 * pj)
    assert fc.energy["dram"] == pytest.approx(4160 * 10 * pj)
    assert relu.energy["compute"] == pytest.approx(32 * pj)
    assert relu.energy["sram"] == pytest.approx((128 + 64) * 2 * pj)
    assert relu.energy["dram"] == pytest.approx(640 * pj)
    for key in ("compute", "sram", "dram", "total"):
        assert result.energy[key] == pytest.approx(fc.energy[key] + relu.energy[key])
    assert result.energy["total"] == pytest.approx(result.energy["compute"] + result.energy["sram"]
                                                   + result.energy["dram"])
    assert result.energy["dram"] == pytest.approx((result.dram_read_bytes + result.dram_write_bytes) * 10 * pj)


def test_utilization_and_ideal_cycles(toy_hw):
    graph, schedule = _fc_relu()
    result = simulate(graph, schedule, None, toy_hw())
    assert result.macs == 4096 and result.ideal_cycles == 4 + 4
    assert result.utilization == pytest.approx(4096 / (104 * 1024))
    assert result.ops[0].utilization == 1.0 and result.events > 0


# ------------------------------------------------------------------------------------------
# property: any valid placement simulates cleanly whatever the DMA configuration


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_ops=st.integers(3, 18), seed=st.integers(0, 10_000), slack=st.floats(1.0, 2.0),
       channels=st.integers(1, 4), depth=st.integers(0, 4), method=st.sampled_from([None, "best-fit", "minimalloc"]),
       sram_bandwidth=st.sampled_from([8, 64, 1 << 20]))
def test_valid_placements_never_violate_memory_with_any_dma_setting(n_ops, seed, slack, channels, depth, method,
                                                                    sram_bandwidth, toy_hw):
    """Every placement that ``allocator.core.validate`` accepts, with the load timing planned over it
    (prefetch windows grown into the room it leaves, up to ``depth`` steps), must simulate without a
    memory violation, move exactly the schedule's bytes, and never finish before the operators' own
    cycles allow."""
    import allocator
    from frontend.synthetic import random_dag
    from scheduler.load_timing import DmaModel, plan_load_timing

    graph = random_dag(n_ops, seed=seed, max_size=512)
    need, _ = scheduler.min_capacity(graph, alignment=64)
    schedule = scheduler.baseline.schedule(graph, int(need * slack) // 64 * 64 + 64, alignment=64)
    offsets = dict(schedule.offsets)
    if method is not None:
        result = allocator.solve(schedule.problem(), method=method, timeout=5)
        if not result.solved:
            return
        offsets = dict(result.solution.offsets)
    assert validate(schedule.problem(), Solution(offsets)).ok
    hw = toy_hw(sram_bytes_per_pe=schedule.capacity, sram_bandwidth_bytes_per_cycle=sram_bandwidth,
                dma={"channels": channels, "prefetch_depth": depth})
    schedule = plan_load_timing(schedule.with_offsets(offsets), [1] * len(schedule.order), DmaModel(0.5),
                                lookahead=depth)
    offsets = dict(schedule.offsets)
    assert validate(schedule.problem(), Solution(offsets)).ok
    result = simulate(graph, schedule, offsets, hw)
    assert result.memory_check == "ok", result.memory_check
    assert result.dram_read_bytes == schedule.read_bytes and result.dram_write_bytes == schedule.write_bytes
    assert result.cycles >= sum(o.end_cycle - o.start_cycle for o in result.ops)
    assert [o.name for o in result.ops] == schedule.order
    starts = [o.start_cycle for o in result.ops]
    assert starts == sorted(starts)
    for o in result.ops:  # the split of each DMA wait: two parts, neither negative
        assert 0 <= o.dma_bandwidth_stall_cycles <= o.dma_stall_cycles
        assert o.dma_bandwidth_stall_cycles + o.dma_late_stall_cycles == o.dma_stall_cycles


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_ops=st.integers(3, 18), seed=st.integers(0, 10_000), slack=st.floats(1.0, 4.0),
       channels=st.integers(1, 3), bytes_per_cycle=st.sampled_from([0.25, 2.0, 64.0]), lookahead=st.integers(0, 6))
def test_fills_are_issued_exactly_at_their_planned_steps(n_ops, seed, slack, channels, bytes_per_cycle, lookahead,
                                                        toy_hw):
    """Whatever issue steps the planner chooses, the placement simulates cleanly, and each fill is
    queued at its issue step's boundary: after the operator before it ends, before its issue operator starts."""
    from frontend.synthetic import random_dag
    from scheduler.load_timing import DmaModel, plan_load_timing

    graph = random_dag(n_ops, seed=seed, max_size=512)
    need, _ = scheduler.min_capacity(graph, alignment=64)
    schedule = scheduler.baseline.schedule(graph, int(need * slack) // 64 * 64 + 64, alignment=64)
    planned = plan_load_timing(schedule, [7] * len(schedule.order), DmaModel(bytes_per_cycle), lookahead=lookahead)
    assert scheduler.check_schedule(graph, planned) == []
    hw = toy_hw(sram_bytes_per_pe=schedule.capacity, dma={"channels": channels})
    result = simulate(graph, planned, None, hw)
    assert result.memory_check == "ok", result.memory_check
    assert result.dram_read_bytes == schedule.read_bytes
    issue = {t.residency: t.issued_at for t in planned.transfers if t.to_chip}
    for t in result.transfers:
        if not t.to_chip:
            continue
        step = issue[t.residency]
        assert t.prefetched == (step < t.step)
        assert step == 0 or t.queued_cycle >= result.ops[step - 1].end_cycle
        assert t.queued_cycle <= result.ops[step].start_cycle


def test_the_package_exports_the_names_the_repository_imports():
    import accelsim
    import accelsim.sim as sim
    from accelsim.sim.results import OpRecord, SimResult, TransferRecord

    assert (sim.OpRecord, sim.TransferRecord, sim.SimResult) == (OpRecord, TransferRecord, SimResult)
    for name in ("MemoryViolation", "Scratchpad", "SimResult", "SimulationError", "simulate"):
        assert getattr(accelsim, name) is getattr(sim, name)
    assert all(hasattr(sim, name) for name in sim.__all__)

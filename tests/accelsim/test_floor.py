"""No run is faster than its floor (``accelsim.sim.results`` defines it), and the floor a report
carries is the one its own records give.

Each term is recomputed here from what the report measured, not by the code that fills it: the
compute term from every operator's record (its mapped cycles plus its SRAM stall, and again from
the cycles it held the array), the DRAM term in exact rational arithmetic from the report's DRAM
bytes and the bandwidth and clock of its ``hw_config``. Random synthetic graphs run on both
bundled configs with the scratchpad, the DRAM and SRAM bandwidths, the DMA channels and the DRAM
latency varied; two tiny chains check the numbers by hand, one on each side of the floor.
"""

from __future__ import annotations

import math
from fractions import Fraction

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scheduler
from accelsim import compile_and_simulate, load_hw
from accelsim.hw import HardwareConfig
from accelsim.pipeline import tensor_shares
from accelsim.report import format_summary
from accelsim.results import SimReport
from frontend import synthetic


def recomputed_compute_term(report: SimReport) -> int:
    """The operators' stall-free cycles summed from their records: mapped cycles plus the SRAM stall."""
    return sum(o["compute_cycles"] + o["stall_cycles"]["sram_bandwidth"] for o in report.ops)


def recomputed_dram_term(report: SimReport) -> int:
    """ceil(DRAM bytes x clock / bandwidth), exactly, from the report's bytes and its ``hw_config``."""
    config = report.to_dict()["hw_config"]
    moved = Fraction(report.dram_read_bytes + report.dram_write_bytes)
    return math.ceil(moved * Fraction(config["clock_hz"]) / Fraction(config["dram_bandwidth_bytes_per_s"]))


def check_floor(report: SimReport) -> None:
    """The floor's record agrees with the report's own numbers, and the run is not below it."""
    floor = report.floor_cycles
    compute, dram = recomputed_compute_term(report), recomputed_dram_term(report)
    assert (floor["compute"], floor["dram"]) == (compute, dram)
    assert floor["cycles"] == max(compute, dram)
    assert floor["bound"] == ("compute" if compute >= dram else "dram")
    # the operators ran one at a time: each held the array for exactly its stall-free cycles
    assert sum(o["end_cycle"] - o["start_cycle"] for o in report.ops) == compute
    # the run is never below the floor; the compute term plus the DMA waits between operators is
    # when the last operator ended, which the run cannot beat either
    assert report.cycles >= floor["cycles"] > 0
    assert report.cycles >= compute + sum(o["stall_cycles"]["dma_wait"] for o in report.ops)
    assert report.cycles_over_floor == pytest.approx(report.cycles / floor["cycles"])
    assert report.cycles_over_floor >= 1.0
    # the same numbers as the simulation result's
    assert report.sim is not None
    assert (report.sim.floor_cycles, report.sim.floor_bound) == (floor["cycles"], floor["bound"])
    # and the DRAM bytes the term counts are the bytes the transfers moved
    assert sum(t.chip_bytes for t in report.sim.transfers) == report.dram_read_bytes + report.dram_write_bytes


@st.composite
def graphs(draw: st.DrawFn) -> nx.DiGraph:
    """A small synthetic graph: a chain, a random DAG, a diamond or residual blocks."""
    kind = draw(st.sampled_from(["chain", "random_dag", "diamond", "residual_block"]))
    size = draw(st.integers(64, 8192))
    if kind == "chain":
        return synthetic.chain(draw(st.integers(1, 8)), size=size,
                               weight_size=draw(st.none() | st.integers(1, 8192)))
    if kind == "random_dag":
        return synthetic.random_dag(draw(st.integers(2, 12)), seed=draw(st.integers(0, 10_000)),
                                    max_size=size, max_inputs=draw(st.integers(1, 3)))
    if kind == "diamond":
        return synthetic.diamond(draw(st.integers(1, 4)), size=size)
    return synthetic.residual_block(draw(st.integers(1, 3)), size=size, inner_ops=draw(st.integers(1, 3)))


@st.composite
def hardware(draw: st.DrawFn) -> HardwareConfig:
    """A bundled config with its DRAM bandwidth (whole bytes per cycle, or the config's own),
    DRAM latency, DMA channels and scratchpad bandwidth drawn."""
    base = load_hw(draw(st.sampled_from(["pixel6", "tpuv4"])))
    overrides: dict[str, object] = {
        "dram_latency_cycles": draw(st.sampled_from([0, 1, 37, 150, 2000])),
        "dma.channels": draw(st.integers(1, 6)),
        "sram_bandwidth_bytes_per_cycle": draw(st.sampled_from([1, 3, 64, base.sram_bandwidth_bytes_per_cycle])),
    }
    per_cycle = draw(st.none() | st.integers(1, 4096))  # None: the config's own (not a whole number)
    if per_cycle is not None:
        overrides["dram_bandwidth_bytes_per_s"] = per_cycle * base.clock_hz
    return load_hw(base, overrides=overrides)


@settings(max_examples=25, deadline=None)
@given(graph=graphs(), hw=hardware(), data=st.data())
def test_no_run_is_below_its_floor(graph, hw, data):
    sizes = tensor_shares(graph, hw)
    need, _ = scheduler.min_capacity(graph, sizes=sizes, alignment=hw.alignment)
    no_spill = scheduler.no_spill_capacity(graph, sizes=sizes, alignment=hw.alignment)
    # from M_R (spills and retrieves) to a little above the capacity that needs none
    sram = data.draw(st.integers(need, max(need, no_spill + no_spill // 4)), label="sram")
    report = compile_and_simulate(graph, hw=hw, sram=sram)
    assert report.ok
    check_floor(report)


def test_a_dram_bound_chain_by_hand(toy_hw):
    # three linear operators of 4,096 MACs on the toy config's ideal 1,024-MAC array: 4 cycles each,
    # streaming 12 KiB (input, weight, output) at 1 MiB per cycle takes 1. The run reads x and the
    # three weights (16 KiB) and writes t2 (4 KiB): 20,480 bytes at 64 bytes per cycle are 320
    report = compile_and_simulate(synthetic.chain(3, size=4096), hw=toy_hw())
    assert report.floor_cycles == {"cycles": 320, "compute": 12, "dram": 320, "bound": "dram"}
    check_floor(report)
    assert "× the floor 320 (DRAM-bound; compute alone 12)" in format_summary(report)


def test_a_compute_bound_chain_by_hand(toy_hw):
    # the same chain with the scratchpad streaming 16 bytes per cycle: each operator's 12,288 bytes
    # take 768 cycles, longer than its 4 of compute, so the floor is 3 x 768 (the SRAM stall is part
    # of an operator's stall-free cycles); the DRAM term stays 20,480 / 64 = 320
    report = compile_and_simulate(synthetic.chain(3, size=4096), hw=toy_hw(sram_bandwidth_bytes_per_cycle=16))
    assert report.floor_cycles == {"cycles": 2304, "compute": 2304, "dram": 320, "bound": "compute"}
    assert [o["stall_cycles"]["sram_bandwidth"] for o in report.ops] == [764, 764, 764]
    check_floor(report)
    ratio = report.cycles / 2304
    assert f"{ratio:.2f}× the floor 2,304 (compute-bound; DRAM alone 320)" in format_summary(report)


def test_a_dram_term_that_is_not_a_whole_number_of_cycles_rounds_up(toy_hw):
    # 20,480 bytes at 48 bytes per cycle: 426.67 cycles, so the link needs 427
    report = compile_and_simulate(synthetic.chain(3, size=4096), hw=toy_hw(dram_bandwidth_bytes_per_s=48e9))
    assert report.floor_cycles["dram"] == 427 and report.floor_cycles["bound"] == "dram"
    check_floor(report)

"""The load-timing stage in the flow: more SRAM never costs cycles, and loads go as early as the room allows."""

from __future__ import annotations

import pytest

import scheduler
from accelsim.pipeline import compile_and_simulate
from frontend.synthetic import chain, random_dag, residual_block

GRAPHS = {"conv chain": None, "linear chain": lambda: chain(10, size=2048, weight_size=8192),
          "residual": lambda: residual_block(3, 4096), "dag 1": lambda: random_dag(16, seed=1, max_size=8192),
          "dag 5": lambda: random_dag(16, seed=5, max_size=8192)}
FACTORS = (1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 8.0)


def _graph(name, chain_graph):
    return chain_graph() if GRAPHS[name] is None else GRAPHS[name]()


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_cycles_never_rise_as_the_sram_grows(name, chain_graph, toy_hw):
    # One DMA channel: the planner's timeline (one transfer at a time at the full rate) is the
    # simulator's. With several, an early load shares the link fairly with the one needed now and
    # can delay it: a few cycles' rise is possible there (docs/concepts/load-timing.md).
    graph = _graph(name, chain_graph)
    hw = toy_hw(dram_bandwidth_bytes_per_s=8e9, dma={"channels": 1, "prefetch_depth": 64})
    need, _ = scheduler.min_capacity(graph, alignment=hw.alignment)
    reports = [compile_and_simulate(graph, hw, sram=int(need * f) // 64 * 64 + 64) for f in FACTORS]
    assert all(r.memory_check == "ok" for r in reports)
    cycles = [r.cycles for r in reports]
    assert cycles == sorted(cycles, reverse=True), cycles
    assert cycles[-1] < cycles[0]  # the room is used: loads overlap compute


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_prefetch_depth_zero_issues_every_load_at_its_own_boundary_and_is_never_faster(name, chain_graph, toy_hw):
    graph = _graph(name, chain_graph)
    slow = toy_hw(dram_bandwidth_bytes_per_s=8e9, dma={"prefetch_depth": 0})
    ahead = toy_hw(dram_bandwidth_bytes_per_s=8e9, dma={"prefetch_depth": 64})
    none = compile_and_simulate(graph, slow, sram=1 << 20)
    some = compile_and_simulate(graph, ahead, sram=1 << 20)
    assert none.cycles >= some.cycles
    assert none.stall_cycles["dma_wait"] > some.stall_cycles["dma_wait"]

"""``simulate``: check the inputs, build the machine's agents, run it and measure it.

The agents (``accelsim.sim`` lists them) are made in one place, here, each handed the others
it talks to: the DRAM link, the DMA engines that move data over it, the compute array, the
scratchpad, and the driver that walks the schedule using all of them. The run steps SimPy's
clock until the driver has handed out the last operator and the last write-backs are done, or
until a memory violation stops it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

import simpy

from accelsim.sim.compute_array import ComputeArray
from accelsim.sim.dma import DmaEngines
from accelsim.sim.dram import DramLink
from accelsim.sim.driver import Driver
from accelsim.sim.inputs import SimulationError, check_inputs
from accelsim.sim.results import SimResult, with_energy, with_wait_split
from accelsim.sim.scratchpad import MemoryViolation, Scratchpad

if TYPE_CHECKING:
    import networkx as nx

    from accelsim.hw import HardwareConfig
    from scheduler.schedule import Schedule


def simulate(
    graph: nx.DiGraph, schedule: Schedule, offsets: Mapping[str, int] | None, hw: HardwareConfig,
    *, capacity: int | None = None, raise_on_violation: bool = False,
) -> SimResult:
    """Run ``schedule`` with residencies at ``offsets`` on ``hw`` and measure it.

    ``offsets`` defaults to ``schedule.offsets``; ``capacity`` (bytes of the scratchpad, per PE
    on ``per_pe`` targets) defaults to ``schedule.capacity``. Each load/retrieve is issued at its
    ``Transfer.issue_step`` (its residency's start), as the scheduler planned it
    (``scheduler.load_timing``); the simulator never moves one. A memory violation stops the
    run and is reported in ``memory_check`` (or raised with ``raise_on_violation=True``); inputs
    that do not fit together raise ``SimulationError``.
    """
    if offsets is None:
        if schedule.offsets is None:
            raise SimulationError("no offsets given and the schedule has none")
        offsets = schedule.offsets
    index = check_inputs(graph, schedule, offsets)
    from frontend.graph import dtype_bytes  # the format module only: no torch

    env = simpy.Environment()
    dma = DmaEngines(env, DramLink(env, hw.dram_bytes_per_cycle), hw)
    array = ComputeArray(env, hw, dtype_bytes(str(graph.graph.get("dtype", "int8"))))
    pad = Scratchpad(schedule.capacity if capacity is None else capacity, schedule.alignment)
    driver = Driver(env, graph, schedule.order, index, offsets, pad, dma, array)
    events, violation = _run(env, driver, raise_on_violation)
    return _result(graph, hw, env, driver, violation, events)


def _run(env: simpy.Environment, driver: Driver, raise_on_violation: bool) -> tuple[int, MemoryViolation | None]:
    """Step the clock until the driver and its last write-backs are done: the events processed, and
    the memory violation that stopped the run (raised instead with ``raise_on_violation``)."""
    events = 0
    try:
        # step by step rather than env.run(): the DRAM link's process never ends, and the
        # number of events processed is reported
        while not driver.process.triggered and env.peek() != math.inf:
            env.step()
            events += 1
        if driver.process.triggered and not driver.process.ok:
            raise cast(BaseException, driver.process.value)
        # the write-backs queued at the last boundary
        while driver.draining and env.peek() != math.inf:
            env.step()
            events += 1
    except MemoryViolation as exc:
        if raise_on_violation:
            raise
        return events, exc
    return events, None


def _result(
    graph: nx.DiGraph, hw: HardwareConfig, env: simpy.Environment, driver: Driver, violation: MemoryViolation | None,
    events: int,
) -> SimResult:
    """The measurements of a finished (or stopped) run, with its floor (``accelsim.sim.results``)."""
    transfers = sorted(driver.dma.records, key=lambda t: (t.start_cycle, t.end_cycle))
    read = sum(t.chip_bytes for t in transfers if t.to_chip)
    write = sum(t.chip_bytes for t in transfers if not t.to_chip)
    compulsory = sum(t.chip_bytes for t in transfers if t.compulsory)
    ops = with_wait_split(with_energy(graph, driver.ops, driver.costs, transfers, hw.energy), transfers,
                          hw.dram_bytes_per_cycle, hw.dram_latency_cycles)
    cycles = max([env.now] + [t.end_cycle for t in transfers])
    macs = sum(o.macs for o in ops)
    energy = {k: sum(o.energy.get(k, 0.0) for o in ops) for k in ("compute", "sram", "dram")}
    energy["total"] = energy["compute"] + energy["sram"] + energy["dram"]
    pad = driver.pad
    return SimResult(
        cycles=cycles,
        seconds=hw.seconds(cycles),
        ops=ops,
        transfers=transfers,
        dram_read_bytes=read,
        dram_write_bytes=write,
        compulsory_bytes=compulsory,
        noncompulsory_bytes=read + write - compulsory,
        bytes_by_kind={kind: sum(t.chip_bytes for t in transfers if t.kind == kind)
                       for kind in ("load", "store", "spill", "retrieve")},
        peak_bytes=pad.peak_address,
        peak_live_bytes=pad.peak_live_bytes,
        compute_cycles=sum(o.end_cycle - o.start_cycle for o in ops),
        dma_cycles=driver.dma.busy_cycles,
        memory_timeline=pad.timeline,
        memory_check="ok" if violation is None else str(violation),
        violation=violation,
        macs=macs,
        ideal_cycles=sum(o.ideal_cycles for o in ops),
        floor_compute_cycles=sum(cost.cycles for cost in driver.costs),
        floor_dram_cycles=math.ceil((read + write) / hw.dram_bytes_per_cycle),
        utilization=macs / (cycles * hw.peak_macs_per_cycle) if cycles else 0.0,
        stall_cycles={"dma_wait": sum(o.dma_stall_cycles for o in ops),
                      "sram_bandwidth": sum(o.sram_stall_cycles for o in ops)},
        dma_wait_split={"bandwidth": sum(o.dma_bandwidth_stall_cycles for o in ops),
                        "late": sum(o.dma_late_stall_cycles for o in ops)},
        energy=energy,
        events=events,
    )

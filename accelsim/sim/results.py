"""What a simulation measured: the records of each operator and transfer, the totals, the energy.

**Energy** (picojoules from the config's ``energy`` block, reported in joules): an operator's
compute energy is MACs x ``pj_per_mac`` (elements x ``pj_per_vector_element`` without MACs);
its SRAM energy is the bytes it streams (``OpCost.sram_bytes``) plus the bytes its transfers
write into or read out of the scratchpad, x ``pj_per_sram_byte``; its DRAM energy is the DRAM
bytes of its transfers x ``pj_per_dram_byte``. A transfer belongs to the operator of its step
(a drain after the last operator to the last one): for a load or retrieve, the step of the operator
that needs it; for a store or spill, the step at whose boundary it is issued. The same transfers
give each operator's ``dram_read_bytes`` and ``dram_write_bytes``. Totals are the sums over operators.

**The floor** (``SimResult.floor_cycles``): no run of the same operators moving the same DRAM
bytes on the same hardware can be faster, whatever its schedule's timing. It is the larger of
two terms, each a bound on its own:

* the compute term, ``floor_compute_cycles``: the sum over the operators that ran of their
  stall-free cycles, ``OpCost.cycles`` (``accelsim.compute``: the mapped compute cycles, or the
  scratchpad streaming when that is longer; per operator record, ``compute_cycles +
  sram_stall_cycles``). The compute array runs one operator at a time, so the run takes at least
  their sum; the DMA waits between them are what a run adds on top;
* the DRAM term, ``floor_dram_cycles``: ``ceil((dram_read_bytes + dram_write_bytes) /
  hw.dram_bytes_per_cycle)``, the chip bytes the run moved at the DRAM link's full bandwidth
  (``accelsim.sim.dram``: the transfers in flight share ``dram_bytes_per_cycle``, never more).
  The DMA set-up latency is left out: channels pay it side by side.

A run stopped by a memory violation has the floor of what it ran and moved before it stopped.

**What a DMA wait is made of** (``with_wait_split``). An operator's DMA wait is split in two:

* *bandwidth*: what the DRAM link alone forces. Operator ``s`` cannot start before the bytes of
  every fill needed at steps up to ``s`` have crossed the link, ``latency + ceil(bytes /
  dram_bytes_per_cycle)`` from cycle 0, nor before the operator before it ends. Walking the
  operators with those two rules and their own cycles gives the earliest start any issue
  timing could reach (each transfer issued at cycle 0, the scratchpad unlimited, write-backs
  left out); the bandwidth part of an operator's wait is the wait those rules force on it, at
  most its actual wait;
* *late*: the rest, what loads issued later than that cost: the room in the scratchpad the
  load-timing planner had (``scheduler.load_timing``), ``dma.prefetch_depth``, a range still
  being written back, and set-up latencies paid one after another.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from accelsim.sim.scratchpad import MemoryViolation

if TYPE_CHECKING:
    import networkx as nx

    from accelsim.compute import OpCost
    from accelsim.hw import EnergyConfig

PJ = 1e-12  #: joules per picojoule


@dataclass(frozen=True)
class OpRecord:
    """When one operator ran (cycles) and what it cost."""

    step: int
    name: str
    op: str
    start_cycle: float
    end_cycle: float
    macs: int
    compute_cycles: int  #: mapped cycles on the compute block (``accelsim.compute``)
    ideal_cycles: int  #: MACs / peak MACs per cycle (the bound)
    utilization: float  #: MACs / (compute_cycles x peak MACs per cycle)
    dma_stall_cycles: float  #: cycles between the previous operator's end and this start (waiting for DMA)
    sram_stall_cycles: int  #: cycles beyond compute spent streaming operands (memory-bound)
    sram_bytes: int  #: operand and result bytes streamed to and from the scratchpad
    mapping: str  #: how it was mapped: systolic-ws, systolic-os, lanes, vector, ideal
    folds: int  #: folds (systolic) or passes (lanes)
    energy: dict[str, float] = field(default_factory=dict)  #: joules: compute, sram, dram, total
    #: the part of ``dma_stall_cycles`` the DRAM bandwidth forced (module docstring); the rest is late loads
    dma_bandwidth_stall_cycles: float = 0.0
    dram_read_bytes: int = 0  #: DRAM bytes of the loads and retrieves of its step (chip total; module docstring)
    dram_write_bytes: int = 0  #: DRAM bytes of the stores and spills of its step (chip total)

    @property
    def stall_cycles(self) -> float:
        return self.dma_stall_cycles + self.sram_stall_cycles

    @property
    def dma_late_stall_cycles(self) -> float:
        """The part of ``dma_stall_cycles`` that loads issued late cost (module docstring)."""
        return self.dma_stall_cycles - self.dma_bandwidth_stall_cycles


@dataclass(frozen=True)
class TransferRecord:
    """When one DMA ran (cycles); ``chip_bytes`` is what crossed the DRAM interface."""

    kind: str  #: load, store, spill or retrieve
    tensor: str
    residency: str
    step: int
    nbytes: int  #: on-chip bytes (per PE on per_pe targets)
    chip_bytes: int
    queued_cycle: float
    start_cycle: float  #: when it got a DMA channel
    end_cycle: float
    compulsory: bool
    to_chip: bool
    prefetched: bool  #: issued before its step's boundary, during an earlier operator
    channel: int = 0  #: the DMA channel that carried it (0 .. dma.channels - 1)


@dataclass
class SimResult:
    """What the simulation measured. Byte counts of DRAM traffic are chip totals; energies in joules."""

    cycles: float
    seconds: float
    ops: list[OpRecord]
    transfers: list[TransferRecord]
    dram_read_bytes: int
    dram_write_bytes: int
    compulsory_bytes: int
    noncompulsory_bytes: int
    bytes_by_kind: dict[str, int]  #: DRAM bytes of the loads, stores, spills and retrieves
    peak_bytes: int  #: highest address in use at any moment (per PE on per_pe targets)
    peak_live_bytes: int  #: most bytes allocated at any moment
    compute_cycles: float  #: cycles the compute array was busy (including memory-bound stretches)
    dma_cycles: float  #: cycles at least one DMA channel was busy
    memory_timeline: list[tuple[float, int, int]] = field(repr=False)  #: (cycle, live bytes, highest address)
    memory_check: str = "ok"  #: "ok" or the MemoryViolation message
    violation: MemoryViolation | None = None
    macs: int = 0
    ideal_cycles: int = 0  #: sum of the operators' ideal-bound cycles
    floor_compute_cycles: int = 0  #: the floor's compute term: the operators' stall-free cycles (module docstring)
    floor_dram_cycles: int = 0  #: the floor's DRAM term: the DRAM bytes at full bandwidth (module docstring)
    utilization: float = 0.0  #: MACs / (cycles x peak MACs per cycle), over the whole run
    stall_cycles: dict[str, float] = field(default_factory=dict)  #: by cause: dma_wait, sram_bandwidth
    #: the DMA waits split into what bandwidth forced and what late loads cost (``with_wait_split``)
    dma_wait_split: dict[str, float] = field(default_factory=dict)
    energy: dict[str, float] = field(default_factory=dict)  #: joules: compute, sram, dram, total
    events: int = 0  #: SimPy events processed

    @property
    def ok(self) -> bool:
        return self.violation is None

    @property
    def floor_cycles(self) -> int:
        """The cycles no run of these operators and DRAM bytes can beat: the larger term (module docstring)."""
        return max(self.floor_compute_cycles, self.floor_dram_cycles)

    @property
    def floor_bound(self) -> str:
        """Which term sets the floor: ``"compute"`` (also on a tie) or ``"dram"``."""
        return "compute" if self.floor_compute_cycles >= self.floor_dram_cycles else "dram"


def with_energy(
    graph: nx.DiGraph, ops: list[OpRecord], costs: Sequence[OpCost], transfers: Sequence[TransferRecord],
    energy: EnergyConfig,
) -> list[OpRecord]:
    """The operator records with their energy (joules) and the DRAM bytes of their transfers (module
    docstring); ``costs[i]`` is ``ops[i]``'s cost."""
    if not ops:
        return ops
    read, written = [0] * len(ops), [0] * len(ops)
    for t in transfers:
        (read if t.to_chip else written)[min(t.step, len(ops) - 1)] += t.chip_bytes
    out = []
    for op, cost, loaded, stored in zip(ops, costs, read, written, strict=False):
        moved = loaded + stored
        node = graph.nodes[op.name]
        if op.macs > 0:
            compute = op.macs * energy.pj_per_mac
        else:
            compute = int(node.get("elements", 0)) * energy.pj_per_vector_element
        sram = (cost.sram_bytes + moved) * energy.pj_per_sram_byte
        dram_j = moved * energy.pj_per_dram_byte
        parts = {"compute": compute * PJ, "sram": sram * PJ, "dram": dram_j * PJ}
        parts["total"] = parts["compute"] + parts["sram"] + parts["dram"]
        out.append(replace(op, energy=parts, dram_read_bytes=loaded, dram_write_bytes=stored))
    return out


def with_wait_split(ops: list[OpRecord], transfers: Sequence[TransferRecord], bytes_per_cycle: float,
                    latency: int) -> list[OpRecord]:
    """The operator records with their DMA waits split into bandwidth and late loads (module docstring).

    >>> ops = [OpRecord(0, "a", "relu", 74, 84, 0, 10, 10, 1.0, 74, 0, 0, "ideal", 1),
    ...        OpRecord(1, "b", "relu", 164, 174, 0, 10, 10, 1.0, 80, 0, 0, "ideal", 1)]
    >>> fills = [TransferRecord("load", "x", "x", 0, 64, 64, 0, 0, 74, True, True, False),
    ...          TransferRecord("load", "w", "w", 1, 64, 64, 84, 84, 164, True, True, False)]
    >>> [(o.dma_bandwidth_stall_cycles, o.dma_late_stall_cycles) for o in with_wait_split(ops, fills, 1.0, 10)]
    [(74, 0), (54, 26)]

    ``x`` (64 bytes at 1 byte a cycle after 10 of latency) forces ``a``'s whole wait (74). Both
    loads cross the link by cycle 10 + 128 = 138 at the earliest, while ``a`` could end at 84:
    bandwidth forces 54 cycles of ``b``'s 80; the other 26 are what issuing ``w`` only after ``a``
    (and paying its latency again) cost.
    """
    needed = [0] * len(ops)
    for t in transfers:
        if t.to_chip and t.step < len(ops):
            needed[t.step] += t.chip_bytes
    out = []
    moved = 0
    free_at = 0.0  # when the operator before may have ended at the earliest
    for op, nbytes in zip(ops, needed, strict=True):
        moved += nbytes
        ready = latency + math.ceil(moved / bytes_per_cycle) if moved else 0
        earliest = max(free_at, ready)
        forced = min(op.dma_stall_cycles, earliest - free_at)
        out.append(replace(op, dma_bandwidth_stall_cycles=forced))
        free_at = earliest + (op.end_cycle - op.start_cycle)
    return out

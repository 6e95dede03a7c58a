"""What a simulation measured: the records of each operator and transfer, the totals, the energy.

**Energy** (picojoules from the config's ``energy`` block, reported in joules): an operator's
compute energy is MACs x ``pj_per_mac`` (elements x ``pj_per_vector_element`` without MACs);
its SRAM energy is the bytes it streams (``OpCost.sram_bytes``) plus the bytes its transfers
write into or read out of the scratchpad, x ``pj_per_sram_byte``; its DRAM energy is the DRAM
bytes of its transfers x ``pj_per_dram_byte``. A transfer belongs to the operator of its step
(a drain after the last operator to the last one). Totals are the sums over operators.

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
"""

from __future__ import annotations

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

    @property
    def stall_cycles(self) -> float:
        return self.dma_stall_cycles + self.sram_stall_cycles


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
    """The operator records with their energy (joules, module docstring); ``costs[i]`` is ``ops[i]``'s cost."""
    if not ops:
        return ops
    dram = [0] * len(ops)
    for t in transfers:
        dram[min(t.step, len(ops) - 1)] += t.chip_bytes
    out = []
    for op, cost, moved in zip(ops, costs, dram, strict=False):
        node = graph.nodes[op.name]
        if op.macs > 0:
            compute = op.macs * energy.pj_per_mac
        else:
            compute = int(node.get("elements", 0)) * energy.pj_per_vector_element
        sram = (cost.sram_bytes + moved) * energy.pj_per_sram_byte
        dram_j = moved * energy.pj_per_dram_byte
        parts = {"compute": compute * PJ, "sram": sram * PJ, "dram": dram_j * PJ}
        parts["total"] = parts["compute"] + parts["sram"] + parts["dram"]
        out.append(replace(op, energy=parts))
    return out

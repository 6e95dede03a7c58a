"""The driver: walks the schedule step by step, issuing its transfers and handing operators to the compute array.

It follows the transfer timing convention of ``scheduler/schedule.py``. At the boundary before
step ``s`` (after operator ``s - 1``):

1. residencies ending at ``s`` are drained: a store/spill is queued on the DMA engines and the
   range is freed when it completes (immediately when there is nothing to write back);
2. residencies starting at ``s`` are allocated in the scratchpad and their loads/retrievals
   queued. A fill is issued here, at its residency's start, which is its issue step: the
   scheduler plans when loads go (``scheduler.load_timing``), the driver never moves one. An
   allocation whose range overlaps a range still being drained waits for that drain (the
   convention: a drain must finish before its range is reused), and a fill waits for any
   write-back of the same tensor still in flight (it reads what that write puts in DRAM); one
   that overlaps any other live range is a memory violation, raised at once;
3. operator ``s`` is handed to the compute array when every fill needed at step ``s`` has
   completed, whenever it was issued; the wait is its DMA stall.

The DMA engines serve requests in the order of the steps that need them.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import simpy

from accelsim.sim.results import OpRecord

if TYPE_CHECKING:
    import networkx as nx

    from accelsim.compute import OpCost
    from accelsim.sim.compute_array import ComputeArray
    from accelsim.sim.dma import DmaEngines
    from accelsim.sim.inputs import ScheduleIndex
    from accelsim.sim.scratchpad import Scratchpad
    from scheduler.schedule import Residency, Transfer


class Driver:
    """The schedule's driver; its process (``process``) starts when it is made and ends after the last operator."""

    def __init__(
        self, env: simpy.Environment, graph: nx.DiGraph, order: Sequence[str], index: ScheduleIndex,
        offsets: Mapping[str, int], pad: Scratchpad, dma: DmaEngines, array: ComputeArray,
    ) -> None:
        self.env = env
        self.graph = graph
        self.order = order
        self.index = index
        self.offsets = offsets
        self.pad = pad
        self.dma = dma
        self.array = array
        self.ops: list[OpRecord] = []  #: one per operator run, in order
        self.costs: list[OpCost] = []  #: the cost of each of ``ops``
        self.draining: dict[str, simpy.Process] = {}  #: residency id -> its store/spill, until the range is freed
        self.filling: dict[str, simpy.Process] = {}  # residency id -> its fill, until the step that needs it
        self.process = env.process(self.run())

    def run(self) -> Generator[simpy.Event, Any, None]:
        """The schedule, boundary by boundary (module docstring)."""
        n = len(self.order)
        previous_end = 0.0
        for s in range(n + 1):
            self._drain_ending(s)
            if s == n:
                break
            pending = []
            for r in self.index.starting.get(s, ()):
                allocation = self.env.process(self._fill(r, s))
                if r.id in self.index.fill:  # waited for by the operator that needs it, maybe a later one
                    self.filling[r.id] = allocation
                else:  # made on chip: operator s needs its range
                    pending.append(allocation)
            pending += [self.filling.pop(rid) for rid in self.index.needed.get(s, ())]
            if pending:
                yield self.env.all_of(pending)
            name = self.order[s]
            node = self.graph.nodes[name]
            cost = self.array.cost(self.graph, name)
            start = self.env.now
            yield from self.array.run(cost.cycles)
            self.costs.append(cost)
            self.ops.append(OpRecord(
                s, name, str(node.get("op", "")), start, self.env.now, int(node.get("macs", 0)), cost.compute_cycles,
                cost.ideal_cycles, cost.utilization, start - previous_end, cost.sram_stall_cycles, cost.sram_bytes,
                cost.mapping, cost.folds,
            ))
            previous_end = self.env.now

    # ---- drains

    def _drain_ending(self, step: int) -> None:
        """Free or write back the residencies that end at ``step``."""
        for r in self.index.ending.get(step, ()):
            t = self.index.drain.get(r.id)
            if t is None:
                self._free(r, step)
            else:
                self.draining[r.id] = self.env.process(self._drain(r, t, step))

    def _drain(self, r: Residency, t: Transfer, step: int) -> Generator[simpy.Event, Any, None]:
        yield self.dma.start(t, prefetched=False, priority=step)
        self._free(r, step)
        del self.draining[r.id]

    # ---- fills

    def _allocate(self, r: Residency, step: int) -> None:
        self.pad.allocate(r.id, self.offsets[r.id], r.size, self.env.now, step)

    def _free(self, r: Residency, step: int) -> None:
        self.pad.free(r.id, self.env.now, step)

    def _fill(self, r: Residency, step: int) -> Generator[simpy.Event, Any, None]:
        """Allocate ``r`` at the boundary of ``step``, its start, and load it if it has a fill.

        It waits for the drains of the ranges it overlaps, and a load waits for any write-back
        of the same tensor still in flight (it reads what that write puts in DRAM).
        """
        t = self.index.fill.get(r.id)
        hits = [name for _, _, name in self.pad.conflicts(self.offsets[r.id], r.size)]
        if all(name in self.draining for name in hits):  # otherwise allocating raises at once
            waits = [self.draining[name] for name in hits]
            if t is not None:
                waits += [p for rid, p in self.draining.items() if self.index.residency[rid].tensor == r.tensor]
            if waits:
                yield self.env.all_of(waits)
        self._allocate(r, step)
        if t is not None:
            yield self.dma.start(t, prefetched=t.step > step, priority=t.step)

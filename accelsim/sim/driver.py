"""The driver: walks the schedule step by step, issuing its transfers and handing operators to the compute array.

It follows the transfer timing convention of ``scheduler/schedule.py``. At the boundary before
step ``s`` (after operator ``s - 1``):

1. residencies ending at ``s`` are drained: a store/spill is queued on the DMA engines and the
   range is freed when it completes (immediately when there is nothing to write back);
2. residencies starting at ``s`` are allocated in the scratchpad and their loads/retrievals
   queued, unless issued earlier. An allocation whose range overlaps a range still being
   drained waits for that drain (the convention: a drain must finish before its range is
   reused); one that overlaps any other live range is a memory violation, raised at once;
3. operator ``s`` is handed to the compute array when every fill of step ``s`` has completed;
   the wait is its DMA stall.

**Early fills.** The driver does not decide when a load is issued: each fill has an issue step
``i`` (the schedule's ``Transfer.issue_step``, or ``accelsim.sim.prefetch``'s policy when the
schedule left it unplanned). A fill with ``i < s`` may be issued from the moment operator ``i``
starts; the driver issues it then, or later, as soon as physics allows, checking when an
operator starts and again whenever a drain frees a range:

* its destination range is free: no live residency holds it, and no residency that starts
  earlier (and is not on chip yet) will need it, so an early load never takes a range the
  schedule gives to someone else first;
* no other copy of the tensor is on chip: a retrieval never overtakes the write-back of the
  same tensor (at the boundary it waits for that copy's spill/store to finish).

A fill with ``i == s``, or an early one that never found its range free, is issued at its
boundary (step 2). The DMA engines serve requests in the order of the steps they are for.
"""

from __future__ import annotations

import bisect
from collections import Counter
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
    """The schedule's driver; its process (``process``) starts when it is made and ends after the last operator.

    ``issue_steps`` maps the residency id of every fill to its issue step (``accelsim.sim.prefetch``).
    """

    def __init__(
        self, env: simpy.Environment, graph: nx.DiGraph, order: Sequence[str], index: ScheduleIndex,
        issue_steps: Mapping[str, int], offsets: Mapping[str, int], pad: Scratchpad, dma: DmaEngines,
        array: ComputeArray,
    ) -> None:
        self.env = env
        self.graph = graph
        self.order = order
        self.index = index
        self.issue_steps = issue_steps
        self.offsets = offsets
        self.pad = pad
        self.dma = dma
        self.array = array
        self.ops: list[OpRecord] = []  #: one per operator run, in order
        self.costs: list[OpCost] = []  #: the cost of each of ``ops``
        self.copies_on_chip: Counter[str] = Counter()  # tensor -> its residencies in the scratchpad
        self.draining: dict[str, simpy.Process] = {}  #: residency id -> its store/spill, until the range is freed
        self.prefetched: dict[str, simpy.Process] = {}  # residency id -> its early fill, until its boundary
        self.current = -1  # the step whose operator runs (or ran last)
        self.boundary = -1  # the last step whose residencies the driver has allocated or queued
        # operator step -> steps of the early fills that may be issued from its start
        self._released_at: dict[int, list[int]] = {}
        for rid, issue in issue_steps.items():
            step = index.residency[rid].start
            if issue < step:
                self._released_at.setdefault(issue, []).append(step)
        self._open_steps: list[int] = []  # sorted: steps with a released early fill (pruned to > boundary)
        self.process = env.process(self.run())

    def run(self) -> Generator[simpy.Event, Any, None]:
        """The schedule, boundary by boundary (module docstring)."""
        n = len(self.order)
        previous_end = 0.0
        for s in range(n + 1):
            self._drain_ending(s)
            if s == n:
                break
            self.boundary = s
            pending = []
            for r in self.index.starting.get(s, ()):
                early = self.prefetched.pop(r.id, None)
                pending.append(early if early is not None else self.env.process(self._fill(r, s)))
            if pending:
                yield self.env.all_of(pending)
            name = self.order[s]
            node = self.graph.nodes[name]
            cost = self.array.cost(self.graph, name)
            start = self.env.now
            self.current = s
            self._release(s)
            self._prefetch()
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
        self._prefetch()

    # ---- fills

    def _allocate(self, r: Residency, step: int) -> None:
        self.pad.allocate(r.id, self.offsets[r.id], r.size, self.env.now, step)
        self.copies_on_chip[r.tensor] += 1

    def _free(self, r: Residency, step: int) -> None:
        self.pad.free(r.id, self.env.now, step)
        self.copies_on_chip[r.tensor] -= 1

    def _fill(self, r: Residency, step: int) -> Generator[simpy.Event, Any, None]:
        """Allocate ``r`` at the boundary of ``step`` and load it.

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
            yield self.dma.start(t, prefetched=False, priority=step)

    def _release(self, step: int) -> None:
        """Operator ``step`` starts: the early fills whose issue step it is may go from now on."""
        for fill_step in self._released_at.pop(step, ()):
            i = bisect.bisect_left(self._open_steps, fill_step)
            if i == len(self._open_steps) or self._open_steps[i] != fill_step:
                self._open_steps.insert(i, fill_step)

    def _prefetch(self) -> None:
        """Issue the released early fills whose ranges are free now, earliest step first (module docstring)."""
        # the fills of the steps up to the boundary are the boundary's own (step 2)
        del self._open_steps[:bisect.bisect_right(self._open_steps, self.boundary)]
        first = self.current + 1
        for step in self._open_steps:
            for r in self.index.starting[step]:
                if self.issue_steps.get(r.id, step) > self.current:  # no fill, or not released yet
                    continue
                if r.id in self.prefetched or r.id in self.pad or self.copies_on_chip[r.tensor]:
                    continue
                offset = self.offsets[r.id]
                if not self.pad.is_free(offset, r.size) or self._claimed_earlier(offset, r.size, first, step):
                    continue
                self._allocate(r, step)
                self.prefetched[r.id] = self.dma.start(self.index.fill[r.id], prefetched=True, priority=step)

    def _claimed_earlier(self, offset: int, size: int, first: int, step: int) -> bool:
        """Whether a residency starting in steps ``[first, step)``, not yet on chip, overlaps the range."""
        end = offset + size
        for s in range(first, step):
            for other in self.index.starting.get(s, ()):
                if other.id in self.pad:
                    continue
                lo = self.offsets[other.id]
                if lo < end and offset < lo + other.size:
                    return True
        return False

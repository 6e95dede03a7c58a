"""A SimPy discrete-event model of one accelerator running a scheduled, allocated program.

The machine is a set of agents, each a SimPy process or resource (time unit: one clock cycle;
every event happens on a whole cycle):

* **DRAM link** (``DramLink``) -- the interface's bandwidth, shared fairly by the transfers
  moving data at the same moment (processor sharing): with ``m`` transfers in flight each
  moves ``bytes_per_cycle / m``. Whenever a transfer joins or leaves, the others' remaining
  bytes are brought up to date and the next completion is rescheduled, rounded up to a whole
  cycle (the fraction of a cycle left over is lost, as ``ceil`` lost it before).
* **DMA engines** -- a ``simpy.PriorityResource`` with ``dma.channels`` slots. A transfer holds
  a channel for ``dram_latency_cycles`` (set-up and first access, no bandwidth used) and then
  for its data on the DRAM link. Requests are served in step order: the transfer for an
  earlier operator goes first, ties first come first served. With one channel a transfer
  takes ``latency + ceil(chip_bytes / bytes_per_cycle)`` cycles and transfers never overlap.
  On a ``per_pe`` target a transfer moves the tensor's share to every PE, so its DRAM bytes
  are the per-PE bytes times ``n_pe``.
* **Compute array** -- its own process, fed one operator at a time by the driver through a
  ``simpy.Store``. An operator takes ``accelsim.compute.operator_cost(...).cycles``: the
  mapped cycles on the systolic arrays, lanes or vector unit, or longer when its operands
  cannot stream from the scratchpad fast enough (memory-bound: the difference is its SRAM
  stall).
* **Driver** -- walks the schedule step by step following the transfer timing convention of
  ``scheduler/schedule.py``. At the boundary before step ``s`` (after operator ``s - 1``):

  1. residencies ending at ``s`` are drained: a store/spill is queued on the DMA engines and
     the range is freed when it completes (immediately when there is nothing to write back);
  2. residencies starting at ``s`` are allocated in the scratchpad and their loads/retrievals
     queued. An allocation whose range overlaps a range still being drained waits for that
     drain (the convention: a drain must finish before its range is reused); one that
     overlaps any other live range is a memory violation, raised at once;
  3. operator ``s`` is handed to the compute array when every load of step ``s`` has
     completed; the wait is its DMA stall.

  **Prefetch** (``dma.prefetch_depth`` = d): while operator ``s`` runs, every load/retrieval of
  steps ``s + 1 .. s + d`` is issued as soon as its destination range is free: when the
  operator starts and again whenever a range is freed. A range counts as free only when no
  live residency holds it and no residency that starts earlier (and has not been allocated
  yet) will need it, so an early load never takes a range the schedule gives to someone else
  first. A retrieval never overtakes the write-back of the same tensor: it is not prefetched
  while another copy of the tensor is on chip, and at the boundary it waits for that copy's
  spill/store to finish. ``prefetch_depth: 0`` issues every load at its boundary.

**Energy** (picojoules from the config's ``energy`` block, reported in joules): an operator's
compute energy is MACs x ``pj_per_mac`` (elements x ``pj_per_vector_element`` without MACs);
its SRAM energy is the bytes it streams (``OpCost.sram_bytes``) plus the bytes its transfers
write into or read out of the scratchpad, x ``pj_per_sram_byte``; its DRAM energy is the DRAM
bytes of its transfers x ``pj_per_dram_byte``. A transfer belongs to the operator of its step
(a drain after the last operator to the last one). Totals are the sums over operators.

The scratchpad is a real address map (``Scratchpad``): every allocation is checked at the
simulated moment it happens, and a conflict raises ``MemoryViolation`` naming both residencies,
both ranges, the step and the cycle. ``simulate`` reports it in ``SimResult.memory_check``
(and stops the simulation there) unless asked to raise.

>>> pad = Scratchpad(capacity=1024)
>>> pad.allocate("a", 0, 512, now=0)
>>> pad.allocate("b", 256, 512, now=7, step=3)
Traceback (most recent call last):
...
accelsim.sim.MemoryViolation: step 3 (cycle 7): residency 'b' [256, 768) overlaps live residency 'a' [0, 512)
"""

from __future__ import annotations

import bisect
import math
from collections import Counter, defaultdict
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

import simpy

from accelsim.compute import OpCost, operator_cost
from accelsim.hw import HardwareConfig

if TYPE_CHECKING:
    import networkx as nx

    from scheduler.schedule import Residency, Schedule, Transfer

PJ = 1e-12  #: joules per picojoule


class MemoryViolation(Exception):
    """An allocation that overlaps a live range or leaves the memory, at a simulated moment.

    ``residency`` / ``range`` are the offending allocation; ``other`` / ``other_range`` the
    live residency it hits (``None`` for an out-of-bounds or misaligned range).
    """

    def __init__(
        self, message: str, residency: str = "", range_: tuple[int, int] = (0, 0), other: str | None = None,
        other_range: tuple[int, int] | None = None, step: int | None = None, cycle: float = 0,
    ) -> None:
        # every field goes into args: SimPy re-raises a failed process's exception as
        # ``type(exc)(*exc.args)``, and the copy must keep them
        super().__init__(message, residency, range_, other, other_range, step, cycle)
        self.message = message
        self.residency = residency
        self.range = range_
        self.other = other
        self.other_range = other_range
        self.step = step
        self.cycle = cycle

    def __str__(self) -> str:
        return self.message


class SimulationError(ValueError):
    """Inputs the simulator cannot run: a transfer of an unknown residency, a missing offset, ..."""


# --------------------------------------------------------------------------------------------
# the scratchpad


class Scratchpad:
    """The on-chip memory as an address map of live ranges ``[offset, offset + size)``.

    Live ranges never overlap (``allocate`` refuses), so keeping them sorted by offset also
    sorts them by end address: neighbour checks with ``bisect`` find any conflict. It also
    records how much is in use over time (``timeline``) and the peaks.
    """

    def __init__(self, capacity: int, alignment: int = 1) -> None:
        self.capacity = capacity  #: bytes
        self.alignment = alignment  #: offsets must be multiples of this
        self._starts: list[int] = []  # offsets of live ranges, sorted
        self._ranges: list[tuple[int, int, str]] = []  # (offset, end, name), same order
        self._by_name: dict[str, tuple[int, int]] = {}
        self.live_bytes = 0
        self.peak_live_bytes = 0  #: max over time of the bytes allocated
        self.peak_address = 0  #: max over time of the highest address in use (offset + size)
        self.timeline: list[tuple[float, int, int]] = [(0, 0, 0)]  #: (cycle, live bytes, highest address)

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def __len__(self) -> int:
        return len(self._by_name)

    def range_of(self, name: str) -> tuple[int, int]:
        return self._by_name[name]

    def conflicts(self, offset: int, size: int) -> list[tuple[int, int, str]]:
        """Live ranges overlapping ``[offset, offset + size)``, lowest first."""
        end = offset + size
        i = bisect.bisect_left(self._starts, offset)
        if i > 0 and self._ranges[i - 1][1] > offset:
            i -= 1
        hits = []
        while i < len(self._ranges) and self._ranges[i][0] < end:
            hits.append(self._ranges[i])
            i += 1
        return hits

    def is_free(self, offset: int, size: int) -> bool:
        return not self.conflicts(offset, size)

    def allocate(self, name: str, offset: int, size: int, now: float, step: int | None = None) -> None:
        """Mark ``[offset, offset + size)`` live for ``name``, or raise ``MemoryViolation``."""
        end = offset + size
        when = f"step {step} (cycle {now:g})" if step is not None else f"cycle {now:g}"
        if name in self._by_name:
            lo, hi = self._by_name[name]
            raise MemoryViolation(
                f"{when}: residency {name!r} allocated twice (already live at [{lo}, {hi}))",
                name, (offset, end), name, (lo, hi), step, now,
            )
        if offset < 0 or size <= 0 or end > self.capacity:
            raise MemoryViolation(
                f"{when}: residency {name!r} [{offset}, {end}) lies outside the memory [0, {self.capacity})",
                name, (offset, end), None, None, step, now,
            )
        if offset % self.alignment:
            raise MemoryViolation(
                f"{when}: residency {name!r} offset {offset} is not a multiple of the alignment {self.alignment}",
                name, (offset, end), None, None, step, now,
            )
        hits = self.conflicts(offset, size)
        if hits:
            lo, hi, other = hits[0]
            raise MemoryViolation(
                f"{when}: residency {name!r} [{offset}, {end}) overlaps live residency {other!r} [{lo}, {hi})",
                name, (offset, end), other, (lo, hi), step, now,
            )
        i = bisect.bisect_left(self._starts, offset)
        self._starts.insert(i, offset)
        self._ranges.insert(i, (offset, end, name))
        self._by_name[name] = (offset, end)
        self.live_bytes += size
        self.peak_live_bytes = max(self.peak_live_bytes, self.live_bytes)
        self.peak_address = max(self.peak_address, end)
        self._record(now)

    def free(self, name: str, now: float, step: int | None = None) -> None:
        """Release ``name``'s range; freeing a range that is not live is a violation too."""
        if name not in self._by_name:
            when = f"step {step} (cycle {now:g})" if step is not None else f"cycle {now:g}"
            raise MemoryViolation(f"{when}: free of residency {name!r}, which is not live", name, (0, 0), step=step,
                                  cycle=now)
        offset, end = self._by_name.pop(name)
        i = bisect.bisect_left(self._starts, offset)
        del self._starts[i]
        del self._ranges[i]
        self.live_bytes -= end - offset
        self._record(now)

    def _record(self, now: float) -> None:
        high = self._ranges[-1][1] if self._ranges else 0
        if self.timeline[-1][0] == now:
            self.timeline[-1] = (now, self.live_bytes, high)
        else:
            self.timeline.append((now, self.live_bytes, high))


# --------------------------------------------------------------------------------------------
# results


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
    utilization: float = 0.0  #: MACs / (cycles x peak MACs per cycle), over the whole run
    stall_cycles: dict[str, float] = field(default_factory=dict)  #: by cause: dma_wait, sram_bandwidth
    energy: dict[str, float] = field(default_factory=dict)  #: joules: compute, sram, dram, total
    events: int = 0  #: SimPy events processed

    @property
    def ok(self) -> bool:
        return self.violation is None


# --------------------------------------------------------------------------------------------
# the DRAM link and the compute array


class DramLink:
    """The DRAM interface: ``bytes_per_cycle`` shared fairly by the transfers in flight.

    ``transfer(nbytes)`` returns an event that fires when the bytes have moved. Completion
    times are whole cycles: the next completion is rounded up, and at that moment every
    transfer in flight has moved ``elapsed * bytes_per_cycle / m`` bytes.
    """

    def __init__(self, env: simpy.Environment, bytes_per_cycle: float) -> None:
        self.env = env
        self.bytes_per_cycle = bytes_per_cycle
        self._remaining: dict[int, float] = {}  # transfer id -> bytes still to move
        self._done: dict[int, simpy.Event] = {}
        self._next_id = 0
        self._since = 0.0  # when _remaining was last brought up to date
        self._wake: simpy.Event = env.event()
        self.busy_cycles = 0.0  #: cycles with at least one transfer moving data
        env.process(self._run())

    def transfer(self, nbytes: int) -> simpy.Event:
        done = self.env.event()
        if nbytes <= 0:
            done.succeed()
            return done
        self._advance()
        self._remaining[self._next_id] = float(nbytes)
        self._done[self._next_id] = done
        self._next_id += 1
        if not self._wake.triggered:
            self._wake.succeed()
        return done

    def _advance(self) -> None:
        """Bring every transfer's remaining bytes up to now."""
        elapsed = self.env.now - self._since
        if elapsed > 0 and self._remaining:
            moved = elapsed * self.bytes_per_cycle / len(self._remaining)
            for key in self._remaining:
                self._remaining[key] -= moved
            self.busy_cycles += elapsed
        self._since = self.env.now

    def _run(self) -> Generator[simpy.Event, Any, None]:
        while True:
            if not self._remaining:
                self._wake = self.env.event()
                yield self._wake
                continue
            share = self.bytes_per_cycle / len(self._remaining)
            wait = max(1, math.ceil(min(self._remaining.values()) / share - 1e-9))
            self._wake = self.env.event()
            yield self.env.timeout(wait) | self._wake
            self._advance()
            for key in [k for k, left in self._remaining.items() if left <= 1e-6]:
                del self._remaining[key]
                self._done.pop(key).succeed()


@dataclass
class _Job:
    """One operator handed to the compute array."""

    cycles: int
    done: simpy.Event


def _compute_array(env: simpy.Environment, queue: simpy.Store) -> Generator[simpy.Event, Any, None]:
    """The compute array: runs the operators it is handed, one at a time, in order."""
    while True:
        job = yield queue.get()
        yield env.timeout(job.cycles)
        job.done.succeed()


# --------------------------------------------------------------------------------------------
# the model


class _Machine:
    """The SimPy processes; built and run once by ``simulate``."""

    def __init__(
        self, graph: nx.DiGraph, schedule: Schedule, offsets: Mapping[str, int], hw: HardwareConfig,
        capacity: int,
    ) -> None:
        self.graph = graph
        self.schedule = schedule
        self.hw = hw
        self.env = simpy.Environment()
        self.dma = simpy.PriorityResource(self.env, capacity=hw.dma.channels)
        self.link = DramLink(self.env, hw.dram_bytes_per_cycle)
        self.array_queue = simpy.Store(self.env)
        self.env.process(_compute_array(self.env, self.array_queue))
        self.pad = Scratchpad(capacity, schedule.alignment)
        self.ops: list[OpRecord] = []
        self.costs: list[OpCost] = []
        self.transfers: list[TransferRecord] = []
        self.offsets = offsets
        from frontend.graph import dtype_bytes  # the format module only: no torch

        self.element_bytes = dtype_bytes(str(graph.graph.get("dtype", "int8")))
        self.channels_busy = 0
        self.free_channels = list(range(hw.dma.channels))  # lowest free first, so traces reuse channel 0
        self.channel_busy_cycles = 0.0
        self._channel_since = 0.0
        n = len(schedule.order)

        self.residency: dict[str, Residency] = {}
        self.starting: dict[int, list[Residency]] = defaultdict(list)
        self.ending: dict[int, list[Residency]] = defaultdict(list)
        for r in schedule.residencies:
            if r.id in self.residency:
                raise SimulationError(f"residency id {r.id!r} appears twice in the schedule")
            if r.id not in offsets:
                raise SimulationError(f"residency {r.id!r} has no offset")
            if not 0 <= r.start < r.end <= n:
                raise SimulationError(f"residency {r.id!r} lives on [{r.start}, {r.end}), outside steps [0, {n}]")
            self.residency[r.id] = r
            self.starting[r.start].append(r)
            self.ending[r.end].append(r)
        self.fill: dict[str, Transfer] = {}  # residency id -> its load/retrieve
        self.drain: dict[str, Transfer] = {}  # residency id -> its store/spill
        for t in schedule.transfers:
            if t.residency not in self.residency:
                raise SimulationError(
                    f"{t.kind} of {t.tensor!r} at step {t.step} names unknown residency {t.residency!r}"
                )
            r = self.residency[t.residency]
            table, expected = (self.fill, r.start) if t.to_chip else (self.drain, r.end)
            if t.step != expected:
                raise SimulationError(
                    f"{t.kind} of residency {r.id!r} at step {t.step}, but the residency lives on [{r.start}, {r.end}) "
                    f"(a {t.kind} happens at step {expected})"
                )
            if r.id in table:
                raise SimulationError(f"residency {r.id!r} has two {'fills' if t.to_chip else 'drains'}")
            table[r.id] = t
        for name in schedule.order:
            if name not in graph:
                raise SimulationError(f"scheduled operator {name!r} is not in the graph")

        self.copies_on_chip: Counter[str] = Counter()  # tensor -> its residencies in the scratchpad
        self.draining: dict[str, simpy.Process] = {}  # residency id -> its store/spill, until the range is freed
        self.prefetched: dict[str, simpy.Process] = {}  # residency id -> its early load
        self.current = -1  # the step whose operator runs (or ran last)
        self.boundary = -1  # the last step whose residencies the driver has allocated or queued

    # ---- DMA

    def _dma(self, t: Transfer, prefetched: bool, priority: int) -> Generator[simpy.Event, Any, None]:
        queued = self.env.now
        chip_bytes = self.hw.chip_bytes(t.nbytes)
        with self.dma.request(priority=priority) as req:
            yield req
            start = self.env.now
            channel = self.free_channels.pop(0)
            self._channels_change(+1)
            if self.hw.dram_latency_cycles:
                yield self.env.timeout(self.hw.dram_latency_cycles)
            yield self.link.transfer(chip_bytes)
            self._channels_change(-1)
            bisect.insort(self.free_channels, channel)
        self.transfers.append(TransferRecord(
            t.kind, t.tensor, t.residency, t.step, t.nbytes, chip_bytes, queued, start, self.env.now,
            t.compulsory, t.to_chip, prefetched, channel,
        ))

    def _channels_change(self, delta: int) -> None:
        """Account the time at least one channel was busy (the DMA busy figure)."""
        if self.channels_busy:
            self.channel_busy_cycles += self.env.now - self._channel_since
        self._channel_since = self.env.now
        self.channels_busy += delta

    def _drain(self, r: Residency, t: Transfer, step: int) -> Generator[simpy.Event, Any, None]:
        yield self.env.process(self._dma(t, prefetched=False, priority=step))
        self._free(r, step)
        del self.draining[r.id]
        self._prefetch()

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
        t = self.fill.get(r.id)
        hits = [name for _, _, name in self.pad.conflicts(self.offsets[r.id], r.size)]
        if all(name in self.draining for name in hits):  # otherwise allocating raises at once
            waits = [self.draining[name] for name in hits]
            if t is not None:
                waits += [p for rid, p in self.draining.items() if self.residency[rid].tensor == r.tensor]
            if waits:
                yield self.env.all_of(waits)
        self._allocate(r, step)
        if t is not None:
            yield self.env.process(self._dma(t, prefetched=False, priority=step))

    def _prefetch(self) -> None:
        """Issue the loads of the next ``prefetch_depth`` steps whose ranges are free now (module docstring)."""
        depth = self.hw.dma.prefetch_depth
        first, n = self.current + 1, len(self.schedule.order)
        if depth <= 0 or self.current < 0:
            return
        # the driver fills the steps up to its boundary itself; the claims of those fills still count
        for step in range(max(first, self.boundary + 1), min(n, self.current + depth + 1)):
            for r in self.starting.get(step, ()):
                t = self.fill.get(r.id)
                if t is None or r.id in self.prefetched or r.id in self.pad or self.copies_on_chip[r.tensor]:
                    continue
                offset = self.offsets[r.id]
                if not self.pad.is_free(offset, r.size) or self._claimed_earlier(offset, r.size, first, step):
                    continue
                self._allocate(r, step)
                self.prefetched[r.id] = self.env.process(self._dma(t, prefetched=True, priority=step))

    def _claimed_earlier(self, offset: int, size: int, first: int, step: int) -> bool:
        """Whether a residency starting in steps ``[first, step)``, not yet on chip, overlaps the range."""
        end = offset + size
        for s in range(first, step):
            for other in self.starting.get(s, ()):
                if other.id in self.pad:
                    continue
                lo = self.offsets[other.id]
                if lo < end and offset < lo + other.size:
                    return True
        return False

    # ---- driver

    def cost(self, name: str) -> OpCost:
        node = self.graph.nodes[name]
        tensors = self.graph.graph["tensors"]
        names = list(node.get("in_tensors", ())) + list(node.get("out_tensors", ()))
        io = sum(int(tensors[t]["nbytes"]) for t in names)
        return operator_cost(
            macs=int(node.get("macs", 0)), elements=int(node.get("elements", 0)), gemm=node.get("gemm"),
            compute=self.hw.compute, element_bytes=self.element_bytes, io_bytes=io,
            sram_bytes_per_cycle=self.hw.sram_bytes_per_cycle_total,
        )

    def run(self) -> Generator[simpy.Event, Any, None]:
        order = self.schedule.order
        n = len(order)
        previous_end = 0.0
        for s in range(n + 1):
            for r in self.ending.get(s, ()):
                t = self.drain.get(r.id)
                if t is None:
                    self._free(r, s)
                else:
                    self.draining[r.id] = self.env.process(self._drain(r, t, s))
            if s == n:
                break
            self.boundary = s
            pending = []
            for r in self.starting.get(s, ()):
                early = self.prefetched.pop(r.id, None)
                pending.append(early if early is not None else self.env.process(self._fill(r, s)))
            if pending:
                yield self.env.all_of(pending)
            name = order[s]
            node = self.graph.nodes[name]
            cost = self.cost(name)
            start = self.env.now
            self.current = s
            self._prefetch()
            job = _Job(cost.cycles, self.env.event())
            yield self.array_queue.put(job)
            yield job.done
            self.costs.append(cost)
            self.ops.append(OpRecord(
                s, name, str(node.get("op", "")), start, self.env.now, int(node.get("macs", 0)), cost.compute_cycles,
                cost.ideal_cycles, cost.utilization, start - previous_end, cost.sram_stall_cycles, cost.sram_bytes,
                cost.mapping, cost.folds,
            ))
            previous_end = self.env.now


def _with_energy(machine: _Machine, transfers: list[TransferRecord]) -> list[OpRecord]:
    """The operator records with their energy (joules); transfers go to the operator of their step."""
    energy = machine.hw.energy
    ops = machine.ops
    if not ops:
        return ops
    dram = [0] * len(ops)
    for t in transfers:
        dram[min(t.step, len(ops) - 1)] += t.chip_bytes
    out = []
    for op, cost, moved in zip(ops, machine.costs, dram, strict=False):
        node = machine.graph.nodes[op.name]
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


def simulate(
    graph: nx.DiGraph, schedule: Schedule, offsets: Mapping[str, int] | None, hw: HardwareConfig,
    *, capacity: int | None = None, raise_on_violation: bool = False,
) -> SimResult:
    """Run ``schedule`` with residencies at ``offsets`` on ``hw`` and measure it.

    ``offsets`` defaults to ``schedule.offsets``; ``capacity`` (bytes of the scratchpad, per PE
    on ``per_pe`` targets) defaults to ``schedule.capacity``. A memory violation stops the run
    and is reported in ``memory_check`` (or raised with ``raise_on_violation=True``); inputs
    that do not fit together raise ``SimulationError``.
    """
    if offsets is None:
        if schedule.offsets is None:
            raise SimulationError("no offsets given and the schedule has none")
        offsets = schedule.offsets
    machine = _Machine(graph, schedule, offsets, hw, schedule.capacity if capacity is None else capacity)
    env = machine.env
    driver = env.process(machine.run())
    violation: MemoryViolation | None = None
    events = 0
    try:
        # step by step rather than env.run(): the DRAM link's process never ends, and the
        # number of events processed is reported
        while not driver.triggered and env.peek() != math.inf:
            env.step()
            events += 1
        if driver.triggered and not driver.ok:
            raise cast(BaseException, driver.value)
        # the write-backs queued at the last boundary
        while machine.draining and env.peek() != math.inf:
            env.step()
            events += 1
    except MemoryViolation as exc:
        if raise_on_violation:
            raise
        violation = exc
    transfers = sorted(machine.transfers, key=lambda t: (t.start_cycle, t.end_cycle))
    read = sum(t.chip_bytes for t in transfers if t.to_chip)
    write = sum(t.chip_bytes for t in transfers if not t.to_chip)
    compulsory = sum(t.chip_bytes for t in transfers if t.compulsory)
    ops = _with_energy(machine, transfers)
    cycles = max([env.now] + [t.end_cycle for t in transfers])
    macs = sum(o.macs for o in ops)
    energy = {k: sum(o.energy.get(k, 0.0) for o in ops) for k in ("compute", "sram", "dram")}
    energy["total"] = energy["compute"] + energy["sram"] + energy["dram"]
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
        peak_bytes=machine.pad.peak_address,
        peak_live_bytes=machine.pad.peak_live_bytes,
        compute_cycles=sum(o.end_cycle - o.start_cycle for o in ops),
        dma_cycles=machine.channel_busy_cycles,
        memory_timeline=machine.pad.timeline,
        memory_check="ok" if violation is None else str(violation),
        violation=violation,
        macs=macs,
        ideal_cycles=sum(o.ideal_cycles for o in ops),
        utilization=macs / (cycles * hw.peak_macs_per_cycle) if cycles else 0.0,
        stall_cycles={"dma_wait": sum(o.dma_stall_cycles for o in ops),
                      "sram_bandwidth": sum(o.sram_stall_cycles for o in ops)},
        energy=energy,
        events=events,
    )

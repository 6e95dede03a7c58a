"""A SimPy discrete-event model of one accelerator running a scheduled, allocated program.

The machine has three agents, each a SimPy process or resource (time unit: one clock cycle):

* **DMA engine** — one ``simpy.Resource`` of capacity 1: the single DRAM interface. Every
  transfer (loads and retrievals into the scratchpad, stores and spills out of it) holds it
  for ``dram_latency_cycles + ceil(chip_bytes / bytes_per_cycle)`` cycles, first come first
  served. Reads and writes therefore never overlap each other; they do overlap compute. On a
  ``per_pe`` target a transfer moves the tensor's share to every PE, so its DRAM bytes are the
  per-PE bytes times ``n_pe``.
* **Compute array** — operators run one at a time, in schedule order; an operator takes
  ``ceil(macs / macs_per_cycle)`` cycles, or ``ceil(elements / vector_elements_per_cycle)`` when
  it has no MACs, and at least one cycle.
* **Driver** — walks the schedule step by step following the transfer timing convention of
  ``scheduler/schedule.py``. At the boundary before step ``s`` (after operator ``s - 1``):

  1. residencies ending at ``s`` are drained: a store/spill is queued on the DMA engine and the
     range is freed when it completes (immediately when there is nothing to write back);
  2. residencies starting at ``s`` are allocated in the scratchpad and their loads/retrievals
     queued. An allocation whose range overlaps a range still being drained waits for that
     drain (the convention: a drain must finish before its range is reused); one that overlaps
     any other live range is a memory violation, raised at once;
  3. operator ``s`` starts when every load of step ``s`` has completed.

  **Prefetch**: when operator ``s`` starts, each load/retrieval of step ``s + 1`` whose
  destination range overlaps no live range at that moment is allocated and queued right away,
  overlapping the compute of ``s``. The others wait for the boundary (their ranges are still
  held by tensors that die at ``s + 1``). A retrieval never overtakes the write-back of the
  same tensor: it is not prefetched while another copy of the tensor is on chip, and at the
  boundary it waits for that copy's spill/store to finish.

The scratchpad is a real address map (``Scratchpad``): every allocation is checked at the
simulated moment it happens, and a conflict raises ``MemoryViolation`` naming both residencies,
both ranges, the step and the cycle. ``simulate`` reports it in ``SimResult.memory_check``
(and stops the simulation there) unless asked to raise.

>>> from accelsim.hw import load_hw
>>> pad = Scratchpad(capacity=1024)
>>> pad.allocate("a", 0, 512, now=0)
>>> pad.allocate("b", 256, 512, now=7, step=3)
Traceback (most recent call last):
...
accelsim.sim.MemoryViolation: step 3 (cycle 7): residency 'b' [256, 768) overlaps live residency 'a' [0, 512)
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import simpy

from accelsim.hw import HardwareConfig

if TYPE_CHECKING:
    import networkx as nx

    from scheduler.schedule import Residency, Schedule, Transfer


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
    """When one operator ran (cycles)."""

    step: int
    name: str
    op: str
    start_cycle: float
    end_cycle: float
    macs: int
    stall_cycles: float  #: cycles between the previous operator's end and this start (waiting for loads)


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
    start_cycle: float
    end_cycle: float
    compulsory: bool
    to_chip: bool
    prefetched: bool  #: issued during the previous operator's compute


@dataclass
class SimResult:
    """What the simulation measured. Byte counts of DRAM traffic are chip totals."""

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
    compute_cycles: float  #: cycles the compute array was busy
    dma_cycles: float  #: cycles the DMA engine was busy
    memory_timeline: list[tuple[float, int, int]] = field(repr=False)  #: (cycle, live bytes, highest address)
    memory_check: str = "ok"  #: "ok" or the MemoryViolation message
    violation: MemoryViolation | None = None

    @property
    def ok(self) -> bool:
        return self.violation is None


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
        self.dma = simpy.Resource(self.env, capacity=1)
        self.pad = Scratchpad(capacity, schedule.alignment)
        self.ops: list[OpRecord] = []
        self.transfers: list[TransferRecord] = []
        self.offsets = offsets
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

    # ---- DMA

    def _dma(self, t: Transfer, prefetched: bool) -> Generator[simpy.Event, Any, None]:
        queued = self.env.now
        chip_bytes = self.hw.chip_bytes(t.nbytes)
        with self.dma.request() as req:
            yield req
            start = self.env.now
            yield self.env.timeout(self.hw.dma_cycles(chip_bytes))
        self.transfers.append(TransferRecord(
            t.kind, t.tensor, t.residency, t.step, t.nbytes, chip_bytes, queued, start, self.env.now,
            t.compulsory, t.to_chip, prefetched,
        ))

    def _drain(self, r: Residency, t: Transfer, step: int) -> Generator[simpy.Event, Any, None]:
        yield self.env.process(self._dma(t, prefetched=False))
        self._free(r, step)
        del self.draining[r.id]

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
            yield self.env.process(self._dma(t, prefetched=False))

    def _prefetch(self, step: int) -> None:
        """Start the loads of ``step`` whose ranges are free now (called as operator ``step - 1`` starts).

        A tensor with a copy still on chip is not prefetched: that copy is about to be written
        back (or is being produced) and the load must read what it writes.
        """
        for r in self.starting.get(step, ()):
            t = self.fill.get(r.id)
            if t is not None and not self.copies_on_chip[r.tensor] and self.pad.is_free(self.offsets[r.id], r.size):
                self._allocate(r, step)
                self.prefetched[r.id] = self.env.process(self._dma(t, prefetched=True))

    # ---- driver

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
            pending = []
            for r in self.starting.get(s, ()):
                early = self.prefetched.pop(r.id, None)
                pending.append(early if early is not None else self.env.process(self._fill(r, s)))
            if pending:
                yield self.env.all_of(pending)
            name = order[s]
            node = self.graph.nodes[name]
            macs = int(node.get("macs", 0))
            start = self.env.now
            if s + 1 < n:
                self._prefetch(s + 1)
            yield self.env.timeout(self.hw.compute_cycles(macs, int(node.get("elements", 0))))
            self.ops.append(OpRecord(s, name, str(node.get("op", "")), start, self.env.now, macs, start - previous_end))
            previous_end = self.env.now


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
    env.process(machine.run())
    violation: MemoryViolation | None = None
    try:
        env.run()
    except MemoryViolation as exc:
        if raise_on_violation:
            raise
        violation = exc
    transfers = sorted(machine.transfers, key=lambda t: (t.start_cycle, t.end_cycle))
    read = sum(t.chip_bytes for t in transfers if t.to_chip)
    write = sum(t.chip_bytes for t in transfers if not t.to_chip)
    compulsory = sum(t.chip_bytes for t in transfers if t.compulsory)
    cycles = env.now
    return SimResult(
        cycles=cycles,
        seconds=hw.seconds(cycles),
        ops=machine.ops,
        transfers=transfers,
        dram_read_bytes=read,
        dram_write_bytes=write,
        compulsory_bytes=compulsory,
        noncompulsory_bytes=read + write - compulsory,
        bytes_by_kind={kind: sum(t.chip_bytes for t in transfers if t.kind == kind)
                       for kind in ("load", "store", "spill", "retrieve")},
        peak_bytes=machine.pad.peak_address,
        peak_live_bytes=machine.pad.peak_live_bytes,
        compute_cycles=sum(o.end_cycle - o.start_cycle for o in machine.ops),
        dma_cycles=sum(t.end_cycle - t.start_cycle for t in transfers),
        memory_timeline=machine.pad.timeline,
        memory_check="ok" if violation is None else str(violation),
        violation=violation,
    )

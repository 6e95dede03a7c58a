"""Load timing: the step at which every load and retrieval is issued, planned by the scheduler.

A fill (``load``/``retrieve``) has two steps (``scheduler.schedule.Transfer``): ``step``, the
operator that needs it (it must finish before that operator starts), and ``issue_step``, the
boundary at which the DMA starts it. Its residency starts at the issue step: from then on the
destination range is reserved, so the allocator sees the whole prefetch window and places
windows that overlap in time apart. An issue step before ``step`` is a prefetch: the transfer
overlaps the compute of the operators between.

``plan_load_timing`` chooses the issue steps of a schedule that has offsets:

1. **When each fill should start.** The operators run back to back with their stall-free
   cycles (``op_cycles``, the simulator's own per-operator cycles) from cycle 0, so operator
   ``k`` starts at ``T[k] = sum(op_cycles[:k])``. The DMA serves fills in the order of the steps
   that need them, one at a time at the DRAM link's full rate (``DmaModel.cycles``: the latency
   plus the bytes at the link's bandwidth). Walking the fills from the last needed to the
   first, each must end by ``T[step]`` and before the next one starts; its wanted issue step is
   the last boundary ``k`` with ``T[k]`` at or before its start (as late as it can be without a
   stall, so it holds its range as short as possible). A fill never starts before the previous
   stay of its tensor ends (a retrieval reads what the spill wrote), nor more than
   ``lookahead`` steps before its ``step``.
2. **What fits.** Going through the fills in the order they are needed, each window grows
   backwards from its ``step`` towards its wanted issue step while the bytes live at every step
   stay within a cap (the capacity at first). An earlier need comes first, as on the DMA.
3. **Allocation-aware.** The windows are placed by ``place`` (the run's allocator on the
   whole problem). When it cannot place them, the cap is lowered by ``shrink`` and the plan made
   again, at most ``rounds`` times (the work limit: placements tried, the same on every
   machine). When no round places, the schedule keeps its offsets.
4. **In place.** Finally each fill still short of its wanted step grows further backwards
   while its own range stays free of every other residency at the offsets chosen: free room
   the allocation left is used, nothing moves.

Schedulers that place their own offsets (COSMA's CP-SAT models) get step 4 only (``place``
None): their addresses are part of the model's proven answer and stay as they are, while any
prefetch that fits between them is free. A schedule without fills is returned unchanged.

Assumption: the planner's DMA timeline ignores write-backs (stores and spills share the link
in the simulation) and stalls it cannot foresee, such as a window the cap cut short; it only
decides issue steps, which the simulator then runs as physics allows.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from scheduler.schedule import Residency, Schedule, Transfer, live_bytes_over_time

#: how much each failed placement lowers the window cap (``plan_load_timing``)
DEFAULT_SHRINK = 0.8
#: placements tried before the schedule keeps its own offsets: the planner's work limit
DEFAULT_ROUNDS = 4


@dataclass(frozen=True)
class DmaModel:
    """The DMA as the planner sees it: the same figures the simulator's DRAM link and DMA engines use.

    >>> DmaModel(bytes_per_cycle=32.0, latency=100, chip_factor=4).cycles(64)
    108
    """

    bytes_per_cycle: float  #: chip bytes the DRAM link moves per cycle
    latency: int = 0  #: cycles of set-up before a transfer's data moves
    chip_factor: int = 1  #: DRAM bytes per on-chip byte (the PE count on per-PE targets, else 1)

    def cycles(self, nbytes: int) -> int:
        """Cycles one transfer of ``nbytes`` on-chip bytes takes alone: latency + bytes at the full rate."""
        return self.latency + math.ceil(nbytes * self.chip_factor / self.bytes_per_cycle)


def wanted_issue_steps(schedule: Schedule, op_cycles: Sequence[float], dma: DmaModel,
                       lookahead: int | None = None) -> dict[str, int]:
    """Fill residency id -> its wanted issue step (step 1 of the module docstring).

    >>> from scheduler.schedule import Residency, Schedule, Transfer, live_bytes_over_time
    >>> s = Schedule(["a", "b", "c"], [Residency("w", "w", 2, 3, 50)], [Transfer("load", "w", "w", 2, 50)], 100)
    >>> wanted_issue_steps(s, [10, 10, 10], DmaModel(bytes_per_cycle=5.0))  # 10 cycles: during operator 1
    {'w': 1}
    >>> wanted_issue_steps(s, [10, 10, 10], DmaModel(bytes_per_cycle=1.0))  # 50 cycles: from the start
    {'w': 0}
    """
    starts = [0.0]
    for c in op_cycles:
        starts.append(starts[-1] + float(c))
    earliest = _earliest_steps(schedule, lookahead)
    fills = sorted((t for t in schedule.transfers if t.to_chip), key=lambda t: t.step)
    wanted: dict[str, int] = {}
    next_begin = math.inf
    for t in reversed(fills):
        begin = min(starts[t.step], next_begin) - dma.cycles(t.nbytes)
        next_begin = begin
        k = bisect.bisect_right(starts, begin, 0, t.step + 1) - 1
        wanted[t.residency] = min(max(k, earliest[t.residency]), t.step)
    return wanted


def plan_load_timing(
    schedule: Schedule, op_cycles: Sequence[float], dma: DmaModel, *, lookahead: int | None = None,
    place: Callable[[Schedule], Mapping[str, int] | None] | None = None, rounds: int = DEFAULT_ROUNDS,
    shrink: float = DEFAULT_SHRINK,
) -> Schedule:
    """``schedule`` with every fill's issue step planned and its residency starting there (module docstring).

    ``schedule`` must have offsets and its fills must not be planned yet (each residency starts at
    its fill's ``step``). ``op_cycles[k]`` is operator ``k``'s stall-free cycles; ``lookahead`` the
    most steps a fill may be issued before its ``step`` (None: no limit); ``place`` re-places a
    schedule (offsets, or None when it cannot). The result passes ``check_schedule``; its
    ``stats.load_timing_rounds`` says how many placements were tried.
    """
    if schedule.offsets is None:
        raise ValueError("plan_load_timing needs a schedule with offsets")
    if len(op_cycles) != len(schedule.order):
        raise ValueError(f"op_cycles has {len(op_cycles)} entries for {len(schedule.order)} operators")
    if not any(t.to_chip for t in schedule.transfers):
        return schedule
    wanted = wanted_issue_steps(schedule, op_cycles, dma, lookahead)
    base = schedule
    tried = 0
    if place is not None:
        cap = float(schedule.capacity)
        for _ in range(rounds):
            tried += 1
            starts = _windows_under_cap(schedule, wanted, int(cap))
            if all(starts[rid] == t.step for rid, t in _fills(schedule).items()):
                break  # nothing to prefetch under this cap
            planned = _with_starts(schedule, starts)
            offsets = place(planned)
            if offsets is not None:
                base = planned.with_offsets(offsets)
                break
            cap *= shrink
    assert base.offsets is not None
    result = _with_starts(base, _windows_in_place(base, base.offsets, wanted), base.offsets)
    result.stats = replace(schedule.stats, load_timing_rounds=tried)
    return result


def _fills(schedule: Schedule) -> dict[str, Transfer]:
    """Residency id -> its fill."""
    return {t.residency: t for t in schedule.transfers if t.to_chip}


def _earliest_steps(schedule: Schedule, lookahead: int | None) -> dict[str, int]:
    """Fill residency id -> the earliest step it may start: after the tensor's previous stay, within ``lookahead``."""
    ends: dict[str, list[int]] = {}
    for r in schedule.residencies:
        ends.setdefault(r.tensor, []).append(r.end)
    for values in ends.values():
        values.sort()
    by_id = {r.id: r for r in schedule.residencies}
    earliest = {}
    for rid, t in _fills(schedule).items():
        before = ends[by_id[rid].tensor]
        i = bisect.bisect_right(before, t.step)  # stays ending at or before this one starts
        lo = before[i - 1] if i else 0
        if lookahead is not None:
            lo = max(lo, t.step - lookahead)
        earliest[rid] = lo
    return earliest


def _windows_under_cap(schedule: Schedule, wanted: Mapping[str, int], cap: int) -> dict[str, int]:
    """Fill residency id -> its start, each window grown towards its wanted step while each step's live
    bytes stay within ``cap``."""
    live = live_bytes_over_time(schedule)
    by_id = {r.id: r for r in schedule.residencies}
    starts = {}
    for rid, t in sorted(_fills(schedule).items(), key=lambda item: item[1].step):
        size = by_id[rid].size
        start = t.step
        while start > wanted[rid] and live[start - 1] + size <= cap:
            start -= 1
            live[start] += size
        starts[rid] = start
    return starts


def _windows_in_place(schedule: Schedule, offsets: Mapping[str, int], wanted: Mapping[str, int]) -> dict[str, int]:
    """Fill residency id -> its start, each window grown towards its wanted step while its range is free at the
    offsets given (step 4 of the module docstring)."""
    n = len(schedule.order)
    at_step: list[list[Residency]] = [[] for _ in range(n)]
    for r in schedule.residencies:
        for k in range(r.start, r.end):
            at_step[k].append(r)
    starts = {}
    by_id = {r.id: r for r in schedule.residencies}
    for rid, _ in sorted(_fills(schedule).items(), key=lambda item: item[1].step):
        r = by_id[rid]
        start = r.start
        while start > wanted[rid] and not any(_blocks(other, r, offsets) for other in at_step[start - 1]):
            start -= 1
            at_step[start].append(r)
        starts[rid] = start
    return starts


def _blocks(other: Residency, r: Residency, offsets: Mapping[str, int]) -> bool:
    """Whether ``other``, live at a step, keeps ``r``'s window from opening there: it holds part of ``r``'s
    range, or it is another stay of ``r``'s tensor."""
    lo, hi = offsets[r.id], offsets[r.id] + r.size
    return other.tensor == r.tensor or (offsets[other.id] < hi and lo < offsets[other.id] + other.size)


def _with_starts(schedule: Schedule, starts: Mapping[str, int], offsets: Mapping[str, int] | None = None) -> Schedule:
    """A copy of ``schedule`` whose fill residencies start at ``starts`` and whose fills are issued there,
    placed at ``offsets`` (None: not placed yet)."""
    residencies = [replace(r, start=starts[r.id]) if r.id in starts else r for r in schedule.residencies]
    transfers = [replace(t, issue_step=starts[t.residency]) if t.to_chip else t for t in schedule.transfers]
    return Schedule(
        list(schedule.order), residencies, transfers, schedule.capacity, schedule.alignment,
        None if offsets is None else dict(offsets), schedule.method,
        replace(schedule.stats), schedule.status, schedule.placed_by, list(schedule.rounds),
    )

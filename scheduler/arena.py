"""The online first-fit address arena: TensorFlow Lite's linear arena, operator by operator.

A tensor goes at the lowest offset where it fits among the tensors resident at that moment
(first fit by address). When it does not fit, the replacement policy makes room
(``scheduler.replacement``): a window search of its own (greedy), or evicting in its order
until first fit succeeds (Belady). If a placement still fails after every other tensor has
been evicted (with greedy: if no window avoids the operator's own tensors, every other tensor
is evicted in Belady's order, since only compaction can make room then), the arena is
fragmented by the operator's own tensors; they are then compacted towards offset 0 in address
order. A tensor already at its compacted offset stays; one filled at this very step is just
placed at the new offset (nothing was computed in it yet); any other is evicted (written back
first when it has no DRAM copy) and retrieved at the new offset. The operator's tensors sum to
at most M_R, so at any capacity >= M_R the run always completes.

The events of a step and the bookkeeping are ``scheduler.residents``'; ``scheduler.baseline``
is the scheduler built on this arena, and the spill loop runs it as its safety net.
"""

from __future__ import annotations

from bisect import bisect_left, insort

from scheduler.registry import BY_ONLINE_ARENA
from scheduler.replacement import Policy, furthest_next_use
from scheduler.residents import Residents, RunInputs, run_name
from scheduler.schedule import Schedule, ScheduleError, ScheduleStats, peak_address, peak_live_bytes


class Arena(Residents):
    """One run of the address arena: the resident tensors by address, first fit, compaction."""

    def __init__(self, inputs: RunInputs, capacity: int, policy: Policy) -> None:
        super().__init__(inputs)
        self.capacity = capacity
        self.policy = policy
        self.resident: list[tuple[int, str]] = []  # (offset, tensor), sorted by offset
        self.offsets: dict[str, int] = {}  # residency id -> offset
        self.compactions = 0

    def open_stay(self, tensor: str, step: int, offset: int) -> str:
        rid = super().open_stay(tensor, step, offset)
        insort(self.resident, (offset, tensor))
        self.offsets[rid] = offset
        return rid

    def close_stay(self, tensor: str, step: int) -> str:
        offset = self.open[tensor][2]
        del self.resident[bisect_left(self.resident, (offset, tensor))]
        return super().close_stay(tensor, step)

    def first_fit(self, size: int) -> int | None:
        """The lowest offset where ``size`` bytes fit between the resident tensors, or None."""
        if size > self.capacity - self.live_bytes:
            return None
        cursor = 0
        for offset, tensor in self.resident:
            if offset - cursor >= size:
                return cursor
            cursor = offset + self.onchip[tensor]
        return cursor if self.capacity - cursor >= size else None

    def room_for(self, tensor: str, step: int, protected: set[str]) -> int:
        """First fit, else the policy's eviction, else compaction (see the module docstring)."""
        size = self.onchip[tensor]
        offset = self.first_fit(size)
        if offset is None and self.policy.victims is None:
            raise self.no_room(tensor, step)
        if offset is None and self.policy.window is not None:
            offset = self.policy.window(self, size, step, protected)
        if offset is None:
            offset = self._evict_until_fit(size, step, protected)
        if offset is None:
            self._compact(step)
            offset = self.first_fit(size)
            assert offset is not None, "compaction must make room at any capacity >= M_R"
        return offset

    def _evict_until_fit(self, size: int, step: int, protected: set[str]) -> int | None:
        """Evict unprotected tensors in the policy's order (Belady's after a window search) until
        ``size`` bytes fit; the offset, or None when it still does not fit."""
        key = self.policy.victims if self.policy.window is None and self.policy.victims is not None \
            else furthest_next_use
        for victim in sorted(self.candidates(protected), key=lambda t: key(self, t, step)):
            self.evict(victim, step)
            offset = self.first_fit(size)
            if offset is not None:
                return offset
        return None

    def _compact(self, step: int) -> None:
        """Slide the (all protected) resident tensors down to offset 0, in address order."""
        self.compactions += 1
        cursor = 0
        for offset, tensor in list(self.resident):
            if offset != cursor:
                rid, start, _ = self.open[tensor]
                if start == step:
                    # Filled at this step, before the operator ran: it can simply be filled elsewhere.
                    del self.resident[bisect_left(self.resident, (offset, tensor))]
                    insort(self.resident, (cursor, tensor))
                    self.open[tensor] = (rid, start, cursor)
                    self.offsets[rid] = cursor
                else:
                    self.drop(tensor, step)
                    self.transfer("retrieve", tensor, self.open_stay(tensor, step, cursor), step)
            cursor += self.onchip[tensor]

    def no_room(self, tensor: str, step: int) -> ScheduleError:
        """The error of a tensor that does not fit under a policy that never evicts."""
        size = self.onchip[tensor]
        free = self.capacity - self.live_bytes
        cursor, gap = 0, 0
        for offset, other in self.resident:
            gap = max(gap, offset - cursor)
            cursor = offset + self.onchip[other]
        gap = max(gap, self.capacity - cursor)
        why = f"; the largest free gap is {gap} bytes (fragmentation)" if free >= size else ""
        return ScheduleError(
            f"step {step} (operator {self.names[step]!r}): tensor {tensor!r} needs {size} bytes but only "
            f"{free} of {self.capacity} bytes are free{why}; replacement='none' never evicts "
            f"(use replacement='belady' or a larger capacity)"
        )


def online_schedule(inputs: RunInputs, capacity: int, replacement: str, policy: Policy, need: int) -> Schedule:
    """The arena's schedule of ``inputs`` in ``capacity`` bytes with the ``replacement`` policy
    (``policy``, its record); ``need`` is M_R, checked by the caller (``check_capacity``).

    ``offsets`` are the arena's, ``placed_by`` the online arena, ``stats`` ``min_capacity``,
    ``evictions``, ``compactions``, ``peak_live_bytes`` and ``peak_address``.
    """
    arena = Arena(inputs, capacity, policy)
    arena.run()
    result = arena.schedule(run_name(inputs.order, replacement), capacity, arena.offsets)
    result.placed_by = BY_ONLINE_ARENA
    result.stats = ScheduleStats(min_capacity=need, evictions=arena.evictions, compactions=arena.compactions,
                                 peak_live_bytes=peak_live_bytes(result), peak_address=peak_address(result))
    return result

"""The scratchpad: the on-chip memory as an address map that checks every allocation.

The driver allocates a residency's range when the schedule (or an early load) brings it on chip
and frees it when the residency ends (after its write-back, if any). Each call happens at a
simulated moment and is checked then: a range that overlaps a live one, leaves the memory or is
misaligned raises ``MemoryViolation`` naming both residencies, both ranges, the step and the
cycle. The map also records how many bytes are in use over time and the peaks.

>>> pad = Scratchpad(capacity=1024)
>>> pad.allocate("a", 0, 512, now=0)
>>> pad.allocate("b", 512, 256, now=3)
>>> pad.free("a", now=5)
>>> pad.live_bytes, pad.peak_live_bytes, pad.peak_address
(256, 768, 768)
"""

from __future__ import annotations

import bisect


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

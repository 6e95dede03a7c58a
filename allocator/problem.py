"""The static memory allocation problem: buffers with fixed live ranges, placed at offsets.

This module holds the data every method and the validator share, and nothing else.

Conventions (see DESIGN.md):

* time is logical: a buffer is live on the half-open interval ``[start, end)``;
* sizes, offsets and capacities are integers in bytes;
* a buffer occupies the half-open address range ``[offset, offset + size)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np


class InvalidProblemError(ValueError):
    """Raised when a buffer or problem is malformed; the message names the offending item."""


class UnknownMethodError(InvalidProblemError):
    """Raised when ``solve`` is asked for a method that is not in the registry."""


BufferId = str  # buffer ids are strings: CSV ids, or tensor names with a residency suffix


@dataclass(frozen=True)
class Buffer:
    """One block of memory with a fixed lifetime.

    >>> Buffer("a", start=0, end=3, size=64, alignment=32).area
    192
    """

    id: BufferId  #: unique name within a problem
    start: int  #: first logical timestep at which the buffer is live
    end: int  #: first timestep at which it is no longer live (exclusive, > start)
    size: int  #: bytes, > 0
    alignment: int = 1  #: the offset must be a multiple of this (bytes, >= 1)
    offset: int | None = None  #: pre-assigned (fixed) offset in bytes, or None when free

    def __post_init__(self) -> None:
        for name in ("start", "end", "size", "alignment"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidProblemError(f"buffer {self.id!r}: {name} must be an integer, got {value!r}")
        if self.offset is not None and (not isinstance(self.offset, int) or isinstance(self.offset, bool)):
            raise InvalidProblemError(f"buffer {self.id!r}: offset must be an integer, got {self.offset!r}")
        if self.start < 0:
            raise InvalidProblemError(f"buffer {self.id!r}: start {self.start} is negative")
        if self.end <= self.start:
            raise InvalidProblemError(
                f"buffer {self.id!r}: end {self.end} <= start {self.start} (lifetimes are half-open [start, end))"
            )
        if self.size <= 0:
            raise InvalidProblemError(f"buffer {self.id!r}: size {self.size} must be positive")
        if self.alignment < 1:
            raise InvalidProblemError(f"buffer {self.id!r}: alignment {self.alignment} must be >= 1")
        if self.offset is not None:
            if self.offset < 0:
                raise InvalidProblemError(f"buffer {self.id!r}: fixed offset {self.offset} is negative")
            if self.offset % self.alignment:
                raise InvalidProblemError(
                    f"buffer {self.id!r}: fixed offset {self.offset} is not a multiple of alignment {self.alignment}"
                )

    @property
    def lifetime(self) -> int:
        """Number of timesteps the buffer is live."""
        return self.end - self.start

    @property
    def area(self) -> int:
        """size x lifetime, the buffer's footprint in the time-address plane."""
        return self.size * self.lifetime

    def overlaps_in_time(self, other: Buffer) -> bool:
        """True when the two half-open lifetimes share a timestep."""
        return self.start < other.end and other.start < self.end


@dataclass(frozen=True)
class Problem:
    """A set of buffers and the memory they must fit in.

    ``capacity`` is the memory size in bytes, or ``None`` when the peak is to be minimised
    (every method then treats the capacity as unbounded and reports the peak it reached).
    """

    buffers: tuple[Buffer, ...]
    capacity: int | None = None

    def __init__(self, buffers: Iterable[Buffer], capacity: int | None = None) -> None:
        buffers = tuple(buffers)
        object.__setattr__(self, "buffers", buffers)
        object.__setattr__(self, "capacity", capacity)
        if capacity is not None and (not isinstance(capacity, int) or isinstance(capacity, bool) or capacity <= 0):
            raise InvalidProblemError(f"capacity must be a positive integer or None, got {capacity!r}")
        seen: set[BufferId] = set()
        for buffer in buffers:
            if not isinstance(buffer, Buffer):
                raise InvalidProblemError(f"problem holds {buffer!r}, which is not a Buffer")
            if buffer.id in seen:
                raise InvalidProblemError(f"buffer id {buffer.id!r} appears more than once")
            seen.add(buffer.id)
            if capacity is not None and buffer.offset is not None and buffer.offset + buffer.size > capacity:
                raise InvalidProblemError(
                    f"buffer {buffer.id!r}: fixed range [{buffer.offset}, {buffer.offset + buffer.size}) "
                    f"exceeds capacity {capacity}"
                )

    def __len__(self) -> int:
        return len(self.buffers)

    def with_capacity(self, capacity: int | None) -> Problem:
        """The same buffers under another capacity."""
        return Problem(self.buffers, capacity)

    def by_id(self) -> dict[BufferId, Buffer]:
        """Buffers keyed by id."""
        return {b.id: b for b in self.buffers}

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The buffers as flat int64 arrays ``(starts, ends, sizes, alignments, fixed)`` in buffer
        order; ``fixed`` is -1 for a free buffer. The compiled methods work on these."""
        bufs, n = self.buffers, len(self.buffers)
        return (
            np.fromiter((b.start for b in bufs), np.int64, n),
            np.fromiter((b.end for b in bufs), np.int64, n),
            np.fromiter((b.size for b in bufs), np.int64, n),
            np.fromiter((b.alignment for b in bufs), np.int64, n),
            np.fromiter((-1 if b.offset is None else b.offset for b in bufs), np.int64, n),
        )


@dataclass(frozen=True)
class Solution:
    """An offset (bytes) for every buffer id."""

    offsets: Mapping[BufferId, int]

    def peak(self, problem: Problem) -> int:
        """The highest address in use: max of offset + size over the problem's buffers (0 if empty)."""
        return max((self.offsets[b.id] + b.size for b in problem.buffers), default=0)


Status = Literal["solved", "infeasible", "failed", "timeout"]


@dataclass
class AllocationResult:
    """What a method returns: a status, the solution when there is one, and statistics.

    ``status`` is one of

    * ``"solved"``: ``solution`` fits the capacity (and has been validated);
    * ``"infeasible"``: proven impossible (``reason`` says why, e.g. LOAD exceeds the capacity);
    * ``"failed"``: a heuristic found no placement under the capacity; not a proof.
      ``solution`` is its complete placement ignoring the capacity, so ``peak`` says by how
      much it missed;
    * ``"timeout"``: the time limit ran out; ``solution`` is the best complete one found, if
      any, and may not fit the capacity.
    """

    method: str
    status: Status
    solution: Solution | None
    peak: int | None  #: highest address used by ``solution`` (bytes), None without a solution
    reason: str = ""  #: why the status is not "solved"
    stats: dict[str, float] = field(default_factory=dict)  #: seconds, nodes, backtracks, ...

    @property
    def solved(self) -> bool:
        return self.status == "solved"

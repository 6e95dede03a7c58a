"""The static memory allocation problem: buffers with fixed live ranges, placed at offsets.

This module holds the data every method and the validator share, and nothing else.

Conventions (see DESIGN.md):

* time is logical: a buffer is live on the half-open interval ``[start, end)``;
* sizes, offsets and capacities are integers in bytes;
* a buffer occupies the half-open address range ``[offset, offset + size)``;
* every number lies in ``[0, MAX_VALUE]`` (see ``MAX_VALUE`` for why and for the sums that
  are bounded too).

A ``Problem`` keeps its buffers as columns (flat int64 arrays plus a tuple of ids), because
the compiled methods, LOAD and the validator work on columns, and a million Python objects
cost seconds to build and hundreds of megabytes to hold. ``Problem.buffers`` still gives the
``Buffer`` objects; they are built on first access only.
"""

from __future__ import annotations

import bisect
import gc
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, Literal

import numpy as np

from allocator.core.limits import MAX_VALUE  # noqa: F401  (re-exported: allocator.MAX_VALUE)

#: Inputs of at least this many buffers (or CSV rows, ``allocator.core.csv_io``) go through the
#: compiled kernels of the input checks and the validator (``invalid_buffers``, ``first_overlap``,
#: ``validate.lower_bound``; they live in ``allocator.core.problem_kernels``); smaller ones through
#: numpy and Python, which compute the same answer (``compiled_for``; a test compares them).
#: Below this size the Python path takes milliseconds, less than loading the kernels, and far
#: less than compiling them: with an empty compile cache they cost about 2.5 s of CPU, which a
#: first ``accelsim alloc`` of a small instance would otherwise pay. So a small problem never
#: compiles them, and a user who builds one and validates a placement of their own never loads
#: numba at all.
COMPILED_FROM = 2048


def compiled_for(n: int) -> bool:
    """Whether the input checks and the validator run their compiled kernels on ``n`` records
    (see ``COMPILED_FROM``); either path gives the same answer."""
    return n >= COMPILED_FROM


class InvalidProblemError(ValueError):
    """Raised when a buffer or problem is malformed; the message names the offending item.

    ``indices`` gives the positions (in the problem's buffer order) of the buffers at fault,
    when the error is about particular buffers, so a reader can point at the lines they came
    from (``read_csv`` does); it is empty otherwise.
    """

    def __init__(self, message: str, indices: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.indices = indices


class UnknownMethodError(InvalidProblemError):
    """Raised when ``solve`` is asked for a method that is not in the registry."""


BufferId = str  # buffer ids are strings: CSV ids, or tensor names with a residency suffix


def _beyond(name: str, value: int) -> str:
    return f"{name} {value} is beyond MAX_VALUE = 2**62 - 1, the largest value the allocator handles"


def buffer_error(bid: object, start: int, end: int, size: int, alignment: int = 1,
                 offset: int | None = None) -> str | None:
    """The first rule a buffer with these (integer) fields breaks, as a message naming it; None when it is valid.

    The rules: ``0 <= start < end``, ``size > 0``, ``alignment >= 1``, a fixed offset ``>= 0``
    and a multiple of the alignment, and every value, as well as the fixed end ``offset +
    size``, at most ``MAX_VALUE``. ``Buffer`` raises this message; ``Problem.from_arrays`` and
    ``read_csv`` use it to word the error for the first bad row they find.

    >>> buffer_error("a", 0, 2, 4) is None
    True
    >>> buffer_error("a", 3, 3, 4)
    "buffer 'a': end 3 <= start 3 (lifetimes are half-open [start, end))"
    >>> buffer_error("a", 0, 1, 2**62)
    "buffer 'a': size 4611686018427387904 is beyond MAX_VALUE = 2**62 - 1, the largest value the allocator handles"
    """
    if start < 0:
        return f"buffer {bid!r}: start {start} is negative"
    if end <= start:
        return f"buffer {bid!r}: end {end} <= start {start} (lifetimes are half-open [start, end))"
    if size <= 0:
        return f"buffer {bid!r}: size {size} must be positive"
    if alignment < 1:
        return f"buffer {bid!r}: alignment {alignment} must be >= 1"
    if offset is not None and offset < 0:
        return f"buffer {bid!r}: fixed offset {offset} is negative"
    for name, value in (("start", start), ("end", end), ("size", size), ("alignment", alignment)):
        if value > MAX_VALUE:
            return f"buffer {bid!r}: {_beyond(name, value)}"
    if offset is not None:
        if offset > MAX_VALUE:
            return f"buffer {bid!r}: {_beyond('fixed offset', offset)}"
        if offset + size > MAX_VALUE:
            return f"buffer {bid!r}: {_beyond(f'fixed range [{offset}, {offset + size}) ends at', offset + size)}"
        if offset % alignment:
            return f"buffer {bid!r}: fixed offset {offset} is not a multiple of alignment {alignment}"
    return None


def id_error(bid: object) -> str:
    """The message refusing ``bid``, a buffer id that is not a string.

    Ids are strings everywhere else (CSV cells, tensor names in schedules, the offsets a
    ``Solution`` maps): an integer id would not match the string a CSV round trip gives back.

    >>> id_error(5)
    'buffer id 5 must be a string (got int)'
    """
    return f"buffer id {bid!r} must be a string (got {type(bid).__name__})"


def invalid_buffers(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray, alignments: np.ndarray,
                    fixed: np.ndarray) -> np.ndarray:
    """Per buffer, True when it breaks a rule of ``buffer_error``: the whole-array form of that check.

    All arguments are int64 arrays of one length; ``fixed`` is -1 for a free buffer (any
    other negative value is an invalid fixed offset). Locate the first True and call
    ``buffer_error`` on that buffer for the message. The compiled
    ``allocator.core.problem_kernels.invalid_buffers`` runs (one pass, no temporaries) when
    ``compiled_for(n)``; else whole-array numpy.

    >>> invalid_buffers(*(np.array(v) for v in ([0, 0], [2, 0], [4, 4], [1, 1], [-1, -1]))).tolist()
    [False, True]
    """
    if compiled_for(len(starts)):
        from allocator.core import problem_kernels  # numba loads with the first kernel, not with the package

        result: np.ndarray = problem_kernels.invalid_buffers(starts, ends, sizes, alignments, fixed)
        return result
    bad = ((starts < 0) | (ends <= starts) | (sizes <= 0) | (alignments < 1) | (ends > MAX_VALUE)
           | (sizes > MAX_VALUE) | (alignments > MAX_VALUE))
    # offset + size could wrap around int64: compare the offset with MAX_VALUE - size (size is in range where
    # the fixed offset is looked at), and divide only by alignments in range
    pinned = (fixed != -1) & ~bad
    room = MAX_VALUE - np.where(pinned, sizes, 0)
    divisor = np.where(pinned, alignments, 1)
    bad |= pinned & ((fixed < 0) | (fixed > room) | (fixed % divisor != 0))
    return bad


@dataclass(frozen=True)
class Buffer:
    """One block of memory with a fixed lifetime.

    Construction checks every field (``buffer_error``; the id is a string) and raises
    ``InvalidProblemError`` naming the buffer.

    >>> Buffer("a", start=0, end=3, size=64, alignment=32).area
    192
    """

    id: BufferId  #: unique name within a problem, a string
    start: int  #: first logical timestep at which the buffer is live
    end: int  #: first timestep at which it is no longer live (exclusive, > start)
    size: int  #: bytes, > 0
    alignment: int = 1  #: the offset must be a multiple of this (bytes, >= 1)
    offset: int | None = None  #: pre-assigned (fixed) offset in bytes, or None when free

    def __post_init__(self) -> None:
        if not isinstance(self.id, str):
            raise InvalidProblemError(id_error(self.id))
        for name in ("start", "end", "size", "alignment"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidProblemError(f"buffer {self.id!r}: {name} must be an integer, got {value!r}")
        if self.offset is not None and (not isinstance(self.offset, int) or isinstance(self.offset, bool)):
            raise InvalidProblemError(f"buffer {self.id!r}: offset must be an integer, got {self.offset!r}")
        message = buffer_error(self.id, self.start, self.end, self.size, self.alignment, self.offset)
        if message:
            raise InvalidProblemError(message)

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


def check_capacity(capacity: object) -> int | None:
    """``capacity`` itself when it is None or a positive integer of at most ``MAX_VALUE``.

    Raises ``InvalidProblemError`` otherwise.

    >>> check_capacity(2**62)
    Traceback (most recent call last):
    ...
    allocator.core.problem.InvalidProblemError: capacity 4611686018427387904 is beyond MAX_VALUE = 2**62 - 1, the \
largest value the allocator handles
    """
    if capacity is None:
        return None
    if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity <= 0:
        raise InvalidProblemError(f"capacity must be a positive integer or None, got {capacity!r}")
    if capacity > MAX_VALUE:
        raise InvalidProblemError(_beyond("capacity", capacity))
    return capacity


def _int64_column(name: str, values: object, ids: tuple[BufferId, ...]) -> np.ndarray:
    """``values`` as an int64 array as long as ``ids``, owned by the problem (a copy, read-only)."""
    n = len(ids)
    array = np.asarray(values)
    if array.dtype == np.bool_ or array.dtype.kind not in "iu":
        raise InvalidProblemError(f"{name} must be an array of integers, got dtype {array.dtype}")
    if array.shape != (n,):
        raise InvalidProblemError(f"{name} has shape {array.shape}, expected ({n},) like the ids")
    if array.dtype.kind == "u" and n and int(array.max()) > MAX_VALUE:
        at = int(np.argmax(array > MAX_VALUE))
        raise InvalidProblemError(f"buffer {ids[at]!r}: {_beyond(name, int(array[at]))}", (at,))
    column = np.array(array, dtype=np.int64)
    column.flags.writeable = False
    return column


class Problem:
    """A set of buffers and the memory they must fit in.

    ``capacity`` is the memory size in bytes, or ``None`` when the peak is to be minimised
    (every method then treats the capacity as unbounded and reports the peak it reached).

    Build one from ``Buffer`` objects, ``Problem(buffers, capacity)``, or from columns,
    ``Problem.from_arrays(ids, starts, ends, sizes, ...)`` (what ``read_csv`` does: no
    per-buffer objects). Either way construction checks the whole problem and raises
    ``InvalidProblemError`` naming the buffer(s), with their positions in ``indices``:

    * every buffer is valid (``buffer_error``), its id a string, and the capacity is a positive
      integer of at most ``MAX_VALUE``;
    * ids are unique;
    * a pinned (fixed-offset) buffer lies inside the capacity;
    * the stacking sums are in range (see ``MAX_VALUE``): the running sum of ``size +
      alignment - 1`` over the buffers in order, and the highest pinned end plus the same
      running sum over the free buffers, stay at most ``MAX_VALUE`` (the error names the
      buffer at which a sum passes it);
    * no two pinned buffers overlap both in time and in address. That is bad input, not a
      verdict of any method: no placement can exist. It is checked here, once for every
      method, by a sweep over the pinned buffers only (O(p log p) for p pinned buffers).

    A problem is immutable. ``with_capacity`` shares the columns with the original (no copy,
    no check but the capacity's own).

    >>> p = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4)], capacity=8)
    >>> len(p), p.ids, p.capacity, p.with_capacity(None).capacity
    (2, ('a', 'b'), 8, None)
    >>> Problem([Buffer("a", 0, 2, 4, offset=0), Buffer("b", 1, 3, 4, offset=2)])
    Traceback (most recent call last):
    ...
    allocator.core.problem.InvalidProblemError: pinned buffers 'a' [0, 4) live [0, 2) and 'b' [2, 6) live [1, 3) \
overlap in both time and address: no placement can exist
    """

    __slots__ = ("_ids", "_starts", "_ends", "_sizes", "_alignments", "_fixed", "_capacity", "_buffers",
                 "_pinned_top", "_pinned_top_index")

    _ids: tuple[BufferId, ...]
    _starts: np.ndarray
    _ends: np.ndarray
    _sizes: np.ndarray
    _alignments: np.ndarray
    _fixed: np.ndarray
    _capacity: int | None
    _buffers: tuple[Buffer, ...] | None
    _pinned_top: int  #: highest offset + size over the pinned buffers (0 without any)
    _pinned_top_index: int  #: the pinned buffer reaching it, -1 without any

    def __init__(self, buffers: Iterable[Buffer], capacity: int | None = None) -> None:
        buffers = tuple(buffers)
        for index, buffer in enumerate(buffers):
            if not isinstance(buffer, Buffer):
                raise InvalidProblemError(f"problem holds {buffer!r}, which is not a Buffer", (index,))
        n = len(buffers)
        columns = (
            np.fromiter((b.start for b in buffers), np.int64, n),
            np.fromiter((b.end for b in buffers), np.int64, n),
            np.fromiter((b.size for b in buffers), np.int64, n),
            np.fromiter((b.alignment for b in buffers), np.int64, n),
            np.fromiter((-1 if b.offset is None else b.offset for b in buffers), np.int64, n),
        )
        for column in columns:
            column.flags.writeable = False
        # every Buffer checked its own fields when it was made
        self._setup(tuple(b.id for b in buffers), columns, capacity, buffers)

    @classmethod
    def from_arrays(cls, ids: Sequence[BufferId], starts: object, ends: object, sizes: object,
                    alignments: object = None, fixed: object = None, capacity: int | None = None) -> Problem:
        """A problem from columns: ``ids`` (strings) and integer arrays of the same length, in buffer order.

        ``alignments`` defaults to all 1; ``fixed`` holds the fixed offsets, -1 for a free
        buffer, and defaults to all free. The arrays are copied. Every buffer is checked with
        whole-array operations and the first invalid one is reported with ``buffer_error``'s
        message.

        >>> p = Problem.from_arrays(["a", "b"], [0, 1], [2, 3], [4, 4], fixed=[-1, 8])
        >>> p.buffers[1]
        Buffer(id='b', start=1, end=3, size=4, alignment=1, offset=8)
        """
        ids = tuple(ids)
        n = len(ids)
        if not all(issubclass(kind, str) for kind in set(map(type, ids))):  # one check per type, at C speed
            at = next(index for index, bid in enumerate(ids) if not isinstance(bid, str))
            raise InvalidProblemError(id_error(ids[at]), (at,))
        columns = (
            _int64_column("starts", starts, ids),
            _int64_column("ends", ends, ids),
            _int64_column("sizes", sizes, ids),
            _int64_column("alignments", np.ones(n, np.int64) if alignments is None else alignments, ids),
            _int64_column("fixed", np.full(n, -1, np.int64) if fixed is None else fixed, ids),
        )
        bad = invalid_buffers(*columns)
        if bad.any():
            at = int(np.argmax(bad))
            start, end, size, alignment, offset = (int(column[at]) for column in columns)
            message = buffer_error(ids[at], start, end, size, alignment, None if offset == -1 else offset)
            assert message is not None, "invalid_buffers and buffer_error disagree"
            raise InvalidProblemError(message, (at,))
        problem = cls.__new__(cls)
        problem._setup(ids, columns, capacity, None)
        return problem

    def _setup(self, ids: tuple[BufferId, ...], columns: tuple[np.ndarray, ...], capacity: object,
               buffers: tuple[Buffer, ...] | None) -> None:
        """Store the columns and run the checks between buffers (see the class docstring)."""
        starts, ends, sizes, alignments, fixed = columns
        self._ids = ids
        self._starts, self._ends, self._sizes, self._alignments, self._fixed = columns
        self._buffers = buffers
        self._capacity = check_capacity(capacity)
        n = len(ids)
        # Duplicates by their hashes first: sorting n int64 is several times faster than a set of n
        # strings. Equal hashes only send us to the exact check, which decides.
        hashes = np.fromiter(map(hash, ids), np.int64, n)
        hashes.sort()
        if n > 1 and bool((hashes[1:] == hashes[:-1]).any()):
            first: dict[BufferId, int] = {}
            for index, bid in enumerate(ids):
                if bid in first:
                    raise InvalidProblemError(f"buffer id {bid!r} appears more than once", (first[bid], index))
                first[bid] = index
        pinned = np.flatnonzero(fixed >= 0)
        self._pinned_top, self._pinned_top_index = 0, -1
        if len(pinned):
            tops = fixed[pinned] + sizes[pinned]  # each <= MAX_VALUE: checked per buffer
            self._pinned_top_index = int(pinned[np.argmax(tops)])
            self._pinned_top = int(tops.max())
        self._check_pinned_fit()
        self._check_stacking_sum()
        if len(pinned) > 1:
            i, j = first_overlap(starts[pinned], ends[pinned], fixed[pinned], fixed[pinned] + sizes[pinned])
            if i >= 0:
                a, b = sorted((int(pinned[i]), int(pinned[j])))
                raise InvalidProblemError(
                    f"pinned buffers {self._describe(a)} and {self._describe(b)} overlap in both time and address: "
                    "no placement can exist", (a, b))

    def _describe(self, index: int) -> str:
        offset, size = int(self._fixed[index]), int(self._sizes[index])
        return f"{self._ids[index]!r} [{offset}, {offset + size}) live [{self._starts[index]}, {self._ends[index]})"

    def _check_pinned_fit(self) -> None:
        if self._capacity is not None and self._pinned_top > self._capacity:
            at = self._pinned_top_index
            offset = int(self._fixed[at])
            raise InvalidProblemError(
                f"buffer {self._ids[at]!r}: fixed range [{offset}, {self._pinned_top}) exceeds capacity "
                f"{self._capacity}", (at,))

    def _check_stacking_sum(self) -> None:
        """Both stacking sums of ``MAX_VALUE``'s comment stay within it; raise naming the buffer where one passes."""
        n = len(self._ids)
        if not n:
            return
        padded = self._sizes + (self._alignments - 1)  # each term < 2**63: both parts are at most MAX_VALUE
        if self._pinned_top + int(padded.max()) * n <= MAX_VALUE:
            return  # even n copies of the largest term fit: neither running sum can pass the limit
        terms = padded.tolist()
        free = (self._fixed < 0).tolist()
        every = accumulate(terms)  # exact Python integers
        above = accumulate((term if is_free else 0 for term, is_free in zip(terms, free, strict=True)),
                           initial=self._pinned_top)
        next(above)
        for index, (total, stacked) in enumerate(zip(every, above, strict=True)):
            if total > MAX_VALUE:
                raise InvalidProblemError(
                    f"buffer {self._ids[index]!r}: the sizes plus alignment padding of the buffers up to this one "
                    f"sum to {total}, beyond MAX_VALUE = 2**62 - 1: stacking them would overflow the allocator's "
                    "int64 arithmetic", (index,))
            if stacked > MAX_VALUE:
                raise InvalidProblemError(
                    f"buffer {self._ids[index]!r}: stacked above the highest pinned end {self._pinned_top}, the free "
                    f"buffers' sizes plus alignment padding up to this one reach {stacked}, beyond MAX_VALUE = "
                    "2**62 - 1: stacking them would overflow the allocator's int64 arithmetic", (index,))

    # --- the public surface -----------------------------------------------------------------

    @property
    def capacity(self) -> int | None:
        """Memory size in bytes, or None to minimise the peak."""
        return self._capacity

    @property
    def ids(self) -> tuple[BufferId, ...]:
        """The buffer ids, in buffer order (no ``Buffer`` objects are built)."""
        return self._ids

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        """The buffers as ``Buffer`` objects, in order; built on first access from the columns."""
        if self._buffers is None:
            # Two million new objects would trigger many full garbage collections, none of which can free anything
            # (the objects are all alive): pausing the collector for the build halves its time.
            collecting = gc.isenabled()
            gc.disable()
            try:
                self._buffers = tuple(map(_trusted_buffer, self._ids, self._starts.tolist(), self._ends.tolist(),
                                          self._sizes.tolist(), self._alignments.tolist(), self._fixed.tolist()))
            finally:
                if collecting:
                    gc.enable()
        return self._buffers

    def __len__(self) -> int:
        return len(self._ids)

    def __repr__(self) -> str:
        return f"Problem({len(self)} buffers, capacity={self._capacity})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Problem):
            return NotImplemented
        return (self._capacity == other._capacity and self._ids == other._ids
                and all(np.array_equal(a, b) for a, b in zip(self._columns(), other._columns(), strict=True)))

    def __hash__(self) -> int:
        return hash((self._capacity, self._ids, self._sizes.tobytes()))

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_"):
            raise AttributeError(f"Problem is immutable: cannot set {name!r} (use with_capacity for another capacity)")
        object.__setattr__(self, name, value)

    def __getstate__(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__ if name != "_buffers"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_buffers", None)

    def _columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return self._starts, self._ends, self._sizes, self._alignments, self._fixed

    def with_capacity(self, capacity: int | None) -> Problem:
        """The same buffers under another capacity: shares the columns, checks only the capacity (O(1))."""
        other = Problem.__new__(Problem)
        for name in self.__slots__:
            object.__setattr__(other, name, getattr(self, name))
        object.__setattr__(other, "_capacity", check_capacity(capacity))
        other._check_pinned_fit()
        return other

    def by_id(self) -> dict[BufferId, Buffer]:
        """Buffers keyed by id."""
        return dict(zip(self._ids, self.buffers, strict=True))

    def arrays(self, copy: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The buffers as flat int64 arrays ``(starts, ends, sizes, alignments, fixed)`` in buffer
        order; ``fixed`` is -1 for a free buffer. The compiled methods work on these.

        By default each call returns fresh, writable copies, so a caller may reorder or change
        them without touching the problem. ``copy=False`` returns the problem's own arrays,
        read-only (writing raises), for callers that only read them: no copy of 40 bytes per
        buffer.
        """
        if not copy:
            return self._columns()
        return (self._starts.copy(), self._ends.copy(), self._sizes.copy(), self._alignments.copy(),
                self._fixed.copy())


def _trusted_buffer(bid: BufferId, start: int, end: int, size: int, alignment: int, fixed: int) -> Buffer:
    """A ``Buffer`` from values the problem has already checked: skips ``__post_init__`` (twice as fast)."""
    buffer = object.__new__(Buffer)
    buffer.__dict__.update(id=bid, start=start, end=end, size=size, alignment=alignment,
                           offset=None if fixed == -1 else fixed)
    return buffer


def first_overlap(starts: np.ndarray, ends: np.ndarray, lows: np.ndarray, highs: np.ndarray) -> tuple[int, int]:
    """Two records whose rectangles ``[starts, ends) x [lows, highs)`` overlap, or ``(-1, -1)``.

    All arguments are int64 arrays of one length, every interval non-empty. A sweep over
    time keeps the set of live records ordered by low address; while no overlap has been
    seen their address intervals are pairwise disjoint, so a starting record can only meet
    its two neighbours in that order (any record further away is separated from it by a
    neighbour). At equal times, ends come first: lifetimes are half-open.

    The live set is a hierarchical bitmap over the records' ranks by low address, so
    inserting, removing and finding a neighbour each take O(log_64 n) word operations,
    however many records are live at once: O(n log n) in all, for the sorts (numpy's).

    >>> first_overlap(*(np.array(v) for v in ([0, 1, 2], [2, 3, 4], [0, 4, 2], [4, 8, 6])))
    (1, 2)
    """
    n = len(starts)
    if n < 2:
        return -1, -1
    by_low = _argsort(lows)
    rank = np.empty(n, np.int64)
    rank[by_low] = np.arange(n)
    by_start = _argsort(starts)
    by_end = _argsort(ends)
    if not compiled_for(n):
        sweep = _sweep_in_python
    else:
        from allocator.core.problem_kernels import sweep_for_overlap as sweep  # numba loads with the first kernel

    # Everything gathered in the order the compiled loop reads it: sequentially by start and by end, and by rank
    # for the neighbours. Cache misses, not arithmetic, are what this loop costs on large inputs.
    i, j = sweep(starts[by_start], rank[by_start], lows[by_start], highs[by_start], ends[by_end], rank[by_end],
                 lows[by_low], highs[by_low])
    return (-1, -1) if i < 0 else (int(by_low[i]), int(by_start[j]))


def _sweep_in_python(start_time: np.ndarray, start_rank: np.ndarray, start_low: np.ndarray, start_high: np.ndarray,
                     end_time: np.ndarray, end_rank: np.ndarray, low_by_rank: np.ndarray,
                     high_by_rank: np.ndarray) -> tuple[int, int]:
    """``problem_kernels.sweep_for_overlap`` for a few records: the same sweep, the same answer, with the
    live ranks in a sorted list (an insertion costs O(live), nothing for small inputs)."""
    starts, ranks, lows, highs = start_time.tolist(), start_rank.tolist(), start_low.tolist(), start_high.tolist()
    ends, gone, low_of, high_of = end_time.tolist(), end_rank.tolist(), low_by_rank.tolist(), high_by_rank.tolist()
    live: list[int] = []  # the ranks of the live records, ascending
    e = 0
    for s, rank in enumerate(ranks):
        while e < len(ends) and ends[e] <= starts[s]:
            del live[bisect.bisect_left(live, gone[e])]
            e += 1
        at = bisect.bisect_left(live, rank)
        if at > 0 and high_of[live[at - 1]] > lows[s]:
            return live[at - 1], s
        if at < len(live) and low_of[live[at]] < highs[s]:
            return live[at], s
        live.insert(at, rank)
    return -1, -1


def _argsort(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values)``, by sorting ``value << b | index`` when that fits in 63 bits (several times faster)."""
    n = len(values)
    shift = max(n - 1, 1).bit_length()
    if int(values.min()) < 0 or int(values.max()).bit_length() + shift > 63:
        return np.argsort(values)
    keys = (values << shift) | np.arange(n)
    keys.sort()
    return keys & ((1 << shift) - 1)


@dataclass(frozen=True)
class Solution:
    """An offset (bytes) for every buffer id."""

    offsets: Mapping[BufferId, int]

    def peak(self, problem: Problem) -> int:
        """The highest address in use: max of offset + size over the problem's buffers (0 if empty)."""
        offsets = self.offsets
        return max(map(operator.add, (offsets[bid] for bid in problem.ids), problem._sizes.tolist()), default=0)


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
    #: seconds, nodes, backtracks, ...; ``solve`` always sets "lower_bound" (LOAD, bytes)
    stats: dict[str, float] = field(default_factory=dict)

    @property
    def solved(self) -> bool:
        return self.status == "solved"


@dataclass
class MinimizeResult:
    """What ``allocator.minimize`` returns: the best placement found, its peak, the best proven
    lower bound and how they were reached (here, next to ``AllocationResult``, because a
    method's anytime routine returns it too, see ``allocator.core.registry.AnytimeFunction``)."""

    method: str
    solution: Solution | None  #: the best placement found (validated), None if none in time; see ``fits``
    peak: int | None  #: highest address used by ``solution`` (bytes), None without one
    lower_bound: int  #: no placement has a lower peak (bytes)
    optimal: bool  #: ``peak == lower_bound``
    seconds: float
    timed_out: bool  #: the time (or the node budget) ran out before optimality was proven
    history: list[tuple[float, int, int]] = field(default_factory=list)  #: (seconds, peak, lower bound) on change
    probes: list[tuple[int, str, float]] = field(default_factory=list)  #: (capacity, outcome, seconds) per probe
    stats: dict[str, float] = field(default_factory=dict)
    capacity: int | None = None  #: the problem's capacity: the most the answer may use (bytes), None for no limit
    reason: str = ""  #: one line: why there is no placement, or whose placement it is when not the method's

    @property
    def gap(self) -> float:
        """(peak - lower bound) / lower bound (infinite without a placement)."""
        if self.peak is None:
            return math.inf
        return (self.peak - self.lower_bound) / self.lower_bound if self.lower_bound else 0.0

    @property
    def fits(self) -> bool:
        """There is a placement and it fits the capacity (any placement fits without one)."""
        return self.peak is not None and (self.capacity is None or self.peak <= self.capacity)

    @property
    def status(self) -> Status:
        """``"solved"`` when the placement fits, ``"infeasible"`` when the lower bound proves that
        nothing fits the capacity, ``"timeout"`` when the time or node budget ran out first, and
        ``"failed"`` when a method without proofs found nothing that fits."""
        if self.fits:
            return "solved"
        if self.capacity is not None and self.lower_bound > self.capacity:
            return "infeasible"
        return "timeout" if self.timed_out else "failed"

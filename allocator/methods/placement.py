"""The placement kernel shared by the one-shot greedy methods: buffers in a given order, each into
a gap between the placed buffers it overlaps in time.

Every method of ``allocator.methods.greedy`` and ``allocator.methods.heuristics`` but the TelaMalloc skyline is
an *order* of the buffers followed by ``place``: take the next buffer, collect the address
ranges of the already placed buffers that overlap it in time, walk them by their low end, and
put the buffer at the lowest offset that fits (first fit) or into the smallest gap that holds
it (best fit; on top of them all when no gap does). Fixed-offset buffers are placed first,
where they are pinned. ``greedy_method`` is that whole recipe for an order given as sort keys;
``verdict`` turns a placement into a method's answer.

Cost. A buffer's placement reads only the placed buffers that overlap it in time, never all
of them. They are kept in a *time index* over the compressed time axis (the cross sections of
``allocator.core.sections``: section k is ``[t_k, t_{k+1})`` between consecutive start/end times):

* per section, a list of the placed buffers that *start* in it, and
* a segment tree over the sections, where each placed buffer is stored at the O(log S)
  canonical nodes that tile its run of sections ``[first, last)``.

A buffer spanning sections ``[f, l)`` overlaps a placed one exactly when the placed one
starts in one of ``f .. l-1`` (the start lists) or is live in section ``f`` and started
before it (the tree nodes on the path from leaf ``f`` to the root, where a buffer live at
``f`` is stored exactly once). So a query reads each overlapping placed buffer at most twice,
plus ``l - f`` list heads and ``log S`` tree nodes, and ``l - f`` is at most one more than
twice the number of buffers overlapping it (every section boundary inside a lifetime is the
start or end of one of them). The gap walk then sorts the k overlapping address ranges by
low end, O(k log k). In all, n buffers cost O(overlapping pairs x log) instead of the O(n^2)
of scanning every placed buffer, and give the same offsets as that scan: the gap walk does
not depend on the order in which the overlapping ranges are found (``place``).

Deadline. The kernel reads a compiled clock before its first placement and every
``CLOCK_EVERY`` placements after, and stops once the deadline has passed. A partial placement
is not a placement: ``verdict`` turns it into status ``"timeout"`` without offsets.

Range of values. ``allocator.core.problem`` keeps every value at most ``MAX_VALUE`` = 2**62 - 1,
and the pinned tops plus the stacked free sizes and their alignment padding too, so no top
this kernel computes for a ``Problem`` passes 2**62 - 1. The kernel takes any int64 arrays,
though, so it never computes past its inputs' range: the gap test is
``cursor <= low - size - pad`` rather than ``aligned + size <= low``, and a buffer whose top
would pass 2**63 - 1 stops it (``stop == "overflow"``) instead of wrapping around.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

import numba
import numpy as np
from numba import njit

from allocator.core import kernel_cache  # noqa: F401  (numba's cache directory, before any kernel is decorated)
from allocator.core.deadline import CLOCK_EVERY, clock, deadline_passed, timeout_reason
from allocator.core.problem import Problem
from allocator.core.registry import MethodOutput
from allocator.core.sections import compress_times
from allocator.methods.sorting import lexsort_order, sort_in_place, stable_argsort

_INT64_MAX = np.iinfo(np.int64).max

Stop = Literal["complete", "deadline", "overflow"]
_STOPS: tuple[Stop, ...] = ("complete", "deadline", "overflow")  # indexed by the kernel's stop code
_COMPLETE, _DEADLINE, _OVERFLOW = 0, 1, 2


class _TimeIndex(NamedTuple):
    """The placed buffers, indexed by time, in flat arrays.

    Both parts are laid out like a CSR matrix, because every buffer's lifetime is known before
    placing starts: slot ``begin[k] + j`` holds the j-th buffer placed in list k, so a query
    reads each list as one contiguous run (linked lists cost a cache miss per record).
    """

    leaves: int  #: leaves of the segment tree: the number of sections rounded up to a power of 2
    start_begin: np.ndarray  #: per section (+1): where its list of buffers starting there begins
    start_fill: np.ndarray  #: per section: how many placed buffers start there
    start_low: np.ndarray  #: per slot: the placed buffer's offset (bytes)
    start_high: np.ndarray  #: per slot: its offset + size (bytes)
    node_begin: np.ndarray  #: per tree node (+1): where its list begins
    node_fill: np.ndarray  #: per tree node: how many placed buffers it holds
    node_first: np.ndarray  #: per slot: the placed buffer's first section
    node_low: np.ndarray  #: per slot: its offset (bytes)
    node_high: np.ndarray  #: per slot: its offset + size (bytes)


@njit(cache=True)
def _new_index(first, last, n_sections):  # pragma: no cover - compiled
    """An empty index with a slot for every buffer in every list it will join."""
    n = first.shape[0]
    leaves = 1
    while leaves < n_sections:
        leaves *= 2
    start_begin = np.zeros(n_sections + 1, np.int64)
    node_begin = np.zeros(2 * leaves + 1, np.int64)
    for i in range(n):
        start_begin[first[i] + 1] += 1
        lo, hi = first[i] + leaves, last[i] + leaves
        while lo < hi:  # the canonical nodes tiling [first, last), as in _insert
            if lo & 1:
                node_begin[lo + 1] += 1
                lo += 1
            if hi & 1:
                hi -= 1
                node_begin[hi + 1] += 1
            lo >>= 1
            hi >>= 1
    for k in range(1, start_begin.shape[0]):  # running sums (loops: np.cumsum is one more overload to compile)
        start_begin[k] += start_begin[k - 1]
    for k in range(1, node_begin.shape[0]):
        node_begin[k] += node_begin[k - 1]
    slots = node_begin[-1]
    return _TimeIndex(leaves, start_begin, np.zeros(n_sections, np.int64), np.empty(n, np.int64),
                      np.empty(n, np.int64), node_begin, np.zeros(2 * leaves, np.int64), np.empty(slots, np.int64),
                      np.empty(slots, np.int64), np.empty(slots, np.int64))


@njit(cache=True)
def _add_to_node(index, node, first, low, high):  # pragma: no cover - compiled
    slot = index.node_begin[node] + index.node_fill[node]
    index.node_first[slot] = first
    index.node_low[slot] = low
    index.node_high[slot] = high
    index.node_fill[node] += 1


@njit(cache=True)
def _insert(index, first, last, low, high):  # pragma: no cover - compiled
    """Record a buffer spanning sections ``[first, last)`` at addresses ``[low, high)``."""
    slot = index.start_begin[first] + index.start_fill[first]
    index.start_low[slot] = low
    index.start_high[slot] = high
    index.start_fill[first] += 1
    lo, hi = first + index.leaves, last + index.leaves
    while lo < hi:
        if lo & 1:
            _add_to_node(index, lo, first, low, high)
            lo += 1
        if hi & 1:
            hi -= 1
            _add_to_node(index, hi, first, low, high)
        lo >>= 1
        hi >>= 1


@njit(cache=True)
def _overlapping(index, first, last, lows, highs):  # pragma: no cover - compiled
    """Write the address ranges of the placed buffers overlapping sections ``[first, last)`` into
    ``lows``/``highs``; return (how many, records read)."""
    m = 0
    for section in range(first, last):
        begin = index.start_begin[section]
        for slot in range(begin, begin + index.start_fill[section]):
            lows[m] = index.start_low[slot]
            highs[m] = index.start_high[slot]
            m += 1
    read = m
    node = first + index.leaves
    while node >= 1:
        begin = index.node_begin[node]
        fill = index.node_fill[node]
        read += fill
        for slot in range(begin, begin + fill):
            if index.node_first[slot] < first:  # those starting at `first` are in the start lists
                lows[m] = index.node_low[slot]
                highs[m] = index.node_high[slot]
                m += 1
        node >>= 1
    return m, read


@njit(cache=True)
def _align_pad(cursor, alignment):  # pragma: no cover - compiled
    """Bytes from ``cursor`` (>= 0) up to the next multiple of ``alignment``."""
    return (alignment - cursor % alignment) % alignment


#: from this many ranges on, the gap walk's sort calls numpy's own (vectorised C) sort from
#: compiled code: about 3x faster than a compiled quicksort for 1,000 keys, worth the call's microsecond; on
#: 300,000 random buffers the kernel's CPU time drops from 6.9 s to 5.0 s
_C_SORT_FROM = 128
#: ... and from this many on, a radix sort of the packed keys (11 bits a pass): no call out of
#: compiled code, and linear. On iopddl/S_1, where a buffer meets 1,500 placed ones on average
#: (43 million pairs), it halves the kernel's CPU time in greedy-by-size's order, and takes about
#: an eighth off on 300,000 random buffers. Below it the histogram's 2,048 counters cost more
#: than the sort
_RADIX_FROM = 512
_RADIX_BITS = 11


@njit(cache=True)
def _c_sort(keys):  # pragma: no cover - compiled
    """Sort ``keys`` in place with numpy's C sort (the keys are distinct, so any sort agrees)."""
    with numba.objmode():
        keys.sort()


@njit(cache=True)
def _radix_sort(keys, m, scratch, bits):  # pragma: no cover - compiled
    """Sort ``keys[:m]`` (non-negative, below ``2**bits``) in place: least significant digit
    first, ``_RADIX_BITS`` bits a pass, each pass a stable counting sort into ``scratch``
    (at least ``m`` entries, overwritten)."""
    radix = 1 << _RADIX_BITS
    counts = np.empty(radix, np.int64)
    source, target = keys, scratch
    shift = 0
    while shift < bits:
        counts[:] = 0
        for k in range(m):
            counts[(source[k] >> shift) & (radix - 1)] += 1
        total = 0
        for digit in range(radix):
            count = counts[digit]
            counts[digit] = total
            total += count
        for k in range(m):
            digit = (source[k] >> shift) & (radix - 1)
            target[counts[digit]] = source[k]
            counts[digit] += 1
        source, target = target, source
        shift += _RADIX_BITS
    if (bits + _RADIX_BITS - 1) // _RADIX_BITS % 2:  # an odd number of passes left the keys in scratch
        for k in range(m):
            keys[k] = scratch[k]


@njit(cache=True)
def _sort_ranges(lows, highs, m, packed, by_low):  # pragma: no cover - compiled
    """Sort the ``m`` ranges ``[lows, highs)`` by low end, in place.

    Each low is packed with its position into one int64 and the packed keys are sorted in
    place (no argsort: this sort is most of the kernel's time), by ``sort_in_place``, numpy's or a
    radix sort as ``m`` grows; when the lows are too large to pack, a stable argsort.
    """
    bits = 1
    while (1 << bits) < m:
        bits += 1
    biggest = 0
    for k in range(m):
        biggest = max(biggest, lows[k])
    if biggest < (1 << (62 - bits)):
        mask = (1 << bits) - 1
        for k in range(m):
            packed[k] = (lows[k] << bits) | k
        if m >= _RADIX_FROM:
            top = (biggest << bits) | mask
            width = 1
            while (top >> width) > 0:
                width += 1
            _radix_sort(packed, m, by_low, width)  # by_low is free until the loop below
        elif m >= _C_SORT_FROM:
            _c_sort(packed[:m])
        else:
            sort_in_place(packed, m)
        for k in range(m):
            lows[k] = packed[k] >> bits
            by_low[k] = highs[packed[k] & mask]
    else:
        order = np.empty(m, np.int64)
        stable_argsort(lows, m, packed, order)  # packed is free until the loop below
        for k in range(m):
            packed[k] = lows[order[k]]
            by_low[k] = highs[order[k]]
        for k in range(m):
            lows[k] = packed[k]
    for k in range(m):  # loops, not slice assignments: those compile numba's shape-mismatch errors
        highs[k] = by_low[k]


@njit(cache=True)
def _gap_walk(lows, highs, m, size, alignment, best_fit, packed, by_low):  # pragma: no cover - compiled
    """The offset for a buffer of ``size`` among the ``m`` ranges ``[lows, highs)``; -1 on overflow.

    Walks the ranges by low end with ``cursor`` = the highest end so far: a range starting
    above the cursor leaves the gap ``[cursor, low)``. First fit takes the first gap that
    holds the aligned buffer, best fit the smallest (measured before alignment; ties: lowest);
    with none, the buffer goes on top of the cursor. Equal lows do not depend on their order
    (only the first of them can open a gap, from the same cursor), so neither does the result.
    ``packed`` and ``by_low`` are scratch space.
    """
    _sort_ranges(lows, highs, m, packed, by_low)
    cursor = np.int64(0)  # everything below is taken by some conflicting buffer (np.int64: one _align_pad)
    chosen = -1
    best_gap = -1
    for k in range(m):
        low = lows[k]
        if low > cursor:
            pad = _align_pad(cursor, alignment)
            if cursor <= low - size - pad:  # aligned cursor + size <= low, without overflow
                if not best_fit:
                    return cursor + pad
                gap = low - cursor
                if best_gap < 0 or gap < best_gap:
                    best_gap = gap
                    chosen = cursor + pad
        if highs[k] > cursor:
            cursor = highs[k]
    if chosen >= 0:
        return chosen
    pad = _align_pad(cursor, alignment)
    if cursor > _INT64_MAX - size - pad:
        return -1
    return cursor + pad


@njit(cache=True)
def _place_kernel(first, last, n_sections, sizes, alignments, fixed, order, best_fit=False, deadline=np.inf,
                  clock_every=CLOCK_EVERY):  # pragma: no cover - compiled
    """``place`` on compressed times; returns (offsets, buffers placed, records read, stop code)."""
    n = sizes.shape[0]
    offsets = np.full(n, -1, np.int64)
    index = _new_index(first, last, n_sections)
    placed = 0
    for i in range(n):
        if fixed[i] >= 0:
            offsets[i] = fixed[i]
            _insert(index, first[i], last[i], fixed[i], fixed[i] + sizes[i])
            placed += 1
    lows = np.empty(n, np.int64)
    highs = np.empty(n, np.int64)
    packed = np.empty(n, np.int64)
    by_low = np.empty(n, np.int64)
    read = 0
    attempted = 0
    for i in order:
        if offsets[i] >= 0:
            continue
        if attempted % clock_every == 0 and clock() > deadline:
            return offsets, placed, read, _DEADLINE
        attempted += 1
        m, r = _overlapping(index, first[i], last[i], lows, highs)
        read += r
        chosen = _gap_walk(lows, highs, m, sizes[i], alignments[i], best_fit, packed, by_low)
        if chosen < 0:
            return offsets, placed, read, _OVERFLOW
        offsets[i] = chosen
        _insert(index, first[i], last[i], chosen, chosen + sizes[i])
        placed += 1
    return offsets, placed, read, _COMPLETE


@dataclass(frozen=True)
class Placement:
    """What ``place`` returns."""

    offsets: np.ndarray  #: int64 per buffer (input order): its offset in bytes, -1 if not placed
    placed: int  #: buffers placed, fixed ones included (all of them when ``stop == "complete"``)
    records_read: int  #: placed-buffer records the time-index queries read (the kernel's work)
    stop: Stop  #: "complete", or why it stopped early: "deadline", or "overflow" (a top above 2**63 - 1)

    @property
    def complete(self) -> bool:
        return self.stop == "complete"


def place(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray, alignments: np.ndarray, fixed: np.ndarray,
          order: np.ndarray, *, best_fit: bool = False, deadline: float | None = None) -> Placement:
    """Place the free buffers in ``order`` after the fixed ones (``fixed >= 0``) at their offsets.

    Parameters are flat int64 arrays indexed by buffer, as ``Problem.arrays()`` gives them;
    ``order`` lists buffer indices (fixed ones in it are skipped, missing free ones stay
    unplaced). ``best_fit`` chooses the smallest gap that holds the buffer instead of the
    lowest; ``deadline`` is a ``work_clock()`` value (``None``: no limit).

    >>> starts, ends = np.array([0, 1, 2]), np.array([2, 3, 4])
    >>> sizes, ones = np.array([4, 4, 4]), np.ones(3, np.int64)
    >>> p = place(starts, ends, sizes, ones, -ones, np.array([0, 1, 2]))
    >>> p.offsets.tolist(), p.placed, p.stop
    ([0, 4, 0], 3, 'complete')
    >>> place(starts, ends, sizes, ones, -ones, np.array([0, 1, 2]), deadline=-1.0).stop
    'deadline'
    """
    times, first, last = compress_times(starts, ends)
    offsets, placed, read, stop = _place_kernel(
        first, last, max(len(times) - 1, 1), sizes, alignments, fixed, np.asarray(order, np.int64),
        best_fit=best_fit, deadline=np.inf if deadline is None else float(deadline))
    return Placement(offsets, int(placed), int(read), _STOPS[stop])


def verdict(problem: Problem, placement: Placement, sizes: np.ndarray, name: str, note: str = "",
            stats: dict[str, float] | None = None) -> MethodOutput:
    """A method's answer from ``placement``.

    * stopped at the deadline: ``"timeout"`` without offsets, the reason saying how far it got;
    * stopped by an overflow: ``"failed"`` without offsets (no int64 offset can hold it);
    * complete: ``"solved"`` when the peak fits the capacity (or there is none), else ``"failed"``
      with the placement and the peak (a heuristic's miss is no proof of infeasibility).

    ``sizes`` are the buffers' sizes (``problem.arrays()[2]``); ``note`` ends the reason of a
    capacity miss.
    """
    stats = stats or {}
    n = len(problem)
    if placement.stop == "deadline":
        return MethodOutput("timeout", None, timeout_reason(name, placement.placed, n), stats)
    if placement.stop == "overflow":
        return MethodOutput("failed", None, f"{name}: after {placement.placed:,} of {n:,} buffers the next one "
                            "would end above 2**63 - 1 bytes", stats)
    offsets = placement.offsets
    placement_map = dict(zip(problem.ids, offsets.tolist(), strict=True))
    peak = int((offsets + sizes).max()) if n else 0
    if problem.capacity is not None and peak > problem.capacity:
        return MethodOutput("failed", placement_map,
                            f"{name} reached peak {peak} > capacity {problem.capacity}{note}", stats)
    return MethodOutput("solved", placement_map, stats=stats)


def greedy_method(problem: Problem, arrays: tuple[np.ndarray, ...], keys: tuple[np.ndarray, ...], *,
                  best_fit: bool, name: str, deadline: float | None) -> MethodOutput:
    """The whole of a one-shot greedy method: ``arrays`` (``problem.arrays()``) placed in the
    order of ``keys`` (``lexsort_order``), then ``verdict``."""
    starts, ends, sizes, alignments, fixed = arrays
    if len(problem) == 0:
        return MethodOutput("solved", {})
    if deadline_passed(deadline):  # the keys took the time left: no need to sort them
        return MethodOutput("timeout", None, timeout_reason(name, int((fixed >= 0).sum()), len(problem)))
    order = lexsort_order(keys, len(starts))
    placement = place(starts, ends, sizes, alignments, fixed, order, best_fit=best_fit, deadline=deadline)
    return verdict(problem, placement, sizes, name)

"""The compiled kernels of the problem's input checks and of the validator.

They live apart from ``allocator.core.problem`` and ``allocator.core.validate`` so that importing the
package does not import numba (a quarter of a second of CPU before any work): those modules
import this one inside the functions that run a kernel, the first time one is needed. No
placement method uses these kernels, so the validator still shares no code with a method.

* ``invalid_buffers``: the whole-array form of ``problem.buffer_error``;
* ``sweep_for_overlap`` (with its hierarchical bitmap, ``bitmap_*``): the sweep of
  ``problem.first_overlap``;
* ``overlapping_pairs``: the pairs of records that overlap, for ``validate``'s report;
* ``max_live``: the most bytes live at once, for ``validate.lower_bound`` (LOAD).
"""

from __future__ import annotations

import numba
import numpy as np

from allocator.core import kernel_cache  # noqa: F401  (numba's cache directory, before any kernel is decorated)
from allocator.core.limits import MAX_VALUE

__all__ = ["bitmap_above", "bitmap_below", "bitmap_clear", "bitmap_set", "highest_bit", "invalid_buffers",
           "max_live", "overlapping_pairs", "sweep_for_overlap"]


@numba.njit(cache=True)
def invalid_buffers(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray, alignments: np.ndarray,
                    fixed: np.ndarray) -> np.ndarray:
    """Per buffer, True when it breaks a rule of ``buffer_error``: the compiled, whole-array form of that check.

    All arguments are int64 arrays of one length; ``fixed`` is -1 for a free buffer (any
    other negative value is an invalid fixed offset). Locate the first True and call
    ``buffer_error`` on that buffer for the message.

    >>> invalid_buffers(*(np.array(v) for v in ([0, 0], [2, 0], [4, 4], [1, 1], [-1, -1]))).tolist()
    [False, True]
    """
    bad = np.zeros(len(starts), np.bool_)
    for i in range(len(starts)):
        start, end, size, alignment, offset = starts[i], ends[i], sizes[i], alignments[i], fixed[i]
        wrong = start < 0 or end <= start or size <= 0 or alignment < 1 or end > MAX_VALUE or size > MAX_VALUE
        wrong = wrong or alignment > MAX_VALUE
        if offset != -1 and not wrong:
            # offset + size could wrap around int64: compare offset with MAX_VALUE - size (size is in range here)
            wrong = offset < 0 or offset > MAX_VALUE - size or offset % alignment != 0
        bad[i] = wrong
    return bad


@numba.njit(cache=True)
def sweep_for_overlap(start_time: np.ndarray, start_rank: np.ndarray, start_low: np.ndarray,
                       start_high: np.ndarray, end_time: np.ndarray, end_rank: np.ndarray, low_by_rank: np.ndarray,
                       high_by_rank: np.ndarray) -> tuple[int, int]:
    """The sweep of ``first_overlap``. Returns ``(rank of the live record met, start position of the new one)``.

    The live set is a bitmap over ranks with a summary bitmap per level above it (one bit
    per non-empty word below): n bits at the bottom, a 64th of that above, and so on, so
    the bottom level of two million ranks is 250 KB and stays in cache. Inserting,
    removing, and finding the nearest live rank below or above one take a few word
    operations per level (about log_64 n levels).
    """
    n = len(start_time)
    base = np.zeros(12, np.int64)  # offset of each level's words in ``bits``; 64**11 > 2**63 ranks
    levels = 0
    width = n
    total = 0
    while True:
        words = (width + 63) // 64
        base[levels] = total
        total += words
        levels += 1
        if words == 1:
            break
        width = words
    bits = np.zeros(total, np.uint64)
    e = 0
    for s in range(n):
        while e < n and end_time[e] <= start_time[s]:
            bitmap_clear(bits, base, levels, end_rank[e])
            e += 1
        below = bitmap_below(bits, base, levels, start_rank[s])
        if below >= 0 and high_by_rank[below] > start_low[s]:
            return below, s
        above = bitmap_above(bits, base, levels, start_rank[s])
        if above >= 0 and low_by_rank[above] < start_high[s]:
            return above, s
        bitmap_set(bits, base, levels, start_rank[s])
    return -1, -1


@numba.njit(cache=True)
def bitmap_set(bits: np.ndarray, base: np.ndarray, levels: int, position: int) -> None:
    for level in range(levels):
        word = base[level] + (position >> 6)
        was = bits[word]
        bits[word] = was | (np.uint64(1) << np.uint64(position & 63))
        if was:
            return  # the levels above already know this word is non-empty
        position >>= 6


@numba.njit(cache=True)
def bitmap_clear(bits: np.ndarray, base: np.ndarray, levels: int, position: int) -> None:
    for level in range(levels):
        word = base[level] + (position >> 6)
        bits[word] &= ~(np.uint64(1) << np.uint64(position & 63))
        if bits[word]:
            return  # the word still holds other bits: the levels above stay as they are
        position >>= 6


@numba.njit(cache=True)
def highest_bit(word: np.uint64) -> int:
    """Index of the highest set bit of a non-zero word."""
    index = 0
    for shift in (32, 16, 8, 4, 2, 1):
        if word >> np.uint64(shift):
            word >>= np.uint64(shift)
            index += shift
    return index


@numba.njit(cache=True)
def bitmap_below(bits: np.ndarray, base: np.ndarray, levels: int, position: int) -> int:
    """The highest set position below ``position``, or -1."""
    level = 0
    while level < levels:
        word = position >> 6
        mask = bits[base[level] + word] & ((np.uint64(1) << np.uint64(position & 63)) - np.uint64(1))
        if mask:
            position = word * 64 + highest_bit(mask)
            while level > 0:
                level -= 1
                position = position * 64 + highest_bit(bits[base[level] + position])
            return position
        if word == 0:
            return -1
        position = word
        level += 1
    return -1


@numba.njit(cache=True)
def bitmap_above(bits: np.ndarray, base: np.ndarray, levels: int, position: int) -> int:
    """The lowest set position above ``position``, or -1."""
    level = 0
    while level < levels:
        word = position >> 6
        # the bits above position & 63 (for 63 the shift wraps to 0 and the mask is empty)
        mask = bits[base[level] + word] & ~((np.uint64(2) << np.uint64(position & 63)) - np.uint64(1))
        if mask:
            position = word * 64 + highest_bit(mask & (~mask + np.uint64(1)))
            while level > 0:
                level -= 1
                below = bits[base[level] + position]
                position = position * 64 + highest_bit(below & (~below + np.uint64(1)))
            return position
        position = word
        level += 1
    return -1


@numba.njit(cache=True)
def overlapping_pairs(by_start: np.ndarray, by_end: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                       lows: np.ndarray, highs: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The pairs of records overlapping in time and address: ``(earlier, later, how many in all)``.

    Sweeps the records by start, comparing each with every record still live (an unordered
    array, records removed by swapping in the last one): O(n x live + pairs). Keeps the
    first ``limit`` pairs and counts the rest. Run only once ``first_overlap`` has found
    that a pair exists.
    """
    n = len(by_start)
    active = np.empty(n, np.int64)  # the live records, with their address ranges alongside: scanned in cache
    active_low = np.empty(n, np.int64)
    active_high = np.empty(n, np.int64)
    slot = np.empty(n, np.int64)  # where each live record sits in ``active``
    count = 0
    e = 0
    total = 0
    earlier = np.empty(limit, np.int64)
    later = np.empty(limit, np.int64)
    for s in range(n):
        k = by_start[s]
        while e < n and ends[by_end[e]] <= starts[k]:
            at = slot[by_end[e]]
            e += 1
            count -= 1
            active[at], active_low[at], active_high[at] = active[count], active_low[count], active_high[count]
            slot[active[at]] = at
        low, high = lows[k], highs[k]
        hits = 0
        for q in range(count):  # a branch-free count the compiler vectorises; most records meet nothing
            hits += (low < active_high[q]) & (active_low[q] < high)
        if hits:
            for q in range(count):
                if low < active_high[q] and active_low[q] < high:
                    if total < limit:
                        earlier[total] = active[q]
                        later[total] = k
                    total += 1
        active[count], active_low[count], active_high[count] = k, low, high
        slot[k] = count
        count += 1
    kept = min(total, limit)
    return earlier[:kept], later[:kept], total


@numba.njit(cache=True)
def max_live(start_times: np.ndarray, start_sizes: np.ndarray, end_times: np.ndarray,
              end_sizes: np.ndarray) -> int:
    """The most bytes live at once, from the starts and the ends each sorted by time."""
    live = 0
    best = 0
    e = 0
    for s in range(len(start_times)):
        while e < len(end_times) and end_times[e] <= start_times[s]:
            live -= end_sizes[e]
            e += 1
        live += start_sizes[s]
        best = max(best, live)
    return best

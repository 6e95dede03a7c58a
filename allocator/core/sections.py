"""Cross sections: the sweep over buffer start/end events shared by the exact searches.

A *cross section* is a maximal time interval ``[t_k, t_{k+1})`` between two consecutive
event times (a buffer starts or ends); the set of live buffers is constant inside it.
Every buffer spans a contiguous run of sections ``[first_section, last_section)``, and two
buffers overlap in time exactly when their runs share a section (MiniMalloc §6.2), so the
searches never need the (possibly quadratic) overlap graph: the lowest offset a buffer can
take is the highest top among the sections it spans.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from allocator.core import kernel_cache  # noqa: F401  (numba's cache directory, before any kernel is decorated)
from allocator.core.problem import Problem


@dataclass(frozen=True)
class Sweep:
    """Flat arrays describing a problem's time structure (all int64, indexed by buffer or section)."""

    times: np.ndarray  #: event times t_0 < t_1 < ...; section k is [times[k], times[k+1])
    first_section: np.ndarray  #: per buffer: index of the first section it is live in
    last_section: np.ndarray  #: per buffer: one past the last section it is live in
    section_total: np.ndarray  #: per section: total bytes of the buffers live in it

    @property
    def n_sections(self) -> int:
        return len(self.section_total)

    def span_total(self) -> np.ndarray:
        """Per buffer: the largest section total over the sections it spans (the "T" key)."""
        return range_max(self.section_total, self.first_section, self.last_section)


def sweep(problem: Problem) -> Sweep:
    """Compute the cross sections of ``problem``.

    >>> from allocator.core.problem import Buffer
    >>> s = sweep(Problem([Buffer("a", 0, 3, 4), Buffer("b", 3, 9, 4), Buffer("c", 0, 9, 4)]))
    >>> s.times.tolist(), s.first_section.tolist(), s.last_section.tolist(), s.section_total.tolist()
    ([0, 3, 9], [0, 1, 0], [1, 2, 2], [8, 8])
    """
    starts, ends, sizes, _, _ = problem.arrays()
    return sweep_arrays(starts, ends, sizes)


def sweep_arrays(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray) -> Sweep:
    """``sweep`` on flat int64 arrays (``Problem.arrays()``'s first three), for callers that have them.

    Whole-array numpy plus one compiled pass: about 1 s for 2,000,000 buffers. Section totals
    are exact int64 sums; they cannot overflow while the sizes add up to at most 2**63 - 1
    (``allocator.core.problem`` limits the sum to 2**62 - 1).
    """
    times, first, last = compress_times(starts, ends)
    n_sections = max(len(times) - 1, 0)
    return Sweep(times, first, last, _section_totals(first, last, sizes.astype(np.int64), n_sections))


def compress_times(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(times, first, last)``: the distinct event times in order, and every buffer's start and
    end as indices into them (its sections are ``[first, last)``).

    The same as ``np.unique`` plus two ``np.searchsorted``, which take 5 s and 3 s on
    2,000,000 buffers here (unique hashes; searchsorted misses the cache at every key). When the
    times are dense (the largest below 8 x the number of events, as step numbers are) a table
    indexed by time marks the events (0.2 s); otherwise one sort of the events packed with
    their index (one int64 each when they fit), else an argsort.

    >>> times, first, last = compress_times(np.array([5, 0, 5]), np.array([9, 5, 7]))
    >>> times.tolist(), first.tolist(), last.tolist()
    ([0, 5, 7, 9], [1, 0, 1], [3, 1, 2])
    """
    n = len(starts)
    starts, ends = starts.astype(np.int64), ends.astype(np.int64)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    horizon = int(ends.max())
    if horizon < 16 * n + 1024:
        present = np.zeros(horizon + 1, bool)
        present[starts] = True
        present[ends] = True
        rank = np.cumsum(present, dtype=np.int64) - 1
        return np.flatnonzero(present).astype(np.int64), rank[starts], rank[ends]
    events = np.concatenate([starts, ends])
    bits = (2 * n).bit_length()
    if horizon < 1 << (63 - bits):  # (time, index) packed in one int64: sort the packed keys
        packed = np.sort((events << bits) | np.arange(2 * n, dtype=np.int64))
        order, ordered = packed & ((1 << bits) - 1), packed >> bits
    else:
        order = np.argsort(events, kind="stable")
        ordered = events[order]
    new = np.empty(2 * n, bool)
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    rank = np.empty(2 * n, np.int64)
    rank[order] = np.cumsum(new, dtype=np.int64) - 1
    return ordered[new], rank[:n], rank[n:]


@njit(cache=True)
def _section_totals(first, last, sizes, n_sections):  # pragma: no cover - compiled
    """Per section, the total size of the buffers live in it: a difference array, summed up."""
    delta = np.empty(n_sections + 1, np.int64)
    for k in range(n_sections + 1):  # np.empty and a loop: np.zeros is one more numba overload to compile
        delta[k] = 0
    for i in range(first.shape[0]):
        delta[first[i]] += sizes[i]
        delta[last[i]] -= sizes[i]
    totals = np.empty(n_sections, np.int64)
    running = np.int64(0)
    for k in range(n_sections):  # loops, not np.cumsum and a slice: less for numba to compile
        running += delta[k]
        totals[k] = running
    return totals


def range_max(values: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """``max(values[first[i]:last[i]])`` for every i (ranges non-empty).

    A bottom-up segment tree over ``values`` (2 x len(values) entries, where a sparse table
    needs len x log2(len): 700 MB for 4M sections), O(log) per range, compiled.

    >>> range_max(np.array([3, 1, 4, 1, 5]), np.array([0, 1, 3]), np.array([2, 4, 4])).tolist()
    [3, 4, 1]
    """
    if len(first) == 0:
        return np.zeros(0, np.int64)
    return _range_max(values.astype(np.int64), first.astype(np.int64), last.astype(np.int64))


@njit(cache=True)
def _range_max(values, first, last):  # pragma: no cover - compiled
    n = values.shape[0]
    tree = np.empty(2 * n, np.int64)
    for k in range(n):  # a loop, not a slice assignment: that would compile numba's shape errors
        tree[n + k] = values[k]
    for node in range(n - 1, 0, -1):
        tree[node] = max(tree[2 * node], tree[2 * node + 1])
    result = np.empty(first.shape[0], np.int64)
    for i in range(first.shape[0]):
        lo, hi = first[i] + n, last[i] + n
        best = tree[lo]
        while lo < hi:
            if lo & 1:
                best = max(best, tree[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                best = max(best, tree[hi])
            lo >>= 1
            hi >>= 1
        result[i] = best
    return result

"""Greedy placement heuristics of production compilers.

Each takes buffers one at a time in a fixed order and puts each at a position chosen among
the gaps left by the already placed buffers it overlaps in time:

* ``first-fit``: buffers in start order, each at the lowest offset that fits. This is the
  timing-unaware baseline of TelaMalloc §3.1 (and what an online arena does).
* ``greedy-by-size``: largest first (ties: earlier start, longer lifetime), lowest offset
  that fits. TensorFlow Lite's ``GreedyBySize`` planner (Pisarchyk and Lee 2020).
* ``best-fit``: largest first (ties: longer lifetime, earlier start), into the *smallest*
  gap that holds it (ties: lowest offset); only when no gap between placed buffers holds it
  does it go on top. XLA's global decreasing-size best-fit heap.
* ``load-best-fit``: the canonical search's TWA preorder as a greedy order: buffers that
  live through the most loaded cross section first (T, the largest section total they
  span), then longest, then largest area; each into the smallest gap, like ``best-fit``.
  Buffers that share the peak section go first, so the peak is packed before the rest
  fills around it. On the 28,526-buffer iopddl/S_1 trace this ends 0.26 % above LOAD
  where greedy-by-size ends 1.67 % above (and the exact search has no time to start).

Fixed-offset buffers are placed first, where they are pinned. The heuristics ignore the
capacity while placing and then compare the peak with it: above the capacity the status is
``"failed"`` (a heuristic's miss is no proof of infeasibility) and the full placement is
returned so the caller sees by how much it missed. They run to completion in O(n^2) time,
so ``timeout`` is not consulted. The placement loop is compiled with numba; buffers live in
flat int64 arrays.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from allocator.problem import Problem
from allocator.registry import MethodOutput, register
from allocator.sweep import sweep

_PACK_BITS = 20
_PACK_COUNT = 1 << _PACK_BITS
_PACK_LOW = 1 << (62 - _PACK_BITS)


@njit(cache=True)
def sort_by_key(keys, m, packed, order):  # pragma: no cover - compiled
    """``order[:m]`` = the positions of ``keys[:m]`` (all >= 0) in ascending key order.

    When the keys and positions fit, each (key, position) is packed in one int64 and sorted
    directly, twice as fast as an argsort; ties come out by position. Otherwise a stable argsort.
    ``packed`` is scratch space of at least ``m`` entries.
    """
    small = m < _PACK_COUNT
    for k in range(m):
        if keys[k] >= _PACK_LOW:
            small = False
            break
    if small:
        for k in range(m):
            packed[k] = (keys[k] << _PACK_BITS) | k
        sorted_keys = np.sort(packed[:m])
        for k in range(m):
            order[k] = sorted_keys[k] & (_PACK_COUNT - 1)
    else:
        order[:m] = np.argsort(keys[:m], kind="mergesort")


@njit(cache=True)
def _place(starts, ends, sizes, aligns, fixed, order, best_fit):  # pragma: no cover - compiled
    """Place buffers in ``order`` (fixed ones, ``fixed >= 0``, are pre-placed); return offsets.

    The placed buffers are kept as one contiguous record each (start, end, low, high), so the
    scan for the ones overlapping in time touches nothing else; their address ranges are then
    sorted by low end (``sort_by_key``; the gap walk does not depend on the order of equal lows).
    """
    n = starts.shape[0]
    offsets = np.full(n, -1, np.int64)
    p_start = np.empty(n, np.int64)
    p_end = np.empty(n, np.int64)
    p_low = np.empty(n, np.int64)
    p_high = np.empty(n, np.int64)
    count = 0
    for i in range(n):
        if fixed[i] >= 0:
            offsets[i] = fixed[i]
            p_start[count] = starts[i]
            p_end[count] = ends[i]
            p_low[count] = fixed[i]
            p_high[count] = fixed[i] + sizes[i]
            count += 1
    lows = np.empty(n, np.int64)
    highs = np.empty(n, np.int64)
    packed = np.empty(n, np.int64)
    by_low = np.empty(n, np.int64)
    for i in order:
        if offsets[i] >= 0:
            continue
        s, e, size, a = starts[i], ends[i], sizes[i], aligns[i]
        m = 0
        for j in range(count):
            if p_start[j] < e and p_end[j] > s:
                lows[m] = p_low[j]
                highs[m] = p_high[j]
                m += 1
        sort_by_key(lows, m, packed, by_low)
        cursor = 0  # everything below cursor is taken by some conflicting buffer (or is 0)
        chosen = -1
        best_gap = -1
        for k in range(m):
            lo = lows[by_low[k]]
            if lo > cursor:
                candidate = (cursor + a - 1) // a * a
                if candidate + size <= lo:
                    if not best_fit:
                        chosen = candidate
                        break
                    gap = lo - cursor
                    if best_gap < 0 or gap < best_gap:
                        best_gap = gap
                        chosen = candidate
            hi = highs[by_low[k]]
            if hi > cursor:
                cursor = hi
        if chosen < 0:
            chosen = (cursor + a - 1) // a * a
        offsets[i] = chosen
        p_start[count] = s
        p_end[count] = e
        p_low[count] = chosen
        p_high[count] = chosen + size
        count += 1
    return offsets


def _lexsort_order(keys: tuple[np.ndarray, ...], n: int) -> np.ndarray:
    """Buffer indices sorted by ``keys`` (np.lexsort: the last key is the primary one), ties by index."""
    return np.lexsort((np.arange(n),) + keys).astype(np.int64)


def _size_keys(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, ...]:
    """greedy-by-size's order as lexsort keys: largest first, then earlier start, then longer lifetime."""
    return (-(ends - starts), starts, -sizes)


def _verdict(problem: Problem, offsets: np.ndarray, sizes: np.ndarray, name: str, note: str = "",
             stats: dict[str, float] | None = None) -> MethodOutput:
    """A complete placement as the method's answer: "solved" when the peak fits the capacity (or
    there is none), else "failed" with the placement and the peak; ``note`` ends the reason."""
    placement = {b.id: int(o) for b, o in zip(problem.buffers, offsets, strict=True)}
    peak = int((offsets + sizes).max()) if len(sizes) else 0
    stats = stats or {}
    if problem.capacity is not None and peak > problem.capacity:
        return MethodOutput("failed", placement, f"{name} reached peak {peak} > capacity {problem.capacity}{note}",
                            stats)
    return MethodOutput("solved", placement, stats=stats)


def _run(problem: Problem, arrays: tuple[np.ndarray, ...], keys: tuple[np.ndarray, ...], best_fit: bool,
         name: str) -> MethodOutput:
    starts, ends, sizes, aligns, fixed = arrays
    if not problem.buffers:
        return MethodOutput("solved", {})
    order = _lexsort_order(keys, len(starts))
    offsets = _place(starts, ends, sizes, aligns, fixed, order, best_fit)
    return _verdict(problem, offsets, sizes, name)


@register("first-fit", "buffers in start order, each at the lowest offset that fits (TelaMalloc §3.1 baseline)")
def first_fit(problem: Problem, deadline: float | None = None) -> MethodOutput:
    arrays = problem.arrays()
    starts, ends, sizes, _, _ = arrays
    return _run(problem, arrays, (-sizes, starts), best_fit=False, name="first-fit")


@register("greedy-by-size", "largest first, lowest offset that fits (TensorFlow Lite GreedyBySize)")
def greedy_by_size(problem: Problem, deadline: float | None = None) -> MethodOutput:
    arrays = problem.arrays()
    starts, ends, sizes, _, _ = arrays
    return _run(problem, arrays, _size_keys(starts, ends, sizes), best_fit=False, name="greedy-by-size")


@register("best-fit", "largest first, into the smallest gap that holds it (XLA global decreasing-size best fit)")
def best_fit(problem: Problem, deadline: float | None = None) -> MethodOutput:
    arrays = problem.arrays()
    starts, ends, sizes, _, _ = arrays
    return _run(problem, arrays, (starts, -(ends - starts), -sizes), best_fit=True, name="best-fit")


@register("load-best-fit", "most loaded cross section first, then longest, then largest area, into the smallest "
          "gap (MiniMalloc's TWA preorder as a greedy order)")
def load_best_fit(problem: Problem, deadline: float | None = None) -> MethodOutput:
    arrays = problem.arrays()
    starts, ends, sizes, _, _ = arrays
    width = ends - starts
    load = sweep(problem).span_total() if problem.buffers else np.zeros(0, np.int64)
    return _run(problem, arrays, (starts, -width * sizes, -width, -load), best_fit=True, name="load-best-fit")

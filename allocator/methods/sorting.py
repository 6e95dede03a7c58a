"""Sorting kernels shared by the placement methods (the greedy placement, TelaMalloc's kernel,
idealloc): compiled sorts of int64 keys, written out because numba's own sorts cost more to
compile than the kernels that call them, and ``lexsort_order``, the greedy methods' order from
several keys.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from allocator.core import kernel_cache  # noqa: F401  (numba's cache directory, before any kernel is decorated)

#: ``sort_by_key`` packs (key, position) pairs into one int64 while positions fit this many bits
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
        sort_in_place(packed, m)
        for k in range(m):
            order[k] = packed[k] & (_PACK_COUNT - 1)
    else:
        stable_argsort(keys, m, packed, order)


#: ``sort_in_place`` sorts runs shorter than this by insertion
_INSERTION_BELOW = 16


@njit(cache=True)
def sort_in_place(keys, m):  # pragma: no cover - compiled
    """Sort ``keys[:m]`` ascending in place: quicksort on a median of three, insertion sort below
    ``_INSERTION_BELOW`` keys, the larger part of each split kept on a stack of bounds (so at most
    2 x log2(m) entries).

    The same algorithm as numba's ``ndarray.sort``, written out for int64 keys: numba's generic
    one takes about a second to compile (its stack is a list of records), this one a tenth.
    Equal keys may come out in any order, which is why the callers sort keys packed with their
    position (all distinct): their order is then the only sorted one.
    """
    stack = np.empty(128, np.int64)
    top = 0
    lo = np.int64(0)
    hi = np.int64(m - 1)
    while True:
        while hi - lo >= _INSERTION_BELOW:
            mid = (lo + hi) >> 1
            if keys[mid] < keys[lo]:
                keys[mid], keys[lo] = keys[lo], keys[mid]
            if keys[hi] < keys[mid]:
                keys[mid], keys[hi] = keys[hi], keys[mid]
                if keys[mid] < keys[lo]:
                    keys[mid], keys[lo] = keys[lo], keys[mid]
            pivot = keys[mid]
            i, j = lo, hi
            while i <= j:  # keys[lo] <= pivot <= keys[hi] stop both scans inside [lo, hi]
                while keys[i] < pivot:
                    i += 1
                while pivot < keys[j]:
                    j -= 1
                if i <= j:
                    keys[i], keys[j] = keys[j], keys[i]
                    i += 1
                    j -= 1
            if j - lo > hi - i:  # keys[lo..j] <= pivot <= keys[i..hi]: go on with the smaller part
                stack[top] = lo
                stack[top + 1] = j
                lo = i
            else:
                stack[top] = i
                stack[top + 1] = hi
                hi = j
            top += 2
        for k in range(lo + 1, hi + 1):
            v = keys[k]
            w = k
            while w > lo and v < keys[w - 1]:
                keys[w] = keys[w - 1]
                w -= 1
            keys[w] = v
        if top == 0:
            return
        top -= 2
        lo = stack[top]
        hi = stack[top + 1]


@njit(cache=True)
def stable_argsort(keys, m, scratch, order):  # pragma: no cover - compiled
    """``order[:m]`` = the positions ``0 .. m-1`` sorted by ``keys``, ties by position (what
    ``np.argsort(keys[:m], kind="stable")`` gives): a bottom-up merge sort, written out because
    numba's own argsort costs more to compile than the rest of a kernel. ``scratch`` is space of
    at least ``m`` entries, overwritten."""
    for k in range(m):
        order[k] = k
    source, target = order, scratch
    in_scratch = False
    width = 1
    while width < m:
        for lo in range(0, m, 2 * width):
            mid = min(lo + width, m)
            hi = min(lo + 2 * width, m)
            i, j, out = lo, mid, lo
            while i < mid and j < hi:
                if keys[source[j]] < keys[source[i]]:
                    target[out] = source[j]
                    j += 1
                else:
                    target[out] = source[i]
                    i += 1
                out += 1
            while i < mid:
                target[out] = source[i]
                i += 1
                out += 1
            while j < hi:
                target[out] = source[j]
                j += 1
                out += 1
        source, target = target, source
        in_scratch = not in_scratch
        width *= 2
    if in_scratch:
        for k in range(m):
            order[k] = scratch[k]


def lexsort_order(keys: tuple[np.ndarray, ...], n: int) -> np.ndarray:
    """Buffer indices sorted by ``keys`` (``np.lexsort``: the last key is the primary one), ties by index.

    Keys are integer arrays (int64, or uint64 limbs). ``np.lexsort`` makes one stable pass per
    key (1.3 s of CPU for greedy-by-size's three keys on 2,000,000 buffers), so adjacent keys
    whose value ranges fit together in 62 bits are first packed into one int64, most
    significant first; when everything and the index fit in 63 bits, one plain sort of packed
    values does it all. The order is the same: packing (key - min) values is order-preserving,
    and ties still fall to the index (the passes are stable).

    >>> lexsort_order((np.array([5, 3, 4]), np.array([1, 0, 1])), 3).tolist()
    [1, 2, 0]
    """
    if n == 0:
        return np.zeros(0, np.int64)
    words: list[np.ndarray] = []  # most significant first
    used = 63  # bits used in words[-1]; 63 = full, start a new word
    for key in reversed(keys):
        low, high = int(key.min()), int(key.max())
        bits = (high - low).bit_length()
        if bits > 62:  # too wide to pack: a word of its own, as it is
            words.append(key)
            used = 63
        elif used + bits <= 62:
            words[-1] = (words[-1] << bits) | (key - low).astype(np.int64)
            used += bits
        else:
            words.append((key - low).astype(np.int64))
            used = bits
    index_bits = max(n - 1, 1).bit_length()
    if len(words) == 1 and used + index_bits <= 63:
        return np.sort((words[0] << index_bits) | np.arange(n, dtype=np.int64)) & ((1 << index_bits) - 1)
    if len(words) == 1:
        return np.argsort(words[0], kind="stable").astype(np.int64)
    return np.lexsort(tuple(reversed(words))).astype(np.int64)

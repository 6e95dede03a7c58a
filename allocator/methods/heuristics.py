"""More production heuristics: the orders of TensorFlow Lite, TVM and TelaMalloc over one placement loop.

Every method here but ``telamalloc-heuristic`` is an order of the buffers followed by
``allocator.methods.placement.place`` (lowest offset that fits, or best-fitting gap), so the gap walk
is compiled once, for all of them:

* ``greedy-in-order``: buffers in the order they are first used (start, then index), each at
  the lowest offset that fits. TensorFlow Lite's in-order ("naive") strategy, one of the five
  TFLite planners listed by the CONVOLVE D5.5 survey (Lamprakos and Xydis 2024, §2). Unlike
  ``first-fit``, which puts the *largest* of the buffers starting together first, ties at equal
  start keep the input order.
* ``greedy-by-breadth``: TensorFlow Lite's ``GreedyByBreadth`` (Pisarchyk and Lee 2020, "Efficient
  Memory Management for Deep Neural Net Inference"; CONVOLVE D5.5 §2). Steps in decreasing
  breadth, each step's unplaced live buffers largest first, each into the smallest gap among the
  placed buffers it overlaps.
* ``greedy-by-conflicts``: TVM USMP's ``greedy_by_conflicts`` (``tir/usmp/algo/greedy.cc``;
  CONVOLVE D5.5 §2): most time-overlapping buffers first, ties larger first, lowest offset.
* ``hill-climb``: TVM USMP's ``hill_climb`` (``tir/usmp/algo/hill_climb.cc``; CONVOLVE D5.5 §2):
  greedy-by-size's order, then seeded random moves of a buffer at the peak to earlier in the
  order, each re-placed with the lowest-offset rule, keeping any order whose peak is no worse.
* ``telamalloc-heuristic``: the baseline heuristic of TelaMalloc (Maas et al., ASPLOS 2023, §3.1):
  blocks fill the skyline bottom-up, row by row; on the lowest row, the highest contention first
  (ties: alignment, size x lifetime^2, lifetime); it is the one method here not built on
  ``place`` (a block never drops into a hole below the skyline: its own ``_skyline_rows``).

Like ``greedy``'s methods they place fixed-offset buffers first where they are pinned, ignore
the capacity while placing and then compare the peak with it ("failed" with the full
placement when it is exceeded). Every one reads the deadline in its compiled loop (every
1,024 buffers placed, or taken from the skyline's queue); a method cut short
before its first complete placement returns ``"timeout"`` without one and says how far it
got. The orders are computed with whole-array numpy operations on ``Problem.arrays()``
(keys that could pass int64, such as size x lifetime^2, are compared exactly as 64-bit
limbs); the loops over buffers are compiled.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from allocator.core import kernel_cache  # noqa: F401  (numba's cache directory, before any kernel is decorated)
from allocator.core.deadline import CLOCK_EVERY, clock, deadline_passed
from allocator.core.options import HillClimbOptions, NoOptions
from allocator.core.problem import Problem
from allocator.core.registry import MethodOutput
from allocator.core.sections import compress_times, range_max, sweep
from allocator.methods.greedy import size_keys, wide_product
from allocator.methods.placement import Placement, greedy_method, place, verdict
from allocator.methods.sorting import lexsort_order

_INT64_MAX = np.iinfo(np.int64).max


def conflict_counts(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per buffer, how many other buffers overlap it in time (TVM's ``conflicts.size()``).

    Buffer j overlaps i when ``s_j < e_i`` and ``e_j > s_i``; every j with ``e_j <= s_i`` also
    has ``s_j < e_i``, so the count is (starts before ``e_i``) - (ends at or before ``s_i``) - 1.
    Both are prefix sums of event counts over the compressed time axis (``compress_times``), so
    2,000,000 buffers take a fraction of a second; two binary searches per buffer took 4 s of CPU
    (every search misses the cache).

    >>> conflict_counts(np.array([0, 1, 5]), np.array([3, 2, 6])).tolist()
    [1, 1, 0]
    """
    if len(starts) == 0:
        return np.zeros(0, np.int64)
    times, first, last = compress_times(starts, ends)
    starts_up_to = np.cumsum(np.bincount(first, minlength=len(times)))  # starts at times[0..k]
    ends_up_to = np.cumsum(np.bincount(last, minlength=len(times)))  # ends at times[0..k]
    # starts strictly before times[last]: those up to times[last - 1]; last >= 1 since end > start
    began_before_end = starts_up_to[last - 1]
    ended_by_start = ends_up_to[first]
    return (began_before_end - ended_by_start - 1).astype(np.int64)


def breadth_visit_rank(problem: Problem) -> np.ndarray:
    """Per buffer, the rank of the step at which greedy-by-breadth places it (0 = first visited).

    Steps are visited in decreasing breadth (bytes live), ties by earlier step. A buffer is
    placed at the first visited step it is live in: the best-ranked of the cross sections it
    spans (a cross section's steps share one live set, so visiting its first step places all
    its buffers and its later steps place nothing).

    >>> from allocator.core.problem import Buffer
    >>> breadth_visit_rank(Problem([Buffer("a", 0, 2, 1), Buffer("b", 1, 2, 5), Buffer("c", 0, 1, 2)])).tolist()
    [0, 0, 1]
    """
    cross = sweep(problem)
    n_sections = cross.n_sections
    section_rank = np.empty(n_sections, np.int64)
    section_rank[np.lexsort((np.arange(n_sections), -cross.section_total))] = np.arange(n_sections)
    # the best (lowest) rank over a buffer's sections, as a range maximum of the reversed rank
    return n_sections - 1 - range_max(n_sections - 1 - section_rank, cross.first_section, cross.last_section)


def product_limbs(sizes: np.ndarray, lifetimes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact values ``size x lifetime^2`` (up to 2**186) as three uint64 limbs, lowest first.

    Sorting by the limbs (``np.lexsort((low, middle, high))``) sorts by the exact product,
    where an int64 product would wrap around for large sizes or lifetimes.

    >>> low, middle, high = product_limbs(np.array([3, 2**62]), np.array([5, 2**61]))
    >>> [int(x) + (int(y) << 64) + (int(z) << 128) for x, y, z in zip(low, middle, high)] == [75, 2**184]
    True
    """
    square_high, square_low = wide_product(lifetimes, lifetimes)
    low_high, low = wide_product(square_low, sizes)  # square_low x size = low_high * 2**64 + low
    high, middle_part = wide_product(square_high, sizes)  # < 2**124 x 2**62: high stays below 2**64
    middle = middle_part + low_high
    high = high + (middle < low_high)  # carry of the middle limb
    return low, middle, high


def greedy_in_order(problem: Problem, deadline: float | None, options: NoOptions) -> MethodOutput:
    """Buffers by start time, ties by input order, each at the lowest offset that fits.

    TensorFlow Lite's in-order strategy (CONVOLVE D5.5 §2; Pisarchyk and Lee 2020): tensors
    are allocated as the operators that produce them run. It differs from ``first-fit`` only at equal
    starts: first-fit puts the largest of them first, this keeps the input order.
    """
    arrays = problem.arrays()
    starts = arrays[0]
    return greedy_method(problem, arrays, (starts,), best_fit=False, name="greedy-in-order", deadline=deadline)


def greedy_by_breadth(problem: Problem, deadline: float | None, options: NoOptions) -> MethodOutput:
    """TensorFlow Lite's ``GreedyByBreadth`` (Pisarchyk and Lee 2020; CONVOLVE D5.5 §2).

    The breadth of a time step (an operator) is the total size of the buffers live at it.
    Steps are visited in decreasing breadth; at each, its live buffers not yet placed are
    placed largest first. A buffer goes into the smallest gap between the placed buffers it
    overlaps in time that holds it, else on top of them (``place`` with ``best_fit``). This
    is the offset form of the rule TFLite's GPU delegate applies to shared objects, where a
    tensor takes the smallest free object that is large enough.

    Tie rules: steps of equal breadth are visited earlier step first; buffers of equal size
    within a step go in input order; gaps of equal size: the lowest. Alignment rounds the
    gap's low end up; a gap's size is measured before that rounding.
    """
    arrays = problem.arrays()
    sizes = arrays[2]
    visit = breadth_visit_rank(problem) if len(problem) else np.zeros(0, np.int64)
    return greedy_method(problem, arrays, (-sizes, visit), best_fit=True, name="greedy-by-breadth",
                         deadline=deadline)


def greedy_by_conflicts(problem: Problem, deadline: float | None, options: NoOptions) -> MethodOutput:
    """TVM USMP's ``greedy_by_conflicts`` (``src/tir/usmp/algo/greedy.cc``; CONVOLVE D5.5 §2).

    Buffers by the number of other buffers they overlap in time, most first; ties by size,
    largest first, then input order (TVM breaks the last tie by name). Each goes to the lowest
    offset that fits.
    """
    arrays = problem.arrays()
    starts, ends, sizes, _, _ = arrays
    return greedy_method(problem, arrays, (-sizes, -conflict_counts(starts, ends)), best_fit=False,
                         name="greedy-by-conflicts", deadline=deadline)


def telamalloc_heuristic(problem: Problem, deadline: float | None, options: NoOptions) -> MethodOutput:
    """The baseline heuristic of TelaMalloc (Maas et al., ASPLOS 2023, §3.1, Figure 4).

    The contention of a time slot is the total size of the buffers live in it; a buffer's
    contention is the highest contention over its lifetime. Priority: higher contention first;
    ties: larger alignment, larger size x lifetime^2, longer lifetime, input order.

    The *skyline* is the highest address in use in every time slot; a buffer can only go on
    top of it (its *floor*: the highest skyline over its lifetime, aligned up), never into a hole
    below. Blocks are placed bottom-up, row by row, like Tetris: each step takes the unplaced
    buffers whose floor is lowest and places the one of highest priority there. So a
    lower-priority block takes a row that the highest-priority block cannot use (Figure 4: with
    (8) and (2) placed, (4) goes before (1), which does not fit on that row). Pinned buffers
    raise the skyline over their lifetime to their top (the memory below them counts as used).
    """
    arrays = problem.arrays()
    starts, ends, sizes, aligns, fixed = arrays
    if len(problem) == 0:
        return MethodOutput("solved", {})
    lifetime = ends - starts
    weight_low, weight_middle, weight_high = product_limbs(sizes, lifetime)  # size x lifetime^2, exact
    contention = sweep(problem).span_total()
    order = lexsort_order((-lifetime, ~weight_low, ~weight_middle, ~weight_high, -aligns, -contention), len(sizes))
    times, first, last = compress_times(starts, ends)
    offsets, placed, stop = _skyline_rows(first, last, max(len(times) - 1, 1), sizes, aligns, fixed, order,
                                          deadline=np.inf if deadline is None else deadline)
    placement = Placement(offsets, int(placed), 0, ("complete", "deadline", "overflow")[stop])
    return verdict(problem, placement, sizes, "telamalloc-heuristic")


@njit(cache=True)
def _raise_floor(floor, top, alignment):  # pragma: no cover - compiled
    """``max(floor, top aligned up)``, saturating at the int64 maximum instead of wrapping around."""
    pad = (alignment - top % alignment) % alignment
    if top > _INT64_MAX - pad:
        return _INT64_MAX
    return max(floor, top + pad)


@njit(cache=True)
def _skyline_raise(tree_max, tree_tag, leaves, first, last, top):  # pragma: no cover - compiled
    """Raise the skyline to at least ``top`` over the sections ``[first, last)``.

    ``tree_tag[node]`` is a height the whole of the node's range has reached, ``tree_max[node]``
    the highest point within its range: a segment tree with range "raise to" updates and range
    maxima, O(log sections) each.
    """
    lo, hi = first + leaves, last + leaves
    while lo < hi:  # the canonical nodes tiling [first, last)
        if lo & 1:
            tree_tag[lo] = max(tree_tag[lo], top)
            tree_max[lo] = max(tree_max[lo], top)
            lo += 1
        if hi & 1:
            hi -= 1
            tree_tag[hi] = max(tree_tag[hi], top)
            tree_max[hi] = max(tree_max[hi], top)
        lo >>= 1
        hi >>= 1
    for leaf in (first + leaves, last - 1 + leaves):  # every ancestor of a canonical node is above one of these
        node = leaf >> 1
        while node >= 1:
            tree_max[node] = max(tree_max[node], top)
            node >>= 1


@njit(cache=True)
def _skyline_height(tree_max, tree_tag, leaves, first, last):  # pragma: no cover - compiled
    """The highest skyline point over the sections ``[first, last)``."""
    best = 0
    lo, hi = first + leaves, last + leaves
    while lo < hi:
        if lo & 1:
            best = max(best, tree_max[lo])
            lo += 1
        if hi & 1:
            hi -= 1
            best = max(best, tree_max[hi])
        lo >>= 1
        hi >>= 1
    for leaf in (first + leaves, last - 1 + leaves):  # heights set on whole ranges above the canonical nodes
        node = leaf >> 1
        while node >= 1:
            best = max(best, tree_tag[node])
            node >>= 1
    return best


@njit(cache=True, inline="always")
def _before(floor_a, rank_a, floor_b, rank_b):  # pragma: no cover - compiled
    """Whether (floor, rank) a comes first: the lower floor, then the higher priority (lower rank)."""
    return floor_a < floor_b or (floor_a == floor_b and rank_a < rank_b)


@njit(cache=True)
def _sift_down(heap_floor, heap_rank, size, floor, rank):  # pragma: no cover - compiled
    """Put ``(floor, rank)`` at the root of the min-heap of ``size`` entries, in place of the
    entry there, and move it down to where it belongs (the hole moves, no swaps)."""
    at = 0
    while True:
        child = 2 * at + 1
        if child >= size:
            break
        if child + 1 < size and _before(heap_floor[child + 1], heap_rank[child + 1], heap_floor[child],
                                        heap_rank[child]):
            child += 1
        if not _before(heap_floor[child], heap_rank[child], floor, rank):
            break
        heap_floor[at] = heap_floor[child]
        heap_rank[at] = heap_rank[child]
        at = child
    heap_floor[at] = floor
    heap_rank[at] = rank


@njit(cache=True)
def _skyline_rows(first, last, n_sections, sizes, aligns, fixed, order, deadline=np.inf):  # pragma: no cover - compiled
    """Bottom-up skyline fill: repeatedly the lowest floor, the highest priority there.

    ``first``/``last`` are the buffers' compressed sections, ``order`` lists the buffers by
    priority (highest first). A buffer's floor is the highest skyline point over its sections,
    aligned up: placing X at its floor raises the skyline over X's sections to X's top (a
    segment tree of heights, ``_skyline_raise``). Floors only ever rise, so the unplaced buffers
    wait in a min-heap of (floor seen last, priority rank): the least entry is re-read, placed
    when its floor has not moved (then no other buffer has a lower floor, nor an equal floor
    and a higher priority), moved down the heap at its new floor otherwise. The same choices as
    comparing every floor at every step (the O(n^2) rule of the paper's description), in
    O((n + re-reads) log n). The clock is read before the first step and then once per
    ``CLOCK_EVERY`` heap entries taken. Returns (offsets, buffers placed, stop code: 0
    complete, 1 deadline, 2 a top above 2**63 - 1).
    """
    n = sizes.shape[0]
    offsets = np.full(n, -1, np.int64)
    leaves = 1
    while leaves < n_sections:
        leaves *= 2
    tree_max = np.zeros(2 * leaves, np.int64)
    tree_tag = np.zeros(2 * leaves, np.int64)
    placed = 0
    for i in range(n):
        if fixed[i] >= 0:  # a pinned buffer: the memory below its top counts as used over its lifetime
            offsets[i] = fixed[i]
            _skyline_raise(tree_max, tree_tag, leaves, first[i], last[i], fixed[i] + sizes[i])
            placed += 1
    # every free buffer at floor 0, by rank: already a heap (entries in (floor, rank) order)
    heap_rank = np.empty(n, np.int64)
    size = np.int64(0)  # not 0: a literal 0 would compile _sift_down twice
    for rank in range(n):
        if fixed[order[rank]] < 0:
            heap_rank[size] = rank
            size += 1
    heap_floor = np.zeros(size, np.int64)
    taken = 0
    while size > 0:
        if taken % CLOCK_EVERY == 0 and clock() > deadline:
            return offsets, placed, 1
        taken += 1
        seen, rank = heap_floor[0], heap_rank[0]
        best = order[rank]
        floor = _raise_floor(0, _skyline_height(tree_max, tree_tag, leaves, first[best], last[best]), aligns[best])
        if floor > seen:  # the skyline rose under it since: back in line at its new floor
            _sift_down(heap_floor, heap_rank, size, floor, rank)
            continue
        if floor > _INT64_MAX - sizes[best]:
            return offsets, placed, 2
        offsets[best] = floor
        placed += 1
        _skyline_raise(tree_max, tree_tag, leaves, first[best], last[best], floor + sizes[best])
        size -= 1  # the last entry fills the root's place
        _sift_down(heap_floor, heap_rank, size, heap_floor[size], heap_rank[size])
    return offsets, n, 0


def hill_climb(problem: Problem, deadline: float | None, options: HillClimbOptions) -> MethodOutput:
    """TVM USMP's ``hill_climb`` (``src/tir/usmp/algo/hill_climb.cc``; CONVOLVE D5.5 §2).

    Starts from greedy-by-size's order and placement. Each attempt picks, with a
    ``numpy.random.default_rng(options.seed)`` generator, a free buffer whose top is the current
    peak and one of the free buffers it overlaps in time that come before it in the order, and
    moves the peak buffer to just before that one; the new order is placed with the lowest-offset
    rule (``place``) and kept when its peak is no higher (equal peaks are kept too, so the
    climb can cross plateaus). TVM swaps pairs of neighbours and sometimes accepts a worse
    order; here the move always lifts a peak buffer over a buffer that pushed it up.

    Stops after ``options.iterations`` attempts; earlier when the peak reaches LOAD, when it
    fits the capacity (TVM's "desired bytes"), when no peak buffer has an earlier-placed free
    neighbour (then every order gives that buffer the same top, so no order lowers the peak),
    or at the deadline (also read inside each placement, every 1,024 buffers: an attempt cut
    short is dropped). The result is the same for the same ``seed`` and ``iterations`` unless
    the deadline cuts the run short, which depends on the machine's speed. Its peak is never
    above greedy-by-size's; when the deadline passes before greedy-by-size's placement is
    complete the status is ``"timeout"`` without a placement. Each attempt costs one full
    placement, about O(overlapping pairs x log) (``allocator.methods.placement``).
    """
    seed, iterations = options.seed, options.iterations
    if iterations < 0:
        raise ValueError(f"hill-climb: iterations must be >= 0, got {iterations}")
    arrays = problem.arrays()
    starts, ends, sizes, aligns, fixed = arrays
    n = len(starts)
    if n == 0:
        return MethodOutput("solved", {})
    rng = np.random.default_rng(seed)
    free = fixed < 0
    order = lexsort_order(size_keys(starts, ends, sizes), n)
    best = place(starts, ends, sizes, aligns, fixed, order, deadline=deadline)
    if not best.complete:  # no complete placement to climb from
        return verdict(problem, best, sizes, "hill-climb", stats={"attempts": 0, "kept": 0, "improved": 0})
    peak = int((best.offsets + sizes).max())
    target = int(sweep(problem).section_total.max())
    if problem.capacity is not None:
        target = max(target, problem.capacity)
    position = np.empty(n, np.int64)
    attempts = kept = improved = 0
    stop = "iterations"
    while True:
        if peak <= target:
            stop = "target"
            break
        if attempts >= iterations:
            break
        if deadline_passed(deadline):
            stop = "deadline"
            break
        position[order] = np.arange(n)
        mover, before = _pick_move(rng, starts, ends, sizes, best.offsets, free, position, peak)
        if mover < 0:
            stop = "local optimum"
            break
        attempts += 1
        at, to = position[mover], position[before]
        candidate = np.concatenate((order[:to], order[at:at + 1], order[to:at], order[at + 1:]))
        trial = place(starts, ends, sizes, aligns, fixed, candidate, deadline=deadline)
        if trial.stop == "deadline":  # the attempt is cut short: keep the last complete placement
            stop = "deadline"
            break
        if not trial.complete:  # a top above 2**63 - 1: worse than any peak
            continue
        new_peak = int((trial.offsets + sizes).max())
        if new_peak <= peak:
            kept += 1
            improved += new_peak < peak
            order, best, peak = candidate, trial, new_peak
    stats: dict[str, float] = {"attempts": attempts, "kept": kept, "improved": improved}
    note = f" (deadline reached after {attempts} attempts)" if stop == "deadline" else ""
    return verdict(problem, best, sizes, "hill-climb", note, stats)


def _pick_move(rng: np.random.Generator, starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray,
               offsets: np.ndarray, free: np.ndarray, position: np.ndarray, peak: int) -> tuple[int, int]:
    """A free buffer at the peak and a free buffer it overlaps that precedes it in the order,
    drawn at random; ``(-1, -1)`` when no buffer at the peak has such a predecessor."""
    at_peak = np.flatnonzero(free & (offsets + sizes == peak))
    while len(at_peak):
        k = int(rng.integers(len(at_peak)))
        mover = int(at_peak[k])
        earlier = np.flatnonzero(free & (starts < ends[mover]) & (ends > starts[mover])
                                 & (position < position[mover]))
        if len(earlier):
            return mover, int(earlier[rng.integers(len(earlier))])
        at_peak = np.delete(at_peak, k)
    return -1, -1

"""idealloc: the boxing algorithm of Buchsbaum et al. for dynamic storage allocation, run many times.

CONVOLVE D5.5 §4 describes idealloc as a translation of the constructive proofs of
Buchsbaum, Karloff, Kenyon, Reingold and Thorup, "OPT versus LOAD in dynamic storage
allocation" (STOC 2003), in three parts, each implemented here:

* **Boxing** (D5.5 §4.1; the paper's boxing lemma and its nested recursions, Theorems 2 and
  16). Small items are grouped into *boxes*, rectangles of bounded height H whose lifetime
  spans their members'; a box is then an item itself, and is boxed again at the next level.
  Levels follow the size classes of the paper: H starts at ``ratio`` times the smallest size
  (times a random factor in ``[1, ratio)`` per run, see below) and grows by ``ratio`` per level;
  at each level the top-level items lower than H are boxed into boxes of height at most H.
  Boxing stops once H has passed the largest size (the convergence criterion of D5.5 §4.1:
  the boxes' heights are then within a bounded ratio) and a height drawn per run,
  log-uniformly between the largest size and LOAD. Boxing on past the largest size (boxes of
  boxes: one per crossing set once H reaches LOAD) lowered the median peak of 12 runs on
  pangu_2.6B from 9.7 % to 5.8 % above LOAD and on resnet50 from 1.1 % to 0.6 %, but raised
  it on J from 49 % to 60 %, so each run draws where to stop.
  Within a level, the items are boxed by Theorem 2's *random point selection*: pick a random
  time point x at which at least one item lives (a random item, then a random moment of its
  lifetime, so busier times are likelier: D5.5 asks only that something live at x; a point
  uniform over the horizon, drawn again while nothing lives there, raised the median peak of
  12 runs on pangu_2.6B from 8.9 % to 14.6 % and on S_1 from 1.8 % to 4.3 %), box the items
  live at x, and recurse on the items wholly before x and on those
  wholly after it (an explicit stack, no Python recursion). The items live at x all share x,
  so stacking them never wastes space at x: they are sorted and cut into consecutive groups
  of total height at most H, one box each (the boxing lemma's greedy grouping of jobs
  crossing one point). The sort is drawn per run: by start (ties: longer first), by end
  (latest first), either at random per point, or whichever of the two leaves less empty area
  in its boxes; on resnet50, pangu_2.6B, S_1, E, J and K none of the four was better than
  the others on all of them (12 runs each), so runs draw among them.
* **Unboxing and placement** (D5.5 §4.2). The top-level items are placed with the shared
  first-fit kernel (``allocator.methods.placement.place``), in each run at random either in start
  order (ties: taller first; the paper's interval colouring of its near-uniform boxes, which
  first fit in start order is for equal heights) or in decreasing height (ties: earlier
  start; measured better on some traces, worse on others, so runs draw either). Then every
  box is opened: a member's offset is its box's offset plus its height in the box's stack.
* **Tightening** (D5.5 §4.2): the unboxed placement is sparse, so every buffer is dropped to
  the lowest offset that fits below it: ``place`` with first fit, in increasing unboxed offset
  (ties: earlier start). A buffer never moves up (everything placed before it ends at or below
  its old offset), so tightening never raises the peak. A second pass the same way changes
  almost nothing (it never lowered the peak on resnet50, G_1, pangu_2.6B, J, K; 48 runs): each
  buffer already rests on one below it. What is left are holes *under* buffers that rest on a
  single tall neighbour, so the passes after the first alternate direction (``tighten``): the
  placement is turned upside down, tightened the same way (in the original picture every
  buffer is pushed up against those above it) and turned back, then dropped again, and so on,
  each pass in the order the previous one left. This is our addition, not D5.5's (it names one
  tightening pass; the Rust idealloc's squeeze is one best-fit pass in unboxed order, which was
  worse than first fit here: median of 12 runs on pangu_2.6B 15.2 % vs 11.0 % above LOAD). It
  keeps the boxing's result as the starting order and only compacts it, never raising the peak.
  On pangu_2.6B the first upward pass took five runs from 9.4-16.7 % to 0.0-4.1 %. The
  boxing still matters: started from random-order first fit instead, the same passes, run
  repeatedly on the same budget (seed 0), ended at 20.6, 26.1, 18.8, 20.2 and 41.7 % on A, E,
  H, J and K (from boxing: 12.3, 22.6, 13.5, 14.8, 29.2) and 2.6 % on pangu_2.6B (0.0); from
  greedy-by-size's placement they stay at its 0.76 % on pangu_2.6B. A run stops its passes after ``passes``
  (default 8) or once one pass each way has not lowered its peak, and keeps its lowest peak.
* **Repeated runs** (D5.5 §4.4): each run draws new random points (and a new starting H),
  and the lowest peak is kept. With a deadline, runs repeat until it passes (or ``runs`` is
  reached, or the peak reaches LOAD); without one, ``runs`` (default 20) are made. Under a
  capacity the first run that fits it ends the search (status ``"solved"``); otherwise the
  best placement is returned, ``"failed"`` when it misses the capacity, like the other
  heuristics. The same ``seed`` and ``runs`` give the same placement (each run's random
  stream is seeded from ``numpy.random.default_rng(seed)``).

Decisions where the papers are silent (or give more than a heuristic needs):

* The paper's H values come from its ε-dependent analysis; here they are powers of ``ratio``
  (default 2) and each run starts from a random factor, so runs differ in how sizes are grouped
  as well as in their random points.
* An item that would be alone in its box stays unboxed (a box of one only adds levels).
* Pinned (fixed-offset) buffers are not boxed: boxing treats only the free buffers, and the
  tightening passes place the pinned ones first, where they are pinned, as obstacles (so with
  pinned buffers tightening can move a buffer up; the upward passes turn the pinned buffers
  upside down with the rest and back, so they stay put). Alignment is also left to tightening:
  the downward passes round each offset up to the buffer's alignment; an upward pass's
  result, whose frame is shifted by the peak, counts only if it happens to be aligned.
* The deadline is read in the compiled boxing loop (every 256 random points) and in the
  placement kernel; a run cut short before its first tightening pass completes is dropped
  (one cut short in a later pass keeps its lowest peak so far). If no run completes, the status is
  ``"timeout"`` without a placement. Runs that complete are the method's normal anytime
  behaviour, so a result after at least one run is ``"solved"`` or ``"failed"``, never
  ``"timeout"``.

Simplified relative to the paper, so no (2 + ε) x LOAD guarantee is claimed: its ε-dependent
size classes and its separate handling of the jobs that are large relative to LOAD are replaced
by the geometric levels above; the boxing lemma's construction (with its bound on the boxes'
load) by the greedy grouping of the sorted crossing set; the exact colouring of the converged
boxes by first fit. D5.5 names the parts and the random point selection but not the Rust
implementation's constants, so none of them is copied here.

Cost per run: O(n log n) expected per level for the random-point recursion (the random item
splits the items like a random pivot), O(log(largest box / smallest size)) levels, plus one
placement of the top-level items and one per tightening pass (``allocator.methods.placement``'s
O(overlapping pairs x log) each; the tightening passes are most of a run's time).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from allocator.core import kernel_cache  # noqa: F401  (numba's cache directory, before any kernel is decorated)
from allocator.core.deadline import clock, deadline_passed, timeout_reason
from allocator.core.options import IdeallocOptions
from allocator.core.problem import Problem
from allocator.core.registry import MethodOutput
from allocator.core.validate import lower_bound
from allocator.methods.placement import place
from allocator.methods.sorting import lexsort_order, stable_argsort

__all__ = ["DEFAULT_PASSES", "DEFAULT_RUNS", "box", "idealloc", "tighten"]

#: runs made when there is no deadline and ``runs`` is not given
DEFAULT_RUNS = 20

#: at most this many tightening passes per run (``tighten``): the first downward, then alternating
DEFAULT_PASSES = 8

#: ``tighten`` stops after this many passes in a row without a lower peak: one each way (stopping
#: after one instead, 10 s on H and K with seeds 0 and 1, was better once, worse once, equal twice)
_STALE_PASSES = 2

#: the boxing loop reads the clock once per this many random points
_CLOCK_EVERY = 256


@njit(cache=True)
def _crossing_order(cross, n_cross, item_start, item_end, by_end):  # pragma: no cover - compiled
    """The items of ``cross`` by start (ties: later end first), or with ``by_end`` by end, latest
    first (ties: earlier start first), as positions into ``cross``."""
    primary = np.empty(n_cross, np.int64)
    secondary = np.empty(n_cross, np.int64)
    primary_then = np.empty(n_cross, np.int64)
    for k in range(n_cross):
        if by_end:
            primary[k] = -item_end[cross[k]]
            secondary[k] = item_start[cross[k]]
        else:
            primary[k] = item_start[cross[k]]
            secondary[k] = -item_end[cross[k]]
    # two stable sorts, the secondary key first (placement's merge sort: numba's argsort costs
    # more to compile than this whole kernel)
    scratch = np.empty(n_cross, np.int64)
    by_secondary = np.empty(n_cross, np.int64)
    stable_argsort(secondary, n_cross, scratch, by_secondary)
    for k in range(n_cross):
        primary_then[k] = primary[by_secondary[k]]
    by_primary = np.empty(n_cross, np.int64)
    stable_argsort(primary_then, n_cross, scratch, by_primary)
    order = np.empty(n_cross, np.int64)
    for k in range(n_cross):
        order[k] = by_secondary[by_primary[k]]
    return order


@njit(cache=True)
def _grouping_waste(cross, order, n_cross, item_start, item_end, item_height, height_limit):  # pragma: no cover
    """The area the boxes of the greedy grouping of ``order`` leave empty (their hull times their
    height, less their members' areas), as a float (an int64 area could overflow)."""
    waste = 0.0
    k = 0
    while k < n_cross:
        stacked = 0
        low = item_start[cross[order[k]]]
        high = item_end[cross[order[k]]]
        area = 0.0
        group_end = k
        while group_end < n_cross and (group_end == k or
                                       stacked + item_height[cross[order[group_end]]] <= height_limit):
            item = cross[order[group_end]]
            stacked += item_height[item]
            low = min(low, item_start[item])
            high = max(high, item_end[item])
            area += float(item_height[item]) * float(item_end[item] - item_start[item])
            group_end += 1
        if group_end - k > 1:
            waste += float(stacked) * float(high - low) - area
        k = group_end
    return waste


@njit(cache=True)
def _box_crossing(cross, n_cross, item_start, item_end, item_height, parent, relative, count, height_limit,
                  unboxed, n_unboxed, sort_rule):  # pragma: no cover - compiled
    """Box the ``n_cross`` items of ``cross`` (all live at one time point) into boxes of height at
    most ``height_limit``: sorted (``_crossing_order``), then cut into consecutive groups.

    ``sort_rule`` 0 sorts by start, 1 by end, 2 either at random, 3 the one whose boxes waste
    less area. New boxes get ids ``count, count + 1, ...``; their members' ``parent`` and
    ``relative`` (height in the box) are set. Items alone in their group are appended to
    ``unboxed``. Returns (new count, new n_unboxed)."""
    if sort_rule == 3:
        # the flags as bool values, not the literals False and True: numba would compile one copy for each
        order = _crossing_order(cross, n_cross, item_start, item_end, sort_rule != 3)
        other = _crossing_order(cross, n_cross, item_start, item_end, sort_rule == 3)
        if (_grouping_waste(cross, other, n_cross, item_start, item_end, item_height, height_limit)
                < _grouping_waste(cross, order, n_cross, item_start, item_end, item_height, height_limit)):
            order = other
    else:
        by_end = sort_rule == 1 or (sort_rule == 2 and np.random.random() < 0.5)
        order = _crossing_order(cross, n_cross, item_start, item_end, by_end)
    k = 0
    while k < n_cross:
        stacked = 0
        group_end = k
        while group_end < n_cross and stacked + item_height[cross[order[group_end]]] <= height_limit:
            stacked += item_height[cross[order[group_end]]]
            group_end += 1
        if group_end == k:  # taller than the limit (never, since only lower items are boxed)
            group_end = k + 1
        if group_end - k == 1:
            unboxed[n_unboxed] = cross[order[k]]
            n_unboxed += 1
        else:
            box_id = count
            count += 1
            low = item_start[cross[order[k]]]
            high = item_end[cross[order[k]]]
            cursor = 0
            for g in range(k, group_end):
                item = cross[order[g]]
                parent[item] = box_id
                relative[item] = cursor
                cursor += item_height[item]
                low = min(low, item_start[item])
                high = max(high, item_end[item])
            item_start[box_id] = low
            item_end[box_id] = high
            item_height[box_id] = cursor
            unboxed[n_unboxed] = box_id  # the new box is a top-level item of the next level
            n_unboxed += 1
        k = group_end
    return count, n_unboxed


@njit(cache=True)
def _box_level(work, m, item_start, item_end, item_height, parent, relative, count, height_limit, out,
               deadline, sort_rule):  # pragma: no cover - compiled
    """Theorem 2's random point recursion over the ``m`` items of ``work`` (all lower than
    ``height_limit``): the items live at a random point are boxed, then the items before it and
    those after it are treated the same way. ``work`` is reordered. Writes the resulting
    top-level items (new boxes and items left alone) to ``out``; returns (count, len(out),
    whether the deadline passed)."""
    stack_low = np.empty(2 * m + 2, np.int64)
    stack_high = np.empty(2 * m + 2, np.int64)
    scratch = np.empty(m, np.int64)
    cross = np.empty(m, np.int64)
    depth = 0
    stack_low[0] = 0
    stack_high[0] = m
    depth = 1
    n_out = np.int64(0)
    steps = 0
    while depth > 0:
        depth -= 1
        lo = stack_low[depth]
        hi = stack_high[depth]
        if hi - lo == 0:
            continue
        if hi - lo == 1:
            out[n_out] = work[lo]
            n_out += 1
            continue
        steps += 1
        if steps % _CLOCK_EVERY == 0 and clock() > deadline:
            return count, n_out, True
        chosen = work[lo + min(int(np.random.random() * (hi - lo)), hi - lo - 1)]
        width = item_end[chosen] - item_start[chosen]
        point = item_start[chosen] + min(int(np.random.random() * width), width - 1)
        n_left = np.int64(0)
        n_right = np.int64(0)
        n_cross = np.int64(0)
        for k in range(lo, hi):
            item = work[k]
            if item_end[item] <= point:
                scratch[n_left] = item
                n_left += 1
            elif item_start[item] > point:
                n_right += 1
                scratch[hi - lo - n_right] = item
            else:
                cross[n_cross] = item
                n_cross += 1
        for k in range(n_left):
            work[lo + k] = scratch[k]
        for k in range(n_right):
            work[lo + n_left + k] = scratch[hi - lo - 1 - k]
        count, n_out = _box_crossing(cross, n_cross, item_start, item_end, item_height, parent, relative, count,
                                     height_limit, out, n_out, sort_rule)
        stack_low[depth] = lo
        stack_high[depth] = lo + n_left
        depth += 1
        stack_low[depth] = lo + n_left
        stack_high[depth] = lo + n_left + n_right
        depth += 1
    return count, n_out, False


@njit(cache=True)
def _box_all(starts, ends, heights, ratio, first_factor, seed, deadline, sort_rule,
             last_height):  # pragma: no cover - compiled
    """Box the items ``starts/ends/heights`` (the free buffers) level by level.

    Returns (item starts, ends, heights, parent, relative, count, top items, n_top, timed out):
    items ``0 .. n-1`` are the buffers, ``n .. count-1`` the boxes; ``parent[i]`` is the box
    holding item i (-1 for a top-level item), ``relative[i]`` its offset inside that box.
    """
    np.random.seed(seed)
    n = starts.shape[0]
    capacity = 2 * n + 1
    item_start = np.empty(capacity, np.int64)
    item_end = np.empty(capacity, np.int64)
    item_height = np.empty(capacity, np.int64)
    parent = np.full(capacity, -1, np.int64)
    relative = np.zeros(capacity, np.int64)
    for i in range(n):  # loops, not slice assignments: those compile numba's shape-mismatch errors
        item_start[i] = starts[i]
        item_end[i] = ends[i]
        item_height[i] = heights[i]
    count = n
    top = np.arange(n).astype(np.int64)
    n_top = n
    smallest = heights.min()
    largest = heights.max()
    limit = float(smallest) * ratio * first_factor
    work = np.empty(n, np.int64)
    out = np.empty(n, np.int64)
    next_top = np.empty(n, np.int64)
    while True:
        if clock() > deadline:
            return item_start, item_end, item_height, parent, relative, count, top, n_top, True
        height_limit = np.int64(min(limit, 4.6e18))
        m = np.int64(0)
        n_next = np.int64(0)
        for k in range(n_top):
            if item_height[top[k]] < height_limit:
                work[m] = top[k]
                m += 1
            else:
                next_top[n_next] = top[k]
                n_next += 1
        if m >= 2:
            count, n_out, late = _box_level(work, m, item_start, item_end, item_height, parent, relative, count,
                                            height_limit, out, deadline, sort_rule)
            if late:
                return item_start, item_end, item_height, parent, relative, count, top, n_top, True
            for k in range(n_out):
                next_top[n_next] = out[k]
                n_next += 1
            top, next_top = next_top, top
            n_top = n_next
        if limit > max(largest, last_height) or n_top <= 1:
            break
        limit *= ratio
    return item_start, item_end, item_height, parent, relative, count, top, n_top, False


@njit(cache=True)
def _unbox(parent, relative, count, offsets):  # pragma: no cover - compiled
    """Open every box: a member's offset is its box's plus its place in the box. A box's id is
    above its members', so one pass from the highest id down sets every offset."""
    for item in range(count - 1, -1, -1):
        if parent[item] >= 0:
            offsets[item] = offsets[parent[item]] + relative[item]


def box(starts: np.ndarray, ends: np.ndarray, heights: np.ndarray, *, ratio: float = 2.0, seed: int = 0,
        first_factor: float = 1.0, by_start: bool = False, sort_rule: int = 0, last_height: float = 0.0,
        deadline: float | None = None) -> np.ndarray | None:
    """One run of boxing, placement of the top-level items and unboxing, before tightening.

    ``by_start`` places the top-level items in start order instead of decreasing height;
    ``sort_rule`` chooses how items crossing a random point are sorted before grouping
    (``_box_crossing``); boxing goes on until the box height has passed both the largest
    height and ``last_height``.

    Returns the unboxed offset of every item of the int64 arrays (a valid placement when the
    items have no alignment and none is pinned), or ``None`` when the deadline passed.

    >>> offsets = box(np.array([0, 0, 2]), np.array([2, 2, 4]), np.array([1, 1, 4]))
    >>> offsets.tolist()
    [0, 1, 0]
    """
    n = len(starts)
    if n == 0:
        return np.zeros(0, np.int64)
    limit = np.inf if deadline is None else float(deadline)
    item_start, item_end, item_height, parent, relative, count, top, n_top, late = _box_all(
        starts.astype(np.int64), ends.astype(np.int64), heights.astype(np.int64), float(ratio), float(first_factor),
        int(seed), limit, int(sort_rule), float(last_height))
    if late:
        return None
    top = top[:n_top]
    top_start, top_end, top_height = item_start[top], item_end[top], item_height[top]
    ones = np.ones(n_top, np.int64)
    order = lexsort_order((-top_height, top_start) if by_start else (top_start, -top_height), n_top)
    placed = place(top_start, top_end, top_height, ones, -ones, order, deadline=deadline)
    if not placed.complete:
        return None
    offsets = np.zeros(count, np.int64)
    offsets[top] = placed.offsets
    _unbox(parent, relative, count, offsets)
    return offsets[:n]


def idealloc(problem: Problem, deadline: float | None, options: IdeallocOptions) -> MethodOutput:
    """The boxing algorithm of Buchsbaum et al. (STOC 2003) as idealloc runs it (see the module docstring).

    ``options`` (an ``IdeallocOptions``): ``runs`` caps the number of runs (None: until the
    deadline, or ``DEFAULT_RUNS`` without one); ``seed`` seeds the random draws; ``ratio`` (> 1)
    is the growth of the box height per level; ``passes`` (>= 1) caps the tightening passes per
    run (``tighten``; 1 is D5.5's single pass). ``stats`` report the runs made, the run that gave
    the kept placement and the tightening passes made in all runs.
    """
    seed, runs, ratio, passes = options.seed, options.runs, options.ratio, options.passes
    if runs is not None and runs < 1:
        raise ValueError(f"idealloc: runs must be >= 1, got {runs}")
    if passes < 1:
        raise ValueError(f"idealloc: passes must be >= 1, got {passes}")
    if not ratio > 1:
        raise ValueError(f"idealloc: ratio must be > 1, got {ratio}")
    arrays = problem.arrays()
    starts, ends, sizes, alignments, fixed = arrays
    n = len(starts)
    if n == 0:
        return MethodOutput("solved", {})
    limit = runs if runs is not None else (DEFAULT_RUNS if deadline is None else None)
    free = np.flatnonzero(fixed < 0)
    load = lower_bound(problem)
    rng = np.random.default_rng(seed)
    largest = float(sizes[free].max()) if len(free) else 1.0
    top_height = max(float(load), largest)
    best_offsets: np.ndarray | None = None
    best_peak = -1
    best_run = -1
    made = 0
    passes_made = 0
    while limit is None or made < limit:
        if deadline_passed(deadline):
            break
        run_seed = int(rng.integers(0, 2**31 - 1))
        first_factor = float(ratio ** rng.random())
        by_start = bool(rng.random() < 0.5)
        sort_rule = int(rng.integers(0, 4))
        last_height = float(largest * (top_height / largest) ** rng.random())  # log-uniform in [largest, LOAD]
        offsets, run_passes = _one_run(starts, ends, sizes, alignments, fixed, free, ratio, run_seed, first_factor,
                                       by_start, sort_rule, last_height, passes, deadline)
        passes_made += run_passes
        if offsets is None:
            break
        made += 1
        peak = int((offsets + sizes).max())
        if best_offsets is None or peak < best_peak:
            best_offsets, best_peak, best_run = offsets, peak, made
        if best_peak <= load or (problem.capacity is not None and best_peak <= problem.capacity):
            break
    stats = {"runs": float(made), "best_run": float(best_run), "passes": float(passes_made)}
    if best_offsets is None:
        return MethodOutput("timeout", None, timeout_reason("idealloc", 0, n) + " (no run completed)", stats)
    placement = dict(zip(problem.ids, best_offsets.tolist(), strict=True))
    if problem.capacity is not None and best_peak > problem.capacity:
        return MethodOutput("failed", placement, f"idealloc reached peak {best_peak} > capacity {problem.capacity} "
                            f"in {made} runs", stats)
    return MethodOutput("solved", placement, stats=stats)


def _one_run(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray, alignments: np.ndarray, fixed: np.ndarray,
             free: np.ndarray, ratio: float, seed: int, first_factor: float, by_start: bool, sort_rule: int,
             last_height: float, passes: int, deadline: float | None) -> tuple[np.ndarray | None, int]:
    """Boxing, unboxing and up to ``passes`` tightening passes once: the offsets of all buffers
    (None when the deadline passed before the first tightening completed) and the passes made."""
    n = len(starts)
    unboxed = np.zeros(n, np.int64)
    if len(free):
        boxed = box(starts[free], ends[free], sizes[free], ratio=ratio, seed=seed, first_factor=first_factor,
                    by_start=by_start, sort_rule=sort_rule, last_height=last_height, deadline=deadline)
        if boxed is None:
            return None, 0
        unboxed[free] = boxed
    return tighten(starts, ends, sizes, alignments, fixed, unboxed, passes=passes, deadline=deadline)


def tighten(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray, alignments: np.ndarray, fixed: np.ndarray,
            loose: np.ndarray, *, passes: int = DEFAULT_PASSES, deadline: float | None = None
            ) -> tuple[np.ndarray | None, int]:
    """D5.5 §4.2's tightening of the placement ``loose`` (offsets per buffer; pinned ones are
    placed where ``fixed`` pins them), then mirrored tightening passes.

    Pass 1 drops every buffer, in increasing ``loose`` offset (ties: earlier start), to the lowest
    offset that fits below it (first fit). Each further pass turns the current placement upside
    down (offset -> peak - offset - size, pinned buffers too, so they stay put), tightens that the
    same way, and turns the result back: even passes push every buffer *up* against the ones above
    it, odd passes drop it down again, each time in the order the previous pass left. Each pass
    starts from a valid placement and no buffer ends above its old position in that pass's frame
    (everything placed before it sat below it and has only moved down), so without pinned buffers
    or alignment no pass raises the peak; the gaps one pass leaves under a buffer are closed by the
    next from the other side. Passes stop after ``passes``, at the deadline, or once two passes in
    a row (one each way) have not lowered the lowest peak. Upward passes ignore alignment (their
    frame is shifted by the peak), so their result counts only when every offset is aligned.

    Returns (the lowest-peak placement seen, passes made); (None, 0) when the deadline passes
    before pass 1 completes.

    One pass leaves c on top of b (peak 4, LOAD 3); the upward pass closes the gap under c:

    >>> starts, ends, sizes = np.array([0, 0, 1]), np.array([1, 2, 2]), np.array([1, 1, 2])
    >>> ones = np.ones(3, np.int64)
    >>> tighten(starts, ends, sizes, ones, -ones, np.array([0, 1, 2]), passes=1)[0].tolist()
    [0, 1, 2]
    >>> tighten(starts, ends, sizes, ones, -ones, np.array([0, 1, 2]))[0].tolist()
    [2, 0, 1]
    """
    n = len(starts)
    pinned = fixed >= 0
    any_pinned = bool(pinned.any())
    ones = np.ones(n, np.int64)
    current = loose
    best: np.ndarray | None = None
    best_peak = -1
    made = 0
    since_better = 0
    while made < passes and since_better < _STALE_PASSES:
        upward = made % 2 == 1
        if upward:  # tighten the mirror image: offset -> top - offset - size
            top = int((current + sizes).max())
            frame = top - current - sizes
            frame_fixed = np.where(pinned, top - fixed - sizes, -1)
            placed = place(starts, ends, sizes, ones, frame_fixed, lexsort_order((starts, frame), n),
                           deadline=deadline)
        else:
            placed = place(starts, ends, sizes, alignments, fixed, lexsort_order((starts, current), n),
                           deadline=deadline)
        if not placed.complete:
            break
        made += 1
        current = placed.offsets
        if upward:  # back the right way up; without pinned buffers, shifted down to offset 0
            back = top if any_pinned else int((current + sizes).max())
            current = back - current - sizes
            valid = bool((current % alignments == 0).all())
        else:
            valid = True
        peak = int((current + sizes).max())
        if valid and (best is None or peak < best_peak):
            best, best_peak, since_better = current, peak, 0
        else:
            since_better += 1
    return best, made

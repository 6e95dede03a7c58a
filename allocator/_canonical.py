"""The compiled core of the exact canonical search (see ``allocator.minimalloc``).

Everything here is numba ``njit`` code over flat int64 arrays; ``allocator.minimalloc`` is
the Python layer that prepares the arrays, runs the portfolio and converts the result.

Search state
------------
* ``offset[i]``: the buffer's offset, ``-1`` while unplaced.
* ``sec_top[k]``: the highest address in use in cross section ``k`` by placed buffers. The
  lowest offset a buffer can take ("floor") is the max of ``sec_top`` over its sections.
* ``sec_free[k]``: total size of the unplaced free (not fixed) buffers live in section ``k``.
* a trail of ``(section, old sec_top)`` pairs and a stack of placed buffers, so backtracking
  restores the state exactly instead of recomputing it.

Frames
------
The depth-first search is iterative. A *normal* frame is a search node: the group of buffers
it works on (a run of the ``members`` stack, sorted by start time), the canonical bounds
(largest offset placed so far and the rank of the buffer placed there), the last candidate it
tried and the dominance bounds of the node. A *sequence* frame holds the independent groups
a dynamic temporal decomposition split the node into; they are solved one after another and
never backtracked into (they do not interact), so a failure in one fails the whole node.
"""

from __future__ import annotations

import time

import numba
import numpy as np
from numba import njit

SOLVED, EXHAUSTED, NODE_LIMIT, TIME_LIMIT = 0, 1, 2, 3

_OPEN, _NEXT, _FAIL, _SUCCEED = 0, 1, 2, 3
_NORMAL, _SEQUENCE = 0, 1
_BIG = np.int64(1) << np.int64(62)


@njit(cache=True)
def _now() -> float:  # pragma: no cover - compiled
    with numba.objmode(t="float64"):
        t = time.perf_counter()
    return t


@njit(cache=True)
def _grow(array, needed):  # pragma: no cover - compiled
    if needed <= array.shape[0]:
        return array
    bigger = np.empty(max(needed, 2 * array.shape[0]), array.dtype)
    bigger[: array.shape[0]] = array
    return bigger


@njit(cache=True)
def _floor(j, sec_top, first_sec, last_sec):  # pragma: no cover - compiled
    top = 0
    for k in range(first_sec[j], last_sec[j]):
        if sec_top[k] > top:
            top = sec_top[k]
    return top


@njit(cache=True)
def _position(j, sec_top, first_sec, last_sec, aligns, fixed):  # pragma: no cover - compiled
    """The offset buffer ``j`` would take now: its fixed offset, or its aligned floor."""
    if fixed[j] >= 0:
        return fixed[j]
    a = aligns[j]
    return (_floor(j, sec_top, first_sec, last_sec) + a - 1) // a * a


@njit(cache=True)
def search(sizes, aligns, fixed, rank, first_sec, last_sec, n_sections, members_init, capacity,
           node_limit, deadline, canonical, section_inference, offset_floor, effective_height,
           dominance, decomposition):  # pragma: no cover - compiled
    """Depth-first search over canonical partial solutions.

    Returns ``(status, offsets, nodes, backtracks)``; ``status`` is SOLVED, EXHAUSTED (the
    whole space was searched: infeasible), NODE_LIMIT or TIME_LIMIT. ``deadline`` is a
    ``time.perf_counter()`` value, or a negative number for none.
    """
    n = sizes.shape[0]
    offset = np.full(n, -1, np.int64)
    sec_top = np.zeros(n_sections, np.int64)
    sec_free = np.zeros(n_sections, np.int64)
    for j in range(n):
        if fixed[j] < 0:
            for k in range(first_sec[j], last_sec[j]):
                sec_free[k] += sizes[j]
    effective = np.zeros(n_sections, np.int64)

    span_total = 0
    for j in range(n):
        span_total += last_sec[j] - first_sec[j]
    trail_k = np.empty(span_total + 1, np.int64)
    trail_v = np.empty(span_total + 1, np.int64)
    trail_top = 0
    placed = np.empty(n + 1, np.int64)
    placed_top = 0

    members = np.empty(4 * n + 16, np.int64)
    members[:n] = members_init
    members_top = n
    bounds = np.empty(4 * n + 16, np.int64)
    bounds_top = 0

    depth_cap = 2 * n + 8
    f_kind = np.empty(depth_cap, np.int64)
    f_begin = np.empty(depth_cap, np.int64)
    f_end = np.empty(depth_cap, np.int64)
    f_omax = np.empty(depth_cap, np.int64)
    f_imax = np.empty(depth_cap, np.int64)
    f_last_pos = np.empty(depth_cap, np.int64)
    f_last_rank = np.empty(depth_cap, np.int64)
    f_trail = np.empty(depth_cap, np.int64)
    f_placed = np.empty(depth_cap, np.int64)
    f_members_top = np.empty(depth_cap, np.int64)
    f_bounds_top = np.empty(depth_cap, np.int64)
    f_klo = np.empty(depth_cap, np.int64)
    f_khi = np.empty(depth_cap, np.int64)
    f_hmin = np.empty(depth_cap, np.int64)
    f_fmin = np.empty(depth_cap, np.int64)
    f_group = np.empty(depth_cap, np.int64)  # sequence frames: index of the group being solved
    f_groups = np.empty(depth_cap, np.int64)  # sequence frames: number of groups
    depth = 0

    nodes = 0
    backtracks = 0
    state = _OPEN
    g_begin, g_end, omax, imax = 0, n, 0, -1

    while True:
        if state == _OPEN:
            # Count the unplaced members and, with decomposition on, cut them into runs that
            # do not overlap in time (members are sorted by start time).
            count = 0
            runs = 0
            run_end = -1
            for m in range(g_begin, g_end):
                j = members[m]
                if offset[j] >= 0:
                    continue
                count += 1
                if count == 1 or first_sec[j] >= run_end:
                    runs += 1
                    run_end = last_sec[j]
                elif last_sec[j] > run_end:
                    run_end = last_sec[j]
            if count == 0:
                state = _SUCCEED
                continue
            if decomposition and runs > 1:
                members = _grow(members, members_top + count)
                bounds = _grow(bounds, bounds_top + 2 * runs)
                f_kind[depth] = _SEQUENCE
                f_omax[depth] = omax
                f_imax[depth] = imax
                f_trail[depth] = trail_top
                f_placed[depth] = placed_top
                f_members_top[depth] = members_top
                f_bounds_top[depth] = bounds_top
                f_group[depth] = 0
                f_groups[depth] = runs
                f_begin[depth] = bounds_top
                write = members_top
                run_end = -1
                first = True
                for m in range(g_begin, g_end):
                    j = members[m]
                    if offset[j] >= 0:
                        continue
                    if first or first_sec[j] >= run_end:
                        if not first:
                            bounds[bounds_top] = write
                            bounds_top += 1
                        bounds[bounds_top] = write
                        bounds_top += 1
                        run_end = last_sec[j]
                        first = False
                    elif last_sec[j] > run_end:
                        run_end = last_sec[j]
                    members[write] = j
                    write += 1
                bounds[bounds_top] = write
                bounds_top += 1
                members_top = write
                depth += 1
                g_begin = bounds[f_begin[depth - 1]]
                g_end = bounds[f_begin[depth - 1] + 1]
                continue  # open the first group; it is one run, so it becomes a normal frame
            # A normal frame: record the node's bounds once; they hold for every candidate.
            klo = n_sections
            khi = 0
            hmin = _BIG
            fmin = _BIG
            for m in range(g_begin, g_end):
                j = members[m]
                if offset[j] >= 0:
                    continue
                if first_sec[j] < klo:
                    klo = first_sec[j]
                if last_sec[j] > khi:
                    khi = last_sec[j]
                if fixed[j] >= 0:
                    if fixed[j] < fmin:
                        fmin = fixed[j]
                else:
                    h = _position(j, sec_top, first_sec, last_sec, aligns, fixed) + sizes[j]
                    if h < hmin:
                        hmin = h
            f_kind[depth] = _NORMAL
            f_begin[depth] = g_begin
            f_end[depth] = g_end
            f_omax[depth] = omax
            f_imax[depth] = imax
            f_last_pos[depth] = -1
            f_last_rank[depth] = -1
            f_trail[depth] = trail_top
            f_placed[depth] = placed_top
            f_members_top[depth] = members_top
            f_bounds_top[depth] = bounds_top
            f_klo[depth] = klo
            f_khi[depth] = khi
            f_hmin[depth] = hmin
            f_fmin[depth] = fmin
            depth += 1
            state = _NEXT

        elif state == _NEXT:
            d = depth - 1
            # Undo the previous candidate of this node, if any.
            while trail_top > f_trail[d]:
                trail_top -= 1
                sec_top[trail_k[trail_top]] = trail_v[trail_top]
            while placed_top > f_placed[d]:
                placed_top -= 1
                j = placed[placed_top]
                offset[j] = -1
                if fixed[j] < 0:
                    for k in range(first_sec[j], last_sec[j]):
                        sec_free[k] += sizes[j]
            omax = f_omax[d]
            imax = f_imax[d]
            last_pos = f_last_pos[d]
            last_rank = f_last_rank[d]
            best = -1
            best_pos = _BIG
            best_rank = _BIG
            for m in range(f_begin[d], f_end[d]):
                j = members[m]
                if offset[j] >= 0:
                    continue
                p = _position(j, sec_top, first_sec, last_sec, aligns, fixed)
                r = rank[j]
                # candidates are tried in increasing (offset, rank): skip those already tried
                if p < last_pos or (p == last_pos and r <= last_rank):
                    continue
                if p > best_pos or (p == best_pos and r > best_rank):
                    continue
                if p + sizes[j] > capacity:
                    continue
                if canonical:
                    if p < omax or (p == omax and r < imax):
                        continue  # offset or index non-monotonic
                    if p > f_fmin[d]:
                        continue  # an unplaced fixed buffer would end up below the canonical order
                    if dominance and p >= f_hmin[d]:
                        continue  # some unplaced buffer fits entirely below: dominated
                best = j
                best_pos = p
                best_rank = r
            if best < 0:
                depth -= 1
                members_top = f_members_top[d]
                bounds_top = f_bounds_top[d]
                state = _FAIL
                continue
            nodes += 1
            if nodes > node_limit:
                return NODE_LIMIT, offset, nodes, backtracks
            if deadline >= 0 and (nodes & 1023) == 0 and _now() > deadline:
                return TIME_LIMIT, offset, nodes, backtracks
            f_last_pos[d] = best_pos
            f_last_rank[d] = best_rank
            # Place it.
            j = best
            p = best_pos
            top = p + sizes[j]
            offset[j] = p
            placed[placed_top] = j
            placed_top += 1
            if fixed[j] < 0:
                for k in range(first_sec[j], last_sec[j]):
                    sec_free[k] -= sizes[j]
            for k in range(first_sec[j], last_sec[j]):
                if sec_top[k] < top:
                    trail_k[trail_top] = k
                    trail_v[trail_top] = sec_top[k]
                    trail_top += 1
                    sec_top[k] = top
            new_omax = p if canonical else 0
            # Check the new node: unplaced fixed buffers still placeable, cross-section bounds.
            alive = True
            need_effective = section_inference and effective_height
            if need_effective:
                for k in range(f_klo[d], f_khi[d]):
                    effective[k] = _BIG
            for m in range(f_begin[d], f_end[d]):
                q = members[m]
                if offset[q] >= 0:
                    continue
                if fixed[q] >= 0:
                    if _floor(q, sec_top, first_sec, last_sec) > fixed[q]:
                        alive = False
                        break
                    if canonical and (fixed[q] < p or (fixed[q] == p and rank[q] < rank[j])):
                        alive = False
                        break
                elif need_effective:
                    pq = _position(q, sec_top, first_sec, last_sec, aligns, fixed)
                    for k in range(first_sec[q], last_sec[q]):
                        if pq < effective[k]:
                            effective[k] = pq
            if alive and section_inference:
                for k in range(f_klo[d], f_khi[d]):
                    if sec_free[k] == 0:
                        continue
                    height = sec_top[k]
                    if offset_floor and new_omax > height:
                        height = new_omax
                    if need_effective and effective[k] > height:
                        height = effective[k]
                    if height + sec_free[k] > capacity:
                        alive = False
                        break
            if not alive:
                backtracks += 1
                continue  # state stays _NEXT: undo and try the next candidate
            g_begin = f_begin[d]
            g_end = f_end[d]
            omax = new_omax
            imax = rank[j]
            state = _OPEN

        elif state == _FAIL:
            if depth == 0:
                return EXHAUSTED, offset, nodes, backtracks
            d = depth - 1
            if f_kind[d] == _NORMAL:
                backtracks += 1
                state = _NEXT
            else:
                # One group of a decomposition has no solution: neither has the node.
                while trail_top > f_trail[d]:
                    trail_top -= 1
                    sec_top[trail_k[trail_top]] = trail_v[trail_top]
                while placed_top > f_placed[d]:
                    placed_top -= 1
                    j = placed[placed_top]
                    offset[j] = -1
                    if fixed[j] < 0:
                        for k in range(first_sec[j], last_sec[j]):
                            sec_free[k] += sizes[j]
                depth -= 1
                members_top = f_members_top[d]
                bounds_top = f_bounds_top[d]

        else:  # _SUCCEED: the group just opened has every member placed
            while depth > 0 and f_kind[depth - 1] == _NORMAL:
                depth -= 1
            if depth == 0:
                return SOLVED, offset, nodes, backtracks
            d = depth - 1
            f_group[d] += 1
            if f_group[d] < f_groups[d]:
                g_begin = bounds[f_begin[d] + 2 * f_group[d]]
                g_end = bounds[f_begin[d] + 2 * f_group[d] + 1]
                omax = f_omax[d]
                imax = f_imax[d]
                state = _OPEN
            else:
                depth -= 1
                members_top = f_members_top[d]
                bounds_top = f_bounds_top[d]

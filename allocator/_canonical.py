"""The compiled core of the exact canonical search (see ``allocator.minimalloc``).

Everything here is numba ``njit`` code over flat int64 arrays; ``allocator.minimalloc`` is
the Python layer that prepares the arrays, runs the portfolio and converts the result.

Search state
------------
* ``offset[i]``: the buffer's offset, ``-1`` while unplaced.
* ``sec_top[k]``: the highest address in use in cross section ``k`` by placed buffers. The
  lowest offset a buffer can take ("floor") is the max of ``sec_top`` over its sections.
* ``sec_free[k]``: total size of the unplaced free (not fixed) buffers live in section ``k``.
* ``pos[j]``: the offset unplaced buffer ``j`` would take now (its aligned floor, or its fixed
  offset). Placing a buffer raises ``pos`` of the unplaced buffers it overlaps; only those of
  the current group can overlap it, so the update costs one pass over the group.
* trails of ``(section, old sec_top)`` and ``(buffer, old pos)`` pairs and a stack of placed
  buffers, so backtracking restores the state exactly instead of recomputing it.

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

SOLVED, EXHAUSTED, NODE_LIMIT, TIME_LIMIT, CANCELLED = 0, 1, 2, 3, 4

_OPEN, _NEXT, _FAIL, _SUCCEED = 0, 1, 2, 3
_NORMAL, _SEQUENCE = 0, 1
_BIG = np.int64(1) << np.int64(62)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MUL_V = np.uint64(0xC2B2AE3D27D4EB4F)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_SALT_A = np.uint64(0x243F6A8885A308D3)
_SALT_B = np.uint64(0x13198A2E03707344)
_SALT_C = np.uint64(0xA4093822299F31D0)
_SALT_D = np.uint64(0x082EFA98EC4E6C89)
_SALT_E = np.uint64(0x452821E638D01377)


@njit(cache=True)
def _mix(a, b, salt):  # pragma: no cover - compiled
    """A 64-bit hash of the pair ``(a, b)`` (splitmix64 finaliser); ``salt`` picks the function."""
    z = (np.uint64(a) * _GOLDEN) ^ (np.uint64(b) * _MUL_V) ^ salt
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


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
def _remember(table_a, table_b, table_mask, key_a, key_b):  # pragma: no cover - compiled
    """Record a state searched to exhaustion (overwriting whatever held its slot)."""
    slot = key_a & table_mask
    table_a[slot] = key_a
    table_b[slot] = key_b


@njit(cache=True)
def _group_bounds(omax, imax, restart_groups):  # pragma: no cover - compiled
    """Canonical bounds a group of a decomposition starts from.

    The groups of a decomposition are solved once each and never revisited, so a group only
    has to be canonical within itself: restarting its offset order at 0 lets it fill the gaps
    its time window has below the prefix's largest offset. Every buffer still goes to its
    floor given everything placed, so the search stays sound; it explores a superset of the
    inherited-bound search, so it stays complete, and dominance holds within the group by the
    same minimum-offset-sum argument.
    """
    if restart_groups:
        return np.int64(0), np.int64(-1)
    return omax, imax


@njit(cache=True)
def _rank_term(j, r, r0):  # pragma: no cover - compiled
    """Hash terms ``(a, b)`` of buffer ``j`` holding rank ``r`` instead of its static rank ``r0``."""
    if r == r0:
        return np.uint64(0), np.uint64(0)
    return (_mix(j, r, _SALT_D) ^ _mix(j, r0, _SALT_D)), (_mix(r, j, _SALT_E) ^ _mix(r0, j, _SALT_E))


@njit(cache=True)
def _rerank(members, begin, end, rank, rank0, pre_key, post_key, first_sec, last_sec, sec_free, rank_trail_j,
            rank_trail_v, rank_trail_top):  # pragma: no cover - compiled
    """Re-rank the buffers ``members[begin:end]`` of one group by the key ``(pre, -T, post)``.

    T is the largest total of *unplaced* buffer bytes over the sections a buffer spans, taken
    now rather than at the start: inside a group of a decomposition the placed buffers no
    longer weigh on it. The group keeps the set of rank values it had, handed out in the new
    order, so ranks stay distinct across groups. Old ranks go on the trail; returns
    ``(new trail top, hash delta a, hash delta b)``.
    """
    g = end - begin
    t_cur = np.empty(g, np.int64)
    post = np.empty(g, np.int64)
    pre = np.empty(g, np.int64)
    old = np.empty(g, np.int64)
    for x in range(g):
        j = members[begin + x]
        t = 0
        for k in range(first_sec[j], last_sec[j]):
            if sec_free[k] > t:
                t = sec_free[k]
        t_cur[x] = -t
        post[x] = post_key[j]
        pre[x] = pre_key[j]
        old[x] = rank[j]
    order = np.argsort(post, kind="mergesort")
    order = order[np.argsort(t_cur[order], kind="mergesort")]
    order = order[np.argsort(pre[order], kind="mergesort")]
    values = np.sort(old)
    delta_a = np.uint64(0)
    delta_b = np.uint64(0)
    for x in range(g):
        j = members[begin + order[x]]
        r_old = rank[j]
        r_new = values[x]
        if r_old == r_new:
            continue
        rank_trail_j[rank_trail_top] = j
        rank_trail_v[rank_trail_top] = r_old
        rank_trail_top += 1
        oa, ob = _rank_term(j, r_old, rank0[j])
        na, nb = _rank_term(j, r_new, rank0[j])
        delta_a ^= oa ^ na
        delta_b ^= ob ^ nb
        rank[j] = r_new
    return rank_trail_top, delta_a, delta_b


@njit(cache=True)
def _undo(to_trail, to_pos_trail, to_placed, trail_top, pos_trail_top, placed_top, trail_k, trail_v,
          pos_trail_j, pos_trail_v, sec_top, pos, placed, offset, fixed, first_sec, last_sec, sec_free,
          sizes, sec_count):  # pragma: no cover - compiled
    """Restore the state to the given trail marks; return the new tops."""
    while trail_top > to_trail:
        trail_top -= 1
        sec_top[trail_k[trail_top]] = trail_v[trail_top]
    while pos_trail_top > to_pos_trail:
        pos_trail_top -= 1
        pos[pos_trail_j[pos_trail_top]] = pos_trail_v[pos_trail_top]
    while placed_top > to_placed:
        placed_top -= 1
        j = placed[placed_top]
        offset[j] = -1
        for k in range(first_sec[j], last_sec[j]):
            sec_count[k] += 1
            if fixed[j] < 0:
                sec_free[k] += sizes[j]
    return trail_top, pos_trail_top, placed_top


@njit(cache=True, nogil=True)
def search(sizes, aligns, fixed, rank_in, first_sec, last_sec, n_sections, members_init, capacity,
           node_limit, deadline, canonical, section_inference, offset_floor, effective_height,
           dominance, decomposition, restart_groups, buffer_key_a, buffer_key_b,
           table_bits, staircase, section_start, section_buffers, rank_first,
           twin_before, hatless, rerank, pre_key, post_key, stop):  # pragma: no cover - compiled
    """Depth-first search over canonical partial solutions.

    Returns ``(status, offsets, nodes, backtracks, splits, table_hits)``; ``status`` is SOLVED, EXHAUSTED (the
    whole space was searched: infeasible), NODE_LIMIT, TIME_LIMIT or CANCELLED (another thread set
    ``stop[0]``, a one-element int64 array, to non-zero). ``deadline`` is a
    ``time.perf_counter()`` value, or a negative number for none.

    ``table_bits > 0`` turns on a table of ``2**table_bits`` failed states. The future of a
    node depends only on its unplaced buffers, the section tops where they live and the
    canonical bounds, so a state that was searched to exhaustion once fails again wherever
    it recurs. States are keyed by two independent 64-bit Zobrist-style hashes (unplaced
    buffers XOR per-section ``(section, top)`` terms XOR the bounds), kept incrementally; a
    false hit needs both to collide. Entries are overwritten on collision of the slot.
    With ``rerank`` a group's ranks can differ from ``rank_in``; the ranks of unplaced buffers
    steer their future, so every rank that differs adds a ``(buffer, rank)`` term to the hash.
    """
    n = sizes.shape[0]
    rank = rank_in.copy()
    rank_trail_j = np.empty(n + 16, np.int64)
    rank_trail_v = np.empty(n + 16, np.int64)
    rank_trail_top = 0
    offset = np.full(n, -1, np.int64)
    sec_top = np.zeros(n_sections, np.int64)
    sec_free = np.zeros(n_sections, np.int64)
    pos = np.zeros(n, np.int64)
    span_total = 0
    for j in range(n):
        span_total += last_sec[j] - first_sec[j]
        if fixed[j] >= 0:
            pos[j] = fixed[j]
        else:
            for k in range(first_sec[j], last_sec[j]):
                sec_free[k] += sizes[j]
    effective = np.zeros(n_sections, np.int64)
    # read the clock every 1024 nodes, or every node when a node walks many sections
    check_mask = 1023 if span_total < 200_000 else 0
    stair_pos = np.empty(n + 1, np.int64)
    stair_size = np.empty(n + 1, np.int64)
    sec_count = np.zeros(n_sections, np.int64)
    hash_a = np.uint64(0)
    hash_b = np.uint64(0)
    for j in range(n):
        hash_a ^= buffer_key_a[j]
        hash_b ^= buffer_key_b[j]
        for k in range(first_sec[j], last_sec[j]):
            sec_count[k] += 1
    for k in range(n_sections):
        if sec_count[k] > 0:
            hash_a ^= _mix(k, 0, _SALT_A)
            hash_b ^= _mix(k, 0, _SALT_B)
    table_size = (1 << table_bits) if table_bits > 0 else 1
    table_a = np.zeros(table_size, np.uint64)
    table_b = np.zeros(table_size, np.uint64)
    table_mask = np.uint64(table_size - 1)
    hits = 0

    trail_k = np.empty(min(span_total + 1, 4 * n + 16), np.int64)
    trail_v = np.empty(min(span_total + 1, 4 * n + 16), np.int64)
    trail_top = 0
    pos_trail_j = np.empty(4 * n + 16, np.int64)
    pos_trail_v = np.empty(4 * n + 16, np.int64)
    pos_trail_top = 0
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
    f_rank_trail = np.empty(depth_cap, np.int64)
    f_hatless = np.zeros(depth_cap, np.bool_)  # the last candidate tried overlapped no unplaced buffer
    f_trail = np.empty(depth_cap, np.int64)
    f_pos_trail = np.empty(depth_cap, np.int64)
    f_placed = np.empty(depth_cap, np.int64)
    f_members_top = np.empty(depth_cap, np.int64)
    f_bounds_top = np.empty(depth_cap, np.int64)
    f_klo = np.empty(depth_cap, np.int64)
    f_khi = np.empty(depth_cap, np.int64)
    f_hmin = np.empty(depth_cap, np.int64)
    f_fmin = np.empty(depth_cap, np.int64)
    f_hash_a = np.empty(depth_cap, np.uint64)  # state hash on entry (to restore on undo)
    f_hash_b = np.empty(depth_cap, np.uint64)
    f_key_a = np.empty(depth_cap, np.uint64)  # state key on entry (hash and bounds), for the table
    f_key_b = np.empty(depth_cap, np.uint64)
    f_group = np.empty(depth_cap, np.int64)  # sequence frames: index of the group being solved
    f_groups = np.empty(depth_cap, np.int64)  # sequence frames: number of groups
    depth = 0

    nodes = 0
    backtracks = 0
    splits = 0
    state = _OPEN
    g_begin, g_end, omax, imax = 0, n, 0, -1

    while True:
        if state == _OPEN:
            # Count the unplaced members and, with decomposition on, cut them into runs that
            # do not overlap in time (members are sorted by start time).
            # The same pass collects the node's bounds for a normal frame: the sections the
            # group spans, the lowest top of an unplaced free buffer (dominance) and the
            # lowest unplaced pinned offset.
            count = 0
            runs = 0
            run_end = -1
            klo = n_sections
            khi = 0
            hmin = _BIG
            fmin = _BIG
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
                if first_sec[j] < klo:
                    klo = first_sec[j]
                if last_sec[j] > khi:
                    khi = last_sec[j]
                if fixed[j] >= 0:
                    if fixed[j] < fmin:
                        fmin = fixed[j]
                elif pos[j] + sizes[j] < hmin:
                    hmin = pos[j] + sizes[j]
            if count == 0:
                state = _SUCCEED
                continue
            key_a = hash_a ^ _mix(omax, imax + 1, _SALT_C)
            key_b = hash_b ^ _mix(imax + 1, omax, _SALT_C)
            if table_bits > 0:
                slot = key_a & table_mask
                if table_a[slot] == key_a and table_b[slot] == key_b:
                    hits += 1
                    state = _FAIL
                    continue
            f_hash_a[depth] = hash_a
            f_hash_b[depth] = hash_b
            f_key_a[depth] = key_a
            f_key_b[depth] = key_b
            # undo marks and canonical bounds of the node, the same for either kind of frame
            f_omax[depth] = omax
            f_imax[depth] = imax
            f_trail[depth] = trail_top
            f_pos_trail[depth] = pos_trail_top
            f_placed[depth] = placed_top
            f_members_top[depth] = members_top
            f_bounds_top[depth] = bounds_top
            f_rank_trail[depth] = rank_trail_top
            if decomposition and runs > 1:
                splits += 1
                members = _grow(members, members_top + count)
                bounds = _grow(bounds, bounds_top + 2 * runs)
                f_kind[depth] = _SEQUENCE
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
                if rerank and restart_groups:
                    rank_trail_j = _grow(rank_trail_j, rank_trail_top + count)
                    rank_trail_v = _grow(rank_trail_v, rank_trail_top + count)
                    for grp in range(runs):
                        rank_trail_top, da, db = _rerank(
                            members, bounds[f_begin[depth] + 2 * grp], bounds[f_begin[depth] + 2 * grp + 1], rank,
                            rank_in, pre_key, post_key, first_sec, last_sec, sec_free, rank_trail_j, rank_trail_v,
                            rank_trail_top)
                        hash_a ^= da
                        hash_b ^= db
                depth += 1
                g_begin = bounds[f_begin[depth - 1]]
                g_end = bounds[f_begin[depth - 1] + 1]
                omax, imax = _group_bounds(omax, imax, restart_groups)
                continue  # open the first group; it is one run, so it becomes a normal frame
            # A normal frame: record the node's bounds once; they hold for every candidate.
            f_kind[depth] = _NORMAL
            f_begin[depth] = g_begin
            f_end[depth] = g_end
            f_last_pos[depth] = -1
            f_last_rank[depth] = -1
            f_hatless[depth] = False
            f_klo[depth] = klo
            f_khi[depth] = khi
            f_hmin[depth] = hmin
            f_fmin[depth] = fmin
            depth += 1
            state = _NEXT

        elif state == _NEXT:
            d = depth - 1
            # Undo the previous candidate of this node, if any.
            trail_top, pos_trail_top, placed_top = _undo(
                f_trail[d], f_pos_trail[d], f_placed[d], trail_top, pos_trail_top, placed_top, trail_k, trail_v,
                pos_trail_j, pos_trail_v, sec_top, pos, placed, offset, fixed, first_sec, last_sec, sec_free, sizes,
                sec_count)
            hash_a = f_hash_a[d]
            hash_b = f_hash_b[d]
            omax = f_omax[d]
            imax = f_imax[d]
            last_pos = f_last_pos[d]
            last_rank = f_last_rank[d]
            best = -1
            best_pos = _BIG
            best_rank = _BIG
            # Hatless pruning: when the candidate just refuted overlaps no unplaced buffer, any
            # completion of this node could move it down to its floor and place it first; it
            # had none, so neither has the node: look at no further candidate.
            scan_end = f_begin[d] if f_hatless[d] else f_end[d]
            for m in range(f_begin[d], scan_end):
                j = members[m]
                if offset[j] >= 0:
                    continue
                if twin_before[j] >= 0 and offset[twin_before[j]] < 0:
                    continue  # identical buffers are placed in rank order (symmetry breaking)
                p = pos[j]
                r = rank[j]
                if rank_first:
                    # candidates are tried in increasing rank: skip those already tried
                    if r <= last_rank or r > best_rank:
                        continue
                else:
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
                if table_bits > 0:
                    _remember(table_a, table_b, table_mask, f_key_a[d], f_key_b[d])
                depth -= 1
                members_top = f_members_top[d]
                bounds_top = f_bounds_top[d]
                state = _FAIL
                continue
            nodes += 1
            if nodes > node_limit:
                return NODE_LIMIT, offset, nodes, backtracks, splits, hits
            if (nodes & check_mask) == 0:
                if stop[0] != 0:
                    return CANCELLED, offset, nodes, backtracks, splits, hits
                if deadline >= 0 and _now() > deadline:
                    return TIME_LIMIT, offset, nodes, backtracks, splits, hits
            f_last_pos[d] = best_pos
            f_last_rank[d] = best_rank
            # Place it: raise the sections it spans and the positions of the buffers it overlaps.
            i = best
            p = best_pos
            top = p + sizes[i]
            lo_i = first_sec[i]
            hi_i = last_sec[i]
            offset[i] = p
            placed[placed_top] = i
            placed_top += 1
            hash_a ^= buffer_key_a[i]
            hash_b ^= buffer_key_b[i]
            if rank[i] != rank_in[i]:
                da, db = _rank_term(i, rank[i], rank_in[i])
                hash_a ^= da
                hash_b ^= db
            trail_k = _grow(trail_k, trail_top + hi_i - lo_i)
            trail_v = _grow(trail_v, trail_top + hi_i - lo_i)
            for k in range(lo_i, hi_i):
                if fixed[i] < 0:
                    sec_free[k] -= sizes[i]
                old = sec_top[k]
                hash_a ^= _mix(k, old, _SALT_A)
                hash_b ^= _mix(k, old, _SALT_B)
                if old < top:
                    trail_k[trail_top] = k
                    trail_v[trail_top] = old
                    trail_top += 1
                    sec_top[k] = top
                sec_count[k] -= 1
                if sec_count[k] > 0:
                    hash_a ^= _mix(k, sec_top[k], _SALT_A)
                    hash_b ^= _mix(k, sec_top[k], _SALT_B)
            alive = True
            hat = False
            pos_trail_j = _grow(pos_trail_j, pos_trail_top + f_end[d] - f_begin[d])
            pos_trail_v = _grow(pos_trail_v, pos_trail_top + f_end[d] - f_begin[d])
            for m in range(f_begin[d], f_end[d]):
                q = members[m]
                if offset[q] >= 0 or first_sec[q] >= hi_i or last_sec[q] <= lo_i:
                    continue
                hat = True
                if fixed[q] >= 0:
                    # a pinned buffer overlapping i in time must not overlap it in address
                    if fixed[q] < top and p < fixed[q] + sizes[q]:
                        alive = False
                        break
                else:
                    a = aligns[q]
                    raised = (top + a - 1) // a * a
                    if pos[q] < raised:
                        pos_trail_j[pos_trail_top] = q
                        pos_trail_v[pos_trail_top] = pos[q]
                        pos_trail_top += 1
                        pos[q] = raised
            f_hatless[d] = hatless and not hat
            new_omax = p if canonical else 0
            if alive and canonical and f_fmin[d] < _BIG:
                # every unplaced pinned buffer must still come later in the canonical order
                for m in range(f_begin[d], f_end[d]):
                    q = members[m]
                    if offset[q] < 0 and fixed[q] >= 0 and (fixed[q] < p or (fixed[q] == p and rank[q] < rank[i])):
                        alive = False
                        break
            if alive and section_inference and staircase:
                # In each section the unplaced buffers at or above any of their positions v
                # must all fit above v: v + (their sizes) <= capacity, for every such v.
                for k in range(f_klo[d], f_khi[d]):
                    if sec_free[k] == 0:
                        continue
                    base = sec_top[k]
                    if offset_floor and new_omax > base:
                        base = new_omax
                    m = 0
                    for e in range(section_start[k], section_start[k + 1]):
                        q = section_buffers[e]
                        if offset[q] >= 0 or fixed[q] >= 0:
                            continue
                        v = pos[q]
                        if v < base:
                            v = base
                        # insertion sort by position, highest first
                        w = m
                        while w > 0 and stair_pos[w - 1] < v:
                            stair_pos[w] = stair_pos[w - 1]
                            stair_size[w] = stair_size[w - 1]
                            w -= 1
                        stair_pos[w] = v
                        stair_size[w] = sizes[q]
                        m += 1
                    above = 0
                    for w in range(m):
                        above += stair_size[w]
                        if stair_pos[w] + above > capacity:
                            alive = False
                            break
                    if not alive:
                        break
            if alive and section_inference and not staircase:
                need_effective = effective_height
                if need_effective:
                    for k in range(f_klo[d], f_khi[d]):
                        effective[k] = _BIG
                    for m in range(f_begin[d], f_end[d]):
                        q = members[m]
                        if offset[q] >= 0 or fixed[q] >= 0:
                            continue
                        v = pos[q]
                        for k in range(first_sec[q], last_sec[q]):
                            if v < effective[k]:
                                effective[k] = v
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
            imax = rank[i]
            state = _OPEN

        elif state == _FAIL:
            if depth == 0:
                return EXHAUSTED, offset, nodes, backtracks, splits, hits
            d = depth - 1
            if f_kind[d] == _NORMAL:
                backtracks += 1
                state = _NEXT
            else:
                # One group of a decomposition has no solution: neither has the node.
                if table_bits > 0:
                    _remember(table_a, table_b, table_mask, f_key_a[d], f_key_b[d])
                hash_a = f_hash_a[d]
                hash_b = f_hash_b[d]
                while rank_trail_top > f_rank_trail[d]:
                    rank_trail_top -= 1
                    rank[rank_trail_j[rank_trail_top]] = rank_trail_v[rank_trail_top]
                trail_top, pos_trail_top, placed_top = _undo(
                    f_trail[d], f_pos_trail[d], f_placed[d], trail_top, pos_trail_top, placed_top, trail_k,
                    trail_v, pos_trail_j, pos_trail_v, sec_top, pos, placed, offset, fixed, first_sec, last_sec,
                    sec_free, sizes, sec_count)
                depth -= 1
                members_top = f_members_top[d]
                bounds_top = f_bounds_top[d]

        else:  # _SUCCEED: the group just opened has every member placed
            while depth > 0 and f_kind[depth - 1] == _NORMAL:
                depth -= 1
            if depth == 0:
                return SOLVED, offset, nodes, backtracks, splits, hits
            d = depth - 1
            f_group[d] += 1
            if f_group[d] < f_groups[d]:
                g_begin = bounds[f_begin[d] + 2 * f_group[d]]
                g_end = bounds[f_begin[d] + 2 * f_group[d] + 1]
                omax, imax = _group_bounds(f_omax[d], f_imax[d], restart_groups)
                state = _OPEN
            else:
                depth -= 1
                members_top = f_members_top[d]
                bounds_top = f_bounds_top[d]

"""The compiled inner loop of ``telamalloc`` (see ``allocator.telamalloc`` for the method).

State lives in flat int64 arrays indexed by buffer or by decision level:

* per buffer: ``placed``, ``off`` (offset when placed), ``lvl`` (decision level of its
  placement, -1 for pinned buffers), and the *domain* of an unplaced buffer as ``lb``/``ub``:
  the lowest and highest aligned start that collides with no obstacle. Positions outside
  ``[lb, ub]`` are known to be infeasible; holes inside are found again by the gap walk;
* an *obstacle* of a buffer is a time-overlapping neighbour that is placed (its address range)
  or unplaced with a compulsory part: when ``ub < lb + size`` every position of the
  neighbour covers ``[ub, lb + size)`` (the timetable reasoning of CP solvers' no-overlap);
* a trail of (buffer, old lb, old ub, old dep, was-a-placement) records, undone to a level's
  mark on backtracking;
* per level: the candidate list, the index of the candidate being tried, the conflict set
  (explicit levels, sorted descending, plus ``accb``: "and every level <= accb", the
  over-approximation used when an explanation is coarse or the list overflows) and the
  backtrack counter value when the level's current choice was made (the stuck-subtree rule).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from allocator._canonical import _now
from allocator.greedy import sort_by_key

SOLVED, EXHAUSTED, STEP_LIMIT, TIME_LIMIT, INFEASIBLE = 0, 1, 2, 3, 4
#: block-selection strategies (``TelaMallocOptions.selection``)
SEL_TELAMALLOC, SEL_SIZE, SEL_AREA, SEL_LIFETIME, SEL_LOWEST = 0, 1, 2, 3, 4
#: entries of the ``stats`` array returned by ``search``
ST_STEPS, ST_MINOR, ST_MAJOR, ST_STUCK, ST_DEPTH, ST_BACKJUMP_LEVELS = 0, 1, 2, 3, 4, 5
N_STATS = 6
_KC = 48  # explicit levels kept per conflict set
_FAR = 1 << 62


@njit(cache=True)
def neighbours(starts, ends):  # pragma: no cover - compiled
    """Time-overlap lists in CSR form: ``idx[ptr[i]:ptr[i + 1]]`` are the buffers overlapping i.

    Buffers are visited in start order; every later-starting buffer that starts before i ends
    overlaps it, so building costs O(n log n + pairs).
    """
    n = starts.shape[0]
    order = np.argsort(starts, kind="mergesort")
    degree = np.zeros(n + 1, np.int64)
    for a in range(n):
        i = order[a]
        b = a + 1
        while b < n and starts[order[b]] < ends[i]:
            degree[i] += 1
            degree[order[b]] += 1
            b += 1
    ptr = np.zeros(n + 1, np.int64)
    for i in range(n):
        ptr[i + 1] = ptr[i] + degree[i]
    fill = ptr[:n].copy()
    idx = np.empty(ptr[n], np.int32)
    for a in range(n):
        i = order[a]
        b = a + 1
        while b < n and starts[order[b]] < ends[i]:
            j = order[b]
            idx[fill[i]] = j
            fill[i] += 1
            idx[fill[j]] = i
            fill[j] += 1
            b += 1
    return ptr, idx


@njit(cache=True)
def _obstacle(z, placed, off, lb, ub, sizes, use_comp):  # pragma: no cover - compiled
    """Address range ``(lo, hi)`` that neighbour ``z`` certainly occupies (``lo >= hi``: none)."""
    if placed[z]:
        return off[z], off[z] + sizes[z]
    if use_comp:
        return ub[z], lb[z] + sizes[z]
    return 0, 0


@njit(cache=True)
def _lowest_fit(y, start, ptr, nbr, placed, off, lb, ub, sizes, aligns, use_comp, s_lo, s_hi, s_key, s_pack,
                s_ord):  # pragma: no cover - compiled
    """Lowest aligned start >= ``start`` at which ``y`` meets no obstacle (a gap walk in address order)."""
    a = aligns[y]
    s = sizes[y]
    p = (start + a - 1) // a * a
    m = 0
    for k in range(ptr[y], ptr[y + 1]):
        lo, hi = _obstacle(nbr[k], placed, off, lb, ub, sizes, use_comp)
        if lo < hi and hi > p:
            s_lo[m] = lo
            s_hi[m] = hi
            s_key[m] = lo
            m += 1
    sort_by_key(s_key, m, s_pack, s_ord)
    for k in range(m):
        o = s_ord[k]
        if s_lo[o] >= p + s:
            break
        if s_hi[o] > p:
            p = (s_hi[o] + a - 1) // a * a
    return p


@njit(cache=True)
def _highest_fit(y, start, ptr, nbr, placed, off, lb, ub, sizes, aligns, use_comp, s_lo, s_hi, s_key, s_pack,
                 s_ord, top):  # pragma: no cover - compiled
    """Highest aligned start <= ``start`` at which ``y`` meets no obstacle, or -1."""
    a = aligns[y]
    s = sizes[y]
    p = start // a * a
    m = 0
    for k in range(ptr[y], ptr[y + 1]):
        lo, hi = _obstacle(nbr[k], placed, off, lb, ub, sizes, use_comp)
        if lo < hi and lo < p + s:
            s_lo[m] = lo
            s_hi[m] = hi
            s_key[m] = top - hi  # descending hi
            m += 1
    sort_by_key(s_key, m, s_pack, s_ord)
    for k in range(m):
        o = s_ord[k]
        if s_hi[o] <= p:
            break
        if s_lo[o] < p + s:
            if s_lo[o] - s < 0:
                return -1
            p = (s_lo[o] - s) // a * a
    return p


@njit(cache=True)
def _acc_add(acc, accn, accb, d, v):  # pragma: no cover - compiled
    """Add level ``v`` to the conflict set of level ``d``."""
    if v <= accb[d]:
        return
    n = accn[d]
    pos = 0
    while pos < n and acc[d, pos] > v:
        pos += 1
    if pos < n and acc[d, pos] == v:
        return
    if n == _KC:  # full: the smallest explicit level joins the "all levels below" part
        n -= 1
        if acc[d, n] > accb[d]:
            accb[d] = acc[d, n]
        if pos >= n:
            if v > accb[d]:
                accb[d] = v
            accn[d] = n
            return
    for k in range(n, pos, -1):
        acc[d, k] = acc[d, k - 1]
    acc[d, pos] = v
    accn[d] = n + 1


@njit(cache=True)
def _top2(acc, accn, accb, d):  # pragma: no cover - compiled
    """The two highest levels of level ``d``'s conflict set (-1 where absent)."""
    c1 = -1
    c2 = -1
    vals = np.empty(4, np.int64)
    vals[0] = acc[d, 0] if accn[d] > 0 else -1
    vals[1] = acc[d, 1] if accn[d] > 1 else -1
    vals[2] = accb[d]
    vals[3] = accb[d] - 1 if accb[d] >= 1 else -1
    for k in range(4):
        v = vals[k]
        if v > c1:
            c2 = c1
            c1 = v
        elif c1 > v > c2:
            c2 = v
    return c1, c2


@njit(cache=True)
def _energy(x, first_sec, last_sec, sec_ptr, sec_mem, placed, off, sizes, capacity, e_lo, e_hi, e_key, e_pack,
            e_ord, e_items, e_prefix):  # pragma: no cover - compiled
    """The first cross section of ``x`` whose unplaced buffers cannot fit its free gaps, or -1.

    In a cross section every live buffer must sit inside one free gap between the placed ones.
    A gap of g bytes holds at most ``min(g, total size of the unplaced buffers no larger than
    g)``; when the gaps together hold less than the unplaced buffers need, no completion exists
    (a relaxation of the bin packing the section has to solve).
    """
    for t in range(first_sec[x], last_sec[x]):
        m = 0
        items = 0
        need = 0
        for k in range(sec_ptr[t], sec_ptr[t + 1]):
            z = sec_mem[k]
            if placed[z]:
                e_lo[m] = off[z]
                e_hi[m] = off[z] + sizes[z]
                e_key[m] = off[z]
                m += 1
            else:
                e_items[items] = sizes[z]
                items += 1
                need += sizes[z]
        if items == 0:
            continue
        e_items[:items].sort()
        run = 0
        for k in range(items):
            run += e_items[k]
            e_prefix[k] = run
        sort_by_key(e_key, m, e_pack, e_ord)
        cursor = 0
        room = 0
        for k in range(m + 1):
            lo = e_lo[e_ord[k]] if k < m else capacity
            if lo > cursor:
                gap = lo - cursor
                fits = np.searchsorted(e_items[:items], gap, side="right")
                if fits > 0:
                    room += min(gap, e_prefix[fits - 1])
            if k < m and e_hi[e_ord[k]] > cursor:
                cursor = e_hi[e_ord[k]]
        if room < need:
            return t
    return -1


@njit(cache=True)
def _cover(y, r0, r1, d, ptr, nbr, placed, off, lb, ub, lvl, sizes, aligns, use_comp, acc, accn, accb, w_y, w_lo,
           w_hi, w_depth, w_top, depth, seen, seen_mark):  # pragma: no cover - compiled
    """Explain why ``y`` cannot start anywhere in ``[r0, r1]``: a greedy cover by its obstacles.

    Each time the obstacle reaching highest is taken. A placed obstacle adds its level to level
    ``d``'s conflict set; a compulsory part queues the explanation of its own buffer's bounds
    (the start ranges below its ``lb`` and above its ``ub``) on the work list. Returns the new
    work-list top, or -1 when the range is not covered (cannot happen for a real wipe-out).
    """
    s = sizes[y]
    a = aligns[y]
    p = (r0 + a - 1) // a * a
    while p <= r1:
        best = -1
        best_hi = -1
        for k in range(ptr[y], ptr[y + 1]):
            z = nbr[k]
            lo, hi = _obstacle(z, placed, off, lb, ub, sizes, use_comp)
            if lo < hi and lo < p + s and hi > p and hi > best_hi:
                best = z
                best_hi = hi
        if best < 0:
            return -1
        if placed[best]:
            if 0 <= lvl[best] < d:
                _acc_add(acc, accn, accb, d, lvl[best])
        elif seen[best] != seen_mark:
            seen[best] = seen_mark
            w_y[w_top] = best
            w_lo[w_top] = 0
            w_hi[w_top] = lb[best] - 1
            w_depth[w_top] = depth + 1
            w_top += 1
            w_y[w_top] = best
            w_lo[w_top] = ub[best] + 1
            w_hi[w_top] = _FAR  # clipped to the buffer's own highest start when popped
            w_depth[w_top] = depth + 1
            w_top += 1
        p = (best_hi + a - 1) // a * a
    return w_top


@njit(cache=True)
def _explain(y, d, capacity, ptr, nbr, placed, off, lb, ub, dep, lvl, sizes, aligns, use_comp, acc, accn, accb,
             w_y, w_lo, w_hi, w_depth, seen, seen_mark, max_depth):  # pragma: no cover - compiled
    """Add to level ``d``'s conflict set the placements that leave ``y`` no position.

    ``y``'s start range ``[0, capacity - size]`` is covered by obstacles (``_cover``); the
    bounds of a compulsory part in the cover are explained the same way, recursively, down to
    ``max_depth``; deeper, a compulsory part stands for every level up to the one at which its
    buffer's domain last changed (that domain depends on nothing placed later). A buffer is
    explained once per call.
    """
    w_top = 0
    w_y[0] = y
    w_lo[0] = 0
    w_hi[0] = (capacity - sizes[y]) // aligns[y] * aligns[y]
    w_depth[0] = 0
    w_top = 1
    seen[y] = seen_mark
    while w_top > 0:
        w_top -= 1
        z = w_y[w_top]
        r0 = w_lo[w_top]
        r1 = min(w_hi[w_top], (capacity - sizes[z]) // aligns[z] * aligns[z])
        depth = w_depth[w_top]
        if r0 > r1:
            continue
        if depth > max_depth:
            bound = min(dep[z], d - 1)
            if bound > accb[d]:
                accb[d] = bound
            continue
        w_top = _cover(z, r0, r1, d, ptr, nbr, placed, off, lb, ub, lvl, sizes, aligns, use_comp, acc, accn, accb,
                       w_y, w_lo, w_hi, w_depth, w_top, depth, seen, seen_mark)
        if w_top < 0:  # not covered: be safe, blame everything
            if d - 1 > accb[d]:
                accb[d] = d - 1
            return


@njit(cache=True)
def _enqueue_neighbours(y, lo, hi, ptr, nbr, placed, q, q_lo, q_hi, in_q, q_head, q_count):  # pragma: no cover
    """Queue ``y``'s unplaced neighbours to be re-checked against the new obstacle ``[lo, hi)``.

    A neighbour already queued keeps one entry whose interval widens to cover both. ``q`` is a
    ring of one slot per buffer; returns the new count.
    """
    n = q.shape[0]
    for k in range(ptr[y], ptr[y + 1]):
        z = nbr[k]
        if placed[z]:
            continue
        if in_q[z]:
            q_lo[z] = min(q_lo[z], lo)
            q_hi[z] = max(q_hi[z], hi)
        else:
            in_q[z] = 1
            q_lo[z] = lo
            q_hi[z] = hi
            q[(q_head + q_count) % n] = z
            q_count += 1
    return q_count


@njit(cache=True)
def _undo(top, mark, tr_y, tr_lb, tr_ub, tr_dep, tr_place, placed, off, lvl, lb, ub, dep, ph_left, phase_of,
          first_live):  # pragma: no cover - compiled
    """Pop the trail from ``top`` down to ``mark``: restore domains, unplace placements.

    Returns the new first phase that may have unplaced buffers.
    """
    while top > mark:
        top -= 1
        y = tr_y[top]
        if tr_place[top]:
            placed[y] = 0
            off[y] = -1
            lvl[y] = -2
            ph_left[phase_of[y]] += 1
            first_live = min(first_live, phase_of[y])
        lb[y] = tr_lb[top]
        ub[y] = tr_ub[top]
        dep[y] = tr_dep[top]
    return first_live


@njit(cache=True)
def search(sizes, aligns, fixed, ptr, nbr, capacity, phase_of, ph_ptr, ord_life, ord_size, ord_area, selection,
           max_candidates, lowest_position, propagate, compulsory, backjump, prepend, stuck_limit, step_limit,
           deadline, explain_depth, energy, first_sec, last_sec, sec_ptr, sec_mem):  # pragma: no cover - compiled
    """Search for a placement of every buffer within ``capacity``.

    Returns ``(status, offsets, stats)``; see ``allocator.telamalloc`` for the algorithm and
    the meaning of every switch.
    """
    n = sizes.shape[0]
    stats = np.zeros(N_STATS, np.int64)
    placed = np.zeros(n, np.int8)
    off = np.full(n, -1, np.int64)
    lvl = np.full(n, -2, np.int64)
    lb = np.zeros(n, np.int64)
    ub = np.empty(n, np.int64)
    dep = np.full(n, -1, np.int64)
    use_comp = compulsory and propagate
    for i in range(n):
        ub[i] = (capacity - sizes[i]) // aligns[i] * aligns[i]
        if ub[i] < 0:
            return INFEASIBLE, off, stats
    max_deg = 1
    for i in range(n):
        if ptr[i + 1] - ptr[i] > max_deg:
            max_deg = ptr[i + 1] - ptr[i]
    s_lo = np.empty(max_deg, np.int64)
    s_hi = np.empty(max_deg, np.int64)
    s_key = np.empty(max_deg, np.int64)
    s_pack = np.empty(max_deg, np.int64)
    s_ord = np.empty(max_deg, np.int64)
    top_addr = capacity + 1
    # how often the clock is read: every 16 steps, every step where a step can take long (a
    # placement on iopddl/S_1 touches up to 19,000 neighbours and costs ~0.2 s)
    check_mask = 0 if max_deg > 2000 else 15
    # trail
    cap_trail = 4 * n + 16
    tr_y = np.empty(cap_trail, np.int64)
    tr_lb = np.empty(cap_trail, np.int64)
    tr_ub = np.empty(cap_trail, np.int64)
    tr_dep = np.empty(cap_trail, np.int64)
    tr_place = np.empty(cap_trail, np.int8)
    top = 0
    # propagation queue: one pending entry per buffer, its interval widened on re-push
    q = np.empty(n, np.int64)
    q_lo = np.zeros(n, np.int64)
    q_hi = np.zeros(n, np.int64)
    in_q = np.zeros(n, np.int8)
    touched = np.full(n, -1, np.int64)  # the step at which a buffer's domain was last trailed
    # explanation work list (each buffer enters at most twice per explanation) and its marks
    w_y = np.empty(2 * n + 2, np.int64)
    w_lo = np.empty(2 * n + 2, np.int64)
    w_hi = np.empty(2 * n + 2, np.int64)
    w_depth = np.empty(2 * n + 2, np.int64)
    seen = np.full(n, -1, np.int64)
    explanations = 0
    # section check scratch (a section holds at most max_deg + 1 buffers)
    e_lo = np.empty(max_deg + 1, np.int64)
    e_hi = np.empty(max_deg + 1, np.int64)
    e_key = np.empty(max_deg + 1, np.int64)
    e_pack = np.empty(max_deg + 1, np.int64)
    e_ord = np.empty(max_deg + 1, np.int64)
    e_items = np.empty(max_deg + 1, np.int64)
    e_prefix = np.empty(max_deg + 1, np.int64)
    # phases
    n_phases = ph_ptr.shape[0] - 1
    first_live = 0  # no phase before this one has an unplaced buffer
    ph_left = np.zeros(n_phases, np.int64)
    for ph in range(n_phases):
        for k in range(ph_ptr[ph], ph_ptr[ph + 1]):
            if fixed[ord_size[k]] < 0:
                ph_left[ph] += 1
    # per level
    n_free = 0
    for i in range(n):
        if fixed[i] < 0:
            n_free += 1
    list_cap = 4 * max_candidates
    cand = np.empty((n_free + 1, list_cap), np.int64)
    ncand = np.zeros(n_free + 1, np.int64)
    cidx = np.zeros(n_free + 1, np.int64)
    mark = np.zeros(n_free + 1, np.int64)
    stamp = np.zeros(n_free + 1, np.int64)
    acc = np.empty((n_free + 1, _KC), np.int64)
    accn = np.zeros(n_free + 1, np.int64)
    accb = np.full(n_free + 1, -1, np.int64)
    chosen_phase = np.zeros(n_free + 1, np.int64)

    # ---- pinned buffers and the root's compulsory parts (level -1, never undone) ----
    step = 0
    for i in range(n):
        if fixed[i] < 0:
            continue
        p = fixed[i]
        if p > ub[i] or p < lb[i] or p % aligns[i] != 0:
            return INFEASIBLE, off, stats
        if _lowest_fit(i, p, ptr, nbr, placed, off, lb, ub, sizes, aligns, use_comp, s_lo, s_hi, s_key, s_pack,
                       s_ord) != p:
            return INFEASIBLE, off, stats
        placed[i] = 1
        off[i] = p
        lvl[i] = -1
        lb[i] = p
        ub[i] = p
    q_head = 0
    q_count = 0
    for i in range(n):
        if placed[i] or (use_comp and ub[i] < lb[i] + sizes[i]):
            lo = off[i] if placed[i] else ub[i]
            hi = lo + sizes[i] if placed[i] else lb[i] + sizes[i]
            q_count = _enqueue_neighbours(i, lo, hi, ptr, nbr, placed, q, q_lo, q_hi, in_q, q_head, q_count)
    level = -1
    bt = 0  # backtracks so far (minor + major): the stuck-subtree counter
    d = 0
    x = -1
    # the main loop alternates two phases: "propagate" (q_count > 0 or just placed) and "choose"
    need_candidates = True
    while True:
        # ---------- propagate the queue ----------
        wiped = -1
        while q_count > 0:
            y = q[q_head]
            q_head = (q_head + 1) % n
            q_count -= 1
            in_q[y] = 0
            if placed[y] or wiped >= 0:
                continue
            lo = q_lo[y]
            hi = q_hi[y]
            s = sizes[y]
            ol = lb[y]
            ou = ub[y]
            nl = ol
            nu = ou
            if propagate:
                if lo < ol + s and hi > ol:
                    nl = _lowest_fit(y, ol, ptr, nbr, placed, off, lb, ub, sizes, aligns, use_comp, s_lo, s_hi,
                                     s_key, s_pack, s_ord)
                if nl <= ou and lo < ou + s and hi > ou:
                    nu = _highest_fit(y, ou, ptr, nbr, placed, off, lb, ub, sizes, aligns, use_comp, s_lo,
                                      s_hi, s_key, s_pack, s_ord, top_addr)
            if nl == ol and nu == ou:
                continue
            if touched[y] != step:
                touched[y] = step
                tr_y[top] = y
                tr_lb[top] = ol
                tr_ub[top] = ou
                tr_dep[top] = dep[y]
                tr_place[top] = 0
                top += 1
            lb[y] = nl
            ub[y] = nu
            dep[y] = level
            if nl > nu:
                wiped = y
                continue
            if use_comp and nu < nl + s:  # a compulsory part: an obstacle for the neighbours
                q_count = _enqueue_neighbours(y, nu, nl + s, ptr, nbr, placed, q, q_lo, q_hi, in_q, q_head, q_count)
        if level < 0:
            if wiped >= 0:
                return INFEASIBLE, off, stats
            level = 0
        elif x >= 0:
            crowded = -1
            if wiped < 0 and energy:
                crowded = _energy(x, first_sec, last_sec, sec_ptr, sec_mem, placed, off, sizes, capacity, e_lo, e_hi,
                                  e_key, e_pack, e_ord, e_items, e_prefix)
            if wiped >= 0 or crowded >= 0:  # minor backtrack: the candidate left some buffer no room
                stats[ST_MINOR] += 1
                bt += 1
                if backjump and wiped >= 0:
                    explanations += 1
                    _explain(wiped, d, capacity, ptr, nbr, placed, off, lb, ub, dep, lvl, sizes, aligns, use_comp,
                             acc, accn, accb, w_y, w_lo, w_hi, w_depth, seen, explanations, explain_depth)
                elif backjump:  # the section is too crowded because of the buffers placed in it
                    for k in range(sec_ptr[crowded], sec_ptr[crowded + 1]):
                        z = sec_mem[k]
                        if placed[z] and 0 <= lvl[z] < d:
                            _acc_add(acc, accn, accb, d, lvl[z])
                first_live = _undo(top, mark[d], tr_y, tr_lb, tr_ub, tr_dep, tr_place, placed, off, lvl, lb, ub, dep,
                                   ph_left, phase_of, first_live)
                top = mark[d]
                cidx[d] += 1
            else:
                stamp[d] = bt
                d += 1
                need_candidates = True
                if d > stats[ST_DEPTH]:
                    stats[ST_DEPTH] = d
            x = -1
        # ---------- a new level: its candidates ----------
        if need_candidates:
            need_candidates = False
            if d == n_free:
                stats[ST_STEPS] = step
                return SOLVED, off, stats
            mark[d] = top
            accn[d] = 0
            accb[d] = -1
            cidx[d] = 0
            current = -1
            if d > 0:
                current = chosen_phase[d - 1]
                if ph_left[current] == 0:
                    current = -1
            while first_live < n_phases and ph_left[first_live] == 0:
                first_live += 1  # every phase before it is placed
            if current < 0 and first_live < n_phases:
                current = first_live
            cnt = 0
            for turn in range(n_phases - first_live + 1):
                if cnt >= max_candidates:
                    break
                if turn == 0:
                    ph = current
                else:
                    ph = first_live + turn - 1
                    if ph == current:
                        continue
                if ph < 0 or ph_left[ph] == 0:
                    continue
                if selection == SEL_TELAMALLOC:
                    for key in range(3):
                        if cnt >= max_candidates:
                            break
                        order = ord_life if key == 0 else (ord_size if key == 1 else ord_area)
                        for k in range(ph_ptr[ph], ph_ptr[ph + 1]):
                            b = order[k]
                            if placed[b]:
                                continue
                            dup = False
                            for c in range(cnt):
                                if cand[d, c] == b:
                                    dup = True
                                    break
                            if not dup:
                                cand[d, cnt] = b
                                cnt += 1
                            break
                elif selection == SEL_LOWEST:
                    while cnt < max_candidates:
                        best = -1
                        for k in range(ph_ptr[ph], ph_ptr[ph + 1]):
                            b = ord_size[k]  # by size: ties of the lowest position go to the larger
                            if placed[b]:
                                continue
                            if best >= 0 and lb[b] >= lb[best]:
                                continue
                            dup = False
                            for c in range(cnt):
                                if cand[d, c] == b:
                                    dup = True
                                    break
                            if not dup:
                                best = b
                        if best < 0:
                            break
                        cand[d, cnt] = best
                        cnt += 1
                else:
                    order = ord_size if selection == SEL_SIZE else (ord_area if selection == SEL_AREA else ord_life)
                    for k in range(ph_ptr[ph], ph_ptr[ph + 1]):
                        if cnt >= max_candidates:
                            break
                        b = order[k]
                        if not placed[b]:
                            cand[d, cnt] = b
                            cnt += 1
            ncand[d] = cnt
        # ---------- stuck subtree: abandon the deepest choice that has seen too many backtracks ----------
        if stuck_limit > 0 and d > 0 and bt - stamp[0] > stuck_limit and cidx[d] > 0:
            lo_level = 0
            hi_level = d - 1  # deepest k in [0, d) with bt - stamp[k] > limit (stamps grow with depth)
            while lo_level < hi_level:
                mid = (lo_level + hi_level + 1) // 2
                if bt - stamp[mid] > stuck_limit:
                    lo_level = mid
                else:
                    hi_level = mid - 1
            t = lo_level
            stats[ST_STUCK] += 1
            for k in range(t):
                stamp[k] = bt
            first_live = _undo(top, mark[t], tr_y, tr_lb, tr_ub, tr_dep, tr_place, placed, off, lvl, lb, ub, dep,
                               ph_left, phase_of, first_live)
            top = mark[t]
            d = t
            if d - 1 > accb[d]:
                accb[d] = d - 1
            cidx[d] += 1
        # ---------- major backtracks while the level's candidates are used up ----------
        exhausted = False
        while cidx[d] >= ncand[d]:
            stats[ST_MAJOR] += 1
            bt += 1
            if d == 0:
                exhausted = True
                break
            if backjump:
                c1, c2 = _top2(acc, accn, accb, d)
                if c1 < 0:
                    exhausted = True
                    break
                t = c2 if c2 >= 0 else c1
            else:
                t = d - 1
            stats[ST_BACKJUMP_LEVELS] += d - 1 - t
            if prepend:  # the failed candidates go next at the target, ahead of its other candidates
                keep = cand[t, cidx[t] + 1:ncand[t]].copy()
                cnt = cidx[t] + 1
                for c in range(ncand[d]):
                    b = cand[d, c]
                    dup = False
                    for e in range(cnt):
                        if cand[t, e] == b:
                            dup = True
                            break
                    if not dup and cnt < list_cap and cnt - cidx[t] - 1 < max_candidates:
                        cand[t, cnt] = b
                        cnt += 1
                for c in range(keep.shape[0]):
                    b = keep[c]
                    dup = False
                    for e in range(cnt):
                        if cand[t, e] == b:
                            dup = True
                            break
                    if not dup and cnt < list_cap and cnt - cidx[t] - 1 < max_candidates:
                        cand[t, cnt] = b
                        cnt += 1
                ncand[t] = cnt
            if backjump:
                for k in range(accn[d]):
                    if acc[d, k] < t:
                        _acc_add(acc, accn, accb, t, acc[d, k])
                below = min(accb[d], t - 1)
                if below > accb[t]:
                    accb[t] = below
            first_live = _undo(top, mark[t], tr_y, tr_lb, tr_ub, tr_dep, tr_place, placed, off, lvl, lb, ub, dep,
                               ph_left, phase_of, first_live)
            top = mark[t]
            d = t
            cidx[d] += 1
        if exhausted:
            stats[ST_STEPS] = step
            return EXHAUSTED, off, stats
        # ---------- one step: place the next candidate at its lowest valid position ----------
        if step >= step_limit:
            stats[ST_STEPS] = step
            return STEP_LIMIT, off, stats
        if (step & check_mask) == 0 and deadline >= 0 and _now() > deadline:
            stats[ST_STEPS] = step
            return TIME_LIMIT, off, stats
        x = cand[d, cidx[d]]
        if placed[x]:
            cidx[d] += 1
            x = -1
            continue
        step += 1
        if top + n + 2 > cap_trail:
            cap_trail = 2 * cap_trail + n
            tr_y = np.concatenate((tr_y[:top], np.empty(cap_trail - top, np.int64)))
            tr_lb = np.concatenate((tr_lb[:top], np.empty(cap_trail - top, np.int64)))
            tr_ub = np.concatenate((tr_ub[:top], np.empty(cap_trail - top, np.int64)))
            tr_dep = np.concatenate((tr_dep[:top], np.empty(cap_trail - top, np.int64)))
            tr_place = np.concatenate((tr_place[:top], np.empty(cap_trail - top, np.int8)))
        if lowest_position:
            p = lb[x] if propagate else _lowest_fit(x, 0, ptr, nbr, placed, off, lb, ub, sizes, aligns, use_comp,
                                                    s_lo, s_hi, s_key, s_pack, s_ord)
        else:  # skyline: on top of every placed neighbour, then up to the first free position
            sky = 0
            for k in range(ptr[x], ptr[x + 1]):
                z = nbr[k]
                if placed[z] and off[z] + sizes[z] > sky:
                    sky = off[z] + sizes[z]
            p = _lowest_fit(x, max(sky, lb[x]), ptr, nbr, placed, off, lb, ub, sizes, aligns, use_comp, s_lo, s_hi,
                            s_key, s_pack, s_ord)
        if p > ub[x]:  # no position (only without propagation, or above the skyline): a minor backtrack
            stats[ST_MINOR] += 1
            bt += 1
            if backjump:
                if lowest_position:
                    explanations += 1
                    _explain(x, d, capacity, ptr, nbr, placed, off, lb, ub, dep, lvl, sizes, aligns, use_comp, acc,
                             accn, accb, w_y, w_lo, w_hi, w_depth, seen, explanations, explain_depth)
                elif d - 1 > accb[d]:
                    accb[d] = d - 1
            cidx[d] += 1
            x = -1
            continue
        tr_y[top] = x
        tr_lb[top] = lb[x]
        tr_ub[top] = ub[x]
        tr_dep[top] = dep[x]
        tr_place[top] = 1
        top += 1
        touched[x] = step
        placed[x] = 1
        off[x] = p
        lvl[x] = d
        lb[x] = p
        ub[x] = p
        ph_left[phase_of[x]] -= 1
        chosen_phase[d] = phase_of[x]
        level = d
        if propagate:
            q_count = _enqueue_neighbours(x, p, p + sizes[x], ptr, nbr, placed, q, q_lo, q_hi, in_q, q_head, q_count)

"""The compiled search of ``telamalloc`` (see ``allocator.methods.telamalloc`` for the method).

``search(instance, phases, sections, switches, learning)`` is the one entry point. Its inputs
are five typed records (``typing.NamedTuple``, which numba compiles as structs, so a field is read by
name and two switches cannot be swapped by position):

* ``Instance``: the buffers as flat int64 arrays, the capacity and the time-overlap lists;
* ``Phases``: the contention phases and, per phase, its members in the three candidate orders;
* ``Sections``: per buffer its cross sections, per section its members (for the section check);
* ``Switches``: every technique's switch and the limits (built by
  ``allocator.methods.telamalloc.kernel_switches`` from ``TelaMallocOptions``);
* ``Learning``: what the learned backtracking of TelaMalloc §6 reads and writes (the model,
  per-buffer features, the replay list and the record buffers of oracle data collection); any
  arrays when ``Switches.mode`` is ``MODE_DEFAULT``, and then the search never reads it.

The search state lives in flat int64 arrays indexed by buffer or by decision level, grouped in
records of their own:

* ``Domains``, per buffer: ``placed``, ``offset`` (when placed) and the *domain* of an unplaced
  buffer as ``lb``/``ub``: the lowest and highest aligned start that collides with no
  obstacle. Positions outside ``[lb, ub]`` are known to be infeasible; holes inside are found
  again by the gap walk;
* ``Reasons``, per buffer: the decision level of its placement (-1 for pinned buffers) and the
  level at which its domain last narrowed (what explanations of failures read);
* an *obstacle* of a buffer is a time-overlapping neighbour that is placed (its address range)
  or unplaced with a compulsory part: when ``ub < lb + size`` every position of the neighbour
  covers ``[ub, lb + size)`` (the timetable reasoning of CP solvers' no-overlap);
* ``Trail``: (buffer, old lb, old ub, old changed_at, was-a-placement) records, undone to a
  level's mark on backtracking;
* ``Levels``, per decision level: the candidate list, the index of the candidate being tried,
  the trail mark, the backtrack counter value when the level's current choice was made (the
  stuck-subtree rule) and the phase of the buffer placed there;
* ``Conflicts``, per level: the conflict set (explicit levels, sorted descending, plus
  ``below``: "and every level <= below", the over-approximation used when an explanation is
  coarse or the list overflows).

Compile time: numba compiles a helper once per argument types, and an integer variable that
starts at a constant (``m = 0``) is typed as that literal on the first pass of type inference,
which compiles a second, literal-typed copy of every helper it is passed to (and of their
callees). Variables passed to helpers therefore start as ``np.int64(...)``.

Integer range: every quantity is an int64. ``allocator.core.problem`` bounds the capacity and every
size, alignment and offset by ``MAX_VALUE`` = 2**62 - 1, and the sum over all buffers of
``size + alignment - 1`` by ``MAX_VALUE`` too, so two such bounds add up to at most 2**63 - 2.
The largest sums the search forms, audited:

* in a gap walk, a start rounded up to the buffer's alignment is at most ``capacity +
  alignment - 1`` and the walk compares it plus the size: ``capacity + (size + alignment - 1)``;
* obstacles end at or below the capacity (a placed buffer's ``offset + size``, a compulsory
  part's ``lb + size`` with ``lb <= ub <= capacity - size``), except, during an explanation,
  the emptied domain ``w``, whose ``lb + size`` is at most ``capacity + (size_w + alignment_w -
  1)``; rounding that up to another buffer's alignment adds ``alignment_y - 1``: still the
  capacity plus the padded sizes of two distinct buffers;
* the section check sums sizes (at most the sum of all sizes) and gaps (at most the capacity);
* the descending key ``capacity + 1 - hi`` is non-negative.

Products are never formed here; the one the method needs, size x lifetime, is ranked exactly by
``allocator.methods.telamalloc.area_ranks``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from allocator.core import kernel_cache  # noqa: F401  (numba's cache directory, before any kernel is decorated)
from allocator.core.deadline import clock
from allocator.methods.backtrack_model import N_FEATURES, BacktrackModel, score
from allocator.methods.sorting import sort_by_key, sort_in_place, stable_argsort

#: ``RECORDED``: oracle data collection stopped at the requested major backtrack (``Learning``)
SOLVED, EXHAUSTED, STEP_LIMIT, TIME_LIMIT, INFEASIBLE, RECORDED = 0, 1, 2, 3, 4, 5
#: block-selection strategies (``Switches.selection``)
SEL_TELAMALLOC, SEL_SIZE, SEL_AREA, SEL_LIFETIME, SEL_LOWEST = 0, 1, 2, 3, 4
#: entries of the ``stats`` array returned by ``search``
ST_STEPS, ST_MINOR, ST_MAJOR, ST_STUCK, ST_DEPTH, ST_BACKJUMP_LEVELS = 0, 1, 2, 3, 4, 5
#: learned backtracking: candidate targets scored, and major backtracks that took the model's target
ST_SCORED, ST_LEARNED = 6, 7
N_STATS = 8
#: how major backtracks choose their target (``Switches.mode``): the default rule of §5.4; the
#: model of §6 (best candidate above ``Switches.threshold``, else the default); oracle data
#: collection (replay ``Learning.forced``, stop and record at major backtrack ``Learning.stop_at``)
MODE_DEFAULT, MODE_LEARNED, MODE_RECORD = 0, 1, 2
#: candidate targets a major backtrack can have: the explicit conflict levels plus ``below``,
#: plus one per exponential range of levels (at most 62 for levels below 2**62)
MAX_TARGETS = 48 + 1 + 64
_KC = 48  # explicit levels kept per conflict set
_FAR = 1 << 62  # "no upper end" of an explanation range (clipped to the buffer's highest start)


class Switches(NamedTuple):
    """What the search does and how long: one typed record, read by field name in the kernel.

    Built from ``TelaMallocOptions`` by ``allocator.methods.telamalloc.kernel_switches``; the meaning
    of each technique is documented there.
    """

    selection: int  #: one of ``SEL_*``: how a decision point's candidates are picked
    max_candidates: int  #: untried candidates kept per decision point (>= 1)
    lowest_position: bool  #: place at the lowest position of the domain; off: on the skyline
    propagate: bool  #: narrow the domains of unplaced neighbours after every placement
    compulsory: bool  #: compulsory parts are obstacles too (only read when ``propagate``)
    energy: bool  #: check the cross sections of every placement (needs real ``Sections``)
    backjump: bool  #: major backtracks jump to the second-to-last conflicting level
    prepend: bool  #: a major backtrack's failed candidates go next at the target
    stuck_limit: int  #: backtracks in a choice's subtree before it is abandoned (0: never)
    explain_depth: int  #: how deep the reasons of compulsory parts are traced
    step_limit: int  #: placements tried before giving up (>= 0)
    deadline: float  #: ``work_clock()`` value to stop at; negative: no time limit
    mode: int = MODE_DEFAULT  #: one of ``MODE_*``: how a major backtrack picks its target
    threshold: float = 0.0  #: ``MODE_LEARNED``: the model's best score must exceed this


class Learning(NamedTuple):
    """The learned backtracking's inputs and record buffers (TelaMalloc §6); built by
    ``allocator.methods.telamalloc_learned``. Features per buffer are normalised as §6.4 says."""

    model: BacktrackModel  #: the forest scoring candidate targets (``MODE_LEARNED``)
    size: np.ndarray  #: float64 per buffer: size / capacity
    lifetime: np.ndarray  #: float64 per buffer: lifetime / the problem's time span
    contention: np.ndarray  #: float64 per buffer: the most live bytes during its lifetime / capacity
    forced: np.ndarray  #: int64 ``MODE_RECORD``: target of major backtrack k (-1: the default rule)
    stop_at: int  #: ``MODE_RECORD``: stop at this major backtrack (counted from 0) and record it; -1 never
    record_levels: np.ndarray  #: int64 (``MAX_TARGETS``): the recorded candidate target levels
    record_features: np.ndarray  #: float64 (``MAX_TARGETS``, ``N_FEATURES``): their features
    record_path: np.ndarray  #: int64 per buffer: the buffer placed at each level 0..depth-1
    record_info: np.ndarray  #: int64 (4): candidates, depth, the default rule's target, backtracks


class Instance(NamedTuple):
    """The buffers as the search reads them (index i is buffer i of the problem)."""

    sizes: np.ndarray  #: int64 bytes, > 0
    aligns: np.ndarray  #: int64 bytes, >= 1
    fixed: np.ndarray  #: int64 pinned offset, or -1 for a free buffer
    capacity: int  #: bytes
    ptr: np.ndarray  #: int64 CSR pointers of the time-overlap lists (``neighbours``)
    nbr: np.ndarray  #: int32 buffer indices: ``nbr[ptr[i]:ptr[i + 1]]`` overlap buffer i in time


class Phases(NamedTuple):
    """The contention phases (TelaMalloc §5.3) and the candidate orders within each."""

    phase_of: np.ndarray  #: int64 phase index of each buffer
    ptr: np.ndarray  #: int64 CSR pointers: phase k holds entries ``ptr[k]:ptr[k + 1]`` of each order
    by_life: np.ndarray  #: int64 buffers by phase, then longest lifetime (ties: largest size, index)
    by_size: np.ndarray  #: int64 buffers by phase, then largest size (ties: longest lifetime, index)
    by_area: np.ndarray  #: int64 buffers by phase, then largest size x lifetime (ties: size, index)


class Sections(NamedTuple):
    """Cross sections for the section check (``Switches.energy``); any arrays when it is off."""

    first: np.ndarray  #: int64 first section of each buffer
    last: np.ndarray  #: int64 one past its last section
    ptr: np.ndarray  #: int64 CSR pointers of the members of each section
    members: np.ndarray  #: int64 buffer indices


class Domains(NamedTuple):
    """Per buffer: placed or not, where, and the domain of an unplaced one (what gap walks read)."""

    placed: np.ndarray  #: int8, 1 when placed
    offset: np.ndarray  #: offset of a placed buffer, -1 otherwise
    lb: np.ndarray  #: lowest start that meets no obstacle (the offset once placed)
    ub: np.ndarray  #: highest such start


class Reasons(NamedTuple):
    """Per buffer, the decision levels behind its state (what explanations read)."""

    level: np.ndarray  #: decision level of the placement; -1 pinned; -2 unplaced
    changed_at: np.ndarray  #: level at which lb/ub last narrowed (-1: at the root)


class Trail(NamedTuple):
    """Undo records: the state of a buffer before a step changed it."""

    buffer: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    changed_at: np.ndarray
    placement: np.ndarray  #: int8, 1 when the record is the buffer's placement


class Queue(NamedTuple):
    """Buffers whose domains must be re-checked, a ring of one slot per buffer.

    A buffer queued twice keeps one entry, its address interval widened to cover both.
    """

    ring: np.ndarray
    lo: np.ndarray  #: per buffer: low end of the new obstacles' address range
    hi: np.ndarray  #: per buffer: high end
    queued: np.ndarray  #: int8 per buffer


class GapScratch(NamedTuple):
    """Scratch space of a gap walk (one slot per neighbour)."""

    lo: np.ndarray
    hi: np.ndarray
    key: np.ndarray
    packed: np.ndarray
    order: np.ndarray


class SectionScratch(NamedTuple):
    """Scratch space of the section check (one slot per member of a section)."""

    lo: np.ndarray
    hi: np.ndarray
    key: np.ndarray
    packed: np.ndarray
    order: np.ndarray
    items: np.ndarray
    prefix: np.ndarray


class Levels(NamedTuple):
    """Per decision level."""

    candidates: np.ndarray  #: 2-d: the level's candidate buffers
    n_candidates: np.ndarray
    tried: np.ndarray  #: index of the candidate being tried
    mark: np.ndarray  #: trail top when the level began
    stamp: np.ndarray  #: backtrack counter when the level's current choice was made
    phase: np.ndarray  #: phase of the buffer placed at the level


class Conflicts(NamedTuple):
    """Per level, the earlier levels whose placements explain its failures."""

    explicit: np.ndarray  #: 2-d, each row sorted descending, ``n_explicit`` entries used
    n_explicit: np.ndarray
    below: np.ndarray  #: "and every level <= below" (-1: none)


class WorkList(NamedTuple):
    """The ranges an explanation still has to cover (each buffer enters at most twice)."""

    buffer: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    depth: np.ndarray
    seen: np.ndarray  #: per buffer: the explanation that last queued it


@njit(cache=True)
def neighbours(starts, ends, deadline):  # pragma: no cover - compiled
    """Time-overlap lists in CSR form: ``idx[ptr[i]:ptr[i + 1]]`` are the buffers overlapping i.

    Buffers are visited in start order; every later-starting buffer that starts before i ends
    overlaps it, so building costs O(n log n + pairs). ``deadline`` (a ``work_clock()``
    value; negative: none) is checked every 2**20 pairs; past it, ``complete`` is False and the
    lists are empty. Returns ``(ptr, idx, complete)``.
    """
    n = starts.shape[0]
    order = np.empty(n, np.int64)
    stable_argsort(starts, n, np.empty(n, np.int64), order)  # np.argsort(starts, kind="stable"), cheaper to compile
    degree = np.zeros(n + 1, np.int64)
    work = 0
    for a in range(n):
        i = order[a]
        b = a + 1
        while b < n and starts[order[b]] < ends[i]:
            degree[i] += 1
            degree[order[b]] += 1
            b += 1
        work += b - a
        if work >= 1 << 20:
            work = 0
            if deadline >= 0 and clock() > deadline:
                return np.zeros(1, np.int64), np.zeros(0, np.int32), False
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
        work += b - a
        if work >= 1 << 20:
            work = 0
            if deadline >= 0 and clock() > deadline:
                return np.zeros(1, np.int64), np.zeros(0, np.int32), False
    return ptr, idx, True


# ---------------------------------------------------------------- obstacles and gap walks


@njit(cache=True)
def _obstacle(z, dom, sizes, use_comp):  # pragma: no cover - compiled
    """Address range ``(lo, hi)`` that neighbour ``z`` certainly occupies (``lo >= hi``: none)."""
    if dom.placed[z]:
        return dom.offset[z], dom.offset[z] + sizes[z]
    if use_comp:
        return dom.ub[z], dom.lb[z] + sizes[z]
    return 0, 0


@njit(cache=True)
def _lowest_fit(y, start, inst, dom, use_comp, gaps):  # pragma: no cover - compiled
    """Lowest aligned start >= ``start`` at which ``y`` meets no obstacle (a gap walk in address order)."""
    a = inst.aligns[y]
    s = inst.sizes[y]
    p = (start + a - 1) // a * a
    m = np.int64(0)
    for k in range(inst.ptr[y], inst.ptr[y + 1]):
        lo, hi = _obstacle(inst.nbr[k], dom, inst.sizes, use_comp)
        if lo < hi and hi > p:
            gaps.lo[m] = lo
            gaps.hi[m] = hi
            gaps.key[m] = lo
            m += 1
    sort_by_key(gaps.key, m, gaps.packed, gaps.order)
    for k in range(m):
        o = gaps.order[k]
        if gaps.lo[o] >= p + s:
            break
        if gaps.hi[o] > p:
            p = (gaps.hi[o] + a - 1) // a * a
    return p


@njit(cache=True)
def _highest_fit(y, start, inst, dom, use_comp, gaps):  # pragma: no cover - compiled
    """Highest aligned start <= ``start`` at which ``y`` meets no obstacle, or -1."""
    a = inst.aligns[y]
    s = inst.sizes[y]
    p = start // a * a
    top = inst.capacity + 1  # obstacles end at or below the capacity: descending hi as a key >= 1
    m = np.int64(0)
    for k in range(inst.ptr[y], inst.ptr[y + 1]):
        lo, hi = _obstacle(inst.nbr[k], dom, inst.sizes, use_comp)
        if lo < hi and lo < p + s:
            gaps.lo[m] = lo
            gaps.hi[m] = hi
            gaps.key[m] = top - hi
            m += 1
    sort_by_key(gaps.key, m, gaps.packed, gaps.order)
    for k in range(m):
        o = gaps.order[k]
        if gaps.hi[o] <= p:
            break
        if gaps.lo[o] < p + s:
            if gaps.lo[o] - s < 0:
                return -1
            p = (gaps.lo[o] - s) // a * a
    return p


@njit(cache=True)
def _skyline_position(x, inst, dom, use_comp, gaps):  # pragma: no cover - compiled
    """The first free position of ``x`` on top of every placed neighbour (TelaMalloc §5.1)."""
    sky = 0
    for k in range(inst.ptr[x], inst.ptr[x + 1]):
        z = inst.nbr[k]
        if dom.placed[z] and dom.offset[z] + inst.sizes[z] > sky:
            sky = dom.offset[z] + inst.sizes[z]
    return _lowest_fit(x, max(sky, dom.lb[x]), inst, dom, use_comp, gaps)


# ---------------------------------------------------------------- propagation


@njit(cache=True)
def _enqueue_neighbours(y, lo, hi, inst, placed, queue, head, waiting):  # pragma: no cover - compiled
    """Queue ``y``'s unplaced neighbours to be re-checked against the new obstacle ``[lo, hi)``.

    ``head`` and ``waiting`` locate the queued entries in the ring; returns the new ``waiting``.
    """
    n = queue.ring.shape[0]
    for k in range(inst.ptr[y], inst.ptr[y + 1]):
        z = inst.nbr[k]
        if placed[z]:
            continue
        if queue.queued[z]:
            queue.lo[z] = min(queue.lo[z], lo)
            queue.hi[z] = max(queue.hi[z], hi)
        else:
            queue.queued[z] = 1
            queue.lo[z] = lo
            queue.hi[z] = hi
            queue.ring[(head + waiting) % n] = z
            waiting += 1
    return waiting


@njit(cache=True)
def _save(trail, top, y, dom, changed_at, placement):  # pragma: no cover - compiled
    """Push ``y``'s domain on the trail; returns the new top."""
    trail.buffer[top] = y
    trail.lb[top] = dom.lb[y]
    trail.ub[top] = dom.ub[y]
    trail.changed_at[top] = changed_at[y]
    trail.placement[top] = placement
    return top + 1


@njit(cache=True)
def _undo_to(mark, top, trail, dom, reasons, phase_of, ph_left, first_live):  # pragma: no cover - compiled
    """Pop the trail from ``top`` down to ``mark``: restore domains, unplace placements.

    Returns the new first phase that may have unplaced buffers.
    """
    while top > mark:
        top -= 1
        y = trail.buffer[top]
        if trail.placement[top]:
            dom.placed[y] = 0
            dom.offset[y] = -1
            reasons.level[y] = -2
            ph_left[phase_of[y]] += 1
            first_live = min(first_live, phase_of[y])
        dom.lb[y] = trail.lb[top]
        dom.ub[y] = trail.ub[top]
        reasons.changed_at[y] = trail.changed_at[top]
    return first_live


@njit(cache=True)
def _grown(trail, top, n):  # pragma: no cover - compiled
    """A copy of the trail's first ``top`` records with room for over ``n`` more."""
    size = 2 * trail.buffer.shape[0] + n
    return Trail(np.concatenate((trail.buffer[:top], np.empty(size - top, np.int64))),
                 np.concatenate((trail.lb[:top], np.empty(size - top, np.int64))),
                 np.concatenate((trail.ub[:top], np.empty(size - top, np.int64))),
                 np.concatenate((trail.changed_at[:top], np.empty(size - top, np.int64))),
                 np.concatenate((trail.placement[:top], np.empty(size - top, np.int8))))


# ---------------------------------------------------------------- conflict sets


@njit(cache=True)
def _blame(conf, d, v):  # pragma: no cover - compiled
    """Add level ``v`` to the conflict set of level ``d``."""
    if v <= conf.below[d]:
        return
    n = conf.n_explicit[d]
    pos = 0
    while pos < n and conf.explicit[d, pos] > v:
        pos += 1
    if pos < n and conf.explicit[d, pos] == v:
        return
    if n == _KC:  # full: the smallest explicit level joins the "all levels below" part
        n -= 1
        if conf.explicit[d, n] > conf.below[d]:
            conf.below[d] = conf.explicit[d, n]
        if pos >= n:
            if v > conf.below[d]:
                conf.below[d] = v
            conf.n_explicit[d] = n
            return
    for k in range(n, pos, -1):
        conf.explicit[d, k] = conf.explicit[d, k - 1]
    conf.explicit[d, pos] = v
    conf.n_explicit[d] = n + 1


@njit(cache=True)
def _blame_all_below(conf, d, v):  # pragma: no cover - compiled
    """Add every level <= ``v`` to the conflict set of level ``d``."""
    if v > conf.below[d]:
        conf.below[d] = v


@njit(cache=True)
def _two_latest(conf, d):  # pragma: no cover - compiled
    """The two highest levels of level ``d``'s conflict set (-1 where absent)."""
    c1 = -1
    c2 = -1
    vals = np.empty(4, np.int64)
    vals[0] = conf.explicit[d, 0] if conf.n_explicit[d] > 0 else -1
    vals[1] = conf.explicit[d, 1] if conf.n_explicit[d] > 1 else -1
    vals[2] = conf.below[d]
    vals[3] = conf.below[d] - 1 if conf.below[d] >= 1 else -1
    for k in range(4):
        v = vals[k]
        if v > c1:
            c2 = c1
            c1 = v
        elif c1 > v > c2:
            c2 = v
    return c1, c2


@njit(cache=True)
def _pass_conflicts(conf, d, t):  # pragma: no cover - compiled
    """Level ``d`` failed and the search jumps to ``t``: ``t`` inherits the reasons below it."""
    for k in range(conf.n_explicit[d]):
        if conf.explicit[d, k] < t:
            _blame(conf, t, conf.explicit[d, k])
    _blame_all_below(conf, t, min(conf.below[d], t - 1))


# ---------------------------------------------------------------- explanations of failures


@njit(cache=True)
def _cover(y, r0, r1, d, depth, inst, dom, level, use_comp, conf, work, w_top,
           seen_mark):  # pragma: no cover - compiled
    """Explain why ``y`` cannot start anywhere in ``[r0, r1]``: a greedy cover by its obstacles.

    Each time the obstacle reaching highest is taken. A placed obstacle adds its level to level
    ``d``'s conflict set; a compulsory part queues the explanation of its own buffer's bounds
    (the start ranges below its ``lb`` and above its ``ub``) on the work list. Returns the new
    work-list top, or -1 when the range is not covered (cannot happen for a real wipe-out).
    """
    s = inst.sizes[y]
    a = inst.aligns[y]
    p = (r0 + a - 1) // a * a
    while p <= r1:
        best = -1
        best_hi = -1
        for k in range(inst.ptr[y], inst.ptr[y + 1]):
            z = inst.nbr[k]
            lo, hi = _obstacle(z, dom, inst.sizes, use_comp)
            if lo < hi and lo < p + s and hi > p and hi > best_hi:
                best = z
                best_hi = hi
        if best < 0:
            return -1
        if dom.placed[best]:
            if 0 <= level[best] < d:
                _blame(conf, d, level[best])
        elif work.seen[best] != seen_mark:
            work.seen[best] = seen_mark
            work.buffer[w_top] = best
            work.lo[w_top] = 0
            work.hi[w_top] = dom.lb[best] - 1
            work.depth[w_top] = depth + 1
            w_top += 1
            work.buffer[w_top] = best
            work.lo[w_top] = dom.ub[best] + 1
            work.hi[w_top] = _FAR  # clipped to the buffer's own highest start when popped
            work.depth[w_top] = depth + 1
            w_top += 1
        p = (best_hi + a - 1) // a * a
    return w_top


@njit(cache=True)
def _explain(y, d, inst, dom, reasons, use_comp, conf, work, seen_mark, max_depth):  # pragma: no cover - compiled
    """Add to level ``d``'s conflict set the placements that leave ``y`` no position.

    ``y``'s start range ``[0, capacity - size]`` is covered by obstacles (``_cover``); the
    bounds of a compulsory part in the cover are explained the same way, recursively, down to
    ``max_depth``; deeper, a compulsory part stands for every level up to the one at which its
    buffer's domain last changed (that domain depends on nothing placed later). A buffer is
    explained once per call (``seen_mark`` tells the calls apart).
    """
    capacity = inst.capacity
    work.buffer[0] = y
    work.lo[0] = 0
    work.hi[0] = (capacity - inst.sizes[y]) // inst.aligns[y] * inst.aligns[y]
    work.depth[0] = 0
    w_top = np.int64(1)
    work.seen[y] = seen_mark
    while w_top > 0:
        w_top -= 1
        z = work.buffer[w_top]
        r0 = work.lo[w_top]
        r1 = min(work.hi[w_top], (capacity - inst.sizes[z]) // inst.aligns[z] * inst.aligns[z])
        depth = work.depth[w_top]
        if r0 > r1:
            continue
        if depth > max_depth:
            _blame_all_below(conf, d, min(reasons.changed_at[z], d - 1))
            continue
        w_top = _cover(z, r0, r1, d, depth, inst, dom, reasons.level, use_comp, conf, work, w_top, seen_mark)
        if w_top < 0:  # not covered: be safe, blame everything
            _blame_all_below(conf, d, d - 1)
            return


@njit(cache=True)
def _crowded_section(x, sections, dom, sizes, capacity, scratch):  # pragma: no cover - compiled
    """The first cross section of ``x`` whose unplaced buffers cannot fit its free gaps, or -1.

    In a cross section every live buffer must sit inside one free gap between the placed ones.
    A gap of g bytes holds at most ``min(g, total size of the unplaced buffers no larger than
    g)``; when the gaps together hold less than the unplaced buffers need, no completion exists
    (a relaxation of the bin packing the section has to solve). The sums stay below the total
    size of the buffers, the gaps' below the capacity.
    """
    for t in range(sections.first[x], sections.last[x]):
        m = np.int64(0)
        items = 0
        need = 0
        for k in range(sections.ptr[t], sections.ptr[t + 1]):
            z = sections.members[k]
            if dom.placed[z]:
                scratch.lo[m] = dom.offset[z]
                scratch.hi[m] = dom.offset[z] + sizes[z]
                scratch.key[m] = dom.offset[z]
                m += 1
            else:
                scratch.items[items] = sizes[z]
                items += 1
                need += sizes[z]
        if items == 0:
            continue
        sort_in_place(scratch.items, items)
        run = 0
        for k in range(items):
            run += scratch.items[k]
            scratch.prefix[k] = run
        sort_by_key(scratch.key, m, scratch.packed, scratch.order)
        cursor = 0
        room = 0
        for k in range(m + 1):
            lo = scratch.lo[scratch.order[k]] if k < m else capacity
            if lo > cursor:
                gap = lo - cursor
                fits = np.searchsorted(scratch.items[:items], gap, side="right")
                if fits > 0:
                    room += min(gap, scratch.prefix[fits - 1])
            if k < m and scratch.hi[scratch.order[k]] > cursor:
                cursor = scratch.hi[scratch.order[k]]
        if room < need:
            return t
    return -1


@njit(cache=True)
def _blame_section(t, d, sections, placed, level, conf):  # pragma: no cover - compiled
    """Section ``t`` is too crowded because of the buffers placed in it: blame their levels."""
    for k in range(sections.ptr[t], sections.ptr[t + 1]):
        z = sections.members[k]
        if placed[z] and 0 <= level[z] < d:
            _blame(conf, d, level[z])


# ---------------------------------------------------------------- candidates (TelaMalloc §5.1, §5.3)


@njit(cache=True)
def _listed(candidates, d, n, b):  # pragma: no cover - compiled
    """Whether ``b`` is among the first ``n`` candidates of level ``d``."""
    for c in range(n):
        if candidates[d, c] == b:
            return True
    return False


@njit(cache=True)
def _collect_candidates(d, previous, candidates, phases, placed, lb, switches, ph_left,
                        first_live):  # pragma: no cover - compiled
    """Fill level ``d``'s candidate list (``candidates[d]``); returns ``(count, first_live)``.

    Phases are visited starting with ``previous``, the phase of the buffer placed at the level
    above, while it has unplaced buffers (otherwise with the first phase that has some), then
    the others in order, until ``max_candidates``. Within a phase the selection rule picks:

    * ``SEL_TELAMALLOC`` (§5.1): the unplaced buffer with the longest lifetime, then the
      largest, then the largest area (each buffer once);
    * ``SEL_LOWEST``: the unplaced buffers with the lowest ``lb`` (ties: the larger);
    * ``SEL_SIZE``, ``SEL_AREA``, ``SEL_LIFETIME``: the first unplaced buffers in that order.

    ``first_live`` (the first phase with unplaced buffers) moves past the placed phases.
    One function rather than one per rule: every array a compiled helper takes costs a
    reference-count update on entry and exit, and this runs at every level.
    """
    limit = switches.max_candidates
    sel = switches.selection
    n_phases = ph_left.shape[0]
    current = previous
    if current >= 0 and ph_left[current] == 0:
        current = -1
    while first_live < n_phases and ph_left[first_live] == 0:
        first_live += 1  # every phase before it is placed
    if current < 0 and first_live < n_phases:
        current = first_live
    n = np.int64(0)
    for turn in range(n_phases - first_live + 1):
        if n >= limit:
            break
        if turn == 0:
            ph = current
        else:
            ph = first_live + turn - 1
            if ph == current:
                continue
        if ph < 0 or ph_left[ph] == 0:
            continue
        lo = phases.ptr[ph]
        hi = phases.ptr[ph + 1]
        if sel == SEL_TELAMALLOC:
            for key in range(3):
                if n >= limit:
                    break
                order = phases.by_life if key == 0 else (phases.by_size if key == 1 else phases.by_area)
                for k in range(lo, hi):
                    b = order[k]
                    if placed[b]:
                        continue
                    if not _listed(candidates, d, n, b):
                        candidates[d, n] = b
                        n += 1
                    break
        elif sel == SEL_LOWEST:
            while n < limit:
                best = -1
                for k in range(lo, hi):
                    b = phases.by_size[k]  # by size: ties of the lowest position go to the larger
                    if placed[b]:
                        continue
                    if best >= 0 and lb[b] >= lb[best]:
                        continue
                    if not _listed(candidates, d, n, b):
                        best = b
                if best < 0:
                    break
                candidates[d, n] = best
                n += 1
        else:
            order = phases.by_size if sel == SEL_SIZE else (phases.by_area if sel == SEL_AREA else phases.by_life)
            for k in range(lo, hi):
                if n >= limit:
                    break
                b = order[k]
                if not placed[b]:
                    candidates[d, n] = b
                    n += 1
    return n, first_live


# ---------------------------------------------------------------- backtracking (TelaMalloc §5.4)


@njit(cache=True)
def _stuck_level(levels, d, bt, limit):  # pragma: no cover - compiled
    """The deepest level ``k < d`` whose choice has seen more than ``limit`` backtracks.

    Stamps grow with depth, so a binary search finds it; the caller ensures level 0 qualifies.
    """
    lo_level = 0
    hi_level = d - 1
    while lo_level < hi_level:
        mid = (lo_level + hi_level + 1) // 2
        if bt - levels.stamp[mid] > limit:
            lo_level = mid
        else:
            hi_level = mid - 1
    return lo_level


@njit(cache=True)
def _jump_target(d, conf, backjump):  # pragma: no cover - compiled
    """Where a major backtrack from level ``d`` goes: the second-to-last level of its conflict set
    (the last when it holds one), or ``d - 1`` without backjumping; -1 when nothing is left."""
    if d == 0:
        return -1
    if not backjump:
        return d - 1
    c1, c2 = _two_latest(conf, d)
    if c1 < 0:
        return -1
    return c2 if c2 >= 0 else c1


@njit(cache=True)
def _append_new(levels, t, n, b, list_cap, max_candidates):  # pragma: no cover - compiled
    """Append ``b`` to level ``t``'s list (first ``n`` entries) unless listed or full; returns the count."""
    if not _listed(levels.candidates, t, n, b) and n < list_cap and n - levels.tried[t] - 1 < max_candidates:
        levels.candidates[t, n] = b
        n += 1
    return n


@njit(cache=True)
def _prepend_failed(levels, d, t, max_candidates):  # pragma: no cover - compiled
    """Level ``d``'s failed candidates go next at level ``t``, ahead of its untried ones (at most
    ``max_candidates`` untried kept)."""
    list_cap = levels.candidates.shape[1]
    keep = levels.candidates[t, levels.tried[t] + 1:levels.n_candidates[t]].copy()
    n = levels.tried[t] + 1
    for c in range(levels.n_candidates[d]):
        n = _append_new(levels, t, n, levels.candidates[d, c], list_cap, max_candidates)
    for c in range(keep.shape[0]):
        n = _append_new(levels, t, n, keep[c], list_cap, max_candidates)
    levels.n_candidates[t] = n


# ---------------------------------------------------------------- learned backtracking (TelaMalloc §6)


@njit(cache=True)
def _candidate_targets(d, conf, targets):  # pragma: no cover - compiled
    """The candidate targets of a major backtrack from level ``d`` (§6.2); returns their count.

    The levels of the backtrack reason (the conflict set's explicit levels and ``below``, the
    top of its "every level <= below" part), minus the last one (the deepest: backtracking
    there is what a minor backtrack does), then, for each range of levels 0-4, 5-8, 9-16,
    17-32, ... below ``d`` that holds none of them, the range's top: its level nearest the root.
    """
    n = np.int64(0)
    deepest = conf.below[d]
    for k in range(conf.n_explicit[d]):
        deepest = max(deepest, conf.explicit[d, k])
    for k in range(conf.n_explicit[d]):
        v = conf.explicit[d, k]
        if v != deepest:
            targets[n] = v
            n += 1
    b = conf.below[d]
    if 0 <= b < deepest:
        listed = False
        for k in range(n):
            listed = listed or targets[k] == b
        if not listed:
            targets[n] = b
            n += 1
    reason = n
    lo = np.int64(0)
    hi = np.int64(4)
    while lo < d:
        covered = False
        for k in range(reason):
            covered = covered or lo <= targets[k] <= hi
        if not covered:
            targets[n] = lo
            n += 1
        lo = hi + 1
        hi = 2 * hi
    return n


@njit(cache=True)
def _learned_target(d, t, bt, stats, conf, levels, phase_of, learning, switches, reason_count, landed, targets,
                    features):  # pragma: no cover - compiled
    """The target of a major backtrack from level ``d`` whose default target is ``t`` (§6.2–6.5).

    Each candidate target (``_candidate_targets``) gets the features of §6.4 (the block placed
    at that level: its size, lifetime and contention; the level; how often the block was in a
    major backtrack's reason; the backtracks that landed on the level's choice and those in its
    subtree; whether it is in the phase of the last placement; the total backtracks) plus the
    depth ``d`` and the distance ``d - level``. ``MODE_LEARNED`` scores all candidates in one
    call and takes the best score when it exceeds ``switches.threshold`` (ties: the deeper
    level, the cheaper mistake), else ``t``. ``MODE_RECORD`` takes ``learning.forced[k]`` at the
    k-th major backtrack while the list lasts (when it is a level below ``d``); at
    ``learning.stop_at`` it writes the candidates, their features, the path and the default
    target to the record buffers and returns -1. Afterwards the blocks of the reason are counted.
    """
    n = _candidate_targets(d, conf, targets)
    here = levels.phase[d - 1]
    for r in range(n):
        v = targets[r]
        b = levels.candidates[v, levels.tried[v]]
        features[r, 0] = learning.size[b]
        features[r, 1] = learning.lifetime[b]
        features[r, 2] = learning.contention[b]
        features[r, 3] = v
        features[r, 4] = reason_count[b]
        features[r, 5] = landed[v]
        features[r, 6] = bt - levels.stamp[v]
        features[r, 7] = 1.0 if phase_of[b] == here else 0.0
        features[r, 8] = bt
        features[r, 9] = d
        features[r, 10] = d - v
    k = stats[ST_MAJOR] - 1  # this major backtrack, counted from 0
    chosen = t
    if switches.mode == MODE_LEARNED and n > 0:
        scores = score(learning.model, features, n)
        stats[ST_SCORED] += n
        best = 0
        for r in range(1, n):
            if scores[r] > scores[best] or (scores[r] == scores[best] and targets[r] > targets[best]):
                best = r
        if scores[best] > switches.threshold:
            chosen = targets[best]
            stats[ST_LEARNED] += 1
    elif switches.mode == MODE_RECORD:
        if k < learning.forced.shape[0]:
            if 0 <= learning.forced[k] < d:
                chosen = learning.forced[k]
        elif k == learning.stop_at:
            for r in range(n):
                learning.record_levels[r] = targets[r]
                for c in range(features.shape[1]):  # a loop: a slice assignment compiles numba's shape errors
                    learning.record_features[r, c] = features[r, c]
            for v in range(d):
                learning.record_path[v] = levels.candidates[v, levels.tried[v]]
            learning.record_info[0] = n
            learning.record_info[1] = d
            learning.record_info[2] = t
            learning.record_info[3] = bt
            return np.int64(-1)
    for r in range(conf.n_explicit[d]):
        v = conf.explicit[d, r]
        reason_count[levels.candidates[v, levels.tried[v]]] += 1
    return chosen


# ---------------------------------------------------------------- the search


@njit(cache=True)
def _place_pins(inst, dom, reasons, use_comp, gaps):  # pragma: no cover - compiled
    """Place the pinned buffers (level -1, never undone); False when a pin is out of its domain
    or collides with an obstacle."""
    for i in range(inst.sizes.shape[0]):
        p = inst.fixed[i]
        if p < 0:
            continue
        if p > dom.ub[i] or p < dom.lb[i] or p % inst.aligns[i] != 0:
            return False
        if _lowest_fit(i, p, inst, dom, use_comp, gaps) != p:
            return False
        dom.placed[i] = 1
        dom.offset[i] = p
        reasons.level[i] = -1
        dom.lb[i] = p
        dom.ub[i] = p
    return True


@njit(cache=True)
def _queue_root_obstacles(inst, dom, use_comp, queue):  # pragma: no cover - compiled
    """Queue the neighbours of every pinned buffer and root compulsory part; returns the count."""
    head = np.int64(0)
    waiting = np.int64(0)
    for i in range(inst.sizes.shape[0]):
        if dom.placed[i]:
            waiting = _enqueue_neighbours(i, dom.offset[i], dom.offset[i] + inst.sizes[i], inst, dom.placed, queue,
                                          head, waiting)
        elif use_comp and dom.ub[i] < dom.lb[i] + inst.sizes[i]:
            waiting = _enqueue_neighbours(i, dom.ub[i], dom.lb[i] + inst.sizes[i], inst, dom.placed, queue, head,
                                          waiting)
    return waiting


@njit(cache=True)
def _initial_domains(inst):  # pragma: no cover - compiled
    """Every buffer unplaced, its domain all aligned starts that keep it within the capacity.

    Returns ``(domains, ok)``; ``ok`` is False when some buffer is larger than the capacity.
    """
    n = inst.sizes.shape[0]
    dom = Domains(np.zeros(n, np.int8), np.full(n, -1, np.int64), np.zeros(n, np.int64), np.empty(n, np.int64))
    ok = True
    for i in range(n):
        dom.ub[i] = (inst.capacity - inst.sizes[i]) // inst.aligns[i] * inst.aligns[i]
        if dom.ub[i] < 0:
            ok = False
    return dom, ok


@njit(cache=True)
def _phase_counts(phases, fixed):  # pragma: no cover - compiled
    """Per phase, its free (unpinned) buffers."""
    n_phases = phases.ptr.shape[0] - 1
    left = np.zeros(n_phases, np.int64)
    for ph in range(n_phases):
        for k in range(phases.ptr[ph], phases.ptr[ph + 1]):
            if fixed[phases.by_size[k]] < 0:
                left[ph] += 1
    return left


@njit(cache=True)
def _scratch(inst):  # pragma: no cover - compiled
    """The scratch space of gap walks and of the section check, sized by the largest neighbour
    list; returns ``(gaps, crowd, check_mask)``, ``check_mask`` saying how often the clock is read.
    """
    max_deg = 1
    for i in range(inst.sizes.shape[0]):
        max_deg = max(max_deg, inst.ptr[i + 1] - inst.ptr[i])
    gaps = GapScratch(np.empty(max_deg, np.int64), np.empty(max_deg, np.int64), np.empty(max_deg, np.int64),
                      np.empty(max_deg, np.int64), np.empty(max_deg, np.int64))
    # a section holds at most max_deg + 1 buffers
    crowd = SectionScratch(np.empty(max_deg + 1, np.int64), np.empty(max_deg + 1, np.int64),
                           np.empty(max_deg + 1, np.int64), np.empty(max_deg + 1, np.int64),
                           np.empty(max_deg + 1, np.int64), np.empty(max_deg + 1, np.int64),
                           np.empty(max_deg + 1, np.int64))
    # every 16 steps, every step where a step can take long (a placement on iopddl/S_1 touches
    # up to 19,000 neighbours and costs ~0.2 s)
    check_mask = 0 if max_deg > 2000 else 15
    return gaps, crowd, check_mask


@njit(cache=True)
def _level_tables(n_free, max_candidates):  # pragma: no cover - compiled
    """The per-level records of a search that places ``n_free`` buffers: ``(levels, conflicts)``."""
    levels = Levels(np.empty((n_free + 1, 4 * max_candidates), np.int64), np.zeros(n_free + 1, np.int64),
                    np.zeros(n_free + 1, np.int64), np.zeros(n_free + 1, np.int64), np.zeros(n_free + 1, np.int64),
                    np.zeros(n_free + 1, np.int64))
    conf = Conflicts(np.empty((n_free + 1, _KC), np.int64), np.zeros(n_free + 1, np.int64),
                     np.full(n_free + 1, -1, np.int64))
    return levels, conf


@njit(cache=True)
def _learned_tables(n, n_free, learned):  # pragma: no cover - compiled
    """What learned backtracking counts (TelaMalloc §6.4 features), empty when not ``learned``:
    per buffer, its appearances in major backtracks' reasons; per level, the backtracks that
    landed on its current choice; and the scratch of scoring. ``(reason_count, landed, targets,
    features)``."""
    reason_count = np.zeros(n if learned else 0, np.int64)
    landed = np.zeros(n_free + 1 if learned else 0, np.int64)
    targets = np.empty(MAX_TARGETS if learned else 0, np.int64)
    features = np.empty((MAX_TARGETS if learned else 0, N_FEATURES), np.float64)
    return reason_count, landed, targets, features


@njit(cache=True)
def _stuck_target(d, bt, stats, levels, conf, limit):  # pragma: no cover - compiled
    """The level to abandon a stuck subtree at (TelaMalloc §5.4): the deepest choice above ``d``
    that has seen more than ``limit`` backtracks. The levels above it start counting again, and
    its conflict set blames every level above it. Returns the level.
    """
    t = _stuck_level(levels, d, bt, limit)
    stats[ST_STUCK] += 1
    for v in range(t):
        levels.stamp[v] = bt
    _blame_all_below(conf, t, t - 1)
    return t


@njit(cache=True)
def _ended(status, step, offsets, stats):  # pragma: no cover - compiled
    """What ``search`` returns: ``(status, offsets, stats)`` with the steps taken counted."""
    stats[ST_STEPS] = step
    return status, offsets, stats


@njit(cache=True)
def search(instance, phases, sections, switches, learning):  # pragma: no cover - compiled
    """Search for a placement of every buffer within ``instance.capacity``.

    Returns ``(status, offsets, stats)``: one of ``SOLVED``, ``EXHAUSTED``, ``STEP_LIMIT``,
    ``TIME_LIMIT``, ``INFEASIBLE`` (``RECORDED`` when recording); the offsets (valid when
    solved; the partial placement when recorded); the ``ST_*`` counters. ``learning`` is only
    read when ``switches.mode`` is not ``MODE_DEFAULT`` (see ``_learned_target``).
    See ``allocator.methods.telamalloc`` for the algorithm and the meaning of every switch.

    The loop alternates: drain the propagation queue (the queue is empty afterwards, so the
    next fill starts at ring slot 0); judge the last placement (a wiped domain or a crowded
    section is a minor backtrack, otherwise descend a level); open a new level (its candidates);
    abandon a stuck subtree (``_stuck_target``); major backtracks while a level has no untried
    candidate; then one step, placing the level's next candidate.

    Why the phases are not all helpers: numba increments the reference count of every array
    argument on a call's entry and decrements it on exit (the records hold 15-35 arrays), and
    arrays allocated here are known not to alias one another. Helpers for the propagation, the
    judgement, the new level, the placement and the return to a level cost 7-25 % of the step
    rate on the challenging suite, inlined (``inline="always"``) or not, and so did allocating
    the trail, queue and work list in a helper. Helpers take the setup and the rare phases.
    """
    inst = instance
    n = inst.sizes.shape[0]
    stats = np.zeros(N_STATS, np.int64)
    use_comp = switches.compulsory and switches.propagate
    dom, fits = _initial_domains(inst)
    if not fits:
        return INFEASIBLE, dom.offset, stats
    reasons = Reasons(np.full(n, -2, np.int64), np.full(n, -1, np.int64))
    size = 4 * n + 16
    trail = Trail(np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.int64),
                  np.empty(size, np.int64), np.empty(size, np.int8))
    queue = Queue(np.empty(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int8))
    touched = np.full(n, -1, np.int64)  # the step at which a buffer's domain was last trailed
    work = WorkList(np.empty(2 * n + 2, np.int64), np.empty(2 * n + 2, np.int64), np.empty(2 * n + 2, np.int64),
                    np.empty(2 * n + 2, np.int64), np.full(n, -1, np.int64))
    gaps, crowd, check_mask = _scratch(inst)
    ph_left = _phase_counts(phases, inst.fixed)
    n_free = np.int64(np.sum(inst.fixed < 0))
    levels, conf = _level_tables(n_free, switches.max_candidates)
    learned = switches.mode != MODE_DEFAULT
    reason_count, landed, targets, features = _learned_tables(n, n_free, learned)

    if not _place_pins(inst, dom, reasons, use_comp, gaps):
        return INFEASIBLE, dom.offset, stats
    waiting = _queue_root_obstacles(inst, dom, use_comp, queue)
    top = np.int64(0)  # the trail's top
    explanations = np.int64(0)
    first_live = np.int64(0)  # no phase before this one has an unplaced buffer
    step = np.int64(0)
    level = np.int64(-1)  # level of the last placement (-1: the root)
    bt = np.int64(0)  # backtracks so far (minor + major): the stuck-subtree counter
    d = np.int64(0)  # the current decision level
    x = np.int64(-1)  # the buffer placed by the last step, until it is judged
    empty = np.int64(0)  # the queue's start and size when it is empty
    need_candidates = True
    while True:
        # ---------- propagate: narrow each queued buffer's domain against its new obstacles ----------
        # A buffer's lb moves only when the new obstacles reach its lowest position, its ub only
        # when they reach its highest; a narrowed domain is trailed once per step (``touched``);
        # a new compulsory part queues the buffer's own neighbours; the first emptied domain
        # (``wiped``) ends the narrowing (the rest of the queue is dropped). Without propagation
        # the queue is only emptied. It stays in ``search`` (see the docstring): as a helper it
        # would take ~25 state arrays.
        wiped = np.int64(-1)
        head = np.int64(0)
        while waiting > 0:
            y = queue.ring[head]
            head = (head + 1) % n
            waiting -= 1
            queue.queued[y] = 0
            if dom.placed[y] or wiped >= 0:
                continue
            s = inst.sizes[y]
            old_lb = dom.lb[y]
            old_ub = dom.ub[y]
            new_lb, new_ub = old_lb, old_ub
            if switches.propagate:
                lo = queue.lo[y]
                hi = queue.hi[y]
                if lo < old_lb + s and hi > old_lb:
                    new_lb = _lowest_fit(y, old_lb, inst, dom, use_comp, gaps)
                if new_lb <= old_ub and lo < old_ub + s and hi > old_ub:
                    new_ub = _highest_fit(y, old_ub, inst, dom, use_comp, gaps)
            if new_lb == old_lb and new_ub == old_ub:
                continue
            if touched[y] != step:
                touched[y] = step
                top = _save(trail, top, y, dom, reasons.changed_at, np.int8(0))
            dom.lb[y] = new_lb
            dom.ub[y] = new_ub
            reasons.changed_at[y] = level
            if new_lb > new_ub:
                wiped = y
            elif use_comp and new_ub < new_lb + s:  # a compulsory part: an obstacle for the neighbours
                waiting = _enqueue_neighbours(y, new_ub, new_lb + s, inst, dom.placed, queue, head, waiting)
        # ---------- judge the last placement ----------
        if level < 0:
            if wiped >= 0:
                return INFEASIBLE, dom.offset, stats
            level = np.int64(0)
        elif x >= 0:
            crowded = -1
            if wiped < 0 and switches.energy:
                crowded = _crowded_section(x, sections, dom, inst.sizes, inst.capacity, crowd)
            if wiped >= 0 or crowded >= 0:  # minor backtrack: the candidate left some buffer no room
                stats[ST_MINOR] += 1
                bt += 1
                if switches.backjump and wiped >= 0:
                    explanations += 1
                    _explain(wiped, d, inst, dom, reasons, use_comp, conf, work, explanations, switches.explain_depth)
                elif switches.backjump:
                    _blame_section(crowded, d, sections, dom.placed, reasons.level, conf)
                first_live = _undo_to(levels.mark[d], top, trail, dom, reasons, phases.phase_of, ph_left, first_live)
                top = levels.mark[d]
                levels.tried[d] += 1
            else:
                levels.stamp[d] = bt
                d += 1
                need_candidates = True
                stats[ST_DEPTH] = max(stats[ST_DEPTH], d)
            x = np.int64(-1)
        # ---------- a new level: its candidates ----------
        if need_candidates:
            need_candidates = False
            if d == n_free:
                return _ended(SOLVED, step, dom.offset, stats)
            levels.mark[d] = top
            levels.tried[d] = 0
            if learned:
                landed[d] = 0
            conf.n_explicit[d] = 0
            conf.below[d] = -1
            previous = levels.phase[d - 1] if d > 0 else np.int64(-1)
            levels.n_candidates[d], first_live = _collect_candidates(d, previous, levels.candidates, phases,
                                                                     dom.placed, dom.lb, switches, ph_left,
                                                                     first_live)
        # ---------- stuck subtree: abandon the deepest choice that has seen too many backtracks ----------
        limit = switches.stuck_limit
        if limit > 0 and d > 0 and bt - levels.stamp[0] > limit and levels.tried[d] > 0:
            d = _stuck_target(d, bt, stats, levels, conf, limit)
            first_live = _undo_to(levels.mark[d], top, trail, dom, reasons, phases.phase_of, ph_left, first_live)
            top = levels.mark[d]
            levels.tried[d] += 1
        # ---------- major backtracks while the level's candidates are used up ----------
        while levels.tried[d] >= levels.n_candidates[d]:
            stats[ST_MAJOR] += 1
            bt += 1
            t = _jump_target(d, conf, switches.backjump)
            if t < 0:
                return _ended(EXHAUSTED, step, dom.offset, stats)
            if learned:
                t = _learned_target(d, t, bt, stats, conf, levels, phases.phase_of, learning, switches, reason_count,
                                    landed, targets, features)
                if t < 0:  # recorded: stop here
                    return _ended(RECORDED, step, dom.offset, stats)
                landed[t] += 1
            stats[ST_BACKJUMP_LEVELS] += d - 1 - t
            if switches.prepend:
                _prepend_failed(levels, d, t, switches.max_candidates)
            if switches.backjump:
                _pass_conflicts(conf, d, t)
            first_live = _undo_to(levels.mark[t], top, trail, dom, reasons, phases.phase_of, ph_left, first_live)
            top = levels.mark[t]
            d = t
            levels.tried[d] += 1
        # ---------- one step: place the next candidate at its lowest valid position ----------
        if step >= switches.step_limit:
            return _ended(STEP_LIMIT, step, dom.offset, stats)
        if (step & check_mask) == 0 and switches.deadline >= 0 and clock() > switches.deadline:
            return _ended(TIME_LIMIT, step, dom.offset, stats)
        x = levels.candidates[d, levels.tried[d]]
        if dom.placed[x]:
            levels.tried[d] += 1
            x = np.int64(-1)
            continue
        step += 1
        if top + n + 2 > trail.buffer.shape[0]:  # room for a placement and n domain changes
            trail = _grown(trail, top, n)
        if not switches.lowest_position:
            p = _skyline_position(x, inst, dom, use_comp, gaps)
        elif switches.propagate:
            p = dom.lb[x]
        else:
            p = _lowest_fit(x, empty, inst, dom, use_comp, gaps)
        if p > dom.ub[x]:  # no position (only without propagation, or above the skyline): a minor backtrack
            stats[ST_MINOR] += 1
            bt += 1
            if switches.backjump:
                if switches.lowest_position:
                    explanations += 1
                    _explain(x, d, inst, dom, reasons, use_comp, conf, work, explanations, switches.explain_depth)
                else:
                    _blame_all_below(conf, d, d - 1)
            levels.tried[d] += 1
            x = np.int64(-1)
            continue
        top = _save(trail, top, x, dom, reasons.changed_at, np.int8(1))
        touched[x] = step
        dom.placed[x] = 1
        dom.offset[x] = p
        reasons.level[x] = d
        dom.lb[x] = p
        dom.ub[x] = p
        ph_left[phases.phase_of[x]] -= 1
        levels.phase[d] = phases.phase_of[x]
        level = d
        if switches.propagate:
            waiting = _enqueue_neighbours(x, p, p + inst.sizes[x], inst, dom.placed, queue, empty, empty)

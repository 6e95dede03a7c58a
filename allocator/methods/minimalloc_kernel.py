"""The compiled core of the exact canonical search (see ``allocator.methods.minimalloc``).

Everything here is numba ``njit`` code over flat int64 arrays; ``allocator.methods.minimalloc`` is
the Python layer that prepares the arrays, runs the portfolio and converts the result. Its one
entry point is :func:`run_search`, which takes three typed records and the limits by keyword:

* :class:`SearchInstance`: the problem as flat arrays (sizes, alignments, pins, cross sections);
* :class:`Preorder`: the static rank that breaks ties, and what is derived from it;
* :class:`SearchSwitches`: one field per pruning technique, so an ablation is one field.

Search state
------------
* ``placement.offset[i]``: the buffer's offset, ``-1`` while unplaced.
* ``sections.top[k]``: the highest address in use in cross section ``k`` by placed buffers.
  The lowest offset a buffer can take ("floor") is the max of the tops over its sections.
* ``sections.free[k]``: total size of the unplaced free (not fixed) buffers live in ``k``.
* ``placement.pos[j]``: the offset unplaced buffer ``j`` would take now (its aligned floor, or
  its fixed offset). Placing a buffer raises ``pos`` of the unplaced buffers it overlaps; only
  those of the current group can overlap it, so the update costs one pass over the group.
* trails of ``(index, old value)`` rows for the section tops, the positions and the ranks,
  and a stack of placed buffers, so backtracking restores the state exactly instead of
  recomputing it.

The helpers take the arrays in small records (``_Buffers``, ``_Placement``, ``_Sections``)
and the node's scalars in ``_Node``. Numba passes a record as one argument per array (and
reference-counts the arrays of a record bound inside inlined code): handing every helper the
whole state and the frame stack made the search up to 40 % slower, while with these narrow
records it searches as many nodes per second as the single-function kernel it replaced.

Frames
------
The depth-first search is iterative. A *normal* frame is a search node: the group of buffers
it works on (a run of the ``members`` stack, sorted by start time), the canonical bounds
(largest offset placed so far and the rank of the buffer placed there), the last candidate it
tried and the dominance bounds of the node. A *sequence* frame holds the independent groups
a dynamic temporal decomposition split the node into; they are solved one after another and
never backtracked into (they do not interact), so a failure in one fails the whole node.

Failed-state table
------------------
``switches.table_bits > 0`` turns on the table of ``2**table_bits`` failed states (``table``,
two rows of uint64 keys, which may hold the states of an earlier run on the same problem,
preorder and capacity). The future of a node depends only on its unplaced buffers, the
section tops where they live and the canonical bounds, so a state that was searched to
exhaustion once fails again wherever it recurs. States are keyed by two independent 64-bit
Zobrist-style hashes (unplaced buffers XOR per-section ``(section, top)`` terms XOR the bounds),
kept incrementally; a false hit needs both to collide. Entries are overwritten on collision of
the slot. With ``rerank_groups`` a group's ranks can differ from ``preorder.rank``; the ranks
of unplaced buffers steer their future, so every rank that differs adds a ``(buffer, rank)``
term to the hash.

Integer range
-------------
All arithmetic is int64. It cannot overflow when the capacity, every size, alignment and
pinned offset are at most ``MAX_VALUE = 2**62 - 1`` and the sizes plus alignments of all
buffers sum to at most ``MAX_VALUE`` (``allocator.core.problem`` guarantees this for every
problem; ``allocator.methods.minimalloc`` checks the capacity of each search): a position is at most
``capacity + alignment - 1`` (an aligned floor of a top that fits), so a position plus a
size, or plus a section's unplaced bytes, stays below ``2 * MAX_VALUE < 2**63``.
``_BIG = 2**62`` stands for "none" because it exceeds every
capacity. The hashes multiply in uint64 and wrap on purpose.

Compile time
------------
With an empty cache the first search compiles all of this module, which the first
``accelsim alloc`` pays for, so the code keeps what numba has to compile small: one
specialisation per helper (counters start as ``np.int64(0)``: a literal ``0`` argument makes
numba compile a helper once for the literal and again for int64), arrays allocated with
``np.empty`` of int64 and filled by loops (each of ``np.zeros``, ``np.full``, ``copy()``, a
uint64 or bool array, is another overload to compile), copies by loops rather than slice
assignments (whose shape-mismatch error formats a message: numba's string code), the frames in
one int64 matrix rather than a record of 25 arrays, a merge sort of its own rather than
numba's ``argsort`` and ``sort``, and helpers without a Python or C wrapper (``_helper``).
What an instance cannot use is not compiled at all: the segment trees and the staircase bound
come in as scratch arrays that are None when ruled out (:func:`scratch`), and numba, which
compiles a function for the types of its arguments, drops every branch a None rules out. On
the challenging suite this leaves out a sixth of the search's first compilation.

Time
----
The clock is read through object mode (``allocator.core.deadline.clock``), which costs a few microseconds, so the
search reads it once per ``CLOCK_WORK`` units of work (a unit is one buffer or section
visited), not once per node: a node on a large instance can visit a million buffers, and a
node count alone would let the search overrun its deadline by seconds.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from allocator.core import kernel_cache  # noqa: F401  (numba's cache directory, before any kernel is decorated)
from allocator.core.deadline import clock

SOLVED, EXHAUSTED, NODE_LIMIT, TIME_LIMIT, CANCELLED = 0, 1, 2, 3, 4

#: numba's options for the search's helpers (in a dict: numba's type stubs omit the options):
#: compiled and cached like every kernel, but without the wrappers that would let Python (or C)
#: call them. Only ``search`` calls them, and numba would otherwise build, optimise and compile
#: those wrappers for each, unboxing each NamedTuple argument array by array: a fifth of the
#: search's first compilation.
_HELPER_OPTIONS: dict[str, Any] = {"cache": True, "no_cpython_wrapper": True, "no_cfunc_wrapper": True}
_helper = njit(**_HELPER_OPTIONS)
#: the same for the small steps ``search`` takes when it opens or leaves a node (reading a frame,
#: pushing and popping its marks): numba inlines them into ``search`` itself; as calls they made
#: the challenging suite about 5 % slower than the single loop they were cut from. Placing a
#: candidate and undoing the last one, the two steps of every node, stay written out in
#: ``search``: even inlined, as helpers (taking and returning the trail arrays) they cost the
#: fit suite about 4 % (in-process A/B over 40 interleaved runs). Opening a decomposition's
#: sequence frame (``_open_sequence``) is inlined for compile time: as a function of its own,
#: numba optimised and compiled the re-ranking it calls once more inside it (about 0.3 s of the
#: first search, over five interleaved pairs of cold runs)
_inlined = njit(inline="always", **_HELPER_OPTIONS)

#: the largest capacity, size, alignment or pinned offset (and sum of sizes plus alignments)
#: the kernel's int64 arithmetic handles without overflow
MAX_VALUE = (1 << 62) - 1
#: units of work (buffers and sections visited) between two readings of the clock
CLOCK_WORK = 1 << 17
#: the fewest buffer-sections (lifetimes summed over a group) for which a segment tree can be
#: worth building (``_tree_worthwhile``): a shorter walk costs well under a millisecond per node
#: whatever the tree would save (measured: the challenging suite, whose instances sum to at most
#: 16,452, searches as fast with the trees off). An instance whose lifetimes sum to less never
#: builds one, so ``run_search`` compiles it a search without the tree code.
TREE_MIN_SPAN = 1 << 16

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


class SearchInstance(NamedTuple):
    """The problem as the kernel sees it: flat arrays indexed by buffer or by cross section."""

    sizes: np.ndarray  #: int64 bytes per buffer
    aligns: np.ndarray  #: int64 alignment per buffer (bytes, >= 1)
    fixed: np.ndarray  #: int64 pinned offset per buffer, -1 when free
    first_section: np.ndarray  #: int64 first cross section the buffer is live in
    last_section: np.ndarray  #: int64 one past the last cross section it is live in
    by_start: np.ndarray  #: int64 buffer indices sorted by start time, then index: the root group
    hash_key_a: np.ndarray  #: uint64 random key per buffer for the state hash (odd)
    hash_key_b: np.ndarray  #: uint64 second, independent key per buffer
    section_start: np.ndarray  #: int64 CSR row starts of ``section_buffers`` (staircase bound only)
    section_buffers: np.ndarray  #: int64 buffers live in each section, section by section
    n_sections: int  #: number of cross sections
    #: the sum over the buffers of the number of sections each is live in (sizes the section
    #: trail; decides whether a segment tree can ever pay, see :func:`scratch`)
    sections_spanned: int


class Preorder(NamedTuple):
    """One static preorder of the portfolio and what is derived from it."""

    rank: np.ndarray  #: int64 rank per buffer (0 first): breaks ties in the canonical order
    twin_before: np.ndarray  #: int64 identical free buffer just before it in rank order, -1 for none
    rerank_pre: np.ndarray  #: int64 group re-ranking key before T (see ``rerank_groups``)
    rerank_post: np.ndarray  #: int64 group re-ranking key after T (distinct per buffer)


class SearchSwitches(NamedTuple):
    """Which techniques the kernel applies; ``allocator.methods.minimalloc.kernel_switches`` builds it
    from ``MiniMallocOptions`` (whose docstrings cite the paper's sections)."""

    canonical: bool  #: place in non-decreasing (offset, rank) order only
    section_inference: bool  #: height + unplaced bytes <= capacity in every section
    offset_floor: bool  #: ... with the height raised to the largest placed offset
    effective_height: bool  #: ... and to the lowest position of an unplaced buffer there
    staircase: bool  #: the per-position form of the section bound (replaces the sum form)
    dominance: bool  #: skip a candidate when an unplaced buffer fits entirely below it
    decomposition: bool  #: split a node into groups that do not overlap in time
    restart_groups: bool  #: each group restarts its canonical order at offset 0
    rerank_groups: bool  #: each group re-ranks its buffers by the T of its unplaced bytes
    lowest_offset_first: bool  #: try candidates by (offset, rank); off: by rank only
    hatless: bool  #: a refuted candidate overlapping no unplaced buffer fails its node
    offset_ceiling: bool  #: skip candidates above capacity - the group's most unplaced bytes in a section
    #: read long lifetimes through segment trees over the sections where that costs less than a
    #: walk of every section (``_tree_worthwhile``); the same values either way
    section_trees: bool
    table_bits: int  #: log2 of the slots of the failed-state table; 0: no table


class SearchResult(NamedTuple):
    """What one run of the kernel returns."""

    status: int  #: SOLVED, EXHAUSTED, NODE_LIMIT, TIME_LIMIT or CANCELLED
    offsets: np.ndarray  #: int64 offset per buffer (complete only when SOLVED)
    nodes: int  #: candidates placed
    backtracks: int  #: candidates refuted and nodes failed
    splits: int  #: dynamic decompositions performed
    table_hits: int  #: nodes pruned because their state had failed before


class _Buffers(NamedTuple):
    """The static per-buffer arrays the helpers read (the same arrays as the ``SearchInstance``).

    The helpers take small records like this one rather than the whole instance: numba passes
    a record as one argument per array field, so a narrow record keeps each call cheap.
    """

    sizes: np.ndarray
    aligns: np.ndarray
    fixed: np.ndarray
    first_section: np.ndarray
    last_section: np.ndarray


class _Placement(NamedTuple):
    """The per-buffer search state (see the module docstring)."""

    offset: np.ndarray  #: offset, -1 while unplaced
    pos: np.ndarray  #: the offset an unplaced buffer would take now
    rank: np.ndarray  #: current rank (re-ranked groups change it)


class _Sections(NamedTuple):
    """The per-section search state."""

    top: np.ndarray  #: highest address in use by placed buffers
    free: np.ndarray  #: bytes of the unplaced free buffers live there
    unplaced: np.ndarray  #: unplaced buffers live there (which sections the state hash covers)


class _Node(NamedTuple):
    """The scalars of one search node that its candidates are checked against."""

    begin: int  #: the node's group is ``members[begin:end]``
    end: int
    scan_end: int  #: candidates are looked for in ``members[begin:scan_end]`` (``begin``: none left)
    omax: int  #: canonical bounds: largest offset placed so far ...
    imax: int  #: ... and the rank of the buffer placed there
    last_pos: int  #: the candidate tried last (the next one comes after it)
    last_rank: int
    klo: int  #: sections the group spans: ``[klo, khi)``
    khi: int
    hmin: int  #: lowest top of an unplaced free buffer (dominance)
    fmin: int  #: lowest unplaced pinned offset
    ceiling: int  #: highest position a candidate can take and pass section inference (``offset_ceiling``)


#: The search stack (see the module docstring; ``search`` only): one row per frame of an int64
#: matrix, one column per field. One array rather than a record of 25: numba compiles a record
#: of arrays as 25 arrays of 7 fields each, and every one of them costs compile time. The four
#: uint64 hashes are kept as int64 of the same bits (numba converts between the two without
#: changing a bit) and the flag ``hatless`` as 0 or 1.
_F_KIND = 0  #: _NORMAL or _SEQUENCE
_F_BEGIN = 1  #: normal: first member of the group; sequence: first entry in ``bounds``
_F_END = 2  #: normal: one past the last member of the group
_F_OMAX = 3  #: canonical bounds on entry: largest offset placed ...
_F_IMAX = 4  #: ... and the rank of the buffer placed there
_F_LAST_POS = 5  #: last candidate tried: its position ...
_F_LAST_RANK = 6  #: ... and its rank
_F_HATLESS = 7  #: the last candidate tried overlapped no unplaced buffer
_F_SECTION_MARK = 8  #: trail tops on entry (undo marks)
_F_POSITION_MARK = 9
_F_RANK_MARK = 10
_F_PLACED_MARK = 11
_F_MEMBERS_MARK = 12
_F_BOUNDS_MARK = 13
_F_KLO = 14  #: sections the group spans: [klo, khi)
_F_KHI = 15
_F_HMIN = 16  #: lowest top of an unplaced free buffer (dominance)
_F_FMIN = 17  #: lowest unplaced pinned offset
_F_CEILING = 18  #: highest position of a candidate (``offset_ceiling``)
_F_HASH_A = 19  #: state hash on entry (restored on undo)
_F_HASH_B = 20
_F_KEY_A = 21  #: state key on entry (hash and bounds), for the table
_F_KEY_B = 22
_F_GROUP = 23  #: sequence frames: index of the group being solved
_F_GROUPS = 24  #: sequence frames: number of groups
_FRAME_FIELDS = 25


def run_search(instance: SearchInstance, preorder: Preorder, switches: SearchSwitches, *, capacity: int,
               node_limit: int, deadline: float, stop: np.ndarray, table: np.ndarray | None = None) -> SearchResult:
    """Run the depth-first search over canonical partial solutions once.

    ``capacity`` is in bytes (at most ``MAX_VALUE``); the search stops after ``node_limit``
    nodes (NODE_LIMIT), when ``work_clock()`` passes ``deadline`` (TIME_LIMIT; a
    negative deadline means none), or when another thread sets ``stop[0]`` (a one-element
    int64 array) to non-zero (CANCELLED). The compiled search releases the GIL. Ctrl-C
    raises KeyboardInterrupt at the kernel's next reading of the clock.

    ``table`` is the failed-state table (from :func:`new_table`), read and written in place: a
    later run with the same instance, preorder, switches and capacity may be handed the table
    of an earlier one, whose states stay exhausted whatever the node limit. None: a new table.
    """
    if table is None:
        table = new_table(switches)
    effective, tree, stairs = scratch(instance, switches)
    try:
        status, offsets, nodes, backtracks, splits, hits = search(
            instance, preorder, switches, capacity=capacity, node_limit=node_limit, deadline=deadline, stop=stop,
            table=table, effective=effective, tree=tree, stairs=stairs)
    except SystemError as exc:
        # Ctrl-C is handled while the kernel reads the clock in object mode, and numba hands the
        # KeyboardInterrupt back wrapped in a SystemError; give the caller the interrupt itself.
        if isinstance(exc.__cause__, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        raise
    return SearchResult(int(status), offsets, int(nodes), int(backtracks), int(splits), int(hits))


def scratch(instance: SearchInstance, switches: SearchSwitches) -> tuple[np.ndarray, np.ndarray | None,
                                                                        np.ndarray | None]:
    """The scratch arrays the pruning checks reuse at every node, so that no node allocates:
    ``(effective, tree, stairs)``.

    * ``effective``: the effective height per section (section inference, §6.2);
    * ``tree``: a segment tree over the sections (``_rerank``, ``_sections_hold``), or None
      when the switch is off or the lifetimes sum to less than ``TREE_MIN_SPAN``, so that no
      group can make a tree worthwhile;
    * ``stairs``: the staircase bound's positions and sizes (two rows), or None when
      ``switches.staircase`` is off.

    A None is a type to numba, which compiles the search once for each combination it meets
    and leaves out the code a None rules out: the tree and staircase code is most of what
    a first search on a small instance would otherwise compile for nothing (about a second).
    The answer is the same either way.
    """
    n = instance.sizes.shape[0]
    tree = (np.empty(2 * instance.n_sections + 2, np.int64)
            if switches.section_trees and instance.sections_spanned >= TREE_MIN_SPAN else None)
    stairs = np.empty((2, n + 1), np.int64) if switches.staircase else None
    return np.zeros(instance.n_sections, np.int64), tree, stairs


def new_table(switches: SearchSwitches) -> np.ndarray:
    """An empty failed-state table for ``switches`` (one slot when the table is off): two rows of
    ``2**table_bits`` uint64 keys."""
    return np.zeros((2, 1 << switches.table_bits if switches.table_bits > 0 else 1), np.uint64)


@_helper
def _mix(a, b, salt):  # pragma: no cover - compiled
    """A 64-bit hash of the pair ``(a, b)`` (splitmix64 finaliser); ``salt`` picks the function."""
    z = (np.uint64(a) * _GOLDEN) ^ (np.uint64(b) * _MUL_V) ^ salt
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@_helper
def _grow(array, needed):  # pragma: no cover - compiled
    """``array`` (int64) itself when it holds ``needed`` entries, else a copy at least twice as long."""
    if needed <= array.shape[0]:
        return array
    bigger = np.empty(max(needed, 2 * array.shape[0]), np.int64)
    for x in range(array.shape[0]):  # a loop, not a slice assignment: that would compile numba's shape errors
        bigger[x] = array[x]
    return bigger


@_helper
def _grow_trail(trail, needed):  # pragma: no cover - compiled
    """A trail of int64 ``(index, old value)`` rows with room for ``needed`` rows."""
    if needed <= trail.shape[0]:
        return trail
    bigger = np.empty((max(needed, 2 * trail.shape[0]), 2), np.int64)
    for x in range(trail.shape[0]):
        bigger[x, 0] = trail[x, 0]
        bigger[x, 1] = trail[x, 1]
    return bigger


@_helper
def _restore(values, trail, top, mark):  # pragma: no cover - compiled
    """Undo the trail down to ``mark``: write each old value back, newest first; returns ``mark``."""
    while top > mark:
        top -= 1
        values[trail[top, 0]] = trail[top, 1]
    return top


@_helper
def _root_state(buffers, rank, n_sections):  # pragma: no cover - compiled
    """The state at the root: nothing placed; free buffers counted in their sections.

    The counts are built from differences (+1 where a buffer's sections begin, -1 where they
    end) and one running sum, in O(buffers + sections): walking every buffer's sections costs
    the sum of their spans instead, which on two million randomly overlapping buffers is about
    10**11 steps, minutes before the search could first read the clock.
    """
    n = buffers.sizes.shape[0]
    # np.empty and loops only: each of np.full, np.zeros and copy() is one more numba overload to compile
    placement = _Placement(offset=np.empty(n, np.int64), pos=np.empty(n, np.int64), rank=np.empty(n, np.int64))
    sections = _Sections(top=np.empty(n_sections, np.int64), free=np.empty(n_sections, np.int64),
                         unplaced=np.empty(n_sections, np.int64))
    for k in range(n_sections):
        sections.top[k] = 0
        sections.free[k] = 0
        sections.unplaced[k] = 0
    for j in range(n):
        placement.offset[j] = -1
        placement.pos[j] = buffers.fixed[j] if buffers.fixed[j] >= 0 else 0
        placement.rank[j] = rank[j]
        first = buffers.first_section[j]
        last = buffers.last_section[j]
        if first >= last:
            continue
        sections.unplaced[first] += 1
        if last < n_sections:
            sections.unplaced[last] -= 1
        if buffers.fixed[j] < 0:
            sections.free[first] += buffers.sizes[j]
            if last < n_sections:
                sections.free[last] -= buffers.sizes[j]
    for k in range(1, n_sections):
        sections.unplaced[k] += sections.unplaced[k - 1]
        sections.free[k] += sections.free[k - 1]
    return placement, sections


@_helper
def _root_hash(hash_key_a, hash_key_b, sections):  # pragma: no cover - compiled
    """The root's two state hashes: every buffer unplaced, every live section at top 0."""
    hash_a = np.uint64(0)
    hash_b = np.uint64(0)
    for j in range(hash_key_a.shape[0]):
        hash_a ^= hash_key_a[j]
        hash_b ^= hash_key_b[j]
    for k in range(sections.unplaced.shape[0]):
        if sections.unplaced[k] > 0:
            hash_a ^= _mix(k, np.int64(0), _SALT_A)
            hash_b ^= _mix(k, np.int64(0), _SALT_B)
    return hash_a, hash_b


@_helper
def _table_holds(table_a, table_b, key_a, key_b):  # pragma: no cover - compiled
    """The failed-state table holds this state: it was searched to exhaustion before."""
    slot = key_a & np.uint64(table_a.shape[0] - 1)
    return table_a[slot] == key_a and table_b[slot] == key_b


@_helper
def _remember(table_a, table_b, key_a, key_b):  # pragma: no cover - compiled
    """Record a state searched to exhaustion (overwriting whatever held its slot)."""
    slot = key_a & np.uint64(table_a.shape[0] - 1)
    table_a[slot] = key_a
    table_b[slot] = key_b


@_helper
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


@_helper
def _survey(members, begin, end, n_sections, buffers, placement):  # pragma: no cover - compiled
    """Look over the unplaced buffers of the group ``members[begin:end]`` (sorted by start).

    Returns ``(count, runs, klo, khi, hmin, fmin)``: how many are unplaced, into how many runs
    that do not overlap in time they fall, the sections ``[klo, khi)`` they span, the lowest
    top (position + size) of an unplaced free buffer (dominance) and the lowest unplaced
    pinned offset (``_BIG`` for none).
    """
    count = 0
    runs = 0
    run_end = -1
    klo = n_sections
    khi = 0
    hmin = _BIG
    fmin = _BIG
    for m in range(begin, end):
        j = members[m]
        if placement.offset[j] >= 0:
            continue
        first = buffers.first_section[j]
        last = buffers.last_section[j]
        count += 1
        if count == 1 or first >= run_end:
            runs += 1
            run_end = last
        elif last > run_end:
            run_end = last
        if first < klo:
            klo = first
        if last > khi:
            khi = last
        if buffers.fixed[j] >= 0:
            if buffers.fixed[j] < fmin:
                fmin = buffers.fixed[j]
        elif placement.pos[j] + buffers.sizes[j] < hmin:
            hmin = placement.pos[j] + buffers.sizes[j]
    return count, runs, klo, khi, hmin, fmin


@_helper
def _ceiling(on, capacity, free, klo, khi):  # pragma: no cover - compiled
    """The highest position at which a candidate of a node can pass section inference (§6.2)
    with the offset floor: ``capacity - `` the most unplaced free bytes in a section of the group.

    A candidate placed at ``p`` raises the floor of every section of the group to ``p``; in a
    section it spans its top becomes ``p + size`` while its bytes leave the section's unplaced
    total. Either way ``p + (the section's unplaced bytes before the placement)`` is a lower
    bound on the section's height plus its unplaced bytes, so a candidate above the ceiling
    would be refuted after its placement: it is skipped before. Candidates come by increasing
    position, so a node whose next candidate lies above the ceiling has none left. ``on``
    False (or no free bytes): ``_BIG``.
    """
    if not on:
        return _BIG
    most = np.int64(0)
    for k in range(klo, khi):
        if free[k] > most:
            most = free[k]
    if most == 0:
        return _BIG
    return capacity - most


@_helper
def _split_into_runs(members, begin, end, write, bounds, bounds_top, buffers,
                     placement):  # pragma: no cover - compiled
    """Dynamic temporal decomposition (§7): copy the unplaced buffers of ``members[begin:end]``
    to ``members[write:]`` and push each run's ``[begin, end)`` onto ``bounds``.

    A run ends where no buffer seen so far is live any more (members are sorted by start), so
    the runs do not overlap in time. Returns the new ``(members top, bounds top)``.
    """
    run_end = -1
    first = True
    for m in range(begin, end):
        j = members[m]
        if placement.offset[j] >= 0:
            continue
        if first or buffers.first_section[j] >= run_end:
            if not first:
                bounds[bounds_top] = write
                bounds_top += 1
            bounds[bounds_top] = write
            bounds_top += 1
            run_end = buffers.last_section[j]
            first = False
        elif buffers.last_section[j] > run_end:
            run_end = buffers.last_section[j]
        members[write] = j
        write += 1
    bounds[bounds_top] = write
    bounds_top += 1
    return write, bounds_top


@_helper
def _lex_order(a, b, c):  # pragma: no cover - compiled
    """Positions of the int64 arrays' entries sorted by ``(a, b, c)``, ties by position (stable).

    A bottom-up merge sort written out here: numba's own ``argsort`` and ``sort`` each cost
    a second or more to compile, and the three stable passes it replaces gave this order.
    """
    g = a.shape[0]
    order = np.empty(g, np.int64)
    other = np.empty(g, np.int64)
    for x in range(g):
        order[x] = x
    width = 1
    while width < g:
        for lo in range(0, g, 2 * width):
            mid = min(lo + width, g)
            hi = min(lo + 2 * width, g)
            i, j, out = lo, mid, lo
            while i < mid and j < hi:
                p, q = order[i], order[j]
                if a[q] < a[p] or (a[q] == a[p] and (b[q] < b[p] or (b[q] == b[p] and c[q] < c[p]))):
                    other[out] = q
                    j += 1
                else:
                    other[out] = p
                    i += 1
                out += 1
            while i < mid:
                other[out] = order[i]
                i += 1
                out += 1
            while j < hi:
                other[out] = order[j]
                j += 1
                out += 1
        order, other = other, order
        width *= 2
    return order


@_helper
def _rank_term(j, r, r0):  # pragma: no cover - compiled
    """Hash terms ``(a, b)`` of buffer ``j`` holding rank ``r`` instead of its static rank ``r0``."""
    if r == r0:
        return np.uint64(0), np.uint64(0)
    return (_mix(j, r, _SALT_D) ^ _mix(j, r0, _SALT_D)), (_mix(r, j, _SALT_E) ^ _mix(r0, j, _SALT_E))


@_helper
def _log2_ceil(w):  # pragma: no cover - compiled
    """The smallest ``b`` with ``2**b >= w`` (1 for ``w <= 2``): a segment tree's depth over ``w`` leaves."""
    b = 1
    while (np.int64(1) << b) < w:
        b += 1
    return b


@_helper
def _tree_worthwhile(span, count, w):  # pragma: no cover - compiled
    """Whether a segment tree over ``w`` sections beats walking ``span`` buffer-sections
    directly, for ``count`` buffers: the tree costs about ``count`` times its depth plus
    ``w`` to build or read out, and a walk shorter than ``TREE_MIN_SPAN`` steps is cheap
    whatever the tree would cost. The direct walk wins on small instances (the challenging
    suite); the tree on long-lived buffers over many sections, where the walk is the sum of
    all lifetimes (about 10**11 steps per node on two million random buffers)."""
    return span >= TREE_MIN_SPAN and span > 4 * (count * _log2_ceil(w) + w)


@_helper
def _max_tree(values, klo, khi, tree):  # pragma: no cover - compiled
    """Build in ``tree[1:2w]`` a bottom-up segment tree of the maxima of ``values[klo:khi]``
    (``w = khi - klo`` leaves at ``tree[w:2w]``, any ``w``): ``_tree_max`` reads a range."""
    w = khi - klo
    for x in range(w):
        tree[w + x] = values[klo + x]
    for x in range(w - 1, 0, -1):
        tree[x] = tree[2 * x] if tree[2 * x] > tree[2 * x + 1] else tree[2 * x + 1]


@_helper
def _tree_max(tree, w, lo, hi):  # pragma: no cover - compiled
    """The largest of the leaves ``[lo, hi)`` (counted from ``klo``) of ``_max_tree``'s tree, 0 for none."""
    best = np.int64(0)
    lo += w
    hi += w
    while lo < hi:
        if lo & 1:
            if tree[lo] > best:
                best = tree[lo]
            lo += 1
        if hi & 1:
            hi -= 1
            if tree[hi] > best:
                best = tree[hi]
        lo >>= 1
        hi >>= 1
    return best


@_helper
def _rerank(members, begin, end, preorder, buffers, placement, sections, rank_trail,
            rank_top, tree):  # pragma: no cover - compiled
    """Re-rank the buffers ``members[begin:end]`` of one group by the key ``(pre, -T, post)``.

    T is the largest total of *unplaced* buffer bytes over the sections a buffer spans, taken
    now rather than at the start: inside a group of a decomposition the placed buffers no
    longer weigh on it. The group keeps the set of rank values it had, handed out in the new
    order, so ranks stay distinct across groups. Old ranks go on the trail; returns
    ``(new trail top, hash delta a, hash delta b)``.

    T is read section by section, or from a segment tree of the sections' totals (``tree``,
    scratch of twice the sections) when the group's lifetimes add up to far more sections
    than that costs (``_tree_worthwhile``): the same values either way. ``tree`` is None when
    no group of the instance can make a tree worthwhile (see :func:`run_search`); numba then
    compiles this without the tree code.
    """
    rank = placement.rank
    g = end - begin
    t_cur = np.empty(g, np.int64)
    post = np.empty(g, np.int64)
    pre = np.empty(g, np.int64)
    old = np.empty(g, np.int64)
    klo = sections.free.shape[0]
    khi = np.int64(0)  # np.int64, not 0: a literal 0 would compile _max_tree and _tree_worthwhile twice
    span = np.int64(0)
    for x in range(g):
        j = members[begin + x]
        span += buffers.last_section[j] - buffers.first_section[j]
        if buffers.first_section[j] < klo:
            klo = buffers.first_section[j]
        if buffers.last_section[j] > khi:
            khi = buffers.last_section[j]
    by_tree = False
    if tree is not None:  # a test of the argument's type: numba drops the branch when it is None
        by_tree = khi > klo and _tree_worthwhile(span, g, khi - klo)
        if by_tree:
            _max_tree(sections.free, klo, khi, tree)
    for x in range(g):
        j = members[begin + x]
        t = 0
        if tree is not None and by_tree:
            t = _tree_max(tree, khi - klo, buffers.first_section[j] - klo, buffers.last_section[j] - klo)
        else:
            for k in range(buffers.first_section[j], buffers.last_section[j]):
                if sections.free[k] > t:
                    t = sections.free[k]
        t_cur[x] = -t
        post[x] = preorder.rerank_post[j]
        pre[x] = preorder.rerank_pre[j]
        old[x] = rank[j]
    order = _lex_order(pre, t_cur, post)  # post is distinct per buffer: the order is unique
    by_old = _lex_order(old, old, old)
    values = np.empty(g, np.int64)
    for x in range(g):
        values[x] = old[by_old[x]]
    delta_a = np.uint64(0)
    delta_b = np.uint64(0)
    for x in range(g):
        j = members[begin + order[x]]
        r_old = rank[j]
        r_new = values[x]
        if r_old == r_new:
            continue
        rank_trail[rank_top, 0] = j
        rank_trail[rank_top, 1] = r_old
        rank_top += 1
        oa, ob = _rank_term(j, r_old, preorder.rank[j])
        na, nb = _rank_term(j, r_new, preorder.rank[j])
        delta_a ^= oa ^ na
        delta_b ^= ob ^ nb
        rank[j] = r_new
    return rank_top, delta_a, delta_b


@_helper
def _pick_candidate(node, switches, capacity, members, buffers, placement,
                    twin_before):  # pragma: no cover - compiled
    """The node's next candidate after the one it tried last, or -1 when none is left.

    Candidates are the unplaced buffers of the node's group, tried in increasing
    ``(position, rank)`` (or rank only without ``lowest_offset_first``); a candidate must fit
    the capacity at its position and, with ``canonical``, keep the canonical order (§5), not
    pass an unplaced pinned buffer, and (``dominance``, §6.3) leave no gap an unplaced buffer
    fits in. Returns ``(buffer, its position, its rank)``.
    """
    best = -1
    best_pos = _BIG
    best_rank = _BIG
    for m in range(node.begin, node.scan_end):
        j = members[m]
        if placement.offset[j] >= 0:
            continue
        twin = twin_before[j]
        if twin >= 0 and placement.offset[twin] < 0:
            continue  # identical buffers are placed in rank order (symmetry breaking)
        p = placement.pos[j]
        r = placement.rank[j]
        if not switches.lowest_offset_first:
            # candidates are tried in increasing rank: skip those already tried
            if r <= node.last_rank or r > best_rank:
                continue
        else:
            # candidates are tried in increasing (offset, rank): skip those already tried
            if p < node.last_pos or (p == node.last_pos and r <= node.last_rank):
                continue
            if p > best_pos or (p == best_pos and r > best_rank):
                continue
        if p + buffers.sizes[j] > capacity:
            continue
        if switches.canonical:
            if p < node.omax or (p == node.omax and r < node.imax):
                continue  # offset or index non-monotonic
            if p > node.fmin:
                continue  # an unplaced fixed buffer would end up below the canonical order
            if p > node.ceiling:
                continue  # section inference would refute it (see ``_ceiling``)
            if switches.dominance and p >= node.hmin:
                continue  # some unplaced buffer fits entirely below: dominated
        best = j
        best_pos = p
        best_rank = r
    return best, best_pos, best_rank


@_helper
def _occupy_sections(i, top, buffers, sections, section_trail, section_top, hash_a,
                     hash_b):  # pragma: no cover - compiled
    """Buffer ``i`` now ends at ``top`` in the sections it spans: raise their tops (trailing the
    old ones), take its bytes out of their unplaced totals and update the state hashes.

    ``section_trail`` must have room for the sections ``i`` spans. Returns
    ``(section trail top, hash a, hash b)``.
    """
    for k in range(buffers.first_section[i], buffers.last_section[i]):
        if buffers.fixed[i] < 0:
            sections.free[k] -= buffers.sizes[i]
        old = sections.top[k]
        hash_a ^= _mix(k, old, _SALT_A)
        hash_b ^= _mix(k, old, _SALT_B)
        if old < top:
            section_trail[section_top, 0] = k
            section_trail[section_top, 1] = old
            section_top += 1
            sections.top[k] = top
        sections.unplaced[k] -= 1
        if sections.unplaced[k] > 0:
            hash_a ^= _mix(k, sections.top[k], _SALT_A)
            hash_b ^= _mix(k, sections.top[k], _SALT_B)
    return section_top, hash_a, hash_b


@_helper
def _unplace(placed, placed_top, mark, buffers, placement, sections):  # pragma: no cover - compiled
    """Take the buffers placed after ``mark`` off again (their sections count them unplaced)."""
    while placed_top > mark:
        placed_top -= 1
        j = placed[placed_top]
        placement.offset[j] = -1
        for k in range(buffers.first_section[j], buffers.last_section[j]):
            sections.unplaced[k] += 1
            if buffers.fixed[j] < 0:
                sections.free[k] += buffers.sizes[j]
    return placed_top


@_helper
def _raise_overlapping(node, i, members, buffers, placement, position_trail,
                       position_top):  # pragma: no cover - compiled
    """After placing ``i``: raise the position of every unplaced free buffer of the group that
    overlaps it in time to above it (aligned), and check that no unplaced pinned buffer that
    overlaps it in time overlaps it in address.

    ``position_trail`` must have room for the group. Returns ``(alive, hat, trail top)``;
    ``hat`` is whether ``i`` overlaps any unplaced buffer in time.
    """
    p = placement.offset[i]
    top = p + buffers.sizes[i]
    lo_i = buffers.first_section[i]
    hi_i = buffers.last_section[i]
    hat = False
    for m in range(node.begin, node.end):
        q = members[m]
        if placement.offset[q] >= 0 or buffers.first_section[q] >= hi_i or buffers.last_section[q] <= lo_i:
            continue
        hat = True
        if buffers.fixed[q] >= 0:
            # a pinned buffer overlapping i in time must not overlap it in address
            if buffers.fixed[q] < top and p < buffers.fixed[q] + buffers.sizes[q]:
                return False, hat, position_top
        else:
            a = buffers.aligns[q]
            raised = (top + a - 1) // a * a
            if placement.pos[q] < raised:
                position_trail[position_top, 0] = q
                position_trail[position_top, 1] = placement.pos[q]
                position_top += 1
                placement.pos[q] = raised
    return True, hat, position_top


@_helper
def _pinned_order_holds(node, i, members, buffers, placement):  # pragma: no cover - compiled
    """With ``canonical``: every unplaced pinned buffer of the group still comes after ``i``
    in the canonical (offset, rank) order, so it can still be placed."""
    p = placement.offset[i]
    for m in range(node.begin, node.end):
        q = members[m]
        if placement.offset[q] < 0 and buffers.fixed[q] >= 0:
            if buffers.fixed[q] < p or (buffers.fixed[q] == p and placement.rank[q] < placement.rank[i]):
                return False
    return True


@_helper
def _staircase_holds(node, floor, capacity, section_start, section_buffers, buffers, placement, sections,
                     stair_pos, stair_size):  # pragma: no cover - compiled
    """Per section of the node: the unplaced free buffers at or above any of their positions
    ``v`` must all fit above ``v``: ``v + (their sizes) <= capacity`` for every such ``v``.
    Positions count from at least the section top and ``floor``. Returns
    ``(holds, buffers visited)``.
    """
    visited = 0
    for k in range(node.klo, node.khi):
        if sections.free[k] == 0:
            continue
        base = sections.top[k]
        if floor > base:
            base = floor
        m = 0
        for e in range(section_start[k], section_start[k + 1]):
            q = section_buffers[e]
            visited += 1
            if placement.offset[q] >= 0 or buffers.fixed[q] >= 0:
                continue
            v = placement.pos[q]
            if v < base:
                v = base
            # insertion sort by position, highest first
            w = m
            while w > 0 and stair_pos[w - 1] < v:
                stair_pos[w] = stair_pos[w - 1]
                stair_size[w] = stair_size[w - 1]
                w -= 1
            stair_pos[w] = v
            stair_size[w] = buffers.sizes[q]
            m += 1
        above = 0
        for w in range(m):
            above += stair_size[w]
            if stair_pos[w] + above > capacity:
                return False, visited
    return True, visited


@_helper
def _lowest_over_spans(node, members, buffers, placement, tree, effective):  # pragma: no cover - compiled
    """``effective[k]`` for the node's sections ``[klo, khi)``: the lowest position of an unplaced
    free buffer of its group live in section ``k`` (``_BIG`` for none), in O(buffers x depth +
    sections): each buffer lowers O(depth) nodes of a segment tree over the sections (any
    number of leaves, ``tree[w:2w]``), then every node hands its value down to its children."""
    klo = node.klo
    w = node.khi - klo
    for x in range(2 * w):
        tree[x] = _BIG
    for m in range(node.begin, node.end):
        q = members[m]
        if placement.offset[q] >= 0 or buffers.fixed[q] >= 0:
            continue
        v = placement.pos[q]
        lo = buffers.first_section[q] - klo + w
        hi = buffers.last_section[q] - klo + w
        while lo < hi:
            if lo & 1:
                if v < tree[lo]:
                    tree[lo] = v
                lo += 1
            if hi & 1:
                hi -= 1
                if v < tree[hi]:
                    tree[hi] = v
            lo >>= 1
            hi >>= 1
    for x in range(1, w):
        if tree[x] < tree[2 * x]:
            tree[2 * x] = tree[x]
        if tree[x] < tree[2 * x + 1]:
            tree[2 * x + 1] = tree[x]
    for x in range(w):
        effective[klo + x] = tree[w + x]


@_helper
def _sections_hold(node, floor, effective_height, capacity, members, buffers, placement, sections,
                   effective, tree):  # pragma: no cover - compiled
    """Section inference (§6.2, eq. 3): in every section of the node the unplaced free
    buffers must stack above its height, ``height + unplaced bytes <= capacity``.

    The height is the section's top, raised to ``floor`` (the largest placed offset with
    ``offset_floor``, else 0) and, with ``effective_height``, to the lowest position of an
    unplaced free buffer of the node's group live there (``effective`` is scratch space).
    Those lowest positions are taken section by section, or through a segment tree (``tree``,
    scratch of twice the sections, or None, as in ``_rerank``) when the group's lifetimes add
    up to far more sections than that costs (``_tree_worthwhile``): the same values either way.
    """
    if effective_height:
        span = 0
        count = 0
        for m in range(node.begin, node.end):
            q = members[m]
            if placement.offset[q] < 0 and buffers.fixed[q] < 0:
                span += buffers.last_section[q] - buffers.first_section[q]
                count += 1
        by_tree = False
        if tree is not None:  # numba drops the branch when ``tree`` is None
            by_tree = node.khi > node.klo and _tree_worthwhile(span, count, node.khi - node.klo)
            if by_tree:
                _lowest_over_spans(node, members, buffers, placement, tree, effective)
        if not by_tree:
            for k in range(node.klo, node.khi):
                effective[k] = _BIG
            for m in range(node.begin, node.end):
                q = members[m]
                if placement.offset[q] >= 0 or buffers.fixed[q] >= 0:
                    continue
                v = placement.pos[q]
                for k in range(buffers.first_section[q], buffers.last_section[q]):
                    if v < effective[k]:
                        effective[k] = v
    for k in range(node.klo, node.khi):
        if sections.free[k] == 0:
            continue
        height = sections.top[k]
        if floor > height:
            height = floor
        if effective_height and effective[k] > height:
            height = effective[k]
        if height + sections.free[k] > capacity:
            return False
    return True


@_helper
def _unplaced_offsets(n):  # pragma: no cover - compiled
    """An offset of -1 (unplaced) for each of ``n`` buffers: what a search stopped before it began returns."""
    offsets = np.empty(n, np.int64)
    for j in range(n):
        offsets[j] = -1
    return offsets


@_helper
def _stacks(by_start, span_total):  # pragma: no cover - compiled
    """The stacks of the search, sized for a start and grown (``_grow``, ``_grow_trail``) when a
    node needs more: ``(section_trail, position_trail, rank_trail, placed, members, bounds,
    frames)``. ``members`` starts with the root group, every buffer by start time (see the
    module docstring's "Frames")."""
    n = by_start.shape[0]
    members = np.empty(4 * n + 16, np.int64)
    for x in range(n):
        members[x] = by_start[x]
    return (np.empty((min(span_total + 1, 4 * n + 16), 2), np.int64), np.empty((4 * n + 16, 2), np.int64),
            np.empty((n + 16, 2), np.int64), np.empty(n + 1, np.int64), members, np.empty(4 * n + 16, np.int64),
            np.empty((2 * n + 8, _FRAME_FIELDS), np.int64))


@_helper
def _interrupted(stop, deadline):  # pragma: no cover - compiled
    """Read the clock (once per ``CLOCK_WORK`` units of work, see the module docstring): CANCELLED
    when another thread set ``stop[0]``, TIME_LIMIT past a ``deadline`` (negative: none), else -1.
    The clock is read even without a deadline: Python handles Ctrl-C during the reading."""
    if stop[0] != 0:
        return CANCELLED
    now = clock()
    if deadline >= 0 and now > deadline:
        return TIME_LIMIT
    return -1


@_inlined
def _close_frame(frames, d, failed, table_a, table_b):  # pragma: no cover - compiled
    """Leave frame ``d``: with ``failed`` its state was searched to exhaustion, so the failed-state
    table remembers its key (see the module docstring). Returns the frame's ``(members top,
    bounds top)`` marks, which free the groups it pushed."""
    if failed:
        _remember(table_a, table_b, np.uint64(frames[d, _F_KEY_A]), np.uint64(frames[d, _F_KEY_B]))
    return frames[d, _F_MEMBERS_MARK], frames[d, _F_BOUNDS_MARK]


@_inlined
def _push_marks(frames, depth, hash_a, hash_b, key_a, key_b, omax, imax, section_top, position_top, placed_top,
                members_top, bounds_top, rank_top):  # pragma: no cover - compiled
    """Open frame ``depth`` with what either kind of frame keeps: the state hashes to restore,
    the state key for the failed-state table, the canonical bounds on entry and the tops of
    every trail and stack (the undo marks). The hashes go in as int64 of the same bits."""
    frames[depth, _F_HASH_A] = np.int64(hash_a)
    frames[depth, _F_HASH_B] = np.int64(hash_b)
    frames[depth, _F_KEY_A] = np.int64(key_a)
    frames[depth, _F_KEY_B] = np.int64(key_b)
    frames[depth, _F_OMAX] = omax
    frames[depth, _F_IMAX] = imax
    frames[depth, _F_SECTION_MARK] = section_top
    frames[depth, _F_POSITION_MARK] = position_top
    frames[depth, _F_PLACED_MARK] = placed_top
    frames[depth, _F_MEMBERS_MARK] = members_top
    frames[depth, _F_BOUNDS_MARK] = bounds_top
    frames[depth, _F_RANK_MARK] = rank_top


@_inlined
def _open_sequence(frames, depth, count, runs, begin, end, members, members_top, bounds, bounds_top, rerank,
                   preorder, buffers, placement, sections, rank_trail, rank_top, tree, hash_a,
                   hash_b):  # pragma: no cover - compiled
    """Make frame ``depth`` a sequence frame: dynamic temporal decomposition (§7) splits the
    group ``members[begin:end]`` (``count`` unplaced buffers) into its ``runs`` groups that do
    not overlap in time, copied above ``members_top``, their bounds pushed onto ``bounds``
    (``_split_into_runs``). With ``rerank`` (``rerank_groups`` with ``restart_groups``) each
    group re-ranks its buffers (``_rerank``), which changes the state hashes. Returns
    ``(members, bounds, rank_trail, members top, bounds top, rank trail top, hash a, hash b)``:
    the three stacks grown when they had no room.
    """
    members = _grow(members, members_top + count)
    bounds = _grow(bounds, bounds_top + 2 * runs)
    if rerank:
        rank_trail = _grow_trail(rank_trail, rank_top + count)
    frames[depth, _F_KIND] = _SEQUENCE
    frames[depth, _F_GROUP] = 0
    frames[depth, _F_GROUPS] = runs
    frames[depth, _F_BEGIN] = bounds_top
    members_top, bounds_top = _split_into_runs(members, begin, end, members_top, bounds, bounds_top, buffers,
                                               placement)
    if rerank:
        for grp in range(runs):
            first = bounds[frames[depth, _F_BEGIN] + 2 * grp]
            last = bounds[frames[depth, _F_BEGIN] + 2 * grp + 1]
            rank_top, da, db = _rerank(members, first, last, preorder, buffers, placement, sections, rank_trail,
                                       rank_top, tree)
            hash_a ^= da
            hash_b ^= db
    return members, bounds, rank_trail, members_top, bounds_top, rank_top, hash_a, hash_b


@_inlined
def _open_normal(frames, depth, begin, end, klo, khi, hmin, fmin, ceiling):  # pragma: no cover - compiled
    """Make frame ``depth`` a normal frame, a search node over the group ``members[begin:end]``:
    record the node's bounds once (they hold for every candidate, see ``_Node``) with no
    candidate tried yet."""
    frames[depth, _F_KIND] = _NORMAL
    frames[depth, _F_BEGIN] = begin
    frames[depth, _F_END] = end
    frames[depth, _F_LAST_POS] = -1
    frames[depth, _F_LAST_RANK] = -1
    frames[depth, _F_HATLESS] = 0
    frames[depth, _F_KLO] = klo
    frames[depth, _F_KHI] = khi
    frames[depth, _F_HMIN] = hmin
    frames[depth, _F_FMIN] = fmin
    frames[depth, _F_CEILING] = ceiling


@_inlined
def _frame_node(frames, d):  # pragma: no cover - compiled
    """The ``_Node`` of normal frame ``d``. Hatless pruning: when the candidate refuted last
    overlapped no unplaced buffer, any completion of the node could move it down to its floor
    and place it first; it had none, so neither has the node, and the node looks at no further
    candidate (``scan_end = begin``)."""
    row = frames[d]
    return _Node(begin=row[_F_BEGIN], end=row[_F_END], scan_end=row[_F_BEGIN] if row[_F_HATLESS] else row[_F_END],
                 omax=row[_F_OMAX], imax=row[_F_IMAX], last_pos=row[_F_LAST_POS], last_rank=row[_F_LAST_RANK],
                 klo=row[_F_KLO], khi=row[_F_KHI], hmin=row[_F_HMIN], fmin=row[_F_FMIN], ceiling=row[_F_CEILING])


@_inlined
def _undo_placements(frames, d, buffers, placement, sections, section_trail, section_top, position_trail,
                     position_top, placed, placed_top):  # pragma: no cover - compiled
    """Take back everything placed since frame ``d`` opened: the section tops and positions
    from their trails, then the placed buffers. Returns ``(section top, position top, placed
    top)``, the frame's marks."""
    section_top = _restore(sections.top, section_trail, section_top, frames[d, _F_SECTION_MARK])
    position_top = _restore(placement.pos, position_trail, position_top, frames[d, _F_POSITION_MARK])
    placed_top = _unplace(placed, placed_top, frames[d, _F_PLACED_MARK], buffers, placement, sections)
    return section_top, position_top, placed_top


@_helper
def _next_group(frames, d, bounds, restart_groups):  # pragma: no cover - compiled
    """Sequence frame ``d`` moves on to its next group: returns ``(more, begin, end, omax, imax)``,
    whether one is left, its run of ``members`` and the canonical bounds it starts from
    (``_group_bounds``)."""
    frames[d, _F_GROUP] += 1
    if frames[d, _F_GROUP] >= frames[d, _F_GROUPS]:
        return False, np.int64(0), np.int64(0), np.int64(0), np.int64(-1)
    at = frames[d, _F_BEGIN] + 2 * frames[d, _F_GROUP]
    omax, imax = _group_bounds(frames[d, _F_OMAX], frames[d, _F_IMAX], restart_groups)
    return True, bounds[at], bounds[at + 1], omax, imax


@njit(cache=True, nogil=True)
def search(instance, preorder, switches, capacity, node_limit, deadline, stop, table, effective, tree,
           stairs):  # pragma: no cover - compiled
    """Depth-first search over canonical partial solutions (call it through :func:`run_search`).

    Returns ``(status, offsets, nodes, backtracks, splits, table_hits)``; ``status`` is SOLVED,
    EXHAUSTED (the whole space was searched: infeasible), NODE_LIMIT, TIME_LIMIT or CANCELLED
    (another thread set ``stop[0]``, a one-element int64 array, to non-zero). ``deadline`` is a
    ``work_clock()`` value, or a negative number for none. ``switches.table_bits > 0``
    turns on the failed-state ``table`` (see the module docstring). ``effective``, ``tree``
    and ``stairs`` are the scratch arrays from :func:`scratch`; ``stairs`` is not None exactly
    when ``switches.staircase`` is on.

    The search is a state machine over the frame stack: _OPEN a node on a group, _NEXT
    candidate of the top frame, _FAIL back to the frame below, _SUCCEED on to the next group.
    """
    n = instance.sizes.shape[0]
    if deadline >= 0 and clock() > deadline:
        return TIME_LIMIT, _unplaced_offsets(n), 0, 0, 0, 0
    buffers = _Buffers(sizes=instance.sizes, aligns=instance.aligns, fixed=instance.fixed,
                       first_section=instance.first_section, last_section=instance.last_section)
    placement, sections = _root_state(buffers, preorder.rank, instance.n_sections)
    offset = placement.offset  # bound once: reading a record's field in the loop costs a reference count
    rank = placement.rank
    rank0 = preorder.rank
    hash_a, hash_b = _root_hash(instance.hash_key_a, instance.hash_key_b, sections)
    use_table = switches.table_bits > 0
    table_a = table[0]
    table_b = table[1]
    # the set-up walks every buffer's sections once: on a large instance that can outlast the deadline
    if deadline >= 0 and clock() > deadline:
        return TIME_LIMIT, offset, 0, 0, 0, 0
    work = 0  # units of work since the clock was last read
    section_trail, position_trail, rank_trail, placed, members, bounds, frames = _stacks(instance.by_start,
                                                                                        instance.sections_spanned)
    # np.int64, not 0: a literal 0 would compile the helpers twice
    section_top, position_top, rank_top, placed_top, bounds_top = (np.int64(0), np.int64(0), np.int64(0),
                                                                   np.int64(0), np.int64(0))
    members_top = n
    depth = np.int64(0)
    nodes, backtracks, splits, hits = 0, 0, 0, 0
    state = _OPEN
    g_begin, g_end, omax, imax = np.int64(0), n, np.int64(0), np.int64(-1)

    while True:
        if work >= CLOCK_WORK:
            work = 0
            status = _interrupted(stop, deadline)
            if status >= 0:
                return status, offset, nodes, backtracks, splits, hits

        if state == _OPEN:  # open a node on the group members[g_begin:g_end]
            work += g_end - g_begin + 1
            count, runs, klo, khi, hmin, fmin = _survey(members, g_begin, g_end, instance.n_sections, buffers,
                                                        placement)
            if count == 0:
                state = _SUCCEED
                continue
            key_a = hash_a ^ _mix(omax, imax + 1, _SALT_C)
            key_b = hash_b ^ _mix(imax + 1, omax, _SALT_C)
            if use_table and _table_holds(table_a, table_b, key_a, key_b):
                hits += 1
                state = _FAIL
                continue
            _push_marks(frames, depth, hash_a, hash_b, key_a, key_b, omax, imax, section_top, position_top,
                        placed_top, members_top, bounds_top, rank_top)
            if switches.decomposition and runs > 1:
                splits += 1
                work += count
                members, bounds, rank_trail, members_top, bounds_top, rank_top, hash_a, hash_b = _open_sequence(
                    frames, depth, count, runs, g_begin, g_end, members, members_top, bounds, bounds_top,
                    switches.rerank_groups and switches.restart_groups, preorder, buffers, placement, sections,
                    rank_trail, rank_top, tree, hash_a, hash_b)
                g_begin = bounds[frames[depth, _F_BEGIN]]
                g_end = bounds[frames[depth, _F_BEGIN] + 1]
                omax, imax = _group_bounds(omax, imax, switches.restart_groups)
                depth += 1
                continue  # open the first group; it is one run, so it becomes a normal frame
            _open_normal(frames, depth, g_begin, g_end, klo, khi, hmin, fmin,
                         _ceiling(switches.offset_ceiling, capacity, sections.free, klo, khi))
            depth += 1
            state = _NEXT

        elif state == _NEXT:  # undo the top node's last candidate, place its next one
            d = depth - 1
            node = _frame_node(frames, d)
            work += node.end - node.begin + node.khi - node.klo + 1
            # undo the node's previous candidate, if any (written out, not a helper: see ``_inlined``)
            section_top = _restore(sections.top, section_trail, section_top, frames[d, _F_SECTION_MARK])
            position_top = _restore(placement.pos, position_trail, position_top, frames[d, _F_POSITION_MARK])
            placed_top = _unplace(placed, placed_top, frames[d, _F_PLACED_MARK], buffers, placement, sections)
            hash_a = np.uint64(frames[d, _F_HASH_A])
            hash_b = np.uint64(frames[d, _F_HASH_B])
            omax = node.omax
            imax = node.imax
            i, p, r = _pick_candidate(node, switches, capacity, members, buffers, placement, preorder.twin_before)
            if i < 0:  # no candidate left: the node fails
                members_top, bounds_top = _close_frame(frames, d, use_table, table_a, table_b)
                depth -= 1
                state = _FAIL
                continue
            nodes += 1
            if nodes > node_limit:
                return NODE_LIMIT, offset, nodes, backtracks, splits, hits
            frames[d, _F_LAST_POS] = p
            frames[d, _F_LAST_RANK] = r
            # place it: the buffer, then the sections it spans, then the positions of the group it raises
            offset[i] = p
            placed[placed_top] = i
            placed_top += 1
            hash_a ^= instance.hash_key_a[i]
            hash_b ^= instance.hash_key_b[i]
            if rank[i] != rank0[i]:
                da, db = _rank_term(i, rank[i], rank0[i])
                hash_a ^= da
                hash_b ^= db
            section_trail = _grow_trail(section_trail,
                                        section_top + instance.last_section[i] - instance.first_section[i])
            section_top, hash_a, hash_b = _occupy_sections(i, p + instance.sizes[i], buffers, sections, section_trail,
                                                           section_top, hash_a, hash_b)
            position_trail = _grow_trail(position_trail, position_top + node.end - node.begin)
            alive, hat, position_top = _raise_overlapping(node, i, members, buffers, placement, position_trail,
                                                          position_top)
            frames[d, _F_HATLESS] = 1 if switches.hatless and not hat else 0
            new_omax = p if switches.canonical else 0
            if alive and switches.canonical and node.fmin < _BIG:
                alive = _pinned_order_holds(node, i, members, buffers, placement)
            floor = new_omax if switches.offset_floor else 0
            if stairs is not None:  # switches.staircase; numba drops whichever branch the type rules out
                if alive and switches.section_inference:
                    alive, visited = _staircase_holds(node, floor, capacity, instance.section_start,
                                                      instance.section_buffers, buffers, placement, sections,
                                                      stairs[0], stairs[1])
                    work += visited
            elif alive and switches.section_inference:
                alive = _sections_hold(node, floor, switches.effective_height, capacity, members, buffers, placement,
                                       sections, effective, tree)
            if not alive:
                backtracks += 1
                continue  # state stays _NEXT: undo and try the next candidate
            g_begin = node.begin
            g_end = node.end
            omax = new_omax
            imax = rank[i]
            state = _OPEN

        elif state == _FAIL:  # the node just opened or left has no solution
            if depth == 0:
                return EXHAUSTED, offset, nodes, backtracks, splits, hits
            d = depth - 1
            if frames[d, _F_KIND] == _NORMAL:
                backtracks += 1
                state = _NEXT
                continue
            # One group of a decomposition has no solution: neither has the node.
            members_top, bounds_top = _close_frame(frames, d, use_table, table_a, table_b)
            hash_a = np.uint64(frames[d, _F_HASH_A])
            hash_b = np.uint64(frames[d, _F_HASH_B])
            rank_top = _restore(rank, rank_trail, rank_top, frames[d, _F_RANK_MARK])
            section_top, position_top, placed_top = _undo_placements(frames, d, buffers, placement, sections,
                                                                     section_trail, section_top, position_trail,
                                                                     position_top, placed, placed_top)
            depth -= 1

        else:  # _SUCCEED: the group just opened has every member placed
            while depth > 0 and frames[depth - 1, _F_KIND] == _NORMAL:
                depth -= 1
            if depth == 0:
                return SOLVED, offset, nodes, backtracks, splits, hits
            d = depth - 1
            more, g_begin, g_end, omax, imax = _next_group(frames, d, bounds, switches.restart_groups)
            if more:
                state = _OPEN
            else:  # every group solved: so is the node
                members_top = frames[d, _F_MEMBERS_MARK]
                bounds_top = frames[d, _F_BOUNDS_MARK]
                depth -= 1

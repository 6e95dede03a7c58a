"""``minimalloc``: exact search over canonical solutions (Moffitt, ASPLOS '23, §5–7).

A solution is *canonical* when buffers are placed in non-decreasing offset order (offset
monotonic, §5) with ties broken by a fixed buffer rank (index monotonic), each at the lowest
offset above the placed buffers it overlaps in time (its "floor", aligned up). Every
feasible instance has a canonical solution (push every buffer down until it rests on another
and sort), so searching only canonical partial solutions stays complete while visiting each
packing once. On top of that the search prunes with:

* **section inference** (§6.2, eq. 3): in every cross section the unplaced buffers must stack
  above the section's current height, so ``height + unplaced bytes <= capacity``; the height is
  strengthened by the largest offset placed so far (``offset_floor``: nothing can go below it
  any more) and by the lowest floor of an unplaced buffer in the section (``effective_height``);
* **dominance** (§6.3): a candidate is skipped when some unplaced buffer would fit entirely
  below it at its own floor, since filling that gap first is never worse;
* **dynamic temporal decomposition** (§7): when the unplaced buffers of a node split into
  groups that do not overlap in time, each group is solved on its own and a failing group
  fails the node without backtracking into the others;
* **hatless pruning**: when a refuted candidate overlaps no unplaced buffer in time, the node
  fails: in any completion it could be moved down to its floor and placed first;
* an **offset ceiling** (our addition, a consequence of eq. 3 with the offset floor): a
  candidate placed at ``p`` lifts every section of its group to at least ``p`` plus the bytes
  that were unplaced there, so no candidate above ``capacity - `` the group's largest unplaced
  total can pass section inference. Such candidates are skipped without being placed, and as
  candidates come by increasing offset the node ends at the first one. The depth-first order
  and the placement found stay the same, but on the challenging suite most placements a
  solving run made were such candidates, each costing a full placement and section check and
  counted as a node against the portfolio's limits (the counts before and after:
  ``docs/results/allocators.md``, "Fitting the challenging suite");
* a **portfolio of static preorders** with restarts: the rank that breaks ties is taken from
  several keys built from the largest section total a buffer spans (T), its width (W), area
  (A) and size (S), by default TWA, TAW and WAT; each is tried with a node limit that doubles
  every round (starting from ``2n``) until one finishes. The search is heavy-tailed: on the
  challenging suite each instance fell to one key within ~10^5 nodes and to the others not
  within 4*10^6 (counted before the offset ceiling, which no longer counts the candidates it
  skips), so the restarts matter more than the keys' order. With several cores the
  runs of a round go to threads; the answer stays that of the sequential portfolio;
* **re-ranked groups** (as the reference implementation does): when a decomposition splits a
  node, each group ranks its buffers by T over the bytes still *unplaced*, not the initial T;
  on the suite this is what takes E and I from time-outs to seconds;
* a **table of failed states** (our addition): a node's future depends only on its unplaced
  buffers, the section tops where they live and the canonical bounds, so a state searched to
  exhaustion is remembered (hashed) and pruned where it recurs. Each preorder keeps its table
  from one round of the portfolio to the next (``keep_tables``): a restart with a doubled node
  limit follows the same depth-first path, and where the previous round had exhausted a subtree
  it now finds the subtree's root in the table, so each round goes on from where the last one
  stopped instead of searching its nodes again (on the suite that halves the nodes);
* **group restarts**: the groups of a decomposition are solved once each, so each only needs
  to be canonical within itself and restarts its offset order at 0 (so does the reference).

Fixed offsets take part in the canonical order at their pinned offset; a node where a pinned
buffer can no longer be placed (something lies over it, or the canonical order has passed
it) is a dead end. Alignment rounds every floor up. The inner loop is the numba code in
``allocator.methods.minimalloc_kernel``; this module prepares its arrays and runs the portfolio.

Options are one frozen dataclass, a field per technique, so each can be switched off for
ablations. ``canonical=False`` also disables ``dominance``, ``offset_floor`` and
``offset_ceiling``, whose proofs rely on the canonical order.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from allocator.core.kernel_clock import work_clock
from allocator.core.problem import InvalidProblemError, MinimizeResult, Problem, Solution
from allocator.core.progress import Progress, peak_granularity
from allocator.core.registry import MethodOutput, MinimizeRequest, starting_heuristics
from allocator.core.sections import sweep
from allocator.core.validate import check
from allocator.methods import minimalloc_kernel as kernel
from allocator.methods.minimalloc_kernel import MAX_VALUE, Preorder, SearchInstance, SearchResult, SearchSwitches

#: letters of a preorder key, each sorting descending: T = largest section total the buffer
#: spans, W = width (lifetime), A = area (size x lifetime), S = size
PREORDER_LETTERS = "TWAS"
DEFAULT_PREORDERS = ("TWA", "TAW", "WAT")


@dataclass(frozen=True)
class MiniMallocOptions:
    """Switches for each technique of the search (all on by default), and its budget."""

    canonical: bool = True  #: offset + index monotonicity (§5, §6.1)
    section_inference: bool = True  #: eq. (3) on every cross section (§6.2)
    offset_floor: bool = True  #: strengthen section heights by the largest placed offset (§6.2)
    effective_height: bool = True  #: ... and by the lowest floor of an unplaced buffer (§6.2)
    dominance: bool = True  #: never leave a gap an unplaced buffer could fill (§6.3)
    decomposition: bool = True  #: dynamic temporal decomposition (§7)
    restart_groups: bool = True  #: each group of a decomposition restarts its canonical order at offset 0
    failed_state_table: bool = True  #: remember states searched to exhaustion (hashed) and prune their recurrences
    #: each preorder of the portfolio keeps its failed-state table from one round to the next, so a
    #: restart skips the subtrees it exhausted before instead of searching them again (ours)
    keep_tables: bool = True
    #: per section, v + sizes of unplaced buffers at or above v <= capacity for every v (off: on the
    #: challenging suite it costs more time than it saves); needs ``effective_height``
    staircase: bool = False
    #: the groups of a decomposition re-rank their buffers by the T of the unplaced buffers
    #: (the key's other letters as before); needs ``restart_groups`` and a key with T
    rerank_groups: bool = True
    twins: bool = True  #: identical free buffers (lifetime, size, alignment) are placed in rank order
    #: when a refuted candidate overlaps no unplaced buffer, its node fails (it could have gone
    #: first in any completion); needs ``lowest_offset_first``
    hatless: bool = True
    lowest_offset_first: bool = True  #: try a node's candidates by offset, then rank (§7); off: by rank only
    #: skip, without placing them, candidates above capacity minus the group's most unplaced bytes in
    #: a section (section inference with the offset floor would refute them; ours); needs both
    offset_ceiling: bool = True
    #: where buffers live over many sections, section inference's effective heights and the groups'
    #: re-ranking read them through segment trees instead of section by section, when that costs
    #: less (the same values, so the same search; ours: on millions of long, overlapping lifetimes,
    #: walking every section made one node cost seconds); off: always section by section
    section_trees: bool = True
    portfolio: bool = True  #: try every preorder key with doubling node limits; off: the first key only
    preorders: tuple[str, ...] = DEFAULT_PREORDERS  #: static preorders (letters of PREORDER_LETTERS), in turn
    initial_node_factor: int = 2  #: first node limit is this times the number of buffers
    #: per round, this many seeded random perturbations of the keys (more restarts with other
    #: orders); off by default: on the challenging suite they cost more rounds than they save
    random_preorders: int = 0
    seed: int = 0  #: seed of those perturbations (same seed, same answer)
    #: threads that run a round of the portfolio (0: one per core); the answer does not depend on it
    workers: int = 0
    #: the most search nodes of the whole portfolio (0: no limit). Unlike a time limit it makes
    #: a search that gives up deterministic: the same nodes are searched on any machine, with
    #: any number of workers. Reaching it is reported as status "timeout" with that reason.
    node_limit: int = 0

    def __post_init__(self) -> None:
        unknown = [k for k in self.preorders if not k or set(k) - set(PREORDER_LETTERS)]
        if unknown or not self.preorders:
            raise InvalidProblemError(
                f"unknown preorder key(s) {unknown}: use strings of the letters {PREORDER_LETTERS}, e.g. 'TWA'"
            )
        if self.random_preorders < 0:
            raise InvalidProblemError("random_preorders must be >= 0")
        if self.workers < 0:
            raise InvalidProblemError("workers must be >= 0 (0: one per core)")
        if self.initial_node_factor < 1:
            raise InvalidProblemError("initial_node_factor must be >= 1")
        if self.node_limit < 0:
            raise InvalidProblemError(f"node_limit must be >= 0 (0: no limit), got {self.node_limit}")


def table_bits(n_buffers: int) -> int:
    """log2 of the slots of the failed-state table for ``n_buffers`` buffers: 4096 slots per
    buffer, rounded to a power of two, between 2**12 and 2**22 (64 MiB for the two hashes).

    >>> table_bits(1), table_bits(450), table_bits(10**6)
    (12, 21, 22)
    """
    return int(min(22, max(12, np.ceil(np.log2(max(n_buffers, 1))) + 12)))


def kernel_switches(options: MiniMallocOptions, n_buffers: int) -> SearchSwitches:
    """The compiled search's switches for ``options`` on a problem of ``n_buffers`` buffers.

    This is the one place where options become kernel flags, and where the dependencies
    between techniques are resolved: ``dominance`` and ``offset_floor`` rely on the canonical
    order, the offset ceiling on section inference with the offset floor, the staircase bound
    on ``effective_height``, hatless pruning on ``lowest_offset_first``, and re-ranking groups
    on ``restart_groups`` (a preorder without T turns re-ranking off for its own runs, see
    :meth:`PreparedProblem.preorder`).

    >>> s = kernel_switches(MiniMallocOptions(canonical=False, failed_state_table=False), 10)
    >>> s.canonical, s.dominance, s.offset_floor, s.section_inference, s.table_bits
    (False, False, False, True, 0)
    """
    canonical = bool(options.canonical)
    return SearchSwitches(
        canonical=canonical,
        section_inference=bool(options.section_inference),
        offset_floor=bool(options.offset_floor and canonical),
        effective_height=bool(options.effective_height),
        staircase=bool(options.staircase and options.effective_height),
        dominance=bool(options.dominance and canonical),
        decomposition=bool(options.decomposition),
        restart_groups=bool(options.restart_groups),
        rerank_groups=bool(options.rerank_groups and options.restart_groups),
        lowest_offset_first=bool(options.lowest_offset_first),
        hatless=bool(options.hatless and options.lowest_offset_first),
        offset_ceiling=bool(options.offset_ceiling and options.section_inference and options.offset_floor
                            and canonical),
        section_trees=bool(options.section_trees),
        table_bits=table_bits(n_buffers) if options.failed_state_table else 0,
    )


@dataclass
class SearchOutcome:
    """Result of ``canonical_search``: status, offsets when solved, and work done."""

    status: str  #: "solved", "infeasible" (search space exhausted), "timeout" or "node_limit"
    offsets: np.ndarray | None
    nodes: int
    backtracks: int
    runs: int
    splits: int = 0  #: dynamic decompositions performed
    table_hits: int = 0  #: nodes pruned because their state had failed before
    #: nodes of the runs up to the one that decided, as if the runs went one after another: the
    #: same with any number of workers (``nodes`` also counts runs that were stopped), and what
    #: a node budget is charged
    sequential_nodes: int = 0


class PreparedProblem:
    """The flat arrays of a problem, computed once and shared by every run of the portfolio
    (and by every probe of ``allocator.minimize``, which searches one problem at many
    capacities)."""

    def __init__(self, problem: Problem) -> None:
        n = len(problem)
        self.n = n
        self.starts, self.ends, self.sizes, self.aligns, self.fixed = problem.arrays()
        s = sweep(problem)
        self.first_sec, self.last_sec, self.n_sections = s.first_section, s.last_section, s.n_sections
        self.span_total = s.span_total()
        self.members = np.lexsort((np.arange(n), self.starts)).astype(np.int64)
        keys = np.random.default_rng(20231122).integers(0, 2**63, size=(2, n), dtype=np.int64, endpoint=False)
        self.key_a = (keys[0].astype(np.uint64) << np.uint64(1)) | np.uint64(1)
        self.key_b = keys[1].astype(np.uint64) << np.uint64(1)
        self._section_lists: tuple[np.ndarray, np.ndarray] | None = None
        self._preorders: dict[tuple[str, bool], tuple[Preorder, bool]] = {}
        self._identical: tuple[np.ndarray, np.ndarray] | None = None

    def instance(self, staircase: bool) -> SearchInstance:
        """The kernel's view of the problem (the per-section buffer lists only for the staircase bound)."""
        if staircase:
            section_start, section_buffers = self.section_lists()
        else:
            section_start = section_buffers = np.zeros(1, np.int64)
        flat = np.ascontiguousarray
        return SearchInstance(
            sizes=flat(self.sizes), aligns=flat(self.aligns), fixed=flat(self.fixed),
            first_section=flat(self.first_sec), last_section=flat(self.last_sec), by_start=self.members,
            hash_key_a=self.key_a, hash_key_b=self.key_b,
            section_start=section_start, section_buffers=section_buffers, n_sections=int(self.n_sections),
            sections_spanned=int((self.last_sec - self.first_sec).sum()),
        )

    def twin_before(self, rank: np.ndarray) -> np.ndarray:
        """For each free buffer, the identical free buffer just before it in ``rank`` order (-1: none).

        Identical buffers can trade places in any solution, so requiring them to be placed in
        rank order loses no solution and cuts their permutations. Buffers are identical when
        their start, end, size and alignment are; a pinned buffer among them breaks the chain
        where it falls in rank order.
        """
        if self._identical is None:
            kind = _dense_rank([self.starts, self.ends, self.sizes, self.aligns])
            shared = np.nonzero(np.bincount(kind)[kind] > 1)[0]  # buffers with an identical one
            self._identical = (shared, kind[shared])
        shared, kind = self._identical
        before = np.full(self.n, -1, np.int64)
        order = np.lexsort((rank[shared], kind))
        a, b = shared[order[:-1]], shared[order[1:]]
        twins = (kind[order[:-1]] == kind[order[1:]]) & (self.fixed[a] < 0) & (self.fixed[b] < 0)
        before[b[twins]] = a[twins]
        return before

    def section_lists(self) -> tuple[np.ndarray, np.ndarray]:
        """Buffers live in each section as CSR ``(start, buffers)``, for the staircase bound (built on demand)."""
        if self._section_lists is None:
            spans = self.last_sec - self.first_sec
            owner = np.repeat(np.arange(self.n, dtype=np.int64), spans)
            run_start = np.repeat(np.cumsum(spans) - spans, spans)
            section = self.first_sec[owner] + np.arange(len(owner), dtype=np.int64) - run_start
            buffers = owner[np.argsort(section, kind="stable")]
            start = np.zeros(self.n_sections + 1, np.int64)
            np.add.at(start, section + 1, 1)
            self._section_lists = (np.cumsum(start), buffers)
        return self._section_lists

    def _columns(self, key: str, noise: np.ndarray | None) -> list[np.ndarray]:
        width = self.ends - self.starts
        columns = {"T": -self.span_total, "W": -width, "S": -self.sizes}
        if "A" in key:
            columns["A"] = -self.areas()
        keys: list[np.ndarray] = [columns[letter] for letter in key]
        if noise is not None:
            keys[0] = keys[0] * noise
        return keys

    def areas(self) -> np.ndarray:
        """size x lifetime per buffer: exact int64 when the largest product fits in int64, else
        float64 (a size and a lifetime can each reach 2**62 - 1; their product cannot be held
        exactly, and an order by an approximate area only merges areas that differ in their
        last bits, which then fall to the key's next letter)."""
        width = self.ends - self.starts
        if self.n and int(width.max()) * int(self.sizes.max()) > np.iinfo(np.int64).max:
            return width.astype(np.float64) * self.sizes.astype(np.float64)
        return width * self.sizes

    def _order_rank(self, keys: list[np.ndarray]) -> np.ndarray:
        """Rank under ``keys`` ascending, ties by start then index: the position in ``members``
        (sorted by start, then index) is that tie-break in one key instead of two."""
        by_start = np.empty(self.n, np.int64)
        by_start[self.members] = np.arange(self.n)
        order = np.lexsort((by_start, *reversed(keys)))
        rank = np.empty(self.n, np.int64)
        rank[order] = np.arange(self.n)
        return rank

    def rank(self, key: str, noise: np.ndarray | None = None) -> np.ndarray:
        """Rank of every buffer under a preorder key such as ``"TWA"`` (0 = first).

        The first letter is the primary key, all descending; ties go to the earlier start,
        then the lower index. ``noise`` (one factor per buffer) scales the primary key.
        """
        return self._order_rank(self._columns(key, noise))

    def rerank_keys(self, key: str, noise: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """``(pre, post)`` for re-ranking groups by ``(pre, -T now, post)``; None when ``key`` has no T.

        ``pre`` ranks the letters before T (equal values share a rank), ``post`` the letters
        after it, then start and index (all distinct), so that with the T of the whole
        problem the key gives back :meth:`rank`.
        """
        if "T" not in key:
            return None
        keys = self._columns(key, noise)
        t = key.index("T")
        pre = _dense_rank(keys[:t]) if t else np.zeros(self.n, np.int64)
        return pre, self._order_rank(keys[t + 1:])

    def preorder(self, key: str, twins: bool, noise: np.ndarray | None = None,
                 deadline: float | None = None) -> tuple[Preorder, bool] | None:
        """The kernel's record of the preorder ``key`` (with ``noise``, see :meth:`rank`), and
        whether it can re-rank groups (it can when the key has T). Cached when ``noise`` is None.

        ``deadline`` (a ``work_clock()`` value) is read between the steps, each a sort
        of all buffers (about a second each on two million): None when it passed before the
        record was complete. With T in the key the rank is the order of ``(pre, T, post)``,
        the re-ranking keys, which give back :meth:`rank` (``post`` is distinct per buffer):
        a sort of three keys instead of the key's letters, start and index again.
        """
        cached = self._preorders.get((key, twins)) if noise is None else None
        if cached is not None:
            return cached

        def late() -> bool:
            return deadline is not None and work_clock() >= deadline

        rerank = self.rerank_keys(key, noise)
        if late():
            return None
        if rerank is None:
            rank = self.rank(key, noise)
        else:
            pre, post = rerank
            order = np.lexsort((post, self._columns(key, noise)[key.index("T")], pre))
            rank = np.empty(self.n, np.int64)
            rank[order] = np.arange(self.n)
        if twins and late():
            return None
        none = np.full(self.n, -1, np.int64)
        pre, post = rerank if rerank is not None else (none, none)
        made = Preorder(rank=rank, twin_before=self.twin_before(rank) if twins else none, rerank_pre=pre,
                        rerank_post=post), rerank is not None
        if noise is None:
            self._preorders[(key, twins)] = made
        return made


def _dense_rank(keys: list[np.ndarray]) -> np.ndarray:
    """Rank of each position under the tuple ``(keys[0][i], keys[1][i], ...)``, ascending, equal
    tuples sharing a rank and ranks dense (what ``np.unique(..., axis=1, return_inverse=True)``
    gives, in one sort instead of its many).

    >>> _dense_rank([np.array([2, 1, 2, 1]), np.array([5, 7, 5, 6])]).tolist()
    [2, 1, 2, 0]
    """
    order = np.lexsort(tuple(reversed(keys)))
    ordered = np.stack([key[order] for key in keys])
    starts_group = np.concatenate([[False], (ordered[:, 1:] != ordered[:, :-1]).any(axis=0)])
    rank = np.empty(len(order), np.int64)
    rank[order] = np.cumsum(starts_group)
    return rank


def _workers(requested: int) -> int:
    return max(1, requested if requested > 0 else (os.cpu_count() or 1))


def _run_limits(round_limit: int, runs: int, budget_left: int | None) -> list[int]:
    """Node limit of each run of a round: the round's limit, cut so that the runs, one after
    another, spend at most ``budget_left`` nodes. A run that stops at its limit ``c`` has
    counted ``c + 1`` nodes; a limit of -1 means the run is skipped.

    The cuts are fixed before the round runs, so they do not depend on which runs finish
    first on threads: the search stays deterministic under a node budget.

    >>> _run_limits(100, 3, None), _run_limits(100, 3, 150), _run_limits(100, 3, 60)
    ([100, 100, 100], [100, 48, -1], [59, -1, -1])
    """
    if budget_left is None:
        return [round_limit] * runs
    limits = []
    for _ in range(runs):
        cap = max(min(round_limit, budget_left - 1), -1)
        limits.append(cap)
        budget_left -= cap + 1
    return limits


def canonical_search(problem: Problem, capacity: int, options: MiniMallocOptions = MiniMallocOptions(),
                     deadline: float | None = None, prepared: PreparedProblem | None = None,
                     node_limit: int | None = None) -> SearchOutcome:
    """Run the portfolio of canonical searches for ``capacity``; stop at ``deadline``.

    A round runs every preorder with the same node limit; the limit doubles each round. With
    ``options.workers > 1`` the runs of a round go to that many threads (the compiled search
    releases the GIL). The answer is the lowest-numbered run of the first round that solved
    or exhausted the space, exactly as when the runs go one after another: a run that ends
    stops only the runs numbered after it, never those before. So the placement does not
    depend on the number of workers; only the ``nodes`` statistics can (stopped runs count
    the nodes they did).

    ``deadline`` is a ``work_clock()`` value; every run reads the clock often enough to
    stop within milliseconds of it, and no run or round starts after it. ``node_limit`` (or
    ``options.node_limit`` when it is None; 0 is none) bounds the nodes of all runs together:
    status ``"node_limit"`` when it is used up. ``capacity`` must be at most ``MAX_VALUE``.
    Ctrl-C (KeyboardInterrupt) stops the runs within a clock reading and propagates.
    """
    if not 0 < capacity <= MAX_VALUE:
        raise InvalidProblemError(f"capacity {capacity} is outside 1..MAX_VALUE = 2**62 - 1")
    if deadline is not None and work_clock() >= deadline:  # preparing takes seconds on millions of buffers
        return SearchOutcome("timeout", None, 0, 0, 0)
    data = prepared or PreparedProblem(problem)
    if data.n == 0:
        return SearchOutcome("solved", np.zeros(0, np.int64), 0, 0, 0)
    requested = options.node_limit if node_limit is None else node_limit
    budget = requested if requested > 0 else None
    switches = kernel_switches(options, data.n)
    keys = options.preorders if options.portfolio else options.preorders[:1]
    instance = data.instance(switches.staircase)
    rng = np.random.default_rng(options.seed)
    totals = {"nodes": 0, "backtracks": 0, "runs": 0, "splits": 0, "hits": 0, "charged": 0}
    limit = options.initial_node_factor * data.n
    time_limit = -1.0 if deadline is None else deadline

    def past_deadline() -> bool:
        return deadline is not None and work_clock() >= deadline

    def outcome(status: str, offsets: np.ndarray | None = None) -> SearchOutcome:
        return SearchOutcome(status, offsets, totals["nodes"], totals["backtracks"], totals["runs"],
                             totals["splits"], totals["hits"], totals["charged"])

    def run(preorder: Preorder, rerank: bool, run_limit: int, stop: np.ndarray,
            table: np.ndarray | None) -> SearchResult:
        own = switches if rerank else switches._replace(rerank_groups=False)
        return kernel.run_search(instance, preorder, own, capacity=capacity, node_limit=run_limit,
                                     deadline=time_limit, stop=stop, table=table)

    fixed_runs = []
    for key in keys:
        made = None if past_deadline() else data.preorder(key, options.twins, deadline=deadline)
        if made is None:
            return outcome("timeout")
        fixed_runs.append(made)
    # A state exhausted at this capacity stays exhausted whatever the node limit, so each fixed
    # preorder keeps its table across rounds (a run reads and writes only its own: the answer does
    # not depend on the threads). Perturbed preorders are new every round and start empty.
    tables = [kernel.new_table(switches) if options.keep_tables and switches.table_bits else None
              for _ in fixed_runs]
    workers = _workers(options.workers)
    pool = ThreadPoolExecutor(workers) if workers > 1 else None
    stops: list[np.ndarray] = []
    try:
        while True:
            extra = options.random_preorders if options.portfolio else 0
            perturbed = []
            for r in range(extra):
                noise = 1.0 + 0.3 * rng.random(data.n)
                made = data.preorder(keys[r % len(keys)], options.twins, noise, deadline)
                if made is None:
                    return outcome("timeout")
                perturbed.append(made)
            round_runs = fixed_runs + perturbed
            if past_deadline():
                return outcome("timeout")
            limits = _run_limits(limit, len(round_runs), None if budget is None else budget - totals["charged"])
            stops = [np.zeros(1, np.int64) for _ in round_runs]

            def job(index: int, preorder: Preorder, rerank: bool, stops: list[np.ndarray] = stops,
                    limits: list[int] = limits) -> SearchResult:
                if stops[index][0] or limits[index] < 0:
                    return SearchResult(kernel.CANCELLED, np.zeros(0, np.int64), 0, 0, 0, 0)
                result = run(preorder, rerank, limits[index], stops[index],
                             tables[index] if index < len(tables) else None)
                if result.status in (kernel.SOLVED, kernel.EXHAUSTED):
                    for later in stops[index + 1:]:
                        later[0] = 1  # a later run can no longer be the answer
                return result

            if pool is None:
                results = [job(i, preorder, rerank) for i, (preorder, rerank) in enumerate(round_runs)]
            else:
                futures = [pool.submit(job, i, preorder, rerank) for i, (preorder, rerank) in enumerate(round_runs)]
                results = [f.result() for f in futures]
            for result in results:
                totals["nodes"] += result.nodes
                totals["backtracks"] += result.backtracks
                totals["splits"] += result.splits
                totals["hits"] += result.table_hits
                totals["runs"] += result.status != kernel.CANCELLED
            for result in results:
                totals["charged"] += result.nodes  # a run before the deciding one did all its nodes
                if result.status == kernel.SOLVED:
                    return outcome("solved", result.offsets)
                if result.status == kernel.EXHAUSTED:
                    return outcome("infeasible")
                if result.status == kernel.TIME_LIMIT:
                    return outcome("timeout")
            if any(run_limit < limit for run_limit in limits):
                return outcome("node_limit")  # the budget cut this round short
            limit *= 2
    finally:
        for stop in stops:
            stop[0] = 1  # on an exception (Ctrl-C) running searches stop at their next clock reading
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def next_probe(progress: Progress, step: int, ceiling: int, nodes_left: int | None) -> tuple[int, str | None]:
    """Where the probes of an anytime minimisation stand: the highest capacity still worth a
    probe (the incumbent's peak minus ``step``, at most ``ceiling``) and why to stop, if they
    should: ``"closed"`` when the bound has passed it (the gap is closed, or nothing fits the
    capacity), ``"out"`` when the deadline or the node budget ``nodes_left`` is used up, else
    None. Shared by ``canonical_bisection`` and ``studies/capacity_schedule.py``."""
    highest = min(progress.best_peak - step, ceiling)
    if progress.bound > highest:
        return highest, "closed"
    if work_clock() >= progress.request.deadline or (nodes_left is not None and nodes_left <= 0):
        return highest, "out"
    return highest, None


def canonical_bisection(progress: Progress, options: MiniMallocOptions = MiniMallocOptions(),
                        node_limit: int | None = None, load_share: float = 0.6) -> MinimizeResult:
    """Lower the peak of ``progress``'s incumbent with capacity probes of the canonical search.

    ``progress`` holds the starting placement, if any (when it has none, the registry's
    ``fallback_heuristic`` gets the time left first) and LOAD as the lower bound. The probes
    then go:

    1. LOAD itself first, with ``load_share`` of the time (and of ``node_limit``): many real
       instances pack perfectly, and then the incumbent is proven optimal at once;
    2. then bisection between the best lower bound and the incumbent's peak minus one step. A
       probe that finds a placement lowers the incumbent to that placement's peak; a probe whose
       search space is exhausted proves that capacity infeasible and raises the lower bound; a
       probe that runs out of its time (or nodes) moves the next probe halfway up towards the
       incumbent. Each later probe gets half of what is left (at least a second, or 10,000
       nodes, when that much is left).

    Probes step by ``peak_granularity``; none goes above the problem's capacity (nor above
    ``MAX_VALUE``), and the search ends when the bound meets the incumbent's peak, passes the
    capacity (nothing fits), or the deadline or ``node_limit`` is reached.
    """
    request = progress.request
    if not progress.ensure_placement():
        return progress.result(True)
    progress.improved()
    free, capacity, deadline = progress.free, progress.capacity, request.deadline
    step = peak_granularity(free)
    progress.bound = -(-progress.bound // step) * step
    # no probe above the capacity (a peak above it is no answer) nor above the search's range
    ceiling = min(MAX_VALUE if capacity is None else capacity, MAX_VALUE) // step * step
    data: PreparedProblem | None = None
    nodes_left = node_limit
    ran_out = False
    first = True
    target = progress.bound
    while progress.best_peak > progress.bound:
        highest, stop = next_probe(progress, step, ceiling, nodes_left)
        if stop is not None:
            ran_out = stop == "out"
            break
        now = work_clock()
        if data is None:
            data = PreparedProblem(free)
            continue  # read the clock again: preparing a large problem takes time
        if first:
            target = progress.bound
            probe_deadline = now + load_share * (deadline - now)
            probe_nodes = None if nodes_left is None else max(1, int(load_share * nodes_left))
        else:
            probe_deadline = now + max(0.5 * (deadline - now), min(1.0, deadline - now))
            probe_nodes = None if nodes_left is None else max(nodes_left // 2, min(nodes_left, 10_000))
        target = min(max(target, progress.bound), highest)
        outcome = canonical_search(free, target, options, probe_deadline, prepared=data, node_limit=probe_nodes)
        progress.stats["nodes"] += outcome.nodes
        progress.stats["backtracks"] += outcome.backtracks
        if nodes_left is not None:
            nodes_left -= outcome.sequential_nodes
        progress.probes.append((target, outcome.status, work_clock() - now))
        if outcome.status == "solved":
            assert outcome.offsets is not None
            placement = Solution(dict(zip(free.ids, outcome.offsets.tolist(), strict=True)))
            check(free, placement)  # the heuristics' placements were validated by solve()
            progress.offer(placement, placement.peak(free))
        elif outcome.status == "infeasible":
            progress.bound = target + step
        highest = min(progress.best_peak - step, ceiling)
        if outcome.status in ("timeout", "node_limit") and not first:
            target = (target + highest + step) // (2 * step) * step  # halfway up to the incumbent
        else:
            target = (progress.bound + highest) // (2 * step) * step
        first = False
        if outcome.status in ("solved", "infeasible"):
            progress.improved()
    return progress.result(ran_out)


def minimalloc_minimize(problem: Problem, request: MinimizeRequest) -> MinimizeResult:
    """``minimalloc``'s anytime routine: the best of the registry's ``starting_heuristics``,
    which share the first third of the time, then ``canonical_bisection`` with ``request``'s
    options (a ``MiniMallocOptions``, None for the defaults; another record raises
    ``TypeError``), node limit and LOAD share.

    The bisection stays the default over the capacity schedule of
    ``studies/capacity_schedule.py`` (resumable probes spread between the bound and the
    incumbent): under equal node budgets that schedule matched it on average but ended higher on
    challenging D and J in 10 s runs (that study measures both)."""
    progress = Progress(problem, request)
    progress.run_heuristics(starting_heuristics(), request.began + request.timeout / 3)
    options = request.options_or_defaults(MiniMallocOptions)
    return canonical_bisection(progress, options, request.node_limit, request.load_share)


def minimalloc(problem: Problem, deadline: float | None, options: MiniMallocOptions) -> MethodOutput:
    """Place ``problem`` under its capacity (the search needs one to prune against).

    Status ``"timeout"`` when the deadline or ``options.node_limit`` stops the search first;
    it has no placement then (the search builds one placement, complete only at the end).
    """
    if problem.capacity is None:
        raise InvalidProblemError("minimalloc searches for a placement under a capacity; give the problem one")
    outcome = canonical_search(problem, problem.capacity, options, deadline)
    stats: dict[str, float] = {"nodes": outcome.nodes, "backtracks": outcome.backtracks, "runs": outcome.runs,
                               "splits": outcome.splits, "table_hits": outcome.table_hits}
    if outcome.status == "solved":
        assert outcome.offsets is not None
        placement = {b.id: int(o) for b, o in zip(problem.buffers, outcome.offsets, strict=True)}
        return MethodOutput("solved", placement, stats=stats)
    if outcome.status == "infeasible":
        return MethodOutput("infeasible", None, f"search space exhausted: no placement fits {problem.capacity}",
                            stats)
    if outcome.status == "node_limit":
        return MethodOutput("timeout", None, f"node limit of {options.node_limit:,} reached after "
                            f"{outcome.nodes:,} nodes, before a placement was found", stats)
    return MethodOutput("timeout", None, f"ran out of time after {outcome.nodes:,} nodes, before a placement "
                        "was found", stats)

"""``telamalloc``: heuristic-guided search with propagation and smart backtracking (TelaMalloc §4–5).

Our own implementation of the search of Maas et al., "TelaMalloc: Efficient On-Chip Memory
Allocation for Production Machine Learning Accelerators" (ASPLOS 2023). The paper drives a
CP-SAT solver one decision at a time; we do the solver's part with our own incremental
domain reasoning, compiled with numba (``allocator.methods.telamalloc_kernel``), which is what makes a step
cost microseconds rather than the paper's 10 µs – 1 ms:

* **decisions** (§5.1, Fig. 7): a step picks one unplaced block (a *candidate*) and places it;
  a decision point keeps a short list of candidates, tried in turn;
* **block selection** (§5.1): the candidates of a point are the unplaced blocks with the longest
  lifetime, the largest size and the largest area (size x lifetime), in that order;
* **solver-guided placement** (§5.2): a candidate goes to the lowest position of its current
  domain, not onto the skyline, so it can slip under a block placed earlier;
* **propagation**: every unplaced block keeps its domain of aligned start offsets as the
  bounds ``[lb, ub]`` of the positions that collide with no obstacle (holes inside are found
  by the gap walk). A placement narrows the domains of the blocks overlapping it in time;
  a domain with ``ub < lb + size`` gives a *compulsory part* ``[ub, lb + size)`` that every
  placement of that block covers, and which narrows its neighbours' domains in turn (the
  timetable reasoning a CP solver applies to no-overlap constraints). A block whose domain
  empties makes the step fail at once instead of many steps later;
* **contention-based grouping** (§5.3, Fig. 9): time is split where no block crosses; in each
  part, contiguous time ranges whose contention (live bytes) reaches a threshold, starting at
  100 % of the capacity and lowered by ``phase_step`` each round, collect the still unassigned
  blocks overlapping them into a *phase*. Phases are ordered by decreasing threshold (time
  breaks ties). Candidates come first from the phase of the block placed last (or the first
  phase with unplaced blocks), then from the other phases in order;
* **minor and major backtracks** (§5.4): a candidate whose placement empties a domain is a minor
  backtrack (try the next candidate). When a point runs out of candidates, a major backtrack
  jumps to the *second-to-last* placement in the conflict set (the placements that explain the
  failures, from the propagation's reasons) and *prepends* the failed point's candidates to the
  target's untried ones (at most ``max_candidates`` untried, further ones dropped);
* **stuck subtrees** (§5.4): when the choice at some point has seen more than ``stuck_limit``
  backtracks in its subtree, the search abandons the deepest such choice. We count backtracks
  since the choice was made (or since the last such jump, for the points above it), so the
  rule fires again only after another ``stuck_limit`` backtracks;
* **alignment** (§5.5): positions are multiples of the block's alignment; pinned (fixed-offset)
  blocks are placed before the search and propagate like any placement;
* a **step limit** (the paper's evaluation: 500,000) and a time limit.

The learned backtracking of §6 (``telamalloc-learned``, ``allocator.methods.telamalloc_learned``) hooks
into the major backtracks through ``Switches.mode`` and a ``Learning`` record; with the default
mode the search never reads them and takes exactly the path described here.

The search is incomplete (one position per block, few candidates per point, jumps that skip
alternatives), so running out of candidates or steps is reported as ``"failed"``, not
``"infeasible"``; only an empty domain before the first decision proves infeasibility.

Without a capacity the method minimises the peak: it starts from the best of the greedy
heuristics and bisects between LOAD and the best peak with searches of ``probe_steps`` steps,
doubling that budget each round (``telamalloc_minimize``). Every technique has a switch in
``TelaMallocOptions`` for ablations; ``selection`` also gives the single-strategy baselines of
the paper's Fig. 14 (max size, max area, max lifetime, lowest position).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from allocator.core.kernel_clock import work_clock
from allocator.core.problem import InvalidProblemError, MinimizeResult, Problem, Solution, Status
from allocator.core.progress import Progress, peak_granularity
from allocator.core.registry import METHODS, MethodOutput, MinimizeRequest, fallback_heuristic, starting_heuristics
from allocator.core.sections import Sweep, sweep
from allocator.core.validate import check, lower_bound
from allocator.methods import telamalloc_kernel as kernel
from allocator.methods.backtrack_model import N_FEATURES, constant
from allocator.methods.heuristics import conflict_counts
from allocator.methods.telamalloc_kernel import Instance, Learning, Phases, Sections, Switches, neighbours

SELECTIONS = {"telamalloc": kernel.SEL_TELAMALLOC, "size": kernel.SEL_SIZE,
              "area": kernel.SEL_AREA, "lifetime": kernel.SEL_LIFETIME, "lowest": kernel.SEL_LOWEST}
#: neighbour-list entries above which the search declines (memory: 4 bytes each)
MAX_NEIGHBOUR_ENTRIES = 200_000_000
#: (buffer, section) memberships above which the per-section check is skipped
MAX_SECTION_ENTRIES = 50_000_000
#: capacities whose phases a prepared problem keeps
PHASE_CACHE = 8
#: seconds per time-overlapping pair to build the neighbour lists (measured ~25 ns; a build cannot
#: be interrupted, so a search with less time left than this estimate does not start it)
SECONDS_PER_PAIR = 25e-9


@dataclass(frozen=True)
class TelaMallocOptions:
    """Switches for each technique of the search (the defaults are full TelaMalloc)."""

    #: how candidates are picked: "telamalloc" (longest lifetime, largest size, largest area per
    #: phase), or one key only: "size", "area", "lifetime", "lowest" (lowest position in its domain)
    selection: str = "telamalloc"
    phases: bool = True  #: contention-based grouping (§5.3); off: one phase of all blocks
    phase_step: float = 0.05  #: the contention threshold drops by this share of the capacity per round
    lowest_position: bool = True  #: lowest position in the domain (§5.2); off: on top of the skyline (§5.1)
    propagate: bool = True  #: narrow the domains of unplaced blocks after every placement
    #: after a placement, check every cross section it spans: the free gaps must be able to hold
    #: the unplaced buffers live there (a bin-packing relaxation). Sound, but off by default: on
    #: the challenging suite it rarely fires and costs about a third of the step rate
    energy: bool = False
    compulsory: bool = True  #: compulsory parts of unplaced blocks are obstacles too (needs ``propagate``)
    backjump: bool = True  #: major backtracks jump to the second-to-last conflicting placement; off: one level
    prepend: bool = True  #: a major backtrack's failed candidates are tried next at the target
    #: backtracks in a choice's subtree before it is abandoned (0: never). The paper gives 100 as an
    #: example; 1000 solved more of the challenging suite at 115 % of LOAD within 100,000 steps
    stuck_limit: int = 1000
    #: untried candidates kept per decision point: 3, one per heuristic, solved 7 of 11 of the
    #: challenging suite at 120 % of LOAD within 100,000 steps, where 8 solved 4
    max_candidates: int = 3
    #: how deep the reasons of compulsory parts are traced when explaining a failure (deeper: every
    #: level up to the last change of that domain)
    explain_depth: int = 8
    step_limit: int = 500_000  #: steps (placements tried) before giving up
    probe_steps: int = 20_000  #: when minimising: the first round's step budget per capacity probe

    def __post_init__(self) -> None:
        if self.selection not in SELECTIONS:
            raise InvalidProblemError(
                f"unknown telamalloc selection {self.selection!r}; known: {', '.join(SELECTIONS)}")
        if not 0 < self.phase_step <= 1:
            raise InvalidProblemError(f"phase_step must be in (0, 1], got {self.phase_step!r}")
        for name in ("stuck_limit", "step_limit", "probe_steps"):
            if getattr(self, name) < 0:
                raise InvalidProblemError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if self.max_candidates < 1:
            raise InvalidProblemError(f"max_candidates must be >= 1, got {self.max_candidates!r}")

    @classmethod
    def strategy(cls, name: str, **changes: object) -> TelaMallocOptions:
        """The block-selection strategies compared in TelaMalloc Fig. 14.

        ``"telamalloc"`` is the full search; ``"max-size"``, ``"max-area"``, ``"max-lifetime"``
        and ``"lowest-position"`` pick blocks by that key alone, place them at their lowest
        position and backtrack chronologically (no phases, jumps, prepending or stuck rule), as
        the paper's baselines do.

        >>> TelaMallocOptions.strategy("max-size").selection
        'size'
        """
        if name == "telamalloc":
            return cls(**changes)  # type: ignore[arg-type]
        keys = {"max-size": "size", "max-area": "area", "max-lifetime": "lifetime", "lowest-position": "lowest"}
        if name not in keys:
            raise InvalidProblemError(f"unknown strategy {name!r}; known: telamalloc, {', '.join(keys)}")
        base = {"selection": keys[name], "phases": False, "backjump": False, "prepend": False, "stuck_limit": 0}
        base.update(changes)
        return cls(**base)  # type: ignore[arg-type]


STRATEGIES = ("max-size", "max-area", "max-lifetime", "lowest-position", "telamalloc")


def kernel_switches(options: TelaMallocOptions, step_limit: int | None = None,
                    deadline: float | None = None) -> Switches:
    """The compiled search's record of ``options``: every switch by name, typed as numba expects.

    ``step_limit`` overrides ``options.step_limit`` (the descent's probes use smaller budgets);
    ``deadline`` is a ``work_clock()`` value or None. Compulsory parts only count with
    propagation (they are found by it); the section check only runs when ``options.energy``.
    Every field gets a fixed Python type (int, bool, float), so one compiled signature serves
    every call.

    >>> switches = kernel_switches(TelaMallocOptions.strategy("max-size"), step_limit=10)
    >>> switches.selection == kernel.SEL_SIZE, switches.backjump, switches.step_limit, switches.deadline
    (True, False, 10, -1.0)
    """
    return Switches(
        selection=int(SELECTIONS[options.selection]),
        max_candidates=int(options.max_candidates),
        lowest_position=bool(options.lowest_position),
        propagate=bool(options.propagate),
        compulsory=bool(options.compulsory and options.propagate),
        energy=bool(options.energy),
        backjump=bool(options.backjump),
        prepend=bool(options.prepend),
        stuck_limit=int(options.stuck_limit),
        explain_depth=int(options.explain_depth),
        step_limit=int(options.step_limit if step_limit is None else step_limit),
        deadline=-1.0 if deadline is None else float(deadline),
    )


def area_ranks(sizes: np.ndarray, lifetimes: np.ndarray) -> np.ndarray:
    """A key that orders buffers as their areas ``size x lifetime`` do, exactly, as int64.

    Sizes and lifetimes may each reach 2**62, so the product can pass 2**63 and wrap around
    in int64 (a huge buffer would then sort as a tiny one). While every product is below 2**53
    it is exact in int64 and is the key itself; otherwise the exact products (Python integers)
    are ranked, equal areas getting equal ranks (0 the smallest).

    >>> area_ranks(np.array([3, 2]), np.array([4, 5])).tolist()
    [12, 10]

    Areas of 16, 9 and 12 times 2**60 (in int64 they would wrap to 0, -7 and -4 times 2**60):

    >>> area_ranks(np.array([2**61, 2**60, 3]), np.array([8, 9, 2**62])).tolist()
    [2, 0, 1]
    """
    if len(sizes) == 0 or float(np.max(sizes.astype(np.float64) * lifetimes.astype(np.float64))) < 2.0**53:
        return (sizes * lifetimes).astype(np.int64)
    exact = np.array([s * t for s, t in zip(sizes.tolist(), lifetimes.tolist(), strict=True)], dtype=object)
    _, rank = np.unique(exact, return_inverse=True)
    return rank.astype(np.int64)


def contention_phases(problem: Problem, capacity: int, step: float = 0.05, cross: Sweep | None = None,
                      deadline: float | None = None) -> list[np.ndarray] | None:
    """Group the buffers into phases of decreasing contention (TelaMalloc §5.3, Fig. 9).

    Time is first cut where no buffer is live on both sides. Within each part, for thresholds
    ``capacity * (1 - k * step)``, k = 0, 1, ... (the last one 0), every maximal run of cross
    sections whose live bytes reach the threshold collects the buffers not yet in a phase that
    overlap it (a buffer overlapping several runs joins the earliest). Returns the phases as
    arrays of buffer indices (ascending), highest threshold first, runs in time order.

    ``cross`` is ``sweep(problem)`` when the caller has it. Each threshold costs O(n + sections)
    (the members of the runs are grouped by one sort); with a ``deadline``
    (``work_clock()``) the clock is read between thresholds and None is returned once
    it has passed.

    >>> from allocator.core.problem import Buffer
    >>> p = Problem([Buffer("a", 0, 2, 8), Buffer("b", 1, 3, 2), Buffer("c", 3, 5, 4), Buffer("d", 4, 6, 1)])
    >>> [phase.tolist() for phase in contention_phases(p, 10, step=0.5)]
    [[0, 1], [2, 3]]
    """
    n = len(problem)
    if n == 0:
        return []
    if cross is None:
        cross = sweep(problem)
    totals = cross.section_total
    sections = cross.n_sections
    first, last = cross.first_section, cross.last_section
    crossing = np.zeros(sections + 1, np.int64)
    np.add.at(crossing, first + 1, 1)
    np.add.at(crossing, last, -1)
    crossing = np.cumsum(crossing)  # crossing[k]: buffers live in both section k-1 and section k
    cut = np.zeros(sections, bool)
    cut[1:] = crossing[1:sections] == 0
    part = np.cumsum(cut)
    assigned = np.full(n, -1, np.int64)
    phases: list[np.ndarray] = []
    rounds = math.ceil(1 / step)
    for k in range(rounds + 1):
        if deadline is not None and work_clock() > deadline:
            return None
        threshold = max(capacity * (1 - k * step), 0.0) if k < rounds else 0.0
        hot = totals >= threshold
        if not hot.any():
            continue
        new_run = hot.copy()
        new_run[1:] &= ~hot[:-1] | (part[1:] != part[:-1])
        run_of = np.cumsum(new_run) - 1  # run index of each hot section
        next_hot = np.full(sections + 1, sections, np.int64)  # first hot section at or after k
        hot_index = np.nonzero(hot)[0]
        next_hot[:sections] = hot_index[np.minimum(np.searchsorted(hot_index, np.arange(sections)),
                                                   len(hot_index) - 1)]
        next_hot[:sections][np.arange(sections) > hot_index[-1]] = sections
        free = np.nonzero(assigned < 0)[0]
        hit = next_hot[first[free]]
        takes = hit < last[free]
        chosen = free[takes]
        if len(chosen) == 0:
            continue
        runs = run_of[hit[takes]]
        by_run = np.argsort(runs, kind="stable")  # within a run, ascending buffer index
        groups = np.split(chosen[by_run], np.flatnonzero(np.diff(runs[by_run])) + 1)
        for members in groups:
            assigned[members] = len(phases)
            phases.append(members)
        if (assigned >= 0).all():
            break
    return phases


_NO_ARRAY = np.zeros(1, np.int64)  # the section check's arrays when it is off


def no_learning() -> Learning:
    """The ``Learning`` record of a search without learned backtracking (never read; typed as
    a real one so one compiled signature serves every call)."""
    floats = np.zeros(1, np.float64)
    return Learning(model=constant(0.0), size=floats, lifetime=floats, contention=floats,
                    forced=np.zeros(0, np.int64), stop_at=-1, record_levels=_NO_ARRAY,
                    record_features=np.zeros((1, N_FEATURES), np.float64), record_path=_NO_ARRAY,
                    record_info=_NO_ARRAY)


_NO_LEARNING = no_learning()


@dataclass
class TelaMallocOutcome:
    status: Status  #: "solved", "infeasible" (proven before any decision), "failed" or "timeout"
    offsets: np.ndarray | None
    reason: str = ""
    stats: dict[str, float] = field(default_factory=dict)


class _Prepared:
    """A problem's flat arrays and time-overlap lists, shared by every search on it."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.starts, self.ends, self.sizes, self.aligns, self.fixed = problem.arrays()
        #: time-overlapping pairs, counted in O(n log n) before any list is built
        self.pairs = int(conflict_counts(self.starts, self.ends).sum()) // 2
        self._neighbours: tuple[np.ndarray, np.ndarray] | None = None
        life = self.ends - self.starts
        self.keys = {"life": (-self.sizes, -life), "size": (-life, -self.sizes),
                     "area": (-self.sizes, -area_ranks(self.sizes, life))}
        self._phases: dict[tuple[int, float, bool], Phases] = {}
        self._sections: tuple[bool, Sections] | None = None
        self._cross: Sweep | None = None

    def cross_sections(self) -> Sweep:
        """``sweep(problem)``, computed once."""
        if self._cross is None:
            self._cross = sweep(self.problem)
        return self._cross

    def neighbour_lists(self, deadline: float | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """The time-overlap lists (CSR ``ptr``, ``idx``), built on first use (25-75 ns a pair:
        memory bound); None when ``deadline`` passes first (the next call starts over)."""
        if self._neighbours is None:
            ptr, idx, complete = neighbours(self.starts, self.ends, -1.0 if deadline is None else deadline)
            if not complete:
                return None
            self._neighbours = (ptr, idx)
        return self._neighbours

    def has_neighbour_lists(self) -> bool:
        """Whether ``neighbour_lists`` is built already (then it costs nothing)."""
        return self._neighbours is not None

    def instance(self, capacity: int, deadline: float | None = None) -> Instance | None:
        """The compiled search's record of the buffers under ``capacity`` (None: ``deadline``
        passed while building the neighbour lists)."""
        lists = self.neighbour_lists(deadline)
        if lists is None:
            return None
        ptr, nbr = lists
        return Instance(sizes=self.sizes, aligns=self.aligns, fixed=self.fixed, capacity=int(capacity), ptr=ptr,
                        nbr=nbr)

    def section_lists(self) -> tuple[bool, Sections]:
        """Per buffer its sections, per section its members (CSR), for the section check.

        ``(ok, sections)``; ``ok`` is False, and the member lists empty, when the memberships
        exceed ``MAX_SECTION_ENTRIES`` (the check is then skipped).
        """
        if self._sections is None:
            cross = self.cross_sections()
            first, last = cross.first_section, cross.last_section
            spans = last - first
            sec_ptr, sec_mem = np.zeros(1, np.int64), np.zeros(0, np.int64)
            ok = bool(spans.sum() <= MAX_SECTION_ENTRIES)
            if ok and len(spans):
                per_section = np.zeros(cross.n_sections + 1, np.int64)
                np.add.at(per_section, first, 1)
                np.add.at(per_section, last, -1)
                sec_ptr = np.concatenate(([0], np.cumsum(np.cumsum(per_section)[:-1]))).astype(np.int64)
                owner = np.repeat(np.arange(len(spans)), spans)
                within = np.arange(len(owner)) - np.repeat(np.cumsum(spans) - spans, spans)
                section = np.repeat(first, spans) + within
                sec_mem = owner[np.argsort(section, kind="stable")].astype(np.int64)
            self._sections = (ok, Sections(first=first.astype(np.int64), last=last.astype(np.int64), ptr=sec_ptr,
                                           members=sec_mem))
        return self._sections

    def phase_arrays(self, capacity: int, options: TelaMallocOptions, deadline: float | None = None) -> Phases | None:
        """The phases of ``capacity`` and their members ordered by lifetime, size and area; None
        when ``deadline`` passed while grouping. The last ``PHASE_CACHE`` capacities are kept
        (the descent probes the same capacities again in later rounds; each costs 40 bytes a
        buffer)."""
        key = (capacity, options.phase_step, options.phases)
        if key not in self._phases:
            n = len(self.sizes)
            if options.phases:
                found = contention_phases(self.problem, capacity, options.phase_step, self.cross_sections(), deadline)
                if found is None:
                    return None
                groups = found
            else:
                groups = [np.arange(n)] if n else []
            phase_of = np.zeros(n, np.int64)
            for index, members in enumerate(groups):
                phase_of[members] = index
            ph_ptr = np.zeros(len(groups) + 1, np.int64)
            ph_ptr[1:] = np.cumsum([len(g) for g in groups])
            ids = np.arange(n)
            by_life, by_size, by_area = (np.lexsort((ids, *self.keys[name], phase_of)).astype(np.int64)
                                         for name in ("life", "size", "area"))
            if len(self._phases) >= PHASE_CACHE:
                del self._phases[next(iter(self._phases))]  # the oldest
            self._phases[key] = Phases(phase_of=phase_of, ptr=ph_ptr, by_life=by_life, by_size=by_size,
                                       by_area=by_area)
        return self._phases[key]


def telamalloc_search(problem: Problem, capacity: int, options: TelaMallocOptions = TelaMallocOptions(),
                      deadline: float | None = None, step_limit: int | None = None,
                      prepared: _Prepared | None = None, learning: Learning | None = None,
                      mode: int = kernel.MODE_DEFAULT, threshold: float = 0.0) -> TelaMallocOutcome:
    """Run the search for a placement of ``problem`` within ``capacity`` bytes.

    ``deadline`` (a ``work_clock()`` value) bounds the whole call: the compiled search
    reads the clock every 16 steps (every step when a buffer has over 2,000 neighbours), the
    grouping into contention phases between thresholds, and the neighbour lists every 2**20
    pairs (they are not even started when their estimated cost, ``SECONDS_PER_PAIR`` a pair,
    exceeds the time left); the outcome is then ``"timeout"``.
    ``step_limit`` overrides ``options.step_limit``.

    ``learning``, ``mode`` and ``threshold`` drive the learned backtracking of TelaMalloc §6
    (``allocator.methods.telamalloc_learned`` builds them; ``mode`` is one of ``kernel.MODE_*``);
    the default mode never reads ``learning``. In ``MODE_RECORD`` a search that stopped to
    record a major backtrack returns ``"failed"`` with ``stats["recorded"] = 1`` and its
    partial placement (-1 for unplaced buffers) as ``offsets``.
    """
    if mode != kernel.MODE_DEFAULT and learning is None:
        raise InvalidProblemError("learned backtracking needs its Learning record")
    data = prepared or _Prepared(problem)
    if 2 * data.pairs > MAX_NEIGHBOUR_ENTRIES:
        return TelaMallocOutcome("failed", None, f"{data.pairs:,} time-overlapping pairs exceed the "
                                 f"search's limit of {MAX_NEIGHBOUR_ENTRIES // 2:,}")
    if deadline is not None and not data.has_neighbour_lists():
        left = deadline - work_clock()
        if data.pairs * SECONDS_PER_PAIR > max(left, 0.0):
            return TelaMallocOutcome("timeout", None, f"ran out of time: building the time-overlap lists of "
                                     f"{data.pairs:,} pairs takes about {data.pairs * SECONDS_PER_PAIR:.2f} s, "
                                     f"more than the {max(left, 0.0):.2f} s left")
    phases = data.phase_arrays(capacity, options, deadline)
    if phases is None:
        return TelaMallocOutcome("timeout", None, "ran out of time while grouping the buffers into contention phases")
    switches = kernel_switches(options, step_limit, deadline)
    if mode != kernel.MODE_DEFAULT:
        switches = switches._replace(mode=int(mode), threshold=float(threshold))
    sections = Sections(first=_NO_ARRAY, last=_NO_ARRAY, ptr=_NO_ARRAY, members=_NO_ARRAY)
    if options.energy:
        ok, sections = data.section_lists()
        if not ok:  # too many memberships: the check is skipped
            switches = switches._replace(energy=False)
    instance = data.instance(capacity, deadline)
    if instance is None:
        return TelaMallocOutcome("timeout", None, f"ran out of time building the time-overlap lists of "
                                 f"{data.pairs:,} pairs")
    status, offsets, raw = kernel.search(instance, phases, sections, switches, learning or _NO_LEARNING)
    stats: dict[str, float] = {
             "steps": int(raw[kernel.ST_STEPS]), "minor_backtracks": int(raw[kernel.ST_MINOR]),
             "major_backtracks": int(raw[kernel.ST_MAJOR]), "stuck_jumps": int(raw[kernel.ST_STUCK]),
             "max_depth": int(raw[kernel.ST_DEPTH]), "levels_skipped": int(raw[kernel.ST_BACKJUMP_LEVELS])}
    stats["nodes"] = stats["steps"]
    stats["backtracks"] = stats["minor_backtracks"] + stats["major_backtracks"]
    if mode != kernel.MODE_DEFAULT:
        stats["scored"] = int(raw[kernel.ST_SCORED])
        stats["learned_jumps"] = int(raw[kernel.ST_LEARNED])
    if status == kernel.EXHAUSTED and mode != kernel.MODE_DEFAULT:
        stats["exhausted"] = 1  # telamalloc-learned falls back to the default rule then
    if status == kernel.RECORDED:
        stats["recorded"] = 1
        return TelaMallocOutcome("failed", offsets, "stopped to record a major backtrack", stats)
    if status == kernel.SOLVED:
        return TelaMallocOutcome("solved", offsets, stats=stats)
    if status == kernel.INFEASIBLE:
        return TelaMallocOutcome("infeasible", None, f"no placement fits {capacity}: a buffer has no position "
                                 "left once the pinned buffers and compulsory parts are placed", stats)
    if status == kernel.TIME_LIMIT:
        return TelaMallocOutcome("timeout", None, "ran out of time before a placement was found", stats)
    if status == kernel.STEP_LIMIT:
        return TelaMallocOutcome("failed", None, f"step limit {switches.step_limit:,} reached without a placement",
                                 stats)
    return TelaMallocOutcome("failed", None, "the search ran out of candidates (it is incomplete: this proves "
                             "nothing about the capacity)", stats)


@dataclass
class DescentResult:
    offsets: np.ndarray | None  #: None when not even the fallback heuristic placed the buffers in time
    peak: int  #: -1 without ``offsets``
    bound: int  #: proven lower bound (LOAD unless a probe proved a capacity infeasible)
    history: list[tuple[float, int]]  #: (seconds, peak) each time the best peak improved
    stats: dict[str, float]
    timed_out: bool
    reason: str = ""


#: a capacity probe of the descent: ``probe(problem, capacity, deadline, step_limit, prepared)``
Probe = Callable[[Problem, int, "float | None", int, "_Prepared"], "TelaMallocOutcome"]


def telamalloc_minimize(problem: Problem, deadline: float | None, options: TelaMallocOptions = TelaMallocOptions(),
                        probe: Probe | None = None,
                        on_improve: Callable[[np.ndarray, int], None] | None = None) -> DescentResult:
    """Lower the peak of ``problem`` (its capacity ignored) with capacity probes until ``deadline``.

    The first incumbent is the best of the registry's ``starting_heuristics``, which share the
    first third of the time (each gets what is left of it; they stop once one reaches LOAD); when
    none places the buffers in it, the registry's ``fallback_heuristic`` gets the rest of the
    time; when it does not finish either, the result has no placement (``offsets`` None,
    ``timed_out``, ``reason`` says how far it got). A round bisects between LOAD and the
    incumbent's peak: a probe at capacity C runs the search with the round's step budget; a
    placement lowers the incumbent to its peak, a failure moves the lower end above C (for this
    round only: the search is incomplete, a failure proves nothing). Each round doubles the
    step budget (from ``probe_steps`` up to ``step_limit``). Without a deadline the descent stops after the round
    with the full ``step_limit`` budget, so its result depends on the steps alone.
    ``probe`` replaces the plain search of each probe (``telamalloc-learned`` passes its own).
    ``on_improve(offsets, peak)`` is called with every placement that lowers the best peak, the
    first heuristic's included, as soon as it exists (``descent_minimize`` reports them, so
    that Ctrl-C keeps the best so far); ``offsets`` are int64 per buffer, not yet validated.
    """
    began = work_clock()
    free = problem.with_capacity(None)
    best: np.ndarray | None = None
    best_peak = -1
    sizes = problem.arrays(copy=False)[2]
    start_deadline = None if deadline is None else began + (deadline - began) / 3
    load = lower_bound(free)
    for name in starting_heuristics():
        if start_deadline is not None and work_clock() >= start_deadline:
            break  # keep the time for the search
        if best is not None and best_peak <= load:
            break  # optimal: no later heuristic can place lower (as Progress.run_heuristics stops)
        heuristic = METHODS[name]
        out = heuristic.function(free, start_deadline, heuristic.options())
        if out.offsets is None:
            continue  # ran out of its time
        offsets = np.fromiter((out.offsets[i] for i in problem.ids), np.int64, len(problem))
        peak = int((offsets + sizes).max()) if len(sizes) else 0
        if best is None or peak < best_peak:
            best, best_peak = offsets, peak
            if on_improve is not None:
                on_improve(best, best_peak)
    if best is None:
        fallback = METHODS[fallback_heuristic()]
        out = fallback.function(free, deadline, fallback.options())
        if out.offsets is None:
            return DescentResult(None, -1, load, [], {"steps": 0, "probes": 0, "rounds": 0}, True,
                                 f"no placement in time: {out.reason}")
        best = np.fromiter((out.offsets[i] for i in problem.ids), np.int64, len(problem))
        best_peak = int((best + sizes).max()) if len(sizes) else 0
        if on_improve is not None:
            on_improve(best, best_peak)
    step = peak_granularity(problem)
    proven = -(-load // step) * step
    history = [(work_clock() - began, best_peak)]
    stats: dict[str, float] = {"steps": 0, "probes": 0, "rounds": 0}
    left = None if deadline is None else deadline - work_clock()
    # the neighbour lists cannot be interrupted: only build them when they take at most half
    # the time left (iopddl/S_1: 43 million pairs, ~1.1 s)
    data = _Prepared(free) if best_peak > proven else None
    out_of_time = left is not None and (left <= 0 or (data is not None and data.pairs * SECONDS_PER_PAIR > left / 2))
    if out_of_time:
        data = None
    budget = max(options.probe_steps, 1)
    timed_out = out_of_time and best_peak > proven
    while data is not None and best_peak > proven:
        stats["rounds"] += 1
        low = proven
        while low <= best_peak - step:
            if deadline is not None and work_clock() >= deadline:
                timed_out = True
                break
            target = (low + best_peak - step) // (2 * step) * step
            target = min(max(target, low), best_peak - step)
            if probe is None:
                outcome = telamalloc_search(free, target, options, deadline, step_limit=budget, prepared=data)
            else:
                outcome = probe(free, target, deadline, budget, data)
            stats["steps"] += outcome.stats.get("steps", 0)
            stats["probes"] += 1
            if outcome.status == "solved":
                assert outcome.offsets is not None
                best = outcome.offsets
                best_peak = int((best + sizes).max())
                history.append((work_clock() - began, best_peak))
                if on_improve is not None:
                    on_improve(best, best_peak)
            elif outcome.status == "infeasible":
                proven = max(proven, target + step)
                low = proven
            elif outcome.status == "timeout":
                timed_out = True
                break
            else:
                low = target + step
        if timed_out or budget >= options.step_limit:
            break
        budget = min(2 * budget, options.step_limit)
    return DescentResult(best, best_peak, min(proven, best_peak), history, stats, timed_out)


def telamalloc_anytime(problem: Problem, request: MinimizeRequest) -> MinimizeResult:
    """``telamalloc``'s anytime routine for ``allocator.minimize``: ``telamalloc_minimize`` with
    ``request``'s options (a ``TelaMallocOptions``, None for the defaults; another record raises
    ``TypeError``) until its deadline. Its bound is LOAD unless a probe proved a capacity
    infeasible; it has no node budget."""
    return descent_minimize(problem, request, request.options_or_defaults(TelaMallocOptions))


def descent_minimize(problem: Problem, request: MinimizeRequest, options: TelaMallocOptions,
                     probe: Probe | None = None) -> MinimizeResult:
    """``telamalloc_minimize`` with ``options`` and ``probe`` until ``request``'s deadline, as a
    ``MinimizeResult`` (shared by ``telamalloc`` and ``telamalloc-learned``).

    With ``request.on_improve`` every placement that lowers the peak (the starting
    heuristics' first) is validated and reported as soon as the descent has it, so that a
    caller interrupted by Ctrl-C keeps the best so far.
    The validation costs time of the search's own (about as much as LOAD); only a caller who
    asked for reports pays it."""
    progress = Progress(problem, request)
    report = None
    if request.on_improve is not None:
        free = progress.free

        def report(offsets: np.ndarray, peak: int) -> None:
            placement = Solution(dict(zip(free.ids, offsets.tolist(), strict=True)))
            check(free, placement)
            progress.offer(placement, peak)
            progress.improved()

    descent = telamalloc_minimize(problem, request.deadline, options, probe, report)
    if descent.offsets is None:
        progress.reason = descent.reason
        return progress.result(True)
    free = progress.free
    placed = Solution(dict(zip(free.ids, descent.offsets.tolist(), strict=True)))
    check(free, placed)
    seconds = work_clock() - request.began
    optimal = descent.peak <= descent.bound
    return MinimizeResult(request.method, placed, descent.peak, descent.bound, optimal, seconds,
                          not optimal and descent.timed_out,
                          [(t, peak, descent.bound) for t, peak in descent.history], [],
                          {"nodes": descent.stats["steps"], "probes": descent.stats["probes"]}, progress.capacity)


def telamalloc(problem: Problem, deadline: float | None, options: TelaMallocOptions) -> MethodOutput:
    """Place ``problem`` under its capacity, or minimise its peak when it has none."""
    if problem.capacity is None:
        return descent_output(problem, deadline, options)
    outcome = telamalloc_search(problem, problem.capacity, options, deadline)
    solved = outcome.status == "solved" and outcome.offsets is not None
    placed = _placement(problem, outcome.offsets) if solved and outcome.offsets is not None else None
    return MethodOutput(outcome.status, placed, outcome.reason, outcome.stats)


def descent_output(problem: Problem, deadline: float | None, options: TelaMallocOptions,
                   probe: Probe | None = None) -> MethodOutput:
    """A method's answer without a capacity (shared by ``telamalloc`` and ``telamalloc-learned``):
    ``telamalloc_minimize``'s best placement, with its proven bound and its steps as nodes, or
    ``"timeout"`` when it placed nothing in time."""
    result = telamalloc_minimize(problem, deadline, options, probe)
    if result.offsets is None:
        return MethodOutput("timeout", None, result.reason, dict(result.stats))
    stats = {**result.stats, "bound": result.bound, "nodes": result.stats["steps"]}
    return MethodOutput("solved", _placement(problem, result.offsets), stats=stats)


def _placement(problem: Problem, offsets: np.ndarray) -> dict[str, int]:
    return dict(zip(problem.ids, offsets.tolist(), strict=True))

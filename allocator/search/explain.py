"""Why a capacity is impossible: a minimal set of buffers that cannot be placed together.

An *explanation* of a problem with no placement is a subset of its buffers that has no
placement under the capacity either, while every subset with one buffer fewer has one: a
minimal infeasible subset (an IIS in the words of Chinneck and Dravnieks, a MUS in SAT's).
It tells a user which buffers to shrink, shorten or move to free the capacity, and it is
usually far smaller than the problem.

Two causes, handled differently:

* **LOAD above the capacity.** At some step the buffers live together need more bytes than
  the capacity. Taking that step's buffers largest first until their sizes pass the capacity
  gives an infeasible set, and a minimal one by arithmetic: removing any of them leaves at
  most the capacity (it removes at least as much as the last one taken), and buffers that
  are all live at one step with that total fit by stacking them. The arithmetic holds only
  for free buffers without alignment padding; with pinned buffers or alignments each
  removal is proven like in the other case (a pinned buffer can leave a hole that nothing
  fits in, and padding can make a stack taller than its sizes).
* **Fragmentation** (LOAD within the capacity, yet no placement). Deletion filtering
  (Chinneck and Dravnieks 1991, "Locating minimal infeasible constraint sets in linear
  programs", ORSA J. Computing 3(2)): for each buffer in turn, drop it when the rest is still
  infeasible, as proven by the exact canonical search (``allocator.methods.minimalloc``). The set is
  infeasible after every step, and a buffer that is kept was shown needed by a placement of
  the set without it. Before that the set is shrunk cheaply: buffers that never overlap in
  time with the others are independent, so one infeasible time-connected component is kept
  (``components``); inside it, windows of sections around the most loaded one, doubling in
  width, are tried until one is infeasible (``windows``). The deletion tries groups of
  buffers at once, farthest in time from the most loaded section first, halving a group
  that cannot go and doubling after one that could (``groups``; the splitting of Junker's
  QuickXplain, AAAI 2004, used inside a deletion filter so that the set stays proven
  infeasible at every step).

Every probe is a sub-problem of the buffers at hand under the same capacity: LOAD above the
capacity proves it infeasible; a greedy-by-size placement that fits (checked by the
independent validator) proves it feasible; otherwise the exact search decides, within a node
limit and a share of the time left. A probe that runs out leaves the buffer in the set: the
set is still proven infeasible, but its minimality is then not proven for that buffer
(``Explanation.unproven``); such buffers are probed again once the set has shrunk.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from allocator.core.kernel_clock import work_clock
from allocator.core.options import NoOptions
from allocator.core.problem import BufferId, InvalidProblemError, Problem, Solution
from allocator.core.sections import sweep_arrays
from allocator.core.validate import InvalidSolutionError, lower_bound, validate
from allocator.methods.greedy import greedy_by_size
from allocator.methods.minimalloc import MiniMallocOptions, canonical_search

__all__ = ["DEFAULT_NODE_LIMIT", "ExplainOptions", "Explanation", "FeasibleProblemError", "explain_infeasible"]

#: search nodes each exact probe may use by default (about a second of the canonical search);
#: a node limit, unlike a time limit, gives the same answer on any machine
DEFAULT_NODE_LIMIT = 1_000_000

#: how many of the most loaded sections the LOAD case compares, keeping the one whose largest
#: buffers pass the capacity soonest
LOAD_SECTIONS_COMPARED = 16

Verdict = Literal["infeasible", "feasible", "unknown"]


class FeasibleProblemError(InvalidProblemError):
    """Raised by ``explain_infeasible`` when the problem has a placement: there is nothing to explain.

    ``solution`` is a placement that fits (validated), when the exact search found one for
    every part of the problem.
    """

    def __init__(self, message: str, solution: Solution | None = None) -> None:
        super().__init__(message)
        self.solution = solution


@dataclass(frozen=True)
class ExplainOptions:
    """Switches for each technique of ``explain_infeasible`` (all on by default), and the search it uses."""

    components: bool = True  #: keep one infeasible time-connected component (independent of the others)
    windows: bool = True  #: first look for an infeasible window of sections around the most loaded one
    groups: bool = True  #: delete buffers in groups, halving a group that cannot go (else one at a time)
    heuristic_first: bool = True  #: greedy-by-size before the exact search, to show a set feasible cheaply
    retry_unproven: bool = True  #: probe again the buffers whose probe ran out, once the set is smaller
    #: the share of the time left that one probe may use; the proof that a whole component is
    #: infeasible, which everything else rests on, gets all of it
    probe_time_share: float = 0.25
    search: MiniMallocOptions = field(default_factory=lambda: MiniMallocOptions(workers=1))  #: the exact search

    def __post_init__(self) -> None:
        if not 0 < self.probe_time_share <= 1:
            raise InvalidProblemError(f"probe_time_share must be in (0, 1], got {self.probe_time_share!r}")


@dataclass(frozen=True)
class Explanation:
    """What ``explain_infeasible`` found: an infeasible subset of the buffers and what is proven about it."""

    problem: Problem  #: the subset (buffers in the original order) under the same capacity; empty when unproven
    proven_infeasible: bool  #: the subset is proven to have no placement (by LOAD or an exhausted search)
    minimal_proven: bool  #: and each subset with one buffer fewer was shown feasible (a placement was found)
    unproven: tuple[BufferId, ...]  #: buffers kept because their removal could not be decided in the limits
    cause: Literal["load", "search", "unproven"]  #: how the subset's infeasibility is proven
    reason: str  #: one line: why the subset has no placement (or why nothing was proven)
    probes: int  #: sub-problems probed (decided by LOAD, greedy-by-size or the exact search, or not decided)
    nodes: int  #: nodes of the exact search over all probes
    seconds: float

    @property
    def ids(self) -> tuple[BufferId, ...]:
        """The ids of the buffers in the subset."""
        return self.problem.ids

    def __len__(self) -> int:
        return len(self.problem)

    def minimality(self) -> str:
        """A few words on minimality: ``"minimal (each removal proven feasible)"`` or what is missing."""
        if not self.proven_infeasible:
            return "nothing proven"
        if self.minimal_proven:
            return "minimal (each removal proven feasible)"
        probes = "probe" if len(self.unproven) == 1 else "probes"
        return f"minimality not proven: {len(self.unproven)} removal {probes} ran out of nodes or time"

    def describe(self, max_ids: int = 10) -> str:
        """One line naming the subset (its ids when there are at most ``max_ids``) and its minimality."""
        if not self.proven_infeasible:
            return self.reason
        n = len(self)
        if n == 1:
            return f"buffer {self.ids[0]!r} cannot be placed ({self.reason}); {self.minimality()}"
        who = "buffers " + ", ".join(repr(bid) for bid in self.ids) if n <= max_ids else f"{n:,} buffers"
        return f"{who} cannot be placed together ({self.reason}); {self.minimality()}"


def explain_infeasible(problem: Problem, timeout: float | None = None, node_limit: int | None = DEFAULT_NODE_LIMIT,
                       options: ExplainOptions | None = None) -> Explanation:
    """A minimal subset of ``problem``'s buffers that has no placement under its capacity.

    Parameters
    ----------
    problem : the buffers and the capacity (required).
    timeout : seconds for the whole explanation, or None. The LOAD case needs almost none.
        When the time runs out, the buffers not yet decided stay in the set (it remains
        proven infeasible, ``minimal_proven`` is then False).
    node_limit : nodes of the exact search per probe (None: no limit but the time). With a
        node limit and no timeout the answer is the same on every machine.
    options : ``ExplainOptions``, the techniques to use.

    Returns an ``Explanation``. When the problem's infeasibility cannot be proven within the
    limits (the exact search ran out on every candidate), the explanation is empty with
    ``proven_infeasible`` False and a ``reason`` saying so.

    Raises ``InvalidProblemError`` for a problem without a capacity or a bad limit, and
    ``FeasibleProblemError`` (a subclass) when the problem turns out to have a placement.

    >>> from allocator.core.problem import Buffer
    >>> p = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 5), Buffer("c", 2, 4, 1), Buffer("d", 1, 2, 2)], 8)
    >>> e = explain_infeasible(p)
    >>> e.ids, e.minimal_proven, e.reason
    (('a', 'b'), True, 'live together at step 1 they need 9 B, more than the capacity 8 B')
    """
    began = work_clock()
    if problem.capacity is None:
        raise InvalidProblemError("explain_infeasible needs a problem with a capacity: without one every problem "
                                  "has a placement")
    if timeout is not None and not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
        raise InvalidProblemError(f"timeout must be positive, finite seconds or None, got {timeout!r}")
    if node_limit is not None and (not isinstance(node_limit, int) or isinstance(node_limit, bool) or node_limit < 1):
        raise InvalidProblemError(f"node_limit must be a positive integer or None, got {node_limit!r}")
    options = options or ExplainOptions()
    search = _Search(problem, None if timeout is None else began + timeout, node_limit, options)
    overloaded = _overloaded(problem)
    if overloaded is not None:
        core, needed = overloaded
    else:
        found = search.initial_core()
        if found is None:
            return Explanation(search.subset(np.zeros(0, np.int64)), False, False, (), "unproven",
                               f"infeasibility not proven: the exact search ran out of nodes or time ({search.probes} "
                               f"probes, {search.nodes:,} nodes)", search.probes, search.nodes,
                               work_clock() - began)
        core, needed = found, set()
    # groups only pay where most buffers can go: in the LOAD case nearly all are needed
    core, unproven = search.deletion_filter(core, needed, groups=options.groups and overloaded is None)
    subset = search.subset(core)
    cause, reason = _why(subset)
    return Explanation(subset, True, not unproven, tuple(problem.ids[i] for i in sorted(unproven)), cause, reason,
                       search.probes, search.nodes, work_clock() - began)


# --- the LOAD case ---------------------------------------------------------------------------


def _overloaded(problem: Problem) -> tuple[np.ndarray, set[int]] | None:
    """``(members, needed)`` when LOAD exceeds the capacity, else None.

    ``members`` are the buffers (indices, sorted) of one section whose largest buffers pass
    the capacity with the fewest of them, taken largest first; ``needed`` the ones minimal by
    arithmetic: all of them when none is pinned and every alignment is 1, none otherwise
    (the deletion filter proves those).
    """
    capacity = problem.capacity
    assert capacity is not None
    starts, ends, sizes, alignments, fixed = problem.arrays(copy=False)
    if not len(starts):
        return None
    sections = sweep_arrays(starts, ends, sizes)
    totals = sections.section_total
    if int(totals.max()) <= capacity:
        return None
    over = np.flatnonzero(totals > capacity)
    compared = over[np.argsort(-totals[over], kind="stable")[:LOAD_SECTIONS_COMPARED]]
    best: np.ndarray | None = None
    for section in compared.tolist():
        live = np.flatnonzero((sections.first_section <= section) & (sections.last_section > section))
        by_size = live[np.lexsort((live, -sizes[live]))]  # largest first, ties by position
        count = int(np.searchsorted(np.cumsum(sizes[by_size]), capacity, side="right")) + 1
        if best is None or count < len(best):
            best = by_size[:count]
    assert best is not None
    members = np.sort(best)
    plain = bool((fixed[members] < 0).all() and (alignments[members] == 1).all())
    return members, set(members.tolist()) if plain else set()


def _why(subset: Problem) -> tuple[Literal["load", "search"], str]:
    """How the subset's infeasibility is proven, as a cause and one line."""
    capacity = subset.capacity
    starts, ends, sizes, _, _ = subset.arrays(copy=False)
    sections = sweep_arrays(starts, ends, sizes)
    worst = int(np.argmax(sections.section_total))
    total = int(sections.section_total[worst])
    if total > (capacity or 0):
        step = int(sections.times[worst])
        if len(subset) == 1:
            return "load", f"at step {step} it needs {total:,} B, more than the capacity {capacity:,} B"
        return "load", f"live together at step {step} they need {total:,} B, more than the capacity {capacity:,} B"
    return "search", f"their LOAD {lower_bound(subset):,} B is within the capacity {capacity:,} B, but the exact " \
                     "search finds no placement"


# --- probes and the deletion filter ----------------------------------------------------------


class _Search:
    """The probes of one explanation: sub-problems of ``problem`` by buffer indices, with their budgets."""

    def __init__(self, problem: Problem, deadline: float | None, node_limit: int | None,
                 options: ExplainOptions) -> None:
        self.problem = problem
        self.capacity: int = problem.capacity or 0
        self.columns = problem.arrays(copy=False)
        self.deadline = deadline
        self.node_limit = node_limit
        self.options = options
        self.probes = 0
        self.nodes = 0

    # sub-problems

    def subset(self, members: np.ndarray) -> Problem:
        """The buffers at ``members`` (sorted indices) under the same capacity."""
        ids = self.problem.ids
        starts, ends, sizes, alignments, fixed = (column[members] for column in self.columns)
        return Problem.from_arrays([ids[i] for i in members.tolist()], starts, ends, sizes, alignments, fixed,
                                   self.capacity)

    def time_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - work_clock()

    def out_of_time(self) -> bool:
        left = self.time_left()
        return left is not None and left <= 0

    def probe(self, members: np.ndarray, share: float | None = None) -> Verdict:
        """Decide whether the buffers at ``members`` have a placement; "unknown" when the limits run out.

        ``share`` is the fraction of the time left this probe may use (default the options').
        """
        self.probes += 1
        sub = self.subset(members)
        if lower_bound(sub) > self.capacity:
            return "infeasible"
        if self.options.heuristic_first:
            placed = greedy_by_size(sub, self.deadline, NoOptions())
            if placed.status == "solved" and placed.offsets is not None and validate(sub, Solution(placed.offsets)):
                return "feasible"
        left = self.time_left()
        if left is not None and left <= 0:
            return "unknown"
        share = self.options.probe_time_share if share is None else share
        deadline = None if left is None else work_clock() + share * left
        outcome = canonical_search(sub, self.capacity, self.options.search, deadline,
                                   node_limit=self.node_limit or 0)
        self.nodes += outcome.nodes
        if outcome.status == "infeasible":
            return "infeasible"
        if outcome.status == "solved":
            assert outcome.offsets is not None
            solution = Solution(dict(zip(sub.ids, outcome.offsets.tolist(), strict=True)))
            report = validate(sub, solution)
            if not report.ok:
                raise InvalidSolutionError(f"explain: the exact search returned an invalid placement: {report}")
            return "feasible"
        return "unknown"

    # shrinking before the deletion

    def components(self, members: np.ndarray) -> list[np.ndarray]:
        """``members`` split into groups that overlap in time within and never across (sorted indices each)."""
        starts, ends = self.columns[0], self.columns[1]
        order = members[np.lexsort((members, starts[members]))]
        reach = np.maximum.accumulate(ends[order])
        breaks = np.flatnonzero(starts[order][1:] >= reach[:-1]) + 1
        return [np.sort(part) for part in np.split(order, breaks)]

    def initial_core(self) -> np.ndarray | None:
        """An infeasible subset (sorted indices) when LOAD fits: one component, or a window of it; None when
        nothing could be proven. Raises ``FeasibleProblemError`` when every component is shown feasible."""
        everything = np.arange(len(self.problem), dtype=np.int64)
        if self.options.components and len(everything):
            parts = self.components(everything)
            # most loaded component first, the likeliest to be infeasible. Components are disjoint
            # in time, so each one's peak is the largest total over its own run of sections.
            sections = sweep_arrays(*self.columns[:3])
            firsts = np.array([sections.first_section[p].min() for p in parts], np.int64)
            peaks = np.maximum.reduceat(sections.section_total, firsts) if len(sections.section_total) else firsts
            lengths = np.array([len(p) for p in parts], np.int64)
            parts = [parts[i] for i in np.lexsort((np.arange(len(parts)), lengths, -peaks)).tolist()]
        else:
            parts = [everything] if len(everything) else []
        undecided = 0
        for at, part in enumerate(parts):
            if self.out_of_time():
                return None
            verdict, core = self.part_core(part, len(parts) - at)
            if verdict == "infeasible":
                return core
            undecided += verdict == "unknown"
        if undecided:
            return None
        raise FeasibleProblemError(f"the problem has a placement in the capacity {self.capacity:,} B (every one of its "
                                   f"{len(parts)} time-connected parts was placed): nothing to explain")

    def part_core(self, part: np.ndarray, parts_left: int) -> tuple[Verdict, np.ndarray]:
        """The verdict on one component and, when infeasible, the smallest infeasible window of it found."""
        if self.options.windows:
            starts, ends, sizes = self.columns[0], self.columns[1], self.columns[2]
            sections = sweep_arrays(starts[part], ends[part], sizes[part])
            centre = int(np.argmax(sections.section_total))
            width, tried = 0, 0
            while True:
                inside = part[(sections.first_section <= centre + width) & (sections.last_section > centre - width)]
                if len(inside) == len(part) or self.out_of_time():
                    break
                if len(inside) > tried:
                    tried = len(inside)
                    if self.probe(inside) == "infeasible":
                        return "infeasible", inside
                width = 2 * width + 1
        verdict = self.probe(part, share=1.0 / parts_left)
        return verdict, part

    def infeasible_part(self, members: np.ndarray, needed: set[int]) -> np.ndarray:
        """The infeasible component of the infeasible set ``members``, or ``members`` when it cannot be told.

        Every infeasible subset of a set holds each buffer proven needed in it, so with one
        known the part holding it is the one; otherwise the parts are probed, smallest first,
        and the last one is infeasible when all the others were shown feasible.
        """
        parts = self.components(members)
        if len(parts) == 1:
            return members
        for part in parts:
            if needed.intersection(part.tolist()):
                return part
        parts.sort(key=len)
        feasible = 0
        for at, part in enumerate(parts):
            if at == len(parts) - 1 and feasible == at:
                return part  # the set is infeasible, and every other part has a placement
            if self.out_of_time():
                break
            verdict = self.probe(part)
            if verdict == "infeasible":
                return part
            feasible += verdict == "feasible"
        return members

    # the deletion filter

    def deletion_order(self, members: np.ndarray) -> list[int]:
        """``members`` farthest (in sections) from their most loaded section first, then smallest, then by index."""
        starts, ends, sizes = self.columns[0], self.columns[1], self.columns[2]
        sections = sweep_arrays(starts[members], ends[members], sizes[members])
        centre = int(np.argmax(sections.section_total))
        first, last = sections.first_section, sections.last_section
        distance = np.where(first > centre, first - centre, np.where(last <= centre, centre - last + 1, 0))
        return members[np.lexsort((members, sizes[members], -distance))].tolist()

    def deletion_filter(self, core: np.ndarray, needed: set[int], groups: bool) -> tuple[np.ndarray, set[int]]:
        """Shrink the infeasible set ``core`` until each buffer is needed: ``(members, unproven)``.

        ``needed`` holds buffers already known to be needed (not probed). ``unproven`` are the
        buffers kept because their probe ran out.
        """
        members = np.sort(core)
        needed = set(needed)
        candidates = [i for i in self.deletion_order(members) if i not in needed]
        unproven: dict[int, int] = {}  # buffer -> size of the set when its probe ran out
        group = max(1, len(candidates) // 2) if groups else 1

        def drop(block: Sequence[int], rest: np.ndarray) -> np.ndarray:
            kept = self.infeasible_part(rest, needed) if self.options.components else rest
            if len(kept) < len(rest) or block:
                left = set(kept.tolist())
                candidates[:] = [i for i in candidates if i in left and i not in block]
                for i in list(unproven):
                    if i not in left:
                        del unproven[i]
            return kept

        while candidates:
            if self.out_of_time():
                for i in candidates:
                    unproven[i] = len(members)
                break
            group = min(group, len(candidates))
            block = candidates[:group]
            rest = np.setdiff1d(members, block, assume_unique=True)
            verdict = self.probe(rest)
            if verdict == "infeasible":
                members = drop(block, rest)
                group = min(2 * group, max(1, len(candidates) // 2)) if groups else 1
            elif group > 1:
                group //= 2
            else:
                candidates.pop(0)
                if verdict == "feasible":
                    needed.add(block[0])
                else:
                    unproven[block[0]] = len(members)
        changed = True
        while self.options.retry_unproven and changed and unproven and not self.out_of_time():
            changed = False
            for i in sorted(unproven, key=lambda i: unproven[i]):
                if i not in unproven or unproven[i] <= len(members) or self.out_of_time():
                    continue  # decided meanwhile, or probed on a set no larger than now
                rest = members[members != i]
                verdict = self.probe(rest)
                if verdict == "infeasible":
                    del unproven[i]
                    members = drop([i], rest)
                    changed = True
                elif verdict == "feasible":
                    del unproven[i]
                    needed.add(i)
                else:
                    unproven[i] = len(members)
        return members, set(unproven)

"""``telamalloc-learned``: TelaMalloc with the learned backtracking model of §6.

The search is ``telamalloc``'s (``allocator.methods.telamalloc``, TelaMalloc §4–5) with one change,
at a major backtrack (§5.4: a decision point has run out of candidates):

* **candidate targets** (§6.2): the levels of the backtrack reason (the conflict set), minus
  the last one, plus the top (the level nearest the root) of each range of levels 0-4, 5-8,
  9-16, 17-32, ... that holds none of them (``allocator.methods.telamalloc_kernel._candidate_targets``);
* **features** (§6.4): for the block placed at each candidate level, its size (share of the
  capacity), lifetime (share of the time span) and contention (most live bytes during its
  lifetime, share of the capacity); the level; how often the block was in a major
  backtrack's reason; the backtracks that landed on that level's choice and those in its
  subtree; whether it is in the contention phase (§5.3) of the last placement; the total
  backtracks. We add the depth backtracked from and the distance to it (a tree cannot
  subtract two columns);
* **scoring** (§6.5): one call of ``allocator.methods.backtrack_model.score`` scores the whole batch
  inside the compiled search; the best score wins when it exceeds ``threshold``, otherwise
  the default rule (the second-to-last level of the conflict set) applies. We do not weight
  scores by depth (§6.5 does, with weights the paper does not give): the labels already score
  targets beyond the minimum target 0, and ties go to the deeper level.

The model only chooses *where* to jump among levels the search could reach anyway, so it can
change the path, never a verdict: a placement is still a placement the search built and
validated, and ``"infeasible"`` is still only reported when a domain is empty before the
first decision (the model is never consulted there). Giving up (``"failed"``) stays possible,
as for ``telamalloc``: both searches are incomplete.

Training data (§6.3, §6.5) comes from ``record`` and ``labels`` (used by
``studies/train_backtracking.py``): the search replays a list of forced targets for its first
k major backtracks and stops at the next one to record its candidates, features and path;
an exact oracle (MiniMalloc's canonical search, ``allocator.methods.minimalloc.canonical_search``, on the
problem with the path's placements pinned, capped by a node limit so it is deterministic)
finds the *minimum* target, the deepest candidate whose kept placements still have a
completion. The *best* target is the deepest candidate above which the path agrees with the
placement the run finally returns (the minimum target when it returns none). The label of a
candidate at level x is §6.4's pointwise score, 10 - 5 (x - B) / (M - B + 1) between the best
B and the minimum M, else 0. Half of the major backtracks (seeded) take the oracle's target and
half the default one, so the recorded runs leave the default path (§6.5).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from allocator.core.problem import Buffer, InvalidProblemError, MinimizeResult, Problem
from allocator.core.registry import MethodOutput, MinimizeRequest
from allocator.core.sections import sweep
from allocator.methods import telamalloc_kernel as kernel
from allocator.methods.backtrack_model import DEFAULT_PATH, N_FEATURES, BacktrackModel, constant, load
from allocator.methods.minimalloc import MiniMallocOptions, canonical_search
from allocator.methods.telamalloc import (
    Probe,
    TelaMallocOptions,
    TelaMallocOutcome,
    descent_minimize,
    descent_output,
    telamalloc_search,
)
from allocator.methods.telamalloc_kernel import MAX_TARGETS, Learning

#: the model a recording search carries (it never scores)
_NO_MODEL = constant(0.0)
#: §6.4's pointwise score: the best target scores this, the minimum target this minus ``SCORE_SPAN``
SCORE_TOP, SCORE_SPAN = 10.0, 5.0


@dataclass(frozen=True)
class LearnedOptions:
    """Options of ``telamalloc-learned``."""

    #: the model's best score must exceed this for its target to replace the default rule's
    #: (labels run from 0, a target outside the best..minimum range, to 10, the best target;
    #: 5 at the minimum). Chosen on generated seeds 3000-3099 (neither training nor §7.3 test
    #: seeds), step limit 100,000, 53 runs with over 1,000 backtracks, with ``fallback``:
    #: 2.25 solved 31 step-limit failures and lost none; 1.5 solved 28, 3 solved 26 and lost 2,
    #: 5 solved 17 and lost 1
    threshold: float = 2.25
    #: path of a model saved by ``allocator.methods.backtrack_model.save``; None: the shipped one
    model: str | None = None
    search: TelaMallocOptions = field(default_factory=TelaMallocOptions)  #: the search's own switches
    #: when the search runs out of candidates after jumps of the model's (a jump skipped the part
    #: of the tree that held the solution), search again with the default rule for the steps
    #: left (§7.3: "allow falling back to the default strategy")
    fallback: bool = True

    def __post_init__(self) -> None:
        if not np.isfinite(self.threshold):
            raise InvalidProblemError(f"threshold must be a finite number, got {self.threshold!r}")


@functools.lru_cache(maxsize=4)
def _model(path: str) -> BacktrackModel:
    return load(path)


def model_of(options: LearnedOptions) -> BacktrackModel:
    """The model ``options`` names (read once per path)."""
    return _model(str(options.model if options.model is not None else DEFAULT_PATH))


def block_features(problem: Problem, capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per buffer: size / capacity, lifetime / time span, and contention (the most live bytes in
    any cross section of its lifetime) / capacity (§6.4's normalisation).

    >>> from allocator.core.problem import Buffer
    >>> p = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 4, 4)])
    >>> [x.tolist() for x in block_features(p, 8)]
    [[0.5, 0.5], [0.5, 0.75], [1.0, 1.0]]
    """
    starts, ends, sizes, _, _ = problem.arrays(copy=False)
    n = len(sizes)
    if n == 0:
        empty = np.zeros(0, np.float64)
        return empty, empty, empty
    span = float(ends.max() - starts.min())
    contention = sweep(problem).span_total()  # the most live bytes over each buffer's sections
    return sizes / float(capacity), (ends - starts) / span, contention / float(capacity)


def learning_record(problem: Problem, capacity: int, model: BacktrackModel, forced: list[int] | None = None,
                    stop_at: int = -1) -> Learning:
    """The compiled search's ``Learning`` record for ``problem`` under ``capacity``."""
    size, lifetime, contention = block_features(problem, capacity)
    return Learning(model=model, size=size.astype(np.float64), lifetime=lifetime.astype(np.float64),
                    contention=contention.astype(np.float64), forced=np.asarray(forced or [], np.int64),
                    stop_at=int(stop_at), record_levels=np.zeros(MAX_TARGETS, np.int64),
                    record_features=np.zeros((MAX_TARGETS, N_FEATURES), np.float64),
                    record_path=np.zeros(max(len(problem), 1), np.int64), record_info=np.zeros(4, np.int64))


def learned_search(problem: Problem, capacity: int, options: LearnedOptions = LearnedOptions(),
                   deadline: float | None = None, step_limit: int | None = None,
                   prepared: Any = None) -> TelaMallocOutcome:
    """``telamalloc_search`` with the model choosing major backtracks' targets (§6.5).

    ``prepared`` is the descent's shared preparation of the problem (see ``telamalloc_minimize``).
    With ``options.fallback``, a search that ran out of candidates after at least one jump of
    the model's is followed by plain ``telamalloc`` with the steps left (the stats add up both
    runs; ``fallback_steps`` are the second's). Without a model jump the path was the default
    one, so searching again would repeat it."""
    learning = learning_record(problem, capacity, model_of(options))
    limit = options.search.step_limit if step_limit is None else step_limit
    outcome = telamalloc_search(problem, capacity, options.search, deadline, limit, prepared=prepared,
                                learning=learning, mode=kernel.MODE_LEARNED, threshold=options.threshold)
    if not (options.fallback and outcome.stats.get("exhausted") and outcome.stats.get("learned_jumps")):
        return outcome
    used = int(outcome.stats["steps"])
    again = telamalloc_search(problem, capacity, options.search, deadline, limit - used, prepared=prepared)
    stats = dict(outcome.stats)
    for key in ("steps", "nodes", "minor_backtracks", "major_backtracks", "backtracks", "stuck_jumps",
                "levels_skipped"):
        stats[key] = outcome.stats[key] + again.stats.get(key, 0)
    stats["max_depth"] = max(outcome.stats["max_depth"], again.stats.get("max_depth", 0))
    stats["fallback_steps"] = again.stats.get("steps", 0)
    return TelaMallocOutcome(again.status, again.offsets, again.reason, stats)


@dataclass
class Recorded:
    """One major backtrack stopped at by ``record``."""

    levels: np.ndarray  #: the candidate target levels
    features: np.ndarray  #: their features (rows as ``levels``)
    path: np.ndarray  #: the buffer placed at each level 0..depth-1
    offsets: np.ndarray  #: their offsets (rows as ``path``)
    default: int  #: the default rule's target


def record(problem: Problem, capacity: int, forced: list[int], options: TelaMallocOptions | None = None,
           step_limit: int | None = None, stop: bool = True) -> tuple[TelaMallocOutcome, Recorded | None]:
    """Replay ``forced`` (the targets of the first ``len(forced)`` major backtracks, -1: default
    rule) and stop at the next major backtrack to record it; ``None`` when the search ended
    first (its outcome tells how). With ``stop`` False the search runs to its end after the
    replay (the default rule from there on)."""
    learning = learning_record(problem, capacity, _NO_MODEL, forced, stop_at=len(forced) if stop else -1)
    outcome = telamalloc_search(problem, capacity, options or TelaMallocOptions(), None, step_limit,
                                learning=learning, mode=kernel.MODE_RECORD)
    if not outcome.stats.get("recorded"):
        return outcome, None
    assert outcome.offsets is not None
    count, depth, default = (int(v) for v in learning.record_info[:3])
    path = learning.record_path[:depth].copy()
    return outcome, Recorded(learning.record_levels[:count].copy(), learning.record_features[:count].copy(), path,
                             outcome.offsets[path].copy(), default)


def prefix_solvable(problem: Problem, capacity: int, path: np.ndarray, offsets: np.ndarray, keep: int,
                    node_limit: int) -> bool | None:
    """Whether the placements of the first ``keep`` levels of ``path`` have a completion under
    ``capacity``: MiniMalloc's canonical search on the problem with them pinned (None: it hit
    ``node_limit`` nodes without an answer)."""
    pinned = dict(zip(path[:keep].tolist(), offsets[:keep].tolist(), strict=True))
    buffers = [b if i not in pinned else Buffer(b.id, b.start, b.end, b.size, b.alignment, int(pinned[i]))
               for i, b in enumerate(problem.buffers)]
    outcome = canonical_search(Problem(buffers, capacity=capacity), capacity,
                               MiniMallocOptions(workers=1, node_limit=node_limit))
    if outcome.status == "solved":
        return True
    if outcome.status == "infeasible":
        return False
    return None


def minimum_target(problem: Problem, capacity: int, step: Recorded, node_limit: int) -> int | None:
    """The minimum backtrack target (§6.3): the deepest candidate level ``t`` whose kept placements
    (levels below ``t``) still have a completion; a binary search over the candidates, since
    fewer kept placements stay solvable. An oracle without an answer counts as unsolvable (the
    label stays on the safe, shallow side). None when not even the shallowest candidate is
    solvable."""
    order = np.sort(step.levels)
    lo, hi = 0, len(order) - 1
    found = None
    while lo <= hi:
        mid = (lo + hi) // 2
        if prefix_solvable(problem, capacity, step.path, step.offsets, int(order[mid]), node_limit):
            found = int(order[mid])
            lo = mid + 1
        else:
            hi = mid - 1
    return found


def best_target(step: Recorded, final: np.ndarray | None, minimum: int) -> int:
    """The best backtrack target (§6.3): the deepest candidate at or above the first level whose
    placement differs from ``final`` (the placement the run returned), at most ``minimum``;
    ``minimum`` when the run returned none."""
    if final is None:
        return minimum
    differs = np.flatnonzero(final[step.path] != step.offsets)
    first = int(differs[0]) if len(differs) else len(step.path)
    above = step.levels[step.levels <= min(first, minimum)]
    return int(above.max()) if len(above) else minimum


def pointwise_scores(levels: np.ndarray, best: int, minimum: int) -> np.ndarray:
    """§6.4's label of each candidate level: 10 - 5 (x - B) / (M - B + 1) for B <= x <= M, else 0.

    >>> pointwise_scores(np.array([0, 2, 4, 6]), 2, 4).tolist()
    [0.0, 10.0, 6.666666666666666, 0.0]
    """
    inside = (levels >= best) & (levels <= minimum)
    return np.where(inside, SCORE_TOP - SCORE_SPAN * (levels - best) / (minimum - best + 1), 0.0)


def learned_anytime(problem: Problem, request: MinimizeRequest) -> MinimizeResult:
    """The anytime routine for ``allocator.minimize``: ``telamalloc``'s descent, every probe a
    learned search (``request.options``: a ``LearnedOptions``, None for the defaults; another record
    raises ``TypeError``)."""
    options = request.options_or_defaults(LearnedOptions)
    return descent_minimize(problem, request, options.search, _probe(options))


def _probe(options: LearnedOptions) -> Probe:
    """A capacity probe of the descent running the learned search."""
    def probe(free: Problem, capacity: int, until: float | None, budget: int, prepared: Any) -> TelaMallocOutcome:
        return learned_search(free, capacity, options, until, budget, prepared)

    return probe


def telamalloc_learned(problem: Problem, deadline: float | None, options: LearnedOptions) -> MethodOutput:
    """Place ``problem`` under its capacity with the learned backtracking search, or minimise
    its peak when it has none (``telamalloc``'s descent, every probe a learned search)."""
    if problem.capacity is None:
        return descent_output(problem, deadline, options.search, _probe(options))
    outcome = learned_search(problem, problem.capacity, options, deadline)
    placed = None
    if outcome.status == "solved" and outcome.offsets is not None:
        placed = dict(zip(problem.ids, outcome.offsets.tolist(), strict=True))
    return MethodOutput(outcome.status, placed, outcome.reason, outcome.stats)


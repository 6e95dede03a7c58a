"""Millions of long, overlapping lifetimes: the exact search stays bounded (issue 22).

On two million random buffers (15 % of them live over a quarter of the horizon or more) the
canonical search used to walk every section of every buffer: at the root (minutes before it
first read the clock) and at each node for section inference's effective heights and the
groups' re-ranking. ``alloc --method minimalloc --timeout 10`` then ran 234 s. The root now
counts sections from differences and those two per-node walks go through segment trees when
the lifetimes add up to far more sections than a tree costs; the tree gives the same values,
so the search takes the same path (checked here against the walk, ``section_trees=False``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from allocator import Problem, lower_bound, solve
from allocator.core.generators import generate
from allocator.methods import minimalloc_kernel as kernel
from allocator.methods.minimalloc import MiniMallocOptions, PreparedProblem, kernel_switches


def _staggered(seed: int, n: int = 1000) -> Problem:
    """Buffers that start one after another and live 40 to 120 steps: every section is crossed
    by dozens of them, so their lifetimes add up to far more sections than a tree costs (and to
    more than ``TREE_MIN_SPAN``)."""
    rng = np.random.default_rng(seed)
    starts = np.arange(n) + rng.integers(0, 3, n)
    ends = starts + rng.integers(40, 120, n)
    alignments = np.where(rng.random(n) < 0.3, 4, 1)
    sizes = (rng.integers(1, 9, n) + alignments - 1) // alignments * alignments
    return Problem.from_arrays([f"b{i}" for i in range(n)], starts, ends, sizes, alignments)


def _trees_used_at_the_root(data: PreparedProblem) -> bool:
    """The kernel's ``_tree_worthwhile`` for the whole problem (the root node's group)."""
    span = int((data.last_sec - data.first_sec).sum())
    width = int(data.n_sections)
    return span >= kernel.TREE_MIN_SPAN and span > 4 * (data.n * max(1, math.ceil(math.log2(width))) + width)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("extra", [0, 2, 10])
def test_section_trees_take_the_same_search_path_as_the_walk(seed, extra):
    problem = _staggered(seed)
    data = PreparedProblem(problem)
    assert _trees_used_at_the_root(data)  # else the comparison would mean nothing
    capacity = lower_bound(problem) + extra
    for key in ("TWA", "WAT"):
        made = data.preorder(key, True)
        assert made is not None
        preorder, rerank = made
        outcomes = []
        for trees in (True, False):
            own = kernel_switches(MiniMallocOptions(section_trees=trees), data.n)
            if not rerank:
                own = own._replace(rerank_groups=False)
            result = kernel.run_search(data.instance(False), preorder, own, capacity=capacity, node_limit=2_000,
                                       deadline=-1.0, stop=np.zeros(1, np.int64), table=kernel.new_table(own))
            outcomes.append((result.status, result.nodes, result.backtracks, result.splits,
                             result.offsets.tolist()))
        assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("seed", range(20))
def test_the_rank_from_the_re_ranking_keys_is_the_preorder_rank(seed):
    # preorder() derives the rank from (pre, T, post) in one sort of three keys
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    starts = rng.integers(0, 12, n)
    problem = Problem.from_arrays([f"b{i}" for i in range(n)], starts, starts + rng.integers(1, 6, n),
                                  rng.integers(1, 5, n))
    data = PreparedProblem(problem)
    noise = None if seed % 2 else 1.0 + 0.3 * rng.random(n)
    for key in ("TWA", "TAW", "WAT", "AT", "T", "SWT", "WA"):
        made = data.preorder(key, True, noise)
        assert made is not None
        assert (made[0].rank == data.rank(key, noise)).all()


def test_preparing_the_search_stops_at_a_passed_deadline():
    data = PreparedProblem(_staggered(0))
    assert data.preorder("TWA", True, deadline=0.0) is None  # time.perf_counter() is far past 0


def test_minimalloc_on_400000_random_buffers_stops_near_its_time_limit():
    # 15 % of the buffers live a quarter of the horizon or more: their lifetimes add up to about
    # 10**10 sections, which the search walked before it first read the clock (a hang check:
    # the bound is generous, the outcome is what is asserted)
    problem = generate("random", 400_000, seed=1)
    result = solve(problem.with_capacity(lower_bound(problem)), "minimalloc", timeout=1.0)
    assert result.status == "timeout"
    assert result.stats["seconds"] < 60

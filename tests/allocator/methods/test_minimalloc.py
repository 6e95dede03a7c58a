"""The canonical search: its verdict equals an independent CP-SAT check, with every technique on or off."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from allocator import Buffer, Problem, lower_bound, solve, validate
from allocator.methods.minimalloc import MiniMallocOptions


def cpsat_feasible(problem: Problem) -> bool:
    """Independent check: CP-SAT with one interval per buffer and a 2-D no-overlap."""
    model = cp_model.CpModel()
    xs, ys = [], []
    for b in problem.buffers:
        if b.offset is not None:
            k = model.new_constant(b.offset // b.alignment)
        else:
            k = model.new_int_var(0, (problem.capacity - b.size) // b.alignment, f"k{b.id}")
        y = model.new_int_var(0, problem.capacity, f"y{b.id}")
        model.add(y == b.alignment * k)
        model.add(y + b.size <= problem.capacity)
        xs.append(model.new_fixed_size_interval_var(b.start, b.end - b.start, f"x{b.id}"))
        ys.append(model.new_interval_var(y, b.size, y + b.size, f"iy{b.id}"))
    model.add_no_overlap_2d(xs, ys)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    status = solver.solve(model)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE)
    return status != cp_model.INFEASIBLE


@st.composite
def small_problems(draw):
    n = draw(st.integers(1, 12))
    buffers = []
    for i in range(n):
        start = draw(st.integers(0, 8))
        end = start + draw(st.integers(1, 5))
        alignment = draw(st.sampled_from([1, 1, 1, 2, 4]))
        size = draw(st.integers(1, 6))
        buffers.append((f"b{i}", start, end, size, alignment))
    load = lower_bound(Problem([Buffer(*b) for b in buffers]))
    capacity = draw(st.integers(max(load, 1), load + 6))
    fixed = []
    for bid, start, end, size, alignment in buffers:
        offset = None
        if draw(st.integers(0, 5)) == 0 and capacity - size >= 0:
            offset = draw(st.integers(0, (capacity - size) // alignment)) * alignment
        if offset is not None and any(p.offset is not None and p.start < end and start < p.end
                                      and p.offset < offset + size and offset < p.offset + p.size for p in fixed):
            offset = None  # pins that clash are an input error (Problem refuses them), not an instance
        fixed.append(Buffer(bid, start, end, size, alignment, offset))
    return Problem(fixed, capacity)


ABLATIONS = {
    "all": MiniMallocOptions(),
    "no-canonical": MiniMallocOptions(canonical=False),
    "no-section-inference": MiniMallocOptions(section_inference=False),
    "no-offset-floor": MiniMallocOptions(offset_floor=False),
    "no-effective-height": MiniMallocOptions(effective_height=False),
    "no-dominance": MiniMallocOptions(dominance=False),
    "no-decomposition": MiniMallocOptions(decomposition=False),
    "no-portfolio": MiniMallocOptions(portfolio=False),
    "size-preorder": MiniMallocOptions(preorders=("S", "AS")),
    "no-restart-groups": MiniMallocOptions(restart_groups=False),
    "no-failed-state-table": MiniMallocOptions(failed_state_table=False),
    "staircase": MiniMallocOptions(staircase=True),
    "rank-first": MiniMallocOptions(lowest_offset_first=False),
    "no-twins": MiniMallocOptions(twins=False),
    "random-preorders": MiniMallocOptions(random_preorders=3),
    "no-hatless": MiniMallocOptions(hatless=False),
    "no-rerank-groups": MiniMallocOptions(rerank_groups=False),
    "no-offset-ceiling": MiniMallocOptions(offset_ceiling=False),
    "no-keep-tables": MiniMallocOptions(keep_tables=False),
    "one-worker": MiniMallocOptions(workers=1),
}


@pytest.mark.parametrize("ablation", sorted(ABLATIONS))
@settings(max_examples=30)  # 20 ablations x 30 examples: the fast suite stays fast
@given(problem=small_problems())
def test_verdict_matches_cpsat_with_each_technique_switched_off(ablation, problem):
    # a node budget, not a time limit, bounds the search: the outcome cannot depend on the load
    result = solve(problem, "minimalloc", options=replace(ABLATIONS[ablation], node_limit=1_000_000))
    assert result.status in ("solved", "infeasible"), result.reason
    assert (result.status == "solved") == cpsat_feasible(problem)
    if result.solved:
        assert validate(problem, result.solution).ok


def test_paper_example_and_its_infeasible_capacity():
    bufs = [Buffer("b1", 0, 3, 4), Buffer("b2", 3, 9, 4), Buffer("b3", 0, 9, 4), Buffer("b4", 9, 21, 4),
            Buffer("b5", 0, 21, 4)]
    r = solve(Problem(bufs, 12), "minimalloc")
    assert r.solved and r.peak <= 12 and r.stats["nodes"] >= 5
    assert solve(Problem(bufs, 11), "minimalloc").status == "infeasible"  # LOAD 12


def test_the_node_limit_keyword_replaces_the_options_field():
    bufs = [Buffer("b1", 0, 3, 4), Buffer("b2", 3, 9, 4), Buffer("b3", 0, 9, 4), Buffer("b4", 9, 21, 4),
            Buffer("b5", 0, 21, 4)]
    stopped = solve(Problem(bufs, 12), "minimalloc", node_limit=1)
    assert stopped.status == "timeout" and "node limit of 1 reached" in stopped.reason
    assert solve(Problem(bufs, 12), "minimalloc", options=MiniMallocOptions(node_limit=1), node_limit=1000).solved


def test_exhausted_search_is_reported_infeasible_not_timeout():
    # LOAD is 4 but the two 2-byte buffers pinned at 1 and the free 2-byte one leave no aligned room.
    p = Problem([Buffer("a", 0, 2, 1, offset=1), Buffer("b", 0, 2, 2, alignment=2)], capacity=3)
    r = solve(p, "minimalloc")
    assert r.status == "infeasible" and "exhausted" in r.reason


def test_options_reject_unknown_preorder():
    with pytest.raises(ValueError, match="preorder"):
        replace(MiniMallocOptions(), preorders=("TWX",))


def _staggered(n: int, seed: int) -> Problem:
    """A chain of overlapping buffers that decomposes in time as it is placed."""
    import random

    rng = random.Random(seed)
    buffers = []
    for i in range(n):
        start = rng.randrange(0, 3 * n)
        buffers.append(Buffer(f"b{i}", start, start + rng.randrange(1, 8), rng.randrange(1, 40), rng.choice([1, 2, 4])))
    problem = Problem(buffers)
    return Problem(buffers, lower_bound(problem) + 4)


@pytest.mark.parametrize("seed", range(6))
def test_placement_does_not_depend_on_worker_count(seed):
    problem = _staggered(60, seed)
    one = solve(problem, "minimalloc", options=MiniMallocOptions(workers=1, random_preorders=2))
    two = solve(problem, "minimalloc", options=MiniMallocOptions(workers=2, random_preorders=2))
    assert one.status == two.status
    if one.solved:
        assert validate(problem, one.solution).ok
        assert one.solution.offsets == two.solution.offsets


def test_groups_are_reranked_during_the_search():
    problem = _staggered(60, 1)
    result = solve(problem, "minimalloc", options=MiniMallocOptions(workers=1))
    assert result.stats["splits"] > 0  # the decomposition (and so the re-ranking) ran

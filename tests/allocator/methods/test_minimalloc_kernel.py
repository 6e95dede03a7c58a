"""``allocator.methods.minimalloc_kernel``, the compiled canonical search: its interface, its limits, its arithmetic.

Typed records, keyword limits and cached compilation; time limits that are limits (the search
stops at its deadline however slow its nodes are, never starts a run after it, and lets Ctrl-C
through); and int64 arithmetic that never wraps around for values near 2**62.
"""

import inspect
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import fields, replace
from itertools import permutations
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st
from numba.core.registry import CPUDispatcher

from allocator import Buffer, Problem, Solution, lower_bound, minimize, read_csv, solve, validate
from allocator.core.kernel_clock import work_clock
from allocator.methods import minimalloc_kernel as kernel
from allocator.methods.minimalloc import MiniMallocOptions, PreparedProblem, canonical_search, kernel_switches

# --------------------------------------------------------------------------------------------------
# The compiled canonical search's interface: typed records, keyword limits, cached compilation.


DEFAULT = kernel_switches(MiniMallocOptions(), 100)

#: each option switched away from its default, and the kernel switches that must change with it
#: (the dependencies: dominance and offset_floor need the canonical order, re-ranking needs
#: group restarts, hatless pruning needs lowest-offset-first, the offset ceiling needs section
#: inference with the offset floor)
OPTION_EFFECTS = {
    "canonical": {"canonical", "dominance", "offset_floor", "offset_ceiling"},
    "section_inference": {"section_inference", "offset_ceiling"},
    "offset_floor": {"offset_floor", "offset_ceiling"},
    "effective_height": {"effective_height"},
    "staircase": {"staircase"},
    "dominance": {"dominance"},
    "decomposition": {"decomposition"},
    "restart_groups": {"restart_groups", "rerank_groups"},
    "rerank_groups": {"rerank_groups"},
    "lowest_offset_first": {"lowest_offset_first", "hatless"},
    "hatless": {"hatless"},
    "offset_ceiling": {"offset_ceiling"},
    "failed_state_table": {"table_bits"},
    "section_trees": {"section_trees"},
}


@pytest.mark.parametrize("option", sorted(OPTION_EFFECTS))
def test_each_option_reaches_exactly_its_own_kernel_switches(option):
    flipped = replace(MiniMallocOptions(), **{option: not getattr(MiniMallocOptions(), option)})
    switches = kernel_switches(flipped, 100)
    changed = {name for name in kernel.SearchSwitches._fields if getattr(switches, name) != getattr(DEFAULT, name)}
    assert changed == OPTION_EFFECTS[option]


def test_every_switch_of_the_kernel_is_driven_by_an_option():
    driven = set().union(*OPTION_EFFECTS.values())
    assert driven == set(kernel.SearchSwitches._fields)
    assert set(OPTION_EFFECTS) <= {f.name for f in fields(MiniMallocOptions)}


def test_staircase_needs_effective_height():
    assert not kernel_switches(MiniMallocOptions(staircase=True, effective_height=False), 10).staircase


def test_switches_are_typed_for_the_kernel():
    # numba compiles one specialisation per record type: every switch a bool, the table size an int
    assert all(type(value) is bool for value in DEFAULT[:-1]) and type(DEFAULT.table_bits) is int


def test_limits_are_keyword_only():
    params = inspect.signature(kernel.run_search).parameters
    assert [p.name for p in params.values() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD] == [
        "instance", "preorder", "switches"]
    assert {p.name for p in params.values() if p.kind is inspect.Parameter.KEYWORD_ONLY} == {
        "capacity", "node_limit", "deadline", "stop", "table"}


def test_every_compiled_function_is_cached_on_disk():
    compiled = {name: f for name, f in vars(kernel).items() if isinstance(f, CPUDispatcher)}
    assert "search" in compiled and len(compiled) > 10
    uncached = sorted(name for name, f in compiled.items() if f.stats.cache_path is None)
    assert uncached == []


def test_run_search_places_the_paper_example():
    bufs = [Buffer("b1", 0, 3, 4), Buffer("b2", 3, 9, 4), Buffer("b3", 0, 9, 4), Buffer("b4", 9, 21, 4),
            Buffer("b5", 0, 21, 4)]
    data = PreparedProblem(Problem(bufs))
    preorder, _ = data.preorder("TWA", twins=True)
    result = kernel.run_search(data.instance(False), preorder, DEFAULT._replace(table_bits=12), capacity=12,
                               node_limit=1000, deadline=-1.0, stop=np.zeros(1, np.int64))
    assert result.status == kernel.SOLVED and result.nodes >= 5
    tops = result.offsets + data.sizes
    assert tops.max() <= 12
    for i, a in enumerate(bufs):  # the placement has no two overlapping buffers
        for j, b in enumerate(bufs[:i]):
            if a.overlaps_in_time(b):
                assert tops[i] <= result.offsets[j] or tops[j] <= result.offsets[i]
    exhausted = kernel.run_search(data.instance(False), preorder, DEFAULT._replace(table_bits=12), capacity=11,
                                  node_limit=1000, deadline=-1.0, stop=np.zeros(1, np.int64))
    assert exhausted.status == kernel.EXHAUSTED


def test_the_scratch_leaves_out_what_the_switches_and_the_instance_rule_out():
    # a None is a type to numba: the search is compiled without the tree or staircase code
    small = PreparedProblem(Problem([Buffer(f"b{i}", i, i + 3, 4) for i in range(20)]))
    instance = small.instance(False)
    assert instance.sections_spanned == int((instance.last_section - instance.first_section).sum())
    assert instance.sections_spanned < kernel.TREE_MIN_SPAN
    effective, tree, stairs = kernel.scratch(instance, DEFAULT)
    assert tree is None and stairs is None and effective.shape == (instance.n_sections,) and not effective.any()
    _, _, stairs = kernel.scratch(instance, DEFAULT._replace(staircase=True))
    assert stairs is not None and stairs.shape == (2, small.n + 1)
    long_lived = PreparedProblem(Problem([Buffer(f"b{i}", i, i + 400, 4) for i in range(400)]))
    wide = long_lived.instance(False)
    assert wide.sections_spanned == int((wide.last_section - wide.first_section).sum()) >= kernel.TREE_MIN_SPAN
    _, tree, _ = kernel.scratch(wide, DEFAULT)
    assert tree is not None and tree.shape == (2 * wide.n_sections + 2,)
    assert kernel.scratch(wide, DEFAULT._replace(section_trees=False))[1] is None


@pytest.mark.parametrize("seed", range(4))
def test_the_search_takes_the_same_path_with_or_without_a_tree_below_its_minimum_span(seed):
    # below TREE_MIN_SPAN no group builds a tree, so leaving it out (what run_search does) changes nothing
    problem = _random_problem(seed)
    data = PreparedProblem(problem)
    instance = data.instance(False)
    preorder, _ = data.preorder("TWA", twins=True)
    capacity = lower_bound(problem) + 4
    outcomes = []
    for tree in (np.empty(2 * instance.n_sections + 2, np.int64), None):
        table = kernel.new_table(DEFAULT)
        got = kernel.search(instance, preorder, DEFAULT, capacity=capacity, node_limit=3_000, deadline=-1.0,
                            stop=np.zeros(1, np.int64), table=table, effective=np.zeros(instance.n_sections, np.int64),
                            tree=tree, stairs=None)
        outcomes.append((int(got[0]), got[1].tolist(), int(got[2]), int(got[3])))
    assert outcomes[0] == outcomes[1]


_FIRST_SEARCH = """
import json
from allocator import read_csv, solve
from allocator.methods import minimalloc_kernel as kernel
problem = read_csv("benchmarks/minimalloc/challenging/C.1048576.csv").with_capacity(1048576)
assert solve(problem, "minimalloc", None, workers=1).solution is not None
print(json.dumps({name: len(getattr(kernel, name).signatures) for name in
                  ("search", "_rerank", "_sections_hold", "_max_tree", "_tree_max", "_lowest_over_spans",
                   "_staircase_holds")}))
"""


@pytest.mark.slow
def test_a_first_search_on_a_small_instance_compiles_no_tree_or_staircase_code(tmp_path):
    # with an empty cache the whole search compiles in this process: what it reaches is what it compiled
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _FIRST_SEARCH], env=env, cwd=Path(__file__).resolve().parents[3],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    compiled = json.loads(done.stdout.splitlines()[-1])
    assert compiled == {"search": 1, "_rerank": 1, "_sections_hold": 1, "_max_tree": 0, "_tree_max": 0,
                        "_lowest_over_spans": 0, "_staircase_holds": 0}


def _solution(problem: Problem, offsets: np.ndarray) -> Solution:
    return Solution({b.id: int(o) for b, o in zip(problem.buffers, offsets, strict=True)})


def _random_problem(seed: int, n: int = 60) -> Problem:
    rng = random.Random(seed)
    buffers = []
    for i in range(n):
        start = rng.randrange(0, 20)
        buffers.append(Buffer(f"b{i}", start, start + rng.randrange(1, 4), rng.choice([4, 8, 8, 12]),
                              rng.choice([1, 4]), 64 * rng.randrange(4) if i % 17 == 0 else None))
    try:
        return Problem(buffers)
    except ValueError:  # pinned buffers that clash: keep the free ones
        return Problem([b for b in buffers if b.offset is None])


@pytest.mark.parametrize("seed", range(4))
def test_twins_are_the_identical_free_buffer_just_before_in_rank_order(seed):
    problem = _random_problem(seed)
    data = PreparedProblem(problem)
    rank = data.rank("TWA")
    bufs = problem.buffers
    expected = np.full(len(bufs), -1)
    order = sorted(range(len(bufs)), key=lambda i: (bufs[i].start, bufs[i].end, bufs[i].size, bufs[i].alignment,
                                                    rank[i]))
    for a, b in zip(order, order[1:], strict=False):
        same = (bufs[a].start, bufs[a].end, bufs[a].size, bufs[a].alignment) == (
            bufs[b].start, bufs[b].end, bufs[b].size, bufs[b].alignment)
        if same and bufs[a].offset is None and bufs[b].offset is None:
            expected[b] = a
    assert (data.twin_before(rank) == expected).all()
    assert (expected >= 0).any()  # the instance has twins, so the check means something


@pytest.mark.parametrize("seed", range(3))
def test_a_node_budget_gives_the_same_search_with_any_number_of_workers(seed):
    problem = _random_problem(seed, 80)
    capacity = lower_bound(problem)
    outcomes = [canonical_search(problem, capacity, MiniMallocOptions(workers=w, node_limit=3000)) for w in (1, 2)]
    assert outcomes[0].status == outcomes[1].status
    assert outcomes[0].sequential_nodes == outcomes[1].sequential_nodes <= 3000
    if outcomes[0].status == "node_limit":
        assert outcomes[0].sequential_nodes == 3000  # the whole budget was spent
    if outcomes[0].status == "solved":
        assert (outcomes[0].offsets == outcomes[1].offsets).all()


def test_node_limit_reached_is_a_timeout_that_says_so():
    problem = _random_problem(1, 80)
    result = solve(problem.with_capacity(lower_bound(problem)), "minimalloc",
                   options=MiniMallocOptions(workers=1, node_limit=1))
    assert result.status == "timeout" and "node limit of 1 " in result.reason and result.solution is None
    assert result.stats["nodes"] == 1


@pytest.mark.parametrize("lowest_offset_first", [True, False])
def test_the_offset_ceiling_skips_only_candidates_section_inference_refutes(lowest_offset_first):
    # The same depth-first search with and without the ceiling: same verdict and placement
    # (the skipped candidates would have been placed and refuted), never more nodes.
    fewer = 0
    for seed in range(6):
        problem = _random_problem(seed, 80)
        data = PreparedProblem(problem)
        preorder, _ = data.preorder("TWA", twins=True)
        load = lower_bound(problem)
        for capacity in (load - 4, load, load + 8):
            runs = []
            for ceiling in (True, False):
                options = MiniMallocOptions(offset_ceiling=ceiling, lowest_offset_first=lowest_offset_first)
                runs.append(kernel.run_search(data.instance(False), preorder, kernel_switches(options, data.n),
                                              capacity=capacity, node_limit=20_000, deadline=-1.0,
                                              stop=np.zeros(1, np.int64)))
            with_ceiling, without = runs
            if without.status == kernel.NODE_LIMIT:
                continue  # both stopped part-way, at different points of the same search
            assert with_ceiling.status == without.status
            assert with_ceiling.nodes <= without.nodes
            fewer += with_ceiling.nodes < without.nodes
            if without.status == kernel.SOLVED:
                assert (with_ceiling.offsets == without.offsets).all()
                assert validate(problem.with_capacity(capacity), _solution(problem, with_ceiling.offsets)).ok
    assert fewer >= 3  # the ceiling did skip candidates, so the comparison means something


def test_a_kept_table_remembers_an_exhausted_search():
    problem = _random_problem(2, 80)
    data = PreparedProblem(problem)
    preorder, _ = data.preorder("TWA", twins=True)
    switches = kernel_switches(MiniMallocOptions(), data.n)
    table = kernel.new_table(switches)
    capacity = lower_bound(problem) - 4  # infeasible, and refuted by a search of a few nodes

    def run():
        return kernel.run_search(data.instance(False), preorder, switches, capacity=capacity, node_limit=10_000,
                                 deadline=-1.0, stop=np.zeros(1, np.int64), table=table)

    first = run()
    assert first.status == kernel.EXHAUSTED and first.nodes > 0
    again = run()  # the root's state is in the table: nothing left to search
    assert again.status == kernel.EXHAUSTED and again.nodes == 0 and again.table_hits == 1


def test_kept_tables_let_each_round_go_on_where_the_last_stopped(benchmarks):
    # G (308 buffers) takes several rounds; each round of a preorder skips the subtrees it
    # exhausted in the round before, so the portfolio needs fewer nodes (measured: 6,037 vs 7,413)
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / "G.1048576.csv", capacity=1_048_576)
    kept, fresh = (canonical_search(problem, 1_048_576, MiniMallocOptions(workers=1, keep_tables=keep))
                   for keep in (True, False))
    assert kept.status == fresh.status == "solved"
    assert kept.runs > 3 and kept.table_hits > fresh.table_hits
    assert kept.sequential_nodes < fresh.sequential_nodes
    assert validate(problem, _solution(problem, kept.offsets)).ok


# --------------------------------------------------------------------------------------------------
# Time limits are limits: the canonical search stops at its deadline however slow its nodes are,
# never starts a run after it, and lets Ctrl-C through. No test here reads the wall clock: a
# fake clock that advances one second per reading makes every deadline a count of readings.


class FakeClock:
    """``time.perf_counter`` replaced by a counter: each reading advances one second."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.readings = 0

    def __call__(self) -> float:
        self.readings += 1
        self.now += 1.0
        return self.now


def _stack(n: int) -> Problem:
    """``n`` buffers all live at once: every node of the search scans all ``n`` of them."""
    problem = Problem([Buffer(f"b{i}", 0, 1, 1 + i % 7) for i in range(n)])
    return problem.with_capacity(lower_bound(problem))


def test_a_deadline_already_past_searches_nothing():
    problem = _stack(50)
    outcome = canonical_search(problem, problem.capacity, MiniMallocOptions(workers=1),
                               deadline=work_clock() - 1.0)
    assert outcome.status == "timeout" and outcome.nodes == 0 and outcome.runs == 0


def test_slow_nodes_read_the_clock_by_work_not_by_node_count(monkeypatch):
    # Each node here visits 20,000 buffers. Reading the clock every 1,024 nodes (as the search
    # once did) would search 20 million buffers past the deadline; reading it every
    # CLOCK_WORK buffers stops within a few dozen nodes of it.
    problem = _stack(20_000)
    clock = FakeClock()
    monkeypatch.setattr(time, "perf_counter", clock)
    # the deadline on the search's own clock (the fake one, less the seconds kernels took to load)
    outcome = canonical_search(problem, problem.capacity, MiniMallocOptions(workers=1, portfolio=False),
                               deadline=work_clock() + 12)
    assert outcome.status == "timeout"
    assert 0 < outcome.nodes <= 12 * kernel.CLOCK_WORK // 20_000 + 2


def test_a_run_that_starts_after_the_deadline_searches_nothing():
    # on threads a run can start late (its turn came after the deadline): it must not search
    problem = _stack(50)
    data = PreparedProblem(problem)
    preorder, _ = data.preorder("TWA", twins=True)
    result = kernel.run_search(data.instance(False), preorder, kernel_switches(MiniMallocOptions(), 50),
                               capacity=problem.capacity, node_limit=10**9, deadline=work_clock() - 1.0,
                               stop=np.zeros(1, np.int64))
    assert result.status == kernel.TIME_LIMIT and result.nodes == 0


def test_the_timeout_reason_says_the_time_ran_out(monkeypatch):
    problem = _stack(20_000)
    clock = FakeClock()
    monkeypatch.setattr(time, "perf_counter", clock)
    result = solve(problem, "minimalloc", timeout=30, options=MiniMallocOptions(workers=1))
    assert result.status == "timeout" and result.solution is None
    assert result.reason.startswith("ran out of time after")


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_stops_the_search_as_a_keyboard_interrupt(benchmarks, workers):
    # D at its LOAD is beyond the search (no deadline, no node limit): only Ctrl-C ends it
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / "D.1048576.csv")
    problem = problem.with_capacity(lower_bound(problem))
    # Python's own handler: a library loaded earlier (OR-Tools' CP-SAT) may have replaced it
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            canonical_search(problem, problem.capacity, MiniMallocOptions(workers=workers))
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)


def test_capacity_beyond_the_kernels_range_is_refused():
    problem = Problem([Buffer("a", 0, 1, 8)])
    with pytest.raises(ValueError, match="MAX_VALUE"):
        canonical_search(problem, 2**62, MiniMallocOptions(workers=1))


# --------------------------------------------------------------------------------------------------
# Values near 2**62: the canonical search's int64 arithmetic never wraps around.
#
# ``allocator.core.problem`` bounds every value and the stacked sum of sizes plus alignments by
# MAX_VALUE = 2**62 - 1; within that range the search must give the same verdicts as a brute
# force over placement orders in exact Python integers, and ``minimize`` the same optimum.


MAX_VALUE = 2**62 - 1


def _floor_peak(buffers: list[Buffer], order: tuple[int, ...]) -> int:
    """Peak of placing ``buffers`` in ``order``, each at the lowest aligned offset above the
    placed buffers it meets in time. Every placement can be pushed down into such a one (sort
    it by offset), so the least peak over all orders is the optimum."""
    tops: dict[int, int] = {}
    for i in order:
        b = buffers[i]
        floor = max((tops[j] for j in tops if b.overlaps_in_time(buffers[j])), default=0)
        offset = -(-floor // b.alignment) * b.alignment
        tops[i] = offset + b.size
    return max(tops.values(), default=0)


def brute_force_optimum(buffers: list[Buffer]) -> int:
    return min(_floor_peak(buffers, order) for order in permutations(range(len(buffers))))


@st.composite
def huge_problems(draw):
    n = draw(st.integers(2, 4))
    buffers = []
    for i in range(n):
        start = draw(st.integers(0, MAX_VALUE - 1))
        end = draw(st.integers(start + 1, MAX_VALUE))
        size = draw(st.integers(10**17, MAX_VALUE // n - 2**56))
        alignment = 2 ** draw(st.integers(0, 55))
        buffers.append(Buffer(f"b{i}", start, end, size, alignment))
    capacity = draw(st.integers(max(b.size for b in buffers), MAX_VALUE))
    try:
        return Problem(buffers, capacity)
    except ValueError:  # beyond the stacked-sum limit of allocator.core.problem
        reject()


@settings(max_examples=40)
@given(huge_problems())
def test_verdict_near_2_62_matches_brute_force(problem):
    buffers = list(problem.buffers)
    fits = brute_force_optimum(buffers) <= problem.capacity
    result = solve(problem, "minimalloc", options=MiniMallocOptions(workers=1, node_limit=100_000))
    assert result.status == ("solved" if fits else "infeasible"), result.reason
    if fits:
        assert validate(problem, result.solution).ok


@settings(max_examples=15)
@given(huge_problems())
def test_minimize_near_2_62_reaches_the_brute_force_optimum(problem):
    free = problem.with_capacity(None)
    result = minimize(free, timeout=600, node_limit=100_000, options=MiniMallocOptions(workers=1))
    assert validate(free, result.solution).ok
    assert result.optimal and result.peak == brute_force_optimum(list(free.buffers))


def test_three_buffers_of_one_and_a_half_exabytes_fit_under_4_6e18():
    # the case, inside the limits: 3 x 1.5e18 B live together, capacity 4.6e18
    size = 1_500_000_000_000_000_000
    buffers = [Buffer(f"x{i}", i, 2**61 + i, size, 2**20) for i in range(3)]
    problem = Problem(buffers, capacity=4_600_000_000_000_000_000)
    assert lower_bound(problem) == 3 * size
    result = solve(problem, "minimalloc", options=MiniMallocOptions(workers=1))
    assert result.solved and validate(problem, result.solution).ok
    tight = problem.with_capacity(3 * size)  # the alignment padding no longer fits
    assert brute_force_optimum(list(problem.buffers)) > 3 * size
    assert solve(tight, "minimalloc", options=MiniMallocOptions(workers=1)).status == "infeasible"


def test_area_order_survives_products_beyond_int64():
    # width x size = 2**70 wraps to 0 in int64; the order must still put that buffer first
    huge = Buffer("huge", 0, 2**40, 2**30)
    small = Buffer("small", 0, 2, 2**30)
    rank = PreparedProblem(Problem([small, huge])).rank("A")
    assert rank.tolist() == [1, 0]

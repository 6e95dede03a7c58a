"""The TelaMalloc search: sound verdicts, valid placements, every switch, phases, descent, limits.

No test here reads the clock: budgets are steps, and the time limit is tested with a deadline
that has already passed (the tests at the end of this file).
"""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from allocator import Buffer, InvalidProblemError, Problem, lower_bound, minimize, read_csv, solve, validate
from allocator.core.kernel_clock import work_clock
from allocator.core.problem import Solution
from allocator.core.registry import starting_heuristics
from allocator.methods.telamalloc import (
    STRATEGIES,
    TelaMallocOptions,
    contention_phases,
    neighbours,
    telamalloc_minimize,
    telamalloc_search,
)
from tests.allocator.methods.test_minimalloc import cpsat_feasible, small_problems

#: the descent's budget in test_minimise_improves_on_the_greedy_start_and_validates (three rounds)
PROBE_STEPS, STEP_LIMIT = 2_000, 8_000

ABLATIONS = {
    "all": TelaMallocOptions(),
    "no-phases": TelaMallocOptions(phases=False),
    "skyline": TelaMallocOptions(lowest_position=False),
    "no-propagation": TelaMallocOptions(propagate=False),
    "no-compulsory": TelaMallocOptions(compulsory=False),
    "energy": TelaMallocOptions(energy=True),
    "no-backjump": TelaMallocOptions(backjump=False),
    "no-prepend": TelaMallocOptions(prepend=False),
    "no-stuck-rule": TelaMallocOptions(stuck_limit=0),
    "stuck-3": TelaMallocOptions(stuck_limit=3),
    "one-candidate": TelaMallocOptions(max_candidates=1),
    "shallow-explanations": TelaMallocOptions(explain_depth=0),
    **{f"strategy-{name}": TelaMallocOptions.strategy(name) for name in STRATEGIES},
}


@pytest.mark.parametrize("ablation", sorted(ABLATIONS))
@settings(max_examples=40)  # 17 ablations, each example also solved by CP-SAT
@given(problem=small_problems())
def test_verdicts_are_sound_with_every_switch(ablation, problem):
    """A placement validates (solve checks it) and exists only when CP-SAT finds one; a proof of
    infeasibility is never wrong; giving up is allowed (the search is incomplete)."""
    result = solve(problem, "telamalloc", options=ABLATIONS[ablation])
    assert result.status in ("solved", "infeasible", "failed")
    if result.status == "solved":
        assert validate(problem, result.solution).ok
        assert cpsat_feasible(problem)
    elif result.status == "infeasible":
        assert not cpsat_feasible(problem)


@given(problem=small_problems())
def test_places_every_instance_with_room_to_spare(problem):
    """Without pins and with twice the room greedy needs, the full search must place every instance."""
    free = Problem([replace(b, offset=None) for b in problem.buffers])
    greedy = solve(free, "greedy-by-size")
    roomy = free.with_capacity(max(2 * greedy.peak, 1))
    result = solve(roomy, "telamalloc")
    assert result.status == "solved", result.reason


def test_backtracks_to_fit_where_greedy_by_size_does_not():
    # found by random search: LOAD 16 is the optimum (CP-SAT), greedy-by-size needs 17, and the
    # search reaches 16 after a minor backtrack (propagation rejects one candidate)
    spans = [(6, 8, 4), (7, 12, 5), (3, 6, 4), (4, 5, 5), (5, 7, 4), (0, 2, 1), (4, 9, 5), (2, 6, 2), (5, 10, 1)]
    problem = Problem([Buffer(f"b{i}", s, e, size) for i, (s, e, size) in enumerate(spans)], capacity=16)
    assert solve(problem.with_capacity(None), "greedy-by-size").peak == 17
    result = solve(problem, "telamalloc")
    assert result.status == "solved" and result.peak == 16
    assert result.stats["minor_backtracks"] >= 1


def test_pinned_buffers_stay_and_pins_that_leave_no_room_are_infeasible():
    problem = Problem([Buffer("a", 0, 4, 4, offset=4), Buffer("b", 1, 3, 4), Buffer("c", 2, 6, 2)], capacity=10)
    result = solve(problem, "telamalloc")
    assert result.status == "solved" and result.solution.offsets["a"] == 4
    # LOAD 6 of 8, but "c" (4 bytes) meets "a" at [2, 4) or "b" at [6, 8) wherever it goes
    split = Problem([Buffer("a", 0, 2, 2, offset=2), Buffer("b", 2, 4, 2, offset=6), Buffer("c", 0, 4, 4)], capacity=8)
    out = solve(split, "telamalloc")
    assert out.status == "infeasible" and "no placement fits" in out.reason
    assert out.stats["steps"] == 0  # proven by propagation before any decision
    with pytest.raises(InvalidProblemError, match="pinned buffers 'a'.* and 'b'"):  # an input error, for every method
        Problem([Buffer("a", 0, 4, 4, offset=0), Buffer("b", 1, 3, 4, offset=2)], capacity=10)


def test_alignment_is_honoured():
    problem = Problem([Buffer(f"b{i}", i % 3, i % 3 + 2, 3 + i % 5, alignment=8) for i in range(12)], capacity=400)
    result = solve(problem, "telamalloc")
    assert result.status == "solved"
    assert all(o % 8 == 0 for o in result.solution.offsets.values())


def test_deterministic_and_step_limit_respected(benchmarks):
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / "C.1048576.csv")
    tight = problem.with_capacity(lower_bound(problem))
    first = telamalloc_search(tight, tight.capacity, step_limit=3000)
    second = telamalloc_search(tight, tight.capacity, step_limit=3000)
    assert first.status == second.status
    assert first.stats == second.stats
    if first.status == "failed":
        assert first.stats["steps"] == 3000 and "step limit 3,000" in first.reason
    roomy = telamalloc_search(problem, int(1.5 * lower_bound(problem)))
    again = telamalloc_search(problem, int(1.5 * lower_bound(problem)))
    assert roomy.status == "solved" and np.array_equal(roomy.offsets, again.offsets)


def test_neighbour_lists_match_brute_force():
    rng = np.random.default_rng(3)
    starts = rng.integers(0, 30, 80)
    ends = starts + rng.integers(1, 8, 80)
    ptr, idx, complete = neighbours(starts.astype(np.int64), ends.astype(np.int64), -1.0)
    assert complete
    for i in range(80):
        expected = {j for j in range(80) if j != i and starts[j] < ends[i] and starts[i] < ends[j]}
        assert set(idx[ptr[i]:ptr[i + 1]].tolist()) == expected


def test_neighbour_lists_stop_at_a_passed_deadline():
    # 1,500 buffers all live together: 1,124,250 pairs, past the 2**20 pairs between clock readings
    starts, ends = np.zeros(1500, np.int64), np.ones(1500, np.int64)
    ptr, idx, complete = neighbours(starts, ends, work_clock() - 1.0)
    assert not complete and len(idx) == 0
    ptr, idx, complete = neighbours(starts, ends, -1.0)
    assert complete and len(idx) == 1500 * 1499


@given(problem=small_problems(), step=st.sampled_from([0.05, 0.25, 1.0]))
def test_phases_partition_the_buffers(problem, step):
    phases = contention_phases(problem, problem.capacity, step)
    members = np.concatenate(phases) if phases else np.zeros(0, int)
    assert sorted(members.tolist()) == list(range(len(problem)))


def test_phases_group_many_runs_in_time_order():
    """Each run of hot sections is its own phase, in time order, members ascending (the runs are
    grouped by one sort, not one scan each)."""
    buffers = [Buffer(f"h{k}", 10 * k, 10 * k + 2, 8) for k in range(50)]
    buffers += [Buffer(f"c{k}", 10 * k + 4, 10 * k + 6, 1) for k in range(50)]
    phases = contention_phases(Problem(buffers), 8, 0.5)
    assert [p.tolist() for p in phases[:50]] == [[k] for k in range(50)]
    assert sorted(np.concatenate(phases[50:]).tolist()) == list(range(50, 100))


def test_phases_follow_contention():
    # a hot phase (9 of 10 bytes live) and a cool one, separated in time
    problem = Problem([Buffer("c1", 0, 2, 2), Buffer("c2", 1, 3, 1), Buffer("h1", 4, 6, 5), Buffer("h2", 5, 7, 4)])
    assert [p.tolist() for p in contention_phases(problem, 10, 0.1)] == [[2, 3], [0, 1]]


def test_minimise_improves_on_the_greedy_start_and_validates(benchmarks):
    """Without a capacity and without a deadline the descent's budget is steps only (rounds of
    probes up to ``step_limit``), so its result does not depend on the machine's speed."""
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / "A.1048576.csv", capacity=None)
    greedy = min(solve(problem, name).peak for name in starting_heuristics())
    options = TelaMallocOptions(probe_steps=PROBE_STEPS, step_limit=STEP_LIMIT)
    result = telamalloc_minimize(problem, None, options)
    again = telamalloc_minimize(problem, None, options)
    assert validate(problem, Solution({b.id: int(o) for b, o in zip(problem.buffers, result.offsets, strict=True)})).ok
    assert result.peak < greedy
    assert (result.peak, result.stats) == (again.peak, again.stats)
    assert result.bound == lower_bound(problem) and not result.timed_out
    assert result.stats["rounds"] == 1 + int(np.log2(STEP_LIMIT // PROBE_STEPS))
    assert [peak for _, peak in result.history] == sorted((p for _, p in result.history), reverse=True)
    unbounded = solve(problem, "telamalloc", options=options)
    assert unbounded.status == "solved" and unbounded.peak == result.peak


def test_bad_options_are_named():
    with pytest.raises(InvalidProblemError, match="selection"):
        TelaMallocOptions(selection="smallest")
    with pytest.raises(InvalidProblemError, match="max_candidates"):
        TelaMallocOptions(max_candidates=0)
    with pytest.raises(InvalidProblemError, match="strategy"):
        TelaMallocOptions.strategy("max-width")
    assert replace(TelaMallocOptions.strategy("lowest-position"), step_limit=5).selection == "lowest"


def test_empty_and_all_pinned_problems():
    assert solve(Problem([], capacity=4), "telamalloc").status == "solved"
    assert solve(Problem([]), "telamalloc").peak == 0
    pinned = Problem([Buffer("a", 0, 1, 4, offset=0), Buffer("b", 0, 1, 2, offset=4)], capacity=6)
    assert solve(pinned, "telamalloc").solution.offsets == {"a": 0, "b": 4}


# --------------------------------------------------------------------------------------------------
# TelaMalloc's time limits, tested with deadlines that have already passed.
#
# A passed deadline makes every path stop at its first clock read, so these tests assert what
# a time-out returns (status, reason, no steps, a placement from the descent) without
# measuring time. Wall-clock behaviour (stopping within 10 % + 1 s of the timeout) is measured
# by ``accelsim bench``, not here.


#: the MiniMalloc paper's example (Fig. 1): fits 12 bytes exactly
PAPER_EXAMPLE = [Buffer("b1", 0, 3, 4), Buffer("b2", 3, 9, 4), Buffer("b3", 0, 9, 4), Buffer("b4", 9, 21, 4),
                 Buffer("b5", 0, 21, 4)]


def test_a_passed_deadline_stops_the_compiled_search_before_its_first_step():
    # no two buffers overlap in time and no phases: nothing to prepare, so the kernel reads the clock
    problem = Problem([Buffer(f"b{i}", i, i + 1, 4) for i in range(5)], capacity=4)
    out = telamalloc_search(problem, 4, TelaMallocOptions(phases=False), deadline=work_clock() - 1.0)
    assert out.status == "timeout" and out.offsets is None
    assert "ran out of time" in out.reason
    assert out.stats["steps"] == 0


def test_a_passed_deadline_stops_the_grouping_into_phases():
    problem = Problem([Buffer(f"b{i}", i, i + 1, 4) for i in range(5)], capacity=4)
    assert contention_phases(problem, 4, deadline=work_clock() - 1.0) is None
    assert contention_phases(problem, 4) is not None
    out = telamalloc_search(problem, 4, deadline=work_clock() - 1.0)
    assert out.status == "timeout" and "ran out of time while grouping" in out.reason


def test_a_passed_deadline_skips_building_the_neighbour_lists():
    problem = Problem(PAPER_EXAMPLE, capacity=12)
    out = telamalloc_search(problem, 12, deadline=work_clock() - 1.0)
    assert out.status == "timeout" and "ran out of time" in out.reason and "time-overlap lists" in out.reason


def test_solve_with_a_timeout_that_has_run_out_reports_timeout():
    # LOAD is computed before the method runs, which takes far longer than a nanosecond
    result = solve(Problem(PAPER_EXAMPLE, capacity=12), "telamalloc", timeout=1e-9)
    assert result.status == "timeout" and result.solution is None
    assert "ran out of time" in result.reason


def test_the_descent_out_of_time_returns_no_placement_and_says_so():
    """Once the time is up neither a starting heuristic nor the fallback runs past it: a time
    limit is a limit, so the result has no placement and a reason, not an overrun."""
    problem = Problem(PAPER_EXAMPLE + [Buffer("b6", 2, 5, 3), Buffer("b7", 4, 12, 5)])
    result = telamalloc_minimize(problem, work_clock() - 1.0)
    assert result.offsets is None and result.timed_out and result.reason.startswith("no placement in time")
    assert result.stats["steps"] == 0 and result.stats["probes"] == 0
    assert result.bound == lower_bound(problem)
    anytime = minimize(problem, "telamalloc", timeout=1e-9)
    assert anytime.solution is None and anytime.status == "timeout" and anytime.stats["nodes"] == 0
    assert anytime.reason.startswith("no placement in time")

"""TelaMalloc's time limits, tested with deadlines that have already passed.

A passed deadline makes every path stop at its first clock read, so these tests assert what
a time-out returns (status, reason, no steps, a placement from the descent) without
measuring time. Wall-clock behaviour (stopping within 10 % + 1 s of the timeout) is measured
by ``accelsim bench``, not here.
"""

import time

from allocator import Buffer, Problem, lower_bound, minimize, solve
from allocator.methods.telamalloc import TelaMallocOptions, contention_phases, telamalloc_minimize, telamalloc_search

#: the MiniMalloc paper's example (Fig. 1): fits 12 bytes exactly
PAPER_EXAMPLE = [Buffer("b1", 0, 3, 4), Buffer("b2", 3, 9, 4), Buffer("b3", 0, 9, 4), Buffer("b4", 9, 21, 4),
                 Buffer("b5", 0, 21, 4)]


def test_a_passed_deadline_stops_the_compiled_search_before_its_first_step():
    # no two buffers overlap in time and no phases: nothing to prepare, so the kernel reads the clock
    problem = Problem([Buffer(f"b{i}", i, i + 1, 4) for i in range(5)], capacity=4)
    out = telamalloc_search(problem, 4, TelaMallocOptions(phases=False), deadline=time.perf_counter() - 1.0)
    assert out.status == "timeout" and out.offsets is None
    assert "ran out of time" in out.reason
    assert out.stats["steps"] == 0


def test_a_passed_deadline_stops_the_grouping_into_phases():
    problem = Problem([Buffer(f"b{i}", i, i + 1, 4) for i in range(5)], capacity=4)
    assert contention_phases(problem, 4, deadline=time.perf_counter() - 1.0) is None
    assert contention_phases(problem, 4) is not None
    out = telamalloc_search(problem, 4, deadline=time.perf_counter() - 1.0)
    assert out.status == "timeout" and "ran out of time while grouping" in out.reason


def test_a_passed_deadline_skips_building_the_neighbour_lists():
    problem = Problem(PAPER_EXAMPLE, capacity=12)
    out = telamalloc_search(problem, 12, deadline=time.perf_counter() - 1.0)
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
    result = telamalloc_minimize(problem, time.perf_counter() - 1.0)
    assert result.offsets is None and result.timed_out and result.reason.startswith("no placement in time")
    assert result.stats["steps"] == 0 and result.stats["probes"] == 0
    assert result.bound == lower_bound(problem)
    anytime = minimize(problem, "telamalloc", timeout=1e-9)
    assert anytime.solution is None and anytime.status == "timeout" and anytime.stats["nodes"] == 0
    assert anytime.reason.startswith("no placement in time")

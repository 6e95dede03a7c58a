"""``allocator.search.anytime``: peak minimisation (``minimize``) and its anytime routines.

Always a validated placement, a true lower bound, the optimum when proven; every anytime routine
refuses an options record of another method instead of running on the defaults; ``on_improve``
reports every improvement as it happens. The searches here are bounded by node budgets, not by
the clock: every timeout is generous and never binds, so a busy machine cannot change an outcome.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

import allocator
from allocator import (
    Buffer,
    InvalidProblemError,
    MinimizeResult,
    Problem,
    lower_bound,
    minimize,
    read_csv,
    solve,
    validate,
)
from allocator.core.options import CPSATOptions
from allocator.core.registry import METHODS, MinimizeRequest
from allocator.methods.minimalloc import MiniMallocOptions, minimalloc_minimize
from allocator.methods.telamalloc import TelaMallocOptions, telamalloc_anytime
from allocator.methods.telamalloc_learned import LearnedOptions, learned_anytime
from allocator.search.portfolio import auto_minimize

# --------------------------------------------------------------------------------------------------
# Anytime peak minimisation: always a validated placement, a true lower bound, the optimum when proven.
#
# The searches here are bounded by node budgets, not by the clock: every timeout is generous
# and never binds, so a busy machine cannot change an outcome.


#: a timeout that never binds: the node budgets decide
NO_RUSH = 600.0


def cpsat_optimum(problem: Problem) -> int:
    """Independent optimum: CP-SAT minimising the peak with a 2-D no-overlap."""
    model = cp_model.CpModel()
    horizon = sum(b.size + b.alignment + (b.offset or 0) for b in problem.buffers)
    peak = model.new_int_var(0, horizon, "peak")
    xs, ys = [], []
    for b in problem.buffers:
        k = model.new_int_var(0, horizon // b.alignment, f"k{b.id}")
        y = model.new_int_var(0, horizon, f"y{b.id}")
        model.add(y == b.alignment * k)
        if b.offset is not None:
            model.add(y == b.offset)
        model.add(y + b.size <= peak)
        xs.append(model.new_fixed_size_interval_var(b.start, b.end - b.start, f"x{b.id}"))
        ys.append(model.new_interval_var(y, b.size, y + b.size, f"iy{b.id}"))
    model.add_no_overlap_2d(xs, ys)
    model.minimize(peak)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL
    return int(solver.objective_value)


@st.composite
def small_problems(draw):
    buffers = []
    for i in range(draw(st.integers(1, 9))):
        start = draw(st.integers(0, 8))
        alignment = draw(st.sampled_from([1, 1, 2, 4]))
        offset = None
        if draw(st.integers(0, 6)) == 0:
            offset = draw(st.integers(0, 4)) * alignment
        buffers.append(Buffer(f"b{i}", start, start + draw(st.integers(1, 5)), draw(st.integers(1, 6)), alignment,
                              offset))
    try:
        return Problem(buffers)
    except InvalidProblemError:
        return Problem([b for b in buffers if b.offset is None])


@settings(max_examples=80)
@given(small_problems())
def test_minimize_reaches_the_cpsat_optimum(problem):
    pinned = [b for b in problem.buffers if b.offset is not None]
    clash = any(a.overlaps_in_time(b) and a.offset < b.offset + b.size and b.offset < a.offset + a.size
                for i, a in enumerate(pinned) for b in pinned[i + 1:])
    if clash:
        return  # pinned buffers that overlap have no placement at all
    result = minimize(problem, timeout=NO_RUSH, node_limit=1_000_000)
    assert validate(problem.with_capacity(None), result.solution).ok
    assert result.optimal and not result.timed_out
    assert result.peak == result.lower_bound == cpsat_optimum(problem)


def test_bound_and_history_are_monotone_and_a_roomy_capacity_changes_nothing():
    bufs = [Buffer("a", 0, 4, 4), Buffer("b", 0, 2, 2), Buffer("c", 2, 4, 2), Buffer("d", 1, 3, 3)]
    result = minimize(Problem(bufs, capacity=100), timeout=NO_RUSH, node_limit=100_000)
    assert result.peak == result.lower_bound == lower_bound(Problem(bufs)) == 9
    assert result.status == "solved" and result.fits and result.capacity == 100
    peaks = [p for _, p, _ in result.history]
    bounds = [lb for _, _, lb in result.history]
    assert peaks == sorted(peaks, reverse=True) and bounds == sorted(bounds)


def test_heuristic_method_reports_its_peak_against_load():
    bufs = [Buffer("x", 0, 2, 1), Buffer("y", 1, 4, 2), Buffer("z", 2, 4, 2)]
    result = minimize(Problem(bufs), method="first-fit", timeout=600)
    assert result.peak == 5 and result.lower_bound == 4 and not result.optimal


def test_bad_arguments_raise():
    with pytest.raises(InvalidProblemError, match="unknown allocator method"):
        minimize(Problem([]), method="magic")
    with pytest.raises(InvalidProblemError, match="node_limit"):
        minimize(Problem([]), node_limit=0)
    with pytest.raises(InvalidProblemError, match="node_limit bounds the exact probes"):
        minimize(Problem([]), method="first-fit", node_limit=10)
    with pytest.raises(InvalidProblemError, match="load_share"):
        minimize(Problem([]), load_share=0)


@pytest.mark.parametrize("timeout", [0, 0.0, -1, -0.5, math.nan, math.inf, "3", True, None])
def test_a_timeout_that_is_no_positive_finite_number_is_refused_in_one_line(timeout):
    with pytest.raises(InvalidProblemError, match="timeout must be a positive, finite number of seconds") as error:
        minimize(Problem([Buffer("a", 0, 1, 4)]), timeout=timeout)
    assert "\n" not in str(error.value)


# LOAD is 3, but alignment forces a peak of 4: the capacities 3 and 4 tell apart a proof by
# LOAD, a proof by search, and a fit
ALIGNED = [Buffer("a", 0, 2, 1, offset=1), Buffer("b", 0, 2, 2, alignment=2), Buffer("c", 2, 4, 1)]


def test_a_capacity_below_load_is_infeasible_without_a_probe():
    result = minimize(Problem(ALIGNED, capacity=2), timeout=NO_RUSH, node_limit=10_000)
    assert result.status == "infeasible" and not result.fits and result.probes == []
    assert result.lower_bound == 3 > result.capacity
    assert validate(Problem(ALIGNED), result.solution).ok  # the best placement found still comes back


def test_a_capacity_between_load_and_the_optimum_is_proven_infeasible_by_search():
    result = minimize(Problem(ALIGNED, capacity=3), timeout=NO_RUSH, node_limit=10_000)
    assert result.status == "infeasible" and result.lower_bound == 4 > result.capacity
    assert [(capacity, outcome) for capacity, outcome, _ in result.probes] == [(3, "infeasible")]
    assert not result.timed_out


def test_a_capacity_at_the_optimum_fits():
    result = minimize(Problem(ALIGNED, capacity=4), timeout=NO_RUSH, node_limit=10_000)
    assert result.status == "solved" and result.fits and result.optimal and result.peak == 4
    assert validate(Problem(ALIGNED, capacity=4), result.solution).ok


def test_no_probe_goes_above_the_capacity(benchmarks):
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / "D.1048576.csv")
    capacity = lower_bound(problem) + 4096
    result = minimize(problem.with_capacity(capacity), timeout=NO_RUSH, node_limit=20_000,
                      options=MiniMallocOptions(workers=1))
    assert result.probes and all(probe <= capacity for probe, _, _ in result.probes)
    if not result.fits:  # the budget ran out before any placement fitted: a time-out, not a proof
        assert result.status == "timeout" and result.timed_out and result.lower_bound <= capacity


def test_a_node_budget_makes_the_minimisation_deterministic(benchmarks):
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / "D.1048576.csv")
    runs = [minimize(problem, timeout=NO_RUSH, node_limit=30_000, options=MiniMallocOptions(workers=w))
            for w in (1, 2)]
    for result in runs:
        assert validate(problem, result.solution).ok
        assert result.timed_out and not result.optimal  # D is not solved in 30,000 nodes
    assert [(c, o) for c, o, _ in runs[0].probes] == [(c, o) for c, o, _ in runs[1].probes]
    assert runs[0].peak == runs[1].peak and runs[0].lower_bound == runs[1].lower_bound


def test_every_improvement_is_reported_as_it_happens():
    seen = []
    bufs = [Buffer(f"b{i}", i % 5, i % 5 + 1 + i % 3, 1 + (7 * i) % 5) for i in range(14)]
    result = minimize(Problem(bufs), timeout=NO_RUSH, node_limit=100_000, on_improve=seen.append)
    assert seen and all(validate(Problem(bufs), s.solution).ok for s in seen)
    assert [s.peak for s in seen] == sorted((s.peak for s in seen), reverse=True)
    assert seen[-1].peak == result.peak and seen[-1].lower_bound == result.lower_bound


def test_challenging_c_is_proven_optimal_at_load(benchmarks):
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / "C.1048576.csv")
    result = minimize(problem, timeout=NO_RUSH, node_limit=100_000)
    assert result.optimal and result.peak == lower_bound(problem) == 1039360
    assert validate(problem.with_capacity(None), result.solution).ok


def test_a_clock_that_runs_out_before_any_placement_gives_no_placement_and_says_so(monkeypatch):
    # A fake clock that advances one second per reading: the first third of a 3 s timeout is
    # gone before the first starting heuristic, and the fallback has no time left either. A time
    # limit is a limit: the result has no placement, status timeout and a reason, not an overrun.
    import time

    problem = Problem([Buffer("a", 3, 6, 2), Buffer("b", 4, 6, 3), Buffer("c", 3, 4, 2), Buffer("d", 2, 4, 2)])
    now = [1000.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    monkeypatch.setattr(time, "perf_counter", clock)
    for method in ("minimalloc", "telamalloc"):
        result = minimize(problem, method=method, timeout=3)
        assert result.solution is None and result.peak is None, method
        assert result.status == "timeout" and result.timed_out and not result.fits, method
        assert result.reason.startswith("no placement"), (method, result.reason)
        assert result.lower_bound == lower_bound(problem) == 6 and math.isinf(result.gap)
        assert result.probes == []


def test_a_method_that_places_nothing_reports_the_insurance_placement_and_says_whose(monkeypatch):
    from allocator.core.registry import METHODS, MethodEntry, MethodOutput, fallback_heuristic

    def never(problem, deadline, options):
        return MethodOutput("failed", None, "this method never places anything")

    monkeypatch.setitem(METHODS, "never-places", MethodEntry("never-places", never, "test method"))
    problem = Problem([Buffer("a", 3, 6, 2), Buffer("b", 4, 6, 3), Buffer("c", 3, 4, 2), Buffer("d", 2, 4, 2)])
    result = minimize(problem, method="never-places", timeout=NO_RUSH)
    assert validate(problem, result.solution).ok
    assert result.peak == solve(problem, fallback_heuristic()).peak == 7 and result.status == "solved"
    assert "never places anything" in result.reason and fallback_heuristic() in result.reason
    # a method that does place reports its own placement, even when the insurance is lower
    mine = minimize(problem, method="first-fit", timeout=NO_RUSH)
    assert mine.peak == solve(problem, "first-fit").peak and mine.reason == ""


@pytest.mark.parametrize(("name", "nodes", "target"), [("D", 600_000, 1_025_024), ("J", 300_000, 1_041_408)])
def test_the_default_minimisation_meets_issue_14s_targets_within_a_node_budget(benchmarks, name, nodes, target):
    # issue 14 asks for D <= 1,025,024 and J <= 1,041,408 in 10 s on one thread; 10 s of one
    # thread are about 1.9 and 0.8 million nodes on a quiet machine, so these budgets leave room
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / f"{name}.1048576.csv")
    result = minimize(problem, timeout=NO_RUSH, node_limit=nodes, options=MiniMallocOptions(workers=1))
    assert validate(problem, result.solution).ok
    assert result.peak <= target and result.stats["nodes"] <= nodes


# --------------------------------------------------------------------------------------------------
# Anytime routines refuse an options record of another method instead of running on the defaults.
#
# Every minimisation here is bounded by a node budget or is a heuristic's first placement, and
# every timeout is generous: no outcome depends on the machine's load.


#: each anytime routine with its method's name and its own options record
ROUTINES = [
    ("minimalloc", minimalloc_minimize, MiniMallocOptions),
    ("auto", auto_minimize, MiniMallocOptions),
    ("telamalloc", telamalloc_anytime, TelaMallocOptions),
    ("telamalloc-learned", learned_anytime, LearnedOptions),
]

#: records of the wrong type: another method's record, and a value that is no record at all
WRONG = [CPSATOptions(), {"workers": 1}]


def small() -> Problem:
    return Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4), Buffer("c", 2, 4, 2)])


def request(method: str, options: object) -> MinimizeRequest:
    began = time.perf_counter()
    node_limit = 1_000 if METHODS[method].capabilities.node_limit else None
    return MinimizeRequest(method, NO_RUSH, began, began + NO_RUSH, options, 0.6, node_limit, None)


def test_every_anytime_routine_is_listed_here():
    # a routine registered later must be added to ROUTINES, so that it is checked too
    listed = {name for name, _, _ in ROUTINES}
    assert listed == {name for name, entry in METHODS.items() if entry.capabilities.anytime is not None}
    assert all(METHODS[name].options is record for name, _, record in ROUTINES)


@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: type(w).__name__)
@pytest.mark.parametrize(("method", "routine", "record"), ROUTINES, ids=[r[0] for r in ROUTINES])
def test_a_routine_called_directly_refuses_another_record(method, routine, record, wrong):
    with pytest.raises(TypeError) as raised:
        routine(small(), request(method, wrong))
    message = str(raised.value)
    assert "\n" not in message
    assert repr(method) in message and record.__qualname__ in message and type(wrong).__qualname__ in message


@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: type(w).__name__)
@pytest.mark.parametrize(("method", "routine", "record"), ROUTINES, ids=[r[0] for r in ROUTINES])
def test_minimize_refuses_another_record(method, routine, record, wrong):
    with pytest.raises(TypeError) as raised:
        minimize(small(), method, timeout=NO_RUSH, options=wrong)
    message = str(raised.value)
    assert "\n" not in message
    assert repr(method) in message and record.__qualname__ in message and type(wrong).__qualname__ in message


@pytest.mark.parametrize(("method", "routine", "record"), ROUTINES, ids=[r[0] for r in ROUTINES])
def test_no_options_and_the_own_record_both_run(method, routine, record):
    problem = small()
    for options in (None, record()):
        direct = routine(problem, request(method, options))
        assert direct.solution is not None and validate(problem, direct.solution).ok
        node_limit = 1_000 if METHODS[method].capabilities.node_limit else None
        through = minimize(problem, method, timeout=NO_RUSH, options=options, node_limit=node_limit)
        assert through.solution is not None and validate(problem, through.solution).ok
        assert through.peak == direct.peak == 8  # a and b overlap in time: LOAD, reached


# --------------------------------------------------------------------------------------------------
# ``minimize(..., on_improve=...)`` reports every anytime method's best as it improves (issue 22).
#
# A caller interrupted by Ctrl-C keeps the last result reported, so every method whose entry
# declares an anytime routine must report its first placement (a heuristic's, made in
# milliseconds) and every later improvement, each one validated; the last one reported is the
# answer. ``telamalloc`` and ``telamalloc-learned`` reported nothing before.


ANYTIME = sorted(name for name, entry in allocator.METHODS.items() if entry.capabilities.anytime is not None)


def _problem(seed: int) -> Problem:
    rng = np.random.default_rng(seed)
    n = 40
    starts = rng.integers(0, 30, n)
    return Problem.from_arrays([f"b{i}" for i in range(n)], starts, starts + rng.integers(1, 12, n),
                               rng.integers(1, 40, n))


@pytest.mark.parametrize("method", ANYTIME)
@pytest.mark.parametrize("seed", range(3))
def test_every_improvement_is_reported_validated_and_the_last_is_the_answer(method, seed):
    problem = _problem(seed)
    reports: list[MinimizeResult] = []
    budget = {"node_limit": 20_000} if allocator.METHODS[method].capabilities.node_limit else {}
    result = allocator.minimize(problem, method, timeout=20, on_improve=reports.append, **budget)
    assert reports, f"{method} reported nothing"
    for report in reports:
        assert report.solution is not None and report.peak is not None
        assert allocator.validate(problem, report.solution).ok
        assert report.solution.peak(problem) == report.peak
    peaks = [report.peak for report in reports]
    assert peaks == sorted(peaks, reverse=True)  # an improvement is never reported twice or upwards
    assert result.peak == peaks[-1]


def test_the_first_heuristic_is_reported_before_the_next_one_runs(monkeypatch):
    # the starting heuristics can take seconds each on large traces: an interrupt during the
    # second must keep the first's placement
    from allocator.core import progress

    problem = _problem(0)
    seen: list[int] = []
    calls: list[str] = []
    original = progress.solve

    def spy(free, name, **kwargs):
        calls.append(name)
        if len(calls) == 2:
            assert len(seen) == 1, "the first heuristic's placement was not reported before the second ran"
        return original(free, name, **kwargs)

    monkeypatch.setattr(progress, "solve", spy)
    allocator.minimize(problem, "minimalloc", timeout=20, node_limit=1_000,
                       on_improve=lambda report: seen.append(int(report.peak or 0)))
    assert len(calls) >= 2

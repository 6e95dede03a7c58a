"""Anytime peak minimisation: always a validated placement, a true lower bound, the optimum when proven."""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from allocator import Buffer, InvalidProblemError, Problem, lower_bound, minimize, read_csv, validate

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "benchmarks"


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


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problems())
def test_minimize_reaches_the_cpsat_optimum(problem):
    pinned = [b for b in problem.buffers if b.offset is not None]
    clash = any(a.overlaps_in_time(b) and a.offset < b.offset + b.size and b.offset < a.offset + a.size
                for i, a in enumerate(pinned) for b in pinned[i + 1:])
    if clash:
        return  # pinned buffers that overlap have no placement at all
    result = minimize(problem, timeout=20)
    assert validate(problem.with_capacity(None), result.solution).ok
    assert result.optimal and not result.timed_out
    assert result.peak == result.lower_bound == cpsat_optimum(problem)


def test_bound_and_history_are_monotone_and_the_capacity_is_ignored():
    bufs = [Buffer("a", 0, 4, 4), Buffer("b", 0, 2, 2), Buffer("c", 2, 4, 2), Buffer("d", 1, 3, 3)]
    result = minimize(Problem(bufs, capacity=100), timeout=5)
    assert result.peak == result.lower_bound == lower_bound(Problem(bufs)) == 9
    peaks = [p for _, p, _ in result.history]
    bounds = [lb for _, _, lb in result.history]
    assert peaks == sorted(peaks, reverse=True) and bounds == sorted(bounds)


def test_heuristic_method_reports_its_peak_against_load():
    bufs = [Buffer("x", 0, 2, 1), Buffer("y", 1, 4, 2), Buffer("z", 2, 4, 2)]
    result = minimize(Problem(bufs), method="first-fit", timeout=1)
    assert result.peak == 5 and result.lower_bound == 4 and not result.optimal


def test_bad_arguments_raise():
    with pytest.raises(InvalidProblemError, match="unknown allocator method"):
        minimize(Problem([]), method="magic")
    with pytest.raises(InvalidProblemError, match="timeout"):
        minimize(Problem([]), timeout=0)


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared/benchmarks not present")
def test_challenging_c_is_proven_optimal_at_load():
    problem = read_csv(SHARED / "minimalloc" / "challenging" / "C.1048576.csv")
    result = minimize(problem, timeout=20)
    assert result.optimal and result.peak == lower_bound(problem) == 1039360
    assert validate(problem.with_capacity(None), result.solution).ok

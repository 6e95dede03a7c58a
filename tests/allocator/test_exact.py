"""The exact methods: CP-SAT and the TelaMalloc Fig. 5 ILP agree with the canonical search and with each other."""

import random
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allocator import (
    METHODS,
    Buffer,
    InvalidProblemError,
    Problem,
    exact,
    lower_bound,
    minimize,
    read_csv,
    solve,
    validate,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "benchmarks"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="shared/benchmarks not present")

#: the paper example of MiniMalloc (Fig. 1), also in shared/benchmarks/minimalloc/examples/input.12.csv
PAPER_EXAMPLE = [Buffer("b1", 0, 3, 4), Buffer("b2", 3, 9, 4), Buffer("b3", 0, 9, 4), Buffer("b4", 9, 21, 4),
                 Buffer("b5", 0, 21, 4)]


@st.composite
def small_problems(draw, max_buffers: int):
    """Up to ``max_buffers`` short-lived buffers, alignments 1/2/4, some pinned, capacity LOAD..LOAD+6.

    One draw in four multiplies every size and alignment by 8 and adds up to 7 spare bytes to
    the capacity: the models work in units of the gcd and must floor the capacity to it.
    """
    scale = draw(st.sampled_from([1, 1, 1, 8]))
    raw = []
    for i in range(draw(st.integers(1, max_buffers))):
        start = draw(st.integers(0, 8))
        end = start + draw(st.integers(1, 5))
        size = draw(st.integers(1, 6)) * scale
        alignment = draw(st.sampled_from([1, 1, 1, 2, 4])) * scale
        raw.append((f"b{i}", start, end, size, alignment))
    load = lower_bound(Problem([Buffer(*b) for b in raw]))
    capacity = load + draw(st.integers(0, 6)) * scale + draw(st.integers(0, scale - 1))
    buffers = []
    for bid, start, end, size, alignment in raw:
        offset = None
        if draw(st.integers(0, 5)) == 0:
            offset = draw(st.integers(0, (capacity - size) // alignment)) * alignment
        buffers.append(Buffer(bid, start, end, size, alignment, offset))
    return Problem(buffers, capacity)


def _verdict(problem: Problem, method: str, **options) -> str:
    result = solve(problem, method, timeout=20, **options)
    assert result.status in ("solved", "infeasible"), result.reason
    if result.solved:
        assert validate(problem, result.solution).ok
    return result.status


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=small_problems(max_buffers=10))
def test_cpsat_mip_and_minimalloc_agree_on_feasibility(problem):
    expected = _verdict(problem, "minimalloc")
    assert _verdict(problem, "cpsat") == expected
    if len(problem) <= 8:  # the ILP's pair count grows quadratically; keep it small
        assert _verdict(problem, "mip", backend="SCIP") == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=small_problems(max_buffers=8))
def test_cpsat_and_mip_reach_the_same_proven_minimal_peak(problem):
    free = problem.with_capacity(None)
    by_cpsat = solve(free, "cpsat", timeout=20)
    by_mip = solve(free, "mip", timeout=20)
    if by_cpsat.status == "infeasible":  # pinned buffers that clash have no placement at all
        assert by_mip.status == "infeasible"
        return
    for result in (by_cpsat, by_mip):
        assert result.solved and validate(free, result.solution).ok
        assert result.stats["optimal"] == 1.0 and result.stats["bound"] == result.peak >= lower_bound(free)
    assert by_cpsat.peak == by_mip.peak
    anytime = minimize(problem, timeout=10)
    if anytime.optimal:
        assert anytime.peak == by_cpsat.peak


@pytest.mark.parametrize("method", ["cpsat", "mip"])
def test_paper_example_fits_12_and_not_11(method):
    if SHARED.is_dir():
        problem = read_csv(SHARED / "minimalloc" / "examples" / "input.12.csv", capacity=12)
    else:
        problem = Problem(PAPER_EXAMPLE, 12)
    result = solve(problem, method)
    assert result.solved and result.peak <= 12 and validate(problem, result.solution).ok
    assert solve(problem.with_capacity(11), method).status == "infeasible"  # by LOAD, in solve()
    # the method itself proves it too, without the LOAD shortcut
    direct = METHODS[method].function(problem.with_capacity(11), None)
    assert direct.status == "infeasible" and "INFEASIBLE" in direct.reason


@pytest.mark.parametrize("method", ["cpsat", "mip"])
def test_infeasible_above_load_is_proven(method):
    # LOAD is 3 <= capacity 3, but the 2-byte buffer aligned to 2 has no room beside the one pinned at 1.
    problem = Problem([Buffer("a", 0, 2, 1, offset=1), Buffer("b", 0, 2, 2, alignment=2)], capacity=3)
    result = solve(problem, method)
    assert result.status == "infeasible" and "INFEASIBLE" in result.reason
    assert solve(problem.with_capacity(4), method).solved


@pytest.mark.parametrize("method", ["cpsat", "mip"])
def test_pinned_buffers_that_clash_are_infeasible(method):
    problem = Problem([Buffer("a", 0, 2, 4, offset=0), Buffer("b", 1, 3, 4, offset=2)])
    result = solve(problem, method)
    assert result.status == "infeasible" and "'a'" in result.reason and "'b'" in result.reason


@pytest.mark.parametrize("method", ["cpsat", "mip"])
def test_no_buffers(method):
    assert solve(Problem([], 8), method).solved
    assert solve(Problem([]), method).stats["bound"] == 0


@pytest.mark.parametrize("method", ["cpsat", "mip"])
def test_minimize_uses_the_proven_bound_above_load(method):
    # LOAD is 3, but alignment forces a peak of 4: only the exact method's bound proves 4 optimal.
    problem = Problem([Buffer("a", 0, 2, 1, offset=1), Buffer("b", 0, 2, 2, alignment=2), Buffer("c", 2, 4, 1)])
    result = minimize(problem, method=method, timeout=5)
    assert result.optimal and result.peak == result.lower_bound == 4 > lower_bound(problem)
    assert validate(problem, result.solution).ok
    heuristic = minimize(problem, method="first-fit", timeout=5)
    assert heuristic.lower_bound == 3 and not heuristic.optimal


def test_highs_backend_solves_without_a_hint():
    # OR-Tools crashes on SetHint with HiGHS: the method must not give it one.
    problem = Problem(PAPER_EXAMPLE)
    result = solve(problem, "mip", backend="highs", hint=True)
    assert result.solved and result.peak == 12 and result.stats["optimal"] == 1.0
    assert "HIGHS" in result.reason


def test_unknown_options_and_backends_raise():
    problem = Problem(PAPER_EXAMPLE, 12)
    with pytest.raises(TypeError, match="colour"):
        solve(problem, "cpsat", colour="red")
    with pytest.raises(TypeError, match="workers"):
        solve(problem, "mip", workers=2)
    with pytest.raises(InvalidProblemError, match="'GUROBl'"):
        solve(problem, "mip", backend="GUROBl")
    with pytest.raises(InvalidProblemError, match="'GLOP'"):  # an LP solver: it would drop the integrality
        solve(problem, "mip", backend="GLOP")
    with pytest.raises(InvalidProblemError, match="workers"):
        solve(problem, "cpsat", workers=0)


def _crowded_problem(n: int, seed: int) -> Problem:
    """``n`` buffers starting within ``0.3 n`` steps: most overlap, so the optimum needs a search."""
    rng = random.Random(seed)
    buffers = []
    for i in range(n):
        start = rng.randrange(0, max(1, int(0.3 * n)))
        buffers.append(Buffer(f"b{i}", start, start + rng.randrange(1, 8), rng.randrange(1, 40),
                              rng.choice([1, 2, 4])))
    return Problem(buffers)


def test_cpsat_with_one_worker_and_a_seed_is_reproducible():
    problem = _crowded_problem(10, 2)
    first = solve(problem, "cpsat", workers=1, seed=7)
    again = solve(problem, "cpsat", workers=1, seed=7)
    assert first.solved and first.stats["optimal"] == 1.0 and first.peak > lower_bound(problem)
    assert first.stats["conflicts"] > 0  # a real search, not the hint proven at once
    assert first.solution.offsets == again.solution.offsets


@needs_shared
@pytest.mark.parametrize("method, timeout", [("cpsat", 2.0), ("mip", 1.0)])
def test_hard_capacity_times_out_on_time(method, timeout):
    problem = read_csv(SHARED / "minimalloc" / "challenging" / "D.1048576.csv", capacity=1_000_000)
    began = time.perf_counter()
    result = solve(problem, method, timeout=timeout)
    assert time.perf_counter() - began < timeout + 1.0
    assert result.status == "timeout" and result.solution is None
    assert result.stats["optimal"] == 0.0


@needs_shared
def test_unproven_peak_is_reported_with_its_bound():
    problem = read_csv(SHARED / "minimalloc" / "challenging" / "D.1048576.csv")
    result = solve(problem, "cpsat", timeout=2)
    assert result.solved and result.reason.startswith("CP-SAT FEASIBLE")
    assert result.stats["optimal"] == 0.0
    assert lower_bound(problem) <= result.stats["bound"] < result.peak
    assert result.peak <= solve(problem, "greedy-by-size").peak  # the hint is the starting point


@pytest.mark.parametrize("method", ["cpsat", "mip"])
def test_the_optimum_does_not_depend_on_the_hint(method):
    problem = _crowded_problem(6, 1)
    with_hint = solve(problem, method, hint=True)
    without = solve(problem, method, hint=False)
    assert with_hint.stats["optimal"] == without.stats["optimal"] == 1.0
    assert with_hint.peak == without.peak == with_hint.stats["bound"] > lower_bound(problem)


def test_mip_declines_models_with_too_many_pairs(monkeypatch):
    monkeypatch.setattr(exact, "MIP_MAX_PAIRS", 2)
    problem = Problem([Buffer(f"b{i}", 0, 2, 1) for i in range(3)], capacity=3)
    result = solve(problem, "mip")
    assert result.status == "failed" and "3 time-overlapping pairs" in result.reason
    assert minimize(problem.with_capacity(None), "mip", timeout=1).peak == 3

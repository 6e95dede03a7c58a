"""The exact methods: CP-SAT and the TelaMalloc Fig. 5 ILP agree with the canonical search and with each other."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from allocator import (
    MAX_VALUE,
    METHODS,
    Buffer,
    InvalidProblemError,
    Problem,
    lower_bound,
    minimize,
    read_csv,
    solve,
    validate,
)
from allocator.core.options import CPSATOptions
from allocator.methods import exact

#: the paper example of MiniMalloc (Fig. 1), also in shared/benchmarks/minimalloc/examples/input.12.csv
PAPER_EXAMPLE = [Buffer("b1", 0, 3, 4), Buffer("b2", 3, 9, 4), Buffer("b3", 0, 9, 4), Buffer("b4", 9, 21, 4),
                 Buffer("b5", 0, 21, 4)]


@st.composite
def small_problems(draw, max_buffers: int):
    """Up to ``max_buffers`` short-lived buffers, alignments 1/2/4, some pinned, capacity LOAD..LOAD+6.

    One draw in four multiplies every size and alignment by 8 and adds up to 7 spare bytes to
    the capacity: the models work in units of the gcd and must floor the capacity to it.
    A buffer is pinned only where it clashes with no earlier pinned one (``Problem`` refuses
    pinned buffers that overlap in time and address).
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
    buffers: list[Buffer] = []
    for bid, start, end, size, alignment in raw:
        offset = None
        if draw(st.integers(0, 5)) == 0:
            offset = draw(st.integers(0, (capacity - size) // alignment)) * alignment
            clash = any(b.offset is not None and b.start < end and start < b.end and b.offset < offset + size
                        and offset < b.offset + b.size for b in buffers)
            offset = None if clash else offset
        buffers.append(Buffer(bid, start, end, size, alignment, offset))
    return Problem(buffers, capacity)


def _verdict(problem: Problem, method: str, **options) -> str:
    # No time limit: every method terminates on these tiny problems, and a wall-clock limit would
    # also count the first numba compilation in a fresh checkout (about 30 s for minimalloc).
    result = solve(problem, method, **options)
    assert result.status in ("solved", "infeasible"), result.reason
    if result.solved:
        assert validate(problem, result.solution).ok
    return result.status


@given(problem=small_problems(max_buffers=10))
def test_cpsat_mip_and_minimalloc_agree_on_feasibility(problem):
    expected = _verdict(problem, "minimalloc")
    assert _verdict(problem, "cpsat") == expected
    if len(problem) <= 8:  # the ILP's pair count grows quadratically; keep it small
        assert _verdict(problem, "mip", backend="SCIP") == expected


@given(problem=small_problems(max_buffers=8))
def test_cpsat_and_mip_reach_the_same_proven_minimal_peak(problem):
    free = problem.with_capacity(None)
    by_cpsat = solve(free, "cpsat", timeout=20)
    by_mip = solve(free, "mip", timeout=20)
    for result in (by_cpsat, by_mip):
        assert result.solved and validate(free, result.solution).ok
        assert result.stats["optimal"] == 1.0 and result.stats["bound"] == result.peak >= lower_bound(free)
    assert by_cpsat.peak == by_mip.peak
    anytime = minimize(problem, timeout=10)
    if anytime.optimal:
        assert anytime.peak == by_cpsat.peak


@pytest.mark.parametrize("method", ["cpsat", "mip"])
def test_paper_example_fits_12_and_not_11(method):
    problem = Problem(PAPER_EXAMPLE, 12)
    result = solve(problem, method)
    assert result.solved and result.peak <= 12 and validate(problem, result.solution).ok
    assert solve(problem.with_capacity(11), method).status == "infeasible"  # by LOAD, in solve()
    # the method itself proves it too, without the LOAD shortcut
    direct = METHODS[method].function(problem.with_capacity(11), None, METHODS[method].options())
    assert direct.status == "infeasible" and "INFEASIBLE" in direct.reason


@pytest.mark.parametrize("method", ["cpsat", "mip"])
def test_infeasible_above_load_is_proven(method):
    # LOAD is 3 <= capacity 3, but the 2-byte buffer aligned to 2 has no room beside the one pinned at 1.
    problem = Problem([Buffer("a", 0, 2, 1, offset=1), Buffer("b", 0, 2, 2, alignment=2)], capacity=3)
    result = solve(problem, method)
    assert result.status == "infeasible" and "INFEASIBLE" in result.reason
    assert solve(problem.with_capacity(4), method).solved


@pytest.mark.parametrize("method", ["cpsat", "mip"])
def test_no_buffers(method):
    assert solve(Problem([], 8), method).solved
    assert solve(Problem([]), method).stats["bound"] == 0


@pytest.mark.parametrize("method", ["cpsat", "mip"])
def test_minimize_uses_the_proven_bound_above_load(method):
    # LOAD is 3, but alignment forces a peak of 4: only the exact method's bound proves 4 optimal.
    problem = Problem([Buffer("a", 0, 2, 1, offset=1), Buffer("b", 0, 2, 2, alignment=2), Buffer("c", 2, 4, 1)])
    result = minimize(problem, method=method, timeout=600)
    assert result.optimal and result.peak == result.lower_bound == 4 > lower_bound(problem)
    assert validate(problem, result.solution).ok
    heuristic = minimize(problem, method="first-fit", timeout=600)
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


def test_cpsat_stops_at_its_deterministic_time_limit(benchmarks):
    # A limit in CP-SAT's own work units: the same outcome on any machine, at any load.
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / "D.1048576.csv", capacity=1_000_000)
    result = solve(problem, "cpsat", workers=1, deterministic_time=0.05)
    assert result.status == "timeout" and result.solution is None
    assert result.stats["optimal"] == 0.0
    assert 0.05 <= result.stats["deterministic_time"] < 0.5  # it stopped at the limit, not long after


def test_mip_under_a_time_limit_reports_timeout_or_a_checked_verdict(benchmarks):
    # SCIP's limit is wall time and MIPOptions has no work budget, so the outcome may depend on
    # the machine: assert, for each outcome, everything it promises.
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / "D.1048576.csv", capacity=1_000_000)
    load = lower_bound(problem)
    assert load <= 1_000_000  # so that every verdict is possible
    result = solve(problem, "mip", timeout=1.0)
    assert result.status in ("timeout", "solved", "infeasible"), result.reason
    assert result.stats["optimal"] == 0.0 or result.status == "solved"
    if result.status == "timeout":
        assert result.solution is None and result.peak is None
        assert any(words in result.reason for words in ("time limit", "no time left", "ran out of time")), result.reason
    elif result.status == "infeasible":
        assert result.solution is None and result.peak is None
        assert "no placement fits" in result.reason, result.reason
    else:
        assert result.solved and validate(problem, result.solution).ok
        assert result.peak == result.solution.peak(problem) and load <= result.peak <= 1_000_000


def test_unproven_peak_is_reported_with_its_bound(benchmarks):
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / "D.1048576.csv")
    result = solve(problem, "cpsat", workers=1, deterministic_time=1.0)
    assert result.solved and result.reason.startswith("CP-SAT FEASIBLE")
    assert result.stats["optimal"] == 0.0
    assert lower_bound(problem) <= result.stats["bound"] < result.peak
    assert result.peak <= solve(problem, "greedy-by-size").peak  # the hint is the starting point
    again = solve(problem, "cpsat", workers=1, deterministic_time=1.0)
    assert (again.peak, again.stats["bound"]) == (result.peak, result.stats["bound"])  # reproducible


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
    assert minimize(problem.with_capacity(None), "mip", timeout=600).peak == 3


# --- number ranges: what each solver can represent -------------------------------------------


def test_cpsat_places_sizes_near_max_value():
    # about 2**61 bytes each, at disjoint times, gcd 1: the model works in single bytes
    problem = Problem([Buffer("a", 0, 1, 2**61 - 1), Buffer("b", 1, 2, 2**60 + 3)])
    result = solve(problem, "cpsat")
    assert result.solved and result.peak == 2**61 - 1 and result.stats["optimal"] == 1.0


def test_cpsat_renumbers_times_near_max_value():
    # raw times near 2**62 break CP-SAT's interval limit; ranks keep the same problem
    buffers = [Buffer("a", 0, MAX_VALUE, 5), Buffer("b", MAX_VALUE - 5, MAX_VALUE, 7),
               Buffer("c", 2**61, 2**61 + 3, 3)]
    problem = Problem(buffers, capacity=12)
    result = solve(problem, "cpsat")
    assert result.solved and validate(problem, result.solution).ok
    proven = METHODS["cpsat"].function(problem.with_capacity(11), None, CPSATOptions())
    assert proven.status == "infeasible"  # the model proves it


def test_cpsat_refuses_in_one_line_what_cpsat_cannot_represent():
    # within MAX_VALUE, but an address interval's start + size + end would pass CP-SAT's (2**63 - 1) // 2
    problem = Problem([Buffer("a", 0, 2, 2**61 - 1), Buffer("b", 1, 3, 2**61 - 3)], capacity=MAX_VALUE)
    with pytest.raises(InvalidProblemError, match=r"^cpsat: buffer 'a': .*beyond CP-SAT's limit") as info:
        solve(problem, "cpsat")
    assert "\n" not in str(info.value)
    assert solve(problem, "greedy-by-size").peak == 2**62 - 4  # the same input is fine for the heuristics


def test_cpsat_refuses_domains_whose_sum_passes_int64():
    # three buffers of about 1.5e18 live together: each offset ranges over about 3e18, 9e18 in all
    problem = Problem([Buffer(f"b{i}", 0, 2, 1_500_000_000_000_000_001 + i) for i in range(3)])
    with pytest.raises(InvalidProblemError, match="cpsat: ") as info:
        solve(problem, "cpsat")
    assert "CP-SAT's limit" in str(info.value) and "\n" not in str(info.value)


def test_mip_refuses_numbers_beyond_exact_doubles():
    problem = Problem([Buffer("big", 0, 2, 2**52 + 1), Buffer("b", 1, 3, 3)])
    with pytest.raises(InvalidProblemError, match=r"^mip: the greedy-by-size peak .*2\*\*52 units.*'big'") as info:
        solve(problem, "mip")
    assert "\n" not in str(info.value)
    with pytest.raises(InvalidProblemError, match=r"^mip: the capacity 9007199254740992 B exceeds 2\*\*52"):
        solve(problem.with_capacity(2**53), "mip")


def test_units_bring_large_aligned_values_within_the_solvers_range():
    # sizes and alignments are multiples of 2**40: in units of 2**40 the numbers are tiny
    unit = 2**40
    problem = Problem([Buffer("a", 0, 2, 3 * unit, alignment=unit), Buffer("b", 1, 3, 2 * unit, alignment=unit),
                       Buffer("c", 2, 4, 3 * unit, alignment=unit)], capacity=5 * unit)
    for method in ("cpsat", "mip"):
        result = solve(problem, method)
        assert result.solved and result.peak == 5 * unit and validate(problem, result.solution).ok

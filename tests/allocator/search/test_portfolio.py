"""``auto``: the first heuristic that fits, else the exact search; the best placement it saw either way.

Every outcome asserted here is decided by node budgets, never by the clock: the timeouts are
generous and never bind. Each instance's premise (which heuristic fits) is checked by running
the heuristics, so a change in a heuristic shows up as a failed premise, not a wrong stage.
"""


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from allocator import METHODS, Buffer, InvalidProblemError, Problem, lower_bound, minimize, solve, validate
from allocator.core.generators import generate
from allocator.core.kernel_clock import work_clock
from allocator.core.registry import fit_stages, minimize_stages
from allocator.methods.minimalloc import MiniMallocOptions
from allocator.search.portfolio import auto_minimize

#: a timeout that never binds: the node budgets decide
NO_RUSH = 600
#: auto's stages under a capacity, as the method table declares them; ``stats["stage"]`` indexes it
STAGES = fit_stages()
*HEURISTIC_STAGES, EXACT_STAGE = STAGES
#: enough nodes for the small instances here to be decided
NODES = MiniMallocOptions(node_limit=100_000)

#: peaks: best-fit 16, greedy-by-size 15, load-best-fit 16; optimum 15
GREEDY_FITS = [Buffer("a", 5, 9, 5), Buffer("b", 4, 6, 2), Buffer("c", 4, 5, 4), Buffer("d", 2, 4, 3),
               Buffer("e", 1, 2, 5), Buffer("f", 1, 5, 4), Buffer("g", 4, 7, 5)]
#: peaks: best-fit 14, greedy-by-size 14, load-best-fit 12 = LOAD
ONLY_LOAD_BEST_FIT_FITS = [Buffer("a", 1, 2, 4), Buffer("b", 1, 3, 2), Buffer("c", 5, 6, 4), Buffer("d", 3, 6, 5),
                           Buffer("e", 2, 6, 3), Buffer("f", 0, 2, 6), Buffer("g", 2, 3, 1)]
#: peaks: best-fit 11, greedy-by-size 11, load-best-fit 12; the optimum is LOAD, 10
ONLY_EXACT_FITS = [Buffer("a", 2, 3, 3), Buffer("b", 1, 4, 6), Buffer("c", 5, 6, 5), Buffer("d", 5, 6, 3),
                   Buffer("e", 3, 6, 1), Buffer("f", 2, 4, 1), Buffer("g", 3, 7, 1)]
#: LOAD is 3, but the 2-byte buffer aligned to 2 has no room beside the one pinned at 1: the optimum is 4
ALIGNED = [Buffer("a", 0, 2, 1, offset=1), Buffer("b", 0, 2, 2, alignment=2), Buffer("c", 2, 4, 1)]


def heuristic_peaks(problem: Problem) -> list[int]:
    return [solve(problem.with_capacity(None), name).peak for name in HEURISTIC_STAGES]


def checked(problem: Problem, **options) -> object:
    """``solve(problem, "auto")``, its placement checked once more by the independent validator."""
    result = solve(problem, "auto", timeout=NO_RUSH, **options)
    if result.solution is not None:
        judged = problem if result.status == "solved" else problem.with_capacity(None)
        assert validate(judged, result.solution).ok
        assert result.peak == result.solution.peak(problem)
    return result


def test_the_first_heuristic_that_fits_is_taken_and_named():
    problem = Problem(GREEDY_FITS)
    peaks = heuristic_peaks(problem)
    result = checked(problem.with_capacity(peaks[0]))  # best-fit's own peak: it fits
    assert result.status == "solved" and result.stats["stage"] == 0 and result.reason == "best-fit fitted"
    assert result.peak <= peaks[0]


def test_greedy_by_size_is_taken_when_best_fit_misses():
    problem = Problem(GREEDY_FITS)
    best_fit, greedy, _ = heuristic_peaks(problem)
    assert greedy < best_fit  # the premise
    result = checked(problem.with_capacity(greedy))
    assert result.status == "solved" and result.stats["stage"] == 1 and result.reason == "greedy-by-size fitted"


def test_load_best_fit_is_taken_when_only_it_fits():
    problem = Problem(ONLY_LOAD_BEST_FIT_FITS)
    best_fit, greedy, load_best_fit = heuristic_peaks(problem)
    assert load_best_fit < min(best_fit, greedy)  # the premise
    result = checked(problem.with_capacity(load_best_fit))
    assert result.status == "solved" and result.stats["stage"] == 2 and result.reason == "load-best-fit fitted"
    assert "nodes" not in result.stats  # the exact stage never ran


def test_the_exact_stage_places_what_no_heuristic_fits():
    problem = Problem(ONLY_EXACT_FITS)
    load = lower_bound(problem)
    assert min(heuristic_peaks(problem)) > load  # the premise: no heuristic reaches LOAD
    result = checked(problem.with_capacity(load), options=NODES)
    assert result.status == "solved" and result.peak <= load
    assert STAGES[int(result.stats["stage"])] == EXACT_STAGE and result.reason == "minimalloc fitted"
    assert result.stats["nodes"] > 0


def test_a_proof_of_infeasibility_comes_with_the_lowest_heuristic_placement():
    problem = Problem(ALIGNED, capacity=3)
    assert lower_bound(problem) == 3  # so solve's own LOAD check proves nothing: the search must
    peaks = heuristic_peaks(problem)
    result = checked(problem, options=NODES)
    assert result.status == "infeasible" and "search space exhausted" in result.reason
    assert result.peak == min(peaks) > 3
    stage = int(result.stats["stage"])
    assert stage == peaks.index(min(peaks)) and f"{STAGES[stage]}'s" in result.reason


def test_a_node_limit_that_stops_the_search_reports_timeout_with_the_best_heuristic_placement():
    problem = Problem(ONLY_EXACT_FITS)
    peaks = heuristic_peaks(problem)
    result = checked(problem.with_capacity(lower_bound(problem)), options=MiniMallocOptions(node_limit=1))
    assert result.status == "timeout" and "node limit of 1" in result.reason
    assert result.peak == min(peaks) and int(result.stats["stage"]) == peaks.index(min(peaks))


def test_the_node_limit_keyword_is_short_for_the_options_field():
    problem = Problem(ONLY_EXACT_FITS)
    problem = problem.with_capacity(lower_bound(problem))
    by_keyword = checked(problem, node_limit=1)
    by_options = checked(problem, options=MiniMallocOptions(node_limit=1))
    assert (by_keyword.status, by_keyword.reason, by_keyword.peak) == (by_options.status, by_options.reason,
                                                                      by_options.peak)
    assert by_keyword.status == "timeout"
    assert checked(problem, options=MiniMallocOptions(node_limit=1), node_limit=100_000).status == "solved"
    with pytest.raises(InvalidProblemError, match="node_limit must be >= 0"):
        solve(problem, "auto", node_limit=-1)


def test_without_a_capacity_the_lowest_heuristic_peak_is_returned():
    problem = Problem(ONLY_LOAD_BEST_FIT_FITS)
    peaks = heuristic_peaks(problem)
    result = checked(problem)
    assert result.status == "solved" and result.peak == min(peaks)
    assert int(result.stats["stage"]) == peaks.index(min(peaks)) == 2
    assert result.reason.startswith("load-best-fit placed them lowest")


def test_a_deadline_already_passed_gives_no_placement_and_says_why():
    problem = Problem(ONLY_EXACT_FITS, capacity=10)
    out = METHODS["auto"].function(problem, work_clock() - 1, MiniMallocOptions())
    assert out.status == "timeout" and out.offsets is None and out.stats["stage"] == -1
    assert "no heuristic placed the buffers in time" in out.reason


def test_a_node_limit_makes_the_outcome_deterministic_and_independent_of_threads():
    problem = generate("random", 120, seed=4)
    problem = problem.with_capacity(lower_bound(problem))
    runs = [checked(problem, options=MiniMallocOptions(node_limit=3_000, workers=workers)) for workers in (1, 2, 1)]
    assert len({r.status for r in runs}) == 1
    assert len({tuple(sorted(r.solution.offsets.items())) if r.solution else None for r in runs}) == 1
    assert len({(r.stats["stage"], r.reason) for r in runs}) == 1


def test_capabilities_are_declared():
    capabilities = METHODS["auto"].capabilities
    assert capabilities.exact and capabilities.node_limit and not capabilities.needs_capacity
    assert METHODS["auto"].anytime is auto_minimize  # capabilities.anytime is its "module:name" reference
    assert set(minimize_stages()) == set(HEURISTIC_STAGES)


@pytest.mark.parametrize("problem", [Problem(ONLY_EXACT_FITS), Problem(GREEDY_FITS), Problem(ALIGNED),
                                     generate("random", 60, seed=2)], ids=["exact", "greedy", "aligned", "random60"])
def test_minimising_is_never_worse_than_a_member_and_matches_minimalloc(problem):
    result = minimize(problem, method="auto", timeout=NO_RUSH, node_limit=50_000)
    assert validate(problem.with_capacity(None), result.solution).ok
    assert result.method == "auto" and result.peak <= min(heuristic_peaks(problem))
    # both start from the same heuristics and bisect with the same node budget
    alone = minimize(problem, method="minimalloc", timeout=NO_RUSH, node_limit=50_000)
    assert (result.peak, result.lower_bound, result.optimal) == (alone.peak, alone.lower_bound, alone.optimal)
    assert [(c, o) for c, o, _ in result.probes] == [(c, o) for c, o, _ in alone.probes]


def test_minimising_honours_a_capacity_as_an_upper_limit():
    result = minimize(Problem(ALIGNED, capacity=3), method="auto", timeout=NO_RUSH, node_limit=10_000)
    assert result.status == "infeasible" and result.lower_bound == 4 > result.capacity


def test_minimising_refuses_a_bad_node_limit():
    with pytest.raises(InvalidProblemError, match="node_limit must be a positive integer"):
        minimize(Problem(ALIGNED), method="auto", node_limit=0)


@st.composite
def small_problems(draw):
    buffers = []
    for i in range(draw(st.integers(1, 9))):
        start = draw(st.integers(0, 8))
        buffers.append(Buffer(f"b{i}", start, start + draw(st.integers(1, 5)), draw(st.integers(1, 6)),
                              draw(st.sampled_from([1, 1, 2]))))
    return Problem(buffers)


@settings(max_examples=60, deadline=None)
@given(small_problems(), st.integers(0, 3))
def test_auto_decides_like_minimalloc_and_stops_at_the_first_heuristic_that_fits(problem, slack):
    capacity = lower_bound(problem) + slack
    problem = problem.with_capacity(capacity)
    result = checked(problem, options=NODES)
    alone = solve(problem, "minimalloc", timeout=NO_RUSH, options=NODES)
    assert result.status == alone.status and result.status in ("solved", "infeasible")
    fitting = [i for i, peak in enumerate(heuristic_peaks(problem)) if peak <= capacity]
    if fitting:
        assert result.stats["stage"] == fitting[0]
    elif result.status == "solved":
        assert result.stats["stage"] == len(STAGES) - 1

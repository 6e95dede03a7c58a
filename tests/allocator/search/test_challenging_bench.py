"""The MiniMalloc challenging suite (A-K at 1 MiB): what the searches achieve within fixed node
and step limits.

Slow (run by CI with ``-m slow``). Every assertion is on what does not depend on the machine's
load: statuses, validated placements, peaks, and node and step counts against fixed limits.
TelaMalloc runs under step limits only. MiniMalloc runs under ``SAFETY_SECONDS``, a time limit
that only ends a runaway search (a passing run never comes near it), and its nodes are then
checked against a fixed limit. How long the suite takes (the C++ MiniMalloc solves A-K in
about 30 s) and microseconds per node or step are measured by ``accelsim bench`` (columns
``seconds``, ``nodes`` and ``us/node``), not asserted here.
"""

import pytest

from allocator import Solution, lower_bound, read_csv, solve, validate
from allocator.methods.minimalloc import MiniMallocOptions
from allocator.methods.telamalloc import TelaMallocOptions, telamalloc_search

CAPACITY = 1_048_576
#: ends a MiniMalloc search gone astray; every instance now solves within seconds on a loaded
#: 2-core machine, so a search that passes its node limit never comes near this
SAFETY_SECONDS = 900.0

#: Nodes the single-threaded portfolio searched to solve each instance at 1 MiB (the count
#: depends only on the input and the options). Each search may use twice as many: a lost
#: pruning rule or a portfolio stuck on a bad key goes far past that.
NODES_MEASURED = {
    "A": 31_971, "B": 100_525, "C": 29_888, "D": 35_083, "E": 164_800, "F": 35_059,
    "G": 6_037, "H": 10_143, "I": 8_055, "J": 472, "K": 9_544,
}


def instance(benchmarks, name, capacity=CAPACITY):
    return read_csv(benchmarks / "minimalloc" / "challenging" / f"{name}.1048576.csv", capacity=capacity)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(NODES_MEASURED))
def test_minimalloc_solves_each_instance_within_twice_its_measured_nodes(benchmarks, name):
    problem = instance(benchmarks, name)
    limit = 2 * NODES_MEASURED[name]
    result = solve(problem, "minimalloc", timeout=SAFETY_SECONDS, options=MiniMallocOptions(workers=1))
    assert result.status == "solved", f"{name}: {result.status}: {result.reason}"
    assert result.solution is not None and validate(problem, result.solution).ok
    assert lower_bound(problem) <= result.peak <= CAPACITY
    assert 0 < result.stats["nodes"] <= limit


@pytest.mark.slow
def test_threads_do_not_change_the_placement(benchmarks):
    problem = instance(benchmarks, "I")
    limit = 2 * NODES_MEASURED["I"]
    one = solve(problem, "minimalloc", timeout=SAFETY_SECONDS, options=MiniMallocOptions(workers=1))
    two = solve(problem, "minimalloc", timeout=SAFETY_SECONDS, options=MiniMallocOptions(workers=2))
    assert one.solved and two.solved and validate(problem, one.solution).ok
    assert one.solution.offsets == two.solution.offsets
    assert one.stats["runs"] > 3  # several rounds of the portfolio ran before one solved
    assert one.stats["nodes"] <= limit


@pytest.mark.slow
@pytest.mark.parametrize("name", ["D", "I", "K"])
def test_telamalloc_search_keeps_to_its_step_limit(benchmarks, name):
    """TelaMalloc on the suite's 213-454 buffers at 120 % of LOAD with 20,000 steps: the steps
    never exceed the limit, a search that stops there says so, and a placement it returns fits.
    (Measured: D is placed in 531 steps; I and K use up the limit.)"""
    problem = instance(benchmarks, name, capacity=None)
    capacity = int(1.2 * lower_bound(problem))
    outcome = telamalloc_search(problem, capacity, step_limit=20_000)
    assert 0 < outcome.stats["steps"] <= 20_000
    if name == "D":
        assert outcome.status == "solved"
    if outcome.status == "solved":
        placed = Solution({b.id: int(o) for b, o in zip(problem.buffers, outcome.offsets, strict=True)})
        assert validate(problem.with_capacity(capacity), placed).ok
    else:
        assert outcome.status == "failed" and outcome.stats["steps"] == 20_000, (outcome.status, outcome.stats)


@pytest.mark.slow
def test_telamalloc_descent_on_c_beats_omnimalloc_telamalloc(benchmarks):
    """The descent on C with probes of at most 80,000 steps (no deadline: it stops after its
    80,000-step round) must end below 21 % over LOAD, the best of OmniMalloc's TelaMalloc on
    the suite (measured: 13.1 %, 815,855 steps in 23 probes)."""
    problem = instance(benchmarks, "C", capacity=None)
    result = solve(problem, "telamalloc", options=TelaMallocOptions(step_limit=80_000))
    assert result.status == "solved" and validate(problem, result.solution).ok
    load = lower_bound(problem)
    assert result.peak < 1.21 * load, f"{100 * (result.peak / load - 1):.1f} % over LOAD"
    assert load <= result.stats["bound"] <= result.peak
    assert 0 < result.stats["steps"] <= 80_000 * result.stats["probes"]

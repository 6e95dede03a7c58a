"""The challenging suite through ``accelsim bench``, with the time budget of the C++ reference.

Slow (run by CI with ``-m slow``): the C++ MiniMalloc fits all eleven instances at 1 MiB in
33.5 s on this machine; ours must too, every placement validated by the bench. A search
regression (a pruning rule lost, the portfolio stuck on a bad key) blows this budget.
"""

from pathlib import Path

import pytest

from accelsim import bench
from allocator import read_csv, solve, validate
from allocator.minimalloc import MiniMallocOptions

CHALLENGING = Path(__file__).resolve().parents[2].parent / "shared" / "benchmarks" / "minimalloc" / "challenging"
needs_suite = pytest.mark.skipif(not CHALLENGING.is_dir(), reason="shared/benchmarks not present")
REFERENCE_TOTAL_SECONDS = 33.5


@pytest.mark.slow
@needs_suite
def test_challenging_suite_fits_within_the_reference_total():
    files = bench.instance_files([CHALLENGING])
    assert len(files) == 11
    rows = bench.run(files, ["minimalloc"], from_name=True, timeout=30)
    assert [r.status for r in rows] == ["solved"] * 11, [(r.instance, r.status) for r in rows]
    assert all(r.peak is not None and r.peak <= 1048576 for r in rows)
    total = sum(r.seconds for r in rows)
    assert total <= REFERENCE_TOTAL_SECONDS, f"challenging suite took {total:.1f} s"


@pytest.mark.slow
@needs_suite
def test_threads_do_not_change_the_placement():
    problem = read_csv(CHALLENGING / "I.1048576.csv", capacity=1048576)
    one = solve(problem, "minimalloc", timeout=60, options=MiniMallocOptions(workers=1))
    two = solve(problem, "minimalloc", timeout=60, options=MiniMallocOptions(workers=2))
    assert one.solved and two.solved and validate(problem, one.solution).ok
    assert one.solution.offsets == two.solution.offsets
    assert one.stats["runs"] > 3  # several rounds of the portfolio ran before one solved


@pytest.mark.slow
@needs_suite
def test_telamalloc_step_costs_well_under_a_millisecond():
    """TelaMalloc §7.1: steps of 10 µs - 1 ms. Ours, on the suite's 154-454 buffers at 120 % of
    LOAD, must average under 0.2 ms a step (measured: 2-17 µs), and the 3 s descent on C must
    end below 21 % over LOAD, the best of OmniMalloc's TelaMalloc on the suite (measured: 13.1 %)."""
    import time

    from allocator import lower_bound, minimize
    from allocator.telamalloc import telamalloc_search

    for name in ("D.1048576.csv", "I.1048576.csv", "K.1048576.csv"):
        problem = read_csv(CHALLENGING / name)
        capacity = int(1.2 * lower_bound(problem))
        telamalloc_search(problem, capacity, step_limit=100)  # load the compiled code
        began = time.perf_counter()
        outcome = telamalloc_search(problem, capacity, step_limit=20_000)
        seconds = time.perf_counter() - began
        assert outcome.stats["steps"] > 0
        assert seconds / outcome.stats["steps"] < 2e-4, f"{name}: {1e6 * seconds / outcome.stats['steps']:.0f} µs/step"
    problem = read_csv(CHALLENGING / "C.1048576.csv", capacity=None)
    result = minimize(problem, "telamalloc", timeout=3)
    assert validate(problem, result.solution).ok
    assert result.peak < 1.21 * lower_bound(problem)

"""``minimize(..., on_improve=...)`` reports every anytime method's best as it improves (issue 22).

A caller interrupted by Ctrl-C keeps the last result reported, so every method whose entry
declares an anytime routine must report its first placement (a heuristic's, made in
milliseconds) and every later improvement, each one validated; the last one reported is the
answer. ``telamalloc`` and ``telamalloc-learned`` reported nothing before.
"""

from __future__ import annotations

import numpy as np
import pytest

import allocator
from allocator import MinimizeResult, Problem

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

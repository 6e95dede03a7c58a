"""Small inputs skip the compiled kernels of the input checks and the validator, with the same answers.

Below ``problem.COMPILED_FROM`` buffers ``invalid_buffers``,
``first_overlap`` and ``lower_bound`` run in numpy and Python, so that building a small problem
and validating a placement never loads numba. Each pair of paths is compared here on random
inputs (``problem.compiled_for`` replaced so that either path runs), edge values included.
"""

import importlib
import json
import subprocess
import sys

import numpy as np
import pytest

import allocator.core.problem
from allocator import MAX_VALUE, Buffer, Problem, lower_bound
from allocator.core.problem import first_overlap, invalid_buffers

VALIDATE = importlib.import_module("allocator.core.validate")  # the module (the package's ``validate`` is its function)


@pytest.fixture
def both_paths(monkeypatch):
    """Call ``function(*args)`` once through the compiled kernel and once through numpy/Python."""

    def run(function, *args):
        answers = []
        for compiled in (True, False):
            monkeypatch.setattr(allocator.core.problem, "compiled_for", lambda n, compiled=compiled: compiled)
            monkeypatch.setattr(VALIDATE, "compiled_for", lambda n, compiled=compiled: compiled)
            answers.append(function(*args))
        return answers

    return run


def random_rectangles(rng, n):
    starts = rng.integers(0, 8, n)
    ends = starts + rng.integers(1, 4, n)
    lows = rng.integers(0, 40, n)
    highs = lows + rng.integers(1, 6, n)
    return starts, ends, lows, highs


@pytest.mark.parametrize("seed", range(40))
def test_first_overlap_finds_the_same_pair_either_way(both_paths, seed):
    rng = np.random.default_rng(seed)
    for n in (2, 3, 5, 12, 40):
        compiled, python = both_paths(first_overlap, *random_rectangles(rng, n))
        assert compiled == python


def test_first_overlap_of_disjoint_rectangles_is_none_either_way(both_paths):
    n = 300
    starts = np.zeros(n, np.int64)
    lows = np.arange(n, dtype=np.int64) * 4  # stacked, touching: half-open ranges do not overlap
    assert both_paths(first_overlap, starts, starts + 5, lows, lows + 4) == [(-1, -1), (-1, -1)]


@pytest.mark.parametrize("seed", range(20))
def test_invalid_buffers_flags_the_same_buffers_either_way(both_paths, seed):
    rng = np.random.default_rng(seed)
    edges = np.array([-2, -1, 0, 1, 2, 3, 7, MAX_VALUE - 1, MAX_VALUE, MAX_VALUE + 1, 2**63 - 1], np.int64)
    columns = [rng.choice(edges, 200) for _ in range(5)]
    compiled, python = both_paths(invalid_buffers, *columns)
    assert compiled.tolist() == python.tolist()
    assert 0 < compiled.sum() < 200  # the draw has valid and invalid buffers


def test_invalid_buffers_catches_a_fixed_end_beyond_max_value_without_overflow(both_paths):
    columns = [np.array(v, np.int64) for v in ([0, 0, 0], [1, 1, 1], [2**61, 2**61, 8],
                                               [1, 1, 4], [2**61, 2**61 - 1, 6])]
    compiled, python = both_paths(invalid_buffers, *columns)
    assert compiled.tolist() == python.tolist() == [True, False, True]  # the last: 6 is no multiple of 4


@pytest.mark.parametrize("seed", range(20))
def test_lower_bound_is_the_same_either_way(both_paths, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    starts = rng.integers(0, 10, n)
    problem = Problem.from_arrays([f"b{i}" for i in range(n)], starts, starts + rng.integers(1, 5, n),
                                  rng.integers(1, 2**40, n))
    compiled, python = both_paths(lower_bound, problem)
    assert compiled == python
    assert compiled == max(sum(b.size for b in problem.buffers if b.start <= t < b.end) for t in range(15))


def test_building_a_small_problem_and_validating_a_placement_loads_no_numba():
    code = """
import sys, json
from allocator import Buffer, Problem, Solution, lower_bound
from allocator import validate
p = Problem([Buffer("a", 0, 2, 4, offset=0), Buffer("b", 1, 3, 4, offset=4), Buffer("c", 2, 4, 4)], capacity=8)
good = validate(p, Solution({"a": 0, "b": 4, "c": 0})).ok
Problem.from_arrays(["x", "y"], [0, 1], [2, 3], [4, 4])
print(json.dumps([lower_bound(p), good, "numba" in sys.modules]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [8, True, False]


def test_pinned_buffers_that_clash_are_named_the_same_either_way(both_paths):
    def clash():
        try:
            Problem([Buffer("a", 0, 4, 4, offset=0), Buffer("b", 1, 2, 2, offset=8),
                     Buffer("c", 2, 6, 4, offset=2)])
        except allocator.core.problem.InvalidProblemError as exc:
            return str(exc), exc.indices
        return None

    compiled, python = both_paths(clash)
    assert compiled == python and compiled is not None and compiled[1] == (0, 2)

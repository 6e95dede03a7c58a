"""A Problem built from Buffer objects or from columns: the same checks, the same problem, no needless copies."""

import pickle

import numpy as np
import pytest

from allocator import Buffer, InvalidProblemError, Problem, Solution

BUFFERS = [Buffer("a", 0, 3, 4), Buffer("b", 1, 4, 8, alignment=4), Buffer("c", 3, 6, 2, offset=6)]


def from_columns(capacity=None):
    return Problem.from_arrays(["a", "b", "c"], [0, 1, 3], [3, 4, 6], [4, 8, 2], alignments=[1, 4, 1],
                               fixed=[-1, -1, 6], capacity=capacity)


def test_objects_and_columns_make_the_same_problem():
    by_objects, by_columns = Problem(BUFFERS, 16), from_columns(16)
    assert by_objects == by_columns and hash(by_objects) == hash(by_columns)
    assert by_columns.buffers == tuple(BUFFERS)  # built on first access, equal to checked Buffer objects
    assert by_columns.ids == ("a", "b", "c") and len(by_columns) == 3
    for mine, theirs in zip(by_objects.arrays(), by_columns.arrays(), strict=True):
        assert mine.dtype == np.int64 and mine.tolist() == theirs.tolist()
    assert by_columns.by_id()["c"].offset == 6
    assert Solution({"a": 0, "b": 4, "c": 6}).peak(by_columns) == 12


def test_with_capacity_shares_the_columns_and_checks_only_the_capacity():
    problem = from_columns()
    bounded = problem.with_capacity(8)
    assert bounded.capacity == 8 and problem.capacity is None
    for mine, theirs in zip(problem.arrays(copy=False), bounded.arrays(copy=False), strict=True):
        assert mine is theirs  # no copy
    with pytest.raises(InvalidProblemError, match=r"buffer 'c': fixed range \[6, 8\) exceeds capacity 7"):
        problem.with_capacity(7)
    with pytest.raises(InvalidProblemError, match="capacity must be a positive integer"):
        problem.with_capacity(0)


def test_a_problem_cannot_be_changed_through_its_arrays_or_attributes():
    problem = from_columns()
    starts = problem.arrays()[0]
    starts[0] = 99  # a copy: the problem keeps its own
    assert problem.buffers[0].start == 0
    with pytest.raises(ValueError, match="read-only"):
        problem.arrays(copy=False)[0][0] = 99
    with pytest.raises(AttributeError, match="immutable"):
        problem.capacity = 5


def test_a_problem_survives_pickling():
    problem = from_columns(16)
    again = pickle.loads(pickle.dumps(problem))
    assert again == problem and again.buffers == problem.buffers
    with pytest.raises(ValueError, match="read-only"):
        again.arrays(copy=False)[2][0] = 1


def test_duplicate_ids_are_refused_naming_the_id_and_both_positions():
    for build in (lambda: Problem([Buffer("x", 0, 1, 1), Buffer("y", 0, 1, 1), Buffer("x", 1, 2, 1)]),
                  lambda: Problem.from_arrays(["x", "y", "x"], [0, 0, 1], [1, 1, 2], [1, 1, 1])):
        with pytest.raises(InvalidProblemError, match="buffer id 'x' appears more than once") as info:
            build()
        assert info.value.indices == (0, 2)


def test_only_buffers_and_matching_columns_are_accepted():
    with pytest.raises(InvalidProblemError, match="which is not a Buffer"):
        Problem([("a", 0, 1, 4)])
    with pytest.raises(InvalidProblemError, match=r"ends has shape \(2,\), expected \(3,\)"):
        Problem.from_arrays(["a", "b", "c"], [0, 0, 0], [1, 1], [1, 1, 1])
    with pytest.raises(InvalidProblemError, match="starts must be an array of integers, got dtype bool"):
        Problem.from_arrays(["a"], [True], [2], [1])

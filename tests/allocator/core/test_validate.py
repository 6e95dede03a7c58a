"""The validator catches every kind of violation and names the buffers involved."""

import importlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from allocator import Buffer, InvalidProblemError, Problem, Solution, lower_bound, validate


def kinds(report):
    return sorted(v.kind for v in report.violations)


def test_valid_solution_has_no_violation():
    p = Problem([Buffer("a", 0, 2, 4), Buffer("b", 2, 4, 4), Buffer("c", 1, 3, 2)], capacity=6)
    assert validate(p, Solution({"a": 0, "b": 0, "c": 4})).ok


def test_overlap_names_both_buffers_and_the_shared_steps():
    p = Problem([Buffer("a", 0, 3, 4), Buffer("b", 2, 5, 4)], capacity=8)
    report = validate(p, Solution({"a": 0, "b": 3}))
    assert kinds(report) == ["overlap"]
    assert report.violations[0].buffers == ("a", "b")
    assert "steps [2, 3)" in report.violations[0].message


def test_touching_lifetimes_may_share_addresses():
    p = Problem([Buffer("a", 0, 2, 4), Buffer("b", 2, 4, 4)], capacity=4)
    assert validate(p, Solution({"a": 0, "b": 0})).ok


def test_every_violation_is_reported_at_once():
    p = Problem(
        [Buffer("a", 0, 3, 4, alignment=4), Buffer("b", 1, 2, 4), Buffer("c", 0, 1, 2, offset=6), Buffer("d", 0, 1, 1)],
        capacity=8,
    )
    report = validate(p, Solution({"a": 2, "b": 5, "c": 4, "zz": 0}))
    assert kinds(report) == ["alignment", "capacity", "fixed", "missing", "overlap", "overlap", "unknown"]
    text = str(report)
    for name in ("'a'", "'b'", "'c'", "'d'", "'zz'"):
        assert name in text


def test_negative_offset_is_a_violation():
    p = Problem([Buffer("a", 0, 1, 4)])
    assert kinds(validate(p, Solution({"a": -4}))) == ["negative"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(start=0, end=3, size=-1), "size -1 must be positive"),
        (dict(start=0, end=3, size=0), "size 0 must be positive"),
        (dict(start=3, end=3, size=1), "end 3 <= start 3"),
        (dict(start=4, end=2, size=1), "end 2 <= start 4"),
        (dict(start=-1, end=2, size=1), "start -1 is negative"),
        (dict(start=0, end=2, size=1, alignment=0), "alignment 0"),
        (dict(start=0, end=2, size=1, alignment=4, offset=2), "not a multiple of alignment 4"),
    ],
)
def test_bad_buffers_raise_naming_the_buffer(kwargs, message):
    with pytest.raises(InvalidProblemError, match=message) as info:
        Buffer("buf7", **kwargs)
    assert "'buf7'" in str(info.value)


def test_duplicate_ids_and_bad_capacity_raise():
    with pytest.raises(InvalidProblemError, match="'x' appears more than once"):
        Problem([Buffer("x", 0, 1, 1), Buffer("x", 1, 2, 1)])
    with pytest.raises(InvalidProblemError, match="capacity"):
        Problem([], capacity=0)
    with pytest.raises(InvalidProblemError, match="exceeds capacity"):
        Problem([Buffer("x", 0, 1, 4, offset=6)], capacity=8)


def test_lower_bound_is_max_live_bytes():
    p = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 5), Buffer("c", 2, 4, 1), Buffer("d", 3, 4, 7)])
    assert lower_bound(p) == 9  # a+b at step 1; c+d = 8 at step 3
    assert lower_bound(Problem([])) == 0


buffers = st.lists(
    st.tuples(st.integers(0, 6), st.integers(1, 4), st.integers(1, 6), st.integers(0, 12)), min_size=1, max_size=8
)


@given(buffers)
def test_validator_agrees_with_a_byte_by_byte_check(items):
    problem = Problem([Buffer(str(i), s, s + d, size) for i, (s, d, size, _) in enumerate(items)], capacity=16)
    solution = Solution({str(i): off for i, (_, _, _, off) in enumerate(items)})
    cells: dict[tuple[int, int], int] = {}
    clash = out_of_bounds = False
    for b in problem.buffers:
        off = solution.offsets[b.id]
        out_of_bounds |= off + b.size > 16
        for t in range(b.start, b.end):
            for byte in range(off, off + b.size):
                cells[(t, byte)] = cells.get((t, byte), 0) + 1
                clash |= cells[(t, byte)] > 1
    report = validate(problem, solution)
    assert ("overlap" in kinds(report)) == clash
    assert ("capacity" in kinds(report)) == out_of_bounds
    live = max(sum(b.size for b in problem.buffers if b.start <= t < b.end) for t in range(12))
    assert lower_bound(problem) == live


def test_offsets_beyond_the_allocators_range_are_reported_not_overflowed():
    p = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4)])
    report = validate(p, Solution({"a": 0, "b": 2**70}))
    assert kinds(report) == ["range"] and "'b'" in str(report)
    assert kinds(validate(p, Solution({"a": 0, "b": 4.0}))) == ["missing"]  # a float is not an offset


def test_every_overlapping_pair_is_listed_once():
    n = 30
    p = Problem([Buffer(f"b{i}", 0, 5, 2) for i in range(n)])
    report = validate(p, Solution({f"b{i}": i for i in range(n)}))  # each meets the next one
    assert kinds(report) == ["overlap"] * (n - 1)
    assert {v.buffers for v in report.violations} == {(f"b{i}", f"b{i + 1}") for i in range(n - 1)}
    stacked = validate(p, Solution({f"b{i}": 0 for i in range(n)}))  # all at one offset: every pair
    assert len(stacked.violations) == n * (n - 1) // 2


rectangles = st.lists(st.tuples(st.integers(0, 30), st.integers(1, 6), st.integers(1, 9), st.integers(0, 40)),
                      min_size=1, max_size=40)


@given(rectangles)
def test_validator_agrees_with_a_pairwise_check_on_larger_sets(items):
    problem = Problem([Buffer(str(i), s, s + d, size) for i, (s, d, size, _) in enumerate(items)])
    offsets = {str(i): off for i, (_, _, _, off) in enumerate(items)}
    expected = set()
    for i, a in enumerate(problem.buffers):
        for b in problem.buffers[i + 1:]:
            oa, ob = offsets[a.id], offsets[b.id]
            if a.overlaps_in_time(b) and oa < ob + b.size and ob < oa + a.size:
                expected.add(frozenset((a.id, b.id)))
    report = validate(problem, Solution(offsets))
    assert {frozenset(v.buffers) for v in report.violations} == expected
    assert len(report.violations) == len(expected)


@pytest.mark.parametrize("scale", [1, 2**40])  # times that pack with the sizes into one sort key, and that do not
def test_lower_bound_matches_a_step_by_step_count(scale):
    items = [(0, 3, 5), (1, 2, 7), (2, 6, 1), (2, 4, 2**20), (5, 9, 3), (6, 7, 4)]
    problem = Problem([Buffer(str(i), s * scale, e * scale, size) for i, (s, e, size) in enumerate(items)])
    live = max(sum(size for s, e, size in items if s <= t < e) for t in range(10))
    assert lower_bound(problem) == live == 2**20 + 5 + 1  # steps 2..3: the 5, the 1 and the 2**20 buffers


def test_a_placement_with_too_many_overlaps_lists_the_first_and_counts_the_rest(monkeypatch):
    monkeypatch.setattr(importlib.import_module("allocator.core.validate"), "MAX_LISTED_OVERLAPS", 10)
    n = 12
    p = Problem([Buffer(f"b{i}", 0, 5, 2) for i in range(n)])
    report = validate(p, Solution({f"b{i}": 0 for i in range(n)}))  # every pair overlaps: 66
    assert len(report.violations) == 11 and not report.ok
    assert report.violations[-1].message == "... and 56 more overlapping pairs (only the first 10 are listed)"

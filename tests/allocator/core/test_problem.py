"""``allocator.core.problem``: building a Problem, the value range, and pinned buffers.

A Problem built from Buffer objects or from columns gets the same checks, gives the same problem
and makes no needless copies; every number it holds (and any stacking of its buffers) is at most
MAX_VALUE; pinned buffers that overlap each other in time and address are bad input, refused
before any method runs. Each error is one line naming the buffer (or the capacity) and the value.
"""

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from allocator import (
    MAX_VALUE,
    Buffer,
    CSVFormatError,
    InvalidProblemError,
    Problem,
    Solution,
    read_csv,
    solve,
    validate,
)
from allocator.core.problem import first_overlap

# --------------------------------------------------------------------------------------------------
# A Problem built from Buffer objects or from columns: the same checks, the same problem, no needless copies.


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


def test_an_id_that_is_not_a_string_is_refused_naming_it_and_its_type():
    # ids are strings everywhere else (CSV cells, schedules): an int id would not survive a CSV round trip
    with pytest.raises(InvalidProblemError, match=r"^buffer id 5 must be a string \(got int\)$"):
        Buffer(5, 0, 1, 8)  # type: ignore[arg-type]
    with pytest.raises(InvalidProblemError, match=r"^buffer id None must be a string \(got NoneType\)$"):
        Buffer(None, 0, 1, 8)  # type: ignore[arg-type]
    with pytest.raises(InvalidProblemError, match=r"^buffer id 7 must be a string \(got int\)$") as info:
        Problem.from_arrays(["a", "b", 7], [0, 0, 0], [1, 1, 1], [1, 1, 1])  # type: ignore[list-item]
    assert info.value.indices == (2,)
    with pytest.raises(InvalidProblemError, match=r"must be a string \(got int64\)"):
        Problem.from_arrays(np.arange(2), [0, 0], [1, 1], [1, 1])  # type: ignore[arg-type]
    assert Problem.from_arrays(np.array(["a", "b"]), [0, 0], [1, 1], [1, 1]).ids == ("a", "b")  # numpy str_ is a str


def test_only_buffers_and_matching_columns_are_accepted():
    with pytest.raises(InvalidProblemError, match="which is not a Buffer"):
        Problem([("a", 0, 1, 4)])
    with pytest.raises(InvalidProblemError, match=r"ends has shape \(2,\), expected \(3,\)"):
        Problem.from_arrays(["a", "b", "c"], [0, 0, 0], [1, 1], [1, 1, 1])
    with pytest.raises(InvalidProblemError, match="starts must be an array of integers, got dtype bool"):
        Problem.from_arrays(["a"], [True], [2], [1])


# --------------------------------------------------------------------------------------------------
# Value ranges: every number a problem holds is at most MAX_VALUE, and so is any stacking of its buffers.
#
# One test per class of out-of-range input; each checks the error is one line naming the
# buffer (or the capacity) and the value, whichever way the problem is built.


def one_line(error: pytest.ExceptionInfo) -> str:
    text = str(error.value)
    assert "\n" not in text
    return text


def test_max_value_is_what_cpsat_and_int64_sums_allow():
    assert MAX_VALUE == 2**62 - 1 == (2**63 - 1) // 2
    assert 2 * MAX_VALUE < 2**63  # any two in-range values add without overflowing int64


@pytest.mark.parametrize("field, kwargs", [
    ("end", dict(start=0, end=MAX_VALUE + 1, size=1)),
    ("size", dict(start=0, end=1, size=MAX_VALUE + 1)),
    ("alignment", dict(start=0, end=1, size=1, alignment=2**63)),
    ("fixed offset", dict(start=0, end=1, size=1, offset=MAX_VALUE + 1)),
])
def test_a_value_beyond_max_value_is_refused_naming_buffer_and_value(field, kwargs):
    with pytest.raises(InvalidProblemError) as info:
        Buffer("big", **kwargs)
    value = max(v for v in kwargs.values() if isinstance(v, int))
    assert one_line(info) == f"buffer 'big': {field} {value} is beyond MAX_VALUE = 2**62 - 1, the largest value " \
                             "the allocator handles"
    edge = {k: min(v, MAX_VALUE) for k, v in kwargs.items()}
    if "offset" in edge:
        edge["offset"] -= edge["size"]  # the fixed range must end within MAX_VALUE too
    Buffer("edge", **edge)  # MAX_VALUE itself is fine


def test_a_fixed_range_ending_beyond_max_value_is_refused():
    Buffer("ok", 0, 1, 4, offset=MAX_VALUE - 4)
    with pytest.raises(InvalidProblemError, match=r"buffer 'x': fixed range \[4611686018427387900, "
                                                  r"4611686018427387905\) ends at 4611686018427387905 is beyond"):
        Buffer("x", 0, 1, 5, offset=MAX_VALUE - 3)


def test_a_capacity_beyond_max_value_is_refused():
    problem = Problem([Buffer("a", 0, 1, 4)])
    for build in (lambda: Problem(problem.buffers, 2**63 - 1), lambda: problem.with_capacity(2**63 - 1)):
        with pytest.raises(InvalidProblemError) as info:
            build()
        assert one_line(info).startswith("capacity 9223372036854775807 is beyond MAX_VALUE")
    assert problem.with_capacity(MAX_VALUE).capacity == MAX_VALUE


def test_the_issue_case_three_huge_buffers_is_refused_before_any_method_runs():
    # three buffers of about 3.07e18 B at capacity 2**63 - 1 once made minimalloc answer wrongly (int64 overflow)
    buffers = [Buffer(f"b{i}", 0, 2, 3_074_457_345_618_258_602) for i in range(3)]
    with pytest.raises(InvalidProblemError, match="capacity 9223372036854775807 is beyond MAX_VALUE"):
        Problem(buffers, 2**63 - 1)
    with pytest.raises(InvalidProblemError) as info:
        Problem(buffers, MAX_VALUE)
    assert one_line(info).startswith("buffer 'b1': the sizes plus alignment padding of the buffers up to this one "
                                     "sum to 6148914691236517204")
    assert info.value.indices == (1,)


def test_the_stacking_sum_counts_alignment_padding_and_the_highest_pinned_end():
    half = MAX_VALUE // 2
    # size + (alignment - 1) of both: exactly MAX_VALUE is fine, one more byte is not
    Problem([Buffer("a", 0, 1, half), Buffer("b", 5, 6, half + 1)])
    with pytest.raises(InvalidProblemError, match="buffer 'b': the sizes plus alignment padding"):
        Problem([Buffer("a", 0, 1, half), Buffer("b", 5, 6, half, alignment=3)])
    # above the highest pinned end: a pinned buffer at the very top is fine alone, but leaves no room to stack
    Problem([Buffer("top", 0, 1, 8, offset=MAX_VALUE - 8), Buffer("also pinned", 3, 4, 8, offset=0)])
    with pytest.raises(InvalidProblemError) as info:
        Problem([Buffer("top", 0, 1, 8, offset=MAX_VALUE - 8), Buffer("free", 3, 4, 1)])
    assert one_line(info).startswith("buffer 'free': stacked above the highest pinned end 4611686018427387903, the "
                                     "free buffers' sizes plus alignment padding up to this one reach "
                                     "4611686018427387904, beyond MAX_VALUE")


def test_columns_get_the_same_checks_as_buffer_objects():
    ids = ["a", "b", "c"]
    ok = dict(starts=[0, 1, 2], ends=[1, 2, 3], sizes=[4, 4, 4])
    for column, value, expected in [
        ("ends", MAX_VALUE + 1, Buffer),
        ("sizes", 0, Buffer),
        ("starts", -3, Buffer),
    ]:
        columns = {k: list(v) for k, v in ok.items()}
        columns[column][1] = value
        with pytest.raises(InvalidProblemError) as from_arrays:
            Problem.from_arrays(ids, **columns)
        with pytest.raises(InvalidProblemError) as from_objects:
            expected("b", columns["starts"][1], columns["ends"][1], columns["sizes"][1])
        assert str(from_arrays.value) == str(from_objects.value)
        assert from_arrays.value.indices == (1,)
    with pytest.raises(InvalidProblemError, match="sizes must be an array of integers, got dtype float64"):
        Problem.from_arrays(ids, ok["starts"], ok["ends"], [4.0, 4.5, 4.0])
    with pytest.raises(InvalidProblemError, match=r"buffer 'c': sizes 18446744073709551615 is beyond MAX_VALUE"):
        Problem.from_arrays(ids, ok["starts"], ok["ends"], np.array([1, 1, 2**64 - 1], np.uint64))


def test_a_csv_value_beyond_max_value_names_file_line_and_column(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text(f"id,lower,upper,size\na,0,2,4\nb,0,2,{2**63}\n")
    with pytest.raises(CSVFormatError) as info:
        read_csv(path)
    assert one_line(info) == f"{path}:3: column 'size': buffer 'b': 9223372036854775808 is beyond MAX_VALUE = " \
                             "2**62 - 1, the largest value the allocator handles"
    path.write_text("id,lower,upper,size\na,0,99999999999999999999999999,4\n")
    with pytest.raises(CSVFormatError, match=r":2: column 'upper': buffer 'a': 99999999999999999999999999 is beyond"):
        read_csv(path)
    path.write_text(f"id,lower,upper,size\na,0,2,{MAX_VALUE // 2 + 1}\nb,0,2,{MAX_VALUE // 2 + 1}\n")
    with pytest.raises(CSVFormatError, match=r":3: buffer 'b': the sizes plus alignment padding"):
        read_csv(path)
    with pytest.raises(InvalidProblemError, match="capacity") as info:  # a bad capacity is not the file's fault
        read_csv(path, capacity=2**62)
    assert not isinstance(info.value, CSVFormatError)


def test_values_at_the_limit_are_placed_and_validated_exactly():
    # The largest values a problem can hold, handled by the heuristics and the validator without overflow.
    half = MAX_VALUE // 2
    problem = Problem([Buffer("a", 0, MAX_VALUE, half), Buffer("b", MAX_VALUE - 1, MAX_VALUE, half + 1)],
                      capacity=MAX_VALUE)
    result = solve(problem, "greedy-by-size")
    assert result.solved and result.peak == MAX_VALUE and result.stats["lower_bound"] == MAX_VALUE
    assert validate(problem, result.solution).ok


# --------------------------------------------------------------------------------------------------
# Pinned buffers that overlap each other in time and address are bad input, refused before any method runs.


def test_clashing_pins_are_refused_naming_both_ids_and_their_ranges():
    buffers = [Buffer("x", 0, 9, 1), Buffer("a", 0, 2, 4, offset=0), Buffer("b", 1, 3, 4, offset=2)]
    with pytest.raises(InvalidProblemError) as info:
        Problem(buffers)
    assert str(info.value) == ("pinned buffers 'a' [0, 4) live [0, 2) and 'b' [2, 6) live [1, 3) overlap in both "
                               "time and address: no placement can exist")
    assert info.value.indices == (1, 2)
    with pytest.raises(InvalidProblemError, match="pinned buffers 'a' .* and 'b'"):
        Problem.from_arrays(["x", "a", "b"], [0, 0, 1], [9, 2, 3], [1, 4, 4], fixed=[-1, 0, 2])


def test_pins_that_only_touch_are_fine():
    touching = [Buffer("a", 0, 2, 4, offset=0), Buffer("b", 2, 4, 4, offset=0),  # one after the other in time
                Buffer("c", 0, 4, 4, offset=4)]  # right above both in address
    problem = Problem(touching, capacity=8)
    result = solve(problem, "greedy-by-size")
    assert result.solved and result.solution.offsets == {"a": 0, "b": 0, "c": 4}


def test_a_csv_clash_names_the_lines(tmp_path):
    path = tmp_path / "pins.csv"
    path.write_text("id,lower,upper,size,offset\nfree,0,5,2,\np,0,4,8,16\nq,3,6,8,20\n")
    with pytest.raises(CSVFormatError) as info:
        read_csv(path)
    assert str(info.value) == (f"{path}:4: pinned buffers 'p' [16, 24) live [0, 4) and 'q' [20, 28) live [3, 6) "
                               "overlap in both time and address: no placement can exist (see also line 3)")


def test_many_disjoint_pins_are_accepted():
    # a fully pinned placement read back (what write_csv of a solution gives): 3,000 pins, none clashing
    n = 3000
    problem = Problem.from_arrays([f"b{i}" for i in range(n)], np.arange(n), np.arange(n) + 10, np.full(n, 8),
                                  fixed=8 * (np.arange(n) % 10))
    assert len(problem) == n
    with pytest.raises(InvalidProblemError, match="'b2999'"):  # one more in a slot still in use: refused
        Problem.from_arrays([f"b{i}" for i in range(n + 1)], np.r_[np.arange(n), n - 1], np.r_[np.arange(n) + 10, n],
                            np.full(n + 1, 8), fixed=np.r_[8 * (np.arange(n) % 10), 8 * ((n - 1) % 10)])


rectangles = st.lists(st.tuples(st.integers(0, 20), st.integers(1, 5), st.integers(0, 20), st.integers(1, 5)),
                      max_size=25)


@given(rectangles)
def test_the_sweep_finds_a_clash_exactly_when_a_pairwise_check_does(items):
    # each item: (start, lifetime, low address, height)
    starts = np.array([s for s, _, _, _ in items], np.int64)
    ends = np.array([s + d for s, d, _, _ in items], np.int64)
    lows = np.array([lo for _, _, lo, _ in items], np.int64)
    highs = np.array([lo + h for _, _, lo, h in items], np.int64)
    clashing = {(i, j) for i in range(len(items)) for j in range(i + 1, len(items))
                if starts[i] < ends[j] and starts[j] < ends[i] and lows[i] < highs[j] and lows[j] < highs[i]}
    i, j = first_overlap(starts, ends, lows, highs)
    if not clashing:
        assert (i, j) == (-1, -1)
    else:
        assert (min(i, j), max(i, j)) in clashing


def test_the_sweep_is_exact_on_thousands_of_records():
    # Enough records for several levels of the sweep's bitmap (64 ranks per word, 64 words per summary bit).
    rng = np.random.default_rng(7)
    n = 20_000
    starts = rng.integers(0, 5_000, n)
    ends = starts + rng.integers(1, 60, n)
    slot = np.empty(n, np.int64)  # interval colouring: records live together get different slots
    free: list[int] = []
    busy: list[tuple[int, int]] = []
    for i in np.argsort(starts, kind="stable").tolist():
        busy.sort()
        while busy and busy[0][0] <= starts[i]:
            free.append(busy.pop(0)[1])
        slot[i] = free.pop() if free else len(free) + len(busy)
        busy.append((int(ends[i]), int(slot[i])))
    lows = 8 * slot
    assert first_overlap(starts, ends, lows, lows + 8) == (-1, -1)  # touching slots do not overlap
    for k in rng.choice(n, 20, replace=False).tolist():
        live = np.flatnonzero((starts < ends[k]) & (starts[k] < ends) & (np.arange(n) != k))
        if not len(live):
            continue
        moved = lows.copy()
        moved[k] = lows[rng.choice(live)] + 3  # now overlaps that record (and maybe others) in both dimensions
        i, j = first_overlap(starts, ends, moved, moved + 8)
        assert k in (i, j) and i != j
        other = j if i == k else i
        assert starts[other] < ends[k] and starts[k] < ends[other] and abs(moved[other] - moved[k]) < 8

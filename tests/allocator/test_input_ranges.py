"""Value ranges: every number a problem holds is at most MAX_VALUE, and so is any stacking of its buffers.

One test per class of out-of-range input; each checks the error is one line naming the
buffer (or the capacity) and the value, whichever way the problem is built.
"""

import numpy as np
import pytest

from allocator import MAX_VALUE, Buffer, CSVFormatError, InvalidProblemError, Problem, read_csv, solve, validate


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

"""CSV I/O in the MiniMalloc format: the benchmarks load, output round-trips, bad lines are named."""

import pytest

from allocator import Buffer, CSVFormatError, Problem, Solution, lower_bound, read_csv, solve, write_csv

#: every test here reads through both CSV parsers (the ``csv_reader`` fixture of the root conftest.py)
pytestmark = pytest.mark.usefixtures("csv_reader")

CHALLENGING_LOAD = {c: 1048576 for c in "ABCDEFGHIJK"} | {"C": 1039360, "D": 986112, "J": 989184}


@pytest.mark.parametrize("name", sorted(CHALLENGING_LOAD))
def test_challenging_suite_loads_with_its_known_load(benchmarks, name):
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / f"{name}.1048576.csv", capacity=1048576)
    assert 154 <= len(problem) <= 454
    assert lower_bound(problem) == CHALLENGING_LOAD[name]


def test_idealloc_traces_load(benchmarks):
    sizes = {"somas_tensors/resnet50": 1042, "somas_tensors/pangu_2.6B": 18692, "iopddl/G_1": 816,
             "iopddl/S_1": 28526}
    for name, n in sizes.items():
        assert len(read_csv(benchmarks / "idealloc" / f"{name}.csv")) == n


def test_paper_example_solves_at_capacity_12(benchmarks):
    problem = read_csv(benchmarks / "minimalloc" / "examples" / "input.12.csv", capacity=12)
    assert [b.id for b in problem.buffers][:2] == ["b1", "b2"]
    assert lower_bound(problem) <= 12


def test_output_round_trips_with_offsets_and_alignment(tmp_path):
    problem = Problem([Buffer("a", 0, 2, 4, alignment=4), Buffer("b", 1, 3, 3, offset=8)], capacity=16)
    solution = solve(problem, "greedy-by-size").solution
    path = tmp_path / "out.csv"
    write_csv(path, problem, solution)
    assert path.read_text().splitlines()[0] == "id,lower,upper,size,alignment,offset"
    again = read_csv(path, capacity=16)
    assert [(b.id, b.start, b.end, b.size, b.alignment) for b in again.buffers] == [
        (b.id, b.start, b.end, b.size, b.alignment) for b in problem.buffers
    ]
    # offsets in an input file pin the buffers: the output read back is a fully fixed problem
    assert {b.id: b.offset for b in again.buffers} == dict(solution.offsets)


def test_columns_in_any_order_and_blank_offsets(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("size,id,upper,lower,offset\n4,x,3,0,\n2,y,2,1,8\n\n")
    problem = read_csv(path)
    assert [(b.id, b.start, b.end, b.size, b.offset) for b in problem.buffers] == [
        ("x", 0, 3, 4, None), ("y", 1, 2, 2, 8)
    ]


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty file"),
        ("id,lower,size\n", r":1: missing column 'upper'"),
        ("id,lower,upper,size,algnment\n", r":1: unknown column 'algnment'"),
        ("id,lower,upper,size\n0,0,2,4\n1,0,2\n", r":3: 3 fields, the header has 4"),
        ("id,lower,upper,size\n0,0,2,4\n1,0,two,4\n", r":3: column 'upper': 'two' is not an integer"),
        ("id,lower,upper,size\n0,0,2,-4\n", r":2: column 'size': buffer '0' has size -4, must be positive"),
        ("id,lower,upper,size\n0,5,5,4\n", r":2: column 'upper': buffer '0' has upper 5 <= lower 5"),
        ("id,lower,upper,size\n0,-1,5,4\n", r":2: column 'lower': buffer '0' starts at -1 < 0"),
        ("id,lower,upper,size\n0,0,2,4\n0,1,3,4\n", r":3: column 'id': '0' already defined on line 2"),
        ("id,lower,upper,size,alignment,offset\n0,0,2,4,4,2\n",
         r":2: column 'offset': buffer '0': fixed offset 2 is not a multiple of alignment 4"),
    ],
)
def test_malformed_csv_names_file_line_and_column(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(CSVFormatError, match=message) as info:
        read_csv(path)
    assert str(path) in str(info.value)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(CSVFormatError, match="cannot read"):
        read_csv(tmp_path / "nope.csv")


def test_write_without_solution_keeps_fixed_offsets(tmp_path):
    problem = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 3, offset=8)])
    write_csv(tmp_path / "p.csv", problem)
    assert (tmp_path / "p.csv").read_text() == "id,lower,upper,size,offset\na,0,2,4,\nb,1,3,3,8\n"
    assert Solution({"a": 0, "b": 8}).peak(problem) == 11

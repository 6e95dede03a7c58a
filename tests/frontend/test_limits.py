"""The operator limit: a graph a run could not take is refused up front, in one line saying what it needs."""

from __future__ import annotations

import pytest

import frontend
from accelsim.cli import main
from frontend.limits import RUN_BYTES_PER_OPERATOR, GraphTooLargeError, available_memory, check_operator_count
from frontend.synthetic import chain


@pytest.fixture
def chain_file(tmp_path):
    path = tmp_path / "chain300.json"
    frontend.save_graph(chain(300, 64), path)
    return path


def test_a_file_over_the_limit_is_refused_before_it_is_parsed(chain_file):
    with pytest.raises(GraphTooLargeError, match=r"chain300.json: about 300 operators, more than the limit of 299 "
                                                 r"\(--max-operators N raises it\): a run needs about"):
        frontend.load_graph(chain_file, max_operators=299)
    assert frontend.load_graph(chain_file, max_operators=300).number_of_nodes() == 300


def test_more_than_the_machine_has_is_refused_whatever_the_limit():
    available = available_memory()
    assert available is not None, "/proc/meminfo has no MemAvailable"
    too_many = available // RUN_BYTES_PER_OPERATOR + 1
    with pytest.raises(GraphTooLargeError, match="more than this machine has"):
        check_operator_count(too_many, "huge.json", limit=None)
    check_operator_count(1000, "small.json", limit=None)


@pytest.mark.parametrize("command", ["run", "size"])
def test_run_and_size_refuse_over_max_operators_in_one_line(chain_file, tmp_path, capsys, command):
    out = ["--out", str(tmp_path / "out")] if command == "run" else []
    assert main([command, str(chain_file), "--max-operators", "100", *out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "more than the limit of 100" in err[0] and "--max-operators" in err[0], err
    assert not (tmp_path / "out").exists()


def test_a_graph_object_is_checked_with_its_exact_count(tmp_path):
    from accelsim import compile_and_simulate

    with pytest.raises(GraphTooLargeError, match="chain300: 300 operators, more than the limit of 10"):
        compile_and_simulate(chain(300, 64), "pixel6", max_operators=10)

"""The terminal summary (``accelsim.report.format_summary``): columns that stay put, byte figures with their scope."""

from __future__ import annotations

import pytest

from accelsim import compile_and_simulate
from accelsim.cli import main
from accelsim.report import format_summary, summary_rows
from frontend.graph import save_graph

LONG = "/tmp/" + "a-very-long-folder-name/" * 6 + "report"


@pytest.fixture
def report(chain_graph):
    return compile_and_simulate(chain_graph(), hw="pixel6")


def test_the_columns_do_not_move_with_the_length_of_the_report_folder(report):
    report.out_dir = None
    bare = format_summary(report).splitlines()
    report.out_dir = "r"
    short = format_summary(report).splitlines()
    report.out_dir = LONG
    long = format_summary(report).splitlines()
    assert short[:-1] == long[:-1] == bare  # every other row as it was, to the character
    cycles = next(line for line in bare if line.lstrip().startswith("cycles "))
    value_column = cycles.index(f"{report.cycles:,}")
    assert long[-1].split() == ["report", LONG] and long[-1].index(LONG) == value_column
    assert short[-1].split() == ["report", "r"] and short[-1].rindex("r") == value_column


def test_the_run_command_prints_the_same_columns_for_a_short_and_a_long_out(chain_graph, tmp_path, capsys):
    graph = tmp_path / "chain.json"
    save_graph(chain_graph(), graph)
    printed = []
    for out in (tmp_path / "o", tmp_path / ("deeper-and-deeper-" * 5) / "and-a-long-report-folder-name"):
        assert main(["run", str(graph), "--hw", "pixel6", "--out", str(out), "--no-plots"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[-1].split() == ["report", str(out)]
        # the run's own wall times differ from run to run; every other row must not move
        printed.append([line for line in lines[:-1] if not line.lstrip().startswith("wall time")])
    assert printed[0] == printed[1] and len(printed[0]) > 15


def test_every_byte_figure_says_its_scope(report):
    scope = report.capacity_scope
    assert scope == "per PE (16 PEs)"
    rows = {label: note for label, _, note in summary_rows(report)}
    for label in ("capacity", "M_R (min capacity)", "peak address", "peak live bytes"):
        assert scope in rows[label], (label, rows[label])
    for label in ("DRAM read", "DRAM write", "compulsory", "non-compulsory"):
        assert "chip total" in rows[label], (label, rows[label])
    assert "stalls included" in rows["utilization"]  # the whole run's, unlike an operator's mapping efficiency

"""The command line's contract on bad or meaningless input (issue 11).

Every case exits 2 (bad input), 1 (the work did not succeed) or 130 (Ctrl-C) with one
``error:`` line on stderr naming the offending item, no traceback, and nothing written for
a result that does not exist. Each parametrized case is one class of input the issue lists.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

import accelsim.report as report_module
from accelsim.cli import main
from frontend.graph import save_graph

TINY = "id,lower,upper,size\na,0,3,4\nb,3,9,4\nc,0,9,4\nd,9,21,4\ne,0,21,4\n"  # MiniMalloc Fig. 1, LOAD 12


@pytest.fixture
def tiny_csv(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.csv"
    path.write_text(TINY)
    return path


@pytest.fixture
def chain_json(chain_graph, tmp_path: Path) -> Path:
    path = tmp_path / "chain.json"
    save_graph(chain_graph(), path)
    return path


def _one_error_line(capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# ------------------------------------------------------------------------------------------
# options that were accepted but meant nothing


@pytest.mark.parametrize(("extra", "needle"), [
    (["--minimize", "--timeout", "0"], "--timeout"),
    (["--minimize", "--timeout", "-1"], "--timeout"),
    (["--timeout", "nan"], "--timeout"),
    (["--timeout", "inf"], "--timeout"),
    (["--timeout", "５"], "--timeout"),  # a fullwidth digit is not read as 5 (issue 22)
    (["--method", "nope"], "nope"),
    (["--capacity", "0"], "--capacity"),
    (["--capacity", "lots"], "--capacity"),
])
def test_alloc_meaningless_options_exit_2(tiny_csv, capsys, extra, needle):
    assert main(["alloc", str(tiny_csv), *extra]) == 2
    _one_error_line(capsys, needle)


@pytest.mark.parametrize(("extra", "needle"), [
    (["--scheduler", "cosma", "--time-limit", "0"], "--time-limit"),
    (["--scheduler", "cosma", "--time-limit", "-1"], "--time-limit"),
    (["--scheduler", "cosma", "--time-limit", "nan"], "--time-limit"),
    (["--fixed-order", "min-peak"], "fixed_order='min-peak' applies to scheduler='cosma-fs' only"),
    (["--scheduler", "cosma", "--fixed-order", "program"], "fixed_order"),
    # the flag is named for the field it fills (RunOptions.fixed_order; RunOptions.order is another thing)
    (["--scheduler", "cosma-fs", "--order", "program"], "unrecognized arguments: --order"),
    (["--scheduler", "cosma", "--replacement", "greedy"], "replacement='greedy'"),
    (["--time-limit", "5"], "time_limit=5.0 applies to the solver-based schedulers"),
    (["--scheduler", "cosma", "--timeout", "5"], "timeout=5.0 limits a re-placing allocator"),
    (["--allocator", "online-first-fit", "--timeout", "5"], "arena has no time limit"),
    (["--scheduler", "cosma-fs", "--allocator", "online-first-fit"], "places its tensors itself"),
    (["--allocator", "nope"], "unknown allocator 'nope'"),
    (["--dtype", "fp16"], "dtype='fp16' cannot apply to a graph already traced in"),
    (["--input-shape", "1,3,8,8"], "input_shape=(1, 3, 8, 8) cannot apply"),
    (["--hw", "pixel7"], "pixel7"),
    (["--set", "compute.rowz=4"], "compute.rowz"),
    # one name per field (issue 22): two spellings of one field are refused naming both, never one dropped
    (["--sram", "4MiB", "--set", "sram_bytes_per_pe=8MiB"], "(--sram) and sram_bytes_per_pe='8MiB' (--set)"),
    (["--sram", "4MiB", "--set", "sram_bytes_per_pe=4MiB"], "name one field"),
    (["--dtype", "int8", "--set", "dtype=bf16"], "(--dtype) and dtype='bf16' (--set)"),
    # a --set of the dtype is honoured for a zoo model; a traced graph's dtype is fixed
    (["--set", "dtype=bf16"], "--set dtype=bf16 cannot apply to a graph already traced in 'int8'"),
    # numbers are ASCII digits; the DRAM must hold what the run keeps there
    (["--set", "dram_latency_cycles=٣"], "dram_latency_cycles"),
    (["--set", "dram_bytes=1"], "dram_bytes=1 B cannot hold the"),
])
def test_run_meaningless_options_exit_2_before_any_work(chain_json, tmp_path, capsys, extra, needle):
    out = tmp_path / "report"
    assert main(["run", str(chain_json), "--out", str(out), *extra]) == 2
    _one_error_line(capsys, needle)
    assert not out.exists()


def test_run_refuses_a_dram_too_small_for_its_spills(chain_graph, tmp_path, capsys):
    """The DRAM check counts what the schedule adds: a DRAM that holds the model's inputs,
    outputs and weights but not the tensors the run spills is refused, naming both numbers."""
    path = tmp_path / "chain.json"
    save_graph(chain_graph(), path)
    base = tmp_path / "base"
    assert main(["run", str(path), "--hw", "pixel6", "--out", str(base), "--no-plots"]) == 0
    capsys.readouterr()
    report = json.loads((base / "report.json").read_text())
    compulsory = report["weight_bytes"] + report["input_bytes"] + report["output_bytes"]
    assert report["dram_footprint_bytes"] >= compulsory
    # a scratchpad at M_R makes the chain spill: its footprint grows past the compulsory bytes
    small = tmp_path / "small"
    need = report["min_capacity_bytes"]
    args = ["run", str(path), "--hw", "pixel6", "--sram", str(need), "--no-plots"]
    assert main([*args, "--out", str(small)]) == 0
    capsys.readouterr()
    spilled = json.loads((small / "report.json").read_text())
    assert spilled["spills"] > 0 and spilled["dram_footprint_bytes"] > compulsory
    refused = tmp_path / "refused"
    assert main([*args, "--set", f"dram_bytes={spilled['dram_footprint_bytes'] - 1}", "--out", str(refused)]) == 2
    _one_error_line(capsys, "cannot hold", f"{spilled['dram_footprint_bytes']:,} B", "spills")
    assert not refused.exists()
    fits = tmp_path / "fits"
    assert main([*args, "--set", f"dram_bytes={spilled['dram_footprint_bytes']}", "--out", str(fits)]) == 0


@pytest.mark.parametrize("text", ["1,3,x", "1,3,,224", "1,3,224,224,", "", "1;3", "1,-3", "1,3,2.5", "١,٣"])
def test_input_shape_is_parsed_strictly(tmp_path, capsys, text):
    assert main(["run", "resnet18", "--input-shape", text, "--out", str(tmp_path / "r")]) == 2
    _one_error_line(capsys, "--input-shape")


@pytest.mark.parametrize(("extra", "needle"), [
    (["--capacity", "8", "--method", ","], "empty method name"),
    (["--capacity", "8", "--method", "first-fit,,best-fit"], "empty method name"),
    (["--capacity", "8", "--method", "first-fit,first-fit"], "twice"),
    (["--load-fraction", "inf"], "'inf' must be a positive, finite"),
    (["--load-fraction", "0"], "'0' must be a positive"),
    (["--capacity", "8", "--repeat", "0"], "--repeat"),
    (["--capacity", "8", "--timeout", "0"], "--timeout"),
    (["--capacity", "8", "--threads", "-1"], "--threads"),
])
def test_bench_meaningless_options_exit_2(tiny_csv, capsys, extra, needle):
    assert main(["bench", str(tiny_csv), *extra]) == 2
    _one_error_line(capsys, needle)


def test_bench_without_a_capacity_mode_is_one_line(tiny_csv, capsys):
    assert main(["bench", str(tiny_csv)]) == 2
    _one_error_line(capsys, "one of the arguments")


# ------------------------------------------------------------------------------------------
# output paths are checked before the work


def _unwritable(folder: Path) -> Path:
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    return folder


@pytest.mark.parametrize("where", ["folder", "missing-folder", "unwritable"])
def test_alloc_output_path_is_checked_first(tiny_csv, tmp_path, capsys, where):
    if where == "unwritable":  # root may write into a read-only folder, never into /proc
        target = Path("/proc/out.csv") if os.geteuid() == 0 else _unwritable(tmp_path / "ro") / "out.csv"
    else:
        target = {"folder": tmp_path, "missing-folder": tmp_path / "nowhere" / "out.csv"}[where]
    assert main(["alloc", str(tiny_csv), "--capacity", "12", "--output", str(target)]) == 2
    _one_error_line(capsys, "--output")
    assert capsys.readouterr().out == ""  # refused before solving: nothing printed


@pytest.mark.parametrize(("option", "name"), [("--csv", "rows"), ("--plot", "plot.png"), ("--plot", "plot.xyz")])
def test_bench_output_paths_are_checked_first(tiny_csv, tmp_path, capsys, option, name):
    target = tmp_path / "nowhere" / name if not name.endswith(".xyz") else tmp_path / name
    assert main(["bench", str(tiny_csv), "--capacity", "12", option, str(target)]) == 2
    _one_error_line(capsys, option)
    assert capsys.readouterr().out == ""
    assert main(["bench", str(tiny_csv), "--capacity", "12", option, str(tmp_path)]) == 2
    _one_error_line(capsys, option, "is a folder")


def test_run_out_in_an_unwritable_place_is_refused_first(chain_json, capsys):
    assert main(["run", str(chain_json), "--out", "/proc/accelsim-report"]) == 2
    _one_error_line(capsys, "--out", "not writable")


def test_run_out_naming_a_file_is_refused_first(chain_json, tmp_path, capsys):
    existing = tmp_path / "a-file"
    existing.write_text("keep me")
    assert main(["run", str(chain_json), "--out", str(existing)]) == 2
    _one_error_line(capsys, "--out", "is a file")
    assert existing.read_text() == "keep me"


def test_run_interrupted_while_writing_leaves_no_half_written_folder(chain_json, tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(report_module, "plot_memory", interrupted)  # after trace.json and layout.svg are written
    out = tmp_path / "deep" / "report"
    assert main(["run", str(chain_json), "--out", str(out)]) == 130
    _one_error_line(capsys, "interrupted")
    assert not out.exists()
    assert [p.name for p in (tmp_path / "deep").iterdir()] == []  # the staging folder is gone too


def test_run_rewrites_an_existing_report_folder_whole(chain_json, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["run", str(chain_json), "--out", str(out)]) == 0
    first = (out / "report.json").read_text()
    (out / "notes.txt").write_text("mine")
    assert main(["run", str(chain_json), "--hw", "tpuv4", "--out", str(out)]) == 0
    assert (out / "report.json").read_text() != first and '"out_dir": "' + str(out) in (out / "report.json").read_text()
    assert (out / "notes.txt").read_text() == "mine"  # files the run does not write are kept


# ------------------------------------------------------------------------------------------
# bench goes on past a bad file


def test_bench_reports_a_bad_file_in_its_row_and_goes_on(tiny_csv, tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,lower,upper,size\na,0,3,4\nb,5,2,4\n")
    csv_out = tmp_path / "rows.csv"
    assert main(["bench", str(bad), str(tiny_csv), "--capacity", "12", "--method", "first-fit,minimalloc",
                 "--csv", str(csv_out)]) == 1
    captured = capsys.readouterr()
    rows = csv_out.read_text().splitlines()
    assert len(rows) == 1 + 1 + 2  # header, the bad file's row, two methods on the good one
    assert rows[1].startswith("bad.csv,-,") and ",error," in rows[1] and "bad.csv:3" in rows[1]
    assert all(",solved," in r for r in rows[2:])
    assert captured.err.strip().splitlines() == [line for line in captured.err.strip().splitlines()
                                                  if line.startswith("error: ") and "bad.csv:3" in line]


def test_bench_prints_the_header_before_the_first_row(tiny_csv, capsys):
    assert main(["bench", str(tiny_csv), "--capacity", "12"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:3] == ["instance", "method", "buffers"]
    assert lines[2].split()[:2] == ["tiny.csv", "greedy-by-size"]


# ------------------------------------------------------------------------------------------
# --minimize with a capacity


def test_minimize_with_a_capacity_it_cannot_meet_exits_1_and_writes_nothing(tiny_csv, tmp_path, capsys):
    out = tmp_path / "placed.csv"
    assert main(["alloc", str(tiny_csv), "--minimize", "--capacity", "1", "--timeout", "2", "--output",
                 str(out)]) == 1
    text = capsys.readouterr().out
    assert "1 B (infeasible: the lower bound exceeds it)" in text and "not written" in text
    assert not out.exists()


def test_minimize_with_a_capacity_it_meets_writes_the_placement(tiny_csv, tmp_path, capsys):
    out = tmp_path / "placed.csv"
    assert main(["alloc", str(tiny_csv), "--minimize", "--capacity", "12", "--timeout", "2", "--output",
                 str(out)]) == 0
    assert "12 B (fits)" in capsys.readouterr().out
    assert out.read_text().splitlines()[0].endswith("offset")


# ------------------------------------------------------------------------------------------
# Ctrl-C


def test_ctrl_c_in_a_method_without_its_own_minimisation_keeps_the_insurance_placement(benchmarks, tmp_path,
                                                                                       interrupt_after):
    # idealloc has no anytime routine: minimize runs it once, after greedy-by-size's insurance placement,
    # which is reported at once (issue 22: an interrupt used to keep nothing)
    hard = benchmarks / "minimalloc" / "challenging" / "D.1048576.csv"
    placed = tmp_path / "placed.csv"
    done = interrupt_after(["alloc", str(hard), "--minimize", "--method", "idealloc", "--timeout", "120",
                             "--output", str(placed)], "best so far", tmp_path)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert "interrupted (Ctrl-C): best found so far" in done.stdout and "insurance" in done.stdout
    rows = placed.read_text().splitlines()
    assert rows[0].endswith("offset") and len(rows) == sum(1 for _ in hard.open())


def test_ctrl_c_in_bench_keeps_the_rows_already_measured(tiny_csv, benchmarks, tmp_path, interrupt_after):
    slow = benchmarks / "minimalloc" / "challenging" / "D.1048576.csv"  # no placement at 1,000,000 in seconds
    rows_csv = tmp_path / "rows.csv"
    done = interrupt_after(["bench", str(tiny_csv), str(slow), "--method", "minimalloc", "--capacity", "1000000",
                             "--timeout", "20", "--threads", "1", "--csv", str(rows_csv)], "tiny.csv", tmp_path)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: interrupted (Ctrl-C) after 1 rows")
    rows = rows_csv.read_text().splitlines()
    assert len(rows) == 2 and rows[1].startswith("tiny.csv,minimalloc,5,12,1000000,solved")


def test_ctrl_c_in_alloc_minimize_keeps_the_best_placement(benchmarks, tmp_path, interrupt_after):
    hard = benchmarks / "minimalloc" / "challenging" / "D.1048576.csv"  # its optimum is not proven in minutes
    placed = tmp_path / "placed.csv"
    done = interrupt_after(["alloc", str(hard), "--minimize", "--timeout", "120", "--output", str(placed)],
                            "best so far", tmp_path)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert "interrupted (Ctrl-C): best found so far" in done.stdout
    rows = placed.read_text().splitlines()
    assert rows[0].endswith("offset") and len(rows) == 1 + sum(1 for _ in hard.open()) - 1

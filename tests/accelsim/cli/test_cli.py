"""The ``accelsim`` command line, driven through ``main([...])``: what each command does, and its
contract on bad or meaningless input (issue 11).

On bad input every command exits 2 (bad input), 1 (the work did not succeed) or 130 (Ctrl-C)
with one ``error:`` line on stderr naming the offending item, no traceback, and nothing written
for a result that does not exist.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import accelsim.pipeline as pipeline
import accelsim.report as report_module
from accelsim.cli import main
from frontend.graph import save_graph

# --------------------------------------------------------------------------------------------------
# The ``accelsim`` command line, driven through ``main([...])``.


REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def example_12(benchmarks: Path) -> Path:
    """MiniMalloc's paper example (Fig. 1), capacity 12."""
    return benchmarks / "minimalloc" / "examples" / "input.12.csv"


# ------------------------------------------------------------------------------------------
# alloc


def test_alloc_solves_the_minimalloc_example(example_12, capsys):
    assert main(["alloc", str(example_12), "--capacity", "12"]) == 0
    out = capsys.readouterr().out
    lines = dict(line.split(None, 1) for line in out.splitlines() if line.strip() and not line.startswith("over"))
    assert lines["status"].strip() == "solved"
    assert lines["peak"].strip() == "12 B"
    assert lines["LOAD"].startswith("12 B")
    assert "over LOAD  0.00 %" in out
    assert "time" in lines


def test_alloc_reports_why_it_is_not_solved_and_writes_no_output(example_12, tmp_path, capsys):
    out_csv = tmp_path / "placed.csv"
    assert main(["alloc", str(example_12), "--capacity", "8", "--output", str(out_csv)]) == 1
    out = capsys.readouterr().out
    assert "infeasible" in out
    assert "reason" in out and "LOAD 12" in out
    assert "not written" in out and not out_csv.exists()


def test_alloc_exact_search_fits_the_paper_example_and_reports_nodes(example_12, capsys):
    assert main(["alloc", str(example_12), "--capacity", "12", "--method", "minimalloc"]) == 0
    out = capsys.readouterr().out
    assert "solved" in out and "nodes" in out


def test_alloc_accepts_unit_capacities_and_writes_the_placement(example_12, tmp_path, capsys):
    out_csv = tmp_path / "placed.csv"
    assert main(["alloc", str(example_12), "--capacity", "1KiB", "--method", "first-fit", "--output",
                 str(out_csv)]) == 0
    assert "first-fit" in capsys.readouterr().out
    header = out_csv.read_text().splitlines()[0].split(",")
    assert "offset" in header


def test_alloc_threads_sets_the_portfolio_workers_and_the_placement_does_not_change(benchmarks, tmp_path, capsys):
    instance = benchmarks / "minimalloc" / "challenging" / "K.1048576.csv"
    outputs = []
    for threads in ("1", "2"):
        out = tmp_path / f"k{threads}.csv"
        assert main(["alloc", str(instance), "--capacity", "1048576", "--method", "minimalloc",
                     "--threads", threads, "--output", str(out)]) == 0
        outputs.append(out.read_text())
    assert outputs[0] == outputs[1]
    capsys.readouterr()
    assert main(["alloc", str(instance), "--capacity", "1048576", "--method", "best-fit", "--threads", "1"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: --threads") and "'best-fit'" in error and "minimalloc" in error


@pytest.mark.parametrize("option", ["--output", "--explain"])
def test_alloc_never_writes_over_its_own_input(example_12, tmp_path, capsys, option):
    path = tmp_path / "in.csv"
    path.write_bytes(example_12.read_bytes())
    # the same file, named another way
    assert main(["alloc", str(path), "--capacity", "11", option, str(tmp_path / "." / "in.csv")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"error: {option}") and "is the input CSV" in error
    assert path.read_bytes() == example_12.read_bytes()


def test_alloc_malformed_csv_names_the_line(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,lower,upper,size\nb1,0,3,4\nb2,3,x,4\n")
    assert main(["alloc", str(bad), "--capacity", "16"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert f"{bad}:3" in err and "upper" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--capacity", "lots"], "--capacity 'lots'"),
        (["--capacity", "0"], "--capacity must be positive"),
        (["--capacity", "16", "--method", "nope"], "nope"),
    ],
)
def test_alloc_bad_arguments_exit_2(tmp_path, capsys, argv, message):
    csv = tmp_path / "ok.csv"
    csv.write_text("id,lower,upper,size\nb1,0,3,4\n")
    assert main(["alloc", str(csv), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err


def test_alloc_missing_file_exit_2(tmp_path, capsys):
    assert main(["alloc", str(tmp_path / "missing.csv"), "--capacity", "16"]) == 2
    assert "missing.csv" in capsys.readouterr().err


def test_alloc_lists_methods(capsys):
    import allocator

    assert main(["alloc", "--methods"]) == 0
    out = capsys.readouterr().out
    for name, entry in allocator.METHODS.items():
        assert name in out and entry.description in out


# ------------------------------------------------------------------------------------------
# configs, models, run


def test_configs_lists_the_bundled_configs(capsys):
    assert main(["configs"]) == 0
    out = capsys.readouterr().out
    assert "pixel6" in out and "tpuv4" in out and "128 MiB" in out and "1066 MHz" in out


def test_python_dash_m_is_the_same_command():
    done = subprocess.run([sys.executable, "-m", "accelsim", "configs"], cwd=REPO, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "pixel6" in done.stdout


@pytest.fixture
def chain_json(chain_graph, tmp_path: Path) -> Path:
    path = tmp_path / "chain.json"
    save_graph(chain_graph(), path)
    return path


def test_run_graph_writes_report_and_prints_summary(chain_json, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", str(chain_json), "--hw", "pixel6", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "accelsim: chain on pixel6" in text and "memory check" in text
    data = json.loads((out / "report.json").read_text())
    assert data["memory_check"] == "ok" and data["hw"] == "pixel6"
    assert (out / "trace.json").exists() and (out / "layout.svg").exists() and (out / "memory.svg").exists()


def test_run_default_out_dir(chain_json, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(chain_json), "--hw", "tpuv4"]) == 0
    assert (tmp_path / "accelsim-out" / "chain-tpuv4" / "report.json").exists()


def test_run_below_min_capacity_exit_2(chain_json, tmp_path, capsys):
    assert main(["run", str(chain_json), "--hw", "pixel6", "--sram", "128", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: capacity 128 bytes is below M_R = 192 bytes")
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--hw", "pixel7"], "unknown hardware config 'pixel7'"),
        (["--sram", "eight megs"], "sram 'eight megs'"),
        (["--input-shape", "1,three"], "--input-shape '1,three'"),
        (["--allocator", "nope"], "nope"),
    ],
)
def test_run_bad_input_exit_2(chain_json, tmp_path, capsys, argv, message):
    args = ["run", str(chain_json), "--out", str(tmp_path), *argv]
    if argv[0] == "--input-shape":  # only parsed for zoo models; use a name
        args[1] = "resnet18"
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err


def test_run_bad_hw_field_exit_2(chain_json, tmp_path, capsys):
    yaml_path = tmp_path / "bad.yaml"
    text = (REPO / "hw_configs" / "pixel6.yaml").read_text().replace("dram_bytes:", "dram_byte:")
    yaml_path.write_text(text)
    assert main(["run", str(chain_json), "--hw", str(yaml_path), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown field 'dram_byte'" in err and "bad.yaml" in err


def test_run_memory_check_failure_exit_1(chain_json, tmp_path, capsys, monkeypatch):
    real_simulate = pipeline.simulate

    def corrupting(graph, schedule, offsets, hw, **kw):
        # put the last residency on top of another one live at its first step
        victim = schedule.residencies[-1]
        holder = next(r for r in schedule.residencies if r.start <= victim.start < r.end and r.id != victim.id)
        return real_simulate(graph, schedule, dict(offsets, **{victim.id: offsets[holder.id]}), hw, **kw)

    monkeypatch.setattr(pipeline, "simulate", corrupting)
    assert main(["run", str(chain_json), "--hw", "tpuv4", "--out", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("error: memory check failed: step ")
    assert "FAILED" in captured.out
    assert json.loads((tmp_path / "report.json").read_text())["memory_check"].startswith("step ")


def test_alloc_minimize_reports_peak_bound_and_optimality(example_12, tmp_path, capsys):
    out_csv = tmp_path / "min.csv"
    assert main(["alloc", str(example_12), "--minimize", "--timeout", "5", "--output", str(out_csv)]) == 0
    out = capsys.readouterr().out
    assert "optimal" in out and "lower bound" in out and "12 B" in out
    assert "offset" in out_csv.read_text().splitlines()[0]


def test_run_set_overrides_reach_the_report(chain_json, tmp_path, capsys):
    out = tmp_path / "o"
    argv = ["run", str(chain_json), "--hw", "tpuv4", "--out", str(out), "--set", "compute.rows=256",
            "--set", "compute.fold_overlap=false", "--set", "dram_bandwidth_bytes_per_s=25.6e9",
            "--set", "sram_bytes_per_pe=8MiB"]
    assert main(argv) == 0
    data = json.loads((out / "report.json").read_text())
    assert data["hw_config"]["compute"]["rows"] == 256 and data["hw_config"]["compute"]["fold_overlap"] is False
    assert data["hw_config"]["dram_bandwidth_bytes_per_s"] == 25.6e9
    assert data["capacity_bytes"] == 8 * 2**20
    assert "utilization" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("compute.rowz=3", "--set compute.rowz: unknown field (did you mean compute.rows?)"),
        ("compute.rows=lots", "--set compute.rows=lots: field 'compute.rows' must be an integer"),
        ("compute.rows", "expected KEY=VALUE"),
        ("clock_hz=1e-300", "field 'clock_hz' must be at least 1,000"),
    ],
)
def test_run_bad_set_exit_2(chain_json, tmp_path, capsys, setting, message):
    assert main(["run", str(chain_json), "--hw", "tpuv4", "--out", str(tmp_path), "--set", setting]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------------------------------
# numbers typed as text are ASCII digits without '_' separators: int() and float() skip them, so
# 1_0_0 would be read as 100 and hide a typo (the CSV reader refuses them too)


@pytest.mark.parametrize(("command", "argv", "needles"), [
    ("alloc", ["--capacity", "1_0_0"],
     ("error: --capacity '1_0_0' is not a byte count: write it in ASCII digits, without '_' separators",)),
    ("alloc", ["--capacity", "16", "--timeout", "1_0"], ("argument --timeout: '1_0'", "'_' separators")),
    ("run", ["--sram", "1_024KiB"], ("sram '1_024KiB' is not a byte count", "'_' separators")),
    ("run", ["--set", "clock_hz=1_066_000_000"],
     ("--set clock_hz=1_066_000_000: field 'clock_hz' must be a number in ASCII digits (no '_' separators), "
      "got '1_066_000_000'",)),
    ("run", ["--set", "compute.units=1_6"], ("field 'compute.units' must be an integer in ASCII digits",)),
    ("run", ["--budget", "1_0KiB"], ("--budget", "'1_0KiB' is not a byte count")),
])
def test_underscore_separators_in_a_number_exit_2_naming_the_option(tiny_csv, chain_json, tmp_path, capsys, command,
                                                                   argv, needles):
    out = tmp_path / "out"
    given = [str(tiny_csv)] if command == "alloc" else [str(chain_json), "--hw", "pixel6", "--out", str(out)]
    assert main([command, *given, *argv]) == 2
    _one_error_line(capsys, *needles)
    assert not out.exists()


def test_an_alignment_larger_than_the_scratchpad_exits_2_naming_alignment(chain_json, tmp_path, capsys):
    # before, the first error was an M_R inflated by the alignment, naming an operator, not the field at fault
    out = tmp_path / "out"
    assert main(["run", str(chain_json), "--hw", "pixel6", "--out", str(out), "--set", "alignment=4MiB"]) == 2
    _one_error_line(capsys, "field 'alignment' (4 MiB) is larger than the scratchpad, sram_bytes_per_pe (2 MiB)",
                    "lower alignment or raise sram_bytes_per_pe")
    assert main(["run", str(chain_json), "--hw", "pixel6", "--out", str(out), "--sram", "32"]) == 2
    _one_error_line(capsys, "field 'alignment' (64 B) is larger than the scratchpad, sram_bytes_per_pe (32 B)")
    assert not out.exists()


def test_configs_lists_every_field(capsys):
    assert main(["configs", "--fields"]) == 0
    out = capsys.readouterr().out
    for key in ("compute.rows", "compute.dataflow", "dma.channels", "energy.pj_per_mac", "sram_bytes_per_pe"):
        assert key in out


@pytest.mark.parametrize("option", ["--scheduler", "--allocator"])
def test_size_refuses_an_empty_name_list_instead_of_using_the_defaults(tmp_path, capsys, option):
    from frontend.synthetic import chain

    graph = tmp_path / "tiny.json"
    save_graph(chain(4, size=4096), graph)
    assert main(["size", str(graph), "--hw", "pixel6", option, ""]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"error: {option} ''") and "empty" in error


# --------------------------------------------------------------------------------------------------
# The command line's contract on bad or meaningless input (issue 11).
#
# Every case exits 2 (bad input), 1 (the work did not succeed) or 130 (Ctrl-C) with one
# ``error:`` line on stderr naming the offending item, no traceback, and nothing written for
# a result that does not exist. Each parametrized case is one class of input the issue lists.


TINY = "id,lower,upper,size\na,0,3,4\nb,3,9,4\nc,0,9,4\nd,9,21,4\ne,0,21,4\n"  # MiniMalloc Fig. 1, LOAD 12


@pytest.fixture
def tiny_csv(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.csv"
    path.write_text(TINY)
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
    (["--load-fraction", "1_0"], "'1_0' is not a number"),
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

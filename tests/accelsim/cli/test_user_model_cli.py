"""``accelsim run/size/sweep path/to/file.py:FUNCTION`` with ``--input-shape`` (repeatable),
``--batch`` and ``--model-option`` (issue 24, parts 2 and 4): the user's own model runs as a zoo
model does, and every input that cannot apply is one ``error:`` line, exit 2, naming the item."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from accelsim.cli import main
from accelsim.pipeline import RunOptions, compile_and_simulate
from frontend.graph import save_graph

REPO = Path(__file__).resolve().parents[3]

MODEL_FILE = textwrap.dedent("""
    import torch
    from torch import nn


    def build():
        model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 3, padding=1))
        return model, torch.randn(1, 3, 16, 16)


    def bare():
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 1))


    def text():
        return "not a module"
""")


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "model.py"
    path.write_text(MODEL_FILE)
    return path


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def test_run_a_user_model_as_a_subprocess(model_file, cache_dir, tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "accelsim", "run", f"{model_file}:build", "--hw", "tpuv4", "--out", str(out),
         "--cache", str(cache_dir), "--no-plots"],
        cwd=REPO, capture_output=True, text=True, check=False, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    assert "accelsim: model.build on tpuv4 (bf16)" in done.stdout and "memory check        ok" in done.stdout
    report = json.loads((out / "report.json").read_text())
    assert report["model"] == "model.build" and report["memory_check"] == "ok"
    assert report["input_bytes"] == 1 * 3 * 16 * 16 * 2  # bf16
    assert len(list(cache_dir.glob("user-model.build-bf16-*.json"))) == 1


def test_run_with_batch_doubles_the_input_bytes_and_defaults_the_folder(model_file, cache_dir, tmp_path, monkeypatch,
                                                                         capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", f"{model_file}:build", "--hw", "tpuv4", "--cache", str(cache_dir), "--no-plots"]) == 0
    one = json.loads((tmp_path / "accelsim-out" / "model.build-tpuv4" / "report.json").read_text())
    assert main(["run", f"{model_file}:build", "--hw", "tpuv4", "--cache", str(cache_dir), "--no-plots",
                 "--batch", "2", "--out", "two"]) == 0
    two = json.loads((tmp_path / "two" / "report.json").read_text())
    assert two["input_bytes"] == 2 * one["input_bytes"]
    assert len(list(cache_dir.glob("user-model.build-*.json"))) == 2


def test_run_a_bare_module_at_repeated_input_shapes(model_file, cache_dir, tmp_path, capsys):
    assert main(["run", f"{model_file}:bare", "--hw", "tpuv4", "--input-shape", "2,3,8,8", "--out",
                 str(tmp_path / "o"), "--cache", str(cache_dir), "--no-plots"]) == 0
    assert json.loads((tmp_path / "o" / "report.json").read_text())["input_bytes"] == 2 * 3 * 8 * 8 * 2


def test_compile_and_simulate_takes_a_spec_from_python(model_file, cache_dir):
    report = compile_and_simulate(f"{model_file}:bare", "tpuv4", RunOptions(input_shape=((1, 3, 8, 8),), batch=3),
                                  cache_dir=cache_dir)
    assert report.model == "model.bare" and report.input_bytes == 3 * 3 * 8 * 8 * 2


def test_size_takes_a_spec_and_batch(model_file, capsys):
    assert main(["size", f"{model_file}:build", "--hw", "tpuv4", "--batch", "2"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("accelsim size: model.build on tpuv4") and "M_R" in text


def test_sweep_mixes_a_spec_and_a_graph_and_keys_points_on_the_file(model_file, cache_dir, chain_graph, tmp_path,
                                                                    capsys):
    graph = tmp_path / "chain.json"
    save_graph(chain_graph(), graph)
    out = tmp_path / "sweep"
    argv = ["sweep", f"{model_file}:build", str(graph), "--hw", "tpuv4", "--grid", "sram=1MiB", "--out", str(out),
            "--jobs", "1", "--no-plots", "--cache", str(cache_dir)]
    assert main(argv) == 0
    rows = (out / "results.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in rows[1:]] == ["model.build", "chain"]
    assert all(",ok," in row for row in rows[1:])
    assert main(argv) == 0 and "0 run now, 2 from an earlier run" in capsys.readouterr().out
    # an edited file is another model: its point runs again, the graph's does not
    model_file.write_text(MODEL_FILE.replace("torch.randn(1, 3, 16, 16)", "torch.randn(1, 3, 8, 8)"))
    assert main(argv) == 0 and "1 run now, 1 from an earlier run" in capsys.readouterr().out
    # batch as a grid key: one trace per batch, every point its own row
    assert main(["sweep", f"{model_file}:build", "--hw", "tpuv4", "--grid", "batch=1,2", "--out", str(tmp_path / "b"),
                 "--jobs", "1", "--no-plots", "--cache", str(cache_dir)]) == 0
    table = (tmp_path / "b" / "results.csv").read_text().splitlines()
    assert table[0].startswith("model,hw,batch,") and len(table) == 3


@pytest.mark.parametrize(("command", "model", "extra", "needle"), [
    ("run", "{file}:nope", [], "user model {file}:nope: {file} has no function 'nope' (it defines bare, build, text)"),
    ("run", "{dir}/gone.py:build", [], "user model {dir}/gone.py:build: no such file {dir}/gone.py"),
    ("run", "{file}", [], "user model {file}: name the function that builds the model: {file}:FUNCTION"),
    ("run", "{file}:text", [], "text() returned a str; expected an nn.Module"),
    ("run", "{file}:bare", [], "user model {file}:bare: bare() gives no example inputs; give their shapes, "
                               "one --input-shape per input"),
    ("run", "{file}:build", ["--input-shape", "1,3,8,8", "--input-shape", "1,3,8,8"],
     "build() gives 1 example input(s) but 2 input shape(s) were given"),
    ("run", "{file}:build", ["--model-option", "num_flow_updates=4"],
     "(--model-option) cannot apply to user model {file}:build"),
    ("run", "resnet18", ["--model-option", "num_flow_updates=4"],
     "model 'resnet18' takes no option 'num_flow_updates'"),
    ("run", "resnet18", ["--model-option", "num_flow_updates"],
     "--model-option 'num_flow_updates': expected KEY=VALUE"),
    ("run", "resnet18", ["--model-option", "a=1", "--model-option", "a=2"], "--model-option a is given twice"),
    ("run", "resnet18", ["--input-shape", "1,3,64,64", "--input-shape", "1,3,64,64"],
     "model 'resnet18' takes 1 input(s), got 2 input shapes"),
    ("run", "optical_flow.raft_small", ["--input-shape", "1,3,64,64"] * 3,
     "model 'optical_flow.raft_small' takes 2 input(s), got 3 input shapes"),
    ("run", "optical_flow.raft_small", ["--model-option", "num_flow_updates=0"],
     "(--model-option): option num_flow_updates=0 of model 'optical_flow.raft_small' must be an integer >= 1"),
    ("run", "{graph}", ["--batch", "2"], "batch=2 cannot apply to a graph that is already traced"),
    ("run", "{graph}", ["--model-option", "num_flow_updates=2"], "cannot apply to a graph that is already traced"),
    ("run", "resnet18", ["--batch", "0"], "argument --batch: '0' is not a positive integer"),
    ("size", "{file}:nope", [], "{file} has no function 'nope'"),
    ("size", "{graph}", ["--batch", "2"], "batch=2 cannot apply to a graph that is already traced"),
    ("size", "resnet18", ["--model-option", "num_flow_updates=4"], "takes no option 'num_flow_updates'"),
    ("sweep", "{dir}/gone.py:build", [], "no such file {dir}/gone.py"),
    ("sweep", "{graph}", ["--batch", "2"], "{graph}: --batch cannot apply to a graph already traced"),
    ("sweep", "{graph}", ["--grid", "batch=1,2"], "{graph}: --grid batch cannot apply to a graph already traced"),
    ("sweep", "resnet18", ["--model-option", "num_flow_updates=4"], "takes no option 'num_flow_updates'"),
    ("sweep", "{file}:build", ["--grid", "batch=0"], "--grid batch=0: must be a positive integer"),
    ("sweep", "{file}:build", ["--batch", "2", "--grid", "batch=1,2"], "--grid batch and --batch set the same field"),
])
def test_bad_input_is_one_error_line_naming_the_item_and_exit_2(model_file, chain_graph, tmp_path, capsys, command,
                                                                 model, extra, needle):
    graph = tmp_path / "chain.json"
    save_graph(chain_graph(), graph)
    names = {"file": model_file, "dir": tmp_path, "graph": graph}
    argv = [command, model.format(**names), "--hw", "tpuv4", *extra]
    if command == "sweep":
        argv += ["--grid", "sram=1MiB"] if "--grid" not in extra else []
    out = tmp_path / "out"
    if command != "size":
        argv += ["--out", str(out)]
    if command != "size" and model != "{graph}":
        argv += ["--cache", str(tmp_path / "cache")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needle.format(**names) in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()  # refused before any output folder


def test_raft_takes_two_input_shapes_and_its_refinements_from_the_command_line(capsys, tmp_path):
    from accelsim.cli.args import parse_model_options, parse_shapes
    from accelsim.pipeline import check_model
    from accelsim.sweeps.grid import model_inputs

    raft = "optical_flow.raft_small"
    shapes = parse_shapes(["1,3,368,496", "1,3,368,496"])
    options = RunOptions(input_shape=shapes, batch=2, model_options=parse_model_options(["num_flow_updates=4"]))
    options.check()
    check_model(raft, options)  # accepted: two frames, an option of its family
    assert model_inputs(raft, {"input_shape": shapes, "batch": 2, "model_options": {"num_flow_updates": 4}}) == {
        "input_shapes": ((2, 3, 368, 496),) * 2, "options": {"num_flow_updates": 4}}
    # the defaults spelled out are the default point (and keep the hash points had before these options)
    assert model_inputs(raft, {"input_shape": (1, 3, 368, 496), "model_options": {"num_flow_updates": 12}}) is None
    assert main(["run", raft, "--model-option", "iterations=4", "--out", str(tmp_path / "o")]) == 2
    assert "takes no option 'iterations' (its options: num_flow_updates)" in capsys.readouterr().err


HOSTILE = textwrap.dedent("""
    import sys

    import torch
    from torch import nn


    class Exits(nn.Module):
        def forward(self, x):
            sys.exit(0)


    class Branches(nn.Module):  # control flow on tensor data: neither torch.fx nor torch.export can trace it
        def forward(self, x):
            if x.sum() > 0:
                return x
            return x + 1


    def exits():
        return Exits()


    def branches():
        return Branches()


    def quoted():
        model = nn.Sequential()
        model.add_module('a"b\\n', nn.ReLU())
        return model
""")


@pytest.fixture
def hostile_file(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.py"
    path.write_text(HOSTILE)
    return path


def _one_error_line(argv: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert all(needle in err for needle in needles), err
    return err


def test_a_model_that_calls_sys_exit_while_tracing_is_one_error_line(hostile_file, tmp_path, capsys):
    out = tmp_path / "out"
    _one_error_line(["run", f"{hostile_file}:exits", "--input-shape", "1,3,8,8", "--out", str(out), "--no-cache"],
                    capsys, f"user model {hostile_file}:exits", "SystemExit")
    assert not out.exists()


def test_a_name_torch_fx_cannot_write_is_one_error_line_naming_it(hostile_file, tmp_path, capsys):
    _one_error_line(["run", f"{hostile_file}:quoted", "--input-shape", "1,3,8,8", "--out", str(tmp_path / "o"),
                     "--no-cache"], capsys, "submodule name 'a\"b\\n'", "rename it")


def test_an_untraceable_model_prints_one_line_and_torch_logs_to_the_debug_log(hostile_file, tmp_path, capsys):
    from accelsim.cli.debug_log import debug_log_path

    log = debug_log_path()
    before = log.stat().st_size if log.exists() else 0
    _one_error_line(["run", f"{hostile_file}:branches", "--input-shape", "1,3,8,8", "--out", str(tmp_path / "o"),
                     "--no-cache"], capsys, "cannot trace", "with torch.export")
    with open(log, encoding="utf-8") as handle:
        handle.seek(before)
        logged = handle.read()
    assert "printed while exporting" in logged and "def forward" in logged


def test_example_inputs_larger_than_the_memory_are_refused_before_they_are_made(model_file, tmp_path, capsys,
                                                                               monkeypatch):
    import frontend.limits

    monkeypatch.setattr(frontend.limits, "available_memory", lambda: 2**30)
    # 1 x 3 x 16384 x 16384 float32 inputs would take 3 GiB; 1 GiB is "available"
    _one_error_line(["run", f"{model_file}:bare", "--input-shape", "1,3,16384,16384", "--out", str(tmp_path / "o"),
                     "--no-cache"], capsys, "3.0 GiB of memory", "1.0 GiB", "--input-shape")
    _one_error_line(["run", f"{model_file}:build", "--batch", "5000000", "--out", str(tmp_path / "o"), "--no-cache"],
                    capsys, "GiB of memory", "--batch")


@pytest.mark.parametrize("argv", [["--input-shape", "1,3,99999999999999999999,3"], ["--batch", "99999999999999999999"]])
@pytest.mark.parametrize("model", ["{file}:build", "resnet18"])
def test_numbers_past_int64_are_one_line_naming_the_flag(model_file, tmp_path, capsys, argv, model):
    _one_error_line(["run", model.format(file=model_file), *argv, "--out", str(tmp_path / "o")], capsys,
                    argv[0], "2^63")


def test_a_model_path_that_is_not_a_regular_file_is_refused_without_reading_it(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "accelsim", "run", f"{fifo}:build", "--input-shape", "1,3,8,8"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 2 and done.stderr.strip() == (
        f"error: user model {fifo}:build: {fifo} is not a regular file (a FIFO, a device or a socket cannot hold "
        "a model)")
    graph = tmp_path / "pipe.json"
    os.mkfifo(graph)
    done = subprocess.run([sys.executable, "-m", "accelsim", "run", str(graph)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 2 and done.stderr.strip() == (
        f"error: {graph}: not a regular file (a FIFO, a device or a socket cannot hold a graph)")


def test_sweep_rows_of_two_files_of_one_name_are_told_apart(chain_graph, tmp_path, capsys):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        save_graph(chain_graph(), tmp_path / folder / "net.json")
    out = tmp_path / "sweep"
    assert main(["sweep", str(tmp_path / "a" / "net.json"), str(tmp_path / "b" / "net.json"), "--grid",
                 "sram=1MiB", "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    rows = (out / "results.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in rows[1:]] == ["a/net", "b/net"]

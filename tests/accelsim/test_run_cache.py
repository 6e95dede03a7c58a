"""``accelsim run`` and ``compile_and_simulate`` take a zoo model's graph from the trace cache.

A hit loads the saved graph and imports neither torch nor torchvision (checked in a fresh
process); ``--no-cache`` traces and leaves the cache as it was; a default cache folder that
cannot be written is skipped, a named one is an error; an entry edited in place, or a folder
where an entry belongs, is traced again with one ``warning:`` line, and the report is a fresh
trace's.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import frontend
from accelsim import compile_and_simulate
from accelsim.cli import main
from frontend.cache import cached_trace, graph_key

pytestmark = pytest.mark.torch

REPO = Path(__file__).resolve().parents[2]
MODEL, SHAPE, SHAPE_ARG = "squeezenet1_0", (1, 3, 64, 64), "1,3,64,64"  # a quick trace; the cache is what is tested

#: runs the command line, then prints which heavy packages the process imported
WRAPPER = """
import sys
from accelsim.cli import main
status = main(sys.argv[1:])
print("IMPORTED=" + ",".join(m for m in ("torch", "torchvision", "matplotlib", "pandas") if m in sys.modules))
sys.exit(status)
"""


@pytest.fixture(scope="module")
def filled_cache(tmp_path_factory):
    """A trace cache folder holding squeezenet1_0 at 1x3x64x64 in int8 (pixel6's dtype)."""
    folder = tmp_path_factory.mktemp("trace-cache")
    assert not cached_trace(MODEL, "int8", SHAPE, cache_dir=folder).hit
    return folder


@pytest.fixture
def counted_traces(monkeypatch):
    """The zoo models traced in this process, through either path (the cache's miss or ``--no-cache``)."""
    calls: list[str] = []
    real = frontend.zoo.trace_model

    def counting(name, dtype="fp32", input_shape=None):
        calls.append(name)
        return real(name, dtype=dtype, input_shape=input_shape)

    monkeypatch.setattr(frontend.zoo, "trace_model", counting)
    monkeypatch.setattr(frontend, "trace_model", counting)
    return calls


def run_fresh_process(args: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess, list[str]]:
    done = subprocess.run([sys.executable, "-c", WRAPPER, *args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, **env}, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("IMPORTED=")]
    assert len(lines) == 1, (done.stdout, done.stderr)
    return done, [name for name in lines[0].removeprefix("IMPORTED=").split(",") if name]


@pytest.mark.parametrize("how", ["--cache", "ACCELSIM_CACHE_DIR"])
def test_a_cache_hit_runs_without_importing_torch_or_a_plotting_library(filled_cache, tmp_path, how):
    args = ["run", MODEL, "--input-shape", SHAPE_ARG, "--out", str(tmp_path / "out")]
    env = {"ACCELSIM_CACHE_DIR": str(tmp_path / "elsewhere")}
    if how == "--cache":
        args += ["--cache", str(filled_cache)]
    else:
        env["ACCELSIM_CACHE_DIR"] = str(filled_cache)
    done, imported = run_fresh_process(args, env)
    assert done.returncode == 0, done.stderr
    assert imported == [], imported
    assert "squeezenet1_0 on pixel6" in done.stdout
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "layout.svg", "memory.svg", "report.html", "report.json", "roofline.svg", "trace.json"]
    assert not (tmp_path / "elsewhere").exists()  # nothing written to another cache


def test_a_miss_traces_once_and_the_next_run_hits(tmp_path, monkeypatch, counted_traces, capsys):
    monkeypatch.setenv("ACCELSIM_CACHE_DIR", str(tmp_path / "cache"))
    args = ["run", MODEL, "--input-shape", SHAPE_ARG, "--no-plots", "--out", str(tmp_path / "out")]
    assert main(args) == 0
    assert counted_traces == [MODEL] and len(list((tmp_path / "cache").glob(f"{MODEL}-int8-*.json"))) == 1
    first = (tmp_path / "out" / "report.json").read_text()
    assert main(args) == 0
    assert counted_traces == [MODEL]
    assert _numbers(first) == _numbers((tmp_path / "out" / "report.json").read_text())


def test_no_cache_traces_and_neither_reads_nor_writes_the_cache(filled_cache, tmp_path, monkeypatch, counted_traces,
                                                              capsys):
    before = {p.name: p.stat().st_mtime_ns for p in filled_cache.iterdir()}
    monkeypatch.setenv("ACCELSIM_CACHE_DIR", str(filled_cache))
    args = ["run", MODEL, "--input-shape", SHAPE_ARG, "--no-plots", "--no-cache", "--out", str(tmp_path / "out")]
    assert main(args) == 0
    assert counted_traces == [MODEL]
    assert {p.name: p.stat().st_mtime_ns for p in filled_cache.iterdir()} == before


def test_cache_with_no_cache_or_with_a_saved_graph_is_refused(chain_graph, tmp_path, capsys):
    assert main(["run", MODEL, "--cache", str(tmp_path), "--no-cache", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cache_dir=") and "cache=False" in err[0]
    graph = tmp_path / "chain.json"
    frontend.save_graph(chain_graph(), graph)
    assert main(["run", str(graph), "--cache", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "applies to a zoo model name" in err[0]


def test_a_default_cache_folder_that_cannot_be_written_is_skipped_a_named_one_is_an_error(
        tmp_path, monkeypatch, counted_traces, capsys):
    (tmp_path / "file").write_text("")
    unwritable = tmp_path / "file" / "below"  # below a file: cannot be created
    monkeypatch.setenv("ACCELSIM_CACHE_DIR", str(unwritable))
    args = ["run", MODEL, "--input-shape", SHAPE_ARG, "--no-plots", "--out", str(tmp_path / "out")]
    assert main(args) == 0
    assert counted_traces == [MODEL]
    capsys.readouterr()
    out = tmp_path / "refused"
    assert main([*args[:-1], str(out), "--cache", str(unwritable)]) == 2  # a folder the user named: bad input
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --cache: trace cache folder") and "cannot create it" in err[0]
    assert counted_traces == [MODEL]  # refused before tracing
    assert not out.exists()  # and before the output folder


def test_the_python_api_gives_the_same_report_from_the_cache_as_from_a_fresh_trace(filled_cache, counted_traces):
    cached = compile_and_simulate(MODEL, "pixel6", input_shape=SHAPE, cache_dir=filled_cache)
    assert counted_traces == []
    traced = compile_and_simulate(MODEL, "pixel6", input_shape=SHAPE, cache=False)
    assert counted_traces == [MODEL]
    assert _numbers(cached.to_dict()) == _numbers(traced.to_dict())


def _numbers(report: str | dict) -> dict:
    """A report without its timing fields (wall-clock seconds) and its folder."""
    import json

    data = json.loads(report) if isinstance(report, str) else dict(report)
    data.pop("stage_seconds")
    data.pop("out_dir", None)
    data["scheduler_stats"] = {k: v for k, v in data["scheduler_stats"].items() if not k.endswith("seconds")}
    return data


def test_compile_and_simulate_on_a_cache_hit_imports_no_torch(filled_cache):
    code = f"""
import sys
from accelsim import compile_and_simulate
report = compile_and_simulate({MODEL!r}, "pixel6", input_shape={SHAPE!r}, cache_dir={str(filled_cache)!r})
assert report.ok and report.model == {MODEL!r}
print("IMPORTED=" + ",".join(m for m in ("torch", "torchvision") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "IMPORTED="


@pytest.fixture(scope="module")
def fresh_report(tmp_path_factory):
    """The numbers of ``report.json`` from a ``--no-cache`` run: what a run from any cache must give."""
    out = tmp_path_factory.mktemp("fresh") / "out"
    assert main(["run", MODEL, "--input-shape", SHAPE_ARG, "--no-plots", "--no-cache", "--out", str(out)]) == 0
    return _numbers((out / "report.json").read_text())


def _nbytes_times_64(rec):
    rec["nbytes"] *= 64


def _shape_and_bytes_times_2(rec):
    rec["shape"][0] *= 2
    rec["nbytes"] *= 2


@pytest.mark.parametrize("edit", [_nbytes_times_64, _shape_and_bytes_times_2], ids=["nbytes-x64", "shape-and-bytes-x2"])
def test_a_run_from_an_entry_edited_in_place_reports_what_a_fresh_trace_does(filled_cache, fresh_report, tmp_path,
                                                                            capsys, edit):
    folder = tmp_path / "cache"
    shutil.copytree(filled_cache, folder)
    [entry] = folder.glob(f"{MODEL}-int8-*.json")
    data = json.loads(entry.read_text())
    tensors = data["graph"]["tensors"]
    largest = max((t for t, rec in tensors.items() if rec["kind"] == "activation"), key=lambda t: tensors[t]["nbytes"])
    edit(tensors[largest])
    entry.write_text(json.dumps(data, indent=1))  # still valid JSON, and still a valid graph
    capsys.readouterr()
    out = tmp_path / "out"
    args = ["run", MODEL, "--input-shape", SHAPE_ARG, "--no-plots", "--cache", str(folder), "--out", str(out)]
    assert main(args) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"warning: trace cache entry {entry}: its content does not match its digest (edited or damaged); traced again"]
    assert _numbers((out / "report.json").read_text()) == fresh_report
    assert main(args) == 0
    assert capsys.readouterr().err == ""  # the entry was written over by the fresh trace, and is proven again


def test_a_folder_at_an_entry_path_is_left_alone_and_run_and_sweep_succeed(fresh_report, tmp_path, capsys):
    folder = tmp_path / "cache"
    entry = folder / f"{MODEL}-int8-{graph_key(MODEL, 'int8', SHAPE)}.json"
    entry.mkdir(parents=True)
    (entry / "mine.txt").write_text("a user's file")
    warning = (f"warning: trace cache entry {entry}: is a folder, not a file; traced again and not saved "
               f"(it is left as it is)")
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["run", MODEL, "--input-shape", SHAPE_ARG, "--no-plots", "--cache", str(folder),
                 "--out", str(out)]) == 0
    assert capsys.readouterr().err.splitlines() == [warning]
    assert _numbers((out / "report.json").read_text()) == fresh_report

    sweep = tmp_path / "sweep"
    assert main(["sweep", MODEL, "--input-shape", SHAPE_ARG, "--grid", "sram=256KiB,1MiB", "--out", str(sweep),
                 "--cache", str(folder), "--jobs", "2", "--no-plots"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if line.startswith(("warning:", "error:"))] == [warning]  # shown once
    with open(sweep / "results.csv", newline="") as handle:
        assert [row["status"] for row in csv.DictReader(handle)] == ["ok", "ok"]
    assert entry.is_dir() and [p.name for p in entry.iterdir()] == ["mine.txt"]
    assert [p.name for p in folder.iterdir()] == [entry.name]  # nothing saved, no temporary file left

"""The same answer on every machine: a run's report does not depend on the compile cache or the load.

Every default budget of ``accelsim run`` counts work, and compiled code is loaded (or compiled)
before any stage's clock starts, so a run with an empty numba cache, a run with a warm one and
a run beside a process that keeps a core busy write the same ``report.json`` apart from its
timing fields. The runs are whole ``accelsim run`` processes, with ``NUMBA_CACHE_DIR`` pointed
at a fresh folder for the cold one. Nothing here compares times.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import allocator
from accelsim.cli import EXIT_NOT_DETERMINISTIC, main
from frontend.graph import load_graph, save_graph
from frontend.synthetic import random_dag

#: a graph and an SRAM at which auto's heuristics miss the first residency plan and its exact
#: search places it (about 55,000 nodes, within the first share of the node budget): the run
#: goes through the stage that used to depend on the clock
GRAPH_SEED, SRAM = 3, 25_600
REPOSITORY = Path(__file__).resolve().parents[2]


def timing_free(report: dict) -> dict:
    """``report.json`` without its timing fields (``SimReport.stage_seconds``' docstring names
    them) and the output folder, which differs between the runs compared."""
    data = {k: v for k, v in report.items() if k not in ("stage_seconds", "out_dir")}
    data["scheduler_stats"] = {k: v for k, v in report["scheduler_stats"].items() if not k.endswith("seconds")}
    return data


def run_cli(args: list[str], numba_cache: Path, **popen) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(numba_cache), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "accelsim", *args], env=env, cwd=REPOSITORY, capture_output=True,
                          text=True, timeout=1800, **popen)


def report_of(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


@pytest.fixture
def dag_json(tmp_path):
    path = tmp_path / "dag.json"
    save_graph(random_dag(40, seed=GRAPH_SEED, max_size=4096), path)
    return path


def test_an_empty_compile_cache_gives_the_report_of_a_warm_one(dag_json, tmp_path):
    cache = tmp_path / "numba"  # empty: the first run compiles every kernel it uses
    reports, runs = [], []
    for name in ("cold", "warm"):
        done = run_cli(["run", str(dag_json), "--hw", "tpuv4", "--sram", str(SRAM), "--out", str(tmp_path / name),
                        "--no-plots"], cache)
        assert done.returncode == 0, done.stderr
        reports.append(report_of(tmp_path / name))
        runs.append(done)
    cold, warm = reports
    done_cold, done_warm = runs
    assert cold["deterministic"] and cold["clock_stopped"] == []
    assert cold["allocator"] == "auto" and cold["scheduler_stats"]["fitted"] == 1
    assert timing_free(cold) == timing_free(warm)
    # the kernels compiled on first use are their own stage, out of the others' clocks
    assert set(cold["stage_seconds"]) >= {"kernels", "trace", "schedule", "allocate", "validate", "simulate"}
    assert cold["stage_seconds"]["kernels"] > warm["stage_seconds"]["kernels"]
    assert any(cache.rglob("*.nbi")), "the cold run filled the compile cache it was given"
    # one line says why the first run is slower, and only the first
    assert done_cold.stderr.count("compiling the allocator's kernels") == 1
    assert "compiling" not in done_warm.stderr


def test_one_default_allocator_across_the_cli_the_flow_and_the_scheduler(dag_json):
    import inspect

    import allocator
    import scheduler.spill_loop
    from accelsim import cli, compile_and_simulate, pipeline

    assert cli.DEFAULT_METHOD is allocator.DEFAULT_METHOD == "auto"  # one definition: allocator.core.defaults
    assert inspect.signature(allocator.solve).parameters["method"].default == "auto"
    assert inspect.signature(scheduler.make_schedule).parameters["allocator"].default is None  # None: auto
    assert inspect.signature(scheduler.spill_loop.allocation_aware).parameters["allocator"].default == "auto"
    # the Python API and the command line give the same answer by default
    report = compile_and_simulate(str(dag_json), "tpuv4", sram=SRAM)
    graph, sizes, _ = pipeline.on_chip_graph(load_graph(dag_json), report.hardware)
    direct = scheduler.make_schedule(graph, SRAM, sizes=sizes, alignment=report.hardware.alignment)
    timed = pipeline.time_loads(graph, direct, report.hardware, direct.placed_by.name)
    assert report.allocator == direct.placed_by.name == "auto" and report.offsets == timed.offsets


def test_buffers_round_trip_through_accelsim_alloc(dag_json, tmp_path, capsys):
    csv_path, out = tmp_path / "buffers.csv", tmp_path / "run"
    assert main(["run", str(dag_json), "--hw", "tpuv4", "--sram", str(SRAM), "--out", str(out), "--no-plots",
                 "--buffers", str(csv_path)]) == 0
    assert f"buffers: {csv_path}" in capsys.readouterr().out
    report = report_of(out)
    buffers = report["buffers"]
    assert len(buffers) == report["n_residencies"] > 0
    assert set(buffers[0]) == {"id", "start", "end", "size", "alignment", "offset"}
    # the CSV holds exactly the report's buffers, the offsets as pinned ones
    problem = allocator.read_csv(csv_path, capacity=report["capacity_bytes"])
    assert [(b.id, b.start, b.end, b.size, b.alignment, b.offset) for b in problem.buffers] == \
        [(b["id"], b["start"], b["end"], b["size"], b["alignment"], b["offset"]) for b in buffers]
    top = max(b["offset"] + b["size"] for b in buffers)
    assert top <= report["capacity_bytes"]
    # accelsim alloc reads it back and the placement validates under the run's capacity
    assert main(["alloc", str(csv_path), "--capacity", str(report["capacity_bytes"])]) == 0
    printed = capsys.readouterr().out
    assert "solved" in printed and f"{top:,} B" in printed
    placed = allocator.solve(problem, "best-fit")
    assert placed.solved and placed.solution.offsets == {b["id"]: b["offset"] for b in buffers}


def test_buffers_to_a_bad_path_is_refused_before_the_run(dag_json, tmp_path, capsys):
    target = tmp_path / "missing" / "buffers.csv"
    assert main(["run", str(dag_json), "--hw", "tpuv4", "--out", str(tmp_path / "r"), "--buffers", str(target)]) == 2
    assert "--buffers" in capsys.readouterr().err and not (tmp_path / "r").exists()


def test_a_timeout_that_fires_exits_3_and_says_so(dag_json, tmp_path, capsys):
    out = tmp_path / "run"
    # a limit far below what the loop's first placement needs: its clock, not its node budget, ends it
    code = main(["run", str(dag_json), "--hw", "tpuv4", "--sram", str(SRAM), "--out", str(out), "--no-plots",
                 "--timeout", "1e-9"])
    captured = capsys.readouterr()
    assert code == EXIT_NOT_DETERMINISTIC == 3
    assert "deterministic" in captured.out and "NO" in captured.out and "exit status 3" in captured.err
    report = report_of(out)
    assert report["deterministic"] is False and report["clock_stopped"] == ["allocate"]


def test_a_sweep_row_says_whether_its_point_is_deterministic(dag_json, tmp_path):
    from accelsim.sweeps import run_sweep

    grid = [f"sram={SRAM}"]
    quiet = run_sweep([str(dag_json)], "tpuv4", grid, tmp_path / "quiet", jobs=1, plots=False).results
    cut = run_sweep([str(dag_json)], "tpuv4", grid, tmp_path / "cut", jobs=1, plots=False,
                    options={"timeout": 1e-9}).results
    assert list(quiet["status"]) == list(cut["status"]) == ["ok"]
    assert list(quiet["deterministic"]) == [True] and list(cut["deterministic"]) == [False]
    # read back on resume, the column keeps its meaning
    again = run_sweep([str(dag_json)], "tpuv4", grid, tmp_path / "cut", jobs=1, plots=False,
                      options={"timeout": 1e-9})
    assert again.skipped == 1 and list(again.results["deterministic"]) == [False]


@contextlib.contextmanager
def cpu_hog() -> Iterator[None]:
    """A second process that keeps a core busy for as long as the block runs."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        hog.kill()
        hog.wait()


@pytest.mark.slow
@pytest.mark.parametrize("hw", ["pixel6", "tpuv4"])
def test_resnet50_cold_warm_and_under_a_cpu_hog_give_one_report(hw, tmp_path):
    cache = tmp_path / "numba"
    args = ["run", "resnet50", "--hw", hw, "--no-plots"]
    cold = run_cli([*args, "--out", str(tmp_path / "cold")], cache)
    assert cold.returncode == 0, cold.stderr
    warm = run_cli([*args, "--out", str(tmp_path / "warm")], cache)
    assert warm.returncode == 0, warm.stderr
    with cpu_hog():
        loaded = run_cli([*args, "--out", str(tmp_path / "loaded")], cache)
    assert loaded.returncode == 0, loaded.stderr
    reports = [timing_free(report_of(tmp_path / name)) for name in ("cold", "warm", "loaded")]
    assert reports[0]["deterministic"] and reports[0]["allocator"] == "auto"
    assert reports[0] == reports[1] == reports[2]


@pytest.mark.slow
def test_a_small_sram_run_under_a_cpu_hog_matches_a_quiet_one(dag_json, tmp_path):
    # the exact search with a node budget, on a loaded machine: the same placements
    cache = tmp_path / "numba"
    args = ["run", str(dag_json), "--hw", "tpuv4", "--sram", str(SRAM), "--no-plots"]
    quiet = run_cli([*args, "--out", str(tmp_path / "quiet")], cache)
    assert quiet.returncode == 0, quiet.stderr
    with cpu_hog():
        loaded = run_cli([*args, "--out", str(tmp_path / "loaded")], cache)
    assert loaded.returncode == 0, loaded.stderr
    assert timing_free(report_of(tmp_path / "quiet")) == timing_free(report_of(tmp_path / "loaded"))

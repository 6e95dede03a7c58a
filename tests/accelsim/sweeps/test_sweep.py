"""``accelsim sweep``: grid parsing, hashes, results, failing points, resume, Ctrl-C, the trace
cache, and the local and Dask executors giving the same numbers.

Small synthetic graphs saved as .json keep most tests fast; one test traces resnet18 through
the cache. Nothing here reads the clock.
"""

import csv
import json

import pandas as pd
import pytest

import frontend
from accelsim.cli import main
from accelsim.sweeps import (
    METRICS,
    Base,
    Point,
    SweepInterrupted,
    grid_points,
    parse_grid,
    point_hash,
    run_sweep,
)
from frontend.synthetic import random_dag

#: the measured columns that must agree between executors (wall_s is a time: it never does)
NUMBERS = ["status", "cycles", "seconds", "utilization", "dram_read_bytes", "dram_write_bytes",
           "noncompulsory_bytes", "energy_j", "peak_bytes", "min_capacity_bytes", "scheduler_status", "hash"]


@pytest.fixture
def dag(tmp_path):
    path = tmp_path / "dag.json"
    frontend.save_graph(random_dag(30, seed=1), path)  # M_R is 1,088 B per PE on pixel6
    return str(path)


def rows_of(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


# ------------------------------------------------------------------------------------------
# the grid


def test_grid_values_are_parsed_like_set_with_units():
    grid = parse_grid(["sram=256KiB,1MiB", "dram_bandwidth_bytes_per_s=25.6e9,12.8e9", "compute.rows=64",
                       "scheduler=program,min-peak", "weights=false,true", "budget=MR,4KiB"])
    assert grid == {"sram": [262144, 1048576], "dram_bandwidth_bytes_per_s": [25.6e9, 12.8e9],
                    "compute.rows": [64], "scheduler": ["program", "min-peak"], "weights": [False, True],
                    "budget": ["MR", 4096]}
    assert parse_grid({"sram": ["256KiB", 1 << 20]}) == {"sram": [262144, 1048576]}


@pytest.mark.parametrize("item, message", [
    ("colour=red", "--grid colour: unknown key"),
    ("compute.rowz=4", "--grid compute.rowz: unknown key"),
    ("sram=lots", "sram"),
    ("sram=-1KiB", "sram"),
    ("compute.rows=1.5", "--grid compute.rows=1.5"),
    ("scheduler=fastest", "--grid scheduler=fastest: unknown scheduler"),
    ("allocator=magic", "--grid allocator=magic: unknown allocator method"),
    ("dtype=int3", "--grid dtype=int3: unknown dtype"),
    ("weights=maybe", "--grid weights=maybe"),
    ("sram=", "--grid sram: empty value"),
    ("sram=1KiB,,2KiB", "--grid sram: empty value"),
    ("sram=1KiB,1024", "--grid sram: value '1024' given twice"),
    ("sram", "expected KEY=V1,V2"),
])
def test_bad_grid_items_name_the_key(item, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        parse_grid([item])


def test_a_key_given_twice_is_refused():
    with pytest.raises(ValueError, match="--grid sram: given twice"):
        parse_grid(["sram=1KiB", "sram=2KiB"])


def test_points_are_the_product_models_outermost():
    points = grid_points(["a", "b"], {"sram": [1, 2], "scheduler": ["program", "min-peak"]})
    assert len(points) == 8
    assert points[0] == Point("a", (("sram", 1), ("scheduler", "program")))
    assert points[3] == Point("a", (("sram", 2), ("scheduler", "min-peak")))
    assert points[4].model == "b"


def test_the_hash_is_over_the_effective_config():
    base = Base("pixel6")
    spelled = [point_hash(Point("m", (("sram", v),)), base) for v in parse_grid(["sram=256KiB"])["sram"]]
    assert spelled == [point_hash(Point("m", (("sram", 262144),)), base)]
    # the same bytes reached through the hardware field instead of the run option: one point
    assert point_hash(Point("m", (("sram_bytes_per_pe", 262144),)), base) == spelled[0]
    others = {point_hash(Point("m", (("sram", 131072),)), base), point_hash(Point("n", (("sram", 262144),)), base),
              point_hash(Point("m", (("sram", 262144),)), Base("tpuv4")),
              point_hash(Point("m", (("sram", 262144),)), Base("pixel6", {"dma.channels": 7}))}
    assert len(others) == 4 and spelled[0] not in others


# ------------------------------------------------------------------------------------------
# the command line refuses before any work


@pytest.mark.parametrize("argv, message", [
    (["--grid", "colour=red"], "--grid colour: unknown key"),
    (["--grid", "sram=big"], "sram"),
    (["--grid", "sram_bytes_per_pe=1KiB", "--set", "sram_bytes_per_pe=2KiB"],
     "--grid sram_bytes_per_pe and --set sram_bytes_per_pe set the same field"),
    ([], "give at least one --grid"),
    (["--grid", "sram=1KiB", "--hw", "pixel7"], "unknown hardware config 'pixel7'"),
    (["--grid", "sram=1KiB", "--dask-address", "tcp://127.0.0.1:1"], "--dask-address applies to --executor dask"),
])
def test_cli_refuses_bad_input_with_exit_2_before_any_work(dag, tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    assert main(["sweep", dag, "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and message in err[0], err
    assert not out.exists()


def test_cli_refuses_an_unknown_model(tmp_path, capsys):
    assert main(["sweep", "resnet5", "--grid", "sram=1MiB", "--out", str(tmp_path / "o")]) == 2
    assert "unknown model 'resnet5'" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------
# results, failing points, resume


def test_results_one_row_per_point_and_a_failing_point_does_not_stop_the_others(dag, tmp_path):
    out = tmp_path / "out"
    outcome = run_sweep([dag], "pixel6", ["sram=512,2KiB,64KiB", "dram_bandwidth_bytes_per_s=1e9,4e9"], out,
                        jobs=1, plots=False)
    table = outcome.results
    assert list(table.columns) == ["model", "hw", "sram", "dram_bandwidth_bytes_per_s", *METRICS]
    assert len(table) == 6 and outcome.ran == 6 and outcome.skipped == 0 and outcome.failed == 2
    below = table[table["sram"] == 512]
    assert all("below M_R = 1088 bytes" in s for s in below["status"]) and below["cycles"].isna().all()
    ok = table[table["status"] == "ok"]
    assert len(ok) == 4 and (ok["min_capacity_bytes"] == 1088).all() and (ok["cycles"] > 0).all()
    # halving the DRAM bandwidth never makes a point faster, and a larger SRAM never adds traffic
    for sram in (2048, 65536):
        fast, slow = (ok[(ok["sram"] == sram) & (ok["dram_bandwidth_bytes_per_s"] == bw)].iloc[0]
                      for bw in (4e9, 1e9))
        assert slow["cycles"] >= fast["cycles"] and slow["dram_read_bytes"] == fast["dram_read_bytes"]
    small, large = (ok[(ok["sram"] == s) & (ok["dram_bandwidth_bytes_per_s"] == 4e9)].iloc[0] for s in (2048, 65536))
    assert small["noncompulsory_bytes"] >= large["noncompulsory_bytes"] == 0
    # the CSV holds the same rows, in grid order, and each ok point has its full report
    rows = rows_of(out / "results.csv")
    assert [r["hash"] for r in rows] == list(table["hash"])
    for digest in ok["hash"]:
        report = json.loads((out / "points" / f"{digest}.json").read_text())
        assert report["cycles"] == int(ok[ok["hash"] == digest]["cycles"].iloc[0]) and report["memory_check"] == "ok"
    for digest in below["hash"]:
        assert not (out / "points" / f"{digest}.json").exists()


def test_rerunning_resumes_and_runs_only_the_missing_points(dag, tmp_path):
    out = tmp_path / "out"
    grid = ["sram=2KiB,8KiB,64KiB"]
    first = run_sweep([dag], "pixel6", grid, out, jobs=1, plots=False)
    assert first.ran == 3
    again = run_sweep([dag], "pixel6", grid, out, jobs=1, plots=False)
    assert again.ran == 0 and again.skipped == 3
    pd.testing.assert_frame_equal(first.results, again.results)
    # drop one row: only that point runs again, and the table is whole again
    rows = rows_of(out / "results.csv")
    with open(out / "results.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows([rows[0], rows[2]])
    third = run_sweep([dag], "pixel6", grid, out, jobs=1, plots=False)
    assert third.ran == 1 and third.skipped == 2
    pd.testing.assert_frame_equal(first.results.drop(columns="wall_s"), third.results.drop(columns="wall_s"))


def test_a_results_file_of_another_grid_is_refused(dag, tmp_path):
    out = tmp_path / "out"
    run_sweep([dag], "pixel6", ["sram=2KiB"], out, jobs=1, plots=False)
    with pytest.raises(ValueError, match="are not this sweep's"):
        run_sweep([dag], "pixel6", ["dram_bandwidth_bytes_per_s=1e9"], out, jobs=1, plots=False)


def test_ctrl_c_keeps_every_finished_point_and_a_rerun_finishes_the_rest(dag, tmp_path):
    out = tmp_path / "out"
    grid = ["sram=2KiB,4KiB,8KiB,64KiB"]
    seen = []

    def interrupt_after_two(row):
        seen.append(row["hash"])
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(SweepInterrupted) as stop:
        run_sweep([dag], "pixel6", grid, out, jobs=1, plots=False, on_row=interrupt_after_two)
    assert (stop.value.ran, stop.value.total, stop.value.skipped) == (2, 4, 0)
    assert [r["hash"] for r in rows_of(out / "results.csv")] == seen
    rest = run_sweep([dag], "pixel6", grid, out, jobs=1, plots=False)
    assert rest.ran == 2 and rest.skipped == 2 and len(rest.results) == 4


def test_cli_ctrl_c_exits_130_saying_how_many_points_were_done(dag, tmp_path, capsys, monkeypatch):
    from accelsim.sweeps import run

    def interrupted(*args, **kwargs):
        raise SweepInterrupted(3, 8, 1)

    monkeypatch.setattr(run, "run_sweep", interrupted)
    assert main(["sweep", dag, "--grid", "sram=2KiB", "--out", str(tmp_path / "o")]) == 130
    err = capsys.readouterr().err
    assert "3 of 8 points done (1 more from an earlier run)" in err and "Traceback" not in err


# ------------------------------------------------------------------------------------------
# executors and the trace cache


def test_two_local_workers_and_a_dask_local_cluster_give_the_same_numbers(dag, tmp_path):
    grid = ["sram=2KiB,8KiB,64KiB", "scheduler=program,min-peak"]
    serial = run_sweep([dag], "pixel6", grid, tmp_path / "serial", jobs=1, plots=False).results
    pool = run_sweep([dag], "pixel6", grid, tmp_path / "pool", jobs=2, plots=False).results
    dask = run_sweep([dag], "pixel6", grid, tmp_path / "dask", executor="dask", jobs=2, plots=False).results
    assert len(serial) == 6 and (serial["status"] == "ok").all()
    pd.testing.assert_frame_equal(serial[NUMBERS], pool[NUMBERS])
    pd.testing.assert_frame_equal(serial[NUMBERS], dask[NUMBERS])


def test_each_model_is_traced_once_and_later_sweeps_use_the_cache(tmp_path):
    cache = tmp_path / "cache"
    first = run_sweep(["resnet18"], "pixel6", ["sram=256KiB,1MiB"], tmp_path / "a", jobs=1, cache_dir=cache,
                      plots=False)
    assert first.traced == 1 and len(list(cache.glob("resnet18-int8-*.json"))) == 1
    second = run_sweep(["resnet18"], "pixel6", ["sram=512KiB"], tmp_path / "b", jobs=1, cache_dir=cache,
                       plots=False)
    assert second.traced == 0 and (second.results["status"] == "ok").all()
    # another dtype is another graph
    third = run_sweep(["resnet18"], "pixel6", ["sram=1MiB", "dtype=bf16"], tmp_path / "c", jobs=1, cache_dir=cache,
                      plots=False)
    assert third.traced == 1 and len(list(cache.glob("resnet18-*.json"))) == 2
    assert (third.results["status"] == "ok").all()


def test_plots_are_written_for_the_numeric_keys(dag, tmp_path):
    out = tmp_path / "out"
    outcome = run_sweep([dag], "pixel6", ["sram=2KiB,64KiB", "dram_bandwidth_bytes_per_s=1e9,4e9"], out, jobs=1)
    names = sorted(p.name for p in outcome.plots)
    assert names == sorted(["sram.png", "dram_bandwidth_bytes_per_s.png", "pareto_sram.png",
                            "heatmap_sram_dram_bandwidth_bytes_per_s_dag.png"]), names
    assert all(p.parent == out and p.stat().st_size > 0 for p in outcome.plots)


def test_accelsim_sweep_is_the_function_after_the_package_is_loaded():
    import accelsim
    import accelsim.sweeps.run
    from accelsim.sweeps import sweep

    assert accelsim.sweep is sweep and accelsim.sweeps.run.sweep is sweep

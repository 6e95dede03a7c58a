"""The ``accelsim`` command line, driven through ``main([...])``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import accelsim.pipeline as pipeline
from accelsim.cli import main
from frontend.graph import save_graph

REPO = Path(__file__).resolve().parents[2]


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
    assert error.startswith(f"error: {option}") and "is the input file" in error
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
def chain_json(chain_graph, tmp_path):
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

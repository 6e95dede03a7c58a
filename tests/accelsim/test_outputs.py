"""No command writes over its own input, every output is checked before any work, and files are
written whole or not at all (``accelsim.outputs``)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from accelsim import compile_and_simulate
from accelsim.cli import main
from accelsim.outputs import Output, OutputPathError, check_outputs, replaced, write_text
from frontend.graph import save_graph

MODEL = textwrap.dedent("""
    import os
    from torch import nn


    def build():
        return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())


    def wanders():
        os.makedirs("elsewhere", exist_ok=True)
        os.chdir("elsewhere")
        return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
""")


@pytest.fixture
def graph_file(chain_graph, tmp_path: Path) -> Path:
    path = tmp_path / "g.json"
    save_graph(chain_graph(), path)
    return path


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "m" / "net.py"
    path.parent.mkdir()
    path.write_text(MODEL)
    return path


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert all(needle in err for needle in needles), err
    return err


def test_run_buffers_never_replaces_the_model_file(model_file, tmp_path, capsys):
    before = model_file.read_bytes()
    _refused(["run", f"{model_file}:build", "--input-shape", "1,3,16,16", "--out", str(tmp_path / "r"),
              "--buffers", str(model_file)], capsys, "--buffers", "the model file")
    assert model_file.read_bytes() == before and not (tmp_path / "r").exists()


def test_run_buffers_never_replaces_the_graph_even_by_another_name(graph_file, tmp_path, capsys):
    before = graph_file.read_bytes()
    link = tmp_path / "link.csv"
    os.link(graph_file, link)  # a hard link: the same file under another name
    for name in (str(graph_file), str(tmp_path / "." / "g.json"), str(link)):
        _refused(["run", str(graph_file), "--out", str(tmp_path / "r"), "--buffers", name], capsys,
                 "--buffers", "the graph")
    assert graph_file.read_bytes() == before


def test_run_buffers_never_replaces_the_hardware_config(graph_file, tmp_path, capsys):
    config = tmp_path / "chip.yaml"
    config.write_text((Path(__file__).resolve().parents[2] / "hw_configs" / "pixel6.yaml").read_text())
    before = config.read_bytes()
    _refused(["run", str(graph_file), "--hw", str(config), "--out", str(tmp_path / "r"), "--buffers", str(config)],
             capsys, "the hardware config")
    assert config.read_bytes() == before


def test_run_buffers_never_replaces_a_file_of_its_own_report(graph_file, tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["run", str(graph_file), "--out", str(out)]) == 0
    before = (out / "report.json").read_bytes()
    _refused(["run", str(graph_file), "--out", str(out), "--buffers", str(out / "report.json")], capsys,
             "--buffers", "--out")
    assert (out / "report.json").read_bytes() == before


def test_run_buffers_naming_the_report_folder_is_refused_before_any_work(graph_file, tmp_path, capsys):
    out = tmp_path / "r"
    _refused(["run", str(graph_file), "--out", str(out), "--buffers", str(out)], capsys, "--out", "--buffers")
    assert not out.exists()


def test_run_out_never_replaces_a_graph_it_holds(graph_file, tmp_path, capsys):
    out = tmp_path / "r"
    out.mkdir()
    graph = out / "report.json"
    graph.write_bytes(graph_file.read_bytes())
    _refused(["run", str(graph), "--out", str(out)], capsys, "--out", "report.json", "the graph")
    assert graph.read_bytes() == graph_file.read_bytes()
    with pytest.raises(OutputPathError, match="would replace report.json"):
        compile_and_simulate(str(graph), "pixel6", out_dir=out)
    assert graph.read_bytes() == graph_file.read_bytes()


def test_size_csv_never_replaces_the_graph(graph_file, capsys):
    before = graph_file.read_bytes()
    _refused(["size", str(graph_file), "--csv", str(graph_file)], capsys, "--csv", "the graph")
    assert graph_file.read_bytes() == before


def test_alloc_output_and_explain_cannot_share_a_path(tmp_path, capsys):
    csv = tmp_path / "in.csv"
    csv.write_text("id,lower,upper,size\na,0,2,10\nb,1,3,10\n")
    _refused(["alloc", str(csv), "--capacity", "15", "--output", str(tmp_path / "o.csv"), "--explain",
              str(tmp_path / "o.csv")], capsys, "--output and --explain name one path")


def test_bench_csv_never_replaces_an_instance_it_reads(tmp_path, capsys):
    folder = tmp_path / "instances"
    folder.mkdir()
    instance = folder / "a.csv"
    instance.write_text("id,lower,upper,size\na,0,2,10\n")
    _refused(["bench", str(folder), "--capacity", "64", "--csv", str(instance)], capsys, "--csv",
             "the input instance")
    assert instance.read_text() == "id,lower,upper,size\na,0,2,10\n"


def test_sweep_never_replaces_a_graph_inside_its_folder(graph_file, tmp_path, capsys):
    out = tmp_path / "s"
    (out / "points").mkdir(parents=True)
    graph = out / "points" / "g.json"
    graph.write_bytes(graph_file.read_bytes())
    _refused(["sweep", str(graph), "--grid", "sram=1MiB", "--out", str(out), "--no-plots"], capsys,
             "--out", "the graph")
    assert graph.read_bytes() == graph_file.read_bytes() and not (out / "results.csv").exists()


@pytest.mark.torch
def test_a_build_that_changes_folder_moves_no_output(model_file, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", f"{model_file}:wanders", "--input-shape", "1,3,16,16", "--out", "r", "--buffers", "b.csv",
                 "--no-cache", "--no-plots"]) == 0
    assert (tmp_path / "r" / "report.json").is_file() and (tmp_path / "b.csv").is_file()
    assert not (tmp_path / "elsewhere" / "r").exists() and Path.cwd() == tmp_path


def test_check_outputs_returns_absolute_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert check_outputs([Output("--out", "r", folder=True), Output("--csv", "x.csv")], {}) == [
        tmp_path / "r", tmp_path / "x.csv"]


def test_a_failed_write_leaves_the_old_file_and_no_partial_one(tmp_path):
    path = tmp_path / "index.html"
    write_text(path, "old")
    with pytest.raises(RuntimeError), replaced(path) as staging:
        staging.write_text("half")
        raise RuntimeError("disk full")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["index.html"]
    write_text(path, "new")
    assert path.read_text() == "new" and oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_run_buffers_never_replaces_a_bundled_hardware_config(graph_file, tmp_path, capsys):
    from accelsim.hw import config_path

    bundled = config_path("pixel6")
    before = bundled.read_bytes()
    _refused(["run", str(graph_file), "--hw", "pixel6", "--out", str(tmp_path / "r"), "--buffers", str(bundled)],
             capsys, "--buffers", "the hardware config")
    assert bundled.read_bytes() == before


@pytest.mark.parametrize("name", ["blocks.py", "notes.txt", "graph.json"])
def test_a_csv_output_never_replaces_an_existing_file_of_another_kind(graph_file, tmp_path, capsys, name):
    # a module the model imports is an input no command can list: a CSV output replaces only a .csv file
    other = tmp_path / name
    other.write_text("keep me\n")
    _refused(["run", str(graph_file), "--out", str(tmp_path / "r"), "--buffers", str(other)], capsys,
             "--buffers", "is an existing file that is not a .csv file")
    csv = tmp_path / "in.csv"
    csv.write_text("id,lower,upper,size\na,0,2,10\n")
    _refused(["alloc", str(csv), "--capacity", "16", "--output", str(other)], capsys, "--output")
    _refused(["gen", "random", "4", str(other)], capsys, "output")
    assert other.read_text() == "keep me\n"
    assert main(["run", str(graph_file), "--out", str(tmp_path / "r"), "--buffers", str(tmp_path / "new.txt")]) == 0

"""A user's model is traced light (weights and inputs on meta) and, only when that fails, with
real weights; ``--trace-method`` and ``--host`` choose the tracer and host operators."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from accelsim.cli import main
from frontend.cache import cached_trace
from frontend.trace import Tracing
from frontend.user_model import trace_user_model

pytestmark = pytest.mark.torch

MODEL = textwrap.dedent("""
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.head = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))

        def forward(self, x):
            return self.head(self.fc(x))


    class Picks(Net):
        def forward(self, x):  # a boolean mask: the shape depends on the data, so meta inputs cannot run it
            return self.fc(x[x > 0].reshape(-1, 4))


    def build():
        return Net(), torch.randn(2, 4)


    def picks():
        return Picks(), torch.ones(2, 4)
""")


@pytest.fixture
def net(tmp_path: Path) -> Path:
    path = tmp_path / "net.py"
    path.write_text(MODEL)
    return path


def _watch(monkeypatch):
    import importlib

    module = importlib.import_module("frontend.trace")  # (the package's ``frontend.trace`` is the function)
    seen = []
    real = module.trace

    def watched(model, inputs, **kwargs):
        seen.append(([p.device.type for p in model.parameters()], [x.device.type for x in inputs]))
        return real(model, inputs, **kwargs)

    monkeypatch.setattr(module, "trace", watched)
    return seen


def test_a_user_model_is_traced_with_its_weights_and_inputs_on_meta(net, monkeypatch):
    seen = _watch(monkeypatch)
    graph = trace_user_model(f"{net}:build")
    assert seen == [(["meta"] * 4, ["meta"])]  # built once, nothing materialised
    assert graph.graph["tensors"]["fc.weight"]["nbytes"] == 4 * 4 * 4


def test_a_model_that_needs_its_data_is_traced_again_with_real_weights(net, monkeypatch):
    seen = _watch(monkeypatch)
    graph = trace_user_model(f"{net}:picks")
    assert [devices for devices, _ in seen] == [["meta"] * 4, ["cpu"] * 4]
    assert graph.graph["tensors"][graph.graph["inputs"][0]]["shape"] == [2, 4]


def test_trace_method_export_is_its_own_cache_entry_and_report_says_so(net, tmp_path):
    spec = f"{net}:build"
    fx = cached_trace(spec, "fp32", cache_dir=tmp_path / "c")
    export = cached_trace(spec, "fp32", cache_dir=tmp_path / "c", tracing=Tracing("export"))
    assert fx.graph.graph["tracer"] == "fx" and export.graph.graph["tracer"] == "export"
    assert fx.path != export.path and not export.hit
    assert main(["run", spec, "--trace-method", "export", "--hw", "tpuv4", "--out", str(tmp_path / "r"),
                 "--cache", str(tmp_path / "c"), "--no-plots"]) == 0
    assert json.loads((tmp_path / "r" / "report.json").read_text())["tracer"] == "export"


def test_host_moves_a_module_off_the_accelerator(net, tmp_path):
    assert main(["run", f"{net}:build", "--host", "head", "--hw", "tpuv4", "--out", str(tmp_path / "r"),
                 "--no-cache", "--no-plots"]) == 0
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert [h["name"] for h in report["host_ops"]] == ["head"]
    assert report["n_ops"] == 1  # fc alone is on the accelerator


@pytest.mark.parametrize("argv,needle", [
    (["--trace-method", "export", "--host", "head"], "--trace-method export cannot mark them"),
    (["--host", "nothing_called_so"], "nothing_called_so"),
])
def test_a_tracing_choice_that_cannot_apply_is_one_line_and_exit_2(net, tmp_path, capsys, argv, needle):
    assert main(["run", f"{net}:build", *argv, "--out", str(tmp_path / "r"), "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0]


def test_a_saved_graph_takes_no_tracing_choice(tmp_path, capsys):
    from frontend.graph import save_graph
    from frontend.synthetic import chain

    save_graph(chain(3), tmp_path / "g.json")
    assert main(["run", str(tmp_path / "g.json"), "--trace-method", "fx", "--out", str(tmp_path / "r")]) == 2
    assert "cannot apply to a graph that is already traced" in capsys.readouterr().err


def test_sweep_and_size_take_the_tracing_choice_too(net, tmp_path, capsys):
    out = tmp_path / "sw"
    assert main(["sweep", f"{net}:build", "--hw", "tpuv4", "--grid", "sram=1MiB,2MiB", "--trace-method", "export",
                 "--out", str(out), "--jobs", "1", "--no-plots", "--cache", str(tmp_path / "c")]) == 0
    assert {json.loads(p.read_text())["tracer"] for p in (out / "points").glob("*.json")} == {"export"}
    assert main(["size", f"{net}:build", "--hw", "tpuv4", "--host", "head", "--no-weights"]) == 0
    assert main(["size", f"{net}:build", "--hw", "tpuv4", "--host", "nothing_called_so"]) == 2
    assert "nothing_called_so" in capsys.readouterr().err

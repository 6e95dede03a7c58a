"""The whole flow on torchvision models: frontend -> scheduler -> allocator -> simulator -> report."""

from __future__ import annotations

import json
from functools import cache

import pytest

import frontend
import scheduler
from accelsim import compile_and_simulate, load_hw
from accelsim.cli import main
from accelsim.pipeline import tensor_shares


@cache
def traced(name: str, dtype: str):
    """Each model is traced once per dtype for the whole session (tracing dominates the run time)."""
    return frontend.trace_model(name, dtype=dtype)


def check_report(report) -> None:
    assert report.memory_check == "ok", report.memory_check
    assert report.dram_read_bytes >= report.weight_bytes + report.input_bytes
    assert report.dram_write_bytes >= report.output_bytes
    assert report.peak_bytes <= report.capacity_bytes
    # one record per traced operator; a tiled one lists its tiles and concat, which n_ops counts
    assert report.n_ops == sum(max(1, len(o["tiles"])) for o in report.ops) > 0
    assert report.cycles >= report.ops[-1]["end_cycle"]
    # every MAC-carrying operator of a traced model is mapped from its GEMM shape, never the bound
    mapped = {o["mapping"] for o in report.ops if o["macs"] > 0}
    assert mapped <= {"systolic-ws", "systolic-os", "lanes"}, mapped
    assert all(o["compute_cycles"] >= o["ideal_cycles"] and 0 <= o["utilization"] <= 1 for o in report.ops)
    assert 0 < report.utilization <= 1
    assert report.energy["total"] == pytest.approx(sum(o["energy"]["total"] for o in report.ops))


def test_run_resnet18_on_pixel6_end_to_end(tmp_path, capsys):
    out = tmp_path / "resnet18-pixel6"
    assert main(["run", "resnet18", "--hw", "pixel6", "--out", str(out)]) == 0
    summary = capsys.readouterr().out
    assert "resnet18 on pixel6" in summary and "memory check" in summary
    assert sorted(p.name for p in out.iterdir()) == [
        "layout.svg", "memory.svg", "report.html", "report.json", "roofline.svg", "trace.json"]
    data = json.loads((out / "report.json").read_text())
    for key in ("model", "hw", "scheduler", "allocator", "capacity_bytes", "capacity_scope", "peak_bytes", "cycles",
                "seconds", "dram_read_bytes", "dram_write_bytes", "compulsory_bytes", "noncompulsory_bytes",
                "memory_check", "ops", "min_capacity_bytes", "weight_bytes", "input_bytes"):
        assert key in data, key
    assert data["memory_check"] == "ok"
    assert data["capacity_scope"] == "per PE (16 PEs)"
    assert data["capacity_bytes"] == load_hw("pixel6").sram_bytes_per_pe
    assert data["peak_bytes"] <= data["capacity_bytes"]
    assert data["dram_read_bytes"] >= data["weight_bytes"] + data["input_bytes"]
    assert {"name", "op", "start_cycle", "end_cycle"} <= set(data["ops"][0])
    trace = json.loads((out / "trace.json").read_text())
    assert any(e["ph"] == "X" for e in trace["traceEvents"])


def budgets(graph, hw) -> tuple[int, int]:
    """(M_R, the smallest capacity without spills) for ``graph`` on ``hw``, per PE where it applies."""
    sizes = tensor_shares(graph, hw)
    return (scheduler.min_capacity(graph, sizes=sizes, alignment=hw.alignment)[0],
            scheduler.no_spill_capacity(graph, sizes=sizes, alignment=hw.alignment))


# mobilenet_v3_small is no use here: its M_R equals its no-spill capacity, so no feasible
# scratchpad size makes the baseline spill; regnet_y_400mf is as small and does spill.
@pytest.mark.parametrize("model", ["resnet18", "regnet_y_400mf"])
@pytest.mark.parametrize("hw_name", ["pixel6", "tpuv4"])
def test_shrinking_sram_increases_noncompulsory_traffic(model, hw_name):
    hw = load_hw(hw_name)
    graph = traced(model, hw.dtype)
    need, no_spill = budgets(graph, hw)
    assert need < no_spill <= hw.sram_bytes_per_pe
    sizes = [hw.sram_bytes_per_pe, no_spill, (need + no_spill) // 2, need]
    # the config's weight tiles at every size: the budgets above are the graph's as that rule tiles it
    reports = [compile_and_simulate(graph, hw=hw, sram=size, tiling="weights") for size in sizes]
    for r in reports:
        check_report(r)
    traffic = [r.noncompulsory_bytes for r in reports]
    assert traffic[0] == traffic[1] == 0
    assert traffic == sorted(traffic) and traffic[-1] > 0
    assert reports[-1].spills > 0 and reports[-1].retrieves > 0
    assert reports[-1].cycles > reports[0].cycles
    assert len({r.compulsory_bytes for r in reports}) == 1


def test_below_min_capacity_fails_with_the_capacity_error(capsys, tmp_path):
    hw = load_hw("pixel6")
    graph = traced("resnet18", hw.dtype)
    need, op = scheduler.min_capacity(graph, sizes=tensor_shares(graph, hw), alignment=hw.alignment)
    with pytest.raises(scheduler.CapacityError, match=f"below M_R = {need} bytes: operator '{op}'"):
        compile_and_simulate(graph, hw=hw, sram=need - 1, tiling="weights")
    assert main(["run", "resnet18", "--hw", "pixel6", "--sram", str(need - 1), "--tiling", "weights",
                 "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: capacity {need - 1} bytes is below M_R = {need} bytes: operator '{op}'")


def test_allocator_option_on_a_spilling_schedule():
    hw = load_hw("tpuv4")
    graph = traced("resnet18", hw.dtype)
    need, _ = budgets(graph, hw)
    report = compile_and_simulate(graph, hw=hw, sram=need, allocator="best-fit", tiling="weights")
    assert report.allocator == "best-fit"
    check_report(report)
    assert report.noncompulsory_bytes > 0


def test_dtype_and_input_shape_options(tmp_path):
    out = tmp_path / "small"
    assert main(["run", "resnet18", "--hw", "pixel6", "--dtype", "fp16", "--input-shape", "1,3,64,64",
                 "--out", str(out)]) == 0
    data = json.loads((out / "report.json").read_text())
    assert data["dtype"] == "fp16"
    assert data["input_bytes"] == 3 * 64 * 64 * 2
    tensors = traced("resnet18", "int8").graph["tensors"].values()
    int8_weights = sum(r["nbytes"] for r in tensors if r["kind"] == "weight")
    assert data["weight_bytes"] == 2 * int8_weights


def test_module_with_example_inputs():
    import torch

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 1)).eval()
    report = compile_and_simulate(model, hw="tpuv4", example_inputs=torch.zeros(1, 3, 32, 32), name="tiny")
    check_report(report)
    assert report.model == "tiny" and report.dtype == "bf16"
    assert report.macs == 32 * 32 * (8 * 3 * 9 + 4 * 8)
    with pytest.raises(ValueError, match="needs example_inputs"):
        compile_and_simulate(model, hw="tpuv4")


def test_unknown_model_is_bad_input(capsys, tmp_path):
    assert main(["run", "no_such_net", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_models_lists_the_zoo(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "resnet50" in out and "vit_b_16" in out


@pytest.mark.slow
@pytest.mark.parametrize("hw_name", ["pixel6", "tpuv4"])
def test_full_zoo(hw_name):
    """Every zoo model compiles and simulates correctly at the config's own SRAM size. vgg16's
    classifier weights exceed the scratchpad, so the flow runs it in weight tiles."""
    hw = load_hw(hw_name)
    failures = []
    for name in frontend.list_models():
        try:
            report = compile_and_simulate(traced(name, hw.dtype), hw=hw)
            check_report(report)
            if name == "vgg16":
                assert report.tiled_operators, "vgg16's fc layers should have been tiled"
        except AssertionError as exc:
            failures.append(f"{name}: {exc}")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet50", "segmentation.lraspp_mobilenet_v3_large"])
def test_cosma_on_real_models_matches_the_simulator(name):
    """COSMA at M_R, with and without weights, on traced torchvision models (int8, one chip-wide
    memory): proven optimal, never worse than the baselines, and the simulated non-compulsory
    bytes are exactly the model's objective."""
    graph = traced(name, "int8")
    for weights in (False, True):
        report = compile_and_simulate(graph, hw="tpuv4", dtype="int8", scheduler="cosma", budget="MR",
                                      weights=weights, time_limit=60)
        if weights:
            check_report(report)
        else:  # activations only: weights are neither on chip nor read
            assert report.memory_check == "ok" and report.dram_bytes_by_kind["load"] == report.input_bytes
        assert report.scheduler_status == "optimal"
        assert report.noncompulsory_bytes == report.scheduler_stats["objective"]
        sizes = None if weights else {n: 0 for n, r in graph.graph["tensors"].items() if r["kind"] == "weight"}
        alignment = report.hardware.alignment
        for replacement in ("belady", "greedy"):
            base = scheduler.baseline.schedule(graph, report.capacity_bytes, "program", replacement, sizes, alignment)
            assert report.noncompulsory_bytes <= base.noncompulsory_bytes


@pytest.mark.slow
def test_a_decoder_layer_at_4096_tokens_runs_on_tpuv4():
    """Issue 33: a decoder layer with explicit attention at 4,096 tokens (a 1 GiB score tensor in
    bf16, the softmax 16x the 128 MiB CMEM) runs on tpuv4 under --tiling auto."""
    from pathlib import Path

    model = Path(__file__).resolve().parents[2] / "studies" / "decoder_layer.py"
    report = compile_and_simulate(f"{model}:build", hw="tpuv4")
    check_report(report)
    assert report.min_capacity_bytes < 64 << 20
    assert report.cycles <= 1.10 * report.floor_cycles["cycles"]

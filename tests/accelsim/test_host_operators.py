"""Detectors through the whole flow: host operators, the bytes that cross, and the orders that respect them."""

from __future__ import annotations

import json
from functools import cache

import pytest

import frontend
import scheduler
from accelsim import compile_and_simulate
from accelsim.cli import main
from frontend.zoo import model_status, torchvision_models
from tests.accelsim.test_end_to_end import check_report

ONE_STAGE = "detection.ssdlite320_mobilenet_v3_large"
TWO_STAGE = "detection.fasterrcnn_mobilenet_v3_large_320_fpn"
SMALL = (1, 3, 128, 128)


@cache
def traced(name: str, dtype: str, shape: tuple[int, ...] | None = None):
    return frontend.trace_model(name, dtype=dtype, input_shape=shape)


def check_crossing(report) -> None:
    """The bytes that cross are accelerator outputs (stored) and inputs (loaded): in the DRAM traffic."""
    assert report.host_ops and report.to_host_bytes > 0
    assert report.dram_bytes_by_kind["store"] >= report.to_host_bytes
    assert report.dram_bytes_by_kind["load"] >= report.from_host_bytes + report.weight_bytes


@pytest.mark.parametrize("hw_name", ["tpuv4", "pixel6"])
@pytest.mark.parametrize(("name", "shape"), [(ONE_STAGE, None), (TWO_STAGE, SMALL)])
def test_detectors_run_on_both_configs_with_their_host_operators(name, shape, hw_name):
    dtype = "bf16" if hw_name == "tpuv4" else "int8"
    report = compile_and_simulate(traced(name, dtype, shape), hw=hw_name)
    check_report(report)
    check_crossing(report)
    if name == TWO_STAGE:
        assert report.from_host_bytes == 150 * 256 * 7 * 7 * (2 if dtype == "bf16" else 1)  # the pooled regions
    else:
        assert report.from_host_bytes == 0


def test_run_prints_the_host_line_and_report_json_lists_host_ops(tmp_path, capsys):
    assert main(["run", TWO_STAGE, "--hw", "tpuv4", "--input-shape", "1,3,128,128", "--out", str(tmp_path / "r"),
                 "--no-plots", "--no-cache"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.strip().startswith("host operators"))
    assert " 8 " in line and "roi_align" in line and "DRAM" in line  # RoI align in three batches of 50
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert [h["kind"] for h in data["host_ops"]] == ["anchors", "box_decode", "nms", *["roi_align"] * 3,
                                                     "class_box_decode", "nms"]
    assert data["from_host_bytes"] == 150 * 256 * 7 * 7 * 2


@pytest.mark.parametrize("method", ["min-peak", "cosma", "cosma-dnc"])
def test_schedulers_that_choose_their_own_order_refuse_host_operators(method):
    graph = traced(TWO_STAGE, "bf16", SMALL)
    with pytest.raises(scheduler.ScheduleError, match="host operators") as info:
        scheduler.make_schedule(graph, 2**30, method)
    assert "'program'" in str(info.value)


def test_an_order_that_reads_a_host_result_too_early_is_refused():
    graph = traced(TWO_STAGE, "bf16", SMALL)
    pooled = next(e["tensor"] for h in graph.graph["host_ops"] for e in h["outputs"] if e["side"] == "accelerator")
    head = graph.graph["tensors"][pooled]["consumers"][0]
    order = list(graph.nodes)
    order.remove(head)
    order.insert(0, head)  # topologically fine (it reads only an input and weights), but before the backbone
    with pytest.raises(scheduler.ScheduleError, match="host operator 'roi_align'"):
        scheduler.make_schedule(graph, 2**30, "program", order=order)


def test_models_all_lists_every_torchvision_model_with_its_status_and_shape(capsys):
    assert main(["models", "--all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["model", "input", "shape", "status"]
    rows = {line.split()[0]: line for line in lines[1:]}
    llms = [name for name in rows if name.startswith("llm.")]
    assert len(rows) == 122 + len(llms) and "transformer" in rows  # the 121 torchvision names, nn.Transformer
    assert len(llms) == 7 and all("parameters, published" in rows[name] for name in llms)
    assert "1,3,320,320" in rows[ONE_STAGE] and "host operators (one-stage" in rows[ONE_STAGE]
    assert "RoI align" in rows[TWO_STAGE]
    assert "1,3,368,496 1,3,368,496" in rows["optical_flow.raft_small"]
    assert "quantized" in rows["quantization.quantized_resnet18"]
    assert rows["resnet18"].split()[1:] == ["1,3,224,224", "runs"]


@pytest.mark.slow
def test_every_torchvision_model_traces():
    """All 121 names of torchvision.models.list_models(), at their default shapes."""
    failures = []
    for name in torchvision_models():
        try:
            graph = frontend.trace_model(name, dtype="bf16")
            frontend.check_graph(graph)
            assert graph.number_of_nodes() > 0
            assert bool(graph.graph.get("host_ops")) == ("host operators" in model_status(name)), name
        except Exception as exc:  # collect them all, then fail naming each
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures)


#: one model of every other family, besides the 12 detectors (MViT on pixel6: see below)
SAMPLE = ("regnet_y_400mf", "segmentation.deeplabv3_mobilenet_v3_large", "video.swin3d_t",
          "optical_flow.raft_small", "quantization.quantized_mobilenet_v3_large")


@pytest.mark.slow
@pytest.mark.parametrize("hw_name", ["tpuv4", "pixel6"])
def test_every_detector_and_a_sample_of_the_rest_run_on_both_configs(hw_name):
    dtype = "bf16" if hw_name == "tpuv4" else "int8"
    failures = []
    for name in [n for n in torchvision_models() if n.startswith("detection.")] + list(SAMPLE):
        try:
            report = compile_and_simulate(frontend.trace_model(name, dtype=dtype), hw=hw_name)
            check_report(report)
            if name.startswith("detection."):
                check_crossing(report)
        except AssertionError as exc:
            failures.append(f"{name}: {exc}")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["video.mvit_v1_b", "video.mvit_v2_s"])
def test_mvit_needs_more_than_2_mib_per_pe_whole_and_runs_by_query_blocks(name):
    """One attention score matrix (1 x heads x 6,273 x 1,569 at 16 x 224 x 224) read and written at
    once needs more than the Pixel 6 config's 2 MiB per PE: whole (``--tiling weights``) the run
    says so and runs with 3 MiB; under ``--tiling auto`` (the default) its attention runs by query
    blocks at 2 MiB (issue 33). It runs on tpuv4 either way."""
    check_report(compile_and_simulate(frontend.trace_model(name, dtype="bf16"), hw="tpuv4"))
    graph = frontend.trace_model(name, dtype="int8")
    with pytest.raises(scheduler.CapacityError) as info:
        compile_and_simulate(graph, hw="pixel6", tiling="weights")
    assert 2 * 2**20 < info.value.min_capacity < 3 * 2**20
    check_report(compile_and_simulate(graph, hw="pixel6", sram="3MiB", tiling="weights"))
    report = compile_and_simulate(graph, hw="pixel6")
    check_report(report)
    assert report.min_capacity_bytes <= 2 * 2**20
    assert any(op.startswith("softmax") for op in report.tiled_operators)

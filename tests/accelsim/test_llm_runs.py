"""Language models compile and run: a 2-layer Llama-shaped decoder's prefill and decode on both
bundled configs, and what GPT-2's prefill reads from DRAM."""

from __future__ import annotations

import dataclasses

import pytest

from accelsim.pipeline import compile_and_simulate
from frontend import llm
from frontend.trace import trace

pytestmark = pytest.mark.torch

SMALL = dataclasses.replace(llm.shape_of("llm.llama3.2-1b"), name="two-layer", layers=2, vocab=4096)


def _graph(tokens: int, past: int, batch: int = 1):
    model, inputs = llm.build(SMALL, batch, tokens, past)
    return trace(model, inputs, dtype="bf16", name="two-layer", method="fx")


@pytest.mark.parametrize("hw", ["tpuv4", "pixel6"])
@pytest.mark.parametrize("tokens,past", [(64, 0), (1, 63)])
def test_a_two_layer_decoder_prefills_and_decodes_with_the_memory_check_ok(hw, tokens, past):
    report = compile_and_simulate(_graph(tokens, past), hw, plots=False)
    assert report.ok
    assert report.cycles_over_floor >= 1.0  # never faster than the floor
    weights = sum(t["nbytes"] for t in _graph(tokens, past).graph["tensors"].values() if t["kind"] == "weight")
    assert report.dram_read_bytes >= weights


def test_a_decode_step_reads_the_cache_it_was_given_once():
    graph = _graph(1, 63, batch=4)
    cache = sum(graph.graph["tensors"][t]["nbytes"] for t in graph.graph["inputs"][1:])
    assert cache == 2 * 2 * 4 * 8 * 64 * 63 * 2  # layers x (K, V) x batch x KV heads x head dim x past x bf16
    report = compile_and_simulate(graph, "tpuv4", plots=False)
    assert report.ok and report.noncompulsory_bytes == 0
    ids = graph.graph["tensors"]["ids"]["nbytes"]
    weights = sum(t["nbytes"] for t in graph.graph["tensors"].values() if t["kind"] == "weight")
    assert report.dram_read_bytes == weights + cache + ids


def test_gpt2_prefill_reads_its_parameters_about_once():
    """Issue 34's bound: DRAM reads at most 1.05 x (parameter bytes + input and output bytes)."""
    report = compile_and_simulate("llm.gpt2", "tpuv4", plots=False, input_shape=(1, 32), cache=False)
    assert report.ok
    parameters = llm.parameter_count(llm.shape_of("llm.gpt2")) * 2  # bf16
    assert report.dram_read_bytes <= 1.05 * (parameters + report.dram_write_bytes + 32 * 8)


def test_auto_streams_smaller_tiles_only_for_operators_that_wait_on_dram():
    """A decode step's projections are DRAM-bound (one token), a prefill's are not: under auto only
    the decode step's weights above an eighth of the scratchpad tile to it (accelsim.tiling.streaming_limits)."""
    from accelsim.hw import load_hw
    from accelsim.pipeline import on_chip_graph
    from accelsim.tiling import streaming_limits, weight_tile_limit

    hw = load_hw("tpuv4").with_sram("64MiB")  # tiles of 16 MiB; the MLP weights (2,048 x 8,192 bf16) are 32 MiB
    limit = weight_tile_limit("auto", hw)
    decode, prefill = _graph(1, 63), _graph(512, 0)
    streaming = streaming_limits(decode, hw, limit)
    assert set(streaming.values()) == {limit // 2}
    assert {"blocks_0_mlp_gate", "blocks_0_mlp_up", "blocks_0_mlp_down"} <= set(streaming)
    assert not {"blocks_0_mlp_gate", "blocks_0_mlp_up", "blocks_0_mlp_down"} & set(streaming_limits(prefill, hw, limit))
    small = load_hw("tpuv4").with_sram("16MiB")  # 16 tiles of a one-token product cost more than 17/16 of it whole
    assert not streaming_limits(decode, small, weight_tile_limit("auto", small))
    tiled, _, _ = on_chip_graph(decode, hw, tiling="auto")
    gate = [t for t, r in tiled.graph["tensors"].items() if t.startswith("blocks.0.mlp.gate.weight[")]
    assert len(gate) == 4  # 32 MiB in 8 MiB tiles
    tiled, _, _ = on_chip_graph(decode, hw, tiling="weights")
    assert not any(t.startswith("blocks.0.mlp.gate.weight[") for t in tiled.graph["tensors"])  # 32 MiB config tiles


def test_int4_weights_and_an_int8_cache_cut_a_decode_steps_dram_reads(tmp_path):
    import json

    from accelsim.cli import main

    graph = _graph(1, 63)
    graph.graph["kv_cache"] = [*graph.graph["inputs"][1:], *graph.graph["outputs"][1:]]
    whole = compile_and_simulate(graph, "tpuv4", plots=False)
    narrow = compile_and_simulate(graph, "tpuv4", plots=False, weight_dtype="int4", kv_dtype="int8")
    assert narrow.ok and narrow.precision == {"weights": "int4", "kv_cache": "int8"}
    tensors = graph.graph["tensors"]
    weights = sum(t["nbytes"] for t in tensors.values() if t["kind"] == "weight" and t["dtype"] == "bf16")
    cache = sum(tensors[t]["nbytes"] for t in graph.graph["inputs"][1:])
    assert whole.dram_read_bytes - narrow.dram_read_bytes == weights * 3 // 4 + cache // 2
    from frontend.graph import save_graph

    save_graph(graph, tmp_path / "g.json")
    assert main(["run", str(tmp_path / "g.json"), "--hw", "tpuv4", "--weight-dtype", "int4", "--out",
                 str(tmp_path / "r"), "--no-plots"]) == 0
    assert json.loads((tmp_path / "r" / "report.json").read_text())["precision"] == {"weights": "int4"}

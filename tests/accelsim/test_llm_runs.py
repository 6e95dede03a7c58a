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

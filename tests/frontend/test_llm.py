"""The zoo's language models (``frontend.llm``): shapes as data, parameter counts, prefill and
decode graphs, grouped-query attention, and what a gather reads."""

from __future__ import annotations

import math

import pytest
import torch

from frontend import llm, zoo
from frontend.trace import trace
from frontend.zoo import UnknownModelError

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("name", llm.names())
def test_parameters_equal_the_built_model_and_the_published_count_to_1_percent(name):
    shape = llm.shape_of(name)
    model, _ = llm.load(name, batch=1, tokens=4)
    built = sum(p.numel() for p in model.parameters())  # a tied head is one parameter
    assert built == llm.parameter_count(shape)
    assert abs(built / shape.published_parameters - 1) <= 0.01
    assert shape.source.startswith("https://huggingface.co/") and shape.source.endswith("config.json")


def test_the_family_has_the_models_the_issue_names():
    assert set(llm.names()) >= {"llm.gpt2", "llm.llama3.2-1b", "llm.llama3.2-3b", "llm.llama3.1-8b",
                                "llm.qwen2.5-0.5b", "llm.mistral-7b", "llm.bert-base"}
    assert llm.shape_of("llm.bert-base").kind == "encoder"


def _graph(name, shape=(1, 8), past=0, dtype="bf16"):
    return zoo.trace_model(name, dtype=dtype, input_shape=shape, options={"past": past})


def _readers(graph, tensor):
    return [op for op, data in graph.nodes(data=True) if tensor in data["in_tensors"]]


def test_a_prefill_reads_gathered_rows_and_the_tied_table_once():
    graph = _graph("llm.gpt2", (1, 8))
    tensors = graph.graph["tensors"]
    assert graph.graph["tracer"] == "fx"
    rows = tensors["embed.weight[embed]"]
    assert rows["kind"] == "weight" and rows["gathered_from"] == "embed.weight"
    assert rows["shape"] == [1, 8, 768] and rows["nbytes"] == 8 * 768 * 2
    assert _readers(graph, "embed.weight") == ["linear"]  # the tied head reads the table, once
    assert "positions.weight" not in tensors  # only its 8 rows are read
    assert tensors["positions.weight[positions]"]["nbytes"] == 8 * 768 * 2
    whole = sum(t["nbytes"] for t in tensors.values()
                if t["kind"] == "weight" and t["dtype"] == "bf16" and "gathered_from" not in t)
    position_table = 1024 * 768  # read as 8 rows, so not among the weights read whole
    assert whole == (llm.parameter_count(llm.shape_of("llm.gpt2")) - position_table) * 2
    logits = graph.graph["outputs"][0]
    assert tensors[logits]["shape"] == [1, 1, 50257]  # the last position's logits only


def test_a_decode_step_reads_each_layers_cache_once_in_place_and_writes_one_token():
    shape = llm.shape_of("llm.llama3.2-1b")
    graph = _graph("llm.llama3.2-1b", (1, 1), past=7)
    tensors = graph.graph["tensors"]
    inputs = graph.graph["inputs"]
    assert inputs[0] == "ids" and len(inputs) == 1 + 2 * shape.layers
    for layer in range(shape.layers):
        k, v = tensors[f"k{layer}"], tensors[f"v{layer}"]
        assert k["shape"] == [1, 8, 64, 7] and v["shape"] == [1, 8, 7, 64]
        for cache in (f"k{layer}", f"v{layer}"):
            [reader] = _readers(graph, cache)
            assert graph.nodes[reader]["op"] == "matmul"  # never concatenated: no copy of the cache
    outputs = graph.graph["outputs"]
    assert len(outputs) == 1 + 2 * shape.layers
    new = [tensors[t]["shape"] for t in outputs[1:3]]
    assert new == [[1, 8, 64, 1], [1, 8, 1, 64]]  # one token's keys (transposed) and values per layer


def test_grouped_query_heads_are_rows_of_one_product_per_kv_head():
    graph = _graph("llm.llama3.2-1b", (2, 1), past=7)  # 32 query heads over 8 KV heads: groups of 4
    [reader] = _readers(graph, "k0")
    assert graph.nodes[reader]["gemm"] == [[4, 64, 7, 2 * 8]]  # 4 rows (the group) per KV head and batch
    prefill = _graph("llm.llama3.2-1b", (1, 8))
    scores = [d for _, d in prefill.nodes(data=True) if d["op"] == "matmul"][0]
    assert scores["gemm"] == [[4 * 8, 64, 8, 8]]


def test_a_batch_of_4_decodes_with_a_cache_per_sequence():
    graph = zoo.trace_model("llm.qwen2.5-0.5b", dtype="bf16", input_shape=(1, 1), batch=4, options={"past": 15})
    tensors = graph.graph["tensors"]
    assert tensors["ids"]["shape"] == [4, 1] and tensors["k0"]["shape"] == [4, 2, 64, 15]
    assert tensors[graph.graph["outputs"][0]]["shape"] == [4, 1, 151936]


def test_an_encoder_reads_every_position_and_has_no_cache():
    graph = _graph("llm.bert-base", (1, 16))
    hidden, pooled = graph.graph["outputs"]
    tensors = graph.graph["tensors"]
    assert tensors[hidden]["shape"] == [1, 16, 768] and tensors[pooled]["shape"] == [1, 768]
    assert not any(d["op"] == "triu" for _, d in graph.nodes(data=True))  # no causal mask
    with pytest.raises(ValueError, match="'llm.bert-base' is an encoder: it has no KV cache"):
        _graph("llm.bert-base", (1, 1), past=3)


def test_positions_past_the_model_and_bad_names_are_one_line():
    with pytest.raises(ValueError, match=r"'llm.gpt2' takes at most 1,024 positions; past=1020 plus 8 tokens"):
        _graph("llm.gpt2", (1, 8), past=1020)
    with pytest.raises(UnknownModelError, match="unknown model 'llm.gpt5'; the llm family has llm.gpt2"):
        zoo.check_model_name("llm.gpt5")
    with pytest.raises(ValueError, match=r"option past=-1 of model 'llm.gpt2' must be an integer >= 0"):
        zoo.model_options("llm.gpt2", {"past": -1})
    with pytest.raises(ValueError, match="token ids are \\(batch, tokens\\)"):
        zoo.load_model("llm.gpt2", (1, 3, 8))


def test_a_causal_prefill_masks_on_chip_and_reads_no_mask():
    graph = _graph("llm.llama3.2-1b", (1, 8))
    tensors = graph.graph["tensors"]
    assert graph.graph["inputs"] == ["ids"]
    weights = [t for t, r in tensors.items() if r["kind"] == "weight" and r["shape"] == [8, 8]]
    assert weights == []  # the mask is made by an operator, never loaded
    assert any(d["op"] == "triu" for _, d in graph.nodes(data=True))


def test_the_zoo_builds_the_family_on_meta_with_int64_ids():
    model, inputs = zoo.load_model("llm.llama3.2-1b", (2, 5), options={"past": 3})
    assert inputs[0].dtype == torch.long and inputs[0].shape == (2, 5) and inputs[0].is_meta
    assert all(p.is_meta for p in model.parameters())
    assert len(inputs) == 1 + 2 * 16
    assert zoo.default_input_shapes("llm.gpt2") == ((1, 512),)
    assert "124.4M parameters, published 124M" in zoo.model_status("llm.gpt2")


def test_tracing_needs_no_weight_memory():
    """An 8B model traces on meta: no parameter has storage (the RSS bound is the slow study's)."""
    model, inputs = llm.load("llm.llama3.1-8b", batch=1, tokens=4)
    assert all(p.is_meta for p in model.parameters()) and all(b.is_meta for b in model.buffers())
    graph = trace(model, inputs, dtype="bf16", name="llm.llama3.1-8b", method="fx")
    head = graph.graph["tensors"]["head.weight"]
    assert head["nbytes"] == 128256 * 4096 * 2 and "embed.weight" not in graph.graph["tensors"]  # untied: rows only
    assert math.prod(graph.graph["tensors"]["embed.weight[embed]"]["shape"]) == 4 * 4096

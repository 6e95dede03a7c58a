"""``frontend.precision``: int4 weights (half a byte per element) and a KV cache in its own dtype."""

from __future__ import annotations

import math

import pytest

from frontend import zoo
from frontend.graph import check_graph, load_graph, save_graph
from frontend.precision import set_precision

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def decode():
    return zoo.trace_model("llm.qwen2.5-0.5b", dtype="bf16", input_shape=(1, 1), options={"past": 7})


def test_int4_weights_take_half_a_byte_per_element_and_index_buffers_keep_theirs(decode):
    out = set_precision(decode, weights="int4")
    check_graph(out)
    for name, rec in decode.graph["tensors"].items():
        new = out.graph["tensors"][name]
        if rec["kind"] == "weight" and rec["dtype"] == "bf16":
            assert new["dtype"] == "int4" and new["nbytes"] == math.ceil(math.prod(rec["shape"]) / 2)
        else:
            assert new == rec
    assert out.graph["precision"] == {"weights": "int4"}
    assert "precision" not in decode.graph  # a copy: the traced graph is the cache's


def test_the_kv_cache_takes_its_own_dtype_and_nothing_else_does(decode):
    out = set_precision(decode, kv="int8")
    cache = decode.graph["kv_cache"]
    assert len(cache) == 2 * 2 * 24  # 24 layers: K and V read, K and V written
    for name, rec in decode.graph["tensors"].items():
        new = out.graph["tensors"][name]
        if name in cache:
            assert new["dtype"] == "int8" and new["nbytes"] == rec["nbytes"] // 2
        else:
            assert new == rec


def test_a_narrowed_graph_saves_and_loads(decode, tmp_path):
    out = set_precision(decode, weights="int4", kv="fp8")
    save_graph(out, tmp_path / "g.json")
    again = load_graph(tmp_path / "g.json")
    assert again.graph["tensors"] == out.graph["tensors"] and again.graph["precision"] == out.graph["precision"]


def test_widening_unknown_dtypes_and_a_kv_dtype_without_a_cache_are_one_line(decode):
    with pytest.raises(ValueError, match=r"weight dtype 'fp32' \(32 bits\) is wider than the run's dtype 'bf16'"):
        set_precision(decode, weights="fp32")
    with pytest.raises(ValueError, match="weight dtype 'int3' is not one of int4, int8"):
        set_precision(decode, weights="int3")
    prefill_encoder = zoo.trace_model("llm.bert-base", dtype="bf16", input_shape=(1, 4))
    with pytest.raises(ValueError, match="model 'llm.bert-base' records no KV cache"):
        set_precision(prefill_encoder, kv="int8")

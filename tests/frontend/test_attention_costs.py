"""Fused attention (``F.scaled_dot_product_attention``): causal blocks counted as a block-skipping
kernel computes them, and its working memory cut by query blocks or heads under ``--tiling auto``."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from accelsim.hw import load_hw
from accelsim.pipeline import compile_and_simulate, on_chip_graph
from frontend.cost import CAUSAL_BLOCK
from frontend.trace import trace

pytestmark = pytest.mark.torch


class Attention(nn.Module):
    def __init__(self, causal: bool) -> None:
        super().__init__()
        self.causal = causal
        self.out = nn.Linear(64, 64)

    def forward(self, q, k, v):
        return self.out(F.scaled_dot_product_attention(q, k, v, is_causal=self.causal))


def _sdpa(graph):
    return next(d for _, d in graph.nodes(data=True) if d["op"] == "scaled_dot_product_attention")


@pytest.mark.parametrize("method", ["fx", "export"])
def test_causal_attention_counts_the_blocks_below_the_diagonal(method):
    q = torch.zeros(1, 2, 4 * CAUSAL_BLOCK, 64)
    dense = _sdpa(trace(Attention(False), (q, q, q), method=method))
    causal = _sdpa(trace(Attention(True), (q, q, q), method=method))
    assert causal["macs"] == dense["macs"] * (1 + 2 + 3 + 4) // 16  # blocks see 1, 2, 3, 4 blocks of keys
    assert sum(t * k * n * c for t, k, n, c in causal["gemm"]) == causal["macs"]
    one = torch.zeros(1, 2, 1, 64)  # a decode step (one query, top-left aligned): it sees key 0 only
    keys = torch.zeros(1, 2, 300, 64)
    assert _sdpa(trace(Attention(True), (one, keys, keys)))["macs"] == 2 * 1 * 1 * 128


def test_auto_runs_a_fused_attention_larger_than_the_scratchpad_by_query_blocks():
    q = torch.zeros(1, 4, 8192, 64)  # Q, K, V and the output: 4 MiB each in bf16
    graph = trace(Attention(False), (q, q, q), dtype="bf16")
    hw = load_hw("tpuv4").with_sram("8MiB")
    tiled, _, cut = on_chip_graph(graph, hw, tiling="auto")
    assert "scaled_dot_product_attention" in cut
    tiles = [d for n, d in tiled.nodes(data=True) if n.startswith("scaled_dot_product_attention.tile")]
    assert len(tiles) > 1 and sum(d["macs"] for d in tiles) == _sdpa(graph)["macs"]
    report = compile_and_simulate(graph, hw, plots=False)
    assert report.ok and report.min_capacity_bytes <= 8 * 2**20
    with pytest.raises(ValueError, match="below M_R"):
        compile_and_simulate(graph, hw, plots=False, tiling="weights")  # whole, it needs 16 MiB

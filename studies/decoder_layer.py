"""A Llama-style decoder layer with explicit (unfused) attention, as a user model: issue 33's
long-sequence case. ``accelsim run studies/decoder_layer.py:build --hw tpuv4`` runs it at 4,096 tokens.

The layer is written out operator by operator, as transformers' "eager" attention is: RMSNorm,
the Q, K and V projections, ``Q @ K^T / sqrt(d)``, an additive causal mask, softmax, ``@ V``,
the output projection and residual, then RMSNorm and a SwiGLU MLP. Shapes follow
Llama-3.2-1B's layer (hidden 2,048, 32 heads of 64, MLP 8,192; multi-head rather than grouped
K/V, a simplification). Weights are random (``weights=None`` in spirit: nothing is downloaded).

At 4,096 tokens in bf16 the score tensor is 32 x 4,096 x 4,096 x 2 B = 1 GiB, and the softmax
reads it and writes another: 2 GiB, 16x TPUv4's 128 MiB CMEM. Only row tiling (``--tiling
auto``, ``frontend.row_tiling``) runs it.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


class DecoderLayer(nn.Module):
    def __init__(self, hidden: int = 2048, heads: int = 32, intermediate: int = 8192) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.norm1, self.norm2 = RMSNorm(hidden), RMSNorm(hidden)
        self.q = nn.Linear(hidden, hidden, bias=False)
        self.k = nn.Linear(hidden, hidden, bias=False)
        self.v = nn.Linear(hidden, hidden, bias=False)
        self.o = nn.Linear(hidden, hidden, bias=False)
        self.gate = nn.Linear(hidden, intermediate, bias=False)
        self.up = nn.Linear(hidden, intermediate, bias=False)
        self.down = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        h = self.norm1(x)
        q = self.q(h).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(h).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v = self.v(h).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        scores = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores + mask, dim=-1)
        attn = (probs @ v).transpose(1, 2).reshape(b, t, -1)
        x = x + self.o(attn)
        h = self.norm2(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


def build(tokens: int = 4096, hidden: int = 2048, heads: int = 32,
          intermediate: int = 8192) -> tuple[nn.Module, tuple[torch.Tensor, torch.Tensor]]:
    """The layer and its inputs: hidden states ``(1, tokens, hidden)`` and the causal mask ``(tokens, tokens)``."""
    mask = torch.full((tokens, tokens), float("-inf")).triu(1)
    return DecoderLayer(hidden, heads, intermediate).eval(), (torch.zeros(1, tokens, hidden), mask)

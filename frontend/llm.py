"""Language models by name, nothing downloaded: the zoo's ``llm.`` family.

The shapes of well-known models are data (``frontend/llms.json``, each with the URL of the
config it comes from and its published parameter count): GPT-2 (124M), Llama-3.2-1B and -3B,
Llama-3.1-8B, Qwen2.5-0.5B, Mistral-7B (decoders) and BERT-base (an encoder).
``load(name, ...)`` builds one as a compact PyTorch model of our own with random weights.

**Why our own model and not ``transformers``** (decision): torch.fx cannot trace transformers
5.x models, so they would go through torch.export, which is much slower and materialises the
weights; and it would add a dependency. The compact
model is written operator by operator as transformers' "eager" attention is, has the same
parameters (``parameter_count`` equals the built model's, and matches the published count; the
tests check both), builds on the meta device with no weight storage, and traces with torch.fx.

What the model computes, and the decisions behind it:

* **Inputs**: token ids ``(batch, tokens)`` (int64), then for a decoder step with ``past``
  tokens already cached, each layer's cache as two inputs, ``k<l>`` of shape
  ``(batch, kv_heads, head_dim, past)`` and ``v<l>`` of ``(batch, kv_heads, past, head_dim)``.
  Keys are kept transposed, a layout compilers choose so that ``Q @ K^T`` reads the cache
  as it is stored, with no copy; one input per layer, so one layer's cache is live while
  that layer runs (a stacked ``[layers, ...]`` cache would keep all of it live).
* **Outputs**: the logits of the **last position only** (what generation needs; serving stacks
  compute no other: vLLM, transformers' ``logits_to_keep=1``), then each layer's new keys and
  values (``tokens`` of them), which the runtime appends to the cache in DRAM. An encoder returns
  its last hidden states and the pooled first token.
* **Grouped-query attention without copies**: queries are laid out ``(batch, kv_heads, group,
  tokens, head_dim)`` and multiply the cache broadcast over ``group``, so each KV head is read
  once for its group of query heads (no ``repeat_kv`` copy).
* **Decode reads the cache in place**: scores against the cache and against the new tokens are
  two matmuls joined before the softmax, and the output sums the two products: the cache is
  read once and never concatenated (``torch.cat`` of the cache would copy it every step).
* **Causal attention is computed dense** (the scores of masked pairs are computed, then masked):
  a dense kernel computes whole tiles, and skipping the masked half needs blocks of keys as well
  as of queries (FlashAttention's running softmax), which the row tiling of
  ``frontend.row_tiling`` does not split. So a prefill's attention MACs are twice what a
  block-skipping kernel does; attention is a small part of a prefill's MACs at 512 tokens
  (Llama-3.2-1B: 3.3 %). The mask is made on chip (``full`` then ``triu``), as a kernel makes it
  from indices, never read from DRAM.
* **Rotary positions**: the cos and sin tables of the step's positions are constants (weights
  of ``tokens x head_dim``); GPT-2 and BERT read learned position rows.
* RMSNorm / LayerNorm as the config says; SwiGLU (``down(silu(gate(x)) * up(x))``) or GELU MLP;
  biases as the config says; a tied head multiplies by the embedding table itself (one tensor).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

#: the zoo names of this family start with this
PREFIX = "llm."
#: tokens of the prompt unless ``--input-shape 1,N`` says otherwise
DEFAULT_TOKENS = 512
_DATA = Path(__file__).with_name("llms.json")


@dataclass(frozen=True)
class LLMShape:
    """One model's shape, as ``frontend/llms.json`` gives it (see that file for the sources)."""

    name: str
    kind: str  # "decoder" or "encoder"
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    max_positions: int
    tied_embeddings: bool
    norm: str  # "rms" or "layer"
    norm_eps: float
    position: str  # "rope" or "learned"
    mlp: str  # "swiglu" or "gelu"
    qkv_bias: bool
    out_bias: bool
    mlp_bias: bool
    published_parameters: int
    published_as: str
    source: str
    type_vocab: int = 0
    pooler: bool = False

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


@functools.cache
def shapes() -> dict[str, LLMShape]:
    """Every model of the family by zoo name (``"llm.gpt2"``), in the file's order."""
    data = json.loads(_DATA.read_text(encoding="utf-8"))
    return {PREFIX + key: LLMShape(name=PREFIX + key, **value) for key, value in data["models"].items()}


def names() -> list[str]:
    """The family's zoo names."""
    return list(shapes())


def is_llm(name: str) -> bool:
    """``name`` is a zoo name of this family (known or not: the zoo says which are unknown)."""
    return isinstance(name, str) and name.startswith(PREFIX)


def shape_of(name: str) -> LLMShape:
    """The shape of ``name``, or ``ValueError`` naming it and listing the family."""
    try:
        return shapes()[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; the llm family has {', '.join(names())}") from None


def parameter_count(shape: LLMShape) -> int:
    """The parameters of the model ``load`` builds, counted from the shape (a tied head counted once).

    >>> parameter_count(shape_of("llm.gpt2"))
    124439808
    """
    h, kv = shape.hidden, shape.kv_heads * shape.head_dim
    norm = 2 * h if shape.norm == "layer" else h
    attention = h * h + 2 * h * kv + h * h
    attention += (h + 2 * kv) * shape.qkv_bias + h * shape.out_bias
    projections = 3 if shape.mlp == "swiglu" else 2
    mlp = projections * h * shape.intermediate
    if shape.mlp_bias:
        mlp += shape.intermediate * (projections - 1) + h
    layer = attention + mlp + 2 * norm
    embeddings = shape.vocab * h
    if shape.position == "learned":
        embeddings += shape.max_positions * h
    embeddings += shape.type_vocab * h
    total = embeddings + shape.layers * layer
    if shape.kind == "decoder":
        total += norm + (0 if shape.tied_embeddings else shape.vocab * h)
    else:
        total += norm + (h * h + h if shape.pooler else 0)  # the embeddings' norm, the pooler
    return total


def check_options(name: str, tokens: int, past: int) -> None:
    """``ValueError`` naming the model unless a step of ``tokens`` after ``past`` cached tokens fits it."""
    shape = shape_of(name)
    if past and shape.kind != "decoder":
        raise ValueError(f"model {name!r} is an encoder: it has no KV cache, so past={past} cannot apply")
    if past + tokens > shape.max_positions:
        raise ValueError(f"model {name!r} takes at most {shape.max_positions:,} positions; past={past} plus "
                         f"{tokens} tokens is {past + tokens:,}")


def load(name: str, batch: int, tokens: int, past: int = 0) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """Model ``name`` (weights on the meta device) and its meta inputs: ids ``(batch, tokens)``,
    then for ``past > 0`` each layer's cached keys and values (see the module docstring)."""
    check_options(name, tokens, past)
    return build(shape_of(name), batch, tokens, past)


def build(shape: LLMShape, batch: int, tokens: int, past: int = 0) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """``load``'s model and inputs for any ``shape`` (a smaller one in tests:
    ``dataclasses.replace(shape_of("llm.llama3.2-1b"), layers=2)``)."""
    import torch

    model = _model(shape, tokens, past)
    ids = torch.empty((batch, tokens), dtype=torch.long, device="meta")
    if not past:
        return model, (ids,)
    cache: list[torch.Tensor] = []
    for _ in range(shape.layers):
        cache.append(torch.empty((batch, shape.kv_heads, shape.head_dim, past), device="meta"))
        cache.append(torch.empty((batch, shape.kv_heads, past, shape.head_dim), device="meta"))
    return model, (ids, *cache)


def _model(shape: LLMShape, tokens: int, past: int) -> torch.nn.Module:
    """The module, built on the meta device, with a ``forward`` taking one argument per input."""
    import torch

    with torch.device("meta"):
        core = Decoder(shape, tokens, past) if shape.kind == "decoder" else Encoder(shape, tokens)
    return core.eval()


@functools.cache
def _classes() -> dict[str, Any]:
    """The building blocks (defined on first use: defining them imports torch)."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    def norm(shape: LLMShape) -> nn.Module:
        if shape.norm == "rms":
            return nn.RMSNorm(shape.hidden, eps=shape.norm_eps)
        return nn.LayerNorm(shape.hidden, eps=shape.norm_eps)

    def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, half: int) -> torch.Tensor:
        """Rotary positions along the last dimension (``cos``, ``sin``: ``(tokens, head_dim)``)."""
        turned = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + turned * sin

    def rotate_columns(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, half: int) -> torch.Tensor:
        """The same along the second-last dimension (transposed keys; ``cos``: ``(head_dim, tokens)``)."""
        turned = torch.cat((-x[..., half:, :], x[..., :half, :]), dim=-2)
        return x * cos + turned * sin

    class Attention(nn.Module):
        def __init__(self, shape: LLMShape, tokens: int, past: int, causal: bool) -> None:
            super().__init__()
            h, d = shape.hidden, shape.head_dim
            self.kv_heads, self.group, self.head_dim = shape.kv_heads, shape.heads // shape.kv_heads, d
            self.tokens, self.past, self.causal = tokens, past, causal
            self.rope = shape.position == "rope"
            self.q = nn.Linear(h, shape.heads * d, bias=shape.qkv_bias)
            self.k = nn.Linear(h, shape.kv_heads * d, bias=shape.qkv_bias)
            self.v = nn.Linear(h, shape.kv_heads * d, bias=shape.qkv_bias)
            self.o = nn.Linear(shape.heads * d, h, bias=shape.out_bias)

        def forward(self, x: torch.Tensor, rope: Any, past_k: Any, past_v: Any) -> Any:
            b, t, kvh, g, d = x.shape[0], self.tokens, self.kv_heads, self.group, self.head_dim
            q = self.q(x).view(b, t, kvh, g, d).permute(0, 2, 3, 1, 4)  # (b, kvh, g, t, d)
            k_t = self.k(x).view(b, t, kvh, d).permute(0, 2, 3, 1)  # (b, kvh, d, t): keys stored transposed
            v = self.v(x).view(b, t, kvh, d).transpose(1, 2)  # (b, kvh, t, d): the cache's layout
            if self.rope:
                cos, sin, cos_t, sin_t = rope
                q = rotate(q, cos, sin, d // 2)
                k_t = rotate_columns(k_t, cos_t, sin_t, d // 2)
            scale = 1.0 / math.sqrt(d)
            scores = torch.matmul(q, k_t.unsqueeze(2)) * scale  # (b, kvh, g, t, t)
            if self.causal and t > 1:
                scores = scores + torch.full((t, t), float("-inf"), device=scores.device).triu(1)
            if past_k is None:
                out = torch.matmul(torch.softmax(scores, dim=-1), v.unsqueeze(2))
            else:
                cached = torch.matmul(q, past_k.unsqueeze(2)) * scale  # (b, kvh, g, t, past)
                probs = torch.softmax(torch.cat((cached, scores), dim=-1), dim=-1)
                out = torch.matmul(probs[..., : self.past], past_v.unsqueeze(2))
                out = out + torch.matmul(probs[..., self.past:], v.unsqueeze(2))
            out = out.permute(0, 3, 1, 2, 4).reshape(b, t, kvh * g * d)
            return self.o(out), k_t, v

    class MLP(nn.Module):
        def __init__(self, shape: LLMShape) -> None:
            super().__init__()
            self.swiglu = shape.mlp == "swiglu"
            self.up = nn.Linear(shape.hidden, shape.intermediate, bias=shape.mlp_bias)
            self.down = nn.Linear(shape.intermediate, shape.hidden, bias=shape.mlp_bias)
            if self.swiglu:
                self.gate = nn.Linear(shape.hidden, shape.intermediate, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.swiglu:
                return self.down(F.silu(self.gate(x)) * self.up(x))
            return self.down(F.gelu(self.up(x)))

    class Block(nn.Module):
        """A pre-norm decoder layer, or (``post_norm``) BERT's post-norm encoder layer."""

        def __init__(self, shape: LLMShape, tokens: int, past: int, post_norm: bool) -> None:
            super().__init__()
            self.post_norm = post_norm
            self.attention = Attention(shape, tokens, past, causal=not post_norm)
            self.mlp = MLP(shape)
            self.norm1, self.norm2 = norm(shape), norm(shape)

        def forward(self, x: torch.Tensor, rope: Any, past_k: Any, past_v: Any) -> Any:
            if self.post_norm:
                a, k, v = self.attention(x, rope, past_k, past_v)
                x = self.norm1(x + a)
                return self.norm2(x + self.mlp(x)), k, v
            a, k, v = self.attention(self.norm1(x), rope, past_k, past_v)
            x = x + a
            return x + self.mlp(self.norm2(x)), k, v

    return {"norm": norm, "Block": Block}


def _decoder_forward(model: Any, ids: Any, cache: list[Any]) -> tuple[Any, ...]:
    x = model.embed(ids)
    if model.shape.position == "learned":
        x = x + model.positions(model.position_ids)
    rope = None
    if model.shape.position == "rope":  # read unchanged, so torch.fx reads them as the model's buffers
        rope = (model.rope_cos, model.rope_sin, model.rope_cos_t, model.rope_sin_t)
    written: list[Any] = []
    for index, block in enumerate(model.blocks):
        past_k, past_v = (cache[2 * index], cache[2 * index + 1]) if cache else (None, None)
        x, k, v = block(x, rope, past_k, past_v)
        written += [k, v]
    last = model.final_norm(x[:, -1:])
    if model.head is None:
        import torch.nn.functional as F

        logits = F.linear(last, model.embed.weight)  # the tied head: the embedding table itself
    else:
        logits = model.head(last)
    return (logits, *written)


@functools.cache
def _with_inputs(cls: type, layers: int, past: int) -> type:
    """``cls`` with a ``forward(self, ids, k0, v0, k1, v1, ...)`` (one argument per input): torch.fx
    makes one placeholder per named argument and cannot trace ``*args``. The names are ours."""
    if not past:
        return cls
    arguments = ", ".join(f"k{i}, v{i}" for i in range(layers))
    source = f"def forward(self, ids, {arguments}):\n    return self.run(ids, [{arguments}])\n"
    scope: dict[str, Any] = {}
    exec(compile(source, f"<llm forward, {layers} layers>", "exec"), scope)  # noqa: S102 (fixed identifiers)
    return type(cls.__name__, (cls,), {"forward": scope["forward"]})


@functools.cache
def _base_classes() -> dict[str, type]:
    from torch import nn

    classes = _classes()

    class Decoder(nn.Module):
        def __init__(self, shape: LLMShape, tokens: int, past: int) -> None:
            import torch

            super().__init__()
            self.shape = shape
            self.embed = nn.Embedding(shape.vocab, shape.hidden)
            if shape.position == "learned":
                self.positions = nn.Embedding(shape.max_positions, shape.hidden)
                self.register_buffer("position_ids", torch.empty(tokens, dtype=torch.long))
            else:
                # the step's rotary tables, in the layout each use reads (queries, transposed keys)
                for table in ("rope_cos", "rope_sin"):
                    self.register_buffer(table, torch.empty(tokens, shape.head_dim))
                    self.register_buffer(f"{table}_t", torch.empty(shape.head_dim, tokens))
            self.blocks = nn.ModuleList(classes["Block"](shape, tokens, past, False) for _ in range(shape.layers))
            self.final_norm = classes["norm"](shape)
            self.head = None if shape.tied_embeddings else nn.Linear(shape.hidden, shape.vocab, bias=False)

        def run(self, ids: Any, cache: list[Any]) -> tuple[Any, ...]:
            return _decoder_forward(self, ids, cache)

        def forward(self, ids: Any) -> tuple[Any, ...]:
            return self.run(ids, [])

    class Encoder(nn.Module):
        def __init__(self, shape: LLMShape, tokens: int) -> None:
            import torch

            super().__init__()
            self.embed = nn.Embedding(shape.vocab, shape.hidden)
            self.positions = nn.Embedding(shape.max_positions, shape.hidden)
            self.types = nn.Embedding(shape.type_vocab, shape.hidden)
            self.register_buffer("position_ids", torch.empty(tokens, dtype=torch.long))
            self.register_buffer("type_ids", torch.empty(tokens, dtype=torch.long))
            self.embed_norm = classes["norm"](shape)
            self.blocks = nn.ModuleList(classes["Block"](shape, tokens, 0, True) for _ in range(shape.layers))
            self.pool = nn.Linear(shape.hidden, shape.hidden)

        def forward(self, ids: Any) -> tuple[Any, Any]:
            import torch

            x = self.embed(ids) + self.positions(self.position_ids) + self.types(self.type_ids)
            x = self.embed_norm(x)
            for block in self.blocks:
                x, _, _ = block(x, None, None, None)
            return x, torch.tanh(self.pool(x[:, 0]))

    return {"Decoder": Decoder, "Encoder": Encoder}


def Decoder(shape: LLMShape, tokens: int, past: int) -> Any:  # noqa: N802 (builds an instance of the class)
    """A decoder of ``shape`` for a step of ``tokens`` after ``past`` cached tokens."""
    return _with_inputs(_base_classes()["Decoder"], shape.layers, past)(shape, tokens, past)


def Encoder(shape: LLMShape, tokens: int) -> Any:  # noqa: N802
    """An encoder of ``shape`` over ``tokens`` tokens."""
    return _base_classes()["Encoder"](shape, tokens)

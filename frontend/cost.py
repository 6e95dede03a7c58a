"""What an operator is, and what it costs: kind normalisation, multiply-accumulate counts and GEMM shapes.

Three small tables drive everything here, so supporting a new operator is one line each:

* ``MODULE_KINDS`` / ``FUNCTION_KINDS`` map a leaf module class name, or a function / method
  name, to a **normalised kind** (``"conv2d"``, ``"linear"``, ``"add"``, ...). Unknown names
  fall back to their snake-case spelling, so nothing is ever rejected.
* ``MAC_RULES`` maps a kind to a function ``OpCall -> int`` counting its multiply-accumulates.
  Kinds without a rule (elementwise, pooling, normalisation, softmax, cat, permute, ...) have
  ``macs = 0`` and are costed by ``elements``: the number of output elements they write.
* ``GEMM_RULES`` maps the same kinds to a function ``OpCall -> list[Gemm]`` lowering the
  operator onto matrix multiplications, the shape a systolic array or SIMD model maps (see
  "GEMM lowering" below). Every kind with a MAC rule has a GEMM rule, and their MACs agree
  exactly.

Counting conventions (the ones torchvision, fvcore and ptflops use, so the numbers compare):

* convolution: ``out_elements * (C_in / groups) * prod(kernel)``, i.e. the output size times
  the weight's per-output-channel size ``prod(weight.shape[1:])``; bias adds are not counted.
* transposed convolution: ``in_elements * (C_out / groups) * prod(kernel)`` (every input
  element is scattered through the kernel), again ``prod(weight.shape[1:])`` per element.
* linear: ``out_elements * in_features``.
* matmul / bmm / mm (and ``@``): ``batch * M * N * K`` = ``out_elements * K``.
* einsum: ``out_elements * prod(sizes of the contracted indices)``.
* scaled_dot_product_attention: the two matmuls, ``batch * L * S * (E + E_v)``.
* nn.MultiheadAttention: in-projections of query, key and value, ``Q K^T``, ``A V`` and the
  out-projection (the extra key slot of ``add_bias_kv`` / ``add_zero_attn`` is ignored).
* torchvision's ``shifted_window_attention`` (Swin): qkv projection, ``Q K^T`` and ``A V`` inside
  each (padded) window, and the output projection.

GEMM lowering (``gemms``): a ``Gemm`` ``(t, k, n, count)`` is ``count`` independent products
``(t x k) @ (k x n)``: ``t`` rows of the streamed operand (batch x output positions), ``k`` the
reduction, ``n`` output columns (the stationary operand is ``k x n``, the weight of a layer).
An operator's GEMMs sum to its MACs: ``sum(t * k * n * count) == macs(call)``.

* convolution, weight ``(C_out, C_in/g, *kernel)``, ``g`` groups (the input's channels over
  ``weight.shape[1]``): im2col, one GEMM per group, ``t = out_elements / C_out``,
  ``k = prod(weight.shape[1:])``, ``n = C_out / g``, ``count = g`` (depthwise: ``n = 1``).
* transposed convolution, weight ``(C_in, C_out/g, *kernel)``: every input position times the
  group's weight slice, then a col2im scatter, ``t = in_elements / C_in``, ``k = C_in / g``,
  ``n = prod(weight.shape[1:])``, ``count = g``.
* linear: ``t = out_elements / out_features`` (the leading dimensions folded), ``k = in_features``,
  ``n = out_features``.
* matmul / bmm / addmm / baddbmm, ``A (..., M, K) @ B (..., K, N)``: a 2-D ``B`` acts as a weight,
  so ``A``'s batch dimensions fold into ``t`` and there is one GEMM; a batched ``B`` gives
  ``count = prod(output batch dims)`` GEMMs of ``M x K x N``, but the innermost batch dimensions
  ``B`` is broadcast over (size 1 or missing in ``B``) fold into ``M``: ``B`` is the same matrix
  for them, so they are more rows of one product (grouped-query attention's ``(b, kv_heads,
  group, t, d) @ (b, kv_heads, 1, d, s)`` is ``b * kv_heads`` GEMMs of ``group * t`` rows, each
  KV head's matrix loaded once for its group). A 1-D ``A`` is one row (``M = 1``),
  a 1-D ``B`` one column (``N = 1``).
* scaled_dot_product_attention: ``Q K^T`` (``L x E x S``) and ``A V`` (``L x S x E_v``), each
  ``batch * heads`` times; with ``is_causal=True``, per block of ``CAUSAL_BLOCK`` queries only the
  keys up to the block's last row (what a block-skipping kernel computes).
* nn.MultiheadAttention: the q, k and v in-projections, ``Q K^T`` and ``A V`` per head
  (``count = batch * num_heads``, ``k`` or ``n`` the head dimension ``embed / num_heads``) and the
  out-projection: six GEMMs.
* Swin window attention: the qkv projection, ``Q K^T`` and ``A V`` per window and head
  (``count = windows * num_heads``, head dimension ``C / num_heads``) and the output projection.
* einsum (an approximation of the mapping, exact in MACs): one GEMM with ``n`` the output's last
  dimension, ``t`` the rest of the output, ``k`` the product of the contracted sizes.

A rule that cannot make sense of unusual shapes falls back to one GEMM per output element
(``t = out_elements``, ``k = macs / t``, ``n = 1``; ``(1, macs, 1, 1)`` if that does not divide),
so the sum is exact whatever the shapes.

Everything is computed from shapes alone; this module does not import torch.

>>> call = OpCall("conv2d", operands=[(1, 8, 16, 16)], outputs=[(1, 16, 16, 16)],
...               params={"weight": (16, 4, 3, 3)})          # groups=2
>>> macs(call) == 16 * 16 * 16 * 4 * 9
True
>>> module_kind(["BatchNorm2d", "_BatchNorm", "Module"]), function_kind("iadd"), function_kind("relu_")
('batch_norm', 'add', 'relu')
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Shape = tuple[int, ...]


@dataclass(frozen=True)
class OpCall:
    """One operator application, described by shapes only.

    ``operands``: shapes of the tensor arguments in argument order (activations and weights
    passed as arguments, e.g. ``F.linear(x, w)``). ``outputs``: shapes of the tensors it writes.
    ``params``: a leaf module's own parameters and buffers by local name (``"weight"``).
    ``attributes``: a leaf module's scalar configuration (``groups``, ``num_heads``, ...).
    ``arguments``: the call's arguments by parameter name where they could be bound (tensors
    appear as their shape tuples, other values as themselves).
    """

    kind: str
    operands: Sequence[Shape]
    outputs: Sequence[Shape]
    params: Mapping[str, Shape] = field(default_factory=dict)
    attributes: Mapping[str, Any] = field(default_factory=dict)
    arguments: Mapping[str, Any] = field(default_factory=dict)


def numel(shape: Sequence[int]) -> int:
    """Number of elements of a tensor of ``shape`` (1 for a 0-d tensor)."""
    return math.prod(int(d) for d in shape)


# --------------------------------------------------------------------------- kinds

#: leaf module class name -> kind; classes are looked up along their MRO, so subclasses
#: (``NonDynamicallyQuantizableLinear``, ``LazyConv2d``) find their parent's entry
MODULE_KINDS: dict[str, str] = {
    "Conv1d": "conv1d", "Conv2d": "conv2d", "Conv3d": "conv3d",
    "ConvTranspose1d": "conv_transpose1d", "ConvTranspose2d": "conv_transpose2d",
    "ConvTranspose3d": "conv_transpose3d",
    "Linear": "linear", "Bilinear": "bilinear", "Embedding": "embedding",
    "_BatchNorm": "batch_norm", "BatchNorm1d": "batch_norm", "BatchNorm2d": "batch_norm",
    "BatchNorm3d": "batch_norm", "SyncBatchNorm": "batch_norm",
    "_InstanceNorm": "instance_norm", "LayerNorm": "layer_norm", "GroupNorm": "group_norm",
    "LocalResponseNorm": "local_response_norm", "RMSNorm": "rms_norm",
    "ReLU": "relu", "ReLU6": "relu6", "LeakyReLU": "leaky_relu", "PReLU": "prelu", "ELU": "elu",
    "SELU": "selu", "CELU": "celu", "GELU": "gelu", "SiLU": "silu", "Mish": "mish",
    "Hardswish": "hardswish", "Hardsigmoid": "hardsigmoid", "Hardtanh": "hardtanh",
    "Sigmoid": "sigmoid", "Tanh": "tanh", "Softplus": "softplus",
    "Softmax": "softmax", "LogSoftmax": "log_softmax",
    "MaxPool1d": "max_pool1d", "MaxPool2d": "max_pool2d", "MaxPool3d": "max_pool3d",
    "AvgPool1d": "avg_pool1d", "AvgPool2d": "avg_pool2d", "AvgPool3d": "avg_pool3d",
    "AdaptiveAvgPool1d": "adaptive_avg_pool1d", "AdaptiveAvgPool2d": "adaptive_avg_pool2d",
    "AdaptiveAvgPool3d": "adaptive_avg_pool3d", "AdaptiveMaxPool2d": "adaptive_max_pool2d",
    "MultiheadAttention": "multi_head_attention",
    "Upsample": "interpolate", "UpsamplingNearest2d": "interpolate", "UpsamplingBilinear2d": "interpolate",
    "_DropoutNd": "dropout", "Dropout": "dropout", "Identity": "identity",
    "Flatten": "flatten", "Unflatten": "unflatten", "PixelShuffle": "pixel_shuffle",
    "_ConstantPadNd": "pad", "_ReflectionPadNd": "pad", "_ReplicationPadNd": "pad", "ZeroPad2d": "pad",
}

#: function / method name (``target.__name__`` or the method string) -> kind; names not listed
#: are their own kind, minus the trailing ``_`` of an in-place variant
FUNCTION_KINDS: dict[str, str] = {
    "add": "add", "iadd": "add", "radd": "add", "sub": "sub", "isub": "sub", "rsub": "sub",
    "mul": "mul", "imul": "mul", "multiply": "mul", "truediv": "div", "itruediv": "div",
    "div": "div", "divide": "div", "floordiv": "floor_divide", "neg": "neg", "pow": "pow",
    "matmul": "matmul", "mm": "matmul", "bmm": "bmm", "addmm": "addmm", "baddbmm": "baddbmm",
    "einsum": "einsum", "scaled_dot_product_attention": "scaled_dot_product_attention",
    "cat": "cat", "concat": "cat", "concatenate": "cat", "stack": "stack",
    "permute": "permute", "movedim": "permute", "moveaxis": "permute",
    "transpose": "transpose", "t": "transpose", "swapaxes": "transpose", "swapdims": "transpose",
    "T": "transpose", "mT": "transpose", "H": "transpose", "mH": "transpose",
    "getitem": "index", "index_select": "index", "gather": "gather",
    "setitem": "index_put", "index_put": "index_put",
    "relu6": "relu6", "hardtanh": "hardtanh", "softmax": "softmax", "log_softmax": "log_softmax",
    "interpolate": "interpolate", "upsample": "interpolate",
    "mean": "mean", "sum": "sum", "to": "cast", "type": "cast", "float": "cast", "half": "cast",
    "bfloat16": "cast", "double": "cast", "int": "cast", "long": "cast", "bool": "cast",
    "clone": "copy", "copy": "copy", "dropout": "dropout", "_assert": "assert",
}


def _snake(name: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    return name.lower()


def module_kind(class_names: Sequence[str]) -> str:
    """Kind of a leaf module, given its class name and those of its bases (MRO order)."""
    for name in class_names:
        if name in MODULE_KINDS:
            return MODULE_KINDS[name]
    return _snake(class_names[0]) if class_names else "module"


def function_kind(name: str) -> str:
    """Kind of a function or tensor method called by name (``"iadd"`` -> ``"add"``)."""
    if name in FUNCTION_KINDS:
        return FUNCTION_KINDS[name]
    stripped = name.strip("_")
    if stripped in FUNCTION_KINDS:
        return FUNCTION_KINDS[stripped]
    return stripped or name


# --------------------------------------------------------------------------- MAC rules

def _weight(call: OpCall, position: int) -> Shape:
    """The weight of a leaf module, or the ``position``-th tensor argument of a function."""
    if "weight" in call.params:
        return tuple(call.params["weight"])
    return tuple(call.operands[position])


def _conv(call: OpCall) -> int:
    """``out_elements * prod(weight.shape[1:])``; weight is ``(C_out, C_in/groups, *kernel)``."""
    weight = _weight(call, 1)
    return numel(call.outputs[0]) * numel(weight[1:])


def _conv_transpose(call: OpCall) -> int:
    """``in_elements * prod(weight.shape[1:])``; weight is ``(C_in, C_out/groups, *kernel)``."""
    weight = _weight(call, 1)
    return numel(call.operands[0]) * numel(weight[1:])


def _linear(call: OpCall) -> int:
    """``out_elements * in_features``; weight is ``(out_features, in_features)``."""
    weight = _weight(call, 1)
    return numel(call.outputs[0]) * int(weight[-1])


def _matmul_from(first: int) -> Callable[[OpCall], int]:
    """``out_elements * K`` with ``K`` the last dimension of operand ``first``."""

    def rule(call: OpCall) -> int:
        a = call.operands[first]
        return numel(call.outputs[0]) * int(a[-1] if a else 1)

    rule.__doc__ = f"``out_elements * K``, ``K`` = last dimension of operand {first}."
    return rule


def _first_string(values: Sequence[Any]) -> str | None:
    for v in values:
        if isinstance(v, str):
            return v
        if isinstance(v, (tuple, list)):
            found = _first_string(v)
            if found is not None:
                return found
    return None


def _einsum_contracted(call: OpCall) -> int | None:
    """Product of the sizes of the indices an einsum sums over (``None`` without an equation)."""
    equation = _first_string(list(call.arguments.values()))
    if equation is None:
        return None
    equation = equation.replace(" ", "")
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, call.operands, strict=False):
        head, ellipsis, tail = term.partition("...")
        for letter, dim in zip(head, shape, strict=False):
            sizes[letter] = int(dim)
        if ellipsis and tail:
            for letter, dim in zip(tail, shape[len(shape) - len(tail):], strict=False):
                sizes[letter] = int(dim)
    if not rhs:  # implicit output: the indices that appear exactly once, sorted
        letters = [c for c in lhs if c.isalpha()]
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    contracted = set(sizes) - set(rhs)
    return math.prod(sizes[c] for c in contracted)


def _einsum(call: OpCall) -> int:
    """``out_elements * prod(contracted index sizes)``, from the equation and operand shapes."""
    contracted = _einsum_contracted(call)
    return 0 if contracted is None else numel(call.outputs[0]) * contracted


def _sdpa(call: OpCall) -> int:
    """``batch * L * S * (E + E_v)``: ``Q K^T`` then ``A V``; q ``(..., L, E)``, k ``(..., S, E)``
    (causal: the blocks a block-skipping kernel computes, ``_sdpa_gemm``)."""
    return sum(t * k * n * count for t, k, n, count in _sdpa_gemm(call))


def _mha(call: OpCall) -> int:
    """nn.MultiheadAttention: in-projections + ``Q K^T`` + ``A V`` + out-projection."""
    attrs = call.attributes
    embed = int(attrs["embed_dim"])
    kdim = int(attrs.get("kdim") or embed)
    vdim = int(attrs.get("vdim") or embed)
    query = call.arguments.get("query", call.operands[0])
    key = call.arguments.get("key", call.operands[1])
    if len(query) == 2:  # unbatched: (L, E)
        batch, q_len, k_len = 1, int(query[0]), int(key[0])
    elif attrs.get("batch_first"):
        batch, q_len, k_len = int(query[0]), int(query[1]), int(key[1])
    else:
        batch, q_len, k_len = int(query[1]), int(query[0]), int(key[0])
    in_projection = batch * (q_len * embed * embed + k_len * kdim * embed + k_len * vdim * embed)
    attention = 2 * batch * q_len * k_len * embed  # Q K^T and A V summed over the heads
    out_projection = batch * q_len * embed * embed
    return in_projection + attention + out_projection


def _shifted_window_attention(call: OpCall) -> int:
    """Swin window attention: qkv projection, per-window ``Q K^T`` and ``A V``, output projection."""
    args = call.arguments
    batch, height, width, channels = (int(d) for d in args.get("input", call.operands[0]))
    qkv_weight = args.get("qkv_weight", call.operands[1])
    proj_weight = args.get("proj_weight", call.operands[2])
    win_h, win_w = (int(w) for w in args["window_size"])
    padded_h = -(-height // win_h) * win_h
    padded_w = -(-width // win_w) * win_w
    tokens = batch * padded_h * padded_w
    window_tokens = win_h * win_w
    qkv = tokens * numel(qkv_weight)
    attention = 2 * tokens * window_tokens * channels  # per window: N x N x C, twice
    projection = tokens * numel(proj_weight)
    return qkv + attention + projection


#: kind -> MAC counter; kinds not listed have 0 MACs and are costed by ``elements``
MAC_RULES: dict[str, Callable[[OpCall], int]] = {
    "conv1d": _conv, "conv2d": _conv, "conv3d": _conv,
    "conv_transpose1d": _conv_transpose, "conv_transpose2d": _conv_transpose,
    "conv_transpose3d": _conv_transpose,
    "linear": _linear,
    "matmul": _matmul_from(0), "bmm": _matmul_from(0),
    "addmm": _matmul_from(1), "baddbmm": _matmul_from(1),
    "einsum": _einsum,
    "scaled_dot_product_attention": _sdpa,
    "multi_head_attention": _mha,
    "shifted_window_attention": _shifted_window_attention,
}


def macs(call: OpCall) -> int:
    """Multiply-accumulates of ``call`` (0 for kinds without a rule in ``MAC_RULES``)."""
    rule = MAC_RULES.get(call.kind)
    return int(rule(call)) if rule is not None else 0


# --------------------------------------------------------------------------- GEMM rules

#: ``(t, k, n, count)``: ``count`` independent GEMMs ``(t x k) @ (k x n)``
Gemm = tuple[int, int, int, int]


def _conv_gemm(call: OpCall) -> list[Gemm]:
    """im2col per group: ``t = out_elements / C_out``, ``k = prod(weight[1:])``, ``n = C_out / g``, ``count = g``.

    The channel axis is 1 for a batched input and 0 for an unbatched one (the input has one
    dimension fewer than the weight); ``g`` is the input's channels over ``weight.shape[1]``.
    """
    weight = _weight(call, 1)
    source = call.operands[0]
    out_channels = int(weight[0])
    channel_axis = len(source) - len(weight) + 1
    groups = int(source[channel_axis]) // int(weight[1])
    out_positions = numel(call.outputs[0]) // out_channels
    return [(out_positions, numel(weight[1:]), out_channels // groups, groups)]


def _conv_transpose_gemm(call: OpCall) -> list[Gemm]:
    """Per group: ``t = in_elements / C_in``, ``k = C_in / g``, ``n = prod(weight[1:])``, ``count = g``.

    The weight is ``(C_in, C_out/g, *kernel)``, so ``g`` is the output's channels over
    ``weight.shape[1]``; each input position's ``n`` products are then scattered (col2im).
    """
    weight = _weight(call, 1)
    in_channels = int(weight[0])
    output = call.outputs[0]
    channel_axis = len(output) - len(weight) + 1
    groups = int(output[channel_axis]) // int(weight[1])
    in_positions = numel(call.operands[0]) // in_channels
    return [(in_positions, in_channels // groups, numel(weight[1:]), groups)]


def _linear_gemm(call: OpCall) -> list[Gemm]:
    """``t = out_elements / out_features``, ``k = in_features``, ``n = out_features``, one GEMM."""
    weight = _weight(call, 1)
    out_features = int(weight[0]) if len(weight) == 2 else 1  # a 1-D weight gives one feature
    return [(numel(call.outputs[0]) // out_features, int(weight[-1]), out_features, 1)]


def _matmul_gemm_from(first: int) -> Callable[[OpCall], list[Gemm]]:
    """GEMMs of ``operands[first] @ operands[first + 1]`` (a 2-D second operand is a weight)."""

    def rule(call: OpCall) -> list[Gemm]:
        a, b = tuple(call.operands[first]), tuple(call.operands[first + 1])
        out_elements = numel(call.outputs[0])
        depth = int(a[-1]) if a else 1
        if len(b) <= 1:  # matrix-vector (or dot): every output element is one row of A times b
            return [(out_elements, depth, 1, 1)]
        columns = int(b[-1])
        if len(b) == 2:  # weight-like: A's batch dimensions fold into the rows
            return [(out_elements // columns, depth, columns, 1)]
        rows = int(a[-2]) if len(a) >= 2 else 1
        batch_out, batch_b = list(call.outputs[0][:-2]), [int(d) for d in b[:-2]]
        batch_b = [1] * (len(batch_out) - len(batch_b)) + batch_b
        while batch_out and batch_b and batch_b[-1] == 1:  # B broadcast over A's innermost batch: more rows
            rows *= int(batch_out.pop())
            batch_b.pop()
        return [(rows, depth, columns, out_elements // (rows * columns))]

    rule.__doc__ = (f"``operands[{first}] @ operands[{first + 1}]``: one GEMM folding the batch into ``t`` "
                    "when the second is 2-D, else ``prod(batch)`` GEMMs of ``M x K x N``, where the innermost "
                    "batch dimensions the second is broadcast over fold into ``M`` too (grouped-query "
                    "attention: a group's query heads are rows against their KV head's one matrix).")
    return rule


def _einsum_gemm(call: OpCall) -> list[Gemm]:
    """One GEMM: ``n`` = the output's last dimension, ``t`` = the rest, ``k`` = the contracted sizes.

    An approximation of how an accelerator maps a general contraction (which indices are batch
    and which are rows is not recovered), exact in MACs.
    """
    contracted = _einsum_contracted(call)
    if contracted is None:
        return []
    output = call.outputs[0]
    columns = int(output[-1]) if output else 1
    return [(numel(output) // columns, contracted, columns, 1)]


#: query rows per block of a causal ``scaled_dot_product_attention`` (FlashAttention's block of
#: queries; assumption: 128, FlashAttention-2's default on its GPUs)
CAUSAL_BLOCK = 128


def _sdpa_gemm(call: OpCall) -> list[Gemm]:
    """``Q K^T`` (``L x E x S``) and ``A V`` (``L x S x E_v``), ``batch * heads`` of each.

    With ``is_causal=True`` a fused kernel skips the key blocks above the diagonal: query block
    ``j`` (``CAUSAL_BLOCK`` rows) attends to the keys up to its last row (torch's causal mask is
    aligned top-left: row ``i`` sees keys ``0..i``), so each block is its own pair of GEMMs and
    the MACs are about half of the dense ones for a square prefill (the diagonal blocks count whole).
    """
    query, key, value = call.operands[0], call.operands[1], call.operands[2]
    q_len = int(query[-2]) if len(query) >= 2 else 1
    rows = numel(call.outputs[0]) // int(value[-1])  # batch * heads * L
    count = rows // q_len
    keys = int(key[-2])
    if call.arguments.get("is_causal") is not True:
        return [(q_len, int(query[-1]), keys, count), (q_len, keys, int(value[-1]), count)]
    gemm: list[Gemm] = []
    for start in range(0, q_len, CAUSAL_BLOCK):
        block = min(CAUSAL_BLOCK, q_len - start)
        seen = min(start + block, keys)
        gemm += [(block, int(query[-1]), seen, count), (block, seen, int(value[-1]), count)]
    return gemm


def _mha_gemm(call: OpCall) -> list[Gemm]:
    """nn.MultiheadAttention: q, k, v in-projections, per-head ``Q K^T`` and ``A V``, out-projection."""
    attrs = call.attributes
    embed = int(attrs["embed_dim"])
    kdim = int(attrs.get("kdim") or embed)
    vdim = int(attrs.get("vdim") or embed)
    heads = int(attrs.get("num_heads") or 1)
    if embed % heads:
        heads = 1  # nn.MultiheadAttention refuses this; keep the sum exact anyway
    head_dim = embed // heads
    query = call.arguments.get("query", call.operands[0])
    key = call.arguments.get("key", call.operands[1])
    if len(query) == 2:
        batch, q_len, k_len = 1, int(query[0]), int(key[0])
    elif attrs.get("batch_first"):
        batch, q_len, k_len = int(query[0]), int(query[1]), int(key[1])
    else:
        batch, q_len, k_len = int(query[1]), int(query[0]), int(key[0])
    return [
        (batch * q_len, embed, embed, 1),  # q projection
        (batch * k_len, kdim, embed, 1),  # k projection
        (batch * k_len, vdim, embed, 1),  # v projection
        (q_len, head_dim, k_len, batch * heads),  # Q K^T
        (q_len, k_len, head_dim, batch * heads),  # A V
        (batch * q_len, embed, embed, 1),  # out projection
    ]


def _shifted_window_attention_gemm(call: OpCall) -> list[Gemm]:
    """Swin: qkv projection, per window and head ``Q K^T`` and ``A V`` (``N x C/h x N``), projection."""
    args = call.arguments
    batch, height, width, channels = (int(d) for d in args.get("input", call.operands[0]))
    qkv_weight = tuple(args.get("qkv_weight", call.operands[1]))
    proj_weight = tuple(args.get("proj_weight", call.operands[2]))
    win_h, win_w = (int(w) for w in args["window_size"])
    heads = int(args.get("num_heads") or 1)
    if channels % heads:
        heads = 1
    head_dim = channels // heads
    windows = batch * -(-height // win_h) * -(-width // win_w)
    window_tokens = win_h * win_w
    tokens = windows * window_tokens
    return [
        (tokens, numel(qkv_weight[1:]), int(qkv_weight[0]), 1),
        (window_tokens, head_dim, window_tokens, windows * heads),
        (window_tokens, window_tokens, head_dim, windows * heads),
        (tokens, numel(proj_weight[1:]), int(proj_weight[0]), 1),
    ]


#: kind -> GEMM lowering; exactly the kinds of ``MAC_RULES``, each summing to its MAC count
GEMM_RULES: dict[str, Callable[[OpCall], list[Gemm]]] = {
    "conv1d": _conv_gemm, "conv2d": _conv_gemm, "conv3d": _conv_gemm,
    "conv_transpose1d": _conv_transpose_gemm, "conv_transpose2d": _conv_transpose_gemm,
    "conv_transpose3d": _conv_transpose_gemm,
    "linear": _linear_gemm,
    "matmul": _matmul_gemm_from(0), "bmm": _matmul_gemm_from(0),
    "addmm": _matmul_gemm_from(1), "baddbmm": _matmul_gemm_from(1),
    "einsum": _einsum_gemm,
    "scaled_dot_product_attention": _sdpa_gemm,
    "multi_head_attention": _mha_gemm,
    "shifted_window_attention": _shifted_window_attention_gemm,
}


def gemm_macs(gemm: Sequence[Sequence[int]]) -> int:
    """MACs of a list of ``(t, k, n, count)`` GEMMs: ``sum(t * k * n * count)``."""
    return sum(math.prod(int(d) for d in entry) for entry in gemm)


def gemms(call: OpCall) -> list[Gemm]:
    """The GEMMs ``call`` lowers to, as ``(t, k, n, count)``: ``count`` products ``(t x k) @ (k x n)``.

    ``t`` is the rows of the streamed operand (batch x output positions), ``k`` the reduction
    and ``n`` the output columns; the rules are listed in the module docstring. Kinds without a
    rule in ``GEMM_RULES``, and operators of 0 MACs, give ``[]``. Otherwise the result sums to
    ``macs(call)`` exactly; shapes a rule cannot lower give the one-GEMM-per-output-element
    fallback described in the module docstring.

    A convolution with 2 groups: 16 x 16 output positions, each group a ``256 x 36 @ 36 x 8``:

    >>> conv = OpCall("conv2d", operands=[(1, 8, 16, 16)], outputs=[(1, 16, 16, 16)],
    ...               params={"weight": (16, 4, 3, 3)})
    >>> gemms(conv)
    [(256, 36, 8, 2)]
    >>> gemm_macs(gemms(conv)) == macs(conv)
    True

    A linear layer on ``(batch 2, 5 tokens, 32 features)``: the tokens fold into the rows.

    >>> gemms(OpCall("linear", operands=[(2, 5, 32)], outputs=[(2, 5, 10)], params={"weight": (10, 32)}))
    [(10, 32, 10, 1)]
    >>> gemms(OpCall("relu", operands=[(2, 3)], outputs=[(2, 3)]))
    []
    """
    rule = GEMM_RULES.get(call.kind)
    total = macs(call)
    if rule is None or total == 0:
        return []
    try:
        lowered = [tuple(int(d) for d in entry) for entry in rule(call)]
    except (ArithmeticError, IndexError, KeyError, TypeError, ValueError):
        lowered = []
    lowered = [entry for entry in lowered if all(d > 0 for d in entry)]
    if lowered and all(len(entry) == 4 for entry in lowered) and gemm_macs(lowered) == total:
        return [(entry[0], entry[1], entry[2], entry[3]) for entry in lowered]
    rows = numel(call.outputs[0]) if call.outputs else 0
    if rows > 0 and total % rows == 0:
        return [(rows, total // rows, 1, 1)]
    return [(1, total, 1, 1)]


def elements(call: OpCall) -> int:
    """Elements written: the sum of the output sizes (the cost of non-MAC operators)."""
    return sum(numel(shape) for shape in call.outputs)


#: kinds that normalise along one dimension, whose ``axis`` the graph records: a pass that splits
#: such an operator (``frontend.row_tiling``) may cut any dimension but this one
AXIS_KINDS = ("softmax", "log_softmax")


def axis(call: OpCall) -> int | None:
    """The dimension (0-based, counted on the output) an ``AXIS_KINDS`` operator normalises along;
    ``None`` for other kinds or when the call does not say it (then no pass may split the operator).

    >>> axis(OpCall("softmax", operands=[(2, 8, 8)], outputs=[(2, 8, 8)], arguments={"dim": -1}))
    2
    >>> axis(OpCall("softmax", operands=[(2, 8)], outputs=[(2, 8)], attributes={"dim": 0}))
    0
    >>> axis(OpCall("relu", operands=[(2, 8)], outputs=[(2, 8)])) is None
    True
    """
    if call.kind not in AXIS_KINDS or len(call.outputs) != 1:
        return None
    dim = call.arguments.get("dim", call.attributes.get("dim"))
    rank = len(call.outputs[0])
    if isinstance(dim, bool) or not isinstance(dim, int) or not -rank <= dim < rank:
        return None
    return dim % rank


#: kinds whose output positions each read a window of input positions: convolutions and pooling
WINDOW_KINDS = ("conv1d", "conv2d", "conv3d", "max_pool1d", "max_pool2d", "max_pool3d",
                "avg_pool1d", "avg_pool2d", "avg_pool3d")


def _per_dim(value: Any, rank: int) -> list[int] | None:
    """``value`` (an int, or a sequence of ``rank`` ints) as ``rank`` ints; ``None`` for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return [value] * rank
    if isinstance(value, (list, tuple)) and len(value) == rank and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return [int(v) for v in value]
    if isinstance(value, (list, tuple)) and len(value) == 1 and isinstance(value[0], int):
        return [int(value[0])] * rank
    return None


def window(call: OpCall) -> dict[str, list[int]] | None:
    """The window a ``WINDOW_KINDS`` operator slides over each spatial dimension of its (batched)
    input: ``kernel``, ``stride``, ``padding`` and ``dilation``, one int per spatial dimension,
    checked against the input and output sizes (``ceil_mode`` pooling allowed); ``None`` when the
    call does not say it all or the sizes do not match (then no pass may cut it by rows).

    >>> window(OpCall("conv2d", operands=[(1, 3, 224, 224)], outputs=[(1, 64, 112, 112)],
    ...               params={"weight": (64, 3, 7, 7)}, attributes={"stride": (2, 2), "padding": (3, 3),
    ...                                                             "dilation": (1, 1)}))
    {'kernel': [7, 7], 'stride': [2, 2], 'padding': [3, 3], 'dilation': [1, 1]}
    >>> window(OpCall("max_pool2d", operands=[(1, 64, 112, 112)], outputs=[(1, 64, 56, 56)],
    ...               arguments={"kernel_size": 3, "stride": 2, "padding": 1}))["stride"]
    [2, 2]
    >>> window(OpCall("conv2d", operands=[(1, 3, 8, 8)], outputs=[(1, 4, 8, 8)], params={"weight": (4, 3, 3, 3)},
    ...               attributes={"padding": "same"})) is None
    True
    """
    if call.kind not in WINDOW_KINDS or len(call.outputs) != 1 or not call.operands:
        return None
    rank = int(call.kind[-2])
    source, out = tuple(call.operands[0]), tuple(call.outputs[0])
    if len(source) != rank + 2 or len(out) != rank + 2:
        return None  # unbatched, or shapes this rule does not read

    def given(name: str, default: Any) -> Any:
        return call.arguments.get(name, call.attributes.get(name, default))

    if call.kind.startswith("conv"):
        weight = _weight(call, 1) if ("weight" in call.params or len(call.operands) > 1) else ()
        kernel = [int(k) for k in weight[2:]] if len(weight) == rank + 2 else None
    else:
        kernel = _per_dim(given("kernel_size", None), rank)
    stride_value = given("stride", 1)
    if stride_value is None or (isinstance(stride_value, (list, tuple)) and not stride_value):
        stride_value = kernel  # pooling: the stride defaults to the kernel
    stride, padding = _per_dim(stride_value, rank), _per_dim(given("padding", 0), rank)
    dilation = _per_dim(given("dilation", 1), rank)
    if kernel is None or stride is None or padding is None or dilation is None or min(stride) < 1:
        return None
    for k, s, p, d, size, result in zip(kernel, stride, padding, dilation, source[2:], out[2:], strict=True):
        span = d * (k - 1) + 1
        if size + 2 * p < span or result not in ((size + 2 * p - span) // s + 1, -(-(size + 2 * p - span) // s) + 1):
            return None
    return {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation}

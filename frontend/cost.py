"""What an operator is, and what it costs: kind normalisation and multiply-accumulate counts.

Two small tables drive everything here, so supporting a new operator is one line:

* ``MODULE_KINDS`` / ``FUNCTION_KINDS`` map a leaf module class name, or a function / method
  name, to a **normalised kind** (``"conv2d"``, ``"linear"``, ``"add"``, ...). Unknown names
  fall back to their snake-case spelling, so nothing is ever rejected.
* ``MAC_RULES`` maps a kind to a function ``OpCall -> int`` counting its multiply-accumulates.
  Kinds without a rule (elementwise, pooling, normalisation, softmax, cat, permute, ...) have
  ``macs = 0`` and are costed by ``elements``: the number of output elements they write.

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


def _einsum(call: OpCall) -> int:
    """``out_elements * prod(contracted index sizes)``, from the equation and operand shapes."""
    equation = _first_string(list(call.arguments.values()))
    if equation is None:
        return 0
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
    return numel(call.outputs[0]) * math.prod(sizes[c] for c in contracted)


def _sdpa(call: OpCall) -> int:
    """``batch * L * S * (E + E_v)``: ``Q K^T`` then ``A V``; q ``(..., L, E)``, k ``(..., S, E)``."""
    query, key, value = call.operands[0], call.operands[1], call.operands[2]
    rows = numel(call.outputs[0]) // int(value[-1])  # batch * heads * L
    return rows * int(key[-2]) * (int(query[-1]) + int(value[-1]))


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


def elements(call: OpCall) -> int:
    """Elements written: the sum of the output sizes (the cost of non-MAC operators)."""
    return sum(numel(shape) for shape in call.outputs)

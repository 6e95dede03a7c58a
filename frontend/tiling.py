"""Weight tiling: split operators whose weights are too large to load at once.

A compiler for an accelerator with a small scratchpad does not load a 100 MB fully connected
layer in one piece: it computes the layer in tiles of output features, each reading the whole
input but only its slice of the weights, and joins the partial outputs. ``tile_weights`` does
that on a ``DataflowGraph`` before scheduling, so an operator's own footprint (COSMA's M_R)
depends on the tile size, not on the layer size.

Rules (deterministic, independent of the capacity):

* an operator of kind ``linear`` or ``conv1d``/``conv2d``/``conv3d`` whose largest weight
  tensor has more than ``max_weight_bytes`` bytes is split into ``k = ceil(weight / limit)``
  tiles along the output features (dimension 0 of the weight; the bias too); convolutions
  must have ``groups == 1`` (weight dimension 1 equals the input channels), other kinds are
  left whole;
* tile ``t`` is operator ``<op>.tile<t>``: it reads the op's activations and the weight slices
  ``<weight>[a:b]``, writes ``<output>.tile<t>`` (the feature dimension, last for ``linear``,
  1 for convolutions, cut to ``b - a``), and carries ``b - a`` / ``out`` of the MACs and its
  share of the GEMM: the op's ``[t, k, n, count]`` entries (one, as a split op has one group)
  with ``n`` cut to ``b - a``, so ``t * k * (b - a) * count`` are the tile's MACs (an op
  without a ``gemm``, or with one whose ``n`` is not the output features, gives tiles ``[]``);
* operator ``<op>.concat`` (kind ``concat``, a real copy) reads the tiles and writes the
  original output tensor, so consumers are unchanged; it has no MACs and ``gemm`` ``[]``.
  Operators left whole keep their ``gemm``.

The weight bytes of the graph are unchanged (slices partition the weights), so DRAM traffic
for weights stays the same.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Collection, Mapping
from typing import Any

import networkx as nx

from frontend.graph import add_operator, add_tensor, check_graph, new_graph

TILED_KINDS = ("linear", "conv1d", "conv2d", "conv3d")


def _chunks(total: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` near-equal half-open ranges covering ``[0, total)``."""
    bounds = [total * p // parts for p in range(parts + 1)]
    return [(bounds[p], bounds[p + 1]) for p in range(parts) if bounds[p + 1] > bounds[p]]


def _tile_count(graph: nx.DiGraph, node: str, max_weight_bytes: int) -> int:
    """How many tiles ``node`` needs (1: leave it whole)."""
    data = graph.nodes[node]
    tensors = graph.graph["tensors"]
    if data["op"] not in TILED_KINDS or len(data["out_tensors"]) != 1:
        return 1
    weights = [t for t in data["in_tensors"] if tensors[t]["kind"] == "weight"]
    activations = [t for t in data["in_tensors"] if tensors[t]["kind"] != "weight"]
    if not weights or not activations or (len(activations) > 1 and data["op"] == "linear"):
        return 1  # a convolution's row tile (frontend.row_tiling) may read several input tiles
    largest = max(weights, key=lambda t: tensors[t]["nbytes"])
    shape = tensors[largest]["shape"]
    if tensors[largest]["nbytes"] <= max_weight_bytes or len(shape) < 2:
        return 1
    out_shape = tensors[data["out_tensors"][0]]["shape"]
    feature_dim = len(out_shape) - 1 if data["op"] == "linear" else 1
    if out_shape[feature_dim] != shape[0]:
        return 1
    if data["op"] != "linear" and any(shape[1] != tensors[a]["shape"][1] for a in activations):
        return 1  # grouped convolution: the slices would not be independent
    if any(tensors[w]["shape"][0] != shape[0] for w in weights):
        return 1
    return min(shape[0], math.ceil(tensors[largest]["nbytes"] / max_weight_bytes))


def _tile_gemm(gemm: list[list[int]], features: int, width: int) -> list[list[int]]:
    """The GEMM of a tile of ``width`` of the ``features`` output features: ``n`` cut to ``width``."""
    if not gemm or any(entry[2] != features for entry in gemm):
        return []
    return [[t, k, width, count] for t, k, _, count in gemm]


def tile_weights(graph: nx.DiGraph, max_weight_bytes: int,
                 limits: Mapping[str, int] | None = None) -> tuple[nx.DiGraph, list[str]]:
    """A copy of ``graph`` with every oversized operator split into weight tiles (rules above).

    ``limits`` gives some operators a limit of their own instead of ``max_weight_bytes``
    (``accelsim.tiling.streaming_limits``: DRAM-bound operators stream smaller tiles).

    Returns the new graph and the names of the operators that were split. ``graph`` itself is
    not modified; a graph with nothing to split comes back as an equal copy.

    >>> g = new_graph("fc", dtype="int8")
    >>> add_tensor(g, "x", (1, 8), kind="input")
    >>> add_tensor(g, "w", (6, 8), kind="weight")
    >>> add_operator(g, "fc", "linear", ["x", "w"], {"y": (1, 6)}, macs=48, gemm=[(1, 8, 6, 1)])
    >>> g.graph["outputs"] = ["y"]; g.graph["tensors"]["y"]["kind"] = "output"
    >>> tiled, split = tile_weights(g, max_weight_bytes=16)
    >>> split, list(tiled.nodes)
    (['fc'], ['fc.tile0', 'fc.tile1', 'fc.tile2', 'fc.concat'])
    >>> [tiled.graph["tensors"][f"w[{a}:{b}]"]["nbytes"] for a, b in [(0, 2), (2, 4), (4, 6)]]
    [16, 16, 16]
    >>> tiled.nodes["fc.tile0"]["gemm"], tiled.nodes["fc.tile0"]["macs"], tiled.nodes["fc.concat"]["gemm"]
    ([[1, 8, 2, 1]], 16, [])
    """
    if max_weight_bytes <= 0:
        raise ValueError(f"max_weight_bytes must be positive, got {max_weight_bytes}")
    own = limits or {}
    counts = {node: _tile_count(graph, node, own.get(node, max_weight_bytes)) for node in graph.nodes}
    split = [node for node, k in counts.items() if k > 1]
    if not split:
        return copy.deepcopy(graph), []
    old: dict[str, dict[str, Any]] = graph.graph["tensors"]
    out = new_graph(graph.graph["name"], graph.graph["dtype"])
    out.graph["aliases"] = dict(graph.graph["aliases"])
    for key, value in graph.graph.items():  # e.g. the host operators' records (frontend.host)
        out.graph.setdefault(key, copy.deepcopy(value))
    tiled_weights = {t for node in split for t in graph.nodes[node]["in_tensors"] if old[t]["kind"] == "weight"}

    def ensure(name: str) -> None:
        """Register an input/weight tensor of the old graph in the new one (producers add their own)."""
        rec = old[name]
        if name not in out.graph["tensors"] and rec["producer"] is None:
            add_tensor(out, name, rec["shape"], kind=rec["kind"], dtype=rec["dtype"], nbytes=rec["nbytes"])

    for name in graph.graph["inputs"]:
        ensure(name)
    for node, data in graph.nodes(data=True):
        k = counts[node]
        if k == 1:
            for t in data["in_tensors"]:
                ensure(t)
            outputs = {t: old[t]["shape"] for t in data["out_tensors"]}
            add_operator(out, node, data["op"], data["in_tensors"], outputs, target=data["target"],
                         macs=data["macs"], elements=data["elements"], gemm=data.get("gemm"))
            for t in data["out_tensors"]:
                out.graph["tensors"][t].update(kind=old[t]["kind"], dtype=old[t]["dtype"], nbytes=old[t]["nbytes"])
            continue
        result = data["out_tensors"][0]
        out_shape = list(old[result]["shape"])
        feature_dim = len(out_shape) - 1 if data["op"] == "linear" else 1
        features = out_shape[feature_dim]
        per_feature = old[result]["nbytes"] // features
        tile_outputs = []
        for t, (a, b) in enumerate(_chunks(features, k)):
            inputs = []
            for name in data["in_tensors"]:
                rec = old[name]
                if name in tiled_weights:
                    piece = f"{name}[{a}:{b}]"
                    shape = [b - a] + rec["shape"][1:]
                    if piece not in out.graph["tensors"]:  # a weight several operators read is sliced once
                        add_tensor(out, piece, shape, kind="weight", dtype=rec["dtype"],
                                   nbytes=rec["nbytes"] // rec["shape"][0] * (b - a))
                    inputs.append(piece)
                else:
                    ensure(name)
                    inputs.append(name)
            shape = list(out_shape)
            shape[feature_dim] = b - a
            piece_out = f"{result}.tile{t}"
            add_operator(out, f"{node}.tile{t}", data["op"], inputs, {piece_out: shape}, target=data["target"],
                         macs=data["macs"] * (b - a) // features, elements=data["elements"] * (b - a) // features,
                         gemm=_tile_gemm(data.get("gemm", []), features, b - a))
            out.graph["tensors"][piece_out].update(dtype=old[result]["dtype"], nbytes=per_feature * (b - a))
            tile_outputs.append(piece_out)
        add_operator(out, f"{node}.concat", "concat", tile_outputs, {result: out_shape}, target="concat",
                     elements=math.prod(out_shape))
        out.graph["tensors"][result].update(kind=old[result]["kind"], dtype=old[result]["dtype"],
                                            nbytes=old[result]["nbytes"])
    out.graph["outputs"] = list(graph.graph["outputs"])
    check_graph(out)
    return out, split


def traced_operator(name: str, tiled: Collection[str]) -> str:
    """The operator of the traced graph that operator ``name`` of a tiled graph computes part of: a tile
    ``<op>.tile<t>`` or the concat ``<op>.concat`` of an ``op`` in ``tiled`` (the lists ``tile_weights``
    and ``frontend.row_tiling.tile_rows`` return), repeatedly, else ``name`` itself.

    >>> traced_operator("fc.tile2", ["fc"]), traced_operator("fc.concat", ["fc"]), traced_operator("fc.tile2", [])
    ('fc', 'fc', 'fc.tile2')
    >>> traced_operator("fc.tile2.tile0", ["fc", "fc.tile2"])
    'fc'

    """
    while True:  # a row tile (frontend.row_tiling) may itself be split into weight tiles
        base, dot, part = name.rpartition(".")
        if not (dot and base in tiled and (part == "concat" or (part.startswith("tile") and part[4:].isdigit()))):
            return name
        name = base

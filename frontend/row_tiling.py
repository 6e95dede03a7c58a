"""Row tiling: cut chains of operators whose activations do not fit along a dimension they compute
position by position (output rows of convolutions, tokens, query rows, heads, batch), so no tile
holds the whole tensor.

A compiler for a scratchpad does not materialise a 4,096 x 4,096 attention score matrix per
head: it computes attention per block of query rows, the MLP of a transformer per block of
tokens, and a CNN's early layers per band of output rows. ``tile_rows`` does that on a
``DataflowGraph`` before scheduling, in the same form as weight tiling (``frontend.tiling``):
tiles are graph operators. Tiles as operators (not as sub-steps of one schedule step) let the
scheduler, the allocator and the load-timing planner treat each tile's buffers as any other: a
tile's slice is allocated, double-buffered against the next tile's load and freed, with no
second mechanism to keep consistent.

**Where an operator can be cut.** ``cut_inputs(graph, op, d)`` says, for a cut of ``op``'s
output along dimension ``d``, which dimension of each input is cut the same way, or that the
input is read whole (``None``):

* elementwise kinds (``ELEMENTWISE``): every input by NumPy broadcasting; an input of size 1
  along the aligned dimension is read whole;
* ``softmax`` and ``log_softmax``: any dimension but the recorded ``axis`` (the graph records
  it, ``frontend.cost.axis``; without it the operator is never cut), so each tile normalises
  whole rows and needs no running maximum or sum;
* ``mean`` and ``sum`` that keep their rank: any dimension they do not reduce;
* ``layer_norm`` and ``rms_norm``: a dimension before the normalised ones (the weights' rank);
  weights whole; ``batch_norm``: any dimension, its statistics cut with the channels;
* ``linear``: a dimension before the features (tokens); weights whole;
* convolutions: the batch, or a spatial dimension when the graph records the ``window``
  (``frontend.cost.window``: kernel, stride, padding, dilation); pooling: the batch, the
  channels, or a spatial dimension with its window. Output positions ``[a, b)`` read input
  positions ``[a * stride - padding, (b - 1) * stride - padding + span)``, clipped: the halo;
* ``matmul`` and ``bmm``: the rows of the left operand (the right read whole: attention's
  query blocks read all of K and V), the columns of the right one, or a batch dimension (heads);
* ``ROW_WISE`` kinds (MViT's relative-position term): any dimension but the last, each
  activation input cut alike, weights whole;
* ``scaled_dot_product_attention`` (a fused kernel: its scores never leave it): the query rows
  (``Q`` cut, ``K`` and ``V`` whole), unless causal, or batch and heads (all three cut); not
  with a mask input. Its working memory is then one query block's ``Q`` and output with all of
  ``K`` and ``V``.

Everything else (transposes, views, concatenations, adaptive pooling, ...) is never cut: a
chain ends there, and an operator whose MACs have no GEMM shape to divide is never cut.

**Regions.** An operator whose tensors (inputs and outputs) exceed ``seed_bytes`` seeds a
region (``accelsim`` passes the scratchpad: only an operator that cannot run whole). The region
grows backwards to the producer of a cut input when all the tensor's readers are in the
region, and forwards to a reader that cuts the tensor along the same dimension, through
operators worth cutting: their slices exceed ``max_bytes`` (smaller operators stay whole) and
what each tile would read whole (weights, K and V) does not (an operator with larger weights is
weight tiling's). Regions are disjoint, and leave whole every operator that reads or writes a
tensor the host operators' records name (``frontend.host``: its results, what it reads and
waits for), so those names and the order's host waits stay as they are. Each dimension the
seed can cut is tried; the region kept is the one whose tiles hold least at once, if it needs
at least two tiles, holds less than its largest operator did whole, and has some tensor that
never exists whole (an output read only by tiles, or an input read only in slices): tiling that
streams nothing only adds copies.

**Tiles.** The seed is cut into ``k`` near-equal ranges, ``k`` the smallest count that leaves
every region operator's slices at most ``max_bytes`` (at most the smallest extent); every other
operator's bounds are mapped from the neighbour it joined through, so its tile ``t`` lines up
with the neighbour's tile ``t`` (a window's stride and padding mapped; a range may come out
empty, and that tile is not made). Tile ``t`` of ``op`` is ``<op>.tile<t>``, writing
``<output>.tile<t>``; it reads the tiles of a region input that its range (with the halo)
overlaps, so a convolution's tile reads its neighbours' edges. An output read outside the
region, read whole, or a graph output is joined by ``<op>.concat`` (kind ``concat``, a real
copy), so readers outside are unchanged. An input cut by the region but written outside it is
read whole by every tile; an input or weight read only by the region is read in slices
``name[a:b]`` (``name[:, a:b]`` for dimension 1, ...), which partition it, but for the halo
rows of windows, read twice as a real compiler reads them. A tile carries its share of the
operator's ``elements`` and MACs, and its GEMM with the cut dimension's factor scaled (``t``
for rows, tokens and output positions, ``n`` for columns, ``count`` for batch and heads).
Tiles run tile-major (``_in_order``: tile 0 of every region operator, then tile 1, ..., as
the data flow allows, so a tile whose halo needs its neighbour's rows waits for them), so at
any time about one tile's intermediates are live, never the whole tensor.
"""

from __future__ import annotations

import copy
import heapq
import math
from typing import Any

import networkx as nx

from frontend.cost import AXIS_KINDS, WINDOW_KINDS
from frontend.graph import add_operator, add_tensor, check_graph, new_graph
from frontend.host import host_operators

#: kinds that compute each output element from the same position of their (broadcast) inputs
ELEMENTWISE = frozenset({
    "add", "sub", "mul", "div", "neg", "pow", "rsqrt", "sqrt", "exp", "log", "abs", "reciprocal",
    "relu", "relu6", "gelu", "silu", "sigmoid", "tanh", "hardswish", "hardsigmoid", "hardtanh",
    "leaky_relu", "elu", "selu", "celu", "mish", "softplus", "erf", "dropout", "identity", "cast",
    "copy", "clamp", "where", "masked_fill", "square",
})
#: kinds that reduce some dimensions and keep the others independent
REDUCING = frozenset({"mean", "sum"})
#: kinds that normalise their trailing dimensions (as many as their weights have)
NORMALISING = frozenset({"layer_norm", "rms_norm"})
MATMUL = frozenset({"matmul", "bmm"})
#: a fused attention (``F.scaled_dot_product_attention``): cut by query rows or by batch and heads
SDPA = "scaled_dot_product_attention"
#: kinds whose every output row (all dimensions but the last) depends only on the same row of
#: each activation input, weights read whole: MViT's relative-position term (torchvision's
#: ``_add_rel_pos`` adds to each query row's scores terms computed from that query row alone)
ROW_WISE = frozenset({"add_rel_pos"})


class _Uncut(Exception):
    """An operator cannot be cut along the dimension asked."""


def _aligned(shape: list[int], out: list[int], d: int) -> int | None:
    """The input dimension broadcasting aligns with output dimension ``d`` (``None``: read whole)."""
    a = d - (len(out) - len(shape))
    if len(shape) > len(out):
        raise _Uncut
    if a < 0 or shape[a] == 1:
        return None
    if shape[a] != out[d]:
        raise _Uncut
    return a


def _matmul_dims(shapes: list[list[int]], out: list[int], d: int) -> list[int | None]:
    if len(shapes) != 2 or min(len(s) for s in shapes) < 2 or len(out) < 2:
        raise _Uncut
    left, right = shapes
    rank = len(out)
    if d == rank - 2:
        return [len(left) - 2, None]
    if d == rank - 1:
        return [None, len(right) - 1]
    return [_aligned(left[:-2], out[:-2], d), _aligned(right[:-2], out[:-2], d)]


def _dims(graph: nx.DiGraph, op: str, d: int) -> list[int | None]:
    data = graph.nodes[op]
    tensors = graph.graph["tensors"]
    out = tensors[data["out_tensors"][0]]["shape"]
    kind = data["op"]
    ins = data["in_tensors"]
    shapes = [tensors[t]["shape"] for t in ins]
    weights = [tensors[t]["kind"] == "weight" for t in ins]
    if kind in ELEMENTWISE or (kind in AXIS_KINDS and data.get("axis") is not None and data["axis"] != d):
        return [_aligned(s, out, d) for s in shapes]
    if kind in REDUCING:
        if any(len(s) != len(out) or s[d] != out[d] for s in shapes):
            raise _Uncut
        return [d for _ in shapes]
    if kind in NORMALISING or kind == "linear":
        activations = [s for s, w in zip(shapes, weights, strict=True) if not w]
        normalised = 1 if kind == "linear" else max((len(s) for s, w in zip(shapes, weights, strict=True) if w),
                                                    default=0)
        if (len(activations) != 1 or not normalised or d >= len(out) - normalised
                or len(activations[0]) != len(out) or activations[0][d] != out[d]):
            raise _Uncut
        return [None if w else d for w in weights]
    if kind in MATMUL:
        return _matmul_dims(shapes, out, d)
    if kind == "batch_norm":  # per channel: the statistics are cut with the channels
        if sum(not w for w in weights) != 1 or shapes[0] != out or weights[0]:
            raise _Uncut
        return [d if not w else (0 if d == 1 else None) for w in weights]
    if kind in WINDOW_KINDS:
        conv = kind.startswith("conv")
        if (sum(not w for w in weights) != 1 or weights[0] or len(shapes[0]) != len(out)
                or (d == 1 and conv) or (d >= 2 and data.get("window") is None)):
            raise _Uncut
        return [None if w else d for w in weights]
    if kind in ROW_WISE:
        if d >= len(out) - 1 or any(not w and (len(s) != len(out) or s[d] != out[d])
                                    for s, w in zip(shapes, weights, strict=True)):
            raise _Uncut
        return [None if w else d for w in weights]
    if kind == SDPA:
        return _sdpa_dims(shapes, out, d, len(data.get("gemm") or ()))
    raise _Uncut


def _sdpa_dims(shapes: list[list[int]], out: list[int], d: int, entries: int) -> list[int | None]:
    """A fused attention's inputs cut with its output: by query rows (``Q`` cut, ``K`` and ``V``
    read whole: query blocks, each holding its rows' scores only inside the kernel), or by batch
    and heads (all three cut). Not along the output's features, not with a mask input, and not by
    query rows when causal (``entries`` > 2: a causal kernel's blocks see different keys)."""
    if len(shapes) != 3 or any(len(s) != len(out) for s in shapes) or d == len(out) - 1:
        raise _Uncut
    if d == len(out) - 2:
        if entries != 2 or shapes[0][d] != out[d]:
            raise _Uncut
        return [d, None, None]
    if any(s[d] != out[d] for s in shapes):
        raise _Uncut  # broadcast K or V (grouped heads): not cut alike
    return [d, d, d]


def cut_inputs(graph: nx.DiGraph, op: str, d: int) -> list[int | None] | None:
    """For a cut of ``op``'s output along dimension ``d``: the dimension of each input (in
    ``in_tensors`` order) cut alike, ``None`` for an input read whole; ``None`` when ``op`` cannot
    be cut there (rules in the module docstring; its GEMM must split too).

    >>> g = new_graph("g")
    >>> add_tensor(g, "q", (1, 4, 8, 2), kind="input"); add_tensor(g, "k", (1, 4, 2, 8), kind="input")
    >>> add_operator(g, "scores", "matmul", ["q", "k"], {"s": (1, 4, 8, 8)}, macs=512, gemm=[(8, 2, 8, 4)])
    >>> cut_inputs(g, "scores", 2), cut_inputs(g, "scores", 1), cut_inputs(g, "scores", 0)
    ([2, None], [1, 1], None)
    """
    data = graph.nodes[op]
    tensors = graph.graph["tensors"]
    if len(data["out_tensors"]) != 1:
        return None
    out = tensors[data["out_tensors"][0]]["shape"]
    if not 0 <= d < len(out) or out[d] < 2:
        return None
    try:
        dims = _dims(graph, op, d)
    except _Uncut:
        return None
    if data.get("gemm") and _tile_gemm(graph, op, d, out[d], 1) is None:
        return None
    if not data.get("gemm") and data["macs"]:
        return None  # MACs without a GEMM shape: no way to say which share a tile computes
    return dims


def _tile_gemm(graph: nx.DiGraph, op: str, d: int, extent: int, width: int) -> list[list[int]] | None:
    """The GEMM of a tile ``width`` of ``extent`` wide along output dimension ``d`` (``None``: it does not split)."""
    data = graph.nodes[op]
    rank = len(graph.graph["tensors"][data["out_tensors"][0]]["shape"])
    if data["op"] in MATMUL:
        factor = 0 if d == rank - 2 else 2 if d == rank - 1 else 3
    elif data["op"] == SDPA:
        factor = 0 if d == rank - 2 else 3  # query rows in both products, or their count (batch, heads)
    elif data["op"] == "linear" or data["op"].startswith("conv"):
        factor = 0  # the streamed rows: tokens, or batch x output positions
    else:
        return None
    gemm = []
    for entry in data["gemm"]:
        entry = list(entry)
        if entry[factor] % extent:
            return None
        entry[factor] = entry[factor] // extent * width
        gemm.append(entry)
    return gemm


def _slice_bytes(rec: dict[str, Any], dim: int, width: int) -> int:
    """Bytes of a slice ``width`` wide along ``dim`` of the tensor ``rec`` describes (what the tiled
    graph records, and what the plan's working sets count)."""
    return rec["nbytes"] // rec["shape"][dim] * width


def _cut_bytes(graph: nx.DiGraph, op: str, dims: list[int | None]) -> int:
    """Bytes of the tensors a cut of ``op`` slices: its output and its cut inputs."""
    tensors = graph.graph["tensors"]
    data = graph.nodes[op]
    cut = [t for t, dim in zip(data["in_tensors"], dims, strict=True) if dim is not None]
    return sum(tensors[t]["nbytes"] for t in [*cut, *data["out_tensors"]])


def _worth_cutting(graph: nx.DiGraph, op: str, dims: list[int | None], max_bytes: int) -> bool:
    """Whether ``op`` joins a region: what it would cut exceeds ``max_bytes`` (smaller operators stay
    whole), and what every tile would read whole does not (an operator whose weights are that large
    is weight tiling's: its row tiles would each read them all)."""
    tensors = graph.graph["tensors"]
    whole = sum(tensors[t]["nbytes"] for t, dim in zip(graph.nodes[op]["in_tensors"], dims, strict=True)
                if dim is None)
    return _cut_bytes(graph, op, dims) > max_bytes and whole <= max_bytes


def _window_map(graph: nx.DiGraph, op: str, d: int) -> tuple[int, int, int]:
    """``(stride, padding, span)`` of ``op`` along output dimension ``d``: output position ``i`` reads
    input positions ``[i * stride - padding, i * stride - padding + span)``; ``(1, 0, 1)`` for an
    operator that reads the same position (everything but a window along a spatial dimension)."""
    data = graph.nodes[op]
    window = data.get("window")
    if data["op"] not in WINDOW_KINDS or d < 2 or window is None:
        return 1, 0, 1
    i = d - 2
    return window["stride"][i], window["padding"][i], window["dilation"][i] * (window["kernel"][i] - 1) + 1


def _input_range(graph: nx.DiGraph, op: str, d: int, size: int, a: int, b: int) -> tuple[int, int]:
    """The positions ``[lo, hi)`` of an input of ``size`` along its cut dimension that output positions
    ``[a, b)`` of ``op`` (cut along ``d``) read: the same, or a window's with its halo."""
    stride, padding, span = _window_map(graph, op, d)
    return max(0, a * stride - padding), min(size, (b - 1) * stride - padding + span)


def _shape(graph: nx.DiGraph, op: str) -> list[int]:
    return list(graph.graph["tensors"][graph.nodes[op]["out_tensors"][0]]["shape"])


#: how an operator joined a region: ``(how, neighbour, tensor)``, ``how`` "back" (it writes
#: ``tensor``, which ``neighbour`` reads) or "forward" (it reads ``tensor``, which ``neighbour`` writes)
Link = tuple[str, str, str]


def _grow(graph: nx.DiGraph, seed: str, d: int, taken: set[str],
          max_bytes: int) -> tuple[dict[str, int], dict[str, Link]]:
    """The region seeded at ``seed`` cut along ``d``: operator -> the output dimension it cuts,
    in the order they joined, and how each but the seed joined."""
    tensors = graph.graph["tensors"]
    region = {seed: d}
    links: dict[str, Link] = {}

    def admits(op: str, dim: int) -> list[int | None] | None:
        if op in taken or op in region or len(graph.nodes[op]["out_tensors"]) != 1:
            return None
        dims = cut_inputs(graph, op, dim)
        return dims if dims is not None and _worth_cutting(graph, op, dims, max_bytes) else None

    changed = True
    while changed:
        changed = False
        for op, dim in list(region.items()):
            data = graph.nodes[op]
            dims = cut_inputs(graph, op, dim) or []
            for t, td in zip(data["in_tensors"], dims, strict=True):
                producer = tensors[t]["producer"]
                if (td is not None and producer is not None and producer not in region
                        and all(c in region for c in tensors[t]["consumers"]) and admits(producer, td) is not None):
                    region[producer] = td
                    links[producer] = ("back", op, t)
                    changed = True
            y = data["out_tensors"][0]
            for reader in tensors[y]["consumers"]:
                if reader in region:
                    continue
                for rd in range(len(_shape(graph, reader))):
                    rdims = admits(reader, rd)
                    if rdims is not None and rdims[graph.nodes[reader]["in_tensors"].index(y)] == dim:
                        region[reader] = rd
                        links[reader] = ("forward", op, y)
                        changed = True
                        break
    return region, links


def _bounds(graph: nx.DiGraph, region: dict[str, int], links: dict[str, Link], k: int) -> dict[str, list[int]]:
    """Every region operator's tile bounds along its cut dimension (``k + 1`` non-decreasing positions
    from 0 to the extent): the seed's near-equal, each other's mapped from the neighbour it joined
    through, so that its tile ``t`` lines up with the neighbour's tile ``t`` (halo aside)."""
    tensors = graph.graph["tensors"]
    bounds: dict[str, list[int]] = {}
    for op, d in region.items():
        extent = _shape(graph, op)[d]
        if op not in links:
            bounds[op] = [extent * p // k for p in range(k + 1)]
            continue
        how, neighbour, t = links[op]
        if how == "back":  # op writes t, which the neighbour's tile u reads from its window's start
            size = tensors[t]["shape"][d]
            inner = [_input_range(graph, neighbour, region[neighbour], size, a, a + 1)[0]
                     for a in bounds[neighbour][1:-1]]
        else:  # op reads t: its tile u starts where its window first reaches the neighbour's tile u
            stride, padding, _ = _window_map(graph, op, d)
            inner = [-(-(a + padding) // stride) for a in bounds[neighbour][1:-1]]
        bounds[op] = [0, *(min(max(0, x), extent) for x in inner), extent]
        for p in range(1, k + 1):
            bounds[op][p] = max(bounds[op][p], bounds[op][p - 1])
    return bounds


def _dram_slices(graph: nx.DiGraph, region: dict[str, int], name: str) -> int | None:
    """The dimension an input or weight is sliced along when only the region reads it, all its
    readers along one dimension; ``None`` when it is read whole."""
    rec = graph.graph["tensors"][name]
    if rec["producer"] is not None or not all(c in region for c in rec["consumers"]):
        return None
    dims = set()
    for c in rec["consumers"]:
        data = graph.nodes[c]
        dims.add((cut_inputs(graph, c, region[c]) or [])[data["in_tensors"].index(name)])
    return dims.pop() if len(dims) == 1 else None


def _needs_concat(graph: nx.DiGraph, region: dict[str, int], op: str) -> bool:
    """Whether ``op``'s whole output must exist: a graph output, or read outside the region or whole."""
    y = graph.nodes[op]["out_tensors"][0]
    if y in graph.graph["outputs"]:
        return True
    return any(c not in region or _needs_concat_for(graph, region, op, c)
               for c in graph.graph["tensors"][y]["consumers"])


def _plan(graph: nx.DiGraph, region: dict[str, int], links: dict[str, Link], k: int) -> list[dict[str, Any]]:
    """The tiles and concats of one region: for each, what it reads and writes."""
    tensors = graph.graph["tensors"]
    bounds = _bounds(graph, region, links, k)
    specs: list[dict[str, Any]] = []
    for op, d in region.items():
        data = graph.nodes[op]
        y = data["out_tensors"][0]
        # how each input is read, the same for every tile: by the tiles of its producer, in slices, or whole
        reads: list[tuple[str, int | None, list[int] | None]] = []
        for name, dim in zip(data["in_tensors"], cut_inputs(graph, op, d) or [], strict=True):
            producer = tensors[name]["producer"]
            if dim is not None and producer in region and region[producer] == dim \
                    and not _needs_concat_for(graph, region, producer, op):
                reads.append((name, dim, bounds[producer]))
            elif dim is not None and _dram_slices(graph, region, name) == dim:
                reads.append((name, dim, None))
            else:
                reads.append((name, None, None))
        pieces = []
        for t in range(k):
            a, b = bounds[op][t], bounds[op][t + 1]
            if a == b:
                continue
            inputs: list[tuple[str, tuple[str, int, int, int] | None]] = []
            for name, dim, src in reads:
                if dim is None:
                    inputs.append((name, None))
                    continue
                lo, hi = _input_range(graph, op, d, tensors[name]["shape"][dim], a, b)
                if src is not None:
                    inputs += [(f"{name}.tile{u}", None) for u in range(k)
                               if src[u] < src[u + 1] and src[u] < hi and lo < src[u + 1]]
                else:
                    inputs.append((f"{name}[{':, ' * dim}{lo}:{hi}]", (name, dim, lo, hi)))
            piece = f"{y}.tile{t}"
            pieces.append(piece)
            specs.append({"name": f"{op}.tile{t}", "tile": t, "whole": False, "data": data, "op": op,
                          "inputs": list(dict.fromkeys(inputs)), "output": piece, "dim": d, "range": (a, b)})
        if _needs_concat(graph, region, op):
            specs.append({"name": f"{op}.concat", "tile": k, "whole": False, "concat": pieces, "output": y,
                          "data": data, "op": op})
    return specs


def _needs_concat_for(graph: nx.DiGraph, region: dict[str, int], producer: str, reader: str) -> bool:
    """Whether ``reader`` (in the region) reads ``producer``'s output whole rather than by tiles."""
    y = graph.nodes[producer]["out_tensors"][0]
    dims = cut_inputs(graph, reader, region[reader]) or []
    return dims[graph.nodes[reader]["in_tensors"].index(y)] != region[producer]


def _spec_bytes(graph: nx.DiGraph, spec: dict[str, Any], sizes: dict[str, int]) -> int:
    """The bytes a tile or concat of a plan holds while it runs (its inputs and output)."""
    tensors = graph.graph["tensors"]
    if "concat" in spec:
        return 2 * tensors[spec["output"]]["nbytes"]
    total = sizes[spec["output"]]
    for name, piece in spec["inputs"]:
        if piece is not None:
            base, dim, lo, hi = piece
            total += _slice_bytes(tensors[base], dim, hi - lo)
        else:
            total += sizes.get(name, tensors[name]["nbytes"] if name in tensors else 0)
    return total


def _plan_bytes(graph: nx.DiGraph, specs: list[dict[str, Any]]) -> int:
    """The largest working set among a plan's tiles and concats."""
    tensors = graph.graph["tensors"]
    sizes = {}
    for spec in specs:
        if "concat" not in spec:
            a, b = spec["range"]
            sizes[spec["output"]] = _slice_bytes(tensors[spec["data"]["out_tensors"][0]], spec["dim"], b - a)
    return max(_spec_bytes(graph, spec, sizes) for spec in specs)


def _candidate(graph: nx.DiGraph, seed: str, d: int, taken: set[str],
               max_bytes: int) -> tuple[int, dict[str, int], list[dict[str, Any]]] | None:
    """The region seeded at ``seed`` along ``d`` with its plan and largest working set, if it is worth
    cutting: at least two tiles, a working set below the largest operator's whole, and some tensor
    that never exists whole (an output read only by tiles, or an input read only in slices)."""
    if not _worth_cutting(graph, seed, cut_inputs(graph, seed, d) or [], max_bytes):
        return None
    region, links = _grow(graph, seed, d, taken, max_bytes)
    tensors = graph.graph["tensors"]
    shares = [_cut_bytes(graph, op, cut_inputs(graph, op, od) or []) for op, od in region.items()]
    k = min(min(_shape(graph, op)[od] for op, od in region.items()),
            max(math.ceil(share / max_bytes) for share in shares))
    if k < 2:
        return None
    streams = any(not _needs_concat(graph, region, op) for op in region) or any(
        _dram_slices(graph, region, t) is not None for op in region for t in graph.nodes[op]["in_tensors"])
    if not streams:
        return None
    specs = _plan(graph, region, links, k)
    before = max(sum(tensors[t]["nbytes"] for t in [*graph.nodes[o]["in_tensors"], *graph.nodes[o]["out_tensors"]])
                 for o in region)
    after = _plan_bytes(graph, specs)
    return (after, region, specs) if after < before else None


def regions(graph: nx.DiGraph, max_bytes: int,
            seed_bytes: int | None = None) -> list[tuple[dict[str, int], list[dict[str, Any]]]]:
    """The regions ``tile_rows`` cuts, in program order of their seeds, each with its plan (its tiles
    and concats). A seed's dimension is the one whose region holds the least at once (ties: the
    longest that is not the last, then the first)."""
    tensors = graph.graph["tensors"]
    # operators next to the host (frontend.host) stay whole: the host's records and the order's
    # host waits name those tensors, which a cut would rename
    records = host_operators(graph)
    crossing = {entry["tensor"] for record in records for entry in [*record["inputs"], *record["outputs"]]}
    crossing |= {t for record in records for t in record.get("waits_for", ())}
    taken = {op for op, data in graph.nodes(data=True)
             if crossing.intersection([*data["in_tensors"], *data["out_tensors"]])}
    found = []
    for op in graph.nodes:
        data = graph.nodes[op]
        if op in taken or len(data["out_tensors"]) != 1:
            continue
        if sum(tensors[t]["nbytes"] for t in [*data["in_tensors"], *data["out_tensors"]]) <= (seed_bytes or max_bytes):
            continue
        out = _shape(graph, op)
        best: tuple[tuple[int, bool, int, int], dict[str, int], list[dict[str, Any]]] | None = None
        for d in range(len(out)):
            if cut_inputs(graph, op, d) is None:
                continue
            candidate = _candidate(graph, op, d, taken, max_bytes)
            if candidate is None:
                continue
            key = (candidate[0], d == len(out) - 1 and len(out) > 1, -out[d], d)
            if best is None or key < best[0]:
                best = (key, candidate[1], candidate[2])
        if best is not None:
            taken.update(best[1])
            found.append((best[1], best[2]))
    return found


def tile_rows(graph: nx.DiGraph, max_bytes: int, seed_bytes: int | None = None) -> tuple[nx.DiGraph, list[str]]:
    """A copy of ``graph`` with every region (module docstring) cut into row tiles.

    Returns the new graph and the names of the operators that were cut. ``graph`` itself is not
    modified; a graph with nothing to cut comes back as an equal copy.

    >>> g = new_graph("attn", dtype="int8")
    >>> add_tensor(g, "q", (4, 8, 2), kind="input"); add_tensor(g, "k", (4, 2, 8), kind="input")
    >>> add_tensor(g, "v", (4, 8, 2), kind="input")
    >>> add_operator(g, "qk", "matmul", ["q", "k"], {"s": (4, 8, 8)}, macs=512, gemm=[(8, 2, 8, 4)])
    >>> add_operator(g, "softmax", "softmax", ["s"], {"p": (4, 8, 8)}); g.nodes["softmax"]["axis"] = 2
    >>> add_operator(g, "pv", "matmul", ["p", "v"], {"o": (4, 8, 2)}, macs=512, gemm=[(8, 8, 2, 4)])
    >>> g.graph["outputs"] = ["o"]; g.graph["tensors"]["o"]["kind"] = "output"
    >>> tiled, cut = tile_rows(g, max_bytes=300)
    >>> cut, list(tiled.nodes)[:3], list(tiled.nodes)[-1]
    (['qk', 'softmax', 'pv'], ['qk.tile0', 'softmax.tile0', 'pv.tile0'], 'pv.concat')
    >>> tiled.graph["tensors"]["s.tile0"]["shape"], tiled.nodes["qk.tile0"]["gemm"]
    ([4, 4, 8], [[4, 2, 8, 4]])
    """
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")
    found = regions(graph, max_bytes, seed_bytes)
    cut_ops = [op for op in graph.nodes if any(op in region for region, _ in found)]
    out = new_graph(graph.graph["name"], graph.graph["dtype"])
    for key, value in graph.graph.items():
        if key not in ("tensors", "inputs", "outputs"):
            out.graph[key] = copy.deepcopy(value)
    specs = _specs(graph, found)
    old = graph.graph["tensors"]
    for spec in _in_order(specs):
        _emit(out, graph, spec)
    new = out.graph["tensors"]
    inputs = []
    for name in graph.graph["inputs"]:  # an input read only by a region is now its slices, in its place
        pieces = [t for t, rec in new.items() if rec["kind"] == "input" and t.startswith(name + "[")]
        if name in new or not pieces:
            if name not in new:  # read by no operator
                add_tensor(out, name, old[name]["shape"], kind="input", dtype=old[name]["dtype"],
                           nbytes=old[name]["nbytes"])
            pieces = [name]
        inputs += pieces
    out.graph["inputs"] = inputs
    out.graph["outputs"] = list(graph.graph["outputs"])
    out.graph["aliases"] = {a: t for a, t in graph.graph["aliases"].items() if t in new}
    check_graph(out)
    return out, cut_ops


def _specs(graph: nx.DiGraph, found: list[tuple[dict[str, int], list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """Every operator of the new graph, with the key that orders it (``_in_order``): an operator
    left whole at its place, a region's tiles tile-major from its first operator's place."""
    position = {op: i for i, op in enumerate(graph.nodes)}
    cut = {op for region, _ in found for op in region}
    specs: list[dict[str, Any]] = [{"name": op, "key": (position[op], 0, 0), "whole": True, "data": data}
                                   for op, data in graph.nodes(data=True) if op not in cut]
    for region, plan in found:
        first = min(position[op] for op in region)
        for spec in plan:
            specs.append({**spec, "key": (first, spec["tile"] + 1, position[spec["op"]])})
    return specs


def _in_order(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``specs`` in a topological order that follows their keys wherever the data flow allows."""
    writer = {}
    for spec in specs:
        for t in _writes(spec):
            writer[t] = spec["name"]
    by_name = {spec["name"]: spec for spec in specs}
    waits = {spec["name"]: {writer[t] for t in _reads(spec) if t in writer} for spec in specs}
    readers: dict[str, list[str]] = {}
    for name, before in waits.items():
        for w in before:
            readers.setdefault(w, []).append(name)
    ready = [(spec["key"], spec["name"]) for spec in specs if not waits[spec["name"]]]
    heapq.heapify(ready)
    ordered = []
    while ready:
        _, name = heapq.heappop(ready)
        ordered.append(by_name[name])
        for r in readers.get(name, []):
            waits[r].discard(name)
            if not waits[r]:
                heapq.heappush(ready, (by_name[r]["key"], r))
    return ordered


def _writes(spec: dict[str, Any]) -> list[str]:
    if spec["whole"]:
        return list(spec["data"]["out_tensors"])
    return [spec["output"]]


def _reads(spec: dict[str, Any]) -> list[str]:
    if spec["whole"]:
        return list(spec["data"]["in_tensors"])
    if "concat" in spec:
        return list(spec["concat"])
    return [name for name, _ in spec["inputs"]]


def _emit(out: nx.DiGraph, graph: nx.DiGraph, spec: dict[str, Any]) -> None:
    """Add the operator ``spec`` describes to ``out`` (and the input and weight tensors it reads first)."""
    old = graph.graph["tensors"]
    new = out.graph["tensors"]
    data = spec["data"]

    def ensure(name: str, piece: tuple[str, int, int, int] | None = None) -> None:
        if name in new:
            return
        if piece is None:
            rec = old[name]
            if rec["producer"] is None:
                add_tensor(out, name, rec["shape"], kind=rec["kind"], dtype=rec["dtype"], nbytes=rec["nbytes"])
            return
        base, dim, a, b = piece
        rec = old[base]
        shape = list(rec["shape"])
        shape[dim] = b - a
        add_tensor(out, name, shape, kind=rec["kind"], dtype=rec["dtype"], nbytes=_slice_bytes(rec, dim, b - a))

    if spec["whole"]:
        for t in data["in_tensors"]:
            ensure(t)
        add_operator(out, spec["name"], data["op"], data["in_tensors"],
                     {t: old[t]["shape"] for t in data["out_tensors"]}, target=data["target"],
                     macs=data["macs"], elements=data["elements"], gemm=data.get("gemm"))
        for t in data["out_tensors"]:
            new[t].update(kind=old[t]["kind"], dtype=old[t]["dtype"], nbytes=old[t]["nbytes"])
        for key, value in data.items():
            out.nodes[spec["name"]].setdefault(key, copy.deepcopy(value))
        return
    y = data["out_tensors"][0]
    if "concat" in spec:
        add_operator(out, spec["name"], "concat", spec["concat"], {y: old[y]["shape"]}, target="concat",
                     elements=math.prod(old[y]["shape"]))
        new[y].update(kind=old[y]["kind"], dtype=old[y]["dtype"], nbytes=old[y]["nbytes"])
        return
    for name, piece in spec["inputs"]:
        ensure(name, piece)
    a, b = spec["range"]
    d = spec["dim"]
    extent = old[y]["shape"][d]
    shape = list(old[y]["shape"])
    shape[d] = b - a
    gemm = _tile_gemm(graph, spec["op"], d, extent, b - a) if data.get("gemm") else []
    macs = sum(t * k * n * c for t, k, n, c in gemm) if gemm else 0
    elements = data["elements"] * (b - a) // extent
    add_operator(out, spec["name"], data["op"], [name for name, _ in spec["inputs"]], {spec["output"]: shape},
                 target=data["target"], macs=macs, elements=elements, gemm=gemm)
    new[spec["output"]].update(dtype=old[y]["dtype"], nbytes=_slice_bytes(old[y], d, b - a))
    if "axis" in data:  # a window is not copied: a tile's edges read less padding than the whole
        out.nodes[spec["name"]]["axis"] = data["axis"]

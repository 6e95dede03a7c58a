"""Row tiling cuts large activation chains (attention by query blocks, token-wise layers) into tiles."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontend.graph import add_operator, add_tensor, new_graph
from frontend.row_tiling import cut_inputs, regions, tile_rows
from frontend.tiling import traced_operator
from scheduler import min_capacity


def attention(heads=4, rows=64, cols=64, dim=8, axis=3, mask=True):
    """scores = q @ k^T (+ mask), softmax along ``axis``, @ v; q, k, v are graph inputs."""
    g = new_graph("attn", dtype="int8")
    add_tensor(g, "q", (1, heads, rows, dim), kind="input")
    add_tensor(g, "k", (1, heads, dim, cols), kind="input")
    add_tensor(g, "v", (1, heads, cols, dim), kind="input")
    add_operator(g, "qk", "matmul", ["q", "k"], {"s": (1, heads, rows, cols)}, macs=heads * rows * dim * cols,
                 gemm=[(rows, dim, cols, heads)])
    scores = "s"
    if mask:
        add_tensor(g, "mask", (rows, cols), kind="input")
        add_operator(g, "add_mask", "add", ["s", "mask"], {"sm": (1, heads, rows, cols)})
        scores = "sm"
    add_operator(g, "softmax", "softmax", [scores], {"p": (1, heads, rows, cols)})
    if axis is not None:
        g.nodes["softmax"]["axis"] = axis
    add_operator(g, "pv", "matmul", ["p", "v"], {"o": (1, heads, rows, dim)}, macs=heads * rows * cols * dim,
                 gemm=[(rows, cols, dim, heads)])
    g.graph["outputs"] = ["o"]
    g.graph["tensors"]["o"]["kind"] = "output"
    return g


def by_traced(graph, cut, key):
    total = {}
    for op, data in graph.nodes(data=True):
        name = traced_operator(op, cut)
        total[name] = total.get(name, 0) + data[key]
    return total


def dram_bytes(graph):
    return sum(r["nbytes"] for r in graph.graph["tensors"].values() if r["kind"] in ("input", "weight"))


def test_attention_runs_by_query_blocks_and_the_score_matrix_is_never_whole():
    g = attention()
    tiled, cut = tile_rows(g, max_bytes=4608)  # the mask's add cuts 36 KiB: 8 tiles of 8 query rows
    assert cut == ["qk", "add_mask", "softmax", "pv"]
    scores = g.graph["tensors"]["s"]["nbytes"]  # 16 KiB
    assert all(rec["nbytes"] < scores // 2 for name, rec in tiled.graph["tensors"].items() if name != "o")
    assert min_capacity(tiled, None, 1)[0] < min_capacity(g, None, 1)[0] // 3
    # each tile reads all of K and V and its block of query rows and mask rows
    first = tiled.nodes["qk.tile0"]["in_tensors"]
    assert first == ["q[:, :, 0:8]", "k"] and tiled.nodes["add_mask.tile0"]["in_tensors"] == ["s.tile0", "mask[0:8]"]
    assert tiled.graph["inputs"][:2] == ["q[:, :, 0:8]", "q[:, :, 8:16]"] and "mask" not in tiled.graph["tensors"]
    # nothing is computed twice or lost; the slices partition the inputs
    assert by_traced(tiled, cut, "macs") == by_traced(g, [], "macs")
    assert dram_bytes(tiled) == dram_bytes(g)
    assert tiled.graph["outputs"] == ["o"] and tiled.graph["tensors"]["o"]["producer"] == "pv.concat"
    # tile-major: every operator of tile 0 runs before any of tile 1
    order = list(tiled.nodes)
    assert order[:4] == ["qk.tile0", "add_mask.tile0", "softmax.tile0", "pv.tile0"]


def test_softmax_is_never_cut_along_its_axis_nor_without_one():
    assert cut_inputs(attention(), "softmax", 3) is None
    assert cut_inputs(attention(), "softmax", 2) == [2]
    assert cut_inputs(attention(axis=None), "softmax", 2) is None
    tiled, cut = tile_rows(attention(axis=None, mask=False), max_bytes=4096)
    assert "softmax" not in cut
    # normalising over query rows: the softmax is never cut along them, whatever the region
    for region, _ in regions(attention(axis=2, mask=False), 4096):
        assert region.get("softmax", 1) != 2


def test_a_graph_that_fits_comes_back_equal():
    g = attention(rows=8, cols=8)
    tiled, cut = tile_rows(g, max_bytes=1 << 20)
    assert cut == []
    assert list(tiled.nodes) == list(g.nodes)
    assert tiled.graph["tensors"] == g.graph["tensors"]
    assert [tiled.nodes[n] for n in tiled.nodes] == [g.nodes[n] for n in g.nodes]
    with pytest.raises(ValueError, match="max_bytes must be positive"):
        tile_rows(g, 0)


def test_a_region_where_every_tensor_still_exists_whole_is_left_whole():
    # relu of an activation made outside any region, its output the graph's: every tile would read
    # the whole input and a concat would hold the output twice; nothing would stream
    g = new_graph("conv_relu", dtype="int8")
    add_tensor(g, "x", (1, 4, 64, 64), kind="input")
    add_tensor(g, "w", (4, 4, 3, 3), kind="weight")
    add_operator(g, "conv", "conv2d", ["x", "w"], {"y": (1, 4, 64, 64)}, macs=4 * 4 * 9 * 4096,
                 gemm=[(4096, 36, 4, 1)])
    add_operator(g, "relu", "relu", ["y"], {"z": (1, 4, 64, 64)})
    g.graph["outputs"] = ["z"]
    g.graph["tensors"]["z"]["kind"] = "output"
    assert cut_inputs(g, "relu", 2) == [2] and cut_inputs(g, "conv", 2) is None  # no window recorded
    assert tile_rows(g, max_bytes=4096)[1] == []


def conv_chain():
    """conv 3x3 stride 1 -> relu -> conv 3x3 stride 2, windows recorded as the tracer records them."""
    g = new_graph("convs", dtype="int8")
    add_tensor(g, "x", (1, 4, 64, 64), kind="input")
    add_tensor(g, "w1", (4, 4, 3, 3), kind="weight")
    add_tensor(g, "w2", (4, 4, 3, 3), kind="weight")
    add_operator(g, "conv1", "conv2d", ["x", "w1"], {"y": (1, 4, 64, 64)}, macs=4 * 36 * 4096,
                 gemm=[(4096, 36, 4, 1)])
    add_operator(g, "relu", "relu", ["y"], {"z": (1, 4, 64, 64)})
    add_operator(g, "conv2", "conv2d", ["z", "w2"], {"o": (1, 4, 32, 32)}, macs=4 * 36 * 1024,
                 gemm=[(1024, 36, 4, 1)])
    g.nodes["conv1"]["window"] = {"kernel": [3, 3], "stride": [1, 1], "padding": [1, 1], "dilation": [1, 1]}
    g.nodes["conv2"]["window"] = {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1], "dilation": [1, 1]}
    g.graph["outputs"] = ["o"]
    g.graph["tensors"]["o"]["kind"] = "output"
    return g


def test_convolutions_tile_by_output_rows_and_read_their_halo():
    g = conv_chain()
    tiled, cut = tile_rows(g, max_bytes=4096)
    assert cut == ["conv1", "relu", "conv2"]
    tensors = tiled.graph["tensors"]
    # the stride-2 conv's tile t reads the rows its window covers: the relu tiles they fall in
    for op in [n for n in tiled.nodes if n.startswith("conv2.tile")]:
        (out,) = tiled.nodes[op]["out_tensors"]
        rows = tensors[out]["shape"][2]
        read = [t for t in tiled.nodes[op]["in_tensors"] if t.startswith("z.tile")]
        assert sum(tensors[t]["shape"][2] for t in read) >= 2 * rows  # stride 2, plus the halo
    # conv1's tiles read overlapping slices of the input: rows a-1 to b+1
    first = tiled.nodes["conv1.tile0"]["in_tensors"][0]
    last_tile = max(int(n.rpartition("tile")[2]) for n in tiled.nodes if n.startswith("conv1.tile"))
    assert first.startswith("x[:, :, 0:") and tiled.nodes[f"conv1.tile{last_tile}"]["in_tensors"][0].endswith(":64]")
    halo_rows = sum(tensors[t]["shape"][2] for t in tiled.graph["inputs"]) - 64
    assert 0 < halo_rows <= 2 * (last_tile + 1)
    assert by_traced(tiled, cut, "macs") == by_traced(g, [], "macs")
    assert min_capacity(tiled, None, 1)[0] < min_capacity(g, None, 1)[0] // 2
    assert tensors["o"]["producer"] == "conv2.concat"


def test_token_wise_layers_tile_by_tokens_and_read_weights_whole():
    g = new_graph("mlp", dtype="int8")
    add_tensor(g, "x", (1, 256, 64), kind="input")
    add_tensor(g, "w1", (256, 64), kind="weight")
    add_tensor(g, "w2", (64, 256), kind="weight")
    add_operator(g, "up", "linear", ["x", "w1"], {"h": (1, 256, 256)}, macs=256 * 64 * 256, gemm=[(256, 64, 256, 1)])
    add_operator(g, "act", "gelu", ["h"], {"a": (1, 256, 256)})
    add_operator(g, "down", "linear", ["a", "w2"], {"y": (1, 256, 64)}, macs=256 * 256 * 64, gemm=[(256, 256, 64, 1)])
    g.graph["outputs"] = ["y"]
    g.graph["tensors"]["y"]["kind"] = "output"
    tiled, cut = tile_rows(g, max_bytes=32 * 1024)
    assert cut == ["up", "act", "down"]
    k = sum(1 for n in tiled.nodes if n.startswith("up.tile"))
    assert k == 4  # 64 KiB of hidden activations in and out of gelu: 128 KiB over 32 KiB
    assert tiled.nodes["up.tile1"]["in_tensors"] == ["x[:, 64:128]", "w1"]
    assert tiled.nodes["up.tile1"]["gemm"] == [[64, 64, 256, 1]]
    assert by_traced(tiled, cut, "macs") == by_traced(g, [], "macs")
    assert by_traced(tiled, cut, "elements")["act"] == g.nodes["act"]["elements"]


OPS = ("add", "softmax", "matmul", "mean", "transpose", "linear")


@st.composite
def chains(draw):
    """A seeded chain of operators on ``(2, heads, rows, cols)`` tensors, some readers outside."""
    heads, rows, cols = draw(st.sampled_from([1, 2, 3])), draw(st.integers(2, 40)), draw(st.integers(2, 24))
    g = new_graph("chain", dtype="int8")
    add_tensor(g, "x", (2, heads, rows, cols), kind="input")
    prev, shape = "x", [2, heads, rows, cols]
    for i in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(OPS))
        out = f"t{i}"
        if kind == "add":
            other = draw(st.sampled_from([(rows, cols), (1, cols), tuple(shape), (cols,)]))
            add_tensor(g, f"b{i}", other, kind=draw(st.sampled_from(["input", "weight"])))
            add_operator(g, f"op{i}", "add", [prev, f"b{i}"], {out: shape})
        elif kind == "softmax":
            add_operator(g, f"op{i}", "softmax", [prev], {out: shape})
            g.nodes[f"op{i}"]["axis"] = draw(st.integers(0, 3))
        elif kind == "matmul":
            add_tensor(g, f"w{i}", (cols, cols), kind="weight")
            add_operator(g, f"op{i}", "matmul", [prev, f"w{i}"], {out: shape}, macs=2 * heads * rows * cols * cols,
                         gemm=[(rows, cols, cols, 2 * heads)])
        elif kind == "mean":
            add_operator(g, f"op{i}", "mean", [prev], {out: [*shape[:3], 1]})
            add_operator(g, f"op{i}b", "mul", [prev, out], {f"{out}b": shape})
            out = f"{out}b"
        elif kind == "transpose":
            add_operator(g, f"op{i}", "transpose", [prev], {out: shape})
        else:
            add_tensor(g, f"w{i}", (cols, cols), kind="weight")
            add_operator(g, f"op{i}", "linear", [prev, f"w{i}"], {out: shape}, macs=2 * heads * rows * cols * cols,
                         gemm=[(2 * heads * rows, cols, cols, 1)])
        prev = out
    g.graph["outputs"] = [prev]
    g.graph["tensors"][prev]["kind"] = "output"
    return g, draw(st.integers(16, 4096))


@settings(max_examples=150, deadline=None)
@given(chains())
def test_row_tiling_keeps_the_work_the_data_and_never_raises_the_largest_operator(case):
    g, max_bytes = case
    tiled, cut = tile_rows(g, max_bytes)  # check_graph runs inside
    assert by_traced(tiled, cut, "macs") == by_traced(g, [], "macs")
    work = by_traced(tiled, cut, "elements")
    for op in g.nodes:
        # a tile's elements are its share of the operator's (a concat adds the copy it makes)
        assert work[op] >= g.nodes[op]["elements"]
    assert dram_bytes(tiled) == dram_bytes(g)  # no windows here: slices partition the inputs
    assert tiled.graph["outputs"] == g.graph["outputs"]
    assert all(traced_operator(op, cut) in g for op in tiled.nodes)
    assert min_capacity(tiled, None, 1)[0] <= min_capacity(g, None, 1)[0]
    if cut:
        assert len(tiled) > len(g)
    for region, plan in regions(g, max_bytes):
        for op, d in region.items():
            tiles = [spec for spec in plan if spec["op"] == op and "concat" not in spec]
            assert 2 <= len(tiles) <= g.graph["tensors"][g.nodes[op]["out_tensors"][0]]["shape"][d]


def test_operators_next_to_the_host_stay_whole():
    g = attention()
    # a host operator reads the masked scores: the tensor keeps its name, so its writer and readers stay whole
    g.graph["host_ops"] = [{"name": "probe", "kind": "probe", "target": "probe", "after": "add_mask",
                            "inputs": [{"tensor": "sm", "side": "accelerator", "bytes": 16384}],
                            "outputs": [], "waits_for": ["sm"]}]
    tiled, cut = tile_rows(g, max_bytes=4608)
    assert "add_mask" not in cut and "softmax" not in cut
    assert "sm" in tiled.graph["tensors"] and tiled.graph["host_ops"] == g.graph["host_ops"]

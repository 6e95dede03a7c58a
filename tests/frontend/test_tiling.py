"""Weight tiling splits oversized layers into output-feature tiles and keeps everything else."""

import pytest

from frontend.graph import add_operator, add_tensor, check_graph, new_graph
from frontend.tiling import tile_weights
from scheduler import min_capacity
from scheduler.baseline import schedule


def fc_graph(in_features=64, out_features=48, conv_groups=None, gemm=True):
    g = new_graph("fc", dtype="int8")
    add_tensor(g, "x", (1, in_features), kind="input")
    add_tensor(g, "w", (out_features, in_features), kind="weight")
    add_tensor(g, "b", (out_features,), kind="weight")
    add_operator(g, "fc", "linear", ["x", "w", "b"], {"y": (1, out_features)}, macs=in_features * out_features,
                 gemm=[(1, in_features, out_features, 1)] if gemm else None)
    add_operator(g, "act", "relu", ["y"], {"z": (1, out_features)})
    g.graph["outputs"] = ["z"]
    g.graph["tensors"]["z"]["kind"] = "output"
    return g


def conv_graph(groups):
    g = new_graph("conv", dtype="int8")
    add_tensor(g, "x", (1, 8, 4, 4), kind="input")
    add_tensor(g, "w", (16, 8 // groups, 3, 3), kind="weight")
    add_operator(g, "conv", "conv2d", ["x", "w"], {"y": (1, 16, 4, 4)}, macs=16 * 16 * 8 // groups * 9,
                 gemm=[(16, 8 // groups * 9, 16 // groups, groups)])
    g.graph["outputs"] = ["y"]
    g.graph["tensors"]["y"]["kind"] = "output"
    return g


def weight_bytes(g):
    return sum(r["nbytes"] for r in g.graph["tensors"].values() if r["kind"] == "weight")


def test_oversized_linear_is_split_with_weights_and_macs_preserved():
    g = fc_graph()
    tiled, split = tile_weights(g, max_weight_bytes=1024)  # w is 3072 bytes: 3 tiles of 16 features
    assert split == ["fc"]
    assert list(tiled.nodes) == ["fc.tile0", "fc.tile1", "fc.tile2", "fc.concat", "act"]
    check_graph(tiled)
    assert weight_bytes(tiled) == weight_bytes(g)
    assert sum(tiled.nodes[n]["macs"] for n in tiled) == g.nodes["fc"]["macs"]
    assert tiled.graph["tensors"]["w[16:32]"]["shape"] == [16, 64]
    assert tiled.graph["tensors"]["b[32:48]"]["nbytes"] == 16
    assert tiled.graph["tensors"]["y"]["producer"] == "fc.concat"
    assert tiled.graph["tensors"]["y"]["consumers"] == ["act"]
    assert max(r["nbytes"] for r in tiled.graph["tensors"].values() if r["kind"] == "weight") <= 1024
    # the layer's own footprint shrinks, so a smaller scratchpad runs it
    budget = min_capacity(tiled)[0]
    assert budget < min_capacity(g)[0] <= 4000
    sched = schedule(tiled, budget)
    loaded = sum(t.nbytes for t in sched.transfers if t.kind == "load")
    assert loaded >= weight_bytes(g) + 64


def test_small_layers_and_grouped_convolutions_are_left_whole():
    g = fc_graph()
    same, split = tile_weights(g, max_weight_bytes=4096)
    assert split == [] and list(same.nodes) == list(g.nodes) and same is not g
    grouped, split = tile_weights(conv_graph(groups=2), max_weight_bytes=64)
    assert split == []
    dense, split = tile_weights(conv_graph(groups=1), max_weight_bytes=400)  # 1152 bytes -> 3 tiles
    assert split == ["conv"] and dense.graph["tensors"]["y.tile0"]["shape"] == [1, 5, 4, 4]


def assert_gemms_sum_to_macs(graph):
    for node, data in graph.nodes(data=True):
        assert sum(t * k * n * count for t, k, n, count in data["gemm"]) in (0, data["macs"]), node


def test_tiles_carry_their_share_of_the_gemm():
    tiled, _ = tile_weights(fc_graph(), max_weight_bytes=1024)  # 3 tiles of 16 of the 48 features
    assert [tiled.nodes[f"fc.tile{t}"]["gemm"] for t in range(3)] == [[[1, 64, 16, 1]]] * 3
    assert tiled.nodes["fc.concat"]["gemm"] == [] and tiled.nodes["act"]["gemm"] == []
    assert_gemms_sum_to_macs(tiled)
    dense, _ = tile_weights(conv_graph(groups=1), max_weight_bytes=400)  # 16 channels as 5 + 5 + 6
    assert [dense.nodes[f"conv.tile{t}"]["gemm"] for t in range(3)] == [[[16, 72, 5, 1]], [[16, 72, 5, 1]],
                                                                         [[16, 72, 6, 1]]]
    assert sum(dense.nodes[f"conv.tile{t}"]["macs"] for t in range(3)) == conv_graph(groups=1).nodes["conv"]["macs"]
    assert_gemms_sum_to_macs(dense)
    grouped, _ = tile_weights(conv_graph(groups=2), max_weight_bytes=64)  # left whole, gemm kept
    assert grouped.nodes["conv"]["gemm"] == [[16, 36, 8, 2]]


def test_tiles_of_an_operator_without_gemm_have_none():
    tiled, _ = tile_weights(fc_graph(gemm=False), max_weight_bytes=1024)
    assert all(tiled.nodes[n]["gemm"] == [] for n in tiled)
    check_graph(tiled)


@pytest.mark.torch
def test_tiling_a_traced_model_keeps_every_gemm_consistent():
    from frontend import trace_model

    graph = trace_model("resnet18", dtype="int8")
    tiled, split = tile_weights(graph, max_weight_bytes=256 * 1024)
    assert "fc" in split and "layer4_1_conv2" in split
    check_graph(tiled)
    for node, data in tiled.nodes(data=True):
        assert sum(t * k * n * count for t, k, n, count in data["gemm"]) == data["macs"], node
    assert sum(d["macs"] for _, d in tiled.nodes(data=True)) == sum(d["macs"] for _, d in graph.nodes(data=True))
    assert tiled.nodes["conv1"]["gemm"] == graph.nodes["conv1"]["gemm"]


def test_tile_limit_must_be_positive():
    with pytest.raises(ValueError, match="max_weight_bytes"):
        tile_weights(fc_graph(), 0)


def test_a_weight_several_operators_read_is_sliced_once():
    # a two-stage detector's box head runs on batches of regions: every batch reads the same weights
    g = new_graph("batches", dtype="int8")
    add_tensor(g, "w", (48, 64), kind="weight")
    for i in range(2):
        add_tensor(g, f"x{i}", (1, 64), kind="input")
        add_operator(g, f"fc{i}", "linear", [f"x{i}", "w"], {f"y{i}": (1, 48)}, macs=64 * 48, gemm=[(1, 64, 48, 1)])
    g.graph["outputs"] = ["y0", "y1"]
    for t in g.graph["outputs"]:
        g.graph["tensors"][t]["kind"] = "output"
    tiled, split = tile_weights(g, max_weight_bytes=1024)
    check_graph(tiled)
    assert split == ["fc0", "fc1"]
    slices = {t: r for t, r in tiled.graph["tensors"].items() if r["kind"] == "weight"}
    assert sum(r["nbytes"] for r in slices.values()) == 48 * 64  # each slice once: the weight bytes are unchanged
    assert all(len(r["consumers"]) == 2 for r in slices.values())

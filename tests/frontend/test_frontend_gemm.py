"""GEMM shapes: every MAC-carrying operator records ``gemm`` = [[t, k, n, count], ...] summing to its MACs."""

import json

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from frontend import (
    GraphFormatError,
    add_operator,
    add_tensor,
    check_graph,
    load_graph,
    new_graph,
    save_graph,
    trace,
    trace_model,
)
from frontend.cost import GEMM_RULES, MAC_RULES, OpCall, gemm_macs, gemms, macs


def mac_nodes(graph):
    return {n: d for n, d in graph.nodes(data=True) if d["macs"]}


def only_gemm(graph):
    """The gemm of the graph's single MAC-carrying operator."""
    (data,) = mac_nodes(graph).values()
    assert gemm_macs(data["gemm"]) == data["macs"]
    return data["gemm"]


# --------------------------------------------------------------------------- the rules, on shapes


def test_every_kind_with_a_mac_rule_has_a_gemm_rule():
    assert set(GEMM_RULES) == set(MAC_RULES)


def test_kinds_without_macs_have_no_gemm():
    assert gemms(OpCall("relu", operands=[(2, 3)], outputs=[(2, 3)])) == []
    assert gemms(OpCall("add", operands=[(2, 3), (2, 3)], outputs=[(2, 3)])) == []
    # a MAC kind with an empty tensor has 0 MACs and no GEMM
    assert gemms(OpCall("linear", operands=[(0, 8)], outputs=[(0, 4)], params={"weight": (4, 8)})) == []


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        # unbatched conv1d: input (C_in=4, 20), output (6, 16); the channel axis is 0
        (OpCall("conv1d", operands=[(4, 20)], outputs=[(6, 16)], params={"weight": (6, 4, 5)}), [(16, 20, 6, 1)]),
        # grouped transposed conv: weight (C_in=4, C_out/g=3, 3, 3), output 6 channels: g = 2
        (OpCall("conv_transpose2d", operands=[(1, 4, 5, 5)], outputs=[(1, 6, 11, 11)],
                params={"weight": (4, 3, 3, 3)}), [(25, 2, 27, 2)]),
        # 1-D weight: one output feature per row
        (OpCall("linear", operands=[(5, 8)], outputs=[(5,)], arguments={}, params={"weight": (8,)}), [(5, 8, 1, 1)]),
        # einsum approximation: n = the output's last dim, t = the rest, k = the contracted sizes
        (OpCall("einsum", operands=[(2, 3, 4, 8), (2, 3, 6, 8)], outputs=[(2, 3, 4, 6)],
                arguments={"args": ("bhqd,bhkd->bhqk", (2, 3, 4, 8), (2, 3, 6, 8))}), [(24, 8, 6, 1)]),
        (OpCall("einsum", operands=[(7,), (7,)], outputs=[()], arguments={"args": ("i,i", (7,), (7,))}),
         [(1, 7, 1, 1)]),
        # matrix-vector and vector-matrix
        (OpCall("matmul", operands=[(4, 5), (5,)], outputs=[(4,)]), [(4, 5, 1, 1)]),
        (OpCall("matmul", operands=[(5,), (3, 5, 7)], outputs=[(3, 7)]), [(1, 5, 7, 3)]),
        # a broadcast batch: (2, 1, 4, 5) @ (3, 5, 6) -> (2, 3, 4, 6), six 4x5x6 products
        (OpCall("matmul", operands=[(2, 1, 4, 5), (3, 5, 6)], outputs=[(2, 3, 4, 6)]), [(4, 5, 6, 6)]),
    ],
    ids=["unbatched_conv1d", "grouped_conv_transpose", "linear_1d_weight", "einsum", "einsum_dot",
         "matvec", "vecmat_batched", "matmul_broadcast"],
)
def test_gemm_shapes_from_shapes(call, expected):
    assert gemms(call) == expected
    assert gemm_macs(expected) == macs(call)


def test_swin_window_attention_is_per_window_and_head():
    # 9x9 map padded to 14x14: 4 windows of 49 tokens, 2 heads of 16 channels
    args = {"input": (1, 9, 9, 32), "qkv_weight": (96, 32), "proj_weight": (32, 32),
            "window_size": [7, 7], "num_heads": 2, "shift_size": [3, 3]}
    call = OpCall("shifted_window_attention", operands=[(1, 9, 9, 32), (96, 32), (32, 32)],
                  outputs=[(1, 9, 9, 32)], arguments=args)
    assert gemms(call) == [(196, 32, 96, 1), (49, 16, 49, 8), (49, 49, 16, 8), (196, 32, 32, 1)]
    assert gemm_macs(gemms(call)) == macs(call)


def test_shapes_a_rule_cannot_lower_fall_back_to_one_gemm_per_output_element():
    # weight.shape[1] larger than the input's channels: no whole number of groups
    call = OpCall("conv2d", operands=[(1, 2, 6, 6)], outputs=[(1, 16, 4, 4)], params={"weight": (16, 4, 3, 3)})
    assert gemms(call) == [(256, 36, 1, 1)]
    assert gemm_macs(gemms(call)) == macs(call)


# --------------------------------------------------------------------------- traced operators


@pytest.mark.parametrize(
    ("layer", "shape", "expected"),
    [
        # 10x10 outputs, 2 groups of (C_in/g=4) x 3x3 -> 8 output channels each
        (nn.Conv2d(8, 16, 3, padding=1, groups=2), (1, 8, 10, 10), [[100, 36, 8, 2]]),
        # depthwise, stride 2: 5x5 outputs, 8 groups of one 3x3 channel -> one output channel
        (nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), (1, 8, 10, 10), [[25, 9, 1, 8]]),
        (nn.Conv3d(4, 4, (3, 1, 1), groups=4), (1, 4, 5, 6, 6), [[108, 3, 1, 4]]),
        (nn.Conv1d(4, 6, 5), (2, 4, 20), [[32, 20, 6, 1]]),
        # every input position times C_in x (C_out * 3 * 3)
        (nn.ConvTranspose2d(4, 6, 3, stride=2), (1, 4, 5, 5), [[25, 4, 54, 1]]),
        # the batch dims (4, 7) fold into the rows
        (nn.Linear(32, 10), (4, 7, 32), [[28, 32, 10, 1]]),
    ],
    ids=["grouped_conv2d", "depthwise_conv2d", "depthwise_conv3d", "conv1d", "conv_transpose2d",
         "linear_batch_dims"],
)
def test_traced_layers_record_their_gemm(layer, shape, expected, well_formed):
    graph = trace(nn.Sequential(layer), (torch.randn(shape),))
    well_formed(graph)
    assert only_gemm(graph) == expected


@pytest.mark.parametrize(
    ("fn", "shapes", "expected"),
    [
        (torch.bmm, [(3, 4, 5), (3, 5, 7)], [[4, 5, 7, 3]]),
        # a 2-D second operand is a weight: the batch (2, 3) folds into t = 2 * 3 * 4
        (lambda a, b: a @ b, [(2, 3, 4, 5), (5, 6)], [[24, 5, 6, 1]]),
        (torch.matmul, [(7,), (7, 3)], [[1, 7, 3, 1]]),
        (lambda a, b: a @ b, [(2, 3, 4, 5), (2, 3, 5, 6)], [[4, 5, 6, 6]]),
        (lambda bias, a, b: torch.addmm(bias, a, b), [(6,), (4, 5), (5, 6)], [[4, 5, 6, 1]]),
        (lambda c, a, b: torch.baddbmm(c, a, b), [(3, 4, 7), (3, 4, 5), (3, 5, 7)], [[4, 5, 7, 3]]),
        (lambda x, w: F.linear(x, w), [(6, 8), (3, 8)], [[6, 8, 3, 1]]),
        (lambda x, w: F.conv2d(x, w, groups=2), [(1, 4, 6, 6), (8, 2, 3, 3)], [[16, 18, 4, 2]]),
        # q (2, 4, L=8, E=16), k (2, 4, S=10, 16), v (2, 4, 10, Ev=32): 8 heads in all
        (F.scaled_dot_product_attention, [(2, 4, 8, 16), (2, 4, 10, 16), (2, 4, 10, 32)],
         [[8, 16, 10, 8], [8, 10, 32, 8]]),
        (lambda a, b: torch.einsum("bij,bjk->bik", a, b), [(3, 4, 5), (3, 5, 7)], [[12, 5, 7, 1]]),
    ],
    ids=["bmm", "matmul_2d_weight", "vecmat", "matmul_batched", "addmm", "baddbmm", "f_linear", "f_conv2d",
         "sdpa", "einsum"],
)
def test_traced_functions_record_their_gemm(fn, shapes, expected, well_formed, functional_module):
    graph = trace(functional_module(fn), tuple(torch.randn(s) for s in shapes))
    well_formed(graph)
    assert only_gemm(graph) == expected


class Attention(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 4, **kwargs)

    def forward(self, q, k, v):
        return self.mha(q, k, v, need_weights=False)[0]


def test_multihead_attention_is_projections_and_per_head_products(well_formed):
    # L=5 queries, S=7 keys, batch 2, embed 16 in 4 heads of 4
    q, kv = torch.randn(5, 2, 16), torch.randn(7, 2, 16)
    graph = trace(Attention().eval(), (q, kv, kv))
    well_formed(graph)
    assert only_gemm(graph) == [
        [10, 16, 16, 1], [14, 16, 16, 1], [14, 16, 16, 1],  # q, k, v projections
        [5, 4, 7, 8], [5, 7, 4, 8],  # Q K^T and A V per (batch, head)
        [10, 16, 16, 1],  # out projection
    ]
    q, k, v = torch.randn(2, 5, 16), torch.randn(2, 7, 8), torch.randn(2, 7, 12)
    graph = trace(Attention(kdim=8, vdim=12, batch_first=True).eval(), (q, k, v))
    assert only_gemm(graph)[:3] == [[10, 16, 16, 1], [14, 8, 16, 1], [14, 12, 16, 1]]


# --------------------------------------------------------------------------- zoo models


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "vit_b_16"])
def test_every_zoo_operator_gemm_sums_to_its_macs(name, well_formed):
    graph = trace_model(name)
    well_formed(graph)
    tensors = graph.graph["tensors"]
    for node, data in graph.nodes(data=True):
        assert gemm_macs(data["gemm"]) == data["macs"], node
        assert bool(data["gemm"]) == bool(data["macs"]), node
        if data["op"] == "conv2d":  # C_out = n * count, and every group is a k = prod(weight[1:]) reduction
            (weight,) = [t for t in data["in_tensors"] if t.endswith(".weight")]
            out_channels, *per_group = tensors[weight]["shape"]
            ((t, k, n, count),) = data["gemm"]
            assert n * count == out_channels and k == per_group[0] * per_group[1] * per_group[2], node
    kinds = {data["op"] for data in mac_nodes(graph).values()}
    assert kinds <= set(GEMM_RULES)
    if name == "mobilenet_v2":  # its depthwise 3x3 convolutions are 1-column GEMMs, one per channel
        conv = graph.nodes["features_1_conv_0_0"]
        assert conv["gemm"] == [[112 * 112, 9, 1, 32]]
    if name == "vit_b_16":
        mha = graph.nodes["encoder_layers_encoder_layer_0_self_attention"]
        assert mha["gemm"][3:5] == [[197, 64, 197, 12], [197, 197, 64, 12]]


# --------------------------------------------------------------------------- format and JSON


def fc_graph(gemm):
    g = new_graph("fc", dtype="int8")
    add_tensor(g, "x", (2, 8), kind="input")
    add_tensor(g, "w", (4, 8), kind="weight")
    add_operator(g, "fc", "linear", ["x", "w"], {"y": (2, 4)}, macs=64, gemm=gemm)
    add_operator(g, "act", "relu", ["y"], {"z": (2, 4)})
    g.graph["outputs"] = ["z"]
    g.graph["tensors"]["z"]["kind"] = "output"
    return g


def test_gemm_is_stored_as_json_friendly_lists():
    g = fc_graph([(2, 8, 4, 1)])
    check_graph(g)
    assert g.nodes["fc"]["gemm"] == [[2, 8, 4, 1]]
    assert g.nodes["act"]["gemm"] == []
    assert fc_graph(None).nodes["fc"]["gemm"] == []  # no shape recorded


def test_gemm_round_trips_through_json(tmp_path):
    graph = trace(nn.Sequential(nn.Conv2d(8, 16, 3, groups=2), nn.Flatten(), nn.Linear(16 * 4 * 4, 10)),
                  (torch.randn(2, 8, 6, 6),))
    save_graph(graph, tmp_path / "g.json")
    again = load_graph(tmp_path / "g.json")
    assert list(again.nodes(data="gemm")) == list(graph.nodes(data="gemm"))
    assert again.nodes["_0"]["gemm"] == [[32, 36, 8, 2]] and again.nodes["_2"]["gemm"] == [[2, 256, 10, 1]]
    assert json.loads((tmp_path / "g.json").read_text())["nodes"][0]["gemm"] == [[32, 36, 8, 2]]


def test_a_graph_saved_without_gemm_still_loads(tmp_path):
    path = tmp_path / "old.json"
    save_graph(fc_graph([(2, 8, 4, 1)]), path)
    data = json.loads(path.read_text())
    for node in data["nodes"]:
        del node["gemm"]
    path.write_text(json.dumps(data))
    graph = load_graph(path)
    assert "gemm" not in graph.nodes["fc"]


@pytest.mark.parametrize(
    ("gemm", "message"),
    [
        ([[2, 8, 4]], "not a list of"),
        ([[2, 8, 0, 1]], "not a list of"),
        ([[2, 8, 4, -1]], "not a list of"),
        ([[2, 8.0, 4, 1]], "not a list of"),
        ([[2, 8, 4, True]], "not a list of"),
        ("2, 8, 4, 1", "not a list of"),
        ([2, 8, 4, 1], "not a list of"),
        ([[2, 8, 2, 1]], "sums to 32 MACs, but the operator has 64"),
        ([[2, 8, 4, 1], [1, 1, 1, 1]], "sums to 65 MACs"),
    ],
    ids=["three_numbers", "zero", "negative", "float", "bool", "string", "flat", "wrong_sum", "extra_entry"],
)
def test_check_graph_names_the_operator_of_a_bad_gemm(gemm, message, tmp_path):
    graph = fc_graph([(2, 8, 4, 1)])
    graph.nodes["fc"]["gemm"] = gemm
    with pytest.raises(GraphFormatError, match=f"operator 'fc'.*{message}"):
        check_graph(graph)
    graph.nodes["fc"]["gemm"] = [[2, 8, 4, 1]]
    path = tmp_path / "g.json"
    save_graph(graph, path)
    data = json.loads(path.read_text())
    data["nodes"][0]["gemm"] = gemm
    path.write_text(json.dumps(data))
    with pytest.raises(GraphFormatError, match="operator 'fc'"):
        load_graph(path)


def test_add_operator_refuses_a_bad_gemm_and_leaves_the_graph_alone():
    g = new_graph("fc", dtype="int8")
    add_tensor(g, "x", (2, 8), kind="input")
    add_tensor(g, "w", (4, 8), kind="weight")
    with pytest.raises(GraphFormatError, match="operator 'fc'.*sums to 32 MACs"):
        add_operator(g, "fc", "linear", ["x", "w"], {"y": (2, 4)}, macs=64, gemm=[(2, 8, 2, 1)])
    assert "fc" not in g and "y" not in g.graph["tensors"] and g.graph["tensors"]["x"]["consumers"] == []

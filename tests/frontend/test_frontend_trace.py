"""frontend.trace on tiny modules: aliasing, costs, outputs, dtypes, errors."""

import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from frontend import TraceError, trace
from frontend.graph import DTYPE_BYTES

torch.manual_seed(0)


def ops_of(graph):
    return {n: d for n, d in graph.nodes(data=True)}


def total_macs(graph):
    return sum(d["macs"] for _, d in graph.nodes(data=True))


# --------------------------------------------------------------------------- packaging


def test_import_frontend_does_not_import_torch():
    code = ("import sys, frontend, frontend.cost, frontend.synthetic; "
            "assert 'torch' not in sys.modules, 'torch imported'; print('ok')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# --------------------------------------------------------------------------- aliasing


class ViewsAndPermute(nn.Module):
    def forward(self, x):
        flat = x.view(x.size(0), -1)
        also_flat = torch.flatten(x, 1)
        channels_last = x.permute(0, 2, 3, 1)
        return flat + also_flat, channels_last.reshape(2, -1)


def test_views_take_no_memory_and_permute_does(well_formed):
    x = torch.randn(2, 3, 4, 4)
    graph = trace(ViewsAndPermute(), (x,))
    well_formed(graph)
    tensors = graph.graph["tensors"]
    assert set(graph.nodes) == {"permute", "add"}
    assert graph.graph["aliases"] == {"view": "x", "flatten": "x", "reshape": "permute"}
    assert ops_of(graph)["add"]["in_tensors"] == ["x"]  # both views read the base
    assert graph.nodes["permute"]["op"] == "permute"
    assert graph.nodes["permute"]["elements"] == 96
    assert tensors["permute"]["nbytes"] == 96 * 4
    # the reshape of the permuted tensor is free; its base is the graph output
    assert graph.graph["outputs"] == ["add", "permute"]
    assert tensors["permute"]["kind"] == "output"
    activation_bytes = sum(r["nbytes"] for r in tensors.values() if r["kind"] != "input")
    assert activation_bytes == 2 * 96 * 4


class ManyViews(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)
        self.ident = nn.Identity()

    def forward(self, x):
        y = x.relu()
        a = y.unsqueeze(0).squeeze(0).contiguous().expand(2, 4, 6)
        b, c = y.chunk(2, dim=1)
        d = y[:, 1:3]
        e = self.ident(self.drop(F.dropout(y, 0.1, training=False))).detach()
        f = y.to(torch.float32).view_as(y).reshape_as(y)
        g = torch.unbind(y, 0)[1]
        return a.sum() + b.sum() + c.sum() + d.sum() + e.sum() + f.sum() + g.sum()


def test_all_view_ops_fold_into_their_base(well_formed):
    graph = trace(ManyViews().eval(), (torch.randn(4, 6),))
    well_formed(graph)
    kinds = [d["op"] for _, d in graph.nodes(data=True)]
    assert kinds.count("relu") == 1
    assert not {"unsqueeze", "squeeze", "contiguous", "expand", "chunk", "dropout", "identity",
                "detach", "cast", "view_as", "reshape_as", "unbind", "index"} & set(kinds)
    aliases = graph.graph["aliases"]
    for name in ("unsqueeze", "squeeze", "contiguous", "expand", "chunk", "getitem", "getitem_1",
                 "getitem_2", "dropout", "drop", "ident", "detach", "to", "view_as", "reshape_as", "unbind"):
        assert aliases[name] == "relu", name
    # every sum reads the relu output directly
    sums = [d for _, d in graph.nodes(data=True) if d["op"] == "sum"]
    assert len(sums) == 7 and all(d["in_tensors"] == ["relu"] for d in sums)


def test_output_that_is_a_view_makes_its_base_the_output(well_formed):
    class M(nn.Module):
        def forward(self, x):
            return x.relu().view(-1)

    graph = trace(M(), (torch.randn(2, 3),))
    well_formed(graph)
    assert graph.graph["outputs"] == ["relu"]
    assert graph.graph["tensors"]["relu"]["kind"] == "output"
    assert graph.graph["aliases"] == {"view": "relu"}


def test_transpose_and_advanced_indexing_are_operators(well_formed):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("index", torch.tensor([2, 0]))

        def forward(self, x):
            return x.t() + 1, x[self.index], x.transpose(0, 1).T

    graph = trace(M(), (torch.randn(3, 4),))
    well_formed(graph)
    ops = ops_of(graph)
    assert ops["t"]["op"] == "transpose"
    assert ops["getitem"]["op"] == "index"
    assert ops["getitem"]["in_tensors"] == ["x", "index"]
    assert graph.graph["tensors"]["index"] == {
        "shape": [2], "dtype": "int64", "nbytes": 16, "producer": None,
        "consumers": ["getitem"], "kind": "weight",
    }
    assert ops["getattr_1"]["op"] == "transpose"  # x.T


def test_dtype_changing_to_is_a_cast_operator(well_formed):
    class M(nn.Module):
        def forward(self, x):
            return x.to(torch.int32) + 1

    graph = trace(M(), (torch.randn(2, 3),), dtype="bf16")
    well_formed(graph)
    assert graph.nodes["to"]["op"] == "cast"
    assert graph.graph["tensors"]["to"]["dtype"] == "int32"
    assert graph.graph["tensors"]["to"]["nbytes"] == 6 * 4


def test_in_place_ops_write_a_new_version_read_by_later_uses(well_formed):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x, y):
            a = x * 2
            alias = a.view(-1)
            a.add_(y)
            a = self.relu(a)
            a.mul_(3)
            return alias + 1  # sees every update, as in eager PyTorch

    x, y = torch.randn(4, 4), torch.randn(4, 4)
    graph = trace(M(), (x, y))
    well_formed(graph)
    assert list(graph.nodes) == ["mul", "add_", "relu", "mul_", "add"]
    assert graph.nodes["add_"]["in_tensors"] == ["mul", "y"]
    assert graph.nodes["relu"]["in_tensors"] == ["add_"]
    assert graph.nodes["add"]["in_tensors"] == ["mul_"]
    assert graph.graph["aliases"]["view"] == "mul"
    assert torch.equal(x, x.clone())  # tracing did not mutate the caller's tensors


# --------------------------------------------------------------------------- outputs


def test_dict_and_nested_outputs_are_graph_outputs(well_formed):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 1)

        def forward(self, x):
            y = self.conv(x)
            return {"out": y, "aux": [y.mean(), (x.sum(), y)]}

    graph = trace(M(), (torch.randn(1, 3, 5, 5),))
    well_formed(graph)
    assert graph.graph["outputs"] == ["conv", "mean", "sum_1"]
    for name in graph.graph["outputs"]:
        assert graph.graph["tensors"][name]["kind"] == "output"
    assert graph.graph["tensors"]["conv"]["consumers"] == ["mean"]  # an output may also be read


def test_segmentation_style_ordered_dict_output(well_formed):
    from collections import OrderedDict

    class M(nn.Module):
        def forward(self, x):
            result = OrderedDict()
            result["out"] = F.interpolate(x, size=x.shape[-2:], mode="bilinear", align_corners=False)
            return result

    graph = trace(M(), (torch.randn(1, 2, 4, 4),))
    well_formed(graph)
    assert graph.graph["outputs"] == ["interpolate"]


def test_shape_arithmetic_is_not_an_operator(well_formed):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(20, 3)

        def forward(self, x):
            n = x.size(0)
            c = x.shape[1] * 2
            return self.fc(x.reshape(n, -1)) * (c // 2)

    graph = trace(M(), (torch.randn(3, 4, 5),))
    well_formed(graph)
    assert [d["op"] for _, d in graph.nodes(data=True)] == ["linear", "mul"]
    assert graph.nodes["fc"]["in_tensors"] == ["x", "fc.weight", "fc.bias"]


def test_multi_output_ops_write_one_tensor_per_result(well_formed):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = nn.MultiheadAttention(8, 2)

        def forward(self, x):
            out, weights = self.mha(x, x, x)
            values, indices = torch.max(x, dim=-1)
            return out, weights, values  # the indices are never used

    graph = trace(M().eval(), (torch.randn(5, 2, 8),))
    well_formed(graph)
    assert graph.nodes["mha"]["out_tensors"] == ["mha.0", "mha.1"]
    assert graph.graph["tensors"]["mha.1"]["shape"] == [2, 5, 5]
    assert graph.nodes["max_1"]["out_tensors"] == ["max_1.0"]  # dead result dropped
    assert graph.graph["outputs"] == ["mha.0", "mha.1", "max_1.0"]


def test_parameter_read_by_many_ops_is_one_weight(well_formed):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(4))
            self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])

        def forward(self, x):
            x = self.blocks[0](x) * self.scale
            return self.blocks[1](x) * self.scale

    graph = trace(M(), (torch.randn(2, 4),))
    well_formed(graph)
    weights = {n: r for n, r in graph.graph["tensors"].items() if r["kind"] == "weight"}
    assert set(weights) == {"scale", "blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias"}
    assert weights["scale"]["consumers"] == ["mul", "mul_1"]


def test_dead_code_is_dropped(well_formed):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.unused = nn.Linear(4, 4)

        def forward(self, x):
            self.unused(x)  # result ignored
            return x.relu()

    graph = trace(M(), (torch.randn(2, 4),))
    well_formed(graph)
    assert list(graph.nodes) == ["relu"]
    assert "unused.weight" not in graph.graph["tensors"]


# --------------------------------------------------------------------------- MACs


@pytest.mark.parametrize(
    ("layer", "shape", "expected"),
    [
        # out_elements * (C_in / groups) * prod(kernel)
        (nn.Conv2d(8, 16, 3, padding=1, groups=2), (1, 8, 10, 10), 16 * 10 * 10 * 4 * 9),
        (nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), (1, 8, 10, 10), 8 * 5 * 5 * 1 * 9),
        (nn.Conv2d(3, 6, (3, 5)), (2, 3, 9, 9), 2 * 6 * 7 * 5 * 3 * 15),
        (nn.Conv3d(3, 4, 3), (1, 3, 5, 6, 7), 4 * 3 * 4 * 5 * 3 * 27),
        (nn.Conv3d(4, 4, (3, 1, 1), groups=4), (1, 4, 5, 6, 6), 4 * 3 * 6 * 6 * 1 * 3),
        (nn.Conv1d(4, 6, 5), (2, 4, 20), 2 * 6 * 16 * 4 * 5),
        # in_elements * (C_out / groups) * prod(kernel)
        (nn.ConvTranspose2d(4, 6, 3, stride=2), (1, 4, 5, 5), 4 * 5 * 5 * 6 * 9),
        # out_elements * in_features
        (nn.Linear(32, 10), (4, 7, 32), 4 * 7 * 10 * 32),
    ],
    ids=["grouped_conv2d", "depthwise_conv2d", "rect_kernel", "conv3d", "depthwise_conv3d",
         "conv1d", "conv_transpose2d", "linear"],
)
def test_layer_macs_match_hand_counts(layer, shape, expected, well_formed):
    graph = trace(nn.Sequential(layer), (torch.randn(shape),))
    well_formed(graph)
    assert total_macs(graph) == expected


@pytest.mark.parametrize(
    ("fn", "shapes", "expected"),
    [
        (lambda a, b: a @ b, [(2, 3, 4, 5), (5, 6)], 2 * 3 * 4 * 6 * 5),
        (torch.matmul, [(7,), (7, 3)], 3 * 7),
        (torch.bmm, [(3, 4, 5), (3, 5, 7)], 3 * 4 * 7 * 5),
        (lambda a, b: torch.einsum("bij,bjk->bik", a, b), [(3, 4, 5), (3, 5, 7)], 3 * 4 * 7 * 5),
        (lambda a, b: torch.einsum("...ij,jk", a, b), [(2, 4, 5), (5, 7)], 2 * 4 * 7 * 5),
        (lambda x, w: F.linear(x, w), [(6, 8), (3, 8)], 6 * 3 * 8),
        (lambda x, w: F.conv2d(x, w, groups=2), [(1, 4, 6, 6), (8, 2, 3, 3)], 8 * 4 * 4 * 2 * 9),
        # q (2, 4, L=8, E=16), k (2, 4, S=10, 16), v (2, 4, 10, Ev=32): batch * L * S * (E + Ev)
        (F.scaled_dot_product_attention, [(2, 4, 8, 16), (2, 4, 10, 16), (2, 4, 10, 32)], 8 * 8 * 10 * 48),
    ],
    ids=["matmul_broadcast", "matvec", "bmm", "einsum", "einsum_implicit", "f_linear", "f_conv2d", "sdpa"],
)
def test_functional_macs_match_hand_counts(fn, shapes, expected, well_formed, functional_module):
    graph = trace(functional_module(fn), tuple(torch.randn(s) for s in shapes))
    well_formed(graph)
    assert total_macs(graph) == expected


def test_multihead_attention_macs_count_projections_and_both_matmuls(well_formed):
    class M(nn.Module):
        def __init__(self, **kwargs):
            super().__init__()
            self.mha = nn.MultiheadAttention(16, 4, **kwargs)

        def forward(self, q, k, v):
            return self.mha(q, k, v, need_weights=False)[0]

    # L=5 queries, S=7 keys, N=2, E=16
    q, kv = torch.randn(5, 2, 16), torch.randn(7, 2, 16)
    graph = trace(M().eval(), (q, kv, kv))
    well_formed(graph)
    in_projection = 2 * (5 * 16 * 16 + 7 * 16 * 16 + 7 * 16 * 16)
    attention = 2 * (2 * 5 * 7 * 16)
    out_projection = 2 * 5 * 16 * 16
    assert total_macs(graph) == in_projection + attention + out_projection

    # batch_first with kdim / vdim different from embed_dim
    q, k, v = torch.randn(2, 5, 16), torch.randn(2, 7, 8), torch.randn(2, 7, 12)
    graph = trace(M(kdim=8, vdim=12, batch_first=True).eval(), (q, k, v))
    in_projection = 2 * (5 * 16 * 16 + 7 * 8 * 16 + 7 * 12 * 16)
    assert total_macs(graph) == in_projection + attention + out_projection


def test_non_mac_ops_cost_output_elements():
    class M(nn.Module):
        def forward(self, x):
            return torch.cat([F.max_pool2d(x, 2), F.softmax(x, -1)[..., ::2, ::2]], dim=1)

    graph = trace(M(), (torch.randn(1, 3, 8, 8),))
    ops = ops_of(graph)
    assert ops["max_pool2d"]["elements"] == 3 * 4 * 4 and ops["max_pool2d"]["macs"] == 0
    assert ops["softmax"]["elements"] == 3 * 8 * 8
    assert ops["cat"]["elements"] == 6 * 4 * 4
    assert ops["cat"]["in_tensors"] == ["max_pool2d", "softmax"]


# --------------------------------------------------------------------------- dtypes


class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("index", torch.arange(4))

    def forward(self, x):
        y = self.fc(x)[:, self.index]
        return y, y > 0, y.sum()


@pytest.mark.parametrize("dtype", ["int8", "bf16", "fp32"])
def test_floating_tensors_take_the_run_dtype_and_integers_keep_theirs(dtype, well_formed):
    graph = trace(Mixed(), (torch.randn(3, 4),), dtype=dtype)
    well_formed(graph)
    size = DTYPE_BYTES[dtype]
    tensors = graph.graph["tensors"]
    assert graph.graph["dtype"] == dtype
    assert tensors["x"]["nbytes"] == 12 * size and tensors["x"]["dtype"] == dtype
    assert tensors["fc.weight"]["nbytes"] == 16 * size
    assert tensors["getitem"]["nbytes"] == 12 * size
    assert tensors["index"]["dtype"] == "int64" and tensors["index"]["nbytes"] == 4 * 8
    assert tensors["gt"]["dtype"] == "bool" and tensors["gt"]["nbytes"] == 12
    assert tensors["sum_1"]["shape"] == [] and tensors["sum_1"]["nbytes"] == size  # 0-d: one element


def test_int8_graph_is_half_the_bf16_graph():
    int8 = trace(Mixed(), (torch.randn(3, 4),), dtype="int8").graph["tensors"]
    bf16 = trace(Mixed(), (torch.randn(3, 4),), dtype="bf16").graph["tensors"]
    for name, rec in int8.items():
        if rec["dtype"] == "int8":
            assert 2 * rec["nbytes"] == bf16[name]["nbytes"], name


# --------------------------------------------------------------------------- tracing and errors


def test_data_dependent_control_flow_raises_trace_error_naming_model_and_reason():
    class Branchy(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return x

    with pytest.raises(TraceError) as info:
        trace(Branchy(), (torch.randn(3),), name="branchy-net")
    message = str(info.value)
    assert "branchy-net" in message
    assert "control flow" in message
    assert "if x.sum() > 0" in message  # where it failed


def test_shape_control_flow_traces_by_specialising_on_the_example(well_formed):
    class ShapeBranch(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 6)

        def forward(self, x):
            if x.dim() == 3 and len(x.shape) == 3:
                x = x.flatten(0, 1)
            for _ in range(x.size(0) // 4):
                x = self.fc(x)
            return x

    graph = trace(ShapeBranch(), (torch.randn(2, 4, 6),))
    well_formed(graph)
    assert list(graph.nodes) == ["fc", "fc_1"]  # 8 rows // 4 = two applications


def test_extra_leaf_modules_are_single_operators(well_formed):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4)

        def forward(self, x):
            return self.b(self.a(x).relu())

    model = nn.Sequential(Block(), nn.ReLU())
    graph = trace(model, (torch.randn(2, 4),), leaf_modules=[Block])
    well_formed(graph)
    assert list(graph.nodes) == ["_0", "_1"]
    assert graph.nodes["_0"]["op"] == "block"
    weights = ["0.a.weight", "0.a.bias", "0.b.weight", "0.b.bias"]
    assert graph.nodes["_0"]["in_tensors"] == [*graph.graph["inputs"], *weights]


def test_forward_arguments_beyond_example_inputs_keep_defaults(well_formed):
    class M(nn.Module):
        def forward(self, x, mask=None, scale=2.0):
            if mask is not None:
                x = x * mask
            return x * scale

    graph = trace(M(), torch.randn(3))  # a bare tensor is one example input
    well_formed(graph)
    assert list(graph.nodes) == ["mul"]
    assert graph.graph["inputs"] == ["x"]


def test_wrong_example_inputs_raise_trace_error():
    with pytest.raises(TraceError, match=r"'Linear' on example inputs of shape \(2, 5\): RuntimeError: .*\[4, 4\]"):
        trace(nn.Linear(4, 4), (torch.randn(2, 5),))
    with pytest.raises(TraceError, match="3 example inputs"):
        trace(nn.Sequential(nn.ReLU()), (torch.randn(2), torch.randn(2), torch.randn(2)))


def test_a_failing_operator_gives_one_line_with_model_inputs_operator_and_own_error(capfd):
    """No traceback (torch's ShapeProp printed one), one line: model, input shapes, where, the model's words."""
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
    with pytest.raises(TraceError) as info:
        trace(model, (torch.randn(1, 3, 16),), name="tiny-cnn")
    message = str(info.value)
    assert "\n" not in message
    assert "'tiny-cnn'" in message and "(1, 3, 16)" in message
    assert "expected input[1, 1, 3, 16] to have 3 channels, but got 1 channels instead" in message  # conv2d's own
    assert "at operator '_0'" in message
    assert isinstance(info.value, ValueError)
    with pytest.raises(TraceError):
        trace(nn.Linear(4, 4), (torch.randn(2, 5),))  # a fake kernel that logs its failure
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err + captured.out


def test_several_example_inputs_are_all_named_in_the_error():
    class Add(nn.Module):
        def forward(self, a, b):
            return a + b

    with pytest.raises(TraceError, match=r"example inputs of shapes \(2, 3\), \(4, 5\): RuntimeError: .*broadcast"):
        trace(Add(), (torch.randn(2, 3), torch.randn(4, 5)))


# --------------------------------------------------------------------------- fake tensors


class DataDependentShape(nn.Module):
    """The output shape depends on the input's values: fake tensors cannot know it."""

    def forward(self, x):
        return x.nonzero() * 2


class DataDependentLoop(nn.Module):
    """Control flow on a data-dependent size: needs the shape-specialising tracer and real values."""

    def forward(self, x):
        for _ in range(x.nonzero().size(0)):
            x = x + 1
        return x


def test_shapes_propagate_on_fake_tensors_and_leave_the_inputs_alone(well_formed):
    """A huge input traces without memory: only shapes are computed; the caller's tensor is untouched."""
    model = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2), nn.ReLU())
    x = torch.empty(1, 3, 30001, 30001, device="meta")  # 10.8 GB as a real fp32 tensor, 3.6 GB at conv's output
    graph = trace(model.to("meta"), (x,))
    well_formed(graph)
    assert graph.graph["tensors"]["_1"]["shape"] == [1, 4, 15000, 15000]
    assert graph.graph["tensors"]["_1"]["nbytes"] == 4 * 4 * 15000 * 15000
    real = torch.tensor([1.0, -2.0, 3.0])
    trace(nn.ReLU(inplace=True), (real,))
    assert real.tolist() == [1.0, -2.0, 3.0]  # the in-place relu ran on a fake


def test_a_data_dependent_shape_falls_back_to_the_real_inputs(well_formed):
    x = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]])
    graph = trace(DataDependentShape(), (x,))
    well_formed(graph)
    assert graph.graph["tensors"]["nonzero"]["shape"] == [3, 2]  # 3 non-zeros, 2 coordinates: from the data
    graph = trace(DataDependentLoop(), (torch.tensor([1.0, 0.0, 2.0, 3.0]),))
    well_formed(graph)
    assert [d["op"] for _, d in graph.nodes(data=True)] == ["add"] * 3  # one per non-zero; nonzero itself is dead


@pytest.mark.parametrize("model", [DataDependentShape(), DataDependentLoop()], ids=["shape", "control_flow"])
def test_a_data_dependent_shape_on_meta_tensors_is_a_one_line_trace_error(model):
    with pytest.raises(TraceError) as info:
        trace(model, (torch.empty(3, 2, device="meta"),), name="picky")
    message = str(info.value)
    assert "\n" not in message and "'picky'" in message and "(3, 2)" in message

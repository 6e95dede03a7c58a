"""The torch.export tracer (``trace(..., method="export")``) and ``method="auto"``'s fallback to it."""

from collections import Counter

import pytest
import torch
from torch import nn

from frontend import TraceError, load_model, trace
from frontend.errors import TracerFallbackWarning

#: small zoo models whose export graph is the FX graph in every number compared (see
#: ``frontend.export_convert``'s docstring for the models where they differ, and why)
AGREEING_MODELS = [
    "resnet18", "mobilenet_v3_small", "transformer", "swin_t", "segmentation.lraspp_mobilenet_v3_large",
]


def summary(graph):
    """What the two tracers must agree on: everything but names (operators per kind, MACs, GEMMs,
    bytes per tensor kind, and each operator with the shapes and kinds of what it reads and writes)."""
    tensors = graph.graph["tensors"]
    nbytes = Counter()
    for rec in tensors.values():
        nbytes[rec["kind"]] += rec["nbytes"]

    def shapes(names):
        return tuple((tuple(tensors[t]["shape"]), tensors[t]["kind"]) for t in names)

    records = sorted((d["op"], d["macs"], d["elements"], tuple(map(tuple, d["gemm"])), shapes(d["in_tensors"]),
                      shapes(d["out_tensors"])) for _, d in graph.nodes(data=True))
    return {
        "records": records,
        "edges": graph.number_of_edges(),
        "operators": graph.number_of_nodes(),
        "kinds": Counter(d["op"] for _, d in graph.nodes(data=True)),
        "macs": sum(d["macs"] for _, d in graph.nodes(data=True)),
        "gemms": Counter(tuple(map(tuple, d["gemm"])) for _, d in graph.nodes(data=True) if d["gemm"]),
        "bytes": dict(nbytes),
        "weights": sorted(t for t, rec in graph.graph["tensors"].items() if rec["kind"] == "weight"),
        # names may differ: FX calls a forward argument named ``input`` ``input_1``, export ``input``
        "inputs": [graph.graph["tensors"][t]["shape"] for t in graph.graph["inputs"]],
        "outputs": [graph.graph["tensors"][t]["shape"] for t in graph.graph["outputs"]],
    }


@pytest.mark.parametrize("name", AGREEING_MODELS)
def test_export_graph_of_a_zoo_model_matches_the_fx_graph(name, well_formed):
    model, inputs = load_model(name, device="meta")
    fx = trace(model, inputs, name=name, method="fx")
    exported = trace(model, inputs, name=name, method="export")
    well_formed(exported)
    assert fx.graph["tracer"] == "fx" and exported.graph["tracer"] == "export"
    assert summary(exported) == summary(fx)


class RowLoop(nn.Module):
    """Iterates a tensor: torch.fx symbolic tracing refuses it, export runs it on the example."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        rows = [self.fc(row).relu() for row in x]
        return torch.stack(rows)


def test_auto_falls_back_to_export_where_fx_cannot_trace_and_says_so(well_formed):
    x = torch.randn(3, 4)
    with pytest.raises(TraceError, match="with torch.fx"):
        trace(RowLoop(), (x,), method="fx")
    with pytest.warns(TracerFallbackWarning) as caught:
        graph = trace(RowLoop(), (x,))  # the default is "auto"
    [note] = [str(w.message) for w in caught]
    assert "\n" not in note and "with torch.fx" in note and note.endswith(
        "traced with torch.export instead (slower)")
    well_formed(graph)
    assert graph.graph["tracer"] == "export"
    kinds = Counter(d["op"] for _, d in graph.nodes(data=True))
    assert kinds == {"linear": 3, "relu": 3, "stack": 1}  # one linear and relu per row of x
    linear = next(d for _, d in graph.nodes(data=True) if d["op"] == "linear")
    assert linear["macs"] == 4 * 4 and linear["gemm"] == [[1, 4, 4, 1]]
    assert "fc.weight" in linear["in_tensors"] and "fc.bias" in linear["in_tensors"]
    assert graph.graph["tensors"]["fc.weight"]["kind"] == "weight"
    [out] = graph.graph["outputs"]
    assert graph.graph["tensors"][out]["shape"] == [3, 4]


def test_auto_keeps_the_fx_graph_when_fx_traces():
    graph = trace(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), (torch.randn(2, 4),))
    assert graph.graph["tracer"] == "fx"
    assert list(graph.nodes) == ["_0", "_1"]  # FX's names (export would call them linear, relu)


def test_auto_does_not_retry_a_model_that_fails_on_its_inputs():
    """A wrong input shape fails shape propagation, not tracing: the FX error alone, no export attempt."""
    with pytest.raises(TraceError) as info:
        trace(nn.Linear(4, 4), (torch.randn(2, 5),))
    assert "torch.export" not in str(info.value)


def test_a_model_neither_tracer_handles_is_one_line_with_both_reasons():
    class Branchy(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return x

    with pytest.raises(TraceError) as info:
        trace(Branchy(), (torch.randn(3),), name="branchy-net")
    message = str(info.value)
    assert "\n" not in message and "branchy-net" in message
    assert "with torch.fx" in message and "; with torch.export: " in message
    with pytest.raises(TraceError) as info:
        trace(Branchy(), (torch.randn(3),), name="branchy-net", method="export")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("cannot trace 'branchy-net' on example inputs of shape (3,) with torch.export: ")


@pytest.mark.parametrize("method", ["jit", "", "FX"])
def test_an_unknown_method_is_a_value_error_naming_it_and_the_valid_ones(method):
    with pytest.raises(ValueError, match=rf"unknown trace method {method!r}; valid methods: auto, fx, export"):
        trace(nn.ReLU(), (torch.randn(2),), method=method)


def test_export_functionalises_in_place_operators_and_folds_views(well_formed):
    class InPlace(nn.Module):
        def forward(self, x, y):
            x = x.view(2, 3)
            x.add_(y)
            return x.relu().transpose(0, 1)

    graph = trace(InPlace(), (torch.randn(6), torch.randn(2, 3)), method="export")
    well_formed(graph)
    ops = [d["op"] for _, d in graph.nodes(data=True)]
    assert ops == ["add", "relu", "transpose"]  # the view is an alias, the transpose an operator
    add, relu, _ = graph.nodes
    assert graph.nodes[add]["in_tensors"] == ["x", "y"]  # x's view reads x itself
    assert graph.nodes[relu]["in_tensors"] == graph.nodes[add]["out_tensors"]  # after the update


def test_export_keeps_extra_leaf_modules_whole(well_formed):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4)

        def forward(self, x):
            return self.b(self.a(x).relu())

    model = nn.Sequential(Block(), nn.ReLU())
    fx = trace(model, (torch.randn(2, 4),), leaf_modules=[Block], method="fx")
    graph = trace(model, (torch.randn(2, 4),), leaf_modules=[Block], method="export")
    well_formed(graph)
    assert [d["op"] for _, d in graph.nodes(data=True)] == ["block", "relu"]
    block = next(iter(graph.nodes))
    weights = ["0.a.weight", "0.a.bias", "0.b.weight", "0.b.bias"]
    assert graph.nodes[block]["in_tensors"] == [*graph.graph["inputs"], *weights]
    assert summary(graph) == summary(fx)


def scaled_gelu(x, weight):
    """Kept whole by torch.fx (``torch.fx.wrap`` below), like torchvision's Swin attention."""
    return torch.nn.functional.gelu(torch.nn.functional.linear(x, weight)) * 2


torch.fx.wrap("scaled_gelu")


def test_export_keeps_a_function_torch_fx_wraps_whole(well_formed):
    class Wrapped(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(5, 4))

        def forward(self, x):
            return scaled_gelu(x, self.weight).relu()

    x = torch.randn(3, 4)
    fx = trace(Wrapped(), (x,), method="fx")
    graph = trace(Wrapped(), (x,), method="export")
    well_formed(graph)
    assert [d["op"] for _, d in graph.nodes(data=True)] == ["scaled_gelu", "relu"]
    first = next(iter(graph.nodes))
    assert graph.nodes[first]["in_tensors"] == ["x", "weight"]
    assert graph.nodes[first]["target"] == fx.nodes["scaled_gelu"]["target"]
    assert summary(graph) == summary(fx)

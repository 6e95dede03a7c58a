"""The model zoo: names, inputs, and every supported model tracing to a sound graph."""

import json
import math
import subprocess
import sys
import textwrap

import pytest
import torch

from frontend import TraceError, UnknownModelError, list_models, load_model, trace, trace_model
from frontend.zoo import default_input_shape

FAST_MODELS = ["resnet18", "mobilenet_v3_small", "squeezenet1_0", "transformer"]


def used_parameter_elements(model):
    """Elements of every parameter and buffer inference reads (all but BN's batch counter)."""
    params = sum(p.numel() for p in model.parameters())
    buffers = sum(b.numel() for name, b in model.named_buffers() if not name.endswith("num_batches_tracked"))
    return params + buffers


def weight_names(model):
    names = {n for n, _ in model.named_parameters()}
    return names | {n for n, _ in model.named_buffers() if not n.endswith("num_batches_tracked")}


def published_gmacs(name):
    """torchvision's own GMAC count for the model (its ``_ops`` metadata), when measured at our shape."""
    import torchvision.models as models

    if name.startswith("segmentation.") or name == "transformer":
        return None  # torchvision measures segmentation models at 520x520
    weights = models.get_model_weights(name.split(".")[-1])
    return next(iter(weights)).meta.get("_ops")


def check_model_graph(name, well_formed):
    model, inputs = load_model(name)
    assert not model.training
    graph = trace(model, inputs, name=name)
    well_formed(graph)
    assert graph.graph["name"] == name
    tensors = graph.graph["tensors"]
    weights = {n: r for n, r in tensors.items() if r["kind"] == "weight"}
    # every parameter and buffer is read, once, under its own name
    assert set(weights) == weight_names(model)
    assert sum(math.prod(r["shape"]) for r in weights.values()) == used_parameter_elements(model)
    assert sum(r["nbytes"] for r in weights.values()) == 4 * used_parameter_elements(model) - sum(
        4 * b.numel() - b.element_size() * b.numel()
        for n, b in model.named_buffers() if not b.is_floating_point() and not n.endswith("num_batches_tracked")
    )
    assert [tensors[t]["shape"] for t in graph.graph["inputs"]] == [list(x.shape) for x in inputs]
    macs = sum(d["macs"] for _, d in graph.nodes(data=True))
    assert macs > 0
    reference = published_gmacs(name)
    if reference is not None:
        assert macs / 1e9 == pytest.approx(reference, rel=0.005, abs=5e-4)  # published to 3 decimals
    return graph


def test_list_models_is_the_supported_set():
    models = list_models()
    assert len(models) == 24 == len(set(models))
    assert {"resnet18", "vit_b_16", "swin_t", "segmentation.fcn_resnet50", "video.s3d", "transformer"} <= set(models)


def as_json(graph):
    from frontend.graph import graph_to_json

    return json.loads(json.dumps(graph_to_json(graph)))


@pytest.mark.parametrize("name", FAST_MODELS)
def test_small_models_trace(name, well_formed):
    graph = check_model_graph(name, well_formed)
    # trace_model builds the model with its weights on the meta device: the same graph
    assert as_json(trace_model(name)) == as_json(graph)


@pytest.mark.slow
@pytest.mark.parametrize("name", list_models())
def test_every_supported_model_traces(name, well_formed):
    check_model_graph(name, well_formed)


def grow_in_place(x, sizes):
    """Changes the list it is given, as torchvision's Swin3D pads its window size (issue 24)."""
    sizes[0] += 1
    return x + sizes[0]


torch.fx.wrap("grow_in_place")


class ChangesAListArgument(torch.nn.Module):
    def forward(self, x):
        return grow_in_place(x, [1, 2])


def test_model_code_may_change_the_lists_it_is_given(well_formed):
    # FX stores a node's list arguments as immutable lists; shape propagation hands plain ones
    graph = trace(ChangesAListArgument(), (torch.zeros(2, 3),), name="changes-a-list")
    well_formed(graph)
    assert [graph.graph["tensors"][t]["shape"] for t in graph.graph["outputs"]] == [[2, 3]]


@pytest.mark.parametrize("name", ["video.swin3d_t", "video.mvit_v2_s"])
def test_swin3d_and_mvit_trace_at_their_default_shapes(name, well_formed):
    graph = trace_model(name)
    well_formed(graph)
    inputs = graph.graph["inputs"]
    assert [graph.graph["tensors"][t]["shape"] for t in inputs] == [list(default_input_shape(name))]
    assert sum(d["macs"] for _, d in graph.nodes(data=True)) > 0


def test_resnet18_matches_the_published_1_82_gmacs(well_formed):
    graph = trace_model("resnet18")
    ops = dict(graph.nodes(data=True))
    conv_macs = sum(d["macs"] for d in ops.values() if d["op"] == "conv2d")
    assert conv_macs == pytest.approx(1.81e9, rel=0.005)
    assert ops["fc"]["macs"] == 512 * 1000
    assert sum(d["macs"] for d in ops.values()) == 1_814_073_344
    assert graph.graph["inputs"] == ["x"] and graph.graph["outputs"] == ["fc"]
    assert graph.graph["aliases"] == {"flatten": "avgpool"}


def test_default_input_shapes():
    assert default_input_shape("resnet18") == (1, 3, 224, 224)
    assert default_input_shape("inception_v3") == (1, 3, 299, 299)
    assert default_input_shape("video.r2plus1d_18") == (1, 3, 16, 112, 112)
    assert default_input_shape("video.s3d") == (1, 3, 16, 224, 224)
    # MViT's position tables are sized for 224 x 224 frames; Inception's for 299 x 299
    assert default_input_shape("video.mvit_v2_s") == default_input_shape("video.mvit_v1_b") == (1, 3, 16, 224, 224)
    assert default_input_shape("quantization.quantized_inception_v3") == (1, 3, 299, 299)
    _, (src, tgt) = load_model("transformer")
    assert src.shape == (10, 32, 512) and tgt.shape == (20, 32, 512)


def test_input_shape_overrides_the_default(well_formed):
    model, (x,) = load_model("squeezenet1_0", input_shape=(2, 3, 96, 96))
    assert x.shape == (2, 3, 96, 96)
    graph = trace_model("squeezenet1_0", dtype="int8", input_shape=(2, 3, 96, 96))
    well_formed(graph)
    assert graph.graph["tensors"]["x"]["nbytes"] == 2 * 3 * 96 * 96
    assert graph.graph["dtype"] == "int8"


def test_example_inputs_are_deterministic():
    _, (a,) = load_model("squeezenet1_0")
    _, (b,) = load_model("squeezenet1_0")
    assert torch.equal(a, b)


def test_transformer_refuses_an_input_shape():
    with pytest.raises(ValueError, match="transformer.*input_shape"):
        load_model("transformer", input_shape=(1, 2, 3))


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [("resnet181", "resnet18"), ("vit", "vit_b_16"), ("fcn_resnet50", "segmentation.fcn_resnet50"),
     ("segmentation.fcn_resnet5", "segmentation.fcn_resnet50"), ("video.s3", "video.s3d")],
)
def test_unknown_model_names_the_model_and_suggests_close_names(name, suggestion):
    with pytest.raises(UnknownModelError) as info:
        load_model(name)
    message = str(info.value)
    assert repr(name) in message
    assert suggestion in message
    assert isinstance(info.value, ValueError)


# --------------------------------------------------------------------------- input shapes and memory


def test_meta_build_has_no_weight_data():
    model, (x,) = load_model("resnet18", input_shape=(1, 3, 64, 64), device="meta")
    tensors = [*model.parameters(), *model.buffers()]
    assert tensors and all(t.is_meta for t in tensors)
    assert x.is_meta and x.shape == (1, 3, 64, 64)
    cpu, _ = load_model("resnet18")
    assert [(n, p.shape) for n, p in model.named_parameters()] == [(n, p.shape) for n, p in cpu.named_parameters()]


def test_a_wrong_rank_input_shape_is_one_line_naming_model_shape_and_its_error(capfd):
    with pytest.raises(TraceError) as info:
        trace_model("resnet18", input_shape=(1, 3, 224))
    message = str(info.value)
    assert "\n" not in message
    assert "'resnet18'" in message and "(1, 3, 224)" in message
    assert "expected input[1, 1, 3, 224] to have 3 channels, but got 1 channels instead" in message  # conv2d's words
    assert "conv1" in message
    assert message.endswith("the default input shape of 'resnet18', which it accepts, is 1,3,224,224")
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err + captured.out


def test_mvit_at_the_wrong_frame_size_names_the_shape_it_expects():
    with pytest.raises(TraceError) as info:
        trace_model("video.mvit_v2_s", input_shape=(1, 3, 16, 112, 112))
    assert "\n" not in str(info.value)
    assert str(info.value).endswith("the default input shape of 'video.mvit_v2_s', which it accepts, is 1,3,16,224,224")


@pytest.mark.parametrize("shape", [(1, 3, 0, 224), (1, 3, -4, 224), (1, 3, 22.5, 224), (1, 3, True, 224), ("1", 3)])
def test_a_bad_input_shape_is_refused_naming_the_model(shape):
    with pytest.raises(ValueError, match=r"input shape .* of model 'squeezenet1_0'.*integer >= 1"):
        load_model("squeezenet1_0", input_shape=shape)


def test_load_model_refuses_an_unknown_device():
    with pytest.raises(ValueError, match="device must be 'cpu' or 'meta'"):
        load_model("squeezenet1_0", device="cuda:7")


def test_a_huge_input_shape_allocates_no_activation_memory():
    """resnet18 at 1x3x4096x4096: its first activation alone is 1 GiB as a real tensor.

    The peak resident memory of a fresh process may not grow by more than 200 MiB between
    tracing at 224x224 and at 4096x4096 (with real tensors it grew by several GiB; fake tensors
    make it independent of the input size). A subprocess, so that earlier tests' peaks do not hide
    the growth; memory, not time, so the machine's load does not matter.
    """
    code = textwrap.dedent("""
        import json, resource
        import frontend
        small = frontend.trace_model("resnet18", input_shape=(1, 3, 224, 224))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        big = frontend.trace_model("resnet18", input_shape=(1, 3, 4096, 4096))
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"growth_kib": after - before, "conv1": big.graph["tensors"]["conv1"]["shape"],
                          "ops": [len(small), len(big)]}))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    report = json.loads(result.stdout)
    assert report["conv1"] == [1, 64, 2048, 2048]
    assert report["ops"][0] == report["ops"][1] > 0
    assert report["growth_kib"] < 200 * 1024, f"peak RSS grew by {report['growth_kib'] / 1024:.0f} MiB"

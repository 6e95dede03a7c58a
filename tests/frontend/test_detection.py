"""Detectors split between accelerator and host, RAFT's two frames, quantized models (issue 24)."""

import pytest
import torch

from frontend import trace, trace_model
from frontend.host import crossing_bytes, split
from frontend.zoo import default_input_shapes, resolve_input_shapes, torchvision_models

ONE_STAGE = "detection.ssdlite320_mobilenet_v3_large"
TWO_STAGE = "detection.fasterrcnn_mobilenet_v3_large_320_fpn"
SMALL = (1, 3, 128, 128)


def check_host_records(graph):
    """Every crossing tensor is where the records say: accelerator outputs go to the host,
    host results the accelerator reads are accelerator inputs, bytes as in the tensor records."""
    tensors = graph.graph["tensors"]
    for record in graph.graph["host_ops"]:
        for entry in record["inputs"]:
            if entry["side"] == "accelerator":
                assert entry["tensor"] in graph.graph["outputs"] or tensors[entry["tensor"]]["kind"] == "input"
                assert entry["bytes"] == tensors[entry["tensor"]]["nbytes"]
            else:
                assert entry["tensor"] not in tensors
        for entry in record["outputs"]:
            if entry["side"] == "accelerator":
                assert tensors[entry["tensor"]]["kind"] == "input"
                assert entry["tensor"] in graph.graph["inputs"]
                assert entry["bytes"] == tensors[entry["tensor"]]["nbytes"]
            else:
                assert entry["tensor"] not in tensors
        assert record["after"] is None or record["after"] in graph
    assert not any(data.get("device") == "host" for _, data in graph.nodes(data=True))


def test_one_stage_detector_runs_backbone_and_head_and_leaves_the_rest_to_the_host(well_formed):
    g = trace_model(ONE_STAGE)
    well_formed(g)
    assert [h["kind"] for h in g.graph["host_ops"]] == ["anchors", "box_decode", "nms"]
    check_host_records(g)
    assert g.graph["inputs"] == ["images"]  # nothing comes back from the host
    # the head's two outputs cross: (N, anchors, 4) boxes and (N, anchors, 91) scores
    shapes = sorted(g.graph["tensors"][t]["shape"] for t in g.graph["outputs"])
    anchors = shapes[0][1]
    assert shapes == [[1, anchors, 4], [1, anchors, 91]]
    anchors_record = g.graph["host_ops"][0]
    assert anchors_record["inputs"] == []  # the feature maps' sizes only: nothing crosses
    assert anchors_record["outputs"][0]["shape"] == [anchors, 4]
    nms = g.graph["host_ops"][2]
    assert [e["shape"] for e in nms["outputs"]] == [[1, 300, 4], [1, 300], [1, 300]]  # detections_per_img
    assert all(e["side"] == "host" for e in nms["outputs"])
    assert g.graph["tensors"]["images"]["shape"] == [1, 3, 320, 320]


def test_two_stage_detector_pools_regions_on_the_host_between_its_accelerator_stages(well_formed):
    g = trace_model(TWO_STAGE, input_shape=SMALL)
    well_formed(g)
    check_host_records(g)
    kinds = [h["kind"] for h in g.graph["host_ops"]]
    # the model's own rpn_post_nms_top_n_test, 150 for the 320 model (1000 for the others), pooled
    # for the box head in batches of region_batch = 50
    assert kinds == ["anchors", "box_decode", "nms", *["roi_align"] * 3, "class_box_decode", "nms"]
    pooled = [h["outputs"][0] for h in g.graph["host_ops"] if h["kind"] == "roi_align"]
    assert all(p["side"] == "accelerator" and p["shape"] == [50, 256, 7, 7] for p in pooled)
    assert all(h["waits_for"] for h in g.graph["host_ops"] if h["kind"] == "roi_align"), "RoI align waits for the FPN"
    # the box head reads the pooled regions, which the accelerator loads as inputs
    for p in pooled:
        assert g.graph["tensors"][p["tensor"]]["kind"] == "input"
        head = g.graph["tensors"][p["tensor"]]["consumers"]
        assert head and g.nodes[head[0]]["op"] in ("linear", "flatten", "conv2d")
    final = g.graph["host_ops"][-1]["outputs"]
    assert [e["shape"] for e in final] == [[1, 100, 4], [1, 100], [1, 100]]  # box_detections_per_img
    to_host, from_host = crossing_bytes(g)
    assert from_host == sum(p["bytes"] for p in pooled) == 150 * 256 * 7 * 7 * 4
    assert to_host == sum(g.graph["tensors"][t]["nbytes"] for t in g.graph["outputs"])


def test_region_batch_sets_how_many_regions_each_head_runs_on(well_formed):
    whole = trace_model(TWO_STAGE, input_shape=SMALL, options={"region_batch": 1000})
    well_formed(whole)
    pooled = [h["outputs"][0]["shape"] for h in whole.graph["host_ops"] if h["kind"] == "roi_align"]
    assert pooled == [[150, 256, 7, 7]]
    batched = trace_model(TWO_STAGE, input_shape=SMALL, options={"region_batch": 40})
    pooled = [h["outputs"][0]["shape"][0] for h in batched.graph["host_ops"] if h["kind"] == "roi_align"]
    assert pooled == [40, 40, 40, 30]
    macs = [sum(d["macs"] for _, d in g.nodes(data=True)) for g in (whole, batched)]
    assert macs[0] == macs[1]  # the same work in batches
    with pytest.raises(ValueError, match="no option 'region_batch'"):
        trace_model(ONE_STAGE, options={"region_batch": 10})


@pytest.mark.parametrize("name", ["detection.maskrcnn_resnet50_fpn", "detection.keypointrcnn_resnet50_fpn"])
def test_mask_and_keypoint_heads_run_on_the_detections(name, well_formed):
    g = trace_model(name, input_shape=SMALL)
    well_formed(g)
    check_host_records(g)
    records = g.graph["host_ops"]
    assert [r["kind"] for r in records][-3:-1] == ["roi_align", "roi_align"]
    # the 100 detections, pooled at the head's size, in two batches of 50
    assert [r["outputs"][0]["shape"] for r in records[-3:-1]] == [[50, 256, 14, 14]] * 2
    last = records[-1]
    if "mask" in name:
        assert last["kind"] == "paste_masks"
        assert last["outputs"][0]["shape"] == [1, 100, 1, 128, 128]
    else:
        assert last["kind"] == "heatmap_keypoints"
        assert last["outputs"][0]["shape"] == [1, 100, 17, 3]
        assert [e["shape"] for e in last["inputs"] if e["side"] == "accelerator"] == [[50, 17, 56, 56]] * 2


def test_batch_scales_the_detector_and_its_host_results(well_formed):
    g = trace_model(ONE_STAGE, input_shape=SMALL, batch=2)
    well_formed(g)
    assert g.graph["tensors"]["images"]["shape"] == [2, 3, 128, 128]
    assert g.graph["host_ops"][2]["outputs"][0]["shape"] == [2, 300, 4]


def test_raft_takes_two_frames_and_unrolls_its_refinements(well_formed):
    graphs = {n: trace_model("optical_flow.raft_small", input_shape=SMALL, options={"num_flow_updates": n})
              for n in (1, 3)}
    for g in graphs.values():
        well_formed(g)
        assert g.graph["inputs"] == ["image1", "image2"]
        assert [g.graph["tensors"][t]["shape"] for t in g.graph["outputs"]] == [[1, 2, 128, 128]]
    per_update = (graphs[3].number_of_nodes() - graphs[1].number_of_nodes()) / 2
    assert per_update > 10 and per_update == int(per_update)  # each refinement adds the same operators
    with pytest.raises(ValueError, match="num_flow_updates"):
        trace_model("optical_flow.raft_small", options={"num_flow_updates": 0})
    with pytest.raises(ValueError, match="no option 'iterations'"):
        trace_model("optical_flow.raft_small", options={"iterations": 3})


def test_input_shapes_one_per_input_a_shared_one_and_batch():
    assert default_input_shapes("optical_flow.raft_large") == ((1, 3, 368, 496),) * 2
    assert resolve_input_shapes("optical_flow.raft_large", (1, 3, 64, 64)) == ((1, 3, 64, 64),) * 2
    assert resolve_input_shapes("optical_flow.raft_large", [(1, 3, 64, 64), (1, 3, 64, 64)], batch=4) == (
        (4, 3, 64, 64),) * 2
    assert resolve_input_shapes("transformer", batch=8) == ((10, 8, 512), (20, 8, 512))
    with pytest.raises(ValueError, match="takes 2 input"):
        resolve_input_shapes("optical_flow.raft_large", [(1, 3, 64, 64)] * 3)
    with pytest.raises(ValueError, match="batch=0"):
        resolve_input_shapes("resnet18", batch=0)
    assert default_input_shapes("detection.ssd300_vgg16") == ((1, 3, 300, 300),)
    assert default_input_shapes("detection.retinanet_resnet50_fpn") == ((1, 3, 512, 512),)


def test_quantized_models_are_built_quantized_with_int8_weights(well_formed):
    q = trace_model("quantization.quantized_resnet18", dtype="bf16")
    f = trace_model("resnet18", dtype="bf16")
    well_formed(q)
    tensors = q.graph["tensors"]
    conv_weights = [r for t, r in tensors.items() if r["kind"] == "weight" and t.endswith(".weight")]
    assert conv_weights and all(r["dtype"] == "int8" for r in conv_weights)
    activations = [r for r in tensors.values() if r["kind"] == "activation"]
    assert sum(r["dtype"] == "uint8" for r in activations) > len(activations) / 2
    assert q.number_of_nodes() < f.number_of_nodes()  # BatchNorm and ReLU fused into the convolutions
    macs = sum(d["macs"] for _, d in q.nodes(data=True))
    assert macs == sum(d["macs"] for _, d in f.nodes(data=True))
    kinds = {d["op"] for _, d in q.nodes(data=True)}
    assert {"quantize", "de_quantize"} <= kinds


def test_a_users_host_operators_by_module_name_and_by_kind(well_formed):
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3)
            self.post = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(8 * 6 * 6, 4))
            self.refine = torch.nn.Conv2d(1, 1, 1)

        def forward(self, x):
            y = self.conv(x)
            scores = self.post(y)
            top = torch.topk(scores, 2)[0]
            return self.refine(top.reshape(1, 1, 1, 2))

    x = torch.randn(1, 3, 8, 8)
    g = trace(Net().eval(), x, host=["post", "topk"])
    well_formed(g)
    records = g.graph["host_ops"]
    assert [(r["name"], r["kind"]) for r in records] == [("post", "sequential"), ("topk", "topk")]
    assert list(g.nodes) == ["conv", "refine"]
    assert g.graph["tensors"]["conv"]["kind"] == "output"  # written for the host
    assert records[0]["inputs"][0]["bytes"] == 8 * 6 * 6 * 4
    back = [e["tensor"] for e in records[1]["outputs"] if e["side"] == "accelerator"]
    assert back and g.graph["tensors"][back[0]]["kind"] == "input"
    with pytest.raises(ValueError, match="'postprocess'"):
        trace(Net().eval(), x, host=["postprocess"])


def test_split_leaves_a_graph_without_host_operators_alone():
    g = trace_model("resnet18", input_shape=(1, 3, 32, 32))
    assert split(g) is g and "host_ops" not in g.graph


def test_torchvision_models_lists_all_121_names():
    names = torchvision_models()
    assert len(names) == len(set(names)) == 121
    assert sum(n.startswith("detection.") for n in names) == 12

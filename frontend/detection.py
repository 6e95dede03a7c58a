"""torchvision's detectors split as mobile deployments split them, and RAFT with its loop unrolled.

A torchvision detector takes a list of images and ends in steps whose shapes depend on the
data (anchor matching, box decoding, non-maximum suppression), so it neither traces with
torch.fx nor runs on an accelerator as it is. Deployments (TFLite's detection models, the
Edge TPU's, Qualcomm's) run the network on the accelerator and those steps on the host, and
pad the host's results to a fixed count. ``for_accelerator(model, name)`` builds that split
from the model's own modules, by one rule per family:

* **one-stage** (RetinaNet, FCOS, SSD, SSDLite): the accelerator runs ``backbone`` (with its
  FPN or extra layers) and ``head`` on the image; the host generates the anchors (from the
  feature maps' sizes only), decodes the boxes from the head's regression and runs NMS, keeping
  the model's own ``detections_per_img`` (RetinaNet 300, FCOS 100, SSD 200).
* **two-stage** (Faster / Mask / Keypoint R-CNN): the accelerator runs ``backbone`` + FPN and
  the RPN head; the host generates anchors, decodes the proposals, runs NMS keeping the RPN's
  test-time ``post_nms_top_n`` (1000) proposals and pools them with RoI align from the
  feature maps the model's ``box_roi_pool`` names; the accelerator runs the box head and
  predictor on those regions, in batches of at most ``region_batch`` regions (a zoo option,
  50 by default: one RoI align host operator per batch, the heads' weights shared); the host
  decodes and runs NMS keeping ``detections_per_img`` (100). Mask R-CNN: the host RoI-aligns
  the detections (``mask_roi_pool``, 14 x 14), the accelerator runs the mask head and predictor
  on them in batches, the host pastes the masks into the image. Keypoint R-CNN: the same with
  the keypoint head, and the host turns heatmaps into keypoints.

The image the accelerator sees is the model's input as given (``--input-shape``): the host's
resizing and normalisation (torchvision's ``GeneralizedRCNNTransform``) are not modelled, and
the zoo's default sizes are the ones mobile deployments use (``frontend.zoo``).

Each host step is a ``frontend.host.host_function``: it computes only its result's shape
(its values are never used; on the host torchvision's own code runs the step), so the graph
knows what crosses the boundary and its bytes. ``frontend.host.split`` then makes the
tensors the host reads accelerator outputs and those it writes accelerator inputs.

``FinalFlow`` wraps RAFT (``optical_flow.*``): its forward takes the two frames and runs the
refinement ``num_flow_updates`` times, unrolled by the trace, returning the last flow only,
which is what inference uses (RAFT's forward returns every iteration's upsampled flow; the
upsampling of all but the last is dead code and dropped).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx
from torch import nn

from frontend.host import host_function

# ---------------------------------------------------------------- host steps (shapes only)


@host_function("anchors", shape_only=("features",))
def anchors(features: list[torch.Tensor], per_location: list[int]) -> torch.Tensor:
    """Every anchor of the feature maps, ``(sum(H * W * A), 4)``; reads only their sizes."""
    total = sum(int(f.shape[-2]) * int(f.shape[-1]) * a for f, a in zip(features, per_location, strict=True))
    return features[0].new_empty((total, 4))


@host_function("box_decode")
def box_decode(regression: list[torch.Tensor], anchors: torch.Tensor) -> torch.Tensor:
    """Boxes from the regression at every anchor, ``(N, anchors, 4)``."""
    return anchors.new_empty((int(regression[0].shape[0]), int(anchors.shape[0]), 4))


@host_function("nms")
def nms(boxes: torch.Tensor, scores: list[torch.Tensor], keep: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Non-maximum suppression padded to ``keep`` boxes per image: boxes, scores and labels."""
    n = int(boxes.shape[0])
    return (boxes.new_empty((n, keep, 4)), boxes.new_empty((n, keep)),
            boxes.new_empty((n, keep), dtype=torch.int64))


@host_function("class_box_decode")
def class_box_decode(class_logits: list[torch.Tensor], box_regression: list[torch.Tensor], proposals: torch.Tensor,
                     images: int) -> torch.Tensor:
    """Per-class boxes of every region (the heads' batches together), ``(N, regions, classes, 4)``."""
    regions = sum(int(c.shape[0]) for c in class_logits) // images
    return proposals.new_empty((images, regions, int(class_logits[0].shape[1]), 4))


@host_function("roi_align")
def roi_align(features: list[torch.Tensor], boxes: torch.Tensor, output_size: list[int], start: int,
              stop: int) -> torch.Tensor:
    """RoI align of boxes ``start`` to ``stop`` (of all images' boxes in order) from the feature
    maps, ``(stop - start, C, *output_size)``."""
    return features[0].new_empty((stop - start, int(features[0].shape[1]), *output_size))


@host_function("paste_masks", shape_only=("image",))
def paste_masks(mask_logits: list[torch.Tensor], boxes: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
    """Each detection's mask pasted into the image, ``(N, detections, 1, H, W)``."""
    n, detections = int(boxes.shape[0]), int(boxes.shape[1])
    return mask_logits[0].new_empty((n, detections, 1, int(image.shape[-2]), int(image.shape[-1])))


@host_function("heatmap_keypoints")
def heatmap_keypoints(heatmaps: list[torch.Tensor], boxes: torch.Tensor) -> torch.Tensor:
    """Keypoints (x, y, score) from the heatmaps, ``(N, detections, K, 3)``."""
    n, detections = int(boxes.shape[0]), int(boxes.shape[1])
    return heatmaps[0].new_empty((n, detections, int(heatmaps[0].shape[1]), 3))


for _step in (anchors, box_decode, nms, class_box_decode, roi_align, paste_masks, heatmap_keypoints):
    torch.fx.wrap(_step.__name__)  # calls from this module stay whole under torch.fx

# ---------------------------------------------------------------- the families


def _per_location(generator: Any, levels: int) -> list[int]:
    """Anchors per location at each level (FCOS's generator has one anchor size per level)."""
    counts = [int(a) for a in generator.num_anchors_per_location()]
    return counts if len(counts) == levels else [counts[0]] * levels


class OneStage(nn.Module):
    """RetinaNet, FCOS, SSD, SSDLite: backbone + head on the accelerator, the rest on the host."""

    def __init__(self, model: Any, levels: int) -> None:
        super().__init__()
        self.backbone = model.backbone
        self.head = model.head
        self.per_location = _per_location(model.anchor_generator, levels)
        self.keep = int(model.detections_per_img)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        features = list(self.backbone(images).values())
        head = self.head(features)
        boxes = box_decode([head["bbox_regression"]], anchors(features, self.per_location))
        scores = [head["cls_logits"]] + ([head["bbox_ctrness"]] if "bbox_ctrness" in head else [])
        return nms(boxes, scores, self.keep)


class TwoStage(nn.Module):
    """Faster / Mask / Keypoint R-CNN: the network stages on the accelerator, the region steps on the host."""

    def __init__(self, model: Any, region_batch: int) -> None:
        super().__init__()
        self.backbone = model.backbone
        self.rpn_head = model.rpn.head
        self.per_location = [int(a) for a in model.rpn.anchor_generator.num_anchors_per_location()]
        self.proposals = int(model.rpn.post_nms_top_n())  # the test-time count: the model is in eval mode
        self.region_batch = region_batch
        heads = model.roi_heads
        self.box_levels = list(heads.box_roi_pool.featmap_names)
        self.box_size = list(heads.box_roi_pool.output_size)
        self.box_head = heads.box_head
        self.box_predictor = heads.box_predictor
        self.keep = int(heads.detections_per_img)
        self.mask_head = heads.mask_head if heads.has_mask() else None
        self.mask_predictor = heads.mask_predictor if heads.has_mask() else None
        self.mask_size = list(heads.mask_roi_pool.output_size) if heads.has_mask() else []
        self.keypoint_head = heads.keypoint_head if heads.has_keypoint() else None
        self.keypoint_predictor = heads.keypoint_predictor if heads.has_keypoint() else None
        self.keypoint_size = list(heads.keypoint_roi_pool.output_size) if heads.has_keypoint() else []

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, ...]:
        features = self.backbone(images)
        levels = list(features.values())
        objectness, deltas = self.rpn_head(levels)
        proposals = box_decode(deltas, anchors(levels, self.per_location))
        proposals = nms(proposals, objectness, self.proposals)[0]
        pooled_levels = [features[name] for name in self.box_levels if name in features]
        n = int(images.shape[0])  # the example's batch: the trace is specialised to it
        class_logits, box_regression = [], []
        for start, stop in self.batches(n * self.proposals):
            regions = roi_align(pooled_levels, proposals, self.box_size, start, stop)
            logits, regression = self.box_predictor(self.box_head(regions))
            class_logits.append(logits)
            box_regression.append(regression)
        boxes = class_box_decode(class_logits, box_regression, proposals, n)
        boxes, scores, labels = nms(boxes, class_logits, self.keep)
        results: tuple[torch.Tensor, ...] = (boxes, scores, labels)
        if self.mask_head is not None and self.mask_predictor is not None:
            masks = [self.mask_predictor(self.mask_head(roi_align(pooled_levels, boxes, self.mask_size, a, b)))
                     for a, b in self.batches(n * self.keep)]
            results += (paste_masks(masks, boxes, images),)
        if self.keypoint_head is not None and self.keypoint_predictor is not None:
            heatmaps = [self.keypoint_predictor(self.keypoint_head(
                roi_align(pooled_levels, boxes, self.keypoint_size, a, b))) for a, b in self.batches(n * self.keep)]
            results += (heatmap_keypoints(heatmaps, boxes),)
        return results

    def batches(self, regions: int) -> list[tuple[int, int]]:
        """The ``[start, stop)`` ranges of the region heads' batches."""
        return [(a, min(a + self.region_batch, regions)) for a in range(0, regions, self.region_batch)]


def for_accelerator(model: Any, name: str, region_batch: int | None = None) -> nn.Module:
    """The detector ``model`` (the zoo's ``name``) as the module its accelerator deployment traces;
    a two-stage model runs its region heads in batches of ``region_batch`` regions."""
    from torchvision.models.detection import fcos, generalized_rcnn, retinanet, ssd

    if isinstance(model, generalized_rcnn.GeneralizedRCNN):
        if region_batch is None:
            raise ValueError(f"model {name!r}: a two-stage detector needs a region_batch")
        return TwoStage(model, region_batch).eval()
    if isinstance(model, (retinanet.RetinaNet, fcos.FCOS, ssd.SSD)):
        levels = len(model.anchor_generator.num_anchors_per_location()) if isinstance(model, ssd.SSD) else 0
        if not levels:
            sizes = getattr(model.anchor_generator, "sizes", ())
            levels = len(sizes)
        return OneStage(model, levels).eval()
    raise ValueError(f"model {name!r}: no accelerator split for a {type(model).__name__}")


class FinalFlow(nn.Module):
    """RAFT on two frames with ``num_flow_updates`` refinements; returns the final flow only."""

    def __init__(self, model: nn.Module, num_flow_updates: int) -> None:
        super().__init__()
        self.model = model
        self.num_flow_updates = num_flow_updates

    def forward(self, image1: torch.Tensor, image2: torch.Tensor) -> torch.Tensor:
        flows = self.model(image1, image2, num_flow_updates=self.num_flow_updates)
        return flows[-1]

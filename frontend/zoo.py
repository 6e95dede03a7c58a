"""The model zoo: torchvision models by name, with the input shapes they are traced at.

Names:

* a torchvision classification model by its plain name (``"resnet18"``, ``"vit_b_16"``; any
  name in ``torchvision.models.list_models(module=torchvision.models)``);
* ``"segmentation.NAME"`` and ``"video.NAME"`` for those torchvision families (other families,
  ``"detection.NAME"``, ``"optical_flow.NAME"``, ``"quantization.NAME"``, are built too, but
  detection and optical-flow models do not trace: ``trace_model`` raises ``TraceError``);
* ``"transformer"``: ``torch.nn.Transformer(d_model=512)`` (other arguments at their defaults)
  on a source of shape ``(10, 32, 512)`` and a target of shape ``(20, 32, 512)``.

``list_models()`` is the set checked to trace end to end (the tests trace every one of them).

Every model is built with random weights (``weights=None``, ``weights_backbone=None``): nothing
is ever downloaded, and an attempt to would raise. Segmentation models are built without their
auxiliary classifier and GoogLeNet / Inception v3 without their auxiliary logits, which only
training uses. Default input shapes: ``(1, 3, 224, 224)`` images, ``(1, 3, 299, 299)`` for
``inception_v3``, ``(1, 3, 16, 112, 112)`` clips for video models, ``(1, 3, 16, 224, 224)``
for ``video.s3d``.
"""

from __future__ import annotations

import difflib
import inspect
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from unittest import mock

if TYPE_CHECKING:
    import networkx as nx
    import torch

#: the models checked to trace, in the order they are listed
SUPPORTED_MODELS: tuple[str, ...] = (
    "resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large",
    "efficientnet_b0", "densenet121", "resnext50_32x4d", "inception_v3", "googlenet",
    "squeezenet1_0", "vgg16", "vit_b_16", "swin_t", "convnext_tiny", "regnet_y_400mf",
    "shufflenet_v2_x1_0", "mnasnet0_5",
    "segmentation.fcn_resnet50", "segmentation.deeplabv3_mobilenet_v3_large",
    "segmentation.lraspp_mobilenet_v3_large",
    "video.r2plus1d_18", "video.s3d",
    "transformer",
)

#: torchvision sub-packages reachable as ``"<family>.NAME"``
FAMILIES: tuple[str, ...] = ("segmentation", "video", "detection", "optical_flow", "quantization")

TRANSFORMER_SHAPES = {"src": (10, 32, 512), "tgt": (20, 32, 512)}

_IMAGE_SHAPE = (1, 3, 224, 224)
_SPECIAL_SHAPES = {
    "inception_v3": (1, 3, 299, 299),
    "video.s3d": (1, 3, 16, 224, 224),
}
_VIDEO_SHAPE = (1, 3, 16, 112, 112)
_BUILD_OPTIONS: dict[str, dict[str, Any]] = {
    # the auxiliary heads only run in training; building them would leave unused weights
    "inception_v3": {"aux_logits": False, "init_weights": False},
    "googlenet": {"aux_logits": False, "init_weights": False},
}


class UnknownModelError(ValueError):
    """A model name the zoo does not know; the message suggests close names."""


def list_models() -> list[str]:
    """The zoo names checked to trace (see the module docstring for every accepted name)."""
    return list(SUPPORTED_MODELS)


def _split(name: str) -> tuple[str | None, str]:
    family, dot, rest = name.partition(".")
    return (family, rest) if dot and family in FAMILIES else (None, name)


def _torchvision_names() -> dict[str, list[str]]:
    import torchvision.models as models

    names = {"": list(models.list_models(module=models))}
    for family in FAMILIES:
        module = getattr(models, family, None)
        if module is None:
            import importlib

            module = importlib.import_module(f"torchvision.models.{family}")
        names[family] = list(models.list_models(module=module))
    return names


def _unknown(name: str, known: dict[str, list[str]]) -> UnknownModelError:
    candidates = ["transformer", *known[""]]
    candidates += [f"{family}.{n}" for family in FAMILIES for n in known[family]]
    family, plain = _split(name)
    close = [f"{fam}.{plain}" for fam in FAMILIES if plain in known[fam] and fam != family]  # family forgotten
    close += [c for c in candidates if c.startswith(name)]  # "vit" -> vit_b_16, ...
    close += difflib.get_close_matches(name, candidates, n=5, cutoff=0.6)
    close = list(dict.fromkeys(close))[:5]
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return UnknownModelError(
        f"unknown model {name!r}{hint} (frontend.list_models() lists the supported models; "
        f"any torchvision classification name, or segmentation.NAME / video.NAME, is accepted)"
    )


def default_input_shape(name: str) -> tuple[int, ...]:
    """The input shape ``load_model(name)`` uses unless told otherwise."""
    if name in _SPECIAL_SHAPES:
        return _SPECIAL_SHAPES[name]
    family, _ = _split(name)
    return _VIDEO_SHAPE if family == "video" else _IMAGE_SHAPE


def _refuse_download(url: str, *args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(f"frontend.zoo builds models with random weights and never downloads; "
                       f"the builder asked for {url}")


def load_model(name: str, input_shape: Sequence[int] | None = None) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """The model ``name`` in eval mode with random weights, and its example inputs.

    ``input_shape`` replaces the default input shape (not for ``"transformer"``, whose two
    inputs have fixed shapes). Inputs are drawn from a fixed seed, so they are the same on
    every call.

    Raises ``UnknownModelError`` for a name torchvision does not have, with close names.
    """
    import torch

    generator = torch.Generator().manual_seed(0)
    if name == "transformer":
        if input_shape is not None:
            raise ValueError(
                "model 'transformer' takes two inputs of fixed shapes "
                f"(src {TRANSFORMER_SHAPES['src']}, tgt {TRANSFORMER_SHAPES['tgt']}); "
                "input_shape cannot be set for it"
            )
        with warnings.catch_warnings():
            # "enable_nested_tensor is True, but self.use_nested_tensor is False": expected
            # for the default batch_first=False, and irrelevant to tracing
            warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
            model = torch.nn.Transformer(d_model=512).eval()
        inputs = tuple(torch.randn(shape, generator=generator) for shape in TRANSFORMER_SHAPES.values())
        return model, inputs

    import torchvision.models as models
    import torchvision.models._api as api

    family, plain = _split(name)
    known = _torchvision_names()
    if plain not in known[family or ""]:
        raise _unknown(name, known)
    builder = models.get_model_builder(plain)
    accepted = inspect.signature(builder).parameters
    options: dict[str, Any] = {"weights": None}
    if "weights_backbone" in accepted:
        options["weights_backbone"] = None
    if "aux_loss" in accepted:
        options["aux_loss"] = False
    options.update(_BUILD_OPTIONS.get(name, {}))
    with mock.patch.object(api, "load_state_dict_from_url", _refuse_download):
        model = builder(**options).eval()
    shape = tuple(int(d) for d in (input_shape if input_shape is not None else default_input_shape(name)))
    return model, (torch.randn(shape, generator=generator),)


def trace_model(name: str, dtype: str = "fp32", input_shape: Sequence[int] | None = None) -> nx.DiGraph:
    """``trace(*load_model(name, input_shape), dtype=dtype, name=name)``: the zoo model's graph."""
    from frontend.trace import trace

    model, inputs = load_model(name, input_shape)
    return trace(model, inputs, dtype=dtype, name=name)

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
is ever downloaded, and an attempt to would raise. ``trace_model`` goes further and builds the
model with its weights on the ``meta`` device (``load_model(name, device="meta")``): parameters
and buffers have their shapes and dtypes but no storage, initialising them does nothing, and the
example inputs are meta tensors. That is all tracing reads (shapes propagate on fake tensors,
see ``frontend.fx_capture``), so tracing skips weight initialisation and needs no memory for weights or
activations at any input size. (resnet50, CPU-seconds on one thread: build 0.47 -> 0.12, shapes
0.57 -> 0.37; a first call also imports torch and torchvision, about 5.7, which this cannot cut.) Every model of
``list_models()`` builds this way and traces to the same graph as with real weights (the slow
tests trace every one with real weights; a comparison of all 24 graphs, fp32 and int8, found
them identical), so no model needs a fallback to a CPU build.

Segmentation models are built without their auxiliary classifier and GoogLeNet / Inception v3
without their auxiliary logits, which only training uses. Default input shapes:
``(1, 3, 224, 224)`` images, ``(1, 3, 299, 299)`` for ``inception_v3`` and
``quantization.quantized_inception_v3``, ``(1, 3, 16, 112, 112)`` clips for video models,
``(1, 3, 16, 224, 224)`` for ``video.s3d``, ``video.mvit_v1_b`` and ``video.mvit_v2_s``.
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import operator
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

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
    "quantization.quantized_inception_v3": (1, 3, 299, 299),
    "video.s3d": (1, 3, 16, 224, 224),
    # MViT's relative position tables are sized for 224 x 224 frames: at 112 x 112 it fails
    "video.mvit_v1_b": (1, 3, 16, 224, 224),
    "video.mvit_v2_s": (1, 3, 16, 224, 224),
}
_VIDEO_SHAPE = (1, 3, 16, 112, 112)
_BUILD_OPTIONS: dict[str, dict[str, Any]] = {
    # the auxiliary heads only run in training; building them would leave unused weights
    "inception_v3": {"aux_logits": False, "init_weights": False},
    "googlenet": {"aux_logits": False, "init_weights": False},
}


class FrontendMissingError(ValueError):
    """Tracing needs PyTorch and torchvision, which the light install (``pip install accelsim``) leaves out."""


def require_torch(what: str) -> None:
    """Raise ``FrontendMissingError`` (one line: what needed it, and the extra to install) unless
    torch and torchvision can be imported. Checked with ``importlib.util.find_spec``, which
    imports neither.

    The allocator, the scheduler, the simulator and every command on a saved graph (``*.json``)
    or a trace-cache hit work without them; only tracing a model needs them.
    """
    import importlib.util

    missing = [name for name in ("torch", "torchvision") if importlib.util.find_spec(name) is None]
    if missing:
        raise FrontendMissingError(
            f"{what} needs the PyTorch frontend ({' and '.join(missing)} not installed): "
            "pip install 'accelsim[torch]'")


class UnknownModelError(ValueError):
    """A model name the zoo does not know; the message suggests close names."""


def list_models() -> list[str]:
    """The zoo names checked to trace (see the module docstring for every accepted name)."""
    return list(SUPPORTED_MODELS)


def _split(name: str) -> tuple[str | None, str]:
    family, dot, rest = name.partition(".")
    return (family, rest) if dot and family in FAMILIES else (None, name)


def _torchvision_names() -> dict[str, list[str]]:
    require_torch("checking a torchvision model name")
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


@contextlib.contextmanager
def _weights_on_meta() -> Iterator[None]:
    """While active, every parameter and buffer a module registers is moved to the meta device.

    ``Module.register_parameter`` / ``register_buffer`` are patched (``nn.Module.__setattr__``
    calls them), so a layer's ``Parameter(torch.empty(...))`` lands on meta before its
    ``reset_parameters`` runs, and initialisation does nothing. Unlike a ``torch.device("meta")``
    context, tensors the builder computes with are still real: regnet computes its block widths
    with tensors and ``.tolist()``, which meta tensors cannot. (The empty CPU tensor a layer
    allocates before registering is never written, so it is never resident.)
    """
    import torch

    register_parameter = torch.nn.Module.register_parameter
    register_buffer = torch.nn.Module.register_buffer

    def parameter_on_meta(module: torch.nn.Module, name: str, param: torch.nn.Parameter | None) -> None:
        if param is not None and not param.is_meta and not isinstance(param, torch.nn.parameter.UninitializedParameter):
            param = torch.nn.Parameter(param.detach().to("meta"), requires_grad=param.requires_grad)
        register_parameter(module, name, param)

    def buffer_on_meta(module: torch.nn.Module, name: str, tensor: torch.Tensor | None,
                       persistent: bool = True) -> None:
        register_buffer(module, name, tensor.to("meta") if tensor is not None else None, persistent)

    from unittest import mock  # (imports asyncio: only when a model is built)

    with mock.patch.object(torch.nn.Module, "register_parameter", parameter_on_meta), \
            mock.patch.object(torch.nn.Module, "register_buffer", buffer_on_meta):
        yield


def check_model_name(name: str) -> None:
    """Raise ``UnknownModelError`` (one line, with close names) unless the zoo can build ``name``.

    ``list_models()`` names and ``"transformer"`` are checked without importing torch; any
    other name is looked up in torchvision, which imports it.
    """
    if name in SUPPORTED_MODELS or name == "transformer":
        return
    family, plain = _split(name)
    known = _torchvision_names()
    if plain not in known[family or ""]:
        raise _unknown(name, known)


def checked_input_shape(name: str, input_shape: Sequence[int]) -> tuple[int, ...]:
    """``input_shape`` as a tuple of ints >= 1, or ``ValueError`` naming the model and the shape."""
    shape: list[int] = []
    for d in input_shape:
        try:
            value = operator.index(d)  # ints and numpy ints; not 3.5, "3" or True
        except TypeError:
            value = None
        if value is None or isinstance(d, bool) or value < 1:
            raise ValueError(f"input shape {tuple(input_shape)!r} of model {name!r}: every dimension "
                             f"must be an integer >= 1, got {d!r}")
        shape.append(value)
    return tuple(shape)


def load_model(name: str, input_shape: Sequence[int] | None = None,
               device: str = "cpu") -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """The model ``name`` in eval mode with random weights, and its example inputs.

    ``input_shape`` replaces the default input shape (not for ``"transformer"``, whose two
    inputs have fixed shapes); each dimension must be an integer >= 1. On ``device="cpu"``
    inputs are drawn from a fixed seed, so they are the same on every call. ``device="meta"``
    puts every parameter and buffer on the meta device as it is registered (shapes and dtypes
    only: no data, no initialisation, no memory; see ``_weights_on_meta``) and gives
    ``torch.empty`` meta inputs; that is enough for ``trace``, not for running the model.

    Raises ``UnknownModelError`` for a name torchvision does not have, with close names, and
    ``ValueError`` for an input shape that is not positive integers, and
    ``FrontendMissingError`` when torch or torchvision is not installed.
    """
    require_torch(f"building model {name!r}")
    import torch

    if device not in ("cpu", "meta"):
        raise ValueError(f"load_model: device must be 'cpu' or 'meta', got {device!r}")
    generator = torch.Generator().manual_seed(0)
    weights = _weights_on_meta() if device == "meta" else contextlib.nullcontext()

    def example(shape: Sequence[int]) -> torch.Tensor:
        if device == "meta":
            return torch.empty(tuple(shape), device="meta")
        return torch.randn(tuple(shape), generator=generator)

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
            with weights:
                model = torch.nn.Transformer(d_model=512).eval()
        return model, tuple(example(shape) for shape in TRANSFORMER_SHAPES.values())

    import torchvision.models as models
    import torchvision.models._api as api

    check_model_name(name)
    _, plain = _split(name)
    builder = models.get_model_builder(plain)
    accepted = inspect.signature(builder).parameters
    options: dict[str, Any] = {"weights": None}
    if "weights_backbone" in accepted:
        options["weights_backbone"] = None
    if "aux_loss" in accepted:
        options["aux_loss"] = False
    options.update(_BUILD_OPTIONS.get(name, {}))
    shape = checked_input_shape(name, input_shape if input_shape is not None else default_input_shape(name))
    from unittest import mock

    with mock.patch.object(api, "load_state_dict_from_url", _refuse_download), weights:
        model = builder(**options).eval()
    return model, (example(shape),)


def trace_model(name: str, dtype: str = "fp32", input_shape: Sequence[int] | None = None) -> nx.DiGraph:
    """``trace(*load_model(name, input_shape, device="meta"), dtype=dtype, name=name)``: the zoo model's graph.

    Built on the meta device (see the module docstring): the graph is the same as with real
    weights, and neither time nor memory grows with ``input_shape``. Raises
    ``UnknownModelError``, ``ValueError`` for a bad ``input_shape`` (see ``load_model``) and
    ``TraceError`` when the model fails on the input, e.g. a wrong rank (one line: the model,
    the input shape and the model's own error; when the shape was not the default, the line
    ends with the default shape, the one the model is known to accept).
    """
    from frontend.trace import TraceError, trace

    model, inputs = load_model(name, input_shape, device="meta")
    try:
        return trace(model, inputs, dtype=dtype, name=name)
    except TraceError as error:
        default = default_input_shape(name)  # (load_model refuses an input_shape for "transformer")
        if input_shape is None or tuple(input_shape) == default:
            raise
        raise TraceError(f"{error}; the default input shape of {name!r}, which it accepts, is "
                         f"{','.join(map(str, default))}") from error

"""The model zoo: torchvision models by name, with the input shapes they are traced at.

Names: every name ``torchvision.models.list_models()`` gives (121 in torchvision 0.29.1), as

* the plain name for a classification model (``"resnet18"``, ``"vit_b_16"``);
* ``"FAMILY.NAME"`` for the other families: ``segmentation``, ``video``, ``detection``,
  ``optical_flow`` and ``quantization`` (``"detection.ssdlite320_mobilenet_v3_large"``);
* ``"transformer"``: ``torch.nn.Transformer(d_model=512)`` (other arguments at their defaults)
  on a source of shape ``(10, 32, 512)`` and a target of shape ``(20, 32, 512)``;
* ``"llm.NAME"``: a language model's shape (``frontend.llm``: GPT-2, Llama-3.2-1B/3B,
  Llama-3.1-8B, Qwen2.5-0.5B, Mistral-7B, BERT-base), traced at token ids ``(batch, tokens)``,
  ``(1, 512)`` by default: a prefill of ``tokens`` tokens, or with ``options={"past": P}`` one
  step of ``tokens`` new tokens after ``P`` cached ones (``--input-shape 1,1 --model-option
  past=511`` is a decode step at 512 positions of context).

``list_models()`` is the set the fast tests trace end to end; the slow tests trace all 121.

How each family is built (decisions):

* **detection**: split as mobile deployments split it (``frontend.detection``): backbone, FPN
  and heads on the accelerator; anchors, box decoding, NMS and RoI align on the host, recorded
  as host operators (``frontend.host``).
* **optical_flow** (RAFT): two frames in, the final flow out, its refinement loop unrolled
  ``num_flow_updates`` times (``MODEL_OPTIONS``: 12 by default, as torchvision's).
* **quantization**: built quantized, as deployed (``quantize=True``: fused, calibrated on
  torchvision's own example and converted; int8 weights, uint8 activations between the
  model's quantize and dequantize steps). The builder calibrates and packs real weights, so
  these are the only models built on the CPU with real weights (below); their graphs have
  the fused operators of the quantized model (resnet18: 33 operators against the float
  model's 68, the same MACs).
* segmentation models without their auxiliary classifier, GoogLeNet / Inception v3 without
  their auxiliary logits, which only training uses.

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
them identical).

Default input shapes (``default_input_shapes``; ``--input-shape`` and ``--batch`` override):
``(1, 3, 224, 224)`` images; ``(1, 3, 299, 299)`` for ``inception_v3`` and
``quantization.quantized_inception_v3``; ``(1, 3, 16, 112, 112)`` clips for video models,
``(1, 3, 16, 224, 224)`` for ``video.s3d``, ``video.mvit_v1_b`` and ``video.mvit_v2_s`` (MViT's
position tables are sized for 224 x 224 frames); detection images of ``(1, 3, 512, 512)``, or
the sizes the mobile detectors are built for: ``(1, 3, 320, 320)`` for SSDLite and the
``_320_fpn`` model, ``(1, 3, 300, 300)`` for SSD300; two ``(1, 3, 368, 496)`` frames for RAFT
(the crop its training and torchvision's references use).
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import math
import operator
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from frontend import llm
from frontend.trace import Tracing

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
    # the mobile detectors' own sizes (their anchors are laid out for them)
    "detection.ssdlite320_mobilenet_v3_large": (1, 3, 320, 320),
    "detection.fasterrcnn_mobilenet_v3_large_320_fpn": (1, 3, 320, 320),
    "detection.ssd300_vgg16": (1, 3, 300, 300),
}
_VIDEO_SHAPE = (1, 3, 16, 112, 112)
#: RAFT's two frames: the Sintel / FlyingChairs crop size its papers and torchvision's references use
_FLOW_SHAPE = (1, 3, 368, 496)
#: the detectors' image at the accelerator (after the host's resize and normalisation); the
#: mobile-sized families have their own (``_SPECIAL_SHAPES``)
_DETECTION_SHAPE = (1, 3, 512, 512)
_BUILD_OPTIONS: dict[str, dict[str, Any]] = {
    # the auxiliary heads only run in training; building them would leave unused weights
    "inception_v3": {"aux_logits": False, "init_weights": False},
    "googlenet": {"aux_logits": False, "init_weights": False},
    "quantization.quantized_inception_v3": {"aux_logits": False, "init_weights": False},
    "quantization.quantized_googlenet": {"aux_logits": False, "init_weights": False},
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


def torchvision_models() -> list[str]:
    """Every torchvision model name (``torchvision.models.list_models()``) as the zoo spells it:
    classification models by their plain name, then each family's as ``"FAMILY.NAME"``."""
    known = _torchvision_names()
    return [*known[""], *(f"{family}.{n}" for family in FAMILIES for n in known[family])]


#: how each detection family is split between accelerator and host (``frontend.detection``), by name prefix
DETECTION_SPLITS = {
    "retinanet": "one-stage", "fcos": "one-stage", "ssd300": "one-stage", "ssdlite": "one-stage",
    "fasterrcnn": "two-stage", "maskrcnn": "two-stage, mask head", "keypointrcnn": "two-stage, keypoint head",
}


def _detection_split(plain: str) -> str:
    """The ``DETECTION_SPLITS`` entry of the detector called ``plain`` (``""`` for none)."""
    return next((v for k, v in DETECTION_SPLITS.items() if plain.startswith(k)), "")


def model_status(name: str) -> str:
    """How the zoo runs ``name``: ``"runs"``, or for a detector ``"runs with host operators"``
    and its split (the slow tests check every torchvision name against this)."""
    family, plain = _split(name)
    if llm.is_llm(name):
        shape = llm.shape_of(name)
        steps = "decoder: prefill, or decode with --model-option past=N" if shape.kind == "decoder" else "encoder"
        count = llm.parameter_count(shape)
        shown = f"{count / 1e9:.2f}B" if count >= 1e9 else f"{count / 1e6:.1f}M"
        return f"runs ({steps}; {shown} parameters, published {shape.published_as.split(' (')[0]})"
    if family == "quantization":
        return "runs (built quantized: int8 weights, uint8 activations)"
    if family == "optical_flow":
        return f"runs (two frames, {MODEL_OPTIONS['optical_flow']['num_flow_updates']} refinements unrolled)"
    if family != "detection":
        return "runs"
    split = _detection_split(plain) or "two-stage"
    host = "anchors, box decoding, NMS" + (", RoI align" if split.startswith("two") else "")
    return f"runs with host operators ({split}: {host} on the host)"


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
        f"every torchvision name is accepted: classification by its plain name, the others as "
        f"{' / '.join(f + '.NAME' for f in FAMILIES)}; zoo.torchvision_models() lists them; language models "
        f"are {', '.join(llm.names())})"
    )


def input_count(name: str) -> int:
    """How many tensors the model ``name`` takes: 2 for ``"transformer"`` (source and target)
    and the optical-flow models (two frames), 1 for every other zoo model."""
    family, _ = _split(name)
    return 2 if name == "transformer" or family == "optical_flow" else 1  # an llm's cache comes from its options


def default_input_shape(name: str) -> tuple[int, ...]:
    """The shape of the first input ``load_model(name)`` uses unless told otherwise."""
    return default_input_shapes(name)[0]


def default_input_shapes(name: str) -> tuple[tuple[int, ...], ...]:
    """The input shapes ``load_model(name)`` uses unless told otherwise, one per input."""
    if name == "transformer":
        return tuple(TRANSFORMER_SHAPES.values())
    if llm.is_llm(name):
        return ((1, llm.DEFAULT_TOKENS),)
    family, _ = _split(name)
    if name in _SPECIAL_SHAPES:
        shape = _SPECIAL_SHAPES[name]
    elif family == "video":
        shape = _VIDEO_SHAPE
    elif family == "optical_flow":
        shape = _FLOW_SHAPE
    elif family == "detection":
        shape = _DETECTION_SHAPE
    else:
        shape = _IMAGE_SHAPE
    return (shape,) * input_count(name)


def _is_shape(value: Any) -> bool:
    """Is ``value`` one shape (a sequence of scalars), not a sequence of shapes?"""
    return not any(isinstance(d, (list, tuple)) for d in value)


def resolve_input_shapes(name: str, input_shape: Any = None, batch: int | None = None) -> tuple[tuple[int, ...], ...]:
    """The input shapes ``load_model(name, input_shape, batch=batch)`` traces at, one per input.

    ``input_shape`` is one shape (``(1, 3, 224, 224)``), or one shape per input
    (``((1, 3, 368, 496), (1, 3, 368, 496))`` for RAFT's two frames); a single shape for a
    two-frame model gives both frames that shape. ``"transformer"``'s shapes are fixed.
    ``batch`` replaces the batch dimension of every input: the first (``nn.Transformer``'s
    inputs are sequence-first, so its second). Raises ``ValueError`` naming the model and the
    shape for a dimension that is not an integer >= 1, a wrong number of shapes, or a batch
    that is not an integer >= 1.
    """
    count = input_count(name)
    if input_shape is None:
        shapes = default_input_shapes(name)
    elif name == "transformer":
        raise ValueError(
            "model 'transformer' takes two inputs of fixed shapes "
            f"(src {TRANSFORMER_SHAPES['src']}, tgt {TRANSFORMER_SHAPES['tgt']}); "
            "input_shape cannot be set for it (batch can)"
        )
    elif isinstance(input_shape, (str, bytes)) or not isinstance(input_shape, Sequence) or not input_shape:
        raise ValueError(f"input shape {input_shape!r} of model {name!r}: expected a non-empty sequence of "
                         "integers, or one such sequence per input")
    elif _is_shape(input_shape):
        shapes = (checked_input_shape(name, input_shape),) * count
    else:
        shapes = tuple(checked_input_shape(name, s) for s in input_shape)
        if len(shapes) != count:
            raise ValueError(f"model {name!r} takes {count} input(s), got {len(shapes)} input shapes "
                             f"{[list(s) for s in shapes]}")
    if batch is None:
        return tuple(shapes)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch={batch!r} of model {name!r} must be an integer >= 1")
    axis = 1 if name == "transformer" else 0
    return tuple(checked_input_shape(name, s[:axis] + (batch,) + s[axis + 1:]) for s in shapes)


@contextlib.contextmanager
def _quiet_quantization() -> Iterator[None]:
    """Silence torch's warnings about building quantized models: the quantized-tensor API's
    deprecation notice, and the observers torchvision's calibration leaves unrun (their scales
    do not change a shape)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"torch\.quantize_per_tensor, torch\.quantize_per_channel")
        warnings.filterwarnings("ignore", message="must run observer before calling calculate_qparams")
        warnings.filterwarnings("ignore", message=r"torch\.ao\.quantization is deprecated", category=DeprecationWarning)
        yield


def _refuse_download(url: str, *args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(f"frontend.zoo builds models with random weights and never downloads; "
                       f"the builder asked for {url}")


@contextlib.contextmanager
def weights_on_meta() -> Iterator[None]:
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
    if llm.is_llm(name):
        if name not in llm.shapes():
            raise UnknownModelError(f"unknown model {name!r}; the llm family has {', '.join(llm.names())}")
        return
    family, plain = _split(name)
    known = _torchvision_names()
    if plain not in known[family or ""]:
        raise _unknown(name, known)


#: the most elements (and the largest dimension) a torch tensor can have: sizes are int64
MAX_ELEMENTS = 2**63 - 1


def positive_dimensions(shape: Sequence[Any]) -> tuple[int, ...]:
    """``shape`` as a tuple of ints >= 1 (numpy ints too; not 3.5, "3" or True), or ``ValueError``
    ``"every dimension must be an integer >= 1, got X"`` for the first that is not; callers
    put what the shape is for in front."""
    dims: list[int] = []
    for d in shape:
        try:
            value = operator.index(d)
        except TypeError:
            value = None
        if value is None or isinstance(d, bool) or value < 1:
            raise ValueError(f"every dimension must be an integer >= 1, got {d!r}")
        if value > MAX_ELEMENTS:
            raise ValueError(f"dimension {value} is more than a tensor can hold (2^63 - 1, torch's int64)")
        dims.append(value)
    if math.prod(dims) > MAX_ELEMENTS:
        raise ValueError(f"{' x '.join(map(str, dims))} is {math.prod(dims):,} elements, more than a tensor can "
                         "hold (2^63 - 1, torch's int64)")
    return tuple(dims)


def checked_input_shape(name: str, input_shape: Sequence[int]) -> tuple[int, ...]:
    """``input_shape`` as a tuple of ints >= 1, or ``ValueError`` naming the model and the shape."""
    try:
        return positive_dimensions(input_shape)
    except ValueError as exc:
        raise ValueError(f"input shape {tuple(input_shape)!r} of model {name!r}: {exc}") from None


#: options ``load_model(name, options=...)`` accepts, per family, with their defaults
MODEL_OPTIONS: dict[str, dict[str, int]] = {
    # RAFT refines its flow this many times (its forward's num_flow_updates): the loop is unrolled
    "optical_flow": {"num_flow_updates": 12},
    # a two-stage detector's region heads (box, mask, keypoint) run on batches of at most this
    # many regions (frontend.detection): 50 keeps every head of the zoo's detectors within the
    # smallest bundled scratchpad (Mask R-CNN's mask head on its 100 detections in one batch needs
    # 2.4 MiB per PE on pixel6, which has 2 MiB)
    "detection.two-stage": {"region_batch": 50},
    # a language model's step: how many tokens its KV cache holds already (0: a prefill)
    "llm": {"past": 0},
}
#: options that may be 0 (every other option is an integer >= 1)
_ZERO_ALLOWED = frozenset({"past"})


def _options_key(name: str) -> str:
    """The ``MODEL_OPTIONS`` entry of model ``name`` (its family, or its detection kind)."""
    family, plain = _split(name)
    if llm.is_llm(name):
        return "llm"
    if family == "detection":
        split = _detection_split(plain)
        return "detection.two-stage" if split.startswith("two-stage") else "detection.one-stage"
    return family or ""


def model_options(name: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The options model ``name`` is built with: its family's defaults (``MODEL_OPTIONS``)
    updated with ``options``. Raises ``ValueError`` naming an option the model does not take,
    or a value that is not an integer >= 1."""
    accepted = MODEL_OPTIONS.get(_options_key(name), {})
    chosen = dict(accepted)
    for key, value in (options or {}).items():
        if key not in accepted:
            valid = ", ".join(accepted) if accepted else "none"
            raise ValueError(f"model {name!r} takes no option {key!r} (its options: {valid})")
        least = 0 if key in _ZERO_ALLOWED else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"option {key}={value!r} of model {name!r} must be an integer >= {least}")
        chosen[key] = value
    return chosen


def load_model(name: str, input_shape: Any = None, device: str = "cpu", batch: int | None = None,
               options: Mapping[str, Any] | None = None) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """The model ``name`` in eval mode with random weights, and its example inputs.

    ``input_shape`` replaces the default input shape (one shape, or one per input; not for
    ``"transformer"``, whose two inputs have fixed shapes) and ``batch`` the batch dimension
    (``resolve_input_shapes``); ``options`` are the family's build options (``MODEL_OPTIONS``:
    RAFT's ``num_flow_updates``, a two-stage detector's ``region_batch``). On ``device="cpu"``
    inputs are drawn from a fixed seed, so they are the same on every call. ``device="meta"``
    puts every parameter and buffer on the meta device as it is registered (shapes and dtypes
    only: no data, no initialisation, no memory; see ``weights_on_meta``) and gives
    ``torch.empty`` meta inputs; that is enough for ``trace``, not for running the model.

    Detection models come back split for an accelerator (``frontend.detection``): the module
    runs the backbone and heads and marks the steps that run on the host. Optical-flow models
    come back wrapped so that their forward takes the two frames and returns the final flow
    after ``num_flow_updates`` refinements (``frontend.detection.FinalFlow``).

    Raises ``UnknownModelError`` for a name torchvision does not have, with close names,
    ``ValueError`` for an input shape that is not positive integers, a bad batch or option, and
    ``FrontendMissingError`` when torch or torchvision is not installed.
    """
    require_torch(f"building model {name!r}")
    import torch

    if device not in ("cpu", "meta"):
        raise ValueError(f"load_model: device must be 'cpu' or 'meta', got {device!r}")
    if name != "transformer":
        check_model_name(name)
    shapes = resolve_input_shapes(name, input_shape, batch)
    chosen = model_options(name, options)
    family, plain = _split(name)
    if family == "quantization":
        # built with quantize=True: the builder calibrates the model on an example and packs its
        # int8 weights, which has no meta form; so real weights and inputs, whatever ``device`` says
        device = "cpu"
    if llm.is_llm(name):
        return _load_llm(name, shapes, chosen)
    generator = torch.Generator().manual_seed(0)
    weights = weights_on_meta() if device == "meta" else contextlib.nullcontext()
    if device == "meta":
        inputs = tuple(torch.empty(shape, device="meta") for shape in shapes)
    else:
        inputs = tuple(torch.randn(shape, generator=generator) for shape in shapes)

    if name == "transformer":
        with warnings.catch_warnings():
            # "enable_nested_tensor is True, but self.use_nested_tensor is False": expected
            # for the default batch_first=False, and irrelevant to tracing
            warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
            with weights:
                transformer = torch.nn.Transformer(d_model=512).eval()
        return transformer, inputs

    import torchvision.models as models
    import torchvision.models._api as api

    builder = models.get_model_builder(plain)
    accepted = inspect.signature(builder).parameters
    build: dict[str, Any] = {"weights": None}
    if "weights_backbone" in accepted:
        build["weights_backbone"] = None
    if "aux_loss" in accepted:
        build["aux_loss"] = False
    if family == "quantization":
        build["quantize"] = True
    build.update(_BUILD_OPTIONS.get(name, {}))
    from unittest import mock

    with mock.patch.object(api, "load_state_dict_from_url", _refuse_download), weights, _quiet_quantization():
        model = builder(**build).eval()
    if family == "detection":
        from frontend import detection

        model = detection.for_accelerator(model, name, chosen.get("region_batch"))
    elif family == "optical_flow":
        from frontend import detection

        model = detection.FinalFlow(model, chosen["num_flow_updates"]).eval()
    return model, inputs


def _load_llm(name: str, shapes: tuple[tuple[int, ...], ...],
              options: Mapping[str, Any]) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """``frontend.llm.load`` at ``shapes`` (one ``(batch, tokens)``): always on the meta device,
    whatever ``device`` asks (the family has no real-weight form)."""
    (shape,) = shapes
    if len(shape) != 2:
        raise ValueError(f"input shape {shape!r} of model {name!r}: token ids are (batch, tokens), 2 dimensions")
    return llm.load(name, batch=shape[0], tokens=shape[1], past=options["past"])


def trace_model(name: str, dtype: str = "fp32", input_shape: Any = None, batch: int | None = None,
                options: Mapping[str, Any] | None = None, tracing: Tracing | None = None) -> nx.DiGraph:
    """``trace(*load_model(name, input_shape, "meta", batch, options), dtype=dtype, name=name)``: the zoo model's graph.

    Built on the meta device (see the module docstring): the graph is the same as with real
    weights, and neither time nor memory grows with ``input_shape``. Raises
    ``UnknownModelError``, ``ValueError`` for a bad ``input_shape`` (see ``load_model``) and
    ``TraceError`` when the model fails on the input, e.g. a wrong rank (one line: the model,
    the input shape and the model's own error; when the shape was not the default, the line
    ends with the default shape, the one the model is known to accept). A language model's
    decoder graph names its KV cache in ``graph.graph["kv_cache"]`` (the cache it reads, the keys
    and values it writes), which ``frontend.precision`` gives a dtype of its own.

    ``tracing`` (``frontend.trace.Tracing``) chooses the tracer and more host operators; by
    default a detector and the llm family use torch.fx alone (a detector's host operators are
    marked by it; the llm family is written for it), every other model ``"auto"``. A detector
    traced with ``"export"`` is refused (``ValueError``).
    """
    from frontend.trace import TraceError, trace

    tracing = tracing or Tracing()
    if tracing.method == "export" and _split(name)[0] == "detection":
        raise ValueError(f"model {name!r} marks its host operators in the torch.fx graph: --trace-method export "
                         "cannot trace it (use fx or auto)")
    model, inputs = load_model(name, input_shape, device="meta", batch=batch, options=options)
    try:
        with _quiet_quantization():
            # host operators are marked by the torch.fx tracer alone: a detector never falls back
            # (the llm family is written for torch.fx: it never needs the slow fallback)
            method = tracing.method
            if method == "auto" and (_split(name)[0] == "detection" or llm.is_llm(name)):
                method = "fx"
            graph = trace(model, inputs, dtype=dtype, name=name, method=method, host=tracing.host)
    except TraceError as error:
        _retrace_hint(name, input_shape, error)
        raise
    if llm.is_llm(name) and llm.shape_of(name).kind == "decoder":
        # the cache read (every input after the ids) and written (every output after the logits)
        graph.graph["kv_cache"] = [*graph.graph["inputs"][1:], *graph.graph["outputs"][1:]]
    return graph


def _retrace_hint(name: str, input_shape: Any, error: Exception) -> None:
    """Raise ``error`` again with the model's default input shape added, when the shape was not the default."""
    from frontend.trace import TraceError

    default = default_input_shapes(name)  # (load_model refuses an input_shape for "transformer")
    if input_shape is None or resolve_input_shapes(name, input_shape) == default:
        return
    shown = " and ".join(",".join(map(str, shape)) for shape in dict.fromkeys(default))
    raise TraceError(f"{error}; the default input shape of {name!r}, which it accepts, is {shown}") from error

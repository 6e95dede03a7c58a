"""The torch half of ``frontend.trace``: the FX tracers and the FX graph -> DataflowGraph conversion.

Private: ``frontend.trace.trace`` imports this module when it runs, so ``import frontend``
stays free of torch. The policy (what is an operator, a weight, an alias) is documented in
``frontend.trace``; this module implements it.

Fake tensors
------------
Only shapes and dtypes are ever needed, so no example value is computed for real: the
shape-specialising tracer and the shape propagation run every operator under a
``torch._subclasses.FakeTensorMode`` (``allow_non_fake_inputs=True``, so the model's real
parameters are wrapped on the fly). A fake tensor has a shape, a dtype and a device but no
storage, so memory and time do not grow with the input size (resnet18 at 1x3x10000x10000 traces
like at 224x224), and the model itself may live on the ``meta`` device (the zoo builds it there,
skipping weight initialisation). Fake kernels raise the same errors as real ones (a wrong input
rank gives the model's own ``RuntimeError``), which meta kernels alone do not. When the model
and its inputs are all on meta (the zoo), shape propagation runs on them directly first, since
meta kernels are about 4x faster than FakeTensorMode's dispatch (resnet50: 0.2 against 0.8
CPU-seconds; real tensors took 0.4), and reruns under FakeTensorMode only to report a failure.

Fallback, per model and only when needed: an operator whose output *shape* depends on tensor
data (``nonzero``, boolean-mask indexing, ``unique``, ``.item()``, ``.tolist()``) has no fake
result. If shape propagation, or a value the shape-specialising tracer needed, hits one, the step
is redone on the real example inputs (as before fake tensors; memory grows with the input again).
That needs real tensors: with meta inputs or weights it is a ``TraceError`` instead. No model of
``frontend.list_models()`` needs the fallback.
"""

from __future__ import annotations

import contextlib
import inspect
import operator
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import networkx as nx
import torch
import torch.fx
import torch.nn.functional as F
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensorMode,
)
from torch.fx.node import Node, _get_qualified_name, map_aggregate, map_arg
from torch.fx.passes.shape_prop import TensorMetadata, _extract_tensor_metadata

from frontend import cost
from frontend.errors import TraceError
from frontend.graph import add_operator, add_tensor, check_graph, dtype_bytes, new_graph

# --------------------------------------------------------------------------- tracing

#: modules kept whole even though they have children (costed from their configuration)
LEAF_MODULES: tuple[type, ...] = (torch.nn.MultiheadAttention,)


class _Tracer(torch.fx.Tracer):
    """Symbolic tracer: childless ``torch.nn`` modules and ``LEAF_MODULES`` are leaves.

    FX's default keeps *every* ``torch.nn`` module whole, so ``nn.TransformerEncoderLayer``
    would be one opaque operator; here composite ``torch.nn`` modules are traced through.
    """

    def __init__(self, leaf_modules: tuple[type, ...] = ()) -> None:
        super().__init__()
        self.leaf_types = LEAF_MODULES + tuple(leaf_modules)

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        if isinstance(m, self.leaf_types):
            return True
        if m.__module__.startswith(("torch.nn.", "torch.ao.nn.")):
            return next(m.children(), None) is None
        return False


_UNKNOWN = object()  # value the shape-specialising tracer could not compute

#: what fake kernels raise for an operator whose result depends on tensor data
_DATA_DEPENDENT = (DataDependentOutputException, DynamicOutputShapeException)

#: tensor methods / attributes / functions that read only metadata, never data
_METADATA_METHODS = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "is_floating_point", "is_complex",
    "is_contiguous", "element_size", "get_device", "is_signed",
})
_METADATA_ATTRIBUTES = frozenset({
    "shape", "ndim", "dtype", "device", "layout", "is_nested", "is_cuda", "is_cpu", "is_sparse",
    "is_quantized", "is_meta", "is_mkldnn", "requires_grad",
})
_METADATA_FUNCTIONS = frozenset({"numel", "is_floating_point", "is_complex", "is_tensor"})


def _has_tensor(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (tuple, list)):
        return any(_has_tensor(v) for v in value)
    if isinstance(value, Mapping):
        return any(_has_tensor(v) for v in value.values())
    return False


class _ValueProxy(torch.fx.Proxy):
    """A proxy whose ``len()``, ``int()`` and index use ask the tracer for the example's value."""

    def __getattr__(self, k: str) -> _ValueAttribute:
        return _ValueAttribute(self, k)

    def __len__(self) -> int:
        return cast(_ShapeTracer, self.tracer).length(self)

    def __index__(self) -> int:
        return int(cast(_ShapeTracer, self.tracer).concrete(self, "used as an integer"))

    def __int__(self) -> int:
        return self.__index__()

    def __float__(self) -> float:
        return float(cast(_ShapeTracer, self.tracer).concrete(self, "used as a float"))


class _ValueAttribute(_ValueProxy, torch.fx.proxy.Attribute):
    """``proxy.attr`` under the shape-specialising tracer."""


class _ShapeTracer(_Tracer):
    """Tracer that runs the example inputs alongside the trace (see ``frontend.trace``).

    Every proxy's value is computed as its node is created. Control flow, iteration and
    ``len()`` on a *static* value, one derived only from tensor metadata (shape, dim, dtype,
    ...) and constants, use the example's value; on anything that depends on tensor data
    they fail exactly as under plain symbolic tracing.
    """

    def __init__(self, leaf_modules: tuple[type, ...], inputs: Mapping[str, Any],
                 mode: FakeTensorMode | None = None) -> None:
        super().__init__(leaf_modules)
        self._inputs = dict(inputs)
        self._mode = mode  # evaluate under this fake mode (``inputs`` are its fakes); None: real
        self._values: dict[Node, Any] = {}
        self._static: dict[Node, bool] = {}
        self._evaluating = False
        #: a value could not be computed because its shape or value depends on tensor data
        #: (only ever under a fake mode; a rerun on real inputs may then resolve it)
        self.needed_data = False

    def proxy(self, node: Node) -> torch.fx.Proxy:
        return _ValueProxy(node, self)

    def create_proxy(self, kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                     name: str | None = None, type_expr: Any | None = None,
                     proxy_factory_fn: Callable[[Node], torch.fx.Proxy] | None = None) -> torch.fx.Proxy:
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr, proxy_factory_fn)
        self.value(proxy.node)  # evaluate now, in program order (in-place ops mutate values)
        return proxy

    def value(self, node: Node) -> Any:
        if node not in self._values:
            self._values[node] = self._evaluate(node)
        return self._values[node]

    def _evaluate(self, node: Node) -> Any:
        if node.op == "placeholder":
            if node.target in self._inputs:
                return self._inputs[str(node.target)]
            return node.args[0] if node.args else _UNKNOWN
        if node.op == "get_attr":
            return _fetch_attr(self.root, str(node.target))
        args = map_arg(node.args, self.value)
        kwargs = map_arg(node.kwargs, self.value)
        unknown = [False]

        def find_unknown(a: Any) -> Any:
            if a is _UNKNOWN:
                unknown[0] = True
            return a

        torch.fx.node.map_aggregate((args, kwargs), find_unknown)
        if unknown[0]:
            return _UNKNOWN
        previous, self._evaluating = self._evaluating, True  # the real call must bypass the tracer's hooks
        try:
            with torch.no_grad(), (self._mode if self._mode is not None else contextlib.nullcontext()):
                if node.op == "call_function":
                    return node.target(*args, **kwargs)  # type: ignore[operator]
                if node.op == "call_method":
                    self_arg, *rest = args
                    return getattr(self_arg, str(node.target))(*rest, **kwargs)
                if node.op == "call_module":
                    return self.root.get_submodule(str(node.target))(*args, **kwargs)
        except _DATA_DEPENDENT:
            self.needed_data = True
            return _UNKNOWN
        except Exception:
            return _UNKNOWN
        finally:
            self._evaluating = previous
        return _UNKNOWN

    def call_module(self, m: torch.nn.Module, forward: Callable[..., Any], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        if self._evaluating:
            return forward(*args, **kwargs)
        return super().call_module(m, forward, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        if self._evaluating:
            return attr_val
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    def is_static(self, node: Node) -> bool:
        if node not in self._static:
            self._static[node] = self._compute_static(node)
        return self._static[node]

    def _compute_static(self, node: Node) -> bool:
        value = self.value(node)
        if value is _UNKNOWN or _has_tensor(value):
            return False
        if node.op in ("placeholder", "get_attr"):
            return True
        if node.op == "call_method" and node.target in _METADATA_METHODS:
            return True
        if node.op == "call_function":
            if node.target is getattr and node.args[1] in _METADATA_ATTRIBUTES:
                return True
            if getattr(node.target, "__name__", None) in _METADATA_FUNCTIONS:
                return True
        return all(self.is_static(n) for n in node.all_input_nodes)

    def to_bool(self, obj: torch.fx.Proxy) -> bool:
        if self.is_static(obj.node):
            return bool(self.value(obj.node))
        return super().to_bool(obj)

    def iter(self, obj: torch.fx.Proxy) -> Iterator[Any]:
        if self.is_static(obj.node):
            return iter(self.value(obj.node))
        return super().iter(obj)

    def length(self, obj: torch.fx.Proxy) -> int:
        value = self.value(obj.node)
        if self.is_static(obj.node) or isinstance(value, torch.Tensor):
            return len(value)
        raise torch.fx.proxy.TraceError("'len' of a value that depends on tensor data cannot be traced")

    def concrete(self, obj: torch.fx.Proxy, use: str) -> Any:
        if self.is_static(obj.node):
            return self.value(obj.node)
        raise torch.fx.proxy.TraceError(f"symbolically traced variables cannot be {use}")


def _fetch_attr(root: torch.nn.Module, target: str) -> Any:
    value: Any = root
    for part in target.split("."):
        value = getattr(value, part)
    return value


def _bind_inputs(model: torch.nn.Module, inputs: tuple[Any, ...], name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Example inputs by forward parameter name, and the other parameters' defaults."""
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        return {}, {}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return {}, {}
    if len(inputs) > len(positional):
        raise TraceError(f"cannot trace {name!r}: forward takes {len(positional)} positional "
                         f"arguments but {len(inputs)} example inputs were given")
    by_name = {p.name: x for p, x in zip(positional, inputs, strict=False)}
    defaults: dict[str, Any] = {}
    for p in params:
        if p.name in by_name or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is p.empty:
            raise TraceError(f"cannot trace {name!r}: forward argument {p.name!r} has no default "
                             f"and no example input")
        defaults[p.name] = p.default
    return by_name, defaults


def _where(exc: BaseException) -> str:
    """``file:line in function: code`` of the innermost model frame of ``exc``'s traceback."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = frame.filename.replace("\\", "/")
        if "/torch/fx/" in path or path.endswith("frontend/_fx.py"):
            continue
        marker = path.rfind("site-packages/")
        short = path[marker + len("site-packages/"):] if marker >= 0 else "/".join(path.split("/")[-3:])
        return f"{short}:{frame.lineno} in {frame.name}: {(frame.line or '').strip()}"
    return ""


def _message(exc: BaseException) -> str:
    """``Type: message`` of ``exc`` on one line: the message's first paragraph, its lines joined.

    Torch's messages put the summary first and details (hints, lists of backends) after a blank
    line; the summary is what names the problem.
    """
    paragraph: list[str] = []
    for line in str(exc).splitlines():
        if line.strip():
            paragraph.append(line.strip())
        elif paragraph:
            break
    return f"{type(exc).__name__}: {' '.join(paragraph)}" if paragraph else type(exc).__name__


def _reason(exc: BaseException) -> str:
    where = _where(exc)
    return _message(exc) + (f" (at {where})" if where else "")


def _describe_inputs(inputs: Sequence[Any]) -> str:
    """``example inputs of shape (1, 3, 224)``: the shapes (type names for non-tensors) of ``inputs``."""
    shapes = [str(tuple(int(d) for d in x.shape)) if isinstance(x, torch.Tensor) else type(x).__name__
              for x in inputs]
    return f"example inputs of shape{'s' if len(shapes) > 1 else ''} {', '.join(shapes) or '()'}"


def _fakes(mode: FakeTensorMode, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with every tensor replaced by a fake of it under ``mode`` (same shape, dtype, device)."""
    return {k: mode.from_tensor(v) if isinstance(v, torch.Tensor) else v for k, v in values.items()}


@contextlib.contextmanager
def _quiet_fake_tensors() -> Iterator[None]:
    """Silence ``torch._subclasses.fake_tensor``'s log while tracing.

    When a fake kernel raises (an input of the wrong shape), FakeTensorMode logs the error with a
    full traceback at ERROR level before re-raising it; ``trace`` reports that same error as one
    ``TraceError`` line, so the log would only print a traceback on the user's terminal.
    """
    import logging

    logger = logging.getLogger("torch._subclasses.fake_tensor")
    previous, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = previous


def _new_fake_mode() -> FakeTensorMode:
    # allow_non_fake_inputs: the model's own (real or meta) parameters are wrapped as they are read
    return FakeTensorMode(allow_non_fake_inputs=True)


def _has_real_tensors(model: torch.nn.Module, inputs: Sequence[Any]) -> bool:
    """Are ``model``'s parameters and buffers and the example inputs real (none on ``meta``)?"""
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    return not any(t.is_meta for t in [*tensors, *model.parameters(), *model.buffers()])


def _all_meta(model: torch.nn.Module, inputs: Sequence[Any]) -> bool:
    """Are the example inputs and ``model``'s parameters and buffers all on ``meta``?"""
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    return all(t.is_meta for t in [*tensors, *model.parameters(), *model.buffers()])


def symbolic_trace(model: torch.nn.Module, inputs: tuple[Any, ...], name: str,
                   leaf_modules: tuple[type, ...] = ()) -> torch.fx.GraphModule:
    """FX-trace ``model``; retry with shape specialisation; ``TraceError`` with FX's reason.

    The shape-specialising retry evaluates on fake copies of ``inputs``; only if a value it
    needed depends on tensor data, and the tensors are real, is it rerun on real clones (a
    clone: the shadow execution must not mutate the caller's tensors in place).
    """
    by_name, defaults = _bind_inputs(model, inputs, name)
    try:
        tracer: _Tracer = _Tracer(leaf_modules)
        graph = tracer.trace(model, concrete_args=defaults or None)
    except Exception as plain_error:
        mode = _new_fake_mode()
        specialised = _ShapeTracer(leaf_modules, _fakes(mode, by_name), mode)
        try:
            tracer, graph = specialised, specialised.trace(model, concrete_args=defaults or None)
        except Exception as fake_error:
            specialised_error: Exception = fake_error
            if specialised.needed_data and _has_real_tensors(model, inputs):
                shadow = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in by_name.items()}
                real = _ShapeTracer(leaf_modules, shadow)
                try:
                    tracer, graph = real, real.trace(model, concrete_args=defaults or None)
                except Exception as real_error:
                    specialised_error = real_error
                else:
                    return torch.fx.GraphModule(tracer.root, graph, type(model).__name__)
            message = f"cannot trace {name!r} on {_describe_inputs(inputs)} with torch.fx: {_reason(plain_error)}"
            if str(specialised_error) != str(plain_error):
                message += f"; with shapes specialised to the example inputs: {_reason(specialised_error)}"
            raise TraceError(message) from plain_error
    return torch.fx.GraphModule(tracer.root, graph, type(model).__name__)


# --------------------------------------------------------------------------- shape propagation


class _NodeFailure(Exception):
    """Running FX node ``node`` raised ``error`` (kept whole: torch.fx appends text to messages)."""

    def __init__(self, node: Node, error: Exception) -> None:
        super().__init__(f"{node.name}: {error}")
        self.node = node
        self.error = error


class _ShapePropagation(torch.fx.Interpreter):
    """``torch.fx.passes.shape_prop.ShapeProp``, on fake tensors, without printing tracebacks.

    Runs the traced module node by node (under ``mode`` when given, else on whatever the inputs
    are) and records each tensor result's ``TensorMetadata`` in ``node.meta["tensor_meta"]``,
    as ShapeProp does. Unlike ShapeProp it prints nothing when an operator fails: the failure
    comes back as ``_NodeFailure`` with the operator and the model's own exception.
    """

    def __init__(self, gm: torch.fx.GraphModule, mode: FakeTensorMode | None) -> None:
        super().__init__(gm)
        self.extra_traceback = False  # torch.fx would append the node and a tlparse hint
        self.mode = mode

    def run_node(self, n: Node) -> Any:
        try:
            with self.mode if self.mode is not None else contextlib.nullcontext():
                result = super().run_node(n)
        except Exception as error:
            raise _NodeFailure(n, error) from error
        found = [False]

        def extract(obj: Any) -> Any:
            if isinstance(obj, torch.Tensor):
                found[0] = True
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found[0]:
            n.meta["tensor_meta"] = meta
        return result


def _where_node(node: Node) -> str:
    """``operator 'layer1_0_conv1' (layer1.0.conv1)``: the FX node, and its target when it says more."""
    if node.op in ("call_module", "call_method", "get_attr"):
        target = str(node.target)
    else:
        try:
            target = _get_qualified_name(node.target)  # type: ignore[arg-type]
        except Exception:
            target = getattr(node.target, "__qualname__", repr(node.target))
    return f"operator {node.name!r}" + (f" ({target})" if target != node.name else "")


def propagate_shapes(gm: torch.fx.GraphModule, model: torch.nn.Module, inputs: tuple[Any, ...], name: str) -> None:
    """Record every node's ``tensor_meta`` by running ``gm`` on fake copies of ``inputs``.

    ``TraceError`` (one line: the model, the input shapes, the failing operator and the model's
    own error) if an operator fails, e.g. on an input of the wrong rank. Falls back to the real
    ``inputs`` when an output shape depends on tensor data and the tensors are real (see the
    module docstring). When the model and the inputs are all on meta, it runs on them directly
    first (meta kernels, about 4x faster than FakeTensorMode's dispatch); only if an operator
    fails there does it rerun under FakeTensorMode, for the error as the real kernel words it.
    """
    if _all_meta(model, inputs):
        try:
            with torch.no_grad():
                _ShapePropagation(gm, None).run(*inputs)
            return
        except _NodeFailure:
            pass  # meta kernels word some errors their own way ("Invalid channel dimensions")
    mode = _new_fake_mode()
    fakes = tuple(mode.from_tensor(x) if isinstance(x, torch.Tensor) else x for x in inputs)
    try:
        with torch.no_grad():
            _ShapePropagation(gm, mode).run(*fakes)
        return
    except _NodeFailure as failure:
        node, error = failure.node, failure.error
    if isinstance(error, _DATA_DEPENDENT):
        if not _has_real_tensors(model, inputs):
            raise TraceError(
                f"cannot trace {name!r} on {_describe_inputs(inputs)}: the output shape of {_where_node(node)} "
                f"depends on tensor data, and the model or its inputs "
                f"are on the meta device; trace it with real weights and inputs"
            ) from error
        try:
            with torch.no_grad():
                _ShapePropagation(gm, None).run(*inputs)
            return
        except _NodeFailure as failure:
            node, error = failure.node, failure.error
    raise TraceError(
        f"cannot trace {name!r} on {_describe_inputs(inputs)}: {_message(error)} "
        f"(at {_where_node(node)})"
    ) from error


# --------------------------------------------------------------------------- conversion

#: tensor methods that return a view of their first argument
_VIEW_METHODS = frozenset({
    "view", "reshape", "flatten", "unflatten", "view_as", "reshape_as", "squeeze", "unsqueeze",
    "squeeze_", "unsqueeze_", "expand", "expand_as", "broadcast_to", "contiguous", "detach",
    "detach_", "select", "narrow", "chunk", "split", "tensor_split", "split_with_sizes", "unbind",
})
#: torch functions that return a view of their first argument
_VIEW_FUNCTIONS = frozenset({
    "flatten", "reshape", "squeeze", "unsqueeze", "chunk", "split", "tensor_split", "unbind",
    "narrow", "select", "detach", "broadcast_to", "unflatten",
})
#: conversions: views when they keep the dtype, ``cast`` operators otherwise
_CAST_METHODS = frozenset({
    "to", "type", "type_as", "float", "double", "half", "bfloat16", "int", "long", "short",
    "bool", "byte", "char", "cpu", "cuda",
})
#: dropout-like functions (torch's, and torchvision's fx-wrapped ``stochastic_depth``): views
#: when their ``training`` argument is False
_DROPOUT_FUNCTIONS = frozenset({
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
    "stochastic_depth",
})
#: functions / methods that read only their tensor arguments' metadata
_METADATA_ONLY = frozenset({
    "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like",
    "new_zeros", "new_ones", "new_empty", "new_full",
})
_INPLACE_OPERATORS = frozenset({
    "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "imatmul", "iand", "ior",
    "ixor", "ilshift", "irshift",
})
_TRANSPOSE_ATTRIBUTES = frozenset({"T", "mT", "H", "mH"})

_INTEGER_DTYPES = {
    torch.int64: "int64", torch.int32: "int32", torch.int16: "int16", torch.int8: "int8",
    torch.uint8: "uint8", torch.bool: "bool",
}


def _is_torch_function(target: Any, name: str) -> bool:
    return any(getattr(ns, name, None) is target for ns in (torch, F, torch.Tensor))


@dataclass
class _Tensor:
    shape: list[int]
    dtype: str
    nbytes: int


@dataclass
class _Op:
    name: str
    kind: str
    target: str
    inputs: list[str]
    outputs: list[str]
    macs: int
    elements: int
    gemm: list[tuple[int, int, int, int]]
    live_outputs: list[str] = field(default_factory=list)



def _nodes_in(obj: Any) -> Iterator[Node]:
    """Every FX node inside an argument structure (tuples, lists, mappings, slices), in order.

    Strings in FX arguments are literals (e.g. ``"bilinear"``), never nodes.
    """
    if isinstance(obj, Node):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            yield from _nodes_in(x)
    elif isinstance(obj, Mapping):
        for x in obj.values():
            yield from _nodes_in(x)
    elif isinstance(obj, slice):
        yield from _nodes_in((obj.start, obj.stop, obj.step))

class _Converter:
    """One pass over the FX graph in program order, then dead-code elimination, then emission."""

    def __init__(self, gm: torch.fx.GraphModule, model: torch.nn.Module, dtype: str, name: str) -> None:
        self.gm = gm
        self.model = model
        self.dtype = dtype
        self.name = name
        self.env: dict[Node, Any] = {}  # FX node -> tensor name, container of names, or None
        self.tensors: dict[str, _Tensor] = {}
        self.weights: set[str] = set()
        self.inputs: list[str] = []
        self.ops: list[_Op] = []
        self.aliases: dict[str, str] = {}
        self.version: dict[str, str] = {}  # tensor mutated in place -> tensor holding its new value
        self.outputs: list[str] = []
        self.canonical: dict[int, str] = {}
        for pname, p in model.named_parameters():
            self.canonical.setdefault(id(p), pname)
        for bname, b in model.named_buffers():
            self.canonical.setdefault(id(b), bname)

    # ---- helpers

    def storage(self, torch_dtype: torch.dtype, tensor: str) -> str:
        if torch_dtype.is_floating_point:
            return self.dtype
        if torch_dtype in _INTEGER_DTYPES:
            return _INTEGER_DTYPES[torch_dtype]
        raise TraceError(f"cannot trace {self.name!r}: tensor {tensor!r} has dtype {torch_dtype}, "
                         f"which has no storage size")

    def register(self, name: str, shape: Sequence[int], torch_dtype: torch.dtype) -> None:
        if name in self.tensors:  # e.g. a root parameter named like an FX node
            raise TraceError(f"cannot trace {self.name!r}: two tensors would be named {name!r}")
        storage = self.storage(torch_dtype, name)
        shape = [int(d) for d in shape]
        self.tensors[name] = _Tensor(shape, storage, cost.numel(shape) * dtype_bytes(storage))

    def resolve(self, tensor: str) -> str:
        """The tensor currently holding ``tensor``'s value (after in-place updates)."""
        while tensor in self.version:
            tensor = self.version[tensor]
        return tensor

    def names_in(self, obj: Any) -> list[str]:
        """Tensor names read through ``obj`` (an FX argument structure), resolved, in order."""
        found: list[str] = []

        def visit_value(v: Any) -> None:  # an env value: strings are tensor names
            if isinstance(v, str):
                found.append(self.resolve(v))
            elif isinstance(v, list):
                for x in v:
                    visit_value(x)
            elif isinstance(v, dict):
                for x in v.values():
                    visit_value(x)

        for node in _nodes_in(obj):
            visit_value(self.env.get(node))
        return found

    def weight(self, value: torch.Tensor, fallback: str) -> str:
        name = self.canonical.get(id(value), fallback)
        if name not in self.tensors:
            self.register(name, value.shape, value.dtype)
            self.weights.add(name)
        return name

    @staticmethod
    def layout(meta: Any, prefix: str) -> tuple[Any, list[tuple[str, TensorMetadata]]]:
        """Mirror ``meta`` with a tensor name per TensorMetadata; also the flat (name, meta) list."""
        flat: list[tuple[str, TensorMetadata]] = []

        def walk(m: Any, path: str) -> Any:
            if isinstance(m, TensorMetadata):
                flat.append((path, m))
                return path
            if isinstance(m, (tuple, list)):
                return [walk(x, f"{path}.{i}") for i, x in enumerate(m)]
            if isinstance(m, Mapping):
                return {k: walk(x, f"{path}.{k}") for k, x in m.items()}
            return None

        return walk(meta, prefix), flat

    @staticmethod
    def shapes(obj: Any) -> Any:
        """``obj`` with every tensor-valued FX node replaced by its shape tuple."""

        def convert(a: Any) -> Any:
            if isinstance(a, Node):
                meta = a.meta.get("tensor_meta")
                return tuple(int(d) for d in meta.shape) if isinstance(meta, TensorMetadata) else None
            if isinstance(a, (tuple, list)):
                return type(a)(convert(x) for x in a) if type(a) in (tuple, list) else [convert(x) for x in a]
            if isinstance(a, Mapping):
                return {k: convert(x) for k, x in a.items()}
            return a

        return convert(obj)

    @staticmethod
    def operand_shapes(obj: Any) -> list[tuple[int, ...]]:
        """Shapes of the tensor-valued FX nodes in ``obj``, in order."""
        metas = (node.meta.get("tensor_meta") for node in _nodes_in(obj))
        return [tuple(int(d) for d in m.shape) for m in metas if isinstance(m, TensorMetadata)]

    @staticmethod
    def bind(fn: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
            bound.apply_defaults()
            return dict(bound.arguments)
        except (TypeError, ValueError):
            arguments = {f"arg{i}": a for i, a in enumerate(args)}
            arguments.update(kwargs)
            return arguments

    # ---- classification

    def is_view(self, node: Node, module: torch.nn.Module | None, arguments: Mapping[str, Any]) -> bool:
        """Does ``node`` return a view of (or the same data as) its first tensor argument?"""
        target = node.target
        if node.op == "call_module":
            if isinstance(module, (torch.nn.Identity, torch.nn.Flatten, torch.nn.Unflatten)):
                return True
            return isinstance(module, torch.nn.modules.dropout._DropoutNd) and not module.training
        if node.op == "call_method":
            if target in _VIEW_METHODS:
                return True
            return target in _CAST_METHODS and self.same_dtype(node)
        fname = getattr(target, "__name__", "")
        if target is operator.getitem:
            return self.basic_index(node.args[1])
        if target is getattr:
            return node.args[1] not in _TRANSPOSE_ATTRIBUTES
        if fname in _VIEW_FUNCTIONS and _is_torch_function(target, fname):
            return True
        if fname in _DROPOUT_FUNCTIONS and getattr(target, "__module__", "").startswith(("torch", "torchvision")):
            return not arguments.get("training", True)
        return False

    @staticmethod
    def same_dtype(node: Node) -> bool:
        source = node.args[0] if node.args else None
        out = node.meta.get("tensor_meta")
        src = source.meta.get("tensor_meta") if isinstance(source, Node) else None
        return isinstance(out, TensorMetadata) and isinstance(src, TensorMetadata) and out.dtype == src.dtype

    @staticmethod
    def basic_index(index: Any) -> bool:
        """Is ``index`` basic indexing (ints, slices, None, Ellipsis): a view, not a gather?"""
        items = index if isinstance(index, tuple) else (index,)
        for item in items:
            if isinstance(item, Node) and isinstance(item.meta.get("tensor_meta"), TensorMetadata):
                return False
            if isinstance(item, (list, torch.Tensor)):
                return False
        return True

    @staticmethod
    def is_inplace(node: Node, module: torch.nn.Module | None, arguments: Mapping[str, Any]) -> bool:
        target = node.target
        if node.op == "call_module":
            return getattr(module, "inplace", False) is True
        if node.op == "call_method":
            name = str(target)
        else:
            name = getattr(target, "__name__", "")
            if target is getattr(operator, name, None) and name in _INPLACE_OPERATORS:
                return True
            if arguments.get("inplace") is True:
                return True
        return name.endswith("_") and not name.startswith("_")

    def kind_and_target(self, node: Node, module: torch.nn.Module | None) -> tuple[str, str]:
        if node.op == "call_module":
            assert module is not None
            cls = type(module)
            return cost.module_kind([c.__name__ for c in cls.__mro__]), f"{cls.__module__}.{cls.__qualname__}"
        if node.op == "call_method":
            return cost.function_kind(str(node.target)), str(node.target)
        target = node.target
        if target is getattr:
            return cost.function_kind(str(node.args[1])), f"getattr.{node.args[1]}"
        try:
            qualified = _get_qualified_name(target)  # type: ignore[arg-type]
        except Exception:
            qualified = getattr(target, "__qualname__", repr(target))
        return cost.function_kind(getattr(target, "__name__", qualified)), qualified

    # ---- the pass

    def run(self) -> None:
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                self.placeholder(node)
            elif node.op == "get_attr":
                value = _fetch_attr(self.gm, node.target)
                self.env[node] = self.weight(value, node.target) if isinstance(value, torch.Tensor) else None
            elif node.op == "output":
                self.outputs = list(dict.fromkeys(self.names_in(node.args)))
            else:
                self.call(node)

    def placeholder(self, node: Node) -> None:
        structure, flat = self.layout(node.meta.get("tensor_meta"), node.name)
        self.env[node] = structure
        for tname, meta in flat:
            self.register(tname, meta.shape, meta.dtype)
            self.inputs.append(tname)

    def call(self, node: Node) -> None:
        module = self.gm.get_submodule(str(node.target)) if node.op == "call_module" else None
        meta = node.meta.get("tensor_meta")
        source = self.env.get(node.args[0]) if node.args and isinstance(node.args[0], Node) else None
        if meta is None:  # computes no tensor: shape arithmetic, asserts, getitem of a None
            if node.target is operator.getitem and isinstance(source, (list, dict)):
                self.env[node] = self.pick(source, node.args[1])
            else:
                self.env[node] = None
            return
        if node.target is operator.getitem and isinstance(source, (list, dict)):
            picked = self.pick(source, node.args[1])  # a result of a multi-output operator
            self.env[node] = picked
            if isinstance(picked, str):
                self.aliases[node.name] = self.resolve(picked)
            return
        if node.op == "call_module":
            assert module is not None
            fn: Any = module.forward
        elif node.op == "call_method":
            fn = getattr(torch.Tensor, str(node.target), None)
        else:
            fn = node.target
        arguments = self.bind(fn, node.args, node.kwargs)
        if self.is_view(node, module, arguments):
            bases = self.names_in(node.args[:1] or list(node.kwargs.values())[:1])
            if bases:
                base = bases[0]
                structure, _ = self.layout(meta, node.name)
                self.env[node] = self.replace_names(structure, base)
                self.aliases[node.name] = base
                return
        self.operator(node, module, meta, arguments)

    @staticmethod
    def pick(source: Any, index: Any) -> Any:
        try:
            return source[index]
        except (IndexError, KeyError, TypeError):
            return None

    @staticmethod
    def replace_names(structure: Any, base: str) -> Any:
        if isinstance(structure, str):
            return base
        if isinstance(structure, list):
            return [_Converter.replace_names(s, base) for s in structure]
        if isinstance(structure, dict):
            return {k: _Converter.replace_names(s, base) for k, s in structure.items()}
        return None

    def operator(self, node: Node, module: torch.nn.Module | None, meta: Any, arguments: dict[str, Any]) -> None:
        kind, target = self.kind_and_target(node, module)
        fname = str(node.target) if node.op == "call_method" else getattr(node.target, "__name__", "")
        reads = [] if fname in _METADATA_ONLY else self.names_in((node.args, node.kwargs))
        params: dict[str, tuple[int, ...]] = {}
        attributes: dict[str, Any] = {}
        if module is not None:
            for local, tensor in [*module.named_parameters(), *module.named_buffers()]:
                if local.split(".")[-1] == "num_batches_tracked":
                    continue  # a training-only counter; inference never reads it
                reads.append(self.weight(tensor, f"{node.target}.{local}"))
                params[local] = tuple(int(d) for d in tensor.shape)
            attributes = {k: v for k, v in vars(module).items()
                          if isinstance(v, (bool, int, float, str, tuple)) and not k.startswith("_")}
        structure, flat = self.layout(meta, node.name)
        call = cost.OpCall(
            kind=kind,
            operands=self.operand_shapes((node.args, node.kwargs)),
            outputs=[tuple(int(d) for d in m.shape) for _, m in flat],
            params=params,
            attributes=attributes,
            arguments=self.shapes(arguments),
        )
        for tname, m in flat:
            self.register(tname, m.shape, m.dtype)
        outputs = [tname for tname, _ in flat]
        self.env[node] = structure
        self.ops.append(_Op(node.name, kind, target, list(dict.fromkeys(reads)), outputs,
                            cost.macs(call), cost.elements(call), cost.gemms(call)))
        if self.is_inplace(node, module, arguments) and len(outputs) == 1:
            mutated = self.names_in(node.args[:1])
            if mutated and mutated[0] not in self.weights:
                self.version[mutated[0]] = outputs[0]

    # ---- dead code and emission

    def eliminate_dead_code(self) -> list[_Op]:
        needed = set(self.outputs)
        live: list[_Op] = []
        for op in reversed(self.ops):
            op.live_outputs = [t for t in op.outputs if t in needed]
            if op.live_outputs:
                live.append(op)
                needed.update(op.inputs)
        live.reverse()
        return live

    def emit(self) -> nx.DiGraph:
        live = self.eliminate_dead_code()
        graph = new_graph(self.name, self.dtype)

        def declare(tname: str, kind: str) -> None:
            if tname not in graph.graph["tensors"]:
                rec = self.tensors[tname]
                add_tensor(graph, tname, rec.shape, kind=kind, dtype=rec.dtype, nbytes=rec.nbytes)

        for tname in self.inputs:
            declare(tname, "input")
        for op in live:
            for tname in op.inputs:
                declare(tname, "weight" if tname in self.weights else "activation")
            for tname in op.live_outputs:
                declare(tname, "activation")
            add_operator(graph, op.name, op.kind, op.inputs, op.live_outputs, target=op.target,
                         macs=op.macs, elements=op.elements, gemm=op.gemm)
        tensors = graph.graph["tensors"]
        for tname in self.outputs:
            declare(tname, "weight" if tname in self.weights else "activation")
            if tensors[tname]["kind"] == "activation":
                tensors[tname]["kind"] = "output"
        graph.graph["outputs"] = list(self.outputs)
        aliases = {}
        for alias, base in self.aliases.items():
            # the base as the view saw it; if that version died, the value that replaced it
            base = base if base in tensors else self.resolve(base)
            if base in tensors:
                aliases[alias] = base
        graph.graph["aliases"] = aliases
        return graph


def trace(model: torch.nn.Module, example_inputs: Any, dtype: str = "fp32", name: str | None = None,
          leaf_modules: tuple[type, ...] = ()) -> nx.DiGraph:
    """See ``frontend.trace.trace``."""
    dtype_bytes(dtype)
    name = name or type(model).__name__
    inputs = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    with _quiet_fake_tensors():
        gm = symbolic_trace(model, inputs, name, leaf_modules)
        propagate_shapes(gm, model, inputs, name)
    converter = _Converter(gm, model, dtype, name)
    converter.run()
    graph = converter.emit()
    check_graph(graph)
    return graph

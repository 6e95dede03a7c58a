"""What torch.fx captures of a model: the FX tracers (``symbolic_trace``) and the shape
propagation that gives every node its shape and dtype (``propagate_shapes``), both under fake
tensors. ``frontend.fx_convert`` turns the result into a ``DataflowGraph``.

``frontend.trace.trace`` imports these modules when it runs, so ``import frontend`` stays free
of torch. The policy (what is an operator, a weight, an alias) is documented in
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
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, cast

import torch
import torch.fx
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensorMode,
)
from torch.fx.immutable_collections import immutable_dict, immutable_list
from torch.fx.node import Node, _get_qualified_name, map_aggregate, map_arg
from torch.fx.passes.shape_prop import _extract_tensor_metadata

from frontend.errors import SymbolicTraceError, TraceError

# --------------------------------------------------------------------------- tracing

#: modules kept whole even though they have children (costed from their configuration)
LEAF_MODULES: tuple[type, ...] = (torch.nn.MultiheadAttention,)


class _Tracer(torch.fx.Tracer):
    """Symbolic tracer: childless ``torch.nn`` modules and ``LEAF_MODULES`` are leaves.

    FX's default keeps *every* ``torch.nn`` module whole, so ``nn.TransformerEncoderLayer``
    would be one opaque operator; here composite ``torch.nn`` modules are traced through.
    """

    def __init__(self, leaf_modules: tuple[type | str, ...] = ()) -> None:
        super().__init__()
        self.leaf_types = LEAF_MODULES + tuple(m for m in leaf_modules if isinstance(m, type))
        #: qualified names of modules kept whole (a user's host modules, ``frontend.host``)
        self.leaf_names = frozenset(m for m in leaf_modules if isinstance(m, str))

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        if isinstance(m, self.leaf_types) or module_qualified_name in self.leaf_names:
            return True
        if m.__module__.startswith("torch.ao.nn.quantized."):
            return True  # kept whole: a quantized Linear's packed weights are a child module
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

    def __init__(self, leaf_modules: tuple[type | str, ...], inputs: Mapping[str, Any],
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
            return fetch_attr(self.root, str(node.target))
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

    def trace(self, root: Any, concrete_args: dict[str, Any] | None = None) -> torch.fx.Graph:
        """Trace with ``torch.tensor(value)`` of a static value (RAFT divides by
        ``torch.tensor(num_channels)``, a channel count) made from the example's value: a
        constant of the specialised graph, as the value itself is."""
        tensor = torch.tensor

        def tensor_of_static(data: Any, *args: Any, **kwargs: Any) -> torch.Tensor:
            if isinstance(data, torch.fx.Proxy):
                data = self.concrete(data, "passed to torch.tensor")
            return tensor(data, *args, **kwargs)

        from unittest import mock

        with mock.patch.object(torch, "tensor", tensor_of_static):
            return super().trace(root, concrete_args)


def fetch_attr(root: torch.nn.Module, target: str) -> Any:
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
        if "/torch/fx/" in path or path.endswith(("frontend/fx_capture.py", "frontend/fx_convert.py")):
            continue
        marker = path.rfind("site-packages/")
        short = path[marker + len("site-packages/"):] if marker >= 0 else "/".join(path.split("/")[-3:])
        return f"{short}:{frame.lineno} in {frame.name}: {(frame.line or '').strip()}"
    return ""


def first_paragraph(exc: BaseException) -> str:
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
    return first_paragraph(exc) + (f" (at {where})" if where else "")


def describe_inputs(inputs: Sequence[Any]) -> str:
    """``example inputs of shape (1, 3, 224)``: the shapes (type names for non-tensors) of ``inputs``."""
    shapes = [str(tuple(int(d) for d in x.shape)) if isinstance(x, torch.Tensor) else type(x).__name__
              for x in inputs]
    return f"example inputs of shape{'s' if len(shapes) > 1 else ''} {', '.join(shapes) or '()'}"


def _fakes(mode: FakeTensorMode, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with every tensor replaced by a fake of it under ``mode`` (same shape, dtype, device)."""
    return {k: mode.from_tensor(v) if isinstance(v, torch.Tensor) else v for k, v in values.items()}


@contextlib.contextmanager
def quiet_torch_logs() -> Iterator[None]:
    """While tracing, torch's log records go where the application sends its own, not to stderr.

    torch gives its loggers (``torch``, ``torch.export``, ``torch.fx.experimental.symbolic_shapes``,
    ...) handlers that write to stderr and stop propagation, so a model torch.export cannot
    trace prints a dozen lines of warnings and graph dumps before ``trace`` reports the failure
    as one ``TraceError`` line. Here those handlers are taken off and the records propagate to
    the root logger: the command line writes them to its debug log (``accelsim.cli.debug_log``),
    a Python program to whatever its logging is set up to do. FakeTensorMode's own log is
    silenced: when a fake kernel raises (an input of the wrong shape) it logs that same error
    with a full traceback, which ``trace`` reports already. Everything is put back afterwards.
    """
    import logging

    saved: list[tuple[logging.Logger, list[logging.Handler], bool, bool]] = []
    loggers = [logging.getLogger(name) for name in list(logging.Logger.manager.loggerDict)
               if name == "torch" or name.startswith("torch.")]
    for logger in loggers:
        saved.append((logger, logger.handlers[:], logger.propagate, logger.disabled))
        if logger.handlers:
            logger.handlers = [h for h in logger.handlers if not _writes_to_terminal(h)]
            logger.propagate = True
    logging.getLogger("torch._subclasses.fake_tensor").disabled = True
    try:
        yield
    finally:
        for logger, handlers, propagate, disabled in saved:
            logger.handlers, logger.propagate, logger.disabled = handlers, propagate, disabled


def _writes_to_terminal(handler: object) -> bool:
    """A handler that writes to stderr or stdout (a ``StreamHandler`` on them, or torch's own
    handler, whose ``stream`` is ``sys.stderr`` looked up anew), as opposed to a file."""
    import sys

    return getattr(handler, "stream", None) in (sys.stderr, sys.stdout)


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
                   leaf_modules: tuple[type | str, ...] = ()) -> torch.fx.GraphModule:
    """FX-trace ``model``; retry with shape specialisation; ``TraceError`` with FX's reason.

    ``leaf_modules`` are module classes, or qualified module names, kept whole.

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
            message = f"cannot trace {name!r} on {describe_inputs(inputs)} with torch.fx: {_reason(plain_error)}"
            if str(specialised_error) != str(plain_error):
                message += f"; with shapes specialised to the example inputs: {_reason(specialised_error)}"
            raise SymbolicTraceError(message) from plain_error
    return torch.fx.GraphModule(tracer.root, graph, type(model).__name__)


# --------------------------------------------------------------------------- shape propagation


class _NodeFailure(Exception):
    """Running FX node ``node`` raised ``error`` (kept whole: torch.fx appends text to messages)."""

    def __init__(self, node: Node, error: Exception) -> None:
        super().__init__(f"{node.name}: {error}")
        self.node = node
        self.error = error


def _mutable(value: Any) -> Any:
    """``value`` with FX's immutable lists and dicts (at any depth, inside plain tuples too)
    replaced by plain ones; anything else as it is."""
    if isinstance(value, immutable_list):
        return [_mutable(v) for v in value]
    if isinstance(value, immutable_dict):
        return {k: _mutable(v) for k, v in value.items()}
    if type(value) is tuple:
        return tuple(_mutable(v) for v in value)
    return value


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

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The node's arguments as plain, mutable containers: FX keeps a node's list and dict
        arguments as ``immutable_list`` / ``immutable_dict``, and model code may change the lists
        it is given (torchvision's Swin3D pads its window size in place)."""
        args, kwargs = super().fetch_args_kwargs_from_env(n)
        return tuple(_mutable(a) for a in args), {k: _mutable(v) for k, v in kwargs.items()}

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
                f"cannot trace {name!r} on {describe_inputs(inputs)}: the output shape of {_where_node(node)} "
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
        f"cannot trace {name!r} on {describe_inputs(inputs)}: {first_paragraph(error)} "
        f"(at {_where_node(node)})"
    ) from error

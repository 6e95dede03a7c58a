"""The ``torch.export`` path of ``frontend.trace.trace`` (``method="export"``, and ``"auto"`` when
torch.fx cannot trace a model): export the model, then turn its ATen graph into a
``DataflowGraph`` under the same policy as the FX path (``frontend.trace``'s docstring).

Capture
-------
``torch.export.export(model, inputs, strict=False)``: non-strict export runs the model's Python
as it is, under fake tensors, and records the ATen operators it calls; Python control flow on
shapes, ``for row in x`` over a tensor and other constructs torch.fx symbolic tracing refuses
are simply executed (the graph is specialised to the example inputs, as the FX path's is).
Only data-dependent control flow still fails. The graph is export's default IR (the
"training" IR, before ``run_decompositions``): composite operators such as ``aten.conv2d``,
``aten.linear``, ``aten.batch_norm``, ``aten.layer_norm`` and ``aten.scaled_dot_product_attention``
are kept whole and in-place operators (``aten.relu_``, ``aten.add_``) stay in place, which is
the granularity of the FX graph; decomposing to the core ATen set would split every
convolution's bias and every batch norm into several operators. Zoo models built on the meta
device export as they are (resnet18: about 2.5 s, like the others): export fakes the meta
parameters and inputs itself, so no real weights are needed.

Conversion, against the FX path
-------------------------------
* weights: the placeholders of the graph signature's ``inputs_to_parameters`` /
  ``inputs_to_buffers`` / ``inputs_to_lifted_tensor_constants``, named by their qualified name;
  inputs: the ``USER_INPUT`` placeholders (named after the forward's arguments, as in FX);
  outputs: every tensor of the ``USER_OUTPUT`` results (the pytree flattened, so
  ``{"out": y}`` gives ``y``).
* leaves: a node's ``meta["nn_module_stack"]`` names the modules it ran in. The outermost
  module on it that the FX tracer would keep as a leaf (a childless ``torch.nn`` module,
  ``nn.MultiheadAttention``, the ``leaf_modules`` given) makes its nodes one operator of the
  module's kind (``frontend.cost.module_kind``), reading the module's parameters and buffers and
  costed from the module's configuration and the shapes of its call's arguments (recorded by a
  forward pre-hook while exporting), exactly as the FX path costs a ``call_module``. So
  ``nn.ReLU6`` (``aten.hardtanh_``) is ``relu6``, ``nn.Upsample`` is ``interpolate``, and
  ``nn.MultiheadAttention`` (about 20 ATen operators) is one ``multi_head_attention``.
  A leaf call whose nodes are all views (``nn.Flatten``, eval-mode ``nn.Dropout``) stays views.
* other ATen operators: the kind is the operator's name through ``ATEN_KINDS`` and then
  ``frontend.cost.function_kind`` (``add_.Tensor`` -> ``add``, ``mm`` -> ``matmul``,
  ``upsample_bilinear2d`` -> ``interpolate``); the operands are the tensor arguments in schema
  order, so MACs and GEMMs come from the same rules.
* views (``VIEW_OPERATORS``: ``view``, ``_unsafe_view``, ``reshape``, ``flatten``, ``expand``,
  ``squeeze``, ``unsqueeze``, ``select``, ``slice``, ``split``, ``unbind``, ``alias``,
  ``detach``, ``contiguous``, ...), eval-mode ``dropout`` and dtype-keeping ``to`` /
  ``_to_copy`` are aliases; ``permute``, ``transpose``, ``t`` and ``clone`` are operators.
  In-place ATen operators (a schema whose first argument is written, ``Tensor(a!) self``) are
  functionalised as in the FX path; dead code is dropped the same way.

Functions that torch.fx keeps whole because they are ``torch.fx.wrap``-ed (torchvision's
``shifted_window_attention``, ``_get_relative_position_bias`` and ``_patch_merging_pad`` in Swin)
are found too: while exporting, each such function is replaced in its module's globals by a
recorder (as FX itself patches them) that notes the call's arguments and marks the nodes the
call adds to the graph being traced (``node.meta[WRAPPED_CALL]``); those nodes become one
operator of the function's kind, costed from its arguments as in FX.

Against the FX path on the 24 zoo models (``studies/export_vs_fx.py`` writes
``docs/bench/export_vs_fx.csv``): the same operators, operators per kind, MACs, bytes of
inputs, weights, activations and outputs, and edges on all 24; operator by operator too, names
aside (kind, MACs, elements, GEMMs, and the shape and kind of every tensor read and written, in
order). Two adjustments make the last hold: a call's result takes the shape its readers see
(``expose``: ``nn.MultiheadAttention`` computes ``(L * N, E)`` rows and returns a ``(L, N, E)``
view, which FX records as the module's result), and a call's reads are listed in its
arguments' order (``in_argument_order``). Without the groupings above they would
not: each ``nn.MultiheadAttention`` of ``vit_b_16`` and ``transformer`` would be its ATen
operators (``linear``, ``transpose``, ``scaled_dot_product_attention``, ...), and Swin, without
the wrapped functions, had 423 operators instead of 124 (the windows' ``roll`` / ``permute`` /
``pad``, the shifted window's mask built with ``new_zeros`` and 45 in-place ``copy_``; 117 MB
more activations; the same MACs). What differs by design: operator and tensor names (export's
ATen node names, ``conv2d_3``, against FX's module paths, ``layer1_0_conv1``), a forward argument
named ``input`` (FX renames it ``input_1``), and ``graph.graph["tracer"]``.

Limits: a leaf module's nodes are grouped by the module even when it runs inside a wrapped
function (FX would keep the whole function as one operator; no zoo model does this); a wrapped
function inside a leaf module is part of the module, as in FX.
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import operator
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import get_proxy_mode
from torch.fx.node import Node

from frontend import cost
from frontend.emission import GraphBuilder, OpRecord, bind_arguments, nodes_in, replace_names
from frontend.errors import TraceError
from frontend.fx_capture import LEAF_MODULES, describe_inputs, first_paragraph, quiet_torch_logs
from frontend.graph import check_graph, dtype_bytes

#: ATen operators (overload packet names) that return a view of, or the same data as, their
#: first tensor argument
VIEW_OPERATORS = frozenset({
    "view", "_unsafe_view", "reshape", "flatten", "unflatten", "view_as", "reshape_as", "squeeze",
    "squeeze_", "unsqueeze", "unsqueeze_", "expand", "expand_as", "broadcast_to", "contiguous",
    "detach", "detach_", "alias", "select", "slice", "narrow", "chunk", "split", "split_with_sizes",
    "tensor_split", "unbind", "lift_fresh_copy", "view_as_real", "view_as_complex",
})
#: dropout-like ATen operators: views when their ``train`` argument is False
_DROPOUT_OPERATORS = frozenset({"dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout",
                                "native_dropout"})
#: conversions: views when they keep the dtype, ``cast`` operators otherwise
_CAST_OPERATORS = frozenset({"to", "_to_copy", "type_as"})
#: operators that read only their tensor arguments' metadata
_METADATA_ONLY = frozenset({
    "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like",
    "new_zeros", "new_ones", "new_empty", "new_full", "scalar_tensor",
})
#: ATen operator name -> the kind the FX path gives the same computation (other names go
#: through ``frontend.cost.function_kind``)
ATEN_KINDS: dict[str, str] = {
    "_native_batch_norm_legit_no_training": "batch_norm", "native_batch_norm": "batch_norm",
    "native_layer_norm": "layer_norm", "native_group_norm": "group_norm",
    "upsample_nearest1d": "interpolate", "upsample_nearest2d": "interpolate",
    "upsample_nearest3d": "interpolate", "upsample_linear1d": "interpolate",
    "upsample_bilinear2d": "interpolate", "upsample_bicubic2d": "interpolate",
    "upsample_trilinear3d": "interpolate", "_upsample_bilinear2d_aa": "interpolate",
    "_upsample_bicubic2d_aa": "interpolate", "_upsample_nearest_exact2d": "interpolate",
    "constant_pad_nd": "pad", "reflection_pad1d": "pad", "reflection_pad2d": "pad",
    "reflection_pad3d": "pad", "replication_pad1d": "pad", "replication_pad2d": "pad",
    "replication_pad3d": "pad",
    "_softmax": "softmax", "_log_softmax": "log_softmax", "rsub": "sub",
}

#: ``node.meta`` key of the nodes a call of a ``torch.fx.wrap``-ed function added: the call's index
WRAPPED_CALL = "frontend_wrapped_call"

def aten_name(target: Any) -> str:
    """``"add_"`` for ``aten.add_.Tensor``: the overload packet's name (a Python function's name otherwise)."""
    packet = getattr(target, "overloadpacket", None)
    if packet is not None:
        return str(packet.__name__)
    return str(getattr(target, "__name__", target))


def aten_kind(target: Any, args: Sequence[Any] = ()) -> str:
    """The normalised kind of an ATen operator, as ``frontend.cost`` names it.

    >>> aten_kind(torch.ops.aten.add_.Tensor), aten_kind(torch.ops.aten.mm.default)
    ('add', 'matmul')
    >>> aten_kind(torch.ops.aten.upsample_bilinear2d.vec)
    'interpolate'
    """
    name = aten_name(target)
    if name in ("convolution", "_convolution") and len(args) >= 7:
        weight = args[1].meta.get("val") if isinstance(args[1], Node) else None
        dims = weight.dim() - 2 if isinstance(weight, torch.Tensor) else 2
        return f"conv_transpose{dims}d" if args[6] else f"conv{dims}d"
    return ATEN_KINDS.get(name, cost.function_kind(name))


def _writes_first_argument(target: Any) -> bool:
    """Does the ATen schema of ``target`` write its first argument (``Tensor(a!) self``)?"""
    schema = getattr(target, "_schema", None)
    if schema is None or not schema.arguments:
        return False
    alias = schema.arguments[0].alias_info
    return bool(alias is not None and alias.is_write)


def _shape_of(value: Any) -> tuple[int, ...] | None:
    return tuple(int(d) for d in value.shape) if isinstance(value, torch.Tensor) else None


# --------------------------------------------------------------------------- leaves


def is_leaf(module: torch.nn.Module, leaf_types: tuple[type, ...]) -> bool:
    """The FX path's leaf rule (``frontend.fx_capture``): ``leaf_types``, or a childless ``torch.nn`` module."""
    if isinstance(module, leaf_types):
        return True
    if type(module).__module__.startswith(("torch.nn.", "torch.ao.nn.")):
        return next(module.children(), None) is None
    return False


@dataclass
class _Call:
    """One call of a leaf module or of an ``torch.fx.wrap``-ed function, as seen while exporting."""

    kind: str  # the normalised kind the FX path gives the call
    target: str  # the module's qualified class name, or the function's qualified name
    module: torch.nn.Module | None  # the leaf module (None for a function)
    path: str  # the module's qualified name in the model ("" for a function)
    arguments: dict[str, Any]  # by parameter name; tensors as shape tuples
    operands: list[tuple[int, ...]]  # shapes of the tensor arguments, in order


@dataclass
class _Calls:
    """The calls recorded while exporting: leaf modules by path, wrapped functions in order."""

    modules: dict[str, list[_Call]] = field(default_factory=dict)
    functions: list[_Call] = field(default_factory=list)  # in call order; nodes name theirs (WRAPPED_CALL)


def _shapes(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return tuple(int(d) for d in obj.shape)
    if type(obj) in (tuple, list):
        return type(obj)(_shapes(x) for x in obj)
    if isinstance(obj, Mapping):
        return {k: _shapes(x) for k, x in obj.items()}
    return obj


def _tensor_shapes(obj: Any) -> list[tuple[int, ...]]:
    if isinstance(obj, torch.Tensor):
        return [tuple(int(d) for d in obj.shape)]
    if isinstance(obj, (tuple, list)):
        return [s for x in obj for s in _tensor_shapes(x)]
    if isinstance(obj, Mapping):
        return [s for x in obj.values() for s in _tensor_shapes(x)]
    return []


def _leaves(module: torch.nn.Module, prefix: str,
            leaf_types: tuple[type, ...]) -> Iterator[tuple[str, torch.nn.Module]]:
    """The leaf modules under ``module``, with their qualified names (the FX tracer's leaves)."""
    for child_name, child in module.named_children():
        path = f"{prefix}.{child_name}" if prefix else child_name
        if is_leaf(child, leaf_types):
            yield path, child
        else:
            yield from _leaves(child, path, leaf_types)


@contextlib.contextmanager
def _record_calls(model: torch.nn.Module, leaf_types: tuple[type, ...]) -> Iterator[_Calls]:
    """Record every call of a leaf module (a forward pre-hook) and of a function torch.fx keeps
    whole (``torch.fx.wrap``: the name is replaced in its module's globals by a recorder) while
    the block runs; everything is put back after it."""
    from torch.fx import _symbolic_trace  # the registry of torch.fx.wrap, which FX patches the same way

    calls = _Calls()
    handles = []
    for path, module in _leaves(model, "", leaf_types):
        def hook(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], path: str = path) -> None:
            cls = type(module)
            calls.modules.setdefault(path, []).append(_Call(
                cost.module_kind([c.__name__ for c in cls.__mro__]), f"{cls.__module__}.{cls.__qualname__}",
                module, path, _shapes(bind_arguments(module.forward, args, kwargs)), _tensor_shapes((args, kwargs))))

        handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))

    def recorder(original: Any) -> Any:
        @functools.wraps(original)
        def record(*args: Any, **kwargs: Any) -> Any:
            index = len(calls.functions)
            calls.functions.append(_Call(
                cost.function_kind(original.__name__), f"{original.__module__}.{original.__qualname__}", None, "",
                _shapes(bind_arguments(original, args, kwargs)), _tensor_shapes((args, kwargs))))
            graph = getattr(getattr(get_proxy_mode(), "tracer", None), "graph", None)
            last = next(reversed(graph.nodes), None) if graph is not None else None
            result = original(*args, **kwargs)
            if graph is not None:  # mark the nodes the call added (an enclosing call marks them again)
                node = last.next if last is not None else next(iter(graph.nodes), None)
                while node is not None and node.op != "root":
                    node.meta[WRAPPED_CALL] = index
                    node = node.next
            return result

        return record

    patched: list[tuple[dict[str, Any], str, Any]] = []
    for (_, fname), namespace in list(_symbolic_trace._wrapped_fns_to_patch.items()):
        original = namespace.get(fname)
        if callable(original) and getattr(original, "__code__", None) is not None:
            patched.append((namespace, fname, original))
            namespace[fname] = recorder(original)
    try:
        yield calls
    finally:
        for handle in handles:
            handle.remove()
        for namespace, fname, original in patched:
            namespace[fname] = original


# --------------------------------------------------------------------------- conversion


class _Converter(GraphBuilder):
    """One pass over the exported graph in program order, then dead-code elimination, then emission."""

    def __init__(self, program: Any, model: torch.nn.Module, dtype: str, name: str,
                 leaf_types: tuple[type, ...], calls: _Calls) -> None:
        super().__init__(dtype, name)
        self.graph: torch.fx.Graph = program.graph
        self.signature = program.graph_signature
        self.model = model
        self.calls = calls
        self.leaf_paths = {path for path, _ in _leaves(model, "", leaf_types)}
        self.env: dict[Node, Any] = {}  # node -> tensor name, list of names, or None
        # a tied parameter (a language model's head and embedding) is one weight, named as the model
        # first lists it; torch.export would name it once per place it is bound
        first: dict[int, str] = {}
        self.canonical: dict[str, str] = {}
        for qualified, tensor in [*model.named_parameters(remove_duplicate=False),
                                  *model.named_buffers(remove_duplicate=False)]:
            self.canonical[qualified] = first.setdefault(id(tensor), qualified)

    # ---- helpers

    def names_in(self, obj: Any) -> list[str]:
        """Tensor names read through ``obj`` (an argument structure of nodes), resolved, in order."""
        found: list[str] = []

        def visit(v: Any) -> None:
            if isinstance(v, str):
                found.append(self.resolve(v))
            elif isinstance(v, list):
                for x in v:
                    visit(x)

        for node in nodes_in(obj):
            visit(self.env.get(node))
        return found

    @staticmethod
    def layout(value: Any, prefix: str) -> tuple[Any, list[tuple[str, torch.Tensor]]]:
        """Mirror ``value`` (a node's ``meta["val"]``) with a tensor name per tensor; also the flat list."""
        flat: list[tuple[str, torch.Tensor]] = []

        def walk(v: Any, path: str) -> Any:
            if isinstance(v, torch.Tensor):
                flat.append((path, v))
                return path
            if isinstance(v, (tuple, list)):
                return [walk(x, f"{path}.{i}") for i, x in enumerate(v)]
            return None

        return walk(value, prefix), flat

    def group_of(self, node: Node) -> tuple[str, str, str] | tuple[str, int] | None:
        """What the FX path keeps whole around ``node``: ``("module", stack key, path)`` for the
        outermost leaf module on its ``nn_module_stack``, else ``("function", index)`` for the
        outermost call of a ``torch.fx.wrap``-ed function it was made in, else None."""
        stack = node.meta.get("nn_module_stack") or {}
        for key, entry in stack.items():
            path = str(entry[0])
            if path and path in self.leaf_paths:
                return "module", str(key), path
        index = node.meta.get(WRAPPED_CALL)
        return ("function", int(index)) if index is not None else None

    def segments(self, nodes: list[Node]) -> list[tuple[list[Node], _Call | None]]:
        """``nodes`` cut into the calls FX keeps whole, each with what was recorded of it, and
        single nodes (``None``). A module call's stack key ends in ``@k`` for its ``k``-th call
        (none for the first)."""
        runs: list[tuple[list[Node], Any]] = []
        for node in nodes:
            group = self.group_of(node) if node.op == "call_function" else None
            if group is not None and runs and runs[-1][1] == group:
                runs[-1][0].append(node)
            else:
                runs.append(([node], group))
        segments: list[tuple[list[Node], _Call | None]] = []
        for run, group in runs:
            call: _Call | None = None
            if group is not None and group[0] == "module":
                key, path = group[1], group[2]
                index = int(key.rsplit("@", 1)[1]) if re.search(r"@\d+$", key) else 0
                recorded = self.calls.modules.get(path, [])
                call = recorded[index] if index < len(recorded) else None
            elif group is not None:
                call = self.calls.functions[group[1]]
            if call is None and len(run) > 1:
                segments += [([node], None) for node in run]
            else:
                segments.append((run, call))
        return segments

    def is_view(self, node: Node) -> bool:
        name = aten_name(node.target)
        if node.target is operator.getitem:
            return False
        if name in VIEW_OPERATORS:
            return True
        if name.rstrip("_") in _DROPOUT_OPERATORS:  # dropout_ too (nn.Dropout(inplace=True))
            train = node.args[2] if len(node.args) > 2 else node.kwargs.get("train", True)
            return not train
        if name in _CAST_OPERATORS:
            source = node.args[0].meta.get("val") if node.args and isinstance(node.args[0], Node) else None
            out = node.meta.get("val")
            return (isinstance(source, torch.Tensor) and isinstance(out, torch.Tensor)
                    and source.dtype == out.dtype and source.device == out.device)
        return False

    # ---- the pass

    def run(self) -> None:
        weights = {**self.signature.inputs_to_parameters, **self.signature.inputs_to_buffers,
                   **self.signature.inputs_to_lifted_tensor_constants}
        user_inputs = set(self.signature.user_inputs)
        user_outputs = set(self.signature.user_outputs)
        nodes = list(self.graph.nodes)
        for run, call in self.segments(nodes):
            node = run[0]
            if call is not None:
                self.whole(run, call)
            elif node.op == "placeholder":
                self.placeholder(node, weights, user_inputs)
            elif node.op == "output":
                results: Any = node.args[0]
                specs = self.signature.output_specs
                picked = [r for r, spec in zip(results, specs, strict=False)
                          if getattr(spec.arg, "name", None) in user_outputs]
                self.outputs = list(dict.fromkeys(self.names_in(picked)))
            elif node.op == "call_function":
                self.call(node)
            else:
                self.env[node] = None  # get_attr of a submodule (higher-order operators), ...

    def placeholder(self, node: Node, weights: Mapping[str, str], user_inputs: set[str]) -> None:
        value = node.meta.get("val")
        if node.name in weights:
            qualified = self.canonical.get(weights[node.name], weights[node.name])
            if isinstance(value, torch.Tensor):
                if qualified.split(".")[-1] == "num_batches_tracked":
                    self.env[node] = None  # a training-only counter; inference never reads it
                    return
                if qualified not in self.tensors:
                    self.register(qualified, value.shape, value.dtype)
                    self.weights.add(qualified)
                self.env[node] = qualified
            else:
                self.env[node] = None
            return
        structure, flat = self.layout(value, node.name)
        self.env[node] = structure
        if node.name in user_inputs:
            for tname, tensor in flat:
                self.register(tname, tensor.shape, tensor.dtype)
                self.inputs.append(tname)

    def call(self, node: Node, whole: _Call | None = None) -> None:
        """One ATen node: nothing, a view, or an operator (costed as ``whole``, the call FX keeps
        whole, when the node is that call's only operator)."""
        value = node.meta.get("val")
        source = self.env.get(node.args[0]) if node.args and isinstance(node.args[0], Node) else None
        if node.target is operator.getitem:
            picked = source[node.args[1]] if isinstance(source, list) and isinstance(node.args[1], int) \
                and node.args[1] < len(source) else None
            self.env[node] = picked
            if isinstance(picked, str):
                self.aliases[node.name] = self.resolve(picked)
            return
        structure, flat = self.layout(value, node.name)
        if not flat:  # computes no tensor: sym_size, asserts, grad-mode switches
            self.env[node] = None
            return
        if self.is_view(node):
            bases = self.names_in(node.args[:1] or list(node.kwargs.values())[:1])
            if bases:
                self.env[node] = replace_names(structure, bases[0])
                self.aliases[node.name] = bases[0]
                return
        name = aten_name(node.target)
        reads = [] if name in _METADATA_ONLY else self.names_in((node.args, node.kwargs))
        params: dict[str, tuple[int, ...]] = {}
        attributes: dict[str, Any] = {}
        if whole is not None:
            kind, target, operands, arguments = whole.kind, whole.target, whole.operands, whole.arguments
            if whole.module is not None:
                params, attributes, weight_reads = self.module_weights(whole.module, whole.path)
                reads += weight_reads
        else:
            kind = aten_kind(node.target, node.args)
            target = str(node.target)
            operands = [s for s in (_shape_of(n.meta.get("val")) for n in nodes_in((node.args, node.kwargs)))
                        if s is not None]
            arguments = self.arguments(node)
        for tname, tensor in flat:
            self.register(tname, tensor.shape, tensor.dtype)
        outputs = [tname for tname, _ in flat]
        call = cost.OpCall(kind=kind, operands=operands, outputs=[_shape_of(t) or () for _, t in flat],
                           params=params, attributes=attributes, arguments=arguments)
        self.env[node] = structure
        self.ops.append(OpRecord(node.name, kind, target, list(dict.fromkeys(reads)), outputs,
                            cost.macs(call), cost.elements(call), cost.gemms(call), axis=cost.axis(call),
                            window=cost.window(call)))
        if _writes_first_argument(node.target) and len(outputs) == 1:
            mutated = self.names_in(node.args[:1])
            if mutated and mutated[0] not in self.weights:
                self.version[mutated[0]] = outputs[0]

    def module_weights(self, module: torch.nn.Module,
                       path: str) -> tuple[dict[str, tuple[int, ...]], dict[str, Any], list[str]]:
        """A leaf module's parameters and buffers (shapes by local name), scalar configuration, and weight names."""
        params: dict[str, tuple[int, ...]] = {}
        reads: list[str] = []
        for local, tensor in [*module.named_parameters(), *module.named_buffers()]:
            if local.split(".")[-1] == "num_batches_tracked":
                continue
            qualified = self.canonical.get(f"{path}.{local}", f"{path}.{local}")
            if qualified not in self.tensors:
                self.register(qualified, tensor.shape, tensor.dtype)
                self.weights.add(qualified)
            if qualified in self.weights:
                reads.append(qualified)
            params[local] = tuple(int(d) for d in tensor.shape)
        attributes = {k: v for k, v in vars(module).items()
                      if isinstance(v, (bool, int, float, str, tuple)) and not k.startswith("_")}
        return params, attributes, reads

    @staticmethod
    def arguments(node: Node) -> dict[str, Any]:
        """The node's arguments by schema name, tensors as shape tuples."""
        def convert(a: Any) -> Any:
            if isinstance(a, Node):
                return _shape_of(a.meta.get("val"))
            if isinstance(a, (tuple, list)):
                return type(a)(convert(x) for x in a)
            return a

        schema = getattr(node.target, "_schema", None)
        names = [arg.name for arg in schema.arguments] if schema is not None else []
        arguments = {names[i] if i < len(names) else f"arg{i}": convert(a) for i, a in enumerate(node.args)}
        arguments.update({k: convert(v) for k, v in node.kwargs.items()})
        return arguments

    def whole(self, nodes: list[Node], call: _Call) -> None:
        """The nodes of one call FX keeps whole (a leaf module, a wrapped function): one operator of
        the call's kind, costed from its arguments; views only stay views."""
        computing = [n for n in nodes if n.target is not operator.getitem and not self.is_view(n)
                     and self.layout(n.meta.get("val"), n.name)[1]]
        if len(computing) <= 1:
            for node in nodes:
                self.call(node, call if node in computing else None)
            if computing:
                self.expose(nodes, set(self.ops[-1].outputs))
            return
        # several ATen operators: convert them as usual, then merge them into one operator
        first_op = len(self.ops)
        for node in nodes:
            self.call(node)
        parts = self.ops[first_op:]
        del self.ops[first_op:]
        written = {t for op in parts for t in op.outputs}
        inside = set(nodes)
        exported: list[str] = []
        for node in nodes:
            if any(user not in inside for user in node.users):
                exported += [t for t in self.names_in(node) if t in written]
        # a tensor from outside updated in place inside: its new value leaves the call too
        exported += [self.resolve(t) for t, new in self.version.items() if new in written and t not in written]
        reads = self.in_argument_order([t for op in parts for t in op.inputs if t not in written], call.operands)
        params: dict[str, tuple[int, ...]] = {}
        attributes: dict[str, Any] = {}
        if call.module is not None:
            params, attributes, weight_reads = self.module_weights(call.module, call.path)
            reads += weight_reads
        outputs = list(dict.fromkeys(exported))
        self.expose(nodes, set(outputs))
        opcall = cost.OpCall(kind=call.kind, operands=call.operands,
                             outputs=[tuple(self.tensors[t].shape) for t in outputs],
                             params=params, attributes=attributes, arguments=call.arguments)
        self.ops.append(OpRecord(parts[0].name, call.kind, call.target, list(dict.fromkeys(reads)), outputs,
                            cost.macs(opcall), cost.elements(opcall), cost.gemms(opcall), axis=cost.axis(opcall),
                            window=cost.window(opcall)))

    def expose(self, nodes: list[Node], written: set[str]) -> None:
        """Give each tensor ``written`` by a call the shape its readers outside the call see.

        A call's result is often a view of the tensor it computed last (``nn.MultiheadAttention``
        reshapes its projection's ``(L * N, E)`` rows to ``(L, N, E)``); the view is folded into
        that tensor, but FX, which sees only the call, gives the result the view's shape. The
        elements are the same, so only the shape changes.
        """
        inside = set(nodes)
        done: set[str] = set()
        for node in nodes:
            shape = _shape_of(node.meta.get("val"))
            if shape is None or all(user in inside for user in node.users):
                continue
            for tname in self.names_in(node):
                if tname in written and tname not in done:
                    done.add(tname)
                    if cost.numel(shape) == cost.numel(self.tensors[tname].shape):
                        self.tensors[tname].shape = list(shape)

    def in_argument_order(self, reads: list[str], operands: Sequence[tuple[int, ...]]) -> list[str]:
        """``reads`` (distinct) in the order of the call's tensor arguments, as the FX path lists
        them: each argument's shape picks the first unpicked read of that shape, then of that many
        elements (an argument that is a view of a read); reads no argument picked come last."""
        pending = list(dict.fromkeys(reads))
        picked: dict[int, str] = {}
        for same in (lambda a, b: a == b, lambda a, b: cost.numel(a) == cost.numel(b)):
            for i, shape in enumerate(operands):
                match = next((t for t in pending if i not in picked
                              and same(tuple(self.tensors[t].shape), tuple(shape))), None)
                if match is not None:
                    pending.remove(match)
                    picked[i] = match
        return [picked[i] for i in sorted(picked)] + pending


def export(model: torch.nn.Module, inputs: tuple[Any, ...], name: str,
           leaf_types: tuple[type, ...]) -> tuple[Any, _Calls]:
    """``torch.export.export(model, inputs, strict=False)``, and the calls of leaf modules and
    wrapped functions seen while exporting.

    Raises ``TraceError`` (one line: the model, the input shapes, export's reason).
    """
    printed = io.StringIO()
    # on a failure torch.export prints the partial graph straight to stderr (not through its
    # log): it goes to the log with the rest of torch's records, not to the user's terminal
    with quiet_torch_logs(), _record_calls(model, leaf_types) as calls, contextlib.redirect_stderr(printed):
        try:
            program = torch.export.export(model, inputs, strict=False)
        except Exception as error:
            if printed.getvalue().strip():
                logging.getLogger("torch.export").warning("printed while exporting %r:\n%s", name, printed.getvalue())
            raise TraceError(f"cannot trace {name!r} on {describe_inputs(inputs)} with torch.export: "
                             f"{first_paragraph(error)}") from error
    return program, calls


def trace(model: torch.nn.Module, example_inputs: Any, dtype: str = "fp32", name: str | None = None,
          leaf_modules: tuple[type, ...] = ()) -> nx.DiGraph:
    """See ``frontend.trace.trace`` (``method="export"``)."""
    dtype_bytes(dtype)
    name = name or type(model).__name__
    inputs = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    leaf_types = LEAF_MODULES + tuple(leaf_modules)
    program, calls = export(model, inputs, name, leaf_types)
    converter = _Converter(program, model, dtype, name, leaf_types, calls)
    converter.run()
    graph = converter.emit()
    graph.graph["tracer"] = "export"
    check_graph(graph)
    return graph

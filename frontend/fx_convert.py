"""The FX graph -> ``DataflowGraph`` conversion, and ``trace``, the torch half of
``frontend.trace.trace``: capture (``frontend.fx_capture``: tracing and shape propagation under
fake tensors), then convert.

The policy (what is an operator, a weight, an alias, a view, a cast) is documented in
``frontend.trace``; ``_Converter`` implements it: it walks the traced graph in order, gives
every tensor a storage (views and in-place results share their base's), costs every operator
(``frontend.cost``) and emits the nodes and edges of the dataflow graph.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

import networkx as nx
import torch
import torch.fx
import torch.nn.functional as F
from torch.fx.node import Node, _get_qualified_name
from torch.fx.passes.shape_prop import TensorMetadata

from frontend import cost, host
from frontend.emission import GraphBuilder, OpRecord, bind_arguments, nodes_in, replace_names
from frontend.errors import TraceError
from frontend.fx_capture import fetch_attr, propagate_shapes, quiet_torch_logs, symbolic_trace
from frontend.graph import check_graph, dtype_bytes

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

def _is_torch_function(target: Any, name: str) -> bool:
    return any(getattr(ns, name, None) is target for ns in (torch, F, torch.Tensor))


class _Converter(GraphBuilder):
    """One pass over the FX graph in program order, then dead-code elimination, then emission."""

    def __init__(self, gm: torch.fx.GraphModule, model: torch.nn.Module, dtype: str, name: str,
                 host_names: frozenset[str] = frozenset()) -> None:
        super().__init__(dtype, name)
        self.gm = gm
        self.host_names = host_names  # module qualified names and operator kinds that run on the host
        self.model = model
        self.env: dict[Node, Any] = {}  # FX node -> tensor name, container of names, or None
        self.canonical: dict[int, str] = {}
        for pname, p in model.named_parameters():
            self.canonical.setdefault(id(p), pname)
        for bname, b in model.named_buffers():
            self.canonical.setdefault(id(b), bname)

    # ---- helpers

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

        for node in nodes_in(obj):
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
        metas = (node.meta.get("tensor_meta") for node in nodes_in(obj))
        return [tuple(int(d) for d in m.shape) for m in metas if isinstance(m, TensorMetadata)]

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
                value = fetch_attr(self.gm, node.target)
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
        arguments = bind_arguments(fn, node.args, node.kwargs)
        if self.is_view(node, module, arguments):
            bases = self.names_in(node.args[:1] or list(node.kwargs.values())[:1])
            if bases:
                base = bases[0]
                structure, _ = self.layout(meta, node.name)
                self.env[node] = replace_names(structure, base)
                self.aliases[node.name] = base
                return
        self.operator(node, module, meta, arguments)

    @staticmethod
    def pick(source: Any, index: Any) -> Any:
        try:
            return source[index]
        except (IndexError, KeyError, TypeError):
            return None

    def operator(self, node: Node, module: torch.nn.Module | None, meta: Any, arguments: dict[str, Any]) -> None:
        kind, target = self.kind_and_target(node, module)
        fname = str(node.target) if node.op == "call_method" else getattr(node.target, "__name__", "")
        reads = [] if fname in _METADATA_ONLY else self.names_in((node.args, node.kwargs))
        spec = host.HOST_FUNCTIONS.get(node.target) if node.op == "call_function" else None  # type: ignore[arg-type]
        if spec is not None:
            kind = spec.kind
            reads = self.names_in([v for k, v in arguments.items() if k not in spec.shape_only])
        on_host = spec is not None or kind in self.host_names or (
            node.op == "call_module" and str(node.target) in self.host_names)
        params: dict[str, tuple[int, ...]] = {}
        attributes: dict[str, Any] = {}
        if module is not None:
            for local, tensor in [*module.named_parameters(), *module.named_buffers(), *self.packed(module)]:
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
        reads = list(dict.fromkeys(reads))
        if on_host:  # the accelerator computes nothing of it
            self.ops.append(OpRecord(node.name, kind, target, reads, outputs, 0, 0, [], on_host=True))
        else:
            self.ops.append(OpRecord(node.name, kind, target, reads, outputs,
                                     cost.macs(call), cost.elements(call), cost.gemms(call), axis=cost.axis(call),
                                     window=cost.window(call)))
        if self.is_inplace(node, module, arguments) and len(outputs) == 1:
            mutated = self.names_in(node.args[:1])
            if mutated and mutated[0] not in self.weights:
                self.version[mutated[0]] = outputs[0]

    @staticmethod
    def packed(module: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
        """The weight and bias a quantized module keeps packed (``torch.ao.nn.quantized``'s
        ``Conv2d``, ``Linear``, ...), which it returns from its ``weight()`` / ``bias()``
        methods instead of holding them as parameters."""
        if not type(module).__module__.startswith("torch.ao.nn.") or "weight" in dict(module.named_parameters()):
            return []
        found = []
        for local in ("weight", "bias"):
            method = getattr(module, local, None)
            value = method() if callable(method) else None
            if isinstance(value, torch.Tensor):
                found.append((local, value))
        return found


def _unquotable(name: str) -> str | None:
    """What in ``name`` torch.fx cannot write between the double quotes of its generated code
    (it does not escape them), or None: a quote, a backslash (it would start an escape), a line
    break, a NUL byte or a lone surrogate (UTF-8 cannot encode it)."""
    for char in name:
        if char in '"\\\n\r\0' or 0xD800 <= ord(char) <= 0xDFFF:
            return repr(char)
    return None


def check_names(model: torch.nn.Module, name: str) -> None:
    """Refuse, with one ``TraceError`` line naming it, a submodule, parameter or buffer name that
    torch.fx would write into broken Python (``add_module('a"b', ...)`` is legal in PyTorch; the
    traced code then fails to compile with a ``SyntaxError`` several frames deep)."""
    named = [("submodule", n) for n, _ in model.named_modules()]
    named += [("parameter", n) for n, _ in model.named_parameters()]
    named += [("buffer", n) for n, _ in model.named_buffers()]
    for kind, qualified in named:
        bad = _unquotable(qualified)
        if bad is not None:
            raise TraceError(f"cannot trace {name!r}: the {kind} name {qualified!r} holds {bad}, which torch.fx "
                             "cannot write into the Python code it generates; rename it")


def trace(model: torch.nn.Module, example_inputs: Any, dtype: str = "fp32", name: str | None = None,
          leaf_modules: tuple[type, ...] = (), host_names: tuple[str, ...] = ()) -> nx.DiGraph:
    """See ``frontend.trace.trace``."""
    dtype_bytes(dtype)
    name = name or type(model).__name__
    inputs = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    modules = dict(model.named_modules())
    check_names(model, name)
    with quiet_torch_logs():
        gm = symbolic_trace(model, inputs, name, (*leaf_modules, *(n for n in host_names if n in modules)))
        propagate_shapes(gm, model, inputs, name)
    converter = _Converter(gm, model, dtype, name, frozenset(host_names))
    converter.run()
    unmatched = set(host_names) - set(modules) - {op.kind for op in converter.ops}
    if unmatched:
        kinds = ", ".join(sorted({op.kind for op in converter.ops}))
        raise TraceError(f"cannot trace {name!r}: host {', '.join(map(repr, sorted(unmatched)))} is neither a "
                         f"module of the model nor an operator kind it uses (its kinds: {kinds})")
    graph = host.split(converter.emit())
    check_graph(graph)
    return graph

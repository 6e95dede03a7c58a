"""What both tracers' converters share: tensor and operator records, storage sizes, in-place
versions, dead-code elimination and the emission of the ``DataflowGraph``.

``frontend.fx_convert`` (torch.fx) and ``frontend.export_convert`` (torch.export) walk different
graphs but build the same thing; each subclasses ``GraphBuilder``, fills ``tensors``, ``weights``,
``inputs``, ``ops``, ``aliases``, ``version`` and ``outputs`` as it walks, and calls ``emit``.
The policy (what is an operator, a weight, an alias) is documented in ``frontend.trace``.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import torch
from torch.fx.node import Node

from frontend import cost, host
from frontend.errors import TraceError
from frontend.graph import add_operator, add_tensor, dtype_bytes, new_graph

#: storage dtype of the integer and bool tensors, which keep their own itemsize whatever the run's dtype
INTEGER_DTYPES = {
    torch.int64: "int64", torch.int32: "int32", torch.int16: "int16", torch.int8: "int8",
    torch.uint8: "uint8", torch.bool: "bool",
    # quantized tensors (``quantize=True`` models): their integer storage; scale and zero point are
    # per tensor or per channel metadata, not counted
    torch.quint8: "uint8", torch.qint8: "int8", torch.qint32: "int32",
}


def nodes_in(obj: Any) -> Iterator[Node]:
    """Every FX node inside an argument structure (tuples, lists, mappings, slices), in order.

    Strings in FX arguments are literals (e.g. ``"bilinear"``), never nodes.
    """
    if isinstance(obj, Node):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            yield from nodes_in(x)
    elif isinstance(obj, Mapping):
        for x in obj.values():
            yield from nodes_in(x)
    elif isinstance(obj, slice):
        yield from nodes_in((obj.start, obj.stop, obj.step))


def bind_arguments(fn: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``fn``'s arguments by parameter name, defaults applied (``arg0``, ... when it cannot be bound)."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)
    except (TypeError, ValueError):
        arguments = {f"arg{i}": a for i, a in enumerate(args)}
        arguments.update(kwargs)
        return arguments


def replace_names(structure: Any, base: str) -> Any:
    """``structure`` (tensor names nested in lists and dicts) with every name replaced by ``base``:
    what a view's results hold."""
    if isinstance(structure, str):
        return base
    if isinstance(structure, list):
        return [replace_names(s, base) for s in structure]
    if isinstance(structure, dict):
        return {k: replace_names(s, base) for k, s in structure.items()}
    return None


@dataclass
class TensorRecord:
    """A tensor as a converter registers it."""

    shape: list[int]
    dtype: str
    nbytes: int


@dataclass
class OpRecord:
    """An operator as a converter records it, in program order."""

    name: str
    kind: str
    target: str
    inputs: list[str]
    outputs: list[str]
    macs: int
    elements: int
    gemm: list[tuple[int, int, int, int]]
    live_outputs: list[str] = field(default_factory=list)
    on_host: bool = False  #: a host operator (``frontend.host``), split off after emission
    axis: int | None = None  #: the dimension it normalises along (``frontend.cost.axis``), kept as ``axis``
    window: dict[str, list[int]] | None = None  #: its window (``frontend.cost.window``), kept as ``window``


class GraphBuilder:
    """The records a converter fills while it walks a traced graph, and the graph they make."""

    def __init__(self, dtype: str, name: str) -> None:
        self.dtype = dtype
        self.name = name
        self.tensors: dict[str, TensorRecord] = {}
        self.weights: set[str] = set()
        self.inputs: list[str] = []
        self.ops: list[OpRecord] = []
        self.aliases: dict[str, str] = {}
        self.version: dict[str, str] = {}  # tensor mutated in place -> tensor holding its new value
        self.outputs: list[str] = []

    def storage(self, torch_dtype: torch.dtype, tensor: str) -> str:
        """The storage dtype of a tensor: the run's for floating point, its own for integers."""
        if torch_dtype.is_floating_point:
            return self.dtype
        if torch_dtype in INTEGER_DTYPES:
            return INTEGER_DTYPES[torch_dtype]
        raise TraceError(f"cannot trace {self.name!r}: tensor {tensor!r} has dtype {torch_dtype}, "
                         f"which has no storage size")

    def register(self, name: str, shape: Sequence[int], torch_dtype: torch.dtype) -> None:
        """Record tensor ``name``; two tensors of one name are a ``TraceError``."""
        if name in self.tensors:  # e.g. a root parameter named like an FX node
            raise TraceError(f"cannot trace {self.name!r}: two tensors would be named {name!r}")
        storage = self.storage(torch_dtype, name)
        dims = [int(d) for d in shape]
        self.tensors[name] = TensorRecord(dims, storage, cost.numel(dims) * dtype_bytes(storage))

    def resolve(self, tensor: str) -> str:
        """The tensor currently holding ``tensor``'s value (after in-place updates)."""
        while tensor in self.version:
            tensor = self.version[tensor]
        return tensor

    def eliminate_dead_code(self) -> list[OpRecord]:
        """The operators some result of which reaches an output, each with its ``live_outputs``."""
        needed = set(self.outputs)
        live: list[OpRecord] = []
        for op in reversed(self.ops):
            op.live_outputs = [t for t in op.outputs if t in needed]
            if op.live_outputs:
                live.append(op)
                needed.update(op.inputs)
        live.reverse()
        return live

    def emit(self) -> nx.DiGraph:
        """The ``DataflowGraph`` of the live operators (host operators marked ``device="host"``,
        for ``frontend.host.split``), its outputs and the aliases whose base survived."""
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
            if op.on_host:
                graph.nodes[op.name][host.DEVICE] = "host"
            if op.axis is not None:
                graph.nodes[op.name]["axis"] = op.axis
            if op.window is not None:
                graph.nodes[op.name]["window"] = op.window
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
            if base in tensors and alias not in tensors:
                aliases[alias] = base
        graph.graph["aliases"] = aliases
        return graph

"""The ``DataflowGraph`` format, a builder for it, and its JSON round trip.

A dataflow graph is an ordinary ``networkx.DiGraph``:

* **nodes** are operators, inserted in program order (``list(graph.nodes)`` *is* the program
  order). Attributes: ``op`` (normalised kind: ``"conv2d"``, ``"linear"``, ``"add"``, ...),
  ``target`` (the torch.fx target as a string), ``macs`` (multiply-accumulates, 0 for ops
  without a MAC array), ``elements`` (elements processed, the cost of non-MAC ops),
  ``in_tensors`` (names read, activations and weights, in argument order, no repeats),
  ``out_tensors`` (names written) and ``gemm`` (the GEMM shape of the MACs, below).
* ``gemm`` is a list of ``[t, k, n, count]`` lists of positive ints: ``count`` independent
  matrix products ``(t x k) @ (k x n)``, with ``t`` the rows of the streamed operand (batch x
  output positions), ``k`` the reduction and ``n`` the output columns (the lowering of each
  kind is ``frontend.cost.gemms``). A non-empty ``gemm`` sums to the node's MACs,
  ``sum(t * k * n * count) == macs``. ``[]`` means no GEMM shape is recorded: operators
  without MACs, and hand-built graphs that give only ``macs``. Graphs saved before the
  attribute existed have no ``gemm`` at all; they still load (read it as
  ``data.get("gemm", [])``).
* **edges** ``u -> v`` exist when ``v`` reads a tensor ``u`` writes; attribute ``tensors``
  lists those tensor names.
* ``graph.graph`` holds ``name`` (model name), ``dtype`` (storage dtype of the run),
  ``tensors`` (name -> record), ``inputs`` and ``outputs`` (graph input / final output tensor
  names in order) and ``aliases`` (name of a view that was folded away -> the tensor it
  aliases).
* a **tensor record** is a plain dict: ``shape`` (list of ints), ``dtype``, ``nbytes``,
  ``producer`` (operator name, ``None`` for inputs and weights), ``consumers`` (operator
  names in program order) and ``kind`` (``"input"``, ``"weight"``, ``"activation"`` or
  ``"output"``; an output may also be read by later operators).

Everything is JSON-serialisable, so ``save_graph`` / ``load_graph`` round-trip exactly.

>>> g = new_graph("tiny", dtype="int8")
>>> add_tensor(g, "x", (1, 4), kind="input")
>>> add_tensor(g, "w", (4, 4), kind="weight")
>>> add_operator(g, "fc", "linear", inputs=["x", "w"], outputs={"y": (1, 4)}, macs=16, gemm=[(1, 4, 4, 1)])
>>> g.graph["outputs"] = ["y"]; g.graph["tensors"]["y"]["kind"] = "output"
>>> check_graph(g)
>>> g.graph["tensors"]["y"]["producer"], g.graph["tensors"]["w"]["consumers"], g.nodes["fc"]["gemm"]
('fc', ['fc'], [[1, 4, 4, 1]])
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import networkx as nx

from frontend.cost import gemm_macs

TENSOR_KINDS = ("input", "weight", "activation", "output")

#: bytes per element of the storage dtypes a run can choose
DTYPE_BYTES = {
    "int8": 1, "uint8": 1, "bool": 1, "fp8": 1,
    "int16": 2, "fp16": 2, "bf16": 2,
    "int32": 4, "fp32": 4,
    "int64": 8, "fp64": 8,
}


class GraphFormatError(ValueError):
    """A graph that breaks the DataflowGraph format; the message names the node or tensor."""


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of ``dtype`` (e.g. ``"int8"`` -> 1, ``"bf16"`` -> 2)."""
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise GraphFormatError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPE_BYTES)}") from None


def new_graph(name: str, dtype: str = "fp32") -> nx.DiGraph:
    """An empty dataflow graph."""
    dtype_bytes(dtype)
    return nx.DiGraph(name=name, dtype=dtype, tensors={}, inputs=[], outputs=[], aliases={})


def add_tensor(
    graph: nx.DiGraph, name: str, shape: Sequence[int], kind: str = "activation",
    dtype: str | None = None, nbytes: int | None = None, producer: str | None = None,
) -> None:
    """Register a tensor; ``nbytes`` defaults to ``prod(shape) * dtype_bytes(dtype)``."""
    tensors = graph.graph["tensors"]
    if name in tensors:
        raise GraphFormatError(f"tensor {name!r} defined twice")
    if kind not in TENSOR_KINDS:
        raise GraphFormatError(f"tensor {name!r}: kind {kind!r} not in {TENSOR_KINDS}")
    dtype = dtype or graph.graph["dtype"]
    if nbytes is None:
        nbytes = math.prod(int(d) for d in shape) * dtype_bytes(dtype)
    tensors[name] = {
        "shape": [int(d) for d in shape], "dtype": dtype, "nbytes": int(nbytes),
        "producer": producer, "consumers": [], "kind": kind,
    }
    if kind == "input":
        graph.graph["inputs"].append(name)


def _gemm_error(name: str, gemm: Any, macs: Any) -> str | None:
    """Why ``gemm`` is not a valid ``gemm`` attribute of operator ``name`` with ``macs`` MACs (``None``: it is)."""
    def positive(d: Any) -> bool:
        return isinstance(d, int) and not isinstance(d, bool) and d > 0

    if isinstance(gemm, (str, bytes)) or not isinstance(gemm, (list, tuple)) or not all(
        isinstance(e, (list, tuple)) and len(e) == 4 and all(positive(d) for d in e) for e in gemm
    ):
        return f"operator {name!r}: gemm {gemm!r} is not a list of [t, k, n, count] lists of 4 positive ints"
    total = gemm_macs(gemm)
    if gemm and total != macs:
        return f"operator {name!r}: gemm {gemm!r} sums to {total} MACs, but the operator has {macs}"
    return None


def _int_list(entry: Any) -> Any:
    """``entry`` as a list of plain ints (numpy integers too); anything else comes back for the check to name."""
    if not isinstance(entry, (list, tuple)):
        return entry
    try:
        return [d if isinstance(d, bool) else operator.index(d) for d in entry]
    except TypeError:
        return list(entry)


def add_operator(
    graph: nx.DiGraph, name: str, op: str, inputs: Iterable[str],
    outputs: Mapping[str, Sequence[int]] | Iterable[str], target: str | None = None,
    macs: int = 0, elements: int | None = None, gemm: Iterable[Sequence[int]] | None = None,
) -> None:
    """Append an operator (program order = insertion order).

    ``inputs`` must already be registered tensors. ``outputs`` is either a mapping of new
    tensor names to shapes (registered here as activations) or names of tensors already
    registered without a producer. ``gemm`` is the operator's ``(t, k, n, count)`` GEMMs
    (``frontend.cost.gemms``), stored as lists; ``None`` stores ``[]`` (no shape recorded).
    Raises ``GraphFormatError`` if a non-empty ``gemm`` is malformed or does not sum to ``macs``.
    """
    if name in graph:
        raise GraphFormatError(f"operator {name!r} defined twice")
    gemm_lists = [_int_list(entry) for entry in gemm] if gemm is not None else []
    error = _gemm_error(name, gemm_lists, int(macs))
    if error is not None:
        raise GraphFormatError(error)
    tensors = graph.graph["tensors"]
    in_names = list(dict.fromkeys(inputs))
    for t in in_names:
        if t not in tensors:
            raise GraphFormatError(f"operator {name!r} reads unknown tensor {t!r}")
    if isinstance(outputs, Mapping):
        for t, shape in outputs.items():
            add_tensor(graph, t, shape, producer=name)
        out_names = list(outputs)
    else:
        out_names = list(outputs)
        for t in out_names:
            if t not in tensors:
                raise GraphFormatError(f"operator {name!r} writes unknown tensor {t!r}")
            tensors[t]["producer"] = name
    if elements is None:
        elements = sum(math.prod(tensors[t]["shape"]) for t in out_names)
    graph.add_node(
        name, op=op, target=target or op, macs=int(macs), elements=int(elements),
        in_tensors=in_names, out_tensors=out_names, gemm=gemm_lists,
    )
    for t in in_names:
        tensors[t]["consumers"].append(name)
        producer = tensors[t]["producer"]
        if producer is not None:
            if graph.has_edge(producer, name):
                graph.edges[producer, name]["tensors"].append(t)
            else:
                graph.add_edge(producer, name, tensors=[t])


def check_graph(graph: nx.DiGraph) -> None:
    """Raise ``GraphFormatError`` naming the first inconsistency between nodes, edges and tensors."""
    for key in ("name", "dtype", "tensors", "inputs", "outputs", "aliases"):
        if key not in graph.graph:
            raise GraphFormatError(f"graph attribute {key!r} is missing")
    tensors: dict[str, dict[str, Any]] = graph.graph["tensors"]
    position = {n: i for i, n in enumerate(graph.nodes)}
    for name, rec in tensors.items():
        if rec["kind"] not in TENSOR_KINDS:
            raise GraphFormatError(f"tensor {name!r}: kind {rec['kind']!r} not in {TENSOR_KINDS}")
        if not isinstance(rec["nbytes"], int) or rec["nbytes"] < 0:
            raise GraphFormatError(f"tensor {name!r}: nbytes {rec['nbytes']!r} is not a non-negative integer")
        producer = rec["producer"]
        if producer is not None:
            if producer not in graph or name not in graph.nodes[producer]["out_tensors"]:
                raise GraphFormatError(f"tensor {name!r}: producer {producer!r} does not write it")
        elif rec["kind"] in ("activation",):
            raise GraphFormatError(f"activation {name!r} has no producer")
        for c in rec["consumers"]:
            if c not in graph or name not in graph.nodes[c]["in_tensors"]:
                raise GraphFormatError(f"tensor {name!r}: consumer {c!r} does not read it")
            if producer is not None and position[c] <= position[producer]:
                raise GraphFormatError(f"tensor {name!r} is read by {c!r} before {producer!r} writes it")
    for n, data in graph.nodes(data=True):
        for key in ("op", "target", "macs", "elements", "in_tensors", "out_tensors"):
            if key not in data:
                raise GraphFormatError(f"operator {n!r}: attribute {key!r} is missing")
        for t in list(data["in_tensors"]) + list(data["out_tensors"]):
            if t not in tensors:
                raise GraphFormatError(f"operator {n!r} refers to unknown tensor {t!r}")
        if "gemm" in data:  # absent from graphs saved before the attribute existed
            error = _gemm_error(n, data["gemm"], data["macs"])
            if error is not None:
                raise GraphFormatError(error)
    for t in list(graph.graph["inputs"]) + list(graph.graph["outputs"]):
        if t not in tensors:
            raise GraphFormatError(f"graph input/output {t!r} is not a tensor")


def graph_to_json(graph: nx.DiGraph) -> dict[str, Any]:
    """The graph as a JSON-ready dict (networkx node-link format, edges under ``"edges"``)."""
    return nx.node_link_data(graph, edges="edges")


def graph_from_json(data: Mapping[str, Any]) -> nx.DiGraph:
    graph = nx.node_link_graph(dict(data), directed=True, multigraph=False, edges="edges")
    check_graph(graph)
    return graph


def save_graph(graph: nx.DiGraph, path: str | Path) -> None:
    """Write ``graph`` as JSON; ``load_graph`` gives back an identical graph."""
    Path(path).write_text(json.dumps(graph_to_json(graph), indent=1))


def load_graph(path: str | Path) -> nx.DiGraph:
    """Read a graph written by ``save_graph`` (and check it)."""
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as exc:
        raise GraphFormatError(f"{path}: not valid JSON: {exc}") from None
    return graph_from_json(data)

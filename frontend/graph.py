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
from frontend.dtypes import (
    DTYPE_BYTES,  # bytes per element of the storage dtypes a run can choose
    SUB_BYTE_BITS,
)
from frontend.limits import MAX_OPERATORS, GraphTooLargeError, check_operator_count  # noqa: F401 (re-exported)

TENSOR_KINDS = ("input", "weight", "activation", "output")


class GraphFormatError(ValueError):
    """A graph that breaks the DataflowGraph format.

    The message is one line naming the operator, tensor or graph attribute (and, from
    ``load_graph``, the file first: ``"g.json: operator 'conv1': 'macs' is 'lots', ..."``).
    """


#: largest integer a cost, size or dimension may be: downstream kernels hold them in int64
INT64_MAX = 2**63 - 1


def _show(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (a bad value can be a whole JSON subtree)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_count(value: Any) -> bool:
    """A non-negative ``int`` that fits int64 (``bool`` is not a count)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT64_MAX


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
        return _is_count(d) and d > 0

    if isinstance(gemm, (str, bytes)) or not isinstance(gemm, (list, tuple)) or not all(
        isinstance(e, (list, tuple)) and len(e) == 4 and all(positive(d) for d in e) for e in gemm
    ):
        return f"operator {name!r}: gemm {_show(gemm)} is not a list of [t, k, n, count] lists of 4 positive ints"
    total = gemm_macs(gemm)
    if gemm and total != macs:
        return f"operator {name!r}: gemm {_show(gemm)} sums to {total} MACs, but the operator has {macs}"
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


def _names_error(what: str, value: Any) -> str | None:
    """Why ``value`` is not a list of distinct strings (``None``: it is)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return f"{what} {_show(value)} is not a list of strings"
    if len(set(value)) != len(value):
        twice = next(v for i, v in enumerate(value) if v in value[:i])
        return f"{what} lists {twice!r} twice"
    return None


def _check_attributes(attrs: Mapping[str, Any]) -> None:
    """The types of ``graph.graph``: name, dtype, tensors, inputs, outputs, aliases."""
    for key in ("name", "dtype", "tensors", "inputs", "outputs", "aliases"):
        if key not in attrs:
            raise GraphFormatError(f"graph attribute {key!r} is missing")
    if not isinstance(attrs["name"], str):
        raise GraphFormatError(f"graph attribute 'name' is {_show(attrs['name'])}, not a string")
    if not isinstance(attrs["dtype"], str) or attrs["dtype"] not in DTYPE_BYTES:
        raise GraphFormatError(f"graph attribute 'dtype' is {_show(attrs['dtype'])}, not a known dtype "
                               f"({', '.join(DTYPE_BYTES)})")
    if not isinstance(attrs["tensors"], dict):
        raise GraphFormatError(f"graph attribute 'tensors' is {_show(attrs['tensors'])}, "
                               f"not a mapping of names to records")
    for key in ("inputs", "outputs"):
        error = _names_error(f"graph attribute {key!r}", attrs[key])
        if error is not None:
            raise GraphFormatError(error)
    aliases = attrs["aliases"]
    if not isinstance(aliases, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in aliases.items()):
        raise GraphFormatError(f"graph attribute 'aliases' is {_show(aliases)}, not a mapping of names to tensor names")


def _check_tensor(name: Any, rec: Any) -> None:
    """The fields of one tensor record and their types (relations to operators come later)."""
    if not isinstance(name, str):
        raise GraphFormatError(f"tensor name {_show(name)} is not a string")
    if not isinstance(rec, dict):
        raise GraphFormatError(f"tensor {name!r}: record {_show(rec)} is not a mapping")
    for key in ("shape", "dtype", "nbytes", "producer", "consumers", "kind"):
        if key not in rec:
            raise GraphFormatError(f"tensor {name!r}: field {key!r} is missing")
    if rec["kind"] not in TENSOR_KINDS:
        raise GraphFormatError(f"tensor {name!r}: kind {_show(rec['kind'])} not in {TENSOR_KINDS}")
    shape = rec["shape"]
    if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
        raise GraphFormatError(f"tensor {name!r}: shape {_show(shape)} is not a list of non-negative integers")
    if not isinstance(rec["dtype"], str) or (rec["dtype"] not in DTYPE_BYTES and rec["dtype"] not in SUB_BYTE_BITS):
        raise GraphFormatError(f"tensor {name!r}: dtype {_show(rec['dtype'])} is not a known dtype "
                               f"({', '.join([*DTYPE_BYTES, *SUB_BYTE_BITS])})")
    if not _is_count(rec["nbytes"]):
        raise GraphFormatError(f"tensor {name!r}: nbytes {_show(rec['nbytes'])} is not a non-negative integer "
                               f"(at most 2**63 - 1)")
    if rec["producer"] is not None and not isinstance(rec["producer"], str):
        raise GraphFormatError(f"tensor {name!r}: producer {_show(rec['producer'])} is neither an operator "
                               f"name nor null")
    error = _names_error(f"tensor {name!r}: consumers", rec["consumers"])
    if error is not None:
        raise GraphFormatError(error)


def _check_operator(name: Any, data: Mapping[str, Any]) -> None:
    """The attributes of one operator and their types (relations to tensors come later)."""
    if not isinstance(name, str):
        raise GraphFormatError(f"operator name {_show(name)} is not a string")
    for key in ("op", "target", "macs", "elements", "in_tensors", "out_tensors"):
        if key not in data:
            raise GraphFormatError(f"operator {name!r}: attribute {key!r} is missing")
    for key in ("op", "target"):
        if not isinstance(data[key], str):
            raise GraphFormatError(f"operator {name!r}: {key} {_show(data[key])} is not a string")
    for key in ("macs", "elements"):
        if not _is_count(data[key]):
            raise GraphFormatError(f"operator {name!r}: {key} {_show(data[key])} is not a non-negative integer "
                                   f"(at most 2**63 - 1)")
    for key in ("in_tensors", "out_tensors"):
        error = _names_error(f"operator {name!r}: {key}", data[key])
        if error is not None:
            raise GraphFormatError(error)
    if "gemm" in data:  # absent from graphs saved before the attribute existed
        error = _gemm_error(name, data["gemm"], data["macs"])
        if error is not None:
            raise GraphFormatError(error)


def check_graph(graph: nx.DiGraph) -> None:
    """Raise ``GraphFormatError`` naming the first way ``graph`` breaks the DataflowGraph format.

    Checked, in this order, so that no check meets a value of the wrong type:

    1. ``graph`` is a ``networkx.DiGraph`` (not a multigraph); ``graph.graph`` has ``name``
       (str), ``dtype`` (a key of ``DTYPE_BYTES``), ``tensors`` (dict), ``inputs`` and
       ``outputs`` (lists of distinct names) and ``aliases`` (dict of str to str);
    2. every tensor record has ``shape`` (list of ints >= 0), ``dtype`` (known), ``nbytes``
       (int >= 0), ``producer`` (str or None), ``consumers`` (distinct strs) and ``kind``
       (one of ``TENSOR_KINDS``); every operator has ``op`` and ``target`` (str), ``macs`` and
       ``elements`` (ints >= 0), ``in_tensors`` and ``out_tensors`` (distinct strs) and, when
       present, a ``gemm`` that sums to ``macs``. Integers are at most ``INT64_MAX`` (the
       scheduler and allocator hold them in int64 arrays); ``bool`` is not an integer;
    3. producers and consumers agree with the operators both ways: an activation or output
       has a producer that lists it in ``out_tensors`` (and an operator is the producer of
       every tensor it writes); inputs and weights have none; every consumer lists the tensor in
       ``in_tensors`` and every reader is a consumer; a tensor is read only after it is written
       in program order (node order);
    4. ``inputs`` are exactly the tensors of kind ``input``; ``outputs`` and alias targets are
       tensors, and an alias is not itself a tensor name;
    5. the edges form no cycle, and are exactly the producer -> consumer pairs, each carrying
       (``tensors``) the names that flow along it.

    ``nbytes`` is not required to equal ``prod(shape) * dtype_bytes(dtype)``: ``add_tensor``
    lets a builder set it (packed or padded layouts, weight slices), so it is the storage size
    as given. Extra attributes are allowed everywhere and kept.
    """
    if not isinstance(graph, nx.DiGraph) or graph.is_multigraph():
        raise GraphFormatError(f"a DataflowGraph is a networkx.DiGraph, not a {type(graph).__name__}")
    _check_attributes(graph.graph)
    tensors: dict[str, Any] = graph.graph["tensors"]
    for name, rec in tensors.items():
        _check_tensor(name, rec)
    for n, data in graph.nodes(data=True):
        _check_operator(n, data)
    position = {n: i for i, n in enumerate(graph.nodes)}

    for name, rec in tensors.items():
        producer = rec["producer"]
        if producer is not None:
            if rec["kind"] in ("input", "weight"):
                raise GraphFormatError(f"{rec['kind']} {name!r} has a producer ({producer!r}); "
                                       f"only activations and outputs are written by operators")
            if producer not in graph or name not in graph.nodes[producer]["out_tensors"]:
                raise GraphFormatError(f"tensor {name!r}: producer {producer!r} does not write it")
        elif rec["kind"] in ("activation", "output"):
            raise GraphFormatError(f"{rec['kind']} {name!r} has no producer")
        for c in rec["consumers"]:
            if c not in graph or name not in graph.nodes[c]["in_tensors"]:
                raise GraphFormatError(f"tensor {name!r}: consumer {c!r} does not read it")
            if producer is not None and position[c] <= position[producer]:
                raise GraphFormatError(f"tensor {name!r} is read by {c!r} before {producer!r} writes it")
    for n, data in graph.nodes(data=True):
        for t in data["in_tensors"]:
            if t not in tensors:
                raise GraphFormatError(f"operator {n!r} reads unknown tensor {t!r}")
            if n not in tensors[t]["consumers"]:
                raise GraphFormatError(f"operator {n!r} reads {t!r}, but is not among its consumers")
        for t in data["out_tensors"]:
            if t not in tensors:
                raise GraphFormatError(f"operator {n!r} writes unknown tensor {t!r}")
            if tensors[t]["producer"] != n:
                raise GraphFormatError(f"operator {n!r} writes {t!r}, whose producer is {tensors[t]['producer']!r}")

    for t in graph.graph["inputs"]:
        if t not in tensors or tensors[t]["kind"] != "input":
            raise GraphFormatError(f"graph input {t!r} is not a tensor of kind 'input'")
    unlisted = [t for t, rec in tensors.items() if rec["kind"] == "input" and t not in graph.graph["inputs"]]
    if unlisted:
        raise GraphFormatError(f"input {unlisted[0]!r} is missing from graph attribute 'inputs'")
    for t in graph.graph["outputs"]:
        if t not in tensors:
            raise GraphFormatError(f"graph output {t!r} is not a tensor")
    for alias, base in graph.graph["aliases"].items():
        if base not in tensors:
            raise GraphFormatError(f"alias {alias!r} -> {base!r}: {base!r} is not a tensor")
        if alias in tensors:
            raise GraphFormatError(f"alias {alias!r} is also a tensor name")

    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        cycle = []
    if cycle:
        path = " -> ".join(repr(u) for u, _ in cycle) + f" -> {cycle[0][0]!r}"
        raise GraphFormatError(f"the edges form a cycle: {path}")
    for u, v, data in graph.edges(data=True):
        error = _names_error(f"edge {u!r} -> {v!r}: tensors", data.get("tensors"))
        if error is not None:
            raise GraphFormatError(error)
        if not data["tensors"]:
            raise GraphFormatError(f"edge {u!r} -> {v!r} carries no tensor")
        for t in data["tensors"]:
            if t not in tensors or tensors[t]["producer"] != u or v not in tensors[t]["consumers"]:
                raise GraphFormatError(f"edge {u!r} -> {v!r} carries {t!r}, which {u!r} does not write to {v!r}")
    for name, rec in tensors.items():
        producer = rec["producer"]
        if producer is None:
            continue
        for c in rec["consumers"]:
            if not graph.has_edge(producer, c) or name not in graph.edges[producer, c]["tensors"]:
                raise GraphFormatError(f"tensor {name!r} flows from {producer!r} to {c!r}, but no edge carries it")


def graph_to_json(graph: nx.DiGraph) -> dict[str, Any]:
    """The graph as a JSON-ready dict (networkx node-link format, edges under ``"edges"``)."""
    return nx.node_link_data(graph, edges="edges")


def graph_from_json(data: Any) -> nx.DiGraph:
    """The graph of ``graph_to_json``'s dict (node-link format), checked; ``GraphFormatError`` otherwise.

    The container is checked before networkx reads it: a JSON object with ``graph`` (object),
    ``nodes`` (list of objects, each with a unique string ``id``) and ``edges`` (list of
    objects whose ``source`` and ``target`` are node ids, no pair twice); ``directed`` and
    ``multigraph``, when present, must be ``true`` and ``false``. Then ``check_graph``.
    """
    if not isinstance(data, dict):
        raise GraphFormatError(f"expected a JSON object with keys 'graph', 'nodes' and 'edges' (as save_graph "
                               f"writes), got {type(data).__name__} {_show(data, 30)}")
    for key in ("graph", "nodes", "edges"):
        if key not in data:
            raise GraphFormatError(f"key {key!r} is missing (a graph file has 'graph', 'nodes' and 'edges', "
                                   f"as save_graph writes)")
    directed, multigraph = data.get("directed", True), data.get("multigraph", False)
    if directed is not True or multigraph is not False:
        raise GraphFormatError(f"a DataflowGraph is directed and not a multigraph, but the file says "
                               f"directed={_show(directed)}, multigraph={_show(multigraph)}")
    if not isinstance(data["graph"], dict):
        raise GraphFormatError(f"'graph' is {_show(data['graph'])}, not an object of graph attributes")
    for key in ("nodes", "edges"):
        if not isinstance(data[key], list):
            raise GraphFormatError(f"{key!r} is {_show(data[key])}, not a list")
    graph = nx.DiGraph()
    graph.graph.update(data["graph"])
    for i, node in enumerate(data["nodes"]):
        if not isinstance(node, dict) or not isinstance(node.get("id"), str):
            raise GraphFormatError(f"node #{i} {_show(node)} is not an object with a string 'id'")
        name = node["id"]
        if name in graph:
            raise GraphFormatError(f"operator {name!r} is listed twice in 'nodes'")
        graph.add_node(name, **{k: v for k, v in node.items() if k != "id"})
    for i, edge in enumerate(data["edges"]):
        if not (isinstance(edge, dict) and isinstance(edge.get("source"), str) and isinstance(edge.get("target"), str)):
            raise GraphFormatError(f"edge #{i} {_show(edge)} is not an object with string 'source' and 'target'")
        u, v = edge["source"], edge["target"]
        for end in (u, v):
            if end not in graph:
                raise GraphFormatError(f"edge #{i} {u!r} -> {v!r}: {end!r} is not an operator")
        if graph.has_edge(u, v):
            raise GraphFormatError(f"edge {u!r} -> {v!r} is listed twice in 'edges'")
        graph.add_edge(u, v, **{k: val for k, val in edge.items() if k not in ("source", "target")})
    check_graph(graph)
    return graph


def save_graph(graph: nx.DiGraph, path: str | Path) -> None:
    """Write ``graph`` as JSON; ``load_graph`` gives back an identical graph."""
    Path(path).write_text(json.dumps(graph_to_json(graph), indent=1))


class _DuplicateKey(Exception):
    """A JSON object with the same key twice (json keeps the last one silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s ``object_pairs_hook``: the object as a dict, or ``_DuplicateKey`` naming it."""
    result: dict[str, Any] = {}
    twice = None
    for key, value in pairs:
        if key in result and twice is None:
            twice = key
        result[key] = value
    if twice is None:
        return result
    owner = ""
    if isinstance(result.get("id"), str):
        owner = f" (operator {result['id']!r})"
    elif isinstance(result.get("source"), str) and isinstance(result.get("target"), str):
        owner = f" (edge {result['source']!r} -> {result['target']!r})"
    raise _DuplicateKey(f"key {twice!r} appears twice in one JSON object{owner}")


def _count_in_file(path: str | Path, token: bytes, chunk: int = 1 << 24) -> int:
    """Occurrences of ``token`` in the file, read ``chunk`` bytes at a time."""
    count, tail = 0, b""
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            data = tail + block
            count += data.count(token)
            # keep the last len(token) - 1 bytes: a token split across two blocks is counted once
            keep = len(token) - 1
            tail = data[-keep:] if keep else b""
    return count


def parse_graph_json(raw: bytes, source: str) -> Any:
    """The JSON value in ``raw``, the bytes of a graph file, parsed as ``load_graph`` parses them.

    For a caller that already holds the bytes (the trace cache checks them against their digest
    first) and builds the graph itself with ``graph_from_json``, so a file is read and parsed
    once. Raises ``GraphFormatError`` with one line that starts with ``source`` (the file name):
    ``raw`` is not UTF-8 text (a leading byte-order mark is accepted), is not valid JSON (with
    line and column), or has a key twice in one object.
    """
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise GraphFormatError(f"{source}: not a JSON graph: byte {exc.start} ({raw[exc.start]:#04x}) is not "
                               f"UTF-8 text") from None
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise GraphFormatError(f"{source}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    except _DuplicateKey as exc:
        raise GraphFormatError(f"{source}: {exc}") from None
    except (ValueError, RecursionError) as exc:  # a number too long to convert, nesting too deep
        reason = str(exc) if len(str(exc)) <= 100 else str(exc)[:97] + "..."
        raise GraphFormatError(f"{source}: not valid JSON: {reason}") from None


def load_graph(path: str | Path, max_operators: int | None = MAX_OPERATORS) -> nx.DiGraph:
    """Read a graph written by ``save_graph`` and check all of it (``check_graph``).

    Before the file is parsed (parsing takes several times its size in memory), its operators
    are counted from the text (each operator's ``"op"`` key), and a graph a run could not
    take is refused (``check_operator_count``, ``GraphTooLargeError``): more than
    ``max_operators`` (None: no limit but the machine's memory).

    Raises ``GraphFormatError`` (a ``ValueError``) with one line that starts with the file
    name: the file cannot be read or is not a regular file, is not UTF-8 text (a leading byte-order mark is accepted),
    is not valid JSON (with line and column), has a key twice in one object, or breaks the
    format (the operator, tensor or attribute is named, see ``graph_from_json`` and
    ``check_graph``).
    """
    source = Path(path)
    if source.exists() and not source.is_file() and not source.is_dir():  # a FIFO would block the read for ever
        raise GraphFormatError(f"{path}: not a regular file (a FIFO, a device or a socket cannot hold a graph)")
    try:
        # counted in chunks before the whole file is read: a refused graph costs no memory
        check_operator_count(_count_in_file(path, b'"op"'), str(path), max_operators, approximate=True)
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise GraphFormatError(f"{path}: cannot read the graph file: {exc.strerror or exc}") from None
    data = parse_graph_json(raw, str(path))
    try:
        return graph_from_json(data)
    except GraphFormatError as exc:
        raise GraphFormatError(f"{path}: {exc}") from None

"""Fuzz load_graph with malformed graph files and check its contract.

Each example starts from the JSON that save_graph writes for a small valid graph and applies one
to three random mutations: drop a key, replace a value by a value of another type, make a number
negative or huge, add an edge (often closing a cycle), reorder the operators, or damage the bytes
of the file (insert, overwrite, truncate). Then ``load_graph`` must either

* return a graph that passes ``check_graph`` *and* an independent soundness check written here
  (acyclic, program order topological, every integer a non-negative int, known dtypes, producers
  and consumers agree with the operators) and that round-trips through save_graph unchanged, or
* raise ``GraphFormatError`` (a ``ValueError``) whose message is one line starting with the
  file's name.

Any other exception (KeyError, TypeError, ...) fails the test.
"""

import json
import math
import tempfile
from pathlib import Path

import networkx as nx
from hypothesis import event, given
from hypothesis import strategies as st

from frontend import GraphFormatError, add_operator, add_tensor, check_graph, load_graph, new_graph, save_graph
from frontend.graph import DTYPE_BYTES, graph_to_json


def _seed_graph() -> nx.DiGraph:
    """A small valid graph with every feature: weights, a multi-reader tensor, gemm, an alias, two outputs."""
    g = new_graph("seed", dtype="int8")
    add_tensor(g, "x", (1, 4), kind="input")
    add_tensor(g, "w", (4, 4), kind="weight")
    add_operator(g, "fc", "linear", ["x", "w"], {"h": (1, 4)}, macs=16, gemm=[(1, 4, 4, 1)])
    add_operator(g, "relu", "relu", ["h"], {"r": (1, 4)})
    add_operator(g, "add", "add", ["r", "h"], {"y": (1, 4)})
    add_operator(g, "neg", "neg", ["y"], {"z": (1, 4)})
    g.graph["outputs"] = ["y", "z"]
    for t in ("y", "z"):
        g.graph["tensors"][t]["kind"] = "output"
    g.graph["aliases"] = {"h_view": "h"}
    check_graph(g)
    return g


SEED = json.loads(json.dumps(graph_to_json(_seed_graph())))

#: JSON values of every type, including the wrong ones
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8) | st.sampled_from(["x", "h", "fc", "add", "int8", "fp99", "weight", "output"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


def _paths(doc, prefix=()):
    """Every path (tuple of keys / indices) to a value inside ``doc``."""
    found = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            found.append((*prefix, k))
            found.extend(_paths(v, (*prefix, k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            found.append((*prefix, i))
            found.extend(_paths(v, (*prefix, i)))
    return found


def _parent(doc, path):
    for key in path[:-1]:
        doc = doc[key]
    return doc


def _mutate(data, doc):
    """One random structural mutation of ``doc`` (in place); returns the document (maybe replaced)."""
    paths = _paths(doc)
    kind = data.draw(st.sampled_from(["drop", "replace", "retype", "retype", "negative", "huge", "edge", "reorder",
                                      "top"]))
    if kind == "top":
        return data.draw(json_values)
    if not paths:
        return doc
    if kind == "edge" and isinstance(doc, dict) and isinstance(doc.get("edges"), list):
        names = [n.get("id") for n in doc.get("nodes", []) if isinstance(n, dict)] or ["ghost"]
        edge = {"source": data.draw(st.sampled_from(names)), "target": data.draw(st.sampled_from(names)),
                "tensors": data.draw(st.lists(st.sampled_from(["x", "h", "r", "y", "z", "w"]), max_size=2))}
        doc["edges"].append(edge)
        return doc
    if kind == "reorder" and isinstance(doc, dict) and isinstance(doc.get("nodes"), list) and doc["nodes"]:
        nodes = doc["nodes"]
        nodes.insert(data.draw(st.integers(0, len(nodes) - 1)), nodes.pop(data.draw(st.integers(0, len(nodes) - 1))))
        return doc
    path = data.draw(st.sampled_from(paths))
    parent, key = _parent(doc, path), path[-1]
    if kind == "drop":
        del parent[key]
    elif kind == "replace":
        parent[key] = data.draw(json_values)
    elif kind == "retype":  # a value of the same type: well-formed, but maybe inconsistent
        parent[key] = _same_type(data, parent[key])
    elif kind == "negative":
        value = parent[key]
        parent[key] = -value - 1 if isinstance(value, int) and not isinstance(value, bool) else -1
    else:  # huge
        parent[key] = data.draw(st.sampled_from([2**63, 2**64 + 1, 10**30, 1e300]))
    return doc


def _same_type(data, value):
    """Another value of ``value``'s JSON type: a name for a name, a small int for an int, a sub-list for a list."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return data.draw(st.integers(0, 64))
    if isinstance(value, str):
        return data.draw(st.sampled_from(["x", "w", "h", "r", "y", "z", "fc", "relu", "add", "neg", "int8", "fp32",
                                          "input", "weight", "activation", "output"]))
    if isinstance(value, list):
        return data.draw(st.lists(st.sampled_from(value), max_size=len(value) + 1)) if value else value
    return value


def _damage(data, text: bytes) -> bytes:
    """Garbage bytes: insert, overwrite or truncate at a random position."""
    at = data.draw(st.integers(0, len(text)))
    kind = data.draw(st.sampled_from(["insert", "overwrite", "truncate"]))
    if kind == "truncate":
        return text[:at]
    junk = data.draw(st.binary(min_size=1, max_size=8))
    return text[:at] + junk + (text[at + len(junk):] if kind == "overwrite" else text[at:])


def _assert_sound(graph: nx.DiGraph) -> None:
    """Independent of check_graph: what the scheduler and simulator rely on."""
    assert isinstance(graph, nx.DiGraph) and nx.is_directed_acyclic_graph(graph)
    position = {n: i for i, n in enumerate(graph.nodes)}
    assert all(position[u] < position[v] for u, v in graph.edges)  # program order is topological
    tensors = graph.graph["tensors"]
    assert graph.graph["dtype"] in DTYPE_BYTES

    def count(v):
        return type(v) is int and 0 <= v < 2**63

    for name, rec in tensors.items():
        assert rec["dtype"] in DTYPE_BYTES and rec["kind"] in ("input", "weight", "activation", "output")
        assert count(rec["nbytes"]) and type(rec["shape"]) is list and all(count(d) for d in rec["shape"])
        if rec["producer"] is not None:
            assert name in graph.nodes[rec["producer"]]["out_tensors"]
        for c in rec["consumers"]:
            assert name in graph.nodes[c]["in_tensors"]
    for n, d in graph.nodes(data=True):
        assert count(d["macs"]) and count(d["elements"])
        for t in d["in_tensors"]:
            assert n in tensors[t]["consumers"]
            if tensors[t]["producer"] is not None:
                assert t in graph.edges[tensors[t]["producer"], n]["tensors"]
        for t in d["out_tensors"]:
            assert tensors[t]["producer"] == n
        if d.get("gemm"):
            assert sum(math.prod(e) for e in d["gemm"]) == d["macs"]
    for t in [*graph.graph["inputs"], *graph.graph["outputs"], *graph.graph["aliases"].values()]:
        assert t in tensors


def _check_contract(path: Path) -> bool:
    """load_graph's contract on ``path``; True if the file loaded."""
    try:
        graph = load_graph(path)
    except GraphFormatError as error:
        message = str(error)
        assert isinstance(error, ValueError)
        assert "\n" not in message and "\r" not in message, message
        assert message.startswith(f"{path}: ") or message.startswith(f"{path}:"), message
        return False
    check_graph(graph)
    _assert_sound(graph)
    again = path.with_name("again.json")
    save_graph(graph, again)
    reloaded = load_graph(again)
    assert list(reloaded.nodes(data=True)) == list(graph.nodes(data=True))
    assert list(reloaded.edges(data=True)) == list(graph.edges(data=True))
    assert reloaded.graph == graph.graph
    return True


def test_the_seed_graph_loads():
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "seed.json"
        save_graph(_seed_graph(), path)
        assert _check_contract(path)


@given(st.data())
def test_malformed_graph_files_load_soundly_or_fail_in_one_line_naming_the_file(data):
    doc = json.loads(json.dumps(SEED))
    for _ in range(data.draw(st.integers(1, 3))):
        doc = _mutate(data, doc)
    text = json.dumps(doc, indent=1).encode()
    if data.draw(st.booleans()):
        text = _damage(data, text)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzzed graph.json"
        path.write_bytes(text)
        event("loaded" if _check_contract(path) else "refused")

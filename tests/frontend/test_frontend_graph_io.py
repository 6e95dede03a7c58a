"""save_graph / load_graph give back exactly the graph that was saved."""

import json

import pytest

from frontend import GraphFormatError, load_graph, save_graph, synthetic, trace_model


def assert_identical(a, b):
    assert list(a.nodes(data=True)) == list(b.nodes(data=True))  # program order included
    assert list(a.edges(data=True)) == list(b.edges(data=True))
    assert a.graph == b.graph


def test_traced_resnet18_round_trips_through_json(tmp_path, well_formed):
    graph = trace_model("resnet18", dtype="bf16")
    path = tmp_path / "resnet18.json"
    save_graph(graph, path)
    again = load_graph(path)
    well_formed(again)
    assert_identical(graph, again)
    assert again.graph["aliases"] == {"flatten": "avgpool"}


def test_traced_transformer_round_trips_through_json(tmp_path):
    graph = trace_model("transformer", dtype="int8")
    save_graph(graph, tmp_path / "t.json")
    assert_identical(graph, load_graph(tmp_path / "t.json"))


@pytest.mark.parametrize(
    "graph",
    [synthetic.chain(5, size=100), synthetic.diamond(3), synthetic.residual_block(2),
     synthetic.random_dag(40, seed=3), synthetic.nas_cell(4, seed=1)],
    ids=["chain", "diamond", "residual", "random_dag", "nas_cell"],
)
def test_synthetic_graphs_round_trip_through_json(graph, tmp_path):
    save_graph(graph, tmp_path / "g.json")
    assert_identical(graph, load_graph(tmp_path / "g.json"))


def test_loading_a_broken_graph_names_the_problem(tmp_path):
    path = tmp_path / "g.json"
    save_graph(synthetic.chain(2), path)
    data = json.loads(path.read_text())
    del data["graph"]["tensors"]["t0"]
    path.write_text(json.dumps(data))
    with pytest.raises(GraphFormatError, match="t0"):
        load_graph(path)
    path.write_text("{not json")
    with pytest.raises(GraphFormatError, match="not valid JSON"):
        load_graph(path)


# --------------------------------------------------------------------------- bad graph files
#
# Every class of bad input gives GraphFormatError (a ValueError: the CLI prints it as one
# "error: ..." line and exits 2) whose message is one line starting with the file name and
# naming the operator, tensor or attribute at fault.


def _diamond_json():
    """save_graph's JSON of a small diamond: x -> stem -> branch0, branch1 -> join -> head -> y."""
    from frontend.graph import graph_to_json

    return json.loads(json.dumps(graph_to_json(synthetic.diamond(2, size=8))))


def _node(data, name):
    return next(n for n in data["nodes"] if n["id"] == name)


def _edge(data, u, v):
    return next(e for e in data["edges"] if (e["source"], e["target"]) == (u, v))


class Replace:
    """A mutation's result that replaces the whole document (in-place mutations return anything else)."""

    def __init__(self, document):
        self.document = document


def _set(path, value):
    """A mutation that sets data[path[0]][path[1]]... to ``value``."""
    def mutate(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return mutate


def _tensor(name, field, value):
    return _set(("graph", "tensors", name, field), value)


def _op(name, attribute, value):
    return lambda data: _node(data, name).__setitem__(attribute, value)


def _drop_op(name, attribute):
    return lambda data: _node(data, name).pop(attribute)


BAD_GRAPHS = {
    # JSON container
    "top_level_list": (lambda data: Replace([]), ["expected a JSON object", "got list"]),
    "empty_object": (lambda data: Replace({}), ["'graph' is missing"]),
    "no_edges_key": (lambda data: data.pop("edges"), ["'edges' is missing"]),
    "undirected": (_set(("directed",), False), ["directed"]),
    "nodes_not_a_list": (_set(("nodes",), {"stem": {}}), ["'nodes'", "not a list"]),
    "node_without_id": (lambda data: data["nodes"][2].pop("id"), ["node #2", "'id'"]),
    "node_listed_twice": (lambda data: data["nodes"].append(dict(data["nodes"][0])), ["'stem'", "twice"]),
    "edge_to_unknown_node": (_set(("edges", 0, "target"), "ghost"), ["'ghost'", "not an operator"]),
    "edge_listed_twice": (lambda data: data["edges"].append(dict(data["edges"][0])), ["'stem' -> 'branch0'", "twice"]),
    # graph attributes
    "graph_attribute_missing": (lambda data: data["graph"].pop("outputs"), ["'outputs'", "missing"]),
    "unknown_graph_dtype": (_set(("graph", "dtype"), "fp99"), ["'dtype'", "'fp99'"]),
    "tensors_not_a_mapping": (_set(("graph", "tensors"), []), ["'tensors'", "not a mapping"]),
    "inputs_not_tensors_of_kind_input": (_set(("graph", "inputs"), ["s"]), ["'s'", "kind 'input'"]),
    "output_not_a_tensor": (_set(("graph", "outputs"), ["ghost"]), ["'ghost'", "not a tensor"]),
    "alias_to_unknown_tensor": (_set(("graph", "aliases"), {"view": "ghost"}), ["'view'", "'ghost'"]),
    # tensor records
    "tensor_without_kind": (lambda data: data["graph"]["tensors"]["x"].pop("kind"), ["tensor 'x'", "'kind'"]),
    "tensor_kind_unknown": (_tensor("s", "kind", "scratch"), ["tensor 's'", "'scratch'"]),
    "tensor_dtype_unknown": (_tensor("s", "dtype", "float33"), ["tensor 's'", "dtype", "'float33'"]),
    "shape_not_a_list": (_tensor("s", "shape", "1,8"), ["tensor 's'", "shape", "'1,8'"]),
    "shape_negative": (_tensor("s", "shape", [1, -8]), ["tensor 's'", "shape", "-8"]),
    "shape_float": (_tensor("s", "shape", [1, 8.0]), ["tensor 's'", "shape"]),
    "nbytes_negative": (_tensor("s", "nbytes", -1), ["tensor 's'", "nbytes", "-1"]),
    "nbytes_beyond_int64": (_tensor("s", "nbytes", 2**63), ["tensor 's'", "nbytes"]),
    "consumers_not_a_list": (_tensor("s", "consumers", "branch0"), ["tensor 's'", "consumers"]),
    "producer_does_not_write_it": (_tensor("s", "producer", "join"), ["tensor 's'", "'join'"]),
    "consumer_does_not_read_it": (_tensor("x", "consumers", ["stem", "head"]), ["tensor 'x'", "'head'"]),
    "activation_without_producer": (_tensor("s", "producer", None), ["'s'", "no producer"]),
    "weight_with_producer": (_tensor("stem.weight", "producer", "stem"), ["'stem.weight'", "producer"]),
    # operators
    "macs_a_string": (_op("stem", "macs", "lots"), ["operator 'stem'", "macs", "'lots'"]),
    "macs_negative": (_op("join", "macs", -5), ["operator 'join'", "macs", "-5"]),
    "macs_bool": (_op("join", "macs", True), ["operator 'join'", "macs"]),
    "macs_float": (_op("join", "macs", 1.5), ["operator 'join'", "macs"]),
    "elements_negative": (_op("join", "elements", -1), ["operator 'join'", "elements", "-1"]),
    "operator_attribute_missing": (_drop_op("head", "out_tensors"), ["operator 'head'", "'out_tensors'"]),
    "op_not_a_string": (_op("head", "op", 3), ["operator 'head'", "op"]),
    "reads_unknown_tensor": (_op("join", "in_tensors", ["b0", "b1", "ghost"]), ["'join'", "'ghost'"]),
    "reads_tensor_twice": (_op("join", "in_tensors", ["b0", "b1", "b0"]), ["'join'", "'b0'", "twice"]),
    "writes_another_operators_tensor": (_op("head", "out_tensors", ["y", "j"]), ["'head'", "'j'"]),
    "bad_gemm": (_op("stem", "gemm", [[1, 1, 4, 1]]), ["operator 'stem'", "gemm"]),
    # edges and order
    "cycle_through_the_edges": (
        lambda data: data["edges"].append({"source": "head", "target": "stem", "tensors": ["y"]}),
        ["cycle", "'head'", "'stem'"],
    ),
    "edge_carrying_a_wrong_tensor": (_set(("edges", 0, "tensors"), ["x"]), ["'stem' -> 'branch0'", "'x'"]),
    "edge_missing": (lambda data: data["edges"].pop(), ["'j'", "'join'", "'head'", "no edge"]),
    "read_before_written": (
        lambda data: data["nodes"].insert(0, data["nodes"].pop(3)),  # join first
        ["'join'", "before"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_GRAPHS), ids=list(BAD_GRAPHS))
def test_a_bad_graph_file_names_the_file_and_the_item(case, tmp_path):
    mutate, expected = BAD_GRAPHS[case]
    data = _diamond_json()
    result = mutate(data)
    if isinstance(result, Replace):
        data = result.document
    path = tmp_path / f"{case}.json"
    path.write_text(json.dumps(data))
    with pytest.raises(GraphFormatError) as info:
        load_graph(path)
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    for part in expected:
        assert part in message, (part, message)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read"),  # no such file
        (bytes(range(256)), "not UTF-8"),
        (b'{\n "graph": {,}', f"{'x.json'}:2:12: not valid JSON"),
        (b"", "x.json:1:1: not valid JSON"),
        (b'{"graph": {}, "nodes": [], "edges": [], "graph": {}}', "key 'graph' appears twice"),
        (b'{"nodes": [{"id": "a", "op": "x", "op": "y"}]}', "key 'op' appears twice in one JSON object (operator 'a')"),
        (b"[" * 100_000, "not valid JSON"),  # nesting too deep for the parser
        (b'{"graph": 1' + b"0" * 5000 + b"}", "not valid JSON"),  # a number too long to convert
    ],
    ids=["missing", "binary", "syntax", "empty_file", "duplicate_key", "duplicate_node_key", "deep", "long_number"],
)
def test_an_unreadable_graph_file_names_the_file(content, expected, tmp_path):
    path = tmp_path / "x.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(GraphFormatError) as info:
        load_graph(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert expected in message, message


def test_a_directory_is_not_a_graph_file(tmp_path):
    with pytest.raises(GraphFormatError, match="cannot read the graph file"):
        load_graph(tmp_path)


def test_a_byte_order_mark_is_accepted(tmp_path):
    graph = synthetic.diamond(2, size=8)
    path = tmp_path / "bom.json"
    save_graph(graph, path)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert_identical(graph, load_graph(path))


def test_unknown_extra_attributes_are_kept(tmp_path):
    """Annotations a user adds to a graph file (a node's note, a tensor's layout) load and are kept."""
    data = _diamond_json()
    _node(data, "stem")["note"] = "hand-tuned"
    data["graph"]["tensors"]["s"]["layout"] = "NHWC"
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    graph = load_graph(path)
    assert graph.nodes["stem"]["note"] == "hand-tuned"
    assert graph.graph["tensors"]["s"]["layout"] == "NHWC"


def test_graph_is_checked_in_memory_too():
    """check_graph names the problem without a file; load_graph adds the file in front."""
    from frontend import check_graph

    graph = synthetic.diamond(2, size=8)
    graph.nodes["join"]["macs"] = -1
    with pytest.raises(GraphFormatError, match=r"^operator 'join': macs -1 is not a non-negative integer"):
        check_graph(graph)
    graph = synthetic.diamond(2, size=8)
    graph.add_edge("head", "stem", tensors=["y"])
    with pytest.raises(GraphFormatError, match="cycle"):
        check_graph(graph)

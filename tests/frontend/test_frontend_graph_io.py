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

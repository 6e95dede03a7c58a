"""``synthetic.nas_cells``: DARTS / NASNet-like stacks of cells that stress schedulers (COSMA §IV, Fig. 2b)."""

import re

import networkx as nx
import pytest

import allocator
import scheduler
from frontend import synthetic
from frontend.graph import check_graph


def _cats(graph: nx.DiGraph) -> list[str]:
    return [n for n, d in graph.nodes(data=True) if d["op"] == "cat"]


def _wiring(graph: nx.DiGraph) -> list[tuple[str, list[str]]]:
    return [(n, d["in_tensors"]) for n, d in graph.nodes(data=True)]


def test_same_arguments_give_the_same_graph():
    a, b = synthetic.nas_cells(seed=3), synthetic.nas_cells(seed=3)
    assert a.graph == b.graph
    assert list(a.nodes(data=True)) == list(b.nodes(data=True))
    assert list(a.edges(data=True)) == list(b.edges(data=True))


def test_different_seeds_give_different_wiring():
    wirings = {str(_wiring(synthetic.nas_cells(seed=seed))) for seed in range(5)}
    assert len(wirings) == 5


@pytest.mark.parametrize(("cells", "nodes", "seed"), [(4, 4, 0), (4, 4, 1), (8, 5, 2), (1, 1, 0), (3, 2, 7)])
def test_graph_is_a_well_formed_dag(cells, nodes, seed, well_formed):
    graph = synthetic.nas_cells(cells=cells, nodes=nodes, seed=seed, size=256)
    check_graph(graph)
    well_formed(graph)
    assert nx.is_directed_acyclic_graph(graph)
    assert graph.graph["inputs"] == ["x"] and graph.graph["outputs"] == ["y"]
    assert graph.graph["dtype"] == "int8"
    assert list(graph.nodes)[:2] == ["stem0", "stem1"] and list(graph.nodes)[-1] == "classifier"
    for name, data in graph.nodes(data=True):
        assert len(data["in_tensors"]) == len(set(data["in_tensors"])), name
        if data["op"] == "add":
            assert len(data["in_tensors"]) == 2, name
        weights = [t for t in data["in_tensors"] if t.endswith(".weight")]
        assert (data["op"] == "linear") == bool(weights), name


def test_every_cell_concatenates_its_nodes_and_reads_the_previous_two_cells():
    graph = synthetic.nas_cells(cells=5, nodes=3, seed=4, size=64)
    tensors = graph.graph["tensors"]
    assert _cats(graph) == [f"cell{k}.cat" for k in range(5)]
    for k in range(5):
        assert graph.nodes[f"cell{k}.cat"]["in_tensors"] == [f"cell{k}.n{i}" for i in range(3)]
        assert tensors[f"cell{k}.out"]["nbytes"] == 3 * tensors[f"cell{k}.n0"]["nbytes"]
    inputs = {k: [graph.nodes[f"cell{k}.pre{j}"]["in_tensors"][0] for j in range(2)] for k in range(5)}
    assert inputs[0] == ["s0", "s1"] and inputs[1] == ["s1", "cell0.out"]
    assert all(inputs[k] == [f"cell{k - 2}.out", f"cell{k - 1}.out"] for k in range(2, 5))
    for k in range(5):  # node 0 always reads both preprocessed inputs, so neither is dead
        assert tensors[f"cell{k}.p0"]["consumers"] and tensors[f"cell{k}.p1"]["consumers"]


def test_reduction_cells_halve_sizes():
    graph = synthetic.nas_cells(cells=6, nodes=2, seed=0, size=64)
    tensors = graph.graph["tensors"]
    node = {k: tensors[f"cell{k}.n0"]["nbytes"] for k in range(6)}
    pre = {k: tensors[f"cell{k}.p0"]["nbytes"] for k in range(6)}
    assert node == {0: 64, 1: 64, 2: 32, 3: 32, 4: 32, 5: 16}
    assert pre == {0: 64, 1: 64, 2: 64, 3: 32, 4: 32, 5: 32}
    # cell 4 reads cell 2's output, already reduced; cell 3 reads cell 1's, so its pre0 halves it
    assert tensors["cell1.out"]["nbytes"] == 128 and tensors["cell3.p0"]["nbytes"] == 32
    # in a reduction cell, edges from the inputs are strided: no edge passes an input through
    for k in (2, 5):
        for i in range(2):
            assert not {f"cell{k}.p0", f"cell{k}.p1"} & set(graph.nodes[f"cell{k}.node{i}.add"]["in_tensors"])
    flat = synthetic.nas_cells(cells=6, nodes=2, seed=0, size=64, reduction_every=0)
    assert {flat.graph["tensors"][f"cell{k}.n0"]["nbytes"] for k in range(6)} == {64}
    tiny = synthetic.nas_cells(cells=9, nodes=2, size=2)
    assert all(rec["nbytes"] >= 1 for rec in tiny.graph["tensors"].values())


def test_names_are_readable_and_every_edge_kind_appears():
    graph = synthetic.nas_cells(cells=8, nodes=5, seed=0)
    suffixes = {n.rsplit(".", 1)[-1] for n in graph if ".edge" in n}
    assert suffixes == {"sep0", "sep1", "dil", "max_pool", "avg_pool", "reduce"}
    assert graph.nodes["cell0.node0.add"]["op"] == "add"
    pools = {d["op"] for n, d in graph.nodes(data=True) if n.endswith("_pool")}
    assert pools == {"max_pool2d", "avg_pool2d"}
    # some node reads an input or an earlier node directly (a skip edge, no operator on that edge)
    skip = re.compile(r"cell\d+\.[pn]\d+")
    assert any(skip.fullmatch(t) for _, d in graph.nodes(data=True) if d["op"] == "add" for t in d["in_tensors"])


def test_default_size_is_moderate():
    counts = [synthetic.nas_cells(seed=seed).number_of_nodes() for seed in range(10)]
    assert all(50 <= c <= 120 for c in counts)


def test_cells_are_wide_unlike_a_chain():
    graph = synthetic.nas_cells()
    steps = scheduler.overlap.OverlapAnalysis(graph).steps
    wide = [op for op, (first, last) in steps.items() if last > first]
    assert len(wide) > graph.number_of_nodes() // 2
    assert max(last - first for first, last in steps.values()) >= 3
    chain_steps = scheduler.overlap.OverlapAnalysis(synthetic.chain(graph.number_of_nodes())).steps
    assert all(first == last for first, last in chain_steps.values())


@pytest.mark.parametrize("seed", range(3))
def test_baseline_scheduler_runs_at_the_minimum_capacity(seed):
    graph = synthetic.nas_cells(seed=seed)
    budget, _ = scheduler.min_capacity(graph)
    s = scheduler.baseline.schedule(graph, budget)
    assert s.order == list(graph.nodes)
    assert s.offsets is not None
    assert allocator.validate(s.problem(), allocator.Solution(s.offsets)).ok


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="at least 1"):
        synthetic.nas_cells(cells=0)
    with pytest.raises(ValueError, match="at least 1"):
        synthetic.nas_cells(nodes=0)
    with pytest.raises(ValueError, match="reduction_every"):
        synthetic.nas_cells(reduction_every=-1)

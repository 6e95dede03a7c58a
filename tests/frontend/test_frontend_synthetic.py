"""Synthetic graph generators: well formed, deterministic, sized as asked."""

import math

import pytest

from frontend import synthetic


def test_chain_is_a_line_of_operators(well_formed):
    graph = synthetic.chain(4, size=100, weight_size=10)
    well_formed(graph)
    assert list(graph.nodes) == ["op0", "op1", "op2", "op3"]
    assert list(graph.edges) == [("op0", "op1"), ("op1", "op2"), ("op2", "op3")]
    tensors = graph.graph["tensors"]
    assert graph.graph["inputs"] == ["x"] and graph.graph["outputs"] == ["t3"]
    assert tensors["t1"]["nbytes"] == 100 and tensors["op1.weight"]["nbytes"] == 10
    assert tensors["t3"]["kind"] == "output"


def test_diamond_keeps_the_stem_alive_across_branches(well_formed):
    graph = synthetic.diamond(branches=3, size=8, branch_size=4)
    well_formed(graph)
    tensors = graph.graph["tensors"]
    assert tensors["s"]["consumers"] == ["branch0", "branch1", "branch2"]
    assert graph.nodes["join"]["in_tensors"] == ["b0", "b1", "b2"]
    assert tensors["b0"]["nbytes"] == 4


def test_residual_block_reads_its_input_twice(well_formed):
    graph = synthetic.residual_block(n_blocks=2, size=16, inner_ops=3)
    well_formed(graph)
    tensors = graph.graph["tensors"]
    assert tensors["x"]["consumers"] == ["block0.op0", "block0.add"]
    assert tensors["block0.out"]["consumers"] == ["block1.op0", "block1.add"]
    assert graph.graph["outputs"] == ["block1.out"]


@pytest.mark.parametrize("seed", range(5))
def test_random_dag_is_well_formed_and_bounded(seed, well_formed):
    graph = synthetic.random_dag(30, seed=seed, max_size=500)
    well_formed(graph)
    assert graph.number_of_nodes() == 30
    assert graph.graph["inputs"] == ["x"] and len(graph.graph["outputs"]) == 1
    for rec in graph.graph["tensors"].values():
        assert 1 <= rec["nbytes"] <= 500
    assert all(any(t.endswith(".weight") for t in d["in_tensors"]) for _, d in graph.nodes(data=True))


def test_random_dag_is_deterministic_per_seed():
    a, b, c = synthetic.random_dag(25, seed=11), synthetic.random_dag(25, seed=11), synthetic.random_dag(25, seed=12)
    assert list(a.nodes(data=True)) == list(b.nodes(data=True)) and a.graph == b.graph
    assert a.graph["tensors"] != c.graph["tensors"]


def test_nas_cell_concatenates_its_intermediate_nodes(well_formed):
    graph = synthetic.nas_cell(n_nodes=5, seed=2, size=32)
    well_formed(graph)
    assert graph.nodes["concat"]["in_tensors"] == ["n1", "n2", "n3", "n4", "n5"]
    assert graph.graph["tensors"]["y"]["nbytes"] == 5 * 32
    assert sum(d["macs"] for _, d in graph.nodes(data=True)) == 10 * 32


def test_generators_reject_empty_graphs():
    for make in (lambda: synthetic.chain(0), lambda: synthetic.random_dag(0), lambda: synthetic.diamond(0)):
        with pytest.raises(ValueError, match="at least 1"):
            make()


def test_synthetic_sizes_are_bytes():
    graph = synthetic.chain(2, size=77)
    assert graph.graph["dtype"] == "int8"
    assert all(rec["nbytes"] == math.prod(rec["shape"]) for rec in graph.graph["tensors"].values())


@pytest.mark.parametrize(
    "graph",
    [synthetic.chain(3, size=40), synthetic.diamond(2, size=8, branch_size=4), synthetic.residual_block(2, size=16),
     synthetic.random_dag(30, seed=4), synthetic.nas_cell(4, seed=1, size=32),
     synthetic.nas_cells(cells=4, nodes=3, seed=2, size=64)],
    ids=["chain", "diamond", "residual", "random_dag", "nas_cell", "nas_cells"],
)
def test_compute_operators_have_a_gemm_of_their_macs(graph):
    tensors = graph.graph["tensors"]
    for name, data in graph.nodes(data=True):
        if data["op"] == "linear":  # one MAC per output byte: a 1 x 1 @ 1 x size product
            size = tensors[data["out_tensors"][0]]["nbytes"]
            assert data["gemm"] == [[1, 1, size, 1]] and data["macs"] == size, name
        else:
            assert data["gemm"] == [] and data["macs"] == 0, name

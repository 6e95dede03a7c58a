"""Small synthetic dataflow graphs, for testing schedulers and allocators without torch.

Every generator returns a checked ``DataflowGraph`` (see ``frontend.graph``) with one graph
input ``"x"``, one final output, and a weight read by every compute operator. Tensors are
one-dimensional ``int8`` vectors, so a tensor's ``nbytes`` is its length: the ``size``
arguments are bytes. Compute operators are ``"linear"`` with one MAC per output byte (a
convention, not a model of a real layer); joins are ``"add"`` (elementwise) or ``"cat"``.

>>> g = chain(3, size=64)
>>> list(g.nodes), g.graph["outputs"], g.graph["tensors"]["t2"]["nbytes"]
(['op0', 'op1', 'op2'], ['t2'], 64)
>>> random_dag(20, seed=7).graph == random_dag(20, seed=7).graph
True
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import networkx as nx

from frontend.graph import add_operator, add_tensor, check_graph, new_graph

DTYPE = "int8"  # one byte per element: sizes are bytes


def _compute(graph: nx.DiGraph, name: str, inputs: Sequence[str], out: str, size: int,
             weight_size: int | None) -> None:
    """A ``linear`` operator reading ``inputs`` and its own weight, writing ``out`` (``size`` bytes)."""
    weight = f"{name}.weight"
    add_tensor(graph, weight, (weight_size or size,), kind="weight")
    add_operator(graph, name, "linear", inputs=[*inputs, weight], outputs={out: (size,)}, macs=size)


def _finish(graph: nx.DiGraph, output: str) -> nx.DiGraph:
    graph.graph["outputs"] = [output]
    graph.graph["tensors"][output]["kind"] = "output"
    check_graph(graph)
    return graph


def _positive(**values: int) -> None:
    for key, value in values.items():
        if value < 1:
            raise ValueError(f"{key} must be at least 1, got {value}")


def chain(n_ops: int, size: int = 1024, weight_size: int | None = None) -> nx.DiGraph:
    """``x -> op0 -> op1 -> ... -> op{n-1}``; every activation is ``size`` bytes.

    Operator ``op{i}`` reads ``t{i-1}`` (``x`` for the first) and ``op{i}.weight``
    (``weight_size`` bytes, default ``size``) and writes ``t{i}``.
    """
    _positive(n_ops=n_ops, size=size)
    graph = new_graph(f"chain{n_ops}", dtype=DTYPE)
    add_tensor(graph, "x", (size,), kind="input")
    previous = "x"
    for i in range(n_ops):
        _compute(graph, f"op{i}", [previous], f"t{i}", size, weight_size)
        previous = f"t{i}"
    return _finish(graph, previous)


def diamond(branches: int = 2, size: int = 1024, branch_size: int | None = None) -> nx.DiGraph:
    """``x -> stem -> {branch0 .. branch{k-1}} -> join (add) -> head``.

    The stem's output is read by every branch, so it lives until the last branch runs; the
    branch outputs (``branch_size`` bytes, default ``size``) all live until the join.
    """
    _positive(branches=branches, size=size)
    branch_size = branch_size or size
    graph = new_graph(f"diamond{branches}", dtype=DTYPE)
    add_tensor(graph, "x", (size,), kind="input")
    _compute(graph, "stem", ["x"], "s", size, None)
    outs = []
    for i in range(branches):
        _compute(graph, f"branch{i}", ["s"], f"b{i}", branch_size, None)
        outs.append(f"b{i}")
    add_operator(graph, "join", "add", inputs=outs, outputs={"j": (branch_size,)})
    _compute(graph, "head", ["j"], "y", size, None)
    return _finish(graph, "y")


def residual_block(n_blocks: int = 1, size: int = 1024, inner_ops: int = 2) -> nx.DiGraph:
    """``n_blocks`` residual blocks: ``y = x + f(x)`` with ``f`` a chain of ``inner_ops`` operators.

    The block input is read by the first inner operator and again by the ``add``, so it stays
    live across the whole block, the pattern of ResNet's skip connections.
    """
    _positive(n_blocks=n_blocks, size=size, inner_ops=inner_ops)
    graph = new_graph(f"residual{n_blocks}", dtype=DTYPE)
    add_tensor(graph, "x", (size,), kind="input")
    block_input = "x"
    for b in range(n_blocks):
        previous = block_input
        for i in range(inner_ops):
            _compute(graph, f"block{b}.op{i}", [previous], f"block{b}.t{i}", size, None)
            previous = f"block{b}.t{i}"
        add_operator(graph, f"block{b}.add", "add", inputs=[previous, block_input],
                     outputs={f"block{b}.out": (size,)})
        block_input = f"block{b}.out"
    return _finish(graph, block_input)


def random_dag(n_ops: int, seed: int = 0, max_size: int = 4096, max_inputs: int = 3) -> nx.DiGraph:
    """A random DAG of ``n_ops`` operators, the same for the same arguments.

    Operator ``op{i}`` reads the previous operator's output (``x`` for ``op0``) plus up to
    ``max_inputs - 1`` earlier tensors chosen at random, and its own weight; sizes are drawn
    uniformly from ``[1, max_size]``. The last operator also reads every tensor nobody read
    yet, so each activation has a consumer and the graph has one output.
    """
    _positive(n_ops=n_ops, max_size=max_size, max_inputs=max_inputs)
    rng = random.Random(seed)
    graph = new_graph(f"random_dag{n_ops}_seed{seed}", dtype=DTYPE)
    add_tensor(graph, "x", (rng.randint(1, max_size),), kind="input")
    produced = ["x"]
    for i in range(n_ops):
        inputs = [produced[-1]]
        extra = rng.randint(0, max_inputs - 1)
        inputs += rng.sample(produced[:-1], min(extra, len(produced) - 1))
        if i == n_ops - 1:
            tensors = graph.graph["tensors"]
            inputs += [t for t in produced if not tensors[t]["consumers"] and t not in inputs]
        _compute(graph, f"op{i}", inputs, f"t{i}", rng.randint(1, max_size), rng.randint(1, max_size))
        produced.append(f"t{i}")
    return _finish(graph, produced[-1])


def nas_cell(n_nodes: int = 4, seed: int = 0, size: int = 1024) -> nx.DiGraph:
    """A DARTS-like cell: each intermediate node sums two operators applied to earlier nodes.

    Node ``k`` picks two of the earlier nodes (the cell input ``x`` is node 0) at random,
    applies an operator with its own weight to each, and adds the results; the cell output
    concatenates every intermediate node (``n_nodes * size`` bytes), as in DARTS.
    """
    _positive(n_nodes=n_nodes, size=size)
    rng = random.Random(seed)
    graph = new_graph(f"nas_cell{n_nodes}_seed{seed}", dtype=DTYPE)
    add_tensor(graph, "x", (size,), kind="input")
    nodes = ["x"]
    for k in range(1, n_nodes + 1):
        sources = [rng.choice(nodes) for _ in range(2)]
        edges = []
        for e, source in enumerate(sources):
            _compute(graph, f"node{k}.op{e}", [source], f"node{k}.e{e}", size, None)
            edges.append(f"node{k}.e{e}")
        add_operator(graph, f"node{k}.sum", "add", inputs=edges, outputs={f"n{k}": (size,)})
        nodes.append(f"n{k}")
    add_operator(graph, "concat", "cat", inputs=nodes[1:], outputs={"y": (n_nodes * size,)})
    return _finish(graph, "y")

"""Small synthetic dataflow graphs, for testing schedulers and allocators without torch.

Every generator returns a checked ``DataflowGraph`` (see ``frontend.graph``) with one graph
input ``"x"``, one final output, and a weight read by every compute operator. Tensors are
one-dimensional ``int8`` vectors, so a tensor's ``nbytes`` is its length: the ``size``
arguments are bytes. Compute operators are ``"linear"`` with one MAC per output byte (a
convention, not a model of a real layer) and the matching GEMM shape ``[[1, 1, size, 1]]``: one
row, a reduction of 1, one output column per byte; joins are ``"add"`` (elementwise) or ``"cat"``.
``nas_cells`` also has pooling operators (``"max_pool2d"`` / ``"avg_pool2d"``), which read no
weight.

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
    """A ``linear`` operator reading ``inputs`` and its own weight, writing ``out`` (``size`` bytes).

    One MAC per output byte, as the GEMM ``(1 x 1) @ (1 x size)``.
    """
    weight = f"{name}.weight"
    add_tensor(graph, weight, (weight_size or size,), kind="weight")
    add_operator(graph, name, "linear", inputs=[*inputs, weight], outputs={out: (size,)}, macs=size,
                 gemm=[(1, 1, size, 1)])


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


#: edge operations of ``nas_cells``, drawn uniformly (DARTS's search space without ``none``)
NAS_EDGE_OPS = ("sep_conv", "dil_conv", "max_pool", "avg_pool", "skip")


def nas_cells(cells: int = 4, nodes: int = 4, seed: int = 0, size: int = 1024, reduction_every: int = 3,
              classes: int = 10) -> nx.DiGraph:
    """A stack of DARTS / NASNet-like cells: wide parallel branches and irregular wiring (COSMA §IV, Fig. 2b).

    Parameters
    ----------
    cells:
        number of cells stacked after the stem.
    nodes:
        intermediate nodes per cell; a cell's output concatenates them all.
    seed:
        seeds ``random.Random``, which draws every edge's source and operation; the same
        arguments always give the same graph.
    size:
        bytes of one node (and of each stem output) at full resolution, i.e. before any
        reduction cell.
    reduction_every:
        cell ``k`` is a reduction cell when ``k % reduction_every == reduction_every - 1``
        (the default 3 gives cells 2, 5, 8, ...); ``0`` means no reduction cells.
    classes:
        bytes of the classifier's output, the single graph output.

    Structure (names in brackets; ``K`` = ``cell{k}``, ``N`` = ``cell{k}.node{i}``):

    * **stem**: ``stem0`` reads ``x`` and writes ``s0``; ``stem1`` reads ``s0`` and writes
      ``s1`` (``size`` bytes each). They are the two inputs of cell 0; cell ``k`` reads the
      outputs of cells ``k - 2`` and ``k - 1`` (a stem output when ``k - 2`` or ``k - 1`` < 0).
    * **preprocess** (``K.pre0``, ``K.pre1``, writing ``K.p0``, ``K.p1``): a 1x1 compute op on
      each cell input, bringing it to one node's size at the resolution of the previous cell's
      output. An input from before a reduction cell is at twice that resolution, so its
      preprocessing halves it too (DARTS's factorized reduce).
    * **intermediate node** ``i`` (``N.add`` writes ``K.n{i}``) adds the results of two
      edges. Edge ``e`` of node ``i`` applies an operation drawn uniformly from
      ``NAS_EDGE_OPS`` to a source drawn from ``{K.p0, K.p1, K.n0 .. K.n{i-1}}``; node 0
      reads ``K.p0`` and ``K.p1`` (in random order), so both inputs are always used. The
      operations: ``sep_conv`` is two compute ops in a row (``N.edge{e}.sep0``, ``.sep1``),
      ``dil_conv`` one (``N.edge{e}.dil``), ``max_pool`` / ``avg_pool`` one operator without a
      weight (``N.edge{e}.max_pool``, op ``"max_pool2d"``; ``"avg_pool2d"``), and ``skip`` is
      no operator: the add reads the source itself. When both edges would be ``skip`` on the
      same source, the second is redrawn among the others, so the add reads two tensors.
      Edge results are ``N.e{e}`` (``N.e{e}.mid`` between the two halves of a sep conv).
    * **cell output** (``K.cat`` writes ``K.out``): a ``"cat"`` of the ``nodes`` intermediate
      nodes, ``nodes`` times one node's size.
    * **reduction cells** (stride 2): edges reading ``K.p0`` / ``K.p1`` halve the size, so the
      cell's nodes are half its inputs' size; a ``skip`` on those inputs becomes a compute op
      (``N.edge{e}.reduce``), DARTS's factorized reduce. After ``r`` reduction cells a node is
      ``max(1, size // 2**r)`` bytes: fewer pixels and more channels, half the bytes.
    * **classifier** reads the last cell's output and writes ``y`` (``classes`` bytes).

    Compute operators follow the module's convention (``"linear"``, a weight as large as the
    output, one MAC per output byte, ``gemm`` ``[[1, 1, size, 1]]``).

    Three cells of two nodes, cell 2 a reduction cell: 32 operators, and the reduction halves
    the cell output from 2 x 64 to 2 x 32 bytes.

    >>> g = nas_cells(cells=3, nodes=2, seed=0, size=64)
    >>> g.number_of_nodes(), g.graph["outputs"]
    (32, ['y'])
    >>> tensors = g.graph["tensors"]
    >>> tensors["cell1.out"]["nbytes"], tensors["cell2.p0"]["nbytes"], tensors["cell2.out"]["nbytes"]
    (128, 64, 64)
    >>> nas_cells().graph == nas_cells().graph
    True
    """
    _positive(cells=cells, nodes=nodes, size=size, classes=classes)
    if reduction_every < 0:
        raise ValueError(f"reduction_every must be at least 0, got {reduction_every}")
    rng = random.Random(seed)
    graph = new_graph(f"nas_cells{cells}x{nodes}_seed{seed}", dtype=DTYPE)
    add_tensor(graph, "x", (size,), kind="input")
    _compute(graph, "stem0", ["x"], "s0", size, None)
    _compute(graph, "stem1", ["s0"], "s1", size, None)
    previous = ["s0", "s1"]  # outputs of cells k - 2 and k - 1
    reductions = 0  # reduction cells so far, i.e. the resolution of ``previous[1]``
    for k in range(cells):
        name = f"cell{k}"
        in_size = max(1, size >> reductions)
        inputs = [f"{name}.p0", f"{name}.p1"]
        for j, (source, tensor) in enumerate(zip(previous, inputs, strict=True)):
            _compute(graph, f"{name}.pre{j}", [source], tensor, in_size, None)
        reduction = reduction_every > 0 and k % reduction_every == reduction_every - 1
        if reduction:
            reductions += 1
        node_size = max(1, size >> reductions)
        states = list(inputs)
        for i in range(nodes):
            node = f"{name}.node{i}"
            sources = rng.sample(inputs, 2) if i == 0 else [rng.choice(states) for _ in range(2)]
            ops = [rng.choice(NAS_EDGE_OPS) for _ in range(2)]
            if sources[0] == sources[1] and ops == ["skip", "skip"]:
                ops[1] = rng.choice([op for op in NAS_EDGE_OPS if op != "skip"])
            edges = []
            for e, (source, op) in enumerate(zip(sources, ops, strict=True)):
                strided = reduction and source in inputs
                edges.append(_nas_edge(graph, f"{node}.edge{e}", f"{node}.e{e}", op, source, node_size, strided))
            add_operator(graph, f"{node}.add", "add", inputs=edges, outputs={f"{name}.n{i}": (node_size,)})
            states.append(f"{name}.n{i}")
        add_operator(graph, f"{name}.cat", "cat", inputs=states[2:], outputs={f"{name}.out": (nodes * node_size,)})
        previous = [previous[1], f"{name}.out"]
    _compute(graph, "classifier", [previous[1]], "y", classes, None)
    return _finish(graph, "y")


def _nas_edge(graph: nx.DiGraph, name: str, out: str, op: str, source: str, size: int, strided: bool) -> str:
    """One edge of a ``nas_cells`` node: the tensor the node's add reads (``source`` itself for a skip)."""
    if op == "skip" and not strided:
        return source
    if op == "skip":
        _compute(graph, f"{name}.reduce", [source], out, size, None)
    elif op == "sep_conv":
        _compute(graph, f"{name}.sep0", [source], f"{out}.mid", size, None)
        _compute(graph, f"{name}.sep1", [f"{out}.mid"], out, size, None)
    elif op == "dil_conv":
        _compute(graph, f"{name}.dil", [source], out, size, None)
    else:
        kind = op.removesuffix("_pool")
        add_operator(graph, f"{name}.{kind}_pool", f"{kind}_pool2d", inputs=[source], outputs={out: (size,)})
    return out

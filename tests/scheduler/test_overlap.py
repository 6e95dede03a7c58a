"""The tensor overlap analysis (COSMA §III-F): sound for every operator order, tight on small cases."""

from __future__ import annotations

import random

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontend.graph import add_operator, add_tensor, new_graph
from scheduler.overlap import OverlapAnalysis
from scheduler.schedule import ScheduleError


def chain(n: int) -> nx.DiGraph:
    g = new_graph("chain")
    add_tensor(g, "t0", (4,), kind="input")
    for i in range(1, n + 1):
        add_operator(g, f"op{i}", "relu", inputs=[f"t{i - 1}"], outputs={f"t{i}": (4,)})
    g.graph["outputs"] = [f"t{n}"]
    return g


def test_a_chain_has_one_order_and_only_neighbours_overlap():
    o = OverlapAnalysis(chain(4))
    assert o.steps == {f"op{i}": (i - 1, i - 1) for i in range(1, 5)}
    assert o.windows["t0"] == (0, 0) and o.windows["t4"] == (3, 3)
    assert sorted(o.pairs()) == [("t0", "t1"), ("t1", "t2"), ("t2", "t3"), ("t3", "t4")]


def test_cosma_figure_1_pattern_a_tensor_read_by_both_branches_dies_before_the_join():
    # a0 is read by o1 and o2, both ancestors of o5 (which writes a6). An independent chain
    # x1..x3 lets o1/o2 run late and o5 early, so the windows of a0 and a6 intersect; only the
    # dependency rule tells that a0 is always freed before a6 is written.
    g = new_graph("fig1")
    add_tensor(g, "a0", (4,), kind="input")
    add_tensor(g, "y0", (4,), kind="input")
    add_operator(g, "o1", "relu", inputs=["a0"], outputs={"a1": (4,)})
    add_operator(g, "o2", "neg", inputs=["a0"], outputs={"a2": (4,)})
    add_operator(g, "o5", "add", inputs=["a1", "a2"], outputs={"a6": (4,)})
    for i in range(1, 4):
        add_operator(g, f"x{i}", "relu", inputs=[f"y{i - 1}"], outputs={f"y{i}": (4,)})
    g.graph["outputs"] = ["a6", "y3"]
    o = OverlapAnalysis(g)
    assert o.steps["o5"] == (2, 5) and o.steps["o1"] == (0, 4)
    assert o.windows["a0"][1] >= o.windows["a6"][0]  # the windows alone cannot separate them
    assert not o.may_overlap("a0", "a6") and not o.may_overlap("a6", "a0")
    assert o.may_overlap("a1", "a2") and o.may_overlap("a0", "y2")
    assert ("a0", "a6") not in set(o.pairs())


def test_cycles_are_rejected_with_the_graph_name():
    g = chain(2)
    g.add_edge("op2", "op1", tensors=[])
    with pytest.raises(ScheduleError, match="'chain' has a cycle"):
        OverlapAnalysis(g)


@st.composite
def random_dags(draw):
    n = draw(st.integers(2, 9))
    g = new_graph("random")
    add_tensor(g, "in", (4,), kind="input")
    add_tensor(g, "w", (4,), kind="weight")
    produced = ["in"]
    for i in range(n):
        k = draw(st.integers(1, min(3, len(produced))))
        reads = draw(st.lists(st.sampled_from(produced), min_size=k, max_size=k, unique=True))
        if draw(st.booleans()):
            reads.append("w")
        add_operator(g, f"op{i}", "add", inputs=reads, outputs={f"t{i}": (4,)})
        produced.append(f"t{i}")
    unread = [t for t in produced if not g.graph["tensors"][t]["consumers"]]
    g.graph["outputs"] = unread or [produced[-1]]
    return g, draw(st.integers(0, 2**32 - 1))


def random_order(g: nx.DiGraph, seed: int) -> list[str]:
    rng = random.Random(seed)
    indegree = {v: g.in_degree(v) for v in g}
    ready = [v for v, d in indegree.items() if d == 0]
    order = []
    while ready:
        v = ready.pop(rng.randrange(len(ready)))
        order.append(v)
        for s in g.successors(v):
            indegree[s] -= 1
            if indegree[s] == 0:
                ready.append(s)
    return order


@settings(max_examples=150, deadline=None)
@given(case=random_dags())
def test_sound_for_random_orders(case):
    """In any topological order, each operator runs within its bounds, and two tensors whose
    minimal live ranges (write to last read; inputs from first read; outputs to the end)
    intersect are reported as possibly overlapping."""
    g, seed = case
    o = OverlapAnalysis(g)
    pairs = set(o.pairs())
    tensors = g.graph["tensors"]
    outputs = set(g.graph["outputs"])
    for k in range(4):
        order = random_order(g, seed + k)
        step = {op: i for i, op in enumerate(order)}
        for op, i in step.items():
            lo, hi = o.steps[op]
            assert lo <= i <= hi
        live = {}
        for name, record in tensors.items():
            uses = [step[c] for c in record["consumers"]]
            start = step[record["producer"]] if record["producer"] else min(uses, default=0)
            end = len(order) - 1 if name in outputs else max(uses, default=start)
            live[name] = (start, end)
            lo, hi = o.windows[name]
            assert lo <= start and end <= hi
        names = list(tensors)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if live[a][0] <= live[b][1] and live[b][0] <= live[a][1]:
                    assert o.may_overlap(a, b) and (a, b) in pairs, (a, b, order)

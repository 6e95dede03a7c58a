"""Tensor overlap analysis: which tensors can ever be live at the same step (COSMA §III-F).

COSMA's ILP has variables per tensor and step and constraints per pair of tensors live
together, so it first bounds, from the graph alone, where each operator and tensor can be in
*any* topological order (an analysis in the spirit of MODeL's):

* operator v runs at a step in ``[earliest(v), latest(v)]``: ``earliest`` is the number of its
  ancestors (they all run before it), ``latest`` is ``n - 1`` minus the number of its
  descendants (they all run after it);
* a tensor's *window* is where it can be live: from the earliest step of its producer (step 0
  for graph inputs and weights, which can be fetched at any time) to the latest step of its
  last consumer (the last step, ``n - 1``, for a graph output);
* two tensors can be live together only if their windows intersect and neither is always dead
  before the other is born: when every consumer of ``a`` is a strict ancestor of ``b``'s
  producer, ``a`` is freed before ``b`` is written, in every order (COSMA Fig. 1: ``a0`` is read
  by both predecessors of the operator that writes ``a6``, so they never overlap).

Ancestor sets are Python-integer bitsets over the operators in program order, so the analysis
costs O(operators x edges / 64) and the pair test O(consumers).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import networkx as nx

from scheduler.schedule import ScheduleError


class OverlapAnalysis:
    """Step bounds of every operator and live windows of every tensor of a dataflow graph.

    With ``operators``, the analysis covers that part of the graph scheduled on its own (steps
    count within the part; tensors made outside it are treated like graph inputs; tensors the
    part does not touch have no window), as ``cosma_dnc`` needs.

    >>> from frontend.graph import new_graph, add_tensor, add_operator
    >>> g = new_graph("diamond")
    >>> add_tensor(g, "x", (4,), kind="input")
    >>> add_operator(g, "p", "relu", inputs=["x"], outputs={"a": (4,)})
    >>> add_operator(g, "l", "relu", inputs=["a"], outputs={"b": (4,)})
    >>> add_operator(g, "r", "neg", inputs=["a"], outputs={"c": (4,)})
    >>> add_operator(g, "j", "add", inputs=["b", "c"], outputs={"d": (4,)})
    >>> g.graph["outputs"] = ["d"]
    >>> o = OverlapAnalysis(g)
    >>> o.steps["l"], o.steps["r"], o.windows["b"], o.windows["d"]
    ((1, 2), (1, 2), (1, 3), (3, 3))
    >>> o.may_overlap("b", "c"), o.may_overlap("a", "d"), o.may_overlap("a", "b")
    (True, False, True)
    """

    def __init__(self, graph: nx.DiGraph, operators: Iterable[str] | None = None) -> None:
        if not nx.is_directed_acyclic_graph(graph):
            raise ScheduleError(f"graph {graph.graph.get('name', '?')!r} has a cycle: no operator order exists")
        self.graph = graph
        part = operators is not None
        if operators is not None:
            # A part of the graph scheduled on its own (COSMA §IV): steps count within the part,
            # and tensors made outside it are treated like graph inputs.
            chosen = set(operators)
            kept = [op for op in graph.nodes if op in chosen]
            graph = graph.subgraph(kept)
        # in the graph's own order: a subgraph view of less than half the graph iterates a set of
        # names, whose order changes with PYTHONHASHSEED
        names = kept if operators is not None else list(graph.nodes)
        self._index = {op: i for i, op in enumerate(names)}
        n = len(names)
        ancestors: dict[str, int] = {}
        for op in nx.topological_sort(graph):
            bits = 0
            for pred in graph.predecessors(op):
                bits |= ancestors[pred] | (1 << self._index[pred])
            ancestors[op] = bits
        descendants: dict[str, int] = {}
        for op in reversed(list(nx.topological_sort(graph))):
            bits = 0
            for succ in graph.successors(op):
                bits |= descendants[succ] | (1 << self._index[succ])
            descendants[op] = bits
        self._ancestors = ancestors
        #: operator -> (earliest step, latest step) over all topological orders
        self.steps: dict[str, tuple[int, int]] = {
            op: (ancestors[op].bit_count(), n - 1 - descendants[op].bit_count()) for op in names
        }
        outputs = set(graph.graph.get("outputs", ()))
        #: tensor -> (first step, last step) at which it can be live
        self.windows: dict[str, tuple[int, int]] = {}
        for name, record in graph.graph["tensors"].items():
            producer = record.get("producer")
            if producer is not None and producer not in self.steps:
                producer = None
            consumers = [c for c in record.get("consumers", []) if c in self.steps]
            if part and producer is None and not consumers and name not in outputs:
                continue  # not touched by this part of the graph
            first = self.steps[producer][0] if producer is not None else 0
            last = max((self.steps[c][1] for c in consumers), default=first)
            if name in outputs:
                last = n - 1
            self.windows[name] = (first, max(first, last))

    def _dead_before(self, a: str, b: str) -> bool:
        """Every consumer of ``a`` runs strictly before ``b``'s producer, in every order."""
        tensors = self.graph.graph["tensors"]
        producer = tensors[b].get("producer")
        consumers = [c for c in tensors[a].get("consumers", []) if c in self._index]
        if producer not in self._index or not consumers or a in self.graph.graph.get("outputs", ()):
            return False
        below = self._ancestors[producer]
        return all(below >> self._index[c] & 1 for c in consumers)

    def may_overlap(self, a: str, b: str) -> bool:
        """Whether tensors ``a`` and ``b`` can be live at the same step in some operator order."""
        (a0, a1), (b0, b1) = self.windows[a], self.windows[b]
        if a1 < b0 or b1 < a0:
            return False
        return not (self._dead_before(a, b) or self._dead_before(b, a))

    def pairs(self) -> Iterator[tuple[str, str]]:
        """Every pair of distinct tensors (in the graph's tensor order) that may overlap."""
        position = {name: i for i, name in enumerate(self.windows)}
        by_start = sorted(position, key=lambda t: self.windows[t][0])
        for i, a in enumerate(by_start):
            end = self.windows[a][1]
            for b in by_start[i + 1:]:
                if self.windows[b][0] > end:
                    break
                if self.may_overlap(a, b):
                    yield (a, b) if position[a] < position[b] else (b, a)

"""Tiny dataflow graphs for the scheduler tests, a seeded random-DAG builder and a schedule checker.

Graphs are built with ``frontend.graph``'s builder only (no torch). The helpers are exposed as
session fixtures (plain functions) so hypothesis tests can use them.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping

import networkx as nx
import pytest

from allocator.core.problem import Solution
from allocator.core.validate import validate
from frontend.graph import add_operator, add_tensor, check_graph, new_graph
from scheduler.schedule import Schedule


def mark_outputs(graph: nx.DiGraph, *names: str) -> None:
    """Make ``names`` final outputs of ``graph``."""
    for name in names:
        graph.graph["tensors"][name]["kind"] = "output"
        graph.graph["outputs"].append(name)


def build_random_graph(seed: int, n_ops: int | None = None, window: int | None = None) -> nx.DiGraph:
    """A random DAG: 1-3 graph inputs, operators reading 1-3 earlier tensors (long skips included),
    half of them with a weight (a few weights shared), 1-2 outputs each, some tensors of 0 bytes,
    and several final outputs (every unread tensor plus a few that are also read later)."""
    rng = random.Random(seed)
    n_ops = n_ops if n_ops is not None else rng.randint(5, 30)
    graph = new_graph(f"random{seed}", dtype="int8")
    available: list[str] = []
    weights: list[str] = []

    def size() -> int:
        return 0 if rng.random() < 0.04 else rng.randint(1, 96)

    for i in range(rng.randint(1, 3)):
        add_tensor(graph, f"in{i}", (size(),), kind="input")
        available.append(f"in{i}")
    for k in range(n_ops):
        pool = available if window is None else available[-window:]
        inputs = rng.sample(pool, rng.randint(1, min(3, len(pool))))
        if rng.random() < 0.5:
            add_tensor(graph, f"w{k}", (size() * 2,), kind="weight")
            weights.append(f"w{k}")
            inputs.append(f"w{k}")
        elif weights and rng.random() < 0.2:
            inputs.append(rng.choice(weights))  # a weight shared by several operators
        outputs = {f"t{k}_{j}": (size(),) for j in range(rng.choice([1, 1, 1, 2]))}
        add_operator(graph, f"op{k}", "op", inputs, outputs)
        available.extend(outputs)
    for name, record in graph.graph["tensors"].items():
        if record["producer"] is not None and (not record["consumers"] or rng.random() < 0.1):
            mark_outputs(graph, name)
    check_graph(graph)
    return graph


def check_invariants(
    graph: nx.DiGraph, schedule: Schedule, sizes: Mapping[str, int] | None = None, alignment: int = 1,
) -> None:
    """Assert everything a correct baseline schedule of ``graph`` must satisfy."""
    tensors = graph.graph["tensors"]
    data = {name: (sizes or {}).get(name, rec["nbytes"]) for name, rec in tensors.items()}
    onchip = {name: -(-n // alignment) * alignment for name, n in data.items()}
    final = {n for n, r in tensors.items() if r["producer"] is not None and r["kind"] == "output"}
    external = {n for n, r in tensors.items() if r["producer"] is None}
    step_of = {op: step for step, op in enumerate(schedule.order)}
    assert sorted(schedule.order) == sorted(graph.nodes)

    # The placement: the independent validator, on the schedule's own problem and offsets.
    assert schedule.offsets is not None
    report = validate(schedule.problem(), Solution(schedule.offsets))
    assert report.ok, str(report)
    assert set(schedule.offsets) == {r.id for r in schedule.residencies}
    assert all(off % alignment == 0 for off in schedule.offsets.values())

    # Residencies: one per stay, ids "<t>", "<t>#1", ..., disjoint in time, aligned sizes.
    stays: dict[str, list] = defaultdict(list)
    for r in schedule.residencies:
        assert r.size == onchip[r.tensor] > 0
        assert 0 <= r.start < r.end <= len(schedule.order)
        stays[r.tensor].append(r)
    for name, rs in stays.items():
        rs.sort(key=lambda r: r.start)
        assert [r.id for r in rs] == [name] + [f"{name}#{k}" for k in range(1, len(rs))]
        assert all(a.end <= b.start for a, b in zip(rs, rs[1:], strict=False))
        producer = tensors[name]["producer"]
        first_use = step_of[producer] if producer is not None else min(step_of[c] for c in tensors[name]["consumers"])
        assert rs[0].start == first_use

    # Every operator's inputs and outputs are on chip at its step.
    for step, op in enumerate(schedule.order):
        node = graph.nodes[op]
        for t in list(node["in_tensors"]) + list(node["out_tensors"]):
            if onchip[t]:
                assert any(r.start <= step < r.end for r in stays[t]), f"{t!r} not resident at step {step} ({op})"

    # Transfers: tied to a residency of the tensor at the right boundary, unpadded bytes.
    by_id = {r.id: r for r in schedule.residencies}
    filled = set()
    for tr in schedule.transfers:
        r = by_id[tr.residency]
        assert r.tensor == tr.tensor
        assert tr.nbytes == data[tr.tensor]
        if tr.to_chip:
            assert tr.step == r.start
            assert tr.residency not in filled
            filled.add(tr.residency)
        else:
            assert tr.step == r.end
    steps = [tr.step for tr in schedule.transfers]
    assert steps == sorted(steps), "transfers are listed in time order"
    # Each residency after a tensor's first is filled from DRAM; a first one is loaded iff external.
    for name, rs in stays.items():
        assert (rs[0].id in filled) == (name in external)
        assert all(r.id in filled for r in rs[1:])

    kinds: dict[str, Counter] = {k: Counter() for k in ("load", "store", "spill", "retrieve")}
    for tr in schedule.transfers:
        kinds[tr.kind][tr.tensor] += 1
    used_external = {n for n in external if tensors[n]["consumers"] and onchip[n]}
    assert kinds["load"] == Counter(dict.fromkeys(used_external, 1)), "every weight/input is loaded exactly once"
    assert kinds["store"] == Counter({n: 1 for n in final if onchip[n]}), "every output is stored exactly once"
    assert all(n not in final and n not in external for n in kinds["spill"])
    assert all(count == 1 for count in kinds["spill"].values()), "an activation is spilled at most once"
    # A retrieve reads a DRAM copy that exists: the tensor's load, spill or store came first.
    written: dict[str, int] = {}
    for tr in schedule.transfers:
        if tr.kind in ("load", "store", "spill"):
            written.setdefault(tr.tensor, tr.step)
        elif tr.kind == "retrieve":
            assert tr.tensor in written and written[tr.tensor] <= tr.step, f"retrieve of {tr.tensor!r} before a copy"
    assert all(tr.compulsory == (tr.kind in ("load", "store")) for tr in schedule.transfers)


@pytest.fixture(scope="session")
def random_graph() -> Callable[..., nx.DiGraph]:
    return build_random_graph


@pytest.fixture(scope="session")
def check_schedule() -> Callable[..., None]:
    return check_invariants


@pytest.fixture
def tiny_graph() -> nx.DiGraph:
    """x (10 B input) and w (100 B weight) -> fc -> y (10 B output)."""
    g = new_graph("tiny", dtype="int8")
    add_tensor(g, "x", (10,), kind="input")
    add_tensor(g, "w", (10, 10), kind="weight")
    add_operator(g, "fc", "linear", inputs=["x", "w"], outputs={"y": (10,)})
    mark_outputs(g, "y")
    return g


@pytest.fixture
def skip_chain() -> nx.DiGraph:
    """x (20 B) -> a -> y -> b -> z (20 B) -> c -> u; d reads the skip y and u. M_R = 30 (every op)."""
    g = new_graph("skip", dtype="int8")
    add_tensor(g, "x", (20,), kind="input")
    add_operator(g, "a", "relu", ["x"], {"y": (10,)})
    add_operator(g, "b", "conv", ["y"], {"z": (20,)})
    add_operator(g, "c", "conv", ["z"], {"u": (10,)})
    add_operator(g, "d", "add", ["y", "u"], {"out": (10,)})
    mark_outputs(g, "out")
    return g


@pytest.fixture
def fragmenting_graph() -> nx.DiGraph:
    """a, f, b (10 B each) land at 0, 10, 20; join reads a and b and writes c (20 B): M_R = 40.

    At budget 40, evicting f leaves two 10-byte holes, so c fits only after compaction.
    """
    g = new_graph("frag", dtype="int8")
    add_operator(g, "make_a", "const", [], {"a": (10,)})
    add_operator(g, "make_f", "const", [], {"f": (10,)})
    add_operator(g, "make_b", "const", [], {"b": (10,)})
    add_operator(g, "join", "concat", ["a", "b"], {"c": (20,)})
    add_operator(g, "use_f", "relu", ["f"], {"out": (10,)})
    mark_outputs(g, "c", "out")
    return g

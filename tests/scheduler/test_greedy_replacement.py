"""Greedy tensor replacement in the baseline: evict the one address window that costs the fewest bytes."""

from __future__ import annotations

import pytest

from allocator import Solution, validate
from frontend.graph import add_operator, add_tensor, new_graph
from frontend.synthetic import random_dag
from scheduler import Schedule, ScheduleError, min_capacity, no_spill_capacity
from scheduler.baseline import schedule
from scheduler.replacement import POLICIES, REPLACEMENTS


def events(s):
    return [(t.kind, t.tensor, t.step) for t in s.transfers]


def spans(s):
    return {r.id: (r.start, r.end, s.offsets[r.id]) for r in s.residencies}


def mark_output(graph, name):
    graph.graph["tensors"][name]["kind"] = "output"
    graph.graph["outputs"].append(name)


def far_big_near_small():
    """x -> a -> big (30 B, read last, by g); x -> b -> s (10 B, read by f); then a chain c .. g.

    At step 3 (operator d, making r of 20 B) the arena holds q [0, 10) (d's input), big
    [10, 40), s [40, 50) and 10 free bytes at [50, 60) (budget 60).
    """
    g = new_graph("far_big_near_small", dtype="int8")
    add_tensor(g, "x", (10,), kind="input")
    add_operator(g, "a", "relu", ["x"], {"big": (30,)})
    add_operator(g, "b", "relu", ["x"], {"s": (10,)})
    add_operator(g, "c", "relu", ["s"], {"q": (10,)})
    add_operator(g, "d", "relu", ["q"], {"r": (20,)})
    add_operator(g, "e", "relu", ["r"], {"u": (10,)})
    add_operator(g, "f", "add", ["s", "u"], {"v": (10,)})
    add_operator(g, "g", "add", ["big", "v"], {"out": (10,)})
    mark_output(g, "out")
    return g


def weight_or_activation(activation_is_output=False):
    """w (15 B weight, read at 0 and 3) and A (10 B, made at 0, read at 4) compete at step 2 (budget 55).

    Operator c makes q (20 B) while its input p sits at [35, 45): the window at 0 covers only w
    (one retrieve: 15 B), the window at 15 covers only A (a spill and a retrieve: 20 B, or just
    the retrieve, 10 B, when A is a final output whose first write is its compulsory store).
    """
    g = new_graph("weight_or_activation", dtype="int8")
    add_tensor(g, "w", (15,), kind="weight")
    add_tensor(g, "x", (10,), kind="input")
    add_operator(g, "a", "op", ["w", "x"], {"A": (10,)})
    add_operator(g, "b", "op", ["x"], {"p": (10,)})
    add_operator(g, "c", "op", ["p"], {"q": (20,)})
    add_operator(g, "d", "op", ["w", "q"], {"r": (10,)})
    add_operator(g, "e", "op", ["A", "r"], {"out": (10,)})
    mark_output(g, "out")
    if activation_is_output:
        mark_output(g, "A")
    return g


# -- exact schedules of hand-built graphs ----------------------------------------------------


def test_greedy_evicts_the_cheap_window_where_belady_evicts_the_furthest_tensor(check_schedule):
    g = far_big_near_small()
    assert min_capacity(g) == (50, "g") and no_spill_capacity(g) == 70

    belady = schedule(g, 60, replacement="belady")
    # Belady evicts big (next use 6, the furthest): a 30-byte spill and a 30-byte retrieve.
    assert events(belady) == [("load", "x", 0), ("spill", "big", 3), ("retrieve", "big", 6), ("store", "out", 7)]
    assert belady.noncompulsory_bytes == 60

    greedy = schedule(g, 60, replacement="greedy")
    assert greedy.method == "program+greedy"
    # Windows for r (20 B): at 10 it covers big (cost 60), at 40 it covers s (cost 20); 0 holds d's input.
    assert events(greedy) == [("load", "x", 0), ("spill", "s", 3), ("retrieve", "s", 5), ("store", "out", 7)]
    assert spans(greedy)["s"] == (1, 3, 40) and spans(greedy)["r"] == (3, 5, 40)
    assert spans(greedy)["s#1"] == (5, 6, 40) and spans(greedy)["big"] == (0, 7, 10)
    assert greedy.noncompulsory_bytes == 20 < belady.noncompulsory_bytes
    assert greedy.compulsory_bytes == belady.compulsory_bytes == 20
    assert greedy.stats.evictions == 1 and greedy.stats.compactions == 0
    check_schedule(g, greedy)


def test_a_copy_in_dram_makes_a_bigger_tensor_cheaper_to_evict(check_schedule):
    g = weight_or_activation()
    s = schedule(g, 55, replacement="greedy")
    # Step 2: w (15 B, already in DRAM) costs one retrieve, 15 < 20 for A's spill + retrieve.
    # Locally optimal only: w's return at step 3 leaves no room for r, so A is evicted after all.
    assert events(s) == [
        ("load", "w", 0), ("load", "x", 0), ("retrieve", "w", 3), ("spill", "A", 3),
        ("retrieve", "A", 4), ("store", "out", 5),
    ]
    assert spans(s)["q"] == (2, 4, 0) and spans(s)["w#1"] == (3, 4, 35) and spans(s)["r"] == (3, 5, 20)
    assert s.noncompulsory_bytes == 35 and s.stats.evictions == 2
    # Belady evicts A only (next use 4 > 3) and moves less here: greedy is not globally optimal.
    assert schedule(g, 55).noncompulsory_bytes == 20
    check_schedule(g, s)


def test_a_final_outputs_first_write_is_not_counted_as_an_eviction_cost(check_schedule):
    g = weight_or_activation(activation_is_output=True)
    s = schedule(g, 55, replacement="greedy")
    # A now costs only its retrieve (10 B < w's 15 B); its eviction write is its one compulsory store.
    assert events(s) == [
        ("load", "w", 0), ("load", "x", 0), ("store", "A", 2), ("retrieve", "A", 4), ("store", "out", 5),
    ]
    assert spans(s)["A"] == (0, 2, 25) and spans(s)["q"] == (2, 4, 15)
    assert s.noncompulsory_bytes == 10 and s.compulsory_bytes == 45
    check_schedule(g, s)


def test_equal_costs_prefer_fewer_evicted_bytes(check_schedule):
    g = new_graph("tie", dtype="int8")
    add_tensor(g, "w", (10,), kind="weight")
    add_tensor(g, "x", (10,), kind="input")
    add_operator(g, "a", "op", ["w", "x"], {"A": (5,)})
    add_operator(g, "b", "op", ["x"], {"p": (10,)})
    add_operator(g, "c", "op", ["p"], {"q": (15,)})
    add_operator(g, "d", "op", ["A", "q"], {"r": (5,)})
    add_operator(g, "e", "op", ["w", "r"], {"out": (5,)})
    mark_output(g, "out")
    # Step 2, q (15 B): the window at 0 covers w (a 10-byte retrieve, 10 on-chip bytes), the one at
    # 10 covers A (a 5-byte spill and retrieve, 5 on-chip bytes). Same cost: A goes, q lands at 10.
    s = schedule(g, 40, replacement="greedy")
    assert events(s) == [
        ("load", "w", 0), ("load", "x", 0), ("spill", "A", 2), ("retrieve", "A", 3), ("store", "out", 5),
    ]
    assert spans(s)["q"] == (2, 4, 10) and spans(s)["w"] == (0, 5, 0)
    # Belady evicts w instead (next use 4 > 3).
    assert events(schedule(g, 40)) == [
        ("load", "w", 0), ("load", "x", 0), ("retrieve", "w", 4), ("store", "out", 5),
    ]
    check_schedule(g, s)


def test_no_valid_window_falls_back_to_compaction_as_belady_does(fragmenting_graph, check_schedule):
    # At join, a [0, 10) and b [20, 30) are join's inputs: no 20-byte window avoids them.
    belady = schedule(fragmenting_graph, 40)
    greedy = schedule(fragmenting_graph, 40, replacement="greedy")
    assert greedy.stats.compactions == 1 and greedy.stats.evictions == 1
    assert events(greedy) == events(belady) == [
        ("spill", "f", 3), ("spill", "b", 3), ("retrieve", "b", 3),
        ("store", "c", 4), ("retrieve", "f", 4), ("store", "out", 5),
    ]
    assert spans(greedy) == spans(belady)
    check_schedule(fragmenting_graph, greedy)


def test_at_the_no_spill_budget_greedy_and_belady_agree():
    g = random_dag(25, seed=3, max_size=512)
    budget = no_spill_capacity(g)
    greedy = schedule(g, budget, replacement="greedy")
    belady = schedule(g, budget)
    assert greedy.noncompulsory_bytes == 0 and greedy.stats.evictions == 0
    assert events(greedy) == events(belady) and spans(greedy) == spans(belady)


# -- random graphs ---------------------------------------------------------------------------


def budgets(graph, count=6, **options):
    low, high = min_capacity(graph, **options)[0], no_spill_capacity(graph, **options)
    return sorted({low + (high - low) * k // (count - 1) for k in range(count)})


def check_retrieves_follow_writes(s: Schedule) -> None:
    written: set[str] = set()
    for tr in s.transfers:
        if tr.kind in ("load", "spill", "store"):
            written.add(tr.tensor)
        elif tr.kind == "retrieve":
            assert tr.tensor in written, f"retrieve of {tr.tensor!r} at step {tr.step} before any copy in DRAM"


@pytest.mark.parametrize("seed", range(12))
def test_greedy_schedules_of_random_dags_are_valid(seed, check_schedule):
    g = random_dag(20 + seed, seed=seed, max_size=256)
    produced = {t for t, rec in g.graph["tensors"].items() if rec["producer"] is not None}
    for budget in budgets(g):
        s = schedule(g, budget, replacement="greedy")
        assert s.method == "program+greedy" and s.capacity == budget
        assert sorted(s.order) == sorted(g.nodes)
        assert s.offsets is not None
        report = validate(s.problem(), Solution(s.offsets))
        assert report.ok, str(report)
        check_retrieves_follow_writes(s)
        assert {tr.tensor for tr in s.transfers if tr.kind == "spill"} <= produced
        check_schedule(g, s)


@pytest.mark.parametrize("seed", range(30))
def test_greedy_schedules_of_irregular_random_graphs_are_valid(seed, random_graph, check_schedule):
    # Several inputs and outputs, shared weights, 0-byte tensors, and an alignment on odd seeds.
    g = random_graph(seed)
    alignment = 1 if seed % 2 == 0 else 16
    for budget in budgets(g, alignment=alignment):
        s = schedule(g, budget, replacement="greedy", alignment=alignment)
        check_retrieves_follow_writes(s)
        check_schedule(g, s, alignment=alignment)


def test_greedy_with_a_custom_order_and_per_tensor_sizes(check_schedule):
    g = random_dag(15, seed=5, max_size=128)
    order = list(reversed(list(g.nodes)))
    with pytest.raises(ScheduleError):
        schedule(g, 10**6, order=order, replacement="greedy")  # not topological
    sizes = {t: max(1, rec["nbytes"] // 2) for t, rec in g.graph["tensors"].items()}
    for budget in budgets(g, sizes=sizes):
        s = schedule(g, budget, order=list(g.nodes), replacement="greedy", sizes=sizes)
        assert s.method == "custom+greedy"
        check_schedule(g, s, sizes=sizes)


# -- options and determinism -----------------------------------------------------------------


def test_greedy_is_a_listed_replacement():
    assert {"belady", "greedy", "none"} <= set(REPLACEMENTS) and REPLACEMENTS == tuple(POLICIES)


def test_unknown_replacement_names_every_valid_value(tiny_graph):
    valid = ", ".join(map(repr, REPLACEMENTS))
    with pytest.raises(ScheduleError, match=f"unknown replacement 'fifo-ish'; valid values: {valid}$"):
        schedule(tiny_graph, 120, replacement="fifo-ish")
    with pytest.raises(ScheduleError, match="unknown replacement 'Greedy'"):
        schedule(tiny_graph, 120, replacement="Greedy")


@pytest.mark.parametrize("seed", range(5))
def test_greedy_is_deterministic(seed):
    g = random_dag(30, seed=seed, max_size=512)
    budget = (min_capacity(g)[0] + no_spill_capacity(g)) // 2
    first = schedule(g, budget, replacement="greedy")
    second = schedule(random_dag(30, seed=seed, max_size=512), budget, replacement="greedy")
    assert first.transfers == second.transfers
    assert first.offsets == second.offsets
    assert first.residencies == second.residencies
    assert first.stats == second.stats

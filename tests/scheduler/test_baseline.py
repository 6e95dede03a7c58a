"""The COSMA section V-A baseline: program order, first-fit arena, Belady replacement."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontend.graph import add_operator, add_tensor, new_graph
from scheduler import CapacityError, ScheduleError, min_capacity, no_spill_capacity
from scheduler.baseline import schedule
from scheduler.order import program_order
from scheduler.schedule import bytes_by_kind, live_bytes_over_time, peak_address, peak_live_bytes


def events(s):
    return [(t.kind, t.tensor, t.step) for t in s.transfers]


def spans(s):
    return {r.id: (r.start, r.end, s.offsets[r.id]) for r in s.residencies}


# -- exact schedules of tiny graphs -----------------------------------------------------------


def test_tiny_graph_moves_only_compulsory_bytes(tiny_graph, check_schedule):
    s = schedule(tiny_graph, 120)
    assert s.method == "program+belady"
    assert s.order == ["fc"]
    assert events(s) == [("load", "x", 0), ("load", "w", 0), ("store", "y", 1)]
    assert spans(s) == {"x": (0, 1, 0), "w": (0, 1, 10), "y": (0, 1, 110)}
    assert s.compulsory_bytes == 120 and s.noncompulsory_bytes == 0
    check_schedule(tiny_graph, s)


def test_residencies_follow_the_half_open_step_convention(skip_chain, check_schedule):
    s = schedule(skip_chain, 1000)
    # x is read at 0 only; y is made at 0 and last read at 3; z reuses x's range once x dies, and
    # out (made at 3, stored when its residency ends) reuses z's.
    assert spans(s) == {
        "x": (0, 1, 0), "y": (0, 4, 20), "z": (1, 3, 0), "u": (2, 4, 30), "out": (3, 4, 0),
    }
    assert events(s) == [("load", "x", 0), ("store", "out", 4)]
    check_schedule(skip_chain, s)


def test_skip_tensor_is_spilled_and_retrieved_at_the_tightest_budget(skip_chain, check_schedule):
    assert min_capacity(skip_chain) == (30, "a")  # every operator needs 30; the first one is named
    s = schedule(skip_chain, 30)
    assert events(s) == [("load", "x", 0), ("spill", "y", 2), ("retrieve", "y", 3), ("store", "out", 4)]
    assert spans(s)["y"] == (0, 2, 20) and spans(s)["y#1"] == (3, 4, 0)
    assert s.noncompulsory_bytes == 20 and s.stats.evictions == 1
    check_schedule(skip_chain, s)


def test_min_capacity_counts_weights_inputs_and_outputs(tiny_graph):
    assert min_capacity(tiny_graph) == (120, "fc")
    assert min_capacity(tiny_graph, alignment=64) == (256, "fc")
    assert min_capacity(tiny_graph, sizes={"w": 7}) == (27, "fc")
    assert min_capacity(new_graph("empty")) == (0, "")


def test_budget_below_min_capacity_names_the_operator_and_the_budget(skip_chain):
    with pytest.raises(CapacityError) as info:
        schedule(skip_chain, 29)
    assert info.value.operator == "a" and info.value.min_capacity == 30
    assert "'a'" in str(info.value) and "30 bytes" in str(info.value)
    assert isinstance(info.value, ScheduleError) and isinstance(info.value, ValueError)


def test_fragmentation_is_resolved_by_compaction_at_exactly_min_capacity(fragmenting_graph, check_schedule):
    assert min_capacity(fragmenting_graph) == (40, "join")
    s = schedule(fragmenting_graph, 40)
    # f is evicted (furthest next use), leaving holes [10, 20) and [30, 40); c needs 20 bytes, so
    # b slides from 20 down to 10 through DRAM and c goes at 20.
    assert s.stats.compactions == 1
    assert spans(s)["b"] == (2, 3, 20) and spans(s)["b#1"] == (3, 4, 10)
    assert spans(s)["c"] == (3, 4, 20)
    assert events(s) == [
        ("spill", "f", 3), ("spill", "b", 3), ("retrieve", "b", 3),
        ("store", "c", 4), ("retrieve", "f", 4), ("store", "out", 5),
    ]
    check_schedule(fragmenting_graph, s)
    with pytest.raises(ScheduleError, match="step 3 .*'join'.*'c' needs 20 bytes but only 10 of 40"):
        schedule(fragmenting_graph, 40, replacement="none")


def test_fragmentation_while_placing_inputs_is_resolved_too(check_schedule):
    g = new_graph("frag_inputs", dtype="int8")
    add_operator(g, "make_a", "const", [], {"a": (10,)})
    add_operator(g, "make_f", "const", [], {"f": (15,)})
    add_operator(g, "make_b", "const", [], {"b": (10,)})
    add_tensor(g, "w", (20,), kind="weight")
    add_operator(g, "join", "conv", ["a", "b", "w"], {"c": (10,)})
    add_operator(g, "use_f", "relu", ["f"], {"out": (10,)})
    g.graph["tensors"]["c"]["kind"] = g.graph["tensors"]["out"]["kind"] = "output"
    assert min_capacity(g) == (50, "join")
    s = schedule(g, 50)
    assert s.stats.compactions == 1
    assert spans(s)["b#1"] == (3, 4, 10) and spans(s)["w"] == (3, 4, 20) and spans(s)["c"] == (3, 4, 40)
    assert ("load", "w", 3) in events(s)
    check_schedule(g, s)


def test_operator_tensors_filled_at_this_step_move_without_traffic(check_schedule):
    # a@0, e@10, d@20, f@30; d dies after step 3, so w is loaded into its hole at step 4. c (20 B)
    # needs room: evicting e and f leaves holes [10, 20) and [30, 40), so the arena compacts: a
    # stays at 0 and w, filled at this very step, is simply placed at 10 instead -- no traffic.
    g = new_graph("move", dtype="int8")
    add_operator(g, "mk_a", "const", [], {"a": (10,)})
    add_operator(g, "mk_e", "const", [], {"e": (10,)})
    add_operator(g, "mk_d", "const", [], {"d": (10,)})
    add_operator(g, "mk_f", "relu", ["d"], {"f": (10,)})
    add_tensor(g, "w", (10,), kind="weight")
    add_operator(g, "use", "conv", ["a", "w"], {"c": (20,)})
    add_operator(g, "use_ef", "add", ["e", "f"], {"out": (10,)})
    g.graph["tensors"]["c"]["kind"] = g.graph["tensors"]["out"]["kind"] = "output"
    assert min_capacity(g) == (40, "use")
    s = schedule(g, 40)
    assert s.stats.compactions == 1
    assert spans(s)["a"] == (0, 5, 0) and spans(s)["w"] == (4, 5, 10) and spans(s)["c"] == (4, 5, 20)
    assert [e for e in events(s) if e[2] == 4] == [("load", "w", 4), ("spill", "e", 4), ("spill", "f", 4)]
    check_schedule(g, s)


# -- replacement rules --------------------------------------------------------------------------


def test_belady_evicts_the_tensor_needed_furthest_in_the_future(check_schedule):
    g = new_graph("belady", dtype="int8")
    add_operator(g, "mk_p", "const", [], {"p": (10,)})
    add_operator(g, "mk_q", "const", [], {"q": (10,)})
    add_operator(g, "mk_r", "const", [], {"r": (10,)})
    add_operator(g, "use_q", "add", ["q", "r"], {"s": (5,)})
    add_operator(g, "use_p", "add", ["p", "s"], {"out": (5,)})
    g.graph["tensors"]["out"]["kind"] = "output"
    s = schedule(g, 25)
    assert [e for e in events(s) if e[0] != "store"] == [("spill", "p", 2), ("retrieve", "p", 4)]
    check_schedule(g, s)


@pytest.mark.parametrize(("sizes", "victim"), [({"p": 12, "q": 10}, "p"), ({"p": 10, "q": 12}, "q"),
                                               ({"p": 10, "q": 10}, "p")])
def test_belady_ties_evict_the_larger_then_by_name(sizes, victim, check_schedule):
    g = new_graph("ties", dtype="int8")
    add_operator(g, "mk_p", "const", [], {"p": (1,)})
    add_operator(g, "mk_q", "const", [], {"q": (1,)})
    add_operator(g, "mk_r", "const", [], {"r": (10,)})
    add_operator(g, "use", "add", ["p", "q"], {"out": (1,)})
    g.graph["tensors"]["out"]["kind"] = g.graph["tensors"]["r"]["kind"] = "output"
    s = schedule(g, 29, sizes=sizes)
    assert [e for e in events(s) if e[0] == "spill"] == [("spill", victim, 2)]
    check_schedule(g, s, sizes=sizes)


def test_an_output_evicted_before_its_last_use_is_stored_once_and_not_spilled(check_schedule):
    g = new_graph("early_out", dtype="int8")
    add_operator(g, "mk_o", "const", [], {"o": (10,)})
    add_operator(g, "mk_a", "const", [], {"a": (20,)})
    add_operator(g, "use_a", "relu", ["a"], {"b": (10,)})
    add_operator(g, "use_o", "add", ["o", "b"], {"out": (10,)})
    g.graph["tensors"]["o"]["kind"] = g.graph["tensors"]["out"]["kind"] = "output"
    s = schedule(g, 30)
    # The write at eviction is o's one compulsory store; its re-read is a retrieve.
    assert events(s) == [("store", "o", 2), ("retrieve", "o", 3), ("store", "out", 4)]
    assert s.compulsory_bytes == 20 and s.noncompulsory_bytes == 10
    check_schedule(g, s)


def test_an_evicted_weight_is_retrieved_not_spilled(check_schedule):
    g = new_graph("weight", dtype="int8")
    add_tensor(g, "x", (10,), kind="input")
    add_tensor(g, "w", (10,), kind="weight")
    add_operator(g, "op0", "conv", ["x", "w"], {"y": (10,)})
    add_operator(g, "op1", "conv", ["y"], {"z": (20,)})
    add_operator(g, "op2", "conv", ["z", "w"], {"out": (5,)})
    g.graph["tensors"]["out"]["kind"] = "output"
    s = schedule(g, 35)
    assert events(s) == [("load", "x", 0), ("load", "w", 0), ("retrieve", "w", 2), ("store", "out", 3)]
    check_schedule(g, s)


def test_an_activation_evicted_twice_is_spilled_once(check_schedule):
    g = new_graph("twice", dtype="int8")
    add_operator(g, "mk_a", "const", [], {"a": (10,)})
    add_operator(g, "mk_b", "const", [], {"b": (30,)})
    add_operator(g, "use_a1", "relu", ["a"], {"c": (10,)})
    add_operator(g, "mk_d", "const", [], {"d": (30,)})
    add_operator(g, "use_a2", "relu", ["a"], {"e": (10,)})
    for name in ("b", "c", "d", "e"):
        g.graph["tensors"][name]["kind"] = "output"
    s = schedule(g, 30)
    a_events = [e for e in events(s) if e[1] == "a"]
    assert a_events == [("spill", "a", 1), ("retrieve", "a", 2), ("retrieve", "a", 4)]
    assert [r.id for r in s.residencies if r.tensor == "a"] == ["a", "a#1", "a#2"]
    check_schedule(g, s)


def test_replacement_none_reports_step_operator_tensor_and_bytes(skip_chain):
    with pytest.raises(ScheduleError) as info:
        schedule(skip_chain, 30, replacement="none")
    message = str(info.value)
    assert "step 2" in message and "'c'" in message and "'u'" in message
    assert "needs 10 bytes but only 0 of 30 bytes are free" in message
    assert schedule(skip_chain, 40, replacement="none").noncompulsory_bytes == 0


# -- inputs, orders and options -----------------------------------------------------------------


def test_sizes_override_nbytes_and_alignment_pads_residencies_not_transfers(tiny_graph, check_schedule):
    sizes = {"x": 3, "w": 17, "y": 3}
    s = schedule(tiny_graph, 1024, sizes=sizes, alignment=16)
    assert {r.tensor: r.size for r in s.residencies} == {"x": 16, "w": 32, "y": 16}
    assert spans(s) == {"x": (0, 1, 0), "w": (0, 1, 16), "y": (0, 1, 48)}
    assert [t.nbytes for t in s.transfers] == [3, 17, 3]
    assert s.alignment == 16
    check_schedule(tiny_graph, s, sizes=sizes, alignment=16)


def test_zero_byte_tensors_take_no_residency(tiny_graph, check_schedule):
    s = schedule(tiny_graph, 20, sizes={"w": 0})
    assert {r.tensor for r in s.residencies} == {"x", "y"}
    assert events(s) == [("load", "x", 0), ("store", "y", 1)]
    check_schedule(tiny_graph, s, sizes={"w": 0})


def test_explicit_topological_order_is_followed(check_schedule):
    g = new_graph("branches", dtype="int8")
    add_tensor(g, "x", (8,), kind="input")
    add_operator(g, "left", "relu", ["x"], {"l": (8,)})
    add_operator(g, "right", "relu", ["x"], {"r": (8,)})
    add_operator(g, "join", "add", ["l", "r"], {"out": (8,)})
    g.graph["tensors"]["out"]["kind"] = "output"
    assert program_order(g) == ["left", "right", "join"]
    s = schedule(g, 100, order=["right", "left", "join"])
    assert s.order == ["right", "left", "join"] and s.method == "custom+belady"
    assert spans(s)["r"][0] == 0 and spans(s)["l"][0] == 1
    check_schedule(g, s)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"order": "mpmf"}, "unknown order 'mpmf'; valid values: 'program'"),
        ({"order": ["d", "c", "b", "a"]}, "operator 'd' at step 0 reads tensor 'y' before its producer 'a'"),
        ({"order": ("a", "c", "b", "d")}, r"'c' at step 1 reads tensor 'z' before its producer 'b' runs \(step 2\)"),
        ({"order": ["a", "b", "c"]}, "leaves out 1 operator.*'d'"),
        ({"order": ["a", "a", "b", "c", "d"]}, "operator 'a' twice"),
        ({"order": ["a", "b", "c", "d", "zz"]}, "'zz', which is not an operator"),
        ({"replacement": "fifo-ish"}, "unknown replacement 'fifo-ish'; valid values: 'belady', 'greedy'"),
        ({"alignment": 0}, "alignment must be a positive integer"),
        ({"sizes": {"nope": 3}}, "sizes names tensor 'nope'"),
        ({"sizes": {"y": -1}}, r"sizes\['y'\] = -1"),
    ],
)
def test_bad_options_raise_a_schedule_error_naming_the_culprit(skip_chain, kwargs, match):
    with pytest.raises(ScheduleError, match=match):
        schedule(skip_chain, 100, **kwargs)


def test_capacity_must_be_a_positive_integer(skip_chain):
    for bad in (0, -5, 10.5, True):
        with pytest.raises(ScheduleError, match="capacity_bytes must be a positive integer"):
            schedule(skip_chain, bad)


def test_graph_without_operators_gives_an_empty_schedule():
    s = schedule(new_graph("empty"), 1)
    assert s.order == [] and s.residencies == [] and s.transfers == [] and s.offsets == {}


# -- helpers for the simulator and plots ----------------------------------------------------------


def test_live_bytes_and_peaks(skip_chain):
    s = schedule(skip_chain, 1000)
    assert live_bytes_over_time(s) == [30, 30, 40, 30]
    assert peak_live_bytes(s) == 40 and peak_address(s) == 40
    assert bytes_by_kind(s) == {"load": 20, "store": 10, "spill": 0, "retrieve": 0}
    assert s.stats.peak_live_bytes == 40 and s.stats.peak_address == 40


def test_no_spill_capacity_is_the_unbounded_peak_address(skip_chain):
    assert no_spill_capacity(skip_chain) == 40
    assert schedule(skip_chain, 40).noncompulsory_bytes == 0
    tighter = schedule(skip_chain, 39)
    assert tighter.stats.evictions + tighter.stats.compactions > 0


# -- properties over random DAGs --------------------------------------------------------------------


def per_pe_sizes(graph, n_pe=16):
    return {name: -(-rec["nbytes"] // n_pe) for name, rec in graph.graph["tensors"].items()}


@given(
    seed=st.integers(0, 10**6),
    fraction=st.floats(0, 1),
    alignment=st.sampled_from([1, 4, 16]),
    per_pe=st.booleans(),
)
def test_random_dags_schedule_correctly_between_min_and_no_spill_capacity(
    random_graph, check_schedule, seed, fraction, alignment, per_pe,
):
    graph = random_graph(seed)
    sizes = per_pe_sizes(graph) if per_pe else None
    low = min_capacity(graph, sizes, alignment)[0]
    high = no_spill_capacity(graph, sizes=sizes, alignment=alignment)
    assert low <= high
    capacity = max(1, low + int(fraction * (high - low)))
    s = schedule(graph, capacity, sizes=sizes, alignment=alignment)
    check_schedule(graph, s, sizes=sizes, alignment=alignment)
    if capacity == high:
        assert s.noncompulsory_bytes == 0


@pytest.mark.parametrize("seed", range(60))
def test_random_dags_at_the_extreme_budgets(random_graph, check_schedule, seed):
    graph = random_graph(seed)
    low = min_capacity(graph)[0]
    for capacity in (max(low, 1), no_spill_capacity(graph), max(1, sum(r["nbytes"] for r in
                                                                      graph.graph["tensors"].values()))):
        s = schedule(graph, capacity)
        check_schedule(graph, s)
        if capacity >= no_spill_capacity(graph):
            assert s.noncompulsory_bytes == 0 and s.stats.evictions == 0


@pytest.mark.parametrize("seed", range(20))
def test_same_input_gives_the_same_schedule(random_graph, seed):
    graph = random_graph(seed)
    low = max(1, min_capacity(graph)[0])
    assert schedule(graph, low) == schedule(random_graph(seed), low)


def test_chain_with_big_intermediates_has_noncompulsory_traffic_at_min_capacity(check_schedule):
    # A residual chain: every block's input is re-read two steps later, and the block makes a
    # bigger intermediate, so the skip tensor must leave the chip at M_R.
    g = new_graph("chain", dtype="int8")
    add_tensor(g, "x0", (16,), kind="input")
    for i in range(6):
        add_operator(g, f"expand{i}", "conv", [f"x{i}"], {f"h{i}": (64,)})
        add_operator(g, f"project{i}", "conv", [f"h{i}"], {f"p{i}": (16,)})
        add_operator(g, f"add{i}", "add", [f"x{i}", f"p{i}"], {f"x{i + 1}": (16,)})
    g.graph["tensors"]["x6"]["kind"] = "output"
    low = min_capacity(g)[0]
    s = schedule(g, low)
    check_schedule(g, s)
    assert low == 80 and s.noncompulsory_bytes > 0
    assert schedule(g, no_spill_capacity(g)).noncompulsory_bytes == 0


# -- work per operator -------------------------------------------------------------------------------


def densenet_like(n_ops=1000, seed=0):
    """~1,000 operators and ~3,000 tensors with dense skip connections inside blocks of 30."""
    rng = random.Random(seed)
    g = new_graph("dense", dtype="int8")
    add_tensor(g, "x", (3 * 224 * 224,), kind="input")
    block: list[str] = ["x"]
    for k in range(n_ops):
        if k % 30 == 0 and k:
            block = block[-1:]
        inputs = rng.sample(block, min(len(block), rng.randint(1, 4)))
        add_tensor(g, f"w{k}", (rng.randint(1_000, 40_000),), kind="weight")
        outputs = {f"t{k}": (rng.randint(10_000, 200_000),), f"s{k}": (rng.randint(100, 1_000),)}
        add_operator(g, f"op{k}", "conv", inputs + [f"w{k}"], outputs)
        block.append(f"t{k}")
    last = g.graph["tensors"][block[-1]]
    last["kind"] = "output"
    return g


SCHEDULER_DIR = str(Path(schedule.__code__.co_filename).resolve().parent)


def lines_run_by_the_scheduler(graph, capacity):
    """The schedule, and how many lines of the ``scheduler`` package's Python ran to make it.

    Counted with ``sys.settrace``: deterministic, unlike seconds, and it sees every loop
    iteration (a scan over the resident tensors costs its length, not one call). The tracer
    that was active before (coverage, a debugger) is put back afterwards.
    """
    count = 0

    def line(frame, event, arg):
        nonlocal count
        count += event == "line"
        return line

    def call(frame, event, arg):
        return line if frame.f_code.co_filename.startswith(SCHEDULER_DIR) else None

    previous = sys.gettrace()
    sys.settrace(call)
    try:
        result = schedule(graph, capacity)
    finally:
        sys.settrace(previous)
    return result, count


def test_work_per_operator_does_not_grow_with_the_graph(check_schedule):
    # The arena's work per step is bounded by what is resident (here: a block of 30 operators),
    # so the lines run grow linearly with the graph: measured 324 per operator at 250, 1,000 and
    # 2,000 operators; the limit below is twice that. A scan over every tensor or every earlier
    # step per placement would make the work per operator grow with the graph (16x the work for
    # 4x the operators). The wall time of this schedule (about 0.3 s for 1,000 operators on a
    # quiet machine) is for ``accelsim bench``, not for a test.
    small, large = densenet_like(250), densenet_like(1000)
    assert len(large) == 1000 and len(large.graph["tensors"]) >= 3000
    s_small, work_small = lines_run_by_the_scheduler(small, min_capacity(small)[0])
    s_large, work_large = lines_run_by_the_scheduler(large, min_capacity(large)[0])
    check_schedule(large, s_large)
    assert s_small.noncompulsory_bytes > 0 and s_large.stats.evictions > 0
    assert work_small >= 250, "the tracer must see the scheduler run"
    assert work_large / 1000 <= 650, f"{work_large / 1000:.0f} lines per operator (measured: 324)"
    growth = work_large / work_small
    assert growth <= 1.25 * 1000 / 250, f"4x the operators took {growth:.1f}x the lines"

"""COSMA's models on tiny graphs with hand-checked optima, one constraint family at a time, and
against the baselines and brute force on random graphs.

No assertion here depends on the machine's speed. Every call gets ``PATIENT``: no deterministic
budget, and a wall-clock limit far above what its model needs, so an asserted optimum cannot turn
into "feasible" on a busy machine, nor because a default budget was retuned. Where a test needs the solver to stop
early, the ``cp_sat`` fixture caps each solve in CP-SAT's deterministic time, which stops it at
the same point on every machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import networkx as nx
import pytest
from ortools.sat.python import cp_model

import scheduler
from frontend.graph import add_operator, add_tensor, new_graph
from frontend.synthetic import nas_cells, random_dag
from scheduler import CosmaOptions, make_schedule
from scheduler.check import check_schedule as independent_check
from scheduler.cosma import cosma, cosma_dnc, footprint, min_peak

#: Options of every solver call in this file: the largest model here is proven in about 5 s on a
#: quiet machine (``test_the_core_switch_keeps_the_answer``), so a 600 s limit never ends a search.
PATIENT = CosmaOptions(deterministic_time=None, time_limit=600.0)


@dataclass
class SolveLog:
    """The CP-SAT solves a test ran: (core search?, deterministic-time limit, verdict) each."""

    cap: float = math.inf  #: deterministic-time limit imposed on every solve (inf: none)
    solves: list[tuple[bool, float, str]] = field(default_factory=list)


@pytest.fixture
def cp_sat(monkeypatch: pytest.MonkeyPatch) -> SolveLog:
    """Record every CP-SAT solve the schedulers run, and cap each at ``cap`` deterministic time.

    The schedulers build a fresh ``cp_model.CpSolver`` per solve; this swaps in a subclass that
    lowers ``max_deterministic_time`` to ``cap`` before solving and logs what happened. Nothing
    else about the solve changes.
    """
    log = SolveLog()

    class Recording(cp_model.CpSolver):
        def solve(self, model, *args, **kwargs):
            params = self.parameters
            params.max_deterministic_time = min(params.max_deterministic_time, log.cap)
            code = super().solve(model, *args, **kwargs)
            log.solves.append((params.optimize_with_core, params.max_deterministic_time, self.status_name(code)))
            return code

    monkeypatch.setattr(cp_model, "CpSolver", Recording)
    return log


def mark_outputs(graph: nx.DiGraph, *names: str) -> None:
    for name in names:
        graph.graph["tensors"][name]["kind"] = "output"
        graph.graph["outputs"].append(name)


def _ok(graph: nx.DiGraph, s: scheduler.Schedule, sizes=None) -> None:
    """The independent checker finds nothing and the reported objective is the schedule's traffic."""
    assert independent_check(graph, s, sizes) == []
    if s.status in ("optimal", "feasible"):
        assert s.stats.objective == s.noncompulsory_bytes
        assert s.stats.bound <= s.stats.objective


def _extra(s: scheduler.Schedule) -> list[tuple[str, str, int]]:
    return [(t.kind, t.tensor, t.step) for t in s.transfers if not t.compulsory]


@pytest.fixture
def skip_spill() -> nx.DiGraph:
    """The skip ``s`` cannot stay while ``c`` runs: u (10) + v (20) + s (10) > M_R = 30."""
    g = new_graph("skip", dtype="int8")
    add_tensor(g, "x", (10,), kind="input")
    add_operator(g, "a", "relu", ["x"], {"s": (10,)})
    add_operator(g, "b", "relu", ["s"], {"u": (10,)})
    add_operator(g, "c", "relu", ["u"], {"v": (20,)})
    add_operator(g, "d", "relu", ["v"], {"w": (10,)})
    add_operator(g, "e", "add", ["w", "s"], {"y": (10,)})
    mark_outputs(g, "y")
    return g


def test_spill_and_retrieve_of_a_skip_connection(skip_spill):
    # (1)-(4): spilled when it must go (step 2), retrieved where it is read (step 4), once each.
    s = cosma(skip_spill, 30, options=PATIENT)
    _ok(skip_spill, s)
    assert s.status == "optimal" and s.noncompulsory_bytes == 20
    assert _extra(s) == [("spill", "s", 2), ("retrieve", "s", 4)]
    assert cosma(skip_spill, 40, options=PATIENT).noncompulsory_bytes == 0


def test_one_spill_serves_every_later_retrieval():
    # (4) and (8): s is read at steps 1, 4 and 7 and has no room at steps 2 and 5 (20 + 20 + 10 > 40).
    g = new_graph("thrice", dtype="int8")
    add_tensor(g, "x", (10,), kind="input")
    add_operator(g, "a", "relu", ["x"], {"s": (10,)})
    add_operator(g, "b", "relu", ["s"], {"u": (20,)})
    add_operator(g, "c", "relu", ["u"], {"u2": (20,)})
    add_operator(g, "d", "relu", ["u2"], {"v": (10,)})
    add_operator(g, "e", "add", ["v", "s"], {"w": (20,)})
    add_operator(g, "f", "relu", ["w"], {"w2": (20,)})
    add_operator(g, "g", "relu", ["w2"], {"p": (10,)})
    add_operator(g, "h", "add", ["p", "s"], {"y": (10,)})
    mark_outputs(g, "y")
    assert scheduler.min_capacity(g)[0] == 40
    s = cosma(g, 40, options=PATIENT)
    _ok(g, s)
    assert s.status == "optimal" and s.noncompulsory_bytes == 30
    assert _extra(s) == [("spill", "s", 2), ("retrieve", "s", 4), ("retrieve", "s", 7)]
    assert cosma(g, 50, options=PATIENT).noncompulsory_bytes == 0


def test_weights_are_fetched_again_not_spilled():
    # A weight read twice with no room in between: its second fetch is a retrieve (non-compulsory),
    # it is never written back, and its first fetch is the compulsory load.
    g = new_graph("shared-weight", dtype="int8")
    add_tensor(g, "x", (10,), kind="input")
    add_tensor(g, "w", (10,), kind="weight")
    add_operator(g, "a", "linear", ["x", "w"], {"h": (10,)})
    add_operator(g, "b", "relu", ["h"], {"u": (30,)})
    add_operator(g, "c", "relu", ["u"], {"v": (10,)})
    add_operator(g, "d", "linear", ["v", "w"], {"y": (10,)})
    mark_outputs(g, "y")
    assert scheduler.min_capacity(g)[0] == 40
    s = cosma(g, 50, options=PATIENT)  # at b: h + u = 40 and w (10) fits beside them; at 40 it cannot stay
    assert s.noncompulsory_bytes == 0
    s = cosma(g, 40, options=PATIENT)
    _ok(g, s)
    assert s.noncompulsory_bytes == 10
    assert [(t.kind, t.tensor) for t in s.transfers if t.tensor == "w"] == [("load", "w"), ("retrieve", "w")]


def test_a_final_output_spilled_costs_only_its_retrieval():
    # A final output also read later: writing it out is its compulsory store.
    g = new_graph("output-read-later", dtype="int8")
    add_tensor(g, "x", (10,), kind="input")
    add_operator(g, "a", "relu", ["x"], {"o": (10,)})
    add_operator(g, "b", "relu", ["o"], {"u": (20,)})
    add_operator(g, "c", "relu", ["u"], {"v": (20,)})
    add_operator(g, "d", "add", ["v", "o"], {"y": (10,)})
    mark_outputs(g, "o", "y")
    s = cosma(g, 40, options=PATIENT)  # at c: u + v = 40 leaves no room for o
    _ok(g, s)
    assert s.noncompulsory_bytes == 10
    assert [(t.kind, t.tensor) for t in s.transfers if t.tensor == "o"] == [("store", "o"), ("retrieve", "o")]


def test_addresses_avoid_the_fragmentation_first_fit_pays_for():
    # (9)-(11): at c, B (10) and C (20) fill the 30-byte budget exactly, so B must sit at an
    # edge. First fit put x at 0, A at 5 and B at 15 and has to move B; the model places B well.
    g = new_graph("fragment", dtype="int8")
    add_tensor(g, "x", (5,), kind="input")
    add_operator(g, "a", "relu", ["x"], {"A": (10,)})
    add_operator(g, "b", "relu", ["A"], {"B": (10,)})
    add_operator(g, "c", "relu", ["B"], {"C": (20,)})
    add_operator(g, "d", "relu", ["C"], {"y": (10,)})
    mark_outputs(g, "y")
    baseline = scheduler.baseline.schedule(g, 30)
    assert baseline.noncompulsory_bytes > 0
    for s in (cosma(g, 30, options=PATIENT), cosma(g, 30, order="program", options=PATIENT)):
        _ok(g, s)
        assert s.status == "optimal" and s.noncompulsory_bytes == 0
        assert s.offsets is not None and s.offsets["B"] in (0, 20)


@pytest.fixture
def two_branches() -> nx.DiGraph:
    """Branch a -> b is big (100), branch c -> d medium (50); running a branch to its end first wins."""
    g = new_graph("fork", dtype="int8")
    add_tensor(g, "x", (1,), kind="input")
    add_operator(g, "a", "relu", ["x"], {"a1": (100,)})
    add_operator(g, "c", "relu", ["x"], {"c1": (50,)})
    add_operator(g, "b", "relu", ["a1"], {"b1": (1,)})
    add_operator(g, "d", "relu", ["c1"], {"d1": (1,)})
    add_operator(g, "join", "add", ["b1", "d1"], {"y": (1,)})
    mark_outputs(g, "y")
    return g


def test_the_joint_model_reorders_where_a_fixed_order_must_spill(two_branches):
    # (5)-(7) and the order: program order holds a1 and c1 together (151 bytes at c).
    g = two_branches
    assert scheduler.min_capacity(g)[0] == 101
    fixed = cosma(g, 120, order="program", options=PATIENT)
    joint = cosma(g, 120, options=PATIENT)
    _ok(g, fixed)
    _ok(g, joint)
    # c1 is made at step 1 while a1 waits for b: a1 must leave (spill) and come back (retrieve)...
    # ... and at b, a1 + c1 + b1 = 151 again, so c1 leaves and comes back too.
    assert fixed.noncompulsory_bytes == 300
    assert _extra(fixed) == [("spill", "a1", 1), ("retrieve", "a1", 2), ("spill", "c1", 2), ("retrieve", "c1", 3)]
    assert joint.noncompulsory_bytes == 0 and joint.order.index("b") < joint.order.index("c")


def test_min_peak_reorders_the_branches(two_branches):
    best = min_peak(two_branches, options=PATIENT)
    assert footprint(two_branches) == 151
    assert (best.peak, best.status, best.bound) == (102, "optimal", 102)
    assert footprint(two_branches, best.order) == 102


@pytest.mark.parametrize("seed", range(12))
def test_min_peak_matches_brute_force(seed, random_graph):
    g = random_graph(seed, n_ops=7)
    orders = list(nx.all_topological_sorts(g))
    brute = min(footprint(g, list(o)) for o in orders)
    best = min_peak(g, options=PATIENT)
    assert best.status == "optimal" and best.peak == brute
    scheduler.order.resolve_order(g, best.order)


@pytest.mark.parametrize("seed", range(16))
def test_cosma_beats_or_ties_every_baseline(seed, random_graph):
    g = random_graph(seed, n_ops=12)  # small enough for CP-SAT to prove every optimum in well under a second
    mr = scheduler.min_capacity(g)[0]
    top = scheduler.no_spill_capacity(g)
    for budget in sorted({mr, (mr + top) // 2, top}):
        joint = cosma(g, budget, options=PATIENT)
        fixed = cosma(g, budget, order="program", options=PATIENT)
        _ok(g, joint)
        _ok(g, fixed)
        assert joint.status == fixed.status == "optimal"
        assert joint.noncompulsory_bytes <= fixed.noncompulsory_bytes
        for replacement in ("belady", "greedy"):
            base = scheduler.baseline.schedule(g, budget, "program", replacement)
            assert fixed.noncompulsory_bytes <= base.noncompulsory_bytes
        if budget == top:
            assert fixed.noncompulsory_bytes == 0


@pytest.mark.parametrize("seed", range(6))
def test_dominance_rules_keep_the_optimum(seed, random_graph):
    g = random_graph(seed + 100, n_ops=10)
    budget = scheduler.min_capacity(g)[0]
    plain = cosma(g, budget, options=replace(PATIENT, dominance=False, capacity_cut=False, hint=False))
    assert plain.status == "optimal"
    _ok(g, plain)
    assert cosma(g, budget, options=PATIENT).noncompulsory_bytes == plain.noncompulsory_bytes


def test_joint_optimum_equals_the_best_fixed_order_on_small_graphs():
    # Brute force over every order with cosma-fs: the joint model must find the best of them.
    for seed in range(4):
        g = random_dag(6, seed=seed)
        budget = scheduler.min_capacity(g)[0]
        best = min(cosma(g, budget, order=list(o), options=PATIENT).noncompulsory_bytes
                   for o in nx.all_topological_sorts(g))
        assert cosma(g, budget, options=PATIENT).noncompulsory_bytes == best


def test_alignment_and_sizes_are_honoured(random_graph):
    g = random_graph(7)
    sizes = {name: rec["nbytes"] * 3 for name, rec in g.graph["tensors"].items()}
    budget = scheduler.min_capacity(g, sizes, 16)[0]
    s = cosma(g, budget, sizes=sizes, alignment=16, options=PATIENT)
    _ok(g, s, sizes)
    assert all(offset % 16 == 0 for offset in s.offsets.values())


def test_divide_and_conquer_gives_valid_schedules():
    # 18 operators cut into parts of at most 6: each part is proven optimal given the earlier
    # ones, which costs more than the proven joint optimum of the whole graph (measured: 11,772 B
    # against 10,776 B), never less; with one part the two are the same model.
    g = random_dag(18, seed=0)
    budget = scheduler.min_capacity(g)[0]
    parts = scheduler.cosma.break_nodes(g, 6)
    assert parts and all(p in g for p in parts)
    dnc = cosma_dnc(g, budget, part_size=6, options=PATIENT)
    _ok(g, dnc)
    assert dnc.status == "optimal" and dnc.stats.parts == len(parts) + 1
    whole = cosma(g, budget, options=PATIENT)
    _ok(g, whole)
    assert whole.status == "optimal" and whole.noncompulsory_bytes <= dnc.noncompulsory_bytes
    one_part = cosma_dnc(g, budget, part_size=g.number_of_nodes(), options=PATIENT)
    assert one_part.stats.parts == 1 and one_part.status == "optimal"
    assert one_part.noncompulsory_bytes == whole.noncompulsory_bytes


def test_divide_and_conquer_with_explicit_breaks(skip_spill):
    s = cosma_dnc(skip_spill, 30, breaks=["b"], options=PATIENT)
    _ok(skip_spill, s)
    assert s.noncompulsory_bytes == 20 and s.stats.parts == 2
    with pytest.raises(scheduler.ScheduleError, match="'nope' is not an operator"):
        cosma_dnc(skip_spill, 30, breaks=["nope"])


def test_a_search_stopped_early_keeps_the_best_schedule_it_has(cp_sat):
    # nas_cells(2, 2) at M_R: the best baseline moves 3,584 B, the fixed-order model for its
    # order 2,560 B, the joint model 1,024 B. CP-SAT is stopped by deterministic time, so what
    # it has found when it stops is the same on every machine.
    g = nas_cells(cells=2, nodes=2, seed=2, size=256)
    budget = scheduler.min_capacity(g)[0]
    baselines = {r: scheduler.baseline.schedule(g, budget, "program", r) for r in ("belady", "greedy")}
    best_baseline = min(baselines.values(), key=lambda b: b.noncompulsory_bytes)
    fixed = cosma(g, budget, order=best_baseline.order, options=PATIENT)
    joint = cosma(g, budget, options=PATIENT)
    assert fixed.status == joint.status == "optimal"

    cp_sat.cap, cp_sat.solves = 0.0, []  # no solve finds anything: the best baseline is kept, and the result says so
    s = cosma(g, budget, options=PATIENT)
    assert independent_check(g, s) == []
    assert [verdict for *_, verdict in cp_sat.solves] == ["UNKNOWN"] * len(cp_sat.solves)
    assert s.status == "timeout" and f"{best_baseline.method} kept" in s.method
    assert s.noncompulsory_bytes == best_baseline.noncompulsory_bytes
    assert 0 <= s.stats.bound <= joint.noncompulsory_bytes

    cp_sat.cap, cp_sat.solves = 0.01, []  # enough for the warm start's model only
    s = cosma(g, budget, options=PATIENT)
    _ok(g, s)
    assert cp_sat.solves[0][2] == "OPTIMAL" and "OPTIMAL" not in [v for *_, v in cp_sat.solves[1:]]
    assert s.status == "feasible" and s.method == "cosma"
    assert s.noncompulsory_bytes == fixed.noncompulsory_bytes
    assert joint.noncompulsory_bytes < fixed.noncompulsory_bytes < best_baseline.noncompulsory_bytes
    assert s.stats.bound <= joint.noncompulsory_bytes


def test_same_input_same_answer(random_graph):
    g = random_graph(3)
    budget = scheduler.min_capacity(g)[0]
    a, b = cosma(g, budget, options=PATIENT), cosma(g, budget, options=PATIENT)
    assert (a.order, a.offsets, a.transfers) == (b.order, b.offsets, b.transfers)


def test_errors_name_the_problem(skip_spill):
    with pytest.raises(scheduler.CapacityError, match="below M_R = 30"):
        cosma(skip_spill, 29)
    with pytest.raises(scheduler.ScheduleError, match="unknown scheduler 'cosmo'"):
        make_schedule(skip_spill, 30, "cosmo")
    with pytest.raises(scheduler.ScheduleError, match="budget 'MQ'"):
        scheduler.methods.resolve_budget(skip_spill, "MQ")
    with pytest.raises(scheduler.ScheduleError, match="not topological"):
        cosma(skip_spill, 30, order=["b", "a", "c", "d", "e"])


def test_budgets_are_ordered(two_branches):
    b = scheduler.budgets(two_branches, options=PATIENT)
    assert b == {"MR": 101, "MH": 101, "MP": 102}
    g = random_dag(20, seed=5)
    b = scheduler.budgets(g, options=PATIENT)
    assert b["MR"] <= b["MH"] <= b["MP"] and b["MP"] == min_peak(g, options=PATIENT).peak


@pytest.mark.parametrize("method", scheduler.SCHEDULERS)
def test_every_scheduler_by_name(method, skip_spill):
    for replacement in ("belady", "greedy"):
        s = make_schedule(skip_spill, 30, method, replacement, options=PATIENT)
        assert independent_check(skip_spill, s) == []
        assert s.noncompulsory_bytes >= 20  # the optimum
        if method.startswith("cosma"):
            assert s.status == "optimal" and s.noncompulsory_bytes == 20


def test_brute_force_orders_of_the_fork_agree(two_branches):
    # The fork's orders are the C(4, 2) = 6 interleavings of the chains a -> b and c -> d, then
    # join. Budget 120 holds a1 (100) or c1 (50) with x and the 1-byte tensors, never both, so:
    # finishing one branch first moves nothing; otherwise each time a1 or c1 must make way for
    # the other it is spilled and retrieved (2 x 100 B or 2 x 50 B).
    costs = {tuple(o): cosma(two_branches, 120, order=list(o), options=PATIENT).noncompulsory_bytes
             for o in nx.all_topological_sorts(two_branches)}
    assert costs == {
        ("a", "b", "c", "d", "join"): 0,
        ("c", "d", "a", "b", "join"): 0,
        ("a", "c", "b", "d", "join"): 300,  # a1 out for c, then c1 out for b
        ("a", "c", "d", "b", "join"): 200,  # a1 out for c and d
        ("c", "a", "b", "d", "join"): 100,  # c1 out for a and b
        ("c", "a", "d", "b", "join"): 300,  # c1 out for a, then a1 out for d
    }
    joint = cosma(two_branches, 120, options=PATIENT)
    assert joint.status == "optimal" and joint.noncompulsory_bytes == min(costs.values())
    assert costs[tuple(joint.order)] == joint.noncompulsory_bytes


def test_the_core_switch_keeps_the_answer(cp_sat):
    # ``core_after`` is in CP-SAT's deterministic time. On this graph (measured with CP-SAT 9.15)
    # a first phase of 0 or 0.02 units finds nothing, so the ordinary search must go on;
    # after 0.05 it hands a solution to the core-based search; by 0.1 it has proven the optimum
    # itself. Every path must end at the same proven optimum.
    g = nas_cells(cells=2, nodes=2, seed=2, size=256)
    budget = scheduler.min_capacity(g)[0]
    reference = cosma(g, budget, options=replace(PATIENT, core_after=None))
    assert reference.status == "optimal" and all(cap == math.inf for _, cap, _ in cp_sat.solves)
    paths = set()
    for core_after in (0.0, 0.02, 0.05, 0.1):
        cp_sat.solves = []
        s = cosma(g, budget, options=replace(PATIENT, core_after=core_after, warm_start=False))
        _ok(g, s)
        assert s.status == "optimal" and s.noncompulsory_bytes == reference.noncompulsory_bytes
        (first_core, first_cap, first), *rest = cp_sat.solves
        assert (first_core, first_cap) == (False, core_after), "the first phase ends at core_after deterministic time"
        if first == "OPTIMAL":
            assert rest == []
        else:
            # nothing found: ordinary search again; a solution: core-based search from it
            assert [(core, cap) for core, cap, _ in rest] == [(first == "FEASIBLE", math.inf)]
        paths.add(first)
    assert paths == {"UNKNOWN", "FEASIBLE", "OPTIMAL"}, f"retune the core_after values: {paths} only"

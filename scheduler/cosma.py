"""COSMA: operator order, addresses and spill/retrieve chosen together by one CP-SAT model.

COSMA (Cai et al., "Combined Scheduling, Memory Allocation and Tensor Replacement for
Minimizing Off-Chip Data Accesses of DNN Accelerators", 2023) encodes the three decisions
of a scratchpad compiler in one integer program and minimises the non-compulsory DRAM bytes
(spills and the retrievals that bring tensors back). The paper solved it with Gurobi and
published no code; this is our own encoding of its sections III-B to III-E on OR-Tools CP-SAT.

Per tensor ``a`` and step ``t`` (one operator runs per step) the model has the booleans of
§III-B: created ``C[a,t]`` (its producer runs at ``t``: the operator's ``run`` literal, which
makes the sibling constraint (6) hold by construction), preserved ``P[a,t]``, spilled
``S[a,t]`` and retrieved ``R[a,t]``, with

* (1) at most one action per step; (2) preserved only if resident at ``t - 1``; (3) spilled
  only if resident at ``t - 1`` (the spill drains it at the boundary, so it is not resident
  at ``t``); (4) retrieved only after a spill (or when DRAM already holds it);
* (5) an operator runs only with its inputs resident; (7) every operator runs exactly once
  and one operator runs per step; (8) at most one spill per tensor;

and the memory allocation of §III-C: an address ``L[a,t]`` for every step at which ``a`` may
be resident, (9) inside the budget, (10) no two resident tensors overlapping -- here one
CP-SAT ``NoOverlap`` per step over optional fixed-size intervals whose presence is
``C + P + R``, which is the paper's pairwise above/below booleans ``u, d`` with the solver's
own propagation -- and (11) the address kept while preserved (the paper's persistence
``V[a,t]`` is ``P[a,t]``: (2) already makes it resident at ``t - 1``). The objective (12) is
the DRAM bytes of every spill and retrieval.

Tensors without a producer (graph inputs and weights) are always in DRAM: their first fetch
is the compulsory ``load`` and only later fetches count, and they are never spilled (dropped
for free). A final output's first write is its compulsory ``store``, so spilling it costs
nothing; bringing it back costs its bytes.

Variables exist only where a tensor can be live in *some* order: the windows of the tensor
overlap analysis of §III-F (``OverlapAnalysis``). Three dominance rules (``dominance=True``,
our addition; each leaves the optimum unchanged) shrink the search further: a tensor is
retrieved only at a step that reads it, and spilled or dropped only right after a step that
made or read it (holding it longer cannot help). Whatever the switch, a tensor is freed once
its last reader in the part has run (unless a later part reads it).

Entry points: ``cosma`` (the joint model, or, with ``order=``, the fixed-schedule model of
§III-E2 with constraint (16)), ``min_peak`` (§III-E1: the order of minimum peak footprint,
no spills, constraints (13)-(15)), ``cosma_dnc`` (§IV divide and conquer) and ``budgets``
(M_R, M_H, M_P of §V-A2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import networkx as nx

from allocator.core.kernel_clock import work_clock
from scheduler.budget import check_alignment, check_capacity, data_bytes, min_capacity, onchip_sizes
from scheduler.options import DEFAULT_DETERMINISTIC_TIME, DEFAULTS, CosmaOptions  # noqa: F401  (re-exported)
from scheduler.order import PROGRAM, resolve_order
from scheduler.overlap import OverlapAnalysis
from scheduler.schedule import (
    CapacityError,
    PlacedBy,
    Residency,
    Schedule,
    ScheduleError,
    ScheduleStats,
    Transfer,
    peak_address,
    peak_live_bytes,
)

if TYPE_CHECKING:  # OR-Tools (and the pandas it imports) load when a model is built
    from ortools.sat.python import cp_model

#: the replacement policies of COSMA §V-A's baselines: the best of them is the models' hint and
#: their answer when the solver finds none (``scheduler.replacement``)
BASELINE_REPLACEMENTS = ("belady", "greedy")
#: who places a CP-SAT answer's tensors: the model's own addresses (the report's ``allocator``)
CP_SAT_ADDRESSES = PlacedBy("own addresses", "cosma (CP-SAT addresses)")


@dataclass
class _State:
    """What holds at the first step of a part of the graph (COSMA §IV): resident tensors and DRAM copies."""

    resident: dict[str, int] = field(default_factory=dict)  #: tensor -> offset (bytes) of its open residency
    copies: set[str] = field(default_factory=set)  #: tensors with a copy in DRAM (made by an operator)
    loaded: set[str] = field(default_factory=set)  #: graph inputs and weights fetched once already


@dataclass
class _Timeline:
    """Per tensor and global step: how it is resident (``"C"``, ``"P"``, ``"R"``) and where; spills."""

    action: dict[str, dict[int, str]] = field(default_factory=dict)
    offset: dict[str, dict[int, int]] = field(default_factory=dict)
    spills: set[tuple[str, int]] = field(default_factory=set)  #: (tensor, step at which it is drained)


class _Context:
    """The graph's tensors as the models see them: on-chip and DRAM bytes, kinds, readers."""

    def __init__(self, graph: nx.DiGraph, sizes: Mapping[str, int] | None, alignment: int) -> None:
        check_alignment(alignment)
        self.graph = graph
        self.alignment = alignment
        self.onchip = onchip_sizes(graph, sizes, alignment)
        self.data = data_bytes(graph, sizes)
        self.tensors = graph.graph["tensors"]
        self.final = set(graph.graph.get("outputs", ())) | {
            n for n, r in self.tensors.items() if r["kind"] == "output"
        }
        positive = [s for s in self.onchip.values() if s > 0]
        self.unit = math.gcd(*positive) if positive else alignment  # a multiple of the alignment

    def inputs(self, op: str) -> list[str]:
        return [t for t in self.graph.nodes[op]["in_tensors"] if self.onchip[t]]

    def outputs(self, op: str) -> list[str]:
        return [t for t in self.graph.nodes[op]["out_tensors"] if self.onchip[t]]


class _Part:
    """The CP-SAT model of one run of consecutive steps over the operators ``ops``.

    ``mode`` is ``"traffic"`` (objective (12), with addresses) or ``"peak"`` (objective (15):
    no spills, no addresses, the largest sum of resident bytes).
    """

    def __init__(
        self, ctx: _Context, ops: Sequence[str], capacity: int | None, state: _State, later: set[str],
        options: CosmaOptions, mode: str = "traffic", fixed_order: Sequence[str] | None = None,
    ) -> None:
        from ortools.sat.python import cp_model

        self.ctx, self.ops, self.state, self.options, self.mode = ctx, list(ops), state, options, mode
        self.clock_stopped = False  #: a wall-clock deadline stopped one of this part's searches
        self.work_used = 0.0  #: CP-SAT deterministic time spent on this part
        self.n = len(self.ops)
        self.model = cp_model.CpModel()
        if fixed_order is not None:  # §III-E2, (16): each operator at its one given step
            self.bounds = {op: (i, i) for i, op in enumerate(fixed_order)}
        else:  # §III-F: the steps at which each operator can run in some topological order
            self.bounds = dict(OverlapAnalysis(ctx.graph, self.ops).steps)
        self.run: dict[str, dict[int, cp_model.IntVar]] = {}  #: operator -> step -> runs there (C of §III-B)
        self.tensors: list[str] = []  #: the tensors that may be resident in this part, in model order
        self.window: dict[str, tuple[int, int]] = {}  #: tensor -> first and last step it may be resident
        self.producer: dict[str, str | None] = {}  #: tensor -> its producer if that runs in this part
        self.readers: dict[str, list[str]] = {}  #: tensor -> its readers that run in this part
        self.live_out: dict[str, bool] = {}  #: tensor -> read by a later part
        self.P: dict[tuple[str, int], cp_model.IntVar] = {}  #: preserved
        self.R: dict[tuple[str, int], cp_model.IntVar] = {}  #: retrieved (or loaded)
        self.S: dict[tuple[str, int], cp_model.IntVar] = {}  #: spilled (drained at the step's start)
        self.res: dict[tuple[str, int], Any] = {}  #: C + P + R: resident at the step (an expression)
        self.present: dict[tuple[str, int], cp_model.IntVar] = {}  #: the same as one literal
        self.L: dict[tuple[str, int], cp_model.IntVar] = {}  #: address, in units of ``ctx.unit``
        self.spillable: dict[str, bool] = {}
        self.again: dict[str, cp_model.IntVar] = {}  #: graph inputs / weights: fetches after the first

        # The order of the calls is the order of the model's variables and constraints, which
        # CP-SAT's deterministic search depends on: keep it.
        self._add_order()
        self._find_windows(later)
        cost: list[cp_model.LinearExprT] = []
        for a in self.tensors:
            spills, retrievals = self._add_residency(a)
            self._add_spill_limits(a, spills)
            cost += self._add_cost(a, spills, retrievals)
        self._add_inputs_resident()
        if mode == "peak":
            self._add_peak_objective()
            return
        assert capacity is not None
        self._add_no_overlap(*self._add_addresses(capacity))
        self.objective = sum(cost) if cost else 0
        self.model.minimize(self.objective)  # (12)

    # -- building the model, one family of constraints at a time ------------------------------

    def _add_order(self) -> None:
        """Operator scheduling (COSMA §III-B): the literals ``run[v][t]`` and their constraints.

        ``run[v][t]`` is the creation variable ``C[a,t]`` of every output ``a`` of ``v``: one
        literal for all of them is the sibling constraint (6). Each operator runs exactly once
        ((7)), one operator runs per step (the paper's single-operator timestep), and an
        operator runs after its predecessors: the data dependency (5) implies that precedence,
        stated here directly on the run positions so that the solver propagates it.
        """
        model = self.model
        for v in self.ops:
            lo, hi = self.bounds[v]
            self.run[v] = {t: model.new_bool_var(f"run[{v},{t}]") for t in range(lo, hi + 1)}
            model.add_exactly_one(self.run[v].values())  # (7)
        for t in range(self.n):
            model.add_exactly_one([r[t] for r in self.run.values() if t in r])
        position = {v: sum(t * x for t, x in self.run[v].items()) for v in self.ops}
        # the edges inside the part, in the part's operator order and each operator's successor
        # order: a subgraph view would iterate a set of names, in an order that changes with
        # PYTHONHASHSEED, and so would the model and CP-SAT's answer
        inside = set(self.ops)
        for u in self.ops:
            for v in self.ctx.graph.successors(u):
                if v in inside:
                    model.add(position[u] + 1 <= position[v])

    def _find_windows(self, later: set[str]) -> None:
        """The tensors this part touches and their windows: the steps at which each may be resident.

        The windows follow from the operators' step ranges of the overlap analysis (COSMA
        §III-F), cut to this part (§IV): a tensor's window runs from its producer's first
        possible step (step 0 if an earlier part left it resident, else its first reader's) to
        the part's last step if a ``later`` part reads it, else its last reader's last step (its
        producer's, if nothing reads it). A tensor left resident that nothing here or later
        needs gets no variables: it is freed when the part starts.
        """
        ctx, state, in_part = self.ctx, self.state, set(self.ops)
        touched: list[str] = []
        seen: set[str] = set()
        for v in self.ops:
            for name in ctx.inputs(v) + ctx.outputs(v):
                if name not in seen:
                    seen.add(name)
                    touched.append(name)
        for name in state.resident:
            if name not in seen:
                seen.add(name)
                touched.append(name)
        for a in touched:
            record = ctx.tensors[a]
            producer = record["producer"] if record["producer"] in in_part else None
            readers = [c for c in record["consumers"] if c in in_part]
            live_out = a in later
            if producer is not None:
                lo = self.bounds[producer][0]
            elif a in state.resident:
                lo = 0
            elif readers:
                lo = min(self.bounds[c][0] for c in readers)
            else:
                continue
            if live_out:
                hi = self.n - 1
            elif readers:
                hi = max(self.bounds[c][1] for c in readers)
            elif producer is not None:
                hi = self.bounds[producer][1]
            else:
                continue  # resident but never needed again: it is freed when the part starts
            self.tensors.append(a)
            self.window[a] = (lo, max(lo, hi))
            self.producer[a] = producer
            self.readers[a] = readers
            self.live_out[a] = live_out

    def _in_dram(self, a: str) -> bool:
        """DRAM holds ``a`` before the part starts: a graph input or weight, or spilled by an earlier part."""
        return self.ctx.tensors[a]["producer"] is None or a in self.state.copies

    def _add_residency(self, a: str) -> tuple[list[cp_model.IntVar], list[cp_model.IntVar]]:
        """Tensor replacement (COSMA §III-B) for ``a``, step by step over its window; its spills and fetches.

        Per step: the booleans preserved ``P``, retrieved ``R`` and spilled ``S`` (where they can
        be 1), (1) at most one action, (2) preserved only if resident at the step before, (3)
        spilled only if resident at the step before, (4) retrieved only after a spill of this
        tensor (unless DRAM holds it already), then the freeing and dominance rules
        (``_add_step_rules``) and the residency literal ``present`` (``C + P + R``) that the
        address and peak constraints use. In ``"peak"`` mode (§III-E1) nothing is spilled and
        only graph inputs and weights are fetched.
        """
        model = self.model
        lo, hi = self.window[a]
        producer, readers = self.producer[a], self.readers[a]
        resident0 = a in self.state.resident
        copy0 = self._in_dram(a)
        spillable = self.mode == "traffic" and not copy0 and (producer is not None or resident0)
        self.spillable[a] = spillable
        read_at = {t for c in readers for t in self.run[c]}
        made = self.run[producer] if producer is not None else {}
        previous: Any = 1 if resident0 and lo == 0 else 0  # resident at the step before
        previous_used: Any = 0  # made or read at the step before
        spills: list[cp_model.IntVar] = []
        retrievals: list[cp_model.IntVar] = []
        for t in range(lo, hi + 1):
            C = made.get(t)
            P = R = S = None
            if t > lo or resident0:
                P = self.P[a, t] = model.new_bool_var(f"P[{a},{t}]")
            can_fetch = copy0 or (spillable and t > lo)
            if self.mode == "peak":
                can_fetch = self.ctx.tensors[a]["producer"] is None
            if can_fetch and t in read_at:
                R = self.R[a, t] = model.new_bool_var(f"R[{a},{t}]")
            if spillable and (t > lo or resident0):
                S = self.S[a, t] = model.new_bool_var(f"S[{a},{t}]")
            terms = [x for x in (C, P, R) if x is not None]
            res: Any = sum(terms) if terms else 0
            self.res[a, t] = res
            model.add(res + (S if S is not None else 0) <= 1)  # (1)
            if P is not None:
                model.add(P <= previous)  # (2)
            if S is not None:
                model.add(S <= previous)  # (3)
                spills.append(S)
            if R is not None:
                if not copy0:
                    model.add(R <= sum(spills[:-1] if S is not None else spills))  # (4)
                retrievals.append(R)
            here = [self.run[c][t] for c in readers if t in self.run[c]]  # the readers that may run at t
            self._add_step_rules(a, t, P, R, S, previous, previous_used, here)
            if len(terms) > 1:
                present = model.new_bool_var(f"res[{a},{t}]")
                model.add(present == res)
                self.present[a, t] = present
            elif terms:
                self.present[a, t] = terms[0]
            previous = res
            previous_used = (C if C is not None else 0) + sum(here)
        return spills, retrievals

    def _add_step_rules(self, a: str, t: int, P: Any, R: Any, S: Any, previous: Any, previous_used: Any,
                        here: list[cp_model.IntVar]) -> None:
        """Our additions to §III-B at step ``t`` of ``a``: freeing, and the three dominance rules.

        Freeing (always): unless a later part reads it, ``a`` is kept or fetched only while one
        of its readers is still to run. Dominance (``CosmaOptions.dominance``; each rule keeps
        the optimum): a fetch only at a step that reads ``a``; a spill, and a drop (resident at
        the step before, not at this one), only right after a step that made or read ``a``.
        """
        model = self.model
        lo = self.window[a][0]
        pending = [x for c in self.readers[a] for k, x in self.run[c].items() if k >= t]
        if not self.live_out[a] and (P is not None or R is not None):
            model.add((P if P is not None else 0) + (R if R is not None else 0) <= sum(pending))
        if self.options.dominance:
            if R is not None:
                model.add(R <= sum(here))
            if t > lo and S is not None:
                model.add(S <= previous_used)
            if t > lo and P is not None:
                model.add(previous - previous_used - (S if S is not None else 0) <= P)

    def _add_spill_limits(self, a: str, spills: list[cp_model.IntVar]) -> None:
        """(8) of COSMA §III-B: at most one spill of ``a``; and, across parts (§IV), a tensor a later
        part reads and DRAM does not hold yet ends this part resident or spilled."""
        if self.spillable[a] and spills:
            self.model.add(sum(spills) <= 1)  # (8)
        if self.live_out[a] and not self._in_dram(a) and self.mode == "traffic":
            self.model.add(self.res[a, self.window[a][1]] + sum(spills) >= 1)

    def _add_cost(self, a: str, spills: list[cp_model.IntVar],
                  retrievals: list[cp_model.IntVar]) -> list[cp_model.LinearExprT]:
        """``a``'s terms of objective (12) of COSMA §III-D: the DRAM bytes of its non-compulsory
        transfers. In ``"peak"`` mode instead (13) of §III-E1: a graph input or weight is fetched once.

        A graph input's or weight's first fetch is its compulsory load, counted out through the
        integer ``again`` (fetches after the first); a final output's spill is its compulsory store.
        """
        model, ctx = self.model, self.ctx
        is_source = ctx.tensors[a]["producer"] is None
        cost: list[cp_model.LinearExprT] = []
        if self.mode == "traffic":
            nbytes = ctx.data[a]
            if is_source and a not in self.state.loaded and self.readers[a]:
                again = self.again[a] = model.new_int_var(0, max(0, len(retrievals) - 1), f"again[{a}]")
                model.add(again == sum(retrievals) - 1)
                cost.append(nbytes * again)
            elif retrievals:
                cost.append(nbytes * sum(retrievals))
            if spills and a not in ctx.final:
                cost.append(nbytes * sum(spills))
        elif is_source and retrievals:
            model.add(sum(retrievals) == 1)  # (13): fetched once, never again
        return cost

    def _add_inputs_resident(self) -> None:
        """(5) of COSMA §III-B: an operator runs at ``t`` only with each input preserved or retrieved at ``t``."""
        for v in self.ops:
            for b in self.ctx.inputs(v):
                for t, x in self.run[v].items():
                    ready = [y for y in (self.P.get((b, t)), self.R.get((b, t))) if y is not None]
                    self.model.add(x <= sum(ready) if ready else x == 0)

    def _add_peak_objective(self) -> None:
        """(14)-(15) of COSMA §III-E1: ``peak`` bounds the on-chip bytes resident at every step; minimise it."""
        ctx, model = self.ctx, self.model
        total = sum(ctx.onchip[a] for a in self.tensors)
        self.peak = model.new_int_var(0, total, "peak")
        resident_bytes: dict[int, list[cp_model.LinearExprT]] = {t: [] for t in range(self.n)}
        for (a, t), p in self.present.items():
            resident_bytes[t].append(ctx.onchip[a] * p)
        for t in range(self.n):
            model.add(sum(resident_bytes[t]) <= self.peak)  # (14)
        model.minimize(self.peak)  # (15)

    def _add_addresses(
        self, capacity: int,
    ) -> tuple[dict[int, list[cp_model.IntervalVar]], dict[int, list[cp_model.LinearExprT]], int]:
        """Memory allocation (COSMA §III-C): an address ``L[a,t]`` wherever ``a`` may be resident.

        (9) inside the budget (the variable's domain), (11) kept while preserved: the paper's
        persistence ``V[a,t]`` is ``P[a,t]``, and a tensor an earlier part left resident keeps
        that part's address while preserved. Addresses are in units of the gcd of the on-chip sizes. Returns,
        per step, the optional intervals (present when ``a`` is resident) and the resident
        sizes that ``_add_no_overlap`` constrains, and the budget in units.
        """
        ctx, model, unit = self.ctx, self.model, self.ctx.unit
        room = capacity // unit
        by_step: dict[int, list[cp_model.IntervalVar]] = {t: [] for t in range(self.n)}
        load_by_step: dict[int, list[cp_model.LinearExprT]] = {t: [] for t in range(self.n)}
        for (a, t), present in self.present.items():
            size = ctx.onchip[a] // unit
            if size > room:
                raise CapacityError(
                    f"tensor {a!r} needs {ctx.onchip[a]} bytes, more than the whole budget of {capacity} bytes",
                    a, ctx.onchip[a],
                )
            where = self.L[a, t] = model.new_int_var(0, room - size, f"L[{a},{t}]")  # (9)
            by_step[t].append(model.new_optional_fixed_size_interval_var(where, size, present, f"I[{a},{t}]"))
            load_by_step[t].append(size * present)
            if (a, t) in self.P:
                before = self.L.get((a, t - 1))
                if t == self.window[a][0] and a in self.state.resident:
                    model.add(where == self.state.resident[a] // unit).only_enforce_if(self.P[a, t])
                elif before is not None:
                    model.add(where == before).only_enforce_if(self.P[a, t])  # (11)
        return by_step, load_by_step, room

    def _add_no_overlap(self, by_step: dict[int, list[cp_model.IntervalVar]],
                        load_by_step: dict[int, list[cp_model.LinearExprT]], room: int) -> None:
        """(10) of COSMA §III-C: no two tensors resident at a step overlap, and the capacity cut.

        One CP-SAT ``NoOverlap`` per step over the optional intervals stands for the paper's
        pairwise above/below booleans ``u, d`` and big-M rows. The cut
        (``CosmaOptions.capacity_cut``, redundant) bounds the sum of the resident sizes by the budget.
        """
        for t in range(self.n):
            self.model.add_no_overlap(by_step[t])  # (10)
            if self.options.capacity_cut and load_by_step[t]:
                self.model.add(sum(load_by_step[t]) <= room)

    # -- hints and answers -------------------------------------------------------------------

    def hint(self, start: int, order: Sequence[str], timeline: _Timeline) -> None:
        """Suggest a known schedule (``order`` from global step ``start``) as the first solution."""
        step = {v: i - start for i, v in enumerate(order) if start <= i < start + self.n}
        hinted = {x.index for run in self.run.values() for x in run.values()} | {x.index for x in self.P.values()}
        hinted |= {x.index for x in self.R.values()}
        for v, run in self.run.items():
            for t, x in run.items():
                self.model.add_hint(x, step.get(v) == t)
        for (a, t), x in self.P.items():
            self.model.add_hint(x, timeline.action.get(a, {}).get(start + t) == "P")
        for (a, t), x in self.R.items():
            self.model.add_hint(x, timeline.action.get(a, {}).get(start + t) == "R")
        for (a, t), x in self.S.items():
            self.model.add_hint(x, (a, start + t) in timeline.spills)
        for a, x in self.again.items():
            fetches = sum(1 for (b, t) in self.R if b == a and timeline.action.get(a, {}).get(start + t) == "R")
            self.model.add_hint(x, max(0, fetches - 1))
        for (a, t), x in self.present.items():
            if x.index not in hinted:
                self.model.add_hint(x, bool(timeline.action.get(a, {}).get(start + t)))
        for (a, t), x in self.L.items():
            where = timeline.offset.get(a, {}).get(start + t)
            if where is not None and where // self.ctx.unit <= list(x.proto.domain)[-1]:
                self.model.add_hint(x, where // self.ctx.unit)
            else:
                self.model.add_hint(x, 0)  # not resident there: any address in the domain

    def solve(self, deadline: float | None, work: float | None) -> tuple[cp_model.CpSolver, str]:
        """Run CP-SAT for ``work`` units of deterministic time (None: no limit), stopping at the
        wall-clock ``deadline`` if one is given first (see ``CosmaOptions.core_after``); the
        solver and its verdict. ``clock_stopped`` records whether the deadline stopped a search,
        ``work_used`` the deterministic time spent."""
        # Core-based search bounds sums of cost literals; the peak objective (15) is one integer.
        switch = self.options.core_after if self.mode == "traffic" else None
        if switch is None or (work is not None and work <= switch):
            return self._solve(deadline, core=False, work=work)
        # The switch is measured in CP-SAT's deterministic time, so where it happens, and hence
        # the answer, does not depend on the machine's speed or load.
        solver, status = self._solve(deadline, core=False, work=switch)
        if status in ("optimal", "infeasible") or self.clock_stopped:
            return solver, status
        rest = None if work is None else work - solver.deterministic_time
        if rest is not None and rest <= 0:
            return solver, status
        if status == "timeout":  # nothing found yet: core search is poor at finding solutions
            return self._solve(deadline, core=False, work=rest)
        self.model.clear_hints()
        for i in range(len(self.model.proto.variables)):
            variable = self.model.get_int_var_from_proto_index(i)
            self.model.add_hint(variable, solver.value(variable))
        return self._solve(deadline, core=True, work=rest)

    def _solve(self, deadline: float | None, core: bool, work: float | None = None) -> tuple[cp_model.CpSolver, str]:
        from ortools.sat.python import cp_model

        solver = cp_model.CpSolver()
        # CP-SAT would install its own SIGINT handler for good; Ctrl-C must stay Python's KeyboardInterrupt
        # so that the commands can report what they have (it then arrives when the solve returns).
        solver.parameters.catch_sigint_signal = False
        if deadline is not None:
            solver.parameters.max_time_in_seconds = max(0.01, deadline - work_clock())
        if work is not None:
            solver.parameters.max_deterministic_time = work
        solver.parameters.num_workers = self.options.workers
        solver.parameters.random_seed = self.options.seed
        solver.parameters.linearization_level = self.options.linearization
        solver.parameters.optimize_with_core = core
        code = solver.solve(self.model)
        self.work_used += solver.deterministic_time
        if code == cp_model.OPTIMAL:
            return solver, "optimal"
        if code == cp_model.INFEASIBLE:
            return solver, "infeasible"
        if code == cp_model.MODEL_INVALID:
            raise ScheduleError(f"CP-SAT rejected the model: {self.model.validate()}")
        # Stopped by a limit: by the clock when the work limit was not reached and the deadline passed.
        worked_out = work is not None and solver.deterministic_time >= work
        if deadline is not None and not worked_out and work_clock() >= deadline:
            self.clock_stopped = True
        return solver, "feasible" if code == cp_model.FEASIBLE else "timeout"

    def size(self) -> dict[str, int]:
        """The model's numbers of variables and constraints, for ``Schedule.stats``."""
        proto = self.model.proto
        return {"variables": len(proto.variables), "constraints": len(proto.constraints)}

    def answer(self, solver: cp_model.CpSolver, capacity: int, method: str) -> Schedule:
        """The solution of a part that is the whole graph, as a ``Schedule``."""
        timeline = _Timeline()
        self.record(solver, 0, timeline)
        return _assemble(self.ctx, self.order_of(solver), timeline, capacity, method)

    def order_of(self, solver: cp_model.CpSolver) -> list[str]:
        at = {t: v for v, run in self.run.items() for t, x in run.items() if solver.boolean_value(x)}
        return [at[t] for t in range(self.n)]

    def record(self, solver: cp_model.CpSolver, start: int, timeline: _Timeline) -> _State:
        """Write the answer into ``timeline`` (global steps from ``start``); return the state after the part."""
        after = _State(copies=set(self.state.copies), loaded=set(self.state.loaded))
        for a in self.tensors:
            lo, hi = self.window[a]
            producer = self.producer[a]
            actions = timeline.action.setdefault(a, {})
            offsets = timeline.offset.setdefault(a, {})
            for t in range(lo, hi + 1):
                if producer is not None and t in self.run[producer] and solver.boolean_value(self.run[producer][t]):
                    kind = "C"
                elif (a, t) in self.P and solver.boolean_value(self.P[a, t]):
                    kind = "P"
                elif (a, t) in self.R and solver.boolean_value(self.R[a, t]):
                    kind = "R"
                    if self.ctx.tensors[a]["producer"] is None:
                        after.loaded.add(a)
                else:
                    kind = ""
                if (a, t) in self.S and solver.boolean_value(self.S[a, t]):
                    timeline.spills.add((a, start + t))
                    after.copies.add(a)
                if kind:
                    actions[start + t] = kind
                    offsets[start + t] = (
                        solver.value(self.L[a, t]) * self.ctx.unit if (a, t) in self.L else 0
                    )
            if self.live_out[a] and hi == self.n - 1 and actions.get(start + hi):
                after.resident[a] = offsets[start + hi]
        return after


# -- turning timelines into schedules and back ---------------------------------------------------


def _assemble(ctx: _Context, order: list[str], timeline: _Timeline, capacity: int, method: str) -> Schedule:
    """The ``Schedule`` a timeline describes: residencies, loads, stores, spills and retrievals."""
    residencies: list[Residency] = []
    transfers: list[Transfer] = []
    offsets: dict[str, int] = {}
    for a, actions in timeline.action.items():
        stays, stored, loaded = 0, False, False
        steps = sorted(actions)
        i = 0
        while i < len(steps):
            s = steps[i]
            kind = actions[s]
            if kind == "P":
                raise ScheduleError(f"tensor {a!r} is preserved at step {s} without being resident before")
            e = s + 1
            i += 1
            while i < len(steps) and steps[i] == e and actions[e] == "P":
                e += 1
                i += 1
            rid = a if stays == 0 else f"{a}#{stays}"
            stays += 1
            residencies.append(Residency(rid, a, s, e, ctx.onchip[a]))
            offsets[rid] = timeline.offset[a][s]
            nbytes = ctx.data[a]
            if kind == "R":
                first = ctx.tensors[a]["producer"] is None and not loaded
                transfers.append(Transfer("load" if first else "retrieve", a, rid, s, nbytes))
                loaded = True
            if (a, e) in timeline.spills:
                transfers.append(Transfer("store" if a in ctx.final else "spill", a, rid, e, nbytes))
                stored = True
            elif a in ctx.final and not stored and i == len(steps):
                transfers.append(Transfer("store", a, rid, e, nbytes))
                stored = True
    transfers.sort(key=lambda t: (t.step, t.kind, t.residency))
    result = Schedule(
        order=list(order),
        residencies=sorted(residencies, key=lambda r: (r.start, r.end, r.id)),
        transfers=transfers,
        capacity=capacity,
        alignment=ctx.alignment,
        offsets=offsets,
        method=method,
        placed_by=CP_SAT_ADDRESSES,
    )
    return result


def _timeline_of(schedule: Schedule) -> _Timeline:
    """A schedule's residencies as per-step actions (the form hints take)."""
    timeline = _Timeline()
    fills = {t.residency for t in schedule.transfers if t.to_chip}
    offsets = schedule.offsets or {}
    for r in schedule.residencies:
        actions = timeline.action.setdefault(r.tensor, {})
        where = timeline.offset.setdefault(r.tensor, {})
        for s in range(r.start, r.end):
            actions[s] = "P" if s > r.start else ("R" if r.id in fills else "C")
            where[s] = offsets.get(r.id, 0)
    for t in schedule.transfers:
        if t.kind in ("spill", "store"):
            timeline.spills.add((t.tensor, t.step))
    return timeline


# -- public entry points --------------------------------------------------------------------------


@dataclass(frozen=True)
class MinPeak:
    """The answer of ``min_peak``: an order and its peak footprint (bytes resident at once)."""

    order: list[str]  #: operator names, one per step
    peak: int  #: the largest sum of on-chip bytes resident at one step in this order
    bound: int  #: a proven lower bound on the minimum (``== peak`` when ``status == "optimal"``)
    status: str  #: ``"optimal"``, ``"feasible"`` (a limit hit) or ``"timeout"`` (program order kept)
    seconds: float  #: wall time of the solve
    clock_stopped: bool = False  #: the wall-clock ``time_limit``, not the deterministic work limit, stopped the solve


def footprint(graph: nx.DiGraph, order: str | Sequence[str] = PROGRAM, sizes: Mapping[str, int] | None = None,
              alignment: int = 1) -> int:
    """The peak footprint of ``order`` without spills: max over steps of the on-chip bytes resident.

    At step ``t`` the resident tensors are the operator's inputs and outputs and every tensor
    made (or, for graph inputs and weights, first read) before ``t`` and read at or after ``t``
    -- the quantity COSMA's (14) bounds. A graph output stays until its last reader.

    >>> from frontend.synthetic import chain
    >>> footprint(chain(3, size=10))
    30
    """
    names = resolve_order(graph, order)
    onchip = onchip_sizes(graph, sizes, alignment)
    step = {v: i for i, v in enumerate(names)}
    delta = [0] * (len(names) + 1)
    for name, record in graph.graph["tensors"].items():
        if not onchip[name]:
            continue
        uses = [step[c] for c in record["consumers"] if c in step]
        if record["producer"] is not None:
            first = step[record["producer"]]
        elif uses:
            first = min(uses)
        else:
            continue
        last = max(uses, default=first)
        delta[first] += onchip[name]
        delta[last + 1] -= onchip[name]
    peak = live = 0
    for change in delta[:-1]:
        live += change
        peak = max(peak, live)
    return peak


def min_peak(
    graph: nx.DiGraph, sizes: Mapping[str, int] | None = None, alignment: int = 1,
    options: CosmaOptions = DEFAULTS,
) -> MinPeak:
    """The operator order of minimum peak memory footprint, MPMF (COSMA §III-E1, (13)-(15)).

    No tensor is spilled or fetched twice ((13)); ``peak`` bounds the bytes resident at every
    step ((14)) and is minimised ((15)). Addresses are not modelled (the paper's choice): the
    peak is a sum of sizes, so placing the tensors may need more (see ``cosma``). The program
    order is the hint; if the solver finds nothing within its work limit
    (``options.deterministic_time``, or ``options.time_limit`` if that comes first) the program
    order is returned with ``status="timeout"``.

    >>> from frontend.graph import new_graph, add_tensor, add_operator
    >>> g = new_graph("fork", dtype="int8")
    >>> add_tensor(g, "x", (1,), kind="input")
    >>> add_operator(g, "a", "relu", inputs=["x"], outputs={"a1": (100,)})
    >>> add_operator(g, "c", "relu", inputs=["x"], outputs={"c1": (50,)})
    >>> add_operator(g, "b", "relu", inputs=["a1"], outputs={"b1": (1,)})
    >>> add_operator(g, "d", "relu", inputs=["c1"], outputs={"d1": (1,)})
    >>> add_operator(g, "join", "add", inputs=["b1", "d1"], outputs={"y": (1,)})
    >>> g.graph["outputs"] = ["y"]
    >>> best = min_peak(g)
    >>> footprint(g), best.peak, best.order, best.status
    (151, 102, ['a', 'b', 'c', 'd', 'join'], 'optimal')
    """
    began = work_clock()
    ctx = _Context(graph, sizes, alignment)
    part = _Part(ctx, list(graph.nodes), None, _State(), set(), options, mode="peak")
    program = list(graph.nodes)
    if options.hint:
        for v, run in part.run.items():
            for t, x in run.items():
                part.model.add_hint(x, program.index(v) == t)
    deadline = None if options.time_limit is None else began + options.time_limit
    solver, status = part.solve(deadline, options.deterministic_time)
    if status not in ("optimal", "feasible"):
        peak = footprint(graph, program, sizes, alignment)
        return MinPeak(program, peak, 0, "timeout", work_clock() - began, part.clock_stopped)
    order = part.order_of(solver)
    peak = footprint(graph, order, sizes, alignment)
    return MinPeak(order, peak, int(solver.best_objective_bound), status, work_clock() - began,
                   part.clock_stopped)


def budgets(
    graph: nx.DiGraph, sizes: Mapping[str, int] | None = None, alignment: int = 1,
    options: CosmaOptions = DEFAULTS, order: MinPeak | None = None,
) -> dict[str, int]:
    """The three memory budgets of COSMA §V-A2: ``"MR"``, ``"MH"`` and ``"MP"`` (bytes).

    M_R is the largest single-operator footprint (``min_capacity``), M_P the minimum peak
    footprint (``min_peak``; if that is not proven optimal the best order found is used), M_H
    their mean rounded up to the alignment. ``order``, ``min_peak``'s answer for the same graph,
    sizes and alignment when the caller has it already, saves solving it again.
    """
    mr = min_capacity(graph, sizes, alignment)[0]
    mp = max(mr, (order or min_peak(graph, sizes, alignment, options)).peak)
    mh = -(-((mr + mp) // 2) // alignment) * alignment
    return {"MR": mr, "MH": mh, "MP": mp}


def _best_baseline(graph: nx.DiGraph, capacity: int, order: str | Sequence[str], sizes: Mapping[str, int] | None,
                   alignment: int) -> Schedule:
    """The baseline (Belady or greedy replacement) that moves the fewest non-compulsory bytes."""
    from scheduler.baseline import schedule

    runs = [schedule(graph, capacity, order, r, sizes, alignment) for r in BASELINE_REPLACEMENTS]
    return min(runs, key=lambda s: s.noncompulsory_bytes)


def _finish(schedule: Schedule, need: int, status: str, objective: int, bound: int, seconds: float,
            **extra: Any) -> Schedule:
    """``schedule`` with its ``status`` and a fresh ``stats``: the solver's figures and ``extra``
    (``ScheduleStats`` fields: the model's size, ``parts``, ``warm_start``, ``clock_stopped``)."""
    schedule.status = status
    gap = 0.0 if objective == bound else (objective - bound) / max(objective, 1)
    schedule.stats = ScheduleStats(
        min_capacity=need, objective=objective, bound=bound, gap=gap, solve_seconds=seconds,
        peak_live_bytes=peak_live_bytes(schedule), peak_address=peak_address(schedule), **extra)
    return schedule


def cosma(
    graph: nx.DiGraph, capacity_bytes: int, order: str | Sequence[str] | None = None,
    sizes: Mapping[str, int] | None = None, alignment: int = 1, options: CosmaOptions = DEFAULTS,
) -> Schedule:
    """Order, addresses and spills that minimise the non-compulsory DRAM bytes (COSMA §III-B to §III-D).

    Parameters
    ----------
    graph:
        a ``DataflowGraph``.
    capacity_bytes:
        the on-chip budget, at least M_R (``min_capacity``).
    order:
        ``None`` chooses the order too (``cosma``); ``"program"`` or a list of operators fixes it
        (``cosma-fs``, §III-E2, constraint (16)).
    sizes, alignment:
        as for ``scheduler.schedule`` (e.g. per-PE bytes; weights at 0 for activations only).
    options:
        work limit (deterministic time, optional time limit), workers, seed, hint and the model's
        switches (``CosmaOptions``).

    Returns
    -------
    Schedule
        with the solver's addresses in ``offsets``, ``method`` ``"cosma"`` or ``"cosma-fs"``,
        ``status`` ``"optimal"`` or ``"feasible"`` (work limit used up with a solution) and
        ``stats`` holding ``objective`` (the non-compulsory bytes, equal to the schedule's
        ``noncompulsory_bytes``), ``bound`` (proven lower bound), ``gap``, ``solve_seconds``,
        ``variables``, ``constraints`` and ``clock_stopped`` (True when the wall-clock
        ``time_limit`` stopped a search). If the solver finds no solution within its work limit,
        the best baseline schedule is returned with ``status="timeout"`` (``method`` names it).

    Raises ``CapacityError`` below M_R and ``ScheduleError`` for a bad order or option.

    A skip connection ``s`` that cannot stay while ``c`` runs (M_R = 30 bytes, but ``u``, ``v``
    and ``s`` need 40 at step 2): the model spills ``s`` once and brings it back once.

    >>> from frontend.graph import new_graph, add_tensor, add_operator
    >>> g = new_graph("skip", dtype="int8")
    >>> add_tensor(g, "x", (10,), kind="input")
    >>> add_operator(g, "a", "relu", inputs=["x"], outputs={"s": (10,)})
    >>> add_operator(g, "b", "relu", inputs=["s"], outputs={"u": (10,)})
    >>> add_operator(g, "c", "relu", inputs=["u"], outputs={"v": (20,)})
    >>> add_operator(g, "d", "relu", inputs=["v"], outputs={"w": (10,)})
    >>> add_operator(g, "e", "add", inputs=["w", "s"], outputs={"y": (10,)})
    >>> g.graph["outputs"] = ["y"]
    >>> s = cosma(g, 30)
    >>> s.status, s.noncompulsory_bytes, [(t.kind, t.tensor, t.step) for t in s.transfers if not t.compulsory]
    ('optimal', 20, [('spill', 's', 2), ('retrieve', 's', 4)])
    """
    began = work_clock()
    deadline = None if options.time_limit is None else began + options.time_limit
    work = options.deterministic_time
    clock_stopped = False
    need = check_capacity(graph, capacity_bytes, sizes, alignment)
    ctx = _Context(graph, sizes, alignment)
    fixed = resolve_order(graph, order) if order is not None else None
    method = "cosma" if fixed is None else "cosma-fs"
    baseline = _best_baseline(graph, capacity_bytes, fixed or PROGRAM, sizes, alignment)
    start = baseline
    if fixed is None and options.warm_start:
        # Warm start: the fixed-order model is small and fast; its answer is a feasible
        # solution of the joint model (a complete hint), and when it moves nothing it is optimal.
        warm = _Part(ctx, list(graph.nodes), capacity_bytes, _State(), set(), options, fixed_order=baseline.order)
        if options.hint:
            warm.hint(0, baseline.order, _timeline_of(baseline))
        solver, status = warm.solve(None if deadline is None else began + options.warm_fraction * (deadline - began),
                                    None if work is None else options.warm_fraction * work)
        clock_stopped = warm.clock_stopped
        if work is not None:
            work = max(work - warm.work_used, 1e-3)
        if status in ("optimal", "feasible"):
            start = warm.answer(solver, capacity_bytes, method)
            if start.noncompulsory_bytes == 0:
                return _finish(start, need, "optimal", 0, 0, work_clock() - began,
                               warm_start=True, **warm.size(), clock_stopped=clock_stopped)
    part = _Part(ctx, list(graph.nodes), capacity_bytes, _State(), set(), options, fixed_order=fixed)
    if options.hint:
        part.hint(0, start.order, _timeline_of(start))
    solver, status = part.solve(deadline, work)
    size = {**part.size(), "clock_stopped": clock_stopped or part.clock_stopped}
    if status not in ("optimal", "feasible"):
        bound = max(0, int(solver.best_objective_bound)) if status == "timeout" else 0
        if start is not baseline:
            return _finish(start, need, "feasible", start.noncompulsory_bytes, bound, work_clock() - began,
                           **size)
        baseline.method = f"{method} ({status}; {baseline.method} kept)"
        return _finish(baseline, need, status, baseline.noncompulsory_bytes, bound, work_clock() - began,
                       **size)
    result = part.answer(solver, capacity_bytes, method)
    objective = int(round(solver.objective_value))
    bound = int(math.ceil(solver.best_objective_bound - 1e-6))
    return _finish(result, need, status, objective, min(objective, max(0, bound)), work_clock() - began,
                   **size)


def break_nodes(graph: nx.DiGraph, part_size: int = 40, sizes: Mapping[str, int] | None = None,
                alignment: int = 1) -> list[str]:
    """Operators after which ``cosma_dnc`` cuts the graph (COSMA §IV), chosen automatically.

    The paper picks break nodes by hand. Here the graph is cut into runs of consecutive
    operators in program order, at most ``part_size`` long, and each cut goes after the
    operator, among the last ``part_size`` ones, after which the fewest bytes are live in
    program order (ties: the latest) -- the cheapest place to hand tensors from one part to
    the next. The last operator is never a break node.
    """
    names = list(graph.nodes)
    if part_size < 1:
        raise ScheduleError(f"part_size must be at least 1, got {part_size}")
    onchip = onchip_sizes(graph, sizes, alignment)
    step = {v: i for i, v in enumerate(names)}
    live_after = [0] * len(names)  # bytes live across the boundary after each step
    for name, record in graph.graph["tensors"].items():
        uses = [step[c] for c in record["consumers"]]
        first = step[record["producer"]] if record["producer"] is not None else min(uses, default=0)
        for s in range(first, max(uses, default=first)):
            live_after[s] += onchip[name]
    cuts: list[int] = []
    begin = 0
    while len(names) - begin > part_size:
        window = range(begin, begin + part_size)
        cut = min(window, key=lambda s: (live_after[s], -s))
        cuts.append(cut)
        begin = cut + 1
    return [names[c] for c in cuts]


def cosma_dnc(
    graph: nx.DiGraph, capacity_bytes: int, part_size: int = 40, sizes: Mapping[str, int] | None = None,
    alignment: int = 1, options: CosmaOptions = DEFAULTS, breaks: Sequence[str] | None = None,
) -> Schedule:
    """COSMA's divide and conquer for large, irregular graphs (§IV).

    The program order is cut after the ``breaks`` (default: ``break_nodes``); each part is
    solved by the joint model in turn, starting from what the previous part left: tensors still
    resident keep their addresses and may be kept, dropped or spilled; tensors read by later
    parts must end resident or in DRAM. The order within a part is free, across parts it
    follows the cuts, so the answer is optimal per part given the earlier ones, not globally.
    ``options.deterministic_time`` (and ``options.time_limit``, if set) bounds the whole call:
    each part gets an even share of what the parts before it left.
    ``status`` is ``"optimal"`` only if every part is; ``stats.bound`` is the sum of the
    parts' bounds (a bound for the cut problem, not the whole graph).
    """
    began = work_clock()
    need = check_capacity(graph, capacity_bytes, sizes, alignment)
    ctx = _Context(graph, sizes, alignment)
    names = list(graph.nodes)
    cut_after = list(breaks) if breaks is not None else break_nodes(graph, part_size, sizes, alignment)
    where = {v: i for i, v in enumerate(names)}
    for b in cut_after:
        if b not in where:
            raise ScheduleError(f"break node {b!r} is not an operator of the graph")
    bounds = sorted({where[b] + 1 for b in cut_after if where[b] + 1 < len(names)})
    parts = [names[i:j] for i, j in zip([0, *bounds], [*bounds, len(names)], strict=True)]
    baseline = _best_baseline(graph, capacity_bytes, PROGRAM, sizes, alignment)
    hint = _timeline_of(baseline)
    state, timeline = _State(), _Timeline()
    order: list[str] = []
    statuses: list[str] = []
    objective = bound = 0
    deadline = None if options.time_limit is None else began + options.time_limit
    work_left = options.deterministic_time
    clock_stopped = False
    for i, ops in enumerate(parts):
        later = {t for p in parts[i + 1:] for v in p for t in ctx.inputs(v)}
        part = _Part(ctx, ops, capacity_bytes, state, later, options)
        if options.hint:
            part.hint(len(order), baseline.order, hint)
        now = work_clock()
        solver, status = part.solve(None if deadline is None else now + (deadline - now) / (len(parts) - i),
                                    None if work_left is None else max(work_left / (len(parts) - i), 1e-3))
        clock_stopped = clock_stopped or part.clock_stopped
        if work_left is not None:
            work_left -= part.work_used
        if status not in ("optimal", "feasible"):
            baseline.method = f"cosma-dnc ({status} in part {i + 1} of {len(parts)}; {baseline.method} kept)"
            return _finish(baseline, need, "timeout", baseline.noncompulsory_bytes, 0, work_clock() - began,
                           parts=len(parts), clock_stopped=clock_stopped)
        statuses.append(status)
        objective += int(round(solver.objective_value))
        bound += int(math.ceil(solver.best_objective_bound - 1e-6))
        state = part.record(solver, len(order), timeline)
        order += part.order_of(solver)
    result = _assemble(ctx, order, timeline, capacity_bytes, "cosma-dnc")
    status = "optimal" if all(s == "optimal" for s in statuses) else "feasible"
    return _finish(result, need, status, objective, min(objective, max(0, bound)), work_clock() - began,
                   parts=len(parts), clock_stopped=clock_stopped)

"""The baseline of COSMA section V-A: a fixed order, a TensorFlow Lite style arena, Belady or greedy replacement.

COSMA (Cai et al., "Combined Scheduling, Memory Allocation and Tensor Replacement for
Minimizing Off-Chip Data Accesses of DNN Accelerators", section V-A2) compares itself with
schemes built from three choices made one after the other, online, operator by operator:

* **operator scheduling** -- here the program order (or any topological order you pass);
* **memory allocation** -- TensorFlow Lite's linear arena: a tensor goes at the lowest offset
  where it fits among the tensors resident at that moment (first fit by address);
* **tensor replacement** -- when a tensor does not fit, evict resident tensors the current
  operator does not use: either the one needed furthest in the future first, until first fit
  succeeds (Belady), or the tensors under the one address window that costs the fewest
  non-compulsory bytes (greedy, COSMA's "ILP-based greedy algorithm which provides a locally
  optimal decision that generates the least off-chip data accesses each time replacement is
  needed").

Greedy replacement, for a tensor of ``s`` on-chip bytes at step ``t``: every window
``[x, x + s)`` inside the budget with ``x`` = 0 or the end of a resident tensor is a candidate
(any other window slides down to one of these without covering more tensors, so nothing is
missed); a window covering one of the operator's own tensors is invalid. Evicting a tensor
costs 0 bytes if it is not read at or after ``t``, else its bytes once (the later retrieve)
plus once more if it has no DRAM copy yet and is not a final output (the spill; a final
output's first write is its compulsory store). The window with the lowest total cost wins
(ties: fewer evicted on-chip bytes, then lower ``x``); exactly the tensors it covers are
evicted and the tensor is placed at ``x``, which is where first fit would now put it. The
choice is optimal for this one eviction only, not over the whole schedule: it ignores where
the evicted tensors will fit when they come back and what later placements will need.

Events within step ``t`` (operator ``order[t]``), in this order:

1. residencies of tensors whose last use was step ``t - 1`` end at ``t``; a final output that
   has no DRAM copy yet is stored (compulsory ``store`` at step ``t``);
2. each input of the operator that is not resident is placed (first fit, evicting others as
   needed but never another input of the operator) and filled: a graph input or weight's
   first read is a compulsory ``load``, every later read of anything is a ``retrieve``;
3. each output of the operator is placed (evicting as needed, never the operator's own inputs
   or outputs).

An evicted tensor's residency ends at ``t``. It is written to DRAM at step ``t`` only when no
DRAM copy exists yet (tensors are immutable, so one copy serves every later retrieval):
an activation is ``spill``-ed; a final output is ``store``-d -- that write *is* its compulsory
store, so it is counted once, as compulsory, and no second store happens when its last
residency ends; a graph input or weight is simply dropped.

If a placement still fails after every other tensor has been evicted (with greedy: if no
window avoids the operator's own tensors, every other tensor is evicted as Belady would), the
arena is fragmented by the operator's own tensors; they are then compacted towards offset 0
in address order. A tensor already at its compacted offset stays; one filled at this very step is just
placed at the new offset (nothing was computed in it yet); any other is evicted (written back
first when it has no DRAM copy) and retrieved at the new offset. The operator's tensors sum
to at most M_R, so at any budget >= M_R the schedule always completes.
"""

from __future__ import annotations

import sys
import time
from bisect import bisect_left, insort
from collections.abc import Mapping, Sequence

import networkx as nx

from scheduler.budget import check_alignment, check_capacity, data_bytes, onchip_sizes, operator_bytes
from scheduler.order import resolve_order
from scheduler.schedule import (
    Residency,
    Schedule,
    ScheduleError,
    Transfer,
    TransferKind,
    peak_address,
    peak_live_bytes,
)

#: replacement policies ``schedule`` accepts: Belady (furthest next use first), greedy (the cheapest
#: address window), or none (fail instead)
REPLACEMENTS = ("belady", "greedy", "none")

_NEVER = sys.maxsize  # "next use" of a tensor that is not read again


def schedule(
    graph: nx.DiGraph,
    capacity_bytes: int,
    order: str | Sequence[str] = "program",
    replacement: str = "belady",
    sizes: Mapping[str, int] | None = None,
    alignment: int = 1,
) -> Schedule:
    """Schedule ``graph`` in a fixed order with a first-fit arena and Belady or greedy replacement (COSMA section V-A).

    Parameters
    ----------
    graph:
        a ``DataflowGraph`` (see ``frontend.graph``).
    capacity_bytes:
        on-chip memory in bytes (per PE when ``sizes`` are per PE). Must be at least M_R
        (``min_capacity``).
    order:
        ``"program"`` (the graph's operator order), or a list of every operator name in a
        topological order.
    replacement:
        ``"belady"`` evicts the resident tensor not used by the current operator whose next
        use is furthest (never used again first; ties: larger, then by name), one at a time
        until first fit succeeds. ``"greedy"`` evicts, in one go, the resident tensors under
        the address window ``[x, x + size)`` whose eviction moves the fewest non-compulsory
        bytes (a retrieve for a tensor read again, plus a spill if it has no DRAM copy and is
        not a final output; ties: fewer evicted bytes, then lower ``x``), never covering the
        current operator's tensors, and places the tensor at ``x``; that is locally optimal
        for each eviction, not globally optimal for the schedule (see the module docstring).
        ``"none"`` never evicts and raises ``ScheduleError`` when a tensor does not fit.
    sizes:
        optional tensor name -> bytes, overriding the graph's ``nbytes`` (e.g. per-PE sizes
        on the Pixel 6). Tensors of 0 bytes take no residency and no transfer.
    alignment:
        every on-chip size is rounded up to, and every offset is, a multiple of this.

    Returns
    -------
    Schedule
        with ``offsets`` set to the arena's choices and ``method`` = ``"<order>+<replacement>"``
        (``"program+belady"`` by default; an explicit list of operators is ``"custom"``).
        Transfer ``nbytes`` are the tensor's bytes before alignment padding (the padding is
        never moved); residency sizes include it. ``stats`` holds ``min_capacity`` (M_R),
        ``evictions``, ``compactions``, ``peak_live_bytes`` and ``peak_address``.

    Raises
    ------
    CapacityError
        ``capacity_bytes`` < M_R; names the operator and M_R.
    ScheduleError
        unknown ``order`` / ``replacement``, an order that is not a topological order of
        every operator, bad ``sizes`` or ``alignment``, or (``replacement="none"``) a tensor
        that does not fit, naming the step, operator, tensor and bytes needed vs free.

    Example: operator ``c`` reads ``y`` and ``z`` and writes ``out``, 10 bytes each, so
    M_R = 30 bytes; at that budget everything fits and only compulsory traffic remains.

    >>> from frontend.graph import new_graph, add_tensor, add_operator
    >>> g = new_graph("g", dtype="int8")
    >>> add_tensor(g, "x", (10,), kind="input")
    >>> add_operator(g, "a", "relu", inputs=["x"], outputs={"y": (10,)})
    >>> add_operator(g, "b", "relu", inputs=["y"], outputs={"z": (10,)})
    >>> add_operator(g, "c", "add", inputs=["y", "z"], outputs={"out": (10,)})
    >>> g.graph["tensors"]["out"]["kind"] = "output"
    >>> s = schedule(g, 30)
    >>> [(t.kind, t.tensor, t.step) for t in s.transfers]
    [('load', 'x', 0), ('store', 'out', 3)]
    >>> from scheduler import CapacityError
    >>> try:
    ...     schedule(g, 20)
    ... except CapacityError as error:
    ...     print(error.operator, error.min_capacity)
    c 30
    """
    if replacement not in REPLACEMENTS:
        raise ScheduleError(f"unknown replacement {replacement!r}; valid values: {', '.join(map(repr, REPLACEMENTS))}")
    if not isinstance(capacity_bytes, int) or isinstance(capacity_bytes, bool) or capacity_bytes <= 0:
        raise ScheduleError(f"capacity_bytes must be a positive integer, got {capacity_bytes!r}")
    check_alignment(alignment)
    names = resolve_order(graph, order)
    onchip = onchip_sizes(graph, sizes, alignment)
    need = check_capacity(graph, capacity_bytes, sizes, alignment)
    return _online(graph, names, order, capacity_bytes, onchip, data_bytes(graph, sizes), replacement, alignment,
                   need)


def _online(graph: nx.DiGraph, names: list[str], order: str | Sequence[str], capacity: int, onchip: dict[str, int],
            data: dict[str, int], replacement: str, alignment: int, need: int,
            tables: ArenaTables | None = None) -> Schedule:
    """One run of the online first-fit arena (``schedule``'s work once its arguments are checked)."""
    arena = _Arena(graph, names, capacity, onchip, data, replacement, None, tables)
    arena.run()
    result = arena.schedule(order, capacity, alignment, arena.offsets)
    result.stats = {
        "min_capacity": need,
        "evictions": arena.evictions,
        "compactions": arena.compactions,
        "peak_live_bytes": peak_live_bytes(result),
        "peak_address": peak_address(result),
    }
    return result


class DeadlineReached(Exception):
    """``plan_residencies`` passed its ``deadline`` before the plan was complete (no plan)."""


#: steps between two looks at the clock in ``plan_residencies`` (a step costs microseconds)
DEADLINE_STRIDE = 256


def plan_residencies(
    graph: nx.DiGraph,
    budgets: Sequence[int],
    order: str | Sequence[str] = "program",
    replacement: str = "belady",
    sizes: Mapping[str, int] | None = None,
    alignment: int = 1,
    *,
    deadline: float | None = None,
) -> Schedule:
    """Residencies and transfers that keep the *live bytes* of step ``t`` within ``budgets[t]``; no addresses.

    The same online events as ``schedule`` (frees, fetches, outputs; Belady or greedy
    replacement), but a tensor fits when the bytes live at the step plus its own stay within
    the step's budget, whatever the fragmentation: the plan an ideal allocator would need.
    Before the operator of step ``t`` brings anything in, tensors it does not use are evicted
    until the bytes still live fit ``budgets[t]`` (a budget lowered after a step must also
    shed what was already resident). ``replacement="greedy"`` evicts, here, the tensors of
    the lowest non-compulsory cost per on-chip byte first (ties: furthest next use, then
    name): there is no address window to choose. Each budget is raised to the step's own
    footprint (its operator's inputs and outputs; below it the operator cannot run), so the
    plan always completes. ``allocation_aware`` (``scheduler.spill_loop``) lowers the budgets
    where an allocator could not place the plan, and tries again.

    Returns a ``Schedule`` without offsets (``offsets`` None), whose peak live bytes are at
    most ``max(budgets)``; ``stats`` holds ``evictions`` and ``peak_live_bytes``. With a
    ``deadline`` (a ``time.perf_counter()`` value) the plan raises ``DeadlineReached`` once the
    clock passes it (looked at every ``DEADLINE_STRIDE`` steps): on graphs of 100,000
    operators a plan takes seconds, and the spill loop's ``timeout`` covers it.

    >>> from frontend.synthetic import chain
    >>> g = chain(4, size=10)
    >>> plan = plan_residencies(g, [30] * 4)
    >>> plan.offsets is None, plan.noncompulsory_bytes, plan.stats["peak_live_bytes"]
    (True, 0, 30)
    """
    return Planner(graph, order, replacement, sizes, alignment).plan(budgets, deadline=deadline)


class Planner:
    """``plan_residencies`` for one graph, order, replacement and sizes, with the work every plan
    shares (the order, on-chip and transfer sizes, step floors, ``ArenaTables``) done once, at
    construction: the spill loop plans the same graph many times under new budgets, and on a
    graph of 100,000 operators that shared work takes longer than a plan's own run.

    ``plan(budgets, deadline=None)`` gives what ``plan_residencies`` gives for those budgets.
    """

    def __init__(self, graph: nx.DiGraph, order: str | Sequence[str] = "program", replacement: str = "belady",
                 sizes: Mapping[str, int] | None = None, alignment: int = 1) -> None:
        if replacement not in ("belady", "greedy"):
            raise ScheduleError(f"unknown replacement {replacement!r}; valid values: 'belady', 'greedy'")
        check_alignment(alignment)
        self.graph, self.order, self.replacement, self.alignment = graph, order, replacement, alignment
        self.names = resolve_order(graph, order)
        self.onchip = onchip_sizes(graph, sizes, alignment)
        self.data = data_bytes(graph, sizes)
        self.floors = step_footprints(graph, self.names, self.onchip)
        self.total = sum(self.onchip.values())
        self.tables = ArenaTables(graph, self.names, self.onchip)

    def online(self, capacity: int, need: int) -> Schedule:
        """``schedule(graph, capacity, ...)`` for this planner's graph, order, replacement and sizes,
        on its shared tables; ``need`` is M_R, checked by the caller (``check_capacity``)."""
        return _online(self.graph, self.names, self.order, capacity, self.onchip, self.data, self.replacement,
                       self.alignment, need, self.tables)

    def plan(self, budgets: Sequence[int], *, deadline: float | None = None) -> Schedule:
        """Residencies and transfers under ``budgets`` (see ``plan_residencies``)."""
        if len(budgets) != len(self.names):
            raise ScheduleError(f"budgets has {len(budgets)} entries for {len(self.names)} steps")
        steps = [max(int(b), f) for b, f in zip(budgets, self.floors, strict=True)]
        capacity = max(max(steps, default=1), self.total, 1)
        arena = _Arena(self.graph, self.names, capacity, self.onchip, self.data, self.replacement, steps, self.tables)
        arena.run(deadline)
        result = arena.schedule(self.order, max(steps, default=0), self.alignment, None)
        result.stats = {"evictions": arena.evictions, "peak_live_bytes": peak_live_bytes(result)}
        return result


def step_footprints(graph: nx.DiGraph, order: Sequence[str], onchip: Mapping[str, int]) -> list[int]:
    """On-chip bytes each step's operator needs at once (its inputs and outputs): the floor of any budget there."""
    return [operator_bytes(graph, op, onchip) for op in order]


def no_spill_capacity(
    graph: nx.DiGraph, order: str | Sequence[str] = "program", sizes: Mapping[str, int] | None = None,
    alignment: int = 1,
) -> int:
    """The smallest budget at which the baseline moves no byte beyond the compulsory ones.

    It is the highest address the first-fit arena reaches when nothing is ever evicted: at
    this budget every placement succeeds as it did with unbounded memory, and any smaller
    budget forces an eviction (of a tensor needed again: non-compulsory traffic) or a
    compaction (traffic too, unless it only moves tensors filled at that step). Use it with ``min_capacity``
    to span a budget sweep (COSMA's M_R ... M_P axis, for this order and allocator).

    >>> from frontend.graph import new_graph, add_tensor, add_operator
    >>> g = new_graph("g", dtype="int8")
    >>> add_tensor(g, "x", (10,), kind="input")
    >>> add_operator(g, "a", "relu", inputs=["x"], outputs={"y": (10,)})
    >>> add_operator(g, "b", "relu", inputs=["y"], outputs={"z": (10,)})
    >>> add_operator(g, "c", "add", inputs=["y", "z"], outputs={"out": (10,)})
    >>> no_spill_capacity(g)
    30
    """
    total = sum(onchip_sizes(graph, sizes, alignment).values())
    # First fit never reaches beyond the sum of every size placed so far, so this cannot fail.
    result = schedule(graph, max(total, 1), order, "none", sizes, alignment)
    return peak_address(result)


class ArenaTables:
    """What every online run over one graph, order and sizes reads and never changes: the steps
    that use each tensor, the tensors each step reads and writes (those with on-chip bytes),
    the tensors that die at each step, the graph's outputs. Built once per ``Planner``, so the
    spill loop's repeated plans pay only for their own run."""

    def __init__(self, graph: nx.DiGraph, order: Sequence[str], onchip: Mapping[str, int]) -> None:
        tensors = graph.graph["tensors"]
        final = set(graph.graph["outputs"])
        self.uses: dict[str, list[int]] = {}
        self.produced: set[str] = set()
        self.step_inputs: list[list[str]] = []
        self.step_outputs: list[list[str]] = []
        last_use: dict[str, int] = {}
        for step, op in enumerate(order):
            node = graph.nodes[op]
            inputs = [t for t in node["in_tensors"] if onchip[t]]
            outputs = [t for t in node["out_tensors"] if onchip[t]]
            self.step_inputs.append(inputs)
            self.step_outputs.append(outputs)
            for t in inputs:
                self.uses.setdefault(t, []).append(step)
                last_use[t] = step
            for t in outputs:
                self.produced.add(t)
                last_use[t] = step
        self.dying: list[list[str]] = [[] for _ in order]
        for t, step in last_use.items():
            self.dying[step].append(t)
        self.final = {t for t in self.produced if tensors[t]["kind"] == "output" or t in final}
        self.in_dram = frozenset(t for t in self.uses if t not in self.produced)


class _Arena:
    """The state of one online run: the resident tensors by address, and what has happened."""

    def __init__(
        self, graph: nx.DiGraph, order: list[str], capacity: int, onchip: dict[str, int], data: dict[str, int],
        replacement: str, budgets: Sequence[int] | None = None, static: ArenaTables | None = None,
    ) -> None:
        self.graph = graph
        #: per step, the most bytes that may be live (``plan_residencies``); None: first fit by address
        self.budgets = budgets
        self.step = 0
        self.order = order
        self.capacity = capacity
        self.onchip = onchip  # tensor -> aligned on-chip bytes
        self.data = data  # tensor -> bytes a transfer moves
        self.replacement = replacement  # one of REPLACEMENTS
        tables = static if static is not None else ArenaTables(graph, order, onchip)
        self.uses = tables.uses  # tensor -> steps that read it, ascending (read only)
        self.produced = tables.produced  # tensors written by an operator (no DRAM copy at first)
        self.dying = tables.dying  # step -> tensors last used there
        self.final = tables.final
        self.step_inputs, self.step_outputs = tables.step_inputs, tables.step_outputs
        self.in_dram = set(tables.in_dram)  # tensors with a DRAM copy (grows as the run stores and spills)
        self.loaded: set[str] = set()  # graph inputs and weights read once already

        self.resident: list[tuple[int, str]] = []  # (offset, tensor), sorted by offset
        self.open: dict[str, tuple[str, int, int]] = {}  # resident tensor -> (residency id, start, offset)
        self.free_bytes = capacity
        self.stays: dict[str, int] = {}  # tensor -> residencies opened so far
        self.residencies: list[Residency] = []
        self.transfers: list[Transfer] = []
        self.offsets: dict[str, int] = {}
        self.evictions = 0
        self.compactions = 0

    def run(self, deadline: float | None = None) -> None:
        for step in range(len(self.order)):
            if deadline is not None and step % DEADLINE_STRIDE == 0 and time.perf_counter() >= deadline:
                raise DeadlineReached(f"the plan passed its deadline at step {step:,} of {len(self.order):,}")
            self.step = step
            if step:
                self._free_dead(step)
            inputs = self.step_inputs[step]
            protected = set(inputs)
            if self.budgets is not None:
                self._shed(step, protected)
            for t in inputs:
                if t not in self.open:
                    self._fetch(t, step, protected)
            outputs = self.step_outputs[step]
            protected.update(outputs)
            for t in outputs:
                self._place(t, step, protected)
        if self.order:
            self._free_dead(len(self.order))
        assert not self.open, f"tensors left resident after the last step: {sorted(self.open)}"

    def schedule(self, order: str | Sequence[str], capacity: int, alignment: int,
                 offsets: dict[str, int] | None) -> Schedule:
        """The finished run as a ``Schedule`` named ``"<order>+<replacement>"`` (an operator list: ``"custom"``)."""
        order_name = order if isinstance(order, str) else "custom"
        return Schedule(
            order=self.order,
            residencies=sorted(self.residencies, key=lambda r: (r.start, r.end, r.id)),
            transfers=self.transfers,
            capacity=capacity,
            alignment=alignment,
            offsets=offsets,
            method=f"{order_name}+{self.replacement}",
        )

    # -- residencies ---------------------------------------------------------------------

    def _open(self, tensor: str, step: int, offset: int) -> str:
        count = self.stays.get(tensor, 0)
        self.stays[tensor] = count + 1
        rid = tensor if count == 0 else f"{tensor}#{count}"
        self.open[tensor] = (rid, step, offset)
        insort(self.resident, (offset, tensor))
        self.free_bytes -= self.onchip[tensor]
        self.offsets[rid] = offset
        return rid

    def _close(self, tensor: str, step: int) -> str:
        rid, start, offset = self.open.pop(tensor)
        del self.resident[bisect_left(self.resident, (offset, tensor))]
        self.free_bytes += self.onchip[tensor]
        self.residencies.append(Residency(rid, tensor, start, step, self.onchip[tensor]))
        return rid

    def _transfer(self, kind: TransferKind, tensor: str, rid: str, step: int) -> None:
        self.transfers.append(Transfer(kind, tensor, rid, step, self.data[tensor]))

    def _free_dead(self, step: int) -> None:
        """Event 1: end the residencies of tensors last used at ``step - 1``; store final outputs."""
        for t in self.dying[step - 1]:
            if t in self.open:
                rid = self._close(t, step)
                if t in self.final and t not in self.in_dram:
                    self._transfer("store", t, rid, step)
                    self.in_dram.add(t)

    def _drop(self, tensor: str, step: int) -> None:
        """End ``tensor``'s residency at ``step``, writing it to DRAM if it is needed and has no copy there."""
        rid = self._close(tensor, step)
        needed = tensor in self.final or self._next_use(tensor, step) != _NEVER
        if needed and tensor not in self.in_dram:
            # A final output's first write is its one compulsory store; an activation's is a spill.
            self._transfer("store" if tensor in self.final else "spill", tensor, rid, step)
            self.in_dram.add(tensor)

    # -- placement -----------------------------------------------------------------------

    def _next_use(self, tensor: str, step: int) -> int:
        uses = self.uses.get(tensor, [])
        i = bisect_left(uses, step)
        return uses[i] if i < len(uses) else _NEVER

    def _first_fit(self, size: int) -> int | None:
        """The lowest offset where ``size`` bytes fit between the resident tensors, or None.

        Under per-step budgets there are no addresses: 0 when the live bytes plus ``size``
        stay within the step's budget, else None.
        """
        if size > self.free_bytes:
            return None
        if self.budgets is not None:
            return 0 if self.capacity - self.free_bytes + size <= self.budgets[self.step] else None
        cursor = 0
        for offset, tensor in self.resident:
            if offset - cursor >= size:
                return cursor
            cursor = offset + self.onchip[tensor]
        return cursor if self.capacity - cursor >= size else None

    def _fetch(self, tensor: str, step: int, protected: set[str]) -> None:
        """Event 2: bring an input on chip; the first read of a graph input or weight is its load."""
        rid = self._place(tensor, step, protected)
        if tensor not in self.produced and tensor not in self.loaded:
            self.loaded.add(tensor)
            self._transfer("load", tensor, rid, step)
        else:
            self._transfer("retrieve", tensor, rid, step)

    def _place(self, tensor: str, step: int, protected: set[str]) -> str:
        """Give ``tensor`` a residency starting at ``step``, evicting or compacting as needed."""
        size = self.onchip[tensor]
        offset = self._first_fit(size)
        if offset is None and self.replacement == "none":
            raise self._no_room(tensor, step)
        if offset is None and self.replacement == "greedy" and self.budgets is None:
            offset = self._evict_window(size, step, protected)
        if offset is None:
            # Belady; for greedy, no window avoids the protected tensors, so no eviction lets first
            # fit succeed and this evicts every unprotected tensor, as compaction requires.
            offset = self._evict_furthest(size, step, protected)
        if offset is None:
            assert self.budgets is None, "a budget is never below the step's own footprint"
            self._compact(step)
            offset = self._first_fit(size)
            assert offset is not None, "compaction must make room at any budget >= M_R"
        return self._open(tensor, step, offset)

    def _victims(self, step: int, protected: set[str]) -> list[str]:
        """The unprotected resident tensors in eviction order: Belady's furthest next use first
        (ties: larger, then name), or under budgets with greedy replacement the lowest
        non-compulsory cost per on-chip byte first (ties: furthest next use, then name)."""
        candidates = [t for _, t in self.resident if t not in protected]
        if self.budgets is not None and self.replacement == "greedy":
            return sorted(candidates, key=lambda t: (self._eviction_cost(t, step) / self.onchip[t],
                                                     -self._next_use(t, step), t))
        return sorted(candidates, key=lambda t: (-self._next_use(t, step), -self.onchip[t], t))

    def _shed(self, step: int, protected: set[str]) -> None:
        """Under budgets: evict tensors ``step`` does not use until the live bytes fit its budget."""
        assert self.budgets is not None
        if self.capacity - self.free_bytes <= self.budgets[step]:
            return
        for victim in self._victims(step, protected):
            self._drop(victim, step)
            self.evictions += 1
            if self.capacity - self.free_bytes <= self.budgets[step]:
                return

    def _evict_furthest(self, size: int, step: int, protected: set[str]) -> int | None:
        """Evict unprotected tensors in ``_victims`` order (Belady by default) until ``size`` bytes fit.

        Returns the offset, or None when it still does not fit."""
        for victim in self._victims(step, protected):
            self._drop(victim, step)
            self.evictions += 1
            offset = self._first_fit(size)
            if offset is not None:
                return offset
        return None

    def _eviction_cost(self, tensor: str, step: int) -> int:
        """Non-compulsory bytes that evicting ``tensor`` at ``step`` causes: its spill and its retrieve."""
        if self._next_use(tensor, step) == _NEVER:
            return 0  # dropped for good (a final output's store then is compulsory)
        spill = tensor not in self.in_dram and tensor not in self.final
        return self.data[tensor] * (2 if spill else 1)

    def _evict_window(self, size: int, step: int, protected: set[str]) -> int | None:
        """Greedy: evict the tensors under the cheapest window of ``size`` bytes; its offset, or None if none is valid.

        Candidates, cost and ties are those of the module docstring; the drops record the transfers.
        """
        best: tuple[int, int, int] | None = None  # (cost, evicted on-chip bytes, x)
        for x in [0] + [offset + self.onchip[t] for offset, t in self.resident]:
            if x + size > self.capacity:
                continue
            covered = self._covered(x, size)
            if any(t in protected for t in covered):
                continue
            key = (sum(self._eviction_cost(t, step) for t in covered), sum(self.onchip[t] for t in covered), x)
            if best is None or key < best:
                best = key
        if best is None:
            return None
        x = best[2]
        for t in self._covered(x, size):
            self._drop(t, step)
            self.evictions += 1
        return x

    def _covered(self, x: int, size: int) -> list[str]:
        """The resident tensors overlapping ``[x, x + size)``, where ``x`` is 0 or a resident tensor's end."""
        # No resident tensor straddles such an x, so the covered ones are those starting in [x, x + size).
        covered = []
        for offset, tensor in self.resident[bisect_left(self.resident, (x, "")):]:
            if offset >= x + size:
                break
            covered.append(tensor)
        return covered

    def _compact(self, step: int) -> None:
        """Slide the (all protected) resident tensors down to offset 0, in address order."""
        self.compactions += 1
        cursor = 0
        for offset, tensor in list(self.resident):
            if offset != cursor:
                rid, start, _ = self.open[tensor]
                if start == step:
                    # Filled at this step, before the operator ran: it can simply be filled elsewhere.
                    del self.resident[bisect_left(self.resident, (offset, tensor))]
                    insort(self.resident, (cursor, tensor))
                    self.open[tensor] = (rid, start, cursor)
                    self.offsets[rid] = cursor
                else:
                    self._drop(tensor, step)
                    self._transfer("retrieve", tensor, self._open(tensor, step, cursor), step)
            cursor += self.onchip[tensor]

    def _no_room(self, tensor: str, step: int) -> ScheduleError:
        size = self.onchip[tensor]
        cursor, gap = 0, 0
        for offset, other in self.resident:
            gap = max(gap, offset - cursor)
            cursor = offset + self.onchip[other]
        gap = max(gap, self.capacity - cursor)
        why = f"; the largest free gap is {gap} bytes (fragmentation)" if self.free_bytes >= size else ""
        return ScheduleError(
            f"step {step} (operator {self.order[step]!r}): tensor {tensor!r} needs {size} bytes but only "
            f"{self.free_bytes} of {self.capacity} bytes are free{why}; replacement='none' never evicts "
            f"(use replacement='belady' or a larger capacity)"
        )

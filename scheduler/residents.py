"""The bookkeeping of an online run: which tensors are on chip at each step of a fixed order.

The scheduler has two online runs, which walk the order once, operator by operator, and share
this bookkeeping (``Residents``): the **address arena** (``scheduler.arena``: first fit by
address, TensorFlow Lite style, the baseline of COSMA §V-A) and the **live-byte planner**
(``scheduler.planner``: a cap on the bytes live at each step, whatever the addresses; the plans
of the allocation-aware spill loop). They differ in how they find room for a tensor
(``room_for``) and in what happens before a step (``before_step``: the planner sheds what its
cap no longer holds); which tensors go to make room is a replacement policy's choice
(``scheduler.replacement``).

Events within step ``t`` (operator ``order[t]``), in this order:

1. residencies of tensors whose last use was step ``t - 1`` end at ``t``; a final output that
   has no DRAM copy yet is stored (compulsory ``store`` at step ``t``);
2. ``before_step`` (the planner evicts tensors the operator does not use until its cap holds);
3. each input of the operator that is not resident is given room (evicting others as needed,
   never another input of the operator) and filled: a graph input or weight's first read is a
   compulsory ``load``, every later read of anything is a ``retrieve``;
4. each output of the operator is given room (evicting as needed, never the operator's own
   inputs or outputs).

An evicted tensor's residency ends at ``t``. It is written to DRAM at step ``t`` only when no
DRAM copy exists yet (tensors are immutable, so one copy serves every later retrieval): an
activation is ``spill``-ed; a final output is ``store``-d -- that write *is* its compulsory
store, so it is counted once, as compulsory, and no second store happens when its last
residency ends; a graph input or weight is simply dropped.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from allocator.core.kernel_clock import work_clock
from scheduler.budget import check_alignment, data_bytes, onchip_sizes
from scheduler.order import resolve_order
from scheduler.schedule import Residency, Schedule, Transfer, TransferKind

if TYPE_CHECKING:
    import networkx as nx

#: the "next use" of a tensor that is not read again
NEVER = sys.maxsize
#: steps between two looks at the clock of a run with a deadline (a step costs microseconds)
DEADLINE_STRIDE = 256


class DeadlineReached(Exception):
    """A run passed its ``deadline`` before it was complete (no schedule)."""


class RunInputs:
    """What every online run over one graph, order and sizes reads and never changes: the order,
    the on-chip and transfer sizes, the steps that use each tensor, the tensors each step reads
    and writes (those with on-chip bytes), the tensors that die at each step, the graph's
    outputs. Made once for the many runs of the spill loop, which then pay only for their own.

    Raises ``ScheduleError`` for a bad ``alignment``, ``order`` or ``sizes``.
    """

    def __init__(self, graph: nx.DiGraph, order: str | Sequence[str], sizes: Mapping[str, int] | None = None,
                 alignment: int = 1) -> None:
        check_alignment(alignment)
        self.graph, self.order, self.alignment = graph, order, alignment  # ``order`` as given: a name or a list
        self.names = resolve_order(graph, order)  #: the operators, one per step
        self.onchip = onchip_sizes(graph, sizes, alignment)  #: tensor -> aligned on-chip bytes
        self.data = data_bytes(graph, sizes)  #: tensor -> bytes a transfer moves
        tensors = graph.graph["tensors"]
        final = set(graph.graph["outputs"])
        self.uses: dict[str, list[int]] = {}  #: tensor -> steps that read it, ascending
        self.produced: set[str] = set()  #: tensors written by an operator (no DRAM copy at first)
        self.step_inputs: list[list[str]] = []
        self.step_outputs: list[list[str]] = []
        last_use: dict[str, int] = {}
        for step, op in enumerate(self.names):
            node = graph.nodes[op]
            inputs = [t for t in node["in_tensors"] if self.onchip[t]]
            outputs = [t for t in node["out_tensors"] if self.onchip[t]]
            self.step_inputs.append(inputs)
            self.step_outputs.append(outputs)
            for t in inputs:
                self.uses.setdefault(t, []).append(step)
                last_use[t] = step
            for t in outputs:
                self.produced.add(t)
                last_use[t] = step
        self.dying: list[list[str]] = [[] for _ in self.names]  #: step -> tensors last used there
        for t, step in last_use.items():
            self.dying[step].append(t)
        self.final = {t for t in self.produced if tensors[t]["kind"] == "output" or t in final}
        self.in_dram = frozenset(t for t in self.uses if t not in self.produced)  #: graph inputs and weights


def run_name(order: str | Sequence[str], replacement: str) -> str:
    """A run's ``Schedule.method``: ``"<order>+<replacement>"``, ``"custom"`` for a list of operators."""
    return f"{order if isinstance(order, str) else 'custom'}+{replacement}"


class Residents:
    """One online run: the open stays of the tensors on chip, and what the run has done so far.

    A subclass says how a tensor finds room (``room_for``: the offset it gets) and may act
    before each step (``before_step``); ``run`` walks the events of the module docstring.
    """

    def __init__(self, inputs: RunInputs) -> None:
        self.inputs = inputs
        self.names = inputs.names
        self.onchip = inputs.onchip
        self.in_dram = set(inputs.in_dram)  # tensors with a DRAM copy (grows as the run stores and spills)
        self.loaded: set[str] = set()  # graph inputs and weights read once already
        self.open: dict[str, tuple[str, int, int]] = {}  # resident tensor -> (residency id, start, offset)
        self.live_bytes = 0  # on-chip bytes of the open stays
        self.stays: dict[str, int] = {}  # tensor -> residencies opened so far
        self.residencies: list[Residency] = []
        self.transfers: list[Transfer] = []
        self.evictions = 0

    # -- what a subclass decides -------------------------------------------------------------

    def room_for(self, tensor: str, step: int, protected: set[str]) -> int:
        """Make room for ``tensor`` at ``step`` (evicting unprotected tensors as needed); its offset."""
        raise NotImplementedError

    def before_step(self, step: int, protected: set[str]) -> None:
        """Act before ``step`` brings anything in (``protected``: the operator's inputs)."""

    # -- the run -------------------------------------------------------------------------------

    def run(self, deadline: float | None = None) -> None:
        """Walk every step's events; ``DeadlineReached`` once ``work_clock()`` passes ``deadline``."""
        steps = len(self.names)
        for step in range(steps):
            if deadline is not None and step % DEADLINE_STRIDE == 0 and work_clock() >= deadline:
                raise DeadlineReached(f"the plan passed its deadline at step {step:,} of {steps:,}")
            if step:
                self._free_dead(step)
            inputs = self.inputs.step_inputs[step]
            protected = set(inputs)
            self.before_step(step, protected)
            for t in inputs:
                if t not in self.open:
                    self._fetch(t, step, protected)
            outputs = self.inputs.step_outputs[step]
            protected.update(outputs)
            for t in outputs:
                self.open_stay(t, step, self.room_for(t, step, protected))
        if steps:
            self._free_dead(steps)
        assert not self.open, f"tensors left resident after the last step: {sorted(self.open)}"

    def schedule(self, method: str, capacity: int, offsets: dict[str, int] | None) -> Schedule:
        """The finished run as a ``Schedule`` called ``method`` (``run_name``)."""
        return Schedule(
            order=self.names,
            residencies=sorted(self.residencies, key=lambda r: (r.start, r.end, r.id)),
            transfers=self.transfers,
            capacity=capacity,
            alignment=self.inputs.alignment,
            offsets=offsets,
            method=method,
        )

    # -- stays and transfers -------------------------------------------------------------------

    def open_stay(self, tensor: str, step: int, offset: int) -> str:
        """Open a residency of ``tensor`` from ``step`` at ``offset``; its id."""
        count = self.stays.get(tensor, 0)
        self.stays[tensor] = count + 1
        rid = tensor if count == 0 else f"{tensor}#{count}"
        self.open[tensor] = (rid, step, offset)
        self.live_bytes += self.onchip[tensor]
        return rid

    def close_stay(self, tensor: str, step: int) -> str:
        """End ``tensor``'s open residency at ``step``; its id."""
        rid, start, _ = self.open.pop(tensor)
        self.live_bytes -= self.onchip[tensor]
        self.residencies.append(Residency(rid, tensor, start, step, self.onchip[tensor]))
        return rid

    def transfer(self, kind: TransferKind, tensor: str, rid: str, step: int) -> None:
        self.transfers.append(Transfer(kind, tensor, rid, step, self.inputs.data[tensor]))

    def _free_dead(self, step: int) -> None:
        """Event 1: end the residencies of tensors last used at ``step - 1``; store final outputs."""
        for t in self.inputs.dying[step - 1]:
            if t in self.open:
                rid = self.close_stay(t, step)
                if t in self.inputs.final and t not in self.in_dram:
                    self.transfer("store", t, rid, step)
                    self.in_dram.add(t)

    def _fetch(self, tensor: str, step: int, protected: set[str]) -> None:
        """Event 3: bring an input on chip; the first read of a graph input or weight is its load."""
        rid = self.open_stay(tensor, step, self.room_for(tensor, step, protected))
        if tensor not in self.inputs.produced and tensor not in self.loaded:
            self.loaded.add(tensor)
            self.transfer("load", tensor, rid, step)
        else:
            self.transfer("retrieve", tensor, rid, step)

    def drop(self, tensor: str, step: int) -> None:
        """End ``tensor``'s residency at ``step``, writing it to DRAM if it is needed and has no copy there."""
        rid = self.close_stay(tensor, step)
        final = tensor in self.inputs.final
        if (final or self.next_use(tensor, step) != NEVER) and tensor not in self.in_dram:
            # A final output's first write is its one compulsory store; an activation's is a spill.
            self.transfer("store" if final else "spill", tensor, rid, step)
            self.in_dram.add(tensor)

    def evict(self, tensor: str, step: int) -> None:
        """Drop ``tensor`` at ``step`` to make room (counted in ``evictions``)."""
        self.drop(tensor, step)
        self.evictions += 1

    # -- what a replacement policy reads -------------------------------------------------------

    def next_use(self, tensor: str, step: int) -> int:
        """The first step at or after ``step`` that reads ``tensor`` (``NEVER``: none)."""
        uses = self.inputs.uses.get(tensor, [])
        i = bisect_left(uses, step)
        return uses[i] if i < len(uses) else NEVER

    def eviction_cost(self, tensor: str, step: int) -> int:
        """Non-compulsory bytes that evicting ``tensor`` at ``step`` causes: its spill and its retrieve."""
        if self.next_use(tensor, step) == NEVER:
            return 0  # dropped for good (a final output's store then is compulsory)
        spill = tensor not in self.in_dram and tensor not in self.inputs.final
        return self.inputs.data[tensor] * (2 if spill else 1)

    def candidates(self, protected: set[str]) -> list[str]:
        """The resident tensors that may be evicted: those the current operator does not use."""
        return [t for t in self.open if t not in protected]

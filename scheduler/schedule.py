"""The ``Schedule``: what the scheduler decides and every later stage consumes.

A schedule runs one operator per logical timestep (``order[t]`` runs at step ``t``) and says
when each tensor is on chip. Each stay of a tensor in on-chip memory is one ``Residency``
(an ``allocator.Buffer`` once sized); a tensor spilled and later retrieved has two.

Transfer timing convention (shared with the simulator):

* ``load`` / ``retrieve`` at step ``s`` fill a residency that starts at ``s``; they must finish
  before operator ``order[s]`` starts.
* ``store`` / ``spill`` at step ``e`` drain a residency that ends at ``e`` (its last step is
  ``e - 1``); they start after operator ``order[e - 1]`` finishes and must finish before the
  residency's address range is reused.

Traffic is compulsory (graph inputs and weights read once, final outputs written once) or
non-compulsory (spills and the retrievals that bring spilled or evicted tensors back).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from allocator import Buffer, Problem

TransferKind = Literal["load", "store", "spill", "retrieve"]

#: every transfer kind, in the order reports list them
TRANSFER_KINDS: tuple[TransferKind, ...] = ("load", "store", "spill", "retrieve")


class ScheduleError(ValueError):
    """A graph, order or option the scheduler cannot use, or a graph that does not fit.

    The message names the offending operator, tensor or option (and, for a placement that
    failed, the step and the bytes needed against the bytes free).
    """


class CapacityError(ScheduleError):
    """The budget is below M_R, the memory one operator needs for its own inputs and outputs.

    ``operator`` is the operator that needs the most; ``min_capacity`` (bytes) is M_R, the
    smallest budget at which every operator can run (COSMA section V-A).
    """

    def __init__(self, message: str, operator: str, min_capacity: int) -> None:
        super().__init__(message)
        self.operator = operator
        self.min_capacity = min_capacity


@dataclass(frozen=True)
class Residency:
    """One stay of a tensor in on-chip memory, live on ``[start, end)``."""

    id: str  #: buffer id, unique in the schedule: ``"<tensor>"`` or ``"<tensor>#<k>"`` for the k-th stay
    tensor: str  #: name of the tensor in ``graph.graph["tensors"]``
    start: int  #: first step at which the tensor occupies memory
    end: int  #: first step at which it no longer does (exclusive)
    size: int  #: on-chip bytes (per PE where the hardware splits tensors over PEs)

    def buffer(self, alignment: int = 1) -> Buffer:
        """This residency as an allocator buffer."""
        return Buffer(self.id, self.start, self.end, self.size, alignment)


@dataclass(frozen=True)
class Transfer:
    """One DMA between DRAM and on-chip memory (see the module docstring for timing)."""

    kind: TransferKind
    tensor: str  #: tensor name
    residency: str  #: id of the residency filled (load/retrieve) or drained (store/spill)
    step: int  #: step boundary at which it happens
    nbytes: int  #: bytes moved (per PE where the hardware splits tensors over PEs)
    #: a load or retrieve: the step at whose operator's start it may be issued, at most ``step``
    #: (earlier is a prefetch: it overlaps the compute of the steps before); None: not planned, the
    #: simulator plans it with its prefetch policy (``accelsim.sim``)
    issue_step: int | None = None

    @property
    def compulsory(self) -> bool:
        """Loads of inputs/weights and stores of outputs are compulsory; spills and retrievals are not."""
        return self.kind in ("load", "store")

    @property
    def to_chip(self) -> bool:
        return self.kind in ("load", "retrieve")


@dataclass
class Schedule:
    """Operator order, residencies, transfers and (optionally) the offsets the scheduler chose.

    ``offsets`` maps residency ids to byte offsets when the scheduler placed them itself (the
    baseline's online arena placement and COSMA do); ``problem()`` exposes the residencies as
    an ``allocator.Problem`` so any allocator can re-place them.
    """

    order: list[str]  #: operator node names, one per step
    residencies: list[Residency]
    transfers: list[Transfer]
    capacity: int  #: bytes of on-chip memory the schedule was made for
    alignment: int = 1  #: every residency offset must be a multiple of this
    offsets: dict[str, int] | None = None  #: residency id -> offset, when the scheduler chose them
    method: str = ""  #: which scheduler made it, e.g. "program+belady"
    stats: dict[str, float] = field(default_factory=dict)
    #: "optimal" / "feasible" / "timeout" for the solver-based schedulers (``scheduler.cosma``),
    #: "heuristic" for the baselines
    status: str = "heuristic"
    #: who chose ``offsets``: the allocator method, "online-first-fit" for the baseline's arena,
    #: "" when the scheduler's own (COSMA's CP-SAT addresses) or unset
    placed_by: str = ""
    #: the allocation-aware loop's attempts (``scheduler.spill_loop.Round``), empty for the other schedulers
    rounds: list[Any] = field(default_factory=list)

    def problem(self, capacity: int | None = -1) -> Problem:
        """The residencies as an allocation problem (default: under this schedule's capacity)."""
        cap = self.capacity if capacity == -1 else capacity
        # columns, checked with whole-array operations: a Buffer object per residency cost
        # seconds on graphs of 100,000 operators, inside the allocate stage's time limit
        rs = self.residencies
        count = len(rs)
        return Problem.from_arrays(
            [r.id for r in rs], np.fromiter((r.start for r in rs), np.int64, count),
            np.fromiter((r.end for r in rs), np.int64, count), np.fromiter((r.size for r in rs), np.int64, count),
            np.full(count, self.alignment, np.int64), capacity=cap)

    def with_offsets(self, offsets: Mapping[str, int]) -> Schedule:
        """A copy whose residencies are placed at ``offsets`` (e.g. from another allocator)."""
        return Schedule(
            list(self.order), list(self.residencies), list(self.transfers), self.capacity,
            self.alignment, dict(offsets), self.method, dict(self.stats), self.status, self.placed_by,
            list(self.rounds),
        )

    @property
    def compulsory_bytes(self) -> int:
        return sum(t.nbytes for t in self.transfers if t.compulsory)

    @property
    def noncompulsory_bytes(self) -> int:
        return sum(t.nbytes for t in self.transfers if not t.compulsory)

    @property
    def read_bytes(self) -> int:
        """Bytes read from DRAM (loads and retrievals)."""
        return sum(t.nbytes for t in self.transfers if t.to_chip)

    @property
    def write_bytes(self) -> int:
        """Bytes written to DRAM (stores and spills)."""
        return sum(t.nbytes for t in self.transfers if not t.to_chip)


def live_bytes_over_time(schedule: Schedule) -> list[int]:
    """On-chip bytes occupied at each step: element ``t`` sums the residencies live at step ``t``.

    >>> s = Schedule(["a", "b"], [Residency("x", "x", 0, 2, 4), Residency("y", "y", 1, 2, 8)], [], 16)
    >>> live_bytes_over_time(s)
    [4, 12]
    """
    steps = max([len(schedule.order)] + [r.end for r in schedule.residencies])
    delta = [0] * (steps + 1)
    for r in schedule.residencies:
        delta[r.start] += r.size
        delta[r.end] -= r.size
    live, total = [], 0
    for change in delta[:steps]:
        total += change
        live.append(total)
    return live


def peak_live_bytes(schedule: Schedule) -> int:
    """The most on-chip bytes live at one step (0 for an empty schedule).

    This is the load an ideal allocator would need; ``peak_address`` is what the chosen offsets
    actually reach (the difference is fragmentation).
    """
    return max(live_bytes_over_time(schedule), default=0)


def peak_address(schedule: Schedule) -> int:
    """The highest byte the chosen offsets reach: max of offset + size (0 without offsets)."""
    if not schedule.offsets:
        return 0
    return max((schedule.offsets[r.id] + r.size for r in schedule.residencies), default=0)


def bytes_by_kind(schedule: Schedule) -> dict[str, int]:
    """DRAM bytes moved per transfer kind, every kind present (``load``, ``store``, ``spill``, ``retrieve``)."""
    totals: dict[str, int] = dict.fromkeys(TRANSFER_KINDS, 0)
    for t in schedule.transfers:
        totals[t.kind] += t.nbytes
    return totals

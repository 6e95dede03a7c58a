"""The ``Schedule``: what the scheduler decides and every later stage consumes.

A schedule runs one operator per logical timestep (``order[t]`` runs at step ``t``) and says
when each tensor is on chip. Each stay of a tensor in on-chip memory is one ``Residency``
(an ``allocator.Buffer`` once sized); a tensor spilled and later retrieved has two.

Transfer timing convention (shared with the simulator):

* ``load`` / ``retrieve`` at step ``s`` must finish before operator ``order[s]`` starts. They
  are issued at their ``issue_step`` ``i <= s`` (``s`` when None), at the boundary before
  operator ``order[i]``, and the residency they fill starts at ``i``: its range is reserved
  from the issue on. ``i < s`` is a prefetch, overlapping the compute of steps ``i .. s - 1``
  (``scheduler.load_timing`` plans it); no operator before ``s`` may use the tensor.
* ``store`` / ``spill`` at step ``e`` drain a residency that ends at ``e`` (its last step is
  ``e - 1``); they start after operator ``order[e - 1]`` finishes and must finish before the
  residency's address range is reused.

Traffic is compulsory (graph inputs and weights read once, final outputs written once) or
non-compulsory (spills and the retrievals that bring spilled or evicted tensors back).

Besides the schedule itself, a scheduler says what it measured (``ScheduleStats``), who chose
the offsets (``PlacedBy``) and, for the allocation-aware spill loop, each attempt (``Round``).
This module imports nothing heavy (the allocator's types load when a problem is built), so the
scheduler's registry and the command line can name these types for free.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
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
        from allocator import Buffer

        return Buffer(self.id, self.start, self.end, self.size, alignment)


@dataclass(frozen=True)
class Transfer:
    """One DMA between DRAM and on-chip memory (see the module docstring for timing)."""

    kind: TransferKind
    tensor: str  #: tensor name
    residency: str  #: id of the residency filled (load/retrieve) or drained (store/spill)
    #: a drain: the step boundary at which it starts; a fill: the step whose operator needs it
    step: int
    nbytes: int  #: bytes moved (per PE where the hardware splits tensors over PEs)
    #: a load or retrieve: the step at whose boundary it is issued, at most ``step``, where its
    #: residency starts (earlier is a prefetch: it overlaps the compute of the steps before); None:
    #: at ``step``. A drain: None or ``step``
    issue_step: int | None = None

    @property
    def issued_at(self) -> int:
        """The step at whose boundary the transfer is issued: ``issue_step``, or ``step`` when None."""
        return self.step if self.issue_step is None else self.issue_step

    @property
    def compulsory(self) -> bool:
        """Loads of inputs/weights and stores of outputs are compulsory; spills and retrievals are not."""
        return self.kind in ("load", "store")

    @property
    def to_chip(self) -> bool:
        return self.kind in ("load", "retrieve")


#: who chose a schedule's offsets (``PlacedBy.placer``)
Placer = Literal["nobody", "online arena", "own addresses", "allocator"]


@dataclass(frozen=True)
class PlacedBy:
    """Who chose a schedule's ``offsets`` (``Schedule.placed_by``).

    ``placer`` is ``"nobody"`` (no offsets, or offsets a caller set by hand), ``"online arena"``
    (the scheduler's online first-fit arena, ``scheduler.arena``: ``scheduler.registry.BY_ONLINE_ARENA``),
    ``"own addresses"`` (the scheduler placed its tensors itself, as COSMA's CP-SAT model does)
    or ``"allocator"`` (an ``allocator.METHODS`` method). ``name`` is how reports name it
    (report.json's ``allocator``): the method, the arena's registered name, or the scheduler's
    own words (``"cosma (CP-SAT addresses)"``); empty for nobody.

    >>> PlacedBy.by_allocator("best-fit")
    PlacedBy(placer='allocator', name='best-fit')
    """

    placer: Placer = "nobody"
    name: str = ""

    @classmethod
    def by_allocator(cls, method: str) -> PlacedBy:
        """Placed by the ``allocator.METHODS`` method ``method``."""
        return cls("allocator", method)


#: nobody chose the offsets (the default of a ``Schedule``)
NOBODY = PlacedBy()


@dataclass
class ScheduleStats:
    """What a scheduler measured: one field per statistic, None where the scheduler sets none.

    Counts and bytes are ints, yes/no values bools, seconds floats. ``as_report`` renders the
    record as report.json's ``scheduler_stats`` (``accelsim.results.SimReport``) has always
    shown it.
    """

    min_capacity: int | None = None  #: M_R, bytes (every scheduler; not a plan of the spill loop)
    evictions: int | None = None  #: residencies ended early to make room (the online arena, the spill loop)
    compactions: int | None = None  #: the online arena's slides of an operator's own tensors
    peak_live_bytes: int | None = None  #: the most bytes live at one step
    peak_address: int | None = None  #: the highest byte the offsets reach (0 without offsets)
    #: a wall-clock limit, not a work limit, ended a search (set by ``make_schedule`` and the
    #: solvers; a schedule that never looked at a clock leaves it None)
    clock_stopped: bool | None = None
    # -- the allocation-aware spill loop (``scheduler.spill_loop``) ----------------------------
    rounds: int | None = None  #: plans tried (``Schedule.rounds`` holds each)
    fitted: bool | None = None  #: a plan of the loop was placed within the capacity
    #: the fitted plan's non-compulsory bytes; None when no plan fitted (the report shows -1)
    loop_noncompulsory_bytes: int | None = None
    online_noncompulsory_bytes: int | None = None  #: the online arena's, on the same order
    online_kept: bool | None = None  #: the online arena's schedule moved fewer bytes and was kept
    loop_seconds: float | None = None  #: wall time of the loop, plans and placements
    # -- min-peak's order (``scheduler.cosma.min_peak``) ---------------------------------------
    order_peak: int | None = None  #: the peak footprint of the order
    order_status_optimal: bool | None = None  #: the solver proved the order's peak minimal
    # -- the CP-SAT models (``scheduler.cosma``) -----------------------------------------------
    objective: int | None = None  #: the solver's non-compulsory bytes
    bound: int | None = None  #: its proven lower bound on them
    gap: float | None = None  #: (objective - bound) / objective
    solve_seconds: float | None = None  #: the solver's wall time
    warm_start: bool | None = None  #: the warm start's fixed-order answer moved nothing and was kept
    variables: int | None = None  #: the model's variables
    constraints: int | None = None  #: the model's constraints
    parts: int | None = None  #: the parts of ``cosma-dnc``
    # -- load timing (``scheduler.load_timing``) ------------------------------------------------
    load_timing_rounds: int | None = None  #: placements the load-timing planner tried (0: it kept the offsets)

    def as_report(self) -> dict[str, float]:
        """The statistics as report.json's ``scheduler_stats`` shows them, unchanged since it was a
        plain dict: the fields set, in the order the scheduler that sets them lists them (the
        spill loop's, the CP-SAT models' or the online arena's, then min-peak's order);
        yes/no values as 1.0 or 0.0, the model's sizes and the seconds as floats, counts and
        bytes as ints, and the loop's ``loop_noncompulsory_bytes`` -1 when no plan fitted.

        >>> ScheduleStats(min_capacity=30, evictions=0, compactions=0, peak_live_bytes=30, peak_address=30,
        ...               clock_stopped=False).as_report()
        {'min_capacity': 30, 'evictions': 0, 'compactions': 0, 'peak_live_bytes': 30, 'peak_address': 30, \
'clock_stopped': 0.0}
        """
        names: tuple[str, ...]
        if self.rounds is not None:
            names = _LOOP_FIELDS
        elif self.objective is not None:
            names = _SOLVER_FIELDS
        else:
            names = _ONLINE_FIELDS
        shown: dict[str, float] = {}
        for name in names + _ORDER_FIELDS + _TIMING_FIELDS:
            value = getattr(self, name)
            if value is None and name == "loop_noncompulsory_bytes":
                value = -1
            if value is None:
                continue
            shown[name] = float(value) if isinstance(value, bool) or name in _FLOAT_FIELDS else value
        return shown


#: the report's order of each scheduler's statistics (``ScheduleStats.as_report``)
_ONLINE_FIELDS = ("min_capacity", "evictions", "compactions", "peak_live_bytes", "peak_address", "clock_stopped")
_LOOP_FIELDS = ("min_capacity", "rounds", "fitted", "loop_noncompulsory_bytes", "online_noncompulsory_bytes",
                "online_kept", "clock_stopped", "loop_seconds", "evictions", "peak_live_bytes", "peak_address")
_SOLVER_FIELDS = ("min_capacity", "objective", "bound", "gap", "solve_seconds", "peak_live_bytes", "peak_address",
                  "warm_start", "variables", "constraints", "parts", "clock_stopped")
_ORDER_FIELDS = ("order_peak", "order_status_optimal")
_TIMING_FIELDS = ("load_timing_rounds",)
#: the ints the report has always shown as floats
_FLOAT_FIELDS = frozenset({"variables", "constraints", "parts"})


@dataclass(frozen=True)
class Round:
    """One plan-and-place attempt of the allocation-aware spill loop (``scheduler.spill_loop``)."""

    noncompulsory_bytes: int  #: the plan's spill and retrieve bytes
    peak_live_bytes: int  #: the plan's most live bytes at one step
    residencies: int
    status: str  #: the allocator's status for the plan: solved, failed, infeasible, timeout ("no gain": not placed)
    peak: int | None  #: the highest address of the allocator's placement, if it returned one
    lowered: int  #: steps whose cap this round lowered for the next (0 when it fit or could not progress)
    seconds: float
    #: "fit": lowering caps until a plan fits; "relax": raising them back halfway towards the capacity
    phase: str = "fit"
    #: the placement's work limit (``allocator.METHODS[name].work_limit``: nodes, deterministic time or
    #: runs); None: none was set
    limit: float | None = None
    clock_stopped: bool = False  #: the wall-clock ``timeout`` ended this placement (or the loop before it)


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
    stats: ScheduleStats = field(default_factory=ScheduleStats)
    #: "optimal" / "feasible" / "timeout" for the solver-based schedulers (``scheduler.cosma``),
    #: "heuristic" for the baselines
    status: str = "heuristic"
    placed_by: PlacedBy = NOBODY  #: who chose ``offsets``
    #: the allocation-aware loop's attempts, empty for the other schedulers
    rounds: list[Round] = field(default_factory=list)

    def problem(self) -> Problem:
        """The residencies as an allocation problem under this schedule's capacity."""
        return self.problem_under(self.capacity)

    def problem_under(self, capacity: int | None) -> Problem:
        """The residencies as an allocation problem under ``capacity`` bytes, or without a
        capacity (None: to see where an allocator's placement reaches)."""
        import numpy as np

        from allocator import Problem

        # columns, checked with whole-array operations: a Buffer object per residency is slow on
        # large graphs, and this runs inside the allocate stage's time limit
        rs = self.residencies
        count = len(rs)
        return Problem.from_arrays(
            [r.id for r in rs], np.fromiter((r.start for r in rs), np.int64, count),
            np.fromiter((r.end for r in rs), np.int64, count), np.fromiter((r.size for r in rs), np.int64, count),
            np.full(count, self.alignment, np.int64), capacity=capacity)

    def with_offsets(self, offsets: Mapping[str, int]) -> Schedule:
        """A copy whose residencies are placed at ``offsets`` (e.g. from another allocator)."""
        return Schedule(
            list(self.order), list(self.residencies), list(self.transfers), self.capacity,
            self.alignment, dict(offsets), self.method, dataclasses.replace(self.stats), self.status, self.placed_by,
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

"""Spilling decided by the allocator: re-plan the residencies until the chosen allocator places them.

The online first-fit arena (``scheduler.arena``) decides its spills by its own placement, so a
better offline allocator could only re-place the same residencies: it changed the peak address,
never the DRAM traffic. Here the allocator decides whether a residency plan fits, and where it
does not, the plan spills more, only where it failed.

The loop (``allocation_aware``), for a capacity ``C`` and a fixed operator order:

1. **Plan.** The live-byte planner (``scheduler.planner``) proposes residencies under a
   per-step cap ``B[t]`` on *live bytes*, all ``C`` at first: a tensor stays on chip while the
   bytes live at the step fit its cap, whatever the fragmentation (the plan an ideal allocator
   would need). Victims are chosen by the replacement policy (``scheduler.replacement``: Belady,
   furthest next use; greedy, the lowest non-compulsory cost per byte) among the tensors live at
   that step that its operator does not use.
2. **Place.** The chosen allocator (any ``allocator.METHODS`` name;
   ``allocator.DEFAULT_METHOD`` by default) places the plan's residencies offline in ``C``. If
   it does, the loop ends: that plan and those offsets are the answer.
3. **Find the failing window.** Otherwise the placement it returned (a heuristic that missed
   returns one above ``C``), or, when it returned none (an exact search that proved the plan
   infeasible or ran out of work), ``allocator.core.defaults.UNBOUNDED_METHOD``'s placement of
   the same residencies without a capacity, says where the plan overflows: at step ``t`` the
   overflow ``o[t]`` is how far the highest buffer live at ``t`` reaches above ``C``.
4. **Lower the caps there.** At every overflowing step, ``B[t]`` becomes the plan's live
   bytes at ``t`` minus ``o[t]`` (rounded down to the alignment), but never below the step's
   own footprint (its operator's inputs and outputs). The next plan must evict at least
   ``o[t]`` more bytes at each such step, chosen again by the replacement policy; steps that
   did not overflow keep their caps. Everything is re-solved from scratch: the plan
   (milliseconds) and the placement (half of the work left per round, see below).

5. **Relax.** Lowering by the whole overflow at every overflowing step is often more than
   the allocator needed. Once a plan fits, its caps ``L`` (fits) and ``H`` (all ``C``) are
   bisected: the next trial is ``(L + H) / 2`` per step (aligned); a trial plan that would not
   move fewer bytes than the best fit is not even placed and becomes ``H``; one that the
   allocator places becomes the best fit and ``L``, one it cannot becomes ``H``. At most
   ``MAX_RELAX_ROUNDS`` such rounds; what this phase saves is measured in
   ``docs/results/spills.md``.

**Termination.** Each phase-1 round that does not fit lowers at least one cap by at least
one alignment unit, and no cap goes below its floor, so the sum of the caps strictly
decreases and phase 1 ends after finitely many rounds; it also ends after ``max_rounds``
rounds, when the work limit (or the time, with a ``timeout``) runs out, or when no
overflowing step can be lowered any more (every one at its floor): the loop's answer is then
*no fit*. Phase 2 has at most ``MAX_RELAX_ROUNDS`` rounds and only ever replaces the fit by one
that moves fewer bytes.

**Work limits, not seconds.** Every limit of the loop counts work, so the same graph and
capacity give the same answer on any machine, under any load, with a cold or a warm compile
cache: at most ``max_rounds`` plans and ``MAX_RELAX_ROUNDS`` relaxations, and for each
allocator whose search would otherwise run until a deadline, a limit in the unit of its own
options record (``allocator.METHODS[name].work_limit``: search nodes, CP-SAT deterministic
time, a number of runs). A shared limit (``WorkLimit.shared``) is the loop's: a phase-1
placement gets half of what is left, a relaxation a quarter, and a placement that does not fit
is charged its whole share (a search that fails stops at its limit, unless it proves the plan
infeasible first; its own count of work is not charged because with several threads it is not
reproducible, while the limit is). Methods without a work limit end by themselves (one pass,
or a search bounded by its own options); one whose only limit is a clock runs to its verdict
unless a ``timeout`` is given.

A ``timeout`` adds a wall-clock limit as a safety net, off by default: each placement then
also gets half (a relaxation a quarter) of the time left. The clock covers the whole loop,
plans included (a plan looks at it every ``DEADLINE_STRIDE`` steps, since a plan of a very
large graph takes seconds), so the loop ends within the timeout plus one placement's overrun;
the online arena's schedule, the safety net below, is made before the clock starts
(``loop_seconds``, the flow's allocate stage, does not include it). When the clock ends a
placement or the loop before its work limit does, the answer depends on the machine, and
``stats.clock_stopped`` is True (``Round.clock_stopped`` says which placement).

**The online arena as the safety net.** The online first-fit arena always completes at any
``C >= M_R`` (it compacts), and costs milliseconds, so the loop runs it too and keeps whichever
result moves fewer non-compulsory bytes (ties: the allocator's plan): a compiler would rather
not fail where a simpler placement succeeds, and the result is never worse than the online
first fit. ``Schedule.stats`` says what happened: ``rounds``, ``fitted`` (the loop's plan fit),
``loop_noncompulsory_bytes`` (None without a fit), ``online_noncompulsory_bytes``,
``online_kept`` (the online arena's schedule was kept), and ``Schedule.placed_by`` names who
chose the offsets.

Deterministic without a ``timeout``, for every allocator whose search is bounded by work.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import networkx as nx

from allocator.core.defaults import DEFAULT_METHOD, UNBOUNDED_METHOD
from allocator.core.kernel_clock import work_clock
from scheduler.budget import check_alignment, check_capacity
from scheduler.options import DEFAULT_REPLACEMENT
from scheduler.order import PROGRAM
from scheduler.planner import Planner
from scheduler.registry import BY_ONLINE_ARENA
from scheduler.replacement import policy
from scheduler.residents import DeadlineReached, run_name
from scheduler.schedule import (
    PlacedBy,
    Round,
    Schedule,
    ScheduleError,
    ScheduleStats,
    live_bytes_over_time,
    peak_address,
    peak_live_bytes,
)

#: the most rounds of the relaxation (phase 2, see the module docstring)
MAX_RELAX_ROUNDS = 8


def user_limit(method: str, options: Mapping[str, Any]) -> bool:
    """Whether ``options`` (``allocator.solve`` keywords) already bound ``method``'s work in the
    unit of its work limit (``allocator.METHODS[method].work_limit``): the field given as a
    keyword, or set (not to its default) in an ``options`` record."""
    import allocator

    limit = allocator.METHODS[method].work_limit
    if limit is None:
        return False
    if limit.option in options:
        return True
    record = options.get("options")
    if record is None or not dataclasses.is_dataclass(record):
        return False
    default = {f.name: f.default for f in dataclasses.fields(record)}.get(limit.option, dataclasses.MISSING)
    return default is not dataclasses.MISSING and getattr(record, limit.option, default) != default


def _overflow(plan: Schedule, offsets: Mapping[str, int], capacity: int, steps: int) -> list[int]:
    """Per step, how far the highest buffer live there reaches above ``capacity`` (0 where it fits)."""
    over = [0] * steps
    for r in plan.residencies:
        top = offsets[r.id] + r.size - capacity
        if top > 0:
            for t in range(r.start, min(r.end, steps)):
                if top > over[t]:
                    over[t] = top
    return over


def allocation_aware(
    graph: nx.DiGraph,
    capacity_bytes: int,
    allocator: str = DEFAULT_METHOD,
    order: str | Sequence[str] = PROGRAM,
    replacement: str = DEFAULT_REPLACEMENT,
    sizes: Mapping[str, int] | None = None,
    alignment: int = 1,
    timeout: float | None = None,
    allocator_options: Mapping[str, Any] | None = None,
    max_rounds: int = 64,
    work_limit: float | None = None,
) -> Schedule:
    """Schedule ``graph`` in a fixed order with spills decided by ``allocator`` (see the module docstring).

    Parameters
    ----------
    graph, capacity_bytes, order, replacement, sizes, alignment:
        as for ``scheduler.baseline.schedule`` (``replacement`` a policy that evicts:
        ``"belady"`` or ``"greedy"``).
    allocator:
        an ``allocator.METHODS`` name that places each plan (``allocator.DEFAULT_METHOD`` by default).
    timeout:
        a wall-clock safety net in seconds for the whole loop, off by default (None): each
        placement gets half of the time left (a relaxation a quarter; all of it under 0.1 s);
        when it runs out the best result so far is returned (the online arena's if no plan
        fitted) and ``stats.clock_stopped`` is True.
    allocator_options:
        keyword options for ``allocator.solve``. One that bounds the work in the unit of
        ``allocator.METHODS[name].work_limit`` (``node_limit``, or a record with it set)
        replaces the loop's work limit: every placement gets that limit.
    max_rounds:
        the most plans tried.
    work_limit:
        the loop's work limit for an allocator with a shared ``allocator.METHODS[name].work_limit``,
        in its unit (default: the entry's; ``math.inf``: none, so only ``timeout`` bounds the search).

    Returns
    -------
    Schedule
        with ``offsets``, ``placed_by`` (the allocator, or the online arena) and ``stats``
        (``rounds``, ``fitted``, ``loop_noncompulsory_bytes``, ``online_noncompulsory_bytes``,
        ``online_kept``, ``clock_stopped``, ``loop_seconds``, ``min_capacity``, ``evictions``,
        ``peak_live_bytes``, ``peak_address``). ``stats.rounds`` counts plans; the details of
        each are in ``Schedule.rounds``.

    Raises ``CapacityError`` below M_R and ``ScheduleError`` for a bad option; an unknown
    allocator raises ``allocator.UnknownMethodError``.

    >>> from frontend.synthetic import chain
    >>> s = allocation_aware(chain(4, size=10), 30, allocator="best-fit")
    >>> s.placed_by.name, s.noncompulsory_bytes, s.stats.fitted, s.stats.clock_stopped
    ('best-fit', 0, True, False)
    """
    import allocator as alloc

    if allocator not in alloc.METHODS:
        raise alloc.UnknownMethodError(
            f"unknown allocator method {allocator!r}; known: {', '.join(sorted(alloc.METHODS))}")
    policy(replacement, evicting=True)
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        raise ScheduleError(f"max_rounds must be a positive integer, got {max_rounds!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                or not timeout > 0 or timeout == float("inf")):
        raise ScheduleError(f"timeout must be a positive, finite number of seconds, got {timeout!r}")
    if work_limit is not None and (isinstance(work_limit, bool) or not isinstance(work_limit, int | float)
                                   or not work_limit > 0):
        raise ScheduleError(f"work_limit must be a positive amount of work (math.inf: none), got {work_limit!r}")
    check_alignment(alignment)
    need = check_capacity(graph, capacity_bytes, sizes, alignment)
    planner = Planner(graph, order, replacement, sizes, alignment)  # what every plan shares, made once
    # the online arena's schedule, the safety net kept when it moves fewer bytes: one pass over
    # the order, made before the loop's clock starts
    online = planner.online(capacity_bytes, need)
    began = work_clock()
    deadline = None if timeout is None else began + timeout
    loop = _Loop(planner, capacity_bytes, allocator, dict(allocator_options or {}), work_limit, max_rounds, deadline)
    loop.fit_phase()
    loop.relax_phase()
    fitted = loop.fitted
    if fitted is not None:
        fitted.capacity = capacity_bytes
    loop_seconds = work_clock() - began
    keep_online = fitted is None or online.noncompulsory_bytes < fitted.noncompulsory_bytes
    chosen = online if keep_online else fitted
    assert chosen is not None
    chosen.method = run_name(order, replacement)
    chosen.placed_by = BY_ONLINE_ARENA if keep_online else PlacedBy.by_allocator(allocator)
    chosen.rounds = loop.rounds
    chosen.stats = ScheduleStats(
        min_capacity=need, rounds=len(loop.rounds), fitted=fitted is not None,
        loop_noncompulsory_bytes=None if fitted is None else fitted.noncompulsory_bytes,
        online_noncompulsory_bytes=online.noncompulsory_bytes, online_kept=keep_online,
        clock_stopped=loop.clock_stopped, loop_seconds=loop_seconds,
        evictions=online.stats.evictions if keep_online else loop.fitted_evictions,
        peak_live_bytes=peak_live_bytes(chosen), peak_address=peak_address(chosen))
    return chosen


class _Loop:
    """The state of one ``allocation_aware`` loop: the per-step caps, the work and time left,
    the rounds so far and the best plan that fitted; ``fit_phase`` and ``relax_phase`` are its
    two phases (see the module docstring)."""

    def __init__(self, planner: Planner, capacity: int, allocator: str, options: dict[str, Any],
                 work_limit: float | None, max_rounds: int, deadline: float | None) -> None:
        self.planner, self.capacity, self.allocator, self.options = planner, capacity, allocator, options
        self.max_rounds, self.deadline = max_rounds, deadline
        self.caps = [capacity] * len(planner.names)
        import allocator as alloc

        self.work = None if user_limit(allocator, options) else alloc.METHODS[allocator].work_limit
        work = self.work
        self.total = math.inf if work is None else (work.total if work_limit is None or not work.shared
                                                    else work_limit)
        self.work_left = self.total
        self.rounds: list[Round] = []
        self.fitted: Schedule | None = None
        self.fitted_evictions = 0
        self.clock_stopped = False

    def limits(self, share: float) -> tuple[dict[str, Any], float | None, float | None]:
        """The next placement's keywords for ``allocator.solve``, its work limit and its deadline,
        for a ``share`` (1/2 or 1/4) of what is left; (None, ...) when nothing is left."""
        extra = dict(self.options)
        limit: float | None = None
        work = self.work
        if work is not None and self.work_left != math.inf:
            limit = (self.work_left if not work.shared or self.work_left * share < self.total / 64
                     else self.work_left * share)
            if isinstance(work.total, int):
                limit = max(int(limit), 1)
            extra[work.option] = limit
        call_deadline = None
        if self.deadline is not None:
            left = self.deadline - work_clock()
            call_deadline = work_clock() + max(left if left < 0.1 else left * share, 1e-3)
        return extra, limit, call_deadline

    def out_of_work(self) -> bool:
        work = self.work
        return work is not None and work.shared and self.work_left < (1 if isinstance(work.total, int) else 1e-6)

    def clock_out(self) -> bool:
        return self.deadline is not None and work_clock() >= self.deadline

    def place(self, plan: Schedule, share: float) -> tuple[Any, float | None, bool]:
        """Place ``plan``: the result, the work limit it had, and whether the clock ended it."""
        import allocator as alloc

        extra, limit, call_deadline = self.limits(share)
        timeout_s = None if call_deadline is None else max(call_deadline - work_clock(), 1e-3)
        result = alloc.solve(plan.problem_under(self.capacity), self.allocator, timeout=timeout_s, **extra)
        stopped = call_deadline is not None and work_clock() >= call_deadline
        if limit is not None and self.work is not None and self.work.shared and not result.solved:
            self.work_left -= limit  # a placement that failed used its whole share (see the module docstring)
        self.clock_stopped = self.clock_stopped or stopped
        return result, limit, stopped

    def record(self, plan: Schedule, status: str, peak: int | None, lowered: int, phase: str, since: float,
               limit: float | None = None, stopped: bool = False) -> None:
        assert plan.stats.peak_live_bytes is not None
        self.rounds.append(Round(plan.noncompulsory_bytes, plan.stats.peak_live_bytes, len(plan.residencies),
                                 status, peak, lowered, work_clock() - since, phase, limit, stopped))

    def plan(self, caps: list[int]) -> Schedule | None:
        """The plan under ``caps``, or None (``clock_stopped``) when the clock ran out during it."""
        try:
            return self.planner.plan(caps, deadline=self.deadline)
        except DeadlineReached:
            self.clock_stopped = True
            return None

    def fit_phase(self) -> None:
        """Phase 1: lower the caps where the allocator overflowed until a plan fits."""
        while len(self.rounds) < self.max_rounds:
            clock = work_clock()
            if self.clock_out():
                self.clock_stopped = True
                return
            if self.out_of_work():
                return
            plan = self.plan(self.caps)
            if plan is None:
                return
            if self.clock_out():  # planning took what was left: no placement can start
                self.clock_stopped = True
                return
            result, limit, stopped = self.place(plan, 0.5)
            if result.solved and result.solution is not None:
                self.record(plan, result.status, result.peak, 0, "fit", clock, limit, stopped)
                self.fitted = plan.with_offsets(result.solution.offsets)
                self.fitted_evictions = plan.stats.evictions or 0
                return
            lowered = self.lower(plan, result)
            self.record(plan, result.status, result.peak, lowered, "fit", clock, limit, stopped)
            if lowered == 0:
                return  # every overflowing step is at its floor (or nothing located the overflow): no progress

    def lower(self, plan: Schedule, result: Any) -> int:
        """Lower the caps of the steps where ``plan`` overflows (located by ``result``'s placement,
        or ``UNBOUNDED_METHOD``'s without a capacity); the number of caps lowered."""
        import allocator as alloc

        offsets = result.solution.offsets if result.solution is not None else None
        if offsets is None:
            left = None if self.deadline is None else max(self.deadline - work_clock(), 1e-3)
            located = alloc.solve(plan.problem_under(None), UNBOUNDED_METHOD, timeout=left)
            offsets = located.solution.offsets if located.solution is not None else None
        if offsets is None:
            return 0
        lowered = 0
        over = _overflow(plan, offsets, self.capacity, len(self.planner.names))
        live = live_bytes_over_time(plan)
        alignment, floors, caps = self.planner.alignment, self.planner.floors, self.caps
        for t, amount in enumerate(over):
            if amount <= 0:
                continue
            wanted = max((min(caps[t], live[t]) - amount) // alignment * alignment, floors[t])
            if wanted < caps[t]:
                caps[t] = wanted
                lowered += 1
        return lowered

    def relax_phase(self) -> None:
        """Phase 2: the lowered caps may be lower than needed; bisect back towards the capacity."""
        alignment = self.planner.alignment
        low, high = list(self.caps), [self.capacity] * len(self.caps)
        relaxed = 0
        while self.fitted is not None and len(self.rounds) < self.max_rounds and relaxed < MAX_RELAX_ROUNDS:
            clock = work_clock()
            trial = [max(lo, (lo + hi) // 2 // alignment * alignment) for lo, hi in zip(low, high, strict=True)]
            if trial == low or self.out_of_work():
                return
            if self.clock_out():
                self.clock_stopped = True
                return
            relaxed += 1
            plan = self.plan(trial)
            if plan is None:
                return
            if plan.noncompulsory_bytes >= self.fitted.noncompulsory_bytes:
                self.record(plan, "no gain", None, 0, "relax", clock)  # not placed: it would not move fewer bytes
                high = trial
                continue
            result, limit, stopped = self.place(plan, 0.25)
            self.record(plan, result.status, result.peak, 0, "relax", clock, limit, stopped)
            if result.solved and result.solution is not None:
                self.fitted = plan.with_offsets(result.solution.offsets)
                self.fitted_evictions = plan.stats.evictions or 0
                low = trial
            else:
                high = trial

"""The live-byte planner: residencies under a per-step cap on live bytes, without addresses.

The allocation-aware spill loop (``scheduler.spill_loop``) asks an allocator whether a plan of
residencies fits the capacity, and where it does not, asks this planner for another plan under
lower caps. A plan walks the order with the events of ``scheduler.residents``, but a tensor fits
when the bytes live at the step plus its own stay within the step's cap, whatever the
fragmentation: the plan an ideal allocator would need. Before the operator of step ``t`` brings
anything in, tensors it does not use are evicted until the bytes still live fit ``caps[t]`` (a
cap lowered after a step must also shed what was already resident). Victims are chosen in the
replacement policy's order (``scheduler.replacement``: Belady's furthest next use, or greedy's
lowest non-compulsory cost per byte; there is no address window to choose). Each cap is raised
to the step's own footprint (its operator's inputs and outputs; below it the operator cannot
run), so a plan always completes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from scheduler.arena import online_schedule
from scheduler.budget import operator_bytes
from scheduler.options import DEFAULT_REPLACEMENT
from scheduler.order import PROGRAM
from scheduler.replacement import VictimKey, policy
from scheduler.residents import DEADLINE_STRIDE, DeadlineReached, Residents, RunInputs, run_name
from scheduler.schedule import Schedule, ScheduleError, ScheduleStats, peak_live_bytes

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["DEADLINE_STRIDE", "DeadlineReached", "LiveBytes", "Planner", "plan_residencies", "step_footprints"]


class LiveBytes(Residents):
    """One plan: the bytes live at each step kept within that step's cap."""

    def __init__(self, inputs: RunInputs, caps: Sequence[int], victims: VictimKey) -> None:
        super().__init__(inputs)
        self.caps = caps  # per step, the most bytes that may be live (each at least the step's footprint)
        self.victims = victims

    def _in_order(self, step: int, protected: set[str]) -> list[str]:
        return sorted(self.candidates(protected), key=lambda t: self.victims(self, t, step))

    def before_step(self, step: int, protected: set[str]) -> None:
        """Evict tensors ``step`` does not use until the live bytes fit its cap."""
        if self.live_bytes <= self.caps[step]:
            return
        for victim in self._in_order(step, protected):
            self.evict(victim, step)
            if self.live_bytes <= self.caps[step]:
                return

    def room_for(self, tensor: str, step: int, protected: set[str]) -> int:
        """Evict in the policy's order until the tensor's bytes fit the step's cap (there are no addresses: 0)."""
        size = self.onchip[tensor]
        if self.live_bytes + size <= self.caps[step]:
            return 0
        for victim in self._in_order(step, protected):
            self.evict(victim, step)
            if self.live_bytes + size <= self.caps[step]:
                return 0
        raise AssertionError("a cap is never below the step's own footprint")


def step_footprints(graph: nx.DiGraph, order: Sequence[str], onchip: Mapping[str, int]) -> list[int]:
    """On-chip bytes each step's operator needs at once (its inputs and outputs): the floor of any cap there."""
    return [operator_bytes(graph, op, onchip) for op in order]


class Planner:
    """``plan_residencies`` for one graph, order, replacement and sizes, with the work every plan
    shares (``RunInputs``, the step floors) done once, at construction: the spill loop plans the
    same graph many times under new caps, and on a large graph that shared work outweighs a
    plan's own run.

    ``plan(caps, deadline=None)`` gives what ``plan_residencies`` gives for those caps;
    ``online(capacity, need)`` the address arena's schedule of the same inputs
    (``scheduler.baseline.schedule``'s), the spill loop's safety net.
    """

    def __init__(self, graph: nx.DiGraph, order: str | Sequence[str] = PROGRAM,
                 replacement: str = DEFAULT_REPLACEMENT, sizes: Mapping[str, int] | None = None,
                 alignment: int = 1) -> None:
        self.policy = policy(replacement, evicting=True)
        self.replacement = replacement
        self.inputs = RunInputs(graph, order, sizes, alignment)
        self.names = self.inputs.names  #: the operators, one per step
        self.alignment = alignment
        self.floors = step_footprints(graph, self.names, self.inputs.onchip)  #: each step's footprint

    def online(self, capacity: int, need: int) -> Schedule:
        """The address arena's schedule in ``capacity`` bytes; ``need`` is M_R, checked by the caller."""
        return online_schedule(self.inputs, capacity, self.replacement, self.policy, need)

    def plan(self, caps: Sequence[int], *, deadline: float | None = None) -> Schedule:
        """Residencies and transfers under ``caps`` (see ``plan_residencies``)."""
        if len(caps) != len(self.names):
            raise ScheduleError(f"caps has {len(caps)} entries for {len(self.names)} steps")
        steps = [max(int(c), f) for c, f in zip(caps, self.floors, strict=True)]
        assert self.policy.victims is not None
        run = LiveBytes(self.inputs, steps, self.policy.victims)
        run.run(deadline)
        result = run.schedule(run_name(self.inputs.order, self.replacement), max(steps, default=0), None)
        result.stats = ScheduleStats(evictions=run.evictions, peak_live_bytes=peak_live_bytes(result))
        return result


def plan_residencies(
    graph: nx.DiGraph,
    caps: Sequence[int],
    order: str | Sequence[str] = PROGRAM,
    replacement: str = DEFAULT_REPLACEMENT,
    sizes: Mapping[str, int] | None = None,
    alignment: int = 1,
    *,
    deadline: float | None = None,
) -> Schedule:
    """Residencies and transfers that keep the *live bytes* of step ``t`` within ``caps[t]``; no addresses.

    See the module docstring. ``replacement`` is a policy that evicts (``"belady"`` or
    ``"greedy"``). Returns a ``Schedule`` without offsets (``offsets`` None), whose peak live
    bytes are at most ``max(caps)`` (each cap raised to its step's footprint); ``stats`` holds
    ``evictions`` and ``peak_live_bytes``. With a ``deadline`` (a ``work_clock()`` value)
    the plan raises ``DeadlineReached`` once the clock passes it (looked at every
    ``DEADLINE_STRIDE`` steps): a plan of a very large graph takes seconds, and the spill loop's
    ``timeout`` covers it.

    >>> from frontend.synthetic import chain
    >>> g = chain(4, size=10)
    >>> plan = plan_residencies(g, [30] * 4)
    >>> plan.offsets is None, plan.noncompulsory_bytes, plan.stats.peak_live_bytes
    (True, 0, 30)
    """
    return Planner(graph, order, replacement, sizes, alignment).plan(caps, deadline=deadline)

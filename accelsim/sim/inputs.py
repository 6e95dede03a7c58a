"""Input validation: whether a graph, a schedule and offsets fit together, before anything runs.

``check_inputs`` reads the schedule once, raises ``SimulationError`` (one line naming the
item) on the first thing the simulator cannot run, and returns the lookups the driver walks
the schedule with (``ScheduleIndex``). No SimPy object exists yet when it runs.

What it checks:

* residency ids are unique, each has an offset, and each lives on ``[start, end)`` inside the
  steps ``[0, len(order)]`` with ``start < end``;
* each transfer names a known residency and sits at the step the timing convention of
  ``scheduler/schedule.py`` gives it: a load/retrieve (a fill) is issued at its residency's
  start and needed at a step of the residency, a store/spill (a drain) at its end; a residency
  has at most one fill and one drain;
* issue steps: a fill's ``issue_step`` is None or an integer in ``[0, step]``; a drain is
  issued at its step (``issue_step`` None or equal to ``step``);
* every scheduled operator is a node of the graph.

>>> from scheduler.schedule import Residency, Schedule, Transfer
>>> schedule = Schedule(["op"], [Residency("w", "w", 0, 1, 64)], [Transfer("load", "w", "w", 0, 64, issue_step=1)], 64)
>>> check_inputs({"op": {}}, schedule, {"w": 0})
Traceback (most recent call last):
...
accelsim.sim.inputs.SimulationError: load of residency 'w' at step 0 has issue step 1, outside [0, 0]
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler.schedule import Residency, Schedule, Transfer


class SimulationError(ValueError):
    """Inputs the simulator cannot run: a transfer of an unknown residency, a missing offset, ..."""


@dataclass(frozen=True)
class ScheduleIndex:
    """The schedule's residencies and transfers, looked up the ways the driver needs them."""

    residency: dict[str, Residency]  #: residency id -> the residency
    starting: dict[int, list[Residency]]  #: step -> residencies starting there, in schedule order
    ending: dict[int, list[Residency]]  #: step -> residencies ending there, in schedule order
    fill: dict[str, Transfer]  #: residency id -> its load/retrieve (residencies made on chip have none)
    drain: dict[str, Transfer]  #: residency id -> its store/spill (residencies that just die have none)
    needed: dict[int, list[str]]  #: step -> ids of the residencies whose fill that step's operator waits for


def check_inputs(graph: Container[str], schedule: Schedule, offsets: Mapping[str, int]) -> ScheduleIndex:
    """Check that ``schedule`` with ``offsets`` can run on ``graph``; its lookups, or ``SimulationError``."""
    n = len(schedule.order)
    residency: dict[str, Residency] = {}
    starting: dict[int, list[Residency]] = {}
    ending: dict[int, list[Residency]] = {}
    for r in schedule.residencies:
        if r.id in residency:
            raise SimulationError(f"residency id {r.id!r} appears twice in the schedule")
        if r.id not in offsets:
            raise SimulationError(f"residency {r.id!r} has no offset")
        if not 0 <= r.start < r.end <= n:
            raise SimulationError(f"residency {r.id!r} lives on [{r.start}, {r.end}), outside steps [0, {n}]")
        residency[r.id] = r
        starting.setdefault(r.start, []).append(r)
        ending.setdefault(r.end, []).append(r)
    fill: dict[str, Transfer] = {}
    drain: dict[str, Transfer] = {}
    for t in schedule.transfers:
        if t.residency not in residency:
            raise SimulationError(f"{t.kind} of {t.tensor!r} at step {t.step} names unknown residency {t.residency!r}")
        r = residency[t.residency]
        _check_issue_step(t)
        table, expected = (fill, r.start) if t.to_chip else (drain, r.end)
        if (t.issued_at if t.to_chip else t.step) != expected:
            raise SimulationError(
                f"{t.kind} of residency {r.id!r} at step {t.step}"
                + (f" issued at step {t.issued_at}" if t.issue_step is not None and t.to_chip else "")
                + f", but the residency lives on [{r.start}, {r.end}) "
                f"(a {t.kind} {'is issued' if t.to_chip else 'happens'} at step {expected})"
            )
        if t.to_chip and not t.step < r.end:
            raise SimulationError(
                f"{t.kind} of residency {r.id!r} is needed at step {t.step}, after the residency [{r.start}, {r.end})")
        if r.id in table:
            raise SimulationError(f"residency {r.id!r} has two {'fills' if t.to_chip else 'drains'}")
        table[r.id] = t
    for name in schedule.order:
        if name not in graph:
            raise SimulationError(f"scheduled operator {name!r} is not in the graph")
    needed: dict[int, list[str]] = {}
    for rid, t in fill.items():
        needed.setdefault(t.step, []).append(rid)
    return ScheduleIndex(residency, starting, ending, fill, drain, needed)


def _check_issue_step(t: Transfer) -> None:
    """A fill is issued at a step in ``[0, t.step]`` (None: at ``t.step``); a drain at its step."""
    issue = t.issue_step
    if issue is None:
        return
    if isinstance(issue, bool) or not isinstance(issue, int):
        raise SimulationError(f"{t.kind} of residency {t.residency!r} has issue step {issue!r}, not an integer")
    if not t.to_chip and issue != t.step:
        raise SimulationError(
            f"{t.kind} of residency {t.residency!r} at step {t.step} has issue step {issue}: "
            f"a {t.kind} is issued at its step"
        )
    if not 0 <= issue <= t.step:
        raise SimulationError(
            f"{t.kind} of residency {t.residency!r} at step {t.step} has issue step {issue}, outside [0, {t.step}]"
        )

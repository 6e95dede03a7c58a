"""The prefetch policy: the step at which each load or retrieval is issued, for fills the schedule left unplanned.

A fill (load/retrieve) of a residency starting at step ``s`` must finish before operator ``s``
starts. Its *issue step* ``i`` (``Transfer.issue_step``, ``0 <= i <= s``) says from when the
driver (``accelsim.sim.driver``) may issue it: ``i < s`` from the moment operator ``i`` starts
(a prefetch, overlapping the compute of operators ``i .. s - 1``), ``i == s`` at the boundary
before operator ``s``. The driver issues it no earlier, and then only once physics allows:
its destination range is free and no other copy of the tensor is on chip.

When the schedule plans a fill (``issue_step`` set) the simulator takes its step as it is.
When it does not (``None``), this policy plans it with the hardware's ``dma.prefetch_depth``
``d`` (the config field keeps that meaning: how many steps ahead of its operator a load may be
issued)::

    issue_step = max(s - d, 0)

This is exactly the simulator's earlier built-in rule, "while operator ``c`` runs, the fills of
steps ``c + 1 .. c + d`` are issued once their ranges are free" (``c`` counting from the start
of operator ``c`` until operator ``c + 1`` starts, checked when an operator starts and whenever
a drain frees a range; never with ``d = 0``). A fill of step ``s`` was eligible exactly while
``c >= 0`` and ``s - d <= c < s``, that is from the start of operator ``max(s - d, 0)`` on, and
only when that operator comes before ``s``:

* ``d >= 1`` and ``s >= 1``: ``max(s - d, 0) < s``, a prefetch from operator ``max(s - d, 0)``
  (operator 0 for the first ``d`` steps: nothing runs before it to overlap);
* ``d = 0``: ``max(s, 0) = s``, issued at its boundary, as ``prefetch_depth: 0`` did;
* ``s = 0``: ``0``, at the first boundary (nothing runs earlier).

The driver keeps the rest of that rule unchanged (its dynamic checks), so a schedule planned
by this policy simulates cycle for cycle as before.

>>> [issue_step(s, 2) for s in range(6)]
[0, 0, 0, 1, 2, 3]
>>> [issue_step(s, 0) for s in range(3)]
[0, 1, 2]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler.schedule import Schedule, Transfer


def issue_step(step: int, depth: int) -> int:
    """The policy's issue step for a fill at ``step`` with ``depth`` = ``dma.prefetch_depth`` (module docstring)."""
    if depth < 0:
        raise ValueError(f"prefetch depth {depth} is negative")
    return max(step - depth, 0)


def issue_steps(fills: Iterable[Transfer], depth: int) -> dict[str, int]:
    """Residency id -> the step its fill is issued at: the schedule's own, or the policy's where it has none."""
    return {t.residency: issue_step(t.step, depth) if t.issue_step is None else t.issue_step for t in fills}


def with_issue_steps(schedule: Schedule, depth: int) -> Schedule:
    """A copy of ``schedule`` whose unplanned fills carry the policy's issue steps (what ``simulate`` runs).

    Its other fields are shared with ``schedule``; drains and planned fills are kept as they are.
    """
    transfers = [
        replace(t, issue_step=issue_step(t.step, depth)) if t.to_chip and t.issue_step is None else t
        for t in schedule.transfers
    ]
    return replace(schedule, transfers=transfers)

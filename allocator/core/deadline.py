"""Deadlines: the one compiled clock every kernel reads, and the words a method uses when its
time runs out.

A deadline is a ``work_clock()`` value (``allocator.core.kernel_clock``: ``time.perf_counter()``
stopped while kernels load or compile, so a kernel compiled mid-search takes nothing from the
search's time). Compiled kernels read ``clock`` (object mode,
about a microsecond a reading, so they read it every so many steps); Python code calls
``deadline_passed``. A method that stops at its deadline answers status ``"timeout"`` with
``timeout_reason``'s words.
"""

from __future__ import annotations

import numba
from numba import njit

from allocator.core import kernel_cache  # noqa: F401  (numba's cache directory, before any kernel is decorated)
from allocator.core.kernel_clock import work_clock

#: the greedy placement kernels (``allocator.methods.placement``, the skyline of
#: ``allocator.methods.heuristics``) read the clock before their first placement and then once
#: per this many placements (a read costs about a microsecond, far less than 1024 placements)
CLOCK_EVERY = 1024


@njit(cache=True)
def clock() -> float:  # pragma: no cover - compiled
    """``work_clock()`` read from compiled code: the clock of ``solve``'s deadlines."""
    with numba.objmode(t="float64"):
        t = work_clock()
    return t


def deadline_passed(deadline: float | None) -> bool:
    """True when ``deadline`` (a ``work_clock()`` value) is set and has passed."""
    return deadline is not None and work_clock() > deadline


def timeout_reason(name: str, placed: int, total: int) -> str:
    """``"greedy-by-size placed 812,345 of 2,000,000 buffers before the deadline"``."""
    return f"{name} placed {placed:,} of {total:,} buffers before the deadline"

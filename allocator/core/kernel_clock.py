"""The time a process spends loading or compiling numba kernels, and a clock that leaves it out.

accelsim's kernels compile on first use: a run loads (or, with an empty compile cache,
compiles) only the kernels it reaches, when it reaches them. That can happen in the middle of a
timed stage or of a search with a time limit, so every clock of the library reads
:func:`work_clock` instead of ``time.perf_counter()``: the same clock, stopped while numba's
compiler holds its lock (where it both loads cached machine code and compiles new code). A time
limit therefore bounds the search alone, a stage's seconds are its own work, and the answer of a
run does not depend on whether its kernels were cached. :func:`kernel_seconds` is the time left
out, which ``accelsim run`` reports as its ``kernels`` stage and ``accelsim alloc`` as
"loading compiled code".

The time is measured with numba's event API (``numba.core.event``): a listener on
``"numba:compiler_lock"`` adds up the time during which some thread is inside the compiler
lock (or waiting for it): the union of the threads' outermost holds. It is
installed by ``allocator.core.kernel_cache``, which every kernel module imports before its
first ``@njit``, so no kernel compiles unseen. Before any kernel module is imported the clock
is ``time.perf_counter()`` itself. The clock is process-wide: in a process whose threads run
searches side by side, one thread's compilation stops every thread's clock (the library runs
one search per process; sweeps run points in separate processes).

The first time a process compiles a kernel (a cache miss, not a load; an object-mode block,
which numba compiles at every load, does not count), one line goes to standard error, so that
a cold first run says why it is slower (:data:`ANNOUNCEMENT`).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

__all__ = ["ANNOUNCEMENT", "install", "kernel_seconds", "work_clock"]

#: printed on standard error at the first compilation of a process; ``{where}`` is the cache directory
ANNOUNCEMENT = ("accelsim: compiling the allocator's kernels this run reaches, once (later runs load them "
                "from {where})")

_lock = threading.Lock()
_done = [0.0]  # seconds during which some thread held (or waited for) the compiler lock, up to the last release
_inside = [0, 0.0]  # how many threads are inside now, and since when (perf_counter) one has been
_depth = threading.local()
_installed = [False]
_announced = [False]


def kernel_seconds() -> float:
    """Seconds this process has spent loading or compiling kernels so far (a hold in progress
    counts up to now). Holds of several threads at once count once: the union of their times."""
    now = time.perf_counter()
    with _lock:
        return _done[0] + (now - _inside[1] if _inside[0] else 0.0)


def work_clock() -> float:
    """``time.perf_counter()`` less :func:`kernel_seconds`: the clock of every deadline and stage
    time of the library. It never goes back, and stands still while a kernel loads or compiles.

    >>> a = work_clock(); b = work_clock(); b >= a
    True
    """
    now = time.perf_counter()
    with _lock:
        return now - _done[0] - (now - _inside[1] if _inside[0] else 0.0)


def _enter() -> None:
    depth = getattr(_depth, "n", 0)
    _depth.n = depth + 1
    if depth == 0:
        with _lock:
            if _inside[0] == 0:
                _inside[1] = time.perf_counter()
            _inside[0] += 1


def _leave() -> None:
    depth = getattr(_depth, "n", 0)
    if depth == 0:  # an end without its start (installed while a hold was open): nothing to count
        return
    _depth.n = depth - 1
    if depth == 1:
        with _lock:
            _inside[0] -= 1
            if _inside[0] == 0:
                _done[0] += time.perf_counter() - _inside[1]


def _announce(where: str) -> None:
    if not _announced[0]:
        _announced[0] = True
        print(ANNOUNCEMENT.format(where=where or "numba's default cache"), file=sys.stderr, flush=True)


def install(cache_dir: str) -> None:
    """Start measuring (once per process; later calls do nothing). ``cache_dir`` is named in the
    announcement. Imports numba, so ``allocator.core.kernel_cache`` calls it after choosing the
    cache directory."""
    if _installed[0]:
        return
    _installed[0] = True
    from numba.core import event
    from numba.core.dispatcher import LiftedCode

    class _Held(event.Listener):  # type: ignore[misc]
        def on_start(self, _event: Any) -> None:
            _enter()

        def on_end(self, _event: Any) -> None:
            _leave()

    class _Compiled(event.Listener):  # type: ignore[misc]
        def on_start(self, compiling: Any) -> None:
            # an object-mode block (the clock's) is compiled again whenever its kernel loads from
            # the cache, in milliseconds: not worth a line
            if not isinstance(compiling.data["dispatcher"], LiftedCode):
                _announce(cache_dir)

        def on_end(self, _event: Any) -> None:
            pass

    event.register("numba:compiler_lock", _Held())
    event.register("numba:compile", _Compiled())

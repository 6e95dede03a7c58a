"""Generated allocation instances: TelaMalloc's microbenchmarks and seeded random ones.

* ``non-overlapping``: ``n`` buffers one after another in time (buffer ``i`` lives in step
  ``i``), so nothing ever conflicts and every buffer can sit at offset 0. TelaMalloc Table 1
  uses it to time a search step when propagation has no work.
* ``full-overlap``: ``n`` buffers all live over the same steps, so every pair conflicts and
  the only placement is a stack. TelaMalloc Table 1's worst case for solver-based search.
* ``random``: ``n`` buffers with seeded random start, lifetime and size, a mix of short and
  long lifetimes like real activation traces (the seed decides everything).

Sizes are drawn from a seeded generator too (``seed``), so the same arguments give the same
instance. The problems have no capacity; give one with ``Problem.with_capacity`` (e.g. LOAD
or a percentage above it) or let the methods minimise the peak.

**Size limit** (so that a request beyond the machine's memory fails at once instead of filling
the memory until the process is killed): ``generate`` first checks ``check_size``, which
refuses, in one line naming ``n``, the estimate and the memory available, an instance whose
estimated peak memory (``estimated_bytes``: ``BYTES_PER_BUFFER`` for each buffer, measured)
exceeds the memory the machine has available (``available_memory``: ``MemAvailable`` of
``/proc/meminfo``, or less when a cgroup limits this process). The check costs microseconds
and allocates nothing, so a refused request fails at once. The instance is built from
columns (``Problem.from_arrays``; no ``Buffer`` object per buffer) and
``allocator.write_csv`` streams it, so what is estimated is the columns, the ids and the
work of writing and of LOAD.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from allocator.core.problem import InvalidProblemError, Problem

KINDS = ("non-overlapping", "full-overlap", "random")

#: estimated peak bytes per buffer of ``generate`` followed by ``write_csv`` and ``lower_bound``
#: (what ``accelsim gen`` does): the five int64 columns and their checks, the random draws, one
#: Python string id each (about 60 B with its tuple slot) and the sorts of LOAD. Measured as the
#: peak resident memory of ``accelsim gen KIND N`` minus that of ``accelsim gen KIND 1``, per
#: buffer: at N = 2,000,000 non-overlapping 233 B, full-overlap 225 B, random 242 B; at
#: 8,000,000 non-overlapping 186 B, random 195 B. A third above the worst, for headroom
BYTES_PER_BUFFER = 320


def estimated_bytes(kind: str, n: int) -> int:
    """Estimated peak memory (bytes) of generating, writing and measuring ``n`` buffers of ``kind``.

    >>> estimated_bytes("random", 1_000_000)
    320000000
    """
    _check_kind(kind)
    return int(n) * BYTES_PER_BUFFER


def available_memory() -> int | None:
    """Bytes of memory this process can still take: ``MemAvailable`` of ``/proc/meminfo`` (or
    free pages times the page size where there is none), lowered to what is left under a
    cgroup v2 limit (``memory.max`` minus ``memory.current``) when one applies; None when the
    system tells neither."""
    found: list[int] = []
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        pass
    if not found:
        try:
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (OSError, ValueError, AttributeError):
            pass
    cgroup = Path("/sys/fs/cgroup")
    try:
        limit = (cgroup / "memory.max").read_text().strip()
        if limit != "max":
            found.append(max(int(limit) - int((cgroup / "memory.current").read_text()), 0))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def check_size(kind: str, n: int, available: int | None = None) -> None:
    """Refuse (``InvalidProblemError``, one line) ``n`` buffers of ``kind`` when their estimated
    memory exceeds ``available`` bytes (default: ``available_memory()``; None: no check).

    >>> check_size("random", 10**9, available=8 * 2**30)
    Traceback (most recent call last):
    ...
    allocator.core.problem.InvalidProblemError: 1,000,000,000 buffers need about 298.0 GiB (320 B each), more than ...
    """
    needed = estimated_bytes(kind, n)
    if available is None:
        available = available_memory()
    if available is not None and needed > available:
        raise InvalidProblemError(f"{n:,} buffers need about {needed / 2**30:.1f} GiB ({BYTES_PER_BUFFER} B each), "
                                  f"more than the {available / 2**30:.1f} GiB of memory available; ask for at most "
                                  f"{available // BYTES_PER_BUFFER:,}")


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise InvalidProblemError(f"unknown instance kind {kind!r}; known: {', '.join(KINDS)}")


def generate(kind: str, n: int, seed: int = 0, max_size: int = 4096, alignment: int = 1) -> Problem:
    """An instance of ``kind`` (one of ``KINDS``) with ``n`` buffers, named ``b0``, ``b1``, ...

    Refused before anything is allocated when it would not fit the memory available
    (``check_size``).

    >>> p = generate("full-overlap", 3, seed=1)
    >>> [(b.start, b.end) for b in p.buffers]
    [(0, 1), (0, 1), (0, 1)]
    """
    _check_kind(kind)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise InvalidProblemError(f"the number of buffers must be a positive integer, got {n!r}")
    if max_size < 1 or alignment < 1:
        raise InvalidProblemError(f"max_size and alignment must be positive, got {max_size} and {alignment}")
    check_size(kind, n)
    rng = np.random.default_rng(seed)
    sizes = (rng.integers(1, max_size + 1, size=n) + alignment - 1) // alignment * alignment
    if kind == "non-overlapping":
        starts = np.arange(n, dtype=np.int64)
        ends = starts + 1
    elif kind == "full-overlap":
        starts = np.zeros(n, np.int64)
        ends = np.ones(n, np.int64)
    else:
        horizon = max(4, n // 2)
        starts = rng.integers(0, horizon, size=n)
        long_lived = rng.random(n) < 0.15
        lifetimes = np.where(long_lived, rng.integers(horizon // 4 + 1, horizon + 1, size=n),
                             rng.integers(1, 6, size=n))
        ends = starts + lifetimes
    ids = [f"b{i}" for i in range(n)]
    return Problem.from_arrays(ids, starts, ends, sizes, np.full(n, alignment, np.int64))

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
"""

from __future__ import annotations

import numpy as np

from allocator.problem import Buffer, InvalidProblemError, Problem

KINDS = ("non-overlapping", "full-overlap", "random")


def generate(kind: str, n: int, seed: int = 0, max_size: int = 4096, alignment: int = 1) -> Problem:
    """An instance of ``kind`` (one of ``KINDS``) with ``n`` buffers.

    >>> p = generate("full-overlap", 3, seed=1)
    >>> [(b.start, b.end) for b in p.buffers]
    [(0, 1), (0, 1), (0, 1)]
    """
    if kind not in KINDS:
        raise InvalidProblemError(f"unknown instance kind {kind!r}; known: {', '.join(KINDS)}")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise InvalidProblemError(f"the number of buffers must be a positive integer, got {n!r}")
    if max_size < 1 or alignment < 1:
        raise InvalidProblemError(f"max_size and alignment must be positive, got {max_size} and {alignment}")
    rng = np.random.default_rng(seed)
    sizes = (rng.integers(1, max_size + 1, size=n) + alignment - 1) // alignment * alignment
    if kind == "non-overlapping":
        spans = [(i, i + 1) for i in range(n)]
    elif kind == "full-overlap":
        spans = [(0, 1)] * n
    else:
        horizon = max(4, n // 2)
        starts = rng.integers(0, horizon, size=n)
        long_lived = rng.random(n) < 0.15
        lifetimes = np.where(long_lived, rng.integers(horizon // 4 + 1, horizon + 1, size=n),
                             rng.integers(1, 6, size=n))
        spans = [(int(s), int(s + w)) for s, w in zip(starts, lifetimes, strict=True)]
    return Problem([Buffer(f"b{i}", s, e, int(sizes[i]), alignment) for i, (s, e) in enumerate(spans)])

"""Greedy placement heuristics of production compilers.

Each takes buffers one at a time in a fixed order and puts each at a position chosen among
the gaps left by the already placed buffers it overlaps in time:

* ``first-fit``: buffers in start order, each at the lowest offset that fits. This is the
  timing-unaware baseline of TelaMalloc §3.1 (and what an online arena does).
* ``greedy-by-size``: largest first (ties: earlier start, longer lifetime), lowest offset
  that fits. TensorFlow Lite's ``GreedyBySize`` planner (Pisarchyk and Lee 2020).
* ``best-fit``: largest first (ties: longer lifetime, earlier start), into the *smallest*
  gap that holds it (ties: lowest offset); only when no gap between placed buffers holds it
  does it go on top. XLA's global decreasing-size best-fit heap.
* ``load-best-fit``: the canonical search's TWA preorder as a greedy order: buffers that
  live through the most loaded cross section first (T, the largest section total they
  span), then longest, then largest area; each into the smallest gap, like ``best-fit``.
  Buffers that share the peak section go first, so the peak is packed before the rest
  fills around it: on a large trace whose peak is one crowded section it ends far closer
  to LOAD than greedy-by-size, in less time than the exact search needs to start
  (iopddl/S_1 in ``docs/results/allocators.md``, "Large real traces").

Fixed-offset buffers are placed first, where they are pinned. The heuristics ignore the
capacity while placing and then compare the peak with it: above the capacity the status is
``"failed"`` (a heuristic's miss is no proof of infeasibility) and the full placement is
returned so the caller sees by how much it missed. The placement loop is
``allocator.methods.placement``'s compiled kernel: a buffer's placement reads only the placed buffers
that overlap it in time. It reads the deadline every 1,024 buffers; when the deadline passes
the method returns ``"timeout"`` without a placement (a partial placement is none) and says
how many buffers it had placed.

Sort keys are whole-array numpy operations; keys that could overflow int64 (load-best-fit's
area, up to 2**124) are compared exactly as two 64-bit limbs (``wide_product``).
"""

from __future__ import annotations

import numpy as np

from allocator.core.deadline import deadline_passed, timeout_reason
from allocator.core.options import NoOptions
from allocator.core.problem import Problem
from allocator.core.registry import MethodOutput
from allocator.core.sections import sweep
from allocator.methods.placement import greedy_method
from allocator.methods.sorting import sort_by_key

__all__ = ["best_fit", "first_fit", "greedy_by_size", "load_best_fit", "size_keys", "sort_by_key", "wide_product"]

_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)


def size_keys(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, ...]:
    """greedy-by-size's order as ``np.lexsort`` keys (the last is the primary one): largest
    first, then earlier start, then longer lifetime."""
    return (-(ends - starts), starts, -sizes)


def wide_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact products ``a * b`` of non-negative int64 arrays as (high, low) uint64 limbs.

    ``(high, low)`` compare like the products (``np.lexsort((low, high))`` sorts them), even
    where ``a * b`` passes 2**63 and an int64 product would wrap around. Schoolbook
    multiplication on 32-bit halves.

    >>> high, low = wide_product(np.array([2**62, 6]), np.array([8, 7]))
    >>> [int(h) * 2**64 + int(lo) for h, lo in zip(high, low)] == [2**65, 42]
    True
    """
    a, b = a.astype(np.uint64), b.astype(np.uint64)
    a_low, a_high = a & _LOW32, a >> _SHIFT32
    b_low, b_high = b & _LOW32, b >> _SHIFT32
    low_low, low_high, high_low = a_low * b_low, a_low * b_high, a_high * b_low
    middle = (low_low >> _SHIFT32) + (low_high & _LOW32) + (high_low & _LOW32)  # < 3 * 2**32: no carry out
    low = (low_low & _LOW32) | (middle << _SHIFT32)
    high = a_high * b_high + (low_high >> _SHIFT32) + (high_low >> _SHIFT32) + (middle >> _SHIFT32)
    return high, low


def first_fit(problem: Problem, deadline: float | None, options: NoOptions) -> MethodOutput:
    arrays = problem.arrays()
    starts, ends, sizes, _, _ = arrays
    return greedy_method(problem, arrays, (-sizes, starts), best_fit=False, name="first-fit", deadline=deadline)


def greedy_by_size(problem: Problem, deadline: float | None, options: NoOptions) -> MethodOutput:
    arrays = problem.arrays()
    starts, ends, sizes, _, _ = arrays
    return greedy_method(problem, arrays, size_keys(starts, ends, sizes), best_fit=False, name="greedy-by-size",
                         deadline=deadline)


def best_fit(problem: Problem, deadline: float | None, options: NoOptions) -> MethodOutput:
    arrays = problem.arrays()
    starts, ends, sizes, _, _ = arrays
    return greedy_method(problem, arrays, (starts, -(ends - starts), -sizes), best_fit=True, name="best-fit",
                         deadline=deadline)


def load_best_fit(problem: Problem, deadline: float | None, options: NoOptions) -> MethodOutput:
    arrays = problem.arrays()
    starts, ends, sizes, _, fixed = arrays
    if len(problem) and deadline_passed(deadline):  # its keys need a sweep: half a second on 2,000,000 buffers
        return MethodOutput("timeout", None, timeout_reason("load-best-fit", int((fixed >= 0).sum()), len(problem)))
    width = ends - starts
    load = sweep(problem).span_total() if len(problem) else np.zeros(0, np.int64)
    area_high, area_low = wide_product(width, sizes)  # width x size passes int64 for large values
    return greedy_method(problem, arrays, (starts, ~area_low, ~area_high, -width, -load), best_fit=True,
                         name="load-best-fit", deadline=deadline)

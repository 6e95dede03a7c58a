"""Load (or, with an empty compile cache, compile and cache) a method's numba kernels before a clock starts.

The first call of a compiled kernel in a process loads its machine code from numba's cache
(see ``allocator.core.kernel_cache``), or compiles it when the cache has none: far longer than a
small search. A caller that times a run, or gives it a time limit, calls :func:`warm_up`
first, so that neither the loading nor a compilation is counted against the run and a
time limit bounds the search alone.

numba compiles a kernel whole, for the argument types of the call, so running a method once
on a tiny problem compiles every kernel that a run on any problem reaches through the same
Python calls. What a run reaches depends on what is asked of the method:

* ``"fit"`` (``solve`` under a capacity): the method itself. ``minimalloc`` then loads only
  its canonical search and the sweep it is prepared with, not the greedy placement, the
  starting heuristics or another method's kernels;
* ``"minimize"`` (``allocator.minimize``): that, and the starting heuristics of an anytime
  routine (the registry's ``starting_heuristics``) and the insurance placement (its
  ``fallback_heuristic``), each fitted first without a time limit, then ``minimize`` itself.
  The fits come first because a minimisation spends its time by the clock: with an empty
  cache the first heuristic's compilation would use up the warm-up's time and the later
  stages, never reached, would stay uncompiled.

Two problems are run: :data:`TINY`, which every method places at once, and
:data:`STAIRCASE`, on which every greedy heuristic fails, so that a portfolio such as ``auto``
reaches its exact stage and an anytime minimisation probes below its incumbent. The input
checks of ``Problem`` and the validator's kernels (which every ``solve`` runs) are loaded on
the way.
"""

from __future__ import annotations

import time
from typing import Literal

from allocator.core.problem import Buffer, Problem

__all__ = ["MODES", "STAIRCASE", "TINY", "Mode", "warm_up"]

Mode = Literal["fit", "minimize"]
MODES: tuple[Mode, ...] = ("fit", "minimize")

#: two buffers that overlap in time, capacity 8: every method places them at once
TINY = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4)], capacity=8)
#: LOAD 5 fits the capacity 5, yet nothing does (a staircase of thin buffers, see
#: tests/allocator/search/test_explain.py): every greedy heuristic fails on it
STAIRCASE = Problem([Buffer(f"s{i}", *spec) for i, spec in enumerate(
    ((0, 3, 1), (1, 4, 1), (2, 5, 2), (1, 2, 3), (4, 5, 3), (0, 1, 4), (3, 4, 2)))], capacity=5)


def warm_up(method: str, mode: Mode = "fit", options: object = None) -> float:
    """Run ``method`` (with its ``options`` record, if given) on :data:`TINY` and
    :data:`STAIRCASE` the way a run in ``mode`` would; return the seconds it took.

    ``"fit"`` solves both under their capacities, without a time limit (each takes
    milliseconds once compiled); ``"minimize"`` also fits the heuristics a minimisation starts
    from, then minimises both for a second each (what the old warm-up gave them). A later run
    of the same kind compiles nothing.

    >>> warm_up("greedy-by-size") >= 0.0
    True
    >>> warm_up("greedy-by-size", "sideways")
    Traceback (most recent call last):
    ...
    ValueError: warm-up mode must be one of 'fit', 'minimize'; got 'sideways'
    """
    from allocator.core.registry import fallback_heuristic, solve, starting_heuristics
    from allocator.search.anytime import minimize

    if mode not in MODES:
        raise ValueError(f"warm-up mode must be one of {', '.join(map(repr, MODES))}; got {mode!r}")
    began = time.perf_counter()
    for problem in (TINY, STAIRCASE):
        solve(problem, method, None, options=options)
    if mode == "minimize":
        for heuristic in dict.fromkeys((fallback_heuristic(), *starting_heuristics())):
            for problem in (TINY, STAIRCASE):
                solve(problem, heuristic, None)
        for problem in (TINY, STAIRCASE):
            minimize(problem.with_capacity(None), method=method, timeout=1.0, options=options)
    return time.perf_counter() - began

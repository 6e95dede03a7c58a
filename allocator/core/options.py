"""The options records of the methods with a few options, and ``NoOptions`` for those without.

Every registered method has one options record, a frozen dataclass named in the registry's
table (``METHODS[name].options`` is the class): ``solve(problem, name, options=record)``
takes one, and ``solve(problem, name, field=value)`` is shorthand for the record's fields.
The records of the exact searches live beside their search, with a field per technique of
their paper: ``allocator.methods.minimalloc.MiniMallocOptions`` (``minimalloc`` and ``auto``),
``allocator.methods.telamalloc.TelaMallocOptions`` (``telamalloc``) and
``allocator.methods.telamalloc_learned.LearnedOptions`` (``telamalloc-learned``). The records here
belong to the methods with a few options; like every method's, their functions take the
record itself (``function(problem, deadline, options)``). This module imports nothing heavy, so
a user can list them without loading the methods.

Each field is documented where it is declared: its type, its default and what it does. The
method checks the values (a seed must be an integer, ``runs`` at least 1, ...); ``solve``
checks the names and the types first, so that an unknown or ill-typed option is refused
naming the method and the options it has (``InvalidOptionError``).

>>> from dataclasses import fields
>>> [(f.name, f.type, f.default) for f in fields(HillClimbOptions)]
[('seed', 'int', 0), ('iterations', 'int', 200)]
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CPSATOptions", "HillClimbOptions", "IdeallocOptions", "MIPOptions", "NoOptions"]


@dataclass(frozen=True)
class NoOptions:
    """The record of a method that takes no options: the greedy heuristics (``first-fit``,
    ``greedy-by-size``, ``best-fit``, ``load-best-fit``, ``greedy-in-order``,
    ``greedy-by-breadth``, ``greedy-by-conflicts``) and ``telamalloc-heuristic``, and the
    default of ``allocator.register``."""


@dataclass(frozen=True)
class HillClimbOptions:
    """Options of ``hill-climb`` (TVM USMP's hill climbing; ``allocator.methods.heuristics.hill_climb``)."""

    seed: int = 0  #: seeds the random choice of the moves: the same seed, the same placement (within the time)
    iterations: int = 200  #: attempted moves at most (>= 0); each costs one full placement


@dataclass(frozen=True)
class IdeallocOptions:
    """Options of ``idealloc`` (boxing and tightening, Buchsbaum et al. STOC'03 as in CONVOLVE
    D5.5 §4; ``allocator.methods.idealloc.idealloc``)."""

    seed: int = 0  #: seeds every run's random draws: the same seed and runs, the same placement
    #: runs at most (>= 1); None: until the deadline, or ``allocator.methods.idealloc.DEFAULT_RUNS`` without one
    runs: int | None = None
    ratio: float = 2.0  #: growth of the box height per level (> 1), D5.5 §4.2
    #: tightening passes per run at most (>= 1; 1 is D5.5's single pass). The same as
    #: ``allocator.methods.idealloc.DEFAULT_PASSES`` (a test holds them equal)
    passes: int = 8


@dataclass(frozen=True)
class CPSATOptions:
    """Options of ``cpsat`` (the NoOverlap2D model; ``allocator.methods.exact.cpsat``)."""

    #: CP-SAT ``num_workers`` (>= 1); with 1 worker and a fixed seed the answer is reproducible
    #: (as long as the time limit is not what stops the search)
    workers: int = 1
    #: start from the greedy-by-size placement; when minimising, its peak also bounds the peak variable
    hint: bool = True
    seed: int = 0  #: CP-SAT ``random_seed``
    #: CP-SAT ``max_deterministic_time``, in CP-SAT's own work units (> 0): a limit that does not
    #: depend on the machine's speed or load; None: none
    deterministic_time: float | None = None


@dataclass(frozen=True)
class MIPOptions:
    """Options of ``mip`` (the big-M ILP of TelaMalloc Fig. 5, §3.2; ``allocator.methods.exact.mip``)."""

    #: the ``pywraplp`` MIP solver: one of ``allocator.methods.exact.MIP_BACKENDS`` (SCIP, HIGHS, CBC,
    #: SAT), case-insensitive
    backend: str = "SCIP"
    #: give the greedy-by-size placement as a starting solution (SCIP and SAT only; skipped when
    #: it does not fit the capacity)
    hint: bool = True

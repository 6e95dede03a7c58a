"""The options records of the schedulers: ``ScheduleOptions``, what every scheduler's function
takes, and ``CosmaOptions``, the settings of the CP-SAT models inside it.

A scheduler of the registry (``scheduler.registry``) is a function ``function(graph, options)``
of one ``ScheduleOptions``; each field applies to the schedulers whose capabilities say they
take it, and ``scheduler.registry.check_options`` refuses the others. This module imports
nothing heavy (``scheduler.cosma`` builds its models with OR-Tools; its options are plain data).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.order import PROGRAM
from scheduler.schedule import ScheduleError

#: CP-SAT deterministic time per call when none is given (``CosmaOptions.deterministic_time``):
#: enough for every proof of the COSMA comparison (``docs/results/cosma.md``), with room for
#: ``core_after`` to switch. A unit is no fixed number of seconds: what a unit costs in wall
#: time varies with the model, so a search that uses its whole work limit takes model-dependent time.
DEFAULT_DETERMINISTIC_TIME = 5.0


@dataclass(frozen=True)
class CosmaOptions:
    """Solver settings shared by ``cosma``, ``min_peak`` and ``cosma_dnc`` (``scheduler.cosma``).

    The work limit of a search is ``deterministic_time``, CP-SAT's own measure of work
    (``max_deterministic_time``): with one worker the same model gets the same answer on any
    machine and under any load. ``time_limit`` adds a wall-clock limit as a safety net (off by
    default); when it is what stops a search, the answer depends on the machine, and the
    schedule's ``stats.clock_stopped`` is True (``MinPeak.clock_stopped`` for ``min_peak``).
    """

    #: CP-SAT deterministic time per call (``cosma_dnc`` shares it among its parts, ``cosma`` gives
    #: ``warm_fraction`` of it to its warm start); None: no work limit, only ``time_limit``
    deterministic_time: float | None = DEFAULT_DETERMINISTIC_TIME
    #: wall-clock seconds per call, a safety net (``cosma_dnc`` shares it among its parts); None: none
    time_limit: float | None = None
    workers: int = 1  #: CP-SAT workers; 1 makes the answer depend only on the input and the seed
    seed: int = 0  #: CP-SAT random seed
    hint: bool = True  #: start from the best baseline schedule (program order, Belady or greedy)
    dominance: bool = True  #: the three dominance rules of ``scheduler.cosma``'s docstring
    capacity_cut: bool = True  #: a redundant per-step sum of resident bytes <= capacity
    #: ``cosma`` first solves the fixed-order model for the baseline's order (at most
    #: ``warm_fraction`` of the deterministic time, and of the time limit) and starts the joint
    #: model from its answer
    warm_start: bool = True
    warm_fraction: float = 0.25
    #: CP-SAT ``linearization_level``: 0 (our default, which proved more of the COSMA comparison's
    #: optima, and faster, than 1: ``docs/results/cosma.md``) searches without the LP relaxation,
    #: 1 (CP-SAT's default) keeps a light one, 2 adds cuts
    linearization: int = 0
    #: after this much deterministic time (CP-SAT's machine-independent measure of work) without
    #: a proof of the traffic optimum, spend the rest of the work limit in CP-SAT's core-based
    #: search (``optimize_with_core``: it raises the bound by unsatisfiable cores of the cost
    #: literals), starting from the best solution so far; ``None`` never switches, nor does a call
    #: whose work limit is no larger, and ``min_peak`` (one integer objective) never does. The
    #: ordinary search proves most optima quickly; the core search proves some hard ones much
    #: faster and others slower (``docs/results/cosma.md``), hence a switch rather than either alone.
    core_after: float | None = 3.0

    def __post_init__(self) -> None:
        for name in ("deterministic_time", "time_limit"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not math.isfinite(value) or value <= 0):
                raise ScheduleError(f"CosmaOptions.{name} must be a positive, finite number or None, got {value!r}")


#: the default settings
DEFAULTS = CosmaOptions()

#: the replacement policy when none is named (``scheduler.replacement``): Belady's furthest next use
DEFAULT_REPLACEMENT = "belady"


@dataclass(frozen=True)
class ScheduleOptions:
    """What a scheduler's function takes (``scheduler.registry``): the capacity and every option.

    ``make_schedule`` fills it from its arguments after ``scheduler.registry.check_options``
    has refused the options the scheduler does not take; a field a scheduler does not take
    keeps its default and is not read.
    """

    capacity: int  #: on-chip bytes the schedule may use (per PE when ``sizes`` are per PE)
    #: the replacement policy (``scheduler.replacement.POLICIES``) of the schedulers that take one
    replacement: str = DEFAULT_REPLACEMENT
    #: tensor name -> bytes, replacing the graph's ``nbytes`` (e.g. per-PE sizes); None: the graph's
    sizes: Mapping[str, int] | None = None
    alignment: int = 1  #: every on-chip size is rounded up to, and every offset is, a multiple of this
    solver: CosmaOptions = DEFAULTS  #: the CP-SAT models' settings, also for min-peak's order
    #: the fixed order of a scheduler that takes one (``scheduler.order.FIXED_ORDERS``)
    fixed_order: str = PROGRAM
    part_size: int = 40  #: the most operators of one part of a divide-and-conquer scheduler
    #: the allocator that decides the spills (an ``allocator.METHODS`` name, or
    #: ``scheduler.registry.ONLINE_ARENA`` for the online arena); None: ``allocator.DEFAULT_METHOD``
    allocator: str | None = None
    #: a wall-clock safety net in seconds for the allocator's loop; None: none (its limit is work)
    allocator_timeout: float | None = None
    allocator_options: Mapping[str, Any] | None = None  #: keyword options of ``allocator.solve``
    #: the operator order of a scheduler that takes one: an ``scheduler.order.ORDERS`` name or every operator
    order: str | Sequence[str] = PROGRAM

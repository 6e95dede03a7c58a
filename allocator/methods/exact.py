"""Exact allocators on OR-Tools: a CP-SAT model and the ILP of TelaMalloc (Fig. 5).

Both methods hand the whole problem to a general-purpose solver, so they prove what the
heuristics cannot (a capacity is infeasible, a peak is minimal), at the price of time that
grows quickly with the number of buffers that overlap in time.

* ``cpsat``: the standard NoOverlap2D formulation of 2-D rectangle packing. Every buffer is
  a rectangle in the time-address plane: a fixed time interval ``[start, end)`` and an
  address interval ``[offset, offset + size)`` whose start is ``alignment * k`` for an
  integer ``k`` (a constant for a fixed offset). ``add_no_overlap_2d`` forbids two
  rectangles to share a cell, and a redundant cumulative constraint over time (demand =
  size, capacity = the capacity or the peak variable) lets CP-SAT reason about each cross
  section's total at once, the LOAD bound inside the search.
* ``mip``: the ILP that TelaMalloc §3.2 describes as the production fallback (Fig. 5), a
  conventional big-M encoding of 2-D bin packing. Per buffer an offset ``o_i = alignment_i
  * k_i``; for every pair of buffers that overlap in time a binary ``z_ij`` choosing which
  one lies below: ``o_i + s_i <= o_j + M (1 - z_ij)`` and ``o_j + s_j <= o_i + M z_ij``. The
  paper's two binaries ``B_ij`` and ``B~_ij`` with ``B_ij + B~_ij = 1`` are one binary here
  (``B~_ij = 1 - z_ij``), and its constraint ``o_i + s_i <= M`` is the upper bound of
  ``k_i``. ``M`` is the capacity, or the greedy-by-size peak when minimising. The number of
  binaries is the number of time-overlapping pairs, quadratic in the number of buffers
  live together: that is the growth TelaMalloc §3.2 blames for the ILP's long runs, and it
  is expected here too. It is solved through ``pywraplp`` with SCIP (default) or HiGHS.
  Above ``MIP_MAX_PAIRS`` pairs the model is not built ("failed", naming the count).

Two modes, chosen by ``problem.capacity``:

* a capacity: feasibility. ``"solved"`` with a placement that fits, ``"infeasible"`` when
  the solver proves none exists, ``"timeout"`` when the time runs out first.
* ``None``: minimise the peak (the highest ``offset + size``), bounded below by LOAD.
  ``"solved"`` with the best placement found (proven minimal or not: ``stats["optimal"]``
  says which and ``stats["bound"]`` is the best proven lower bound on the peak),
  ``"timeout"`` when none was found in time.

``reason`` names the solver's own status (``"CP-SAT OPTIMAL: ..."``, ``"MIP SCIP
FEASIBLE: ..."``). Pinned buffers that overlap both in time and in address never get here:
``Problem`` refuses them as bad input.

Number ranges. ``Problem`` keeps every value within ``MAX_VALUE = 2**62 - 1``, but each
solver has tighter limits, checked before a model is built (``InvalidProblemError``, one
line naming the value and the limit):

* CP-SAT refuses a model (MODEL_INVALID) when a variable's domain leaves +-(2**63 - 1) // 2,
  when the domains of all variables (their widths) sum to 2**63 - 1 or more, when any linear
  expression (an interval's start + size + end included) can reach beyond (2**63 - 1) // 2,
  or when the areas of the NoOverlap2D rectangles sum beyond 2**63 - 1. In units of the gcd,
  with the address range cut to the stacking horizon (no placement needs more) and, when
  the raw times are too large, the times renumbered by rank (only their order matters),
  ``cpsat`` checks these sums exactly and refuses only what CP-SAT would.
* ``mip`` goes through doubles, which hold integers exactly only up to 2**53; its big-M
  constraints sum up to twice the big-M bound, so it refuses a bound (the capacity, or the
  greedy peak when minimising) above 2**52 units.

Both models work in units of the gcd of all sizes, alignments and fixed offsets, which is
exact: pushing every free buffer down as far as it goes (lowest original offset first)
keeps a placement valid, never raises its peak, and leaves every offset a sum of sizes
rounded up to alignments, so a multiple of that gcd. Smaller numbers keep the MIP's big-M
products further from the solver's tolerances.
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any

import numpy as np

from allocator.core.kernel_clock import work_clock
from allocator.core.options import CPSATOptions, MIPOptions, NoOptions
from allocator.core.problem import Buffer, InvalidProblemError, Problem, Solution
from allocator.core.registry import MethodOutput
from allocator.core.validate import lower_bound
from allocator.methods.greedy import greedy_by_size
from allocator.methods.heuristics import conflict_counts

if TYPE_CHECKING:  # OR-Tools is imported by the method that uses it: it pulls in pandas, a second of CPU
    from ortools.sat.python import cp_model

#: MIP backends ``mip`` accepts (``pywraplp`` solver ids that solve integer programs)
MIP_BACKENDS = ("SCIP", "HIGHS", "CBC", "SAT")
#: ``mip`` declines ("failed", with the count) above this many time-overlapping pairs: building
#: the pairwise model is Python work that no time limit interrupts (pangu has 12 million pairs)
MIP_MAX_PAIRS = 2_000_000
#: ``mip`` refuses a big-M bound (capacity or greedy peak, in units) above this: its constraints'
#: activities reach about twice the bound, and doubles hold integers exactly only up to 2**53
MIP_MAX_BIG_M = 2**52
#: backends given the greedy hint: OR-Tools 9.15 crashes on SetHint with HiGHS, CBC ignores it
_HINTED_BACKENDS = frozenset({"SCIP", "SAT"})
#: how far a MIP value may be from an integer before it counts as numerical trouble
_INTEGRALITY_TOLERANCE = 1e-6

#: the ``pywraplp.Solver`` result statuses ``mip`` names in its reason
_MIP_STATUS_NAMES = ("OPTIMAL", "FEASIBLE", "INFEASIBLE", "UNBOUNDED", "ABNORMAL", "MODEL_INVALID", "NOT_SOLVED")


# --- shared preparation ---------------------------------------------------------------------


def _unit(problem: Problem) -> int:
    """The gcd of every size, alignment and fixed offset: all offsets and peaks can be taken as multiples of it."""
    _, _, sizes, alignments, fixed = problem.arrays(copy=False)
    values = np.concatenate([sizes, alignments, fixed[fixed > 0]])
    return int(np.gcd.reduce(values)) if len(values) else 1


def _time_overlapping_pairs(buffers: tuple[Buffer, ...]) -> list[tuple[int, int]]:
    """Index pairs ``(i, j)``, ``i < j``, of buffers whose half-open lifetimes share a step.

    Sorted by start, a buffer can only overlap the later-starting ones that start before it
    ends, so the scan stops there: O(n log n + pairs).
    """
    order = sorted(range(len(buffers)), key=lambda i: buffers[i].start)
    pairs = []
    for at, i in enumerate(order):
        end = buffers[i].end
        for later in range(at + 1, len(order)):
            j = order[later]
            if buffers[j].start >= end:
                break
            pairs.append((min(i, j), max(i, j)))
    return pairs


def _oversized(problem: Problem) -> str | None:
    """A message naming a buffer larger than the capacity, or None (``solve`` catches this by LOAD first)."""
    for b in problem.buffers:
        if problem.capacity is not None and b.size > problem.capacity:
            return f"buffer {b.id!r} of {b.size} bytes exceeds capacity {problem.capacity}"
    return None


def _greedy(problem: Problem, deadline: float | None) -> dict[str, int] | None:
    """The greedy-by-size placement without a capacity: the hint and, when minimising, the
    peak's upper bound. None when it does not finish by ``deadline`` (it reads the clock: on
    iopddl/S_1 it takes over a second, which a short time limit cannot spare)."""
    return greedy_by_size(problem.with_capacity(None), deadline, NoOptions()).offsets


def _horizon(problem: Problem, unit: int) -> int:
    """An upper bound on the optimal peak (in units): every free buffer stacked, aligned, above the pinned ones.

    At most ``MAX_VALUE`` (``Problem`` bounds this stacking sum), and a placement with this
    peak always exists, so no model needs a larger address range.
    """
    _, _, sizes, alignments, fixed = problem.arrays(copy=False)
    pinned = fixed >= 0
    top = int((fixed[pinned] + sizes[pinned]).max()) // unit if pinned.any() else 0
    free = ~pinned
    return top + sum(((sizes[free] + alignments[free] - unit) // unit).tolist())


def _seconds_left(deadline: float | None) -> float | None:
    return None if deadline is None else deadline - work_clock()


def _proven_bound(objective_bound: float, load: int, unit: int) -> int:
    """The solver's lower bound on the peak (in units) as bytes, at least LOAD; LOAD alone when it has none."""
    if not math.isfinite(objective_bound):
        return load
    return max(load, unit * math.ceil(objective_bound - _INTEGRALITY_TOLERANCE))


def _empty_output(problem: Problem) -> MethodOutput:
    stats = {"bound": 0.0, "optimal": 1.0} if problem.capacity is None else {"optimal": 1.0}
    return MethodOutput("solved", {}, "no buffers to place", stats)


# --- CP-SAT ---------------------------------------------------------------------------------

#: CP-SAT's bound on a variable's domain and on any linear expression: (2**63 - 1) // 2
CPSAT_MAX_VALUE = (2**63 - 1) // 2
#: CP-SAT's bound (exclusive) on the sum of all variable domains and of the NoOverlap2D areas
CPSAT_MAX_SUM = 2**63 - 1


def _cpsat_times(problem: Problem, unit: int) -> tuple[list[int], list[int]]:
    """The buffers' start and end times for the model: raw, or ranks when the raw ones break a CP-SAT limit.

    Only the order of the times matters to NoOverlap2D and the cumulative, so ranks give
    the same problem. They are used only when needed (a fixed interval's start + size + end
    beyond ``CPSAT_MAX_VALUE``, or the rectangles' areas summing past ``CPSAT_MAX_SUM``), so
    that ordinary instances keep the model they always had.
    """
    starts, ends, sizes, _, _ = problem.arrays(copy=False)
    area = sum(map(operator.mul, (ends - starts).tolist(), (sizes // unit).tolist()))
    if 2 * int(ends.max()) <= CPSAT_MAX_VALUE and area < CPSAT_MAX_SUM:
        return starts.tolist(), ends.tolist()
    times = np.unique(np.concatenate([starts, ends]))
    return np.searchsorted(times, starts).tolist(), np.searchsorted(times, ends).tolist()


def _check_cpsat_limits(problem: Problem, unit: int, top: int, minimising: bool, time_starts: list[int],
                        time_ends: list[int]) -> None:
    """Raise ``InvalidProblemError`` when the model ``cpsat`` would build breaks one of CP-SAT's limits.

    Mirrors CP-SAT's model validator for the variables and constraints ``cpsat`` creates
    (all in units): ``k_i`` in ``[0, (top - size_i) // alignment_i]`` per free buffer and
    the peak in ``[LOAD, top]``; an address interval ``alignment * k + [0, size)`` counts
    ``alignment * k_max + 2 * size`` (CP-SAT adds its start, size and end); a pinned one
    ``2 * (offset + size)``; the rectangles' areas are lifetime x size.
    """
    _, _, sizes, alignments, fixed = problem.arrays(copy=False)
    ids = problem.ids
    why = "too large for CP-SAT (use greedy-by-size, best-fit, minimalloc or telamalloc)"
    domains = top if minimising else 0
    for i, (size, alignment, offset) in enumerate(zip((sizes // unit).tolist(), (alignments // unit).tolist(),
                                                      fixed.tolist(), strict=True)):
        if offset >= 0:
            reach = 2 * (offset // unit + size)
        else:
            k_max = (top - size) // alignment
            domains += k_max
            reach = alignment * k_max + 2 * size
        if reach > CPSAT_MAX_VALUE:
            raise InvalidProblemError(
                f"cpsat: buffer {ids[i]!r}: its address interval (start + size + end) reaches {reach * unit} B, beyond "
                f"CP-SAT's limit of (2**63 - 1) // 2 = {CPSAT_MAX_VALUE} (in units of {unit} B) on any linear "
                f"expression: {why}")
    if domains >= CPSAT_MAX_SUM:
        raise InvalidProblemError(
            f"cpsat: the offset domains of the {len(ids)} buffers (each up to {top * unit} B) sum to "
            f"{domains} units of {unit} B, beyond CP-SAT's limit of 2**63 - 1 on the sum of all variable domains: "
            f"{why}")
    area = sum(map(operator.mul, map(operator.sub, time_ends, time_starts), (sizes // unit).tolist()))
    if area >= CPSAT_MAX_SUM:
        raise InvalidProblemError(
            f"cpsat: the buffers' areas (lifetime x size, times by rank) sum to {area}, beyond CP-SAT's limit of "
            f"2**63 - 1 on the NoOverlap2D areas: {why}")



def cpsat(problem: Problem, deadline: float | None, options: CPSATOptions) -> MethodOutput:
    """Place ``problem`` with CP-SAT (see the module docstring for the model and the modes).

    Parameters
    ----------
    problem : the buffers; a capacity asks for any placement that fits, ``None`` for the
        lowest peak.
    deadline : ``work_clock()`` value to stop at (the solver's time limit), or None.
    options : a ``CPSATOptions``:

        * ``workers``: CP-SAT ``num_workers``; with 1 worker and a fixed ``seed`` the answer
          is reproducible (as long as the time limit is not what stops the search);
        * ``hint``: start from the greedy-by-size placement (the offsets that fit the
          capacity); when minimising, its peak is also the peak's upper bound;
        * ``seed``: CP-SAT ``random_seed``;
        * ``deterministic_time``: CP-SAT ``max_deterministic_time``, a limit in CP-SAT's own
          work units, which does not depend on the machine's speed or load. With one worker
          the outcome under this limit is reproducible (tests use it instead of wall seconds).

    Returns a ``MethodOutput`` whose ``stats`` hold ``"optimal"`` (1.0 when the peak is
    proven minimal, or, with a capacity, when CP-SAT reports OPTIMAL: it does so for any
    placement of a model without objective), ``"conflicts"``, ``"branches"``,
    ``"wall_time"`` (seconds), ``"deterministic_time"`` and, when minimising, ``"bound"``
    (bytes, >= LOAD).

    Raises ``InvalidProblemError`` when the numbers are too large for CP-SAT (see the
    module docstring), naming the buffer or sum at fault.

    >>> from allocator.core.problem import Buffer
    >>> out = cpsat(Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4), Buffer("c", 2, 4, 4)]), None, CPSATOptions())
    >>> out.status, out.reason, out.stats["bound"]
    ('solved', 'CP-SAT OPTIMAL: peak 8 proven minimal', 8.0)
    """
    workers, hint, seed, deterministic_time = options.workers, options.hint, options.seed, options.deterministic_time
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise InvalidProblemError(f"cpsat: workers must be a positive integer, got {workers!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise InvalidProblemError(f"cpsat: seed must be an integer, got {seed!r}")
    if deterministic_time is not None and not (isinstance(deterministic_time, int | float)
                                               and math.isfinite(deterministic_time) and deterministic_time > 0):
        raise InvalidProblemError(f"cpsat: deterministic_time must be a positive number, got {deterministic_time!r}")
    from ortools.sat.python import cp_model  # imported here, not with the package (see the imports above)

    if not problem.buffers:
        return _empty_output(problem)
    trouble = _oversized(problem)
    if trouble:
        return MethodOutput("infeasible", None, trouble)
    minimising = problem.capacity is None
    unit = _unit(problem)
    load = lower_bound(problem)
    horizon = _horizon(problem, unit)
    # the hint may take half of the time at most: without it CP-SAT still searches
    hint_deadline = None if deadline is None else (work_clock() + deadline) / 2
    start_offsets = _greedy(problem, hint_deadline) if hint else None

    if problem.capacity is not None:
        top = min(problem.capacity // unit, horizon)
    elif start_offsets is not None:
        top = min(Solution(start_offsets).peak(problem) // unit, horizon)
    else:
        top = horizon
    time_starts, time_ends = _cpsat_times(problem, unit)
    _check_cpsat_limits(problem, unit, top, minimising, time_starts, time_ends)

    built = _cpsat_model(problem, deadline, unit, top, load, minimising, time_starts, time_ends, start_offsets)
    if isinstance(built, MethodOutput):
        return built  # out of time while building
    model, peak, ks = built
    solver = cp_model.CpSolver()
    # CP-SAT would install its own SIGINT handler for good; Ctrl-C must stay Python's KeyboardInterrupt
    # so that the commands can report what they have (it then arrives when the solve returns).
    solver.parameters.catch_sigint_signal = False
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    if deterministic_time is not None:
        solver.parameters.max_deterministic_time = float(deterministic_time)
    left = _seconds_left(deadline)
    if left is not None:
        if left <= 0:
            return MethodOutput("timeout", None, "CP-SAT not run: no time left after building the model",
                                {"optimal": 0.0})
        solver.parameters.max_time_in_seconds = left
    status = solver.solve(model)
    if status == cp_model.MODEL_INVALID:
        raise RuntimeError(f"cpsat built an invalid CP-SAT model: {model.validate()}")
    return _cpsat_answer(problem, solver, status, ks, load, unit, minimising)


def _cpsat_model(problem: Problem, deadline: float | None, unit: int, top: int, load: int, minimising: bool,
                 time_starts: list[int], time_ends: list[int], start_offsets: dict[Any, int] | None,
                 ) -> Any:
    """The CP-SAT model of the module docstring: per buffer a fixed time interval and an address
    interval (fixed for a pinned buffer, ``alignment x k`` otherwise), NoOverlap2D over the
    pairs, the redundant cumulative over time, and, minimising, ``peak`` above every buffer.
    Returns ``(model, peak or None, {buffer index: k})``, or a timeout ``MethodOutput`` when the
    clock ran out while building."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    peak: cp_model.IntVar | None = None
    if minimising:
        peak = model.new_int_var(-(-load // unit), top, "peak")
        if start_offsets is not None and Solution(start_offsets).peak(problem) <= top * unit:
            model.add_hint(peak, Solution(start_offsets).peak(problem) // unit)
    times, addresses, demands = [], [], []
    ks: dict[int, cp_model.IntVar] = {}
    for i, b in enumerate(problem.buffers):
        if i % 4096 == 4095 and deadline is not None and work_clock() >= deadline:
            return MethodOutput("timeout", None, f"CP-SAT not run: ran out of time building the model "
                                f"({i:,} of {len(problem):,} buffers)", {"optimal": 0.0})
        size, align = b.size // unit, b.alignment // unit
        times.append(model.new_fixed_size_interval_var(time_starts[i], time_ends[i] - time_starts[i], f"time_{i}"))
        if b.offset is not None:
            low: cp_model.LinearExprT = b.offset // unit
            addresses.append(model.new_fixed_size_interval_var(b.offset // unit, size, f"address_{i}"))
        else:
            k = ks[i] = model.new_int_var(0, (top - size) // align, f"k_{i}")
            low = align * k
            addresses.append(model.new_interval_var(low, size, low + size, f"address_{i}"))
            if start_offsets is not None and start_offsets[b.id] + b.size <= top * unit:
                model.add_hint(k, start_offsets[b.id] // b.alignment)
        demands.append(size)
        if peak is not None:
            model.add(low + size <= peak)
    model.add_no_overlap_2d(times, addresses)
    model.add_cumulative(times, demands, peak if peak is not None else top)
    if peak is not None:
        model.minimize(peak)
    return model, peak, ks


def _cpsat_answer(problem: Problem, solver: Any, status: Any, ks: dict[int, Any], load: int, unit: int,
                  minimising: bool) -> MethodOutput:
    """CP-SAT's verdict as a ``MethodOutput``: the offsets, and the proven bound when minimising."""
    from ortools.sat.python import cp_model

    name = solver.status_name(status)
    stats = {"conflicts": float(solver.num_conflicts), "branches": float(solver.num_branches),
             "wall_time": float(solver.wall_time), "deterministic_time": float(solver.deterministic_time),
             "optimal": 0.0}
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        if minimising:
            stats["bound"] = float(_proven_bound(solver.best_objective_bound, load, unit))
        if status == cp_model.INFEASIBLE:
            where = "under the fixed offsets" if minimising else f"in capacity {problem.capacity}"
            return MethodOutput("infeasible", None, f"CP-SAT INFEASIBLE: no placement fits {where}", stats)
        return MethodOutput("timeout", None, f"CP-SAT {name}: no placement found within the time limit", stats)
    offsets = {}
    for i, b in enumerate(problem.buffers):
        offsets[b.id] = b.offset if b.offset is not None else int(solver.value(ks[i])) * b.alignment
    if not minimising:
        stats["optimal"] = float(status == cp_model.OPTIMAL)
        return MethodOutput("solved", offsets, f"CP-SAT {name}: placement fits capacity {problem.capacity}", stats)
    reached = Solution(offsets).peak(problem)
    bound = _proven_bound(solver.best_objective_bound, load, unit)
    stats["bound"] = float(bound)
    stats["optimal"] = float(status == cp_model.OPTIMAL or reached <= bound)
    if stats["optimal"]:
        return MethodOutput("solved", offsets, f"CP-SAT {name}: peak {reached} proven minimal", stats)
    return MethodOutput("solved", offsets, f"CP-SAT {name}: best peak {reached}, bound {bound}", stats)


# --- MIP (TelaMalloc Fig. 5) -----------------------------------------------------------------


def mip(problem: Problem, deadline: float | None, options: MIPOptions) -> MethodOutput:
    """Place ``problem`` by the ILP of TelaMalloc Fig. 5 (see the module docstring).

    Parameters
    ----------
    problem : the buffers; a capacity asks for any placement that fits, ``None`` for the
        lowest peak.
    deadline : ``work_clock()`` value to stop at (``SetTimeLimit``), or None.
    options : a ``MIPOptions``:

        * ``backend``: a ``pywraplp`` MIP solver id, one of ``MIP_BACKENDS``
          (case-insensitive); anything else raises ``InvalidProblemError``;
        * ``hint``: give the greedy-by-size placement as a starting solution (SCIP and
          CP-SAT-as-MIP only; skipped when it does not fit the capacity).

    Returns a ``MethodOutput`` whose ``stats`` hold ``"optimal"`` (1.0 when the peak is
    proven minimal, or, with a capacity, when the backend reports OPTIMAL), ``"nodes"``,
    ``"wall_time"`` (seconds) and, when minimising, ``"bound"`` (bytes, >= LOAD). The
    model has one binary per pair of buffers overlapping in time, so its size is quadratic
    in the number of buffers live together. A solution whose values are not integral within
    1e-6 (or that overlaps once rounded) is reported ``"failed"``: numerical trouble, not a
    verdict.

    >>> from allocator.core.problem import Buffer
    >>> out = mip(Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4)], capacity=8), None, MIPOptions())
    >>> out.status, sorted(out.offsets.values()), out.reason
    ('solved', [0, 4], 'MIP SCIP OPTIMAL: placement fits capacity 8')
    """
    backend, hint = options.backend, options.hint
    chosen = backend.upper() if isinstance(backend, str) else backend
    if chosen not in MIP_BACKENDS:
        raise InvalidProblemError(f"mip: unknown MIP backend {backend!r}; use one of {', '.join(MIP_BACKENDS)}")
    from ortools.linear_solver import pywraplp  # imported here, not with the package (see the imports above)

    solver = pywraplp.Solver.CreateSolver(chosen)
    if solver is None:
        raise InvalidProblemError(f"mip: MIP backend {backend!r} is not available in this OR-Tools build")
    solver.SuppressOutput()
    if not problem.buffers:
        return _empty_output(problem)
    trouble = _oversized(problem)
    if trouble:
        return MethodOutput("infeasible", None, trouble)
    starts, ends, _, _, _ = problem.arrays()
    n_pairs = int(conflict_counts(starts, ends).sum()) // 2
    if n_pairs > MIP_MAX_PAIRS:
        return MethodOutput("failed", None, f"mip: {n_pairs:,} time-overlapping pairs would need as many binaries "
                            f"and twice as many constraints; the model is built only up to {MIP_MAX_PAIRS:,}")
    bufs = problem.buffers  # Buffer objects are built on first use: only for a model that will be built
    minimising = problem.capacity is None
    unit = _unit(problem)
    load = lower_bound(problem)
    greedy = _greedy(problem, deadline) if minimising or hint else None
    if minimising and greedy is None:
        return MethodOutput("timeout", None, "mip: ran out of time placing greedy-by-size for the big-M bound",
                            {"optimal": 0.0})
    pairs = _time_overlapping_pairs(bufs)  # quadratic in the buffers live together: TelaMalloc §3.2
    big_m = problem.capacity // unit if problem.capacity is not None else Solution(greedy or {}).peak(problem) // unit
    if big_m > MIP_MAX_BIG_M:
        largest = int(np.argmax(problem.arrays(copy=False)[2]))
        what = (f"capacity {problem.capacity} B" if problem.capacity is not None
                else f"greedy-by-size peak {big_m * unit} B (the big-M bound when minimising)")
        raise InvalidProblemError(
            f"mip: the {what} exceeds 2**52 units of {unit} B (largest buffer {bufs[largest].id!r}, "
            f"{bufs[largest].size} B): the big-M constraints sum to about twice it, and doubles hold integers "
            "exactly only up to 2**53 (use cpsat)")

    built = _mip_model(solver, problem, pairs, big_m, unit, load, deadline, chosen)
    if isinstance(built, MethodOutput):
        return built  # out of time while building
    ks, below, peak = built
    if hint and greedy is not None and chosen in _HINTED_BACKENDS and Solution(greedy).peak(problem) <= big_m * unit:
        variables = [ks[i] for i in ks] + list(below.values())
        values = [float(greedy[bufs[i].id] // bufs[i].alignment) for i in ks]
        values += [float(greedy[bufs[i].id] < greedy[bufs[j].id]) for i, j in below]
        if peak is not None:
            variables.append(peak)
            values.append(float(Solution(greedy).peak(problem) // unit))
        solver.SetHint(variables, values)
    left = _seconds_left(deadline)
    if left is not None:
        if left <= 0:
            return MethodOutput("timeout", None, f"MIP {chosen} not run: no time left after building the model",
                                {"optimal": 0.0})
        solver.SetTimeLimit(max(1, int(left * 1000)))
    parameters = pywraplp.MPSolverParameters()
    parameters.SetDoubleParam(pywraplp.MPSolverParameters.RELATIVE_MIP_GAP, 0.0)  # HiGHS stops at 1e-4 otherwise
    status = solver.Solve(parameters)
    return _mip_answer(problem, solver, status, ks, pairs, load, unit, chosen)


def _mip_model(solver: Any, problem: Problem, pairs: list[tuple[int, int]], big_m: int, unit: int, load: int,
               deadline: float | None, chosen: str) -> Any:
    """TelaMalloc Fig. 5's ILP in ``solver``: offsets in units (a constant for a pinned buffer,
    ``alignment x k`` for a free one), per time-overlapping pair a binary ``z`` (1: i below j)
    and its two big-M constraints, and, minimising, ``peak`` above every buffer. Returns
    ``(ks, z by pair, peak or None)``, or a timeout ``MethodOutput`` when the clock ran out."""
    bufs = problem.buffers
    ks: dict[int, Any] = {}
    lows: list[Any] = []
    for i, b in enumerate(bufs):
        if b.offset is not None:
            lows.append(b.offset // unit)
        else:
            ks[i] = solver.IntVar(0, (big_m - b.size // unit) // (b.alignment // unit), f"k_{i}")
            lows.append((b.alignment // unit) * ks[i])
    below: dict[tuple[int, int], Any] = {}  # z_ij = 1: i lies below j
    for count, (i, j) in enumerate(pairs):
        if count % 4096 == 4095 and deadline is not None and work_clock() >= deadline:
            return MethodOutput("timeout", None, f"MIP {chosen}: time limit reached while building the model "
                                f"({count:,} of {len(pairs):,} pairs)", {"optimal": 0.0})
        if bufs[i].offset is not None and bufs[j].offset is not None:
            continue  # both pinned: Problem has checked that they do not clash
        z = below[i, j] = solver.BoolVar(f"z_{i}_{j}")
        solver.Add(lows[i] + bufs[i].size // unit <= lows[j] + big_m * (1 - z))
        solver.Add(lows[j] + bufs[j].size // unit <= lows[i] + big_m * z)
    peak = None
    if problem.capacity is None:
        peak = solver.IntVar(-(-load // unit), big_m, "peak")
        for b, low in zip(bufs, lows, strict=True):
            solver.Add(low + b.size // unit <= peak)
        solver.Minimize(peak)
    return ks, below, peak


def _mip_answer(problem: Problem, solver: Any, status: int, ks: dict[int, Any], pairs: list[tuple[int, int]],
                load: int, unit: int, chosen: str) -> MethodOutput:
    """The MIP's verdict as a ``MethodOutput``: offsets rounded from the doubles and checked
    again (a rounding that breaks a pair is numerical trouble, ``failed``), and the bound."""
    from ortools.linear_solver import pywraplp

    bufs = problem.buffers
    minimising = problem.capacity is None
    names = {getattr(pywraplp.Solver, label): label for label in _MIP_STATUS_NAMES}
    name = f"MIP {chosen} {names.get(status, str(status))}"
    stats = {"nodes": float(solver.nodes()), "wall_time": solver.wall_time() / 1000.0, "optimal": 0.0}
    if status not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        if status == pywraplp.Solver.INFEASIBLE:
            where = "under the fixed offsets" if minimising else f"in capacity {problem.capacity}"
            return MethodOutput("infeasible", None, f"{name}: no placement fits {where}", stats)
        return MethodOutput("timeout", None, f"{name}: no placement found within the time limit", stats)
    offsets: dict[str, int] = {}
    for i, b in enumerate(bufs):
        if b.offset is not None:
            offsets[b.id] = b.offset
            continue
        value = ks[i].solution_value()
        k = round(value)
        if abs(value - k) > _INTEGRALITY_TOLERANCE:
            return MethodOutput("failed", None, f"{name}: offset of {b.id!r} is {value * b.alignment}, "
                                "not an integer (numerical trouble)", stats)
        offsets[b.id] = k * b.alignment
    for i, j in pairs:
        a, b = bufs[i], bufs[j]
        if offsets[a.id] < offsets[b.id] + b.size and offsets[b.id] < offsets[a.id] + a.size:
            return MethodOutput("failed", None, f"{name}: {a.id!r} and {b.id!r} overlap once the offsets are "
                                "rounded (numerical trouble)", stats)
    if not minimising:
        stats["optimal"] = float(status == pywraplp.Solver.OPTIMAL)
        return MethodOutput("solved", offsets, f"{name}: placement fits capacity {problem.capacity}", stats)
    reached = Solution(offsets).peak(problem)
    bound = _proven_bound(solver.Objective().BestBound(), load, unit)
    stats["bound"] = float(bound)
    stats["optimal"] = float(reached <= bound)
    if stats["optimal"]:
        return MethodOutput("solved", offsets, f"{name}: peak {reached} proven minimal", stats)
    return MethodOutput("solved", offsets, f"{name}: best peak {reached}, bound {bound}", stats)

"""``auto``: a portfolio of the fast greedy heuristics and the exact canonical search.

Which methods take part, and in which order, is declared in the method table
(``allocator.core.registry.Roles``): this module asks the registry's ``fit_stages``,
``minimize_stages`` and ``starting_heuristics`` and names no method itself.

**Placing under a capacity**, ``auto`` runs its stages (``fit_stages()``) in turn and stops at
the first whose placement fits:

0. ``best-fit``, 1. ``greedy-by-size``, 2. ``load-best-fit``: milliseconds each on the
   challenging suite, seconds on the largest traces; each may use what is left of the time;
3. ``minimalloc``: the exact search, with what is left of the deadline after them (nearly all
   of it when the heuristics take milliseconds).

It returns the best placement it saw: the one that fits (status ``"solved"``), or else the
heuristics' lowest peak, which misses the capacity, under the exact stage's verdict:
``"infeasible"`` when the search space was exhausted (a proof: ``auto`` is exact when its last
stage runs to completion), ``"timeout"`` when the time or the node budget ran out first.
``stats["stage"]`` is the index in ``fit_stages()`` of the stage whose placement is returned
(-1: none, when no heuristic finished in time) and ``reason`` names it (``"best-fit fitted"``).

**Without a capacity** there is nothing to fit and nothing for the exact search to prune
against: ``auto`` runs the three heuristics and returns the lowest peak (status ``"solved"``,
``reason`` naming its stage). To lower the peak further, ``allocator.minimize(problem,
method="auto")`` runs ``auto_minimize``.

**Options**: ``options``, a ``MiniMallocOptions``, goes to the exact stage, as it does to
``minimalloc``: its ``node_limit`` bounds the search's nodes so that an outcome does not depend
on the machine (tests use it), ``workers`` its threads, ``seed`` its random preorders.
``solve(problem, "auto", node_limit=N)`` is short for ``options=MiniMallocOptions(node_limit=N)``
(it replaces the field of any ``options`` given). The heuristics are deterministic and take no
options, so with a node limit the whole outcome is the same on every machine, unless the time
runs out first.

**Minimising** (``auto_minimize``, the registered anytime routine): the three heuristics in
the order ``minimize_stages()``, each with what is left of the whole time, then the other
starting heuristics in a third of the time left (as ``minimalloc``'s routine gives them a
third), then ``minimalloc``'s canonical bisection from the best placement so far with the rest.
So it starts from every placement of its heuristics that finishes in the time, and from the
same incumbent as ``minimalloc`` when the heuristics take milliseconds. The order differs from
placing's because on large traces the heuristics take seconds each and under a short timeout
only one or two finish, so the one with the lowest peak on most large traces goes first
(``minimize_stages`` says which and why).
"""

from __future__ import annotations

from allocator.core.kernel_clock import work_clock
from allocator.core.problem import MinimizeResult, Problem, Solution
from allocator.core.progress import Progress
from allocator.core.registry import (
    METHODS,
    MethodOutput,
    MinimizeRequest,
    fit_stages,
    minimize_stages,
    starting_heuristics,
)
from allocator.methods.minimalloc import MiniMallocOptions, canonical_bisection


def auto_minimize(problem: Problem, request: MinimizeRequest) -> MinimizeResult:
    """``auto``'s anytime routine for ``allocator.minimize`` (see the module docstring).

    ``request.options`` (a ``MiniMallocOptions``, None for the defaults; another record raises
    ``TypeError``), ``request.node_limit`` and ``request.load_share`` go to the canonical bisection.
    """
    first = minimize_stages()
    progress = Progress(problem, request)
    progress.run_heuristics(first, request.deadline)
    now = work_clock()
    progress.run_heuristics([name for name in starting_heuristics() if name not in first],
                            now + (request.deadline - now) / 3)
    options = request.options_or_defaults(MiniMallocOptions)
    return canonical_bisection(progress, options, request.node_limit, request.load_share)


def auto(problem: Problem, deadline: float | None, options: MiniMallocOptions) -> MethodOutput:
    """Place ``problem`` with the first stage that fits its capacity (see the module docstring).

    ``options`` go to the exact stage (``solve(problem, "auto", node_limit=100_000)`` sets
    their ``node_limit``).

    >>> from allocator import Buffer, solve
    >>> p = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4), Buffer("c", 2, 4, 4)], capacity=8)
    >>> r = solve(p, "auto")
    >>> r.status, r.peak, r.reason, r.stats["stage"]
    ('solved', 8, 'best-fit fitted', 0)
    >>> pinned = Problem([Buffer("a", 0, 2, 1, offset=1), Buffer("b", 0, 2, 2, alignment=2)], capacity=3)
    >>> r = solve(pinned, "auto", node_limit=1000)  # LOAD 3 fits, but no aligned room beside the pinned byte
    >>> r.status, r.peak, r.stats["stage"]
    ('infeasible', 4, 0)
    """
    stages = fit_stages()
    *heuristics, exact_stage = stages
    best: tuple[int, int, dict[str, int]] | None = None  # (peak, stage, offsets) of the lowest heuristic peak
    missed: list[str] = []  # heuristics that placed nothing in time
    for stage, name in enumerate(heuristics):
        heuristic = METHODS[name]
        out = heuristic.function(problem, deadline, heuristic.options())
        if out.offsets is None:
            missed.append(f"{name}: {out.reason or out.status}")
            continue
        if out.status == "solved" and problem.capacity is not None:
            return MethodOutput("solved", out.offsets, f"{name} fitted", {"stage": stage})
        peak = Solution(out.offsets).peak(problem)
        if best is None or peak < best[0]:
            best = (peak, stage, out.offsets)
    if problem.capacity is None:
        if best is None:
            return MethodOutput("timeout", None, "no heuristic placed the buffers in time: " + "; ".join(missed),
                                {"stage": -1})
        peak, stage, offsets = best
        return MethodOutput("solved", offsets, f"{stages[stage]} placed them lowest (peak {peak:,}) of "
                            f"{', '.join(heuristics)}", {"stage": stage})
    exact = METHODS[exact_stage].function(problem, deadline, options)
    if exact.status == "solved":
        return MethodOutput("solved", exact.offsets, f"{exact_stage} fitted", {**exact.stats, "stage": len(stages) - 1})
    verdict = f"{exact_stage}: {exact.reason or exact.status}"
    if best is None:
        return MethodOutput(exact.status, None, f"{verdict}; no heuristic placed the buffers in time ("
                            + "; ".join(missed) + ")", {**exact.stats, "stage": -1})
    peak, stage, offsets = best
    return MethodOutput(exact.status, offsets, f"{verdict}; the placement is {stages[stage]}'s, the lowest peak of "
                        f"the heuristics ({peak:,}, above the capacity)", {**exact.stats, "stage": stage})

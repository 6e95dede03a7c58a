"""An independent check of a ``Schedule`` against its graph: does it compute the graph correctly?

It shares no code with the schedulers: it re-derives, from the graph and the schedule alone,
that

* the order runs every operator once, producers before readers;
* every operator finds its inputs and outputs resident at its step;
* a residency starts either where the tensor is made (the producer's step, first stay only)
  or with a ``load``/``retrieve`` issued at its first step (a prefetch needed at a later step
  of the stay, and used by no operator before that step), and a fill reads a DRAM copy that exists:
  a graph input or weight (``load`` the first time, ``retrieve`` afterwards) or a tensor
  written out (``spill``/``store``) when an earlier stay ended;
* stays of one tensor do not overlap in time, drains happen where stays end, transfers move
  the tensor's bytes, every final output is stored exactly once;
* the offsets, when given, keep every residency inside the capacity, aligned and apart from
  every residency live at the same step (``allocator.core.validate`` on ``schedule.problem()``).

``check_schedule`` returns the list of problems found (empty when the schedule is correct).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import networkx as nx

from allocator import InvalidProblemError, Solution, validate
from scheduler.schedule import Residency, Schedule, Transfer


def check_schedule(
    graph: nx.DiGraph, schedule: Schedule, sizes: Mapping[str, int] | None = None,
) -> list[str]:
    """Problems of ``schedule`` as messages naming the step, operator, tensor or residency.

    ``sizes`` are the byte counts the schedule was made with (default: the graph's ``nbytes``);
    on-chip sizes are those rounded up to ``schedule.alignment``.

    >>> from frontend.synthetic import chain
    >>> from scheduler.baseline import schedule
    >>> g = chain(3, size=10)
    >>> check_schedule(g, schedule(g, 30))
    []
    """
    problems: list[str] = []
    tensors = graph.graph["tensors"]
    data = {name: int(rec["nbytes"]) for name, rec in tensors.items()}
    data.update(sizes or {})
    align = schedule.alignment
    onchip = {name: -(-n // align) * align for name, n in data.items()}
    step_of = _check_order(graph, schedule, problems)
    stays = _check_residencies(tensors, onchip, schedule, problems)
    fills, drains = _check_transfers(data, schedule, problems)
    finals = set(graph.graph.get("outputs", ())) | {n for n, r in tensors.items() if r["kind"] == "output"}
    for name, rs in stays.items():
        _check_stays(name, rs, tensors[name]["producer"], name in finals, step_of, fills, drains, problems)
    _check_operands(graph, onchip, schedule, fills, problems)
    if schedule.offsets is not None:
        # The placement: the allocator's independent validator on the schedule's own problem.
        try:
            report = validate(schedule.problem(), Solution(schedule.offsets))
        except InvalidProblemError as error:  # residencies already reported above as malformed
            problems.append(f"the residencies do not form an allocation problem: {error}")
        else:
            problems.extend(v.message for v in report.violations)
    return problems


def _check_order(graph: nx.DiGraph, schedule: Schedule, problems: list[str]) -> dict[str, int]:
    """Every operator runs exactly once; the step of each."""
    step_of: dict[str, int] = {}
    for s, op in enumerate(schedule.order):
        if op not in graph:
            problems.append(f"step {s}: {op!r} is not an operator of the graph")
        elif op in step_of:
            problems.append(f"step {s}: operator {op!r} runs twice (also at step {step_of[op]})")
        else:
            step_of[op] = s
    for op in graph.nodes:
        if op not in step_of:
            problems.append(f"operator {op!r} never runs")
    return step_of


def _check_residencies(tensors: Mapping[str, Mapping[str, object]], onchip: Mapping[str, int], schedule: Schedule,
                       problems: list[str]) -> dict[str, list[Residency]]:
    """Each residency: a unique id, a known tensor, a lifetime within the steps, the tensor's
    on-chip size; the stays of each tensor."""
    n = len(schedule.order)
    stays: dict[str, list[Residency]] = defaultdict(list)
    ids: set[str] = set()
    for r in schedule.residencies:
        if r.id in ids:
            problems.append(f"residency id {r.id!r} appears twice")
        ids.add(r.id)
        if r.tensor not in tensors:
            problems.append(f"residency {r.id!r} holds unknown tensor {r.tensor!r}")
            continue
        if not 0 <= r.start < r.end <= n:
            problems.append(f"residency {r.id!r} lives on [{r.start}, {r.end}), outside steps [0, {n}]")
        if r.size != onchip[r.tensor]:
            problems.append(f"residency {r.id!r} has {r.size} bytes, tensor {r.tensor!r} needs {onchip[r.tensor]}")
        stays[r.tensor].append(r)
    return stays


def _check_transfers(data: Mapping[str, int], schedule: Schedule, problems: list[str],
                     ) -> tuple[dict[str, list[Transfer]], dict[str, list[Transfer]]]:
    """Each transfer names a stay of its tensor, moves the tensor's bytes, and fills a stay where
    it starts or drains it where it ends; the fills and drains of each residency."""
    fills: dict[str, list[Transfer]] = defaultdict(list)
    drains: dict[str, list[Transfer]] = defaultdict(list)
    by_id = {r.id: r for r in schedule.residencies}
    for t in schedule.transfers:
        r = by_id.get(t.residency)
        if r is None or r.tensor != t.tensor:
            problems.append(f"{t.kind} of {t.tensor!r} at step {t.step} names residency {t.residency!r}, "
                            "which is not a stay of that tensor")
            continue
        if t.nbytes != data[t.tensor]:
            problems.append(f"{t.kind} of {t.tensor!r} moves {t.nbytes} bytes, the tensor has {data[t.tensor]}")
        if t.kind in ("load", "retrieve"):
            issued = t.issued_at
            if issued != r.start:
                problems.append(f"{t.kind} of {r.id!r} at step {t.step}, but it starts at {r.start}"
                                if t.issue_step is None else
                                f"{t.kind} of {r.id!r} issued at step {issued}, but it starts at {r.start}")
            elif not r.start <= t.step < r.end:
                problems.append(f"{t.kind} of {r.id!r} needed at step {t.step}, outside its stay [{r.start}, {r.end})")
            fills[r.id].append(t)
        else:
            if t.step != r.end:
                problems.append(f"{t.kind} of {r.id!r} at step {t.step}, but it ends at {r.end}")
            drains[r.id].append(t)
    return fills, drains


def _check_stays(name: str, rs: list[Residency], producer: str | None, final: bool, step_of: Mapping[str, int],
                 fills: Mapping[str, list[Transfer]], drains: Mapping[str, list[Transfer]],
                 problems: list[str]) -> None:
    """The stays of one tensor, in time: they do not overlap; the first starts where its producer
    runs (or with a load); every later one is filled from a DRAM copy that exists; drains are
    stores of final outputs and spills of the rest; a final output is stored once."""
    rs.sort(key=lambda r: r.start)
    in_dram = producer is None  # graph inputs and weights live in DRAM
    loaded = False
    stores = 0
    for i, r in enumerate(rs):
        if i and rs[i - 1].end > r.start:
            problems.append(f"stays {rs[i - 1].id!r} and {r.id!r} of {name!r} overlap in time")
        fill = fills.get(r.id, [])
        if len(fill) > 1:
            problems.append(f"residency {r.id!r} is filled {len(fill)} times")
        made_here = producer is not None and i == 0 and step_of.get(producer) == r.start
        if made_here and fill:
            problems.append(f"residency {r.id!r} is made by {producer!r} and also filled by a {fill[0].kind}")
        if not made_here and not fill:
            problems.append(f"residency {r.id!r} of {name!r} starts at step {r.start} with no producer and no fill")
        if fill:
            if not in_dram:
                problems.append(f"{fill[0].kind} of {r.id!r} at step {r.start}: DRAM holds no copy of {name!r}")
            expected = "load" if producer is None and not loaded else "retrieve"
            if fill[0].kind != expected:
                problems.append(f"residency {r.id!r} is filled by a {fill[0].kind}; a {expected} was due")
            loaded = True
        if producer is not None and i == 0 and not made_here:
            problems.append(f"the first stay of {name!r} does not start where {producer!r} runs")
        for d in drains.get(r.id, []):
            if producer is None:
                problems.append(f"{d.kind} of graph input or weight {name!r} (it is in DRAM already)")
            want = "store" if final else "spill"
            if d.kind != want:
                problems.append(f"{r.id!r} is drained by a {d.kind}; a {name!r} write is a {want}")
            stores += d.kind == "store"
            in_dram = True
    if final and producer is not None and stores != 1:
        problems.append(f"final output {name!r} is stored {stores} times")


def _check_operands(graph: nx.DiGraph, onchip: Mapping[str, int], schedule: Schedule,
                    fills: Mapping[str, list[Transfer]], problems: list[str]) -> None:
    """Every operator's inputs and outputs (those with on-chip bytes) are resident at its step, and a
    prefetched tensor is not used before the step its fill is needed at (it is still on its way)."""
    n = len(schedule.order)
    live_at: dict[int, set[str]] = defaultdict(set)
    for r in schedule.residencies:
        fill = fills.get(r.id)
        usable = max(r.start, fill[0].step) if fill else r.start
        for s in range(max(usable, 0), min(r.end, n)):
            live_at[s].add(r.tensor)
    for s, op in enumerate(schedule.order):
        if op not in graph:
            continue
        node = graph.nodes[op]
        for name in [*node["in_tensors"], *node["out_tensors"]]:
            if onchip[name] and name not in live_at[s]:
                problems.append(f"step {s}: operator {op!r} needs {name!r}, which is not resident")

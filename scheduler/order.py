"""Operator orders: which operator runs at which step.

An order is a list of operator names, one per logical step. It must be a topological order of
the dataflow graph: every tensor is written before any operator reads it. ``program_order``
is the order the model's code runs its operators in (PyTorch's default schedule, the first
operator-scheduling option of COSMA section V-A).

Orders have names, and two of them coincide with the names of schedulers: ``PROGRAM`` is the
program order (the ``program`` scheduler's default ``order``, one of cosma-fs's fixed orders)
and ``MIN_PEAK`` the order of minimum peak footprint (MPMF) a solver finds, cosma-fs's other
fixed order. Code names an order by these constants, never by its text, so a comparison with
an order is never mistaken for one with a scheduler (``scheduler.registry`` names those).
This module imports nothing heavy, so the registry and the command line read these names for free.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from scheduler.schedule import ScheduleError

if TYPE_CHECKING:
    import networkx as nx

#: the program order: the operators in the order the model's code runs them (``program_order``)
PROGRAM = "program"
#: the order of minimum peak footprint (MPMF, ``scheduler.cosma.min_peak``), which a solver chooses
MIN_PEAK = "min-peak"
#: the fixed orders cosma-fs takes (``fixed_order=``): the program order, or MPMF's
FIXED_ORDERS = (PROGRAM, MIN_PEAK)


def program_order(graph: nx.DiGraph) -> list[str]:
    """The operators in program order (the order they were added to the graph).

    >>> from frontend.graph import new_graph, add_tensor, add_operator
    >>> g = new_graph("g")
    >>> add_tensor(g, "x", (4,), kind="input")
    >>> add_operator(g, "relu", "relu", inputs=["x"], outputs={"y": (4,)})
    >>> add_operator(g, "neg", "neg", inputs=["y"], outputs={"z": (4,)})
    >>> program_order(g)
    ['relu', 'neg']
    """
    return list(graph.nodes)


#: named orders ``schedule(order=...)`` accepts; a list of operator names is accepted too
ORDERS: dict[str, Callable[[nx.DiGraph], list[str]]] = {PROGRAM: program_order}


def is_solvers_order(fixed_order: str) -> bool:
    """Whether the fixed order ``fixed_order`` is one a solver chooses (MPMF), not the graph's own.

    >>> is_solvers_order(MIN_PEAK), is_solvers_order(PROGRAM)
    (True, False)
    """
    return fixed_order == MIN_PEAK


def resolve_order(graph: nx.DiGraph, order: str | Sequence[str]) -> list[str]:
    """Turn ``order`` (a name from ``ORDERS`` or a list of operator names) into a checked order.

    Raises ``ScheduleError`` for an unknown name, an unknown, repeated or missing operator, or
    an operator placed before the producer of a tensor it reads (the message names both).

    >>> from frontend.graph import new_graph, add_tensor, add_operator
    >>> g = new_graph("g")
    >>> add_tensor(g, "x", (4,), kind="input")
    >>> add_operator(g, "a", "relu", inputs=["x"], outputs={"y": (4,)})
    >>> add_operator(g, "b", "neg", inputs=["y"], outputs={"z": (4,)})
    >>> resolve_order(g, ["b", "a"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    scheduler.schedule.ScheduleError: order is not topological: operator 'b' at step 0 reads tensor 'y' ...
    """
    if isinstance(order, str):
        if order not in ORDERS:
            raise ScheduleError(
                f"unknown order {order!r}; valid values: {', '.join(map(repr, ORDERS))}, or a list of operator names"
            )
        names = ORDERS[order](graph)
    else:
        names = list(order)
    step_of: dict[str, int] = {}
    for step, name in enumerate(names):
        if name not in graph:
            raise ScheduleError(f"order names {name!r}, which is not an operator of the graph")
        if name in step_of:
            raise ScheduleError(f"order lists operator {name!r} twice (steps {step_of[name]} and {step})")
        step_of[name] = step
    missing = [n for n in graph.nodes if n not in step_of]
    if missing:
        shown = ", ".join(map(repr, missing[:5])) + (", ..." if len(missing) > 5 else "")
        raise ScheduleError(f"order leaves out {len(missing)} operator(s): {shown}")
    tensors = graph.graph["tensors"]
    for step, name in enumerate(names):
        for t in graph.nodes[name]["in_tensors"]:
            producer = tensors[t]["producer"]
            if producer is not None and producer not in step_of:
                raise ScheduleError(
                    f"tensor {t!r} read by {name!r} names producer {producer!r}, which is not an operator"
                )
            if producer is not None and step_of[producer] >= step:
                raise ScheduleError(
                    f"order is not topological: operator {name!r} at step {step} reads tensor {t!r} "
                    f"before its producer {producer!r} runs (step {step_of[producer]})"
                )
    _check_host_waits(graph, names, step_of)
    return names


def _check_host_waits(graph: nx.DiGraph, names: Sequence[str], step_of: dict[str, int]) -> None:
    """A tensor a host operator writes (``frontend.host``) is read only after every accelerator
    tensor the host operator waits for has been produced."""
    writer = {e["tensor"]: record for record in graph.graph.get("host_ops", ())
              for e in record["outputs"] if e["side"] == "accelerator"}
    if not writer:
        return
    tensors = graph.graph["tensors"]
    for step, name in enumerate(names):
        for t in graph.nodes[name]["in_tensors"]:
            record = writer.get(t)
            if record is None:
                continue
            for waited in record["waits_for"]:
                producer = tensors[waited]["producer"] if waited in tensors else None
                if producer is not None and step_of[producer] >= step:
                    raise ScheduleError(
                        f"order reads host operator {record['name']!r}'s result {t!r} at step {step} ({name!r}) "
                        f"before {producer!r} (step {step_of[producer]}) produces {waited!r}, which the host "
                        "operator reads")

"""On-chip tensor sizes and the tightest memory budget M_R (COSMA section V-A).

A tensor's on-chip size is its byte count (``nbytes`` in the graph, or the caller's per-PE
size) rounded up to the memory's alignment. M_R, "the minimum memory requirement", is the
largest sum of the on-chip sizes of one operator's own inputs (activations, graph inputs and
weights) and outputs: below it that operator cannot run at all; at or above it the baseline
scheduler always completes (it spills everything else if it has to).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from scheduler.schedule import CapacityError, ScheduleError

if TYPE_CHECKING:
    import networkx as nx


def data_bytes(graph: nx.DiGraph, sizes: Mapping[str, int] | None = None) -> dict[str, int]:
    """Bytes of every tensor before alignment: ``sizes[name]`` when given, else the graph's ``nbytes``.

    Raises ``ScheduleError`` when ``sizes`` names a tensor the graph does not have or gives a
    size that is not a non-negative integer.
    """
    tensors = graph.graph["tensors"]
    result = {name: int(rec["nbytes"]) for name, rec in tensors.items()}
    for name, value in (sizes or {}).items():
        if name not in tensors:
            raise ScheduleError(f"sizes names tensor {name!r}, which is not in the graph")
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ScheduleError(f"sizes[{name!r}] = {value!r} is not a non-negative integer")
        result[name] = value
    return result


def check_alignment(alignment: int) -> None:
    """Raise ``ScheduleError`` unless ``alignment`` is a positive integer."""
    if not isinstance(alignment, int) or isinstance(alignment, bool) or alignment < 1:
        raise ScheduleError(f"alignment must be a positive integer, got {alignment!r}")


def onchip_sizes(graph: nx.DiGraph, sizes: Mapping[str, int] | None = None, alignment: int = 1) -> dict[str, int]:
    """On-chip bytes of every tensor: ``data_bytes`` rounded up to a multiple of ``alignment``.

    A tensor of 0 bytes stays 0 (it takes no memory and no residency).

    >>> from frontend.graph import new_graph, add_tensor
    >>> g = new_graph("g", dtype="int8")
    >>> add_tensor(g, "x", (3, 5), kind="input")
    >>> onchip_sizes(g, alignment=8), onchip_sizes(g, sizes={"x": 2}, alignment=8)
    ({'x': 16}, {'x': 8})
    """
    check_alignment(alignment)
    return {name: -(-n // alignment) * alignment for name, n in data_bytes(graph, sizes).items()}


def operator_bytes(graph: nx.DiGraph, operator: str, onchip: Mapping[str, int]) -> int:
    """On-chip bytes ``operator`` needs at once: its inputs plus its outputs."""
    node = graph.nodes[operator]
    return sum(onchip[t] for t in node["in_tensors"]) + sum(onchip[t] for t in node["out_tensors"])


def min_capacity(graph: nx.DiGraph, sizes: Mapping[str, int] | None = None, alignment: int = 1) -> tuple[int, str]:
    """M_R: the largest on-chip footprint of a single operator, and the operator that has it.

    An operator's footprint is the sum of the on-chip sizes (see ``onchip_sizes``) of all its
    inputs -- activations, graph inputs and weights -- and all its outputs; they must all be
    resident while it runs. No budget below M_R can run the graph; COSMA section V-A uses M_R
    as its tightest budget. Ties go to the earliest operator in program order; a graph without
    operators gives ``(0, "")``.

    Parameters: ``sizes`` optionally overrides tensor byte counts (e.g. per-PE sizes);
    ``alignment`` rounds every size up. Returns ``(bytes, operator name)``.

    >>> from frontend.graph import new_graph, add_tensor, add_operator
    >>> g = new_graph("g", dtype="int8")
    >>> add_tensor(g, "x", (10,), kind="input")
    >>> add_tensor(g, "w", (10, 10), kind="weight")
    >>> add_operator(g, "fc", "linear", inputs=["x", "w"], outputs={"y": (10,)})
    >>> add_operator(g, "relu", "relu", inputs=["y"], outputs={"z": (10,)})
    >>> min_capacity(g)
    (120, 'fc')
    """
    onchip = onchip_sizes(graph, sizes, alignment)
    best, best_op = 0, ""
    for op in graph.nodes:
        need = operator_bytes(graph, op, onchip)
        if need > best or not best_op:
            best, best_op = need, op
    return best, best_op


def check_capacity(
    graph: nx.DiGraph, capacity_bytes: int, sizes: Mapping[str, int] | None = None, alignment: int = 1,
) -> int:
    """M_R, after checking that ``capacity_bytes`` is a positive integer of at least M_R.

    Raises ``ScheduleError`` for a capacity that is not a positive integer and
    ``CapacityError`` (naming the operator and M_R) for one below M_R.
    """
    if not isinstance(capacity_bytes, int) or isinstance(capacity_bytes, bool) or capacity_bytes <= 0:
        raise ScheduleError(f"capacity_bytes must be a positive integer, got {capacity_bytes!r}")
    need, operator = min_capacity(graph, sizes, alignment)
    if capacity_bytes < need:
        raise CapacityError(
            f"capacity {capacity_bytes} bytes is below M_R = {need} bytes: operator {operator!r} needs its "
            f"inputs and outputs on chip at once; the smallest budget that works is {need} bytes",
            operator, need,
        )
    return need

"""The baseline of COSMA section V-A: a fixed order, a TensorFlow Lite style arena, Belady or greedy replacement.

COSMA (Cai et al., "Combined Scheduling, Memory Allocation and Tensor Replacement for
Minimizing Off-Chip Data Accesses of DNN Accelerators", section V-A2) compares itself with
schemes built from three choices made one after the other, online, operator by operator:

* **operator scheduling** -- here the program order (or any topological order you pass;
  ``scheduler.order``);
* **memory allocation** -- TensorFlow Lite's linear arena: a tensor goes at the lowest offset
  where it fits among the tensors resident at that moment (first fit by address; compaction
  when the operator's own tensors fragment it: ``scheduler.arena``);
* **tensor replacement** -- when a tensor does not fit, evict resident tensors the current
  operator does not use: either the one needed furthest in the future first, until first fit
  succeeds (Belady), or the tensors under the one address window that costs the fewest
  non-compulsory bytes (greedy, locally optimal per eviction: ``scheduler.replacement``).

The events of each step (frees, fetches, outputs; spills and stores of evicted tensors) are
those of ``scheduler.residents``. ``schedule`` runs the three choices; ``no_spill_capacity`` is
the smallest capacity at which they move nothing beyond the compulsory bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import networkx as nx

from scheduler.arena import online_schedule
from scheduler.budget import check_capacity, onchip_sizes
from scheduler.options import DEFAULT_REPLACEMENT
from scheduler.order import PROGRAM
from scheduler.replacement import policy
from scheduler.residents import RunInputs
from scheduler.schedule import Schedule, ScheduleError, peak_address


def schedule(
    graph: nx.DiGraph,
    capacity_bytes: int,
    order: str | Sequence[str] = PROGRAM,
    replacement: str = DEFAULT_REPLACEMENT,
    sizes: Mapping[str, int] | None = None,
    alignment: int = 1,
) -> Schedule:
    """Schedule ``graph`` in a fixed order with a first-fit arena and Belady or greedy replacement (COSMA section V-A).

    Parameters
    ----------
    graph:
        a ``DataflowGraph`` (see ``frontend.graph``).
    capacity_bytes:
        on-chip memory in bytes (per PE when ``sizes`` are per PE). Must be at least M_R
        (``min_capacity``).
    order:
        ``"program"`` (the graph's operator order), or a list of every operator name in a
        topological order.
    replacement:
        ``"belady"`` evicts the resident tensor not used by the current operator whose next
        use is furthest (never used again first; ties: larger, then by name), one at a time
        until first fit succeeds. ``"greedy"`` evicts, in one go, the resident tensors under
        the address window ``[x, x + size)`` whose eviction moves the fewest non-compulsory
        bytes (a retrieve for a tensor read again, plus a spill if it has no DRAM copy and is
        not a final output; ties: fewer evicted bytes, then lower ``x``), never covering the
        current operator's tensors, and places the tensor at ``x``; that is locally optimal
        for each eviction, not globally optimal for the schedule (``scheduler.replacement``).
        ``"none"`` never evicts and raises ``ScheduleError`` when a tensor does not fit.
    sizes:
        optional tensor name -> bytes, overriding the graph's ``nbytes`` (e.g. per-PE sizes
        on the Pixel 6). Tensors of 0 bytes take no residency and no transfer.
    alignment:
        every on-chip size is rounded up to, and every offset is, a multiple of this.

    Returns
    -------
    Schedule
        with ``offsets`` set to the arena's choices (``placed_by`` the online arena) and
        ``method`` = ``"<order>+<replacement>"``
        (``"program+belady"`` by default; an explicit list of operators is ``"custom"``).
        Transfer ``nbytes`` are the tensor's bytes before alignment padding (the padding is
        never moved); residency sizes include it. ``stats`` holds ``min_capacity`` (M_R),
        ``evictions``, ``compactions``, ``peak_live_bytes`` and ``peak_address``.

    Raises
    ------
    CapacityError
        ``capacity_bytes`` < M_R; names the operator and M_R.
    ScheduleError
        unknown ``order`` / ``replacement``, an order that is not a topological order of
        every operator, bad ``sizes`` or ``alignment``, or (``replacement="none"``) a tensor
        that does not fit, naming the step, operator, tensor and bytes needed vs free.

    Example: operator ``c`` reads ``y`` and ``z`` and writes ``out``, 10 bytes each, so
    M_R = 30 bytes; at that budget everything fits and only compulsory traffic remains.

    >>> from frontend.graph import new_graph, add_tensor, add_operator
    >>> g = new_graph("g", dtype="int8")
    >>> add_tensor(g, "x", (10,), kind="input")
    >>> add_operator(g, "a", "relu", inputs=["x"], outputs={"y": (10,)})
    >>> add_operator(g, "b", "relu", inputs=["y"], outputs={"z": (10,)})
    >>> add_operator(g, "c", "add", inputs=["y", "z"], outputs={"out": (10,)})
    >>> g.graph["tensors"]["out"]["kind"] = "output"
    >>> s = schedule(g, 30)
    >>> [(t.kind, t.tensor, t.step) for t in s.transfers]
    [('load', 'x', 0), ('store', 'out', 3)]
    >>> from scheduler import CapacityError
    >>> try:
    ...     schedule(g, 20)
    ... except CapacityError as error:
    ...     print(error.operator, error.min_capacity)
    c 30
    """
    chosen = policy(replacement)
    if not isinstance(capacity_bytes, int) or isinstance(capacity_bytes, bool) or capacity_bytes <= 0:
        raise ScheduleError(f"capacity_bytes must be a positive integer, got {capacity_bytes!r}")
    inputs = RunInputs(graph, order, sizes, alignment)
    need = check_capacity(graph, capacity_bytes, sizes, alignment)
    return online_schedule(inputs, capacity_bytes, replacement, chosen, need)


def no_spill_capacity(
    graph: nx.DiGraph, order: str | Sequence[str] = PROGRAM, sizes: Mapping[str, int] | None = None,
    alignment: int = 1,
) -> int:
    """The smallest budget at which the baseline moves no byte beyond the compulsory ones.

    It is the highest address the first-fit arena reaches when nothing is ever evicted: at
    this budget every placement succeeds as it did with unbounded memory, and any smaller
    budget forces an eviction (of a tensor needed again: non-compulsory traffic) or a
    compaction (traffic too, unless it only moves tensors filled at that step). Use it with ``min_capacity``
    to span a budget sweep (COSMA's M_R ... M_P axis, for this order and allocator).

    >>> from frontend.graph import new_graph, add_tensor, add_operator
    >>> g = new_graph("g", dtype="int8")
    >>> add_tensor(g, "x", (10,), kind="input")
    >>> add_operator(g, "a", "relu", inputs=["x"], outputs={"y": (10,)})
    >>> add_operator(g, "b", "relu", inputs=["y"], outputs={"z": (10,)})
    >>> add_operator(g, "c", "add", inputs=["y", "z"], outputs={"out": (10,)})
    >>> no_spill_capacity(g)
    30
    """
    total = sum(onchip_sizes(graph, sizes, alignment).values())
    # First fit never reaches beyond the sum of every size placed so far, so this cannot fail.
    result = schedule(graph, max(total, 1), order, "none", sizes, alignment)
    return peak_address(result)


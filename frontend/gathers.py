"""Gathers read rows: an embedding lookup reads the rows it gathers, not its table.

An ``embedding`` (or ``index_select``, ``index``, ``gather``, ``take``) from a **weight** reads
from DRAM only the elements it gathers: a compiler issues one DMA per row (or element) the
indices name and never makes the table resident. Tracing records the whole table as the
operator's input, which would make a 128,256 x 2,048 table (525 MB in bf16) resident for a
lookup of a few rows, and set every language model's M_R.

``read_rows(graph)`` (run by ``frontend.trace`` on every graph, whichever tracer made it)
replaces that input by a weight ``<table>[<operator>]``: what the operator gathers, of the
output's shape and the table's dtype, so its bytes are ``output elements x the table's element
size``. The tensor records ``gathered_from`` (the table's name). The table stays a weight only
if another operator reads it whole (a language model's tied head multiplies by it), and is
then read whole by that operator alone; a table nothing else reads leaves the graph.

Decisions: the rows are charged as one read of ``rows x row bytes`` (DMA descriptors per row
are not modelled; DRAM bursts of a 2 KiB-4 KiB row run at full bandwidth, an assumption that
holds for rows of at least a few hundred bytes). An operator that gathers at least as many
bytes as its table holds (Swin's relative-position bias: 2,401 lookups in a table of 169 rows)
keeps reading the table whole, the cheaper of the two. Gathers from activations are unchanged:
their source is on chip already.
"""

from __future__ import annotations

import math

import networkx as nx

from frontend.graph import dtype_bytes

#: operator kinds that pick elements of their first tensor input by indices
GATHER_KINDS = frozenset({"embedding", "index_select", "index", "gather", "take"})


def _table(graph: nx.DiGraph, op: str) -> str | None:
    """The weight operator ``op`` gathers from (``None``: it gathers from no weight)."""
    data = graph.nodes[op]
    tensors = graph.graph["tensors"]
    stored = graph.graph["dtype"]  # the run's storage dtype: an index buffer keeps int64 / int32
    tables = [t for t in data["in_tensors"] if tensors[t]["kind"] == "weight" and tensors[t]["dtype"] == stored]
    return tables[0] if len(tables) == 1 else None


def read_rows(graph: nx.DiGraph) -> list[str]:
    """Make every gather from a weight read only what it gathers (module docstring); in place.

    Returns the operators changed, in program order.
    """
    tensors = graph.graph["tensors"]
    changed: list[str] = []
    for op, data in graph.nodes(data=True):
        if data["op"] not in GATHER_KINDS or data.get("on_host") or len(data["out_tensors"]) != 1:
            continue
        table = _table(graph, op)
        if table is None:
            continue
        record = tensors[table]
        shape = tensors[data["out_tensors"][0]]["shape"]
        nbytes = math.prod(shape) * dtype_bytes(record["dtype"])
        if nbytes >= record["nbytes"]:
            continue
        rows = f"{table}[{op}]"
        tensors[rows] = {"shape": list(shape), "dtype": record["dtype"], "nbytes": nbytes, "producer": None,
                         "consumers": [op], "kind": "weight", "gathered_from": table}
        data["in_tensors"] = [rows if t == table else t for t in data["in_tensors"]]
        record["consumers"] = [c for c in record["consumers"] if c != op]
        if not record["consumers"] and table not in graph.graph["outputs"]:
            del tensors[table]
        changed.append(op)
    return changed

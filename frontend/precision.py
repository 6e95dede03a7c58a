"""Weight-only quantisation and a KV-cache dtype apart from the activations'.

A run's storage dtype (``--dtype``, the config's by default) sizes every floating tensor.
``set_precision(graph, weights=..., kv=...)`` then narrows two groups of them, as LLM
deployments do:

* ``weights`` (``--weight-dtype``): every weight of the storage dtype (index buffers keep
  theirs), and the rows a gather reads from one (``frontend.gathers``), takes
  ``ceil(elements x bits / 8)`` bytes: ``int4`` is half a byte per element, packed two to a
  byte. Weight-only: the operators still compute at the storage dtype, each weight tile
  dequantised on the fly as it enters the compute array, so compute cycles do not change; DRAM
  traffic, on-chip bytes and DRAM energy do. (Assumption: dequantisation is free, hidden in the
  array's operand path, and group scales are not counted; per-group scales of 128 elements add
  1/64 of the int4 bytes in bf16.)
* ``kv`` (``--kv-dtype``): the tensors of a language model's KV cache, the cached keys and
  values a decode step reads and the new ones every step writes (``graph.graph["kv_cache"]``,
  recorded by the zoo's ``llm.`` family), in that dtype.

Only narrowing is accepted (a dtype wider than the storage dtype would be a different run:
``--dtype``), and each name must be one of ``PRECISIONS``. The graph is copied; the trace cache
keeps the traced graph.
"""

from __future__ import annotations

import copy
import math

import networkx as nx

from frontend.dtypes import SUB_BYTE_BITS

#: bits per element of the dtypes weights and a KV cache may take
PRECISIONS = {**SUB_BYTE_BITS, "int8": 8, "uint8": 8, "fp8": 8, "int16": 16, "fp16": 16, "bf16": 16, "fp32": 32}


def _bits(dtype: str, what: str) -> int:
    if dtype not in PRECISIONS:
        raise ValueError(f"{what} {dtype!r} is not one of {', '.join(PRECISIONS)}")
    return PRECISIONS[dtype]


def set_precision(graph: nx.DiGraph, weights: str | None = None, kv: str | None = None) -> nx.DiGraph:
    """A copy of ``graph`` with its weights and KV cache in their own dtypes (module docstring).

    Raises ``ValueError`` (one line naming the option) for an unknown dtype, one wider than the
    graph's storage dtype, or ``kv`` on a graph that records no KV cache.
    """
    stored = graph.graph["dtype"]
    stored_bits = PRECISIONS.get(stored, 8 * 8)
    chosen = {"weight dtype": weights, "KV-cache dtype": kv}
    for what, dtype in chosen.items():
        if dtype is not None and _bits(dtype, what) > stored_bits:
            raise ValueError(f"{what} {dtype!r} ({PRECISIONS[dtype]} bits) is wider than the run's dtype {stored!r}: "
                             "it narrows a tensor; widen everything with --dtype instead")
    cache = list(graph.graph.get("kv_cache", ()))
    if kv is not None and not cache:
        raise ValueError(f"KV-cache dtype {kv!r}: model {graph.graph.get('name')!r} records no KV cache "
                         "(the zoo's llm.* decoders do)")
    out = copy.deepcopy(graph)
    tensors = out.graph["tensors"]
    if weights is not None:
        for record in tensors.values():
            if record["kind"] == "weight" and record["dtype"] == stored:
                _narrow(record, weights)
    if kv is not None:
        for name in cache:
            _narrow(tensors[name], kv)
    out.graph["precision"] = {k: v for k, v in (("weights", weights), ("kv_cache", kv)) if v is not None}
    return out


def _narrow(record: dict[str, object], dtype: str) -> None:
    shape = record["shape"]
    assert isinstance(shape, list)
    record["nbytes"] = math.ceil(math.prod(shape) * PRECISIONS[dtype] / 8)
    record["dtype"] = dtype

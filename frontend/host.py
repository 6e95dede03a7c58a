"""Host operators: the steps of a model that run on the host CPU, not on the accelerator.

Detection models end (and two-stage ones pause) in steps an accelerator does not run: anchor
generation, box decoding, non-maximum suppression, RoI alignment, mask pasting. Mobile
deployments run the network on the accelerator and these steps on the host; the tensors
that cross between them go through DRAM. The frontend models exactly that:

* A function decorated with ``host_function(kind)`` is a host operator wherever a traced
  model calls it (``frontend.detection`` defines the detection steps this way). Such a
  function computes only the *shape* of its result: on the host, torchvision's own code runs
  the step; the graph needs what crosses the boundary, and its size. Arguments named in
  ``shape_only`` are read for their shape alone (anchors depend on the feature maps' sizes,
  not on their values), so they do not cross.
* ``frontend.trace(..., host=[...])`` marks a user's own host operators: a name is either a
  module's qualified name (``"postprocess"``: the module becomes one host operator) or an
  operator kind (``"nms"``, ``"topk"``, ``"sort"``: every operator of that kind).

``split(graph)`` then turns the traced graph, host operators included, into the graph the
accelerator runs, with the host operators recorded beside it:

* the host operators leave the operator set, in program order, into
  ``graph.graph["host_ops"]`` (``HOST_OPS``), each a record: ``name``, ``kind``, ``target``,
  ``after`` (the last accelerator operator before it in program order, ``None`` at the start),
  ``inputs`` and ``outputs`` (each ``{"tensor", "shape", "dtype", "bytes", "side"}``, where
  ``side`` says whether the tensor lives in accelerator memory or only on the host) and
  ``waits_for`` (the accelerator tensors it depends on, directly or through other host
  operators);
* a tensor the accelerator writes and the host reads becomes an accelerator ``output``: it is
  stored to DRAM once (compulsory traffic), as a final output is;
* a tensor the host writes and the accelerator reads becomes an accelerator ``input``: it is
  loaded from DRAM once (compulsory traffic). It may be loaded only after the host wrote it:
  ``scheduler.order.resolve_order`` refuses an order that reads it before every producer of
  its host operator's ``waits_for`` has run, and the schedulers that choose their own order
  (``min-peak``, ``cosma``, ``cosma-dnc``) refuse graphs with host operators;
* tensors only the host reads and writes (anchors, decoded boxes, the final detections) are
  not accelerator tensors at all; they are listed in the records.

So the simulation counts every byte that crosses, both ways, as DRAM traffic, and the report
lists the host operators (``host_ops`` in ``report.json``, a line in the summary). The host's
own time is not simulated: the simulated time is the accelerator's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import networkx as nx

from frontend.graph import add_operator, add_tensor, new_graph

#: the graph attribute holding the host operators' records
HOST_OPS = "host_ops"
#: operator attribute marking a host operator in a traced graph before ``split``
DEVICE = "device"

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class HostFunction:
    """What the tracer needs to know of a host function."""

    kind: str  #: the operator kind recorded (``"nms"``, ``"roi_align"``, ...)
    shape_only: tuple[str, ...] = ()  #: arguments whose shape alone is read


#: every function marked with ``host_function``
HOST_FUNCTIONS: dict[Callable[..., Any], HostFunction] = {}


def host_function(kind: str, shape_only: Iterable[str] = ()) -> Callable[[F], F]:
    """Mark a function as a host operator of kind ``kind`` (see the module docstring).

    The tracer must also keep it whole: call ``torch.fx.wrap`` on it in the module that calls it.
    """
    def mark(fn: F) -> F:
        HOST_FUNCTIONS[fn] = HostFunction(kind, tuple(shape_only))
        return fn

    return mark


def host_operators(graph: nx.DiGraph) -> list[dict[str, Any]]:
    """The host operators' records of a graph (``[]`` when it has none)."""
    return list(graph.graph.get(HOST_OPS, []))


def crossing_bytes(graph: nx.DiGraph) -> tuple[int, int]:
    """Bytes the accelerator writes for the host, and bytes the host writes for the accelerator.

    Each tensor counts once however many host operators read it.
    """
    to_host: dict[str, int] = {}
    to_accelerator: dict[str, int] = {}
    for record in host_operators(graph):
        for entry in record["inputs"]:
            if entry["side"] == "accelerator":
                to_host[entry["tensor"]] = entry["bytes"]
        for entry in record["outputs"]:
            if entry["side"] == "accelerator":
                to_accelerator[entry["tensor"]] = entry["bytes"]
    return sum(to_host.values()), sum(to_accelerator.values())


def split(graph: nx.DiGraph) -> nx.DiGraph:
    """The accelerator's graph: ``graph`` without the operators marked ``device="host"``, which
    are recorded under ``graph.graph["host_ops"]`` (see the module docstring). A graph without
    host operators comes back unchanged (the same object)."""
    host = [n for n, data in graph.nodes(data=True) if data.get(DEVICE) == "host"]
    if not host:
        return graph
    host_set = set(host)
    tensors = graph.graph["tensors"]
    accelerator_reads = {t for n, data in graph.nodes(data=True) if n not in host_set for t in data["in_tensors"]}
    host_reads = {t for n in host for t in graph.nodes[n]["in_tensors"]}

    def on_accelerator(t: str) -> bool:
        producer = tensors[t]["producer"]
        return t in accelerator_reads or (producer is not None and producer not in host_set)

    out = new_graph(graph.graph["name"], graph.graph["dtype"])
    for key, value in graph.graph.items():
        if key not in out.graph:
            out.graph[key] = value

    def declare(t: str, kind: str) -> None:
        if t not in out.graph["tensors"]:
            rec = tensors[t]
            add_tensor(out, t, rec["shape"], kind=kind, dtype=rec["dtype"], nbytes=rec["nbytes"])

    def entry(t: str) -> dict[str, Any]:
        rec = tensors[t]
        return {"tensor": t, "shape": list(rec["shape"]), "dtype": rec["dtype"], "bytes": rec["nbytes"],
                "side": "accelerator" if on_accelerator(t) else "host"}

    records: list[dict[str, Any]] = []
    waits: dict[str, list[str]] = {}  # host-written tensor -> accelerator tensors it depends on
    last: str | None = None
    for t in graph.graph["inputs"]:
        if t in accelerator_reads:
            declare(t, "input")
    for n, data in graph.nodes(data=True):
        if n in host_set:
            waits_for: list[str] = []
            for t in data["in_tensors"]:
                if tensors[t]["producer"] in host_set:
                    waits_for.extend(waits.get(t, []))
                elif tensors[t]["producer"] is not None:
                    waits_for.append(t)
            waits_for = list(dict.fromkeys(waits_for))
            for t in data["out_tensors"]:
                waits[t] = waits_for
            records.append({
                "name": n, "kind": data["op"], "target": data["target"], "after": last,
                "inputs": [entry(t) for t in data["in_tensors"]],
                "outputs": [entry(t) for t in data["out_tensors"]],
                "waits_for": waits_for,
            })
            continue
        for t in data["in_tensors"]:
            producer = tensors[t]["producer"]
            if producer in host_set:
                declare(t, "input")
            else:
                declare(t, tensors[t]["kind"] if tensors[t]["kind"] in ("input", "weight") else "activation")
        add_operator(out, n, data["op"], data["in_tensors"], {t: tensors[t]["shape"] for t in data["out_tensors"]},
                     target=data["target"], macs=data["macs"], elements=data["elements"], gemm=data["gemm"])
        for t in data["out_tensors"]:
            out.graph["tensors"][t].update(dtype=tensors[t]["dtype"], nbytes=tensors[t]["nbytes"])
        for key, value in data.items():
            out.nodes[n].setdefault(key, value)
        last = n
    outputs = [t for t in graph.graph["outputs"] if t in out.graph["tensors"]]
    outputs += [t for t in graph.graph["tensors"] if t in host_reads and t in out.graph["tensors"]
                and tensors[t]["producer"] not in host_set and tensors[t]["producer"] is not None]
    outputs = list(dict.fromkeys(outputs))
    for t in outputs:
        if out.graph["tensors"][t]["kind"] == "activation":
            out.graph["tensors"][t]["kind"] = "output"
    out.graph["outputs"] = outputs
    out.graph["aliases"] = {a: b for a, b in graph.graph.get("aliases", {}).items() if b in out.graph["tensors"]}
    out.graph[HOST_OPS] = records
    return out

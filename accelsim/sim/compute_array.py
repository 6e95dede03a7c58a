"""The compute array: runs the operators the driver hands it, one at a time, in order.

An operator takes ``accelsim.compute.operator_cost(...).cycles``: the mapped cycles on the
systolic arrays, lanes or vector unit of the config's ``compute`` block, or longer when its
operands cannot stream from the scratchpad fast enough (memory-bound: the difference is its
SRAM stall). The array is a SimPy process fed through a ``simpy.Store``: the driver puts a job
in and waits for the job's ``done`` event.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import simpy

from accelsim.compute import OpCost, operator_cost

if TYPE_CHECKING:
    import networkx as nx

    from accelsim.hw import HardwareConfig


@dataclass
class Job:
    """One operator handed to the compute array."""

    cycles: int  #: how long it keeps the array busy
    done: simpy.Event  #: fires when it has run


class ComputeArray:
    """The compute block of ``hw``; ``element_bytes`` is the run's bytes per element."""

    def __init__(self, env: simpy.Environment, hw: HardwareConfig, element_bytes: int) -> None:
        self.env = env
        self.hw = hw
        self.element_bytes = element_bytes
        self._jobs = simpy.Store(env)
        env.process(self._serve())

    def cost(self, graph: nx.DiGraph, name: str) -> OpCost:
        """What operator ``name`` of ``graph`` costs on this array (``graph_operator_cost``)."""
        return graph_operator_cost(graph, name, self.hw, self.element_bytes)

    def run(self, cycles: int) -> Generator[simpy.Event, Any, None]:
        """Hand the array an operator of ``cycles`` and wait until it has run (``yield from`` it)."""
        job = Job(cycles, self.env.event())
        yield self._jobs.put(job)
        yield job.done

    def _serve(self) -> Generator[simpy.Event, Any, None]:
        while True:
            job = yield self._jobs.get()
            yield self.env.timeout(job.cycles)
            job.done.succeed()


def graph_operator_cost(graph: nx.DiGraph, name: str, hw: HardwareConfig, element_bytes: int) -> OpCost:
    """What operator ``name`` of ``graph`` costs on ``hw``'s compute block (``accelsim.compute``): the
    cycles the compute array runs it for, which the load-timing planner also plans with."""
    node = graph.nodes[name]
    tensors = graph.graph["tensors"]
    names = list(node.get("in_tensors", ())) + list(node.get("out_tensors", ()))
    io = sum(int(tensors[t]["nbytes"]) for t in names)
    return operator_cost(
        macs=int(node.get("macs", 0)), elements=int(node.get("elements", 0)), gemm=node.get("gemm"),
        compute=hw.compute, element_bytes=element_bytes, io_bytes=io,
        sram_bytes_per_cycle=hw.sram_bytes_per_cycle_total,
    )

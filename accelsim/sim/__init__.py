"""A SimPy discrete-event model of one accelerator running a scheduled, allocated program.

The machine is a set of agents, one small SimPy entity each, in a module of its own (time unit:
one clock cycle; every event happens on a whole cycle):

* **DRAM link** (``dram.DramLink``) -- the interface's bandwidth, shared fairly by the
  transfers moving data at the same moment;
* **DMA engines** (``dma.DmaEngines``) -- ``dma.channels`` channels, a
  ``simpy.PriorityResource``; a transfer pays the DRAM latency, then moves its bytes on the link;
* **scratchpad** (``scratchpad.Scratchpad``) -- the on-chip memory as an address map that checks
  every allocation at its simulated moment;
* **compute array** (``compute_array.ComputeArray``) -- runs one operator at a time, for the
  cycles ``accelsim.compute`` gives it;
* **driver** (``driver.Driver``) -- walks the schedule step by step: drains, fills, hands each
  operator to the compute array. It issues each load/retrieve at the step the schedule planned
  (``Transfer.issue_step``, where its residency starts); when loads go is the scheduler's
  decision (``scheduler.load_timing``), never the simulator's.

Around them: ``inputs.check_inputs`` checks that the graph, schedule and offsets fit together
before anything is built (``SimulationError``); ``results`` holds the records and
the energy accounting; ``simulation.simulate`` builds the agents, runs them and measures.

A memory violation (``MemoryViolation``) names both residencies, both ranges, the step and the
cycle. ``simulate`` reports it in ``SimResult.memory_check`` (and stops the simulation there)
unless asked to raise.

>>> pad = Scratchpad(capacity=1024)
>>> pad.allocate("a", 0, 512, now=0)
>>> pad.allocate("b", 256, 512, now=7, step=3)
Traceback (most recent call last):
...
accelsim.sim.scratchpad.MemoryViolation: step 3 (cycle 7): residency 'b' [256, 768) overlaps live residency 'a' [0, 512)
"""

from accelsim.sim.compute_array import ComputeArray
from accelsim.sim.dma import DmaEngines
from accelsim.sim.dram import DramLink
from accelsim.sim.driver import Driver
from accelsim.sim.inputs import ScheduleIndex, SimulationError, check_inputs
from accelsim.sim.results import PJ, OpRecord, SimResult, TransferRecord, with_energy
from accelsim.sim.scratchpad import MemoryViolation, Scratchpad
from accelsim.sim.simulation import simulate

__all__ = [
    "PJ", "ComputeArray", "DmaEngines", "DramLink", "Driver", "MemoryViolation", "OpRecord", "ScheduleIndex",
    "Scratchpad", "SimResult", "SimulationError", "TransferRecord", "check_inputs", "simulate",
    "with_energy",
]

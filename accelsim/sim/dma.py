"""The DMA engines: ``dma.channels`` channels that move tensors between DRAM and the scratchpad.

The channels are a ``simpy.PriorityResource``. A transfer holds a channel for
``dram_latency_cycles`` (set-up and first access, no bandwidth used) and then for its data on
the DRAM link (``accelsim.sim.dram``), which the transfers in flight share. Requests are served
in step order: the transfer for an earlier operator goes first, ties first come first served.
With one channel a transfer takes ``latency + ceil(chip_bytes / bytes_per_cycle)`` cycles and
transfers never overlap. On a ``per_pe`` target a transfer moves the tensor's share to every
PE, so its DRAM bytes are the per-PE bytes times ``n_pe``.

Each transfer is numbered with the channel that carried it (the lowest free one, so a trace
reuses channel 0), leaves a ``TransferRecord``, and counts towards ``busy_cycles``: the cycles
at least one channel was busy.
"""

from __future__ import annotations

import bisect
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from accelsim.sim.results import TransferRecord

if TYPE_CHECKING:
    from accelsim.hw import HardwareConfig
    from accelsim.sim.dram import DramLink
    from scheduler.schedule import Transfer


class DmaEngines:
    """The DMA channels; ``start(...)`` runs one transfer as a SimPy process."""

    def __init__(self, env: simpy.Environment, link: DramLink, hw: HardwareConfig) -> None:
        self.env = env
        self.link = link
        self.hw = hw
        self.channels = simpy.PriorityResource(env, capacity=hw.dma.channels)
        self.free_channels = list(range(hw.dma.channels))  # lowest free first, so traces reuse channel 0
        self.busy = 0  #: channels carrying a transfer now
        self.busy_cycles = 0.0  #: cycles at least one channel was busy
        self._busy_since = 0.0
        self.records: list[TransferRecord] = []  #: one per finished transfer, in finishing order

    def start(self, t: Transfer, *, prefetched: bool, priority: int) -> simpy.Process:
        """Queue ``t`` for a channel (lower ``priority`` first); the process ends when its bytes have moved."""
        return self.env.process(self.transfer(t, prefetched, priority))

    def transfer(self, t: Transfer, prefetched: bool, priority: int) -> Generator[simpy.Event, Any, None]:
        """One transfer: wait for a channel, pay the latency, move the bytes on the DRAM link, record it."""
        queued = self.env.now
        chip_bytes = self.hw.chip_bytes(t.nbytes)
        with self.channels.request(priority=priority) as req:
            yield req
            start = self.env.now
            channel = self.free_channels.pop(0)
            self._busy_change(+1)
            if self.hw.dram_latency_cycles:
                yield self.env.timeout(self.hw.dram_latency_cycles)
            yield self.link.transfer(chip_bytes)
            self._busy_change(-1)
            bisect.insort(self.free_channels, channel)
        self.records.append(TransferRecord(
            t.kind, t.tensor, t.residency, t.step, t.nbytes, chip_bytes, queued, start, self.env.now,
            t.compulsory, t.to_chip, prefetched, channel,
        ))

    def _busy_change(self, delta: int) -> None:
        """Account the time at least one channel was busy (the DMA busy figure)."""
        if self.busy:
            self.busy_cycles += self.env.now - self._busy_since
        self._busy_since = self.env.now
        self.busy += delta

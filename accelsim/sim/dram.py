"""The DRAM link: the interface's bandwidth, shared fairly by the transfers moving data at once.

Processor sharing: with ``m`` transfers in flight each moves ``bytes_per_cycle / m``. Whenever
a transfer joins or leaves, the others' remaining bytes are brought up to date and the next
completion is rescheduled, rounded up to a whole cycle (the fraction of a cycle left over is
lost). The DMA engines (``accelsim.sim.dma``) move every transfer's data through it, after
their set-up latency.

The link is one SimPy process that sleeps while nothing moves and wakes when a transfer joins
or the next one completes. Time unit: one clock cycle.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

import simpy


class DramLink:
    """The DRAM interface: ``bytes_per_cycle`` shared fairly by the transfers in flight.

    ``transfer(nbytes)`` returns an event that fires when the bytes have moved. Completion
    times are whole cycles: the next completion is rounded up, and at that moment every
    transfer in flight has moved ``elapsed * bytes_per_cycle / m`` bytes.
    """

    def __init__(self, env: simpy.Environment, bytes_per_cycle: float) -> None:
        self.env = env
        self.bytes_per_cycle = bytes_per_cycle
        self._remaining: dict[int, float] = {}  # transfer id -> bytes still to move
        self._done: dict[int, simpy.Event] = {}
        self._next_id = 0
        self._since = 0.0  # when _remaining was last brought up to date
        self._wake: simpy.Event = env.event()
        self.busy_cycles = 0.0  #: cycles with at least one transfer moving data
        env.process(self._run())

    def transfer(self, nbytes: int) -> simpy.Event:
        done = self.env.event()
        if nbytes <= 0:
            done.succeed()
            return done
        self._advance()
        self._remaining[self._next_id] = float(nbytes)
        self._done[self._next_id] = done
        self._next_id += 1
        if not self._wake.triggered:
            self._wake.succeed()
        return done

    def _advance(self) -> None:
        """Bring every transfer's remaining bytes up to now."""
        elapsed = self.env.now - self._since
        if elapsed > 0 and self._remaining:
            moved = elapsed * self.bytes_per_cycle / len(self._remaining)
            for key in self._remaining:
                self._remaining[key] -= moved
            self.busy_cycles += elapsed
        self._since = self.env.now

    def _run(self) -> Generator[simpy.Event, Any, None]:
        while True:
            if not self._remaining:
                self._wake = self.env.event()
                yield self._wake
                continue
            share = self.bytes_per_cycle / len(self._remaining)
            wait = max(1, math.ceil(min(self._remaining.values()) / share - 1e-9))
            self._wake = self.env.event()
            yield self.env.timeout(wait) | self._wake
            self._advance()
            for key in [k for k, left in self._remaining.items() if left <= 1e-6]:
                del self._remaining[key]
                self._done.pop(key).succeed()

"""Replacement policies: which resident tensors make room for a new one (COSMA §V-A's third choice).

When a tensor does not fit, an online run (``scheduler.residents``) evicts tensors the current
operator does not use. A policy is a ``Policy`` record in ``POLICIES``, the one table of them:

* ``victims``, an order of the candidates (a sort key, the lowest evicted first). The live-byte
  planner (``scheduler.planner``) evicts in it until the step's cap holds; the address arena
  (``scheduler.arena``) until first fit succeeds, unless the policy has a window search.
* ``window``, the address arena's own choice when set: evict the tensors under one address
  window and place the tensor there.

The policies:

* **belady** -- furthest next use first (never used again first; ties: larger, then by name),
  one at a time (Belady's MIN);
* **greedy** -- COSMA's "ILP-based greedy algorithm which provides a locally optimal decision
  that generates the least off-chip data accesses each time replacement is needed". In the
  address arena, for a tensor of ``s`` on-chip bytes at step ``t``: every window ``[x, x + s)``
  inside the capacity with ``x`` = 0 or the end of a resident tensor is a candidate (any other
  window slides down to one of these without covering more tensors, so nothing is missed); a
  window covering one of the operator's own tensors is invalid. Evicting a tensor costs 0 bytes
  if it is not read at or after ``t``, else its bytes once (the later retrieve) plus once more
  if it has no DRAM copy yet and is not a final output (the spill; a final output's first write
  is its compulsory store). The window with the lowest total cost wins (ties: fewer evicted
  on-chip bytes, then lower ``x``); exactly the tensors it covers are evicted and the tensor is
  placed at ``x``, which is where first fit would now put it. The choice is optimal for this
  one eviction only, not over the whole schedule: it ignores where the evicted tensors will fit
  when they come back and what later placements will need. Without addresses (the planner) it
  evicts the tensors of the lowest non-compulsory cost per on-chip byte first (ties: furthest
  next use, then name);
* **none** -- never evicts: a tensor that does not fit is an error naming it.

A new policy is a key function (and, if the address arena should choose a window itself, a
window search) and a row of ``POLICIES``. This module imports nothing heavy.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from scheduler.residents import Residents
from scheduler.schedule import ScheduleError

#: a policy's order of eviction: ``key(run, tensor, step)``, the lowest evicted first
VictimKey = Callable[[Residents, str, int], tuple[Any, ...]]


class AddressMap(Protocol):
    """What a window search reads of the address arena (``scheduler.arena.Arena``)."""

    @property
    def capacity(self) -> int: ...

    @property
    def onchip(self) -> Mapping[str, int]: ...

    @property
    def resident(self) -> list[tuple[int, str]]:
        """(offset, tensor) of the open stays, sorted by offset."""

    def eviction_cost(self, tensor: str, step: int) -> int: ...

    def evict(self, tensor: str, step: int) -> None: ...


#: a policy's address window search: ``window(arena, size, step, protected)`` evicts the tensors
#: under the window it chooses and returns the window's offset, or None when no window is valid
WindowSearch = Callable[[AddressMap, int, int, set[str]], "int | None"]


def furthest_next_use(run: Residents, tensor: str, step: int) -> tuple[Any, ...]:
    """Belady: the furthest next use first (never used again first); ties: larger, then by name."""
    return (-run.next_use(tensor, step), -run.onchip[tensor], tensor)


def cheapest_per_byte(run: Residents, tensor: str, step: int) -> tuple[Any, ...]:
    """Greedy without addresses: the lowest non-compulsory cost per on-chip byte first; ties:
    furthest next use, then by name."""
    return (run.eviction_cost(tensor, step) / run.onchip[tensor], -run.next_use(tensor, step), tensor)


def covered(arena: AddressMap, x: int, size: int) -> list[str]:
    """The resident tensors overlapping ``[x, x + size)``, where ``x`` is 0 or a resident tensor's end."""
    # No resident tensor straddles such an x, so the covered ones are those starting in [x, x + size).
    found = []
    for offset, tensor in arena.resident[bisect_left(arena.resident, (x, "")):]:
        if offset >= x + size:
            break
        found.append(tensor)
    return found


def cheapest_window(arena: AddressMap, size: int, step: int, protected: set[str]) -> int | None:
    """Greedy in the address arena: evict the tensors under the cheapest window of ``size`` bytes;
    the window's offset, or None if no window avoids the ``protected`` tensors.

    Candidates, cost and ties are those of the module docstring; the evictions record the transfers.
    """
    best: tuple[int, int, int] | None = None  # (cost, evicted on-chip bytes, x)
    for x in [0] + [offset + arena.onchip[t] for offset, t in arena.resident]:
        if x + size > arena.capacity:
            continue
        under = covered(arena, x, size)
        if any(t in protected for t in under):
            continue
        key = (sum(arena.eviction_cost(t, step) for t in under), sum(arena.onchip[t] for t in under), x)
        if best is None or key < best:
            best = key
    if best is None:
        return None
    x = best[2]
    for t in covered(arena, x, size):
        arena.evict(t, step)
    return x


@dataclass(frozen=True)
class Policy:
    """A replacement policy (see the module docstring)."""

    #: the order of eviction (lowest key first); None: the policy never evicts
    victims: VictimKey | None
    #: the address arena's window search, tried before evicting in an order; None: none
    window: WindowSearch | None = None


#: every replacement policy by name, in the order messages and the command line list them
POLICIES: dict[str, Policy] = {
    "belady": Policy(furthest_next_use),
    "greedy": Policy(cheapest_per_byte, cheapest_window),
    "none": Policy(None),
}

#: every policy's name (``scheduler.baseline.schedule`` takes each)
REPLACEMENTS: tuple[str, ...] = tuple(POLICIES)
#: the policies that evict: the planner, the spill loop and the flow take these
EVICTING: tuple[str, ...] = tuple(name for name, policy in POLICIES.items() if policy.victims is not None)


def policy(name: object, *, evicting: bool = False) -> Policy:
    """The policy called ``name``; with ``evicting``, only one that evicts (a plan must always complete).

    Raises ``ScheduleError`` naming the valid ones.

    >>> policy("fifo-ish")
    Traceback (most recent call last):
    ...
    scheduler.schedule.ScheduleError: unknown replacement 'fifo-ish'; valid values: 'belady', 'greedy', ...
    """
    valid = EVICTING if evicting else REPLACEMENTS
    if not isinstance(name, str) or name not in valid:
        raise ScheduleError(f"unknown replacement {name!r}; valid values: {', '.join(map(repr, valid))}")
    return POLICIES[name]

"""The independent validator: re-derives every constraint from the raw buffers.

It shares no code with any placement method, so a bug in a method cannot hide in it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from allocator.problem import Problem, Solution


@dataclass(frozen=True)
class Violation:
    """One broken constraint; ``buffers`` names the buffer ids involved."""

    kind: str  #: "missing", "unknown", "alignment", "negative", "capacity", "fixed", "overlap"
    buffers: tuple[str, ...]
    message: str


@dataclass(frozen=True)
class ValidationReport:
    """Every violation found; truthy when the solution is valid."""

    violations: tuple[Violation, ...]

    @property
    def ok(self) -> bool:
        return not self.violations

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        if self.ok:
            return "valid"
        return f"{len(self.violations)} violation(s):\n" + "\n".join("  " + v.message for v in self.violations)


class InvalidSolutionError(AssertionError):
    """Raised by ``check`` when a solution breaks a constraint (a method bug, not bad input)."""


def validate(problem: Problem, solution: Solution) -> ValidationReport:
    """Check ``solution`` against ``problem`` and report every violation.

    Checks: every buffer has an integer offset and no unknown id is placed; offsets are
    non-negative multiples of their buffer's alignment; fixed offsets are kept; every buffer
    lies inside the capacity (when there is one); and no two buffers whose lifetimes share a
    timestep share a byte.

    >>> from allocator.problem import Buffer
    >>> p = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4)], capacity=8)
    >>> validate(p, Solution({"a": 0, "b": 4})).ok
    True
    >>> print(validate(p, Solution({"a": 0, "b": 2})))
    1 violation(s):
      buffers 'a' [0, 4) and 'b' [2, 6) overlap in address while both live in steps [1, 2)
    """
    violations: list[Violation] = []
    offsets = solution.offsets
    known = {b.id for b in problem.buffers}
    for extra in sorted(set(offsets) - known):
        violations.append(Violation("unknown", (extra,), f"offset given for unknown buffer {extra!r}"))
    placed = []
    for b in problem.buffers:
        if b.id not in offsets:
            violations.append(Violation("missing", (b.id,), f"buffer {b.id!r} has no offset"))
            continue
        off = offsets[b.id]
        if not isinstance(off, int) or isinstance(off, bool):
            violations.append(Violation("missing", (b.id,), f"buffer {b.id!r} has non-integer offset {off!r}"))
            continue
        if off < 0:
            violations.append(Violation("negative", (b.id,), f"buffer {b.id!r} has negative offset {off}"))
        if off % b.alignment:
            violations.append(
                Violation("alignment", (b.id,), f"buffer {b.id!r} offset {off} is not a multiple of {b.alignment}")
            )
        if b.offset is not None and off != b.offset:
            violations.append(Violation("fixed", (b.id,), f"buffer {b.id!r} fixed at {b.offset} but placed at {off}"))
        if problem.capacity is not None and off + b.size > problem.capacity:
            violations.append(
                Violation(
                    "capacity", (b.id,),
                    f"buffer {b.id!r} [{off}, {off + b.size}) exceeds capacity {problem.capacity}",
                )
            )
        placed.append((b.start, b.end, off, off + b.size, b.id))

    if _addresses_disjoint(placed):
        return ValidationReport(tuple(violations))
    # Some pair overlaps: sweep over start times again, comparing each buffer with every
    # earlier-starting one still live, to report every overlapping pair.
    placed.sort()
    active: list[tuple[int, int, int, int, str]] = []
    for item in placed:
        start, end, lo, hi, bid = item
        active = [a for a in active if a[1] > start]
        for a_start, a_end, a_lo, a_hi, a_id in active:
            if lo < a_hi and a_lo < hi:
                violations.append(
                    Violation(
                        "overlap", (a_id, bid),
                        f"buffers {a_id!r} [{a_lo}, {a_hi}) and {bid!r} [{lo}, {hi}) overlap in address "
                        f"while both live in steps [{max(start, a_start)}, {min(end, a_end)})",
                    )
                )
        active.append(item)
    return ValidationReport(tuple(violations))


def _addresses_disjoint(placed: list[tuple[int, int, int, int, str]]) -> bool:
    """True when no two ``(start, end, lo, hi, id)`` records overlap in both time and address.

    A sweep over time keeps the live address ranges sorted by low end. While no overlap has
    been seen they are pairwise disjoint, so a starting buffer only has to be compared with
    its two neighbours in that order: O(n log n) plus list shifts, instead of every live pair.
    """
    events: list[tuple[int, int, int]] = []  # (time, 0 = end / 1 = start, record index)
    for k, (start, end, _, _, _) in enumerate(placed):
        events.append((start, 1, k))
        events.append((end, 0, k))
    events.sort()  # at equal times ends come first: lifetimes are half-open
    live: list[tuple[int, int, int]] = []  # (lo, hi, record index), sorted
    for _, kind, k in events:
        _, _, lo, hi, _ = placed[k]
        key = (lo, hi, k)
        at = bisect.bisect_left(live, key)
        if kind == 0:
            del live[at]
            continue
        if at > 0 and live[at - 1][1] > lo:
            return False
        if at < len(live) and live[at][0] < hi:
            return False
        live.insert(at, key)
    return True


def check(problem: Problem, solution: Solution) -> None:
    """Raise ``InvalidSolutionError`` listing every violation, or return quietly."""
    report = validate(problem, solution)
    if not report.ok:
        raise InvalidSolutionError(str(report))


def lower_bound(problem: Problem) -> int:
    """LOAD: the largest total size of buffers live at one timestep (0 for no buffers).

    No placement can use less memory than this. Fixed buffers also bound the peak from below
    by their end address.

    >>> from allocator.problem import Buffer
    >>> lower_bound(Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 5), Buffer("c", 2, 4, 1)]))
    9
    """
    events: list[tuple[int, int]] = []
    for b in problem.buffers:
        events.append((b.start, b.size))
        events.append((b.end, -b.size))
    events.sort()  # ends (negative deltas) sort before starts at the same step: half-open ranges
    live = best = 0
    for _, delta in events:
        live += delta
        best = max(best, live)
    fixed_top = max((b.offset + b.size for b in problem.buffers if b.offset is not None), default=0)
    return max(best, fixed_top)

"""The independent validator: re-derives every constraint from the raw buffers.

It shares no code with any placement method, so a bug in a method cannot hide in it. (The
one kernel it borrows, ``problem.first_overlap``, belongs to the problem's own input checks,
where it finds pinned buffers that clash; no method uses it.) Its compiled kernels live in
``allocator.core.problem_kernels``, imported when first run, so that importing the package does
not import numba.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from allocator.core.problem import MAX_VALUE, Problem, Solution, compiled_for, first_overlap


@dataclass(frozen=True)
class Violation:
    """One broken constraint; ``buffers`` names the buffer ids involved."""

    kind: str  #: "missing", "unknown", "alignment", "negative", "capacity", "fixed", "range", "overlap"
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


#: ``validate`` lists at most this many overlapping pairs and counts the rest in one more violation: a placement
#: that stacks everything at offset 0 has a pair for every two buffers live together (billions for large inputs)
MAX_LISTED_OVERLAPS = 100_000


class InvalidSolutionError(AssertionError):
    """Raised by ``check`` when a solution breaks a constraint (a method bug, not bad input)."""


def validate(problem: Problem, solution: Solution) -> ValidationReport:
    """Check ``solution`` against ``problem`` and report every violation.

    Checks: every buffer has an integer offset and no unknown id is placed; offsets are
    non-negative multiples of their buffer's alignment; fixed offsets are kept; every buffer
    lies inside the capacity (when there is one); and no two buffers whose lifetimes share a
    timestep share a byte. An offset beyond +-``MAX_VALUE`` is a "range" violation (no valid
    placement needs one, and the overlap check computes in int64) and is left out of the
    overlap check.

    The work is whole-array: the per-buffer rules are numpy comparisons, and the overlap
    check is a sweep (``first_overlap``, O(n log n); compiled when ``problem.compiled_for(n)``);
    only when it finds a pair does a second, compiled sweep list the overlapping pairs (O(n x
    live)), at most ``MAX_LISTED_OVERLAPS`` of them plus one violation counting the rest.

    >>> from allocator.core.problem import Buffer
    >>> p = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4)], capacity=8)
    >>> validate(p, Solution({"a": 0, "b": 4})).ok
    True
    >>> print(validate(p, Solution({"a": 0, "b": 2})))
    1 violation(s):
      buffers 'a' [0, 4) and 'b' [2, 6) overlap in address while both live in steps [1, 2)
    """
    violations: list[Violation] = []
    offsets = solution.offsets
    ids = problem.ids
    n = len(ids)
    missing = object()
    values, off = _usable_offsets(offsets, ids)
    found = n
    if off is None:  # some offset is missing, not an int, or out of range: sort them out one by one
        values = [offsets.get(bid, missing) for bid in ids]
        placed, off, unplaced = _sort_out(ids, values, missing)
        found = n - sum(value is missing for value in values)
    else:
        placed, unplaced = np.ones(n, bool), {}
    if len(offsets) > found:
        for extra in sorted(set(offsets).difference(ids), key=str):
            violations.append(Violation("unknown", (extra,), f"offset given for unknown buffer {extra!r}"))
    starts, ends, sizes, alignments, fixed = problem.arrays(copy=False)
    flagged = ~placed
    negative = placed & (off < 0)
    misaligned = placed & (off % alignments != 0)
    moved = placed & (fixed >= 0) & (off != fixed)
    outside = placed & (off + sizes > problem.capacity) if problem.capacity is not None else np.zeros(n, bool)
    flagged |= negative | misaligned | moved | outside
    for index in np.flatnonzero(flagged).tolist():
        bid, value = ids[index], values[index]
        if index in unplaced:
            violations.append(unplaced[index])
            continue
        if negative[index]:
            violations.append(Violation("negative", (bid,), f"buffer {bid!r} has negative offset {value}"))
        if misaligned[index]:
            violations.append(Violation("alignment", (bid,),
                                        f"buffer {bid!r} offset {value} is not a multiple of {alignments[index]}"))
        if moved[index]:
            violations.append(Violation("fixed", (bid,),
                                        f"buffer {bid!r} fixed at {fixed[index]} but placed at {value}"))
        if outside[index]:
            violations.append(Violation(
                "capacity", (bid,),
                f"buffer {bid!r} [{value}, {value + int(sizes[index])}) exceeds capacity {problem.capacity}"))

    rows = np.flatnonzero(placed)
    starts, ends, lows = starts[rows], ends[rows], off[rows]
    highs = lows + sizes[rows]
    if len(rows) < 2 or first_overlap(starts, ends, lows, highs)[0] < 0:
        return ValidationReport(tuple(violations))
    # Some pair overlaps: list them, in the order of a sweep over start times.
    by_start = np.argsort(starts, kind="stable")
    position = np.empty(len(rows), np.int64)
    position[by_start] = np.arange(len(rows))
    from allocator.core.problem_kernels import overlapping_pairs  # numba loads with the first kernel, not the package

    earlier, later, total = overlapping_pairs(by_start, np.argsort(ends, kind="stable"), starts, ends, lows, highs,
                                              MAX_LISTED_OVERLAPS)
    listed = np.lexsort((position[earlier], position[later]))
    for i, j in zip(earlier[listed].tolist(), later[listed].tolist(), strict=True):
        a, b = int(rows[i]), int(rows[j])
        violations.append(Violation(
            "overlap", (ids[a], ids[b]),
            f"buffers {ids[a]!r} [{lows[i]}, {highs[i]}) and {ids[b]!r} [{lows[j]}, {highs[j]}) overlap in address "
            f"while both live in steps [{max(starts[i], starts[j])}, {min(ends[i], ends[j])})",
        ))
    if total > len(listed):
        violations.append(Violation("overlap", (), f"... and {total - len(listed):,} more overlapping pairs (only "
                                    f"the first {len(listed):,} are listed)"))
    return ValidationReport(tuple(violations))


def _usable_offsets(offsets: Mapping[str, Any], ids: tuple[str, ...]) -> tuple[Sequence[Any], np.ndarray | None]:
    """The fast path of ``validate``: every buffer's offset, and as int64 when all are ints within +-MAX_VALUE.

    Returns ``(values, None)`` when some offset is missing, not an ``int`` or out of range,
    so the caller sorts them out one by one. The lookups and type checks run at C speed
    (``itemgetter``, ``map``): a second or so for two million ids instead of several.
    """
    if not ids:
        return (), np.zeros(0, np.int64)
    try:
        found = operator.itemgetter(*ids)(offsets)
    except KeyError:
        return (), None
    values = (found,) if len(ids) == 1 else found
    if not set(map(type, values)) <= {int}:  # bool, float, numpy integers... are not offsets
        return values, None
    try:
        off = np.array(values, dtype=np.int64).reshape(len(ids))
    except OverflowError:
        return values, None
    if int(off.min()) < -MAX_VALUE or int(off.max()) > MAX_VALUE:
        return values, None
    return values, off


def _sort_out(ids: tuple[str, ...], values: Sequence[Any],
              missing: object) -> tuple[np.ndarray, np.ndarray, dict[int, Violation]]:
    """The slow path of ``validate``: which offsets are usable integers, their int64 values, and a
    violation for each other one."""
    n = len(ids)
    placed = np.zeros(n, bool)
    off = np.zeros(n, np.int64)
    unplaced: dict[int, Violation] = {}
    for index, (bid, value) in enumerate(zip(ids, values, strict=True)):
        if value is missing:
            unplaced[index] = Violation("missing", (bid,), f"buffer {bid!r} has no offset")
        elif not isinstance(value, int) or isinstance(value, bool):
            unplaced[index] = Violation("missing", (bid,), f"buffer {bid!r} has non-integer offset {value!r}")
        elif abs(value) > MAX_VALUE:
            unplaced[index] = Violation("range", (bid,), f"buffer {bid!r} offset {value} is beyond +-MAX_VALUE "
                                        "(2**62 - 1), the allocator's range")
        else:
            placed[index] = True
            off[index] = value
    return placed, off, unplaced


def check(problem: Problem, solution: Solution) -> None:
    """Raise ``InvalidSolutionError`` listing every violation, or return quietly."""
    report = validate(problem, solution)
    if not report.ok:
        raise InvalidSolutionError(str(report))


def lower_bound(problem: Problem) -> int:
    """LOAD: the largest total size of buffers live at one timestep (0 for no buffers).

    No placement can use less memory than this. Fixed buffers also bound the peak from below
    by their end address, so the result is the larger of the two.

    Whole-array work: the (time, size) pairs of the starts and of the ends are each sorted
    by time, then one merge walks both, removing what ends by ``t`` before adding what starts
    at ``t`` (half-open lifetimes): compiled when ``problem.compiled_for(n)``, else numpy's
    cumulative sums and a binary search. The maximum is reached at some start time.
    The sums stay in int64 because ``Problem`` bounds the sum of all sizes by ``MAX_VALUE``.

    >>> from allocator.core.problem import Buffer
    >>> lower_bound(Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 5), Buffer("c", 2, 4, 1)]))
    9
    """
    starts, ends, sizes, _, fixed = problem.arrays(copy=False)
    if not len(starts):
        return 0
    size_bits = int(sizes.max()).bit_length()
    packed = int(ends.max()).bit_length() + size_bits <= 63
    started = _sorted_by_time(starts, sizes, size_bits, packed)
    ended = _sorted_by_time(ends, sizes, size_bits, packed)
    if compiled_for(len(starts)):
        from allocator.core.problem_kernels import max_live  # numba loads with the first kernel, not the package

        best = max_live(*started, *ended)
    else:  # the same merge in numpy: what ended by each start (half-open) leaves the live total
        ended_before = np.concatenate(([0], np.cumsum(ended[1])))[np.searchsorted(ended[0], started[0], "right")]
        best = int((np.cumsum(started[1]) - ended_before).max())
    pinned = fixed >= 0
    fixed_top = int((fixed[pinned] + sizes[pinned]).max()) if pinned.any() else 0
    return max(int(best), fixed_top)


def _sorted_by_time(times: np.ndarray, sizes: np.ndarray, size_bits: int,
                    packed: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(times, sizes)`` reordered by time. When both fit in 63 bits together, one sort of
    ``time << size_bits | size`` does it, several times faster than an argsort and two gathers."""
    if packed:
        keys = np.sort((times << size_bits) | sizes)
        return keys >> size_bits, keys & ((1 << size_bits) - 1)
    order = np.argsort(times)
    return times[order], sizes[order]

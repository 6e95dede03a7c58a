"""Cross sections: the sweep over buffer start/end events shared by the exact searches.

A *cross section* is a maximal time interval ``[t_k, t_{k+1})`` between two consecutive
event times (a buffer starts or ends); the set of live buffers is constant inside it.
Every buffer spans a contiguous run of sections ``[first_section, last_section)``, and two
buffers overlap in time exactly when their runs share a section (MiniMalloc §6.2), so the
searches never need the (possibly quadratic) overlap graph: the lowest offset a buffer can
take is the highest top among the sections it spans.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from allocator.problem import Problem


@dataclass(frozen=True)
class Sweep:
    """Flat arrays describing a problem's time structure (all int64, indexed by buffer or section)."""

    times: np.ndarray  #: event times t_0 < t_1 < ...; section k is [times[k], times[k+1])
    first_section: np.ndarray  #: per buffer: index of the first section it is live in
    last_section: np.ndarray  #: per buffer: one past the last section it is live in
    section_total: np.ndarray  #: per section: total bytes of the buffers live in it

    @property
    def n_sections(self) -> int:
        return len(self.section_total)

    def span_total(self) -> np.ndarray:
        """Per buffer: the largest section total over the sections it spans (the "T" key)."""
        return range_max(self.section_total, self.first_section, self.last_section)


def sweep(problem: Problem) -> Sweep:
    """Compute the cross sections of ``problem``.

    >>> from allocator.problem import Buffer
    >>> s = sweep(Problem([Buffer("a", 0, 3, 4), Buffer("b", 3, 9, 4), Buffer("c", 0, 9, 4)]))
    >>> s.times.tolist(), s.first_section.tolist(), s.last_section.tolist(), s.section_total.tolist()
    ([0, 3, 9], [0, 1, 0], [1, 2, 2], [8, 8])
    """
    starts, ends, sizes, _, _ = problem.arrays()
    times = np.unique(np.concatenate([starts, ends]))
    first = np.searchsorted(times, starts).astype(np.int64)
    last = np.searchsorted(times, ends).astype(np.int64)
    n_sections = max(len(times) - 1, 0)
    delta = np.zeros(n_sections + 1, np.int64)
    np.add.at(delta, first, sizes)
    np.add.at(delta, last, -sizes)
    section_total = np.cumsum(delta)[:n_sections]
    return Sweep(times, first, last, section_total)


def range_max(values: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """``max(values[first[i]:last[i]])`` for every i (ranges non-empty), with a sparse table."""
    table = [values.astype(np.int64)]
    width = 1
    while 2 * width <= len(values):
        previous = table[-1]
        table.append(np.maximum(previous[:-width], previous[width:]))
        width *= 2
    if len(first) == 0:
        return np.zeros(0, np.int64)
    level = np.floor(np.log2(last - first)).astype(np.int64)
    result = np.empty(len(first), np.int64)
    for lv in np.unique(level):
        rows = np.nonzero(level == lv)[0]
        row = table[lv]
        result[rows] = np.maximum(row[first[rows]], row[last[rows] - (1 << lv)])
    return result

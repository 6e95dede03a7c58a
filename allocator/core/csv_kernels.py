"""The compiled scans of ``allocator.core.csv_io``: splitting a file without quotes into cells and
parsing integer cells, over the file's bytes.

They live apart from ``allocator.core.csv_io`` so that importing the package does not import
numba: ``csv_io`` imports this module inside the functions that scan, the first time a file
is read.
"""

from __future__ import annotations

import numba
import numpy as np

from allocator.core import kernel_cache  # noqa: F401  (numba's cache directory, before any kernel is decorated)

__all__ = ["join_cells", "line_bounds", "parse_integers", "split_rows"]


@numba.njit(cache=True)
def split_rows(buf: np.ndarray, begin: int, width: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Cell bounds of every row from byte ``begin`` on.

    Returns ``(bounds, lines, bad_line, bad_count)``: ``bounds[row, column]`` is the cell's
    ``[start, end)`` in ``buf``, ``lines[row]`` the row's line number.

    Lines end at ``\\n`` (a ``\\r`` before it is dropped); blank lines (spaces and tabs only)
    are skipped; spaces and tabs around a cell are left out of its bounds. The scan stops at
    the first row whose number of fields is not ``width`` and reports its line (-1 when
    every row has ``width`` fields).
    """
    n = len(buf)
    capacity = 1
    for p in range(begin, n):
        if buf[p] == 10:
            capacity += 1
    bounds = np.empty((capacity, width, 2), np.int64)
    lines = np.empty(capacity, np.int64)
    rows = 0
    line = 2
    pos = begin
    while pos < n:
        end = pos
        while end < n and buf[end] != 10:
            end += 1
        stop = end - 1 if end > pos and buf[end - 1] == 13 else end
        blank = True
        for p in range(pos, stop):
            if buf[p] != 32 and buf[p] != 9:
                blank = False
                break
        if not blank:
            count = 1
            for p in range(pos, stop):
                if buf[p] == 44:
                    count += 1
            if count != width:
                return bounds[:rows], lines[:rows], line, count
            field = 0
            cell = pos
            for p in range(pos, stop + 1):
                if p == stop or buf[p] == 44:
                    lo, hi = cell, p
                    while lo < hi and (buf[lo] == 32 or buf[lo] == 9):
                        lo += 1
                    while hi > lo and (buf[hi - 1] == 32 or buf[hi - 1] == 9):
                        hi -= 1
                    bounds[rows, field, 0] = lo
                    bounds[rows, field, 1] = hi
                    field += 1
                    cell = p + 1
            lines[rows] = line
            rows += 1
        line += 1
        pos = end + 1
    return bounds[:rows], lines[:rows], -1, 0


@numba.njit(cache=True)
def parse_integers(buf: np.ndarray, bounds: np.ndarray, column: int) -> tuple[np.ndarray, np.ndarray]:
    """Parse one column of cells as ``-?[0-9]+``: ``(values, status)`` with the status codes of
    ``allocator.core.csv_io``
    (0 a number, 1 an empty cell, 2 not an integer, 3 too long: settled there).

    Up to 18 significant digits fit an int64 exactly; longer numbers get status 3 and are
    settled in Python (their value decides whether they are in range).
    """
    rows = bounds.shape[0]
    values = np.zeros(rows, np.int64)
    status = np.zeros(rows, np.uint8)
    for r in range(rows):
        lo, hi = bounds[r, column, 0], bounds[r, column, 1]
        if lo == hi:
            status[r] = 1
            continue
        negative = buf[lo] == 45
        first = lo + 1 if negative else lo
        if first == hi:
            status[r] = 2
            continue
        value = 0
        digits = 0
        for q in range(first, hi):
            c = buf[q]
            if c < 48 or c > 57:
                status[r] = 2
                break
            if digits or c != 48:
                digits += 1
                if digits <= 18:
                    value = value * 10 + (c - 48)
        if status[r] == 0:
            if digits > 18:
                status[r] = 3
            else:
                values[r] = -value if negative else value
    return values, status


@numba.njit(cache=True)
def join_cells(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The byte ranges ``[starts, ends)`` of ``buf`` joined by newlines (``\\n``), as one byte array."""
    total = len(starts) - 1
    for r in range(len(starts)):
        total += ends[r] - starts[r]
    out = np.empty(total, np.uint8)
    at = 0
    for r in range(len(starts)):
        if r:
            out[at] = 10
            at += 1
        for q in range(starts[r], ends[r]):
            out[at] = buf[q]
            at += 1
    return out


@numba.njit(cache=True)
def line_bounds(buf: np.ndarray, rows: int) -> np.ndarray:
    """The ``[start, end)`` of each of the ``rows`` newline-separated cells of ``buf``, shaped (rows, 1, 2)."""
    bounds = np.empty((rows, 1, 2), np.int64)
    row = 0
    start = 0
    for p in range(len(buf) + 1):
        if p == len(buf) or buf[p] == 10:
            bounds[row, 0, 0] = start
            bounds[row, 0, 1] = p
            row += 1
            start = p + 1
    return bounds

"""CSV input and output in the MiniMalloc benchmark format.

The header names the columns, in any order: ``id``, ``lower``, ``upper`` and ``size`` are
required (``lower``/``upper`` are the half-open lifetime ``[lower, upper)``); ``alignment``
and ``offset`` are optional, an ``offset`` in the input pins that buffer there (a fixed
offset). An empty ``offset`` cell leaves the buffer free. Output files repeat the input
columns and add ``offset``. Any other column is an error: silently ignoring it would hide a
typo such as ``algnment``.
"""

from __future__ import annotations

import csv
from pathlib import Path

from allocator.problem import Buffer, InvalidProblemError, Problem, Solution

REQUIRED = ("id", "lower", "upper", "size")
OPTIONAL = ("alignment", "offset")


class CSVFormatError(InvalidProblemError):
    """A malformed CSV; the message names the file, the line and, when it applies, the column."""


def read_csv(path: str | Path, capacity: int | None = None) -> Problem:
    """Read a MiniMalloc-format CSV into a ``Problem`` with the given capacity.

    Raises ``CSVFormatError`` naming file, line and column for a missing or unknown column, a
    non-integer cell, a duplicate id, a negative size or ``upper <= lower``.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise CSVFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    rows = csv.reader(text.splitlines())
    try:
        header = [h.strip() for h in next(rows)]
    except StopIteration:
        raise CSVFormatError(f"{path}: empty file, expected a header {','.join(REQUIRED)}") from None
    for column in REQUIRED:
        if column not in header:
            raise CSVFormatError(f"{path}:1: missing column {column!r} (header must have {','.join(REQUIRED)})")
    for column in header:
        if column not in REQUIRED + OPTIONAL:
            raise CSVFormatError(
                f"{path}:1: unknown column {column!r} (known: {', '.join(REQUIRED + OPTIONAL)})"
            )
    if len(set(header)) != len(header):
        raise CSVFormatError(f"{path}:1: a column appears twice in the header")
    index = {name: i for i, name in enumerate(header)}
    buffers: list[Buffer] = []
    seen: dict[str, int] = {}
    for line_no, row in enumerate(rows, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue  # blank lines, e.g. a trailing newline
        if len(row) != len(header):
            raise CSVFormatError(f"{path}:{line_no}: {len(row)} fields, the header has {len(header)}")

        def integer(column: str, row: list[str] = row, line_no: int = line_no) -> int | None:
            if column not in index:
                return None
            cell = row[index[column]].strip()
            if cell == "" and column in OPTIONAL:
                return None
            try:
                return int(cell)
            except ValueError:
                raise CSVFormatError(
                    f"{path}:{line_no}: column {column!r}: {cell!r} is not an integer"
                ) from None

        bid = row[index["id"]].strip()
        if not bid:
            raise CSVFormatError(f"{path}:{line_no}: column 'id' is empty")
        if bid in seen:
            raise CSVFormatError(f"{path}:{line_no}: column 'id': {bid!r} already defined on line {seen[bid]}")
        seen[bid] = line_no
        lower, upper, size = integer("lower"), integer("upper"), integer("size")
        alignment, offset = integer("alignment"), integer("offset")
        assert lower is not None and upper is not None and size is not None
        if size <= 0:
            raise CSVFormatError(f"{path}:{line_no}: column 'size': buffer {bid!r} has size {size}, must be positive")
        if lower < 0:
            raise CSVFormatError(f"{path}:{line_no}: column 'lower': buffer {bid!r} starts at {lower} < 0")
        if upper <= lower:
            raise CSVFormatError(
                f"{path}:{line_no}: column 'upper': buffer {bid!r} has upper {upper} <= lower {lower}"
            )
        try:
            buffers.append(Buffer(bid, lower, upper, size, 1 if alignment is None else alignment, offset))
        except InvalidProblemError as exc:
            raise CSVFormatError(f"{path}:{line_no}: {exc}") from None
    try:
        return Problem(buffers, capacity)
    except InvalidProblemError as exc:
        raise CSVFormatError(f"{path}: {exc}") from None


def write_csv(path: str | Path, problem: Problem, solution: Solution | None = None) -> None:
    """Write ``problem`` (and the offsets of ``solution``, if given) in the MiniMalloc format."""
    with_alignment = any(b.alignment != 1 for b in problem.buffers)
    header = list(REQUIRED) + (["alignment"] if with_alignment else [])
    with_offset = solution is not None or any(b.offset is not None for b in problem.buffers)
    if with_offset:
        header.append("offset")
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        for b in problem.buffers:
            row: list[object] = [b.id, b.start, b.end, b.size]
            if with_alignment:
                row.append(b.alignment)
            if with_offset:
                offset = solution.offsets.get(b.id) if solution is not None else b.offset
                row.append("" if offset is None else offset)
            writer.writerow(row)

"""CSV input and output in the MiniMalloc benchmark format.

The header names the columns, in any order: ``id``, ``lower``, ``upper`` and ``size`` are
required (``lower``/``upper`` are the half-open lifetime ``[lower, upper)``); ``alignment``
and ``offset`` are optional, an ``offset`` in the input pins that buffer there (a fixed
offset). An empty ``offset`` cell leaves the buffer free, an empty ``alignment`` cell means
1. Output files repeat the input columns and add ``offset``. Any other column is an error:
silently ignoring it would hide a typo such as ``algnment``.

What a cell may hold (decisions, so that nothing is read as something else):

* The file is UTF-8, with or without a byte-order mark; a NUL byte or bytes that are not
  UTF-8 make it a binary file, refused naming the file and line.
* Spaces and tabs around a cell are not part of it (``5, 7`` reads 5 and 7, as people
  write by hand); any other whitespace, and anything inside, is.
* An integer is ASCII digits with an optional leading ``-``: ``+5``, ``1_000``, ``1e3``,
  ``5.0``, ``1 000`` and non-ASCII digits (Python's ``int()`` accepts several of these) are
  errors, not numbers. Every value must lie within ``[0, MAX_VALUE]`` (see
  ``allocator.core.problem.MAX_VALUE``).
* Cells may be quoted with ``"`` as in RFC 4180; a quoted id keeps its commas and newlines.
* A blank line (empty, or spaces and tabs only) is skipped; a file with a header and no
  rows is an error ("no buffers").

Every error is a ``CSVFormatError`` whose message is one line: ``file:line: column 'name':
what is wrong``. The rows are checked first, each on its own, and the earliest bad line is
reported; then what involves several rows (a duplicate id, the stacking sum, two pinned
buffers that clash) is reported at the line of the later row.

Reading is columnar, for speed on large files (two million rows in a few seconds): a file
without quotes is split by a compiled scan over its bytes (``allocator.core.csv_kernels``, imported
on the first read so that importing the package does not import numba), integers are parsed
in the same compiled code, and the rows are checked with whole-array operations; only the
first bad row is looked at in Python, to word its message. A file with quotes goes through Python's
``csv`` module instead (same rules, slower), and so does a small file (fewer lines than
``allocator.core.problem.COMPILED_FROM``): Python reads it in milliseconds, and it spares a first
run the compilation of the scan (about 1.4 s of CPU with an empty compile cache).
"""

from __future__ import annotations

import codecs
import csv
import gc
import io
import os
import re
import typing
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from allocator.core.problem import (
    MAX_VALUE,
    InvalidProblemError,
    Problem,
    Solution,
    buffer_error,
    check_capacity,
    compiled_for,
    invalid_buffers,
)

REQUIRED = ("id", "lower", "upper", "size")
OPTIONAL = ("alignment", "offset")
INTEGER_COLUMNS = ("lower", "upper", "size", "alignment", "offset")

#: the integers a cell may hold: ASCII digits with an optional leading minus
_INTEGER = re.compile(r"-?[0-9]+")
#: what surrounds a cell without being part of it
_PADDING = " \t"

# status codes of a parsed integer cell
_OK, _EMPTY, _NOT_INTEGER, _LONG = 0, 1, 2, 3  # _LONG: more than 18 significant digits, checked in Python


class CSVFormatError(InvalidProblemError):
    """A malformed CSV; the message names the file, the line and, when it applies, the column."""


@dataclass
class _Table:
    """The rows of a CSV file as columns: what the two parsers (compiled and ``csv`` module) hand to the checks."""

    header: list[str]
    lines: np.ndarray  #: per row: the line it starts on (1-based)
    ids: list[str]
    empty_ids: np.ndarray  #: per row: True when its id cell is empty
    integers: dict[str, tuple[np.ndarray, np.ndarray]]  #: column -> (int64 values, status codes)
    cells: list[list[str]] | None  #: the rows' cells (``csv`` parser) or None (compiled parser)
    data: bytes  #: the file's bytes (compiled parser)
    bounds: np.ndarray | None  #: per row and column, the cell's [start, end) in ``data`` (compiled parser)
    wrong_width: tuple[int, int] | None  #: (line, number of fields) of the first row with the wrong number

    def cell(self, row: int, column: str) -> str:
        """The text of one cell, for a message."""
        at = self.header.index(column)
        if self.cells is not None:
            return self.cells[row][at]
        assert self.bounds is not None
        lo, hi = self.bounds[row, at]
        return self.data[lo:hi].decode("utf-8")


def read_csv(path: str | Path, capacity: int | None = None) -> Problem:
    """Read a MiniMalloc-format CSV into a ``Problem`` with the given capacity.

    Raises ``InvalidProblemError`` for a bad ``capacity`` (before reading), and
    ``CSVFormatError`` naming file, line and column for anything wrong in the file: see the
    module docstring for the rules.

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "p.csv")
    ...     _ = open(path, "w").write("id,lower,upper,size\\nb1,0,3,4\\nb2,3,9,4\\n")
    ...     read_csv(path, capacity=8).buffers[1]
    Buffer(id='b2', start=3, end=9, size=4, alignment=1, offset=None)
    """
    capacity = check_capacity(capacity)
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CSVFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    nul = data.find(b"\x00")
    if nul >= 0:
        raise CSVFormatError(f"{path}:{_line_at(data, nul)}: contains a NUL byte: a binary file, not a CSV")
    text = None
    if not data.isascii():
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CSVFormatError(f"{path}:{_line_at(data, exc.start)}: byte 0x{data[exc.start]:02x} is not UTF-8 "
                                 "text: a binary file, not a CSV") from None
    if not data or data.isspace():
        raise CSVFormatError(f"{path}: empty file, expected a header {','.join(REQUIRED)}")
    if (b'"' in data or (b"\r" in data and data.count(b"\r") != data.count(b"\r\n"))
            or not compiled_for(data.count(b"\n"))):
        table = _parse_with_csv_module(path, text if text is not None else data.decode("ascii"))
    else:
        table = _parse_compiled(path, data)
    return _problem(path, table, capacity)


def _line_at(data: bytes, position: int) -> int:
    """The 1-based line holding byte ``position``."""
    return data.count(b"\n", 0, position) + 1


def _check_header(path: Path, header: list[str]) -> None:
    for column in REQUIRED:
        if column not in header:
            raise CSVFormatError(f"{path}:1: missing column {column!r} (header must have {','.join(REQUIRED)})")
    for column in header:
        if column not in REQUIRED + OPTIONAL:
            raise CSVFormatError(f"{path}:1: unknown column {column!r} (known: {', '.join(REQUIRED + OPTIONAL)})")
    if len(set(header)) != len(header):
        twice = next(column for column in header if header.count(column) > 1)
        raise CSVFormatError(f"{path}:1: column {twice!r} appears twice in the header")


# --- the compiled parser (files without quotes) ---------------------------------------------


def _parse_compiled(path: Path, data: bytes) -> _Table:
    """Split ``data`` (no quotes, line ends ``\\n`` or ``\\r\\n``) into a ``_Table`` with compiled scans."""
    first_end = data.find(b"\n")
    header_line = data[: len(data) if first_end < 0 else first_end].rstrip(b"\r").decode("utf-8")
    header = [name.strip(_PADDING) for name in header_line.split(",")]
    _check_header(path, header)
    from allocator.core.csv_kernels import parse_integers, split_rows  # numba loads with the first scan

    buf = np.frombuffer(data, np.uint8)
    bounds, lines, bad_line, bad_count = split_rows(buf, len(data) if first_end < 0 else first_end + 1, len(header))
    wrong_width = (int(bad_line), int(bad_count)) if bad_line >= 0 else None
    integers = {}
    for column in INTEGER_COLUMNS:
        if column in header:
            values, status = parse_integers(buf, bounds, header.index(column))
            for row in np.flatnonzero(status == _LONG).tolist():
                lo, hi = bounds[row, header.index(column)]
                value = int(data[lo:hi])  # ASCII digits: the scan checked them
                if abs(value) <= MAX_VALUE:
                    values[row], status[row] = value, _OK
            integers[column] = (values, status)
    at = header.index("id")
    ids = _gather_text(data, buf, bounds, at)
    empty_ids = bounds[:, at, 0] == bounds[:, at, 1]
    return _Table(header, lines, ids, empty_ids, integers, None, data, bounds, wrong_width)


def _gather_text(data: bytes, buf: np.ndarray, bounds: np.ndarray, column: int) -> list[str]:
    """The cells of one column as Python strings.

    A compiled copy joins the cells with newlines (no unquoted cell holds one) and one
    ``split`` makes the strings: a few times faster than decoding each cell on its own.
    """
    if not len(bounds):
        return []
    from allocator.core.csv_kernels import join_cells  # numba loads with the first scan

    joined = join_cells(buf, bounds[:, column, 0], bounds[:, column, 1])
    return joined.tobytes().decode("utf-8").split("\n")


# --- the csv-module parser (files with quotes or lone carriage returns) ---------------------


def _parse_with_csv_module(path: Path, text: str) -> _Table:
    """Parse ``text`` with ``csv.reader`` (quotes, newlines inside quoted cells) into a ``_Table``.

    The garbage collector is paused meanwhile: a list per row would trigger many full
    collections, none of which could free anything.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _parse_rows(path, text)
    finally:
        if collecting:
            gc.enable()


def _parse_rows(path: Path, text: str) -> _Table:
    reader = csv.reader(io.StringIO(text, newline=""))
    padded = " " in text or "\t" in text
    try:
        header = [name.strip(_PADDING) for name in next(reader)]
        _check_header(path, header)
        width = len(header)
        rows: list[list[str]] = []
        lines: list[int] = []
        wrong_width = None
        line = reader.line_num + 1
        for row in reader:
            here, line = line, reader.line_num + 1
            if not row or (len(row) == 1 and not row[0].strip(_PADDING)):
                continue
            if len(row) != width:
                wrong_width = (here, len(row))
                break
            rows.append([cell.strip(_PADDING) for cell in row] if padded else row)
            lines.append(here)
    except csv.Error as exc:
        raise CSVFormatError(f"{path}:{reader.line_num}: {exc}") from None
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in header]
    integers = {column: _parse_column(columns[header.index(column)]) for column in INTEGER_COLUMNS
                if column in header}
    ids = list(columns[header.index("id")])
    empty_ids = np.array([not bid for bid in ids], bool).reshape(len(ids))
    return _Table(header, np.array(lines, np.int64), ids, empty_ids, integers, rows, b"", None, wrong_width)


def _parse_column(cells: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """``(values, status)`` of a column of cell texts: joined by newlines and parsed by the compiled parser,
    or one by one when a cell holds a newline itself (a quoted cell may)."""
    joined = "\n".join(cells)
    if not compiled_for(len(cells)) or joined.count("\n") != len(cells) - 1:
        parsed = [_parse_integer(cell) for cell in cells]
        return (np.array([value for value, _ in parsed], np.int64).reshape(len(cells)),
                np.array([status for _, status in parsed], np.uint8).reshape(len(cells)))
    data = joined.encode("utf-8")
    buf = np.frombuffer(data, np.uint8)
    from allocator.core.csv_kernels import line_bounds, parse_integers  # numba loads with the first scan

    bounds = line_bounds(buf, len(cells))
    values, status = parse_integers(buf, bounds, 0)
    for row in np.flatnonzero(status == _LONG).tolist():
        value, status[row] = _parse_integer(cells[row])
        values[row] = value if status[row] == _OK else 0
    return values, status


def _parse_integer(cell: str) -> tuple[int, int]:
    """``(value, status)`` of one cell, by the same rule as ``csv_kernels.parse_integers``."""
    if not cell:
        return 0, _EMPTY
    if not _INTEGER.fullmatch(cell):
        return 0, _NOT_INTEGER
    value = int(cell)
    return (value, _OK) if abs(value) <= MAX_VALUE else (0, _LONG)


# --- checks ---------------------------------------------------------------------------------


def _problem(path: Path, table: _Table, capacity: int | None) -> Problem:
    """Check the rows of ``table`` (the earliest bad line wins) and build the problem."""
    n = len(table.ids)
    header = table.header
    bad = table.empty_ids.copy()
    for column, (_, status) in table.integers.items():
        bad |= (status != _OK) & ((status != _EMPTY) | (column not in OPTIONAL))
    lower, upper, size = (table.integers[column][0] for column in ("lower", "upper", "size"))
    alignment = np.ones(n, np.int64)
    fixed = np.full(n, -1, np.int64)
    if "alignment" in header:
        values, status = table.integers["alignment"]
        alignment = np.where(status == _EMPTY, 1, values)
    if "offset" in header:
        values, status = table.integers["offset"]
        given = status != _EMPTY
        bad |= given & (values < 0)  # -1 would otherwise read as "free"
        fixed = np.where(given, values, -1)
    bad |= invalid_buffers(lower, upper, size, alignment, fixed)
    if bad.any():
        row = int(np.argmax(bad))
        message = _row_error(table, row)
        assert message is not None, "the vectorised and the per-row checks disagree"
        raise CSVFormatError(f"{path}:{table.lines[row]}: {message}")
    if table.wrong_width is not None:
        line, count = table.wrong_width
        raise CSVFormatError(f"{path}:{line}: {count} fields, the header has {len(header)}")
    if not n:
        raise CSVFormatError(f"{path}: no buffers: the file has a header but no rows")
    try:
        return Problem.from_arrays(table.ids, lower, upper, size, alignment, fixed, capacity)
    except InvalidProblemError as exc:
        if not exc.indices:
            raise CSVFormatError(f"{path}: {exc}") from None
        lines = [int(table.lines[i]) for i in exc.indices]
        if len(exc.indices) == 2 and table.ids[exc.indices[0]] == table.ids[exc.indices[1]]:
            raise CSVFormatError(f"{path}:{lines[1]}: column 'id': {table.ids[exc.indices[1]]!r} already defined "
                                 f"on line {lines[0]}") from None
        others = f" (see also line {', '.join(map(str, lines[:-1]))})" if len(lines) > 1 else ""
        raise CSVFormatError(f"{path}:{lines[-1]}: {exc}{others}") from None


def _row_error(table: _Table, row: int) -> str | None:
    """What is wrong with one row, worded for the CSV (column names, not field names), or None.

    Re-derives everything from the cell texts, independently of the vectorised checks.
    """
    bid = table.cell(row, "id")
    if not bid:
        return "column 'id' is empty"
    values: dict[str, int | None] = {}
    for column in INTEGER_COLUMNS:
        if column not in table.header:
            values[column] = None
            continue
        text = table.cell(row, column)
        if not text and column in OPTIONAL:
            values[column] = None
        elif not _INTEGER.fullmatch(text):
            return f"column {column!r}: {text!r} is not an integer (ASCII digits with an optional leading '-')"
        else:
            values[column] = int(text)
    for column, value in values.items():
        if value is not None and value > MAX_VALUE:
            return (f"column {column!r}: buffer {bid!r}: {value} is beyond MAX_VALUE = 2**62 - 1, the largest value "
                    "the allocator handles")
    lower, upper, size = values["lower"], values["upper"], values["size"]
    alignment, offset = values["alignment"], values["offset"]
    assert lower is not None and upper is not None and size is not None
    if size <= 0:
        return f"column 'size': buffer {bid!r} has size {size}, must be positive"
    if lower < 0:
        return f"column 'lower': buffer {bid!r} starts at {lower} < 0"
    if upper <= lower:
        return f"column 'upper': buffer {bid!r} has upper {upper} <= lower {lower}"
    if alignment is not None and alignment < 1:
        return f"column 'alignment': buffer {bid!r} has alignment {alignment}, must be >= 1"
    if offset is not None and offset < 0:
        return f"column 'offset': buffer {bid!r} has offset {offset} < 0 (leave the cell empty for a free buffer)"
    message = buffer_error(bid, lower, upper, size, 1 if alignment is None else alignment, offset)
    return None if message is None else f"column 'offset': {message}"


# --- output ---------------------------------------------------------------------------------


#: rows ``write_csv`` turns into Python values at a time: its memory stays that of the arrays
#: plus one chunk (the whole file's rows as Python lists took about 150 B per buffer more)
WRITE_CHUNK = 1 << 16


def write_csv(path: str | Path, problem: Problem, solution: Solution | None = None) -> None:
    """Write ``problem`` (and the offsets of ``solution``, if given) in the MiniMalloc format.

    Rows are written ``WRITE_CHUNK`` at a time (streaming: memory does not grow with the
    file). A regular file is written whole or not at all: the rows go to a temporary file
    beside it, renamed over ``path`` once complete, so an error or Ctrl-C halfway leaves the
    old file (or none) rather than a truncated one. A path that is not a regular file (a
    device such as ``/dev/stdout``, a pipe, a symbolic link) is written directly, as is a
    file whose folder does not let a temporary file be made.
    """
    target = Path(path)
    direct = target.is_symlink() or (target.exists() and not target.is_file())
    if not direct:
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            handle = open(temporary, "w", newline="", encoding="utf-8")  # closed by the with below
        except OSError:
            direct = True
    if direct:
        with open(target, "w", newline="", encoding="utf-8") as out:
            _write_rows(out, problem, solution)
        return
    try:
        with handle:
            _write_rows(handle, problem, solution)
        os.replace(temporary, target)
    finally:
        if temporary.exists():
            temporary.unlink()


def _write_rows(handle: typing.TextIO, problem: Problem, solution: Solution | None) -> None:
    starts, ends, sizes, alignments, fixed = problem.arrays(copy=False)
    with_alignment = bool((alignments != 1).any())
    header = list(REQUIRED) + (["alignment"] if with_alignment else [])
    with_offset = solution is not None or bool((fixed >= 0).any())
    if with_offset:
        header.append("offset")
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(header)
    ids = problem.ids
    for begin in range(0, len(problem), WRITE_CHUNK):
        end = min(begin + WRITE_CHUNK, len(problem))
        chunk_ids = ids[begin:end]
        columns: list[list[object]] = [list(chunk_ids), starts[begin:end].tolist(), ends[begin:end].tolist(),
                                       sizes[begin:end].tolist()]
        if with_alignment:
            columns.append(alignments[begin:end].tolist())
        if with_offset:
            if solution is not None:
                columns.append(["" if (o := solution.offsets.get(bid)) is None else o for bid in chunk_ids])
            else:
                columns.append(["" if o < 0 else o for o in fixed[begin:end].tolist()])
        writer.writerows(zip(*columns, strict=True))

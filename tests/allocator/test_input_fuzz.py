"""Fuzzing read_csv: random mutations of a valid small CSV, checked against an independent tiny parser.

The contract: ``read_csv`` either returns a problem whose buffers are exactly what the file
says (as read by the reference parser below, written from the format's rules with nothing
shared with ``allocator.core.csv_io``), or raises ``CSVFormatError`` with a one-line message that
names the file, and the line at fault when a single row is at fault. Nothing else may escape.

The mutations cover bad integers, byte-order marks, missing and extra columns or cells,
duplicate ids, values beyond ``MAX_VALUE``, ``upper <= lower``, binary garbage, quoted
newlines and commas, header-only files, blank lines, padding and all three line ends (so
both the compiled reader and the ``csv``-module reader are exercised).
"""

import csv
import io
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from allocator import MAX_VALUE, CSVFormatError, read_csv

REQUIRED = ("id", "lower", "upper", "size")
OPTIONAL = ("alignment", "offset")
INTEGER = re.compile(r"-?[0-9]+")
BOM = b"\xef\xbb\xbf"
ANY_LINE = -1  # the error involves several rows: some line must be named, which one is not checked here


# --- the reference parser ---------------------------------------------------------------------


def reference(data: bytes) -> tuple[list[tuple] | None, int | None]:
    """``(rows, None)`` for a valid file, each row ``(id, lower, upper, size, alignment, offset)``;
    ``(None, line)`` for an invalid one, ``line`` None when no line is at fault."""
    if data.startswith(BOM):
        data = data[len(BOM):]
    if b"\0" in data:
        return None, data[: data.index(b"\0")].count(b"\n") + 1
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, data[: exc.start].count(b"\n") + 1
    if not text.strip(" \t\r\n\x0b\x0c"):
        return None, None
    reader = csv.reader(io.StringIO(text, newline=""))
    records, line = [], 1
    for row in reader:
        records.append((line, [cell.strip(" \t") for cell in row]))
        line = reader.line_num + 1
    header = records[0][1]
    if any(c not in header for c in REQUIRED) or any(c not in REQUIRED + OPTIONAL for c in header) \
            or len(set(header)) != len(header):
        return None, 1
    rows = []
    for line, cells in records[1:]:
        if not cells or cells == [""]:
            continue  # blank line
        if len(cells) != len(header):
            return None, line
        row = row_values(dict(zip(header, cells, strict=True)))
        if row is None:
            return None, line
        rows.append(row)
    if not rows:
        return None, None
    return (rows, None) if rows_agree(rows) else (None, ANY_LINE)


def row_values(cells: dict[str, str]) -> tuple | None:
    """One row's values, or None when the row breaks a rule on its own."""
    if not cells["id"]:
        return None
    values = {}
    for column in ("lower", "upper", "size", "alignment", "offset"):
        text = cells.get(column, "")
        if text == "" and column in OPTIONAL:
            values[column] = None
            continue
        if not INTEGER.fullmatch(text):
            return None
        values[column] = int(text)
        if values[column] > MAX_VALUE:
            return None
    lower, upper, size, alignment, offset = values.values()
    alignment = 1 if alignment is None else alignment
    if size <= 0 or lower < 0 or upper <= lower or alignment < 1:
        return None
    if offset is not None and (offset < 0 or offset + size > MAX_VALUE or offset % alignment):
        return None
    return cells["id"], lower, upper, size, alignment, offset


def rows_agree(rows: list[tuple]) -> bool:
    """The rules between rows: unique ids, both stacking sums within MAX_VALUE, no clashing pins."""
    if len({r[0] for r in rows}) != len(rows):
        return False
    padded = [size + alignment - 1 for _, _, _, size, alignment, _ in rows]
    pinned_top = max((offset + size for _, _, _, size, _, offset in rows if offset is not None), default=0)
    free = sum(p for p, r in zip(padded, rows, strict=True) if r[5] is None)
    if sum(padded) > MAX_VALUE or pinned_top + free > MAX_VALUE:
        return False
    pins = [r for r in rows if r[5] is not None]
    for i, a in enumerate(pins):
        for b in pins[i + 1:]:
            if a[1] < b[2] and b[1] < a[2] and a[5] < b[5] + b[3] and b[5] < a[5] + a[3]:
                return False
    return True


# --- random files -----------------------------------------------------------------------------


@st.composite
def valid_tables(draw):
    """A valid table: header (some order, optional columns or not) and 1..6 rows of small values."""
    header = list(REQUIRED) + [c for c in OPTIONAL if draw(st.booleans())]
    header = draw(st.permutations(header))
    rows = []
    for i in range(draw(st.integers(1, 6))):
        lower = draw(st.integers(0, 10))
        alignment = draw(st.sampled_from([1, 2, 4])) if "alignment" in header and draw(st.booleans()) else None
        offset = None
        if draw(st.integers(0, 3)) == 0:  # pinned (possibly clashing with another pin: the oracle decides)
            offset = (alignment or 1) * draw(st.integers(0, 6))
        cells = {"id": f"b{i}", "lower": str(lower), "upper": str(lower + draw(st.integers(1, 5))),
                 "size": str(draw(st.integers(1, 8))), "alignment": "" if alignment is None else str(alignment),
                 "offset": "" if offset is None else str(offset)}
        if offset is not None and "offset" not in header:
            continue
        rows.append([cells[c] for c in header])
    if not rows:
        rows.append([{"id": "only", "lower": "0", "upper": "1", "size": "1"}.get(c, "") for c in header])
    return header, rows


BAD_INTEGERS = ["1_000", "+5", "\u0664", "\uff15", "4.0", "x", "", "5 6", "1e3", "-", "9" * 25, "-" + "9" * 25,
                str(MAX_VALUE + 1), str(2**63), str(MAX_VALUE // 2 + 1), "-3", "0"]


@st.composite
def csv_files(draw):
    """The bytes of a valid table after 0..3 random mutations."""
    header, rows = draw(valid_tables())
    header = list(header)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["integer", "drop column", "extra column", "short row", "long row",
                                     "duplicate id", "empty range", "newline id", "comma id", "header only",
                                     "pad"]))
        if kind == "integer":
            row, column = draw(st.integers(0, max(len(rows) - 1, 0))), draw(st.integers(0, len(header) - 1))
            if rows and header[column] != "id" and column < len(rows[row]):
                rows[row][column] = draw(st.sampled_from(BAD_INTEGERS))
        elif kind == "drop column" and len(header) > 1:
            column = draw(st.integers(0, len(header) - 1))
            header.pop(column)
            for r in rows:
                r.pop(column)
        elif kind == "extra column":
            header.append(draw(st.sampled_from(["colour", "alignment", "offset", "id"])))
            for r in rows:
                r.append("")
        elif kind in ("short row", "long row") and rows:
            row = draw(st.integers(0, len(rows) - 1))
            rows[row] = rows[row][:-1] if kind == "short row" else rows[row] + ["7"]
        elif kind == "duplicate id" and len(rows) > 1 and "id" in header:
            at = header.index("id")
            if at < min(len(rows[0]), len(rows[-1])):
                rows[-1][at] = rows[0][at]
        elif kind == "empty range" and "lower" in header and "upper" in header and rows:
            row = draw(st.integers(0, len(rows) - 1))
            if max(header.index("upper"), header.index("lower")) < len(rows[row]):
                rows[row][header.index("upper")] = rows[row][header.index("lower")]
        elif kind in ("newline id", "comma id") and "id" in header and rows:
            row = draw(st.integers(0, len(rows) - 1))
            if header.index("id") < len(rows[row]):
                rows[row][header.index("id")] += "\nx" if kind == "newline id" else ", x"
        elif kind == "header only":
            rows = []
        elif kind == "pad" and rows:
            row, column = draw(st.integers(0, len(rows) - 1)), draw(st.integers(0, len(rows[0]) - 1))
            if column < len(rows[row]):
                rows[row][column] = draw(st.sampled_from([" ", "\t", "  "])) + rows[row][column] + " "
    out = io.StringIO()
    quoting = draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
    writer = csv.writer(out, lineterminator=draw(st.sampled_from(["\n", "\n", "\r\n", "\r"])), quoting=quoting)
    writer.writerow(header)
    writer.writerows(rows)
    text = out.getvalue()
    if draw(st.integers(0, 4)) == 0:  # blank lines somewhere
        lines = text.split("\n")
        at = draw(st.integers(0, len(lines)))
        text = "\n".join(lines[:at] + [draw(st.sampled_from(["", "  ", "\t"]))] + lines[at:])
    data = text.encode("utf-8")
    if draw(st.integers(0, 4)) == 0:
        data = BOM + data
    if draw(st.integers(0, 6)) == 0:  # binary garbage
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\x00", b"\xff", b"\xc3", b"\x80\x81", b"\x00\x01\x02"])) + data[at:]
    return data


@given(csv_files())
def test_read_csv_returns_what_the_file_says_or_one_line_naming_file_and_line(data):
    expected, line = reference(data)
    event("valid" if expected is not None else "no line" if line is None else "several rows" if line == ANY_LINE
          else "one line")
    event("csv-module reader" if b'"' in data or b"\r" in data.replace(b"\r\n", b"") else "compiled reader")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.csv"
        path.write_bytes(data)
        if expected is not None:
            problem = read_csv(path)
            assert [(b.id, b.start, b.end, b.size, b.alignment, b.offset) for b in problem.buffers] == expected
            return
        with pytest.raises(CSVFormatError) as info:
            read_csv(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path}:")
    if line is None:
        assert message.startswith(f"{path}: ")
    elif line == ANY_LINE:
        assert re.match(rf"{re.escape(str(path))}:\d+: ", message)
    else:
        assert message.startswith(f"{path}:{line}: ")


def test_the_reference_parser_accepts_a_plain_file():
    # the fuzz test's oracle must itself say "valid" for valid input, or every comparison above is vacuous
    assert reference(b"id,lower,upper,size,offset\na,0,2,4,\nb,1,3,4,8\n") == \
        ([("a", 0, 2, 4, 1, None), ("b", 1, 3, 4, 1, 8)], None)
    assert reference(b"id,lower,upper,size\na,0,2,+4\n") == (None, 2)

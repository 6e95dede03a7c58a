"""``allocator.core.csv_io``: reading and writing CSV in the MiniMalloc format.

The benchmarks load, output round-trips, and each class of unusual or malformed input is
refused with one line naming file, line and column. The tests marked ``through_both_parsers``
read through both CSV parsers (the ``csv_reader`` fixture of the root conftest.py); a fuzzer
checks ``read_csv`` against an independent tiny parser.
"""

import csv
import io
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from allocator import MAX_VALUE, Buffer, CSVFormatError, Problem, Solution, lower_bound, read_csv, solve, write_csv

# --------------------------------------------------------------------------------------------------
# CSV I/O in the MiniMalloc format: the benchmarks load, output round-trips, bad lines are named.


#: marks a test to run once through each CSV parser (the ``csv_reader`` fixture of the root conftest.py)
through_both_parsers = pytest.mark.usefixtures("csv_reader")

CHALLENGING_LOAD = {c: 1048576 for c in "ABCDEFGHIJK"} | {"C": 1039360, "D": 986112, "J": 989184}


@through_both_parsers
@pytest.mark.parametrize("name", sorted(CHALLENGING_LOAD))
def test_challenging_suite_loads_with_its_known_load(benchmarks, name):
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / f"{name}.1048576.csv", capacity=1048576)
    assert 154 <= len(problem) <= 454
    assert lower_bound(problem) == CHALLENGING_LOAD[name]


@through_both_parsers
def test_idealloc_traces_load(benchmarks):
    sizes = {"somas_tensors/resnet50": 1042, "somas_tensors/pangu_2.6B": 18692, "iopddl/G_1": 816,
             "iopddl/S_1": 28526}
    for name, n in sizes.items():
        assert len(read_csv(benchmarks / "idealloc" / f"{name}.csv")) == n


@through_both_parsers
def test_paper_example_solves_at_capacity_12(benchmarks):
    problem = read_csv(benchmarks / "minimalloc" / "examples" / "input.12.csv", capacity=12)
    assert [b.id for b in problem.buffers][:2] == ["b1", "b2"]
    assert lower_bound(problem) <= 12


@through_both_parsers
def test_output_round_trips_with_offsets_and_alignment(tmp_path):
    problem = Problem([Buffer("a", 0, 2, 4, alignment=4), Buffer("b", 1, 3, 3, offset=8)], capacity=16)
    solution = solve(problem, "greedy-by-size").solution
    path = tmp_path / "out.csv"
    write_csv(path, problem, solution)
    assert path.read_text().splitlines()[0] == "id,lower,upper,size,alignment,offset"
    again = read_csv(path, capacity=16)
    assert [(b.id, b.start, b.end, b.size, b.alignment) for b in again.buffers] == [
        (b.id, b.start, b.end, b.size, b.alignment) for b in problem.buffers
    ]
    # offsets in an input file pin the buffers: the output read back is a fully fixed problem
    assert {b.id: b.offset for b in again.buffers} == dict(solution.offsets)


@through_both_parsers
def test_columns_in_any_order_and_blank_offsets(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("size,id,upper,lower,offset\n4,x,3,0,\n2,y,2,1,8\n\n")
    problem = read_csv(path)
    assert [(b.id, b.start, b.end, b.size, b.offset) for b in problem.buffers] == [
        ("x", 0, 3, 4, None), ("y", 1, 2, 2, 8)
    ]


@through_both_parsers
@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty file"),
        ("id,lower,size\n", r":1: missing column 'upper'"),
        ("id,lower,upper,size,algnment\n", r":1: unknown column 'algnment'"),
        ("id,lower,upper,size\n0,0,2,4\n1,0,2\n", r":3: 3 fields, the header has 4"),
        ("id,lower,upper,size\n0,0,2,4\n1,0,two,4\n", r":3: column 'upper': 'two' is not an integer"),
        ("id,lower,upper,size\n0,0,2,-4\n", r":2: column 'size': buffer '0' has size -4, must be positive"),
        ("id,lower,upper,size\n0,5,5,4\n", r":2: column 'upper': buffer '0' has upper 5 <= lower 5"),
        ("id,lower,upper,size\n0,-1,5,4\n", r":2: column 'lower': buffer '0' starts at -1 < 0"),
        ("id,lower,upper,size\n0,0,2,4\n0,1,3,4\n", r":3: column 'id': '0' already defined on line 2"),
        ("id,lower,upper,size,alignment,offset\n0,0,2,4,4,2\n",
         r":2: column 'offset': buffer '0': fixed offset 2 is not a multiple of alignment 4"),
    ],
)
def test_malformed_csv_names_file_line_and_column(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(CSVFormatError, match=message) as info:
        read_csv(path)
    assert str(path) in str(info.value)


@through_both_parsers
def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(CSVFormatError, match="cannot read"):
        read_csv(tmp_path / "nope.csv")


@through_both_parsers
def test_write_without_solution_keeps_fixed_offsets(tmp_path):
    problem = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 3, offset=8)])
    write_csv(tmp_path / "p.csv", problem)
    assert (tmp_path / "p.csv").read_text() == "id,lower,upper,size,offset\na,0,2,4,\nb,1,3,3,8\n"
    assert Solution({"a": 0, "b": 8}).peak(problem) == 11


# --------------------------------------------------------------------------------------------------
# CSV details: one test per class of unusual or malformed input, each error one line naming file, line and column.


HEADER = "id,lower,upper,size\n"


def write(tmp_path, content: str | bytes):
    path = tmp_path / "input.csv"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", newline="")
    return path


def error(path) -> str:
    with pytest.raises(CSVFormatError) as info:
        read_csv(path)
    text = str(info.value)
    assert "\n" not in text and text.startswith(str(path))
    return text[len(str(path)):]


def rows(problem):
    return [(b.id, b.start, b.end, b.size, b.alignment, b.offset) for b in problem.buffers]


@through_both_parsers
def test_a_utf8_byte_order_mark_is_accepted(tmp_path):
    path = write(tmp_path, "\ufeff" + HEADER + "a,0,2,4\n")
    assert rows(read_csv(path)) == [("a", 0, 2, 4, 1, None)]


@through_both_parsers
@pytest.mark.parametrize("cell", ["1_000", "+5", "\u0664\u0665", "\uff15", "5 5", "4.0", "1e3", "0x10", "-", "--4",
                                  "5\u00a0"])
def test_only_ascii_digits_with_an_optional_minus_are_integers(tmp_path, cell):
    # Python's int() accepts the first four (underscores, a plus, Arabic-Indic and full-width digits)
    path = write(tmp_path, HEADER + f"a,0,2,{cell}\n")
    assert error(path) == f":2: column 'size': {cell!r} is not an integer (ASCII digits with an optional leading '-')"


@through_both_parsers
def test_spaces_and_tabs_around_cells_are_not_part_of_them(tmp_path):
    path = write(tmp_path, "id , lower,\tupper,size\n a b ,\t0, 2 ,0004\n")
    assert rows(read_csv(path)) == [("a b", 0, 2, 4, 1, None)]  # the id keeps its inner space; leading zeros read


@through_both_parsers
def test_a_quoted_id_keeps_its_newline_and_later_lines_keep_their_numbers(tmp_path):
    path = write(tmp_path, HEADER + '"multi\nline",0,2,4\n"comma, too",1,3,4\nplain,2,4,4\n')
    assert [b.id for b in read_csv(path).buffers] == ["multi\nline", "comma, too", "plain"]
    bad = write(tmp_path, HEADER + '"multi\nline",0,2,4\nnext,0,two,4\n')
    assert error(bad).startswith(":4: column 'upper': 'two'")  # line 4 of the file, though it is the second row


@through_both_parsers
def test_windows_and_old_mac_line_ends_are_read(tmp_path):
    for end in ("\r\n", "\r"):
        path = write(tmp_path, HEADER.replace("\n", end) + f"a,0,2,4{end}b,1,3,5{end}")
        assert rows(read_csv(path)) == [("a", 0, 2, 4, 1, None), ("b", 1, 3, 5, 1, None)]


@through_both_parsers
def test_a_file_with_only_a_header_has_no_buffers(tmp_path):
    assert error(write(tmp_path, HEADER)) == ": no buffers: the file has a header but no rows"
    assert error(write(tmp_path, HEADER + "\n  \n")) == ": no buffers: the file has a header but no rows"
    assert error(write(tmp_path, "")) == ": empty file, expected a header id,lower,upper,size"


@through_both_parsers
def test_a_binary_file_is_refused_naming_the_file_and_line(tmp_path):
    assert error(write(tmp_path, (HEADER + "a,0,2,4\nb,0\x00,2,4\n").encode())) == \
        ":3: contains a NUL byte: a binary file, not a CSV"
    assert error(write(tmp_path, (HEADER + "a,0,2,4\n").encode() + b"\xff\xfe,1,2,3\n")) == \
        ":3: byte 0xff is not UTF-8 text: a binary file, not a CSV"


@through_both_parsers
def test_a_negative_offset_is_an_error_not_a_free_buffer(tmp_path):
    path = write(tmp_path, "id,lower,upper,size,offset\na,0,2,4,-1\n")
    assert error(path) == ":2: column 'offset': buffer 'a' has offset -1 < 0 (leave the cell empty for a free buffer)"


@through_both_parsers
def test_empty_optional_cells_take_their_defaults(tmp_path):
    path = write(tmp_path, "id,lower,upper,size,alignment,offset\na,0,2,4,,\nb,0,2,4,4,8\n")
    assert rows(read_csv(path)) == [("a", 0, 2, 4, 1, None), ("b", 0, 2, 4, 4, 8)]
    assert error(write(tmp_path, HEADER + "a,0,,4\n")).startswith(":2: column 'upper': '' is not an integer")
    assert error(write(tmp_path, HEADER + ",0,2,4\n")) == ":2: column 'id' is empty"


@through_both_parsers
def test_the_earliest_bad_line_is_reported(tmp_path):
    # line 2 has a bad cell, line 3 too few fields, line 4 a negative size: line 2 wins
    path = write(tmp_path, HEADER + "a,0,x,4\nb,0,2\nc,0,2,-4\n")
    assert error(path).startswith(":2: column 'upper'")
    path = write(tmp_path, HEADER + "a,0,2,4\nc,0,2,-4\nb,0,2\n")
    assert error(path) == ":3: column 'size': buffer 'c' has size -4, must be positive"


@through_both_parsers
def test_rows_are_checked_before_what_involves_several_rows(tmp_path):
    # a duplicate id (line 3) is reported after every row has passed on its own (line 4 fails alone)
    path = write(tmp_path, HEADER + "a,0,2,4\na,1,3,4\nb,5,5,4\n")
    assert error(path) == ":4: column 'upper': buffer 'b' has upper 5 <= lower 5"
    path = write(tmp_path, HEADER + "a,0,2,4\nb,1,3,4\na,1,3,4\n")
    assert error(path) == ":4: column 'id': 'a' already defined on line 2"


@through_both_parsers
def test_quoted_and_unquoted_files_read_the_same(tmp_path):
    # the compiled reader takes files without quotes, the csv module the others: same rules, same problem
    plain = write(tmp_path, "id,lower,upper,size,alignment,offset\n a ,0,2, 4,,\nb,1,3,8,4,8\n\n")
    quoted = tmp_path / "quoted.csv"
    quoted.write_text('id,lower,upper,size,alignment,offset\n"a" ,0,2, 4,,\n"b",1,3,"8",4,8\n\n')
    assert read_csv(plain) == read_csv(quoted)
    for text in ("a,0,2,+4\n", "a,0,2\n", "a,-1,2,4\n", "a,0,2,99999999999999999999\n"):
        unquoted, withquote = write(tmp_path, HEADER + text), tmp_path / "q.csv"
        withquote.write_text(HEADER + '"q",0,1,1\n' + text)
        assert error(unquoted).replace(":2:", ":3:", 1) == error(withquote)  # one row later, the same message


# --------------------------------------------------------------------------------------------------
# Fuzzing read_csv: random mutations of a valid small CSV, checked against an independent tiny parser.
#
# The contract: ``read_csv`` either returns a problem whose buffers are exactly what the file
# says (as read by the reference parser below, written from the format's rules with nothing
# shared with ``allocator.core.csv_io``), or raises ``CSVFormatError`` with a one-line message that
# names the file, and the line at fault when a single row is at fault. Nothing else may escape.
#
# The mutations cover bad integers, byte-order marks, missing and extra columns or cells,
# duplicate ids, values beyond ``MAX_VALUE``, ``upper <= lower``, binary garbage, quoted
# newlines and commas, header-only files, blank lines, padding and all three line ends (so
# both the compiled reader and the ``csv``-module reader are exercised).


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

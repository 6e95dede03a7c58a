"""CSV details: one test per class of unusual or malformed input, each error one line naming file, line and column."""

import pytest

from allocator import CSVFormatError, read_csv

#: every test here reads through both CSV parsers (the ``csv_reader`` fixture of the root conftest.py)
pytestmark = pytest.mark.usefixtures("csv_reader")

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


def test_a_utf8_byte_order_mark_is_accepted(tmp_path):
    path = write(tmp_path, "\ufeff" + HEADER + "a,0,2,4\n")
    assert rows(read_csv(path)) == [("a", 0, 2, 4, 1, None)]


@pytest.mark.parametrize("cell", ["1_000", "+5", "\u0664\u0665", "\uff15", "5 5", "4.0", "1e3", "0x10", "-", "--4",
                                  "5\u00a0"])
def test_only_ascii_digits_with_an_optional_minus_are_integers(tmp_path, cell):
    # Python's int() accepts the first four (underscores, a plus, Arabic-Indic and full-width digits)
    path = write(tmp_path, HEADER + f"a,0,2,{cell}\n")
    assert error(path) == f":2: column 'size': {cell!r} is not an integer (ASCII digits with an optional leading '-')"


def test_spaces_and_tabs_around_cells_are_not_part_of_them(tmp_path):
    path = write(tmp_path, "id , lower,\tupper,size\n a b ,\t0, 2 ,0004\n")
    assert rows(read_csv(path)) == [("a b", 0, 2, 4, 1, None)]  # the id keeps its inner space; leading zeros read


def test_a_quoted_id_keeps_its_newline_and_later_lines_keep_their_numbers(tmp_path):
    path = write(tmp_path, HEADER + '"multi\nline",0,2,4\n"comma, too",1,3,4\nplain,2,4,4\n')
    assert [b.id for b in read_csv(path).buffers] == ["multi\nline", "comma, too", "plain"]
    bad = write(tmp_path, HEADER + '"multi\nline",0,2,4\nnext,0,two,4\n')
    assert error(bad).startswith(":4: column 'upper': 'two'")  # line 4 of the file, though it is the second row


def test_windows_and_old_mac_line_ends_are_read(tmp_path):
    for end in ("\r\n", "\r"):
        path = write(tmp_path, HEADER.replace("\n", end) + f"a,0,2,4{end}b,1,3,5{end}")
        assert rows(read_csv(path)) == [("a", 0, 2, 4, 1, None), ("b", 1, 3, 5, 1, None)]


def test_a_file_with_only_a_header_has_no_buffers(tmp_path):
    assert error(write(tmp_path, HEADER)) == ": no buffers: the file has a header but no rows"
    assert error(write(tmp_path, HEADER + "\n  \n")) == ": no buffers: the file has a header but no rows"
    assert error(write(tmp_path, "")) == ": empty file, expected a header id,lower,upper,size"


def test_a_binary_file_is_refused_naming_the_file_and_line(tmp_path):
    assert error(write(tmp_path, (HEADER + "a,0,2,4\nb,0\x00,2,4\n").encode())) == \
        ":3: contains a NUL byte: a binary file, not a CSV"
    assert error(write(tmp_path, (HEADER + "a,0,2,4\n").encode() + b"\xff\xfe,1,2,3\n")) == \
        ":3: byte 0xff is not UTF-8 text: a binary file, not a CSV"


def test_a_negative_offset_is_an_error_not_a_free_buffer(tmp_path):
    path = write(tmp_path, "id,lower,upper,size,offset\na,0,2,4,-1\n")
    assert error(path) == ":2: column 'offset': buffer 'a' has offset -1 < 0 (leave the cell empty for a free buffer)"


def test_empty_optional_cells_take_their_defaults(tmp_path):
    path = write(tmp_path, "id,lower,upper,size,alignment,offset\na,0,2,4,,\nb,0,2,4,4,8\n")
    assert rows(read_csv(path)) == [("a", 0, 2, 4, 1, None), ("b", 0, 2, 4, 4, 8)]
    assert error(write(tmp_path, HEADER + "a,0,,4\n")).startswith(":2: column 'upper': '' is not an integer")
    assert error(write(tmp_path, HEADER + ",0,2,4\n")) == ":2: column 'id' is empty"


def test_the_earliest_bad_line_is_reported(tmp_path):
    # line 2 has a bad cell, line 3 too few fields, line 4 a negative size: line 2 wins
    path = write(tmp_path, HEADER + "a,0,x,4\nb,0,2\nc,0,2,-4\n")
    assert error(path).startswith(":2: column 'upper'")
    path = write(tmp_path, HEADER + "a,0,2,4\nc,0,2,-4\nb,0,2\n")
    assert error(path) == ":3: column 'size': buffer 'c' has size -4, must be positive"


def test_rows_are_checked_before_what_involves_several_rows(tmp_path):
    # a duplicate id (line 3) is reported after every row has passed on its own (line 4 fails alone)
    path = write(tmp_path, HEADER + "a,0,2,4\na,1,3,4\nb,5,5,4\n")
    assert error(path) == ":4: column 'upper': buffer 'b' has upper 5 <= lower 5"
    path = write(tmp_path, HEADER + "a,0,2,4\nb,1,3,4\na,1,3,4\n")
    assert error(path) == ":4: column 'id': 'a' already defined on line 2"


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

"""Fuzzing the hardware YAML reader: every malformed file is refused with one line naming it.

The contract (README): ``load_hw`` either returns a config whose every field lies in its
declared range, or raises a ``ValueError`` whose message is one line and names the file.
Never another exception type, never a traceback from deep inside, never a silent clamp.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from accelsim.hw import COMPUTE_KINDS, HardwareConfig, config_from_dict, load_hw, schema_fields

BUNDLED = Path(__file__).resolve().parents[2] / "hw_configs"
LINES = (BUNDLED / "pixel6.yaml").read_text().splitlines()

#: replacement values that are each wrong in some way for most fields (or right, for some)
VALUES = st.sampled_from([
    "0", "-1", "1e-300", "1e300", "nan", ".inf", "-.inf", "''", "[]", "{}", "yes", "null", "1_000", "0x10",
    "١٢٣", "8MiB", "2**62", "9999999999999999999999", "'16'", "16.5", "~", "&a", "*a", "!!python/object:os.system",
    "[1, 2", "\"unterminated", "ws", "os", "systolic", "lanes", "ideal", "1", "64", "4096",
])


#: YAML keys of every type a file can hold
KEYS = st.sampled_from([
    "? [a, b]\n", "? {a: 1}\n", "1", "1.5", "null", "~", "true", "'n_pe'", '"n_pe"', "? !!binary aGk=\n",
    "!!set {a}", "2001-01-01", "? [n_pe]\n", "n_pe", "compute", "&k n_pe", "? - x\n  - y\n",
])


def _check_contract(path: Path) -> None:
    try:
        hw = load_hw(path)
    except ValueError as exc:
        message = str(exc)
        assert "\n" not in message, message
        assert path.name in message, message
        return
    assert isinstance(hw, HardwareConfig)
    # The compute block is the record of its kind, and the fields it holds load back the same.
    assert type(hw.compute) is COMPUTE_KINDS[hw.compute.kind]
    assert config_from_dict(hw.to_dict(), "again") == hw
    # A config that loads has every numeric field within its declared range: nothing was clamped.
    for key, meta, value in _values(hw):
        if isinstance(value, int | float) and not isinstance(value, bool):
            assert math.isfinite(value), key
            low, high = meta.get("low"), meta.get("high")
            assert low is None or value >= low, (key, value)
            assert high is None or value <= high, (key, value)


def _values(hw: HardwareConfig):
    for key, spec in schema_fields().items():
        obj = hw
        for part in key.split("."):
            obj = getattr(obj, part, None)  # None: a field of another compute kind, which the record lacks
        yield key, spec.metadata, obj


def _mutate(lines: list[str], data: st.DataObject) -> str:
    edits = data.draw(st.lists(st.sampled_from(["drop", "duplicate", "value", "indent", "garbage", "truncate", "key"]),
                               min_size=1, max_size=3))
    lines = list(lines)
    for edit in edits:
        at = data.draw(st.integers(0, len(lines) - 1))
        if edit == "drop":
            del lines[at]
        elif edit == "duplicate":
            lines.insert(at, lines[at])
        elif edit == "value" and ":" in lines[at]:
            key = lines[at].split(":", 1)[0]
            lines[at] = f"{key}: {data.draw(VALUES)}"
        elif edit == "indent":
            lines[at] = "   " + lines[at]
        elif edit == "garbage":
            lines.insert(at, data.draw(st.text(min_size=1, max_size=20)))
        elif edit == "truncate":
            lines = lines[:at]
        elif edit == "key":  # a key of another YAML type: a list, a mapping, a number, null, a bool, binary
            lines.insert(at, f"{data.draw(KEYS)}: 1")
        if not lines:
            lines = [""]
    return "\n".join(lines) + "\n"


@given(data=st.data())
def test_mutated_yaml_loads_in_range_or_is_refused_in_one_line(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("hw") / "fuzzed.yaml"
    path.write_text(_mutate(LINES, data))
    _check_contract(path)


@given(raw=st.binary(max_size=200))
def test_random_bytes_are_refused_in_one_line(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("hw") / "bytes.yaml"
    path.write_bytes(raw)
    _check_contract(path)


def test_the_unmutated_config_loads_and_equals_the_bundled_one(tmp_path):
    path = tmp_path / "copy.yaml"
    path.write_text("\n".join(LINES) + "\n")
    same = {"name": "pixel6", "source": "bundled"}
    assert dataclasses.asdict(load_hw(path)) | same == dataclasses.asdict(load_hw("pixel6")) | same


#: text a user could give ``--set``: numbers with Unicode digits, units, signs, blanks, garbage
SET_TEXT = st.one_of(
    st.text(alphabet=st.sampled_from("0123456789٠١٢٣٤٥٦٧٨٩０１２３４５６７８９۳߃.e+-_ kKMGiBb"),
            min_size=1, max_size=12),
    st.text(min_size=1, max_size=12),
)
FIELDS = sorted(schema_fields())


@given(key=st.sampled_from(FIELDS), text=SET_TEXT)
def test_set_values_are_parsed_in_range_or_refused_in_one_line(key, text):
    """A ``--set KEY=TEXT`` either gives a config whose field is in range or is refused in one
    line naming the key; a number is never read from anything but ASCII digits (no ``_``)."""
    try:
        hw = load_hw("pixel6", overrides={key: text})
    except ValueError as exc:
        assert "\n" not in str(exc) and key in str(exc), str(exc)
        return
    kind = schema_fields()[key].metadata["kind"]
    if kind in ("int", "bytes", "number"):
        assert text.isascii() and "_" not in text, (key, text)  # no '_' separators either: 1_0_0 is no 100
    _check_ranges(hw)


NUMERIC = [k for k, f in schema_fields().items() if f.metadata["kind"] in ("int", "bytes", "number", "bool")]


@given(key=st.sampled_from(NUMERIC),
       quote=st.sampled_from(["'", '"']))
def test_a_quoted_number_in_yaml_is_refused_naming_the_field(tmp_path_factory, key, quote):
    """YAML numbers must be YAML numbers: the same value quoted is a string and is refused."""
    hw = load_hw("pixel6")
    value = _values_by_key(hw)[key]
    if value is None:
        return  # a field of another compute kind
    text = str(value).lower() if isinstance(value, bool) else str(value)
    *blocks, leaf = key.split(".")
    lines, inside = [], None
    for line in LINES:
        stripped = line.strip()
        if not line.startswith(" ") and stripped.endswith(":"):
            inside = stripped[:-1]
        owner = inside if line.startswith(" ") else None
        if stripped.startswith(f"{leaf}:") and owner == (blocks[0] if blocks else None):
            indent = line[: len(line) - len(line.lstrip())]
            line = f"{indent}{leaf}: {quote}{text}{quote}"
        lines.append(line)
    path = tmp_path_factory.mktemp("hw") / "quoted.yaml"
    path.write_text("\n".join(lines) + "\n")
    try:
        load_hw(path)
    except ValueError as exc:
        assert "quoted string" in str(exc) and repr(key) in str(exc), str(exc)
    else:
        raise AssertionError(f"{key}: a quoted {text!r} was accepted")


def _values_by_key(hw: HardwareConfig) -> dict:
    return {key: value for key, _, value in _values(hw)}


def _check_ranges(hw: HardwareConfig) -> None:
    for key, meta, value in _values(hw):
        if isinstance(value, int | float) and not isinstance(value, bool):
            assert math.isfinite(value), key
            assert meta.get("low") is None or value >= meta["low"], (key, value)
            assert meta.get("high") is None or value <= meta["high"], (key, value)

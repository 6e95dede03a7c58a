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

from accelsim.hw import HardwareConfig, load_hw, schema_fields

BUNDLED = Path(__file__).resolve().parents[2] / "hw_configs"
LINES = (BUNDLED / "pixel6.yaml").read_text().splitlines()

#: replacement values that are each wrong in some way for most fields (or right, for some)
VALUES = st.sampled_from([
    "0", "-1", "1e-300", "1e300", "nan", ".inf", "-.inf", "''", "[]", "{}", "yes", "null", "1_000", "0x10",
    "١٢٣", "8MiB", "2**62", "9999999999999999999999", "'16'", "16.5", "~", "&a", "*a", "!!python/object:os.system",
    "[1, 2", "\"unterminated", "ws", "os", "systolic", "lanes", "ideal", "1", "64", "4096",
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
            obj = getattr(obj, part, None)
        yield key, spec.metadata, obj


def _mutate(lines: list[str], data: st.DataObject) -> str:
    edits = data.draw(st.lists(st.sampled_from(["drop", "duplicate", "value", "indent", "garbage", "truncate"]),
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

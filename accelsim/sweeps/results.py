"""A sweep's files: reading and checking ``results.csv`` and ``points/``, writing rows and
reports, rows typed back from text. See ``accelsim.sweeps``.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from accelsim.errors import one_line
from accelsim.report import format_joules
from accelsim.units import format_bandwidth, format_bytes, format_hertz, format_seconds

#: the longest status a row of ``results.csv`` holds (a longer reason is cut, ending in "...")
STATUS_CHARS = 300
#: the measured columns of ``results.csv``, after ``model``, ``hw`` and the grid keys.
#: ``deterministic`` is the report's: False when a wall-clock safety net (``timeout``,
#: ``time_limit`` among the base options) ended a search, so the point's numbers may differ on
#: another machine (empty for a point that failed)
METRICS = ("status", "cycles", "seconds", "utilization", "dram_read_bytes", "dram_write_bytes",
           "noncompulsory_bytes", "energy_j", "peak_bytes", "min_capacity_bytes", "scheduler_status", "deterministic",
           "wall_s", "hash")


#: the measured columns a grid over ``decode`` adds (a generation: ``accelsim.generation``), before ``wall_s``
GENERATION_METRICS = ("ttft_s", "tpot_s", "tokens_per_s")


def result_columns(keys: Sequence[str]) -> list[str]:
    """The columns of ``results.csv`` for a grid of ``keys``."""
    if "decode" not in keys:
        return ["model", "hw", *keys, *METRICS]
    return ["model", "hw", *keys, *METRICS[:-2], *GENERATION_METRICS, *METRICS[-2:]]


# --------------------------------------------------------------------------------------------
# how a column reads (index.html, the point pages, progress); results.csv keeps the raw numbers


def quantity(name: str) -> str:
    """What a column of ``results.csv`` or a grid key holds, read from its name (its last dotted
    part): ``bytes`` (``sram``, ``alignment``, ``..._bytes``, ``..._bytes_per_pe``), ``bytes/s``
    (``..._bytes_per_s``), ``bytes/cycle``, ``hz`` (``..._hz``), ``seconds`` (``seconds``,
    ``..._s`` but ``..._per_s``), ``joules`` (``..._j``), ``cycles`` (``cycles``, ``..._cycles``),
    ``fraction`` (``utilization``) or ``number``.

    >>> [quantity(n) for n in ("sram", "dram_bandwidth_bytes_per_s", "energy_j", "wall_s", "tokens_per_s")]
    ['bytes', 'bytes/s', 'joules', 'seconds', 'number']
    """
    last = name.rsplit(".", 1)[-1]
    if last.endswith("_bytes_per_s"):
        return "bytes/s"
    if last.endswith("_bytes_per_cycle"):
        return "bytes/cycle"
    if last in ("sram", "alignment") or last.endswith(("_bytes", "_bytes_per_pe")):
        return "bytes"
    if last.endswith("_hz"):
        return "hz"
    if last == "seconds" or (last.endswith("_s") and not last.endswith("_per_s")):
        return "seconds"
    if last.endswith("_j"):
        return "joules"
    if last == "cycles" or last.endswith("_cycles"):
        return "cycles"
    if last == "utilization":
        return "fraction"
    return "number"


def format_cell(name: str, value: Any) -> str:
    """``value`` of column or grid key ``name`` as a person reads it (``quantity`` says the unit):
    ``131072`` bytes as ``128 KiB``, ``25.6e9`` B/s as ``25.6 GB/s``, ``0.001859`` J as
    ``1.86 mJ``, seconds in s, ms or us, cycles and counts with thousands separators, a fraction
    in percent; text as it is, a missing value (None, NaN) as ``""``.

    >>> format_cell("sram", 131072), format_cell("dram_bandwidth_bytes_per_s", 25600000000.0)
    ('128 KiB', '25.6 GB/s')
    >>> format_cell("energy_j", 0.001859), format_cell("seconds", 6.36e-06), format_cell("cycles", 1603033.0)
    ('1.86 mJ', '6.36 us', '1,603,033')
    >>> format_cell("utilization", 0.6234), format_cell("budget", "MR"), format_cell("cycles", float("nan"))
    ('62.3 %', 'MR', '')
    >>> format_cell("utilization", 0.00278), format_cell("tokens_per_s", 12345.67), format_cell("compute.rows", 64)
    ('0.278 %', '12,346', '64')
    """
    if value is None:
        return ""
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if not math.isfinite(value):
        return "" if math.isnan(value) else str(value)
    kind = quantity(name)
    whole = float(value).is_integer()
    if kind == "bytes" and whole:
        return format_bytes(int(value))
    if kind in _SHOWN:
        return str(_SHOWN[kind](value))
    if whole:
        return f"{int(value):,}"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


#: how each kind of quantity (``quantity``) but bytes and plain numbers reads
_SHOWN: dict[str, Any] = {
    "bytes/s": format_bandwidth, "hz": format_hertz, "seconds": format_seconds, "joules": format_joules,
    "bytes/cycle": lambda v: f"{v:,.4g} B/cycle", "fraction": lambda v: f"{100 * v:.3g} %",
}


def readable_name(name: str) -> str:
    """A column or grid key's name without the unit its formatted value shows
    (``dram_bandwidth_bytes_per_s`` -> ``dram_bandwidth``): progress lines write ``NAME VALUE``.

    >>> readable_name("dram_bandwidth_bytes_per_s"), readable_name("sram_bytes_per_pe"), readable_name("sram")
    ('dram_bandwidth', 'sram_per_pe', 'sram')
    """
    for unit in ("_bytes_per_s", "_bytes_per_cycle", "_hz", "_bytes"):
        if unit in name and quantity(name) != "number":
            return name.replace(unit, "", 1)
    return name


def format_setting(key: str, value: Any) -> str:
    """A grid key and its value as progress lines and the point pages write them.

    >>> format_setting("dram_bandwidth_bytes_per_s", 25.6e9), format_setting("scheduler", "min-peak")
    ('dram_bandwidth 25.6 GB/s', 'scheduler min-peak')
    """
    return f"{readable_name(key)} {format_cell(key, value)}"


#: the short word of a point's status (``status_word``): the first whose pattern the status
#: matches; a status that matches none is ``failed``
STATUS_WORDS = (
    ("ok", re.compile(r"ok")),
    ("worker died", re.compile(r"worker died\b.*", re.S)),
    ("below M_R", re.compile(r".*\bis below M_R\b.*", re.S)),
    ("too small", re.compile(r".*\bmore than the whole budget\b.*", re.S)),
    ("timeout", re.compile(r".*(: timeout\b|\btimed out\b|\btime limit\b).*", re.S)),
    ("check failed", re.compile(r"memory check failed\b.*", re.S)),
    ("alloc failed", re.compile(r"allocator .* could not place .*", re.S)),
    ("invalid", re.compile(r"placement by .* is invalid\b.*", re.S)),
)


def status_word(status: Any) -> str:
    """A point's status (``ok`` or the one-line reason it failed) as one short word for a
    narrow column: ``ok``, ``worker died``, ``below M_R``, ``too small`` (one tensor exceeds the
    budget), ``timeout``, ``check failed`` (the simulator's memory check), ``alloc failed``,
    ``invalid`` (a placement the validator refused) or ``failed``. The full reason stays in the
    row; the page shows it on hover and on the point's page.

    >>> status_word("ok"), status_word("capacity 512 bytes is below M_R = 1088 bytes: operator 'op4' needs ...")
    ('ok', 'below M_R')
    >>> status_word("allocator 'exact' could not place the 9 residencies of the schedule in 4096 bytes: timeout: ...")
    'timeout'
    >>> status_word(""), status_word("tracing failed: no module named x")
    ('', 'failed')
    """
    text = "" if status is None else str(status)
    if not text:
        return ""
    return next((word for word, pattern in STATUS_WORDS if pattern.fullmatch(text)), "failed")


def read_results(path: Path, keys: Sequence[str]) -> list[dict[str, str]]:
    """The rows of an earlier run's ``results.csv``, each checked; its columns must be this grid's.

    A file that is not UTF-8 CSV text, whose header is another grid's, or with a row that is
    cut short, has a field too many, no status, a hash that is not one, or a number that is
    not one (ASCII digits only) raises ``ValueError`` naming the file and the line. An empty
    file has no rows.
    """
    rows: list[dict[str, str]] = []
    line = 1
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames
            if header is None:
                return rows
            if header != result_columns(keys):
                raise ValueError(f"{path}: its columns ({', '.join(header)}) are not this sweep's "
                                 f"({', '.join(result_columns(keys))}); use another --out folder")
            for row in reader:
                line = reader.line_num
                problem = _row_problem(row, keys)
                if problem:
                    raise ValueError(f"{path}, line {line}: {problem}; correct or delete the row (a re-run then runs "
                                     "its point again)")
                rows.append(row)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a sweep's results file (byte {exc.start} is not UTF-8 text); move it away "
                         "or use another --out folder") from None
    except csv.Error as exc:
        raise ValueError(f"{path}, line {line + 1}: not CSV ({exc}); move it away or use another --out folder"
                         ) from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read ({exc.strerror or one_line(exc, STATUS_CHARS)})") from None
    return rows


_HASH = re.compile(r"[0-9a-f]{16}", re.ASCII)


def _row_problem(row: Mapping[str | None, Any], keys: Sequence[str]) -> str | None:
    """Why a row read from ``results.csv`` cannot be used, or None."""
    if None in row:
        return f"{len(row) - 1 + len(row[None])} fields, the header has {len(row) - 1}"
    missing = [name for name, value in row.items() if value is None]
    if missing:
        return f"the row is cut short (no {', '.join(str(m) for m in missing[:3])} field)"
    if not _HASH.fullmatch(row["hash"] or ""):
        return f"hash {row['hash']!r} is not a point's hash (16 hex digits)"
    if not row["status"]:
        return "no status"
    try:
        typed_row(row, keys)  # type: ignore[arg-type]
    except ValueError as exc:
        return str(exc)
    return None


#: what a sweep writes in its folder (``accelsim.outputs.Output.files``): the table, its staging
#: copy, the page, one report per point, the plots
SWEEP_FILES = ("results.csv", "results.csv.tmp", "index.html", "points/", "*.png")


def check_results_folder(out: Path, keys: Sequence[str]) -> list[dict[str, str]]:
    """Check that ``out`` can hold this sweep's results, before anything is made there: it is
    (or can become) a writable folder, ``points`` in it is a folder, ``results.csv`` a readable
    file of this grid (``read_results``). Returns the rows already there; raises ``ValueError``
    naming the path."""
    from accelsim.outputs import check_output_folder

    check_output_folder(out, "--out")
    points = out / "points"
    if points.exists() and not points.is_dir():
        raise ValueError(f"{points}: a file where the sweep keeps one report per point (a folder); move it away "
                         "or use another --out folder")
    if points.is_dir() and not os.access(points, os.W_OK | os.X_OK):
        raise ValueError(f"{points}: the folder is not writable")
    results = out / "results.csv"
    staging = results.with_suffix(".csv.tmp")
    if staging.is_dir():
        raise ValueError(f"{staging}: a folder where the sweep writes results.csv before moving it in place; "
                         "move it away")
    if not results.exists():
        if results.is_symlink():
            raise ValueError(f"{results}: a link to nothing; move it away or use another --out folder")
        return []
    if not results.is_file():
        what = "a folder" if results.is_dir() else "not a regular file"
        raise ValueError(f"{results}: {what}, where the sweep keeps its results table; move it away or use another "
                         "--out folder")
    if not os.access(results, os.R_OK | os.W_OK):
        raise ValueError(f"{results}: cannot be read and written")
    return read_results(results, keys)


def ends_with_newline(path: Path) -> bool:
    """Whether the (non-empty) file at ``path`` ends with a newline."""
    with open(path, "rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """``data`` as JSON at ``path`` (written beside it, then moved in place: never half a file)."""
    staging = path.with_suffix(".json.tmp")
    staging.write_text(json.dumps(data, indent=1, default=str))
    os.replace(staging, path)


_INTS = {"cycles", "dram_read_bytes", "dram_write_bytes", "noncompulsory_bytes", "peak_bytes", "min_capacity_bytes"}
_FLOATS = {"seconds", "utilization", "energy_j", "wall_s", *GENERATION_METRICS}
_BOOLS = {"deterministic"}


def typed_row(row: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """A row with numbers as numbers (rows read back from results.csv are text). A measured
    column whose text is not its type (ASCII digits only) raises ``ValueError`` naming it."""
    out: dict[str, Any] = {}
    for name in result_columns(keys):
        value = row.get(name)
        if value in ("", None):
            out[name] = None
        elif isinstance(value, str) and name in _INTS | _FLOATS | _BOOLS:
            out[name] = _measured(name, value)
        elif name in _INTS:
            out[name] = int(value)
        elif name in _FLOATS:
            out[name] = float(value)
        elif name in keys and isinstance(value, str):
            out[name] = _number_or_text(value)
        else:
            out[name] = value
    return out


def _measured(name: str, text: str) -> Any:
    """A measured column's value from its text in results.csv."""
    if name in _BOOLS:
        if text not in ("True", "False"):
            raise ValueError(f"column {name}: {text!r} is not True or False")
        return text == "True"
    number = _ascii_number(text)
    if number is None or not math.isfinite(number) or (name in _INTS and not float(number).is_integer()):
        raise ValueError(f"column {name}: {text!r} is not {'an integer' if name in _INTS else 'a number'}")
    return int(number) if name in _INTS else float(number)


def _ascii_number(text: str) -> int | float | None:
    """``text`` as an int or a float, or None; ASCII only (int() and float() read any Unicode
    digit: '٣' as 3)."""
    if not text.isascii():
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


def _number_or_text(text: str) -> Any:
    number = _ascii_number(text)
    if number is None:
        return {"True": True, "False": False}.get(text, text)
    return number if math.isfinite(number) else text

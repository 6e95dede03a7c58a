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

"""``DIR/index.html``: a sweep's results table and plots on one self-contained page, and
``DIR/points/HASH.html``: one light page per point, which the table's rows open.

Written by every ``accelsim sweep`` with an output folder, next to ``results.csv``: the table
of every point (sortable by any column, filtered by a text box on the model and status
columns, the same table script as ``report.html``) and the sweep's plots, inlined as PNG data,
so the page opens offline and can be mailed as one file.

Decisions:

* **Readable when points fail**: the status column shows one short word (``status_word``:
  ``ok``, ``below M_R``, ``timeout``, ``failed`` ...), the full reason on hover (the cell's
  ``title``) and on the point's page, so a 300-character reason never widens the column and
  cycles, utilization and energy stay in view in a 1,024 px window. The page's columns put
  the inputs first (model, hw, the grid keys), then the status and the headline results
  (cycles, seconds, utilization, energy), then the rest in the order of ``results.csv``.
* **Human units on the page only**: each cell shows its value as ``format_cell`` writes it
  (``128 KiB``, ``25.6 GB/s``, ``1.86 mJ``, ``6.36 us``, ``1,603,033``), the raw number on hover;
  the page's data keeps the raw numbers and the table sorts by them (a cell is an object whose
  ``valueOf`` is the raw value and whose text is the formatted one), and ``results.csv``
  keeps the raw numbers, for machines.
* **Each row opens its point**: the model name links to ``points/HASH.html``, a light page
  (a few KiB) with the point's settings, its status and full reason, its results in human
  units and, for a point that ran, the summary figures of its report (the cycles against the
  floor, stalls, the energy's split, spills, scheduler and allocator) and a link to
  ``points/HASH.json``. Not a full ``report.html`` per point: that page is drawn from the
  compiled run (the graph and the schedule), which only the worker that ran the point holds --
  each worker would draw it, and on Dask send it back with the report, for every point -- while
  the light page is written by the sweep itself from the row and the report it already keeps,
  also for a point that failed (no report) or came from an earlier run. To get a point's
  ``report.html``, run it alone with ``accelsim run`` and the settings its page lists.
  The page is written when its point finishes; one missing at the end (a folder written
  before pages were) is written then.
"""

from __future__ import annotations

import base64
import html
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from accelsim.html_report import TABLE_SCRIPT, page
from accelsim.outputs import write_text
from accelsim.sweeps.grid import Base
from accelsim.sweeps.results import (
    GENERATION_METRICS,
    METRICS,
    format_cell,
    format_setting,
    status_word,
    typed_row,
)

#: the results a reader looks at first: right after the status on the page (then the others, in
#: the order of ``results.csv``)
HEADLINE = ("cycles", "seconds", "utilization", "energy_j", *GENERATION_METRICS)


def _cell(value: Any) -> Any:
    """A JSON-ready cell: numbers stay numbers (NaN and infinities become empty), the rest text."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return None if isinstance(value, float) and not math.isfinite(value) else value
    if hasattr(value, "item"):  # numpy scalars
        return _cell(value.item())
    return None if value is None else str(value)


def grid_keys(columns: Sequence[str]) -> list[str]:
    """The grid keys of a results table with ``columns``: every column but the model, the
    hardware config and the measured ones."""
    measured = {"model", "hw", *METRICS, *GENERATION_METRICS}
    return [c for c in columns if c not in measured]


def page_columns(columns: Sequence[str]) -> list[str]:
    """``columns`` in the page's order: model, hw, the grid keys, status, the headline results,
    the rest."""
    keys = grid_keys(columns)
    first = ["model", "hw", *keys, "status", *(c for c in HEADLINE if c in columns)]
    return [c for c in first if c in columns] + [c for c in columns if c not in first]


def point_page_name(digest: str) -> str:
    """The point page of the point whose hash is ``digest``, relative to the sweep's folder."""
    return f"points/{digest}.html"


def index_data(results: Any) -> dict[str, Any]:
    """What ``index.html`` renders from ``results`` (a ``pandas.DataFrame``, one row per point):
    ``columns`` in the page's order (``headers``: as the table heads them), ``rows`` of raw
    values (what sorting uses), ``text`` (each cell as it reads: ``format_cell``, a status as
    its ``status_word``), ``links`` (each row's point page), ``searched`` (the columns the
    filter searches), ``status`` and ``link`` (the status and model columns)."""
    columns = page_columns([str(c) for c in results.columns])
    table = results[columns] if len(columns) else results
    rows = [[_cell(v) for v in row] for row in table.itertuples(index=False, name=None)]
    status = columns.index("status") if "status" in columns else -1
    text = [[status_word(v) if i == status else format_cell(columns[i], v) for i, v in enumerate(row)]
            for row in rows]
    hashes = results["hash"].tolist() if "hash" in columns else []
    return {
        # a header may break after an underscore (a zero-width space): long key names would
        # otherwise set the width of columns whose values are short
        "columns": columns, "headers": [c.replace("_", "_\u200b") for c in columns], "rows": rows, "text": text,
        "links": [point_page_name(str(h)) for h in hashes],
        "searched": [i for i, c in enumerate(columns) if c in ("model", "status", "hw", "reason")] or [0],
        "status": status, "link": columns.index("model") if hashes and "model" in columns else -1,
    }


def status_counts(results: Any) -> str:
    """One line over the table: how many points, and how many of each status word."""
    words = Counter(status_word(s) for s in (results["status"].tolist() if "status" in results.columns else []))
    order = sorted(words, key=lambda w: (w != "ok", -words[w], w))
    parts = ", ".join(f"{words[w]:,} {w}" for w in order)
    return f"{len(results):,} point{'s' if len(results) != 1 else ''}" + (f": {parts}" if parts else "")


def write_index(results: Any, plots: Sequence[Path], out_dir: str | Path, title: str = "accelsim sweep") -> Path:
    """Write ``out_dir/index.html``: ``results`` (a ``pandas.DataFrame``, one row per point) as a
    table whose rows open ``points/HASH.html`` (``write_point_page``) and the ``plots`` (PNG
    files) inlined; returns its path."""
    data = index_data(results)
    figures = "".join(
        f'<figure><img alt="{html.escape(p.name)}" src="data:image/png;base64,'
        f'{base64.b64encode(p.read_bytes()).decode()}"><figcaption>{html.escape(p.name)}</figcaption></figure>'
        for p in plots if p.suffix == ".png" and p.is_file())
    body = (_BODY.replace("@TITLE@", html.escape(title)).replace("@COUNTS@", html.escape(status_counts(results)))
            .replace("@FIGURES@", figures or "<p>no plots</p>"))
    target = Path(out_dir) / "index.html"
    return write_text(target, page(title, _STYLE, body, data, TABLE_SCRIPT + _SCRIPT))


_STYLE = """body{max-width:1400px}td{white-space:nowrap}#box{max-height:520px;overflow:auto}
td:nth-child(-n+2){text-align:left}.ok,.bad{display:block;text-align:left}.ok{color:#1a7f37}
.bad{color:#b42318;font-weight:600;cursor:help}
.note{color:#666;font-size:12px}
figure{display:inline-block;margin:8px}img{max-width:640px;border:1px solid #ddd}figcaption{font-size:12px;color:#666}
"""

_BODY = """<h1>@TITLE@</h1>
<h2>Results</h2><p id="counts">@COUNTS@</p>
<div class="note">Click a model to open that point's page (its settings, full status and figures); hover a status
for its full message, a value for its raw number. Values are in human units here; results.csv keeps the raw
numbers, and sorting uses them.</div>
<input id="filter" placeholder="filter: model, hardware or status" size="34"><span id="count"></span>
<div id="box"><table id="results"></table></div>
<h2>Plots</h2>@FIGURES@"""

# a cell is an object: valueOf is the raw value, which the table's sort compares; toString is
# what the filter searches (a status's word and its message); html is what it shows
_SCRIPT = r"""
const D = JSON.parse(document.getElementById("data").textContent);
const quote = v => String(v).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");
class Cell {
  constructor(raw, html, search) { this.raw = raw; this.html = html; this.search = search; }
  valueOf() { return this.raw; }
  toString() { return this.search; }
}
function cell(raw, text, i, n) {
  const shown = quote(text), plain = raw === null ? "" : String(raw);
  if (i === D.status)
    return new Cell(raw, `<span class="${raw === "ok" ? "ok" : "bad"}" title="${quote(plain)}">${shown}</span>`,
                    `${text} ${plain}`);
  if (i === D.link) return new Cell(raw, `<a href="${quote(D.links[n])}">${shown}</a>`, plain);
  if (typeof raw === "number" && text !== plain) return new Cell(raw, `<span title="${plain}">${shown}</span>`, plain);
  return new Cell(raw, shown, plain);
}
const rows = D.rows.map((r, n) => r.map((v, i) => cell(v, D.text[n][i], i, n)));
makeTable(document.getElementById("results"), document.getElementById("filter"), document.getElementById("count"),
          D.headers, rows, D.searched, 0, c => c.html, "points");
"""


# --------------------------------------------------------------------------------------------
# one page per point


def _figures(row: Mapping[str, Any], report: Mapping[str, Any] | None) -> list[tuple[str, str, str]]:
    """The point's figures as (label, value, note): its row's results in human units (noted
    from its report when it ran), then what else the report says."""
    names = [n for n in dict.fromkeys((*HEADLINE, *METRICS)) if n not in ("status", "hash")]
    notes, extras = _report_notes(report or {})
    figures = [(n, format_cell(n, row.get(n)), notes.get(n, "")) for n in names if format_cell(n, row.get(n))]
    return figures + [(label, value, "") for label, value in extras]


_BOUND = {"dram": "DRAM", "compute": "compute"}


def _report_notes(report: Mapping[str, Any]) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """What a point's report adds to its row: notes on the row's columns, and figures of its own
    (label, value). Keys a report does not have are left out (a generation's differ)."""
    notes: dict[str, str] = {}
    floor = report.get("floor_cycles") or {}
    if isinstance(floor, Mapping) and floor.get("cycles") and report.get("cycles_over_floor"):
        bound = str(floor.get("bound", "?"))
        notes["cycles"] = (f"{report['cycles_over_floor']:.2f}x the floor {floor['cycles']:,} "
                           f"({_BOUND.get(bound, bound)}-bound)")
    if report.get("clock_hz"):
        notes["seconds"] = f"at {format_cell('clock_hz', report['clock_hz'])}"
    if report.get("peak_macs_per_cycle"):
        notes["utilization"] = f"of {report['peak_macs_per_cycle']:,} MACs per cycle"
    energy = report.get("energy") or {}
    if isinstance(energy, Mapping) and len(energy) > 1:
        notes["energy_j"] = ", ".join(f"{k} {format_cell('energy_j', v)}" for k, v in energy.items() if k != "total")
    if "capacity_bytes" in report:
        notes["peak_bytes"] = (f"capacity {format_cell('capacity_bytes', report['capacity_bytes'])} "
                               f"{report.get('capacity_scope', '')}").rstrip()
    if report.get("min_capacity_op"):
        notes["min_capacity_bytes"] = f"M_R, set by {report['min_capacity_op']}"
    extras: list[tuple[str, str]] = []
    stalls = report.get("stall_cycles") or {}
    if isinstance(stalls, Mapping) and stalls:
        extras.append(("stalls", ", ".join(f"{k} {int(v):,} cycles" for k, v in stalls.items())))
    if "spills" in report:
        extras.append(("spills", f"{report['spills']:,} spills, {report.get('retrieves', 0):,} retrieves"))
    if report.get("scheduler"):
        extras.append(("scheduler", f"{report['scheduler']} ({report.get('scheduler_status', '')})"))
    if report.get("allocator"):
        extras.append(("allocator", str(report["allocator"])))
    extras += [(name, format_cell(name, report[name])) for name in (
        "prefill_tokens", "decode_steps", "dram_bytes_per_token", "kv_cache_bytes", "kv_cache_resident",
        "weights_resident", "memory_check") if name in report]
    return notes, extras


def write_point_page(out_dir: str | Path, row: Mapping[str, Any], keys: Sequence[str],
                     report: Mapping[str, Any] | None = None, base: Base | None = None,
                     source: str | None = None) -> Path:
    """Write ``out_dir/points/HASH.html``, the page of the point whose ``results.csv`` row is
    ``row``: its settings (the model's ``source`` as the sweep was given it, the grid ``keys``,
    and what ``base`` fixes for every point), its status in full, its figures in human units
    and, when it ran, the summary of its ``report`` (``report.json``'s content) and a link to
    ``HASH.json``; returns its path."""
    # one form whether the row comes from its worker or from the table (where pandas made a
    # missing number NaN and the counts beside it floats), so that a page is the same either way
    row = typed_row({k: None if _cell(v) is None else _cell(v) for k, v in row.items()}, keys)
    digest = str(row["hash"])
    status = "" if row.get("status") is None else str(row["status"])
    word = status_word(status)
    described = ", ".join(format_setting(k, row.get(k)) for k in keys)
    title = f"{row.get('model', '')} on {row.get('hw', '')}" + (f": {described}" if described else "")
    model = str(row.get("model", ""))
    settings = [("model", model, "" if source in (None, model) else str(source)),
                ("hw", str(row.get("hw", "")), "hardware config")]
    settings += [(k, format_cell(k, row.get(k)), _raw(k, row.get(k))) for k in keys]
    if base is not None:
        settings += [(k, format_cell(k, v), "every point (--set)") for k, v in base.overrides.items()]
        settings += [(k, format_cell(k, v), "every point") for k, v in base.options.items()]
    settings.append(("hash", digest, "of the effective configuration"))
    json_name = f"{digest}.json"
    ran = report is not None or (Path(out_dir) / "points" / json_name).is_file()
    more = (f'<p>The full report: <a href="{html.escape(json_name)}">{html.escape(json_name)}</a> (every '
            "figure of report.json, every operator). For report.html, with the layout, memory and roofline "
            "pictures, run this point alone with <code>accelsim run</code> and the settings above.</p>") if ran else ""
    body = (f'<p><a href="../index.html">all points</a></p><h1>{html.escape(title)}</h1>'
            f'<p class="{"ok" if word == "ok" else "bad"}" id="word">{html.escape(word)}</p>'
            + ("" if word == "ok" else f'<p id="message">{html.escape(status)}</p>')
            + "<h2>Settings</h2>" + _table("settings", settings)
            + "<h2>Figures</h2>" + (_table("figures", _figures(row, report)) if word == "ok" or report else
                                    "<p>none: the point did not run to the end</p>")
            + more)
    target = Path(out_dir) / point_page_name(digest)
    data = {k: _cell(v) for k, v in row.items()}
    return write_text(target, page(f"accelsim sweep point: {title}", _POINT_STYLE, body, data, ""))


def _raw(key: str, value: Any) -> str:
    """A number as results.csv holds it, when the page shows it otherwise (a setting's note)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or format_cell(key, value) == str(value):
        return ""
    return f"{value!r} in results.csv"


def _table(name: str, rows: Sequence[tuple[str, str, str]]) -> str:
    cells = "".join(f"<tr><th>{html.escape(a)}</th><td>{html.escape(b)}</td><td>{html.escape(c)}</td></tr>"
                    for a, b, c in rows)
    return f'<table id="{name}">{cells}</table>'


_POINT_STYLE = """body{max-width:900px}th{text-align:left;cursor:auto;position:static}td:last-child{text-align:left;
color:#666}#message{white-space:pre-wrap;overflow-wrap:anywhere;background:#fdf2f2;padding:8px;border-radius:4px}
.ok{color:#1a7f37;font-weight:600}.bad{color:#b42318;font-weight:600}
"""


def write_point_pages(out_dir: str | Path, results: Any, base: Base | None = None,
                      sources: Mapping[str, str] | None = None) -> list[Path]:
    """Write the point page of every row of ``results`` that has none yet (``write_point_page``,
    with the report in ``points/HASH.json`` when there is one, and the model's source from
    ``sources``, by hash); returns the pages written."""
    folder = Path(out_dir)
    keys = grid_keys([str(c) for c in results.columns])
    written = []
    for row in results.to_dict("records"):
        digest = str(row.get("hash") or "")
        if not digest or (folder / point_page_name(digest)).exists():
            continue
        saved = folder / "points" / f"{digest}.json"
        report = json.loads(saved.read_text(encoding="utf-8")) if saved.is_file() else None
        written.append(write_point_page(folder, row, keys, report, base, (sources or {}).get(digest)))
    return written

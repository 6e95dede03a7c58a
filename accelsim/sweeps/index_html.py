"""``DIR/index.html``: a sweep's results table and plots on one self-contained page.

Written by every ``accelsim sweep`` with an output folder, next to ``results.csv``: the table
of every point (sortable by any column, filtered by a text box on the model and status
columns, the same table script as ``report.html``) and the sweep's plots, inlined as PNG data,
so the page opens offline and can be mailed as one file.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from accelsim.html_report import TABLE_SCRIPT, page
from accelsim.outputs import write_text


def _cell(value: Any) -> Any:
    """A JSON-ready cell: numbers stay numbers (NaN and infinities become empty), the rest text."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return None if isinstance(value, float) and not math.isfinite(value) else value
    if hasattr(value, "item"):  # numpy scalars
        return _cell(value.item())
    return None if value is None else str(value)


def write_index(results: Any, plots: Sequence[Path], out_dir: str | Path, title: str = "accelsim sweep") -> Path:
    """Write ``out_dir/index.html``: ``results`` (a ``pandas.DataFrame``, one row per point) as a
    table and the ``plots`` (PNG files) inlined; returns its path."""
    columns = [str(c) for c in results.columns]
    rows = [[_cell(v) for v in row] for row in results.itertuples(index=False, name=None)]
    searched = [i for i, c in enumerate(columns) if c in ("model", "status", "hw", "reason")] or [0]
    figures = "".join(
        f'<figure><img alt="{html.escape(p.name)}" src="data:image/png;base64,'
        f'{base64.b64encode(p.read_bytes()).decode()}"><figcaption>{html.escape(p.name)}</figcaption></figure>'
        for p in plots if p.suffix == ".png" and p.is_file())
    body = _BODY.replace("@TITLE@", html.escape(title)).replace("@FIGURES@", figures or "<p>no plots</p>")
    target = Path(out_dir) / "index.html"
    data = {"columns": columns, "rows": rows, "searched": searched}
    return write_text(target, page(title, _STYLE, body, data, TABLE_SCRIPT + _SCRIPT))


_STYLE = """body{max-width:1400px}td{white-space:nowrap}#box{max-height:520px;overflow:auto}
figure{display:inline-block;margin:8px}img{max-width:640px;border:1px solid #ddd}figcaption{font-size:12px;color:#666}
"""

_BODY = """<h1>@TITLE@</h1>
<h2>Results</h2><input id="filter" placeholder="filter: model, hardware or status" size="34"><span id="count"></span>
<div id="box"><table id="results"></table></div>
<h2>Plots</h2>@FIGURES@"""

_SCRIPT = """
const D = JSON.parse(document.getElementById("data").textContent);
makeTable(document.getElementById("results"), document.getElementById("filter"), document.getElementById("count"),
          D.columns, D.rows, D.searched, 0, null, "points");
"""

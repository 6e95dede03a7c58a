"""``report.html``: one self-contained page to explore a run, read from top to bottom.

Written by every ``accelsim run`` next to ``report.json``. Everything is inlined: the run's data
as one JSON object and a small renderer in plain JavaScript that draws SVG, so the file opens
offline, in any browser, with nothing to fetch. No plotting library: Plotly's bundle alone is
3.5 MB and importing it costs more CPU than the whole page should; the views need rectangles,
lines, points, a tooltip and a table, which a few hundred lines of script draw.

The page, in the order it answers "how fast, and where did the time go":

* **summary**: the cycles against the run's floor (``accelsim.sim.results``), utilization and
  stalls in one sentence, then the summary table the command line prints (``summary_rows`` of
  ``accelsim.report``);
* **where the time went**: the run's cycles split by cause (``time_breakdown``: compute, SRAM
  bandwidth, DMA wait for DRAM bandwidth, DMA wait for loads issued late, write-backs after the
  last operator) as a stacked bar and, by operator kind, as a table whose cells add up to the
  total cycles exactly; then the ten operators that stalled longest (``top_stalls``);
* **layout**: one rectangle per residency (schedule step x address), coloured by tensor kind;
  hovering names the tensor, its kind, size, steps, offset and whether it came back from a
  spill; the wheel zooms the step axis, dragging pans; the address axis is scaled to the peak,
  with the capacity line drawn when it is within twice the peak and written in the title
  otherwise;
* **memory**: bytes allocated and the highest address in use over simulated time, with every
  DMA transfer as a bar under the axis (loads and retrieves above, stores and spills below);
* **operators**: a table of every operator, sortable by any column and filtered by a text box:
  cycles, mapped and ideal compute cycles, mapping efficiency, stalls by cause, bytes streamed
  to and from the scratchpad and moved to and from DRAM, energy;
* **roofline**: achieved MACs per cycle against arithmetic intensity, each operator's stall-free
  point hollow and joined to its achieved one, so the distance is what stalls cost; points that
  would hide one another are spread around their centre (``accelsim.svg.spread_points``); the
  operators without MACs, which have no intensity, are named under it; clicking a point shows
  its row in the table;
* the hardware config after overrides.

Every colour has a legend beside its chart. Every byte figure says its scope: the capacity's
(per PE on a target that splits tensors over its PEs, ``scope_note``) or the chip (DRAM traffic,
scratchpad streaming). One word, one meaning: *utilization* is the whole run's MACs over its
cycles at the peak rate, stalls included; an operator's own MACs over its compute cycles at the
peak rate is its *mapping efficiency*. Charts are as wide as the window (drawn again when it
changes), and labels keep a name's layer numbers (``accelsim.svg.short_label``).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelsim.svg import HALF_SPIRAL, short_label
from accelsim.units import byte_axis_top, format_seconds

#: the colour of each kind of residency, in report.html and in layout.svg (``accelsim.report``)
KIND_COLOURS = {
    "weight": "#4c72b0", "input": "#55a868", "activation": "#dd8452", "output": "#c44e52", "retrieved": "#8172b3",
}
#: the colour of each compute mapping of an operator on the roofline, in report.html and roofline.svg
MAPPING_COLOURS = {"systolic-ws": "#4c72b0", "systolic-os": "#55a868", "lanes": "#dd8452", "ideal": "#8172b3",
                   "vector": "#937860", "ideal (no GEMM shape)": "#937860"}
#: the colour of each kind of DMA transfer in report.html's memory view: fills (DRAM to the
#: scratchpad) above the strip's line, drains below; a retrieve has the colour of a retrieved
#: residency and a spill that of the activations it writes back
TRANSFER_COLOURS = {"load": "#55a868", "retrieve": "#8172b3", "store": "#937860", "spill": "#dd8452"}
#: roofline points closer than this many pixels are spread apart (``accelsim.svg.spread_points``)
SPREAD_GAP = 7.0

#: the causes ``time_breakdown`` splits a run's cycles into, in the order they are drawn: key,
#: label, colour and meaning (``accelsim.sim.results`` defines the DMA wait's two parts)
CAUSES = (
    ("compute", "compute", "#4c72b0",
     "the operators' mapped cycles on the compute array or lanes (accelsim.compute)"),
    ("sram_bandwidth", "SRAM bandwidth", "#8172b3",
     "an operator streaming its operands to and from the scratchpad beyond its compute cycles"),
    ("dma_bandwidth", "DMA wait: DRAM bandwidth", "#c44e52",
     "waiting for loads that the DRAM link alone could not have delivered sooner, whenever issued"),
    ("dma_late", "DMA wait: late loads (capacity)", "#dd8452",
     "waiting for loads issued later than bandwidth allowed: no room yet in the scratchpad, the DMA "
     "prefetch depth, a range still being written back, set-up latencies paid one after another"),
    ("drain", "after the last operator", "#937860",
     "write-backs (outputs, spills) still in flight when the last operator ends"),
)

if TYPE_CHECKING:
    from accelsim.results import SimReport
    from accelsim.sim import OpRecord


def scope_note(scope: str) -> str:
    """What follows a byte figure to say its scope (``SimReport.capacity_scope``): the PEs it is per,
    or the chip, with no parentheses inside parentheses.

    >>> "2 MiB" + scope_note("per PE (16 PEs)"), "128 MiB" + scope_note("chip")
    ('2 MiB per PE (16 PEs)', '128 MiB (chip)')
    """
    return f" ({scope})" if "(" not in scope else f" {scope}"


def time_breakdown(report: SimReport) -> dict[str, Any]:
    """The run's cycles split by operator kind and by cause (``CAUSES``), adding up to
    ``report.cycles`` exactly.

    The simulated time is a line of operators, each preceded by its DMA wait: from the end of the
    operator before (cycle 0 for the first) come the wait's bandwidth part, then its late part,
    then the operator's compute cycles and its SRAM stall up to its end; after the last operator,
    the write-backs still in flight until ``report.cycles``. The boundaries are rounded down to
    whole cycles before the parts are taken as differences, so the parts add up to the total
    with no remainder (a part may differ by a cycle from the operator's record). Returns
    ``causes`` (``CAUSES`` as lists), ``kinds``: ``[kind, operators, {cause: cycles}]`` by total
    cycles, most first (the write-backs after the last operator as the kind ``"after the last
    operator"`` with no operators), and ``total``.
    """
    ops = report.sim.ops if report.sim is not None else []
    rows: dict[str, list[Any]] = {}
    edge = 0.0  # where the operator before ended
    for o in ops:
        bandwidth_end = edge + max(min(o.dma_bandwidth_stall_cycles, o.start_cycle - edge), 0.0)
        compute_end = min(o.start_cycle + o.compute_cycles, o.end_cycle)
        marks = [math.floor(c) for c in (edge, bandwidth_end, o.start_cycle, compute_end, o.end_cycle)]
        row = rows.setdefault(o.op, [o.op, 0, dict.fromkeys([c[0] for c in CAUSES], 0)])
        row[1] += 1
        for k, cause in enumerate(("dma_bandwidth", "dma_late", "compute", "sram_bandwidth")):
            row[2][cause] += marks[k + 1] - marks[k]
        edge = o.end_cycle
    kinds = sorted(rows.values(), key=lambda r: (-sum(r[2].values()), r[0]))
    after = report.cycles - math.floor(edge)
    if after:
        kinds.append(["after the last operator", 0, dict.fromkeys([c[0] for c in CAUSES], 0) | {"drain": after}])
    return {"causes": [list(c) for c in CAUSES], "kinds": kinds, "total": report.cycles}


def top_stalls(report: SimReport, n: int = 10) -> list[list[Any]]:
    """The ``n`` operators of the traced graph (``report.ops``) that stalled longest, most first:
    ``[name, kind, DMA wait for bandwidth, DMA wait for late loads, SRAM stall, stall]`` in cycles."""
    rows = []
    for o in report.ops:
        stall, split = o["stall_cycles"], o["dma_wait_split"]
        total = stall["dma_wait"] + stall["sram_bandwidth"]
        if total > 0:
            rows.append([o["name"], o["op"], split["bandwidth"], split["late"], stall["sram_bandwidth"], total])
    return sorted(rows, key=lambda r: (-r[5], r[0]))[:n]


def has_roofline_place(macs: float, start_cycle: float, end_cycle: float, sram_bytes: float) -> bool:
    """Whether an operator has a place on the roofline: MACs, cycles and bytes streamed."""
    return macs > 0 and end_cycle > start_cycle and sram_bytes > 0


def on_roofline(o: OpRecord) -> bool:
    """``has_roofline_place`` for a simulated operator (roofline.svg's points)."""
    return has_roofline_place(o.macs, o.start_cycle, o.end_cycle, o.sram_bytes)


def not_on_roofline(others: Sequence[tuple[str, float]], cycles: float) -> str:
    """The note that names the operators left off the roofline (``on_roofline``), by kind, with their
    share of the cycles; ``others`` holds each one's kind and cycles (its own and its DMA wait).
    Empty when there are none.

    >>> not_on_roofline([("relu", 30), ("add", 10), ("relu", 20)], 200).split(";")[0]
    'not drawn: 3 operators without MACs (relu 2, add 1), 30.0 % of the cycles'
    """
    if not others:
        return ""
    kinds: dict[str, int] = {}
    for kind, _ in others:
        kinds[kind] = kinds.get(kind, 0) + 1
    ranked = sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
    named = ", ".join(f"{kind} {n}" for kind, n in ranked[:4]) + (", ..." if len(ranked) > 4 else "")
    spent = sum(c for _, c in others)
    share = f"{100 * spent / cycles:.1f} %" if cycles else "-"
    return (f"not drawn: {len(others)} operators without MACs ({named}), {share} of the cycles;"
            " with no MACs they have no arithmetic intensity")


def _off_roofline(ops: Sequence[dict[str, Any]]) -> list[tuple[str, float]]:
    """The kind and cycles (with their waits) of the traced operators report.html's roofline leaves out:
    those its script draws no point for (no MACs, no cycles or no bytes streamed)."""
    return [(o["op"], o["compute_cycles"] + o["stall_cycles"]["sram_bandwidth"] + o["stall_cycles"]["dma_wait"])
            for o in ops if not has_roofline_place(o["macs"], o["start_cycle"], o["end_cycle"], o["sram_bytes"])]


def _headline(report: SimReport) -> dict[str, Any]:
    """The numbers of the page's first sentence."""
    return {"cycles": report.cycles, "time": format_seconds(report.seconds), "floor": report.floor_cycles,
            "over_floor": report.cycles_over_floor, "utilization": report.utilization,
            "peak_macs": report.peak_macs_per_cycle, "stalls": sum(report.stall_cycles.values())}


def page_data(report: SimReport, summary: str, rows: Sequence[Sequence[str]] = ()) -> dict[str, Any]:
    """The JSON the page renders: the headline, the summary (``summary``, as
    ``accelsim.report.format_summary`` prints it, and its ``rows`` as a table), the time breakdown,
    residencies, operators, memory timeline, transfers and settings."""
    sched = report.schedule
    tensors = report.graph.graph["tensors"]
    retrieved = {t.residency for t in sched.transfers if t.kind == "retrieve"}
    spilled = {t.residency for t in sched.transfers if t.kind == "spill"}
    residencies = [
        [r.id, r.tensor, "retrieved" if r.id in retrieved else tensors[r.tensor]["kind"], r.start, r.end,
         report.offsets[r.id], r.size, 1 if r.id in spilled else 0]
        for r in sched.residencies
    ]
    ops = [
        [o["name"], o["op"], int(o["start_cycle"]), int(o["end_cycle"]), o["macs"], int(o["compute_cycles"]),
         int(o["ideal_cycles"]), round(o["utilization"], 4), o["stall_cycles"]["dma_wait"],
         o["stall_cycles"]["sram_bandwidth"], o["sram_bytes"], o["dram_bytes"]["read"] + o["dram_bytes"]["write"],
         o["mapping"], o["energy"]["total"], short_label(o["name"], 32)]
        for o in report.ops
    ]
    sim = report.sim
    timeline = [[int(c), int(live), int(high)] for c, live, high in (sim.memory_timeline if sim else [])]
    transfers = [[t.kind, t.tensor, int(t.start_cycle), int(t.end_cycle), t.chip_bytes, t.nbytes]
                 for t in (sim.transfers if sim else [])]
    hw = report.hardware
    axis_top, capacity_in_view = byte_axis_top(report.peak_bytes, report.capacity_bytes)
    return {
        "title": f"{report.model} on {report.hw} ({report.dtype})",
        "headline": _headline(report), "summary": summary, "summary_rows": [list(r) for r in rows],
        "breakdown": time_breakdown(report), "top_stalls": top_stalls(report),
        "capacity": report.capacity_bytes, "scope": report.capacity_scope, "peak": report.peak_bytes,
        "steps": report.n_ops, "cycles": report.cycles, "clock_hz": report.clock_hz,
        "axis_top": axis_top, "capacity_in_view": capacity_in_view,
        "kind_colours": KIND_COLOURS, "mapping_colours": MAPPING_COLOURS, "transfer_colours": TRANSFER_COLOURS,
        "spread_gap": SPREAD_GAP, "half_spiral": HALF_SPIRAL, "residencies": residencies, "ops": ops,
        "timeline": timeline, "transfers": transfers,
        "not_drawn": not_on_roofline(_off_roofline(report.ops), report.cycles),
        "peak_macs": report.peak_macs_per_cycle,
        "sram_bw": hw.sram_bytes_per_cycle_total if hw is not None else 0,
        "dram_bw": hw.dram_bytes_per_cycle if hw is not None else 0,
        "hw_config": hw.to_dict() if hw is not None else {},
        "host_ops": [{"name": h["name"], "kind": h["kind"]} for h in report.host_ops],
    }


def write_html(report: SimReport, path: str | Path, summary: str, rows: Sequence[Sequence[str]] = ()) -> Path:
    """Write ``report.html`` for ``report`` (with the summary table ``summary`` and its ``rows``,
    ``accelsim.report.summary_rows``) to ``path``; returns the path."""
    target = Path(path)
    target.write_text(page(f"accelsim: {report.model} on {report.hw}", _STYLE, _BODY,
                           page_data(report, summary, rows), _SCRIPT), encoding="utf-8")
    return target


#: characters that may not appear raw in a script element's text, each as its JSON ``\\u`` escape:
#: ``<`` (``</script>`` ends the element, and ``<!--`` followed by ``<script`` makes the HTML
#: parser swallow the rest of the page), ``>`` and ``&`` (which mean nothing there but do in
#: other contexts the text may be copied to), and U+2028 / U+2029 (line terminators to older
#: JavaScript parsers; ``json.dumps`` escapes every non-ASCII character already, lone surrogates
#: included, which UTF-8 could not even encode)
_SCRIPT_UNSAFE = str.maketrans({c: f"\\u{ord(c):04x}" for c in "<>&\u2028\u2029"})


def inline_json(data: Any) -> str:
    """``data`` as JSON that is safe inside ``<script>``: every character a name could use to close
    the element or open a comment is a ``\\u`` escape, which ``JSON.parse`` reads back unchanged.

    >>> inline_json({"name": "<!--<script></script>&"})
    '{"name":"\\\\u003c!--\\\\u003cscript\\\\u003e\\\\u003c/script\\\\u003e\\\\u0026"}'
    """
    return json.dumps(data, separators=(",", ":")).translate(_SCRIPT_UNSAFE)


def page(title: str, style: str, body: str, data: Any, script: str) -> str:
    """A self-contained HTML page: ``title`` (escaped here), the shared base style plus ``style``,
    ``body`` (HTML), ``data`` inlined as JSON in ``<script id="data">`` and ``script`` (strict mode),
    which reads it with ``JSON.parse(document.getElementById("data").textContent)``."""
    inline = inline_json(data)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>\n'
            f"<style>\n{_BASE_STYLE}{style}</style></head><body>\n{body}\n"
            f'<script id="data" type="application/json">{inline}</script>\n'
            f'<script>"use strict";\n{script}</script></body></html>\n')


_BASE_STYLE = """body{font:14px system-ui,sans-serif;margin:0 auto;padding:0 16px;color:#222}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;font-size:12px}th,td{padding:2px 6px;border-bottom:1px solid #eee;text-align:right}
th{cursor:pointer;background:#f4f4f4;position:sticky;top:0}
"""

_STYLE = """body{max-width:1400px}svg.chart{background:#fff;border:1px solid #ddd;display:block;width:100%;
box-sizing:border-box}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:4px 8px;border-radius:4px;
font-size:12px;display:none;white-space:pre;z-index:9}#ops{width:100%}#ops td:first-child,#ops td:nth-child(2),
#ops td:nth-child(13){text-align:left}#opsbox{max-height:420px;overflow:auto}pre{background:#f7f7f7;padding:8px;
overflow:auto;font-size:12px}.note{color:#555;font-size:12px;margin:4px 0}th[title]{text-decoration:underline dotted}
#headline{font-size:15px;line-height:1.5}#summary-table td{text-align:left;vertical-align:top}
#summary-table td:first-child{white-space:nowrap;color:#555}#summary-table td:nth-child(2){white-space:nowrap;
font-weight:600}.legend{font-size:12px;margin:6px 0;display:flex;flex-wrap:wrap;gap:4px 14px}
.legend .item{display:inline-flex;align-items:center;gap:5px}.legend svg{flex:none}
#timebar{display:flex;height:26px;border:1px solid #ccc;margin:6px 0}#timebar div{height:100%}
#bykind td:first-child,#topstall td:nth-child(2),#topstall td:nth-child(3),#topstall th:nth-child(2),
#topstall th:nth-child(3),#bykind th:first-child{text-align:left}#bykind td,#topstall td{white-space:nowrap}
#ops th,#ops td{padding:2px 4px}#ops{font-size:11px}
#bykind tr.total td{font-weight:600;border-top:1px solid #999}.minibar{display:flex;height:10px;width:160px;
background:#f4f4f4}.minibar div{height:100%}table.plain th{cursor:default;position:static}
"""

_BODY = """<h1 id="title"></h1><div id="tip"></div>
<p id="headline"></p>
<table id="summary-table" class="plain"></table>
<details><summary class="note">the summary as the command line prints it</summary><pre id="summary"></pre></details>
<h2>Where the time went</h2><div class="note">Every cycle of the run, by cause and by operator kind: before each
operator its wait for DMA (split into what the DRAM link's bandwidth forced and what loads issued late cost), then its
compute cycles and its wait for the scratchpad's bandwidth; after the last operator the write-backs still in flight.
The parts add up to the total cycles.</div>
<div id="legend-time" class="legend"></div><div id="timebar"></div>
<table id="bykind" class="plain"></table>
<h3>The ten operators that stalled longest</h3><table id="topstall" class="plain"></table>
<h2>Layout</h2><div class="note">Each rectangle is one residency: steps (operators in schedule order)
across, addresses up. Hover for the tensor; wheel to zoom the steps, drag to pan, double-click to reset.</div>
<div id="legend-layout" class="legend"></div><svg id="layout" class="chart"></svg>
<h2>Scratchpad use over simulated time</h2><div class="note">Bytes allocated (area), highest address in use
(line); under the axis every DMA transfer: loads and retrieves above the strip's line, stores and spills below.</div>
<div id="legend-memory" class="legend"></div><svg id="memory" class="chart"></svg>
<h2>Operators</h2><input id="filter" placeholder="filter: name or kind" size="30">
<span class="note" id="count"></span><div id="opsbox"><table id="ops"></table></div>
<div class="note" id="ops-notes"></div>
<h2>Roofline</h2><div class="note">Filled: achieved MACs per cycle, over the operator's run and its wait for
DMA before it; hollow: the same operator without stalls; the line between them is what the stalls cost. Points
that would hide one another (the same layer repeated) are spread around their centre. Click a point for its row.</div>
<div id="legend-roofline" class="legend"></div><svg id="roofline" class="chart"></svg>
<div class="note" id="not-drawn"></div>
<h2>Hardware config (after overrides)</h2><pre id="hw"></pre>"""

#: a sortable, filterable HTML table: ``makeTable(table, filter, count, columns, rows, searched,
#: sortColumn, format, noun, tips)``; ``tips`` (optional) holds a tooltip per column header.
#: Shared by ``report.html`` and the sweep's ``index.html``
TABLE_SCRIPT = r"""
function makeTable(t, filter, count, cols, rows, searched, key, fmt, noun, tips) {
  let asc = true;
  const esc = v => String(v).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");
  const show = (v, i) => { const f = fmt ? fmt(v, i) : null;
    return f !== null ? f : typeof v === "number" ? (Number.isInteger(v) ? v.toLocaleString("en-US")
      : v.toPrecision(4)) : esc(v === null || v === undefined ? "" : v); };
  function render() {
    const f = filter.value.toLowerCase();
    const shown = rows.filter(r => !f || searched.some(i => String(r[i]).toLowerCase().includes(f)));
    shown.sort((a, b) => (a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0) * (asc ? 1 : -1));
    const head = "<tr>" + cols.map((c, i) => `<th data-i="${i}"${tips && tips[i] ? ` title="${esc(tips[i])}"` : ""}>` +
      `${esc(c)}${i === key ? (asc ? " ▲" : " ▼") : ""}</th>`).join("") + "</tr>";
    t.innerHTML = head + shown.map(r => "<tr>" + r.map((v, i) => `<td>${show(v, i)}</td>`).join("") + "</tr>").join("");
    count.textContent = ` ${shown.length} of ${rows.length} ${noun}`;
    t.querySelectorAll("th").forEach(th => th.addEventListener("click", () => {
      const i = +th.dataset.i; asc = i === key ? !asc : true; key = i; render();
    }));
  }
  filter.addEventListener("input", render);
  render();
}
"""

_SCRIPT = TABLE_SCRIPT + r"""
const D = JSON.parse(document.getElementById("data").textContent);
const NS = "http://www.w3.org/2000/svg";
const tip = document.getElementById("tip");
const KIND = D.kind_colours;
// the scope of a byte figure, as accelsim.html_report.scope_note: " per PE (16 PEs)" or " (chip)"
const SCOPE = D.scope.includes("(") ? " " + D.scope : " (" + D.scope + ")";
function el(name, attrs, parent) {
  const e = document.createElementNS(NS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function html(name, attrs, parent, text) {
  const e = document.createElement(name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
function bytes(b) {
  // as accelsim.units.format_bytes: whole units without decimals, else two
  const u = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0, s = 1;
  while (Math.abs(b) >= s * 1024 && i < 4) { s *= 1024; i++; }
  return (i === 0 ? Math.round(b) : b % s === 0 ? b / s : (b / s).toFixed(2)) + " " + u[i];
}
function num(x) { return Math.round(x).toLocaleString("en-US"); }
function pct(part, whole) { return whole ? (100 * part / whole).toFixed(1) + " %" : "-"; }
function hover(node, text) {
  node.addEventListener("mousemove", ev => {
    tip.textContent = text(); tip.style.display = "block";
    const right = ev.clientX + 12 + tip.offsetWidth > window.innerWidth;
    tip.style.left = (right ? Math.max(ev.clientX - 12 - tip.offsetWidth, 0) : ev.clientX + 12) + "px";
    tip.style.top = (ev.clientY + 12) + "px";
  });
  node.addEventListener("mouseleave", () => { tip.style.display = "none"; });
}
function axes(svg, m, w, h, xl, yl) {
  el("line", {x1: m.l, y1: h - m.b, x2: w - m.r, y2: h - m.b, stroke: "#333"}, svg);
  el("line", {x1: m.l, y1: m.t, x2: m.l, y2: h - m.b, stroke: "#333"}, svg);
  el("text", {x: (m.l + w - m.r) / 2, y: h - 6, "text-anchor": "middle", "font-size": 12}, svg).textContent = xl;
  const t = el("text", {x: 14, y: (m.t + h - m.b) / 2, "text-anchor": "middle", "font-size": 12,
                        transform: `rotate(-90 14 ${(m.t + h - m.b) / 2})`}, svg);
  t.textContent = yl;
}
function niceStep(span, n) {
  // a round step (1, 2 or 5 times a power of ten) giving about n intervals over span
  const raw = span / Math.max(n, 1), power = 10 ** Math.floor(Math.log10(raw)), f = raw / power;
  return power * (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10);
}
function ticks(parent, lo, hi, n, pos, label, baseline, least = 0) {
  // labels at round values between lo and hi; baseline: the y of the labels under a horizontal
  // axis, null for labels left of the y axis
  const step = Math.max(niceStep(hi - lo, n), least);
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + 1e-9 * step; v += step) {
    place(parent, pos(v), label(Math.abs(v) < 1e-9 * step ? 0 : v), baseline);
  }
}
function byteTicks(parent, hi, n, pos, baseline) {
  // labels at round numbers of the unit the top of the axis is shown in: 0, 40 KiB, 80 KiB, ...
  let unit = 1, i = 0;
  while (hi / unit >= 1024 && i < 3) { unit *= 1024; i++; }
  const name = ["B", "KiB", "MiB", "GiB"][i], step = niceStep(hi / unit, n);
  for (let v = 0; v <= hi / unit + 1e-9; v += step) {
    place(parent, pos(v * unit), `${+v.toFixed(6)} ${name}`, baseline);
  }
}
function logTicks(parent, lo, hi, pos, baseline) {
  // lo, hi: log10 of the axis ends; labels at 1, 2, 5 times the powers of ten inside (powers only on long axes)
  const mult = hi - lo > 4 ? [1] : [1, 2, 5];
  for (let e = Math.floor(lo); e <= Math.ceil(hi); e++) {
    for (const k of mult) {
      const v = k * 10 ** e;
      if (Math.log10(v) >= lo && Math.log10(v) <= hi) place(parent, pos(v), v >= 1e5 || v < 1e-2 ?
        v.toExponential(0) : v.toLocaleString("en-US"), baseline);
    }
  }
}
function place(parent, p, text, baseline) {
  const a = baseline !== null ? {x: p, y: baseline, "text-anchor": "middle"} : {x: 78, y: p + 4, "text-anchor": "end"};
  el("text", Object.assign(a, {"font-size": 10, fill: "#555"}), parent).textContent = text;
}
function legend(id, entries) {
  // one swatch and label per colour a chart uses: [label, colour, kind, tooltip]; kinds: box, area,
  // line, dash, dot, ring, drop (a ring above a dot, joined), spread (three dots around a centre)
  const box = document.getElementById(id);
  box.textContent = "";
  for (const [label, colour, kind, about] of entries) {
    const item = html("span", {class: "item"}, box);
    if (about) item.title = about;
    const sw = el("svg", {width: 22, height: 14, "data-colour": colour, "data-kind": kind}, item);
    if (kind === "box" || kind === "area") {
      el("rect", {x: 2, y: 2, width: 18, height: 10, fill: colour, opacity: kind === "area" ? 0.5 : 0.85}, sw);
    } else if (kind === "dot") {
      el("circle", {cx: 11, cy: 7, r: 4, fill: colour, opacity: 0.8}, sw);
    } else if (kind === "ring") {
      el("circle", {cx: 11, cy: 7, r: 3.5, fill: "white", stroke: colour, "stroke-width": 1.2}, sw);
    } else if (kind === "drop") {
      el("line", {x1: 11, x2: 11, y1: 3, y2: 11, stroke: colour}, sw);
      el("circle", {cx: 11, cy: 3, r: 2.5, fill: "white", stroke: colour}, sw);
      el("circle", {cx: 11, cy: 11, r: 2.5, fill: colour}, sw);
    } else if (kind === "spread") {
      for (const [dx, dy] of [[-4.5, 2.5], [4.5, 2.5], [0, -3.5]]) {
        el("circle", {cx: 11 + dx, cy: 7 + dy, r: 2.4, fill: colour}, sw);
      }
    } else {
      el("line", {x1: 2, x2: 20, y1: 7, y2: 7, stroke: colour, "stroke-width": 1.8,
                  "stroke-dasharray": kind === "dash" ? "5,3" : kind === "dots" ? "2,3" : ""}, sw);
    }
    item.appendChild(document.createTextNode(label));
  }
}
// charts are as wide as the page: each is drawn at its box's width, and again when the window changes
const redraws = [];
function chart(id, height, draw) {
  const svg = document.getElementById(id);
  function render() {
    // the svg is as wide as its box (CSS width 100 %); its inside, the border left out, is drawn 1:1
    svg.setAttribute("height", height);
    const W = Math.max(svg.clientWidth, 360);
    svg.textContent = "";
    svg.setAttribute("viewBox", `0 0 ${W} ${height}`);
    draw(svg, W, height);
  }
  redraws.push(render);
  render();
  return svg;
}
let resizing = false;
window.addEventListener("resize", () => {
  if (resizing) return;
  resizing = true;
  requestAnimationFrame(() => { resizing = false; redraws.forEach(r => r()); });
});
function showOperator(name) {
  const f = document.getElementById("filter");
  f.value = name; f.dispatchEvent(new Event("input"));
  document.getElementById("ops").scrollIntoView({block: "start"});
}

document.getElementById("title").textContent = "accelsim: " + D.title;
document.getElementById("summary").textContent = D.summary;
document.getElementById("hw").textContent = JSON.stringify(D.hw_config, null, 1);

// ---- the headline and the summary table
(function summary() {
  const h = D.headline, p = document.getElementById("headline"), f = h.floor;
  const bold = text => html("b", {}, p, text), say = text => p.appendChild(document.createTextNode(text));
  bold(`${num(h.cycles)} cycles`);
  say(` (${h.time} simulated at ${D.clock_hz / 1e6} MHz)`);
  if (f && f.cycles) {
    const other = f.bound === "compute" ? "dram" : "compute", names = {compute: "compute", dram: "DRAM"};
    say(": "); bold(`${h.over_floor.toFixed(2)}× the floor`);
    say(` of ${num(f.cycles)} cycles, set by ${names[f.bound]} (${names[other]} alone: ${num(f[other])}). `);
  } else {
    say(": no floor, nothing ran. ");
  }
  say("Utilization "); bold((100 * h.utilization).toFixed(1) + " %");
  say(` of ${num(h.peak_macs)} MACs per cycle over the whole run, stalls included; stalls ${num(h.stalls)} cycles` +
      ` (${pct(h.stalls, h.cycles)}).`);
  const t = document.getElementById("summary-table");
  for (const [label, value, note] of D.summary_rows) {
    const r = html("tr", {}, t);
    html("td", {}, r, label); html("td", {}, r, value); html("td", {}, r, note);
  }
})();

// ---- where the time went: by cause, by operator kind, the operators that stalled longest
(function breakdown() {
  const B = D.breakdown, total = B.total;
  const sums = {};
  for (const [key] of B.causes) sums[key] = B.kinds.reduce((s, k) => s + k[2][key], 0);
  const shown = B.causes.filter(([key]) => key === "compute" || sums[key] > 0);
  legend("legend-time", shown.map(([key, label, colour, about]) =>
    [`${label}: ${num(sums[key])} cycles (${pct(sums[key], total)})`, colour, "box", about]));
  const bar = document.getElementById("timebar");
  for (const [key, label, colour, about] of shown) {
    if (!sums[key]) continue;
    const d = html("div", {"data-cause": key, "data-cycles": sums[key]}, bar);
    d.style.width = (100 * sums[key] / Math.max(total, 1)) + "%"; d.style.background = colour;
    hover(d, () => `${label}: ${num(sums[key])} cycles, ${pct(sums[key], total)} of the run\n${about}`);
  }
  const t = document.getElementById("bykind"), head = html("tr", {}, t);
  html("th", {}, head, "operator kind"); html("th", {}, head, "operators");
  for (const [, label, , about] of shown) html("th", {title: about}, head, label);
  for (const name of ["total", "share", ""]) html("th", {}, head, name);
  const biggest = Math.max(...B.kinds.map(k => shown.reduce((s, [key]) => s + k[2][key], 0)), 1);
  function row(name, count, parts, cls) {
    const r = html("tr", {class: cls}, t), sum = shown.reduce((s, [key]) => s + parts[key], 0);
    html("td", {}, r, name); html("td", {}, r, count === null ? "" : num(count));
    for (const [key] of shown) html("td", {"data-cause": key, "data-cycles": parts[key]}, r, num(parts[key]));
    html("td", {class: "sum", "data-cycles": sum}, r, num(sum));
    html("td", {}, r, pct(sum, total));
    const mini = html("div", {class: "minibar"}, html("td", {}, r));
    for (const [key, , colour] of shown) {
      const d = html("div", {}, mini); d.style.width = (100 * parts[key] / biggest) + "%"; d.style.background = colour;
    }
  }
  for (const [kind, count, parts] of B.kinds) row(kind, count || null, parts, "kind");
  row("all", B.kinds.reduce((s, k) => s + k[1], 0), sums, "total");
  const s = document.getElementById("topstall"), sh = html("tr", {}, s);
  for (const name of ["#", "operator", "kind", "DMA wait: DRAM bandwidth", "DMA wait: late loads (capacity)",
                      "SRAM bandwidth", "stall", "share of the run"]) html("th", {}, sh, name);
  D.top_stalls.forEach(([name, kind, bw, late, sram, stall], i) => {
    const r = html("tr", {}, s);
    html("td", {}, r, String(i + 1));
    const a = html("a", {href: "#ops"}, html("td", {}, r), name);
    a.addEventListener("click", ev => { ev.preventDefault(); showOperator(name); });
    html("td", {}, r, kind);
    for (const v of [bw, late, sram, stall]) html("td", {}, r, num(v));
    html("td", {}, r, pct(stall, total));
  });
  if (!D.top_stalls.length) html("td", {colspan: 8}, html("tr", {}, s), "no operator stalled");
})();

// ---- layout
(function layout() {
  const H = 460, m = {l: 84, r: 20, t: 30, b: 50}, showCap = D.capacity_in_view, yMax = D.axis_top;
  const present = new Set(D.residencies.map(r => r[2]));
  const about = {weight: "loaded from DRAM", input: "loaded from DRAM", activation: "made on chip",
                 output: "stored to DRAM at the end", retrieved: "read back from DRAM after a spill"};
  legend("legend-layout", Object.entries(KIND).filter(([k]) => present.has(k))
    .map(([k, c]) => [`${k} (${about[k]})`, c, "box"])
    .concat([[`peak address ${bytes(D.peak)}${SCOPE}`, "#444", "dots"]])
    .concat(showCap ? [[`capacity ${bytes(D.capacity)}${SCOPE}`, "red", "dash"]] : []));
  let x0 = 0, x1 = Math.max(D.steps, 1), W = 0, draw = () => {};
  const svg = chart("layout", H, (svg, width) => {
    W = width;
    const title = el("text", {x: m.l, y: 18, "font-size": 13}, svg);
    title.textContent = `${D.residencies.length} residencies; peak ${bytes(D.peak)} of ${bytes(D.capacity)}${SCOPE}` +
      (showCap ? "" : "; the capacity line is off the top of the axis");
    axes(svg, m, W, H, "step (operator in schedule order)", "address" + SCOPE);
    const y = v => H - m.b - (H - m.b - m.t) * v / yMax;
    byteTicks(svg, yMax, 5, y, null);
    const clip = el("clipPath", {id: "clipL"}, el("defs", {}, svg));
    el("rect", {x: m.l, y: m.t, width: W - m.l - m.r, height: H - m.t - m.b}, clip);
    const g = el("g", {"clip-path": "url(#clipL)", id: "residencies"}, svg);
    const xticks = el("g", {}, svg);
    const rects = D.residencies.map(r => {
      const [id, tensor, kind, start, end, offset, size, spilled] = r;
      const e = el("rect", {fill: KIND[kind] || "#999", stroke: "#222", "stroke-width": 0.3, opacity: 0.85,
                            "data-tensor": tensor}, g);
      hover(e, () => `${tensor}${id !== tensor ? " (" + id + ")" : ""}\nkind: ${kind}\nsize: ${bytes(size)} ` +
        `(${num(size)} B)${SCOPE}\nsteps: ${start} to ${end} (lifetime ${end - start})\n` +
        `offset: ${num(offset)} B${SCOPE}` +
        (spilled ? "\nspilled to DRAM when it ended" : "") + (kind === "retrieved" ? "\nretrieved from DRAM" : ""));
      return [e, start, end, offset, size];
    });
    if (showCap) {
      el("line", {x1: m.l, x2: W - m.r, y1: y(D.capacity), y2: y(D.capacity), stroke: "red",
                  "stroke-dasharray": "6,4"}, svg);
      el("text", {x: W - m.r - 4, y: y(D.capacity) - 4, "text-anchor": "end", fill: "red", "font-size": 11}, svg)
        .textContent = "capacity " + bytes(D.capacity) + SCOPE;
    }
    el("line", {x1: m.l, x2: W - m.r, y1: y(D.peak), y2: y(D.peak), stroke: "#444", "stroke-dasharray": "2,3"}, svg);
    draw = () => {
      const x = v => m.l + (W - m.l - m.r) * (v - x0) / (x1 - x0);
      for (const [e, s, t, o, z] of rects) {
        e.setAttribute("x", x(s)); e.setAttribute("width", Math.max(x(t) - x(s), 0.5));
        e.setAttribute("y", y(o + z)); e.setAttribute("height", Math.max(y(o) - y(o + z), 0.5));
      }
      xticks.textContent = "";
      ticks(xticks, x0, x1, Math.max(Math.round((W - m.l - m.r) / 130), 2), x, v => num(v), H - m.b + 16, 1);
    };
    draw();
  });
  svg.addEventListener("wheel", ev => {
    ev.preventDefault();
    const at = x0 + (x1 - x0) * (ev.offsetX - m.l) / (W - m.l - m.r), k = ev.deltaY < 0 ? 0.8 : 1.25;
    x0 = Math.max(0, at - (at - x0) * k); x1 = Math.min(Math.max(D.steps, 1), at + (x1 - at) * k);
    if (x1 - x0 < 2) x1 = x0 + 2;
    draw();
  });
  let drag = null;
  svg.addEventListener("mousedown", ev => { drag = [ev.offsetX, x0, x1]; });
  window.addEventListener("mouseup", () => { drag = null; });
  svg.addEventListener("mousemove", ev => {
    if (!drag) return;
    const d = (ev.offsetX - drag[0]) / (W - m.l - m.r) * (drag[2] - drag[1]);
    x0 = drag[1] - d; x1 = drag[2] - d; draw();
  });
  svg.addEventListener("dblclick", () => { x0 = 0; x1 = Math.max(D.steps, 1); draw(); });
})();

// ---- memory over time, with DMA transfers
(function memory() {
  const H = 360, m = {l: 84, r: 20, t: 20, b: 90}, colours = D.transfer_colours;
  const present = new Set(D.transfers.map(t => t[0]));
  const about = {load: "DRAM to scratchpad, above the strip's line", retrieve: "a spilled tensor read back, above",
                 store: "an output written to DRAM, below the line", spill: "an evicted tensor written to DRAM, below"};
  legend("legend-memory", [["bytes allocated" + SCOPE, "#4c72b0", "area"], ["highest address in use", "#333", "line"]]
    .concat(D.capacity_in_view ? [[`capacity ${bytes(D.capacity)}${SCOPE}`, "red", "dash"]] : [])
    .concat(Object.entries(colours).filter(([k]) => present.has(k)).map(([k, c]) => [`${k} (${about[k]})`, c, "box"])));
  chart("memory", H, (svg, W) => {
    const end = Math.max(D.cycles, 1), yMax = D.axis_top;
    const x = c => m.l + (W - m.l - m.r) * c / end, y = v => H - m.b - (H - m.b - m.t) * v / yMax;
    axes(svg, m, W, H, "simulated time (cycles at " + (D.clock_hz / 1e6) + " MHz)", "bytes" + SCOPE);
    byteTicks(svg, yMax, 4, y, null);
    ticks(svg, 0, end, Math.max(Math.round((W - m.l - m.r) / 130), 2), x, v => num(v), H - m.b + 16, 1);
    const pts = D.timeline.concat([[end, 0, 0]]);
    let area = `M ${x(0)} ${y(0)}`, line = "";
    for (let i = 0; i < pts.length; i++) {
      const [c, live, high] = pts[i], next = i + 1 < pts.length ? pts[i + 1][0] : end;
      area += ` L ${x(c)} ${y(live)} L ${x(next)} ${y(live)}`;
      line += (i ? " L " : "M ") + `${x(c)} ${y(high)} L ${x(next)} ${y(high)}`;
    }
    el("path", {d: area + ` L ${x(end)} ${y(0)} Z`, fill: "#4c72b0", opacity: 0.5}, svg);
    el("path", {d: line, fill: "none", stroke: "#333", "stroke-width": 1.2}, svg);
    if (D.capacity_in_view) {
      el("line", {x1: m.l, x2: W - m.r, y1: y(D.capacity), y2: y(D.capacity), stroke: "red", "stroke-dasharray": "6,4"},
         svg);
    }
    const base = H - m.b + 42;
    el("line", {x1: m.l, x2: W - m.r, y1: base, y2: base, stroke: "#aaa"}, svg);
    const g = el("g", {id: "transfers"}, svg);
    for (const [kind, tensor, s, e, chip, pe] of D.transfers) {
      const up = kind === "load" || kind === "retrieve";
      const r = el("rect", {x: x(s), width: Math.max(x(e) - x(s), 0.6), y: up ? base - 14 : base, height: 14,
                            fill: colours[kind] || "#999", opacity: 0.7}, g);
      hover(r, () => `${kind} ${tensor}\n${bytes(chip)} chip total` + (chip !== pe ? `, ${bytes(pe)}${SCOPE}` : "") +
        `\ncycles ${num(s)} to ${num(e)}`);
    }
  });
})();

// ---- operators table
(function table() {
  const cols = ["name", "kind", "start", "end", "MACs", "compute cycles", "ideal cycles", "mapping efficiency",
                "DMA wait", "SRAM stall", "SRAM bytes (chip)", "DRAM bytes (chip)", "mapping", "energy (uJ)"];
  const tips = [];
  tips[5] = "cycles of the operator's mapping on the compute array or lanes, stalls left out";
  tips[6] = "MACs / peak MACs per cycle: the operator on a perfectly filled array";
  tips[7] = "MACs / (compute cycles x peak MACs per cycle): how well the operator's shape fills the array, " +
    "stalls left out; not the summary's utilization, which is the whole run's with its stalls";
  tips[8] = "cycles between the previous operator's end and this one's start, waiting for DMA";
  tips[9] = "cycles beyond the compute cycles spent streaming operands to and from the scratchpad";
  tips[10] = "bytes streamed between the scratchpad and the compute, all PEs together";
  tips[11] = "bytes the DMA transfers of the operator's step move to and from DRAM, all PEs together";
  const rows = D.ops.map(o => o.slice(0, 13).concat([o[13] * 1e6]));
  const fmt = (v, i) => i === 7 ? (100 * v).toFixed(1) + " %" : i === 13 ? v.toFixed(3) : null;
  makeTable(document.getElementById("ops"), document.getElementById("filter"), document.getElementById("count"),
            cols, rows, [0, 1], 2, fmt, "operators", tips);
  const notes = document.getElementById("ops-notes");
  for (const text of [
    `mapping efficiency: the operator's MACs / (its compute cycles × ${num(D.peak_macs)} MACs per cycle): how ` +
    "well its shape fills the compute array, stalls left out (0 % without MACs). The summary's utilization is the " +
    "whole run's MACs / (all its cycles × the peak): stalls included.",
    "SRAM bytes: streamed between the scratchpad and the compute; DRAM bytes: moved by the DMA transfers of the " +
    "operator's step (the loads it needs, the write-backs issued just before it; the last operator also takes those " +
    "after it). Both are chip totals, all PEs together; the scratchpad's sizes and addresses above are" + SCOPE + "."
  ]) html("div", {}, notes, text);
})();

// ---- roofline with stalls
function spread(points, gap) {
  // points closer than gap / 2 to one another (in chains) spread on the lower half of a circle under
  // their highest point, gap apart; a group spread onto another point joins it: as accelsim.svg.spread_points
  const near = gap / 2, parent = points.map((_, i) => i), key = (a, b) => a + "," + b;
  const root = i => { while (parent[i] !== i) { parent[i] = parent[parent[i]]; i = parent[i]; } return i; };
  const join = at => {
    const cell = new Map();
    let joined = false;
    at.forEach(([px, py], i) => {
      const k = key(Math.floor(px / near), Math.floor(py / near));
      if (!cell.has(k)) cell.set(k, []);
      cell.get(k).push(i);
    });
    for (const [k, members] of cell) {
      const [cx, cy] = k.split(",").map(Number);
      for (let dx = -1; dx <= 1; dx++) for (let dy = -1; dy <= 1; dy++) {
        for (const j of cell.get(key(cx + dx, cy + dy)) || []) for (const i of members) {
          const close = Math.hypot(at[i][0] - at[j][0], at[i][1] - at[j][1]) < near;
          if (i < j && root(i) !== root(j) && close) { parent[root(i)] = root(j); joined = true; }
        }
      }
    }
    return joined;
  };
  const golden = Math.PI * (3 - Math.sqrt(5));
  const place = () => {
    const groups = new Map(), out = points.map(p => p.slice());
    points.forEach((_, i) => { const r = root(i); if (!groups.has(r)) groups.set(r, []); groups.get(r).push(i); });
    for (const members of groups.values()) {
      const n = members.length;
      if (n === 1) continue;
      members.sort((a, b) => points[a][0] - points[b][0] || points[a][1] - points[b][1] || a - b);
      const mx = members.reduce((s, i) => s + points[i][0], 0) / n;
      const top = Math.min(...members.map(i => points[i][1]));  // the highest point: none is drawn above it
      members.forEach((i, k) => {
        const [r, a] = n <= 6 ? [gap / (2 * Math.sin(Math.PI / (2 * (n - 1)))), Math.PI - Math.PI * k / (n - 1)]
          : [D.half_spiral * gap * Math.sqrt(k + 0.5), Math.PI - (k * golden) % Math.PI];
        out[i] = [mx + r * Math.cos(a), top + r * Math.sin(a)];
      });
    }
    return out;
  };
  join(points);
  let out = points.map(p => p.slice());
  for (let round = 0; round < points.length; round++) {
    out = place();
    if (!join(out)) break;
  }
  return out;
}
(function roofline() {
  const H = 520, m = {l: 84, r: 20, t: 20, b: 50}, colours = D.mapping_colours, pts = [];
  for (const o of D.ops) {
    const [name, kind, s, e, macs, compute, ideal, eff, dma, sram, sbytes, dram, mapping, energy, label] = o;
    if (macs <= 0 || e <= s || sbytes <= 0) continue;
    // achieved: over the operator's cycles with its stalls (its DMA waits and SRAM streaming); stall-free: over
    // its compute cycles
    pts.push({name, kind, mapping, label, ai: macs / sbytes, achieved: macs / Math.max(compute + sram + dma, 1),
              free: macs / Math.max(compute, 1), stalls: dma + sram});
  }
  const mappings = [...new Set(pts.map(p => p.mapping))].sort();
  const stalled = pts.some(p => p.stalls > 0 && p.free > p.achieved);
  function entries(spreadAny) {
    const count = k => pts.filter(p => p.mapping === k).length;
    return [[`compute roof ${num(D.peak_macs)} MACs/cycle, scratchpad roof ${num(D.sram_bw)} B/cycle (chip)`, "#222",
             "line"], [`DRAM roof ${D.dram_bw.toFixed(1)} B/cycle (chip): operands from DRAM`, "red", "dash"]]
      .concat(mappings.map(k => [`${k} (${count(k)} operators): achieved, stalls included`, colours[k] || "#333",
                                 "dot"]))
      .concat(stalled ? [["stall-free: MACs / compute cycles", "#555", "ring"],
                         ["ring down to dot: the rate lost to stalls", "#555", "drop"]] : [])
      .concat(spreadAny ? [["operators at the same point (the same layer repeated): spread around it, a thin line "
                            + "to where they are", "#555", "spread"]] : []);
  }
  document.getElementById("not-drawn").textContent = D.not_drawn;
  chart("roofline", H, (svg, W) => {
    const all = pts.flatMap(p => [p.achieved, p.free]).concat([D.peak_macs]);
    const xs = pts.map(p => p.ai).concat([D.peak_macs / Math.max(D.dram_bw, 1e-9)]);
    const lx0 = Math.log10(Math.min(...xs, 1) / 2), lx1 = Math.log10(Math.max(...xs) * 2);
    const ly0 = Math.log10(Math.max(Math.min(...all) / 2, 1e-6)), ly1 = Math.log10(Math.max(...all) * 2);
    const x = v => m.l + (W - m.l - m.r) * (Math.log10(v) - lx0) / (lx1 - lx0);
    const y = v => H - m.b - (H - m.b - m.t) * (Math.log10(v) - ly0) / (ly1 - ly0);
    axes(svg, m, W, H, "arithmetic intensity (MACs per byte streamed to and from the scratchpad, chip; log)",
         "MACs per cycle (chip; log)");
    logTicks(svg, ly0, ly1, y, null);
    logTicks(svg, lx0, lx1, x, H - m.b + 16);
    for (const [bw, colour] of [[D.sram_bw, "#222"], [D.dram_bw, "red"]]) {
      if (!(bw > 0)) continue;
      const a = 10 ** lx0, b = 10 ** lx1, knee = D.peak_macs / bw;
      const corners = [a, Math.min(Math.max(knee, a), b), b];
      const roof = c => Math.max(Math.min(D.peak_macs, bw * c), 10 ** ly0);
      const d = corners.map((c, i) => (i ? "L" : "M") + x(c) + " " + y(roof(c)));
      el("path", {class: "roof", d: d.join(" "), fill: "none", stroke: colour,
                  "stroke-dasharray": colour === "red" ? "6,4" : ""}, svg);
    }
    const exact = pts.map(p => [x(p.ai), y(p.achieved)]), at = spread(exact, D.spread_gap);
    legend("legend-roofline", entries(at.some((q, i) => q[0] !== exact[i][0] || q[1] !== exact[i][1])));
    const legs = el("g", {id: "legs"}, svg), g = el("g", {id: "points"}, svg), taken = [];
    pts.forEach((p, i) => {
      if (at[i][0] !== exact[i][0] || at[i][1] !== exact[i][1]) {
        el("line", {x1: exact[i][0], y1: exact[i][1], x2: at[i][0], y2: at[i][1], stroke: "#999", "stroke-width": 0.6},
           legs);
      }
      const [px, py] = at[i], top = y(p.free) + py - exact[i][1], colour = colours[p.mapping] || "#333";
      if (p.free > p.achieved) {
        el("line", {x1: px, x2: px, y1: top, y2: py, stroke: colour, opacity: 0.6}, g);
        el("circle", {cx: px, cy: top, r: 2.5, fill: "white", stroke: colour}, g);
      }
      const c = el("circle", {cx: px, cy: py, r: 3, fill: colour, opacity: 0.85, "data-name": p.name,
                              class: "achieved", style: "cursor:pointer"}, g);
      hover(c, () => `${p.name} (${p.kind}, ${p.mapping})\n${p.ai.toPrecision(3)} MACs per byte\n` +
        `${p.achieved.toFixed(1)} MACs/cycle achieved\n${p.free.toFixed(1)} without its ${num(p.stalls)} stall cycles` +
        (px !== exact[i][0] || py !== exact[i][1] ? "\n(drawn apart from the operators at the same point: the thin " +
         "line leads to it)" : ""));
      c.addEventListener("click", () => showOperator(p.name));
      taken.push([px - 4, Math.min(top, py) - 4, px + 4, py + 4]);
    });
    // the operators that stalled longest, named (labels that fit, clear of one another and of the points)
    const labels = el("g", {id: "stall-labels"}, svg);
    const worst = pts.map((p, i) => i).filter(i => pts[i].stalls > 0)
      .sort((a, b) => pts[b].stalls - pts[a].stalls || (pts[a].name < pts[b].name ? -1 : 1)).slice(0, 5);
    for (const i of worst) {
      const [px, py] = at[i], text = `${pts[i].label} (${num(pts[i].stalls)} stall cycles)`;
      const t = el("text", {"font-size": 10, stroke: "white", "stroke-width": 3, "paint-order": "stroke"}, labels);
      t.textContent = text;
      let fits = false;
      for (const dy of [0, 14, -14, 28, -28, 42]) for (const side of [1, -1]) {
        if (fits) break;
        t.setAttribute("x", px + side * 8); t.setAttribute("y", py + 3.5 + dy);
        t.setAttribute("text-anchor", side > 0 ? "start" : "end");
        const b = t.getBBox(), box = [b.x, b.y, b.x + b.width, b.y + b.height];
        fits = box[0] >= m.l && box[2] <= W - m.r && box[1] >= m.t && box[3] <= H - m.b &&
          !taken.some(o => box[0] < o[2] && o[0] < box[2] && box[1] < o[3] && o[1] < box[3]);
        if (fits) taken.push(box);
      }
      if (!fits) t.remove();
    }
  });
})();
"""

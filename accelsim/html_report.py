"""``report.html``: one self-contained page to explore a run.

Written by every ``accelsim run`` next to ``report.json``. Everything is inlined: the run's data
as one JSON object and a small renderer in plain JavaScript that draws SVG, so the file opens
offline, in any browser, with nothing to fetch. No plotting library: Plotly's bundle alone is
3.5 MB and importing it costs more CPU than the whole page should; the four views need
rectangles, lines, points, a tooltip and a table, which a few hundred lines of script draw.

The page:

* **layout**: one rectangle per residency (schedule step x address), coloured by tensor kind;
  hovering names the tensor, its kind, size, steps, offset and whether it came back from a
  spill; the wheel zooms the step axis, dragging pans; the address axis is scaled to the peak,
  with the capacity line drawn when it is within twice the peak and written in the title
  otherwise;
* **memory**: bytes allocated and the highest address in use over simulated time, with every
  DMA transfer as a bar under the axis (loads and retrieves above, stores and spills below);
* **operators**: a table of every operator, sortable by any column and filtered by a text box:
  cycles, mapped and ideal compute cycles, utilisation, stalls by cause, energy;
* **roofline**: achieved MACs per cycle against arithmetic intensity, each operator's stall-free
  point hollow and joined to its achieved one, so the distance is what stalls cost; hovering
  names the operator;
* the summary (as the command line prints it) and the hardware config after overrides.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelsim.units import byte_axis_top

#: the colour of each kind of residency, in report.html and in layout.svg (``accelsim.report``)
KIND_COLOURS = {
    "weight": "#4c72b0", "input": "#55a868", "activation": "#dd8452", "output": "#c44e52", "retrieved": "#8172b3",
}

if TYPE_CHECKING:
    from accelsim.results import SimReport


def page_data(report: SimReport, summary: str) -> dict[str, Any]:
    """The JSON the page renders: residencies, operators, memory timeline, transfers, settings,
    and ``summary`` (``accelsim.report.format_summary``'s table)."""
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
         o["stall_cycles"]["sram_bandwidth"], o["sram_bytes"], o["mapping"], o["energy"]["total"]]
        for o in report.ops
    ]
    sim = report.sim
    timeline = [[int(c), int(live), int(high)] for c, live, high in (sim.memory_timeline if sim else [])]
    transfers = [[t.kind, t.tensor, int(t.start_cycle), int(t.end_cycle), t.chip_bytes]
                 for t in (sim.transfers if sim else [])]
    hw = report.hardware
    axis_top, capacity_in_view = byte_axis_top(report.peak_bytes, report.capacity_bytes)
    return {
        "title": f"{report.model} on {report.hw} ({report.dtype})",
        "summary": summary,
        "capacity": report.capacity_bytes, "scope": report.capacity_scope, "peak": report.peak_bytes,
        "steps": report.n_ops, "cycles": report.cycles, "clock_hz": report.clock_hz,
        "axis_top": axis_top, "capacity_in_view": capacity_in_view,
        "kind_colours": KIND_COLOURS, "residencies": residencies, "ops": ops, "timeline": timeline,
        "transfers": transfers,
        "peak_macs": report.peak_macs_per_cycle,
        "sram_bw": hw.sram_bytes_per_cycle_total if hw is not None else 0,
        "dram_bw": hw.dram_bytes_per_cycle if hw is not None else 0,
        "hw_config": hw.to_dict() if hw is not None else {},
        "host_ops": [{"name": h["name"], "kind": h["kind"]} for h in report.host_ops],
    }


def write_html(report: SimReport, path: str | Path, summary: str) -> Path:
    """Write ``report.html`` for ``report`` (with the summary table ``summary``) to ``path``; returns the path."""
    target = Path(path)
    target.write_text(page(f"accelsim: {report.model} on {report.hw}", _STYLE, _BODY, page_data(report, summary),
                           _SCRIPT), encoding="utf-8")
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

_STYLE = """body{max-width:1200px}svg{background:#fff;border:1px solid #ddd;display:block}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:4px 8px;border-radius:4px;
font-size:12px;display:none;white-space:pre;z-index:9}table{width:100%}td:first-child,td:nth-child(2),
td:nth-child(12){text-align:left}#opsbox{max-height:420px;overflow:auto}pre{background:#f7f7f7;padding:8px;
overflow:auto;font-size:12px}.note{color:#666;font-size:12px}
"""

_BODY = """<h1 id="title"></h1><div id="tip"></div>
<h2>Layout</h2><div class="note">Each rectangle is one residency: steps (operators in schedule order)
across, addresses up. Hover for the tensor; wheel to zoom the steps, drag to pan, double-click to reset.</div>
<svg id="layout" width="1160" height="460"></svg>
<h2>Scratchpad use over simulated time</h2><div class="note">Bytes allocated (area), highest address in use
(line); under the axis every DMA transfer: loads and retrieves above the line, stores and spills below.</div>
<svg id="memory" width="1160" height="360"></svg>
<h2>Operators</h2><input id="filter" placeholder="filter: name or kind" size="30">
<span class="note" id="count"></span><div id="opsbox"><table id="ops"></table></div>
<h2>Roofline</h2><div class="note">Filled: achieved MACs per cycle, over the operator's run and its wait for
DMA before it; hollow: the same operator without stalls; the line between them is what the stalls cost.</div>
<svg id="roofline" width="1160" height="520"></svg>
<h2>Summary</h2><pre id="summary"></pre>
<h2>Hardware config (after overrides)</h2><pre id="hw"></pre>"""

#: a sortable, filterable HTML table: ``makeTable(table, filter, count, columns, rows, searched,
#: sortColumn, format, noun)``; shared by ``report.html`` and the sweep's ``index.html``
TABLE_SCRIPT = r"""
function makeTable(t, filter, count, cols, rows, searched, key, fmt, noun) {
  let asc = true;
  const esc = v => String(v).replace(/&/g, "&amp;").replace(/</g, "&lt;");
  const show = (v, i) => { const f = fmt ? fmt(v, i) : null;
    return f !== null ? f : typeof v === "number" ? (Number.isInteger(v) ? v.toLocaleString("en-US")
      : v.toPrecision(4)) : esc(v === null || v === undefined ? "" : v); };
  function render() {
    const f = filter.value.toLowerCase();
    const shown = rows.filter(r => !f || searched.some(i => String(r[i]).toLowerCase().includes(f)));
    shown.sort((a, b) => (a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0) * (asc ? 1 : -1));
    const head = "<tr>" + cols.map((c, i) => `<th data-i="${i}">${esc(c)}${i === key ? (asc ? " ▲" : " ▼") : ""}</th>`)
      .join("") + "</tr>";
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
function el(name, attrs, parent) {
  const e = document.createElementNS(NS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function bytes(b) {
  const u = ["B", "KiB", "MiB", "GiB"]; let i = 0;
  while (b >= 1024 && i < 3) { b /= 1024; i++; }
  return (i ? b.toFixed(2) : b) + " " + u[i];
}
function num(x) { return Math.round(x).toLocaleString("en-US"); }
function hover(node, text) {
  node.addEventListener("mousemove", ev => {
    tip.textContent = text(); tip.style.display = "block";
    tip.style.left = (ev.clientX + 12) + "px"; tip.style.top = (ev.clientY + 12) + "px";
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

document.getElementById("title").textContent = "accelsim: " + D.title;
document.getElementById("summary").textContent = D.summary;
document.getElementById("hw").textContent = JSON.stringify(D.hw_config, null, 1);

// ---- layout
(function layout() {
  const svg = document.getElementById("layout"), W = 1160, H = 460, m = {l: 84, r: 20, t: 30, b: 50};
  const showCap = D.capacity_in_view, yMax = D.axis_top;
  let x0 = 0, x1 = Math.max(D.steps, 1);
  const title = el("text", {x: m.l, y: 18, "font-size": 13}, svg);
  title.textContent = `${D.residencies.length} residencies, peak ${bytes(D.peak)} of ${bytes(D.capacity)} ` +
    `(${D.scope})` + (showCap ? "" : `; the capacity line is off the top of the axis`);
  axes(svg, m, W, H, "step (operator in schedule order)", "address, " + D.scope);
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
      `(${num(size)} B)\nsteps: ${start} to ${end} (lifetime ${end - start})\noffset: ${num(offset)} B` +
      (spilled ? "\nspilled to DRAM when it ended" : "") + (kind === "retrieved" ? "\nretrieved from DRAM" : ""));
    return [e, start, end, offset, size];
  });
  if (showCap) {
    el("line", {x1: m.l, x2: W - m.r, y1: y(D.capacity), y2: y(D.capacity), stroke: "red",
                "stroke-dasharray": "6,4"}, svg);
    el("text", {x: W - m.r - 4, y: y(D.capacity) - 4, "text-anchor": "end", fill: "red", "font-size": 11}, svg)
      .textContent = "capacity " + bytes(D.capacity);
  }
  el("line", {x1: m.l, x2: W - m.r, y1: y(D.peak), y2: y(D.peak), stroke: "#444", "stroke-dasharray": "2,3"}, svg);
  function draw() {
    const x = v => m.l + (W - m.l - m.r) * (v - x0) / (x1 - x0);
    for (const [e, s, t, o, z] of rects) {
      e.setAttribute("x", x(s)); e.setAttribute("width", Math.max(x(t) - x(s), 0.5));
      e.setAttribute("y", y(o + z)); e.setAttribute("height", Math.max(y(o) - y(o + z), 0.5));
    }
    xticks.textContent = "";
    ticks(xticks, x0, x1, 8, x, v => num(v), H - m.b + 16, 1);
  }
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
  draw();
})();

// ---- memory over time, with DMA transfers
(function memory() {
  const svg = document.getElementById("memory"), W = 1160, H = 360, m = {l: 84, r: 20, t: 20, b: 90};
  const end = Math.max(D.cycles, 1), yMax = D.axis_top;
  const x = c => m.l + (W - m.l - m.r) * c / end, y = v => H - m.b - (H - m.b - m.t) * v / yMax;
  axes(svg, m, W, H, "simulated time (cycles at " + (D.clock_hz / 1e6) + " MHz)", "bytes (" + D.scope + ")");
  byteTicks(svg, yMax, 4, y, null);
  ticks(svg, 0, end, 8, x, v => num(v), H - m.b + 16, 1);
  const pts = D.timeline.concat([[end, 0, 0]]);
  let area = `M ${x(0)} ${y(0)}`, line = "";
  for (let i = 0; i < pts.length; i++) {
    const [c, live, high] = pts[i], next = i + 1 < pts.length ? pts[i + 1][0] : end;
    area += ` L ${x(c)} ${y(live)} L ${x(next)} ${y(live)}`;
    line += (i ? " L " : "M ") + `${x(c)} ${y(high)} L ${x(next)} ${y(high)}`;
  }
  el("path", {d: area + ` L ${x(end)} ${y(0)} Z`, fill: "#4c72b0", opacity: 0.5}, svg);
  el("path", {d: line, fill: "none", stroke: "#8172b3", "stroke-width": 1.2}, svg);
  if (D.capacity_in_view) {
    el("line", {x1: m.l, x2: W - m.r, y1: y(D.capacity), y2: y(D.capacity), stroke: "red", "stroke-dasharray": "6,4"},
       svg);
  }
  const base = H - m.b + 42;
  el("line", {x1: m.l, x2: W - m.r, y1: base, y2: base, stroke: "#aaa"}, svg);
  const colours = {load: "#55a868", retrieve: "#8172b3", store: "#c44e52", spill: "#dd8452"};
  const g = el("g", {id: "transfers"}, svg);
  for (const [kind, tensor, s, e, b] of D.transfers) {
    const up = kind === "load" || kind === "retrieve";
    const r = el("rect", {x: x(s), width: Math.max(x(e) - x(s), 0.6), y: up ? base - 14 : base, height: 14,
                          fill: colours[kind] || "#999", opacity: 0.7}, g);
    hover(r, () => `${kind} ${tensor}\n${bytes(b)}\ncycles ${num(s)} to ${num(e)}`);
  }
})();

// ---- operators table
(function table() {
  const cols = ["name", "kind", "start", "end", "MACs", "compute cycles", "ideal cycles", "utilization",
                "DMA wait", "SRAM stall", "SRAM bytes", "mapping", "energy (uJ)"];
  const rows = D.ops.map(o => o.slice(0, 12).concat([o[12] * 1e6]));
  const fmt = (v, i) => i === 7 ? (100 * v).toFixed(1) + " %" : i === 12 ? v.toFixed(3) : null;
  makeTable(document.getElementById("ops"), document.getElementById("filter"), document.getElementById("count"),
            cols, rows, [0, 1], 2, fmt, "operators");
})();

// ---- roofline with stalls
(function roofline() {
  const svg = document.getElementById("roofline"), W = 1160, H = 520, m = {l: 84, r: 20, t: 20, b: 50};
  const pts = [];
  for (const o of D.ops) {
    const [name, kind, s, e, macs, compute, ideal, util, dma, sram, sbytes] = o;
    if (macs <= 0 || e <= s || sbytes <= 0) continue;
    // achieved: over the operator's run and the DMA wait before it; stall-free: over its compute cycles
    pts.push([name, kind, macs / sbytes, macs / (e - s + dma), macs / Math.max(compute, 1), dma + sram]);
  }
  const all = pts.flatMap(p => [p[3], p[4]]).concat([D.peak_macs]);
  const xs = pts.map(p => p[2]).concat([D.peak_macs / Math.max(D.dram_bw, 1e-9)]);
  const lx0 = Math.log10(Math.min(...xs, 1) / 2), lx1 = Math.log10(Math.max(...xs) * 2);
  const ly0 = Math.log10(Math.max(Math.min(...all) / 2, 1e-6)), ly1 = Math.log10(Math.max(...all) * 2);
  const x = v => m.l + (W - m.l - m.r) * (Math.log10(v) - lx0) / (lx1 - lx0);
  const y = v => H - m.b - (H - m.b - m.t) * (Math.log10(v) - ly0) / (ly1 - ly0);
  axes(svg, m, W, H, "arithmetic intensity (MACs per scratchpad byte, log)", "MACs per cycle (log)");
  logTicks(svg, ly0, ly1, y, null);
  logTicks(svg, lx0, lx1, x, H - m.b + 16);
  for (const [bw, colour] of [[D.sram_bw, "#222"], [D.dram_bw, "red"]]) {
    if (!(bw > 0)) continue;
    const a = 10 ** lx0, b = 10 ** lx1, knee = D.peak_macs / bw;
    const corners = [a, Math.min(Math.max(knee, a), b), b];
    el("path", {d: corners.map((c, i) => (i ? "L" : "M") + x(c) + " " + y(Math.max(Math.min(D.peak_macs, bw * c),
      10 ** ly0))).join(" "), fill: "none", stroke: colour, "stroke-dasharray": colour === "red" ? "6,4" : ""}, svg);
  }
  const g = el("g", {id: "points"}, svg);
  for (const [name, kind, ai, achieved, stallFree, stalls] of pts) {
    el("line", {x1: x(ai), x2: x(ai), y1: y(achieved), y2: y(stallFree), stroke: "#c44e52", opacity: 0.5}, g);
    el("circle", {cx: x(ai), cy: y(stallFree), r: 3, fill: "none", stroke: "#4c72b0"}, g);
    const c = el("circle", {cx: x(ai), cy: y(achieved), r: 4, fill: "#4c72b0", opacity: 0.8}, g);
    hover(c, () => `${name} (${kind})\n${ai.toPrecision(3)} MACs/B\n${achieved.toFixed(1)} MACs/cycle achieved` +
      `\n${stallFree.toFixed(1)} without its ${num(stalls)} stall cycles`);
  }
})();
"""

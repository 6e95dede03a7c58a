"""report.html: written by every run, self-contained, and working in a real browser (issue 25)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from accelsim import compile_and_simulate
from accelsim.html_report import CAUSES, page_data, time_breakdown, top_stalls
from accelsim.report import format_summary, summary_rows
from tests.accelsim.headless import Page, distinct_colours


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "r18"
    report = compile_and_simulate("resnet18", hw="pixel6", sram="256KiB", out_dir=str(out))
    return report, out / "report.html"


def test_every_run_writes_a_self_contained_report_html(run):
    report, path = run
    text = path.read_text()
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", text), "everything must be inlined"
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text
    data = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>', text, re.S).group(1))
    expected = json.loads(json.dumps(page_data(report, format_summary(report), summary_rows(report))))
    assert data["summary"].splitlines()[:-2] == expected["summary"].splitlines()[:-2]  # not the report's own time
    timed = ("summary", "summary_rows")
    assert {k: v for k, v in data.items() if k not in timed} == {k: v for k, v in expected.items() if k not in timed}
    assert data["summary_rows"][:-1] == expected["summary_rows"][:-1] and data["summary_rows"][-1][0] == "wall time"
    assert len(data["residencies"]) == len(report.schedule.residencies) > 0
    assert len(data["ops"]) == len(report.ops)  # one row per traced operator
    assert data["peak"] == report.peak_bytes and data["capacity"] == report.capacity_bytes


def test_the_time_breakdown_adds_up_to_the_total_cycles(run):
    report, _ = run
    breakdown = time_breakdown(report)
    cells = [cycles for _, _, parts in breakdown["kinds"] for cycles in parts.values()]
    assert all(c >= 0 for c in cells) and sum(cells) == breakdown["total"] == report.cycles > 0
    by_cause = {key: sum(parts[key] for _, _, parts in breakdown["kinds"]) for key, *_ in CAUSES}
    ops = report.sim.ops
    # each cause is the simulator's own figure, up to the rounding of one boundary per operator
    assert by_cause["compute"] == pytest.approx(sum(o.compute_cycles for o in ops), abs=len(ops))
    assert by_cause["sram_bandwidth"] == pytest.approx(report.stall_cycles["sram_bandwidth"], abs=len(ops))
    assert by_cause["dma_bandwidth"] == pytest.approx(report.dma_wait_split["bandwidth"], abs=len(ops))
    assert by_cause["dma_late"] == pytest.approx(report.dma_wait_split["late"], abs=len(ops))
    assert by_cause["drain"] == report.cycles - int(ops[-1].end_cycle)
    # by kind: the operators of each kind, and their cycles and waits
    kinds = {kind: (count, parts) for kind, count, parts in breakdown["kinds"]}
    convs = [o for o in ops if o.op == "conv2d"]
    assert kinds["conv2d"][0] == len(convs)
    assert sum(kinds["conv2d"][1].values()) == pytest.approx(
        sum(o.end_cycle - o.start_cycle + o.dma_stall_cycles for o in convs), abs=2 * len(convs))
    totals = [sum(parts.values()) for _, count, parts in breakdown["kinds"] if count]
    assert totals == sorted(totals, reverse=True)


def test_the_operators_that_stalled_longest_come_first(run):
    report, _ = run
    top = top_stalls(report)
    stalls = sorted((o["stall_cycles"]["dma_wait"] + o["stall_cycles"]["sram_bandwidth"] for o in report.ops),
                    reverse=True)
    assert [row[5] for row in top] == [s for s in stalls[:10] if s > 0] and len(top) == 10
    for name, kind, bandwidth, late, sram, stall in top:
        record = next(o for o in report.ops if o["name"] == name)
        assert kind == record["op"] and bandwidth + late + sram == stall


def test_the_dram_column_is_what_each_operator_moved_and_was_charged_for(run):
    from frontend.tiling import traced_operator

    report, _ = run
    assert report.tiled_operators  # tiled operators sum their tiles
    data = page_data(report, "")
    column = {row[0]: row[11] for row in data["ops"]}
    # the transfers of each step, read and written, summed per traced operator (the test's own count)
    step_op = {o.step: traced_operator(o.name, report.tiled_operators) for o in report.sim.ops}
    moved = dict.fromkeys(column, 0)
    for t in report.sim.transfers:
        moved[step_op[min(t.step, len(report.sim.ops) - 1)]] += t.chip_bytes
    assert column == moved
    assert sum(column.values()) == report.dram_read_bytes + report.dram_write_bytes
    # and the DRAM energy report.json gives each operator is these bytes at the config's pJ per byte
    per_byte = report.hardware.energy.pj_per_dram_byte * 1e-12
    for o in report.ops:
        assert o["energy"]["dram"] == pytest.approx(column[o["name"]] * per_byte, rel=1e-9, abs=1e-18)


@pytest.mark.browser
def test_report_html_in_headless_chromium(run):
    report, path = run
    with Page(path) as page:
        assert page.errors == []
        rects = page.evaluate("document.querySelectorAll('#residencies rect').length")
        assert rects == len(report.schedule.residencies)
        assert page.evaluate("document.querySelectorAll('#ops tr').length") == len(report.ops) + 1  # and the header
        # hover the largest residency, as a person would, and read the tooltip
        tensor = page.evaluate("""(() => {
            let best = null, area = 0;
            for (const r of document.querySelectorAll('#residencies rect')) {
                const b = r.getBoundingClientRect();
                if (b.width * b.height > area) { area = b.width * b.height; best = r.dataset.tensor; }
            }
            return best;
        })()""")
        centre = page.evaluate(f"""(() => {{
            const r = [...document.querySelectorAll('#residencies rect')]
                .find(r => r.dataset.tensor === {json.dumps(tensor)});
            r.scrollIntoView({{block: 'center'}}); const b = r.getBoundingClientRect();
            return [b.x + b.width / 2, b.y + b.height / 2];
        }})()""")
        page.hover(*centre)
        tip = page.evaluate("[getComputedStyle(document.getElementById('tip')).display, "
                            "document.getElementById('tip').textContent]")
        assert tip[0] == "block" and tip[1].startswith(tensor), tip
        assert "offset:" in tip[1] and "size:" in tip[1]
        # the filter narrows the operator table
        page.evaluate("const f = document.getElementById('filter'); f.value = 'conv'; "
                      "f.dispatchEvent(new Event('input'))")
        shown = page.evaluate("document.querySelectorAll('#ops tr').length - 1")
        convs = sum(1 for o in report.ops if "conv" in o["name"].lower() or "conv" in o["op"])
        assert shown == convs > 0
        layout = page.evaluate("(() => { const b = document.getElementById('layout').getBoundingClientRect(); "
                               "return [b.x, b.y + window.scrollY, b.width, b.height]; })()")
        png = page.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": {
            "x": layout[0], "y": layout[1], "width": layout[2], "height": layout[3], "scale": 0.5}})["data"]
        import base64

        assert distinct_colours(base64.b64decode(png)) > 5, "the layout screenshot is blank"
        assert page.errors == []


@pytest.mark.browser
def test_a_sweep_writes_an_index_html_that_works_in_headless_chromium(tmp_path):
    from accelsim.cli import main

    out = tmp_path / "sweep"
    assert main(["sweep", "resnet18", "--hw", "pixel6", "--grid", "sram=128KiB,256KiB,1MiB", "--out", str(out)]) == 0
    index = out / "index.html"
    text = index.read_text()
    assert not re.search(r"<(script|link)[^>]+(src|href)=", text)
    assert not re.search(r"<img[^>]+src=\"(?!data:image/png;base64,)", text), "plots must be inlined"
    plots = sorted(p.name for p in out.glob("*.png"))
    assert plots and all(name in text for name in plots)
    with Page(index) as page:
        assert page.errors == []
        assert page.evaluate("document.querySelectorAll('#results tr').length") == 3 + 1  # three points, the header
        assert page.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
        assert page.evaluate("document.images.length") == len(plots)
        # sorting by a column, as a click would
        column = page.evaluate("[...document.querySelectorAll('#results th')].findIndex(th => "
                               "th.textContent.startsWith('sram'))")
        assert column >= 0
        page.evaluate(f"document.querySelectorAll('#results th')[{column}].click()")
        page.evaluate(f"document.querySelectorAll('#results th')[{column}].click()")
        firsts = page.evaluate(f"[...document.querySelectorAll('#results tr')].slice(1)"
                               f".map(r => r.children[{column}].textContent)")
        assert len(firsts) == 3 and firsts[0] != firsts[-1]
        assert page.errors == []


#: names a user can give that must not end the page's script or run one of their own
HOSTILE_NAMES = ("<!--<script>", "</script><script>pwned=1</script>", "<img src=x onerror=pwned=2>")

HOSTILE_MODEL = f"""
from torch import nn


def build():
    model = nn.Sequential()
    model.add_module({HOSTILE_NAMES[0]!r}, nn.Conv2d(3, 8, 3))
    model.add_module({HOSTILE_NAMES[1]!r}, nn.ReLU())
    model.add_module({HOSTILE_NAMES[2]!r}, nn.Conv2d(8, 4, 1))
    return model
"""


@pytest.mark.browser
def test_pages_built_from_hostile_names_draw_and_run_no_injected_script(tmp_path):
    from accelsim.cli import main

    model = tmp_path / "<!--<script>x.py"
    model.write_text(HOSTILE_MODEL)
    config = tmp_path / "chip.yaml"
    source = (Path(__file__).resolve().parents[2] / "hw_configs" / "pixel6.yaml").read_text()
    config.write_text(re.sub(r"(?m)^description:.*$", "description: '<!--<script> </script><script>pwned=3</script>'",
                             source))
    spec = f"{model}:build"
    out = tmp_path / "run"
    assert main(["run", spec, "--hw", str(config), "--input-shape", "1,3,16,16", "--out", str(out), "--no-cache"]) == 0
    report = json.loads((out / "report.json").read_text())
    sweep = tmp_path / "sweep"
    assert main(["sweep", spec, "--hw", str(config), "--input-shape", "1,3,16,16", "--grid", "sram=1MiB,2MiB",
                 "--out", str(sweep), "--no-plots", "--jobs", "1"]) == 0
    for name in HOSTILE_NAMES:
        assert name not in (out / "report.html").read_text()  # inlined only as \u escapes
    with Page(out / "report.html") as page:
        assert page.errors == []
        assert page.evaluate("typeof pwned") == "undefined"
        assert page.evaluate("document.querySelectorAll('#residencies rect').length") == len(report["buffers"]) > 0
        assert page.evaluate("document.querySelectorAll('#ops tr').length") == len(report["ops"]) + 1
        tensors = page.evaluate("[...document.querySelectorAll('#residencies rect')].map(r => r.dataset.tensor)")
        assert f"{HOSTILE_NAMES[0]}.weight" in tensors and f"{HOSTILE_NAMES[2]}.weight" in tensors, tensors
        assert page.evaluate("document.getElementById('title').textContent").startswith("accelsim: <!--<script>x.build")
        assert "</script><script>pwned=3</script>" in page.evaluate("document.getElementById('hw').textContent")
    with Page(sweep / "index.html") as page:
        assert page.errors == [] and page.evaluate("typeof pwned") == "undefined"
        assert page.evaluate("document.querySelectorAll('#results tr').length") == 2 + 1
        first = page.evaluate("document.querySelector('#results tr:nth-child(2) td').textContent")
        assert first == "<!--<script>x.build"


def rgb(hex_colour: str) -> str:
    """``#4c72b0`` as a browser computes it: ``rgb(76, 114, 176)``."""
    return "rgb({}, {}, {})".format(*(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)))


def number(text: str) -> int:
    return int(text.replace(",", ""))


@pytest.mark.browser
def test_report_html_reads_top_to_bottom_with_a_legend_for_every_colour(run):
    report, path = run
    with Page(path, width=1240, height=1000) as page:
        assert page.errors == []
        # the summary first, then where the time went, then the charts and the table
        tops = page.evaluate("['headline', 'summary-table', 'timebar', 'bykind', 'topstall', 'layout', 'memory', "
                             "'ops', 'roofline'].map(id => document.getElementById(id).getBoundingClientRect().top)")
        assert tops == sorted(tops)
        headline = page.evaluate("document.getElementById('headline').textContent")
        floor = report.floor_cycles
        assert headline.startswith(f"{report.cycles:,} cycles")
        assert f"{report.cycles_over_floor:.2f}× the floor of {floor['cycles']:,} cycles" in headline
        assert f"Utilization {100 * report.utilization:.1f} %" in headline and "stalls included" in headline
        # every colour a chart draws with is explained beside it
        used = page.evaluate("""({
            layout: [...document.querySelectorAll('#residencies rect')].map(r => r.getAttribute('fill')),
            memory: [...document.querySelectorAll('#transfers rect')].map(r => r.getAttribute('fill')).concat(
                [...document.querySelectorAll('#memory path')].map(p => p.getAttribute('fill') === 'none'
                    ? p.getAttribute('stroke') : p.getAttribute('fill'))),
            roofline: [...document.querySelectorAll('#points circle.achieved')].map(c => c.getAttribute('fill'))
                .concat([...document.querySelectorAll('#roofline path.roof')].map(p => p.getAttribute('stroke'))),
            time: [...document.querySelectorAll('#timebar div')].map(d => getComputedStyle(d).backgroundColor)})""")
        legends = page.evaluate("Object.fromEntries(['layout', 'memory', 'roofline', 'time'].map(k => [k, "
                                "[...document.querySelectorAll('#legend-' + k + ' [data-colour]')]"
                                ".map(s => s.dataset.colour)]))")
        for chart in ("layout", "memory", "roofline"):
            assert used[chart] and set(used[chart]) <= set(legends[chart]), (chart, used[chart], legends[chart])
        assert used["time"] and set(used["time"]) <= {rgb(c) for c in legends["time"]}
        texts = page.evaluate("Object.fromEntries(['layout', 'memory', 'roofline'].map(k => [k, "
                              "document.getElementById('legend-' + k).textContent]))")
        assert "weight" in texts["layout"] and "activation" in texts["layout"] and "peak address" in texts["layout"]
        assert "load" in texts["memory"] and "store" in texts["memory"]
        assert "compute roof" in texts["roofline"] and "DRAM roof" in texts["roofline"]
        # one meaning per word: the table's per-operator figure is mapping efficiency, and says so
        heads = page.evaluate("[...document.querySelectorAll('#ops th')].map(th => [th.textContent, th.title])")
        names = [h[0].rstrip(" ▲▼") for h in heads]
        assert "utilization" not in names and "mapping efficiency" in names
        assert "utilization" in dict(heads)["mapping efficiency"] and "DRAM bytes (chip)" in names
        assert page.errors == []


@pytest.mark.browser
def test_the_breakdown_on_the_page_adds_up_to_the_total_cycles(run):
    report, path = run
    with Page(path) as page:
        table = page.evaluate("""[...document.querySelectorAll('#bykind tr')].slice(1).map(r =>
            [r.className, [...r.querySelectorAll('td[data-cause]')].map(td => td.textContent),
             r.querySelector('td.sum').textContent])""")
        kinds = [row for row in table if row[0] == "kind"]
        total = [row for row in table if row[0] == "total"]
        assert len(kinds) >= 5 and len(total) == 1
        for _, parts, whole in kinds:
            assert sum(number(p) for p in parts) == number(whole)
        assert sum(number(whole) for _, _, whole in kinds) == number(total[0][2]) == report.cycles
        columns = list(zip(*(parts for _, parts, _ in kinds), strict=True))
        assert [sum(number(v) for v in column) for column in columns] == [number(v) for v in total[0][1]]
        bar = page.evaluate("[...document.querySelectorAll('#timebar div')].map(d => "
                            "[+d.dataset.cycles, d.getBoundingClientRect().width])")
        width = page.evaluate("document.getElementById('timebar').clientWidth")
        assert sum(cycles for cycles, _ in bar) == report.cycles
        assert sum(w for _, w in bar) == pytest.approx(width, abs=1)
        # the operators that stalled longest: the first opens its row in the table
        first = page.evaluate("document.querySelector('#topstall a').textContent")
        assert first == top_stalls(report)[0][0]
        page.evaluate("document.querySelector('#topstall a').click()")
        assert page.evaluate("document.getElementById('filter').value") == first
        shown = page.evaluate("[...document.querySelectorAll('#ops tr td:first-child')].map(t => t.textContent)")
        assert first in shown
        assert page.errors == []


@pytest.mark.browser
def test_at_1024_px_no_chart_is_cut_and_the_roofline_points_stay_apart(run):
    report, path = run
    with Page(path, width=1024, height=900) as page:
        assert page.errors == []
        fit = page.evaluate("""(() => {
            const charts = [...document.querySelectorAll('svg.chart')].map(svg => {
                const r = svg.getBoundingClientRect();
                const texts = [...svg.querySelectorAll('text')].map(t => t.getBoundingClientRect());
                return {id: svg.id, left: r.left, right: r.right, css: svg.clientWidth,
                        drawn: svg.viewBox.baseVal.width,
                        textLeft: Math.min(...texts.map(b => b.left)), textRight: Math.max(...texts.map(b => b.right))};
            });
            return {charts, inner: window.innerWidth, page: document.documentElement.scrollWidth};
        })()""")
        assert fit["page"] <= fit["inner"] == 1024  # nothing makes the page scroll sideways
        assert [c["id"] for c in fit["charts"]] == ["layout", "memory", "roofline"]
        for chart in fit["charts"]:
            assert 0 <= chart["left"] and chart["right"] <= fit["inner"], chart
            assert chart["drawn"] == pytest.approx(chart["css"], abs=2), chart  # drawn at the width it is shown
            assert chart["left"] <= chart["textLeft"] and chart["textRight"] <= chart["right"], chart  # no label cut
        # every operator with MACs is a point of its own, none on top of another
        dots = page.evaluate("[...document.querySelectorAll('#points circle.achieved')].map(c => "
                             "[c.dataset.name, +c.getAttribute('cx'), +c.getAttribute('cy')])")
        with_macs = [o["name"] for o in report.ops if o["macs"] > 0 and o["sram_bytes"] > 0]
        assert sorted(d[0] for d in dots) == sorted(with_macs)
        closest = min(((a[1] - b[1]) ** 2 + (a[2] - b[2]) ** 2) ** 0.5 for i, a in enumerate(dots) for b in dots[:i])
        assert closest >= 3  # at least a dot's radius apart
        # no dot, spread or not, is drawn above the compute roof (the top of the roof paths)
        roof_top = page.evaluate("Math.min(...[...document.querySelectorAll('#roofline path.roof')].flatMap(p => "
                                 "p.getAttribute('d').split(/[ML]/).filter(s => s.trim()).map(s => +s.trim()"
                                 ".split(/\\s+/)[1])))")
        assert min(d[2] for d in dots) >= roof_top - 1e-6
        # and the others are named under the chart, by kind
        without = [o["op"] for o in report.ops if o["name"] not in with_macs]
        note = page.evaluate("document.getElementById('not-drawn').textContent")
        assert note.startswith(f"not drawn: {len(without)} operators without MACs (")
        top_kind = sorted(set(without), key=lambda k: (-without.count(k), k))[0]
        assert f"{top_kind} {without.count(top_kind)}" in note
        # a wider window draws the charts wider
        page.call("Emulation.setDeviceMetricsOverride", {"width": 1920, "height": 900, "deviceScaleFactor": 1,
                                                         "mobile": False})
        page.call("Runtime.evaluate", {"expression": "new Promise(done => requestAnimationFrame(() => "
                                       "requestAnimationFrame(done)))", "awaitPromise": True})
        wide = page.evaluate("[...document.querySelectorAll('svg.chart')].map(s => s.viewBox.baseVal.width)")
        assert all(w > max(c["drawn"] for c in fit["charts"]) + 300 for w in wide), wide
        assert page.errors == []

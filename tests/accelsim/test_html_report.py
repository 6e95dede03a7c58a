"""report.html: written by every run, self-contained, and working in a real browser (issue 25)."""

from __future__ import annotations

import json
import re

import pytest

from accelsim import compile_and_simulate
from accelsim.html_report import page_data
from accelsim.report import format_summary
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
    expected = json.loads(json.dumps(page_data(report, format_summary(report))))
    assert data["summary"].splitlines()[:-2] == expected["summary"].splitlines()[:-2]  # not the report's own time
    assert {k: v for k, v in data.items() if k != "summary"} == {k: v for k, v in expected.items() if k != "summary"}
    assert len(data["residencies"]) == len(report.schedule.residencies) > 0
    assert len(data["ops"]) == report.n_ops
    assert data["peak"] == report.peak_bytes and data["capacity"] == report.capacity_bytes


def test_report_html_in_headless_chromium(run):
    report, path = run
    with Page(path) as page:
        assert page.errors == []
        rects = page.evaluate("document.querySelectorAll('#residencies rect').length")
        assert rects == len(report.schedule.residencies)
        assert page.evaluate("document.querySelectorAll('#ops tr').length") == report.n_ops + 1  # and the header
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
                               "return [b.x, b.y, b.width, b.height]; })()")
        png = page.call("Page.captureScreenshot", {"format": "png", "clip": {
            "x": layout[0], "y": layout[1], "width": layout[2], "height": layout[3], "scale": 0.5}})["data"]
        import base64

        assert distinct_colours(base64.b64decode(png)) > 5, "the layout screenshot is blank"
        assert page.errors == []

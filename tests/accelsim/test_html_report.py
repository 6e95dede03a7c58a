"""report.html: written by every run, self-contained, and working in a real browser (issue 25)."""

from __future__ import annotations

import json
import re
from pathlib import Path

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
    assert len(data["ops"]) == len(report.ops)  # one row per traced operator
    assert data["peak"] == report.peak_bytes and data["capacity"] == report.capacity_bytes


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
                               "return [b.x, b.y, b.width, b.height]; })()")
        png = page.call("Page.captureScreenshot", {"format": "png", "clip": {
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

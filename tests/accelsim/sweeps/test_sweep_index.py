"""A sweep's index.html and point pages stay readable when points fail (issue 35, item 4), and
its progress lines print values in human units (item 6).

The sweep is the cheapest real one: a 30-operator synthetic graph saved as .json (M_R is
1,088 B per PE on pixel6), with one SRAM value below M_R. The browser tests drive the pages in
headless Chromium (``-m browser``).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

import frontend
from accelsim.sweeps import run_sweep
from accelsim.sweeps.index_html import index_data, point_page_name, write_point_page
from accelsim.sweeps.results import format_cell, format_setting, status_word
from frontend.synthetic import random_dag
from tests.accelsim.headless import Page

GRID = ["sram=512,2KiB,64KiB", "dram_bandwidth_bytes_per_s=25.6e9,4e9"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A finished sweep with two failing points (sram 512 B is below M_R): its folder and outcome."""
    folder = tmp_path_factory.mktemp("index")
    dag = folder / "dag.json"
    frontend.save_graph(random_dag(30, seed=1), dag)
    out = folder / "sweep"
    outcome = run_sweep([str(dag)], "pixel6", GRID, out, jobs=1)
    assert outcome.failed == 2 and len(outcome.results) == 6
    return out, outcome


def page_data(path: Path) -> dict:
    found = re.search(r'<script id="data" type="application/json">(.*?)</script>', path.read_text(), re.S)
    assert found is not None, path
    return json.loads(found.group(1))


# ------------------------------------------------------------------------------------------
# each kind of column as a person reads it


@pytest.mark.parametrize("column, value, shown", [
    ("sram", 131072, "128 KiB"),
    ("sram", 512, "512 B"),
    ("peak_bytes", 5568.0, "5.44 KiB"),  # a float column of whole bytes (pandas makes ints floats beside NaN)
    ("sram_bytes_per_pe", 2**20, "1 MiB"),
    ("dram_bandwidth_bytes_per_s", 25600000000.0, "25.6 GB/s"),
    ("dram_bandwidth_bytes_per_s", 4e9, "4 GB/s"),
    ("energy_j", 0.001859, "1.86 mJ"),
    ("energy_j", 7.0489e-06, "7.05 uJ"),
    ("seconds", 0.0552, "55.2 ms"),
    ("seconds", 6.3583e-06, "6.36 us"),
    ("wall_s", 16.136, "16.1 s"),
    ("ttft_s", 0.25, "250 ms"),
    ("cycles", 1603033, "1,603,033"),
    ("cycles", 6778.0, "6,778"),
    ("dram_latency_cycles", 100, "100"),
    ("utilization", 0.623, "62.3 %"),
    ("clock_hz", 1.066e9, "1.07 GHz"),
    ("sram_bandwidth_bytes_per_cycle", 64, "64 B/cycle"),
    ("tokens_per_s", 123.456, "123.5"),
    ("compute.rows", 128, "128"),
    ("scheduler", "min-peak", "min-peak"),
    ("budget", "MR", "MR"),
    ("deterministic", True, "True"),
    ("cycles", None, ""),
    ("cycles", float("nan"), ""),
])
def test_each_kind_of_column_reads_in_human_units(column, value, shown):
    assert format_cell(column, value) == shown


@pytest.mark.parametrize("status, word", [
    ("ok", "ok"),
    ("capacity 512 bytes is below M_R = 1088 bytes: operator 'op4' needs its inputs and outputs on chip at once; "
     "the smallest budget that works is 1088 bytes", "below M_R"),
    ("tensor 'w' needs 9000 bytes, more than the whole budget of 4096 bytes", "too small"),
    ("allocator 'exact' could not place the 12 residencies of the schedule in 4096 bytes: timeout, best peak 5000 "
     "bytes: the time limit ended the search", "timeout"),
    ("allocator 'greedy' could not place the 12 residencies of the schedule in 4096 bytes: failed: no room",
     "alloc failed"),
    ("memory check failed: residency r3 overlaps r4 at cycle 12", "check failed"),
    ("worker died: its worker process died, also when it ran alone (out of memory or a crash in the worker "
     "process); a re-run runs it again", "worker died"),
    ("placement by 'x' is invalid (2 violation(s)), not simulated; first: overlap", "invalid"),
    ("model 'ok' could not be traced", "failed"),
])
def test_a_status_reads_as_one_short_word(status, word):
    assert status_word(status) == word


def test_a_setting_drops_the_unit_its_value_shows():
    assert format_setting("dram_bandwidth_bytes_per_s", 25.6e9) == "dram_bandwidth 25.6 GB/s"
    assert format_setting("sram", 262144) == "sram 256 KiB"
    assert format_setting("compute.rows", 64) == "compute.rows 64"


# ------------------------------------------------------------------------------------------
# the page's data and the point pages


def test_the_page_shows_human_units_and_keeps_raw_numbers_and_full_messages(swept):
    out, outcome = swept
    data = page_data(out / "index.html")
    assert data == json.loads(json.dumps(index_data(outcome.results)))
    columns = data["columns"]
    assert columns[:5] == ["model", "hw", "sram", "dram_bandwidth_bytes_per_s", "status"]
    assert columns.index("energy_j") < columns.index("dram_read_bytes")  # the headline results come first
    at = {name: i for i, name in enumerate(columns)}
    csv_rows = list(csv.DictReader(open(out / "results.csv", newline="")))
    by_hash = {r["hash"]: r for r in csv_rows}
    failing = [(raw, text) for raw, text in zip(data["rows"], data["text"], strict=True) if raw[at["status"]] != "ok"]
    assert len(failing) == 2
    for raw, text in failing:
        full = by_hash[raw[at["hash"]]]["status"]
        assert len(full) > 150 and "below M_R = 1088 bytes" in full
        assert raw[at["status"]] == full and text[at["status"]] == "below M_R"  # the whole message stays in the data
        assert raw[at["cycles"]] is None and text[at["cycles"]] == ""
    for raw, text in zip(data["rows"], data["text"], strict=True):
        assert text[at["sram"]] == {512: "512 B", 2048: "2 KiB", 65536: "64 KiB"}[raw[at["sram"]]]
        assert text[at["dram_bandwidth_bytes_per_s"]] == {25.6e9: "25.6 GB/s", 4e9: "4 GB/s"}[
            raw[at["dram_bandwidth_bytes_per_s"]]]
        if raw[at["status"]] == "ok":
            cycles = raw[at["cycles"]]
            assert cycles > 1000 and cycles == int(cycles) and text[at["cycles"]] == f"{int(cycles):,}"
            assert text[at["energy_j"]].endswith(" uJ") and isinstance(raw[at["energy_j"]], float)
    # results.csv itself keeps the raw numbers
    assert sorted({r["sram"] for r in csv_rows}) == ["2048", "512", "65536"]
    assert {r["dram_bandwidth_bytes_per_s"] for r in csv_rows} == {"25600000000.0", "4000000000.0"}


def test_every_row_links_to_a_point_page_that_exists(swept):
    out, outcome = swept
    data = page_data(out / "index.html")
    assert data["links"] == [point_page_name(h) for h in outcome.results["hash"]]
    assert data["columns"][data["link"]] == "model"
    for link, raw in zip(data["links"], data["rows"], strict=True):
        page = out / link
        assert page.is_file(), link
        text = page.read_text()
        status = raw[data["status"]]
        if status == "ok":
            cycles = int(raw[data["columns"].index("cycles")])
            assert 'id="word">ok<' in text and "the floor" in text and f"<td>{cycles:,}</td>" in text
            assert f'href="{Path(link).stem}.json"' in text and (out / "points" / f"{Path(link).stem}.json").is_file()
        else:
            assert 'id="word">below M_R<' in text
            assert status.replace("'", "&#x27;") in text  # the full message, escaped
        assert 'href="../index.html"' in text


def test_progress_lines_print_values_in_human_units(tmp_path, capsys):
    dag = tmp_path / "dag.json"
    frontend.save_graph(random_dag(30, seed=1), dag)
    run_sweep([str(dag)], "pixel6", ["sram=512,2KiB", "dram_bandwidth_bytes_per_s=25.6e9"], tmp_path / "o", jobs=1,
              plots=False, progress=True)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    assert len(lines) == 2, lines
    assert lines[0].startswith("[1/2] dag, sram 512 B, dram_bandwidth 25.6 GB/s: capacity 512 bytes is below M_R")
    assert lines[1].startswith("[2/2] dag, sram 2 KiB, dram_bandwidth 25.6 GB/s: ok")
    assert not any("25600000000" in line or "bytes_per_s=" in line for line in lines)


def test_pages_missing_from_an_earlier_run_are_written_when_it_resumes(swept, tmp_path):
    out, outcome = swept
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    for page in (copy / "points").glob("*.html"):
        page.unlink()
    again = run_sweep([str(out.parent / "dag.json")], "pixel6", GRID, copy, jobs=1, plots=False)
    assert again.ran == 0 and again.skipped == 6
    for digest in outcome.results["hash"]:
        assert (copy / point_page_name(digest)).read_text() == (out / point_page_name(digest)).read_text()


def test_a_point_page_escapes_every_name(tmp_path):
    hostile = "</script><script>pwned=1</script><img src=x onerror=pwned=2>"
    row = {"model": hostile, "hw": "pixel6", "sram": 512, "status": f"capacity 512 bytes is below M_R: {hostile}",
           "hash": "0123456789abcdef"}
    (tmp_path / "points").mkdir()
    text = write_point_page(tmp_path, row, ["sram"]).read_text()
    assert hostile not in text and "<img" not in text
    assert "&lt;/script&gt;&lt;script&gt;pwned=1" in text  # shown, as text


# ------------------------------------------------------------------------------------------
# in a browser


def boxes(page: Page, names: list[str]) -> dict[str, list[list[float]]]:
    """Each named column's cells (the header first) as [left, right] in the window."""
    return page.evaluate(f"""(() => {{
        const heads = [...document.querySelectorAll('#results th')]
            .map(th => th.textContent.replace(/[\\u200b ▲▼]/g, ''));
        const out = {{}};
        for (const name of {json.dumps(names)}) {{
            const i = heads.indexOf(name);
            out[name] = [...document.querySelectorAll('#results tr')].map(tr => {{
                const b = tr.children[i].getBoundingClientRect(); return [b.left, b.right]; }});
        }}
        return out;
    }})()""")


@pytest.mark.browser
@pytest.mark.parametrize("width", [1024, 1920])
def test_a_failing_point_leaves_the_result_columns_in_view(swept, width):
    out, outcome = swept
    with Page(out / "index.html", width=width, height=900) as page:
        assert page.errors == []
        view = page.evaluate("document.documentElement.clientWidth")  # the window less its scroll bar
        assert width - 20 <= view <= width
        found = boxes(page, ["status", "cycles", "utilization", "energy_j"])
        for name, cells in found.items():
            assert len(cells) == 7, name  # the header and six points
            assert all(0 <= left and right <= view for left, right in cells), (name, cells, view)
        status = found["status"][0]
        assert status[1] - status[0] < 120, status  # one short word wide
        # the failing rows: their word shown, the whole message on hover
        shown = page.evaluate("[...document.querySelectorAll('#results .bad')].map(s => [s.textContent, s.title])")
        messages = sorted(outcome.results.loc[outcome.results["status"] != "ok", "status"])
        assert sorted(title for _, title in shown) == messages and {word for word, _ in shown} == {"below M_R"}
        # a value reads in human units and sorts by its number: 512 B < 2 KiB < 64 KiB (as text: "2 KiB" first)
        column = page.evaluate("[...document.querySelectorAll('#results th')].findIndex(th => "
                               "th.textContent.startsWith('sram'))")
        page.evaluate(f"document.querySelectorAll('#results th')[{column}].click()")
        order = page.evaluate(f"[...document.querySelectorAll('#results tr')].slice(1)"
                              f".map(r => r.children[{column}].textContent)")
        assert order == ["512 B", "512 B", "2 KiB", "2 KiB", "64 KiB", "64 KiB"]
        # the filter searches the status's word and its message
        page.evaluate("const f = document.getElementById('filter'); f.value = 'op4'; "
                      "f.dispatchEvent(new Event('input'))")
        assert page.evaluate("document.querySelectorAll('#results tr').length") == 2 + 1
        assert page.errors == []


def follow(page: Page, x: float, y: float) -> str:
    """Click at (x, y) as a person would and wait until the page it opens has loaded; its path."""
    before = page.evaluate("location.pathname")
    for kind in ("mousePressed", "mouseReleased"):
        page.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})
    try:  # the page left never answers this: the reply comes when it is gone (an error), or at once from the next
        page.call("Runtime.evaluate", {"expression": f"location.pathname === {json.dumps(before)} ? "
                                                     "new Promise(() => {}) : 1", "awaitPromise": True})
    except AssertionError:
        pass
    loaded = page.call("Runtime.evaluate", {
        "expression": "document.readyState === 'complete' ? location.pathname : "
                      "new Promise(r => addEventListener('load', () => r(location.pathname)))",
        "awaitPromise": True, "returnByValue": True})
    return str(loaded["result"]["value"])


@pytest.mark.browser
def test_clicking_a_row_opens_its_point_page(swept):
    out, outcome = swept
    failing = outcome.results[outcome.results["status"] != "ok"].iloc[0]
    with Page(out / "index.html", width=1024, height=900) as page:
        centre = page.evaluate(f"""(() => {{
            const a = document.querySelector('#results a[href="{point_page_name(failing['hash'])}"]');
            const b = a.getBoundingClientRect(); return [b.x + b.width / 2, b.y + b.height / 2];
        }})()""")
        path = follow(page, *centre)
        assert path.endswith(f"/points/{failing['hash']}.html")
        assert page.evaluate("document.getElementById('word').textContent") == "below M_R"
        assert page.evaluate("document.getElementById('message').textContent") == failing["status"]
        settings = page.evaluate("[...document.querySelectorAll('#settings tr')].map(r => r.children[0].textContent + "
                                 "'=' + r.children[1].textContent)")
        assert "sram=512 B" in settings and "model=dag" in settings
        assert page.evaluate("document.querySelector('#settings tr').children[2].textContent").endswith("dag.json")
        # and back to all points from there
        back = page.evaluate("(() => { const b = document.querySelector('a[href=\"../index.html\"]')"
                             ".getBoundingClientRect(); return [b.x + b.width / 2, b.y + b.height / 2]; })()")
        assert follow(page, *back).endswith("/sweep/index.html")
        assert page.evaluate("document.querySelectorAll('#results tr').length") == 6 + 1
        assert page.errors == []

"""The report's pictures: SVG documents written by accelsim.svg, one element per residency or operator."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import pytest

from accelsim import compile_and_simulate
from accelsim.cli import main
from accelsim.report import PLOT_FILES
from accelsim.svg import Chart, LegendEntry, linear_ticks, log_label, log_ticks
from frontend.graph import save_graph

SVG = "{http://www.w3.org/2000/svg}"


def parse(path):
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    return root


def group(root, group_id):
    found = [g for g in root.iter(f"{SVG}g") if g.get("id") == group_id]
    assert len(found) == 1, group_id
    return found[0]


@pytest.fixture
def spilled(chain_graph, toy_hw, tmp_path):
    """The chain on a 3 KiB toy scratchpad with the online arena: a1 and a5 are spilled and retrieved."""
    out = tmp_path / "report"
    report = compile_and_simulate(chain_graph(), hw=toy_hw(dma=dict(channels=2)), sram=3072,
                                  allocator="online-first-fit", out_dir=out)
    assert report.retrieves > 0
    return report, out


def test_the_report_folder_holds_three_well_formed_svgs(spilled):
    _, out = spilled
    assert sorted(p.name for p in out.iterdir()) == sorted([*PLOT_FILES, "report.html", "report.json", "trace.json"])
    for name in PLOT_FILES:
        root = parse(out / name)
        assert root.find(f"{SVG}title").text  # the document's title names the run
        assert group(root, "axes").findall(f"{SVG}text"), name  # tick labels


def test_layout_has_one_rectangle_per_residency_at_its_steps_and_offset(spilled):
    report, out = spilled
    root = parse(out / "layout.svg")
    rects = group(root, "residencies").findall(f"{SVG}rect")
    residencies = report.schedule.residencies
    assert len(rects) == len(residencies) == report.n_residencies
    # one pixel scale per axis: width / steps and height / bytes are the same for every residency
    pairs = list(zip(rects, residencies, strict=True))
    per_step = {round(float(r.get("width")) / (res.end - res.start), 1) for r, res in pairs}
    per_byte = {round(float(r.get("height")) / res.size, 3) for r, res in pairs}
    assert len(per_step) == 1 and len(per_byte) == 1, (per_step, per_byte)
    # a higher offset is drawn higher up (smaller y), and each tooltip names its residency
    by_offset = sorted(pairs, key=lambda pair: report.offsets[pair[1].id])
    bottoms = [float(r.get("y")) + float(r.get("height")) for r, _ in by_offset]
    assert bottoms == sorted(bottoms, reverse=True)
    for rect, res in pairs:
        assert rect.find(f"{SVG}title").text.startswith(f"{res.id} (")
    kinds = {rect.find(f"{SVG}title").text.split("(")[1].split(")")[0] for rect in rects}
    assert "retrieved" in kinds
    legend = [t.text for t in group(root, "legend").iter(f"{SVG}text")]
    assert "retrieved" in legend and "capacity" in legend


def test_memory_draws_live_bytes_and_highest_address_against_the_capacity(spilled):
    report, out = spilled
    root = parse(out / "memory.svg")
    paths = root.findall(f".//{SVG}path")
    assert len(paths) == 2  # the area of bytes allocated, the line of the highest address
    # one horizontal and one vertical move per timeline event after the first
    for path in paths:
        assert len(re.findall("V", path.get("d"))) >= len(report.sim.memory_timeline)
    assert any(line.get("stroke") == "red" and line.get("stroke-dasharray") for line in root.iter(f"{SVG}line"))


def test_roofline_has_a_point_per_operator_with_macs_below_the_compute_roof(spilled):
    report, out = spilled
    root = parse(out / "roofline.svg")
    circles = [c for g in root.iter(f"{SVG}g") if (g.get("id") or "").startswith("points-")
               for c in g.findall(f"{SVG}circle")]
    expected = [o for o in report.sim.ops if o.macs > 0 and o.end_cycle > o.start_cycle and o.sram_bytes > 0]
    assert len(circles) == len(expected) > 0
    names = {c.find(f"{SVG}title").text.split(":")[0] for c in circles}
    assert names == {o.name for o in expected}
    achieved = [float(c.find(f"{SVG}title").text.split(", ")[1].split()[0].replace(",", "")) for c in circles]
    assert max(achieved) <= report.peak_macs_per_cycle
    assert len(root.findall(f".//{SVG}polyline")) == 2  # the scratchpad roof and the DRAM roof


def test_run_no_plots_writes_the_json_files_only(chain_graph, tmp_path, capsys):
    graph = tmp_path / "chain.json"
    save_graph(chain_graph(), graph)
    out = tmp_path / "out"
    assert main(["run", str(graph), "--no-plots", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json", "trace.json"]
    assert "memory check" in capsys.readouterr().out


def test_names_with_markup_characters_stay_well_formed(chain_graph, toy_hw, tmp_path):
    graph = chain_graph()
    graph.graph["name"] = 'a<b> & "c"'
    out = tmp_path / "report"
    compile_and_simulate(graph, hw=toy_hw(), out_dir=out)
    for name in PLOT_FILES:
        assert parse(out / name).find(f"{SVG}title").text.startswith('a<b> & "c" on toy')


# ------------------------------------------------------------------------------------------
# accelsim.svg


def test_linear_ticks_are_round_and_cover_the_range():
    ticks, step = linear_ticks(0, 2.16)
    assert step == 0.5 and ticks == [0.0, 0.5, 1.0, 1.5, 2.0]
    ticks, step = linear_ticks(0, 173)
    assert step == 50 and ticks == [0, 50, 100, 150]


def test_log_ticks_are_powers_of_ten_with_minor_ticks_between():
    major, minor = log_ticks(0.05, 2000)
    assert major == [0.1, 1.0, 10.0, 100.0, 1000.0]
    assert 0.05 in minor and 2000 in minor and 20 in minor and 10 not in minor
    assert [log_label(v) for v in major] == ["0.1", "1", "10", "100", "1,000"]


def test_a_chart_refuses_an_empty_or_non_positive_log_range():
    with pytest.raises(ValueError, match="x_range"):
        Chart(title="t", x_label="x", y_label="y", x_range=(1, 1), y_range=(0, 1))
    with pytest.raises(ValueError, match="y_range .* positive on a log axis"):
        Chart(title="t", x_label="x", y_label="y", x_range=(0, 1), y_range=(0, 10), y_log=True)
    with pytest.raises(ValueError, match="x_range"):
        Chart(title="t", x_label="x", y_label="y", x_range=(0, math.nan), y_range=(0, 1))


def test_chart_maps_data_to_the_plot_area_and_clips_the_data_layer():
    chart = Chart(title="t", x_label="x", y_label="y", x_range=(0, 10), y_range=(1, 100), y_log=True,
                  legend=[LegendEntry("a", "red")])
    assert chart.x(0) == chart.left and chart.x(10) == chart.right
    assert chart.y(1) == chart.bottom and chart.y(100) == chart.top
    assert chart.y(10) == pytest.approx((chart.top + chart.bottom) / 2)
    chart.add("data", chart.rect(2, 4, 1, 10, fill="blue"))
    root = ET.fromstring(chart.to_svg())
    clipped = [g for g in root.iter(f"{SVG}g") if g.get("clip-path") == "url(#plot-area)"]
    assert len(clipped) == 1 and len(clipped[0].findall(f"{SVG}rect")) == 1


def test_a_graph_without_macs_gets_the_ceilings_and_no_points(toy_hw, tmp_path):
    from frontend.graph import add_operator, add_tensor, new_graph

    graph = new_graph("adds", dtype="int8")
    add_tensor(graph, "x", (1, 64), kind="input")
    add_operator(graph, "a0", "add", inputs=["x", "x"], outputs={"y": (1, 64)})
    add_operator(graph, "a1", "relu", inputs=["y"], outputs={"z": (1, 64)})
    graph.graph["outputs"] = ["z"]
    graph.graph["tensors"]["z"]["kind"] = "output"
    out = tmp_path / "report"
    compile_and_simulate(graph, hw=toy_hw(), out_dir=out)
    root = parse(out / "roofline.svg")
    assert len(root.findall(f".//{SVG}polyline")) == 2 and not root.findall(f".//{SVG}circle")
    assert len(group(parse(out / "layout.svg"), "residencies").findall(f"{SVG}rect")) == 3

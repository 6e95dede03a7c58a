"""The report's pictures: SVG documents written by accelsim.svg, one element per residency or operator."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import pytest

from accelsim import compile_and_simulate
from accelsim.cli import main
from accelsim.report import PLOT_FILES
from accelsim.svg import Chart, LegendEntry, linear_ticks, log_label, log_ticks, short_label, spread_points
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
    # (the same up to the rounding of coordinates to hundredths of a pixel)
    per_step = [float(r.get("width")) / (res.end - res.start) for r, res in pairs]
    per_byte = [float(r.get("height")) / res.size for r, res in pairs]
    assert per_step == pytest.approx([per_step[0]] * len(pairs), rel=1e-3)
    assert per_byte == pytest.approx([per_byte[0]] * len(pairs), rel=1e-3)
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


# ------------------------------------------------------------------------------------------
# readable pictures: the byte axis follows the peak, tensors and stalls are named

UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def y_axis_top_bytes(root):
    """The largest y tick label of a byte axis, in bytes (the unit read from the axis title)."""
    title = next(t.text for t in root.iter(f"{SVG}text") if (t.get("transform") or "").startswith("rotate"))
    unit = UNITS[re.search(r"\b(B|KiB|MiB|GiB)\b", title).group(1)]
    ticks = [float(t.text.replace(",", "")) for t in group(root, "axes").findall(f"{SVG}text")
             if t.get("text-anchor") == "end"]
    return max(ticks) * unit


def texts(root, group_id=None):
    where = root if group_id is None else group(root, group_id)
    return [t.text for t in where.iter(f"{SVG}text")]


@pytest.fixture
def roomy(chain_graph, toy_hw, tmp_path):
    """The chain on a 1 MiB scratchpad: its peak is a few KiB, far below the capacity."""
    out = tmp_path / "report"
    report = compile_and_simulate(chain_graph(), hw=toy_hw(), sram=2**20, out_dir=out)
    assert report.peak_bytes * 20 < report.capacity_bytes
    return report, out


def test_a_peak_far_below_the_capacity_fills_the_byte_axis_and_the_capacity_is_a_note(roomy):
    report, out = roomy
    for name in ("layout.svg", "memory.svg"):
        root = parse(out / name)
        top = y_axis_top_bytes(root)
        assert 0.5 * report.peak_bytes <= top <= 1.3 * report.peak_bytes, (name, top, report.peak_bytes)
        marks = texts(root, "capacity")
        assert any(t.startswith("capacity 1 MiB (chip) is above this axis") for t in marks), marks
        assert any(t.startswith("peak ") for t in marks), marks
        assert not any(line.get("stroke") == "red" for line in root.iter(f"{SVG}line"))  # no capacity line
        legend = texts(root, "legend")
        assert "peak" in legend and "capacity" not in legend


def test_a_capacity_near_the_peak_is_drawn_as_a_line_inside_the_axis(spilled):
    report, out = spilled
    assert report.capacity_bytes <= 1.25 * report.peak_bytes
    for name in ("layout.svg", "memory.svg"):
        root = parse(out / name)
        assert y_axis_top_bytes(root) <= 1.3 * report.capacity_bytes
        red = [line for line in group(root, "capacity").iter(f"{SVG}line") if line.get("stroke") == "red"]
        assert len(red) == 1
        frame_top = min(float(line.get("y1")) for line in group(root, "grid").findall(f"{SVG}line")
                        if line.get("y1") == line.get("y2"))
        assert float(red[0].get("y1")) >= frame_top  # inside the plot area
        assert "capacity 3 KiB (chip)" in texts(root, "capacity")  # every byte figure says its scope
        assert "capacity" in texts(root, "legend")


def test_layout_names_the_largest_tensors_with_labels_that_do_not_overlap(roomy):
    from accelsim.svg import text_box

    report, out = roomy
    root = parse(out / "layout.svg")
    labels = group(root, "tensor-labels").findall(f"{SVG}text")
    largest = max(report.schedule.residencies, key=lambda r: (r.size * (r.end - r.start), r.id))
    names = [t.text for t in labels]
    assert largest.tensor in names and len(names) == len(set(names)) >= 3
    boxes = [text_box(float(t.get("x")), float(t.get("y")), t.text, float(t.get("font-size")),
                      "vertical" if t.get("transform") else t.get("text-anchor")) for t in labels]
    for i, a in enumerate(boxes):
        for b in boxes[:i]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)


def test_roofline_joins_each_stalled_operator_to_its_stall_free_point(spilled):
    report, out = spilled
    root = parse(out / "roofline.svg")
    stalled = [o for o in report.sim.ops if o.macs > 0 and o.end_cycle > o.start_cycle and o.sram_bytes > 0
               and o.stall_cycles > 0 and o.compute_cycles < o.end_cycle - o.start_cycle + o.dma_stall_cycles]
    assert stalled, "the spilled chain waits for its retrieves"
    rings = group(root, "stall-free").findall(f"{SVG}circle")
    segments = group(root, "stalls").findall(f"{SVG}line")
    assert len(rings) == len(segments) == len(stalled)
    dots = {c.find(f"{SVG}title").text.split(":")[0]: c for g in root.iter(f"{SVG}g")
            if (g.get("id") or "").startswith("points-") for c in g.findall(f"{SVG}circle")}
    for o, ring, segment in zip(stalled, rings, segments, strict=True):
        tip = ring.find(f"{SVG}title").text
        assert tip.startswith(f"{o.name}: ") and "stall-free" in tip and "achieved" in tip and "DMA wait" in tip
        free = o.macs / o.compute_cycles
        assert f"{free:,.1f} stall-free" in tip
        dot = dots[o.name]
        # a vertical segment from the ring (higher: faster) down to the dot
        assert segment.get("x1") == segment.get("x2") == ring.get("cx") == dot.get("cx")
        assert float(ring.get("cy")) == float(segment.get("y1")) < float(segment.get("y2")) == float(dot.get("cy"))
    legend = " ".join(texts(root, "legend"))
    assert "stall-free" in legend and "stalls" in legend
    worst = max(stalled, key=lambda o: (o.stall_cycles, o.name))
    assert any(t.startswith(f"{worst.name} (") for t in texts(root, "stall-labels"))


# ------------------------------------------------------------------------------------------
# labels that keep what tells names apart, points that do not hide one another, scope, width

VIT_BLOCKS = [f"encoder_layers_encoder_layer_{i}_self_attention" for i in range(12)]


@pytest.mark.parametrize("most", [20, 26, 32, 40])
def test_short_labels_keep_the_layer_numbers_of_a_transformer_distinct(most):
    labels = [short_label(name, most) for name in VIT_BLOCKS]
    assert all(len(label) <= most for label in labels)
    assert len(set(labels)) == len(labels), labels  # a middle cut gave all twelve "encoder_laye...elf_attention"
    for i, label in enumerate(labels):
        assert re.search(rf"(^|\W|_){i}(\W|_|$)", label), (i, label)  # the block's number, whole


def test_short_labels_keep_the_numbers_of_nested_blocks_and_of_llm_layers():
    names = [f"features.denseblock{b}.denselayer{n}.conv2.weight" for b in (3, 4) for n in (1, 12, 16)]
    labels = [short_label(name, 40) for name in names]
    assert len(set(labels)) == len(labels), labels
    for label, (b, n) in zip(labels, [(b, n) for b in (3, 4) for n in (1, 12, 16)], strict=True):
        assert f"denseblock{b}." in label and f"denselayer{n}." in label, label
    llm = [short_label(f"model_layers_{i}_self_attn_q_proj", 24) for i in range(32)]
    assert len(set(llm)) == 32 and all(len(label) <= 24 for label in llm), llm
    assert short_label("layer4.0.conv2.weight", 36) == "layer4.0.conv2.weight"  # short enough: as it is


def test_spread_points_moves_only_points_that_would_hide_one_another():
    crowd = [(100.0, 50.0)] * 12 + [(100.5, 50.2)] * 3  # one group: 15 points within half a gap
    alone = [(300.0, 80.0), (140.0, 50.0)]
    moved = spread_points(crowd + alone, gap=7)
    assert moved[-2:] == alone
    group = moved[:15]
    closest = min(math.dist(a, b) for i, a in enumerate(group) for b in group[:i])
    assert closest >= 7 - 1e-9
    centre = (sum(x for x, _ in group) / 15, sum(y for _, y in group) / 15)
    assert max(math.dist(p, (100.1, 50.04)) for p in group) < 7 * 5  # around where they were
    assert abs(centre[0] - 100.1) < 7
    assert spread_points([(5.0, 5.0), (5.0, 5.0)], gap=6) == [(2.0, 5.0), (8.0, 5.0)]  # a pair: side by side
    # none is drawn above its group's highest point (y grows downwards): never above a roof
    assert min(y for _, y in group) >= 50.0 - 1e-9
    for n in range(2, 120):
        spread = spread_points([(10.0, 10.0)] * n, gap=7)
        assert min(y for _, y in spread) >= 10.0 - 1e-9
        assert min(math.dist(a, b) for i, a in enumerate(spread) for b in spread[:i]) >= 7 - 1e-6


@pytest.fixture(scope="module")
def repeated_blocks(tmp_path_factory):
    """A model of six identical convolution blocks with a ReLU and an add between them: six
    operators at one point of the roofline, and operators without MACs."""
    import torch
    from torch import nn

    import frontend

    class Blocks(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv2d(3, 32, 3, padding=1)
            self.layers = nn.ModuleList(nn.Conv2d(32, 32, 3, padding=1) for _ in range(6))

        def forward(self, x):
            x = self.stem(x)
            for layer in self.layers:
                x = x + torch.relu(layer(x))
            return x

    graph = frontend.trace(Blocks(), (torch.zeros(1, 3, 16, 16),), dtype="int8", name="blocks")
    out = tmp_path_factory.mktemp("blocks") / "report"
    return compile_and_simulate(graph, hw="pixel6", out_dir=out), out


def test_roofline_svg_shows_every_operator_with_macs_apart_and_names_the_others(repeated_blocks):
    report, out = repeated_blocks
    root = parse(out / "roofline.svg")
    dots = [c for g in root.iter(f"{SVG}g") if (g.get("id") or "").startswith("points-")
            for c in g.findall(f"{SVG}circle")]
    with_macs = [o for o in report.sim.ops if o.macs > 0]
    assert len(dots) == len(with_macs) == 7
    centres = [(float(c.get("cx")), float(c.get("cy"))) for c in dots]
    assert min(math.dist(a, b) for i, a in enumerate(centres) for b in centres[:i]) >= 3.5  # none hides another
    # the blocks that ran alike share one point: each of their dots is moved and joined to it by a
    # leg (a point the spread group would land on joins it, and is moved too)
    at = [(o.macs / o.sram_bytes, o.macs / (o.end_cycle - o.start_cycle + o.dma_stall_cycles)) for o in with_macs]
    shared = sum(1 for point in at if at.count(point) > 1)
    assert shared >= 5 and shared <= len(group(root, "legs").findall(f"{SVG}line")) <= len(dots)
    assert any("same point" in t for t in texts(root, "legend"))
    note = " ".join(texts(root, "not-drawn"))
    others = [o for o in report.sim.ops if o.macs == 0]
    assert note.startswith(f"not drawn: {len(others)} operators without MACs (")
    assert "relu 6" in note and "add 6" in note
    assert "(chip)" in " ".join(texts(root, "legend"))  # the bandwidths' scope


def test_svgs_shrink_to_a_narrow_window_and_say_the_scope_of_their_bytes(repeated_blocks):
    report, out = repeated_blocks
    for name in PLOT_FILES:
        root = parse(out / name)
        assert "max-width:100%" in root.get("style")
        assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    layout = parse(out / "layout.svg")
    scope = report.capacity_scope
    assert scope == "per PE (16 PEs)"
    axis_title = next(t.text for t in layout.iter(f"{SVG}text") if (t.get("transform") or "").startswith("rotate"))
    assert axis_title.endswith("per PE (16 PEs)") and "((" not in axis_title and "))" not in axis_title
    tips = [r.find(f"{SVG}title").text for r in group(layout, "residencies").findall(f"{SVG}rect")]
    assert tips and all(t.endswith(f"B {scope}") for t in tips)
    peak = [t for t in texts(layout, "capacity") if t.startswith("peak")]
    assert peak and peak[0].startswith("peak ") and f" {scope}, " in peak[0]

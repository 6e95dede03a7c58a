"""accelsim.sweeps.plots: which figures a sweep's results table gives, and the Pareto selection.

Synthetic tables only: no tracing, no simulation."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from accelsim.sweeps.plots import (
    constant_limits,
    distinct_labels,
    overlapping_series,
    pareto_mask,
    plot_sweep,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def row(model: str, status: str = "ok", **grid) -> dict:
    """One results row: the grid values given, metrics that depend on them so lines are not flat."""
    sram = grid.get("sram", 1 << 20)
    rows = grid.get("compute.rows", 32)
    measured = status == "ok"
    spill = max(0, (1 << 20) - sram) * 2
    cycles = 1e6 * (2 if model == "resnet50" else 1) * 32 / rows + spill / 100 if measured else math.nan
    return {
        "model": model, "hw": "pixel6", **grid, "status": status,
        "cycles": cycles if measured else math.nan, "seconds": cycles / 1e9 if measured else math.nan,
        "utilization": 0.5, "dram_read_bytes": 2e7 + spill, "dram_write_bytes": 1024 + spill / 2,
        "noncompulsory_bytes": 1.5 * spill, "energy_j": cycles * 3e-9 if measured else math.nan,
        "peak_bytes": sram, "min_capacity_bytes": 80_000, "scheduler_status": "heuristic", "wall_s": 0.1,
        "hash": "0" * 12,
    }


def grid(models, **values) -> pd.DataFrame:
    names = list(values)
    return pd.DataFrame([row(m, **dict(zip(names, point, strict=True)))
                         for m in models for point in itertools.product(*values.values())])


def names(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def assert_pngs(paths: list[Path], out: Path) -> None:
    assert sorted(p.name for p in out.iterdir()) == sorted(names(paths))
    for path in paths:
        assert path.parent == out and path.read_bytes()[:8] == PNG_MAGIC
    assert plt.get_fignums() == []  # every figure closed


def test_one_numeric_key_gives_one_three_panel_figure_named_after_it(tmp_path):
    table = grid(["resnet50", "mobilenet_v2"], **{"compute.rows": [16, 32, 64, 128]})
    paths = plot_sweep(table, ["compute.rows"], tmp_path)
    assert names(paths) == ["compute_rows.png"]
    assert_pngs(paths, tmp_path)


def test_two_numeric_keys_add_a_heatmap_per_model_in_sorted_order(tmp_path):
    table = grid(["resnet50", "mobilenet_v2"], **{"compute.rows": [16, 32, 64],
                                                  "dram_bandwidth_bytes_per_s": [16e9, 32e9, 64e9, 128e9]})
    paths = plot_sweep(table, ["compute.rows", "dram_bandwidth_bytes_per_s"], tmp_path / "plots")
    assert names(paths) == [
        "compute_rows.png", "dram_bandwidth_bytes_per_s.png",
        "heatmap_compute_rows_dram_bandwidth_bytes_per_s_mobilenet_v2.png",
        "heatmap_compute_rows_dram_bandwidth_bytes_per_s_resnet50.png",
    ]
    assert_pngs(paths, tmp_path / "plots")


def test_three_numeric_keys_give_a_heatmap_for_every_pair(tmp_path):
    table = grid(["resnet50"], sram=[1 << 18, 1 << 20], **{"compute.rows": [16, 32], "dram_bytes": [1 << 30, 1 << 31]})
    paths = plot_sweep(table, ["sram", "compute.rows", "dram_bytes"], tmp_path)
    assert names(paths) == [
        "sram.png", "compute_rows.png", "dram_bytes.png",
        "heatmap_sram_compute_rows_resnet50.png", "heatmap_sram_dram_bytes_resnet50.png",
        "heatmap_compute_rows_dram_bytes_resnet50.png", "pareto_sram.png",
    ]
    assert_pngs(paths, tmp_path)


def test_sram_with_a_string_key_gives_its_figure_and_the_pareto_plot(tmp_path):
    table = grid(["resnet50", "mobilenet_v2"], sram=[1 << k for k in range(16, 23)], scheduler=["belady", "program"])
    paths = plot_sweep(table, ["sram", "scheduler"], tmp_path)
    assert names(paths) == ["sram.png", "pareto_sram.png"]
    assert_pngs(paths, tmp_path)


def test_a_string_key_alone_gives_no_figure_and_writes_nothing(tmp_path):
    table = grid(["resnet50", "mobilenet_v2"], scheduler=["belady", "program", "cosma"])
    assert plot_sweep(table, ["scheduler"], tmp_path / "plots") == []
    assert not (tmp_path / "plots").exists()


def test_failed_rows_are_not_plotted(tmp_path):
    # compute.rows varies only through the failed rows: among the ok rows it is constant
    table = pd.DataFrame([row("resnet50", **{"compute.rows": 32}),
                          row("resnet50", status="does not fit: M_R 80 KiB > capacity", **{"compute.rows": 64}),
                          row("resnet50", status="timeout", **{"compute.rows": 128})])
    assert plot_sweep(table, ["compute.rows"], tmp_path / "none") == []
    # a failed row holding text where a number was expected does not make the key non-numeric
    table = pd.concat([grid(["resnet50"], **{"compute.rows": [16, 32, 64]}),
                       pd.DataFrame([row("resnet50", status="bad value", **{"compute.rows": "huge"})])])
    paths = plot_sweep(table, ["compute.rows"], tmp_path / "some")
    assert names(paths) == ["compute_rows.png"]
    assert_pngs(paths, tmp_path / "some")


def test_failed_cells_leave_holes_in_the_heatmap_and_lines(tmp_path):
    table = grid(["resnet50"], sram=[1 << 16, 1 << 18, 1 << 20], **{"compute.rows": [16, 32]})
    table.loc[0, ["status", "cycles", "energy_j"]] = ["does not fit", math.nan, math.nan]
    table = table.drop(index=3)  # a cell never run
    paths = plot_sweep(table, ["sram", "compute.rows"], tmp_path)
    assert names(paths) == ["sram.png", "compute_rows.png", "heatmap_sram_compute_rows_resnet50.png",
                            "pareto_sram.png"]
    assert_pngs(paths, tmp_path)


def test_all_rows_failed_gives_nothing(tmp_path):
    table = grid(["resnet50"], sram=[1 << 16, 1 << 18])
    table["status"] = "does not fit: M_R 80 KiB > capacity"
    assert plot_sweep(table, ["sram"], tmp_path / "plots") == []
    assert not (tmp_path / "plots").exists()


def test_an_unknown_key_raises_a_one_line_value_error(tmp_path):
    table = grid(["resnet50"], sram=[1 << 16, 1 << 18])
    with pytest.raises(ValueError, match="'compute.cols' is not a column") as caught:
        plot_sweep(table, ["sram", "compute.cols"], tmp_path)
    assert "\n" not in str(caught.value)
    assert not any(tmp_path.iterdir())


def test_many_combinations_still_give_one_readable_figure_per_key(tmp_path):
    table = grid(["resnet50", "mobilenet_v2"], sram=[1 << 16, 1 << 18, 1 << 20],
                 scheduler=["belady", "program", "cosma"], allocator=["first-fit", "best-fit", "minimalloc"])
    paths = plot_sweep(table, ["sram", "scheduler", "allocator"], tmp_path)  # 18 lines, 12 drawn
    assert names(paths) == ["sram.png", "pareto_sram.png"]
    assert_pngs(paths, tmp_path)


def test_the_same_table_in_another_row_order_gives_the_same_files(tmp_path):
    table = grid(["resnet50", "mobilenet_v2"], sram=[1 << 16, 1 << 18, 1 << 20], **{"compute.rows": [16, 32]})
    first = plot_sweep(table, ["sram", "compute.rows"], tmp_path / "a")
    shuffled = table.sample(frac=1.0, random_state=3).reset_index(drop=True)
    second = plot_sweep(shuffled, ["sram", "compute.rows"], tmp_path / "b")
    assert names(first) == names(second)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_the_callers_table_is_left_unchanged(tmp_path):
    table = grid(["resnet50"], sram=[1 << 16, 1 << 18])
    before = table.copy()
    plot_sweep(table, ["sram"], tmp_path)
    pd.testing.assert_frame_equal(table, before)


def test_pareto_mask_keeps_exactly_the_undominated_points():
    # (sram, non-compulsory bytes, cycles)
    points = [
        [1, 10, 100],  # 0: least SRAM                                  optimal
        [2, 5, 100],  # 1: more SRAM, less traffic                      optimal
        [2, 5, 100],  # 2: equal to 1: neither dominates                optimal
        [2, 6, 100],  # 3: 1 is no worse anywhere, less traffic         dominated
        [4, 0, 90],  # 4: most SRAM, no traffic, fewest cycles          optimal
        [4, 0, 95],  # 5: 4 with more cycles                            dominated
        [3, 5, 99],  # 6: 1 has less SRAM, 6 fewer cycles: a trade-off   optimal
        [1, 10, 101],  # 7: 0 with one more cycle                       dominated
    ]
    assert pareto_mask(points).tolist() == [True, True, True, False, True, False, True, False]


def test_pareto_mask_edge_cases():
    assert pareto_mask(np.empty((0, 3))).tolist() == []
    assert pareto_mask([[5, 5]]).tolist() == [True]
    assert pareto_mask([[1, 2], [2, 1], [3, 3], [0, math.nan]]).tolist() == [True, True, False, False]
    with pytest.raises(ValueError, match="n x d"):
        pareto_mask([1, 2, 3])


# --------------------------------------------------------------------------------------------
# readable figures: constant series, colour bar labels, lines that coincide


@pytest.fixture
def drawn(monkeypatch) -> dict[str, Figure]:
    """The figures ``plot_sweep`` saves, by file name, kept for inspection after it closes them."""
    figures: dict[str, Figure] = {}
    save = Figure.savefig

    def keep(fig, path, *args, **kwargs):
        save(fig, path, *args, **kwargs)  # draws the figure: tick labels are those in the file
        # saved under a temporary name that accelsim.outputs.replaced renames into place: keep the final one
        figures[re.sub(r"^\.(.+)\.\d+\.[0-9a-f]+\.partial(\.\w+)$", r"\1\2", Path(path).name)] = fig

    monkeypatch.setattr(Figure, "savefig", keep)
    return figures


def tick_labels(axis) -> list[str]:
    low, high = sorted(axis.get_view_interval())
    return [t.get_text() for t, v in zip(axis.get_majorticklabels(), axis.get_majorticklocs(), strict=True)
            if low - 1e-9 * abs(high) <= v <= high + 1e-9 * abs(high)]


def colour_bars(fig: Figure) -> list:
    return [ax for ax in fig.axes if ax.get_ylabel().startswith("cycles") and ax.get_label() == "<colorbar>"]


def test_a_constant_series_is_drawn_from_zero_with_zero_and_its_value_as_the_only_ticks(tmp_path, drawn):
    table = grid(["resnet50", "mobilenet_v2"], sram=[1 << 20, 1 << 21, 1 << 22])  # no spill: non-compulsory 0
    table["dram_read_bytes"] = 3 << 20  # the same traffic everywhere
    table["dram_write_bytes"] = 0
    plot_sweep(table, ["sram"], tmp_path)
    for panel in drawn["pareto_sram.png"].axes:
        if panel.get_ylabel().startswith("non-compulsory"):
            low, high = panel.get_ylim()
            assert low == 0 < high  # not -0.04 .. 0.04
            assert tick_labels(panel.yaxis) == ["0"]
            assert "all points: 0 B" in panel.get_title()
    traffic = drawn["sram.png"].axes[1]
    low, high = traffic.get_ylim()
    assert traffic.get_ylabel() == "DRAM read + write (MiB)"
    assert low == 0 and 3 < high < 5  # 3 MiB inside the range, not at its edge
    assert tick_labels(traffic.yaxis) == ["0", "3"]
    assert any("all points: 3 MiB" in text.get_text() for text in traffic.texts)


def test_an_axis_of_varying_non_negative_values_does_not_go_below_zero(tmp_path, drawn):
    table = grid(["resnet50"], sram=[1 << 19, 1 << 20, 1 << 21])  # non-compulsory bytes 1 MiB .. 0
    plot_sweep(table, ["sram"], tmp_path)
    panel = next(ax for ax in drawn["pareto_sram.png"].axes if ax.get_ylabel().startswith("non-compulsory"))
    assert panel.get_ylim()[0] >= 0
    assert not any(label.startswith(("-", "\u2212")) for label in tick_labels(panel.yaxis))


@pytest.mark.parametrize("spread", [0, 300, 3000])
def test_colour_bar_labels_are_each_written_once(tmp_path, drawn, spread):
    # cycles 726k, to a few hundred or thousand cycles: every label read "726k" three times
    table = grid(["resnet50"], sram=[1 << 18, 1 << 19, 1 << 20], **{"compute.rows": [16, 32]})
    table["cycles"] = 726_000 + spread * np.arange(len(table)) / len(table)
    plot_sweep(table, ["sram", "compute.rows"], tmp_path)
    bars = [bar for name in ("heatmap_sram_compute_rows_resnet50.png", "pareto_sram.png")
            for bar in colour_bars(drawn[name])]
    assert len(bars) == 2
    for bar in bars:
        labels = [label for label in tick_labels(bar.yaxis) if label]
        assert labels and len(labels) == len(set(labels)), labels
        if spread == 0:
            assert labels == ["726k"] and bar.get_ylabel() == "cycles (all points: 726k)"
        else:
            assert len(labels) >= 2
    # the heatmap's cells: different values read differently, not "726k" six times
    cells = [text.get_text() for text in drawn["heatmap_sram_compute_rows_resnet50.png"].axes[0].texts]
    assert len(cells) == 6 and len(set(cells)) == (1 if spread == 0 else 6)


def test_lines_that_coincide_are_stacked_so_that_each_stays_visible(tmp_path, drawn):
    # "twin" measures exactly as "mobilenet_v2" (the synthetic metrics depend on the name only for
    # resnet50, and DRAM traffic not at all): lines [1] and [3] coincide, in the traffic panel all three
    table = grid(["mobilenet_v2", "resnet50", "twin"], sram=[1 << 18, 1 << 19, 1 << 20])
    plot_sweep(table, ["sram"], tmp_path)
    fig = drawn["sram.png"]
    cycles, traffic, energy = fig.axes
    for panel in (cycles, energy):
        mobilenet, resnet, twin = panel.get_lines()
        assert len({mobilenet.get_marker(), resnet.get_marker(), twin.get_marker()}) == 3
        # the first of the two beneath: wider, with bigger hollow markers; the second filled on top
        assert mobilenet.get_linewidth() > twin.get_linewidth() == resnet.get_linewidth()
        assert mobilenet.get_markersize() > twin.get_markersize()
        assert mobilenet.get_markerfacecolor() == "none" and twin.get_markerfacecolor() != "none"
        assert mobilenet.get_zorder() < twin.get_zorder()
        assert [text.get_text().splitlines()[-1] for text in panel.texts] == ["[1] = [3]"]
    widths = [line.get_linewidth() for line in traffic.get_lines()]
    zorders = [line.get_zorder() for line in traffic.get_lines()]
    assert widths == sorted(widths, reverse=True) and len(set(widths)) == 3
    assert zorders == sorted(zorders) and len(set(zorders)) == 3
    assert [text.get_text().splitlines()[-1] for text in traffic.texts] == ["[1] = [2] = [3]"]
    legend = [text.get_text() for text in cycles.get_legend().get_texts()]
    assert legend == ["[1] mobilenet_v2", "[2] resnet50", "[3] twin"]


def test_lines_apart_are_drawn_alike_and_unnumbered(tmp_path, drawn):
    table = grid(["resnet50", "mobilenet_v2"], **{"compute.rows": [16, 32, 64]})
    table.loc[table["model"] == "resnet50", "dram_read_bytes"] *= 2  # apart in every panel
    plot_sweep(table, ["compute.rows"], tmp_path)
    fig = drawn["compute_rows.png"]
    for panel in fig.axes:
        first, second = panel.get_lines()
        assert first.get_linewidth() == second.get_linewidth() and first.get_marker() != second.get_marker()
        assert first.get_markerfacecolor() != "none" and second.get_markerfacecolor() != "none"
        assert list(panel.texts) == []
    assert [text.get_text() for text in fig.axes[0].get_legend().get_texts()] == ["mobilenet_v2", "resnet50"]


def test_points_at_one_place_in_the_pareto_plot_are_concentric_discs(tmp_path, drawn):
    # compute.rows changes cycles but not traffic: two points at each SRAM size, one inside the other
    table = grid(["resnet50"], sram=[1 << 18, 1 << 20], **{"compute.rows": [16, 32]})
    plot_sweep(table, ["sram", "compute.rows"], tmp_path)
    panel = next(ax for ax in drawn["pareto_sram.png"].axes if ax.get_ylabel().startswith("non-compulsory"))
    cloud = panel.collections[0]
    sizes, places = cloud.get_sizes(), [tuple(p) for p in cloud.get_offsets()]
    assert len(places) == 4 and len(set(places)) == 2
    for place in set(places):
        at = [size for size, p in zip(sizes, places, strict=True) if p == place]
        assert len(set(at)) == 2  # two sizes: the smaller drawn on the bigger
    assert list(sizes) == sorted(sizes, reverse=True)  # the biggest first, beneath
    assert any("concentric" in text.get_text() for text in panel.get_legend().get_texts())


def test_constant_limits_start_at_zero_and_show_the_value():
    assert constant_limits([0, 0, 0]) == (0.0, 1.0)
    low, high = constant_limits([5e6, 5e6])
    assert low == 0 and 5e6 < high
    assert constant_limits([5e6, 5e6 * (1 + 1e-12)]) is not None  # rounding noise is no variation
    assert constant_limits([5e6, 5.001e6]) is None
    assert constant_limits([math.nan]) is None and constant_limits([]) is None


def test_distinct_labels_add_digits_until_no_label_repeats():
    def show(value, digits):
        return f"{value / 1e3:.{digits}g}k"

    assert distinct_labels([726_000, 726_200, 726_400], show) == ["726k", "726.2k", "726.4k"]
    assert distinct_labels([1e5, 2e5, 3e5], show) == ["100k", "200k", "300k"]
    labels = distinct_labels([1.0, 1.0 + 1e-13, 1.0 + 2e-13], show)
    assert [label for label in labels if label] == ["0.001k"]  # no two alike even when digits run out


def test_overlapping_series_groups_lines_within_tolerance_where_both_have_points():
    x = [1.0, 2.0, 3.0]
    series = [(x, [10, 20, 30]), (x, [10, 20, 30.1]), (x, [0, 0, 0]), ([3.0, 4.0], [30, 99]),
              (x, [math.nan, 20, 30]), ([5.0], [10])]
    # 1 within 1 % of the range 0..99; 3 and 4 share x = 3 and 2, 3; 5 shares no x value
    assert overlapping_series(series) == [[0, 1, 3, 4]]
    assert overlapping_series([(x, [1, 1, 1]), (x, [1, 1, 1])]) == [[0, 1]]
    assert overlapping_series([(x, [1, 1, 1]), (x, [2, 2, 2])]) == []
    assert overlapping_series([]) == []

"""accelsim.sweeps.plots: which figures a sweep's results table gives, and the Pareto selection.

Synthetic tables only: no tracing, no simulation."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from accelsim.sweeps.plots import pareto_mask, plot_sweep

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

"""``--tiling``: auto tiles weights to the run's scratchpad, weights keeps the config's rule, none tiles nothing."""

from __future__ import annotations

import pytest

from accelsim.cli import main
from accelsim.pipeline import compile_and_simulate, on_chip_graph
from accelsim.sweeps.grid import parse_grid_value
from accelsim.tiling import TILINGS, weight_tile_limit


def test_the_choices_and_their_limits(toy_hw):
    hw = toy_hw(sram_bytes_per_pe=1 << 20, weight_tile_bytes=1 << 16)
    assert tuple(TILINGS) == ("auto", "weights", "none")
    assert weight_tile_limit("weights", hw) == weight_tile_limit("auto", hw) == 1 << 16  # a quarter is 256 KiB
    small = hw.with_sram("64KiB")
    assert (weight_tile_limit("weights", small), weight_tile_limit("auto", small)) == (1 << 16, 1 << 14)
    assert weight_tile_limit("none", small) is None
    with pytest.raises(ValueError, match="tiling='rows' is not one of auto, weights, none"):
        weight_tile_limit("rows", hw)


def test_auto_tiles_to_the_scratchpad_and_streams_where_weights_would_not(toy_hw, heavy_linear):
    hw = toy_hw(weight_tile_bytes=1 << 17)
    fixed = compile_and_simulate(heavy_linear(), hw, sram="96KiB", tiling="weights")
    auto = compile_and_simulate(heavy_linear(), hw, sram="96KiB", tiling="auto")
    none = compile_and_simulate(heavy_linear(), hw, sram="96KiB", tiling="none")
    assert fixed.tiled_operators == none.tiled_operators == []  # 64 KiB weights are under 128 KiB
    assert len(auto.tiled_operators) == 8  # and over a quarter of 96 KiB: each streams in 3 tiles
    # a whole layer needs 80 KiB: no room to load the next weight while it runs
    assert (fixed.min_capacity_bytes, auto.min_capacity_bytes) == (81920, 32960)
    assert all(r.memory_check == "ok" for r in (fixed, auto, none))
    assert (auto.cycles, fixed.cycles, none.cycles) == (21106, 24932, 24932)
    assert auto.dma_wait_split["late"] < fixed.dma_wait_split["late"]


def test_where_whole_weights_double_buffer_auto_pays_the_concats(toy_hw, heavy_linear):
    # the figures accelsim.tiling's docstring quotes: 64 KiB + 16 KiB + the next 64 KiB fit in 160 KiB
    hw = toy_hw(weight_tile_bytes=1 << 17)
    fixed = compile_and_simulate(heavy_linear(), hw, sram="160KiB", tiling="weights")
    auto = compile_and_simulate(heavy_linear(), hw, sram="160KiB", tiling="auto")
    assert (auto.cycles, fixed.cycles) == (21348, 17694)
    assert auto.floor_cycles["compute"] - fixed.floor_cycles["compute"] == 8 * 512  # eight 8 KiB concats


def test_weights_keeps_every_operators_compute_cycles_whatever_the_sram(chain_graph, toy_hw):
    hw = toy_hw(weight_tile_bytes=256)
    at = {sram: compile_and_simulate(chain_graph(), hw, sram=sram, tiling="weights") for sram in ("8KiB", "64KiB")}
    assert [o["compute_cycles"] for o in at["8KiB"].ops] == [o["compute_cycles"] for o in at["64KiB"].ops]
    graph, _, tiled = on_chip_graph(chain_graph(), hw.with_sram("8KiB"), tiling="weights")
    assert tiled == at["8KiB"].tiled_operators


def test_a_bad_tiling_is_one_line_and_exit_2(chain_graph, tmp_path, capsys):
    assert main(["run", "resnet18", "--hw", "pixel6", "--tiling", "rows", "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: accelsim run: argument --tiling: invalid choice: 'rows' (choose from 'auto', 'weights', 'none')"]
    assert not (tmp_path / "r").exists()
    with pytest.raises(ValueError, match="tiling='rows' is not one of"):
        compile_and_simulate(chain_graph(), "pixel6", tiling="rows")


def test_the_sweep_grid_takes_tiling():
    assert parse_grid_value("tiling", " none ") == "none"
    with pytest.raises(ValueError, match=r"--grid tiling=rows: tiling='rows' is not one of auto, weights, none"):
        parse_grid_value("tiling", "rows")


def test_report_ops_keep_one_record_per_traced_operator_with_its_tiles_inside(toy_hw, heavy_linear):
    hw = toy_hw(weight_tile_bytes=1 << 17)
    graph = heavy_linear()
    auto = compile_and_simulate(graph, hw, sram="96KiB", tiling="auto")
    whole = compile_and_simulate(graph, hw, sram="96KiB", tiling="none")
    assert [o["name"] for o in auto.ops] == [o["name"] for o in whole.ops] == [f"fc{i}" for i in range(8)]
    for o in auto.ops:
        parts = o["tiles"]
        assert [p["name"] for p in parts] == [f"{o['name']}.tile{t}" for t in range(3)] + [f"{o['name']}.concat"]
        assert o["macs"] == sum(p["macs"] for p in parts) == 32 * 256 * 256
        assert o["compute_cycles"] == sum(p["compute_cycles"] for p in parts)
        assert o["stall_cycles"]["dma_wait"] == sum(p["stall_cycles"]["dma_wait"] for p in parts)
        assert (o["start_cycle"], o["end_cycle"]) == (parts[0]["start_cycle"], parts[-1]["end_cycle"])
        assert o["op"] == "linear" and o["energy"]["total"] == pytest.approx(sum(p["energy"]["total"] for p in parts))
    assert all(o["tiles"] == [] for o in whole.ops)
    assert sum(o["energy"]["total"] for o in auto.ops) == pytest.approx(auto.energy["total"])


def test_auto_runs_attention_by_query_blocks_where_whole_tensors_cannot_fit():
    import scheduler
    from studies.decoder_layer import build

    module, inputs = build(tokens=256, hidden=128, heads=4, intermediate=512)
    # bf16 scores: 4 x 256 x 256 x 2 B = 512 KiB, so the softmax alone needs 1 MiB whole
    with pytest.raises(scheduler.CapacityError, match="below M_R"):
        compile_and_simulate(module, "tpuv4", example_inputs=inputs, sram="512KiB", tiling="none")
    auto = compile_and_simulate(module, "tpuv4", example_inputs=inputs, sram="512KiB", tiling="auto")
    assert auto.memory_check == "ok" and auto.min_capacity_bytes <= 512 * 1024
    assert {"matmul", "softmax", "matmul_1"} <= set(auto.tiled_operators)
    assert auto.cycles >= auto.floor_cycles["cycles"]
    # one record per traced operator, the query blocks listed inside
    whole = compile_and_simulate(module, "tpuv4", example_inputs=inputs, tiling="none")
    assert [o["name"] for o in auto.ops] == [o["name"] for o in whole.ops]
    softmax = next(o for o in auto.ops if o["name"] == "softmax")
    assert len(softmax["tiles"]) >= 4 and all(p["name"].startswith("softmax.tile") for p in softmax["tiles"])
    assert sum(o["macs"] for o in auto.ops) == sum(o["macs"] for o in whole.ops)


def _windowed_convs():
    """Two 3x3 convolutions (the second stride 2) on 1x8x64x64 int8 activations, windows recorded."""
    from frontend.graph import add_operator, add_tensor, new_graph

    g = new_graph("convs", dtype="int8")
    add_tensor(g, "x", (1, 8, 64, 64), kind="input")
    for i, (stride, size) in enumerate([(1, 64), (2, 32)]):
        add_tensor(g, f"w{i}", (8, 8, 3, 3), kind="weight")
        add_operator(g, f"conv{i}", "conv2d", ["x" if i == 0 else "y0", f"w{i}"], {f"y{i}": (1, 8, size, size)},
                     macs=8 * 72 * size * size, gemm=[(size * size, 72, 8, 1)])
        g.nodes[f"conv{i}"]["window"] = {"kernel": [3, 3], "stride": [stride, stride], "padding": [1, 1],
                                         "dilation": [1, 1]}
    g.graph["outputs"] = ["y1"]
    g.graph["tensors"]["y1"]["kind"] = "output"
    return g


def test_auto_cuts_rows_only_where_an_operator_does_not_fit_whole(toy_hw):
    hw = toy_hw(sram_bytes_per_pe=1 << 20)
    graph = _windowed_convs()  # conv0 holds 32 KiB in and 32 KiB out
    roomy = compile_and_simulate(graph, hw, sram="96KiB", tiling="auto")
    assert roomy.tiled_operators == []
    with pytest.raises(ValueError, match="below M_R"):
        compile_and_simulate(graph, hw, sram="48KiB", tiling="weights")
    tight = compile_and_simulate(graph, hw, sram="48KiB", tiling="auto")
    assert tight.tiled_operators == ["conv0", "conv1"] and tight.memory_check == "ok"
    assert tight.min_capacity_bytes < 48 * 1024
    assert [o["name"] for o in tight.ops] == ["conv0", "conv1"]
    assert sum(o["macs"] for o in tight.ops) == sum(o["macs"] for o in roomy.ops)
    assert tight.cycles >= tight.floor_cycles["cycles"]

"""``accelsim size``: M_R, the smallest spill-free SRAM per scheduler/allocator pair, the peak at the config's SRAM."""

from __future__ import annotations

import csv

import pytest

import scheduler
from accelsim.cli import main
from accelsim.pipeline import on_chip_graph
from accelsim.sizing import check_pairs, size
from frontend import save_graph
from frontend.synthetic import random_dag


def prepared(graph, hw):
    tiled, sizes, _ = on_chip_graph(graph, hw)
    return tiled, sizes


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_spill_sizes_are_checked_against_independent_schedules(toy_hw, seed):
    hw = toy_hw(sram_bytes_per_pe=1 << 20)
    graph = random_dag(25, seed=seed, max_size=4096)
    pairs = [("program", "online-first-fit"), ("program", "best-fit"), ("program", "greedy-by-size"),
             ("min-peak", "best-fit")]
    report = size(graph, hw, pairs)
    tiled, sizes = prepared(graph, hw)
    need, op = scheduler.min_capacity(tiled, sizes, hw.alignment)
    assert (report.min_capacity_bytes, report.min_capacity_op) == (need, op)
    # no plan without spills needs less than its peak live bytes: a bound no allocator beats
    floor = scheduler.planner.plan_residencies(tiled, [1 << 40] * len(tiled), sizes=sizes, alignment=hw.alignment)
    for pair in report.pairs:
        assert pair.no_spill_bytes is not None and pair.no_spill_bytes % hw.alignment == 0
        kwargs = {} if pair.allocator == "online-first-fit" else {"allocator": pair.allocator}
        at = scheduler.make_schedule(tiled, pair.no_spill_bytes, pair.scheduler, sizes=sizes, alignment=hw.alignment,
                                     **kwargs)
        assert at.noncompulsory_bytes == 0
        assert pair.no_spill_bytes >= need
        if pair.scheduler == "program":
            assert pair.no_spill_bytes >= floor.stats.peak_live_bytes
        # the bisection saw a spill one alignment step below its answer (unless that is below M_R)
        below = pair.no_spill_bytes - hw.alignment
        if below >= need:
            assert any(c == below and moved > 0 for c, moved in pair.probes), pair.probes
        # at the config's own SRAM (1 MiB here: nothing spills) the peak is the schedule's
        assert pair.noncompulsory_bytes == 0 and pair.peak_bytes is not None
    online = next(p for p in report.pairs if p.allocator == "online-first-fit")
    assert online.no_spill_bytes <= scheduler.no_spill_capacity(tiled, sizes=sizes, alignment=hw.alignment)
    best = next(p for p in report.pairs if p.allocator == "best-fit" and p.scheduler == "program")
    assert best.no_spill_bytes <= online.no_spill_bytes  # the loop keeps the online arena when it is better


def test_config_sram_below_m_r_leaves_its_cells_empty(chain_graph, toy_hw):
    report = size(chain_graph(), toy_hw(sram_bytes_per_pe=1024), [("program", "best-fit")])
    pair = report.pairs[0]
    assert pair.peak_bytes is None and pair.noncompulsory_bytes is None
    assert "below M_R" in pair.note and pair.no_spill_bytes is not None


def test_pairs_are_checked():
    assert check_pairs([("cosma", "own"), ("program", "best-fit"), ("cosma", "")]) == [
        ("cosma", "own"), ("program", "best-fit")]
    with pytest.raises(ValueError, match="'cosma' places its tensors itself"):
        check_pairs([("cosma", "best-fit")])
    with pytest.raises(ValueError, match="unknown scheduler 'fast'"):
        check_pairs([("fast", "best-fit")])
    with pytest.raises(ValueError, match="unknown allocator 'nope'"):
        check_pairs([("program", "nope")])


def test_cli_prints_the_table_and_writes_csv(chain_graph, tmp_path, capsys):
    path = tmp_path / "chain.json"
    save_graph(chain_graph(), path)
    out = tmp_path / "size.csv"
    code = main(["size", str(path), "--allocator", "online-first-fit,best-fit", "--csv", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "M_R, tiling weights" in text and "M_R, tiling auto" in text
    assert "online-first-fit" in text and "best-fit" in text
    rows = list(csv.DictReader(out.open()))
    assert [r["allocator"] for r in rows] == ["online-first-fit", "best-fit"]
    assert all(int(r["no_spill_bytes"]) >= int(r["min_capacity_bytes"]) for r in rows)


@pytest.mark.parametrize("args, message", [
    (["--allocator", "nope"], "unknown allocator 'nope'"),
    (["--scheduler", "fast"], "unknown scheduler 'fast'"),
    (["--allocator", "best-fit,best-fit"], "names an allocator twice"),
    (["--set", "nofield=1"], "nofield"),
    # options no chosen pair would read are refused, as `run` refuses them (issue 22)
    (["--scheduler", "program", "--time-limit", "5"], "--time-limit"),
    (["--time-limit", "5"], "--time-limit"),
    (["--scheduler", "cosma", "--timeout", "5"], "--timeout"),
    (["--allocator", "online-first-fit", "--timeout", "5"], "--timeout"),
    (["--scheduler", "cosma", "--allocator", "auto"], "allocator='auto' (--allocator)"),
    (["--scheduler", "cosma,cosma-fs", "--allocator", "best-fit"], "scheduler='cosma' places its tensors itself"),
    (["--set", "dtype=bf16"], "--set dtype=bf16 cannot apply to a graph already traced"),
    (["--set", "dram_bytes=1"], "dram_bytes=1 B cannot hold"),
])
def test_cli_bad_input_is_one_line_exit_2(chain_graph, tmp_path, capsys, args, message):
    path = tmp_path / "chain.json"
    save_graph(chain_graph(), path)
    assert main(["size", str(path), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_m_r_under_auto_tiling_is_the_smallest_scratchpad_its_own_tiling_fits(toy_hw, heavy_linear):
    from accelsim.pipeline import compile_and_simulate

    hw = toy_hw(weight_tile_bytes=1 << 17)
    report = size(heavy_linear(6), hw, [("program", "auto")])
    # whole weights: 64 KiB + 8 KiB in + 8 KiB out
    assert (report.min_capacity_bytes, report.min_capacity_op) == (81920, "fc0")
    found = report.auto_min_capacity_bytes
    assert found < report.min_capacity_bytes and found % hw.alignment == 0

    def fits(capacity: int) -> bool:  # independently: tile for the scratchpad, then M_R
        tiled, sizes, _ = on_chip_graph(heavy_linear(6), hw.with_sram(capacity), tiling="auto")
        return scheduler.min_capacity(tiled, sizes, hw.alignment)[0] <= capacity

    assert fits(found) and not fits(found - hw.alignment)
    assert compile_and_simulate(heavy_linear(6), hw, sram=found).memory_check == "ok"
    with pytest.raises(scheduler.CapacityError):
        compile_and_simulate(heavy_linear(6), hw, sram=found - hw.alignment)
    assert report.rows()[0]["auto_min_capacity_bytes"] == found
    assert f"M_R, tiling auto    {found // 1024} KiB ({found:,} B)" in report.format()

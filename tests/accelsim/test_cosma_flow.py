"""The COSMA schedulers through compile_and_simulate and ``accelsim run``: the simulator runs the
solver's own addresses and measures exactly the non-compulsory bytes the model minimised."""

from __future__ import annotations

import pytest

from accelsim import compile_and_simulate
from accelsim.cli import main
from frontend.synthetic import nas_cells, random_dag
from scheduler import SCHEDULERS, ScheduleError, budgets, min_capacity
from scheduler.registry import scheduler_entry


@pytest.mark.parametrize("hw", ["tpuv4", "pixel6"])
@pytest.mark.parametrize("budget", ["MR", "MH", "MP"])
def test_simulated_traffic_equals_the_objective(hw, budget):
    graph = random_dag(14, seed=4)
    report = compile_and_simulate(graph, hw=hw, scheduler="cosma", budget=budget)
    assert report.ok and report.scheduler_status == "optimal"
    assert report.allocator == "cosma (CP-SAT addresses)"
    # The objective is per PE on the Pixel 6 (every PE holds a share); the report counts the chip.
    pes = report.hardware.n_pe if report.hardware.capacity_scope == "per_pe" else 1
    assert report.noncompulsory_bytes == report.scheduler_stats["objective"] * pes
    assert report.dram_bytes_by_kind["spill"] + report.dram_bytes_by_kind["retrieve"] == report.noncompulsory_bytes


def test_budgets_and_settings_change_the_traffic():
    graph = nas_cells(cells=2, nodes=3, seed=0, size=4096)
    tight = compile_and_simulate(graph, hw="tpuv4", scheduler="cosma", budget="MR")
    loose = compile_and_simulate(graph, hw="tpuv4", scheduler="cosma", budget="MP")
    assert loose.noncompulsory_bytes == 0 <= tight.noncompulsory_bytes
    alignment = tight.hardware.alignment
    assert tight.capacity_bytes == tight.min_capacity_bytes == min_capacity(graph, alignment=alignment)[0]
    assert loose.capacity_bytes == budgets(graph, alignment=alignment)["MP"]
    act = compile_and_simulate(graph, hw="tpuv4", scheduler="cosma", budget="MR", weights=False)
    assert act.ok and act.dram_bytes_by_kind["load"] == act.input_bytes  # no weight is read
    assert not act.weights_on_chip


@pytest.mark.parametrize("method", SCHEDULERS)
def test_every_scheduler_runs_and_simulates(method):
    graph = random_dag(12, seed=2)
    capabilities = scheduler_entry(method).capabilities
    replacement = "greedy" if capabilities.replacement else None  # only those that take one
    report = compile_and_simulate(graph, hw="tpuv4", scheduler=method, budget="MR", replacement=replacement)
    assert report.ok
    if capabilities.own_offsets:
        assert report.noncompulsory_bytes == report.scheduler_stats["objective"]


def test_budget_above_the_scratchpad_is_refused():
    with pytest.raises(ValueError, match="exceeds the scratchpad"):
        compile_and_simulate(random_dag(8, seed=1), hw="tpuv4", budget=10**12)
    with pytest.raises(ScheduleError, match="budget 'MX'"):
        compile_and_simulate(random_dag(8, seed=1), hw="tpuv4", budget="MX")


def test_cli_names_are_the_registrys():
    import argparse

    from accelsim.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    for command in ("run", "sweep"):
        option = next(a for a in commands[command]._actions if "--scheduler" in a.option_strings)
        assert tuple(option.choices) == SCHEDULERS


def test_cli_run_with_cosma(tmp_path, capsys):
    from frontend import save_graph

    path = tmp_path / "g.json"
    save_graph(random_dag(10, seed=3), path)
    code = main(["run", str(path), "--hw", "tpuv4", "--scheduler", "cosma", "--budget", "MR", "--no-weights",
                 "--time-limit", "5", "--out", str(tmp_path / "out")])
    text = capsys.readouterr().out
    assert code == 0
    assert "cosma" in text and "optimal" in text and "activations only" in text
    code = main(["run", str(path), "--hw", "tpuv4", "--scheduler", "cosma-fs", "--fixed-order", "min-peak",
                 "--budget", "MH", "--out", str(tmp_path / "out2")])
    assert code == 0 and "cosma-fs[min-peak]" in capsys.readouterr().out

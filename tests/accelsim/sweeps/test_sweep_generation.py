"""``accelsim sweep --grid prefill=... --grid decode=...``: every point a generation (``accelsim.generation``)."""

from __future__ import annotations

import csv
import json

import pytest

from accelsim.cli import main
from accelsim.sweeps.grid import generation_of
from accelsim.sweeps.results import result_columns

pytestmark = pytest.mark.torch


def test_a_sweep_over_prompt_lengths_reports_ttft_time_per_token_and_tokens_per_s(tmp_path, capsys):
    out = tmp_path / "sw"
    argv = ["sweep", "llm.gpt2", "--hw", "tpuv4", "--grid", "prefill=8,16", "--grid", "decode=2", "--out", str(out),
            "--jobs", "1", "--no-plots"]
    assert main(argv) == 0
    with open(out / "results.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == result_columns(["prefill", "decode"])
    assert [r["prefill"] for r in rows] == ["8", "16"] and all(r["status"] == "ok" for r in rows)
    for r in rows:
        report = json.loads((out / "points" / f"{r['hash']}.json").read_text())
        assert int(r["cycles"]) == report["ttft_cycles"] + sum(report["step_cycles"])
        assert float(r["tokens_per_s"]) == pytest.approx(report["tokens_per_s"])
        assert float(r["ttft_s"]) == pytest.approx(report["ttft_s"]) and len(report["step_cycles"]) == 2
    capsys.readouterr()
    assert main(argv) == 0  # resumed: nothing runs again
    assert "0 run now, 2 from an earlier run" in capsys.readouterr().out


@pytest.mark.parametrize("argv,needle", [
    (["llm.gpt2", "--grid", "prefill=8"], "--grid prefill needs --grid decode"),
    (["resnet18", "--grid", "decode=2"], "run a zoo language model"),
    (["llm.gpt2", "--grid", "decode=0"], "--grid decode=0: must be a positive integer"),
])
def test_a_generation_grid_that_cannot_run_is_one_line_and_exit_2(tmp_path, capsys, argv, needle):
    assert main(["sweep", *argv, "--hw", "tpuv4", "--out", str(tmp_path / "sw")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]


def test_prefill_defaults_to_512_tokens():
    options = {"decode": 4, "dtype": "bf16"}
    assert generation_of(options) == (512, 4) and options == {"dtype": "bf16"}
    assert generation_of({"dtype": "bf16"}) is None

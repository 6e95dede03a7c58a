"""A generation as one run (``accelsim.generation``): a prompt, then decode steps on one schedule,
the KV cache pinned on chip or streamed."""

from __future__ import annotations

import dataclasses
import json
import math

import networkx as nx
import pytest

from accelsim.cli import main
from accelsim.generation import generate, graph_at
from accelsim.hw import load_hw
from frontend import llm
from frontend.trace import trace

pytestmark = pytest.mark.torch

SMALL = dataclasses.replace(llm.shape_of("llm.qwen2.5-0.5b"), name="two-layer", layers=2, vocab=1000)


def _step(past: int) -> nx.DiGraph:
    model, inputs = llm.build(SMALL, 2, 1, past)
    return trace(model, inputs, dtype="bf16", name="two-layer", method="fx")


def test_a_step_graph_between_two_contexts_is_exactly_the_traced_one():
    made = graph_at(_step(8), _step(20), 8, 20, 13)
    traced = _step(13)
    assert list(made.nodes(data=True)) == list(traced.nodes(data=True))
    assert made.graph["tensors"] == traced.graph["tensors"]


def test_graphs_that_are_not_one_step_at_two_contexts_are_refused():
    with pytest.raises(ValueError, match="differ in their operators or tensors"):
        graph_at(_step(8), llm_graph_of_other_shape(), 8, 20, 13)
    first, last = _step(8), _step(20)
    last.nodes["embed"]["elements"] += 1  # 1 more element over 12 tokens of context: not affine with an integer slope
    with pytest.raises(ValueError, match="operator 'embed' elements: .* are not affine"):
        graph_at(first, last, 8, 20, 13)


def llm_graph_of_other_shape() -> nx.DiGraph:
    model, inputs = llm.build(dataclasses.replace(SMALL, layers=1), 2, 1, 20)
    return trace(model, inputs, dtype="bf16", name="one-layer", method="fx")


def test_a_generation_pins_a_cache_that_fits_and_reports_its_figures():
    report = generate("llm.gpt2", "tpuv4", prefill=8, decode=3)
    assert report.memory_check == "ok" and report.kv_resident
    assert report.kv_bytes == 12 * 2 * 12 * 64 * 11 * 2  # layers x (K, V) x heads x head dim x 11 tokens x bf16
    assert len(report.step_cycles) == 3
    assert all(c >= f for c, f in zip(report.step_cycles, report.step_floors, strict=True))  # never below the floor
    assert report.ttft_s == report.prefill.cycles / 1.05e9
    assert report.tokens_per_s == pytest.approx(1 / report.tpot_s)
    weights = sum(r["nbytes"] for r in report.decode.graph.graph["tensors"].values() if r["kind"] == "weight")
    cache = [t for t in report.decode.graph.graph["inputs"] if t != "ids"]
    assert all(report.decode.graph.graph["tensors"][t]["nbytes"] == 0 for t in cache)  # pinned: never loaded
    per_cycle = load_hw("tpuv4").dram_bytes_per_cycle
    assert report.step_bounds[1:] == [math.ceil((weights + 8) / per_cycle)] * 2  # the weights and one int64 id
    prefill_cache = 12 * 2 * 12 * 64 * 8 * 2  # the first step loads the prefill's 8 tokens into the region
    assert report.step_bounds[0] == math.ceil((weights + 8 + prefill_cache) / per_cycle)
    assert report.step_dram_bytes[0] - report.step_dram_bytes[1] == prefill_cache
    assert not report.weights_resident
    assert report.decode.capacity_bytes == 128 * 2**20 - report.kv_region  # the steps plan in the rest


def test_weights_that_fit_with_the_cache_stay_after_the_first_step():
    report = generate("llm.gpt2", "tpuv4", prefill=8, decode=3, sram="1GiB")  # 249 MB of weights: they fit
    assert report.memory_check == "ok" and report.kv_resident and report.weights_resident
    weights = llm.parameter_count(llm.shape_of("llm.gpt2")) * 2
    assert report.step_dram_bytes[0] > weights - 1024 * 768 * 2  # the first step loads them (a position row only)
    writes = 12 * 2 * 12 * 64 * 2  # one token's keys and values per layer, written through
    logits = 50257 * 2
    assert report.step_dram_bytes[1:] == [8 + writes + logits] * 2  # then only the id is read
    assert all(c >= f for c, f in zip(report.step_cycles, report.step_floors, strict=True))


def test_a_cache_too_large_to_pin_streams_from_dram_every_step():
    report = generate("llm.gpt2", "tpuv4", prefill=8, decode=2, batch=64, sram="32MiB")
    assert report.memory_check == "ok" and not report.kv_resident and report.kv_region == 0
    cache = 12 * 2 * 64 * 12 * 64 * 2  # bytes per cached token, batch 64
    assert report.step_dram_bytes[1] - report.step_dram_bytes[0] == cache  # one more token read the next step
    assert report.over_floor >= 1.0


def test_run_prefill_decode_writes_the_figures_and_both_reports(tmp_path, capsys):
    out = tmp_path / "gen"
    assert main(["run", "llm.gpt2", "--hw", "tpuv4", "--prefill", "8", "--decode", "2", "--out", str(out),
                 "--no-plots"]) == 0
    text = capsys.readouterr().out
    for line in ("time to first token", "time per token", "tokens/s", "KV cache", "pinned on chip at one offset"):
        assert line in text
    figures = json.loads((out / "generation.json").read_text())
    assert figures["decode_steps"] == 2 and len(figures["step_cycles"]) == 2 and figures["memory_check"] == "ok"
    assert json.loads((out / "report.json").read_text())["model"] == "llm.gpt2"  # the prefill's
    assert (out / "decode" / "report.json").is_file()


@pytest.mark.parametrize("argv,needle", [
    (["llm.gpt2", "--prefill", "8"], "--prefill needs --decode M"),
    (["resnet18", "--decode", "2"], "--prefill/--decode run a zoo language model"),
    (["llm.bert-base", "--decode", "2"], "is an encoder: it generates no tokens"),
    (["llm.gpt2", "--decode", "2", "--prefill", "1024"], "takes at most 1,024 positions"),
    (["llm.gpt2", "--decode", "2", "--input-shape", "1,8"], "give --batch, not --input-shape"),
])
def test_a_generation_that_cannot_run_is_one_line_and_exit_2(tmp_path, capsys, argv, needle):
    assert main(["run", *argv, "--hw", "tpuv4", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0]

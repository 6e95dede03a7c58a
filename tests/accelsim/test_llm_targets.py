"""Issue 34's targets on the zoo's shapes (slow): Llama-3.2-1B's decode step and prefill on tpuv4
against their bounds, GPT-2's prefill reads, and a generation on pixel6's default scratchpad."""

from __future__ import annotations

import pytest

from accelsim.generation import generate
from accelsim.pipeline import compile_and_simulate
from frontend import llm

pytestmark = [pytest.mark.slow, pytest.mark.torch]


def test_a_llama_decode_step_at_512_positions_is_within_1_10_of_its_reads():
    report = compile_and_simulate("llm.llama3.2-1b", "tpuv4", plots=False, input_shape=(1, 1),
                                  model_options={"past": 511})
    reads = sum(r["nbytes"] for r in report.graph.graph["tensors"].values() if r["kind"] in ("weight", "input"))
    bound = reads / (1.2e12 / 1.05e9)  # tpuv4: 1.2 TB/s at 1,050 MHz
    assert report.ok and report.cycles <= 1.10 * bound


def test_a_llama_prefill_of_512_tokens_is_within_1_15_of_its_floor():
    report = compile_and_simulate("llm.llama3.2-1b", "tpuv4", plots=False)
    assert report.ok and report.cycles_over_floor <= 1.15


def test_gpt2_prefill_of_128_tokens_reads_at_most_1_05_of_its_parameters_and_io():
    report = compile_and_simulate("llm.gpt2", "tpuv4", plots=False, input_shape=(1, 128))
    parameters = llm.parameter_count(llm.shape_of("llm.gpt2")) * 2
    assert report.ok and report.dram_read_bytes <= 1.05 * (parameters + report.input_bytes + report.output_bytes)


def test_a_llama_generation_runs_on_pixel6_at_its_default_scratchpad():
    report = generate("llm.llama3.2-1b", "pixel6", prefill=512, decode=4)
    assert report.memory_check == "ok" and report.kv_resident and report.over_bound <= 1.10

"""Language models of the zoo on both bundled configs: a prefill, and one decode step, each
against its bound. Writes ``docs/llm/runs.csv`` (``docs/results/llm.md`` is generated from it).

    OMP_NUM_THREADS=1 python studies/llm_study.py            # every llm.* model, both configs
    OMP_NUM_THREADS=1 python studies/llm_study.py --models llm.gpt2 --hw tpuv4

Each row is one ``accelsim.pipeline.compile_and_simulate`` run at the default options (``--tiling
auto``, bf16 on tpuv4, int8 on pixel6), deterministic:

* ``prefill``: ``--input-shape 1,TOKENS`` (512): the bound is the floor, max(compute, DRAM).
* ``decode``: ``--input-shape 1,1 --model-option past=CONTEXT-1``, one step at ``CONTEXT``
  positions (512): its bound is what the step must read, (weights + KV cache) / DRAM bandwidth,
  in cycles (``decode_bound``): the weights read whole, the gathered embedding rows, and every
  layer's cached keys and values.
* ``generation``: ``--prefill CONTEXT --decode STEPS`` (512 + 16; ``accelsim.generation``):
  ``cycles`` is the prefill's and every step's together, ``decode_bound_cycles`` the steps'
  bounds summed, ``ttft_ms``, ``tpot_ms``, ``tokens_per_s`` and where the KV cache lives.

``trace_s`` and ``cpu_s`` are CPU seconds of this process (trace, and the whole run), written
for where-the-time-goes; every other column is deterministic.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "llm" / "runs.csv"
FIELDS = ("model", "hw", "phase", "tokens", "past", "cycles", "floor_cycles", "bound", "cycles_over_floor",
          "decode_bound_cycles", "cycles_over_decode_bound", "weight_bytes", "kv_bytes", "dram_read_bytes",
          "dram_write_bytes", "m_r_bytes", "operators", "memory_check", "ttft_ms", "tpot_ms", "tokens_per_s",
          "kv_resident", "trace_s", "cpu_s")


def run_one(model: str, hw_name: str, phase: str, context: int) -> dict[str, object]:
    from accelsim.hw import load_hw
    from accelsim.pipeline import compile_and_simulate
    from frontend import zoo

    hw = load_hw(hw_name)
    tokens, past = (context, 0) if phase == "prefill" else (1, context - 1)
    start = time.process_time()
    graph = zoo.trace_model(model, dtype=hw.dtype, input_shape=(1, tokens), options={"past": past})
    traced = time.process_time()
    report = compile_and_simulate(graph, hw, plots=False)
    done = time.process_time()
    tensors = graph.graph["tensors"]
    weights = sum(t["nbytes"] for t in tensors.values() if t["kind"] == "weight")
    kv = sum(tensors[t]["nbytes"] for t in graph.graph["inputs"][1:])
    bytes_per_cycle = hw.dram_bandwidth_bytes_per_s / hw.clock_hz
    bound = math.ceil((weights + kv) / bytes_per_cycle) if phase == "decode" else 0
    return {
        "model": model, "hw": hw_name, "phase": phase, "tokens": tokens, "past": past,
        "cycles": report.cycles, "floor_cycles": report.floor_cycles["cycles"], "bound": report.floor_cycles["bound"],
        "cycles_over_floor": f"{report.cycles_over_floor:.3f}",
        "decode_bound_cycles": bound or "", "cycles_over_decode_bound": f"{report.cycles / bound:.3f}" if bound else "",
        "weight_bytes": weights, "kv_bytes": kv, "dram_read_bytes": report.dram_read_bytes,
        "dram_write_bytes": report.dram_write_bytes, "m_r_bytes": report.min_capacity_bytes, "operators": len(graph),
        "memory_check": report.memory_check, "trace_s": f"{traced - start:.2f}", "cpu_s": f"{done - start:.2f}",
    }


def show(row: dict[str, object], rows: list[dict[str, object]]) -> None:
    """Print ``row`` as one line and keep it."""
    print(", ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    rows.append(row)


def write_csv(path: Path, fields: tuple[str, ...], rows: list[dict[str, object]]) -> None:
    """``rows`` as a CSV file of ``fields`` at ``path`` (its folder made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fields)
        writer.writeheader()
        writer.writerows(rows)


def run_generation(model: str, hw_name: str, context: int, steps: int) -> dict[str, object]:
    from accelsim.generation import generate

    start = time.process_time()
    r = generate(model, hw_name, prefill=context, decode=steps)
    done = time.process_time()
    cycles = int(r.prefill.cycles) + sum(r.step_cycles)
    return {
        "model": model, "hw": hw_name, "phase": "generation", "tokens": context, "past": steps,
        "cycles": cycles, "floor_cycles": r.prefill.floor_cycles["cycles"] + sum(r.step_floors), "bound": "",
        "cycles_over_floor": f"{cycles / (r.prefill.floor_cycles['cycles'] + sum(r.step_floors)):.3f}",
        "decode_bound_cycles": sum(r.step_bounds), "cycles_over_decode_bound": f"{r.over_bound:.3f}",
        "weight_bytes": "", "kv_bytes": r.kv_bytes, "dram_read_bytes": "", "dram_write_bytes": "",
        "m_r_bytes": "", "operators": "", "memory_check": r.memory_check, "ttft_ms": f"{r.ttft_s * 1e3:.3f}",
        "tpot_ms": f"{r.tpot_s * 1e3:.3f}", "tokens_per_s": f"{r.tokens_per_s:.1f}",
        "kv_resident": "yes" if r.kv_resident else "no", "trace_s": "", "cpu_s": f"{done - start:.2f}",
    }


def main(argv: list[str] | None = None) -> int:
    from frontend import llm

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(llm.names()))
    parser.add_argument("--hw", default="tpuv4,pixel6")
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--steps", type=int, default=16, help="decode steps of the generation rows")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    rows: list[dict[str, object]] = []
    for model in args.models.split(","):
        phases = ["prefill", "decode"] if llm.shape_of(model).kind == "decoder" else ["prefill"]
        for hw in args.hw.split(","):
            for phase in phases:
                show(run_one(model, hw, phase, args.context), rows)
            if "decode" in phases:
                show(run_generation(model, hw, args.context, args.steps), rows)
    write_csv(args.out, FIELDS, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

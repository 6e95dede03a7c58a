"""Llama-3.2-1B generations on both bundled configs: time to first token and tokens per second
against the prompt's length and the scratchpad. Writes ``docs/llm/generation.csv``
(``docs/results/llm.md``'s generation table is generated from it).

    OMP_NUM_THREADS=1 python studies/llm_generation_study.py

Each row is one ``accelsim.generation.generate`` run (``accelsim run llm.llama3.2-1b --prefill N
--decode M``) at the config's defaults but the scratchpad: prompts of 128, 512 and 2,048 tokens,
then 16 decode steps, at the config's scratchpad and at half and a quarter of it.
``cpu_s`` is this process's CPU seconds for the row; every other column is deterministic.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from llm_study import show, write_csv  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "llm" / "generation.csv"
FIELDS = ("model", "hw", "sram_bytes", "prefill", "decode", "status", "ttft_ms", "prefill_over_floor", "tpot_ms",
          "tokens_per_s", "decode_over_bound", "decode_over_floor", "kv_bytes", "kv_resident", "dram_bytes_per_token",
          "memory_check", "cpu_s")


def run_one(model: str, hw_name: str, sram: int, prefill: int, decode: int) -> dict[str, object]:
    from accelsim.generation import generate

    row: dict[str, object] = {"model": model, "hw": hw_name, "sram_bytes": sram, "prefill": prefill, "decode": decode}
    start = time.process_time()
    try:
        r = generate(model, hw_name, prefill=prefill, decode=decode, sram=sram)
    except ValueError as exc:  # below M_R: the point does not run, and says why
        row.update(status=f"does not run: {' '.join(str(exc).split())[:160]}",
                   cpu_s=f"{time.process_time() - start:.1f}")
        return row
    row.update(
        status="runs", ttft_ms=f"{r.ttft_s * 1e3:.3f}", prefill_over_floor=f"{r.prefill.cycles_over_floor:.3f}",
        tpot_ms=f"{r.tpot_s * 1e3:.3f}", tokens_per_s=f"{r.tokens_per_s:.1f}", decode_over_bound=f"{r.over_bound:.3f}",
        decode_over_floor=f"{r.over_floor:.3f}", kv_bytes=r.kv_bytes, kv_resident="yes" if r.kv_resident else "no",
        dram_bytes_per_token=int(r.dram_bytes_per_token), memory_check=r.memory_check,
        cpu_s=f"{time.process_time() - start:.1f}",
    )
    return row


def main(argv: list[str] | None = None) -> int:
    from accelsim.hw import load_hw

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llm.llama3.2-1b")
    parser.add_argument("--hw", default="tpuv4,pixel6")
    parser.add_argument("--prefill", default="128,512,2048")
    parser.add_argument("--decode", type=int, default=16)
    parser.add_argument("--shares", default="1,2,4", help="the scratchpads: the config's divided by each")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    rows: list[dict[str, object]] = []
    for hw in args.hw.split(","):
        full = load_hw(hw).sram_bytes_per_pe
        for share in (int(s) for s in args.shares.split(",")):
            for prefill in (int(p) for p in args.prefill.split(",")):
                show(run_one(args.model, hw, full // share, prefill, args.decode), rows)
    write_csv(args.out, FIELDS, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

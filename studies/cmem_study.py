"""A what-if study on TPUv4: how much CMEM is enough for each zoo model, and what does half the HBM cost?

    python studies/cmem_study.py [--models resnet50,vit_b_16] [--out /tmp/accelsim-cmem-study]
                                  [--docs docs/sweep] [--jobs N]

For every zoo model on ``tpuv4`` (CMEM managed as one chip-wide scratchpad):

1. **a CMEM that is enough, with zero non-compulsory traffic**: the first-fit arena's highest
   address with no eviction (``scheduler.no_spill_capacity``) on the graph the pipeline
   schedules (weights tiled as ``compile_and_simulate`` tiles them), rounded to the config's
   512-byte granule; a sweep then *checks* it: at that size the simulated non-compulsory
   traffic is 0. It is an upper bound, not the smallest such size: the sweep also runs one
   granule below, and there the default flow (allocation-aware spilling with the ``auto``
   allocator, which packs tighter than the first fit) moves no extra byte either for every
   model today (``noncompulsory_one_granule_below``; empty when that size is below M_R). The
   smallest size would take a bisection by simulation per model, whose extra traffic is not
   monotone in the size;
2. **what halving the HBM bandwidth costs**: the same sweep runs both sizes at 1,200 GB/s and
   at 600 GB/s; the table gives the cycles and the energy at that first-fit zero-spill CMEM
   (the energy model has no static power, so slower transfers of the same bytes cost no joules).

Each model is one ``accelsim.sweep`` (its two sizes differ per model) over
``sram × dram_bandwidth_bytes_per_s``; the points' results and reports stay in ``--out``
(re-running resumes from there) and the summary goes to ``--docs``: ``cmem_study.csv`` (the
README's table is rendered from it by ``docs/gen/readme_tables.py``) and ``cmem_study.png``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

import frontend
import scheduler
from accelsim import load_hw, sweep
from accelsim.hw import format_bytes
from accelsim.pipeline import tensor_shares
from frontend.cache import cached_trace
from frontend.tiling import tile_weights

HW = "tpuv4"


def first_fit_zero_spill(model: str) -> int:
    """The CMEM (bytes) at which the first-fit arena keeps every tensor of the program order
    without an eviction: enough for no extra byte, an upper bound on the smallest such size."""
    hw = load_hw(HW)
    graph = cached_trace(model, hw.dtype).graph
    tile_limit = hw.weight_tile_bytes * (hw.n_pe if hw.capacity_scope == "per_pe" else 1)
    graph, _ = tile_weights(graph, tile_limit)
    need = scheduler.no_spill_capacity(graph, sizes=tensor_shares(graph, hw), alignment=hw.alignment)
    return -(-need // hw.alignment) * hw.alignment


def study(models: list[str], out: Path, jobs: int) -> pd.DataFrame:
    hw = load_hw(HW)
    bandwidth = hw.dram_bandwidth_bytes_per_s
    rows = []
    for model in models:
        began = time.perf_counter()
        size = first_fit_zero_spill(model)
        below = max(size - hw.alignment, hw.alignment)
        table = sweep([model], HW, {"sram": [size, below], "dram_bandwidth_bytes_per_s": [bandwidth, bandwidth / 2]},
                      out_dir=out / model, jobs=jobs, plots=False)
        at = table.set_index(["sram", "dram_bandwidth_bytes_per_s"])
        full, half, under = at.loc[(size, bandwidth)], at.loc[(size, bandwidth / 2)], at.loc[(below, bandwidth)]
        for point in (full, half):
            if point["status"] != "ok":
                raise RuntimeError(f"{model}: a point failed: {point['status']}")
        below_mr = under["status"] != "ok"
        if below_mr and "below M_R" not in under["status"]:
            raise RuntimeError(f"{model}: the point one granule below failed: {under['status']}")
        rows.append({
            "model": model,
            "first_fit_zero_spill_cmem_bytes": size,
            "noncompulsory_at_it": int(full["noncompulsory_bytes"]),
            "noncompulsory_one_granule_below": None if below_mr else int(under["noncompulsory_bytes"]),
            "fits_128MiB": size <= hw.sram_bytes_per_pe,
            "cycles": int(full["cycles"]),
            "cycles_half_hbm": int(half["cycles"]),
            "cycles_increase_percent": 100 * (half["cycles"] - full["cycles"]) / full["cycles"],
            "energy_j": float(full["energy_j"]),
            "energy_half_hbm_j": float(half["energy_j"]),
            "energy_increase_percent": 100 * (half["energy_j"] - full["energy_j"]) / full["energy_j"],
            "study_seconds": time.perf_counter() - began,
        })
        print(f"{model}: {format_bytes(size)}; half HBM +{rows[-1]['cycles_increase_percent']:.1f} % cycles, "
              f"+{rows[-1]['energy_increase_percent']:.1f} % energy", flush=True)
    return pd.DataFrame(rows)


def plot(table: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ordered = table.sort_values("first_fit_zero_spill_cmem_bytes")
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 7), sharey=True)
    names = ordered["model"]
    left.barh(names, ordered["first_fit_zero_spill_cmem_bytes"] / 2**20, color="tab:blue")
    left.axvline(128, color="tab:red", linestyle="--", label="TPUv4 CMEM, 128 MiB")
    left.set_xscale("log")
    left.set_xlabel("first-fit zero-spill CMEM, an upper bound (MiB, log)")
    left.legend(loc="lower right")
    right.barh(names, ordered["cycles_increase_percent"], color="tab:orange", label="cycles")
    right.barh(names, ordered["energy_increase_percent"], color="tab:green", alpha=0.6, height=0.4, label="energy")
    right.set_xlabel("cost of halving HBM bandwidth (1,200 -> 600 GB/s), % at that CMEM")
    right.legend(loc="lower right")
    fig.suptitle("accelsim sweep on tpuv4: CMEM needed and HBM sensitivity per zoo model")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated zoo names (default: every zoo model)")
    parser.add_argument("--out", default="/tmp/accelsim-cmem-study", help="sweep results folder (resumable)")
    parser.add_argument("--docs", default="docs/sweep", help="where the summary table and plot go")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes per model sweep (default 1)")
    args = parser.parse_args()
    models = args.models.split(",") if args.models else frontend.list_models()
    table = study(models, Path(args.out), args.jobs)
    docs = Path(args.docs)
    docs.mkdir(parents=True, exist_ok=True)
    table.to_csv(docs / "cmem_study.csv", index=False)
    plot(table, docs / "cmem_study.png")
    print(f"wrote {docs / 'cmem_study.csv'} and {docs / 'cmem_study.png'} (the README's table is rendered from "
          "the CSV by docs/gen/readme_tables.py)")


if __name__ == "__main__":
    main()

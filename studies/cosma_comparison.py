"""COSMA's comparison (§V-B, Fig. 3; §V-C, Table II and Fig. 4) reproduced on our models.

Part 1 -- the ten human-designed DNNs of COSMA §V-A1, 8-bit data, activations only and with
weights, at the budgets M_R, M_H and M_P: the non-compulsory DRAM bytes (spills and the
retrievals that bring tensors back) of COSMA's joint model and of the four baselines (program
or MPMF order x Belady or greedy replacement, each with TensorFlow Lite's first-fit arena), and
COSMA's solve time and status. Every schedule is checked by ``scheduler.check_schedule``.

Part 2 -- NAS-like graphs (``frontend.synthetic.nas_cells``, DARTS/NASNet-like cells) and
googlenet and inception_v3, with ``cosma-dnc`` and ``cosma-fs`` (MPMF order) against the
best baseline, at M_R and M_H with weights.

Run from the repository root::

    OMP_NUM_THREADS=1 python studies/cosma_comparison.py --out docs/cosma

It prints both tables, writes ``results.json``, ``fig3.png`` and ``fig4.png`` to ``--out``, and takes
several minutes (``--quick`` runs two models only; ``--part 1`` or ``--part 2`` one part).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import networkx as nx  # noqa: E402

import frontend  # noqa: E402
import scheduler  # noqa: E402
from frontend.synthetic import nas_cells  # noqa: E402
from scheduler import CosmaOptions  # noqa: E402
from scheduler.order import MIN_PEAK, PROGRAM  # noqa: E402

MODELS = [
    "resnet50", "densenet121", "resnext50_32x4d", "video.r2plus1d_18", "video.s3d",
    "segmentation.fcn_resnet50", "segmentation.lraspp_mobilenet_v3_large", "segmentation.deeplabv3_resnet50",
    "transformer", "vit_b_16",
]
VIDEO_SHAPE = (1, 3, 16, 224, 224)  # COSMA Fig. 3: R2Plus1D and S3D take (1, 3, 16, 224, 224)
BASELINES = [(PROGRAM, "belady"), (PROGRAM, "greedy"), (MIN_PEAK, "belady"), (MIN_PEAK, "greedy")]


def load(name: str, cache: Path | None) -> nx.DiGraph:
    """Trace a zoo model in int8 (cached as JSON when ``cache`` is given)."""
    if cache is not None:
        path = cache / f"{name}.json"
        if path.exists():
            return frontend.load_graph(path)
    shape = VIDEO_SHAPE if name.startswith("video.") else None
    graph = frontend.trace_model(name, dtype="int8", input_shape=shape)
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        frontend.save_graph(graph, cache / f"{name}.json")
    return graph


def activations_only(graph: nx.DiGraph) -> dict[str, int]:
    """Weights at 0 bytes: no memory, no traffic (COSMA's first setting)."""
    return {n: 0 for n, r in graph.graph["tensors"].items() if r["kind"] == "weight"}


def checked(graph: nx.DiGraph, s: scheduler.Schedule, sizes: dict[str, int] | None) -> scheduler.Schedule:
    problems = scheduler.check_schedule(graph, s, sizes)
    if problems:
        raise AssertionError(f"{s.method}: {problems[:3]}")
    return s


def compare(graph: nx.DiGraph, sizes: dict[str, int] | None, options: CosmaOptions) -> list[dict[str, Any]]:
    """COSMA and the four baselines at M_R, M_H and M_P."""
    began = time.perf_counter()
    best_order = scheduler.cosma.min_peak(graph, sizes, options=options)
    mpmf_seconds = time.perf_counter() - began
    mr = scheduler.min_capacity(graph, sizes)[0]
    mp = max(mr, best_order.peak)
    rows = []
    for label, budget in (("MR", mr), ("MH", (mr + mp) // 2), ("MP", mp)):
        row: dict[str, Any] = {"budget": label, "bytes": budget, "mpmf_status": best_order.status,
                               "mpmf_seconds": mpmf_seconds}
        for order_name, replacement in BASELINES:
            order = PROGRAM if order_name == PROGRAM else best_order.order
            s = checked(graph, scheduler.baseline.schedule(graph, budget, order, replacement, sizes), sizes)
            row[f"{order_name}+{replacement}"] = s.noncompulsory_bytes
        s = checked(graph, scheduler.cosma.cosma(graph, budget, sizes=sizes, options=options), sizes)
        stats = s.stats.as_report()  # the numbers as report.json shows them
        row.update(cosma=s.noncompulsory_bytes, status=s.status, seconds=stats["solve_seconds"],
                   bound=stats["bound"], variables=stats["variables"])
        rows.append(row)
    return rows


def part1(models: list[str], cache: Path | None, options: CosmaOptions) -> list[dict[str, Any]]:
    results = []
    for name in models:
        graph = load(name, cache)
        for setting in ("activations", "weights"):
            sizes = activations_only(graph) if setting == "activations" else None
            for row in compare(graph, sizes, options):
                row.update(model=name, setting=setting, operators=graph.number_of_nodes())
                results.append(row)
                print(format_row(row), flush=True)
    return results


def format_row(row: dict[str, Any]) -> str:
    best = min(row[f"{o}+{r}"] for o, r in BASELINES)
    saved = "" if best == 0 else f"{100 * (1 - row['cosma'] / best):5.1f} %"
    return (f"{row['model']:40s} {row['setting']:11s} {row['budget']} {row['bytes']:>10,} "
            + " ".join(f"{row[f'{o}+{r}']:>11,}" for o, r in BASELINES)
            + f" {row['cosma']:>10,} {saved:>7s} {row['status']:>8s} {row['seconds']:6.2f}s")


def header() -> str:
    return (f"{'model':40s} {'setting':11s} B  {'budget':>10s} "
            + " ".join(f"{o[:4] + '+' + r[:4]:>11s}" for o, r in BASELINES)
            + f" {'cosma':>10s} {'saved':>7s} {'status':>8s} {'time':>7s}")


def summary(results: list[dict[str, Any]]) -> list[str]:
    """Per budget: proven optima, solve times, and the reduction against the best baseline.

    The reduction is averaged over the cases where the best baseline moves something (a case
    where every scheme moves nothing has no reduction to measure), and also given in total bytes.
    """
    lines = []
    for label in ("MR", "MH", "MP"):
        rows = [r for r in results if r["budget"] == label]
        if not rows:
            continue
        optimal = sum(r["status"] == "optimal" for r in rows)
        best = [min(r[f"{o}+{p}"] for o, p in BASELINES) for r in rows]
        cut = [1 - r["cosma"] / b for r, b in zip(rows, best, strict=True) if b > 0]
        total = 1 - sum(r["cosma"] for r in rows) / max(1, sum(best))
        mean_time = sum(r["seconds"] for r in rows) / len(rows)
        zero = sum(r["cosma"] == 0 for r in rows)
        lines.append(
            f"{label}: proven optimal {optimal}/{len(rows)}; solve time mean {mean_time:.2f} s, "
            f"max {max(r['seconds'] for r in rows):.2f} s; non-compulsory bytes vs the best baseline: "
            f"{100 * sum(cut) / max(1, len(cut)):.1f} % fewer on average over {len(cut)} cases, "
            f"{100 * total:.1f} % fewer in total; zero bytes in {zero}/{len(rows)}"
        )
    return lines


def part2(cache: Path | None, options: CosmaOptions, part_size: int) -> list[dict[str, Any]]:
    graphs: list[tuple[str, nx.DiGraph]] = [
        (f"nas_cells(cells={c}, nodes={k}, seed={s})", nas_cells(cells=c, nodes=k, seed=s, size=64 * 1024))
        for c, k, s in ((8, 4, 0), (8, 5, 1), (10, 5, 2), (14, 4, 3))
    ]
    graphs += [(name, load(name, cache)) for name in ("googlenet", "inception_v3")]
    results = []
    for name, graph in graphs:
        mr = scheduler.min_capacity(graph)[0]
        mpmf = scheduler.cosma.min_peak(graph, options=options)
        mp = max(mr, mpmf.peak)
        for label, budget in (("MR", mr), ("MH", (mr + mp) // 2)):
            baselines = {f"{o}+{r}": scheduler.baseline.schedule(
                graph, budget, PROGRAM if o == PROGRAM else mpmf.order, r).noncompulsory_bytes
                for o, r in BASELINES}
            dnc = checked(graph, scheduler.cosma.cosma_dnc(graph, budget, part_size, options=options), None)
            fs = checked(graph, scheduler.cosma.cosma(graph, budget, mpmf.order, options=options), None)
            row = {"graph": name, "operators": graph.number_of_nodes(), "budget": label, "bytes": budget,
                   "best_baseline": min(baselines.values()), "dnc": dnc.noncompulsory_bytes,
                   "dnc_status": dnc.status, "dnc_seconds": dnc.stats.solve_seconds,
                   "parts": dnc.stats.as_report()["parts"],
                   "fs": fs.noncompulsory_bytes, "fs_status": fs.status, "fs_seconds": fs.stats.solve_seconds,
                   "mpmf_status": mpmf.status, **baselines}
            results.append(row)
            print(f"{name:38s} {row['operators']:4d} ops {label} {budget:>10,} best baseline "
                  f"{row['best_baseline']:>11,}  cosma-dnc {row['dnc']:>11,} ({row['dnc_status']}, "
                  f"{row['dnc_seconds']:.1f} s, {int(row['parts'])} parts)  cosma-fs[MPMF] {row['fs']:>11,} "
                  f"({row['fs_status']}, {row['fs_seconds']:.1f} s)", flush=True)
    return results


def plot(results: list[dict[str, Any]], path: Path) -> None:
    """Fig. 3: non-compulsory bytes per model and budget, COSMA against the four baselines.

    Each case is scaled by its worst scheme (bytes are in ``results.json``); a case where no scheme
    moves anything has no bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = ("activations", "weights")
    fig, axes = plt.subplots(2, 1, figsize=(16, 9), sharex=False)
    series = [f"{o}+{r}" for o, r in BASELINES] + ["cosma"]
    for ax, setting in zip(axes, settings, strict=True):
        rows = [r for r in results if r["setting"] == setting]
        labels = [f"{r['model'].split('.')[-1].split('_')[0][:10]}\n{r['budget']}" for r in rows]
        width = 0.8 / len(series)
        for k, name in enumerate(series):
            # Each case relative to its worst scheme, so small and large models share one axis.
            values = [r[name] / max(1, max(r[x] for x in series)) for r in rows]
            ax.bar([i + k * width for i in range(len(rows))], values, width, label=name)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(rows))], labels, fontsize=6)
        ax.set_ylabel("non-compulsory bytes / worst scheme")
        ax.set_title(f"{setting} ({'M_R, M_H, M_P' if setting == 'activations' else 'M_Rp, M_Hp, M_Pp'})")
        ax.legend(fontsize=7, ncols=5)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_nas(results: list[dict[str, Any]], path: Path) -> None:
    """Fig. 4: non-compulsory bytes of the best baseline, cosma-fs (MPMF order) and cosma-dnc."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 4.5))
    def short(name: str) -> str:  # "nas_cells(cells=8, nodes=4, seed=0)" -> "nas 8x4 s0"
        return name.replace("nas_cells(cells=", "nas ").replace(", nodes=", "x").replace(", seed=", " s").rstrip(")")

    labels = [f"{short(r['graph'])}\n{r['budget']}" for r in results]
    series = [("best_baseline", "best baseline"), ("fs", "cosma-fs (MPMF order)"), ("dnc", "cosma-dnc")]
    width = 0.8 / len(series)
    for k, (key, name) in enumerate(series):
        ax.bar([i + k * width for i in range(len(results))], [r[key] / 2**20 for r in results], width, label=name)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(results))], labels, fontsize=6)
    ax.set_ylabel("non-compulsory MiB")
    ax.set_title("NAS-like graphs, googlenet and inception_v3, with weights")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="accelsim-out/cosma", help="folder for results.json and fig3.png")
    parser.add_argument("--cache", help="folder to cache traced graphs as JSON")
    parser.add_argument("--time-limit", type=float, default=30.0, help="seconds per CP-SAT solve (default 30)")
    parser.add_argument("--dnc-time-limit", type=float, default=120.0, help="seconds per cosma-dnc run")
    parser.add_argument("--workers", type=int, default=1, help="CP-SAT workers (default 1: deterministic)")
    parser.add_argument("--linearization", type=int, default=CosmaOptions().linearization,
                        help="CP-SAT linearization_level (default: CosmaOptions')")
    parser.add_argument("--part-size", type=int, default=40, help="operators per cosma-dnc part")
    parser.add_argument("--part", type=int, choices=(1, 2), help="run one part only")
    parser.add_argument("--quick", action="store_true", help="two models only")
    parser.add_argument("--replot", action="store_true", help="only redraw the figures from --out/results.json")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cache = Path(args.cache) if args.cache else None
    if args.replot:
        saved = json.loads((out / "results.json").read_text())
        if "human_designed" in saved:
            plot(saved["human_designed"], out / "fig3.png")
        if "nas" in saved:
            plot_nas(saved["nas"], out / "fig4.png")
        return 0
    # the comparison as recorded in docs/cosma: each solve bounded by wall-clock seconds only (deterministic_time=None)
    options = CosmaOptions(time_limit=args.time_limit, deterministic_time=None, workers=args.workers,
                           linearization=args.linearization)
    report: dict[str, Any] = {"time_limit": args.time_limit, "workers": args.workers,
                              "linearization": args.linearization}
    if args.part in (None, 1):
        print(header())
        results = part1(MODELS[:2] if args.quick else MODELS, cache, options)
        report["human_designed"] = results
        lines = summary(results)
        print("\n".join(lines))
        report["summary"] = lines
        plot(results, out / "fig3.png")
    if args.part in (None, 2):
        dnc = CosmaOptions(time_limit=args.dnc_time_limit, deterministic_time=None, workers=args.workers,
                           linearization=args.linearization)
        report["nas"] = part2(cache, dnc, args.part_size)
        plot_nas(report["nas"], out / "fig4.png")
    (out / "results.json").write_text(json.dumps(report, indent=1))
    print(f"wrote {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

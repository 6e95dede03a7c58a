"""Train the learned backtracking model of ``telamalloc-learned`` (TelaMalloc §6.3–6.5, §7.3).

Reproduces ``allocator/methods/backtrack_model.npz``::

    OMP_NUM_THREADS=1 python studies/train_backtracking.py --out allocator/methods/backtrack_model.npz

Training data comes from generated instances only (``allocator.core.generators``, kind
``random``, seeds ``--seeds``), never from the challenging suite or the traces, which are
the tests. Each instance is searched at several capacities (LOAD times ``CAPACITY_FACTORS``:
§6.5 varies the memory for diverse paths). At every major backtrack (up to
``--backtracks`` per run) the search stops (``allocator.methods.telamalloc_learned.record``, a
deterministic replay), MiniMalloc's canonical search with a node limit labels the minimum
target (``minimum_target``), and a seeded coin picks the oracle's target or the default rule's
for the rest of the run (§6.5's 50 % mixing). When the run ends, the best target of each
recorded backtrack is found from its final placement (``best_target``) and each candidate gets
§6.4's pointwise score. A ydf gradient-boosted regression forest of ``--trees`` trees (the
paper: 100) learns the score from the features, with one thread and a fixed seed, and is
exported to flat arrays (``allocator.methods.backtrack_model.export``).

``--evaluate`` then runs the §7.3 measurement on a held-out generated set (seeds
``--test-seeds``, disjoint from the training seeds): every instance and capacity where plain
``telamalloc`` backtracks more than 1,000 times, searched by both methods with the same step
limit; it writes the per-instance CSV and prints the one-line summary.

Measured (2026-11-25, one thread, 2-core machine shared with other jobs; steps are deterministic):

* training, the command above: 473 runs with major backtracks on seeds 1000-1399, 84,971
  samples (21.1 % with a score > 0), 100 trees of 5,746 nodes; the exported arrays match ydf's
  predictions within 6e-6; 6 min 17 s wall (4 min 15 s of CPU). Two runs gave byte-identical
  files. The labels depend on the oracle's node counts, so a change to
  ``allocator.methods.minimalloc``'s search can change the model (a run during such a change gave
  82,344 samples);
* ``--evaluate-only`` (seeds 5000-5399, step limit 100,000, threshold 2.25 with the fallback),
  ``docs/bench/learned_backtracking.csv``, 49 s: 253 held-out runs with > 1,000 telamalloc
  backtracks: 192 improved, 96 step-limit failures now solved, 135 with >= 10x fewer
  backtracks, 6 solved only by telamalloc, 13 solved by both with more backtracks (TelaMalloc
  §7.3: 102 of 117 improved, 56 time-outs solved, 4 lost). Unsolved runs: 137 with
  telamalloc, 47 with the model; steps over all 253 runs 15.6 M against 5.9 M; on the 110
  runs both solve, 7.7x fewer steps (geometric mean); 27 runs used the fallback;
* ``--cost``: 1.6-2.1 us per scored candidate inside the search (the same path timed with the
  forest and with an empty one, back to back, load ~2), about +50 % per step on runs where
  every major backtrack is scored; 1.6 us in the batched micro-benchmark of ``--evaluate``.
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from allocator import Problem, lower_bound  # noqa: E402
from allocator.core.generators import generate  # noqa: E402
from allocator.methods.backtrack_model import FEATURES, load, save  # noqa: E402
from allocator.methods.backtrack_model import export as export_model  # noqa: E402
from allocator.methods.telamalloc import TelaMallocOptions, telamalloc_search  # noqa: E402
from allocator.methods.telamalloc_learned import (  # noqa: E402
    LearnedOptions,
    best_target,
    learned_search,
    minimum_target,
    pointwise_scores,
    record,
)

#: capacities searched per instance, as multiples of LOAD (§6.5: vary the memory size)
CAPACITY_FACTORS = (1.0, 1.01, 1.02, 1.04)
#: buffers per generated instance
SIZES = (40, 60, 80, 100, 120)



def learned_counts(rows: list[dict]) -> dict[str, int]:
    """TelaMalloc §7.3's counts over the per-run rows of the learned-backtracking evaluation
    (``docs/bench/learned_backtracking.csv``, or the same rows before they are written: values
    may be strings or integers): this script prints its summary from them, and
    ``docs/gen/readme_tables.py`` renders the results page's row from them."""
    def solved(row: dict, key: str) -> bool:
        return row[f"{key}_status"] == "solved"

    def backtracks(row: dict, key: str) -> int:
        return int(row[f"{key}_backtracks"])

    rescued = sum(1 for r in rows if solved(r, "learned") and not solved(r, "default"))
    fewer = sum(1 for r in rows if solved(r, "learned") and solved(r, "default")
                and backtracks(r, "learned") < backtracks(r, "default"))
    return {
        "runs": len(rows), "improved": rescued + fewer, "rescued": rescued,
        "tenfold": sum(1 for r in rows if solved(r, "learned")
                       and 10 * backtracks(r, "learned") <= backtracks(r, "default")),
        "lost": sum(1 for r in rows if solved(r, "default") and not solved(r, "learned")),
        "worse": sum(1 for r in rows if solved(r, "default") and solved(r, "learned")
                     and backtracks(r, "learned") > backtracks(r, "default")),
        "unsolved_default": sum(1 for r in rows if not solved(r, "default")),
        "unsolved_learned": sum(1 for r in rows if not solved(r, "learned")),
        "steps_default": sum(int(r["default_steps"]) for r in rows),
        "steps_learned": sum(int(r["learned_steps"]) for r in rows),
    }

def instances(seeds: range) -> list[tuple[str, Problem, int]]:
    """(name, problem, capacity) of every generated instance and capacity."""
    out = []
    for seed in seeds:
        n = SIZES[seed % len(SIZES)]
        problem = generate("random", n, seed=seed)
        load = lower_bound(problem)
        for factor in CAPACITY_FACTORS:
            out.append((f"random-{n}-s{seed}", problem, int(load * factor)))
    return out


def collect(problem, capacity: int, rng: np.random.Generator, backtracks: int, step_limit: int,
            node_limit: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(features, scores) of each labelled major backtrack of one run with 50 % oracle mixing."""
    forced: list[int] = []
    steps = []
    outcome = None
    while len(forced) < backtracks:
        outcome, step = record(problem, capacity, forced, step_limit=step_limit)
        if step is None:
            break
        minimum = minimum_target(problem, capacity, step, node_limit)
        if minimum is not None:
            steps.append((step, minimum))
        forced.append(minimum if minimum is not None and rng.random() < 0.5 else -1)
    else:
        outcome, _ = record(problem, capacity, forced, step_limit=step_limit, stop=False)
    assert outcome is not None
    final = outcome.offsets if outcome.status == "solved" else None
    rows = []
    for step, minimum in steps:
        best = best_target(step, final, minimum)
        rows.append((step.features, pointwise_scores(step.levels, best, minimum)))
    return rows


def train(args: argparse.Namespace) -> None:
    import ydf  # training-time dependency (the test extras)

    began = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    features, labels = [], []
    runs = 0
    for name, problem, capacity in instances(range(*args.seeds)):
        plain = telamalloc_search(problem, capacity, TelaMallocOptions(), step_limit=args.step_limit)
        if plain.stats.get("major_backtracks", 0) == 0:
            continue  # no major backtrack: nothing to learn from this run
        runs += 1
        for x, y in collect(problem, capacity, rng, args.backtracks, args.step_limit, args.node_limit):
            features.append(x)
            labels.append(y)
        print(f"{name} @ {capacity}: {sum(len(y) for y in labels)} samples so far", flush=True)
    x = np.concatenate(features).astype(np.float32)
    y = np.concatenate(labels).astype(np.float32)
    data = {name: x[:, k] for k, name in enumerate(FEATURES)}
    data["score"] = y
    learner = ydf.GradientBoostedTreesLearner(label="score", task=ydf.Task.REGRESSION, num_trees=args.trees,
                                              num_threads=1, random_seed=args.seed)
    forest = learner.train(data)
    model = export_model(forest)
    ours = _scores(model, x)
    theirs = np.asarray(forest.predict(data), np.float64).reshape(-1)
    save(model, args.out)
    print(f"{runs} runs, {len(y)} samples ({(y > 0).mean():.1%} labelled > 0), {len(model.roots)} trees, "
          f"{len(model.feature)} nodes; max |numba - ydf| {np.abs(ours - theirs).max():.2e}; "
          f"{time.perf_counter() - began:.0f} s; written {args.out}")


def _scores(model, x: np.ndarray) -> np.ndarray:
    from allocator.methods.backtrack_model import score

    return score(model, x.astype(np.float64), len(x))


def evaluate(args: argparse.Namespace) -> None:
    """§7.3 on the held-out seeds: every run where telamalloc backtracks more than 1,000 times."""
    options = LearnedOptions(threshold=args.threshold, model=str(args.out))
    rows = []
    for name, problem, capacity in instances(range(*args.test_seeds)):
        plain = telamalloc_search(problem, capacity, TelaMallocOptions(), step_limit=args.step_limit)
        if plain.stats.get("backtracks", 0) <= 1000:
            continue
        learned = learned_search(problem, capacity, options, step_limit=args.step_limit)
        rows.append({"instance": name, "buffers": len(problem), "capacity": capacity,
                     "default_status": plain.status, "default_steps": plain.stats["steps"],
                     "default_backtracks": plain.stats["backtracks"], "learned_status": learned.status,
                     "learned_steps": learned.stats["steps"], "learned_backtracks": learned.stats["backtracks"],
                     "learned_jumps": learned.stats["learned_jumps"], "scored": learned.stats["scored"],
                     "fallback_steps": learned.stats.get("fallback_steps", 0)})
        print(rows[-1], flush=True)
    print(f"cost per scored candidate: {candidate_cost(load(args.out)) * 1e6:.3f} us (batches of 16)")
    with open(args.csv, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(summary(rows, args.step_limit))


def candidate_cost(model, batch: int = 16, batches: int = 20_000) -> float:
    """Seconds per candidate scored by the compiled model, in batches like a major backtrack's
    (feature rows drawn from a seeded generator; the best of three timings)."""
    from allocator.methods.backtrack_model import score

    rng = np.random.default_rng(0)
    rows = rng.random((batch, len(FEATURES))) * np.array([1, 1, 1, 100, 20, 10, 1000, 1, 5000, 100, 100])
    score(model, rows, batch)  # compiled before timing
    best = float("inf")
    for _ in range(3):
        began = time.perf_counter()
        for _ in range(batches):
            score(model, rows, batch)
        best = min(best, time.perf_counter() - began)
    return best / (batch * batches)


def kernel_cost(runs: tuple[tuple[int, int, float], ...] = ((80, 1, 1.0), (80, 2, 1.02), (100, 5038, 1.0)),
                step_limit: int = 100_000) -> None:
    """Per scored candidate, the forest's cost inside the search: each run (buffers, seed, LOAD
    factor) is timed with the shipped forest and with an empty one, both never clearing the
    threshold, so both take telamalloc's path and score the same candidates (best of three)."""
    import tempfile

    from allocator.methods.backtrack_model import constant

    empty_path = Path(tempfile.mkdtemp()) / "empty.npz"
    save(constant(0.0), empty_path)
    variants = (LearnedOptions(threshold=1e300, model=str(empty_path)), LearnedOptions(threshold=1e300))
    for n, seed, factor in runs:
        problem = generate("random", n, seed=seed)
        capacity = int(lower_bound(problem) * factor)
        best = [float("inf")] * 2
        scored = 0
        for _ in range(3):
            for k, options in enumerate(variants):
                began = time.perf_counter()
                out = learned_search(problem, capacity, options, step_limit=step_limit)
                best[k] = min(best[k], time.perf_counter() - began)
                scored = int(out.stats["scored"])
        print(f"random-{n}-s{seed} @ {capacity}: {scored} candidates scored, "
              f"{(best[1] - best[0]) / max(scored, 1) * 1e6:.2f} us each")


def summary(rows: list[dict], step_limit: int) -> str:
    """§7.3's counts over the per-instance rows (counted as the README's table counts them)."""
    c = learned_counts(rows)
    return (f"{c['runs']} held-out runs with > 1,000 telamalloc backtracks (step limit {step_limit:,}): "
            f"{c['improved']} improved, {c['rescued']} step-limit failures now solved, {c['tenfold']} with >= 10x "
            f"fewer backtracks, {c['lost']} solved only by telamalloc, {c['worse']} solved by both with more "
            "backtracks")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("allocator/methods/backtrack_model.npz"))
    parser.add_argument("--seeds", type=int, nargs=2, default=(1000, 1400), help="training seeds [from, to)")
    parser.add_argument("--test-seeds", type=int, nargs=2, default=(5000, 5400), help="held-out seeds [from, to)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the 50 %% oracle mixing and of ydf")
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--backtracks", type=int, default=40, help="major backtracks recorded per run")
    parser.add_argument("--step-limit", type=int, default=100_000)
    parser.add_argument("--node-limit", type=int, default=20_000, help="oracle nodes per solvability check")
    parser.add_argument("--threshold", type=float, default=LearnedOptions().threshold)
    parser.add_argument("--evaluate", action="store_true", help="also run the §7.3 measurement")
    parser.add_argument("--evaluate-only", action="store_true", help="only the §7.3 measurement of --out")
    parser.add_argument("--csv", type=Path, default=Path("docs/bench/learned_backtracking.csv"))
    parser.add_argument("--cost", action="store_true", help="only time the shipped forest inside the search")
    args = parser.parse_args()
    if args.cost:
        kernel_cost()
        return
    if not args.evaluate_only:
        train(args)
    load(args.out)  # the saved file reads back
    if args.evaluate or args.evaluate_only:
        evaluate(args)


if __name__ == "__main__":
    main()

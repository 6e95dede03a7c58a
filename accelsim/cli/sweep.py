"""``accelsim sweep``: a what-if grid of models x hardware fields x run options (see ``accelsim.sweeps``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from accelsim.cli.args import (
    Parser,
    add_model_input_arguments,
    check_named_cache,
    parse_budget,
    parse_model_options,
    parse_shapes,
    positive_int,
    positive_seconds,
)
from accelsim.hw import parse_overrides
from accelsim.tiling import TILINGS
from scheduler.registry import SCHEDULERS


def add_parser(subparsers: argparse._SubParsersAction[Parser]) -> None:
    """Add the ``sweep`` command to the ``accelsim`` parser."""
    sweep = subparsers.add_parser("sweep", help="what-if grid: models x hardware fields x run options (resumable)")
    sweep.add_argument("models", nargs="+", metavar="MODEL",
                       help="model zoo names, your own models as path/to/file.py:FUNCTION, or graphs saved as .json "
                            "(mixed freely)")
    sweep.add_argument("--hw", default="pixel6", help="bundled config name or a .yaml path (default: pixel6)")
    sweep.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                       help="a hardware field (as for --set) or one of sram, scheduler, allocator, budget, dtype, "
                            "weights, batch, tiling, with its values; prefill and decode make every point a "
                            "generation of an llm.* decoder (decode=16: 16 steps after a prompt of prefill tokens, "
                            "512 by default; results.csv adds ttft_s, tpot_s, tokens_per_s); repeat for more keys: "
                            "the grid is their product")
    sweep.add_argument("--out", required=True, help="results folder: results.csv, index.html (the table, whose "
                                                    "rows open points/HASH.html), points/HASH.json, plots; "
                                                    "re-running the command there resumes")
    sweep.add_argument("--executor", choices=("local", "dask"), default="local",
                       help="local worker processes (default) or Dask distributed")
    sweep.add_argument("--jobs", type=positive_int, help="worker processes (default: the number of cores)")
    sweep.add_argument("--dask-address", help="a running Dask scheduler, e.g. tcp://host:8786 (default: a "
                                              "LocalCluster of --jobs workers)")
    sweep.add_argument("--cache", metavar="DIR",
                       help="trace cache folder (default: $ACCELSIM_CACHE_DIR or ~/.cache/accelsim/graphs)")
    sweep.add_argument("--set", action="append", metavar="KEY=VALUE", help="a hardware field fixed for every point")
    sweep.add_argument("--scheduler", choices=SCHEDULERS, help="scheduler of every point (default: program)")
    sweep.add_argument("--allocator", help="re-place every schedule with this allocator method")
    sweep.add_argument("--timeout", type=positive_seconds,
                       help="a wall-clock safety net in seconds for the allocator of every point, not for the "
                            "point or the sweep (tracing, scheduling and simulating are not bounded by it; default: "
                            "none; work limits count work); a point it cut short says so in its report.json")
    sweep.add_argument("--time-limit", type=positive_seconds,
                       help="a wall-clock safety net in seconds per cosma* solve (default: none)")
    sweep.add_argument("--dtype", help="storage dtype of every point (default: the config's)")
    sweep.add_argument("--budget", help="MR, MH, MP or bytes per PE to schedule in (default: the scratchpad)")
    sweep.add_argument("--weights", action=argparse.BooleanOptionalAction, default=True,
                       help="give weights memory and traffic (default) or consider activations only")
    sweep.add_argument("--tiling", choices=tuple(TILINGS),
                       help="how every point tiles its operators (default auto: weights to at most a quarter of "
                            "the point's scratchpad; see accelsim run --tiling)")
    add_model_input_arguments(sweep)
    sweep.add_argument("--no-plots", action="store_true", help="write results.csv and the reports only")
    sweep.add_argument("--max-points", type=positive_int,
                       help="refuse a sweep of more points (models x the grid's combinations) than this "
                            "(default 100,000)")
    sweep.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """``accelsim sweep``: the grid's points, resumable, with progress; see ``accelsim.sweeps``."""
    from accelsim.sweeps.grid import MAX_POINTS
    from accelsim.sweeps.run import SweepInterrupted, run_sweep

    overrides = parse_overrides(args.set or [])
    options: dict[str, object] = {}
    for name in ("scheduler", "allocator", "timeout", "time_limit", "dtype", "tiling"):
        value = getattr(args, name)
        if value is not None:
            options[name] = value
    if args.budget is not None:
        options["budget"] = parse_budget(args.budget)
    if not args.weights:
        options["weights"] = False
    if args.input_shape:
        options["input_shape"] = parse_shapes(args.input_shape)
    if args.batch is not None:
        options["batch"] = args.batch
    if args.model_option:
        options["model_options"] = parse_model_options(args.model_option)
    if args.trace_method != "auto":
        options["trace_method"] = args.trace_method
    if args.host:
        options["host"] = tuple(args.host)
    if not args.grid:
        raise ValueError("give at least one --grid KEY=V1,V2,... (e.g. --grid sram=256KiB,1MiB)")
    check_named_cache(args.cache)
    out = Path(args.out)
    try:
        outcome = run_sweep(args.models, args.hw, args.grid, out, executor=args.executor, jobs=args.jobs,
                            dask_address=args.dask_address, cache_dir=args.cache, overrides=overrides,
                            options=options, plots=not args.no_plots, progress=True,
                            max_points=MAX_POINTS if args.max_points is None else args.max_points)
    except SweepInterrupted as stop:
        print(f"error: interrupted (Ctrl-C): {stop}; every finished point is in {out / 'results.csv'} and a "
              "re-run resumes from there", file=sys.stderr)
        return 130
    total = outcome.ran + outcome.skipped
    print(f"{total} points: {outcome.ran} run now, {outcome.skipped} from an earlier run, {outcome.failed} "
          f"not ok (their status says why); {outcome.traced} graphs traced, the rest from the trace cache; "
          f"{outcome.seconds:.1f} s")
    print(f"results: {out / 'results.csv'} (one report per point in {out / 'points'})")
    print(f"page: {out / 'index.html'} (each row opens its point's page)")
    if outcome.plots:
        print(f"plots: {', '.join(str(p) for p in outcome.plots)}")
    return 0

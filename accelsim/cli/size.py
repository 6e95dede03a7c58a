"""``accelsim size``: the minimum SRAM of a model per scheduler/allocator pair (see ``accelsim.sizing``)."""

from __future__ import annotations

import argparse

from accelsim.cli.args import (
    Parser,
    add_model_input_arguments,
    names,
    parse_model_options,
    parse_shapes,
    positive_int,
    positive_seconds,
)
from accelsim.cli.status import EXIT_NOT_DETERMINISTIC
from accelsim.hw import parse_overrides
from accelsim.outputs import Output, check_outputs, replaced
from accelsim.sources import input_files


def add_parser(subparsers: argparse._SubParsersAction[Parser]) -> None:
    """Add the ``size`` command to the ``accelsim`` parser."""
    sizing = subparsers.add_parser("size", help="minimum SRAM: M_R and the smallest spill-free SRAM per "
                                                "scheduler/allocator pair, and the peak at the config's SRAM")
    sizing.add_argument("model", help="model zoo name, your own model as path/to/file.py:FUNCTION, or a graph saved "
                                      "as .json (traced once, through the cache)")
    sizing.add_argument("--hw", default="pixel6", help="bundled config name or a .yaml path (default: pixel6)")
    sizing.add_argument("--scheduler", help="comma-separated schedulers (default program); cosma* place their "
                                            "own tensors")
    sizing.add_argument("--allocator", help="comma-separated allocators of the program / min-peak schedulers "
                                            "(default: online-first-fit and auto)")
    sizing.add_argument("--timeout", type=positive_seconds,
                        help="a wall-clock safety net in seconds for each allocation-aware loop (default: none; "
                             "work limits count work); exit status 3 when it fires")
    sizing.add_argument("--time-limit", type=positive_seconds,
                        help="a wall-clock safety net in seconds for each cosma* solve (default: none); exit "
                             "status 3 when it fires")
    sizing.add_argument("--weights", action=argparse.BooleanOptionalAction, default=True,
                        help="--no-weights gives weights no memory (activations only)")
    add_model_input_arguments(sizing)
    sizing.add_argument("--max-operators", type=positive_int, default=None, metavar="N",
                        help="refuse a graph of more than N operators (default 250,000)")
    sizing.add_argument("--set", action="append", metavar="KEY=VALUE", help="replace a hardware field (repeatable)")
    sizing.add_argument("--csv", help="also write the table as CSV")
    sizing.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """``accelsim size``: M_R and the smallest spill-free SRAM per scheduler/allocator pair; see ``accelsim.sizing``."""
    from accelsim.sizing import DEFAULT_PAIRS, OWN, check_pairs, size
    from allocator.core.defaults import DEFAULT_METHOD
    from scheduler.registry import DEFAULT_SCHEDULER, check_allocator, check_options, scheduler_entry

    schedulers = names(args.scheduler, "--scheduler", "scheduler") if args.scheduler is not None else None
    allocators = names(args.allocator, "--allocator", "allocator") if args.allocator is not None else None
    if allocators is not None:  # every name checked, also those a scheduler placing its own tensors will not use
        for allocator in allocators:
            if allocator != OWN:
                check_allocator(allocator)
        if schedulers is not None and not any(scheduler_entry(s).capabilities.allocator for s in schedulers):
            check_options(schedulers[0], allocator=allocators[0], flags={"allocator": "--allocator"})
    if schedulers is None and allocators is None:
        pairs = list(DEFAULT_PAIRS)
    else:
        pairs = [(s, a if scheduler_entry(s).capabilities.allocator else OWN)
                 for s in (schedulers or [DEFAULT_SCHEDULER]) for a in (allocators or [DEFAULT_METHOD])]
    pairs = check_pairs(pairs)
    # made absolute before the user's build() runs, which may change the working folder
    csv_path = check_outputs([Output("--csv", args.csv, suffix=".csv")], input_files(args.model, args.hw))[0] \
        if args.csv is not None else None
    report = size(args.model, args.hw, pairs, overrides=parse_overrides(args.set or []), timeout=args.timeout,
                  time_limit=args.time_limit, weights=args.weights, input_shape=parse_shapes(args.input_shape),
                  batch=args.batch, model_options=parse_model_options(args.model_option),
                  trace_method=args.trace_method, host=tuple(args.host),
                  **({"max_operators": args.max_operators} if args.max_operators is not None else {}))
    print(report.format())
    if csv_path is not None:
        import csv

        rows = report.rows()
        with replaced(csv_path) as staging, open(staging, "w", newline="") as handle:
            writer = csv.DictWriter(handle, list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        print(f"csv: {args.csv}")
    if not all(p.no_spill_bytes is not None for p in report.pairs):
        return 1
    return EXIT_NOT_DETERMINISTIC if any(p.clock_stopped for p in report.pairs) else 0

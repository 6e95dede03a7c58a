"""``accelsim bench``: benchmark allocation methods over CSV instances, every placement validated.

The command's module; the benchmark itself (rows, warm-up, plots) is the library module
``allocator.search.bench``."""

from __future__ import annotations

import argparse
import math
import sys

from accelsim.cli.args import Parser, count, names, positive_int, positive_seconds
from accelsim.cli.status import Exception_or_interrupt, from_ctrl_c
from accelsim.outputs import PLOT_SUFFIXES, Output, check_output_file, check_outputs, replaced
from accelsim.units import parse_bytes


def add_parser(subparsers: argparse._SubParsersAction[Parser]) -> None:
    """Add the ``bench`` command to the ``accelsim`` parser."""
    bench = subparsers.add_parser("bench", help="benchmark allocation methods over CSV instances (validated)")
    bench.add_argument("paths", nargs="+", help="CSV files or folders of them")
    bench.add_argument("--method", default="greedy-by-size",
                       help="method names, comma-separated; telamalloc:STRATEGY picks a Fig. 14 strategy")
    mode = bench.add_mutually_exclusive_group(required=True)
    mode.add_argument("--capacity", help="one capacity for every instance (bytes or e.g. 1MiB)")
    mode.add_argument("--capacity-from-name", action="store_true", help="read it from names like A.1048576.csv")
    mode.add_argument("--minimize", action="store_true", help="minimise the peak instead")
    mode.add_argument("--load-fraction", help="capacities as multiples of each instance's LOAD, comma-separated "
                                              "(e.g. 1.0,1.05,1.1: one row per capacity)")
    bench.add_argument("--timeout", type=positive_seconds, default=10.0,
                       help="seconds per instance and method (default 10)")
    bench.add_argument("--repeat", type=positive_int, default=1,
                       help="runs per instance and method; the median is shown")
    bench.add_argument("--csv", help="also write the rows to this CSV")
    bench.add_argument("--plot", help="also draw quality versus time (%% over LOAD against seconds) to this image")
    bench.add_argument("--summary", action="store_true",
                       help="per method: failures and geomean nodes on the configurations all placed (Fig. 14)")
    bench.add_argument("--threads", type=count, default=0,
                       help="threads of the minimalloc portfolio (default 0: one per core)")
    bench.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """``accelsim bench``: one validated row per instance, method and capacity; Ctrl-C keeps the rows."""
    from allocator.search import bench

    methods = names(args.method, "--method", "method", "see `accelsim alloc --methods`")
    for method in methods:
        bench.parse_method(method)
    if args.plot is not None:
        check_output_file(args.plot, "--plot", PLOT_SUFFIXES)
    files = bench.instance_files(args.paths)
    check_outputs([Output(option, path, suffix=".csv" if option == "--csv" else None)
                   for option, path in (("--csv", args.csv), ("--plot", args.plot))
                   if path is not None], [("the input instance", f) for f in files])
    capacity = parse_bytes(args.capacity, "--capacity") if args.capacity is not None else None
    if capacity == 0:
        raise ValueError("--capacity must be positive")
    fractions = _fractions(args.load_fraction) if args.load_fraction is not None else []
    warm = bench.warm_up(methods, "minimize" if args.minimize else "fit")  # only what the timed runs use
    print("warm-up (code loading / numba compilation, not in the times below): "
          + ", ".join(f"{m} {s:.2f} s" for m, s in warm.items()), flush=True)
    table = bench.RowPrinter(files, methods)
    print(table.header(), flush=True)
    rows: list[bench.BenchRow] = []
    interrupted = False
    try:
        for row in bench.iter_rows(files, methods, capacity=capacity, from_name=args.capacity_from_name,
                                   minimize=args.minimize, timeout=args.timeout, repeat=args.repeat,
                                   threads=args.threads, load_fractions=fractions):
            rows.append(row)
            print(table.line(row), flush=True)
    except Exception_or_interrupt as exc:
        if not from_ctrl_c(exc):
            raise
        interrupted = True
    errors = [r for r in rows if r.status == "error"]
    if args.summary and rows:
        print(bench.strategy_summary(rows))
    solved = sum(1 for r in rows if r.status in ("solved", "optimal", "best"))
    print(f"{solved}/{len(rows)} with a placement; total {sum(r.seconds for r in rows):.2f} s"
          + (f"; {len(errors)} failed with an error" if errors else ""))
    per_file = {r.instance: r for r in rows if r.status != "error"}
    print(f"reading the CSV files {sum(r.read_seconds for r in per_file.values()):.2f} s, "
          f"their LOAD {sum(r.load_seconds for r in per_file.values()):.2f} s")
    if args.csv is not None:
        with replaced(args.csv) as staging:
            bench.write_rows(staging, rows)
        print(f"{len(rows)} rows written to {args.csv}")
    if args.plot is not None and any(r.trace for r in rows):
        with replaced(args.plot) as staging:
            bench.plot_rows(staging, rows)
        print(f"plot written to {args.plot}")
    if interrupted:
        print(f"error: interrupted (Ctrl-C) after {len(rows)} rows", file=sys.stderr)
        return 130
    for r in errors:
        print(f"error: {r.reason}", file=sys.stderr)
    return 1 if errors else 0


def _fractions(text: str) -> list[float]:
    values = []
    for part in text.split(","):
        try:
            if not part.isascii() or "_" in part:  # float() would read any Unicode digit, and 1_0 as 10
                raise ValueError(part)
            value = float(part)
        except ValueError:
            raise ValueError(f"--load-fraction: {part.strip()!r} is not a number (e.g. 1.0,1.05,1.1)") from None
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"--load-fraction: {part.strip()!r} must be a positive, finite multiple of LOAD")
        values.append(value)
    return values

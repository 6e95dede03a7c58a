"""The ``accelsim`` command line (also ``python -m accelsim``).

Subcommands::

    accelsim run MODEL [--hw NAME|FILE.yaml] [--sram 8MiB] [--allocator M] [--out DIR]
                       [--dtype D] [--input-shape 1,3,224,224] [--set KEY=VALUE ...]
    accelsim alloc FILE.csv [--capacity 1MiB] [--method M] [--timeout S] [--output OUT.csv]
    accelsim alloc --methods
    accelsim models
    accelsim configs [--fields]

Exit status: 0 success; 1 the run or allocation did not succeed (memory check failed, the
allocator could not fit, a search timed out or was infeasible); 2 bad input (unknown model,
bad hardware field, malformed CSV, capacity below M_R, ...), reported as one ``error:`` line
on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from accelsim.hw import describe_fields, format_bytes, list_configs, load_hw, parse_bytes, parse_overrides
from accelsim.pipeline import CompileError

#: ``scheduler.SCHEDULERS``, repeated so that ``accelsim --help`` does not import the solvers
_SCHEDULERS = ("program", "min-peak", "cosma", "cosma-fs", "cosma-dnc")

if TYPE_CHECKING:
    import allocator
    from accelsim.hw import HardwareConfig


def _parse_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(part) for part in text.replace("x", ",").split(",") if part.strip())
    except ValueError:
        raise ValueError(f"--input-shape {text!r} is not a comma-separated list of integers (1,3,224,224)") from None
    if not shape or any(d <= 0 for d in shape):
        raise ValueError(f"--input-shape {text!r} must list positive integers, e.g. 1,3,224,224")
    return shape


def _parse_budget(text: str) -> int | str:
    """``MR``, ``MH``, ``MP`` or a byte count such as ``2MiB``."""
    if text.upper() in ("MR", "MH", "MP"):
        return text.upper()
    return parse_bytes(text, "--budget (MR, MH, MP or bytes)")


def _cmd_run(args: argparse.Namespace) -> int:
    from accelsim.pipeline import RunOptions, compile_and_simulate
    from accelsim.report import format_summary

    overrides = parse_overrides(args.set or [])
    hw = load_hw(args.hw, overrides)
    model_label = Path(args.model).stem if args.model.endswith(".json") else args.model
    out = Path(args.out) if args.out else Path("accelsim-out") / f"{model_label}-{hw.name}"
    options = RunOptions(
        sram=args.sram, allocator=args.allocator, dtype=args.dtype,
        input_shape=_parse_shape(args.input_shape) if args.input_shape else None,
        timeout=args.timeout, scheduler=args.scheduler, replacement=args.replacement,
        budget=_parse_budget(args.budget) if args.budget else None, weights=args.weights,
        time_limit=args.time_limit, fixed_order=args.order,
    )
    report = compile_and_simulate(args.model, hw, options, out_dir=out)
    print(format_summary(report))
    if not report.ok:
        print(f"error: memory check failed: {report.memory_check}", file=sys.stderr)
        return 1
    return 0


def _cmd_alloc(args: argparse.Namespace) -> int:
    import allocator

    if args.methods:
        width = max(len(name) for name in allocator.METHODS)
        for name, entry in allocator.METHODS.items():
            print(f"{name:<{width}}  {entry.description}")
        return 0
    if args.file is None:
        raise ValueError("alloc needs a CSV file (or --methods to list the allocation methods)")
    capacity = parse_bytes(args.capacity, "--capacity") if args.capacity is not None else None
    if capacity == 0:
        raise ValueError("--capacity must be positive")
    problem = allocator.read_csv(args.file, capacity=capacity)
    if args.minimize:
        return _minimize(args, problem)
    options = {"method": args.method} if args.method else {}
    result = allocator.solve(problem, timeout=args.timeout, **options)
    load = allocator.lower_bound(problem)
    rows = [
        ("file", f"{args.file} ({len(problem)} buffers)"),
        ("capacity", f"{capacity:,} B" if capacity is not None else "none (minimise the peak)"),
        ("method", result.method),
        ("status", result.status),
        ("peak", f"{result.peak:,} B" if result.peak is not None else "-"),
        ("LOAD", f"{load:,} B (lower bound)"),
        ("over LOAD", f"{100 * (result.peak - load) / load:.2f} %" if result.peak is not None and load else "-"),
        ("time", f"{result.stats.get('seconds', 0.0):.3f} s"),
    ]
    if "nodes" in result.stats:
        rows.append(("search", f"{int(result.stats['nodes']):,} nodes, {int(result.stats.get('backtracks', 0)):,} "
                               "backtracks"))
    if result.reason:
        rows.append(("reason", result.reason))
    if args.output is not None:
        # Only a placement that fits is written: a file downstream tools would trust as valid.
        if result.solved and result.solution is not None:
            allocator.write_csv(args.output, problem, result.solution)
            rows.append(("output", args.output))
        else:
            rows.append(("output", f"{args.output} not written: no placement fits the capacity"))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    return 0 if result.solved else 1


def _minimize(args: argparse.Namespace, problem: allocator.Problem) -> int:
    """``alloc --minimize``: the best peak found in the time, its lower bound, and whether it is optimal."""
    import allocator

    result = allocator.minimize(problem, method=args.method or "minimalloc", timeout=args.timeout or 10.0)
    load = allocator.lower_bound(problem.with_capacity(None))
    status = "optimal" if result.optimal else ("best found (time out)" if result.timed_out else "best found")
    rows = [
        ("file", f"{args.file} ({len(problem)} buffers)"),
        ("method", f"{result.method} (minimise the peak)"),
        ("status", status),
        ("peak", f"{result.peak:,} B"),
        ("lower bound", f"{result.lower_bound:,} B" + (" (LOAD)" if result.lower_bound == load else "")),
        ("LOAD", f"{load:,} B"),
        ("over LOAD", f"{100 * (result.peak - load) / load:.2f} %" if load else "-"),
        ("time", f"{result.seconds:.3f} s"),
        ("probes", f"{len(result.probes)} capacities searched, {int(result.stats.get('nodes', 0)):,} nodes"),
    ]
    if args.output is not None:
        allocator.write_csv(args.output, problem.with_capacity(None), result.solution)
        rows.append(("output", args.output))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from accelsim import bench

    methods = [m.strip() for m in args.method.split(",") if m.strip()]
    files = bench.instance_files(args.paths)
    capacity = parse_bytes(args.capacity, "--capacity") if args.capacity is not None else None
    warm = bench.warm_up(methods)
    print("warm-up (code loading / numba compilation, not in the times below): "
          + ", ".join(f"{m} {s:.2f} s" for m, s in warm.items()))
    fractions = _fractions(args.load_fraction) if args.load_fraction else []
    rows = bench.run(files, methods, capacity=capacity, from_name=args.capacity_from_name, minimize=args.minimize,
                     timeout=args.timeout, repeat=args.repeat, threads=args.threads, load_fractions=fractions)
    print(bench.format_rows(rows))
    if args.summary:
        print(bench.strategy_summary(rows))
    solved = sum(1 for r in rows if r.status in ("solved", "optimal", "best"))
    print(f"{solved}/{len(rows)} with a placement; total {sum(r.seconds for r in rows):.2f} s")
    if args.csv:
        bench.write_rows(args.csv, rows)
    if args.plot:
        bench.plot_rows(args.plot, rows)
        print(f"plot written to {args.plot}")
    return 0


def _fractions(text: str) -> list[float]:
    values = []
    for part in text.split(","):
        try:
            values.append(float(part))
        except ValueError:
            raise ValueError(f"--load-fraction: {part.strip()!r} is not a number (e.g. 1.0,1.05,1.1)") from None
    return values


def _cmd_gen(args: argparse.Namespace) -> int:
    import allocator
    from allocator.generators import generate

    problem = generate(args.kind, args.n, seed=args.seed, max_size=args.max_size, alignment=args.alignment)
    allocator.write_csv(args.output, problem)
    print(f"{args.output}: {args.kind}, {len(problem)} buffers, LOAD {allocator.lower_bound(problem):,} B")
    return 0


def _cmd_models(args: argparse.Namespace) -> int:
    import frontend

    for name in frontend.list_models():
        print(name)
    return 0


def _cmd_configs(args: argparse.Namespace) -> int:
    if args.fields:
        rows_f = [("field", "type", "meaning")] + describe_fields()
        width = [max(len(r[i]) for r in rows_f) for i in range(2)]
        for key, kind, doc in rows_f:
            print(f"{key:<{width[0]}}  {kind:<{width[1]}}  {doc}")
        return 0
    header = ("name", "scope", "PEs", "SRAM/PE", "SRAM total", "align", "clock", "compute", "MACs/cycle", "DRAM BW",
              "DRAM", "dtype")
    rows = [header]
    for name in list_configs():
        hw = load_hw(name)
        rows.append((
            hw.name, hw.capacity_scope, str(hw.n_pe), format_bytes(hw.sram_bytes_per_pe),
            format_bytes(hw.sram_bytes_total), f"{hw.alignment} B", f"{hw.clock_hz / 1e6:g} MHz",
            _compute_label(hw), f"{hw.peak_macs_per_cycle:,}",
            f"{hw.dram_bandwidth_bytes_per_s / 1e9:g} GB/s", format_bytes(hw.dram_bytes), hw.dtype,
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    for name in list_configs():
        hw = load_hw(name)
        print(f"\n{hw.name}: {hw.description}\n  {hw.source}")
    return 0


def _compute_label(hw: HardwareConfig) -> str:
    c = hw.compute
    if c.kind == "systolic":
        return f"{c.units}x {c.rows}x{c.cols} {c.dataflow}"
    if c.kind == "lanes":
        return f"{c.units}x{c.cores_per_unit}x{c.lanes_per_core} lanes"
    return "ideal"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="accelsim",
        description="Compile PyTorch models for accelerators with software-managed on-chip memory, and simulate them.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="compile and simulate a model, write a report folder")
    run.add_argument("model", help="model zoo name (see `accelsim models`) or a graph saved as .json")
    run.add_argument("--hw", default="pixel6", help="bundled config name or a .yaml path (default: pixel6)")
    run.add_argument("--sram", help="scratchpad bytes per PE (whole memory on chip-scope configs), e.g. 8MiB")
    run.add_argument("--allocator", help="re-place the schedule with this allocator method "
                                         "(default: the scheduler's online first fit)")
    run.add_argument("--timeout", type=float, help="allocator time limit in seconds")
    run.add_argument("--out", help="report folder (default: ./accelsim-out/MODEL-HW/)")
    run.add_argument("--dtype", help="storage dtype (default: the config's, e.g. int8 on pixel6)")
    run.add_argument("--input-shape", help="input shape, e.g. 1,3,224,224 (default: the zoo's)")
    run.add_argument("--scheduler", default="program", choices=_SCHEDULERS,
                     help="program (default) or min-peak order with a replacement policy, or a COSMA model: "
                          "cosma (joint), cosma-fs (fixed order), cosma-dnc (divide and conquer)")
    run.add_argument("--replacement", default="belady", choices=("belady", "greedy"),
                     help="replacement policy of the program / min-peak schedulers (default belady)")
    run.add_argument("--order", default="program", choices=("program", "min-peak"),
                     help="the fixed order of cosma-fs (default program)")
    run.add_argument("--budget", help="schedule in MR, MH, MP (COSMA's budgets) or this many bytes per PE "
                                      "instead of the whole scratchpad")
    run.add_argument("--weights", action=argparse.BooleanOptionalAction, default=True,
                     help="--no-weights gives weights no memory and no traffic (activations only)")
    run.add_argument("--time-limit", type=float, help="seconds for a solver-based scheduler (default 10)")
    run.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help="replace a hardware field (repeatable; dotted keys for blocks), e.g. --set compute.rows=256 "
                          "--set dram_bandwidth_bytes_per_s=25.6e9 --set sram_bytes_per_pe=8MiB; "
                          "`accelsim configs --fields` lists them")
    run.set_defaults(handler=_cmd_run)

    alloc = sub.add_parser("alloc", help="solve a static allocation problem from a MiniMalloc CSV")
    alloc.add_argument("file", nargs="?", help="CSV with columns id,lower,upper,size[,alignment,offset]")
    alloc.add_argument("--capacity", help="memory size in bytes (e.g. 1048576 or 1MiB); omit to minimise the peak")
    alloc.add_argument("--method", help="allocation method (see --methods)")
    alloc.add_argument("--timeout", type=float, help="time limit in seconds")
    alloc.add_argument("--output", help="write the placed buffers (with an offset column) to this CSV")
    alloc.add_argument("--methods", action="store_true", help="list the allocation methods and exit")
    alloc.add_argument("--minimize", action="store_true",
                       help="minimise the peak (anytime; default method minimalloc, default timeout 10 s)")
    alloc.set_defaults(handler=_cmd_alloc)

    bench = sub.add_parser("bench", help="benchmark allocation methods over CSV instances (validated)")
    bench.add_argument("paths", nargs="+", help="CSV files or folders of them")
    bench.add_argument("--method", default="greedy-by-size",
                       help="method names, comma-separated; telamalloc:STRATEGY picks a Fig. 14 strategy")
    mode = bench.add_mutually_exclusive_group(required=True)
    mode.add_argument("--capacity", help="one capacity for every instance (bytes or e.g. 1MiB)")
    mode.add_argument("--capacity-from-name", action="store_true", help="read it from names like A.1048576.csv")
    mode.add_argument("--minimize", action="store_true", help="minimise the peak instead")
    mode.add_argument("--load-fraction", help="capacities as multiples of each instance's LOAD, comma-separated "
                                              "(e.g. 1.0,1.05,1.1: one row per capacity)")
    bench.add_argument("--timeout", type=float, default=10.0, help="seconds per instance and method (default 10)")
    bench.add_argument("--repeat", type=int, default=1, help="runs per instance and method; the median is shown")
    bench.add_argument("--csv", help="also write the rows to this CSV")
    bench.add_argument("--plot", help="also draw quality versus time (%% over LOAD against seconds) to this image")
    bench.add_argument("--summary", action="store_true",
                       help="per method: failures and geomean nodes on the configurations all placed (Fig. 14)")
    bench.add_argument("--threads", type=int, default=0,
                       help="threads of the minimalloc portfolio (default 0: one per core)")
    bench.set_defaults(handler=_cmd_bench)

    gen = sub.add_parser("gen", help="write a generated instance (TelaMalloc Table 1 microbenchmarks, random)")
    gen.add_argument("kind", help="non-overlapping, full-overlap or random")
    gen.add_argument("n", type=int, help="number of buffers")
    gen.add_argument("output", help="CSV file to write (MiniMalloc format)")
    gen.add_argument("--seed", type=int, default=0, help="seed of the sizes (and times, for random)")
    gen.add_argument("--max-size", type=int, default=4096, help="largest buffer size in bytes (default 4096)")
    gen.add_argument("--alignment", type=int, default=1, help="alignment of every buffer (default 1)")
    gen.set_defaults(handler=_cmd_gen)

    models = sub.add_parser("models", help="list the model zoo")
    models.set_defaults(handler=_cmd_models)
    configs = sub.add_parser("configs", help="list the bundled hardware configs")
    configs.add_argument("--fields", action="store_true", help="list every hardware field (the --set keys)")
    configs.set_defaults(handler=_cmd_configs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        sys.stdout = open(os.devnull, "w")  # so the interpreter's final flush does not fail again
        return 0
    except CompileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

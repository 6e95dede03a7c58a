"""The ``accelsim`` command line (also ``python -m accelsim``).

Subcommands::

    accelsim run MODEL [--hw NAME|FILE.yaml] [--sram 8MiB] [--allocator M] [--out DIR] [--no-plots]
                       [--dtype D] [--input-shape 1,3,224,224] [--set KEY=VALUE ...] [--cache DIR | --no-cache]
                       [--buffers OUT.csv] [--timeout S] [--time-limit S]
    accelsim alloc FILE.csv [--capacity 1MiB] [--method M] [--timeout S] [--output OUT.csv] [--explain WHY.csv]
    accelsim alloc --methods
    accelsim size MODEL [--hw NAME|FILE.yaml] [--scheduler S,...] [--allocator A,...] [--set KEY=VALUE ...]
    accelsim models
    accelsim configs [--fields]

Exit status: 0 success; 1 the run or allocation did not succeed (memory check failed, the
allocator could not fit, a search timed out or was infeasible); 2 bad input (unknown model,
bad hardware field, malformed CSV, capacity below M_R, ...), reported as one ``error:`` line
on stderr; 3 (``run`` and ``size``) the result is valid but not the deterministic one: a
wall-clock safety net (``--timeout``, ``--time-limit``) ended a search before its work budget
did, so another machine, or this one under another load, may answer differently (``run``:
the summary's ``deterministic`` line and ``report.json``'s ``deterministic`` and
``clock_stopped`` say where). Without those options every budget counts work, and the answer
is the same everywhere.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from accelsim.errors import CompileError, one_line
from accelsim.hw import describe_fields, list_configs, load_hw, parse_overrides
from accelsim.outputs import PLOT_SUFFIXES, check_output_file, check_output_folder
from accelsim.sources import is_saved_graph, model_label
from accelsim.units import format_bytes, parse_bytes

#: exit status of ``run`` and ``size`` when a wall-clock limit ended a search (see the module docstring)
EXIT_NOT_DETERMINISTIC = 3
#: the method of ``accelsim alloc`` when ``--method`` is not given (also the flow's default allocator)
DEFAULT_METHOD = "auto"
#: ``scheduler.SCHEDULERS``, repeated so that ``accelsim --help`` does not import the solvers
_SCHEDULERS = ("program", "min-peak", "cosma", "cosma-fs", "cosma-dnc")

if TYPE_CHECKING:
    import allocator
    from accelsim.hw import HardwareConfig


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``error: accelsim run: argument --timeout: ...`` and exit 2.

    The stock parser prints the whole usage block before the message; the README's contract is
    one line naming the item (``accelsim COMMAND --help`` shows the usage).
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message}\n")


def _positive_seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds (``0``, ``-1``, ``nan``, ``inf`` refused;
    ASCII digits only: ``float`` alone would read ``"５"`` as 5)."""
    try:
        if not text.isascii():
            raise ValueError(text)
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive, finite number of seconds")
    return value


def _positive_int(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text.strip(), re.ASCII) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def _count(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text.strip(), re.ASCII):
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative integer")
    return int(text)


_SHAPE = re.compile(r"\s*[0-9]+(?:\s*[,x]\s*[0-9]+)*\s*", re.ASCII)


def _parse_shape(text: str) -> tuple[int, ...]:
    """``--input-shape``: positive ASCII integers separated by ``,`` (or ``x``), nothing else.

    >>> _parse_shape("1,3,224,224"), _parse_shape("1x3x299x299")
    ((1, 3, 224, 224), (1, 3, 299, 299))
    >>> _parse_shape("1,3,x")
    Traceback (most recent call last):
    ...
    ValueError: --input-shape '1,3,x' is not a list of positive integers such as 1,3,224,224
    """
    if not _SHAPE.fullmatch(text):
        raise ValueError(f"--input-shape {text!r} is not a list of positive integers such as 1,3,224,224")
    shape = tuple(int(part) for part in re.split(r"[,x]", text.replace(" ", "")))
    if any(d <= 0 for d in shape):
        raise ValueError(f"--input-shape {text!r}: every dimension must be positive, e.g. 1,3,224,224")
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
    options = RunOptions(
        sram=args.sram, allocator=args.allocator, dtype=args.dtype,
        input_shape=_parse_shape(args.input_shape) if args.input_shape is not None else None,
        timeout=args.timeout, scheduler=args.scheduler, replacement=args.replacement,
        budget=_parse_budget(args.budget) if args.budget is not None else None, weights=args.weights,
        time_limit=args.time_limit, fixed_order=args.order, cache=args.cache_traces, cache_dir=args.cache,
        overrides=overrides,  # applied below already; the pipeline checks them against the options and the graph
        **({"max_operators": args.max_operators} if args.max_operators is not None else {}),
    )
    options.check(traced=not is_saved_graph(args.model))
    _check_named_cache(args.cache)
    hw = load_hw(args.hw, overrides)
    label = model_label(args.model)
    out = Path(args.out) if args.out is not None else Path("accelsim-out") / f"{label}-{hw.name}"
    check_output_folder(out, "--out")
    if args.buffers is not None:
        check_output_file(args.buffers, "--buffers")
    report = compile_and_simulate(args.model, hw, options, out_dir=out, plots=not args.no_plots)
    print(format_summary(report))
    if args.buffers is not None:
        report.write_buffers(args.buffers)
        print(f"buffers: {args.buffers} ({len(report.buffers):,} residencies; `accelsim alloc {args.buffers} "
              f"--capacity {report.capacity_bytes}` reads them back)")
    if not report.ok:
        print(f"error: memory check failed: {report.memory_check}", file=sys.stderr)
        return 1
    if not report.deterministic:
        print(f"warning: the wall-clock limit fired in {', '.join(report.clock_stopped)}: the result is not the "
              "deterministic one (exit status 3)", file=sys.stderr)
        return EXIT_NOT_DETERMINISTIC
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    """``accelsim sweep``: the grid's points, resumable, with progress; see ``accelsim.sweeps``."""
    from accelsim.sweeps import MAX_POINTS, SweepInterrupted, run_sweep

    overrides = parse_overrides(args.set or [])
    options: dict[str, object] = {}
    for name in ("scheduler", "allocator", "timeout", "time_limit", "dtype"):
        value = getattr(args, name)
        if value is not None:
            options[name] = value
    if args.budget is not None:
        options["budget"] = _parse_budget(args.budget)
    if not args.weights:
        options["weights"] = False
    if not args.grid:
        raise ValueError("give at least one --grid KEY=V1,V2,... (e.g. --grid sram=256KiB,1MiB)")
    _check_named_cache(args.cache)
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
    if outcome.plots:
        print(f"plots: {', '.join(str(p) for p in outcome.plots)}")
    return 0


def _cmd_size(args: argparse.Namespace) -> int:
    """``accelsim size``: M_R and the smallest spill-free SRAM per scheduler/allocator pair; see ``accelsim.sizing``."""
    from accelsim.sizing import DEFAULT_PAIRS, check_pairs, size

    schedulers = _names(args.scheduler, "--scheduler", "scheduler") if args.scheduler is not None else None
    allocators = _names(args.allocator, "--allocator", "allocator") if args.allocator is not None else None
    if allocators is not None:  # every name checked, also those a cosma* scheduler will not use
        check_pairs([("program", a) for a in allocators if a != "own"])
        if schedulers is not None and all(s.startswith("cosma") for s in schedulers):
            raise ValueError(f"--allocator {args.allocator!r} places the program / min-peak schedulers' tensors; "
                             f"--scheduler {args.scheduler!r} places them itself (its CP-SAT addresses)")
    if schedulers is None and allocators is None:
        pairs = list(DEFAULT_PAIRS)
    else:
        pairs = [(s, "own" if s.startswith("cosma") else a)
                 for s in (schedulers or ["program"]) for a in (allocators or ["auto"])]
    pairs = check_pairs(pairs)
    if args.csv is not None:
        check_output_file(args.csv, "--csv")
    report = size(args.model, args.hw, pairs, overrides=parse_overrides(args.set or []), timeout=args.timeout,
                  time_limit=args.time_limit, weights=args.weights,
                  **({"max_operators": args.max_operators} if args.max_operators is not None else {}))
    print(report.format())
    if args.csv is not None:
        import csv

        rows = report.rows()
        with open(args.csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        print(f"csv: {args.csv}")
    if not all(p.no_spill_bytes is not None for p in report.pairs):
        return 1
    return EXIT_NOT_DETERMINISTIC if any(p.clock_stopped for p in report.pairs) else 0


def _check_named_cache(path: str | None) -> None:
    """A ``--cache`` folder the user named is input: one that cannot be used (a file, a folder
    that cannot be created or written) is bad input, exit 2, refused before any work or output
    folder. (The default folder is not input: ``run`` goes on without saving when it cannot be
    written.)"""
    if path is None:
        return
    from frontend.cache import CacheDirError, check_cache_dir

    try:
        check_cache_dir(path)
    except CacheDirError as exc:
        raise ValueError(f"--cache: {exc}") from None


def _names(text: str, option: str, noun: str, hint: str = "") -> list[str]:
    """A comma-separated list of ``noun`` names, refusing empty ones and repeats (one line naming ``option``)."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise ValueError(f"{option} {text!r}: empty {noun} name (give a comma-separated list of names"
                         + (f", {hint})" if hint else ")"))
    if len(set(names)) != len(names):
        raise ValueError(f"{option} {text!r} names a{'n' if noun[0] in 'aeiou' else ''} {noun} twice")
    return names


def _read_problem(args: argparse.Namespace) -> tuple[allocator.Problem, int | None]:
    import allocator

    capacity = parse_bytes(args.capacity, "--capacity") if args.capacity is not None else None
    if capacity == 0:
        raise ValueError("--capacity must be positive")
    if args.output is not None:
        check_output_file(args.output, "--output")
    for option, written in (("--output", args.output), ("--explain", args.explain)):
        # the input is read whole before anything is written, but a file written over its own input
        # loses the input: refused
        if written is not None and args.file is not None and Path(written).resolve() == Path(args.file).resolve():
            raise ValueError(f"{option} {written!r} is the input file {args.file!r}: it would be overwritten; "
                             "write to another file")
    if args.method is not None:
        from accelsim.bench import parse_method

        parse_method(args.method)  # an unknown method is refused before the file is read
    return allocator.read_csv(args.file, capacity=capacity), capacity


def _cmd_alloc(args: argparse.Namespace) -> int:
    import allocator

    if args.methods:  # names and descriptions only: no method's compiled code or solver is loaded
        width = max(len(name) for name in allocator.METHODS)
        for name, entry in allocator.METHODS.items():
            labels = entry.capabilities.labels()
            print(f"{name:<{width}}  {entry.description}" + (f" [{', '.join(labels)}]" if labels else ""))
        return 0
    from accelsim.bench import parse_method, warm_up
    if args.file is None:
        raise ValueError("alloc needs a CSV file (or --methods to list the allocation methods)")
    if args.explain is not None:
        if args.capacity is None:
            raise ValueError("--explain needs --capacity: it explains why no placement fits a capacity")
        if args.minimize:
            raise ValueError("--explain explains a --capacity without a placement; use it without --minimize")
        check_output_file(args.explain, "--explain")
    problem, capacity = _read_problem(args)
    method = args.method or DEFAULT_METHOD
    # Compiled code is loaded (or, on the first run after installing, compiled and cached)
    # before the clock starts, so --timeout limits the search itself; the time is reported. Only
    # what this run reaches: a fit loads neither the minimisation's heuristics nor other methods.
    loading = warm_up([method], "minimize" if args.minimize else "fit")[method]
    if args.minimize:
        if args.threads is not None:
            raise ValueError("--threads applies to a fit under --capacity; --minimize runs its own schedule of probes")
        return _minimize(args, problem, capacity, method, loading)
    name, extra = parse_method(method)
    if args.threads is not None:
        extra = {**extra, **_threads_option(name, args.threads)}
    result = allocator.solve(problem, name, args.timeout, **extra)
    load = int(result.stats["lower_bound"])
    rows = [
        ("file", f"{args.file} ({len(problem):,} buffers)"),
        ("capacity", f"{capacity:,} B" if capacity is not None else "none (minimise the peak)"),
        ("method", result.method),
        ("status", result.status),
        ("peak", f"{result.peak:,} B" if result.peak is not None else "-"),
        ("LOAD", f"{load:,} B (lower bound)"),
        ("over LOAD", f"{100 * (result.peak - load) / load:.2f} %" if result.peak is not None and load else "-"),
        ("time", f"{result.stats.get('seconds', 0.0):.3f} s (+ {loading:.2f} s loading compiled code)"),
    ]
    if "nodes" in result.stats:
        rows.append(("search", f"{int(result.stats['nodes']):,} nodes, {int(result.stats.get('backtracks', 0)):,} "
                               "backtracks"))
    reason, explained = result.reason, None
    if not result.solved and (args.explain is not None or result.status == "infeasible"):
        reason, explained = _alloc_explain(args, problem, result)
    if reason:
        rows.append(("reason", reason))
    if args.output is not None:
        # Only a placement that fits is written: a file downstream tools would trust as valid.
        if result.solved and result.solution is not None:
            allocator.write_csv(args.output, problem, result.solution)
            rows.append(("output", args.output))
        else:
            rows.append(("output", f"{args.output} not written: no placement fits the capacity"))
    _print_rows(rows)
    if args.explain is not None:
        print(explained or f"explain: a placement fits the capacity, nothing to explain; {args.explain} not written")
    return 0 if result.solved else 1


#: without --explain, a failed alloc looks for a small set of buffers to name with at most this
#: share of --timeout, this many seconds, and this many nodes per probe of the exact search
_NAMING_SHARE, _NAMING_SECONDS, _NAMING_NODES = 0.25, 2.0, 100_000
#: ... and only on problems of at most this many buffers (LOAD above the capacity: on any)
_NAMING_MAX_BUFFERS = 20_000
#: seconds --explain gets without --timeout
_EXPLAIN_SECONDS = 60.0


def _alloc_explain(args: argparse.Namespace, problem: allocator.Problem,
                   result: allocator.AllocationResult) -> tuple[str, str | None]:
    """The reason of a failed ``alloc``, naming a small set of buffers that cannot be placed together
    when one is found, and with ``--explain`` the line saying what was written to that file.

    With ``--explain`` the exact search decides whatever the method said (``failed`` and
    ``timeout`` prove nothing) and gets ``--timeout`` seconds of its own (60 without). Without
    it, only a proven infeasibility is explained, in a bounded share of the time, and only the
    set's ids (up to 10) go into the reason.
    """
    import allocator
    from accelsim.bench import warm_up
    from allocator.explain import DEFAULT_NODE_LIMIT, FeasibleProblemError, explain_infeasible

    reason = result.reason
    asked = args.explain is not None
    if not asked and len(problem) > _NAMING_MAX_BUFFERS and result.stats["lower_bound"] <= (problem.capacity or 0):
        return reason, None
    if asked or result.stats["lower_bound"] <= (problem.capacity or 0):  # (LOAD above it rarely needs a search)
        warm_up(["greedy-by-size", "minimalloc"])  # compiled code loaded before the clock starts
    if asked:
        timeout, nodes = args.timeout or _EXPLAIN_SECONDS, DEFAULT_NODE_LIMIT
    else:
        timeout = min(_NAMING_SECONDS, _NAMING_SHARE * args.timeout) if args.timeout else _NAMING_SECONDS
        nodes = _NAMING_NODES
    unproven = "" if result.status == "infeasible" else f"{result.method}'s {result.status!r} proves nothing; "
    try:
        explanation = explain_infeasible(problem, timeout=timeout, node_limit=nodes)
    except FeasibleProblemError:
        if not asked:  # the method proved the opposite: say so rather than hide it
            return f"{reason}; yet the exact search found a placement that fits (a wrong proof: please report)", None
        return reason, (f"explain: {unproven}the exact search found a placement that fits (use --method "
                        f"minimalloc); {args.explain} not written")
    if not explanation.proven_infeasible:
        return reason, (f"explain: {unproven}{explanation.reason} within {timeout:g} s; {args.explain} not "
                        "written") if asked else None
    named = explanation.describe() if len(explanation) <= 10 else (
        f"{len(explanation):,} buffers cannot be placed together ({explanation.reason}); "
        + (f"see {args.explain}" if asked else "--explain OUT.csv writes them"))
    reason = f"{reason}; {named}" if reason else named
    if not asked:
        return reason, None
    allocator.write_csv(args.explain, explanation.problem)
    buffers = "1 buffer" if len(explanation) == 1 else f"{len(explanation):,} buffers"
    return reason, (f"explain: {unproven}{buffers} written to {args.explain} "
                    f"({explanation.seconds:.2f} s, {explanation.probes} probes); {explanation.minimality()}")


def _print_rows(rows: list[tuple[str, str]]) -> None:
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}", flush=True)


def _threads_option(method: str, threads: int) -> dict[str, int]:
    """``--threads``: the ``workers`` field of the method's options record (``minimalloc`` and
    ``auto``: threads of the portfolio, whose answer does not depend on them; ``cpsat``: CP-SAT
    workers). Refused for a method without one."""
    from dataclasses import fields

    import allocator

    record = allocator.METHODS[method].options
    if "workers" not in {f.name for f in fields(record)}:
        with_workers = [name for name, entry in allocator.METHODS.items()
                        if "workers" in {f.name for f in fields(entry.options)}]
        raise ValueError(f"--threads applies to the methods with a workers option ({', '.join(with_workers)}), "
                         f"not to {method!r}")
    return {"workers": threads}


def _minimize(args: argparse.Namespace, problem: allocator.Problem, capacity: int | None, method: str,
              loading: float) -> int:
    """``alloc --minimize``: the best peak found in the time, its lower bound, and whether it is optimal.

    With ``--capacity`` the peak is still minimised, and the capacity is the most the answer
    may use: a best peak above it is no placement (exit 1, ``--output`` not written), and a
    lower bound above it proves that none exists. Ctrl-C stops the search: the best placement
    found so far is reported (and written when it fits), and the exit status is 130.
    """
    import allocator

    timeout = 10.0 if args.timeout is None else args.timeout
    free = problem.with_capacity(None)
    incumbent: list[allocator.MinimizeResult] = []

    def improved(best: allocator.MinimizeResult) -> None:
        incumbent.append(best)  # what Ctrl-C reports
        print(f"best so far  {best.peak:,} B after {best.seconds:.2f} s (Ctrl-C stops and keeps it)", flush=True)
    interrupted = False
    try:
        result = allocator.minimize(free, method=method, timeout=timeout, on_improve=improved)
    except Exception_or_interrupt as exc:
        if not _from_ctrl_c(exc):
            raise
        interrupted = True
        if not incumbent:
            print("error: interrupted before any placement was found", file=sys.stderr)
            return 130
        result = incumbent[-1]
    load = allocator.lower_bound(free)
    if result.peak is None or result.solution is None:
        print(f"error: {args.file}: {result.reason}", file=sys.stderr)
        return 1
    if interrupted:
        status = "interrupted (Ctrl-C): best found so far"
    else:
        status = "optimal" if result.optimal else ("best found (time out)" if result.timed_out else "best found")
    fits = capacity is None or result.peak <= capacity
    rows = [
        ("file", f"{args.file} ({len(problem):,} buffers)"),
        ("method", f"{result.method} (minimise the peak)"),
        ("status", status),
        ("peak", f"{result.peak:,} B"),
        ("lower bound", f"{result.lower_bound:,} B" + (" (LOAD)" if result.lower_bound == load else "")),
        ("LOAD", f"{load:,} B"),
        ("over LOAD", f"{100 * (result.peak - load) / load:.2f} %" if load else "-"),
        ("time", f"{result.seconds:.3f} s (+ {loading:.2f} s loading compiled code)"),
        ("probes", f"{len(result.probes)} capacities searched, {int(result.stats.get('nodes', 0)):,} nodes"),
    ]
    if result.reason:
        rows.append(("note", result.reason))
    if capacity is not None:
        verdict = "fits" if fits else ("infeasible: the lower bound exceeds it" if result.lower_bound > capacity
                                       else "best peak exceeds it")
        rows.insert(2, ("capacity", f"{capacity:,} B ({verdict})"))
    if args.output is not None:
        if fits:
            allocator.write_csv(args.output, free, result.solution)
            rows.append(("output", args.output))
        else:
            rows.append(("output", f"{args.output} not written: no placement fits the capacity"))
    _print_rows(rows)
    if interrupted:
        return 130
    return 0 if fits else 1


def _cmd_bench(args: argparse.Namespace) -> int:
    from accelsim import bench

    methods = _names(args.method, "--method", "method", "see `accelsim alloc --methods`")
    for method in methods:
        bench.parse_method(method)
    if args.csv is not None:
        check_output_file(args.csv, "--csv")
    if args.plot is not None:
        check_output_file(args.plot, "--plot", PLOT_SUFFIXES)
    files = bench.instance_files(args.paths)
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
        if not _from_ctrl_c(exc):
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
        bench.write_rows(args.csv, rows)
        print(f"{len(rows)} rows written to {args.csv}")
    if args.plot is not None and any(r.trace for r in rows):
        bench.plot_rows(args.plot, rows)
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
            if not part.isascii():  # float() would read any Unicode digit
                raise ValueError(part)
            value = float(part)
        except ValueError:
            raise ValueError(f"--load-fraction: {part.strip()!r} is not a number (e.g. 1.0,1.05,1.1)") from None
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"--load-fraction: {part.strip()!r} must be a positive, finite multiple of LOAD")
        values.append(value)
    return values


def _cmd_gen(args: argparse.Namespace) -> int:
    import allocator
    from allocator.generators import generate

    check_output_file(args.output, "output")
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
    parser = _Parser(
        prog="accelsim",
        description="Compile PyTorch models for accelerators with software-managed on-chip memory, and simulate them.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="compile and simulate a model, write a report folder",
                         epilog="Every default budget counts work (search nodes, spill-loop rounds, CP-SAT "
                                "deterministic time), so the answer is the same on every machine. Exit status: "
                                "0 ok; 1 the run failed (memory check, allocation); 2 bad input; 3 valid, but a "
                                "wall-clock limit (--timeout, --time-limit) ended a search: not the deterministic "
                                "result.")
    run.add_argument("model", help="model zoo name (see `accelsim models`) or a graph saved as .json")
    run.add_argument("--hw", default="pixel6", help="bundled config name or a .yaml path (default: pixel6)")
    run.add_argument("--sram", help="scratchpad bytes per PE (whole memory on chip-scope configs), e.g. 8MiB")
    run.add_argument("--allocator", help="allocator method (see `accelsim alloc --methods`): with the program / "
                                         "min-peak schedulers it places every residency plan and so decides the "
                                         "spills (default auto; online-first-fit: the old online arena); with "
                                         "cosma* it re-places the schedule (default: the solver's addresses)")
    run.add_argument("--timeout", type=_positive_seconds,
                     help="a wall-clock safety net in seconds for the allocator (default: none; its budget is "
                          "search nodes): the whole allocation-aware loop, or the re-placement of a cosma* "
                          "schedule; when it fires the report says so and the exit status is 3")
    run.add_argument("--buffers", metavar="OUT.csv",
                     help="also write the placed residencies to this CSV in the MiniMalloc format "
                          "(id,lower,upper,size[,alignment],offset), which `accelsim alloc` reads")
    run.add_argument("--out", help="report folder (default: ./accelsim-out/MODEL-HW/)")
    run.add_argument("--no-plots", action="store_true",
                     help="write report.json and trace.json only, not layout.svg, memory.svg, roofline.svg")
    run.add_argument("--cache", metavar="DIR",
                     help="trace cache folder (default: $ACCELSIM_CACHE_DIR or ~/.cache/accelsim/graphs; a default "
                          "folder that cannot be written is skipped)")
    run.add_argument("--no-cache", dest="cache_traces", action="store_false",
                     help="trace the model even when the trace cache has it, and leave the cache as it is "
                          "(neither read nor written)")
    run.add_argument("--dtype", help="storage dtype (default: the config's, e.g. int8 on pixel6)")
    run.add_argument("--input-shape", help="input shape, e.g. 1,3,224,224 (default: the zoo's)")
    run.add_argument("--scheduler", default="program", choices=_SCHEDULERS,
                     help="program (default) or min-peak order with a replacement policy, or a COSMA model: "
                          "cosma (joint), cosma-fs (fixed order), cosma-dnc (divide and conquer)")
    run.add_argument("--replacement", choices=("belady", "greedy"),
                     help="replacement policy of the program / min-peak schedulers (default belady)")
    run.add_argument("--order", choices=("program", "min-peak"),
                     help="the fixed order of cosma-fs (default program)")
    run.add_argument("--budget", help="schedule in MR, MH, MP (COSMA's budgets) or this many bytes per PE "
                                      "instead of the whole scratchpad")
    run.add_argument("--weights", action=argparse.BooleanOptionalAction, default=True,
                     help="--no-weights gives weights no memory and no traffic (activations only)")
    run.add_argument("--time-limit", type=_positive_seconds,
                     help="a wall-clock safety net in seconds per solve of a solver-based scheduler (cosma*; "
                          "default: none; its budget is CP-SAT deterministic time); exit status 3 when it fires")
    run.add_argument("--max-operators", type=_positive_int, default=None, metavar="N",
                     help="refuse a graph of more than N operators (default 250,000; a run takes about 16 KiB "
                          "of memory per operator, and one that needs more than the machine has is refused anyway)")
    run.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help="replace a hardware field (repeatable; dotted keys for blocks), e.g. --set compute.rows=256 "
                          "--set dram_bandwidth_bytes_per_s=25.6e9 --set sram_bytes_per_pe=8MiB; "
                          "`accelsim configs --fields` lists them")
    run.set_defaults(handler=_cmd_run)

    alloc = sub.add_parser("alloc", help="solve a static allocation problem from a MiniMalloc CSV")
    alloc.add_argument("file", nargs="?", help="CSV with columns id,lower,upper,size[,alignment,offset]")
    alloc.add_argument("--capacity", help="memory size in bytes (e.g. 1048576 or 1MiB); omit to minimise the peak")
    alloc.add_argument("--method", help=f"allocation method (see --methods; default {DEFAULT_METHOD}: the fast "
                                        "heuristics, then the exact search with the time left)")
    alloc.add_argument("--timeout", type=_positive_seconds, help="time limit in seconds (default: none; "
                                                                 "10 with --minimize)")
    alloc.add_argument("--output", help="write the placed buffers (with an offset column) to this CSV")
    alloc.add_argument("--explain", metavar="OUT.csv",
                       help="when no placement fits --capacity, write a minimal set of buffers that cannot be "
                            "placed together (infeasible, and feasible without any one of them) to this CSV; "
                            "the exact search decides, in --timeout seconds of its own (default 60)")
    alloc.add_argument("--threads", type=_count, help="threads of the method (its options' workers: minimalloc's "
                       "and auto's portfolio, CP-SAT's workers; default: the method's, one per core for the "
                       "portfolio, whose placement is the same with any number)")
    alloc.add_argument("--methods", action="store_true", help="list the allocation methods and exit")
    alloc.add_argument("--minimize", action="store_true",
                       help="minimise the peak (anytime; default timeout 10 s); "
                            "with --capacity, a best peak above it is no placement (exit 1)")
    alloc.set_defaults(handler=_cmd_alloc)

    sweep = sub.add_parser("sweep", help="what-if grid: models x hardware fields x run options (resumable)")
    sweep.add_argument("models", nargs="+", metavar="MODEL", help="model zoo names or graphs saved as .json")
    sweep.add_argument("--hw", default="pixel6", help="bundled config name or a .yaml path (default: pixel6)")
    sweep.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                       help="a hardware field (as for --set) or one of sram, scheduler, allocator, budget, dtype, "
                            "weights, with its values; repeat for more keys: the grid is their product")
    sweep.add_argument("--out", required=True, help="results folder: results.csv, points/HASH.json, plots; "
                                                    "re-running the command there resumes")
    sweep.add_argument("--executor", choices=("local", "dask"), default="local",
                       help="local worker processes (default) or Dask distributed")
    sweep.add_argument("--jobs", type=_positive_int, help="worker processes (default: the number of cores)")
    sweep.add_argument("--dask-address", help="a running Dask scheduler, e.g. tcp://host:8786 (default: a "
                                              "LocalCluster of --jobs workers)")
    sweep.add_argument("--cache", metavar="DIR",
                       help="trace cache folder (default: $ACCELSIM_CACHE_DIR or ~/.cache/accelsim/graphs)")
    sweep.add_argument("--set", action="append", metavar="KEY=VALUE", help="a hardware field fixed for every point")
    sweep.add_argument("--scheduler", choices=_SCHEDULERS, help="scheduler of every point (default: program)")
    sweep.add_argument("--allocator", help="re-place every schedule with this allocator method")
    sweep.add_argument("--timeout", type=_positive_seconds,
                       help="a wall-clock safety net in seconds for the allocator of every point (default: none; "
                            "budgets count work); a point it cut short says so in its report.json")
    sweep.add_argument("--time-limit", type=_positive_seconds,
                       help="a wall-clock safety net in seconds per cosma* solve (default: none)")
    sweep.add_argument("--dtype", help="storage dtype of every point (default: the config's)")
    sweep.add_argument("--budget", help="MR, MH, MP or bytes per PE to schedule in (default: the scratchpad)")
    sweep.add_argument("--weights", action=argparse.BooleanOptionalAction, default=True,
                       help="give weights memory and traffic (default) or consider activations only")
    sweep.add_argument("--no-plots", action="store_true", help="write results.csv and the reports only")
    sweep.add_argument("--max-points", type=_positive_int,
                       help="refuse a sweep of more points (models x the grid's combinations) than this "
                            "(default 100,000)")
    sweep.set_defaults(handler=_cmd_sweep)

    sizing = sub.add_parser("size", help="minimum SRAM: M_R and the smallest spill-free SRAM per "
                                         "scheduler/allocator pair, and the peak at the config's SRAM")
    sizing.add_argument("model", help="model zoo name or a graph saved as .json (traced once, through the cache)")
    sizing.add_argument("--hw", default="pixel6", help="bundled config name or a .yaml path (default: pixel6)")
    sizing.add_argument("--scheduler", help="comma-separated schedulers (default program); cosma* place their "
                                            "own tensors")
    sizing.add_argument("--allocator", help="comma-separated allocators of the program / min-peak schedulers "
                                            "(default: online-first-fit and auto)")
    sizing.add_argument("--timeout", type=_positive_seconds,
                        help="a wall-clock safety net in seconds for each allocation-aware loop (default: none; "
                             "budgets count work); exit status 3 when it fires")
    sizing.add_argument("--time-limit", type=_positive_seconds,
                        help="a wall-clock safety net in seconds for each cosma* solve (default: none); exit "
                             "status 3 when it fires")
    sizing.add_argument("--weights", action=argparse.BooleanOptionalAction, default=True,
                        help="--no-weights gives weights no memory (activations only)")
    sizing.add_argument("--max-operators", type=_positive_int, default=None, metavar="N",
                        help="refuse a graph of more than N operators (default 250,000)")
    sizing.add_argument("--set", action="append", metavar="KEY=VALUE", help="replace a hardware field (repeatable)")
    sizing.add_argument("--csv", help="also write the table as CSV")
    sizing.set_defaults(handler=_cmd_size)

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
    bench.add_argument("--timeout", type=_positive_seconds, default=10.0,
                       help="seconds per instance and method (default 10)")
    bench.add_argument("--repeat", type=_positive_int, default=1,
                       help="runs per instance and method; the median is shown")
    bench.add_argument("--csv", help="also write the rows to this CSV")
    bench.add_argument("--plot", help="also draw quality versus time (%% over LOAD against seconds) to this image")
    bench.add_argument("--summary", action="store_true",
                       help="per method: failures and geomean nodes on the configurations all placed (Fig. 14)")
    bench.add_argument("--threads", type=_count, default=0,
                       help="threads of the minimalloc portfolio (default 0: one per core)")
    bench.set_defaults(handler=_cmd_bench)

    gen = sub.add_parser("gen", help="write a generated instance (TelaMalloc Table 1 microbenchmarks, random)")
    gen.add_argument("kind", help="non-overlapping, full-overlap or random")
    gen.add_argument("n", type=_positive_int, help="number of buffers")
    gen.add_argument("output", help="CSV file to write (MiniMalloc format)")
    gen.add_argument("--seed", type=_count, default=0, help="seed of the sizes (and times, for random)")
    gen.add_argument("--max-size", type=_positive_int, default=4096, help="largest buffer size in bytes (default 4096)")
    gen.add_argument("--alignment", type=_positive_int, default=1, help="alignment of every buffer (default 1)")
    gen.set_defaults(handler=_cmd_gen)

    models = sub.add_parser("models", help="list the model zoo")
    models.set_defaults(handler=_cmd_models)
    configs = sub.add_parser("configs", help="list the bundled hardware configs")
    configs.add_argument("--fields", action="store_true", help="list every hardware field (the --set keys)")
    configs.set_defaults(handler=_cmd_configs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    _watch_ctrl_c()
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a one-line usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return int(args.handler(args))
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        sys.stdout = open(os.devnull, "w")  # so the interpreter's final flush does not fail again
        return 0
    except Exception_or_interrupt as exc:
        if _from_ctrl_c(exc):
            print("error: interrupted (Ctrl-C)", file=sys.stderr)
            return 130
        if isinstance(exc, CompileError):
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return 1
        if isinstance(exc, ValueError):
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return 2
        if isinstance(exc, OSError):  # e.g. the disk filled up while writing: the paths were checked before the work
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return 1
        raise


def program() -> NoReturn:
    """The ``accelsim`` program (the console script and ``python -m accelsim``): ``main()`` on
    ``sys.argv``, then the process ends with its exit status.

    Once the command is done, its output is flushed and the exit handlers run (``atexit``:
    multiprocessing, logging, coverage), then the process ends at once (``os._exit``) instead of
    tearing the interpreter down object by object. With numba loaded that teardown (LLVM frees
    every compiled module) is a large share of a short command's CPU time, and nothing a user
    can see depends on it. While a thread other than the main one is still running (none of
    the commands leaves one), the ordinary exit waits for it instead.
    """
    import atexit
    import threading

    status = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`accelsim models | head`) or a closed stream
            pass
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(status)
    atexit._run_exitfuncs()
    os._exit(status)


#: what a Ctrl-C can surface as: KeyboardInterrupt, or another error it caused inside a library
Exception_or_interrupt = (KeyboardInterrupt, Exception)
#: set by ``_watch_ctrl_c``'s handler when SIGINT arrives during a command
_ctrl_c_seen = False


def _watch_ctrl_c() -> None:
    """Note every SIGINT (Ctrl-C) before raising KeyboardInterrupt as Python does.

    A SIGINT that arrives while numba's dispatcher runs a Python callback (choosing the compiled
    version of a kernel, loading cached code) surfaces as that callback's error: a SystemError
    whose cause is the KeyboardInterrupt, or a TypeError (``_c_sort expected 1 argument, got
    0``) with no trace of it. With the flag, any error that ends a command after a Ctrl-C is
    the Ctrl-C's (exit 130, what was found so far kept). Only when SIGINT has Python's own
    handler (not ignored, as in a background job), and only in the main thread."""
    import signal
    import threading

    global _ctrl_c_seen
    _ctrl_c_seen = False
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return

    def handler(signum: int, frame: object) -> None:
        global _ctrl_c_seen
        _ctrl_c_seen = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)


def _from_ctrl_c(exc: BaseException) -> bool:
    """``exc`` is Ctrl-C's KeyboardInterrupt, or an error it caused: one raised after a SIGINT
    arrived (``_watch_ctrl_c``), or one whose cause or context is the KeyboardInterrupt."""
    if _ctrl_c_seen:
        return True
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and not any(seen is e for e in chain):  # a chain can loop
        if isinstance(seen, KeyboardInterrupt):
            return True
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return False


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

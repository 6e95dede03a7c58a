"""``accelsim alloc``: place the buffers of a MiniMalloc CSV under a capacity, or minimise the peak;
on failure, name a small set of buffers that cannot be placed together (``--explain``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from accelsim.cli.args import Parser, count, positive_seconds
from accelsim.cli.status import DEFAULT_METHOD, Exception_or_interrupt, from_ctrl_c
from accelsim.outputs import Output, check_outputs
from accelsim.units import parse_bytes

if TYPE_CHECKING:
    import allocator


def add_parser(subparsers: argparse._SubParsersAction[Parser]) -> None:
    """Add the ``alloc`` command to the ``accelsim`` parser."""
    alloc = subparsers.add_parser("alloc", help="solve a static allocation problem from a MiniMalloc CSV")
    alloc.add_argument("file", nargs="?", help="CSV with columns id,lower,upper,size[,alignment,offset]")
    alloc.add_argument("--capacity", help="memory size in bytes (e.g. 1048576 or 1MiB); omit to minimise the peak")
    alloc.add_argument("--method", help=f"allocation method (see --methods; default {DEFAULT_METHOD}: the fast "
                                        "heuristics, then the exact search with the time left)")
    alloc.add_argument("--timeout", type=positive_seconds, help="time limit in seconds (default: none; "
                                                                 "10 with --minimize)")
    alloc.add_argument("--output", help="write the placed buffers (with an offset column) to this CSV")
    alloc.add_argument("--explain", metavar="OUT.csv",
                       help="when no placement fits --capacity, write a minimal set of buffers that cannot be "
                            "placed together (infeasible, and feasible without any one of them) to this CSV; "
                            "the exact search decides, in --timeout seconds of its own (default 60)")
    alloc.add_argument("--threads", type=count, help="threads of the method (its options' workers: minimalloc's "
                       "and auto's portfolio, CP-SAT's workers; default: the method's, one per core for the "
                       "portfolio, whose placement is the same with any number)")
    alloc.add_argument("--methods", action="store_true", help="list the allocation methods and exit")
    alloc.add_argument("--minimize", action="store_true",
                       help="minimise the peak (anytime; default timeout 10 s); "
                            "with --capacity, a best peak above it is no placement (exit 1)")
    alloc.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """``accelsim alloc``: list the methods, fit under ``--capacity``, or ``--minimize`` the peak."""
    import allocator

    if args.methods:  # names and descriptions only: no method's compiled code or solver is loaded
        width = max(len(name) for name in allocator.METHODS)
        for name, entry in allocator.METHODS.items():
            labels = entry.capabilities.labels()
            print(f"{name:<{width}}  {entry.description}" + (f" [{', '.join(labels)}]" if labels else ""))
        return 0
    from allocator.core.kernel_clock import kernel_seconds
    from allocator.search.bench import parse_method
    if args.file is None:
        raise ValueError("alloc needs a CSV file (or --methods to list the allocation methods)")
    if args.explain is not None:
        if args.capacity is None:
            raise ValueError("--explain needs --capacity: it explains why no placement fits a capacity")
        if args.minimize:
            raise ValueError("--explain explains a --capacity without a placement; use it without --minimize")
    problem, capacity = _read_problem(args)
    method = args.method or DEFAULT_METHOD
    # Compiled code loads (or, on the first run after installing, compiles and is cached) when
    # the search first calls it, only what this run reaches; the search's clock
    # (allocator.core.kernel_clock.work_clock) stands still meanwhile, so --timeout limits the
    # search itself. The time is reported beside it.
    if args.minimize:
        if args.threads is not None:
            raise ValueError("--threads applies to a fit under --capacity; --minimize runs its own schedule of probes")
        return _minimize(args, problem, capacity, method)
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
        ("time", f"{result.stats.get('seconds', 0.0):.3f} s (+ {kernel_seconds():.2f} s loading compiled code)"),
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



def _read_problem(args: argparse.Namespace) -> tuple[allocator.Problem, int | None]:
    import allocator

    capacity = parse_bytes(args.capacity, "--capacity") if args.capacity is not None else None
    if capacity == 0:
        raise ValueError("--capacity must be positive")
    # the input is read whole before anything is written, but a file written over its own input
    # loses the input: refused, as are two outputs at one path
    check_outputs([Output(option, path, suffix=".csv")
                   for option, path in (("--output", args.output), ("--explain", args.explain))
                   if path is not None], {"the input CSV": args.file})
    if args.method is not None:
        from allocator.search.bench import parse_method

        parse_method(args.method)  # an unknown method is refused before the file is read
    return allocator.read_csv(args.file, capacity=capacity), capacity



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
    from allocator.search.explain import DEFAULT_NODE_LIMIT, FeasibleProblemError, explain_infeasible

    reason = result.reason
    asked = args.explain is not None
    if not asked and len(problem) > _NAMING_MAX_BUFFERS and result.stats["lower_bound"] <= (problem.capacity or 0):
        return reason, None
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


def _minimize(args: argparse.Namespace, problem: allocator.Problem, capacity: int | None, method: str) -> int:
    """``alloc --minimize``: the best peak found in the time, its lower bound, and whether it is optimal.

    With ``--capacity`` the peak is still minimised, and the capacity is the most the answer
    may use: a best peak above it is no placement (exit 1, ``--output`` not written), and a
    lower bound above it proves that none exists. Ctrl-C stops the search: the best placement
    found so far is reported (and written when it fits), and the exit status is 130.
    """
    import allocator
    from allocator.core.kernel_clock import kernel_seconds

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
        if not from_ctrl_c(exc):
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
        ("time", f"{result.seconds:.3f} s (+ {kernel_seconds():.2f} s loading compiled code)"),
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

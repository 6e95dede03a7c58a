"""Allocate a MiniMalloc-format CSV with every registered method and compare them.

    python examples/alloc_csv.py FILE.csv [--capacity 1MiB] [--timeout 10]

With ``--capacity`` each method places the buffers under it, as ``accelsim alloc FILE
--capacity C --method M`` does once per method; without it each method minimises the peak
(``allocator.minimize``), as ``accelsim alloc FILE --minimize --method M`` does. Bad input (a
file that cannot be read, a malformed CSV, a capacity or timeout that is not one) is an
``error:`` line naming it and exit 2; a method that refuses the problem says why in its row.
"""

import argparse
import math
import sys
import time

import allocator
from accelsim import parse_bytes


def capacity_bytes(text: str) -> int:
    """``--capacity``: a positive byte count (``1048576``, ``1MiB``)."""
    try:
        capacity = parse_bytes(text)
    except ValueError as error:  # names the text and the forms it takes
        raise argparse.ArgumentTypeError(str(error)) from None
    if capacity <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return capacity


def seconds(text: str) -> float:
    """``--timeout``: seconds, positive and finite."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be positive and finite, got {text!r}")
    return value


def compare(problem: allocator.Problem, timeout: float) -> None:
    """One row per registered method: placed under the capacity, or the peak minimised without one."""
    load = allocator.lower_bound(problem)
    print(f"{'method':<20} {'status':<11} {'peak':>12} {'over LOAD':>10} {'seconds':>9}")
    for name in allocator.METHODS:
        began = time.perf_counter()
        try:
            if problem.capacity is None:
                result: allocator.AllocationResult | allocator.MinimizeResult = allocator.minimize(
                    problem, method=name, timeout=timeout)
            else:
                result = allocator.solve(problem, method=name, timeout=timeout)
        except allocator.InvalidProblemError as refusal:  # this method cannot take this problem
            print(f"{name:<20} {'refused':<11} {'-':>12} {'-':>10} {time.perf_counter() - began:>9.3f}  {refusal}")
            continue
        elapsed = time.perf_counter() - began
        peak = f"{result.peak:,}" if result.peak is not None else "-"
        over = f"{100 * (result.peak - load) / load:.2f} %" if result.peak is not None and load else "-"
        print(f"{name:<20} {result.status:<11} {peak:>12} {over:>10} {elapsed:>9.3f}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", help="a MiniMalloc CSV (id,lower,upper,size[,alignment][,offset])")
    parser.add_argument("--capacity", type=capacity_bytes,
                        help="bytes, e.g. 1048576 or 1MiB (omit to minimise the peak)")
    parser.add_argument("--timeout", type=seconds, default=10.0, help="seconds per method (default 10)")
    args = parser.parse_args()
    try:
        problem = allocator.read_csv(args.file, capacity=args.capacity)
    except ValueError as error:  # the CSV reader names the file and the line
        print(f"error: {error}", file=sys.stderr)
        return 2
    load = allocator.lower_bound(problem)
    goal = f"capacity {args.capacity:,}" if args.capacity is not None else "no capacity: minimising the peak"
    print(f"{args.file}: {len(problem)} buffers, {goal}, LOAD {load:,}")
    try:
        compare(problem, args.timeout)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

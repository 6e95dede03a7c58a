"""Allocate a MiniMalloc-format CSV with every registered method and compare them.

    python examples/alloc_csv.py FILE.csv --capacity 1MiB [--timeout 10]

The same as running ``accelsim alloc FILE --capacity C --method M`` once per method.
"""

import argparse

import allocator
from accelsim import parse_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--capacity", help="bytes, e.g. 1048576 or 1MiB (omit to minimise the peak)")
    parser.add_argument("--timeout", type=float, default=10.0)
    args = parser.parse_args()
    capacity = parse_bytes(args.capacity) if args.capacity else None
    problem = allocator.read_csv(args.file, capacity=capacity)
    load = allocator.lower_bound(problem)
    print(f"{args.file}: {len(problem)} buffers, capacity {capacity}, LOAD {load}")
    print(f"{'method':<20} {'status':<11} {'peak':>12} {'over LOAD':>10} {'seconds':>9}")
    for name in allocator.METHODS:
        result = allocator.solve(problem, method=name, timeout=args.timeout)
        peak = f"{result.peak:,}" if result.peak is not None else "-"
        over = f"{100 * (result.peak - load) / load:.2f} %" if result.peak is not None and load else "-"
        print(f"{name:<20} {result.status:<11} {peak:>12} {over:>10} {result.stats.get('seconds', 0.0):>9.3f}")


if __name__ == "__main__":
    main()

"""``accelsim gen``: write a generated allocation instance (see ``allocator.core.generators``)."""

from __future__ import annotations

import argparse

from accelsim.cli.args import Parser, count, positive_int
from accelsim.outputs import Output, check_outputs


def add_parser(subparsers: argparse._SubParsersAction[Parser]) -> None:
    """Add the ``gen`` command to the ``accelsim`` parser."""
    gen = subparsers.add_parser("gen", help="write a generated instance (TelaMalloc Table 1 microbenchmarks, random)")
    gen.add_argument("kind", help="non-overlapping, full-overlap or random")
    gen.add_argument("n", type=positive_int, help="number of buffers")
    gen.add_argument("output", help="CSV file to write (MiniMalloc format)")
    gen.add_argument("--seed", type=count, default=0, help="seed of the sizes (and times, for random)")
    gen.add_argument("--max-size", type=positive_int, default=4096, help="largest buffer size in bytes (default 4096)")
    gen.add_argument("--alignment", type=positive_int, default=1, help="alignment of every buffer (default 1)")
    gen.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """``accelsim gen``: write the generated instance as a MiniMalloc CSV."""
    import allocator
    from allocator.core.generators import generate

    check_outputs([Output("output", args.output, suffix=".csv")], {})
    problem = generate(args.kind, args.n, seed=args.seed, max_size=args.max_size, alignment=args.alignment)
    allocator.write_csv(args.output, problem)
    print(f"{args.output}: {args.kind}, {len(problem)} buffers, LOAD {allocator.lower_bound(problem):,} B")
    return 0

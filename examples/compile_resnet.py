"""Compile ResNet-50 for the Pixel 6 TPU, simulate it and print the report.

    python examples/compile_resnet.py [--out DIR]

Same as ``accelsim run resnet50 --hw pixel6``: traces torchvision's ResNet-50 in int8, splits
every tensor over the 16 PEs, schedules it in program order with Belady replacement under each
PE's 2 MiB scratchpad, places every buffer with the ``auto`` allocator, which also decides the
spills (``allocator.core.defaults.DEFAULT_METHOD``, ``scheduler.spill_loop``), checks the
placement, and simulates it.
"""

import argparse

from accelsim import compile_and_simulate
from accelsim.report import format_summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="accelsim-out/resnet50-pixel6", help="report folder")
    args = parser.parse_args()
    report = compile_and_simulate("resnet50", hw="pixel6", out_dir=args.out)
    print(format_summary(report))
    slowest = sorted(report.ops, key=lambda op: op["end_cycle"] - op["start_cycle"], reverse=True)[:5]
    print("\nslowest operators:")
    for op in slowest:
        print(f"  {op['name']:<32} {op['op']:<12} {op['end_cycle'] - op['start_cycle']:>10,} cycles")


if __name__ == "__main__":
    main()

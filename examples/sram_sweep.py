"""What-if: how much DRAM traffic does a smaller scratchpad cost?

    python examples/sram_sweep.py [MODEL] [--hw pixel6] [--sizes 2MiB,160KiB,150KiB]

Traces the model once, then compiles and simulates it at each scratchpad size (per PE on the
Pixel 6) and prints the non-compulsory traffic (spills + retrievals), the simulated time and
the peak. Without ``--sizes`` it sweeps from the smallest size that needs no spill down to M_R,
the smallest size that runs at all; sizes below M_R are reported as such instead of run.
"""

import argparse

import frontend
import scheduler
from accelsim import compile_and_simulate, load_hw, parse_bytes
from accelsim.hw import format_bytes
from accelsim.pipeline import tensor_shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="resnet18")
    parser.add_argument("--hw", default="pixel6")
    parser.add_argument("--sizes", help="comma-separated sizes, e.g. 2MiB,160KiB,150KiB")
    parser.add_argument("--steps", type=int, default=5, help="sizes between no-spill and M_R (default 5)")
    args = parser.parse_args()
    hw = load_hw(args.hw)
    graph = frontend.trace_model(args.model, dtype=hw.dtype)  # trace once, reuse for every size
    shares = tensor_shares(graph, hw)
    need, op = scheduler.min_capacity(graph, sizes=shares, alignment=hw.alignment)
    no_spill = scheduler.no_spill_capacity(graph, sizes=shares, alignment=hw.alignment)
    if args.sizes:
        sizes = [parse_bytes(text.strip()) for text in args.sizes.split(",")]
    else:
        steps = max(args.steps, 2)
        sizes = [hw.sram_bytes_per_pe] + [no_spill - (no_spill - need) * i // (steps - 1) for i in range(steps)]
    print(f"{args.model} on {hw.name} ({hw.capacity_label}): M_R {format_bytes(need)} (operator {op}), "
          f"no spill from {format_bytes(no_spill)}")
    print(f"{'SRAM':>12}  {'non-compulsory':>16}  {'spills':>7}  {'retrieves':>9}  {'time':>10}  {'peak':>10}")
    for size in sizes:
        if size < need:
            print(f"{format_bytes(size):>12}  below M_R")
            continue
        r = compile_and_simulate(graph, hw=hw, sram=size)
        print(f"{format_bytes(size):>12}  {format_bytes(r.noncompulsory_bytes):>16}  {r.spills:>7}  "
              f"{r.retrieves:>9}  {r.seconds * 1e3:>8.3f}ms  {format_bytes(r.peak_bytes):>10}")


if __name__ == "__main__":
    main()

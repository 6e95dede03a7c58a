"""``accelsim models`` and ``accelsim configs``: list the model zoo and the bundled hardware configs."""

from __future__ import annotations

import argparse

from accelsim.cli.args import Parser
from accelsim.hw import describe_fields, list_configs, load_hw
from accelsim.units import format_bytes


def add_parsers(subparsers: argparse._SubParsersAction[Parser]) -> None:
    """Add the ``models`` and ``configs`` commands to the ``accelsim`` parser."""
    models = subparsers.add_parser("models", help="list the model zoo")
    models.add_argument("--all", action="store_true",
                        help="every torchvision model (121) and language model (llm.*), with how it runs and "
                             "its default input shape; a language model's parameters, and the published count "
                             "(imports torchvision)")
    models.set_defaults(handler=list_models)
    configs = subparsers.add_parser("configs", help="list the bundled hardware configs")
    configs.add_argument("--fields", action="store_true", help="list every hardware field (the --set keys)")
    configs.set_defaults(handler=list_hw_configs)


def list_models(args: argparse.Namespace) -> int:
    import frontend
    from frontend import llm

    if not args.all:
        for name in [*frontend.list_models(), *llm.names()]:
            print(name)
        return 0
    zoo = frontend.zoo
    rows = [("model", "input shape", "status")]
    for name in [*zoo.torchvision_models(), "transformer", *llm.names()]:
        shapes = zoo.default_input_shapes(name)
        shown = " ".join(",".join(map(str, s)) for s in shapes)
        rows.append((name, shown, zoo.model_status(name)))
    width = [max(len(r[i]) for r in rows) for i in range(2)]
    for model, shape, status in rows:
        print(f"{model:<{width[0]}}  {shape:<{width[1]}}  {status}")
    return 0


def list_hw_configs(args: argparse.Namespace) -> int:
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
            hw.compute.label, f"{hw.peak_macs_per_cycle:,}",
            f"{hw.dram_bandwidth_bytes_per_s / 1e9:g} GB/s", format_bytes(hw.dram_bytes), hw.dtype,
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    for name in list_configs():
        hw = load_hw(name)
        print(f"\n{hw.name}: {hw.description}\n  {hw.source}")
    return 0

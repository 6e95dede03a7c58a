"""``accelsim run``: compile and simulate one model, write its report folder (see ``accelsim.pipeline``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from accelsim.cli.args import (
    Parser,
    add_model_input_arguments,
    check_named_cache,
    parse_budget,
    parse_model_options,
    parse_shapes,
    positive_int,
    positive_seconds,
)
from accelsim.cli.status import EXIT_NOT_DETERMINISTIC
from accelsim.hw import load_hw, parse_overrides
from accelsim.outputs import Output, check_outputs
from accelsim.report import REPORT_FILES
from accelsim.sources import input_files, is_saved_graph, model_label
from accelsim.tiling import DEFAULT_TILING, TILINGS
from scheduler.order import FIXED_ORDERS
from scheduler.registry import DEFAULT_SCHEDULER, SCHEDULERS
from scheduler.replacement import EVICTING

#: ``accelsim run --help``'s closing words
_EPILOG = ("Every default limit counts work (search nodes, spill-loop rounds, CP-SAT deterministic time), so the "
           "answer is the same on every machine. Exit status: 0 ok; 1 the run failed (memory check, allocation); "
           "2 bad input; 3 valid, but a wall-clock limit (--timeout, --time-limit) ended a search: not the "
           "deterministic result.")


def add_parser(subparsers: argparse._SubParsersAction[Parser]) -> None:
    """Add the ``run`` command to the ``accelsim`` parser."""
    run = subparsers.add_parser("run", help="compile and simulate a model, write a report folder", epilog=_EPILOG)
    run.add_argument("model", help="model zoo name (see `accelsim models`), a graph saved as .json, or your own "
                                    "model as path/to/file.py:FUNCTION (a function of no arguments returning an "
                                    "nn.Module, or (module, example inputs))")
    run.add_argument("--hw", default="pixel6", help="bundled config name or a .yaml path (default: pixel6)")
    run.add_argument("--sram", help="scratchpad bytes per PE (whole memory on chip-scope configs), e.g. 8MiB")
    run.add_argument("--allocator", help="allocator method (see `accelsim alloc --methods`): with the program / "
                                         "min-peak schedulers it places every residency plan and so decides the "
                                         "spills (default auto; online-first-fit: the old online arena); with "
                                         "cosma* it re-places the schedule (default: the solver's addresses)")
    run.add_argument("--timeout", type=positive_seconds,
                     help="a wall-clock safety net in seconds for the allocator alone, not the whole command "
                          "(tracing the model, scheduling and simulating are not bounded by it; default: none; the "
                          "allocator's limit is search nodes): the whole allocation-aware loop, or the re-placement "
                          "of a cosma* schedule; when it fires the report says so and the exit status is 3")
    run.add_argument("--buffers", metavar="OUT.csv",
                     help="also write the placed residencies to this CSV in the MiniMalloc format "
                          "(id,lower,upper,size[,alignment],offset), which `accelsim alloc` reads")
    run.add_argument("--out", help="report folder (default: ./accelsim-out/MODEL-HW/)")
    run.add_argument("--no-plots", action="store_true",
                     help="write report.json, report.html and trace.json only, not the pictures layout.svg, "
                          "memory.svg, roofline.svg")
    run.add_argument("--cache", metavar="DIR",
                     help="trace cache folder (default: $ACCELSIM_CACHE_DIR or ~/.cache/accelsim/graphs; a default "
                          "folder that cannot be written is skipped)")
    run.add_argument("--no-cache", dest="cache_traces", action="store_false",
                     help="trace the model even when the trace cache has it, and leave the cache as it is "
                          "(neither read nor written)")
    run.add_argument("--dtype", help="storage dtype (default: the config's, e.g. int8 on pixel6)")
    run.add_argument("--weight-dtype", metavar="DTYPE",
                     help="weight-only quantisation: weights take this dtype's bytes (int4: half a byte per element) "
                          "and are dequantised on the fly; operators compute at --dtype")
    run.add_argument("--decode", type=positive_int, metavar="M",
                     help="a generation (llm.* decoders): a prompt of --prefill tokens, then M decode steps on one "
                          "schedule, the KV cache persistent; prints time to first token, time per token, tokens/s")
    run.add_argument("--prefill", type=positive_int, metavar="N",
                     help="the prompt's tokens of a generation (with --decode; default 512)")
    run.add_argument("--kv-dtype", metavar="DTYPE",
                     help="a language model's KV cache (llm.* decoders) in this dtype, apart from the activations")
    add_model_input_arguments(run)
    run.add_argument("--scheduler", default=DEFAULT_SCHEDULER, choices=SCHEDULERS,
                     help="program (default) or min-peak order with a replacement policy, or a COSMA model: "
                          "cosma (joint), cosma-fs (fixed order), cosma-dnc (divide and conquer)")
    run.add_argument("--replacement", choices=EVICTING,
                     help="replacement policy of the program / min-peak schedulers (default belady)")
    run.add_argument("--fixed-order", choices=FIXED_ORDERS,
                     help="the order of cosma-fs: program or min-peak (default program)")
    run.add_argument("--budget", help="schedule in MR, MH, MP (COSMA's budgets) or this many bytes per PE "
                                      "instead of the whole scratchpad")
    run.add_argument("--weights", action=argparse.BooleanOptionalAction, default=True,
                     help="--no-weights gives weights no memory and no traffic (activations only)")
    run.add_argument("--tiling", default=DEFAULT_TILING, choices=tuple(TILINGS),
                     help="auto (default): weights tile to at most a quarter of the scratchpad, never above the "
                          "config's weight_tile_bytes (an eighth where an operator waits on DRAM), activations "
                          "by rows where they do not fit; weights: to weight_tile_bytes whatever the scratchpad; "
                          "none: no tiling")
    run.add_argument("--time-limit", type=positive_seconds,
                     help="a wall-clock safety net in seconds per solve of a solver-based scheduler (cosma*; "
                          "default: none; its limit is CP-SAT deterministic time); exit status 3 when it fires")
    run.add_argument("--max-operators", type=positive_int, default=None, metavar="N",
                     help="refuse a graph of more than N operators (default 250,000; a run takes about 16 KiB "
                          "of memory per operator, and one that needs more than the machine has is refused anyway)")
    run.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help="replace a hardware field (repeatable; dotted keys for blocks), e.g. --set compute.rows=256 "
                          "--set dram_bandwidth_bytes_per_s=25.6e9 --set sram_bytes_per_pe=8MiB; "
                          "`accelsim configs --fields` lists them")
    run.set_defaults(handler=handle)


def _generation(args: argparse.Namespace, options: Any, hw: Any, out: Path) -> int:
    """``accelsim run --prefill N --decode M`` (``accelsim.generation``)."""
    from accelsim.generation import check_generation, format_generation, generate, generation_files, write_generation
    from frontend.llm import DEFAULT_TOKENS

    if args.decode is None:
        raise ValueError("--prefill needs --decode M (a prompt alone is --input-shape 1,N)")
    if args.buffers is not None:
        raise ValueError("--buffers writes one schedule's residencies; a generation has two (run the prefill or "
                         "a decode step on its own with --input-shape and --model-option past=N)")
    prefill = args.prefill if args.prefill is not None else DEFAULT_TOKENS
    check_generation(args.model, prefill, args.decode)
    check_outputs([Output("--out", out, folder=True, files=generation_files())], input_files(args.model, args.hw))
    report = generate(args.model, hw, options, prefill=prefill, decode=args.decode)
    write_generation(report, out, plots=not args.no_plots)
    print(format_generation(report))
    print(f"  report: {out} (generation.json; the prefill's report, the decode step's in decode/)")
    if report.memory_check != "ok":
        print(f"error: memory check failed: {report.memory_check}", file=sys.stderr)
        return 1
    return 0


def handle(args: argparse.Namespace) -> int:
    """``accelsim run``: compile and simulate, print the summary (exit 1: memory check failed; 3: a clock fired)."""
    from accelsim.pipeline import RunOptions, check_model, compile_and_simulate
    from accelsim.report import format_summary

    overrides = parse_overrides(args.set or [])
    options = RunOptions(
        sram=args.sram, allocator=args.allocator, dtype=args.dtype,
        input_shape=parse_shapes(args.input_shape), batch=args.batch,
        model_options=parse_model_options(args.model_option),
        timeout=args.timeout, scheduler=args.scheduler, replacement=args.replacement,
        budget=parse_budget(args.budget) if args.budget is not None else None, weights=args.weights,
        tiling=args.tiling, weight_dtype=args.weight_dtype, kv_dtype=args.kv_dtype,
        trace_method=args.trace_method, host=tuple(args.host),
        time_limit=args.time_limit, fixed_order=args.fixed_order, cache=args.cache_traces, cache_dir=args.cache,
        overrides=overrides,  # applied below already; the pipeline checks them against the options and the graph
        **({"max_operators": args.max_operators} if args.max_operators is not None else {}),
    )
    options.check(traced=not is_saved_graph(args.model))
    check_model(args.model, options)
    check_named_cache(args.cache)
    hw = load_hw(args.hw, overrides)
    label = model_label(args.model)
    out = Path(args.out) if args.out is not None else Path("accelsim-out") / f"{label}-{hw.name}"
    # made absolute before the user's build() runs, which may change the working folder
    # (compile_and_simulate does the same with --out, and reports it as given)
    outputs = [Output("--out", out, folder=True, files=REPORT_FILES)]
    if args.buffers is not None:
        outputs.append(Output("--buffers", args.buffers, suffix=".csv"))
    if args.decode is not None or args.prefill is not None:
        return _generation(args, options, hw, out)
    written = check_outputs(outputs, input_files(args.model, args.hw))
    report = compile_and_simulate(args.model, hw, options, out_dir=out, plots=not args.no_plots)
    print(format_summary(report))
    if args.buffers is not None:
        report.write_buffers(written[1])
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

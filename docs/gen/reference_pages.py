"""The reference pages' generated blocks: filled in by ``docs/gen/readme_tables.py``.

Each block is a function returning the Markdown lines between ``<!-- table:NAME -->`` and
``<!-- /table:NAME -->`` in a page under docs/reference/:

* ``cli-reference`` (docs/reference/cli.md): every command of ``accelsim.cli.build_parser()``,
  its usage at a fixed width of 100 columns, a table of its arguments and its usage examples
  (``EXAMPLES``, each parsed by that parser);
* ``hw-fields`` (docs/reference/hardware.md): every field of the hardware schema
  (``accelsim.hw.schema_fields``) with each bundled config's value;
* ``report-schema`` (docs/reference/report-json.md): every key of report.json, from the fields
  of ``SimReport`` and their ``#:`` comments, and the keys of its per-operator and per-buffer
  entries, from the dictionaries ``SimReport.from_run`` and ``frontend.host`` build.

Nothing here is typed twice: a new option, field or report key appears on its page when the page
is rendered, and one without a meaning stops the rendering with an error naming it.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import io
import re
import textwrap
import tokenize
from collections.abc import Callable, Iterable
from typing import Any

#: the width the usage lines are rendered at, whatever the terminal
USAGE_WIDTH = 100


# --------------------------------------------------------------------------------------------
# Markdown helpers


def cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell: ``|``, ``*``, ``_`` and ``<`` outside code spans
    are escaped (``cosma*`` twice in one help text would otherwise turn italic)."""
    parts = re.split(r"(`[^`]*`)", " ".join(text.split()))
    return "".join(part if part.startswith("`") and part.endswith("`") and len(part) > 1
                   else re.sub(r"([|*_<\\])", r"\\\1", part) for part in parts)


def code(text: str) -> str:
    """``text`` as a code span in a table cell (a ``|`` in it escaped for the table)."""
    return "`" + str(text).replace("|", "\\|") + "`"


# --------------------------------------------------------------------------------------------
# cli-reference


def commands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of every subcommand, in the order ``accelsim --help`` lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    raise ValueError(f"{parser.prog}: the parser has no subcommands")


def help_text(action: argparse.Action) -> str:
    """The action's help as ``--help`` prints it (``%(default)s`` filled in, ``%%`` as ``%``)."""
    if not action.help:
        raise ValueError(f"option {'/'.join(action.option_strings) or action.dest} has no help text")
    values = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    return action.help % values


def value_of(action: argparse.Action) -> str:
    """What follows the option: its metavar or choices, ``...`` when it takes several, and whether it repeats."""
    if action.nargs == 0:
        return ""
    if action.choices:
        text = " \\| ".join(code(c) for c in action.choices)
    else:
        metavar = action.metavar if isinstance(action.metavar, str) else (
            action.dest if not action.option_strings else action.dest.upper())
        text = code(metavar + (" ..." if action.nargs in ("+", "*") else ""))
    if action.nargs == "?":
        text += " (optional)"
    if isinstance(action, argparse._AppendAction):
        text += " (repeatable)"
    return text


def default_of(action: argparse.Action) -> str:
    """The default as a reader needs it: blank for a switch that is off and for no default."""
    if action.required:
        return "required"
    if isinstance(action, argparse.BooleanOptionalAction):
        return code(action.option_strings[0] if action.default else action.option_strings[1])
    if action.nargs == 0 or action.default in (None, [], argparse.SUPPRESS):
        return ""
    return code(action.default)


def command_block(name: str, summary: str, sub: argparse.ArgumentParser) -> list[str]:
    """The section of one command: its summary, its usage at a fixed width, its arguments, its epilog."""
    sub.formatter_class = functools.partial(argparse.HelpFormatter, width=USAGE_WIDTH)
    usage = sub.format_usage().rstrip("\n")
    lines = [f"## accelsim {name}", "", cell(summary[:1].upper() + summary[1:]) + ".", "", "```text", usage, "```", ""]
    actions = [a for a in sub._actions if not isinstance(a, argparse._HelpAction)]
    if actions:
        lines += ["| argument | value | default | meaning |", "|---|---|---|---|"]
        for action in actions:
            flags = ", ".join(code(s) for s in action.option_strings) or code(action.dest)
            lines.append(f"| {flags} | {value_of(action)} | {default_of(action)} | {cell(help_text(action))} |")
        lines.append("")
    for group in sub._mutually_exclusive_groups:
        names = ", ".join(code(a.option_strings[0]) for a in group._group_actions)
        lines += [f"{'Exactly' if group.required else 'At most'} one of {names}.", ""]
    if sub.epilog:
        lines += [cell(sub.epilog), ""]
    return lines


#: usage examples of each command, (command line, what it does): every one works as written in a
#: clone of the repository (the paths are the repository's own files), and each is parsed by the
#: program's own parser when the page is rendered (tests/test_site_rendering.py runs the cheap ones)
EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "run": (
        ("accelsim run resnet50 --hw pixel6",
         "compile and simulate ResNet-50 on the Pixel 6 TPU model; the report goes to accelsim-out/resnet50-pixel6/"),
        ("accelsim run vit_b_16 --hw tpuv4 --sram 8MiB --out vit-8mib", "what-if: 8 MiB of CMEM instead of 128 MiB"),
        ("accelsim run resnet50 --hw tpuv4 --set compute.rows=256 --set compute.cols=256",
         "what-if: systolic arrays of 256 x 256 (accelsim configs --fields lists every field)"),
        ("accelsim run resnet18 --hw pixel6 --no-plots --out r18 --buffers r18-buffers.csv",
         "report.html, report.json and trace.json without the SVG pictures; the placed buffers also as a CSV "
         "that accelsim alloc reads"),
        ("accelsim run resnet50 --hw tpuv4 --scheduler cosma --budget MR",
         "COSMA's joint model (order, addresses and spills) at the smallest budget, M_R"),
        ("accelsim run llm.gpt2 --hw tpuv4 --prefill 128 --decode 16",
         "a generation: a 128-token prompt, then 16 tokens; time to first token and per token"),
    ),
    "alloc": (
        ("accelsim alloc --methods", "list the allocation methods and what each can do"),
        ("accelsim alloc benchmarks/minimalloc/examples/input.12.csv --capacity 12 --output placed.csv",
         "place the buffers of a MiniMalloc CSV in 12 bytes, and write their offsets"),
        ("accelsim alloc benchmarks/minimalloc/examples/input.12.csv --capacity 8 --explain why.csv",
         "nothing fits in 8 bytes (exit status 1): write a minimal set of buffers that cannot be placed together"),
        ("accelsim alloc benchmarks/minimalloc/challenging/C.1048576.csv --capacity 1MiB --method minimalloc",
         "one of MiniMalloc's challenging instances, by its exact search"),
        ("accelsim alloc benchmarks/minimalloc/challenging/A.1048576.csv --minimize --timeout 5",
         "the lowest peak found in 5 seconds, against a proven bound"),
    ),
    "sweep": (
        ("accelsim sweep resnet18 mobilenet_v2 --hw pixel6 --grid sram=160KiB,256KiB,1MiB "
         "--grid dram_bandwidth_bytes_per_s=25.6e9,51.2e9 --out sweeps/sram",
         "two models x three SRAM sizes x two bandwidths; results.csv, index.html and plots in sweeps/sram"),
        ("accelsim sweep resnet18 --hw pixel6 --grid sram=160KiB,1MiB --out dask-local --executor dask --jobs 2",
         "the same kind of grid on Dask workers"),
        ("accelsim sweep llm.gpt2 --hw tpuv4 --grid prefill=32,128 --grid decode=4 --out gen-sweep --no-plots",
         "generations: every point a prompt and four decode steps"),
    ),
    "size": (
        ("accelsim size resnet50 --hw pixel6", "M_R and the smallest SRAM without spills, per scheduler and allocator"),
        ("accelsim size mobilenet_v2 --hw tpuv4 --scheduler program,min-peak --allocator auto --csv size.csv",
         "two schedulers with one allocator, the table also as CSV"),
    ),
    "bench": (
        ("accelsim bench benchmarks/minimalloc/challenging --capacity-from-name --method minimalloc,auto",
         "fit MiniMalloc's challenging suite at the capacity in each file's name"),
        ("accelsim bench benchmarks/minimalloc/challenging --minimize --method greedy-by-size,telamalloc "
         "--timeout 3 --csv minimize.csv --plot minimize.png",
         "minimise the peak with two methods for 3 seconds each; rows as CSV, quality against time as a plot"),
    ),
    "gen": (
        ("accelsim gen random 1000 random-1000.csv --seed 1", "1,000 buffers with random sizes and lifetimes"),
        ("accelsim gen full-overlap 64 full-overlap-64.csv --alignment 32",
         "TelaMalloc's Table 1 microbenchmark: 64 buffers all live at once, 32-byte aligned"),
    ),
    "models": (
        ("accelsim models", "the model zoo's families and names"),
        ("accelsim models --all", "every torchvision and language model, how it runs and its input shape"),
    ),
    "configs": (
        ("accelsim configs", "the bundled hardware configs"),
        ("accelsim configs --fields", "every hardware field, the keys of --set and --grid"),
    ),
}


def checked_examples(name: str, parser: argparse.ArgumentParser) -> tuple[tuple[str, str], ...]:
    """Command ``name``'s examples, each parsed by ``parser`` (the program's): raises ``ValueError``
    naming a command without examples or an example that is not that command or does not parse."""
    import contextlib
    import shlex

    examples = EXAMPLES.get(name)
    if not examples:
        raise ValueError(f"accelsim {name} has no usage examples in docs/gen/reference_pages.py (EXAMPLES)")
    for line, _ in examples:
        words = shlex.split(line)
        if words[:2] != ["accelsim", name]:
            raise ValueError(f"example {line!r} is filed under accelsim {name}")
        try:
            with contextlib.redirect_stderr(io.StringIO()) as errors:
                parser.parse_args(words[1:])
        except SystemExit as exc:
            raise ValueError(f"example {line!r} does not parse: {errors.getvalue().strip()}") from exc
    return examples


def shell_lines(command: str, width: int = USAGE_WIDTH) -> list[str]:
    r"""``command`` as a shell types it, in lines of at most ``width`` columns where it can be: cut before
    an option (never between an option and its value), each line but the last ending in `` \``, the
    later ones indented.

    >>> shell_lines("accelsim sweep a b --grid x=1,2 --out o", width=36)
    ['accelsim sweep a b --grid x=1,2 \\', '    --out o']
    """
    chunks: list[str] = []
    for word in command.split(" "):
        if chunks and not word.startswith("-"):
            chunks[-1] += " " + word
        else:
            chunks.append(word)
    lines: list[str] = []
    current = ""
    for chunk in chunks:
        if current and len(current) + 1 + len(chunk) + 2 > width:
            lines.append(current + " \\")
            current = "    " + chunk
        else:
            current = f"{current} {chunk}" if current else chunk
    return lines + [current]


def examples_block(examples: Iterable[tuple[str, str]]) -> list[str]:
    """The examples as one shell block, each command under a comment saying what it does."""
    lines = ["**Examples**", "", "```bash"]
    for line, meaning in examples:
        lines += [f"# {meaning}", *shell_lines(line), ""]
    return lines[:-1] + ["```", ""]


def cli_reference() -> list[str]:
    """Every ``accelsim`` command: a section each, from ``accelsim.cli.build_parser()``, with its examples."""
    from accelsim.cli import build_parser

    parser = build_parser()
    lines = []
    for name, summary, sub in commands(parser):
        lines += command_block(name, summary, sub) + examples_block(checked_examples(name, parser))
    unknown = set(EXAMPLES) - {name for name, _, _ in commands(parser)}
    if unknown:
        raise ValueError(f"examples for commands the parser does not have: {', '.join(sorted(unknown))}")
    return lines[:-1]


# --------------------------------------------------------------------------------------------
# hw-fields

#: units by the ending of a field's name (the schema puts the unit in the name), first match wins
UNIT_SUFFIXES = (
    ("_bytes_per_cycle", "bytes per cycle per PE"), ("_bytes_per_s", "bytes per second"),
    ("elements_per_cycle", "elements per cycle"), ("macs_per_cycle", "MACs per cycle"), ("_hz", "Hz"),
    ("_cycles", "cycles"), ("_bytes_per_pe", "bytes per PE"), ("_bytes", "bytes"),
)


def unit_of(name: str, kind: str) -> str:
    """The unit of field ``name`` (dotted) of schema kind ``kind``: from the name's ending, picojoules for
    the energy block, bytes for any other byte count; blank for counts and words."""
    leaf = name.rpartition(".")[2]
    if name.startswith("energy.pj_per_"):
        return "pJ"
    for suffix, unit in UNIT_SUFFIXES:
        if leaf.endswith(suffix):
            return unit
    return "bytes" if kind == "bytes" else ""


def shown(value: Any, kind: str) -> str:
    """A config's value as the YAML would say it: ``true``, ``2,097,152 (2 MiB)``, ``1,066,000,000``."""
    from accelsim.units import format_bytes

    if value is None:
        return "—"
    if isinstance(value, bool):
        return code(str(value).lower())
    if kind == "bytes" and value >= 1024:
        return f"{value:,} ({format_bytes(value)})"
    if isinstance(value, int | float) and float(value).is_integer():
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:g}"
    return code(value) if kind in ("choice", "str") and " " not in str(value) else cell(str(value))


def field_value(config: Any, dotted: str) -> Any:
    """``config``'s value of a dotted field, ``None`` where the field does not apply (a field of
    another compute kind, which that kind's record does not have)."""
    for part in dotted.split("."):
        config = getattr(config, part, None)
    return config


def hw_fields() -> list[str]:
    """Every hardware field: dotted name, type and range, unit, meaning, and each bundled config's value."""
    from accelsim.hw import describe_fields, list_configs, load_hw, schema_fields

    schema = schema_fields()
    configs = {name: load_hw(name) for name in list_configs()}
    lines = ["| field | type and range | unit | meaning | " + " | ".join(configs) + " |",
             "|---|---|---|---|" + "---:|" * len(configs)]
    for name, kind_text, doc in describe_fields():
        kind = schema[name].metadata["kind"]
        values = " | ".join(shown(field_value(config, name), kind) for config in configs.values())
        lines.append(f"| {code(name)} | {cell(kind_text)} | {unit_of(name, kind)} | {cell(doc)} | {values} |")
    return lines


# --------------------------------------------------------------------------------------------
# report-schema


def field_comments(cls: type) -> dict[str, str]:
    """The ``#:`` comment of each annotated field of class ``cls``: the comment lines just above the
    field, then the one at the end of its line, joined into one sentence."""
    lines, first = inspect.getsourcelines(cls)
    source = textwrap.dedent("".join(lines))
    comments: dict[int, str] = {}  # line -> the text of its #: comment
    alone: set[int] = set()  # the lines that are nothing but a comment
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and token.string.startswith("#:"):
            comments[token.start[0]] = token.string[2:].strip()
            if not token.line[:token.start[1]].strip():
                alone.add(token.start[0])
    body = ast.parse(source).body[0]
    assert isinstance(body, ast.ClassDef)
    out: dict[str, str] = {}
    for node in body.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            above: list[str] = []
            line = node.lineno - 1
            while line in alone:
                above.insert(0, comments[line])
                line -= 1
            trailing = [comments[n] for n in range(node.lineno, (node.end_lineno or node.lineno) + 1) if n in comments]
            text = " ".join(above + trailing)
            if text:
                out[node.target.id] = text
    return out


def report_fields(cls: type | None = None) -> list[tuple[str, str, str]]:
    """(key, type, meaning) of every report.json key that is a field of ``cls`` (``SimReport``):
    the fields not in its ``_NOT_IN_JSON``. Raises ``ValueError`` naming a field without a ``#:`` comment."""
    if cls is None:
        from accelsim.results import SimReport

        cls = SimReport
    left_out = set(getattr(cls, "_NOT_IN_JSON", ()))
    meanings = field_comments(cls)
    rows = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in left_out:
            continue
        if f.name not in meanings:
            raise ValueError(f"{cls.__name__}.{f.name} has no #: comment saying what it means "
                             f"({inspect.getsourcefile(cls)}): report.json's reference page needs one")
        rows.append((f.name, f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type)),
                     meanings[f.name]))
    return rows


#: report.json keys that ``SimReport.to_dict`` adds to the fields
EXTRA_KEYS = (("hw_config", "dict[str, Any]", "the hardware fields the run used, nested by block as in the "
               "YAML files (fields of another compute kind left out); loads back as the same config"),)

#: what the keys of report.json's nested entries mean; the keys themselves are read from the code
#: that builds the entries (``entry_keys``), and a key missing here stops the rendering
SUBKEYS: dict[str, dict[str, str]] = {
    "ops": {
        "name": "the operator's node name in the graph",
        "op": "its kind: conv2d, linear, add, ...",
        "start_cycle": "the cycle it started: its inputs on chip and the compute block free",
        "end_cycle": "the cycle it finished",
        "macs": "its multiply-accumulates",
        "compute_cycles": "mapped cycles on the compute block (accelsim.compute)",
        "ideal_cycles": "its MACs / peak MACs per cycle: the bound",
        "utilization": "MACs / (compute_cycles x peak MACs per cycle): how well the operator maps onto the "
                       "compute block, stalls left out (report.html calls it mapping efficiency; the report's "
                       "top-level utilization counts the stalls)",
        "stall_cycles": "dma_wait: cycles between the previous operator's end and its start (waiting for "
                        "transfers); sram_bandwidth: cycles beyond compute spent streaming operands (memory-bound)",
        "dma_wait_split": "its dma_wait split: bandwidth, what the DRAM link alone forced; late, what loads issued "
                          "later than that cost (accelsim.sim.results)",
        "sram_bytes": "operand and result bytes streamed to and from the scratchpad",
        "dram_bytes": "read and write: the DRAM bytes of the transfers of its step (loads and retrieves; stores "
                      "and spills), chip total; the same bytes its dram energy is charged on",
        "mapping": "how it was mapped: systolic-ws, systolic-os, lanes, vector, ideal",
        "folds": "folds (systolic) or passes (lanes)",
        "energy": "joules: compute, sram, dram (the transfers of its step), total",
        "tiles": "when the operator was tiled (tiled_operators): the records of its tiles and concat, each with "
                 "the keys above but tiles; the operator's record sums them (empty for an operator left whole)",
    },
    "dma_wait_split": {
        "bandwidth": "the operators' DMA waits that the DRAM link alone forced: their loads could not have crossed "
                     "it sooner, however early they were issued",
        "late": "the rest of the DMA waits: loads issued later than that (scratchpad room, dma.prefetch_depth, a "
                "range still being written back, latencies paid one after another)",
    },
    "floor_cycles": {
        "cycles": "the floor: the larger of the two terms below; no run of these operators and DRAM bytes is faster",
        "compute": "the operators' stall-free cycles (compute_cycles + sram_bandwidth stall each), summed: the "
                   "compute array runs one at a time",
        "dram": "ceil(DRAM bytes read and written / the config's DRAM bytes per cycle): the traffic at the link's "
                "full bandwidth",
        "bound": "the term that sets the floor: compute (also on a tie) or dram",
    },
    "buffers": {
        "id": "the residency: the tensor's name, or TENSOR#K for its k-th stay on chip",
        "start": "the step it is placed (the operator index in schedule order)",
        "end": "the step it is freed, exclusive",
        "size": "its on-chip bytes (per PE on a per_pe config), a multiple of the alignment",
        "alignment": "its offset is a multiple of this many bytes",
        "offset": "its address in the scratchpad, bytes",
    },
    "host_ops": {
        "name": "the host operator's node name",
        "kind": "what it does: anchors, box_decode, nms, roi_align, ...",
        "target": "the function or module the traced model called",
        "after": "the last accelerator operator before it in program order (null at the start)",
        "inputs": "the tensors it reads (entries as below)",
        "outputs": "the tensors it writes (entries as below)",
        "waits_for": "the accelerator tensors it depends on, directly or through other host operators",
    },
    "host_ops tensors": {
        "tensor": "the tensor's name",
        "shape": "its shape",
        "dtype": "its dtype",
        "bytes": "its bytes",
        "side": "accelerator (it crosses through DRAM) or host (it stays on the host)",
    },
}

#: where each nested entry is built: (module, a key only that dictionary literal has)
ENTRY_SOURCES = {
    "ops": ("accelsim.results", "start_cycle"),
    "floor_cycles": ("accelsim.results", "bound"),
    "buffers": ("accelsim.results", "offset"),
    "host_ops": ("frontend.host", "waits_for"),
    "host_ops tensors": ("frontend.host", "side"),
}

#: the keys of ``stage_seconds`` and ``scheduler_stats`` (these depend on the run, so they are
#: listed here; the tests check a real report's against them)
STAGES = {
    "kernels": "loading (or, the first time, compiling) the allocator kernels the run reaches, when a stage first "
               "calls them; left out of every other stage's clock and every time limit "
               "(allocator.core.kernel_clock)",
    "trace": "tracing the model, or reading the graph from the trace cache or a .json file",
    "schedule": "ordering the operators and planning the transfers",
    "allocate": "placing the residencies: the allocation-aware loop of program / min-peak with its plans, or "
                "the re-placement of a cosma* schedule",
    "load timing": "choosing when each load and retrieve is issued, and re-placing the prefetch windows "
                   "(scheduler.load_timing)",
    "validate": "checking the placement independently of the method that made it",
    "simulate": "the event-driven simulation",
    "report": "writing the report folder (absent when none is written)",
}
SCHEDULER_STATS = {
    "load_timing_rounds": "placements the load-timing planner tried; 0: it kept the offsets as they were "
                          "(every scheduler)",
    "min_capacity": "M_R, bytes (every scheduler)",
    "peak_live_bytes": "most bytes allocated at once (every scheduler)",
    "peak_address": "highest address in use (every scheduler)",
    "evictions": "residencies ended early to make room (program, min-peak)",
    "compactions": "the online arena's slides of an operator's own tensors (online-first-fit)",
    "rounds": "rounds of the allocation-aware loop (program, min-peak with a placing allocator)",
    "fitted": "1 when a plan of the loop fitted the scratchpad",
    "loop_noncompulsory_bytes": "the fitted plan's non-compulsory bytes (-1 when none fitted)",
    "online_noncompulsory_bytes": "the online arena's non-compulsory bytes on the same order",
    "online_kept": "1 when the online arena's schedule moved fewer bytes and was kept",
    "loop_seconds": "wall time of the loop",
    "clock_stopped": "1 when a wall-clock limit cut the scheduler's search short",
    "order_peak": "the peak of min-peak's order (min-peak)",
    "order_status_optimal": "1 when min-peak proved its order optimal (min-peak)",
    "objective": "the solver's non-compulsory bytes (cosma*)",
    "bound": "the solver's lower bound on them (cosma*)",
    "gap": "(objective - bound) / objective (cosma*)",
    "solve_seconds": "the solver's wall time (cosma*)",
}


def entry_keys(module: str, marker: str) -> list[str]:
    """The string keys of the dictionary literal in ``module``'s source that has the key ``marker``."""
    import importlib

    source = inspect.getsource(importlib.import_module(module))
    found = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Dict)
             and any(isinstance(k, ast.Constant) and k.value == marker for k in node.keys)]
    if len(found) != 1:
        raise ValueError(f"{module}: expected one dictionary with the key {marker!r}, found {len(found)}")
    return [k.value for k in found[0].keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]


def key_table(keys: Iterable[str], meanings: dict[str, str], what: str) -> list[str]:
    """A two-column table of ``keys`` with their meanings; raises naming a key without one."""
    lines = ["| key | meaning |", "|---|---|"]
    for key in keys:
        if key not in meanings:
            raise ValueError(f"{what}: key {key!r} has no meaning in docs/gen/reference_pages.py")
        lines.append(f"| {code(key)} | {cell(meanings[key])} |")
    return lines


def report_schema() -> list[str]:
    """Every report.json key with its type and meaning, then the keys of its nested entries."""
    lines = ["| key | type | meaning |", "|---|---|---|"]
    for name, type_text, meaning in [*report_fields(), *EXTRA_KEYS]:
        lines.append(f"| {code(name)} | {code(type_text)} | {cell(meaning.replace('``', '`'))} |")
    titles = {"ops": "Each entry of `ops` (one per operator, in schedule order)",
              "floor_cycles": "The keys of `floor_cycles` (cycles; defined in `accelsim/sim/results.py`)",
              "buffers": "Each entry of `buffers` (one per residency, the MiniMalloc CSV's rows)",
              "host_ops": "Each entry of `host_ops` (one per host operator, in program order)",
              "host_ops tensors": "Each entry of a host operator's `inputs` and `outputs`"}
    for what, title in titles.items():
        keys = entry_keys(*ENTRY_SOURCES[what])
        documented = set(SUBKEYS[what])
        if documented - set(keys):
            raise ValueError(f"{what}: {', '.join(sorted(documented - set(keys)))} documented but not built")
        lines += ["", f"### {title}", "", *key_table(keys, SUBKEYS[what], what)]
    lines += ["", "### The keys of `stage_seconds` (wall seconds, in the order they run)", "",
              *key_table(STAGES, STAGES, "stage_seconds"),
              "", "### The keys of `scheduler_stats` (which appear depends on the scheduler)", "",
              *key_table(SCHEDULER_STATS, SCHEDULER_STATS, "scheduler_stats")]
    return lines


BLOCKS: dict[str, Callable[[], list[str]]] = {
    "cli-reference": cli_reference, "hw-fields": hw_fields, "report-schema": report_schema,
}

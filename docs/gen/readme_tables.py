"""Render the generated blocks of README.md and the docs site (docs/**/*.md): the measured tables
from their CSV files, and the reference pages from the code they describe.

Every timing and quality figure of those tables comes from a CSV file that a measurement wrote
(docs/bench/run.sh holds the bench commands; each study script says which CSV it writes),
never typed by hand. Figures measured elsewhere (the C++ MiniMalloc reference, the best results
other tools published) are in docs/bench/references.csv with their source. The reference
blocks (the command line from its parser, the hardware fields from the schema, the report.json
fields from ``SimReport``) come from ``docs/gen/reference_pages.py``.

    python docs/gen/readme_tables.py           # rewrite the generated blocks in README.md and docs/
    python docs/gen/readme_tables.py --check   # exit 1 when a page differs from what its sources give

The generators live in ``docs/gen/``, apart from ``studies/``, which holds the measurements and
research scripts whose CSV files the tables read.

A generated block sits between ``<!-- table:NAME -->`` and ``<!-- /table:NAME -->``; each name
appears in exactly one page. A figure inside a sentence is generated the same way, inline:
``<!-- figure:NAME ARG ... -->1,078,062<!-- /figure:NAME -->`` is rewritten with what
``FIGURES[NAME](ARG, ...)`` gives from the CSV files (a figure may appear in many places, with
its own arguments). The test suite checks that no page drifts from its sources, and
``tests/test_published_figures.py`` that the sources of resnet50's figures and of its SRAM curve
are what the code gives now; it also re-runs every *checked* figure,
``<!-- run:FIELD MODEL HW [OPTION=VALUE ...] -->TEXT<!-- /run -->``: a figure typed by hand
(no study writes it) with the run that gives it, which this script leaves as it is.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "docs" / "bench"
CHALLENGING = "ABCDEFGHIJK"


def read(name: str, folder: Path = BENCH) -> list[dict[str, str]]:
    with open(folder / name, newline="") as handle:
        return list(csv.DictReader(handle))


def neighbour(name: str, folder: str = "studies") -> Any:
    """The script ``FOLDER/NAME.py`` as a module (imported once: neither folder is a package): a
    study script of ``studies/`` that renders its own table, or a generator beside this one
    (``folder="docs/gen"``)."""
    sys.path.insert(0, str(REPO / folder))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


def references() -> dict[str, dict[str, str]]:
    return {row["key"]: row for row in read("references.csv")}


def _letter(instance: str) -> str:
    return instance.split(".")[0]


def _seconds(value: str) -> str:
    seconds = float(value)
    return f"{seconds:.2f}" if seconds < 10 else f"{seconds:.1f}"


def _over(row: dict[str, str]) -> str:
    if row["over_load_percent"] in ("", "None"):
        return row["status"]
    return f"{float(row['over_load_percent']):.2f}"


def _insured(row: dict[str, str]) -> str:
    """A dagger when the method placed nothing and the insurance greedy-by-size's placement stands in."""
    return " †" if _is_insurance(row) else ""


def _is_insurance(row: dict[str, str]) -> bool:
    """The row's placement is minimize's insurance greedy-by-size, not the method's own."""
    return "insurance" in row.get("reason", "")


def table_fit() -> list[str]:
    """The challenging suite fitted at 1,048,576 B by minimalloc, two threads and one."""
    refs = references()
    header = "| | " + " | ".join(CHALLENGING) + " | total |"
    lines = [header, "|---" * (len(CHALLENGING) + 2) + "|"]
    for name, label in (("fit_2threads.csv", "seconds, 2 threads"), ("fit_1thread.csv", "seconds, 1 thread")):
        rows = {_letter(r["instance"]): r for r in read(name)}
        cells = []
        for letter in CHALLENGING:
            r = rows[letter]
            seconds = _seconds(r["seconds"])
            cells.append(seconds if r["status"] == "solved" else f"{r['status']} {seconds}")
        total = sum(float(rows[letter]["seconds"]) for letter in CHALLENGING)
        lines.append(f"| {label} | " + " | ".join(cells) + f" | **{total:.1f}** |")
    cpp = [float(refs[f"cpp_minimalloc_fit_{letter}"]["value"]) for letter in CHALLENGING]
    lines.append("| C++ MiniMalloc, 1 thread | " + " | ".join(_seconds(str(v)) for v in cpp)
                 + f" | {sum(cpp):.1f} |")
    return lines


def table_minimize() -> list[str]:
    """% over LOAD per challenging instance for every method, minimising with the same timeout."""
    rows = read("minimize_challenging.csv")
    methods = list(dict.fromkeys(r["method"] for r in rows))
    by = {(r["method"], _letter(r["instance"])): r for r in rows}
    lines = ["| % over LOAD | " + " | ".join(CHALLENGING) + " | range |", "|---" * (len(CHALLENGING) + 2) + "|"]
    for method in methods:
        values = [by[(method, letter)] for letter in CHALLENGING]
        numbers = [float(v["over_load_percent"]) for v in values if v["over_load_percent"] not in ("", "None")]
        cells = [(_over(v) + (" opt" if v["status"] == "optimal" else "") + _insured(v)) for v in values]
        spread = f"{min(numbers):.1f}–{max(numbers):.1f}" if numbers else "-"
        lines.append(f"| `{method}` | " + " | ".join(cells) + f" | {spread} |")
    return lines


def table_auto() -> list[str]:
    """``auto`` against its members: fitting the suite (status, seconds) and minimising (% over LOAD)."""
    lines = ["| instance | mode | " + " | ".join(f"`{m}`" for m in AUTO_MEMBERS) + " | `auto` |",
             "|---|---|" + "---:|" * (len(AUTO_MEMBERS) + 1)]
    for name, mode in (("auto_fit.csv", "fit, 10 s"), ("auto_minimize.csv", "minimise, 3 s")):
        rows = read(name)
        by = {(r["instance"], r["method"]): r for r in rows}
        for instance in dict.fromkeys(r["instance"] for r in rows):
            cells = []
            for method in (*AUTO_MEMBERS, "auto"):
                r = by[(instance, method)]
                if mode.startswith("fit"):
                    cells.append(f"{_seconds(r['seconds'])} s" if r["status"] == "solved" else r["status"])
                else:
                    cells.append(_over(r) + (" opt" if r["status"] == "optimal" else "") + _insured(r))
            lines.append(f"| {Path(instance).stem} | {mode} | " + " | ".join(cells) + " |")
    return lines


AUTO_MEMBERS = ("best-fit", "greedy-by-size", "load-best-fit", "minimalloc")


def table_idealloc() -> list[str]:
    """% over LOAD of idealloc and greedy-by-size, minimising 10 s each, with the Rust idealloc's figures."""
    refs = references()
    lines = ["| instance | `idealloc` | `greedy-by-size` | Rust idealloc |", "|---|---:|---:|---:|"]
    for name in ("idealloc_traces.csv", "idealloc_challenging.csv"):
        rows = read(name)
        by = {(r["instance"], r["method"]): r for r in rows}
        for instance in dict.fromkeys(r["instance"] for r in rows):
            stem = Path(instance).stem
            cells = [_over(by[(instance, m)]) + (" opt" if by[(instance, m)]["status"] == "optimal" else "")
                     for m in ("idealloc", "greedy-by-size")]
            rust = refs.get(f"rust_idealloc_{stem}", {}).get("value", "")
            lines.append(f"| {stem} | " + " | ".join(cells) + f" | {rust} |")
    return lines


def table_traces() -> list[str]:
    """% over LOAD (seconds) per large trace and method, minimising."""
    rows = read("minimize_traces.csv")
    traces = list(dict.fromkeys(r["instance"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    by = {(r["method"], r["instance"]): r for r in rows}
    buffers = {r["instance"]: int(r["buffers"]) for r in rows}
    refs = references()
    lines = ["| method | " + " | ".join(f"{Path(t).stem} ({buffers[t]:,})" for t in traces) + " |",
             "|---" * (len(traces) + 1) + "|"]
    for method in methods:
        cells = []
        for t in traces:
            r = by[(method, t)]
            cells.append(f"{_over(r)}{' opt' if r['status'] == 'optimal' else ''}{_insured(r)} "
                         f"({_seconds(r['seconds'])} s)")
        lines.append(f"| `{method}` | " + " | ".join(cells) + " |")
    lines.append("| best known elsewhere | " + " | ".join(refs.get(f"best_{Path(t).stem}", {}).get("value", "")
                                                         for t in traces) + " |")
    return lines


def table_large() -> list[str]:
    """Large generated instances: reading, LOAD, and each greedy method under its timeout."""
    rows = read("large.csv")
    lines = ["| instance | buffers | read | LOAD | method | status | % over LOAD | seconds | timeout |",
             "|---|---:|---:|---:|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['instance']} | {int(r['buffers']):,} | {_seconds(r['read_seconds'])} s | "
                     f"{_seconds(r['load_seconds'])} s | `{r['method']}` | {r['status']} | {_over(r)} | "
                     f"{_seconds(r['seconds'])} | {_limit(r)} |")
    return lines


def _limit(row: dict[str, str]) -> str:
    return f"{float(row['timeout']):g} s" if row.get("timeout") else ""


def _within(row: dict[str, str]) -> str:
    """The row's seconds and whether they kept to the promise: within 10 % + 1 s of the timeout."""
    seconds, limit = float(row["seconds"]), float(row["timeout"])
    return f"{_seconds(row['seconds'])}{'' if seconds <= 1.1 * limit + 1 else ' **over**'}"


def table_limits() -> list[str]:
    """Every method on the 300,000-buffer instance under the same timeout: placing it at 1.5 x LOAD
    and minimising its peak. Seconds per row, and whether each kept within 10 % + 1 s of the limit."""
    fit = {r["method"]: r for r in read("limits_fit.csv")}
    low = {r["method"]: r for r in read("limits_minimize.csv")}
    lines = ["| method | place at 1.5 × LOAD: status | seconds | minimise: status | % over LOAD | seconds |",
             "|---|---|---:|---|---:|---:|"]
    for method, f in fit.items():
        m = low[method]
        whose = " (insurance)" if _is_insurance(m) else ""
        lines.append(f"| `{method}` | {f['status']} | {_within(f)} | {m['status']}{whose} | {_over(m)} | "
                     f"{_within(m)} |")
    return lines


def table_telamalloc() -> list[str]:
    """TelaMalloc Table 1's microbenchmarks at LOAD: ours against the paper's figures."""
    refs = references()
    lines = ["| benchmark | status | ours: total | ours: per step | paper: total | paper: per step |",
             "|---|---|---:|---:|---:|---:|"]
    for r in read("telamalloc_table1.csv"):
        name = Path(r["instance"]).stem
        seconds, steps = float(r["seconds"]), int(r["nodes"])
        paper = refs.get(f"table1_{name}", {}).get("value", "")
        total, per_step = (paper.split(";") + [""])[:2]
        lines.append(f"| {name} | {r['status']} | {1e3 * seconds:,.0f} ms | {1e6 * seconds / max(steps, 1):.1f} µs | "
                     f"{total} | {per_step} |")
    return lines


SWEEP = REPO / "docs" / "sweep"


def table_sweep() -> list[str]:
    """``accelsim sweep`` on 96 points, five settings (studies/sweep_speed.py)."""
    rows = read("speed.csv", SWEEP)
    lines = ["| run | command | seconds |", "|---|---|---:|"]
    for r in rows:
        lines.append(f"| {r['run']} | `{r['command']}` | {_seconds(r['seconds'])} |")
    first = rows[0]
    lines.append(f"| per-point overhead (warm run) | median / 90th percentile / max | "
                 f"{float(first['overhead_median_s']):.4f} / {float(first['overhead_p90_s']):.4f} / "
                 f"{float(first['overhead_max_s']):.2f} |")
    return lines


def _mib(value: str) -> str:
    return f"{int(float(value)) / 2**20:.2f} MiB"


def table_cmem() -> list[str]:
    """The TPUv4 CMEM study (studies/cmem_study.py)."""
    lines = ["| model | first-fit zero-spill CMEM (an upper bound) | extra traffic, one granule less | cycles | "
             "half HBM: cycles | half HBM: energy |", "|---|---:|---:|---:|---:|---:|"]
    for r in sorted(read("cmem_study.csv", SWEEP), key=lambda r: int(r["first_fit_zero_spill_cmem_bytes"])):
        below = r["noncompulsory_one_granule_below"]
        less = "below M_R" if below in ("", "nan") else _mib(below)
        over = "" if r["fits_128MiB"] == "True" else " (> 128 MiB)"
        lines.append(f"| {r['model']} | {_mib(r['first_fit_zero_spill_cmem_bytes'])}{over} | {less} | "
                     f"{int(r['cycles']):,} | +{float(r['cycles_increase_percent']):.1f} % | "
                     f"+{float(r['energy_increase_percent']):.1f} % |")
    return lines


SPILL = REPO / "docs" / "spill"
#: the allocation-aware methods of the spill study, then the references
SPILL_LOOP = ("best-fit", "minimalloc", "auto")
SPILL_METHODS = ("online-first-fit", *SPILL_LOOP, "cosma-fs", "cosma")


def spill_points() -> dict[tuple[str, str, str], dict[str, dict[str, str]]]:
    """The spill study's rows by (model, hw, point), then by method (studies/spill_study.py)."""
    points: dict[tuple[str, str, str], dict[str, dict[str, str]]] = {}
    for r in read("study.csv", SPILL):
        points.setdefault((r["model"], r["hw"], r["point"]), {})[r["method"]] = r
    return points


def _moved(row: dict[str, str] | None) -> int | None:
    if row is None or row["status"] != "ok":
        return None
    return int(row["noncompulsory_bytes"])


def spill_stats(hw: str, method: str) -> dict[str, Any]:
    """``method`` on ``hw`` over the spill study's points: its bytes over the online first fit's
    (where that spills), the points above it, at or below a proven cosma-fs optimum, the bytes over
    it, the compile seconds (sorted), the points where the loop's later rounds ran, and where it kept
    the online arena's schedule, and the points below cosma-fs's bytes (proven or not)."""
    ratios, above, at_fs, over_fs, seconds, later, kept, below = [], 0, 0, [], [], 0, 0, 0
    for (_, point_hw, _), rows in spill_points().items():
        online, moved = _moved(rows.get("online-first-fit")), _moved(rows.get(method))
        if point_hw != hw or moved is None or online is None:
            continue
        seconds.append(float(rows[method]["compile_s"]))
        later += int(rows[method]["rounds"] or 0) > 1
        kept += int(rows[method]["online_kept"] or 0) > 0
        if online > 0:
            ratios.append(moved / online)
        above += moved > online
        fs = _moved(rows.get("cosma-fs"))
        below += fs is not None and moved < fs
        if fs is not None and rows["cosma-fs"]["scheduler_status"] == "optimal":
            at_fs += moved <= fs
            over_fs.append(moved - fs)
    return {"ratios": ratios, "above": above, "at_fs": at_fs, "over_fs": over_fs, "seconds": sorted(seconds),
            "later_rounds": later, "kept": kept, "below_fs": below}


def table_spill_summary() -> list[str]:
    """Per config and method: non-compulsory bytes against the online first fit and cosma-fs."""
    lines = ["| config | method | points | mean of bytes / online first fit's | points above it | "
             "points at cosma-fs or below (where proven optimal) | sum of bytes - cosma-fs's there | "
             "compile s median / max |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for hw in sorted({key[1] for key in spill_points()}):
        for method in SPILL_METHODS[1:]:
            c = spill_stats(hw, method)
            ratios, over_fs, seconds = c["ratios"], c["over_fs"], c["seconds"]
            if not seconds:
                continue
            mean = f"{sum(ratios) / len(ratios):.3f} ({len(ratios)} spilling)" if ratios else "-"
            extra = f"{sum(over_fs) / 2**20:+.2f} MiB" if over_fs else "-"
            lines.append(f"| {hw} | `{method}` | {len(seconds)} | {mean} | {c['above']} | {c['at_fs']} of "
                         f"{len(over_fs)} | {extra} | {seconds[len(seconds) // 2]:.2f} / {seconds[-1]:.2f} |")
    return lines


def figure_spill(hw: str, method: str, what: str) -> str:
    """A figure of the spill study (``docs/spill/study.csv``) for ``method`` on ``hw``: ``mean`` (its
    bytes as a share of the online first fit's), ``at-fs`` (points at a proven cosma-fs optimum, of
    the proven ones), ``max-s`` (the slowest compile), ``later-rounds``, ``kept``, ``below-fs``."""
    c = spill_stats(hw, method)
    values = {"mean": f"{100 * sum(c['ratios']) / max(1, len(c['ratios'])):.1f} %",
              "at-fs": f"{c['at_fs']} of {len(c['over_fs'])}", "max-s": f"{c['seconds'][-1]:.2f} s",
              "later-rounds": str(c["later_rounds"]), "kept": str(c["kept"]), "below-fs": str(c["below_fs"])}
    return values[what]


def table_spill_points() -> list[str]:
    """Every point of the spill study: non-compulsory KiB (chip total) per method, auto's cycles and time."""
    def kib(row: dict[str, str] | None) -> str:
        moved = _moved(row)
        if moved is None:
            return "-" if row is None else row["status"][:20]
        mark = "" if row is None or row["method"] not in ("cosma", "cosma-fs") or \
            row["scheduler_status"] == "optimal" else f" ({row['scheduler_status']})"
        return f"{moved / 1024:,.0f}{mark}"

    lines = ["| model | config | SRAM, per PE on pixel6 (point) | " + " | ".join(SPILL_METHODS)
             + " | auto cycles / online's | auto compile s |", "|---|---|---:|" + "---:|" * (len(SPILL_METHODS) + 2)]
    for (model, hw, point), rows in spill_points().items():
        first = next(iter(rows.values()))
        sram = int(first["sram_bytes"])
        auto, online = rows.get("auto"), rows.get("online-first-fit")
        cycles = (f"{int(auto['cycles']) / int(online['cycles']):.3f}"
                  if auto and online and auto["status"] == online["status"] == "ok" else "-")
        lines.append(f"| {model} | {hw} | {sram / 1024:,.1f} KiB ({float(point):g}) | "
                     + " | ".join(kib(rows.get(m)) for m in SPILL_METHODS)
                     + f" | {cycles} | {auto['compile_s'] if auto else '-'} |")
    return lines


def table_learned() -> list[str]:
    """TelaMalloc §7.3's counts, re-derived from the per-run rows of the held-out set: learned
    backtracking against the default rule, same step limit."""
    c = neighbour("train_backtracking").learned_counts(read("learned_backtracking.csv"))
    refs = references()

    def paper(key: str) -> str:
        return refs[f"paper_learned_{key}"]["value"]

    return ["| held-out runs with > 1,000 default backtracks | ours | paper |", "|---|---:|---:|",
            f"| runs | {c['runs']} | {paper('inputs')} |",
            f"| improved (solved where the default is not, or fewer backtracks) | {c['improved']} | "
            f"{paper('improved')} |",
            f"| step-limit failures now solved | {c['rescued']} | {paper('rescued')} |",
            f"| 10x or fewer backtracks | {c['tenfold']} | |",
            f"| lost (solved by the default only) | {c['lost']} | {paper('lost')} |",
            f"| solved by both, more backtracks | {c['worse']} | |",
            f"| unsolved within the step limit: default, learned | {c['unsolved_default']}, "
            f"{c['unsolved_learned']} | |",
            f"| steps in all: default, learned | {c['steps_default']:,}, {c['steps_learned']:,} | |"]


def table_huge() -> list[str]:
    """The 62,185-buffer stand-in minimised: status, % over LOAD, seconds, nodes."""
    lines = ["| instance | buffers | method | status | % over LOAD | seconds | search nodes | timeout |",
             "|---|---:|---|---|---:|---:|---:|---:|"]
    for r in read("huge_trace.csv"):
        lines.append(f"| {Path(r['instance']).stem} | {int(r['buffers']):,} | `{r['method']}` | {r['status']} | "
                     f"{_over(r)} | {_seconds(r['seconds'])} | {int(r['nodes']):,} | {_limit(r)} |")
    return lines


def table_minimize10() -> list[str]:
    """minimalloc and auto minimising the suite and the traces, 10 s each on one thread: the peak,
    % over LOAD and seconds, with issue 14's targets."""
    rows = read("minimize_10s.csv")
    refs = references()
    methods = list(dict.fromkeys(r["method"] for r in rows))
    by = {(r["instance"], r["method"]): r for r in rows}
    lines = ["| instance | LOAD | " + " | ".join(f"`{m}`: peak (% over LOAD, s)" for m in methods) + " | target |",
             "|---|---:|" + "---:|" * (len(methods) + 1)]
    for instance in sorted(dict.fromkeys(r["instance"] for r in rows), key=lambda i: (len(_letter(i)) > 1, i)):
        cells = []
        for method in methods:
            r = by[(instance, method)]
            opt = " opt" if r["status"] == "optimal" else ""
            cells.append(f"{int(r['peak']):,} ({_over(r)}{opt}, {_seconds(r['seconds'])} s)")
        target = refs.get(f"target_minimize_{Path(instance).stem}", {}).get("value", "")
        lines.append(f"| {Path(instance).stem} | {int(by[(instance, methods[0])]['load']):,} | "
                     + " | ".join(cells) + f" | {target} |")
    return lines


def table_first_contact() -> list[str]:
    """Whole processes as a new user meets them (``studies/first_contact.py``), beside issue 21's figures
    and, for the challenging suite, C++ MiniMalloc's search on one thread."""
    refs = references()
    rows = read("first_contact.csv")
    lines = ["| what | command | target | before issue 21 | C++ MiniMalloc | CPU s | wall s |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        key = r["key"]
        cpp = f"{refs[f'cpp_minimalloc_fit_{key[-1]}']['value']} s" if key.startswith("alloc-") else ""
        before = refs.get(f"issue21_{key}", {}).get("value", "")
        if before:
            before += " s wall" if key == "cold-run" else " s CPU" if key != "methods" else " s"
        target = refs.get(f"target_{key}", {}).get("value", "")
        if target and not target.endswith("wall") and not target.startswith("import"):
            target += " s CPU"
        lines.append(f"| {key} | `{r['command']}` | {target} | {before} | {cpp} | {r['cpu_s']} | {r['wall_s']} |")
    return lines


def table_limit_cases() -> list[str]:
    """Issue 22's limit cases (``studies/limit_cases.py``): the limited stage against its limit
    (10 % + 1 s), and how fast a request for too much is refused."""
    lines = ["| case | command | exit | limit | the limited stage | whole process: wall / CPU | max RSS |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in read("limit_cases.csv"):
        limit = f"{float(r['limit_s']):g} s" if r["limit_s"] else "refused"
        stage = ""
        if r["stage_s"]:
            over = float(r["stage_s"]) > 1.1 * float(r["limit_s"]) + 1
            stage = f"{float(r['stage_s']):.2f} s{' **over**' if over else ''}"
        lines.append(f"| {r['key']} | `{r['command']}` | {r['exit']} | {limit} | {stage} | "
                     f"{float(r['wall_s']):.2f} / {float(r['cpu_s']):.2f} s | {int(r['max_rss_mib']):,} MiB |")
    return lines


def table_zoo_coverage() -> list[str]:
    """Every torchvision model through the flow (``studies/zoo_coverage.py``, ``docs/zoo/coverage.csv``)."""
    return neighbour("zoo_coverage").markdown(read("coverage.csv", REPO / "docs" / "zoo")).rstrip("\n").splitlines()


def table_export_vs_fx() -> list[str]:
    """The torch.export path against torch.fx on the 24 zoo models (``studies/export_vs_fx.py``)."""
    rows = read("export_vs_fx.csv")
    lines = ["| model | operators fx / export | MACs fx / export | tensor bytes fx / export | identical |",
             "|---|---:|---:|---:|---|"]
    def both(r: dict[str, str], key: str) -> str:
        return f"{int(r['fx_' + key]):,} / {int(r['export_' + key]):,}"

    for r in rows:

        fx_bytes = sum(int(r[f"fx_{k}_bytes"]) for k in ("input", "weight", "activation", "output"))
        export_bytes = sum(int(r[f"export_{k}_bytes"]) for k in ("input", "weight", "activation", "output"))
        lines.append(f"| {r['model']} | {both(r, 'operators')} | {both(r, 'macs')} | {fx_bytes:,} / {export_bytes:,} | "
                     f"{'yes' if r['identical'] == 'True' else 'no: ' + r['kind_differences']} |")
    return lines


def table_headline() -> list[str]:
    """The README's measured headlines, each from the CSV (or JSON) its results page renders."""
    import json

    refs = references()
    one = {_letter(r["instance"]): r for r in read("fit_1thread.csv")}
    ours = sum(float(one[letter]["seconds"]) for letter in CHALLENGING)
    cpp = sum(float(refs[f"cpp_minimalloc_fit_{letter}"]["value"]) for letter in CHALLENGING)
    solved = sum(one[letter]["status"] == "solved" for letter in CHALLENGING)
    # the dense layers: SCALE-Sim's GEMM format cannot express a grouped convolution (no reference cycles)
    layers = [r for r in read("comparison.csv", REPO / "docs" / "scalesim") if r["scalesim_cycles"]]
    exact = sum(int(r["accelsim_cycles"]) == int(r["scalesim_cycles"]) for r in layers)
    cosma = json.loads((REPO / "docs" / "cosma" / "results.json").read_text())["human_designed"]
    proven = sum(c["status"] == "optimal" for c in cosma)
    zoo = read("coverage.csv", REPO / "docs" / "zoo")
    tpu = sum(r["tpuv4_check"] == "ok" for r in zoo)
    pixel = sum(r["pixel6_check"] == "ok" for r in zoo)
    warm = {r["key"]: r for r in read("first_contact.csv")}["run-warm"]
    floors = {(r["label"], r["hw"]): r for r in read("models.csv", LOAD_TIMING) if r["model"] == "resnet50"}
    floor_cells = ", ".join(f"{floors[('after', hw)]['cycles_over_floor']}x on {hw}" for hw in ("pixel6", "tpuv4"))
    floor_before = ", ".join(f"{floors[('before', hw)]['cycles_over_floor']}x" for hw in ("pixel6", "tpuv4"))
    return [
        "| measured | figure | page |",
        "|---|---|---|",
        f"| MiniMalloc's challenging suite fitted by the exact search, one thread | {solved} of "
        f"{len(CHALLENGING)} in {ours:.1f} s, against {cpp:.1f} s for C++ MiniMalloc "
        f"({cpp / ours:.0f}x) | [allocators](docs/results/allocators.md) |",
        f"| dense layers of resnet50 and mobilenet_v2 whose cycles match SCALE-Sim 3.0.0 exactly, ws and os "
        f"| {exact} of {len(layers)} | [fidelity](docs/results/fidelity.md) |",
        f"| COSMA's comparison (10 DNNs x 3 budgets x weights or not) proven optimal | {proven} of {len(cosma)} "
        f"| [COSMA](docs/results/cosma.md) |",
        f"| resnet50's simulated cycles against its physical floor, default configs | {floor_cells} (before "
        f"load timing: {floor_before}) | [load timing](docs/results/load-timing.md) |",
        f"| torchvision models through the whole flow, memory check ok | {tpu} of {len(zoo)} on tpuv4, "
        f"{pixel} of {len(zoo)} on pixel6 | [coverage](docs/results/zoo.md) |",
        f"| `{warm['command']}`, warm caches | {float(warm['cpu_s']):.2f} s CPU, {float(warm['wall_s']):.2f} s wall "
        f"| [first contact](docs/results/speed.md) |",
    ]


LOAD_TIMING = REPO / "docs" / "load_timing"


def _ratio_cell(rows: dict[str, dict[str, str]], label: str) -> str:
    row = rows.get(label)
    return "" if row is None or not row.get("cycles") else f"{int(row['cycles']):,} ({row['cycles_over_floor']}×)"


def table_load_timing_models() -> list[str]:
    """Cycles against the floor before and after the load-timing planner (studies/load_timing_study.py)."""
    by_key: dict[tuple[str, str], dict[str, dict[str, str]]] = {}
    for r in read("models.csv", LOAD_TIMING):
        by_key.setdefault((r["hw"], r["model"]), {})[r["label"]] = r
    lines = ["| config | model | floor (bound) | DRAM alone | before: cycles (× floor) | after: cycles (× floor) | "
             "after: DMA wait | memory check |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for (hw, model), rows in by_key.items():
        after = rows.get("after") or next(iter(rows.values()))
        cells = [_ratio_cell(rows, label) or rows.get(label, {}).get("memory_check", "")
                 for label in ("before", "after")]
        floor = f"{int(after['floor_cycles']):,} ({after['bound']})" if after.get("floor_cycles") else ""
        dram = f"{int(after['floor_dram']):,}" if after.get("floor_dram") else ""
        wait = f"{int(after['dma_wait_cycles']):,}" if after.get("dma_wait_cycles") else ""
        lines.append(f"| {hw} | {model} | {floor} | {dram} | {cells[0]} | {cells[1]} | {wait} | "
                     f"{after['memory_check']} |")
    return lines


def table_sram_curve() -> list[str]:
    """resnet50 on pixel6 against SRAM per PE, before and after (studies/load_timing_study.py)."""
    by_size: dict[int, dict[str, dict[str, str]]] = {}
    for r in read("sram_curve.csv", LOAD_TIMING):
        by_size.setdefault(int(r["sram_bytes"]), {})[r["label"]] = r
    lines = ["| SRAM per PE | before: cycles (× floor) | after: cycles (× floor) | after: DRAM bytes | "
             "after: peak address |", "|---:|---:|---:|---:|---:|"]
    for size, rows in sorted(by_size.items()):
        after = rows.get("after", {})
        cells = [_ratio_cell(rows, label) or rows.get(label, {}).get("status", "") for label in ("before", "after")]
        dram = f"{int(after['dram_bytes']):,}" if after.get("dram_bytes") else ""
        peak = f"{int(after['peak_bytes']) / 1024:,.1f} KiB" if after.get("peak_bytes") else ""
        lines.append(f"| {size // 1024:,} KiB | {cells[0]} | {cells[1]} | {dram} | {peak} |")
    return lines


LLM = REPO / "docs" / "llm"


def table_llm() -> list[str]:
    """The llm.* family's prefill and decode step against their bounds (studies/llm_study.py)."""
    lines = ["| model | config | step | cycles | floor (bound) | × floor | (weights + KV) ÷ bandwidth | × that | "
             "DRAM read | M_R | memory check |", "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in read("runs.csv", LLM):
        if r["phase"] == "generation":
            continue  # table_llm_zoo_generation
        step = f"prefill {r['tokens']}" if r["phase"] == "prefill" else f"decode at {int(r['past']) + 1}"
        decode = f"{int(r['decode_bound_cycles']):,}" if r["decode_bound_cycles"] else ""
        lines.append(f"| {r['model']} | {r['hw']} | {step} | {int(r['cycles']):,} | {int(r['floor_cycles']):,} "
                     f"({r['bound']}) | {r['cycles_over_floor']} | {decode} | {r['cycles_over_decode_bound']} | "
                     f"{int(r['dram_read_bytes']) / 2**20:,.1f} MiB | {int(r['m_r_bytes']) / 2**20:,.2f} MiB | "
                     f"{r['memory_check']} |")
    return lines


def table_llm_zoo_generation() -> list[str]:
    """Every llm.* decoder's generation of 512 + 16 tokens (studies/llm_study.py's generation rows)."""
    lines = ["| model | config | TTFT | time per token | tokens/s | steps × bound | KV cache | memory check |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    for r in read("runs.csv", LLM):
        if r["phase"] != "generation":
            continue
        kv = f"{int(r['kv_bytes']) / 2**20:,.1f} MiB, {'pinned' if r['kv_resident'] == 'yes' else 'streams'}"
        lines.append(f"| {r['model']} | {r['hw']} | {r['ttft_ms']} ms | {r['tpot_ms']} ms | {r['tokens_per_s']} | "
                     f"{r['cycles_over_decode_bound']} | {kv} | {r['memory_check']} |")
    return lines


def table_llm_generation() -> list[str]:
    """Llama-3.2-1B generations against prompt length and SRAM (studies/llm_generation_study.py)."""
    lines = ["| config | SRAM | prompt | TTFT (× prefill floor) | time per token (× bound) | tokens/s | KV cache | "
             "DRAM per token |", "|---|---:|---:|---:|---:|---:|---|---:|"]
    for r in read("generation.csv", LLM):
        sram = f"{int(r['sram_bytes']) / 2**20:g} MiB"
        if r["status"] != "runs":
            status = r["status"].split(": operator")[0]  # the reason's first clause: below M_R
            lines.append(f"| {r['hw']} | {sram} | {int(r['prefill']):,} | {status} | | | | |")
            continue
        kv = f"{int(r['kv_bytes']) / 2**20:,.1f} MiB, {'pinned' if r['kv_resident'] == 'yes' else 'streams'}"
        lines.append(f"| {r['hw']} | {sram} | {int(r['prefill']):,} | {r['ttft_ms']} ms ({r['prefill_over_floor']}×) | "
                     f"{r['tpot_ms']} ms ({r['decode_over_bound']}×) | {r['tokens_per_s']} | {kv} | "
                     f"{int(r['dram_bytes_per_token']) / 2**20:,.1f} MiB |")
    return lines


FIDELITY = REPO / "docs" / "fidelity"
SCALESIM = REPO / "docs" / "scalesim"
COSMA = REPO / "docs" / "cosma"
#: COSMA's four baselines (studies/cosma_comparison.py): order + replacement, each with a first-fit arena
COSMA_BASELINES = ("program+belady", "program+greedy", "min-peak+belady", "min-peak+greedy")
BUDGETS = {"MR": "M_R", "MH": "M_H", "MP": "M_P"}


def table_fidelity() -> list[str]:
    """The three models on both configs: mapped, ideal compute and the old simulator
    (``studies/fidelity_table.py``, ``docs/fidelity/table.csv``)."""
    return neighbour("fidelity_table").markdown(read("table.csv", FIDELITY)).rstrip("\n").splitlines()


def cosma_results() -> dict[str, Any]:
    """``docs/cosma/results.json``, which ``studies/cosma_comparison.py`` writes."""
    results: dict[str, Any] = json.loads((COSMA / "results.json").read_text())
    return results


def _best_baseline(row: dict[str, Any]) -> int:
    return min(int(row[name]) for name in COSMA_BASELINES)


def _cosma_mib(value: int) -> str:
    return "0" if value == 0 else f"{value / 2**20:.2f}"


def table_cosma_dnns() -> list[str]:
    """COSMA §V's ten DNNs: the best baseline's non-compulsory MiB against COSMA's (solve seconds)."""
    by: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for r in cosma_results()["human_designed"]:
        by.setdefault((r["model"], r["setting"]), {})[r["budget"]] = r
    lines = ["| model | setting | M_R: best baseline → COSMA MiB (s) | M_H | M_P |", "|---|---|---|---|---|"]
    for (model, setting), budgets in by.items():
        cells = [f"{_cosma_mib(_best_baseline(r))} → **{_cosma_mib(int(r['cosma']))}** ({r['seconds']:.2f})"
                 for r in (budgets[b] for b in BUDGETS)]
        lines.append(f"| {model.split('.')[-1]} | {'with weights' if setting == 'weights' else setting} | "
                     + " | ".join(cells) + " |")
    return lines


def cosma_budget(budget: str) -> dict[str, Any]:
    """Per budget (MR, MH, MP, or "all"): the cases, proven optima, solve times, the reduction
    against the best baseline (mean over the cases where it moves bytes, and in total bytes)."""
    rows = [r for r in cosma_results()["human_designed"] if budget in (r["budget"], "all")]
    best = [_best_baseline(r) for r in rows]
    cuts = [1 - int(r["cosma"]) / b for r, b in zip(rows, best, strict=True) if b > 0]
    seconds = [float(r["seconds"]) for r in rows]
    return {"cases": len(rows), "optimal": sum(r["status"] == "optimal" for r in rows),
            "mean_s": sum(seconds) / len(rows), "max_s": max(seconds),
            "mean_cut": 100 * sum(cuts) / max(1, len(cuts)),
            "total_cut": 100 * (1 - sum(int(r["cosma"]) for r in rows) / max(1, sum(best))),
            "zero": sum(int(r["cosma"]) == 0 for r in rows)}


def table_cosma_summary() -> list[str]:
    """Per budget: proven optima, solve times, fewer bytes than the best baseline, zero bytes."""
    lines = ["| budget | proven optimal | mean / max solve | fewer bytes than the best baseline (mean over cases "
             "where it moves any) | zero bytes |", "|---|---|---|---|---|"]
    for budget, label in BUDGETS.items():
        c = cosma_budget(budget)
        cut = ("100 %" if round(c["mean_cut"], 1) == round(c["total_cut"], 1) == 100
               else f"{c['mean_cut']:.1f} % ({c['total_cut']:.1f} % of all bytes)")
        lines.append(f"| {label} | {c['optimal']}/{c['cases']} | {c['mean_s']:.2f} s / {c['max_s']:.1f} s | {cut} | "
                     f"{c['zero']}/{c['cases']} |")
    c = cosma_budget("all")
    lines.append(f"| all {c['cases']} | {c['optimal']}/{c['cases']} | {c['mean_s']:.2f} s / {c['max_s']:.1f} s | | |")
    return lines


def table_cosma_nas() -> list[str]:
    """NAS-like graphs, googlenet and inception_v3: cosma-fs and cosma-dnc against the best baseline."""
    lines = ["| graph | ops | budget | best baseline KiB | cosma-fs (MPMF order) KiB, s | cosma-dnc KiB, s (parts) |",
             "|---|---|---|---|---|---|"]
    for r in cosma_results()["nas"]:
        lines.append(f"| {r['graph']} | {r['operators']} | {r['budget']} | {r['best_baseline'] / 1024:,.0f} | "
                     f"{r['fs'] / 1024:,.0f}, {r['fs_seconds']:.1f} | {r['dnc'] / 1024:,.0f}, "
                     f"{r['dnc_seconds']:.1f} ({int(r['parts'])}) |")
    return lines


def _size(text: str) -> int:
    """A size as the pages write it (``160KiB``, ``2MiB``, or bytes)."""
    from accelsim.units import parse_bytes

    return parse_bytes(text)


def _after_row(model: str, hw: str) -> dict[str, str]:
    """``model`` on ``hw`` as the load-timing study measured the current code (label ``after``); a row
    named with its input (``decoder_layer (4,096 tokens)``) is found by its first word."""
    return next(r for r in read("models.csv", LOAD_TIMING) if r["label"] == "after" and r["hw"] == hw
                and model in (r["model"], r["model"].split(" ")[0]))


def figure_load_timing(model: str, hw: str, column: str) -> str:
    """A figure of the load-timing study's runs at the default SRAM (``docs/load_timing/models.csv``)."""
    return _count_or_bytes(column, _after_row(model, hw)[column])


def figure_floor_note(model: str, hw: str) -> str:
    """The summary's ``cycles`` note for ``model`` on ``hw`` (``accelsim.report.format_summary``):
    the cycles against the floor, the term that sets it and the other one."""
    r = _after_row(model, hw)
    names = {"compute": ("compute", "floor_dram", "DRAM"), "dram": ("DRAM", "floor_compute", "compute")}
    bound, other, other_name = names[r["bound"]]
    return (f"`{int(r['cycles']) / int(r['floor_cycles']):.2f}× the floor {int(r['floor_cycles']):,} "
            f"({bound}-bound; {other_name} alone {int(r[other]):,})`")


def figure_floor_within() -> str:
    """How far above its floor the slowest run of the load-timing study's models sits, in percent."""
    worst = max(float(r["cycles_over_floor"]) for r in read("models.csv", LOAD_TIMING)
                if r["label"] == "after" and r["cycles_over_floor"])
    return f"{100 * (worst - 1):.1f} %"


def figure_curve(size: str, column: str) -> str:
    """A figure of resnet50's SRAM curve on pixel6 (``docs/load_timing/sram_curve.csv``, label ``after``)."""
    row = next(r for r in read("sram_curve.csv", LOAD_TIMING) if r["label"] == "after"
               and int(r["sram_bytes"]) == _size(size))
    return f"{int(row[column]):,}"


def _fidelity_rows(run: str, hw: str = "", models: str = "") -> list[dict[str, str]]:
    return [r for r in read("table.csv", FIDELITY) if r["run"] == run and hw in ("", r["hw"])
            and (not models or r["model"] in models.split(","))]


def figure_mapping(hw: str, models: str = "") -> str:
    """The operators' mapped compute over their ideal bound (mapped runs), one model or a range."""
    ratios = sorted(int(r["op_compute_cycles"]) / int(r["ideal_cycles"]) for r in _fidelity_rows("mapped", hw, models))
    low, high = f"{ratios[0]:.2f}", f"{ratios[-1]:.2f}"
    return f"{low}×" if low == high else f"{low}–{high}×"


def figure_dma_share(run: str, hw: str = "") -> str:
    """DMA wait as a share of the cycles, over the fidelity table's runs ``run`` (on ``hw``): the range."""
    shares = sorted(100 * int(r["dma_wait_cycles"]) / int(r["cycles"]) for r in _fidelity_rows(run, hw))
    return f"{shares[0]:.0f}–{shares[-1]:.0f} %" if run == "before" else f"{shares[-1]:.1f} %"


def figure_simulate_speed() -> str:
    """How long the fidelity table's mapped runs took to simulate, and their events per second."""
    rows = _fidelity_rows("mapped")
    seconds = sorted(float(r["simulate_s"]) for r in rows)
    rates = sorted(int(r["sim_events"]) / float(r["simulate_s"]) / 1000 for r in rows)
    tpu = next(r for r in rows if (r["model"], r["hw"]) == ("resnet50", "tpuv4"))
    return (f"{seconds[0]:.3f}–{seconds[-1]:.3f} s ({int(tpu['sim_events']):,} SimPy events in "
            f"{float(tpu['simulate_s']):.3f} s for resnet50 on tpuv4), {rates[0]:.0f}–{rates[-1]:.0f} thousand")


def _scalesim(dataflow: str, dense: bool = True) -> list[dict[str, str]]:
    """The layers of SCALE-Sim's comparison in ``dataflow``: the dense ones (with SCALE-Sim's cycles) or the grouped."""
    return [r for r in read("comparison.csv", SCALESIM)
            if r["dataflow"] == dataflow and bool(r["scalesim_cycles"]) == dense]


def figure_scalesim(dataflow: str, what: str) -> str:
    """A summary figure of accelsim's compute model against SCALE-Sim (``docs/scalesim/comparison.csv``):
    ``exact`` (dense layers with SCALE-Sim's cycles), ``dense`` (their cycles, against the ideal bound),
    ``grouped`` (the depthwise layers' range of mapped / ideal and their cycles)."""
    if what == "exact":
        dense = _scalesim(dataflow)
        return f"{sum(r['accelsim_cycles'] == r['scalesim_cycles'] for r in dense)} of {len(dense)}"
    if what == "dense":
        dense = _scalesim(dataflow)
        mapped, ideal = (sum(int(r[k]) for r in dense) for k in ("accelsim_cycles", "ideal_cycles"))
        return f"{mapped:,} cycles {dataflow} against {ideal:,} at the ideal bound ({mapped / ideal:.2f}×)"
    grouped = _scalesim(dataflow, dense=False)
    ratios = sorted(int(r["accelsim_cycles"]) / int(r["ideal_cycles"]) for r in grouped)
    return (f"{ratios[0]:,.0f}× to {ratios[-1]:,.0f}× their ideal bound in {dataflow} "
            f"({sum(int(r['accelsim_cycles']) for r in grouped):,} cycles against "
            f"{sum(int(r['ideal_cycles']) for r in grouped):,})")


def figure_scalesim_layer(model: str, layer: str, dataflow: str) -> str:
    """One dense layer's cycles in accelsim, and SCALE-Sim's when they differ."""
    row = next(r for r in _scalesim(dataflow) if (r["model"], r["layer"]) == (model, layer))
    ours, theirs = int(row["accelsim_cycles"]), int(row["scalesim_cycles"])
    return f"{ours:,} cycles {dataflow}" + ("" if ours == theirs else f" (SCALE-Sim: {theirs:,})")


def _count_or_bytes(column: str, value: str) -> str:
    """A CSV value as the pages write it: bytes in binary units, other counts with commas."""
    from accelsim.hw import format_bytes

    return format_bytes(int(value)) if column.endswith("_bytes") else f"{int(value):,}"


def figure_llm(model: str, hw: str, phase: str, column: str) -> str:
    """A figure of a language model's run (``docs/llm/runs.csv``, ``studies/llm_study.py``)."""
    row = next(r for r in read("runs.csv", LLM) if (r["model"], r["hw"], r["phase"]) == (model, hw, phase))
    return _count_or_bytes(column, row[column])


def figure_coverage(model: str, column: str) -> str:
    """A figure of the zoo's coverage table (``docs/zoo/coverage.csv``, ``studies/zoo_coverage.py``)."""
    row = next(r for r in read("coverage.csv", REPO / "docs" / "zoo") if r["model"] == model)
    return _count_or_bytes(column, row[column])


def figure_cosma(budget: str, what: str) -> str:
    """A figure of COSMA's comparison (``docs/cosma/results.json``) at ``budget`` (MR, MH, MP, all):
    ``mean_s``, ``max_s``, ``mean_cut`` or ``total_cut``."""
    value = cosma_budget(budget)[what]
    return f"{value:.2f} s" if what == "mean_s" else f"{value:.1f} s" if what == "max_s" else f"{value:.1f} %"


def figure_cosma_dnc(what: str) -> str:
    """cosma-dnc on the NAS-like graphs: ``slowest`` run in seconds, or ``beats`` (at most the fixed
    MPMF order's bytes in how many cases, strictly fewer in how many)."""
    rows = cosma_results()["nas"]
    if what == "slowest":  # rounded up: every run ends within it
        return f"{-(-max(float(r['dnc_seconds']) for r in rows) // 1):.0f} s"
    nas = [r for r in rows if r["graph"].startswith("nas_cells")]
    at_most = sum(int(r["dnc"]) <= int(r["fs"]) for r in nas)
    return f"{at_most} of {len(nas)} cases (strictly in {sum(int(r['dnc']) < int(r['fs']) for r in nas)})"


FIGURES: dict[str, Callable[..., str]] = {
    "floor-note": figure_floor_note, "floor-within": figure_floor_within, "curve": figure_curve,
    "mapping": figure_mapping, "dma-share": figure_dma_share, "simulate-speed": figure_simulate_speed,
    "scalesim": figure_scalesim, "scalesim-layer": figure_scalesim_layer, "cosma": figure_cosma,
    "cosma-dnc": figure_cosma_dnc, "llm": figure_llm, "coverage": figure_coverage,
    "load-timing": figure_load_timing, "spill": figure_spill,
}
#: ``<!-- figure:NAME ARG ... -->TEXT<!-- /figure:NAME -->``, inline
FIGURE = re.compile(r"<!-- figure:([\w-]+)((?: [^ >]+)*) -->(.*?)<!-- /figure:\1 -->", re.S)
#: ``<!-- run:FIELD MODEL HW [OPTION=VALUE ...] -->TEXT<!-- /run -->``: typed, checked by re-running
CHECKED = re.compile(r"<!-- run:(\S+) (\S+) (\S+)((?: [\w.]+=\S+)*) -->(.*?)<!-- /run -->", re.S)


def figures(text: str) -> list[tuple[str, list[str], str]]:
    """The generated figures of a page's ``text``: (name, arguments, the text published)."""
    return [(name, args.split(), body) for name, args, body in FIGURE.findall(text)]


def figure(name: str, args: list[str], page: str = "README.md") -> str:
    """What the figure ``name`` with ``args`` gives from its sources now."""
    if name not in FIGURES:
        raise ValueError(f"{page}: unknown figure {name!r} (known: {', '.join(FIGURES)})")
    return FIGURES[name](*args)


TABLES: dict[str, Callable[[], list[str]]] = {
    "fit": table_fit, "minimize": table_minimize, "traces": table_traces, "large": table_large,
    "limits": table_limits, "telamalloc": table_telamalloc, "sweep": table_sweep, "cmem": table_cmem,
    "auto": table_auto, "idealloc": table_idealloc, "spill-summary": table_spill_summary,
    "spill-points": table_spill_points, "learned": table_learned, "huge": table_huge,
    "minimize10": table_minimize10, "first-contact": table_first_contact, "limit-cases": table_limit_cases,
    "zoo-coverage": table_zoo_coverage, "export-vs-fx": table_export_vs_fx, "headline": table_headline,
    "load-timing-models": table_load_timing_models, "sram-curve": table_sram_curve, "llm": table_llm,
    "llm-generation": table_llm_generation, "llm-zoo-generation": table_llm_zoo_generation,
    "fidelity": table_fidelity, "cosma-dnns": table_cosma_dnns, "cosma-summary": table_cosma_summary,
    "cosma-nas": table_cosma_nas,
}


def reference_blocks() -> dict[str, Callable[[], list[str]]]:
    """The reference pages' generated blocks (``studies/reference_pages.py``), by name."""
    return dict(neighbour("reference_pages", "docs/gen").BLOCKS)


def generators() -> dict[str, Callable[[], list[str]]]:
    """Every generated block by name: the measured tables and the reference blocks."""
    return {**TABLES, **reference_blocks()}


def pages() -> list[Path]:
    """The pages that may hold generated blocks: README.md and every Markdown file under docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def render(readme: str, page: str = "README.md") -> str:
    """``readme`` (the text of ``page``) with every generated block and figure replaced by its rendering."""
    known = generators()

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in known:
            raise ValueError(f"{page}: unknown generated table {name!r} (known: {', '.join(known)})")
        return f"<!-- table:{name} -->\n" + "\n".join(known[name]()) + f"\n<!-- /table:{name} -->"

    def fill(match: re.Match[str]) -> str:
        name, args = match.group(1), match.group(2)
        return f"<!-- figure:{name}{args} -->{figure(name, args.split(), page)}<!-- /figure:{name} -->"

    tables = re.sub(r"<!-- table:([\w-]+) -->\n.*?<!-- /table:\1 -->", replace, readme, flags=re.S)
    return FIGURE.sub(fill, tables)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a page is not what its sources give")
    args = parser.parse_args(argv)
    stale = []
    for path in pages():
        text = path.read_text()
        wanted = render(text, str(path.relative_to(REPO)))
        if wanted != text:
            stale.append(str(path.relative_to(REPO)))
            if not args.check:
                path.write_text(wanted)
    if args.check and stale:
        print(f"generated blocks differ from their sources in {', '.join(stale)}; run studies/readme_tables.py",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

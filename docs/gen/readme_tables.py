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
appears in exactly one page. The test suite checks that no page drifts from its sources.
"""

from __future__ import annotations

import argparse
import csv
import importlib
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
    lines = ["| model | smallest CMEM, no extra traffic | extra traffic, one granule less | cycles | "
             "half HBM: cycles | half HBM: energy |", "|---|---:|---:|---:|---:|---:|"]
    for r in sorted(read("cmem_study.csv", SWEEP), key=lambda r: int(r["smallest_zero_spill_cmem_bytes"])):
        below = r["noncompulsory_one_granule_below"]
        less = "below M_R" if below in ("", "nan") else _mib(below)
        over = "" if r["fits_128MiB"] == "True" else " (> 128 MiB)"
        lines.append(f"| {r['model']} | {_mib(r['smallest_zero_spill_cmem_bytes'])}{over} | {less} | "
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


def table_spill_summary() -> list[str]:
    """Per config and method: non-compulsory bytes against the online first fit and cosma-fs."""
    points = spill_points()
    lines = ["| config | method | points | mean of bytes / online first fit's | points above it | "
             "points at cosma-fs or below (where proven optimal) | sum of bytes - cosma-fs's there | "
             "compile s median / max |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for hw in sorted({key[1] for key in points}):
        here = {key: rows for key, rows in points.items() if key[1] == hw}
        for method in SPILL_METHODS[1:]:
            ratios, above, at_fs, over_fs, seconds = [], 0, 0, [], []
            for rows in here.values():
                online, moved = _moved(rows.get("online-first-fit")), _moved(rows.get(method))
                if moved is None or online is None:
                    continue
                seconds.append(float(rows[method]["compile_s"]))
                if online > 0:
                    ratios.append(moved / online)
                above += moved > online
                fs = _moved(rows.get("cosma-fs"))
                if fs is not None and rows["cosma-fs"]["scheduler_status"] == "optimal":
                    at_fs += moved <= fs
                    over_fs.append(moved - fs)
            if not seconds:
                continue
            seconds.sort()
            mean = f"{sum(ratios) / len(ratios):.3f} ({len(ratios)} spilling)" if ratios else "-"
            extra = f"{sum(over_fs) / 2**20:+.2f} MiB" if over_fs else "-"
            lines.append(f"| {hw} | `{method}` | {len(seconds)} | {mean} | {above} | {at_fs} of {len(over_fs)} | "
                         f"{extra} | {seconds[len(seconds) // 2]:.2f} / {seconds[-1]:.2f} |")
    return lines


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


TABLES: dict[str, Callable[[], list[str]]] = {
    "fit": table_fit, "minimize": table_minimize, "traces": table_traces, "large": table_large,
    "limits": table_limits, "telamalloc": table_telamalloc, "sweep": table_sweep, "cmem": table_cmem,
    "auto": table_auto, "idealloc": table_idealloc, "spill-summary": table_spill_summary,
    "spill-points": table_spill_points, "learned": table_learned, "huge": table_huge,
    "minimize10": table_minimize10, "first-contact": table_first_contact, "limit-cases": table_limit_cases,
    "zoo-coverage": table_zoo_coverage, "export-vs-fx": table_export_vs_fx, "headline": table_headline,
    "load-timing-models": table_load_timing_models, "sram-curve": table_sram_curve, "llm": table_llm,
    "llm-generation": table_llm_generation, "llm-zoo-generation": table_llm_zoo_generation,
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
    """``readme`` (the text of ``page``) with every generated block replaced by its rendering."""
    known = generators()

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in known:
            raise ValueError(f"{page}: unknown generated table {name!r} (known: {', '.join(known)})")
        return f"<!-- table:{name} -->\n" + "\n".join(known[name]()) + f"\n<!-- /table:{name} -->"

    return re.sub(r"<!-- table:([\w-]+) -->\n.*?<!-- /table:\1 -->", replace, readme, flags=re.S)


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

"""The figures the docs publish for resnet50 and its SRAM curve are what the code gives now.

``tests/gen/test_readme_tables.py`` checks that every page is what its CSV files give; this checks
the other half, for the runs cheap enough to repeat on every test run: resnet50 on both bundled
configs, and the small sweep the results publish (resnet50's SRAM curve on pixel6). Each run goes
through the study that wrote its rows (``studies/fidelity_table.py``, ``load_timing_study.py``,
``zoo_coverage.py``), with the traced graph from the trace cache, and

* every deterministic column of those rows must equal the CSV's (timing columns aside);
* every generated table and figure of every page, rendered with the fresh rows in place of the
  CSV's, must equal what the page publishes;
* every checked figure (``<!-- run:FIELD MODEL HW OPTION=VALUE -->``, typed by hand because no
  study writes it) is re-run and must equal its text;
* the summary line a concept page quotes must be what ``accelsim run`` prints.

A failure names the CSV row and column, or the page and the figure, and what the code gives now;
re-run the study its page names, then ``python docs/gen/readme_tables.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.torch

REPO = Path(__file__).resolve().parents[1]
MODEL = "resnet50"
CONFIGS = ("pixel6", "tpuv4")
#: the points of the SRAM curve re-run here; 64 and 128 KiB, where row tiling cuts 82 operators and
#: the spill loop works hard, cost most of a minute and are left to the study
CURVE_POINTS = tuple(k * 1024 for k in (160, 192, 256, 384, 512, 1024, 2048, 4096))


def _graph(dtype: str) -> Any:
    from frontend.cache import cached_trace

    return cached_trace(MODEL, dtype).graph


@pytest.fixture(scope="module")
def fresh(study) -> dict[str, list[dict[str, Any]]]:
    """The rows the studies write for resnet50 and its SRAM curve, computed now, by CSV file."""
    from accelsim import load_hw

    fidelity, load_timing, coverage = study("fidelity_table"), study("load_timing_study"), study("zoo_coverage")
    fidelity_rows = [fidelity.run_row(MODEL, hw, run, _graph(load_hw(hw).dtype))
                     for hw in CONFIGS for run in fidelity.RUNS]
    return {
        "docs/fidelity/table.csv": fidelity_rows,
        "docs/load_timing/models.csv": [load_timing.model_row("after", hw, MODEL) for hw in CONFIGS],
        "docs/load_timing/sram_curve.csv": [load_timing.curve_row("after", sram) for sram in CURVE_POINTS],
        "docs/zoo/coverage.csv": [coverage.coverage_row(MODEL, lambda dtype: (_graph(dtype), None))],
    }


#: the columns that name a row of each CSV, and the columns measured in seconds (not compared)
KEYS = {"docs/fidelity/table.csv": ("model", "hw", "run"), "docs/load_timing/models.csv": ("label", "model", "hw"),
        "docs/load_timing/sram_curve.csv": ("label", "sram_bytes"), "docs/zoo/coverage.csv": ("model",)}
TIMINGS = {"docs/fidelity/table.csv": ("simulate_s",), "docs/zoo/coverage.csv": ("trace_cpu_s",)}


def _as_csv(row: dict[str, Any], columns: list[str]) -> dict[str, str]:
    """``row`` as ``csv.DictWriter`` writes it: every column, None and missing as ''."""
    return {c: "" if row.get(c) is None else str(row[c]) for c in columns}


def _published(generator, path: str) -> list[dict[str, str]]:
    file = REPO / path
    return list(generator("readme_tables").read(file.name, file.parent))


def _key(path: str, row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(row[k]) for k in KEYS[path])


def test_the_csv_rows_are_what_the_code_gives_now(fresh, generator):
    differences = []
    for path, rows in fresh.items():
        published = {_key(path, r): r for r in _published(generator, path)}
        for row in rows:
            key = _key(path, row)
            assert key in published, f"{path}: no row {key}: re-run the study that writes it"
            old = published[key]
            new = _as_csv(row, list(old))
            differences += [f"{path}, row {' '.join(key)}: {column} is {old[column]!r}, the code gives {new[column]!r}"
                            for column in old if column not in TIMINGS.get(path, ()) and old[column] != new[column]]
    assert not differences, "published rows differ from the code:\n" + "\n".join(differences)


def _with_fresh_rows(module, fresh: dict[str, list[dict[str, Any]]], monkeypatch) -> None:
    """Make the generator read the fresh rows in place of the CSV's (the other rows as they are)."""
    read = module.read

    def patched(name: str, folder: Path = module.BENCH) -> list[dict[str, str]]:
        rows = read(name, folder)
        path = str((Path(folder) / name).relative_to(REPO))
        if path not in fresh:
            return rows
        now = {_key(path, r): _as_csv(r, list(rows[0])) for r in fresh[path]}
        return [{**now[_key(path, r)], **{c: r[c] for c in TIMINGS.get(path, ())}} if _key(path, r) in now else r
                for r in rows]

    monkeypatch.setattr(module, "read", patched)


def test_every_page_publishes_what_the_code_gives_now(fresh, generator, monkeypatch):
    module = generator("readme_tables")
    _with_fresh_rows(module, fresh, monkeypatch)
    differences, figures = [], 0
    for page in module.pages():
        text, where = page.read_text(), page.relative_to(REPO)
        for name, body in re.findall(r"<!-- table:([\w-]+) -->\n(.*?)\n<!-- /table:\1 -->", text, flags=re.S):
            if name in module.TABLES and "\n".join(module.TABLES[name]()) != body:
                differences.append(f"{where}: table {name} differs from what the code gives now")
        for name, args, body in module.figures(text):
            figures += 1
            now = module.figure(name, args, str(where))
            if now != body:
                differences.append(f"{where}: figure {name} {' '.join(args)} publishes {body!r}, "
                                   f"the code gives {now!r}")
    assert figures, "no page has a generated figure"
    assert not differences, "\n".join(differences)


def _checked_figures(generator) -> list[tuple[Path, str, str, str, str, str]]:
    module = generator("readme_tables")
    return [(page, *match) for page in module.pages() for match in module.CHECKED.findall(page.read_text())]


def _run_fields(options: str) -> dict[str, Any]:
    """A checked figure's ``OPTION=VALUE`` words as ``compile_and_simulate``'s keywords: a size for
    ``sram``, a shape for ``input_shape``, ``model_option.NAME`` into ``model_options``."""
    from accelsim.units import parse_bytes

    fields: dict[str, Any] = {}
    for word in options.split():
        key, value = word.split("=", 1)
        if key.startswith("model_option."):
            fields.setdefault("model_options", {})[key.split(".", 1)[1]] = int(value)
        elif key == "sram":
            fields[key] = parse_bytes(value)
        elif key == "input_shape":
            fields[key] = tuple(int(n) for n in value.split(","))
        else:
            fields[key] = value
    return fields


def _as_published(field: str, value: Any) -> str:
    """A report field as the pages write it: bytes in binary units, a ratio to 2 places, counts with commas."""
    from accelsim.hw import format_bytes

    if field.endswith("_bytes"):
        return format_bytes(value)
    return f"{value:.2f}×" if field == "cycles_over_floor" else f"{value:,}"


def test_every_checked_figure_is_what_its_run_gives_now(generator):
    from accelsim import compile_and_simulate

    checked = _checked_figures(generator)
    assert checked, "no page has a checked figure"
    reports: dict[tuple[str, str, str], Any] = {}  # several figures of one run share it
    differences = []
    for page, field, model, hw, options, body in checked:
        if (model, hw, options) not in reports:
            reports[(model, hw, options)] = compile_and_simulate(model, hw, **_run_fields(options))
        now = _as_published(field, getattr(reports[(model, hw, options)], field))
        if now != body:
            differences.append(f"{page.relative_to(REPO)}: {field} of {model} on {hw}{options} publishes {body!r}, "
                               f"the code gives {now!r}")
    assert not differences, "\n".join(differences)


def test_the_summary_a_page_quotes_is_what_accelsim_run_prints(generator):
    from accelsim import compile_and_simulate
    from accelsim.report import format_summary

    module = generator("readme_tables")
    quoted = [(page, args, body) for page in module.pages() for name, args, body in module.figures(page.read_text())
              if name == "floor-note"]
    assert quoted, "no page quotes the summary's floor note"
    for page, (model, hw), body in quoted:
        assert body.strip("`") in format_summary(compile_and_simulate(model, hw)), (
            f"{page.relative_to(REPO)}: the summary of {model} on {hw} no longer reads {body}")

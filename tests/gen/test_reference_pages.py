"""The generated reference pages (docs/reference/) say what the code says: every command and option
of the parser, every hardware field with the bundled configs' values, every key of a real report.json."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "reference"


def block(page: str, name: str) -> str:
    text = (REFERENCE / page).read_text()
    start, end = f"<!-- table:{name} -->\n", f"<!-- /table:{name} -->"
    assert start in text and end in text, f"{page} has no generated block {name}"
    return text.split(start, 1)[1].split(end, 1)[0]


def test_every_page_is_what_its_generator_gives(generator):
    tables = generator("readme_tables")
    for page in ("cli.md", "hardware.md", "report-json.md"):
        text = (REFERENCE / page).read_text()
        assert tables.render(text, page) == text, f"run python docs/gen/readme_tables.py ({page})"


def test_every_command_and_option_is_on_the_cli_page():
    import argparse

    from accelsim.cli import build_parser

    body = block("cli.md", "cli-reference")
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) and {"run", "alloc", "sweep", "size", "bench", "gen", "models", "configs"} <= set(
        sub.choices)
    for name, command in sub.choices.items():
        assert f"\n## accelsim {name}\n" in "\n" + body, name
        section = ("\n" + body).split(f"\n## accelsim {name}\n", 1)[1].split("\n## accelsim ", 1)[0]
        for action in command._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}`" in section, f"{name} {option}"
    assert "| 130 |" in (REFERENCE / "cli.md").read_text()


def test_every_hardware_field_is_on_its_page_with_the_bundled_values():
    from accelsim import load_hw
    from accelsim.hw import schema_fields

    rows = {line.split(" | ")[0].strip("| `"): line.split(" | ") for line in
            block("hardware.md", "hw-fields").splitlines()[2:]}
    pixel6 = load_hw("pixel6")
    assert set(rows) == set(schema_fields())
    header = block("hardware.md", "hw-fields").splitlines()[0].split(" | ")
    column = header.index("pixel6")
    expected = {"n_pe": "16", "sram_bytes_per_pe": "2,097,152 (2 MiB)", "alignment": "64", "clock_hz": "1,066,000,000",
                "compute.kind": "`lanes`", "compute.rows": "—", "compute.lanes_per_core": "64",
                "compute.pack_groups": "`true`", "energy.pj_per_mac": "0.3", "dma.channels": "2"}
    for name, value in expected.items():
        assert rows[name][column].strip(" |") == value, name
    for name in schema_fields():  # every value of the config is in its cell
        value = pixel6
        for part in name.split("."):
            value = getattr(value, part, None)
        cell = rows[name][column].strip(" |")
        if isinstance(value, bool):
            assert cell == f"`{str(value).lower()}`", name
        elif isinstance(value, int | float):
            assert cell.split(" ")[0].replace(",", "") in (str(value), f"{value:g}", str(int(value))), name
        elif value is None:
            assert cell == "—", name
        else:
            assert str(value).replace("|", "\\|") in cell, name


def test_every_key_of_a_real_report_is_on_the_report_page(tmp_path):
    from accelsim import compile_and_simulate
    from frontend.graph import add_operator, add_tensor, new_graph

    g = new_graph("chain", dtype="int8")
    add_tensor(g, "x", (1, 4, 16, 16), kind="input")
    add_tensor(g, "w", (4, 4, 3, 3), kind="weight")
    add_operator(g, "conv", "conv2d", inputs=["x", "w"], outputs={"y": (1, 4, 16, 16)}, macs=4 * 4 * 9 * 256,
                 gemm=[[256, 36, 4, 1]])
    add_operator(g, "relu", "relu", inputs=["y"], outputs={"out": (1, 4, 16, 16)})
    g.graph["outputs"] = ["out"]
    g.graph["tensors"]["out"]["kind"] = "output"
    compile_and_simulate(g, hw="pixel6", out_dir=tmp_path / "run", plots=False)
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    body = block("report-json.md", "report-schema")
    keys = {line.split(" | ")[0].strip("| `") for line in body.splitlines() if line.startswith("| `")}
    assert set(report) <= keys, set(report) - keys
    assert set(report["ops"][0]) | set(report["buffers"][0]) | set(report["stage_seconds"]) <= keys
    assert set(report["floor_cycles"]) <= keys, set(report["floor_cycles"]) - keys
    assert set(report["scheduler_stats"]) <= keys, set(report["scheduler_stats"]) - keys


def test_a_report_field_without_a_comment_stops_the_rendering(generator):
    pages = generator("reference_pages")

    @dataclass
    class Documented:
        kept: int  #: a documented field
        #: documented above
        also: str
        hidden: int = 0

        _NOT_IN_JSON = ("hidden",)

    assert [(name, meaning) for name, _, meaning in pages.report_fields(Documented)] == [
        ("kept", "a documented field"), ("also", "documented above")]

    @dataclass
    class Undocumented:
        kept: int  #: a documented field
        forgotten: int

    with pytest.raises(ValueError, match="Undocumented.forgotten has no #: comment"):
        pages.report_fields(Undocumented)


def test_a_nested_key_without_a_meaning_stops_the_rendering(generator):
    pages = generator("reference_pages")
    with pytest.raises(ValueError, match="key 'new' has no meaning"):
        pages.key_table(["name", "new"], {"name": "its name"}, "ops")

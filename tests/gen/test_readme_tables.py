"""The generated blocks of README.md and of the docs site are exactly what their sources give."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_every_page_matches_its_sources(generator):
    module = generator("readme_tables")
    for page in module.pages():
        text = page.read_text()
        assert module.render(text, page.name) == text, f"{page}: run python docs/gen/readme_tables.py"


def test_every_generated_block_is_in_exactly_one_page_and_not_empty(generator):
    module = generator("readme_tables")
    texts = {page: page.read_text() for page in module.pages()}
    for name in module.generators():
        start, end = f"<!-- table:{name} -->\n", f"<!-- /table:{name} -->"
        holders = [page for page, text in texts.items() if start in text]
        assert len(holders) == 1, f"{name}: in {holders}"
        body = texts[holders[0]].split(start, 1)[1].split(end, 1)[0]
        assert body.count("\n") >= 3, name  # a header, a rule and at least one measured row


def test_the_readme_is_a_front_door():
    """At most 200 lines, with the two quick-start commands, a screenshot and links into the docs."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert "pip install -e '.[torch]' && accelsim run resnet50 --hw pixel6" in readme
    assert "pip install -e '.[test]' && python -m pytest -q" in readme
    images = [line for line in readme.splitlines() if line.startswith("![")]
    assert len(images) == 1 and (REPO / images[0].split("](", 1)[1].rstrip(")")).is_file()
    for link in ("docs/install.md", "docs/tutorials/compile.md", "docs/reference/cli.md", "docs/results/index.md"):
        assert f"]({link})" in readme and (REPO / link).is_file(), link


def test_every_figure_kind_is_on_a_page_and_an_unknown_one_stops_the_rendering(generator):
    module = generator("readme_tables")
    used = {name for page in module.pages() for name, _, _ in module.figures(page.read_text())}
    assert used == set(module.FIGURES)
    with pytest.raises(ValueError, match="page.md: unknown figure 'nope'"):
        module.render("a <!-- figure:nope 1 -->2<!-- /figure:nope --> b", "page.md")


def test_a_stale_figure_is_rewritten_in_place_and_a_checked_one_is_left_as_typed(generator):
    module = generator("readme_tables")
    checked = "<!-- run:cycles resnet50 pixel6 sram=160KiB -->7<!-- /run -->"
    stale = f"x <!-- figure:curve 160KiB cycles -->1<!-- /figure:curve --> {checked} y"
    now = module.figure("curve", ["160KiB", "cycles"])
    assert now != "1" and module.render(stale) == stale.replace("-->1<", f"-->{now}<")
    assert module.CHECKED.findall(stale) == [("cycles", "resnet50", "pixel6", " sram=160KiB", "7")]

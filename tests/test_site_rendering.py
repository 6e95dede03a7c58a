"""The docs site shows what the code and the repository say, and renders it as meant.

The fast tests check the sources of the site: the citation file, the changelog, the repository's
address wherever it is written, the command-line examples (parsed by the program's own parser,
the cheap ones run as written), the hardware diagrams (what ``docs/gen/hardware_diagram.py`` draws
from the configs now) and the docstring dialect the API pages are rendered from
(``docs/gen/api_docstrings.py``).

The tests marked ``slow`` build the site (``mkdocs build --strict``) and read its HTML: the API
pages' parameter tables, doctests as code blocks, dataclass fields, no stray reST; the home page's
stage list and flow diagram. They need the docs extra (``pip install -e '.[docs]'``), which
``.ci/run`` installs before it runs the slow suite; without it they fail naming the extra.
"""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
URL = "https://github.com/accelsim/accelsim"


def pyproject() -> dict:
    with open(REPO / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)


# --------------------------------------------------------------------------------------------
# the repository, the citation, the changelog


def test_the_repository_address_is_the_same_everywhere():
    project = pyproject()["project"]
    assert project["urls"]["Repository"] == URL
    config = (REPO / "mkdocs.yml").read_text()
    assert re.search(r"^repo_url: (\S+)$", config, re.M).group(1) == URL
    assert yaml.safe_load((REPO / "CITATION.cff").read_text())["repository-code"] == URL
    clone = f"git clone {URL} && cd accelsim"
    assert f"{clone} && pip install -e ." in (REPO / "docs" / "install.md").read_text()
    assert clone in (REPO / "README.md").read_text() and clone in (REPO / "docs" / "index.md").read_text()


def test_no_page_installs_accelsim_from_pypi():
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    for page in pages:
        found = re.findall(r"pip install (?!-)['\"]?accelsim\b", page.read_text())
        assert not found, f"{page.relative_to(REPO)} installs accelsim from PyPI, where it is not: {found}"


def test_the_citation_file_is_valid_cff_with_the_packages_version():
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    project = pyproject()["project"]
    # CFF 1.2.0's schema: these keys are required, no other top-level key is allowed
    allowed = {"abstract", "authors", "cff-version", "commit", "contact", "date-released", "doi", "identifiers",
               "keywords", "license", "license-url", "message", "preferred-citation", "references", "repository",
               "repository-artifact", "repository-code", "title", "type", "url", "version"}
    assert {"authors", "cff-version", "message", "title"} <= set(citation) <= allowed, set(citation) - allowed
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software"
    assert citation["version"] == project["version"]
    assert citation["license"] == project["license"]["text"] == "Apache-2.0"
    assert citation["authors"] == [{"name": "accelsim developers"}]
    assert isinstance(citation["date-released"], str) and re.fullmatch(r"\d{4}-\d\d-\d\d", citation["date-released"])
    assert all(isinstance(citation[key], str) and citation[key].strip() for key in ("message", "title", "abstract"))


def test_the_changelog_keeps_a_changelog_and_is_on_the_site():
    text = (REPO / "CHANGELOG.md").read_text()
    headings = re.findall(r"^(#{1,3}) (.+)$", text, re.M)
    assert headings[0] == ("#", "Changelog")
    versions = [title for level, title in headings if level == "##"]
    assert versions[0] == "Unreleased", versions
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert f"{pyproject()['project']['version']} - {citation['date-released']}" in versions
    for title in versions[1:]:
        assert re.fullmatch(r"\d+\.\d+\.\d+ - \d{4}-\d\d-\d\d", title), title
    kinds = {title for level, title in headings if level == "###"}
    assert kinds and kinds <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, kinds
    assert (REPO / "docs" / "changelog.md").read_text().strip() == '--8<-- "CHANGELOG.md"'
    assert re.search(r"^  - Changelog: changelog\.md$", (REPO / "mkdocs.yml").read_text(), re.M)


# --------------------------------------------------------------------------------------------
# the command-line examples


def test_every_command_has_examples_that_its_parser_accepts(generator):
    import argparse

    from accelsim.cli import build_parser

    pages = generator("reference_pages")
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(pages.EXAMPLES) == set(sub.choices)
    page = (REPO / "docs" / "reference" / "cli.md").read_text()
    for name in sub.choices:
        for line, meaning in pages.checked_examples(name, parser):
            assert "\n".join(pages.shell_lines(line)) in page, line
            assert f"# {meaning}\n" in page
    saved = dict(pages.EXAMPLES)
    try:
        pages.EXAMPLES["gen"] = (("accelsim gen random many out.csv", "not a number of buffers"),)
        with pytest.raises(ValueError, match="does not parse"):
            pages.checked_examples("gen", parser)
        pages.EXAMPLES["gen"] = (("accelsim configs", "filed under the wrong command"),)
        with pytest.raises(ValueError, match="filed under accelsim gen"):
            pages.checked_examples("gen", parser)
        del pages.EXAMPLES["gen"]
        with pytest.raises(ValueError, match="accelsim gen has no usage examples"):
            pages.cli_reference()
    finally:
        pages.EXAMPLES.clear()
        pages.EXAMPLES.update(saved)


def run_example(line: str, folder: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the example ``line`` as written, with the ``accelsim`` of this interpreter, in ``folder`` (where
    ``benchmarks`` is the repository's)."""
    if not (folder / "benchmarks").exists():
        (folder / "benchmarks").symlink_to(REPO / "benchmarks")
    words = line.split()
    assert words[0] == "accelsim"
    return subprocess.run([sys.executable, "-m", "accelsim", *words[1:]], cwd=folder, capture_output=True, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS="1", **(env or {})), timeout=600)


#: the cheap examples of the command-line page, run as written, and their exit status
CHEAP_EXAMPLES = {
    "accelsim models": 0,
    "accelsim configs": 0,
    "accelsim configs --fields": 0,
    "accelsim alloc --methods": 0,
    "accelsim alloc benchmarks/minimalloc/examples/input.12.csv --capacity 12 --output placed.csv": 0,
    "accelsim alloc benchmarks/minimalloc/examples/input.12.csv --capacity 8 --explain why.csv": 1,
    "accelsim gen random 1000 random-1000.csv --seed 1": 0,
    "accelsim gen full-overlap 64 full-overlap-64.csv --alignment 32": 0,
}


def test_the_cheap_examples_run_as_written(generator, tmp_path):
    documented = {line for examples in generator("reference_pages").EXAMPLES.values() for line, _ in examples}
    for line, status in CHEAP_EXAMPLES.items():
        assert line in documented, f"{line!r} is no longer an example on the command-line page"
        done = run_example(line, tmp_path)
        assert done.returncode == status, f"{line}: exit {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    assert (tmp_path / "placed.csv").read_text().splitlines()[0].split(",")[-1] == "offset"
    assert len((tmp_path / "why.csv").read_text().splitlines()) > 1
    assert len((tmp_path / "random-1000.csv").read_text().splitlines()) == 1 + 1000
    assert len((tmp_path / "full-overlap-64.csv").read_text().splitlines()) == 1 + 64


@pytest.mark.torch
def test_the_no_plots_example_writes_the_page_and_the_json_files(generator, tmp_path):
    line = "accelsim run resnet18 --hw pixel6 --no-plots --out r18 --buffers r18-buffers.csv"
    examples = dict(generator("reference_pages").EXAMPLES["run"])
    assert "report.html, report.json and trace.json without the SVG pictures" in examples[line]
    done = run_example(line, tmp_path, {"ACCELSIM_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(path.name for path in (tmp_path / "r18").iterdir()) == ["report.html", "report.json", "trace.json"]
    assert (tmp_path / "r18-buffers.csv").read_text().startswith("id,lower,upper,size")


# --------------------------------------------------------------------------------------------
# the hardware diagrams


def test_the_hardware_diagrams_are_what_their_generator_draws_from_the_configs(generator):
    from accelsim.hw import list_configs, load_hw
    from accelsim.units import format_bandwidth, format_bytes

    drawn = generator("hardware_diagram").diagrams()
    assert sorted(path.name for path in drawn) == sorted(f"hardware-{name}.svg" for name in list_configs())
    for path, svg in drawn.items():
        assert path.is_file() and path.read_text(encoding="utf-8") == svg, \
            f"{path.name} is stale: run python docs/gen/hardware_diagram.py"
        hw = load_hw(path.stem.removeprefix("hardware-"))
        words = {element.text for element in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")}
        assert {format_bytes(hw.dram_bytes), format_bandwidth(hw.dram_bandwidth_bytes_per_s),
                f"{hw.dma.channels} channels", f"DMA {hw.dma.channels}"} <= words, path.name
        assert any(format_bytes(hw.sram_bytes_per_pe) in word for word in words), path.name
        assert any(f"{hw.compute.peak_macs_per_cycle:,} MACs per cycle" in word for word in words), path.name
        for page in ("docs/reference/hardware.md", "docs/index.md"):
            assert f"img/{path.name})" in (REPO / page).read_text(), f"{page} does not show {path.name}"


def test_a_diagram_follows_its_config(generator, monkeypatch):
    import accelsim.hw

    pages = generator("hardware_diagram")
    before = pages.diagram("pixel6")
    original = accelsim.hw.load_hw
    monkeypatch.setattr(accelsim.hw, "load_hw", lambda name: original(name, {"dma.channels": 3, "n_pe": 4}))
    after = pages.diagram("pixel6")
    assert "DMA 3" in after and "3 channels" in after and "DMA 3" not in before
    assert "4 PEs, one program" in after and "16 PEs, one program" in before


# --------------------------------------------------------------------------------------------
# the docstring dialect of the API pages


def test_a_numpy_section_ends_where_its_items_do_and_prose_follows(generator):
    dialect = generator("api_docstrings")
    text = ("Place it.\n\nParameters\n----------\nproblem : the buffers\n    and the capacity.\nmethod:\n"
            "    a name.\nNote: not a parameter.\n\nNote: prose, not a parameter.\n\n>>> solve(p).status\n'solved'\n")
    assert dialect.markdown_docstring(text, names=["problem", "method"], repository=URL).split("\n") == [
        "Place it.", "", "Parameters:", "    problem: the buffers", "        and the capacity.",
        "    method: a name.", "        Note: not a parameter.", "", "Note: prose, not a parameter.", "",
        "```pycon", ">>> solve(p).status", "'solved'", "```"]


def test_returns_and_raises_sections_become_google_sections(generator):
    dialect = generator("api_docstrings")
    text = ("Trace.\n\nParameters\n----------\na, b:\n    two inputs.\n\nReturns\n-------\nnetworkx.DiGraph\n"
            "    the graph.\n\nRaises\n------\nTraceError\n    cannot trace.\nValueError\n    bad method.\n\nMore.")
    assert dialect.markdown_docstring(text, names=["a", "b"], repository=URL).split("\n") == [
        "Trace.", "", "Parameters:", "    a: two inputs.", "    b: two inputs.", "", "Returns:",
        "    (networkx.DiGraph): the graph.", "", "Raises:", "    TraceError: cannot trace.",
        "    ValueError: bad method.", "", "More."]
    prose = "Run.\n\nRaises\n------\nValueError subclasses for bad input\n``CapacityError`` below M_R."
    assert dialect.markdown_docstring(prose, repository=URL).split("\n") == [
        "Run.", "", "**Raises:**", "", "ValueError subclasses for bad input", "``CapacityError`` below M_R."]


def test_rest_literals_and_repository_files_become_markdown(generator):
    dialect = generator("api_docstrings")
    text = ("The surface::\n\n    from allocator import solve\n\nSee ARCHITECTURE.md, ``ARCHITECTURE.md``,"
            " [the map](ARCHITECTURE.md) and NOWHERE.md.")
    assert dialect.markdown_docstring(text, repository=URL).split("\n") == [
        "The surface:", "", "    from allocator import solve", "",
        f"See [ARCHITECTURE.md]({URL}/blob/main/ARCHITECTURE.md), ``ARCHITECTURE.md``, [the map](ARCHITECTURE.md) "
        "and NOWHERE.md."]
    assert dialect.repository_url() == URL


def test_the_doctests_of_the_site_generators_pass(generator, monkeypatch):
    import doctest

    for name in ("api_docstrings", "reference_pages"):
        module = generator(name)
        # loaded by file: doctest finds a function's tests through sys.modules, which may hold another copy
        # (readme_tables imports reference_pages by name)
        monkeypatch.setitem(sys.modules, name, module)
        runner = doctest.DocTestRunner()
        for test in doctest.DocTestFinder().find(module, name, module=module):
            runner.run(test)
        result = runner.summarize(verbose=False)
        assert result.attempted and not result.failed, name


def test_field_comments_become_field_docstrings(generator):
    dialect = generator("api_docstrings")
    source = ["class C:", "    a: int  #: on its line", "    #: above it,", "    #: in two lines", "    b: str",
              "    c: int = 0", "    #: a comment of the next field", "    d: int  # not a field comment"]
    assert dialect.field_comment(source, 2, 2) == "on its line"
    assert dialect.field_comment(source, 5, 5) == "above it, in two lines"
    assert dialect.field_comment(source, 6, 6) is None
    assert dialect.field_comment(source, 8, 8) == "a comment of the next field"


# --------------------------------------------------------------------------------------------
# the built site (slow: needs the docs extra)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site as ``mkdocs build --strict`` builds it from this checkout."""
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings_handlers") is None:
        pytest.fail("building the docs site needs the docs extra: pip install -e '.[docs]'", pytrace=False)
    folder = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)], cwd=REPO,
                          capture_output=True, text=True, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"), timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    return folder


def page(site: Path, name: str) -> str:
    """The article of a built page (its content, without the navigation)."""
    text = (site / name / "index.html").read_text(encoding="utf-8")
    return text[text.index("<article"):text.index("</article>")]


def visible_text(markup: str) -> str:
    """The text of ``markup`` outside code blocks and code spans, tags removed."""
    markup = re.sub(r"<pre.*?</pre>|<code.*?</code>", " ", markup, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", markup))


def doc_object(article: str, identifier: str) -> str:
    """The HTML of one documented object, from its heading to the next object's."""
    start = article.index(f'id="{identifier}"')
    end = article.find('<div class="doc doc-object', start)
    return article[start:end if end >= 0 else len(article)]


API_PAGES = ("reference/api/allocator", "reference/api/scheduler", "reference/api/frontend", "reference/api/accelsim")


@pytest.mark.slow
def test_the_api_pages_render_sections_doctests_and_fields(site):
    allocator = page(site, "reference/api/allocator")
    solve = doc_object(allocator, "allocator.solve")
    table = solve[solve.index("<table"):solve.index("</table>")]
    for name in ("problem", "method", "timeout", "options", "fields"):
        assert f"<code>{name}</code>" in table, name
    assert "the buffers and the capacity" in visible_text(table)
    assert '<span class="gp">&gt;&gt;&gt; </span>' in solve and "<blockquote>" not in solve
    buffer = allocator[allocator.index('id="allocator.Buffer"'):allocator.index('id="allocator.Problem"')]
    for field, meaning in (("id", "unique name within a problem"), ("start", "first logical timestep"),
                           ("end", "exclusive"), ("size", "bytes"), ("alignment", "multiple of this"),
                           ("offset", "pre-assigned")):
        entry = doc_object(buffer, f"allocator.Buffer.{field}")
        assert meaning in visible_text(entry), field
    assert f'<a href="{URL}/blob/main/ARCHITECTURE.md">ARCHITECTURE.md</a>' in allocator
    prompts = 0
    for name in API_PAGES:
        article = page(site, name)
        text = visible_text(article)
        assert "&gt;&gt;&gt;" not in re.sub(r"<pre.*?</pre>", "", article, flags=re.S), name
        assert "<blockquote>" not in article and ">>>" not in text, name
        assert "::" not in text, f"{name}: {text[max(0, text.find('::') - 80):text.find('::') + 20]}"
        assert not re.search(r"^\s*-{4,}\s*$", text, re.M), f"{name} shows a numpy section's dashes"
        prompts += len(re.findall(r'<pre><span></span><code><span class="gp">&gt;&gt;&gt; ', article))
    assert prompts >= 16  # every doctest on the API pages is a code block (the issue counted 16)
    pipeline = doc_object(page(site, "reference/api/accelsim"), "accelsim.pipeline.compile_and_simulate")
    assert "<code>model_or_name</code>" in pipeline and "<code>plots</code>" in pipeline


@pytest.mark.slow
def test_the_home_page_shows_every_stage_and_the_whole_flow(site):
    home = page(site, "")
    stages = re.findall(r"<li>\s*(?:<p>)?<strong>(\w+)</strong>", home)
    assert stages == ["frontend", "scheduler", "allocator", "accelsim"], stages
    flow = re.search(r"<pre>.*?</pre>", home, re.S).group(0)
    lines = html.unescape(re.sub(r"<[^>]+>", "", flow)).splitlines()
    assert "SimReport" in lines[-1] and any("allocator" in line for line in lines)
    for block in re.findall(r"<pre>.*?</pre>", home, re.S):
        for line in html.unescape(re.sub(r"<[^>]+>", "", block)).splitlines():
            assert len(line) <= 80, f"a code line of the home page is cut on a narrow screen: {line!r}"
    for name in ("hardware-pixel6.svg", "hardware-tpuv4.svg"):
        assert f'src="img/{name}"' in home and (site / "img" / name).is_file()


@pytest.mark.slow
def test_the_cli_page_has_examples_and_the_changelog_is_a_page(site):
    cli = page(site, "reference/cli")
    assert cli.count("<strong>Examples</strong>") == len(re.findall(r'<h2 id="accelsim-', cli)) >= 8
    changelog = page(site, "changelog")
    assert "Unreleased" in visible_text(changelog) and "Added" in visible_text(changelog)

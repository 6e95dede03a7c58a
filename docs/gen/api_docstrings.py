"""The docstrings of the Python API pages, as the code writes them, made into what mkdocstrings renders.

A griffe extension (``mkdocs.yml`` loads it: ``extensions: [docs/gen/api_docstrings.py:DocstringDialect]``).
The code's docstrings are written for ``help()`` and for doctest, in a dialect no docstring parser
reads as a whole; this module rewrites each one, as the site reads it, into Google style, the
style ``mkdocs.yml`` configures. The source is never changed:

* **Sections with numpy headers** (``Parameters``, ``Returns``, ``Raises``, ... over a line of
  dashes) whose items are ``name:`` or ``name : text`` with the description indented below
  (the types are in the signature, so the text after ``name :`` is the description, never a
  type), and ``Type`` alone on a line for ``Returns`` and ``Raises``. Prose goes on after a
  section: it ends at a blank line followed by a line that is not one of its items. Numpydoc
  has no end to a section but the next header, so griffe's numpy parser would swallow that
  prose (and the doctests after it) into the last item; each section becomes a Google section
  (``Parameters:`` with its items indented), which ends where its indentation does. A section
  whose first line is not an item (prose under a header) keeps its prose under a bold title.
* **Doctests** (``>>>`` lines and their output, up to a blank line) anywhere in the text become
  fenced ``pycon`` code blocks: Markdown reads ``>>>`` as three nested quotes.
* **reST's ``::``** closing a paragraph before an indented literal block becomes ``:`` (the block is
  already a Markdown code block).
* **``#:`` comments** documenting a class's fields (on the field's line, or the comment lines just
  above it, as Sphinx reads them and ``docs/gen/reference_pages.py`` reads ``SimReport``'s) become
  the fields' docstrings, so a dataclass's fields are listed with their meaning.
* **A repository file that is not a page** (``ARCHITECTURE.md``) named in the text becomes a link to
  it in the repository (``[project.urls] Repository`` in pyproject.toml).
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import griffe
try:
    from griffe import Extension
except ImportError:  # the docs extra is not installed: the text functions still work (the tests call them)
    Extension = object  # type: ignore[misc,assignment]

REPO = Path(__file__).resolve().parents[2]

#: numpy section titles (lower case) -> the Google section title; ``named``: items are ``name:`` lines,
#: else a type alone on a line
SECTIONS = {"parameters": ("Parameters", True), "other parameters": ("Other Parameters", True),
            "attributes": ("Attributes", True), "returns": ("Returns", False), "yields": ("Yields", False),
            "raises": ("Raises", False), "warns": ("Warns", False)}
#: ``name:``, ``name : text``, ``a, b, c:`` (names of parameters or fields)
NAMES_ITEM = re.compile(r"^(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*:(?:\s+(.*))?$")
#: a type alone on a line: ``Schedule``, ``networkx.DiGraph``, ``list[str]``
TYPE_ITEM = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\[[\w., |\[\]]*\])?$")
DOCTEST_FLAG = re.compile(r"\s*#\s*doctest:.*$")
#: a path ending in .md outside code spans and links: a repository file when it exists and is not a page
MARKDOWN_FILE = re.compile(r"(?<![\w/.\[`-])(?<!\]\()((?:[\w-]+/)*[\w-]+\.md)\b(?!\])")


def repository_url() -> str:
    """The project's repository (pyproject.toml, ``[project.urls] Repository``)."""
    with open(REPO / "pyproject.toml", "rb") as handle:
        return str(tomllib.load(handle)["project"]["urls"]["Repository"])


def is_section_header(lines: list[str], index: int) -> bool:
    """Line ``index`` is a known numpy section title at the left margin, over a line of dashes."""
    title = lines[index]
    return (index + 1 < len(lines) and title.strip().lower() in SECTIONS and not title[:1].isspace()
            and set(lines[index + 1].strip()) == {"-"})


def is_item(line: str, named: bool, names: set[str] | None) -> bool:
    """``line`` (at the left margin) opens an item of a section: a parameter's or field's name (one of
    ``names`` when they are known: a prose line such as ``Note: ...`` is not an item), or a type."""
    if not named:
        return bool(TYPE_ITEM.match(line))
    match = NAMES_ITEM.match(line)
    if match is None:
        return False
    return names is None or all(name.strip().lstrip("*") in names for name in match.group(1).split(","))


def dedented(lines: list[str]) -> list[str]:
    """``lines`` less the common indentation of their indented lines (a line at the margin, a lazy
    continuation, stays at the margin; blank lines blank).

    >>> dedented(["    a", "      b", "c", ""])
    ['a', '  b', 'c', '']
    """
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip() and line[:1].isspace()]
    cut = min(indents, default=0)
    return [line[cut:] if line[:cut].isspace() else line.lstrip() for line in lines]


def read_section(lines: list[str], start: int, named: bool,
                 names: set[str] | None) -> tuple[list[tuple[str, list[str]]], int]:
    """The items of the section whose body starts at line ``start`` (``(header, description lines)``)
    and the index of the first line after it. No items: the body is prose, not a list."""
    items: list[tuple[str, list[str]]] = []
    index = start
    while index < len(lines):
        line = lines[index]
        if is_section_header(lines, index):
            break
        if not line.strip():
            if items:
                items[-1][1].append("")
        elif line[:1].isspace() or (items and lines[index - 1].strip() and not is_item(line, named, names)):
            if not items:
                break
            items[-1][1].append(line)  # indented, or a lazy continuation of the line above
        elif is_item(line, named, names):
            items.append((line, []))
        else:
            break
        index += 1
    while index > start and not lines[index - 1].strip():
        index -= 1  # the blank lines after the section separate it from the prose
    return items, index


def google_section(title: str, named: bool, items: list[tuple[str, list[str]]]) -> list[str]:
    """The section as Google style: ``Title:``, then each item indented, its description indented more."""
    out = [f"{title}:"]
    for header, more in items:
        description = dedented(more)
        while description and not description[-1]:
            description.pop()
        if named:
            match = NAMES_ITEM.match(header)
            assert match is not None
            names = [name.strip().lstrip("*") for name in match.group(1).split(",")]
            first = match.group(2) or ""
        else:
            names = [header.strip() if title.lower() in ("raises", "warns") else f"({header.strip()})"]
            first = ""
        if not first and description:
            first, description = description[0], description[1:]
        body = fence_doctests(description)
        for name in names:
            out.append(f"    {name}: {first}".rstrip())
            out += [f"        {line}" if line else "" for line in body]
    return out


def convert_sections(lines: list[str], names: set[str] | None) -> list[str]:
    """Every numpy-headed section of ``lines`` as a Google section; the rest as it is."""
    out: list[str] = []
    index = 0
    while index < len(lines):
        if not is_section_header(lines, index):
            out.append(lines[index])
            index += 1
            continue
        title, named = SECTIONS[lines[index].strip().lower()]
        items, end = read_section(lines, index + 2, named, names if named and title == "Parameters" else None)
        if out and out[-1].strip():
            out.append("")  # a Google section needs a blank line above it
        if items:
            out += google_section(title, named, items)
        else:  # prose under a header: the prose, under the title in bold
            out += [f"**{title}:**", ""]
            end = index + 2
        index = end
    return out


def fence_doctests(lines: list[str]) -> list[str]:
    """Each doctest at the left margin (``>>>`` lines with their output, to a blank line) as a fenced
    ``pycon`` block, with a blank line around it; code already fenced is left alone."""
    out: list[str] = []
    fenced = False
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or not (line.startswith(">>> ") or line == ">>>"):
            out.append(line)
            index += 1
            continue
        block = []
        while index < len(lines) and lines[index].strip():
            block.append(DOCTEST_FLAG.sub("", lines[index]).replace("<BLANKLINE>", ""))
            index += 1
        if out and out[-1].strip():
            out.append("")
        out += ["```pycon", *block, "```", ""]
    return out


def literal_markers(lines: list[str]) -> list[str]:
    """reST's ``::`` before an indented literal block: ``text::`` becomes ``text:``, a lone ``::`` goes."""
    out: list[str] = []
    for index, line in enumerate(lines):
        following = next((other for other in lines[index + 1:] if other.strip()), "")
        indent = len(line) - len(line.lstrip())
        if line.rstrip().endswith("::") and len(following) - len(following.lstrip()) > indent:
            if line.strip() == "::":
                continue
            line = line.rstrip()[:-1]
        out.append(line)
    return out


def link_repository_files(text: str, repository: str) -> str:
    """Each repository file named in ``text`` outside code spans (``ARCHITECTURE.md``), when it exists and
    is not a page of the site, as a Markdown link to it in ``repository``."""
    def link(match: re.Match[str]) -> str:
        path = match.group(1)
        if not (REPO / path).is_file() or path.startswith("docs/"):
            return path
        return f"[{path}]({repository}/blob/main/{path})"

    parts = re.split(r"(`+[^`]*`+)", text)
    return "".join(part if part.startswith("`") else MARKDOWN_FILE.sub(link, part) for part in parts)


def markdown_docstring(text: str, names: Iterable[str] | None = None, repository: str | None = None) -> str:
    """``text``, a docstring in the code's dialect, as a Google-style docstring whose prose is Markdown.
    ``names``: the parameters of the function it documents (items of its ``Parameters`` section).

    >>> text = markdown_docstring("Add.\\n\\nParameters\\n----------\\nx : the first.\\n\\nMore::\\n\\n"
    ...                           "    code\\n\\n>>> 1 + 1\\n2", names=["x"], repository="https://host/r")
    >>> text.splitlines()[:8]
    ['Add.', '', 'Parameters:', '    x: the first.', '', 'More:', '', '    code']
    >>> text.splitlines()[8:]
    ['', '```pycon', '>>> 1 + 1', '2', '```']
    """
    lines = convert_sections(text.split("\n"), None if names is None else set(names))
    lines = literal_markers(fence_doctests(lines))
    while lines and not lines[-1].strip():
        lines.pop()
    return link_repository_files("\n".join(lines), repository or repository_url())


def field_comment(source: list[str], lineno: int, endlineno: int) -> str | None:
    """The ``#:`` comment of the field on lines ``lineno``..``endlineno`` (1-based) of ``source``: the
    comment lines just above it, then the one at the end of its line, joined; None without one."""
    above: list[str] = []
    line = lineno - 2
    while line >= 0 and source[line].lstrip().startswith("#:"):
        above.insert(0, source[line].lstrip()[2:].strip())
        line -= 1
    trailing = []
    for text in source[lineno - 1:endlineno]:
        comment = text.find("  #:")
        if comment >= 0:
            trailing.append(text[comment + 4:].strip())
    return " ".join(above + trailing) or None


class DocstringDialect(Extension):
    """Rewrites every docstring as the site reads it (``markdown_docstring``) and gives each class field
    documented by a ``#:`` comment that comment as its docstring."""

    def __init__(self) -> None:
        super().__init__()
        self.repository = repository_url()

    def on_instance(self, *, node: ast.AST | griffe.ObjectNode, obj: griffe.Object, agent: Any,
                    **kwargs: Any) -> None:
        import griffe

        if isinstance(obj, griffe.Attribute) and obj.docstring is None and obj.parent is not None \
                and obj.parent.is_class and obj.lineno is not None and isinstance(obj.filepath, Path):
            comment = field_comment(obj.lines_collection[obj.filepath], obj.lineno, obj.endlineno or obj.lineno)
            if comment:
                obj.docstring = griffe.Docstring(comment, lineno=obj.lineno, parent=obj,
                                                 parser=agent.docstring_parser,
                                                 parser_options=agent.docstring_options)
        if obj.docstring is not None:
            names = [parameter.name for parameter in obj.parameters] if isinstance(obj, griffe.Function) else None
            obj.docstring.value = markdown_docstring(obj.docstring.value, names, self.repository)

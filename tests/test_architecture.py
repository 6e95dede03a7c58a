"""The layout's rules (ARCHITECTURE.md), read from the sources with ``ast``, so that a change
that breaks one fails here, naming the modules:

* the packages depend in one direction: ``allocator`` on none of ours, ``scheduler`` on
  ``allocator`` only, ``frontend`` on none of ours, ``accelsim`` on all three;
* inside ``allocator``, the rooms depend in one direction too: ``core`` (the problem, its
  checks, the registry) on no other room, ``methods`` on ``core``, ``search`` on both;
* no import cycle between modules, counting every import statement (also those inside
  functions and under ``TYPE_CHECKING``: a cycle there is still two modules that each need
  the other to be read);
* no function is longer than 120 lines, but the two compiled search kernels;
* no module imports another module's private names (``from x import _y``); a private module
  (``frontend/_something.py``) is imported only from its own package.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("allocator", "scheduler", "frontend", "accelsim")
#: which of our packages each package may import (DESIGN.md's direction)
ALLOWED = {"allocator": set(), "scheduler": {"allocator"}, "frontend": set(),
           "accelsim": {"allocator", "scheduler", "frontend", "hw_configs"}}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The module of ours that ``name`` (a dotted import) reads, or None for another library."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports() -> dict[str, list[tuple[str, str, int]]]:
    """Per module: (module of ours it imports, name imported from it or "", line), every statement."""
    found: dict[str, list[tuple[str, str, int]]] = {}
    for module, path in MODULES.items():
        rows = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if (target := _resolve(alias.name)) is not None:
                        rows.append((target, "", node.lineno))
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    submodule = f"{node.module}.{alias.name}"
                    target = submodule if submodule in MODULES else _resolve(node.module)
                    if target is not None:
                        rows.append((target, "" if target == submodule else alias.name, node.lineno))
        found[module] = rows
    return found


def test_there_are_modules_to_check():
    assert {"allocator.core.problem", "scheduler.schedule", "frontend.graph", "accelsim.pipeline"} <= set(MODULES)


def test_packages_depend_in_one_direction():
    offenders = []
    for module, rows in imports().items():
        package = module.split(".")[0]
        for target, _, line in rows:
            other = target.split(".")[0]
            if other != package and other not in ALLOWED[package]:
                offenders.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}")
    assert not offenders, "; ".join(offenders)


#: the allocator's rooms (ARCHITECTURE.md): which rooms each may import; the registry in ``core``
#: names the methods by "module:function" strings, imported when a method first runs
ROOMS = {"allocator.core": {"allocator.core"},
         "allocator.methods": {"allocator.core", "allocator.methods"},
         "allocator.search": {"allocator.core", "allocator.methods", "allocator.search"}}


def _room(module: str) -> str | None:
    return next((room for room in ROOMS if module == room or module.startswith(room + ".")), None)


def test_allocator_rooms_depend_in_one_direction():
    assert {"allocator.core.problem", "allocator.methods.minimalloc", "allocator.search.anytime"} <= set(MODULES)
    loose = [m for m in MODULES if m.startswith("allocator.") and _room(m) is None]
    assert not loose, f"allocator modules outside core/, methods/ and search/: {loose}"
    offenders = []
    for module, rows in imports().items():
        room = _room(module)
        for target, _, line in rows:
            if room is not None and target.startswith("allocator") and _room(target) not in ROOMS[room]:
                offenders.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}")
    assert not offenders, "; ".join(offenders)


def test_no_import_cycle():
    graph = {module: {t for t, _, _ in rows if t != module} for module, rows in imports().items()}
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            raise AssertionError("import cycle: " + " -> ".join(cycle))


def test_no_private_name_is_imported_across_modules():
    offenders = []
    for module, rows in imports().items():
        for target, name, line in rows:
            where = f"{MODULES[module].relative_to(ROOT)}:{line}"
            if name.startswith("_") and target != module:
                offenders.append(f"{where} imports {name} from {target}")
            private_module = target.rpartition(".")[2].startswith("_") and target.rpartition(".")[2] != "__init__"
            if private_module and target.rpartition(".")[0] != module.rpartition(".")[0]:
                offenders.append(f"{where} imports the private module {target} from outside its package")
    assert not offenders, "; ".join(offenders)


#: the two compiled search kernels, whose hot phases stay in one loop: as helpers they cost
#: numba speed (each function's docstring says how much); every other function fits a reader
LONG_FUNCTIONS_ALLOWED = {"allocator.methods.minimalloc_kernel.search", "allocator.methods.telamalloc_kernel.search"}
MAX_FUNCTION_LINES = 120


def test_no_function_is_longer_than_a_reader_holds():
    long = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES and f"{module}.{node.name}" not in LONG_FUNCTIONS_ALLOWED:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "; ".join(long)


# ---- each concept in one room: names are compared only where they are registered

#: the scheduler names; a literal spelling one of them may be compared only in the scheduler's
#: registry (and its operator orders, whose names "program" and "min-peak" coincide, in scheduler/order.py)
SCHEDULER_NAMES = {"program", "min-peak", "cosma", "cosma-fs", "cosma-dnc"}
NAME_ROOMS = {"scheduler.registry", "scheduler.order"}


def _compared_literals(node: ast.AST) -> list[str]:
    """String literals ``node`` compares something with: ``x == "a"``, ``x in ("a", "b")``, ``x.startswith("a")``."""
    found: list[str] = []
    if isinstance(node, ast.Compare):
        for part in [node.left, *node.comparators]:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                found.append(part.value)
            elif isinstance(part, ast.Tuple | ast.List | ast.Set):
                found += [e.value for e in part.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("startswith",
                                                                                                    "endswith"):
        for arg in node.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append(arg.value)
            elif isinstance(arg, ast.Tuple):
                found += [e.value for e in arg.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return found


def test_no_scheduler_name_is_compared_outside_the_scheduler_registry():
    assert {"scheduler.registry", "scheduler.order"} <= set(MODULES)
    offenders = []
    for module, path in MODULES.items():
        if module in NAME_ROOMS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = [text for text in _compared_literals(node) if text in SCHEDULER_NAMES]
            if named:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} compares {named[0]!r}")
    assert not offenders, ("ask scheduler.registry what a scheduler can do instead of comparing its name: "
                           + "; ".join(offenders))


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of ``tree``'s module, classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def test_the_scheduler_names_no_allocator_method():
    import allocator

    methods = set(allocator.METHODS)
    assert {"auto", "best-fit", "minimalloc"} <= methods
    offenders = []
    for module, path in MODULES.items():
        if not module.startswith("scheduler"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in methods and id(node) not in docs:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} names {node.value!r}")
    assert not offenders, ("the allocator owns what its methods are (allocator.core.defaults, a method's "
                           "METHODS entry): " + "; ".join(offenders))


#: an issue number in code, a comment or a docstring: history lives in git, not in the code
ISSUE_NUMBER = re.compile(r"\bissues?\s*#?\s*\d+\b", re.IGNORECASE)


def test_package_code_carries_no_issue_number():
    offenders = []
    for path in MODULES.values():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if ISSUE_NUMBER.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}")
    assert not offenders, "history lives in git: " + "; ".join(offenders)

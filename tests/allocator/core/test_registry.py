"""The registry: a table of methods, imported on first use, that declare what they can do.

The import checks read the sources (``ast``), so they pin the structure itself: the
package's modules import one another without a cycle, neither the package nor ``registry``
imports a method (nor numba or OR-Tools) when loaded, and no module imports another's
private names. ``test_options.py`` checks the same in a fresh interpreter.
"""

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import allocator
from allocator import (
    METHODS,
    Buffer,
    InvalidProblemError,
    InvalidSolutionError,
    Problem,
    minimize,
    solve,
    validate,
)
from allocator.core.options import NoOptions
from allocator.core.registry import (
    BUILT_IN,
    Capabilities,
    MethodEntry,
    MethodOutput,
    MinimizeRequest,
    Roles,
    fallback_heuristic,
    fit_stages,
    minimize_stages,
    register,
    starting_heuristics,
)

PACKAGE = Path(allocator.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULE_PATHS = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def module_level_imports() -> dict[str, list[tuple[str, list[str]]]]:
    """Per module of the package, the ``(module, names)`` of each import it runs when loaded
    (statements at module level; imports inside functions run later and cannot make a cycle
    at load time). ``from allocator.core import x`` names the submodule ``allocator.core.x``
    when there is one, else the package ``allocator.core`` with the name."""
    imports: dict[str, list[tuple[str, list[str]]]] = {}
    for module, path in MODULE_PATHS.items():
        found: list[tuple[str, list[str]]] = []
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                found += [(alias.name, []) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = []
                for alias in node.names:
                    if f"{node.module}.{alias.name}" in MODULE_PATHS:
                        found.append((f"{node.module}.{alias.name}", []))
                    else:
                        names.append(alias.name)
                if names:
                    found.append((node.module, names))
        imports[module] = found
    return imports


def import_graph() -> dict[str, set[str]]:
    return {module: {target for target, _ in found if target == "allocator" or target.startswith("allocator.")}
            for module, found in module_level_imports().items()}


def method_modules() -> set[str]:
    """The modules that define the built-in methods, as the registry's table names them."""
    return {entry.module for entry in BUILT_IN}


def loaded_by(module: str, graph: dict[str, set[str]]) -> set[str]:
    """Every module of the package that loading ``module`` loads (module-level imports, followed)."""
    seen, todo = set(), [module]
    while todo:
        here = todo.pop()
        if here not in seen:
            seen.add(here)
            todo += sorted(graph.get(here, ()))
    return seen


def test_neither_the_registry_nor_the_package_imports_a_method_when_loaded():
    methods = method_modules()
    assert {"allocator.methods.greedy", "allocator.methods.minimalloc", "allocator.search.portfolio",
            "allocator.methods.exact"} <= methods
    graph = import_graph()
    assert not loaded_by("allocator", graph) & methods
    assert not loaded_by("allocator.core.registry", graph) & methods


def test_no_module_the_package_loads_imports_numba_or_ortools_at_module_level():
    imports = module_level_imports()
    loaded = loaded_by("allocator", import_graph())
    heavy = [f"{module} imports {target}" for module in sorted(loaded) for target, _ in imports.get(module, [])
             if target.split(".")[0] in ("numba", "ortools", "pandas", "torch")]
    assert heavy == []


def test_no_method_module_registers_itself():
    # the table is the one list of built-in methods; a decorator too would register a method twice
    for path in PACKAGE.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            decorators = node.decorator_list if isinstance(node, ast.FunctionDef) else []
            names = [d.func.id for d in decorators if isinstance(d, ast.Call) and isinstance(d.func, ast.Name)]
            assert "register" not in names, f"{path.name}: {node.name}"


def test_no_module_imports_another_modules_private_names():
    offenders = []
    for module, found in module_level_imports().items():
        for target, names in found:
            private = [n for n in names if n.startswith("_")]
            if target.startswith("allocator") and private:
                offenders.append(f"{module} imports {', '.join(private)} from {target}")
    assert offenders == []


def test_importing_any_module_first_registers_every_method():
    # a fresh interpreter: python runs the package's __init__ before the submodule
    code = ("import allocator.core.registry as r, allocator.search.portfolio, allocator.methods.greedy; "
            "print(','.join(sorted(r.METHODS)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().split(",") == sorted(METHODS)


def test_capabilities_as_declared():
    capabilities = {name: entry.capabilities for name, entry in METHODS.items()}
    assert {name for name, c in capabilities.items() if c.exact} == {"minimalloc", "cpsat", "mip", "auto"}
    assert {name for name, c in capabilities.items() if c.needs_capacity} == {"minimalloc"}
    assert {name for name, c in capabilities.items() if c.anytime} == {"minimalloc", "telamalloc", "telamalloc-learned",
                                                                        "auto"}
    assert {name for name, c in capabilities.items() if c.node_limit} == {"minimalloc", "auto"}
    assert METHODS["minimalloc"].capabilities.labels() == ("exact", "needs capacity", "anytime", "node limit")
    assert METHODS["greedy-by-size"].capabilities == Capabilities()


def test_the_portfolios_read_their_members_and_orders_from_the_table():
    assert fit_stages() == ("best-fit", "greedy-by-size", "load-best-fit", "minimalloc")
    assert minimize_stages() == ("load-best-fit", "greedy-by-size", "best-fit")
    assert starting_heuristics() == ("greedy-by-size", "telamalloc-heuristic", "load-best-fit", "best-fit",
                                     "first-fit")
    assert fallback_heuristic() == "greedy-by-size"


def test_each_order_gives_each_place_once_and_the_exact_stage_takes_autos_record():
    for place in ("fit", "minimize", "start"):
        ranks = sorted(getattr(e.roles, place) for e in METHODS.values() if getattr(e.roles, place) is not None)
        assert ranks == list(range(len(ranks))), place
    *heuristics, exact = fit_stages()
    assert METHODS[exact].capabilities.exact and METHODS[exact].options is METHODS["auto"].options
    assert set(minimize_stages()) == set(heuristics)
    assert fallback_heuristic() == starting_heuristics()[0]
    # the composing code runs its heuristics with their default record: they take no options
    assert all(METHODS[name].options is NoOptions for name in {*heuristics, *starting_heuristics()})


def test_a_registered_method_takes_no_role_and_changes_no_order(monkeypatch):
    monkeypatch.setattr("allocator.core.registry.METHODS", dict(METHODS))
    from allocator.core import registry

    before = (registry.fit_stages(), registry.minimize_stages(), registry.starting_heuristics())

    @register("test-roles", "test double")
    def placing(problem, deadline, options):
        return MethodOutput("failed", None)

    assert registry.METHODS["test-roles"].roles == Roles()
    assert (registry.fit_stages(), registry.minimize_stages(), registry.starting_heuristics()) == before


def test_a_table_without_exactly_one_fallback_is_refused_naming_the_role(monkeypatch):
    from allocator.core import registry

    table = dict(METHODS)
    table["test-second"] = MethodEntry("test-second", "allocator.methods.greedy:first_fit", "test double",
                                       roles=Roles(fallback=True))
    monkeypatch.setattr(registry, "METHODS", table)
    with pytest.raises(LookupError, match="declares 2 methods as the fallback heuristic"):
        registry.fallback_heuristic()


# LOAD is 3, but the 2-byte buffer aligned to 2 has no room beside the one pinned at 1
ALIGNED = Problem([Buffer("a", 0, 2, 1, offset=1), Buffer("b", 0, 2, 2, alignment=2), Buffer("c", 2, 4, 1)])


#: work budgets for the methods that otherwise repeat until their deadline (idealloc's runs), so that
#: the time limit below is only a safety net and no test waits for it
WORK = {"idealloc": {"runs": 4}}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_exact_methods_prove_what_heuristics_only_miss(name):
    result = solve(ALIGNED.with_capacity(3), name, timeout=60, **WORK.get(name, {}))
    if METHODS[name].capabilities.exact:
        assert result.status == "infeasible"
    elif not METHODS[name].capabilities.anytime:  # telamalloc's propagation may prove it too; heuristics cannot
        assert result.status == "failed" and validate(ALIGNED, result.solution).ok


@pytest.mark.parametrize("name", sorted(METHODS))
def test_a_method_that_needs_a_capacity_is_refused_without_one_and_the_others_place(name):
    if METHODS[name].capabilities.needs_capacity:
        with pytest.raises(InvalidProblemError, match="under a capacity"):
            solve(ALIGNED, name)
    else:
        result = solve(ALIGNED, name, timeout=60, **WORK.get(name, {}))
        assert result.status == "solved" and validate(ALIGNED, result.solution).ok


def test_minimize_dispatches_on_the_declared_routine_not_the_name(monkeypatch):
    seen = []

    def routine(problem, request):
        seen.append(request)
        return minimize(problem, method="minimalloc", timeout=request.timeout, node_limit=request.node_limit)

    def never(problem, deadline, options):
        raise AssertionError("minimize must run the anytime routine, not the method")

    monkeypatch.setitem(METHODS, "test-anytime", MethodEntry("test-anytime", never, "test double",
                                                             Capabilities(anytime=routine, node_limit=True)))
    result = minimize(ALIGNED, method="test-anytime", timeout=60, node_limit=1_000, load_share=0.5)
    assert result.peak == 4 and len(seen) == 1
    request = seen[0]
    assert isinstance(request, MinimizeRequest) and request.method == "test-anytime"
    assert (request.timeout, request.node_limit, request.load_share) == (60, 1_000, 0.5)
    assert request.deadline == pytest.approx(request.began + 60)


def test_node_limit_is_refused_for_a_method_that_does_not_declare_it(monkeypatch):
    def routine(problem, request):
        raise AssertionError("not reached")

    never = MethodEntry("test-anytime", lambda problem, deadline, options: None, "test double",
                        Capabilities(anytime=routine))
    monkeypatch.setitem(METHODS, "test-anytime", never)
    for name in ("test-anytime", "telamalloc", "first-fit"):
        with pytest.raises(InvalidProblemError, match="node_limit bounds the exact probes.*minimalloc"):
            minimize(ALIGNED, method=name, node_limit=10)


def test_a_method_that_needs_a_capacity_without_a_routine_cannot_minimise(monkeypatch):
    def placing(problem, deadline, options):
        return MethodOutput("failed", None)

    monkeypatch.setitem(METHODS, "test-capacity", MethodEntry("test-capacity", placing, "test double",
                                                              Capabilities(needs_capacity=True)))
    with pytest.raises(InvalidProblemError, match="needs a capacity and has no anytime search"):
        minimize(ALIGNED, method="test-capacity")


def test_register_keeps_the_capabilities_and_refuses_a_node_limit_without_a_routine(monkeypatch):
    monkeypatch.setattr("allocator.core.registry.METHODS", dict(METHODS))
    from allocator.core import registry

    @register("test-exact", "test double", exact=True, needs_capacity=True)
    def placing(problem, deadline, options):
        return MethodOutput("failed", None)

    assert registry.METHODS["test-exact"].capabilities == Capabilities(exact=True, needs_capacity=True)
    with pytest.raises(ValueError, match="node_limit is a property of an anytime routine"):
        register("test-other", "test double", node_limit=True)
    with pytest.raises(ValueError, match="registered twice"):
        register("test-exact", "again")(placing)


# --------------------------------------------------------------------------------------------------
# A registered method's output is checked against the contract, and a breach names the method.

ONE = Problem([Buffer("a", 0, 1, 8)], capacity=16)


def registered(monkeypatch, output, name="mine"):
    """Register (in a copy of the table) a method ``name`` that returns ``output``."""
    monkeypatch.setattr("allocator.core.registry.METHODS", dict(METHODS))

    @register(name, "test double")
    def method(problem, deadline, options):
        return output

    return name


@pytest.mark.parametrize("output, kind", [({"status": "solved", "offsets": {"a": 0}}, "a dict"),
                                          (None, "a NoneType"), (("solved", {"a": 0}), "a tuple")])
def test_a_method_that_returns_no_method_output_raises_a_type_error_naming_it(monkeypatch, output, kind):
    name = registered(monkeypatch, output)
    with pytest.raises(TypeError, match=rf"^method 'mine' returned {kind}; a method returns "
                                        r"allocator\.core\.registry\.MethodOutput\(status, offsets, reason, stats\)$"):
        solve(ONE, name)


@pytest.mark.parametrize("offsets, wording", [
    ([0], "returned offsets of type list; offsets are None or a mapping of buffer id -> int"),
    ({"a": np.int64(0)}, r"returned offset np.int64\(0\) \(int64\) for buffer 'a'; offsets are Python ints"),
    ({"a": 0.0}, r"returned offset 0.0 \(float\) for buffer 'a'"),
    ({"a": "0"}, r"returned offset '0' \(str\) for buffer 'a'"),
])
def test_offsets_of_the_wrong_type_raise_a_type_error_naming_the_method(monkeypatch, offsets, wording):
    name = registered(monkeypatch, MethodOutput("solved", offsets))
    with pytest.raises(TypeError, match=f"^method 'mine' {wording}"):
        solve(ONE, name)


def test_stats_and_reason_of_the_wrong_type_raise_a_type_error_naming_the_method(monkeypatch):
    name = registered(monkeypatch, MethodOutput("solved", {"a": 0}, stats=[("nodes", 1)]))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^method 'mine' returned stats of type list; stats are a mapping"):
        solve(ONE, name)
    name = registered(monkeypatch, MethodOutput("failed", None, reason=None), "other")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^method 'other' returned reason None; a reason is a string"):
        solve(ONE, name)
    name = registered(monkeypatch, MethodOutput("solved", {"a": 8}, "", {"nodes": 3}), "kept")  # the contract kept
    result = solve(ONE, name)
    assert (result.status, result.peak, result.stats["nodes"]) == ("solved", 16, 3)


@pytest.mark.parametrize("status", ["great", "Solved", None])
def test_a_status_outside_the_four_is_refused_naming_the_method_and_the_status(monkeypatch, status):
    # a method bug, reported as an invalid placement is: InvalidSolutionError, never passed on to a caller
    name = registered(monkeypatch, MethodOutput(status, {"a": 0}))  # type: ignore[arg-type]
    with pytest.raises(InvalidSolutionError, match=rf"^method 'mine' returned status {status!r}; a status is one of "
                                                   "solved, infeasible, failed, timeout$"):
        solve(ONE, name)


def test_an_anytime_routine_that_returns_no_minimize_result_raises_a_type_error_naming_the_method(monkeypatch):
    def routine(problem, request):
        return {"peak": 8}

    never = MethodEntry("test-anytime", lambda problem, deadline, options: None, "test double",
                        Capabilities(anytime=routine))
    monkeypatch.setitem(METHODS, "test-anytime", never)
    with pytest.raises(TypeError, match="^the anytime routine of method 'test-anytime' returned a value of type dict; "
                                        "a routine returns allocator.MinimizeResult$"):
        minimize(ONE, method="test-anytime", timeout=5)

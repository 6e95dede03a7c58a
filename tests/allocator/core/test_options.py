"""Options, one way for every method, and a light ``import allocator``.

Every method declares one options record (a frozen dataclass, ``METHODS[name].options``);
``solve`` takes it as ``options=`` or its fields as keywords, refuses an unknown or ill-typed
option naming the method and its options, and hands the method the record itself:
``function(problem, deadline, options)``. Importing the package imports nothing until a name
is used, and naming one imports neither the method modules nor numba, OR-Tools, pandas or
torch (checked in a fresh interpreter, so the assertion holds whatever the machine's load).
"""

import dataclasses
import inspect
import json
import subprocess
import sys
import typing

import pytest

from allocator import (
    METHODS,
    Buffer,
    InvalidOptionError,
    InvalidProblemError,
    Problem,
    describe_options,
    minimize,
    register,
    solve,
    validate,
)
from allocator.core.options import HillClimbOptions, NoOptions
from allocator.core.registry import BUILT_IN, MethodEntry, MethodOutput
from allocator.methods.minimalloc import MiniMallocOptions
from allocator.methods.telamalloc import TelaMallocOptions

HEAVY = ("numba", "ortools", "pandas", "torch")
#: three buffers, LOAD 8, placed at 8 by every method
SMALL = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4), Buffer("c", 2, 4, 4)], capacity=8)
#: the method names as the CLI and the tests have always listed them, in order
NAMES = ["first-fit", "greedy-by-size", "best-fit", "load-best-fit", "greedy-in-order", "greedy-by-breadth",
         "greedy-by-conflicts", "telamalloc-heuristic", "hill-climb", "cpsat", "mip", "telamalloc", "minimalloc",
         "auto", "idealloc", "telamalloc-learned"]


def loaded_after(code: str) -> dict[str, list[str]]:
    """Run ``code`` after ``import allocator`` in a fresh interpreter; which heavy and method modules it loaded."""
    method_modules = sorted({entry.module for entry in BUILT_IN})
    script = (f"import allocator, sys, json\n{code}\n"
              f"print(json.dumps({{'heavy': [m for m in {list(HEAVY)!r} if m in sys.modules], "
              f"'methods': [m for m in {method_modules!r} if m in sys.modules]}}))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_allocator_loads_no_method_nor_numba_ortools_pandas_or_torch():
    assert loaded_after("") == {"heavy": [], "methods": []}


def test_listing_the_methods_and_building_a_problem_loads_nothing_heavy():
    code = ("rows = [(n, e.description, e.capabilities.labels()) for n, e in allocator.METHODS.items()]\n"
            "assert len(rows) == 16\n"
            "allocator.Problem([allocator.Buffer('a', 0, 2, 4), allocator.Buffer('b', 1, 3, 4)], capacity=8)\n"
            "allocator.describe_options('hill-climb'); allocator.describe_options('cpsat')")
    assert loaded_after(code) == {"heavy": [], "methods": []}


def test_reading_the_defaults_imports_neither_numpy_nor_the_rest_of_the_package():
    code = "import allocator.core.defaults, sys; print('numpy' in sys.modules, sorted(m for m in sys.modules " \
           "if m.startswith('allocator')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "['allocator',", "'allocator.core',", "'allocator.core.defaults',",
                                  "'allocator.core.lazy']"]


def test_the_lazy_names_are_the_same_objects_as_their_modules_define():
    code = """
import allocator
import allocator.core.csv_io, allocator.core.defaults, allocator.core.problem, allocator.core.registry
import allocator.core.validate, allocator.search.anytime, allocator.search.explain
from allocator import *  # noqa: F403
homes = (allocator.core.csv_io, allocator.core.defaults, allocator.core.problem, allocator.core.registry,
         allocator.core.validate, allocator.search.anytime, allocator.search.explain)
for name in allocator.__all__:
    assert name in globals(), name
    defined = [getattr(module, name) for module in homes if name in vars(module)]
    assert defined and all(globals()[name] is value for value in defined), name
    assert getattr(allocator, name) is globals()[name], name
assert allocator.solve is allocator.core.registry.solve and allocator.Problem is allocator.core.problem.Problem
assert sorted(set(dir(allocator)) & set(allocator.__all__)) == sorted(allocator.__all__)
print(len(allocator.__all__))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "26"


def test_a_name_the_package_does_not_have_is_an_attribute_error():
    import allocator

    with pytest.raises(AttributeError, match="module 'allocator' has no attribute 'solver'"):
        allocator.solver  # noqa: B018
    assert allocator.search.__name__ == "allocator.search"  # the rooms are attributes after `import allocator`


def test_a_method_is_imported_when_it_first_runs():
    code = "allocator.solve(allocator.Problem([allocator.Buffer('a', 0, 2, 4)]), 'greedy-by-size')"
    loaded = loaded_after(code)
    assert "allocator.methods.greedy" in loaded["methods"] and "allocator.methods.exact" not in loaded["methods"]
    assert "numba" in loaded["heavy"] and "ortools" not in loaded["heavy"]


def test_methods_keep_their_names_and_order():
    assert list(METHODS) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_every_entry_resolves_to_a_function_a_frozen_record_and_its_declared_routine(name):
    entry = METHODS[name]
    assert callable(entry.function)
    record = entry.options
    assert dataclasses.is_dataclass(record) and record.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert record.__doc__ and (record is NoOptions) == (not dataclasses.fields(record))
    assert (entry.anytime is not None) == (entry.capabilities.anytime is not None)
    parameters = inspect.signature(entry.function).parameters.values()
    # one shape for every method: the record itself, no keyword options and no defaults to drift
    assert [(p.name, p.kind, p.default) for p in parameters] == [
        (argument, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty)
        for argument in ("problem", "deadline", "options")]


@pytest.mark.parametrize("name", NAMES)
def test_an_unknown_option_names_the_method_and_its_options_with_their_types(name):
    record = METHODS[name].options
    with pytest.raises(InvalidOptionError) as caught:
        solve(SMALL, name, colour="red")
    message = str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert "'colour'" in message and repr(name) in message and record.__name__ in message
    for f in dataclasses.fields(record):
        assert f"{f.name}: {f.type}" in message


def a_wrong_value(hint) -> object:
    """A value no field of type ``hint`` accepts (strings go to non-string fields, else a number)."""
    args = typing.get_args(hint)
    return 1.5 if hint is str or str in args else "nine"


@pytest.mark.parametrize("name", NAMES)
def test_an_option_of_the_wrong_type_is_refused_for_every_field(name):
    record = METHODS[name].options
    hints = typing.get_type_hints(record)
    for f in dataclasses.fields(record):
        with pytest.raises(InvalidOptionError, match=f"option '{f.name}' of method '{name}' must be"):
            solve(SMALL, name, **{f.name: a_wrong_value(hints[f.name])})


@pytest.mark.parametrize("name", NAMES)
def test_the_record_or_its_fields_place_and_validate(name):
    record = METHODS[name].options
    defaults = {f.name: getattr(record(), f.name) for f in dataclasses.fields(record)}
    for result in (solve(SMALL, name, timeout=60, options=record()), solve(SMALL, name, timeout=60, **defaults)):
        assert result.status == "solved" and result.peak == 8
        assert validate(SMALL, result.solution).ok


@dataclasses.dataclass(frozen=True)
class Unrelated:
    seed: int = 0


@pytest.mark.parametrize("name", NAMES)
def test_a_record_of_another_method_is_a_type_error_naming_the_expected_class(name):
    expected = f"options of method '{name}' must be an instance of .*{METHODS[name].options.__name__}, got Unrelated"
    with pytest.raises(TypeError, match=expected):
        solve(SMALL, name, options=Unrelated())


def test_a_problem_that_is_not_a_problem_is_a_type_error_naming_the_argument():
    buffers = [Buffer("a", 0, 2, 4)]
    with pytest.raises(TypeError, match="solve: argument 'problem' must be an allocator.Problem, got list"):
        solve(buffers, "greedy-by-size")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="minimize: argument 'problem' must be an allocator.Problem, got list"):
        minimize(buffers, "minimalloc")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="argument 'method' must be a method name"):
        solve(SMALL, METHODS["first-fit"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="argument 'method' must be a method name"):
        minimize(SMALL, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="timeout must be seconds"):
        solve(SMALL, "first-fit", timeout="5")  # type: ignore[arg-type]


def test_minimize_checks_the_record_and_hands_it_to_a_method_it_runs_once(monkeypatch):
    with pytest.raises(TypeError, match="instance of allocator.methods.minimalloc.MiniMallocOptions, "
                                        "got TelaMallocOptions"):
        minimize(SMALL, "minimalloc", options=TelaMallocOptions())
    with pytest.raises(InvalidOptionError, match="option 'seed' of method 'hill-climb' must be int"):
        minimize(SMALL, "hill-climb", options=HillClimbOptions(seed="3"))  # type: ignore[arg-type]
    seen = []

    def placing(problem, deadline, options):
        seen.append(options.seed)
        return METHODS["greedy-by-size"].function(problem, deadline, NoOptions())

    monkeypatch.setitem(METHODS, "test-seeded", MethodEntry("test-seeded", placing, "test double",
                                                            options=HillClimbOptions))
    result = minimize(SMALL.with_capacity(None), "test-seeded", timeout=60, options=HillClimbOptions(seed=7))
    assert result.peak == 8 and seen == [7]


def test_fields_replace_those_of_a_record_and_a_record_reaches_the_method_whole(monkeypatch):
    monkeypatch.setattr("allocator.core.registry.METHODS", dict(METHODS))
    from allocator.core import registry

    got = []

    @register("test-record", "test double", options=HillClimbOptions)
    def whole(problem, deadline, options):
        got.append(options)
        return MethodOutput("failed", None)

    @register("test-none", "test double")
    def bare(problem, deadline, options):
        got.append(options)
        return MethodOutput("failed", None)

    registry.solve(SMALL, "test-record", options=HillClimbOptions(seed=1, iterations=5), iterations=9)
    registry.solve(SMALL, "test-record")
    registry.solve(SMALL, "test-record", seed=4)
    registry.solve(SMALL, "test-none")
    assert got == [HillClimbOptions(seed=1, iterations=9), HillClimbOptions(), HillClimbOptions(seed=4), NoOptions()]
    with pytest.raises(TypeError, match="options must be a dataclass"):
        register("test-bad", "test double", options=dict)  # type: ignore[arg-type]


def test_the_shorthands_in_use_keep_working():
    pinned = Problem([Buffer("a", 0, 2, 1, offset=1), Buffer("b", 0, 2, 2, alignment=2)], capacity=3)
    assert solve(pinned, "auto", node_limit=1000).status == "infeasible"
    assert solve(pinned, "minimalloc", workers=1, node_limit=1000).status == "infeasible"
    assert solve(SMALL, "minimalloc", options=MiniMallocOptions(workers=1), node_limit=1000).peak == 8
    assert solve(SMALL, "telamalloc", step_limit=1000).peak == 8
    assert solve(SMALL, "hill-climb", seed=3, iterations=10).peak == 8
    assert solve(SMALL, "idealloc", seed=3, runs=2).peak == 8
    with pytest.raises(InvalidProblemError, match="workers"):  # a value the method refuses, after the type check
        solve(SMALL, "cpsat", workers=0)


def test_describe_options_lists_each_field_with_its_type_and_default():
    assert describe_options("cpsat") == ("cpsat's options (CPSATOptions): workers: int = 1, hint: bool = True, "
                                         "seed: int = 0, deterministic_time: float | None = None")
    assert describe_options("greedy-by-size") == "greedy-by-size takes no options (NoOptions)"
    assert "search: TelaMallocOptions = TelaMallocOptions(" in describe_options("telamalloc-learned")

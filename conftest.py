"""Root conftest: keeps torch to one thread on this 2-core machine before any test imports it,
and gives every test one way to reach the benchmark instances.

``benchmarks/`` in the checkout (or ``$ACCELSIM_BENCHMARKS``) holds the real instances: the
MiniMalloc challenging suite, the idealloc traces (see ``benchmarks/README.md`` for their
sources and licenses). A test that needs them takes the ``benchmarks`` fixture; when the folder
is missing the test *fails* (it never skips silently), so CI cannot pass without having run it.
"""

import importlib.util
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
# the commands the tests run log libraries' records to a file of this test session, not to the
# user's cache folder (accelsim.cli.debug_log)
os.environ.setdefault("ACCELSIM_DEBUG_LOG", os.path.join(tempfile.mkdtemp(prefix="accelsim-tests-"), "debug.log"))

# Hypothesis profiles. "ci" (the default, used by .ci/run) is reproducible: derandomized, no
# example database, no per-example deadline (a deadline races the machine's load), 60 examples
# per test unless a test pins fewer because each example is expensive. "long" is for local
# runs: HYPOTHESIS_PROFILE=long python -m pytest -q  (random seeds, 600 examples, the database on).
settings.register_profile("ci", derandomize=True, database=None, deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
settings.register_profile("long", derandomize=False, deadline=None, max_examples=600,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

#: where the benchmark instances live: the checkout's own copy (override with $ACCELSIM_BENCHMARKS)
BENCHMARKS = Path(os.environ.get("ACCELSIM_BENCHMARKS", Path(__file__).resolve().parent / "benchmarks"))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A ``torch``-marked test fails (never skips) with one line when the PyTorch frontend is missing.

    On the light install (``pip install -e '.[test-light]'``) deselect them explicitly:
    ``python -m pytest -m "not slow and not torch"``.
    """
    if item.get_closest_marker("torch") is not None:
        missing = [name for name in ("torch", "torchvision") if importlib.util.find_spec(name) is None]
        if missing:
            pytest.fail(f"{item.nodeid} needs {' and '.join(missing)}: pip install -e '.[test]', "
                        "or deselect it with -m 'not torch'", pytrace=False)


@pytest.fixture(scope="session")
def benchmarks() -> Path:
    """The benchmark folder; fails the test (not a skip) when it is missing."""
    if not (BENCHMARKS / "minimalloc" / "challenging").is_dir():
        pytest.fail(f"benchmark instances not found at {BENCHMARKS} (set ACCELSIM_BENCHMARKS to the folder holding "
                    "minimalloc/ and idealloc/)")
    return BENCHMARKS


@pytest.fixture(params=["python", "compiled"])
def csv_reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test once through each CSV parser of ``allocator.core.csv_io``: Python's csv module (what
    files under ``allocator.core.problem.COMPILED_FROM`` lines take) and the compiled scan
    (``COMPILED_FROM`` set to 0, so that every file takes it). Use it as
    ``pytest.mark.usefixtures("csv_reader")``."""
    import allocator.core.problem

    if request.param == "compiled":
        monkeypatch.setattr(allocator.core.problem, "COMPILED_FROM", 0)
    return str(request.param)


#: the team's measurement and research scripts (a folder of scripts, loaded by file)
STUDIES = Path(__file__).resolve().parent / "studies"


#: the docs generators (the reference pages, the tables rendered from CSV)
DOCS_GEN = Path(__file__).resolve().parent / "docs" / "gen"


def _script_loader(folder: Path) -> Callable[[str], ModuleType]:
    """A loader of ``folder/NAME.py`` as a module, each loaded once."""
    loaded: dict[str, ModuleType] = {}

    def load(name: str) -> ModuleType:
        if name not in loaded:
            spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            loaded[name] = module
        return loaded[name]

    return load


@pytest.fixture(scope="session")
def study() -> Callable[[str], ModuleType]:
    """``study("capacity_schedule")`` loads ``studies/capacity_schedule.py`` as a module (once a session)."""
    return _script_loader(STUDIES)


@pytest.fixture(scope="session")
def generator() -> Callable[[str], ModuleType]:
    """``generator("readme_tables")`` loads ``docs/gen/readme_tables.py`` as a module (once a session)."""
    return _script_loader(DOCS_GEN)


@pytest.fixture(scope="session")
def compiled_kernels() -> None:
    """Load (or, with an empty compile cache, compile and cache) every method's numba kernels once.

    Opt-in (``pytestmark = pytest.mark.usefixtures("compiled_kernels")``): only a test whose
    outcome depends on a time limit needs it, so that the first compilation is not counted
    against that limit (the CLI does the same before its clock). Every other test compiles what
    it uses when it first calls it, and its assertions do not depend on how long that takes.
    """
    from allocator import METHODS
    from allocator.search.bench import warm_up

    warm_up([name for name in METHODS if name not in ("cpsat", "mip")])

"""Heavy packages load only when a command or stage needs them (checked in fresh processes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "torchvision", "matplotlib", "pandas", "ortools", "dask", "distributed", "numba", "scipy")

#: runs ``accelsim.cli.main`` on the arguments, then prints the heavy packages the process imported
CLI = f"""
import sys
from accelsim.cli import main
status = main(sys.argv[1:])
print("IMPORTED=" + ",".join(m for m in {HEAVY!r} + ("networkx",) if m in sys.modules))
sys.exit(status)
"""


def imported_by(code: str, *args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    line = [text for text in done.stdout.splitlines() if text.startswith("IMPORTED=")][-1]
    return [name for name in line.removeprefix("IMPORTED=").split(",") if name]


@pytest.mark.parametrize("package", ["accelsim", "frontend", "scheduler", "accelsim.cli", "accelsim.report"])
def test_importing_a_package_loads_no_heavy_dependency(package):
    code = f"import sys, {package}; print('IMPORTED=' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
    assert imported_by(code) == []


@pytest.mark.parametrize("command", [["models"], ["configs"], ["configs", "--fields"], ["alloc", "--methods"]])
def test_listing_commands_load_no_heavy_dependency_and_no_graph_library(command):
    assert imported_by(CLI, *command) == []


def test_frontend_names_load_their_own_module_only():
    code = ("import sys, frontend; names = frontend.list_models(); "
            "print('IMPORTED=' + ','.join(m for m in ('networkx', 'torch', 'frontend.graph', 'frontend.cache') "
            "if m in sys.modules))")
    assert imported_by(code) == []


def test_frontend_lazy_names_are_the_same_objects_as_their_modules_define():
    code = """
import frontend
import frontend.trace  # the submodule of the same name must not replace the function
import frontend.graph, frontend.zoo, frontend.cache
from frontend import *  # noqa: F403
assert callable(frontend.trace) and frontend.trace.__module__ == "frontend.trace", frontend.trace
assert frontend.save_graph is frontend.graph.save_graph and frontend.trace_model is frontend.zoo.trace_model
assert frontend.cached_trace is frontend.cache.cached_trace and frontend.DTYPE_BYTES is frontend.graph.DTYPE_BYTES
assert all(name in globals() for name in frontend.__all__)
print("IMPORTED=")
"""
    assert imported_by(code) == []
    fresh = "import frontend; print('IMPORTED=' + ','.join(frontend.zoo.SUPPORTED_MODELS[:1]))"
    assert imported_by(fresh) == ["resnet18"]  # submodules are attributes after `import frontend` alone


def test_the_scheduler_registry_and_the_command_line_load_neither_a_solver_nor_numpy():
    """``--scheduler``'s choices and every rule of the scheduler registry cost no heavy import:
    the registry names each scheduler's function as ``"module:function"``, imported on first use."""
    code = f"""
import sys
import scheduler
from scheduler.registry import ENTRIES, SCHEDULERS, check_options
assert scheduler.SCHEDULERS == SCHEDULERS and set(ENTRIES) == set(SCHEDULERS)
check_options("cosma-fs", fixed_order="min-peak", time_limit=5.0)
from accelsim.cli import build_parser
parser = build_parser()
parser.parse_args(["run", "resnet18", "--scheduler", "cosma-fs", "--fixed-order", "min-peak"]).handler
print("IMPORTED=" + ",".join(m for m in {HEAVY!r} + ("networkx", "numpy") if m in sys.modules))
"""
    assert imported_by(code) == []

"""``allocator.search.warmup``: a warm-up loads what a run reaches, so the run itself loads or compiles nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

#: every numba kernel of the allocator's modules loaded so far, with its number of compiled signatures
_LOADED = """
import sys, numba, json
from numba.core.registry import CPUDispatcher
def loaded():
    return {f"{m}.{k}": len(v.overloads) for m, mod in list(sys.modules.items()) if m.startswith("allocator")
            for k, v in vars(mod).items() if isinstance(v, CPUDispatcher) and v.overloads}
"""


def _run(body: str) -> dict[str, object]:
    code = _LOADED + "import allocator\nfrom allocator.search.warmup import warm_up\n" + body
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          timeout=900)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_fit_loads_nothing_after_its_warm_up_and_no_minimisation_kernel() -> None:
    got = _run("""
problem = allocator.read_csv("benchmarks/minimalloc/challenging/K.1048576.csv", capacity=1048576)
warm_up("minimalloc", "fit")  # as accelsim alloc does: the file is read, the kernels loaded, then the clock starts
before = loaded()
result = allocator.solve(problem, "minimalloc", None)
print(json.dumps({"before": before, "after": loaded(), "status": result.status}))
""")
    assert got["status"] == "solved"
    assert got["after"] == got["before"]  # the timed run loaded or compiled no kernel
    loaded = got["before"]
    assert isinstance(loaded, dict)
    assert "allocator.methods.minimalloc_kernel.search" in loaded
    # the greedy placement and the skyline are what a minimisation starts from, not a fit
    assert not [name for name in loaded
                if name.startswith(("allocator.methods.placement.", "allocator.methods.heuristics."))]


def test_a_minimisation_loads_nothing_after_its_warm_up() -> None:
    got = _run("""
problem = allocator.read_csv("benchmarks/minimalloc/challenging/K.1048576.csv", capacity=None)
warm_up("minimalloc", "minimize")
before = loaded()
result = allocator.minimize(problem, method="minimalloc", timeout=60.0, node_limit=2000)
print(json.dumps({"before": before, "after": loaded(), "peak": result.peak}))
""")
    assert got["peak"] is not None
    assert got["after"] == got["before"]
    assert "allocator.methods.placement._place_kernel" in got["before"]  # type: ignore[operator]


def test_a_bad_mode_is_refused() -> None:
    from allocator.search.warmup import warm_up

    with pytest.raises(ValueError, match="'fit', 'minimize'"):
        warm_up("greedy-by-size", "all")  # type: ignore[arg-type]

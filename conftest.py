"""Root conftest: keeps torch to one thread on this 2-core machine before any test imports it,
and gives every test one way to reach the shared benchmark instances.

``../shared/benchmarks`` (or ``$ACCELSIM_BENCHMARKS``) holds the real instances: the MiniMalloc
challenging suite, the idealloc traces. A test that needs them takes the ``benchmarks``
fixture; when the folder is missing the test *fails* (it never skips silently), so CI cannot
pass without having run it.
"""

import os
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

#: where the shared benchmark instances live (override with $ACCELSIM_BENCHMARKS)
BENCHMARKS = Path(os.environ.get("ACCELSIM_BENCHMARKS", Path(__file__).resolve().parent.parent / "shared" / "benchmarks"))


@pytest.fixture(scope="session")
def benchmarks() -> Path:
    """The shared benchmark folder; fails the test (not a skip) when it is missing."""
    if not (BENCHMARKS / "minimalloc" / "challenging").is_dir():
        pytest.fail(f"benchmark instances not found at {BENCHMARKS} (set ACCELSIM_BENCHMARKS to the folder holding "
                    "minimalloc/ and idealloc/)")
    return BENCHMARKS

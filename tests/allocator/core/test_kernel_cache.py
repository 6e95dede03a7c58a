"""Where the compiled kernels are cached (``allocator.core.kernel_cache``), checked in fresh processes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from allocator.core.kernel_cache import default_cache_dir

ROOT = Path(__file__).resolve().parents[3]


def _run(code: str, env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                          check=True, timeout=600)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _environ(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(extra)
    return env


_COMPILE_ONE = """
import json, numpy as np, numba
from allocator.core import sections
sections.range_max(np.array([3, 1, 4]), np.array([0]), np.array([2]))
print(json.dumps({"dir": numba.config.CACHE_DIR, "env": __import__("os").environ["NUMBA_CACHE_DIR"]}))
"""


def test_default_directory_follows_xdg(tmp_path: Path) -> None:
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "accelsim" / "numba"
    assert default_cache_dir({}) == Path.home() / ".cache" / "accelsim" / "numba"
    assert default_cache_dir({"XDG_CACHE_HOME": ""}) == Path.home() / ".cache" / "accelsim" / "numba"


def test_kernels_are_cached_in_the_user_cache_directory(tmp_path: Path) -> None:
    got = _run(_COMPILE_ONE, _environ(XDG_CACHE_HOME=str(tmp_path)))
    expected = tmp_path / "accelsim" / "numba"
    assert got == {"dir": str(expected), "env": str(expected)}
    indexes = list(expected.rglob("sections._range_max-*.nbi"))
    assert indexes, f"no cache index for sections._range_max under {expected}"


def test_a_cache_directory_the_user_chose_stands(tmp_path: Path) -> None:
    chosen = tmp_path / "mine"
    got = _run(_COMPILE_ONE, _environ(NUMBA_CACHE_DIR=str(chosen), XDG_CACHE_HOME=str(tmp_path / "xdg")))
    assert got == {"dir": str(chosen), "env": str(chosen)}
    assert list(chosen.rglob("sections._range_max-*.nbi"))
    assert not (tmp_path / "xdg").exists()


def test_rewritten_module_with_the_same_contents_keeps_its_cache(tmp_path: Path) -> None:
    """What a reinstall of the same version does to a kernel module: the same bytes at the same
    path, with a new modification time. numba keys the cache on the contents, so it still hits;
    a changed file misses (documented in ``allocator.core.kernel_cache``)."""
    package = tmp_path / "pkg"
    package.mkdir()
    source = "from allocator.core import kernel_cache  # noqa: F401\nfrom numba import njit\n\n\n" \
             "@njit(cache=True)\ndef twice(x):\n    return 2 * x\n"
    module = package / "kernels_under_test.py"
    module.write_text(source)
    code = f"""
import json, sys
sys.path.insert(0, {str(package)!r})
import kernels_under_test as k
k.twice(3)
stats = k.twice.stats
print(json.dumps({{"hits": sum(stats.cache_hits.values()), "misses": sum(stats.cache_misses.values())}}))
"""
    env = _environ(XDG_CACHE_HOME=str(tmp_path / "cache"))
    assert _run(code, env) == {"hits": 0, "misses": 1}
    later = time.time() + 120
    module.write_text(source)  # a reinstall: same bytes, new time
    os.utime(module, (later, later))
    assert _run(code, env) == {"hits": 1, "misses": 0}
    module.write_text(source.replace("2 * x", "x + x"))
    assert _run(code, env) == {"hits": 0, "misses": 1}


def test_every_kernel_module_imports_the_cache_module() -> None:
    """A kernel decorated before ``allocator.core.kernel_cache`` ran would be cached beside its source."""
    sources = sorted((ROOT / "allocator").rglob("*.py"))
    decorated = re.compile(r"^@(numba\.)?(njit|jit)\b|^_helper = njit", re.M)
    with_kernels = [p for p in sources if decorated.search(p.read_text())]
    assert len(with_kernels) >= 8
    missing = [p.name for p in with_kernels if "from allocator.core import kernel_cache" not in p.read_text()]
    assert not missing, f"kernel modules without 'from allocator.core import kernel_cache': {missing}"

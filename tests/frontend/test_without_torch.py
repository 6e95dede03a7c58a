"""The light install: without torch and torchvision, everything but tracing works, and tracing says
in one line which extra to install.

Each test runs a fresh interpreter in which ``torch`` and ``torchvision`` cannot be imported
(``sys.modules[name] = None`` makes both ``import`` and ``importlib.util.find_spec`` see no
package), so the checks hold on the full install too. CI also runs the allocator and scheduler
tests in a real venv without torch (``.ci/run``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: run first in every child: torch and torchvision are absent for it
BLOCK = "import sys\nsys.modules['torch'] = None\nsys.modules['torchvision'] = None\n"


def run_without_torch(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ACCELSIM_CACHE_DIR=str(tmp_path / "traces"), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", BLOCK + textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=600)


def test_a_zoo_model_without_torch_is_one_line_naming_the_extra(tmp_path):
    out = tmp_path / "out"
    run = run_without_torch(f"""
        from accelsim.cli import main
        sys.exit(main(["run", "resnet50", "--hw", "pixel6", "--out", {str(out)!r}]))
    """, tmp_path)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("error:") and "pip install 'accelsim[torch]'" in lines[0]
    assert "torch" in lines[0] and "resnet50" in lines[0]
    assert not out.exists()


def test_the_python_api_on_graphs_works_without_torch(tmp_path):
    run = run_without_torch("""
        import allocator, scheduler, accelsim
        from frontend.synthetic import chain

        problem = allocator.Problem([allocator.Buffer("a", 0, 2, 4), allocator.Buffer("b", 1, 3, 4)], capacity=8)
        result = allocator.solve(problem)
        assert result.status == "solved" and allocator.validate(problem, result.solution).ok
        report = accelsim.compile_and_simulate(chain(4, size=4096), hw="pixel6")
        assert report.memory_check == "ok", report.memory_check
        try:
            accelsim.compile_and_simulate("resnet18", hw="pixel6")
        except ValueError as error:
            print("refused:", error)
        assert "torch" not in sys.modules or sys.modules["torch"] is None
        print("ok")
    """, tmp_path)
    assert run.returncode == 0, run.stderr
    assert "ok" in run.stdout.splitlines()
    assert "refused:" in run.stdout and "accelsim[torch]" in run.stdout

"""Every code block of the tutorials runs, as written, in the order of the page.

A tutorial is only as good as its code: each page under docs/tutorials/ (and the README's Python)
runs in a fresh process
in an empty folder. Its ``bash`` blocks run in ``bash -e -o pipefail``; its ``python`` blocks run
in one namespace, so a later block sees what an earlier one defined; a block with a
``title="FILE"`` is the file a reader would save, and is written to FILE instead of run. Other
blocks (``text``: printed output) are shown, not run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((REPO / "docs" / "tutorials").glob("*.md"))
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```\s*$", re.M | re.S)

#: runs a page's blocks in order in one process: bash blocks in a shell, python blocks in one namespace
DRIVER = r'''
import json, subprocess, sys, traceback
blocks = json.load(sys.stdin)
namespace = {"__name__": "__main__"}
for number, (language, title, code) in enumerate(blocks, 1):
    print(f"--- block {number} ({language}{', ' + title if title else ''})", flush=True)
    if title:
        with open(title, "w") as handle:
            handle.write(code)
    elif language == "bash":
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code])
        if done.returncode:
            sys.exit(f"block {number} (bash) exited {done.returncode}:\n{code}")
    else:
        try:
            exec(compile(code, f"<block {number}>", "exec"), namespace)
        except BaseException:
            traceback.print_exc()
            sys.exit(f"block {number} (python) raised:\n{code}")
        sys.stdout.flush()
'''


def code_blocks(text: str) -> list[tuple[str, str, str]]:
    """The page's runnable blocks in order: (language, file title or '', code).

    >>> code_blocks('```bash\\necho hi\\n```\\n```text\\nhi\\n```\\n```python title="a.py"\\nx = 1\\n```\\n')
    [('bash', '', 'echo hi\\n'), ('python', 'a.py', 'x = 1\\n')]
    """
    blocks = []
    for language, info, code in FENCE.findall(text):
        title = re.search(r'title="([^"]+)"', info)
        if title or language in ("bash", "python"):
            blocks.append((language, title.group(1) if title else "", code))
    return blocks


def test_every_tutorial_has_code_to_run():
    assert len(TUTORIALS) >= 5
    for page in TUTORIALS:
        languages = {language for language, title, _ in code_blocks(page.read_text()) if not title}
        assert languages & {"bash", "python"}, f"{page.name} has no code that runs"


@pytest.mark.parametrize("page", [*TUTORIALS, REPO / "README.md"], ids=[*(p.stem for p in TUTORIALS), "README"])
def test_tutorial_runs_as_written(page, tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    done = subprocess.run([sys.executable, "-c", DRIVER], input=json.dumps(code_blocks(page.read_text())),
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{page.name}:\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"

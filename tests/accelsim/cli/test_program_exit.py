"""``accelsim.cli.program``: the process ends with main's status, its output whole and its exit handlers run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def program(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO, check=False)


PROGRAM = """
import atexit, sys
atexit.register(lambda: print("exit handler ran"))
from accelsim.cli import program
sys.argv[0] = "accelsim"
program()
"""


def test_output_is_flushed_and_exit_handlers_run():
    done = program(PROGRAM, "configs")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("name") and any(line.startswith("pixel6") for line in lines)
    assert lines[-1] == "exit handler ran"


def test_the_exit_status_is_mains():
    done = program(PROGRAM, "configs", "--no-such-option")
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == "exit handler ran\n"


def test_the_command_ends_whatever_threads_are_left_running():
    # a user's model may start a thread that never ends: the command still ends with its status
    code = """
import threading, time
from accelsim.cli import program

threading.Thread(target=time.sleep, args=(3600,)).start()
program()
"""
    done = subprocess.run([sys.executable, "-c", code, "models"], capture_output=True, text=True, cwd=REPO,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "resnet18"


def test_python_dash_m_accelsim_output_closed_early_is_not_an_error():
    done = subprocess.run(f"{sys.executable} -m accelsim models | head -1", shell=True, capture_output=True,
                          text=True, cwd=REPO, check=False)
    assert done.returncode == 0 and done.stdout == "resnet18\n" and done.stderr == ""

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


def test_a_thread_still_running_is_waited_for():
    code = """
import sys, threading, time
from accelsim.cli import program

def late():
    time.sleep(0.3)
    print("thread finished", flush=True)

threading.Thread(target=late).start()
program()
"""
    done = program(code, "models")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "thread finished"


def test_python_dash_m_accelsim_output_closed_early_is_not_an_error():
    done = subprocess.run(f"{sys.executable} -m accelsim models | head -1", shell=True, capture_output=True,
                          text=True, cwd=REPO, check=False)
    assert done.returncode == 0 and done.stdout == "resnet18\n" and done.stderr == ""

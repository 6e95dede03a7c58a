"""Every script in examples/ runs as a user runs it (a subprocess from the repository root) and says what its
docstring promises. The team's measurement scripts are in studies/, not here.

The limits of ``alloc_csv.py`` are generous (the five-buffer example finishes in well under a second), so no
assertion depends on how fast the machine is; the one run that lets methods hit their limit (``A.1048576.csv``)
asserts only what holds whatever they reach.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

import allocator

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"

#: a hang check, not a timing: each run takes seconds with warm caches
HANG = 300


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=REPO, capture_output=True, text=True,
                          timeout=HANG)


def method_rows(stdout: str) -> dict[str, list[str]]:
    """alloc_csv.py's table: method name -> the row's other columns."""
    rows = {}
    for line in stdout.splitlines():
        fields = line.split()
        if fields and fields[0] in allocator.METHODS:
            rows[fields[0]] = fields[1:]
    return rows


def test_examples_are_only_the_scripts_a_user_copies_and_each_is_tested_here():
    assert sorted(path.name for path in EXAMPLES.glob("*.py")) == ["alloc_csv.py", "compile_resnet.py",
                                                                  "sram_sweep.py"]


@pytest.mark.parametrize("capacity", [None, "12"])
def test_alloc_csv_gives_every_method_the_optimum_of_the_paper_example(benchmarks, capacity):
    csv = benchmarks / "minimalloc" / "examples" / "input.12.csv"
    args = [str(csv), "--timeout", "60"] + (["--capacity", capacity] if capacity else [])
    done = run("alloc_csv.py", *args)
    assert done.returncode == 0, done.stderr
    goal = "capacity 12" if capacity else "no capacity: minimising the peak"
    assert f"5 buffers, {goal}, LOAD 12" in done.stdout
    rows = method_rows(done.stdout)
    assert sorted(rows) == sorted(allocator.METHODS)
    for name, fields in rows.items():
        assert fields[:3] == ["solved", "12", "0.00"], f"{name}: {fields}"


def test_alloc_csv_places_a_challenging_instance_under_its_capacity(benchmarks):
    csv = benchmarks / "minimalloc" / "challenging" / "A.1048576.csv"
    done = run("alloc_csv.py", str(csv), "--capacity", "1MiB", "--timeout", "1")
    assert done.returncode == 0, done.stderr
    assert "154 buffers, capacity 1,048,576, LOAD 1,048,576" in done.stdout
    rows = method_rows(done.stdout)
    assert sorted(rows) == sorted(allocator.METHODS)
    for name, fields in rows.items():
        assert fields[0] in {"solved", "failed", "timeout", "infeasible", "refused"}, f"{name}: {fields}"
        if fields[0] == "solved":  # placed under the capacity: at LOAD, which is the capacity
            assert fields[1:3] == ["1,048,576", "0.00"], f"{name}: {fields}"
        elif fields[1] != "-":  # the best placement found, over the capacity
            assert int(fields[1].replace(",", "")) > 1_048_576, f"{name}: {fields}"


def test_alloc_csv_names_bad_input_and_exits_2(tmp_path):
    missing = tmp_path / "missing.csv"
    done = run("alloc_csv.py", str(missing))
    assert done.returncode == 2
    assert done.stderr.startswith("error:") and str(missing) in done.stderr
    assert "Traceback" not in done.stderr
    done = run("alloc_csv.py", str(missing), "--capacity", "lots")
    assert done.returncode == 2 and "--capacity" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.torch
def test_compile_resnet_prints_the_report_and_writes_it(tmp_path):
    out = tmp_path / "resnet50-pixel6"
    done = run("compile_resnet.py", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert re.search(r"^\s*memory check\s+ok\s*$", done.stdout, re.MULTILINE), done.stdout
    assert re.search(r"^\s*operators\s+174\s", done.stdout, re.MULTILINE), done.stdout
    slowest = done.stdout.split("slowest operators:\n", 1)[1].splitlines()
    assert len(slowest) == 5 and all(line.rstrip().endswith("cycles") for line in slowest)
    assert (out / "report.json").is_file()


@pytest.mark.torch
def test_sram_sweep_reports_no_traffic_at_2mib_and_refuses_below_m_r():
    done = run("sram_sweep.py", "resnet18", "--sizes", "2MiB,150KiB,100KiB")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("resnet18 on pixel6 (per PE (16 PEs)): M_R ")
    lines = done.stdout.splitlines()
    rows = {" ".join(line.split()[:2]): line for line in lines[2:]}  # SRAM is "2 MiB": two fields
    assert sorted(rows) == ["100 KiB", "150 KiB", "2 MiB"]
    assert rows["2 MiB"].split()[2:5] == ["0", "B", "0"], rows["2 MiB"]  # non-compulsory 0 B, no spills
    assert rows["100 KiB"].split()[2:] == ["below", "M_R"], rows["100 KiB"]

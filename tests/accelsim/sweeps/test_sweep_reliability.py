"""``accelsim sweep`` under hostile input (issue 22): one name per field, a limit on the grid,
Dask addresses that fail fast, a quiet Ctrl-C of a Dask sweep, workers that die, nothing
half-made, and a fuzzer over the grid's texts.

Tests that must bound a possible hang run the real program in a subprocess with a generous
timeout; the others call ``accelsim.cli.main`` or ``run_sweep`` on a small saved graph.
"""

from __future__ import annotations

import csv
import http.server
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import frontend
from accelsim.cli import main
from accelsim.sweeps import (
    FIELD_ALIASES,
    MAX_POINTS,
    WORKER_DIED,
    Base,
    Task,
    check_one_name,
    check_sweep,
    dead_worker_reason,
    executors,
    grid_points,
    parse_grid,
    run_local,
    run_sweep,
)
from frontend.synthetic import random_dag

REPO = Path(__file__).resolve().parents[3]
PROGRESS = re.compile(r"\[\d+/\d+\] ")


@pytest.fixture
def dag(tmp_path):
    path = tmp_path / "dag.json"
    frontend.save_graph(random_dag(30, seed=1), path)  # M_R is 1,088 B per PE on pixel6
    return str(path)


def one_error(capsys) -> str:
    """The one ``error:`` line the command printed on stderr (and nothing else there)."""
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def rows_of(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def accelsim(argv: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m accelsim ARGV`` from this checkout; ``timeout`` is a generous bound for a hang."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "accelsim", *argv], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=timeout)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ------------------------------------------------------------------------------------------
# one name per field


def test_the_alias_table_maps_sram_to_its_hardware_field():
    assert FIELD_ALIASES["sram"] == "sram_bytes_per_pe"


@pytest.mark.parametrize("argv, first, second", [
    (["--grid", "sram=1MiB,2MiB", "--grid", "sram_bytes_per_pe=512KiB,4MiB"],
     "--grid sram", "--grid sram_bytes_per_pe"),
    (["--grid", "sram_bytes_per_pe=512KiB,4MiB", "--grid", "sram=1MiB"], "--grid sram_bytes_per_pe", "--grid sram"),
    (["--grid", "sram=1MiB,2MiB", "--set", "sram_bytes_per_pe=4MiB"], "--grid sram", "--set sram_bytes_per_pe"),
    (["--grid", "scheduler=program,min-peak", "--scheduler", "program"], "--grid scheduler", "--scheduler"),
])
def test_a_field_given_under_two_names_is_refused_naming_both(dag, tmp_path, capsys, argv, first, second):
    # it used to run 4 points with 2 distinct hashes, every row labelled sram_bytes_per_pe=4194304
    out = tmp_path / "s"
    assert main(["sweep", dag, "--hw", "pixel6", *argv, "--out", str(out), "--jobs", "1", "--no-plots"]) == 2
    line = one_error(capsys)
    assert f"{first} and {second} set the same field" in line, line
    assert not out.exists()


def test_the_python_api_refuses_an_alias_in_overrides_or_options(dag):
    with pytest.raises(ValueError, match="--grid sram and --set sram_bytes_per_pe set the same field"):
        run_sweep([dag], "pixel6", {"sram": ["1MiB"]}, overrides={"sram_bytes_per_pe": "4MiB"}, jobs=1)
    with pytest.raises(ValueError, match="--grid sram_bytes_per_pe and option sram set the same field"):
        run_sweep([dag], "pixel6", ["sram_bytes_per_pe=1MiB"], options={"sram": "4MiB"}, jobs=1)


def test_dtype_as_a_run_option_and_a_hardware_field_is_refused(tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["sweep", "resnet18", "--grid", "sram=1MiB", "--set", "dtype=int8", "--dtype", "bf16",
                 "--out", str(out)]) == 2
    assert "--set dtype and --dtype set the same field (dtype)" in one_error(capsys)
    assert not out.exists()


def test_a_set_dtype_on_a_traced_graph_is_refused_not_ignored(dag, tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["sweep", dag, "--grid", "sram=1MiB", "--set", "dtype=bf16", "--out", str(out)]) == 2
    assert "dtype cannot apply to a graph already traced" in one_error(capsys)
    assert not out.exists()


def test_two_points_that_are_one_configuration_are_refused(dag, tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["sweep", dag, "--grid", "allocator=online,online-first-fit", "--out", str(out)]) == 2
    line = one_error(capsys)
    assert "allocator=online' and " in line and "allocator=online-first-fit' are one configuration" in line, line
    assert not out.exists()


def test_check_one_name_accepts_each_field_once():
    check_one_name({"--grid": ["sram", "compute.rows"], "--set": ["dma.channels"], "options": ["scheduler"]})


# ------------------------------------------------------------------------------------------
# a limit on the grid


def test_a_65_million_point_grid_is_refused_before_anything_is_made(dag, tmp_path, capsys):
    values = ",".join(str(i) for i in range(1, 91))
    out = tmp_path / "big"
    argv = ["sweep", dag, "--grid", "sram=" + ",".join(f"{i}KiB" for i in range(1, 91)),
            "--grid", f"dram_latency_cycles={values}", "--grid", f"compute.rows={values}",
            "--grid", f"dma.channels={values}", "--out", str(out), "--no-plots"]
    assert main(argv) == 2
    line = one_error(capsys)
    assert "65,610,000 points" in line and f"limit of {MAX_POINTS:,}" in line and "--max-points" in line, line
    assert not out.exists()


def test_max_points_lowers_and_raises_the_limit(dag, tmp_path, capsys):
    grid = ["sram=2KiB,4KiB", "dram_bandwidth_bytes_per_s=1e9,2e9"]
    out = tmp_path / "s"
    assert main(["sweep", dag, *sum((["--grid", g] for g in grid), []), "--max-points", "3", "--out", str(out),
                 "--jobs", "1", "--no-plots"]) == 2
    line = one_error(capsys)
    assert "the sweep has 4 points (1 model x 2 sram x 2 dram_bandwidth_bytes_per_s)" in line, line
    assert "limit of 3" in line and "--max-points 4" in line and not out.exists()
    outcome = run_sweep([dag], "pixel6", grid, out, jobs=1, plots=False, max_points=4)
    assert outcome.ran == 4


def test_the_limit_counts_every_model(dag, tmp_path):
    other = tmp_path / "other.json"
    frontend.save_graph(random_dag(20, seed=2), other)
    with pytest.raises(ValueError, match=r"4 points \(2 models x 2 sram\), more than the limit of 3"):
        run_sweep([dag, str(other)], "pixel6", ["sram=2KiB,4KiB"], tmp_path / "s", max_points=3)


@pytest.mark.parametrize("value", ["0", "-1", "ten", "٣"])
def test_max_points_must_be_a_positive_ascii_integer(dag, tmp_path, capsys, value):
    assert main(["sweep", dag, "--grid", "sram=1MiB", "--max-points", value, "--out", str(tmp_path / "s")]) == 2
    assert "--max-points" in capsys.readouterr().err


@pytest.mark.parametrize(("item", "message"), [
    ("sram=1MiB,1_024KiB", "--grid sram=1_024KiB: sram '1_024KiB' is not a byte count: write it in ASCII digits, "
                           "without '_' separators"),
    ("budget=1_0KiB", "--grid budget=1_0KiB: budget '1_0KiB' is not a byte count"),
    ("clock_hz=1_066_000_000", "--grid clock_hz=1_066_000_000: field 'clock_hz' must be a number in ASCII digits "
                               "(no '_' separators), got '1_066_000_000'"),
    ("dram_latency_cycles=1_00", "field 'dram_latency_cycles' must be an integer in ASCII digits"),
])
def test_a_grid_value_with_underscore_separators_is_refused_naming_the_key(item, message):
    # int() and float() skip '_': 1_0_0 read as 100 would hide a typo
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_grid([item])


# ------------------------------------------------------------------------------------------
# Dask: addresses fail fast, before anything is made


@pytest.mark.parametrize("address", ["not-an-address", "http://127.0.0.1:8786", "tcp://127.0.0.1:99999",
                                     "tcp://:8786", "", "tcp://[::1:3"])
def test_a_malformed_dask_address_is_refused_naming_the_option(dag, tmp_path, capsys, address):
    out = tmp_path / "s"
    assert main(["sweep", dag, "--grid", "sram=1MiB", "--executor", "dask", "--dask-address", address,
                 "--out", str(out)]) == 2
    assert one_error(capsys).startswith("error: --dask-address")
    assert not out.exists()


def test_a_closed_port_is_refused_naming_the_option(dag, tmp_path, capsys):
    out = tmp_path / "s"
    address = f"tcp://127.0.0.1:{free_port()}"
    assert main(["sweep", dag, "--grid", "sram=1MiB", "--executor", "dask", "--dask-address", address,
                 "--out", str(out)]) == 2
    assert one_error(capsys).startswith(f"error: --dask-address {address}: cannot connect")
    assert not out.exists()


def test_a_service_that_is_not_dask_is_refused_within_the_connect_timeout(dag, tmp_path):
    # an HTTP server accepts the connection and then waits for a request: Dask's handshake never
    # completes (it hung past 120 s); the check gives up after DASK_CONNECT_TIMEOUT (10 s)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        address = f"tcp://127.0.0.1:{server.server_address[1]}"
        out = tmp_path / "s"
        done = accelsim(["sweep", dag, "--grid", "sram=1MiB", "--executor", "dask", "--dask-address", address,
                         "--out", str(out), "--no-plots"], tmp_path, timeout=60)
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 2, done.stderr
    err = done.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: --dask-address {address}: no Dask scheduler answered"), err
    assert not out.exists()


# ------------------------------------------------------------------------------------------
# Dask: Ctrl-C is one line, workers that die are rows


def test_ctrl_c_of_a_dask_sweep_prints_one_line_and_keeps_the_finished_points(dag, tmp_path):
    # SIGINT goes to the whole process group, as a terminal's Ctrl-C does: the parent and the
    # cluster's worker processes. It used to print about 86 lines of Dask tracebacks and logs.
    out = tmp_path / "s"
    srams = ",".join(f"{k}KiB" for k in range(2, 42))
    env = dict(os.environ, PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    process = subprocess.Popen(
        [sys.executable, "-m", "accelsim", "sweep", dag, "--grid", f"sram={srams}", "--grid",
         "scheduler=program,min-peak,cosma", "--executor", "dask", "--jobs", "1", "--out", str(out), "--no-plots"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert process.stderr is not None
    seen = []
    for line in process.stderr:
        seen.append(line)
        if PROGRESS.match(line):
            os.killpg(process.pid, signal.SIGINT)
            break
    _, rest = process.communicate(timeout=120)
    lines = "".join(seen + [rest]).strip().splitlines()
    assert process.returncode == 130, lines
    assert "Traceback" not in rest
    errors = [line for line in lines if not PROGRESS.match(line)]
    assert len(errors) == 1 and errors[0].startswith("error: interrupted (Ctrl-C): "), lines
    done = int(re.search(r"(\d+) of 120 points done", errors[0]).group(1))
    rows = rows_of(out / "results.csv")
    assert len(rows) == done >= 1 and all(row["status"] == "ok" for row in rows)


def test_a_point_whose_worker_dies_is_a_row_and_the_sweep_goes_on(dag, tmp_path, monkeypatch):
    import dask

    def dies_at_8kib(task):  # a closure: cloudpickle sends it by value to the worker process
        import os

        from accelsim.sweeps import executors as in_worker

        if dict(task.point.settings)["sram"] == 8192:
            os._exit(3)
        return in_worker.run_point(task)

    monkeypatch.setattr(executors, "run_point", dies_at_8kib)
    grid = ["sram=2KiB,4KiB,8KiB"]
    # no retry, and one task at a time on the one worker: no other point is on it when it dies
    # (Dask would count a death against every task the worker held)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0}):
        outcome = run_sweep([dag], "pixel6", grid, tmp_path / "s", executor="dask", jobs=1, plots=False)
    table = outcome.results
    assert list(table["status"][:2]) == ["ok", "ok"]
    status = table["status"][2]
    assert status.startswith(f"{WORKER_DIED}: ") and "KilledWorker" in status, status
    assert outcome.ran == 3 and outcome.failed == 1
    # a point that failed by itself is not run again, one whose worker died is
    monkeypatch.undo()
    again = run_sweep([dag], "pixel6", grid, tmp_path / "s", jobs=1, plots=False)
    assert again.ran == 1 and again.skipped == 2 and (again.results["status"] == "ok").all()


def test_dask_failures_that_are_not_the_points_become_statuses():
    from distributed import KilledWorker
    from distributed.client import FutureCancelledError
    from distributed.comm import CommClosedError

    class Worker:
        address = "tcp://127.0.0.1:1"

    killed = dead_worker_reason(KilledWorker("run_point-1", Worker(), 3))
    assert killed is not None and killed.startswith("worker died: ") and "4 times" in killed
    assert "CommClosedError" in (dead_worker_reason(CommClosedError("in <TCP>: Stream is closed")) or "")
    cancelled = dead_worker_reason(FutureCancelledError("run_point-1", "scheduler-connection-lost"))
    assert cancelled is not None and cancelled.startswith("worker died: Dask cancelled it")
    assert dead_worker_reason(TypeError("a bug")) is None  # a bug propagates


# ------------------------------------------------------------------------------------------
# nothing half-made


def test_a_graph_with_a_self_loop_is_refused_before_the_folder(dag, tmp_path, capsys):
    data = json.loads(Path(dag).read_text())
    data["edges"].append({"tensors": ["t0"], "source": "op1", "target": "op1"})
    looped = tmp_path / "loop.json"
    looped.write_text(json.dumps(data))
    out = tmp_path / "s"
    assert main(["sweep", dag, str(looped), "--grid", "sram=1MiB", "--out", str(out), "--jobs", "1"]) == 2
    assert "loop.json" in one_error(capsys)
    assert not out.exists()


def test_an_unknown_model_beside_a_good_one_leaves_no_folder(dag, tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["sweep", dag, "resnet5", "--grid", "sram=1MiB", "--out", str(out), "--jobs", "1"]) == 2
    assert "unknown model 'resnet5'" in one_error(capsys)
    assert not out.exists()


def _spoil(out: Path, how: str) -> Path:
    out.mkdir()
    if how == "random bytes":
        (out / "results.csv").write_bytes(bytes([0x80, 0xFF, 0x00, 0xC3]) * 64)
        return out / "results.csv"
    if how == "a folder named results.csv":
        (out / "results.csv").mkdir()
        return out / "results.csv"
    (out / "points").write_text("not a folder")
    return out / "points"


@pytest.mark.parametrize("how", ["random bytes", "a folder named results.csv", "points is a file"])
def test_an_unusable_results_folder_is_bad_input_naming_the_path(dag, tmp_path, capsys, how):
    out = tmp_path / "s"
    bad = _spoil(out, how)
    assert main(["sweep", dag, "--grid", "sram=2KiB", "--out", str(out), "--jobs", "1", "--no-plots"]) == 2
    line = one_error(capsys)
    assert str(bad) in line and "Errno" not in line and "codec" not in line, line
    assert sorted(p.name for p in out.iterdir()) == [bad.name]  # no point ran, nothing was added


@pytest.fixture
def finished(dag, tmp_path):
    """A sweep folder whose results.csv holds 2 rows; ``(dag, out, grid, lines)``."""
    out = tmp_path / "done"
    grid = ["sram=2KiB,4KiB"]
    run_sweep([dag], "pixel6", grid, out, jobs=1, plots=False)
    return dag, out, grid, (out / "results.csv").read_text().splitlines()


def _edit_row(line: str, column: int, value: str) -> str:
    cells = next(csv.reader([line]))
    cells[column] = value
    return ",".join(cells)


@pytest.mark.parametrize("edit, message", [
    (lambda line: _edit_row(line, -1, ""), "hash '' is not a point's hash"),
    (lambda line: line.rsplit(",", 3)[0], "the row is cut short"),
    (lambda line: line + ",extra", "18 fields, the header has 17"),
    (lambda line: _edit_row(line, 4, "٣٣"), "column cycles: '٣٣' is not an integer"),
    (lambda line: _edit_row(line, 4, "1e400"), "column cycles: '1e400' is not an integer"),
    (lambda line: _edit_row(line, 14, "maybe"), "column deterministic: 'maybe' is not True or False"),
    (lambda line: _edit_row(line, 3, ""), "no status"),
])
def test_a_malformed_row_names_the_file_and_line(finished, capsys, edit, message):
    dag, out, grid, lines = finished
    lines[2] = edit(lines[2])
    (out / "results.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError) as error:
        run_sweep([dag], "pixel6", grid, out, jobs=1, plots=False)
    assert str(error.value).startswith(f"{out / 'results.csv'}, line 3: {message}"), str(error.value)


def test_an_empty_results_file_is_a_fresh_start(finished):
    dag, out, grid, _ = finished
    (out / "results.csv").write_text("")
    again = run_sweep([dag], "pixel6", grid, out, jobs=1, plots=False)
    assert again.ran == 2 and len(rows_of(out / "results.csv")) == 2


def test_rows_of_other_points_are_kept_when_results_are_rewritten(finished):
    dag, out, _, lines = finished
    other = run_sweep([dag], "pixel6", ["sram=8KiB"], out, jobs=1, plots=False)
    assert other.ran == 1 and len(other.results) == 1
    rows = rows_of(out / "results.csv")
    assert [r["sram"] for r in rows] == ["8192", "2048", "4096"]  # this grid's first, then the others


# ------------------------------------------------------------------------------------------
# fuzzing the grid


KEYS = st.sampled_from(["sram", "sram_bytes_per_pe", "scheduler", "allocator", "budget", "dtype", "weights",
                        "compute.rows", "compute.kind", "dram_latency_cycles", "dram_bandwidth_bytes_per_s",
                        "dma.channels", "name", "colour", "", " sram ", "ｓram", "sram\u00a0"])
VALUES = st.one_of(st.sampled_from([
    "1", "٣", "１２", "𝟙", "²", "1KiB", "٣KiB", "1２KiB", "", " ", "MR", "mr", "MH", "program", "cosma", "online",
    "online-first-fit", "greedy-by-size", "true", "yes", "0", "-1", "1e9", "٣e9", "nan", "inf", "1_000", "0x10",
    "256KiB", "2.5", "bf16", "int8", "ideal", "systolic", "pixel", "9" * 30,
]), st.text(max_size=5))


#: values each key accepts, so that most drawn grids get past parsing to the points' checks
GOOD = {"sram": ["4KiB", "1MiB", "262144"], "sram_bytes_per_pe": ["8KiB", "2MiB"], "scheduler": ["program", "cosma"],
        "allocator": ["online", "auto", "greedy-by-size"], "budget": ["MR", "MP", "64KiB"], "dtype": ["bf16", "int8"],
        "weights": ["true", "no"], "compute.rows": ["8", "64"], "compute.kind": ["ideal", "systolic"],
        "dram_latency_cycles": ["0", "100"], "dram_bandwidth_bytes_per_s": ["1e9", "25.6e9"],
        "dma.channels": ["1", "4"], "name": ["a", "b.c"]}


@st.composite
def grid_texts(draw) -> list[str]:
    items: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.integers(0, 4)) == 0 and items:
            items.append(draw(st.sampled_from(items)))  # a key given twice
            continue
        key = draw(KEYS)
        good = st.sampled_from(GOOD.get(key.strip(), ["1"]))
        values = draw(st.lists(st.one_of(good, good, good, VALUES), min_size=draw(st.sampled_from([0, 1, 1, 1])),
                               max_size=4, unique=True))
        separator = draw(st.sampled_from(["="] * 8 + ["", ":"]))
        items.append(f"{key}{separator}{','.join(values)}")
    if draw(st.integers(0, 9)) == 0:  # a huge grid: each key with many distinct ASCII values
        for key in draw(st.lists(st.sampled_from(["dram_latency_cycles", "compute.rows", "dma.channels"]),
                                 min_size=2, max_size=3, unique=True)):
            items.append(f"{key}=" + ",".join(str(i) for i in range(1, draw(st.integers(20, 200)))))
    return items


def _numbers_come_from_ascii(items: list[str], grid: dict) -> None:
    for item in items:
        key, _, rest = item.partition("=")
        for text, value in zip(rest.split(","), grid[key.strip()], strict=True):
            if isinstance(value, int | float) and not isinstance(value, bool):
                assert text.isascii() and "_" not in text, (key, text, value)  # no '_' separators either


@settings(max_examples=60)
@given(grid_texts())
def test_grid_texts_parse_or_raise_value_error(items):
    try:
        grid = parse_grid(items, max_points=50)
    except ValueError as exc:
        assert "\n" not in str(exc)
        event("refused by parse_grid")
        return
    assert len(grid) == len(items)
    _numbers_come_from_ascii(items, grid)
    try:  # every point checked, as a sweep does before any work (resnet18: named, never traced here)
        plan = check_sweep(["resnet18"], "pixel6", items, jobs=1, max_points=50)
    except ValueError as exc:
        assert "\n" not in str(exc)
        event("refused by check_sweep")
        return
    event("a valid sweep")
    assert len(plan.points) == len(set(plan.hashes)) <= 50


OBJECTS = st.one_of(st.integers(-2, 1 << 70), st.floats(allow_nan=True), st.booleans(), st.none(), VALUES,
                    st.lists(st.integers(), max_size=2),
                    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1))


@settings(max_examples=60)
@given(st.dictionaries(KEYS, st.one_of(st.lists(OBJECTS, max_size=3), OBJECTS), max_size=3))
def test_grid_mappings_of_any_python_values_parse_or_raise_value_error(grid):
    try:
        parse_grid(grid, max_points=50)
    except ValueError as exc:
        assert "\n" not in str(exc)


def dies_at_8kib(task):
    """A point's work that kills its worker process for the 8 KiB point (module level: a spawned
    worker imports it by name)."""
    if dict(task.point.settings)["sram"] == 8192:
        os._exit(3)
    return {"hash": task.hash, "status": "ok"}, None


def test_a_local_worker_that_dies_is_one_row_and_the_others_stand(dag):
    base = Base("pixel6")
    points = grid_points([dag], parse_grid(["sram=2KiB,4KiB,8KiB,16KiB,32KiB"]))
    tasks = [Task(p, base, f"h{i}", dag) for i, p in enumerate(points)]
    rows = [row for row, _ in run_local(tasks, 2, work=dies_at_8kib)]
    by_hash = {row["hash"]: row["status"] for row in rows}
    assert sorted(by_hash) == [f"h{i}" for i in range(5)]  # every point has its one row
    assert by_hash.pop("h2").startswith(f"{WORKER_DIED}: its worker process died, also when it ran alone")
    assert set(by_hash.values()) == {"ok"}  # the point in flight beside it was run again, alone

"""What-if sweeps: models × a grid of hardware fields and run options, resumable, in parallel.

``accelsim sweep MODEL... --hw HW --grid KEY=V1,V2 [--grid ...] --out DIR`` and
``accelsim.sweep(models, hw, grid, out_dir=...)`` run the cartesian product of the grid for
every model and give one row per point (a pandas DataFrame; ``DIR/results.csv``).

Decisions (recorded here and in the README):

* **A point** is a model, a hardware config with overrides (any field ``--set`` accepts, dotted:
  ``compute.rows``, ``dram_bandwidth_bytes_per_s``, ``sram_bytes_per_pe``) and run options
  (``RUN_KEYS``: ``sram``, ``scheduler``, ``allocator``, ``budget``, ``dtype``, ``weights``).
  Values are parsed as ``--set`` parses them (units: ``256KiB``, ``25.6e9``; ASCII digits only),
  all of them before any work: an unknown key or a bad value raises ``ValueError`` naming it
  (exit 2).
* **One name per field**: a run key that sets a hardware field is the same field
  (``FIELD_ALIASES``: ``sram`` is ``sram_bytes_per_pe``). A field given twice, under either
  name, on the grid or once on the grid and once in ``--set`` or a run option (``--dtype``
  and ``--set dtype``), is refused naming both spellings: one would silently win, and the
  rows would be labelled with values never used. Two points that are one configuration
  (``allocator=online,online-first-fit``) are refused too.
* **A limit on the grid**: a sweep of more than ``MAX_POINTS`` (100,000) points, counted as
  models x the product of the value counts before any value is parsed or any point made, is
  refused naming the count, the limit and ``--max-points`` (``max_points=``), which raises it.
* **Nothing half-made**: every check that can refuse a sweep runs before ``DIR`` is created:
  the options and grid, every ``.json`` graph loaded and checked, the folder, ``points/`` (a
  folder) and ``results.csv`` (UTF-8 CSV of this grid, every row complete with a hash and
  numbers in ASCII: otherwise an error naming the file and line), the trace cache, Dask (the
  address answers, the cluster starts) and the tracing of every model.
* **Its hash** (``point_hash``) is over the effective configuration: the model, the storage
  dtype, the complete hardware config after the overrides (``HardwareConfig.to_dict``) and
  every run option. Two spellings of the same point (``256KiB`` and ``262144``) have one
  hash; a change to the bundled config changes it, so results never mix.
* **Results** are appended to ``DIR/results.csv`` as each point finishes (flushed, so Ctrl-C
  loses no finished point), and the full ``report.json`` of each point goes to
  ``DIR/points/HASH.json``. When the sweep ends, ``results.csv`` is rewritten in grid order.
  A failing point (below M_R, allocator failed, timeout) is a row whose ``status`` is the
  one-line reason; it never stops the others.
* **Budgets** are work, as in ``accelsim run``, so a point gives the same row on any worker
  and machine; its ``deterministic`` column is False when a wall-clock safety net among the
  base options (``timeout``, ``time_limit``) ended one of its searches.
* **Resume**: the points whose hash is already in ``results.csv`` are not run again (failed
  ones included: a point fails the same way twice; delete its row to retry it), except those
  whose worker died (``WORKER_DIED``), which depends on the machine. Rows of other points
  (an earlier sweep of other values into the same folder) are kept, after this grid's.
* **Tracing**: each (model, dtype) is traced once through the trace cache
  (``frontend.cache``), in the parent process, before the points run; workers get the graph
  as JSON (with the task on Dask, from the cache file locally) and keep it per process, so a
  point costs only its scheduling, allocation and simulation.
* **Executors**: ``local`` runs ``jobs`` worker processes (``spawn``: a forked copy of a
  process that already runs OR-Tools or numba threads can deadlock); ``jobs=1`` runs in this
  process. ``dask`` uses a ``distributed.LocalCluster`` of ``jobs`` single-threaded worker
  processes, or the scheduler at ``dask_address``. Both run the same ``run_point``, so they
  give identical numbers.
* **Dask fails fast**: ``dask_address`` is checked before anything is made
  (``check_dask_address``): a malformed address at once; then a plain TCP connection (a
  closed port is refused at once) and Dask's ``identity`` request, both within
  ``DASK_CONNECT_TIMEOUT`` (10 s), so a service that is not a Dask scheduler (an HTTP server,
  the dashboard's port 8787), which accepts the connection and never answers, is refused
  naming ``--dask-address`` instead of hanging.
* **Dask stops quietly**: the local cluster's threads and worker processes start with Ctrl-C
  held back (SIGINT blocked, which they inherit), so Ctrl-C reaches this process only; the
  sweep stops with every finished point in ``results.csv`` (``SweepInterrupted``: one line,
  exit 130) and the cluster is shut down with logging off (a worker stopped mid-task logs
  warnings that say nothing a user needs). The local cluster's own log lines are silenced at
  all times: every failure is in a point's row.
* **Dead workers** are reported per point. Locally, at most ``jobs`` points are in flight; when
  a worker process dies, each of them is run again alone, and one whose worker dies there too
  is a row whose status begins ``worker died`` (the others go on in a fresh pool). On Dask, a
  task that ends with ``KilledWorker`` (its worker
  process died ``allowed-failures`` + 1 times, e.g. out of memory), a closed connection to its
  worker or a cancellation by Dask is a row whose status begins ``worker died`` and says
  which; the other points go on, and a re-run runs it again.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import itertools
import json
import logging
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelsim.errors import one_line
from accelsim.hw import HardwareConfig, apply_overrides, load_hw, parse_value, schema_fields
from accelsim.pipeline import ONLINE_ALLOCATOR
from accelsim.sources import is_saved_graph, model_label
from accelsim.units import format_bytes, parse_bytes

#: the longest status a row of ``results.csv`` holds (a longer reason is cut, ending in "...")
STATUS_CHARS = 300

if TYPE_CHECKING:
    import pandas

#: grid keys that are run options rather than hardware fields
RUN_KEYS = ("sram", "scheduler", "allocator", "budget", "dtype", "weights")
#: the measured columns of ``results.csv``, after ``model``, ``hw`` and the grid keys.
#: ``deterministic`` is the report's: False when a wall-clock safety net (``timeout``,
#: ``time_limit`` among the base options) ended a search, so the point's numbers may differ on
#: another machine (empty for a point that failed)
METRICS = ("status", "cycles", "seconds", "utilization", "dram_read_bytes", "dram_write_bytes",
           "noncompulsory_bytes", "energy_j", "peak_bytes", "min_capacity_bytes", "scheduler_status", "deterministic",
           "wall_s", "hash")
#: ``allocator`` grid value for the program / min-peak schedulers' online first-fit arena
#: (short for ``online-first-fit``, which is accepted too)
ONLINE = "online"
EXECUTORS = ("local", "dask")
#: one field, two names: a grid key or run option -> the hardware field it sets. A sweep takes
#: each field under one name, in one place (``--grid``, ``--set`` or a run option)
FIELD_ALIASES: dict[str, str] = {"sram": "sram_bytes_per_pe"}
#: the most points (models x the grid's combinations) a sweep runs unless ``max_points``
#: (``--max-points``) raises it; counted before any point is made
MAX_POINTS = 100_000
#: seconds a Dask scheduler at ``dask_address`` has to answer (connect and handshake)
DASK_CONNECT_TIMEOUT = 10.0
#: how the status of a point whose Dask worker died (or whose task Dask lost) begins; unlike a
#: point that failed by itself, a re-run runs it again
WORKER_DIED = "worker died"
#: the run options ``accelsim sweep`` sets with a flag, for messages
_OPTION_FLAGS = {"scheduler": "--scheduler", "allocator": "--allocator", "timeout": "--timeout",
                 "time_limit": "--time-limit", "dtype": "--dtype", "budget": "--budget", "weights": "--no-weights"}

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


# --------------------------------------------------------------------------------------------
# the grid


def parse_grid_value(key: str, value: Any) -> Any:
    """``value`` (text as written, or already a Python value) as grid key ``key`` wants it.

    Hardware fields are parsed by their field's type, units and range (``accelsim.hw``); run
    options: ``sram`` bytes (positive), ``scheduler`` one of ``scheduler.SCHEDULERS``,
    ``allocator`` an allocator method or ``"online"``, ``budget`` ``MR``/``MH``/``MP`` or
    bytes, ``dtype`` a storage dtype, ``weights`` true/false. Raises ``ValueError`` naming
    the key and the value.

    >>> parse_grid_value("sram", "256KiB"), parse_grid_value("dram_bandwidth_bytes_per_s", "25.6e9")
    (262144, 25600000000.0)
    """
    text = value.strip() if isinstance(value, str) else value
    shown = _shown(value)
    if key == "sram":
        try:
            size = parse_bytes(text, "sram")
        except ValueError as exc:
            raise ValueError(f"--grid sram={shown}: {exc}") from None
        if size <= 0:
            raise ValueError(f"--grid sram={shown}: must be positive")
        return size
    if key == "scheduler":
        from scheduler import SCHEDULERS

        if not isinstance(text, str) or text not in SCHEDULERS:
            raise ValueError(f"--grid scheduler={shown}: unknown scheduler; valid: {', '.join(SCHEDULERS)}")
        return text
    if key == "allocator":
        import allocator

        if not isinstance(text, str) or (text not in (ONLINE, ONLINE_ALLOCATOR) and text not in allocator.METHODS):
            raise ValueError(f"--grid allocator={shown}: unknown allocator method; valid: {ONLINE} (the "
                             f"scheduler's own first fit), {', '.join(sorted(allocator.METHODS))}")
        return text
    if key == "budget":
        if isinstance(text, str) and text.upper() in ("MR", "MH", "MP"):
            return text.upper()
        try:
            size = parse_bytes(text, "budget")
        except ValueError as exc:
            raise ValueError(f"--grid budget={shown}: {exc}") from None
        if size <= 0:
            raise ValueError(f"--grid budget={shown}: must be MR, MH, MP or a positive number of bytes")
        return size
    if key == "dtype":
        from frontend import DTYPE_BYTES

        if not isinstance(text, str) or text not in DTYPE_BYTES:
            raise ValueError(f"--grid dtype={shown}: unknown dtype; valid: {', '.join(sorted(DTYPE_BYTES))}")
        return text
    if key == "weights":
        if isinstance(text, bool):
            return text
        if isinstance(text, str) and text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise ValueError(f"--grid weights={shown}: must be true or false")
    known = schema_fields()
    if key not in known:
        raise ValueError(f"--grid {_shown(key)}: unknown key; a hardware field (see `accelsim configs --fields`) or "
                         f"one of the run options {', '.join(RUN_KEYS)}")
    try:
        return parse_value(key, known[key], text)
    except ValueError as exc:
        raise ValueError(f"--grid {_shown(key)}={shown}: {exc}") from None


def parse_grid(items: Sequence[str] | Mapping[str, Sequence[Any]], *, models: int = 1,
               max_points: int | None = None) -> dict[str, list[Any]]:
    """The grid as ``{key: [parsed values]}``, from ``--grid KEY=V1,V2`` texts or a mapping.

    Keys keep the order given; a key given twice (also under another name, ``FIELD_ALIASES``:
    ``sram`` and ``sram_bytes_per_pe``), a key without values, a value given twice (after
    parsing: ``256KiB`` and ``262144`` are one value) or any bad value raises ``ValueError``
    naming it. With ``max_points``, a grid whose points (``models`` x the product of the value
    counts) are more is refused before any value is parsed.

    >>> parse_grid(["sram=1MiB,256KiB", "scheduler=program"])
    {'sram': [1048576, 262144], 'scheduler': ['program']}
    >>> parse_grid(["sram=1MiB", "sram_bytes_per_pe=2MiB"])
    Traceback (most recent call last):
    ...
    ValueError: --grid sram and --grid sram_bytes_per_pe set the same field (sram_bytes_per_pe): give it once
    """
    raw = _split_grid(items)
    check_one_name({"--grid": list(raw)})
    if max_points is not None:
        check_grid_size(models, {key: len(values) for key, values in raw.items()}, max_points)
    grid: dict[str, list[Any]] = {}
    for key, values in raw.items():
        if not values or any(isinstance(v, str) and not v.strip() for v in values):
            raise ValueError(f"--grid {_shown(key)}: empty value (give KEY=V1,V2,...)")
        parsed = [parse_grid_value(key, v) for v in values]
        first: dict[Any, int] = {}
        for i, v in enumerate(parsed):
            if v in first:
                raise ValueError(f"--grid {_shown(key)}: value {values[i]!r} given twice")
            first[v] = i
        grid[key] = parsed
    return grid


def _shown(value: Any) -> str:
    """``value`` for an error message: as written when it is plain printable text, else its repr
    (a newline or a control character in it would break the one-line message)."""
    return value if isinstance(value, str) and value.isprintable() else repr(value)


def _split_grid(items: Sequence[str] | Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
    """``{key: [values as given]}``: the ``--grid`` texts split, or the mapping's lists."""
    raw: dict[str, list[Any]] = {}
    if isinstance(items, Mapping):
        for key, values in items.items():
            if isinstance(values, str | bytes) or not isinstance(values, Iterable):
                raise ValueError(f"grid {key!r}: give a list of values, got {values!r}")
            if str(key) in raw:
                raise ValueError(f"grid {key!r}: given twice")
            raw[str(key)] = list(values)
        return raw
    if isinstance(items, str):
        items = [items]
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"--grid {item!r}: expected text KEY=V1,V2,..., e.g. sram=256KiB,1MiB")
        key, sep, rest = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--grid {item!r}: expected KEY=V1,V2,..., e.g. sram=256KiB,1MiB")
        if key in raw:
            raise ValueError(f"--grid {_shown(key)}: given twice")
        raw[key] = rest.split(",")
    return raw


def field_name(key: str) -> str:
    """The field a grid key, ``--set`` key or run option sets: its own name, or the hardware
    field it is another name for (``FIELD_ALIASES``)."""
    return FIELD_ALIASES.get(key, key)


def check_one_name(given: Mapping[str, Iterable[str]]) -> None:
    """Refuse a field given twice: under two names (``sram``, ``sram_bytes_per_pe``) or in two
    places. ``given`` maps a place (``"--grid"``, ``"--set"``, ``"options"``: the run options,
    named by their ``accelsim sweep`` flag) to the keys given there. The later one would
    silently win over the other, so the points would be labelled with a value they never used.

    >>> check_one_name({"--grid": ["sram"], "--set": ["sram_bytes_per_pe"]})
    Traceback (most recent call last):
    ...
    ValueError: --grid sram and --set sram_bytes_per_pe set the same field (sram_bytes_per_pe): give it once
    """
    seen: dict[str, str] = {}
    for place, keys in given.items():
        for key in keys:
            label = _OPTION_FLAGS.get(key, f"option {_shown(key)}") if place == "options" else f"{place} {_shown(key)}"
            name = field_name(key)
            if name in seen:
                raise ValueError(f"{seen[name]} and {label} set the same field ({name}): give it once")
            seen[name] = label


def check_grid_size(models: int, counts: Mapping[str, int], max_points: int) -> int:
    """The number of points, ``models`` x the product of the value ``counts``; refused with
    ``ValueError`` naming the count, the limit and ``--max-points`` when above ``max_points``.
    Nothing is made: a grid of 10 keys x 10 values is refused at once, not after 10^10 points."""
    if isinstance(max_points, bool) or not isinstance(max_points, int) or max_points < 1:
        raise ValueError(f"--max-points must be a positive integer, got {max_points!r}")
    count = models * math.prod(counts.values())
    if count > max_points:
        models_text = f"{models} model{'s' if models != 1 else ''}"
        factors = " x ".join([models_text, *(f"{n} {_shown(key)}" for key, n in counts.items())])
        raise ValueError(f"the sweep has {count:,} points ({factors}), more than the limit of {max_points:,}; "
                         f"raise it with --max-points {count} (max_points= in Python) if you mean it")
    return count


# --------------------------------------------------------------------------------------------
# points


@dataclass(frozen=True)
class Point:
    """One grid point: a model and the grid values (key -> parsed value), in grid order."""

    model: str
    settings: tuple[tuple[str, Any], ...]

    def hw_overrides(self) -> dict[str, Any]:
        return {k: v for k, v in self.settings if k not in RUN_KEYS}

    def run_settings(self) -> dict[str, Any]:
        return {k: v for k, v in self.settings if k in RUN_KEYS}

    def label(self) -> str:
        parts = [f"{k}={format_bytes(v) if k in ('sram', 'sram_bytes_per_pe') and isinstance(v, int) else v}"
                 for k, v in self.settings]
        return " ".join([model_label(self.model), *parts])


def grid_points(models: Sequence[str], grid: Mapping[str, Sequence[Any]]) -> list[Point]:
    """Every model × the cartesian product of the grid, models outermost, keys in grid order."""
    keys = list(grid)
    combos = list(itertools.product(*(grid[k] for k in keys))) if keys else [()]
    return [Point(model, tuple(zip(keys, combo, strict=True))) for model in models for combo in combos]


@dataclass(frozen=True)
class Base:
    """What every point shares: the hardware config (name or path) and its fixed overrides, and
    the run options the grid does not vary (``accelsim.RunOptions`` field names)."""

    hw: str
    overrides: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)


#: bundled or YAML configs already read in this process (reading and checking one takes ~30 ms)
_CONFIGS: dict[str, HardwareConfig] = {}


def config_of(hw: str) -> HardwareConfig:
    """The config ``hw`` names, read once per process."""
    if hw not in _CONFIGS:
        _CONFIGS[hw] = load_hw(hw)
    return _CONFIGS[hw]


def effective(point: Point, base: Base) -> tuple[HardwareConfig, dict[str, Any]]:
    """The point's hardware config and its ``RunOptions`` fields (the grid over the base)."""
    config = apply_overrides(config_of(base.hw), {**dict(base.overrides), **point.hw_overrides()})
    options = dict(base.options)
    run = point.run_settings()
    if "sram" in run:
        config = config.with_sram(run.pop("sram"))
    if "allocator" in run:
        chosen = run.pop("allocator")
        options["allocator"] = ONLINE_ALLOCATOR if chosen == ONLINE else chosen
    options.update(run)
    if options.get("allocator") == ONLINE_ALLOCATOR and str(options.get("scheduler", "program")).startswith("cosma"):
        options["allocator"] = None  # "online" = the scheduler's own placement: a COSMA schedule's is its addresses
    options.setdefault("dtype", None)
    if options["dtype"] is None:
        options["dtype"] = config.dtype
    return config, options


def point_hash(point: Point, base: Base) -> str:
    """A short digest of the point's effective configuration (see the module docstring)."""
    return config_hash(point, *effective(point, base))


def config_hash(point: Point, config: HardwareConfig, options: Mapping[str, Any]) -> str:
    """``point_hash`` of an already computed ``effective(point, base)``."""
    payload = {"model": point.model, "hw": config.to_dict(), "options": {k: options[k] for k in sorted(options)}}
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# running one point (in a worker)

#: graphs already loaded in this process, by their source (a cache file or a tag)
_GRAPHS: dict[str, Any] = {}


@dataclass(frozen=True)
class Task:
    """Everything a worker needs for one point; plain data, so it pickles to any worker."""

    point: Point
    base: Base
    hash: str
    graph_key: str  #: identifies the graph (the cache file's path)
    graph_json: dict[str, Any] | None = None  #: the graph itself when the worker cannot read the file


def _graph(task: Task) -> Any:
    import frontend
    from frontend.graph import graph_from_json

    if task.graph_key not in _GRAPHS:
        if task.graph_json is not None:
            _GRAPHS[task.graph_key] = graph_from_json(task.graph_json)
        else:
            _GRAPHS[task.graph_key] = frontend.load_graph(task.graph_key)
    return _GRAPHS[task.graph_key]


def run_point(task: Task) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Compile and simulate one point: its ``results.csv`` row and its ``report.json`` content
    (None when it failed). Never raises for a point that cannot run: the row says why."""
    from accelsim.pipeline import CompileError, RunOptions, compile_and_simulate
    from accelsim.sim import SimulationError

    began = time.perf_counter()
    row: dict[str, Any] = {"model": model_label(task.point.model), "hw": task.base.hw}
    row.update({k: _cell(v) for k, v in task.point.settings})
    report = None
    try:
        config, options = effective(task.point, task.base)
        graph = _graph(task)
        options.pop("dtype", None)  # the graph is traced in it already
        options.pop("input_shape", None)
        result = compile_and_simulate(graph, hw=config, options=RunOptions(**options))
        report = result.to_dict()
        row.update(status="ok" if result.ok else f"memory check failed: {result.memory_check}",
                   cycles=result.cycles, seconds=result.seconds, utilization=result.utilization,
                   dram_read_bytes=result.dram_read_bytes, dram_write_bytes=result.dram_write_bytes,
                   noncompulsory_bytes=result.noncompulsory_bytes, energy_j=result.energy.get("total"),
                   peak_bytes=result.peak_bytes, min_capacity_bytes=result.min_capacity_bytes,
                   scheduler_status=result.scheduler_status, deterministic=result.deterministic)
    except (ValueError, CompileError, SimulationError) as exc:
        row["status"] = one_line(exc, STATUS_CHARS)
    row["wall_s"] = round(time.perf_counter() - began, 4)
    row["hash"] = task.hash
    return row, report


def _cell(value: Any) -> Any:
    return value if isinstance(value, int | float | str) else str(value)


# --------------------------------------------------------------------------------------------
# executors


Work = Callable[[Task], tuple[dict[str, Any], dict[str, Any] | None]]


def run_local(tasks: Sequence[Task], jobs: int, work: Work | None = None,
           ) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Each task's ``work`` (``run_point``) result as it finishes, from ``jobs`` spawned workers.

    At most ``jobs`` tasks are in flight, so when a worker process dies (out of memory, a crash
    in compiled code: the pool breaks and every task in flight fails with it) the suspects are
    known: each is run again alone, in a fresh one-worker pool, and a task whose worker dies
    there too is a row whose status begins ``worker died``; the others' results stand, and the
    remaining tasks go on in a fresh pool.
    """
    work = work or run_point
    if jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield work(task)
        return
    from collections import deque
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    todo = deque(tasks)
    pool = _pool(jobs)
    try:
        running: dict[Any, Task] = {}
        while todo or running:
            while todo and len(running) < jobs:
                task = todo.popleft()
                running[pool.submit(work, task)] = task
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            suspects: list[Task] = []
            for future in done:
                task = running.pop(future)
                try:
                    result = future.result()
                except BrokenProcessPool:
                    suspects.append(task)
                else:
                    yield result
            if suspects:  # the pool is broken: every task still in flight failed with it
                suspects.extend(running.values())
                running.clear()
                pool.shutdown(wait=False, cancel_futures=True)
                for task in suspects:
                    yield _alone(task, work)
                pool = _pool(jobs)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _pool(jobs: int) -> Any:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_worker_setup)


def _alone(task: Task, work: Work) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``work(task)`` in a worker of its own: its result, or a ``worker died`` row when that worker dies too."""
    from concurrent.futures.process import BrokenProcessPool

    pool = _pool(1)
    try:
        return pool.submit(work, task).result()
    except BrokenProcessPool:
        return dead_worker_row(task, f"{WORKER_DIED}: its worker process died, also when it ran alone (out of "
                                     "memory or a crash in the worker process); a re-run runs it again"), None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _worker_setup() -> None:
    """A worker process: one thread for the numeric libraries (each process is one core's
    worth), and Ctrl-C left to the parent, which stops the sweep (no traceback per worker)."""
    import signal

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def check_dask_address(address: str, timeout: float = DASK_CONNECT_TIMEOUT) -> None:
    """Refuse ``address`` unless a Dask scheduler answers there within ``timeout`` seconds.

    A malformed address, a host that cannot be resolved, a closed port, a host that never
    answers, and a service that is not a Dask scheduler (an HTTP server such as the dashboard's
    port 8787 accepts the connection and then never completes Dask's handshake) all raise
    ``ValueError`` naming ``--dask-address``. The check opens a plain TCP connection first (a
    closed port is refused at once), then asks the scheduler who it is, all within ``timeout``.
    """
    _, host, port = parse_dask_address(address)

    def refuse(reason: str) -> ValueError:
        return ValueError(f"--dask-address {address}: {reason}")

    deadline = time.monotonic() + timeout
    if host is not None:
        import socket

        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except socket.gaierror as exc:
            raise refuse(f"cannot resolve the host {host!r} ({exc.strerror})") from None
        except TimeoutError:
            raise refuse(f"no answer within {timeout:g} s") from None
        except OSError as exc:
            raise refuse(f"cannot connect ({exc.strerror or one_line(exc, STATUS_CHARS)})") from None
    reply = _ask_identity(address.strip(), max(deadline - time.monotonic(), 0.1))
    if isinstance(reply, BaseException):
        if isinstance(reply, TimeoutError):  # asyncio's too, since Python 3.11
            raise refuse(f"no Dask scheduler answered within {timeout:g} s (another service listens there, e.g. "
                         "the dashboard's port 8787? a scheduler listens on 8786 by default)")
        raise refuse(f"cannot connect to a Dask scheduler ({one_line(reply, STATUS_CHARS)})")
    if not isinstance(reply, dict) or reply.get("type") != "Scheduler":
        what = reply.get("type") if isinstance(reply, dict) else type(reply).__name__
        raise refuse(f"the service there is not a Dask scheduler (it is a {what})")


def _ask_identity(address: str, timeout: float) -> Any:
    """The reply of the scheduler at ``address`` to Dask's ``identity`` request, or the exception
    that stopped it, within ``timeout`` seconds. It runs on its own thread and event loop, so it
    works from inside a running loop too (a notebook)."""
    import asyncio
    import threading

    from distributed.comm import connect
    from distributed.security import Security

    async def ask() -> Any:
        comm = await connect(address, timeout=timeout, **Security().get_connection_args("client"))
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(asyncio.run(asyncio.wait_for(ask(), timeout)))
        except Exception as exc:  # handed to the caller, which names the option
            outcome.append(exc)

    thread = threading.Thread(target=run, name="accelsim dask address check", daemon=True)
    thread.start()
    thread.join(timeout + 5)  # wait_for ends it at timeout; the margin is for a loop slow to stop
    return outcome[0] if outcome else TimeoutError()


@contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """Hold Ctrl-C back (SIGINT blocked) while Dask starts its threads and worker processes.

    Both inherit the blocked signal, so a later Ctrl-C reaches this process only, which stops
    the sweep and closes the cluster; otherwise every worker gets it too and prints its own
    tracebacks while the cluster shuts down. A Ctrl-C pressed meanwhile arrives on release.

    multiprocessing's resource tracker is started first: starting it unblocks SIGINT in the
    thread that does it, which would otherwise be Dask's, the one that spawns the workers."""
    import signal
    import threading
    from multiprocessing import resource_tracker

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    resource_tracker.ensure_running()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


class DaskExecutor:
    """Dask for one sweep: a ``LocalCluster`` of ``jobs`` single-threaded worker processes, or
    the scheduler at ``address`` (checked first, ``check_dask_address``). Made before the
    sweep's folder, so a sweep Dask refuses leaves nothing behind; ``close`` ends it."""

    def __init__(self, jobs: int, address: str | None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:  # pragma: no cover - dask is a dependency
            raise ValueError("--executor dask needs dask[distributed] installed (pip install 'dask[distributed]')"
                             ) from None
        self.cluster: Any = None
        self.client: Any = None
        try:
            if address is None:
                with _ctrl_c_held():
                    # Dask's own log lines are silenced: every failure is in a point's row
                    self.cluster = LocalCluster(n_workers=max(jobs, 1), threads_per_worker=1, processes=True,
                                                dashboard_address=None, silence_logs=logging.CRITICAL)
                    self.client = Client(self.cluster)
            else:
                check_dask_address(address)
                try:
                    self.client = Client(address, timeout=f"{DASK_CONNECT_TIMEOUT:g}s")
                except (OSError, TimeoutError, ValueError) as exc:
                    raise ValueError(f"--dask-address {address}: cannot connect to a Dask scheduler: "
                                     f"{one_line(exc, STATUS_CHARS)}") from None
        except BaseException:
            self.close(quiet=True)
            raise

    def run(self, tasks: Sequence[Task]) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
        """Each task's ``run_point`` result as it finishes; a task whose worker died (or that Dask
        lost) is a row whose status says so (``WORKER_DIED``), and the others go on."""
        from asyncio import CancelledError

        from distributed import as_completed

        futures = {self.client.submit(run_point, task, pure=False): task for task in tasks}
        for future in as_completed(futures):
            try:
                result = future.result()
            except (Exception, CancelledError) as exc:  # asyncio's CancelledError is no Exception
                reason = dead_worker_reason(exc)
                if reason is None:
                    raise
                yield dead_worker_row(futures[future], reason), None
            else:
                yield result

    def close(self, quiet: bool = False) -> None:
        """End the client (and the cluster this sweep started). ``quiet`` (after Ctrl-C): the
        shutdown of workers stopped mid-task logs warnings and tracebacks that say nothing a user
        needs, so logging is off until it is done."""
        if quiet:
            logging.disable(logging.CRITICAL)
        try:
            with _ctrl_c_held():  # a second Ctrl-C waits for the cluster to be down
                for part in (self.client, self.cluster):
                    if part is not None:
                        with contextlib.suppress(Exception):
                            part.close()
        finally:
            self.client = self.cluster = None
            if quiet:
                logging.disable(logging.NOTSET)


def dead_worker_reason(exc: BaseException) -> str | None:
    """The status of a point whose Dask task ended by ``exc`` without ``run_point`` returning:
    its worker died (``KilledWorker``: Dask retried it on ``allowed-failures`` + 1 workers that
    all died), the connection to it closed, or Dask cancelled it (a lost scheduler). None for
    any other exception, which is a bug and propagates."""
    import asyncio
    import concurrent.futures

    from distributed import KilledWorker
    from distributed.comm import CommClosedError

    if isinstance(exc, KilledWorker):
        tries = exc.allowed_failures + 1
        why = f"the Dask worker running it died ({tries} time{'s' if tries > 1 else ''}, KilledWorker: out of memory " \
              "or a crash in the worker process)"
    elif isinstance(exc, CommClosedError):
        why = f"the connection to its Dask worker closed ({type(exc).__name__}: {one_line(exc, STATUS_CHARS)})"
    elif isinstance(exc, concurrent.futures.CancelledError | asyncio.CancelledError):  # Dask's is the first
        why = f"Dask cancelled it ({one_line(exc, STATUS_CHARS)})"
    else:
        return None
    return f"{WORKER_DIED}: {why}; a re-run runs it again"


def dead_worker_row(task: Task, reason: str) -> dict[str, Any]:
    """The ``results.csv`` row of a point that did not come back from its worker."""
    row: dict[str, Any] = {"model": model_label(task.point.model), "hw": task.base.hw}
    row.update({k: _cell(v) for k, v in task.point.settings})
    row.update(status=reason, wall_s=0.0, hash=task.hash)
    return row


# --------------------------------------------------------------------------------------------
# the sweep


@dataclass
class SweepOutcome:
    """What a sweep did: the table and the counts (``accelsim sweep`` prints them)."""

    results: pandas.DataFrame
    ran: int  #: points run now
    skipped: int  #: points found in results.csv already
    failed: int  #: rows (of all) whose status is not ok
    traced: int  #: graphs traced now (trace cache misses)
    plots: list[Path] = field(default_factory=list)
    seconds: float = 0.0


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped the sweep; every point finished before it is in ``results.csv``."""

    def __init__(self, ran: int, total: int, skipped: int) -> None:
        super().__init__(f"{ran} of {total} points done ({skipped} more from an earlier run)")
        self.ran, self.total, self.skipped = ran, total, skipped


class Progress:
    """Progress on stderr: a tqdm bar with ETA on a terminal, plain lines otherwise."""

    def __init__(self, total: int, enabled: bool = True, stream: Any = None) -> None:
        self.total, self.done = total, 0
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.began = time.perf_counter()
        self.bar = None
        if self.enabled and hasattr(self.stream, "isatty") and self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, file=self.stream, unit="point", dynamic_ncols=True)

    def update(self, row: Mapping[str, Any], label: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.set_postfix_str(label[:60], refresh=False)
            self.bar.update(1)
            return
        elapsed = time.perf_counter() - self.began
        eta = elapsed / self.done * (self.total - self.done)
        status = row.get("status", "")
        print(f"[{self.done}/{self.total}] {label}: {status} "
              f"({row.get('wall_s', 0):.2f} s; ETA {eta:.0f} s)", file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _columns(keys: Sequence[str]) -> list[str]:
    return ["model", "hw", *keys, *METRICS]


def sweep(
    models: Sequence[str],
    hw: str = "pixel6",
    grid: Sequence[str] | Mapping[str, Sequence[Any]] = (),
    out_dir: str | Path | None = None,
    *,
    executor: str = "local",
    jobs: int | None = None,
    dask_address: str | None = None,
    cache_dir: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    plots: bool = True,
    progress: bool = False,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    max_points: int = MAX_POINTS,
) -> pandas.DataFrame:
    """Run ``models`` × ``grid`` on ``hw`` and return one row per point (see the module docstring).

    ``grid`` is ``--grid`` texts (``["sram=256KiB,1MiB"]``) or a mapping of key -> values.
    ``overrides`` are hardware fields every point shares (``--set``), ``options`` fixed
    ``RunOptions`` fields (e.g. ``{"scheduler": "min-peak"}``). With ``out_dir`` the results
    are kept (and resumed) there, with plots unless ``plots=False``. ``jobs`` defaults to the
    number of cores. A grid of more than ``max_points`` points is refused. Raises ``ValueError``
    for bad input before any point runs and before ``out_dir`` is made.
    """
    return run_sweep(models, hw, grid, out_dir, executor=executor, jobs=jobs, dask_address=dask_address,
                     cache_dir=cache_dir, overrides=overrides, options=options, plots=plots, progress=progress,
                     on_row=on_row, max_points=max_points).results


def read_results(path: Path, keys: Sequence[str]) -> list[dict[str, str]]:
    """The rows of an earlier run's ``results.csv``, each checked; its columns must be this grid's.

    A file that is not UTF-8 CSV text, whose header is another grid's, or with a row that is
    cut short, has a field too many, no status, a hash that is not one, or a number that is
    not one (ASCII digits only) raises ``ValueError`` naming the file and the line. An empty
    file has no rows.
    """
    rows: list[dict[str, str]] = []
    line = 1
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames
            if header is None:
                return rows
            if header != _columns(keys):
                raise ValueError(f"{path}: its columns ({', '.join(header)}) are not this sweep's "
                                 f"({', '.join(_columns(keys))}); use another --out folder")
            for row in reader:
                line = reader.line_num
                problem = _row_problem(row, keys)
                if problem:
                    raise ValueError(f"{path}, line {line}: {problem}; correct or delete the row (a re-run then runs "
                                     "its point again)")
                rows.append(row)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a sweep's results file (byte {exc.start} is not UTF-8 text); move it away "
                         "or use another --out folder") from None
    except csv.Error as exc:
        raise ValueError(f"{path}, line {line + 1}: not CSV ({exc}); move it away or use another --out folder"
                         ) from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read ({exc.strerror or one_line(exc, STATUS_CHARS)})") from None
    return rows


_HASH = re.compile(r"[0-9a-f]{16}", re.ASCII)


def _row_problem(row: Mapping[str | None, Any], keys: Sequence[str]) -> str | None:
    """Why a row read from ``results.csv`` cannot be used, or None."""
    if None in row:
        return f"{len(row) - 1 + len(row[None])} fields, the header has {len(row) - 1}"
    missing = [name for name, value in row.items() if value is None]
    if missing:
        return f"the row is cut short (no {', '.join(str(m) for m in missing[:3])} field)"
    if not _HASH.fullmatch(row["hash"] or ""):
        return f"hash {row['hash']!r} is not a point's hash (16 hex digits)"
    if not row["status"]:
        return "no status"
    try:
        _typed(row, keys)  # type: ignore[arg-type]
    except ValueError as exc:
        return str(exc)
    return None


def check_results_folder(out: Path, keys: Sequence[str]) -> list[dict[str, str]]:
    """Check that ``out`` can hold this sweep's results, before anything is made there: it is
    (or can become) a writable folder, ``points`` in it is a folder, ``results.csv`` a readable
    file of this grid (``read_results``). Returns the rows already there; raises ``ValueError``
    naming the path."""
    from accelsim.outputs import check_output_folder

    check_output_folder(out, "--out")
    points = out / "points"
    if points.exists() and not points.is_dir():
        raise ValueError(f"{points}: a file where the sweep keeps one report per point (a folder); move it away "
                         "or use another --out folder")
    if points.is_dir() and not os.access(points, os.W_OK | os.X_OK):
        raise ValueError(f"{points}: the folder is not writable")
    results = out / "results.csv"
    staging = results.with_suffix(".csv.tmp")
    if staging.is_dir():
        raise ValueError(f"{staging}: a folder where the sweep writes results.csv before moving it in place; "
                         "move it away")
    if not results.exists():
        if results.is_symlink():
            raise ValueError(f"{results}: a link to nothing; move it away or use another --out folder")
        return []
    if not results.is_file():
        what = "a folder" if results.is_dir() else "not a regular file"
        raise ValueError(f"{results}: {what}, where the sweep keeps its results table; move it away or use another "
                         "--out folder")
    if not os.access(results, os.R_OK | os.W_OK):
        raise ValueError(f"{results}: cannot be read and written")
    return read_results(results, keys)


@dataclass
class SweepPlan:
    """A sweep checked before any work (``check_sweep``): every point, its hash and the dtype
    its graph is traced in, and the graphs of the ``.json`` models (each loaded and checked)."""

    keys: list[str]
    base: Base
    points: list[Point]
    hashes: list[str]
    dtypes: list[str]
    graphs: dict[str, Any]  #: ``.json`` model -> its graph
    workers: int


def check_sweep(
    models: Sequence[str],
    hw: str = "pixel6",
    grid: Sequence[str] | Mapping[str, Sequence[Any]] = (),
    *,
    executor: str = "local",
    jobs: int | None = None,
    dask_address: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    max_points: int = MAX_POINTS,
) -> SweepPlan:
    """Every check of ``run_sweep`` that needs neither its folder nor Dask nor tracing: the
    options, the grid (its size before any point is made), one name per field, the config with
    every point's values, the models (a ``.json`` graph is loaded and checked) and that no two
    points are one configuration. Raises ``ValueError`` naming the item."""
    from accelsim.pipeline import RunOptions

    if isinstance(models, str):
        models = [models]
    if not models:
        raise ValueError("give at least one model")
    if len(set(models)) != len(models):
        raise ValueError("a model is named twice")
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; valid: {', '.join(EXECUTORS)}")
    if dask_address is not None:
        if executor != "dask":
            raise ValueError("--dask-address applies to --executor dask only")
        parse_dask_address(dask_address)
    workers = (os.cpu_count() or 1) if jobs is None else jobs
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    parsed = parse_grid(grid, models=len(models), max_points=max_points)
    keys = list(parsed)
    base_options = dict(options or {})
    fixed = dict(overrides or {})
    if "overrides" in base_options:
        raise ValueError("give hardware fields as overrides= (--set), not as the run option 'overrides'")
    check_one_name({"--grid": keys, "--set": list(fixed), "options": list(base_options)})
    RunOptions.build(None, **base_options)  # unknown option names raise here
    base = Base(str(hw), fixed, base_options)
    apply_overrides(config_of(base.hw), base.overrides)  # an unknown config or bad --set fails now, naming it
    graphs: dict[str, Any] = {}
    for model in models:
        if not isinstance(model, str) or not model:
            raise ValueError(f"model {model!r}: give a zoo name or a graph saved as .json")
        if is_saved_graph(model):
            if any("dtype" in place for place in (keys, base_options, fixed)):
                raise ValueError(f"{model}: dtype cannot apply to a graph already traced (its dtype was fixed then); "
                                 "sweep the zoo model's name instead")
            if not Path(model).is_file():
                raise ValueError(f"{model}: no such graph file")
            import frontend

            graphs[model] = frontend.load_graph(model)  # a bad graph (a cycle, a bad field) is refused now
        else:
            from frontend.zoo import check_model_name

            check_model_name(model)
    points = grid_points(models, parsed)
    hashes: list[str] = []
    dtypes: list[str] = []
    first: dict[str, Point] = {}
    for point in points:
        config, opts = effective(point, base)  # every point's config is checked before any work
        RunOptions(**opts).check()
        digest = config_hash(point, config, opts)
        if digest in first:
            raise ValueError(f"the points {first[digest].label()!r} and {point.label()!r} are one configuration; "
                             "give each value once")
        first[digest] = point
        hashes.append(digest)
        dtypes.append(str(opts["dtype"]))
    return SweepPlan(keys, base, points, hashes, dtypes, graphs, workers)


def parse_dask_address(address: Any) -> tuple[str, str | None, int | None]:
    """(scheme, host, port) of a ``--dask-address``; ``ValueError`` naming the option when it is
    not an address (``host`` and ``port`` are None for schemes other than tcp and tls)."""
    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port
    from distributed.comm.registry import backends

    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"--dask-address {address!r}: give a Dask scheduler's address, e.g. tcp://host:8786")
    try:
        scheme, location = parse_address(address.strip())
        if scheme not in backends:
            raise ValueError(f"unknown scheme {scheme!r}: use {', '.join(sorted(backends))}")
        if scheme not in ("tcp", "tls"):
            return scheme, None, None
        host, port = parse_host_port(location)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"--dask-address {address}: not an address ({one_line(exc, STATUS_CHARS)}); e.g. tcp://host:8786"
                         ) from None
    if not host or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"--dask-address {address}: not an address (host {host!r}, port {port!r}); "
                         "e.g. tcp://host:8786")
    return scheme, host, port


def run_sweep(
    models: Sequence[str],
    hw: str = "pixel6",
    grid: Sequence[str] | Mapping[str, Sequence[Any]] = (),
    out_dir: str | Path | None = None,
    *,
    executor: str = "local",
    jobs: int | None = None,
    dask_address: str | None = None,
    cache_dir: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    plots: bool = True,
    progress: bool = False,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    max_points: int = MAX_POINTS,
) -> SweepOutcome:
    """``sweep`` with the counts of what it did (``SweepOutcome``).

    Everything that can refuse the sweep happens before its folder is made: ``check_sweep``,
    the folder and its ``results.csv`` (``check_results_folder``), the trace cache, Dask (the
    address answers, the cluster starts) and the tracing of every model.
    """
    import pandas as pd

    began = time.perf_counter()
    plan = check_sweep(models, hw, grid, executor=executor, jobs=jobs, dask_address=dask_address,
                       overrides=overrides, options=options, max_points=max_points)
    keys = plan.keys
    out = Path(out_dir) if out_dir is not None else None
    done: dict[str, dict[str, Any]] = {}
    others: list[dict[str, Any]] = []  # rows of results.csv that are not this grid's points: kept
    results_csv = None
    if out is not None:
        results_csv = out / "results.csv"
        ours = set(plan.hashes)
        for row in check_results_folder(out, keys):
            if row["hash"] not in ours:
                others.append(row)
            elif not row["status"].startswith(WORKER_DIED):  # that point runs again
                done[row["hash"]] = row
    others = list({row["hash"]: row for row in others}.values())

    todo = [i for i, h in enumerate(plan.hashes) if h not in done]
    skipped = len(plan.points) - len(todo)
    if any(not is_saved_graph(plan.points[i].model) for i in todo):
        from frontend.cache import check_cache_dir, default_cache_dir

        check_cache_dir(cache_dir if cache_dir is not None else default_cache_dir())
    ran = 0
    dask = None
    interrupted = False
    try:
        if todo and executor == "dask":
            dask = DaskExecutor(plan.workers, dask_address)
        tasks, traced = _tasks(plan, todo, cache_dir, inline=executor == "dask" and dask_address is not None)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / "points").mkdir(exist_ok=True)
        bar = Progress(len(tasks), enabled=progress)
        labels = {t.hash: t.point.label() for t in tasks}
        handle = None
        try:
            if results_csv is not None:
                fresh = not results_csv.exists() or results_csv.stat().st_size == 0
                handle = open(results_csv, "w" if fresh else "a", newline="", encoding="utf-8")
                writer = csv.DictWriter(handle, fieldnames=_columns(keys), lineterminator="\n")
                if fresh:
                    writer.writeheader()
                elif not _ends_with_newline(results_csv):
                    handle.write("\n")  # a file edited by hand: the next row starts on its own line
                handle.flush()
            stream = dask.run(tasks) if dask is not None else run_local(tasks, plan.workers)
            for row, report in stream:
                ran += 1
                if out is not None and report is not None:
                    _write_json(out / "points" / f"{row['hash']}.json", report)
                if handle is not None:
                    writer.writerow(row)
                    handle.flush()
                done[row["hash"]] = row
                bar.update(row, labels.get(row["hash"], row["hash"]))
                if on_row is not None:
                    on_row(row)
        except KeyboardInterrupt:
            raise SweepInterrupted(ran, len(tasks), skipped) from None
        finally:
            bar.close()
            if handle is not None:
                handle.close()
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        if dask is not None:
            dask.close(quiet=interrupted)
    table = pd.DataFrame([_typed(done[h], keys) for h in plan.hashes if h in done], columns=_columns(keys))
    if results_csv is not None:
        staging = results_csv.with_suffix(".csv.tmp")
        whole = pd.concat([table, pd.DataFrame([_typed(r, keys) for r in others], columns=_columns(keys))]) \
            if others else table
        whole.to_csv(staging, index=False)
        os.replace(staging, results_csv)
    written: list[Path] = []
    if out is not None and plots:
        from accelsim.sweep_plots import plot_sweep

        written = plot_sweep(table, keys, out)
    failed = int((table["status"] != "ok").sum()) if len(table) else 0
    return SweepOutcome(table, ran, skipped, failed, traced, written, time.perf_counter() - began)


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def _tasks(plan: SweepPlan, todo: Sequence[int], cache_dir: str | Path | None,
           inline: bool) -> tuple[list[Task], int]:
    """The tasks of the points ``todo`` (indices into the plan) and how many graphs were traced
    now: each (model, dtype) is traced once (through the trace cache) or loaded, before any runs."""
    from frontend.graph import graph_to_json

    sources: dict[tuple[str, str], str] = {}
    graph_json: dict[str, dict[str, Any]] = {}
    traced = 0
    shape = plan.base.options.get("input_shape")
    tasks = []
    for i in todo:
        point, dtype = plan.points[i], plan.dtypes[i]
        key = (point.model, dtype)
        if key not in sources:
            if point.model in plan.graphs:
                source, graph = str(Path(point.model).resolve()), plan.graphs[point.model]
            else:
                from frontend.cache import cached_trace

                cached = cached_trace(point.model, dtype, tuple(shape) if shape else None, cache_dir)
                source, graph = str(cached.path), cached.graph
                traced += 0 if cached.hit else 1
            sources[key] = source
            if inline:
                graph_json[source] = graph_to_json(graph)
        source = sources[key]
        tasks.append(Task(point, plan.base, plan.hashes[i], source, graph_json.get(source)))
    return tasks, traced


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    staging = path.with_suffix(".json.tmp")
    staging.write_text(json.dumps(data, indent=1, default=str))
    os.replace(staging, path)


_INTS = {"cycles", "dram_read_bytes", "dram_write_bytes", "noncompulsory_bytes", "peak_bytes", "min_capacity_bytes"}
_FLOATS = {"seconds", "utilization", "energy_j", "wall_s"}
_BOOLS = {"deterministic"}


def _typed(row: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """A row with numbers as numbers (rows read back from results.csv are text). A measured
    column whose text is not its type (ASCII digits only) raises ``ValueError`` naming it."""
    out: dict[str, Any] = {}
    for name in _columns(keys):
        value = row.get(name)
        if value in ("", None):
            out[name] = None
        elif isinstance(value, str) and name in _INTS | _FLOATS | _BOOLS:
            out[name] = _measured(name, value)
        elif name in _INTS:
            out[name] = int(value)
        elif name in _FLOATS:
            out[name] = float(value)
        elif name in keys and isinstance(value, str):
            out[name] = _number_or_text(value)
        else:
            out[name] = value
    return out


def _measured(name: str, text: str) -> Any:
    """A measured column's value from its text in results.csv."""
    if name in _BOOLS:
        if text not in ("True", "False"):
            raise ValueError(f"column {name}: {text!r} is not True or False")
        return text == "True"
    number = _ascii_number(text)
    if number is None or not math.isfinite(number) or (name in _INTS and not float(number).is_integer()):
        raise ValueError(f"column {name}: {text!r} is not {'an integer' if name in _INTS else 'a number'}")
    return int(number) if name in _INTS else float(number)


def _ascii_number(text: str) -> int | float | None:
    """``text`` as an int or a float, or None; ASCII only (int() and float() read any Unicode
    digit: '٣' as 3)."""
    if not text.isascii():
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


def _number_or_text(text: str) -> Any:
    number = _ascii_number(text)
    if number is None:
        return {"True": True, "False": False}.get(text, text)
    return number if math.isfinite(number) else text

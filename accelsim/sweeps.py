"""What-if sweeps: models × a grid of hardware fields and run options, resumable, in parallel.

``accelsim sweep MODEL... --hw HW --grid KEY=V1,V2 [--grid ...] --out DIR`` and
``accelsim.sweep(models, hw, grid, out_dir=...)`` run the cartesian product of the grid for
every model and give one row per point (a pandas DataFrame; ``DIR/results.csv``).

Decisions (recorded here and in the README):

* **A point** is a model, a hardware config with overrides (any field ``--set`` accepts, dotted:
  ``compute.rows``, ``dram_bandwidth_bytes_per_s``, ``sram_bytes_per_pe``) and run options
  (``RUN_KEYS``: ``sram``, ``scheduler``, ``allocator``, ``budget``, ``dtype``, ``weights``).
  Values are parsed as ``--set`` parses them (units: ``256KiB``, ``25.6e9``), all of them
  before any work: an unknown key or a bad value raises ``ValueError`` naming it (exit 2).
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
  ones included: a point fails the same way twice; delete its row to retry it).
* **Tracing**: each (model, dtype) is traced once through the trace cache
  (``frontend.cache``), in the parent process, before the points run; workers get the graph
  as JSON (with the task on Dask, from the cache file locally) and keep it per process, so a
  point costs only its scheduling, allocation and simulation.
* **Executors**: ``local`` runs ``jobs`` worker processes (``spawn``: a forked copy of a
  process that already runs OR-Tools or numba threads can deadlock); ``jobs=1`` runs in this
  process. ``dask`` uses a ``distributed.LocalCluster`` of ``jobs`` single-threaded worker
  processes, or the scheduler at ``dask_address``. Both run the same ``run_point``, so they
  give identical numbers.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelsim.hw import (
    HardwareConfig,
    apply_overrides,
    format_bytes,
    load_hw,
    parse_bytes,
    parse_value,
    schema_fields,
)
from accelsim.pipeline import ONLINE_ALLOCATOR

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
    if key == "sram":
        size = parse_bytes(text, "sram")
        if size <= 0:
            raise ValueError(f"--grid sram={value}: must be positive")
        return size
    if key == "scheduler":
        from scheduler import SCHEDULERS

        if text not in SCHEDULERS:
            raise ValueError(f"--grid scheduler={value}: unknown scheduler; valid: {', '.join(SCHEDULERS)}")
        return text
    if key == "allocator":
        import allocator

        if text not in (ONLINE, ONLINE_ALLOCATOR) and text not in allocator.METHODS:
            raise ValueError(f"--grid allocator={value}: unknown allocator method; valid: {ONLINE} (the "
                             f"scheduler's own first fit), {', '.join(sorted(allocator.METHODS))}")
        return text
    if key == "budget":
        if isinstance(text, str) and text.upper() in ("MR", "MH", "MP"):
            return text.upper()
        size = parse_bytes(text, "budget")
        if size <= 0:
            raise ValueError(f"--grid budget={value}: must be MR, MH, MP or a positive number of bytes")
        return size
    if key == "dtype":
        from frontend import DTYPE_BYTES

        if text not in DTYPE_BYTES:
            raise ValueError(f"--grid dtype={value}: unknown dtype; valid: {', '.join(sorted(DTYPE_BYTES))}")
        return text
    if key == "weights":
        if isinstance(text, bool):
            return text
        if isinstance(text, str) and text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise ValueError(f"--grid weights={value}: must be true or false")
    known = schema_fields()
    if key not in known:
        raise ValueError(f"--grid {key}: unknown key; a hardware field (see `accelsim configs --fields`) or one "
                         f"of the run options {', '.join(RUN_KEYS)}")
    try:
        return parse_value(key, known[key], text)
    except ValueError as exc:
        raise ValueError(f"--grid {key}={value}: {exc}") from None


def parse_grid(items: Sequence[str] | Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
    """The grid as ``{key: [parsed values]}``, from ``--grid KEY=V1,V2`` texts or a mapping.

    Keys keep the order given; a key given twice, a key without values, a value given twice
    (after parsing: ``256KiB`` and ``262144`` are one value) or any bad value raises
    ``ValueError`` naming it.

    >>> parse_grid(["sram=1MiB,256KiB", "scheduler=program"])
    {'sram': [1048576, 262144], 'scheduler': ['program']}
    """
    raw: dict[str, list[Any]] = {}
    if isinstance(items, Mapping):
        for key, values in items.items():
            if isinstance(values, str | bytes) or not isinstance(values, Iterable):
                raise ValueError(f"grid {key!r}: give a list of values, got {values!r}")
            raw[str(key)] = list(values)
    else:
        for item in items:
            key, sep, rest = item.partition("=")
            key = key.strip()
            if not sep or not key:
                raise ValueError(f"--grid {item!r}: expected KEY=V1,V2,..., e.g. sram=256KiB,1MiB")
            if key in raw:
                raise ValueError(f"--grid {key}: given twice")
            raw[key] = [v for v in rest.split(",")]
    grid: dict[str, list[Any]] = {}
    for key, values in raw.items():
        if not values or any(isinstance(v, str) and not v.strip() for v in values):
            raise ValueError(f"--grid {key}: empty value (give KEY=V1,V2,...)")
        parsed = [parse_grid_value(key, v) for v in values]
        for i, v in enumerate(parsed):
            if v in parsed[:i]:
                raise ValueError(f"--grid {key}: value {values[i]!r} given twice")
        grid[key] = parsed
    return grid


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


def model_label(model: str) -> str:
    """The ``model`` column: the zoo name, or a saved graph's file name without ``.json``."""
    return Path(model).stem if model.endswith(".json") else model


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


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
        row["status"] = _one_line(exc)
    row["wall_s"] = round(time.perf_counter() - began, 4)
    row["hash"] = task.hash
    return row, report


def _cell(value: Any) -> Any:
    return value if isinstance(value, int | float | str) else str(value)


# --------------------------------------------------------------------------------------------
# executors


def _local(tasks: Sequence[Task], jobs: int) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
    if jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield run_point(task)
        return
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_worker_setup)
    try:
        pending = {pool.submit(run_point, task) for task in tasks}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _worker_setup() -> None:
    """A worker process: one thread for the numeric libraries (each process is one core's
    worth), and Ctrl-C left to the parent, which stops the sweep (no traceback per worker)."""
    import signal

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _dask(tasks: Sequence[Task], jobs: int, address: str | None,
          ) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:  # pragma: no cover - dask is a dependency
        raise ValueError("--executor dask needs dask[distributed] installed (pip install 'dask[distributed]')"
                         ) from None
    cluster = None
    if address is None:
        cluster = LocalCluster(n_workers=max(jobs, 1), threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise ValueError(f"--dask-address {address}: cannot connect to a Dask scheduler: "
                             f"{_one_line(exc)}") from None
    try:
        futures = [client.submit(run_point, task, pure=False) for task in tasks]
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


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


def read_results(path: Path, keys: Sequence[str]) -> list[dict[str, str]]:
    """The rows of an earlier run's ``results.csv``; its columns must be this grid's."""
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        if header != _columns(keys):
            raise ValueError(f"{path}: its columns ({', '.join(header)}) are not this sweep's "
                             f"({', '.join(_columns(keys))}); use another --out folder")
        return list(reader)


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
) -> pandas.DataFrame:
    """Run ``models`` × ``grid`` on ``hw`` and return one row per point (see the module docstring).

    ``grid`` is ``--grid`` texts (``["sram=256KiB,1MiB"]``) or a mapping of key -> values.
    ``overrides`` are hardware fields every point shares (``--set``), ``options`` fixed
    ``RunOptions`` fields (e.g. ``{"scheduler": "min-peak"}``). With ``out_dir`` the results
    are kept (and resumed) there, with plots unless ``plots=False``. ``jobs`` defaults to the
    number of cores. Raises ``ValueError`` for bad input before any point runs.
    """
    return run_sweep(models, hw, grid, out_dir, executor=executor, jobs=jobs, dask_address=dask_address,
                     cache_dir=cache_dir, overrides=overrides, options=options, plots=plots, progress=progress,
                     on_row=on_row).results


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
) -> SweepOutcome:
    """``sweep`` with the counts of what it did (``SweepOutcome``)."""
    import pandas as pd

    from accelsim.pipeline import RunOptions

    began = time.perf_counter()
    if not models:
        raise ValueError("give at least one model")
    if len(set(models)) != len(models):
        raise ValueError("a model is named twice")
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; valid: {', '.join(EXECUTORS)}")
    if dask_address is not None and executor != "dask":
        raise ValueError("--dask-address applies to --executor dask only")
    workers = (os.cpu_count() or 1) if jobs is None else jobs
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    parsed = parse_grid(grid)
    keys = list(parsed)
    base_options = dict(options or {})
    RunOptions.build(None, **base_options)  # unknown option names raise here
    clash = sorted(set(keys) & (set(base_options) | set(overrides or {})))
    if clash:
        raise ValueError(f"--grid {clash[0]}: also fixed by --set or a run option; vary it in one place")
    base = Base(str(hw), dict(overrides or {}), base_options)
    apply_overrides(config_of(base.hw), base.overrides)  # an unknown config or bad --set fails now, naming it
    points = grid_points(models, parsed)
    hashes = []
    run_dtype: dict[Point, str] = {}
    for point in points:
        config, opts = effective(point, base)  # every point's config is checked before any work
        RunOptions(**opts).check()
        hashes.append(config_hash(point, config, opts))
        run_dtype[point] = str(opts["dtype"])
    for model in models:
        _check_model(model)
        if model.endswith(".json") and ("dtype" in keys or "dtype" in base_options):
            raise ValueError(f"{model}: dtype cannot apply to a graph already traced (its dtype was fixed then); "
                             "sweep the zoo model's name instead")

    out = Path(out_dir) if out_dir is not None else None
    done: dict[str, dict[str, Any]] = {}
    results_csv = None
    if out is not None:
        from accelsim.outputs import check_output_folder

        check_output_folder(out, "--out")
        out.mkdir(parents=True, exist_ok=True)
        (out / "points").mkdir(exist_ok=True)
        results_csv = out / "results.csv"
        if results_csv.exists():
            for row in read_results(results_csv, keys):
                done[row["hash"]] = row

    todo = [(p, h) for p, h in zip(points, hashes, strict=True) if h not in done]
    skipped = len(points) - len(todo)
    if any(not p.model.endswith(".json") for p, _ in todo):
        from frontend.cache import check_cache_dir, default_cache_dir

        check_cache_dir(cache_dir if cache_dir is not None else default_cache_dir())
    # trace what the points need, once each, before they run
    graphs: dict[tuple[str, str], str] = {}
    traced = 0
    inline = executor == "dask" and dask_address is not None
    graph_json: dict[str, dict[str, Any]] = {}
    shape = base_options.get("input_shape")
    for point, _ in todo:
        key = (point.model, run_dtype[point])
        if key in graphs:
            continue
        source, hit, data = _trace(point.model, run_dtype[point], shape, cache_dir, inline)
        graphs[key] = source
        traced += 0 if hit else 1
        if data is not None:
            graph_json[source] = data
    tasks = []
    for point, digest in todo:
        source = graphs[(point.model, run_dtype[point])]
        tasks.append(Task(point, base, digest, source, graph_json.get(source)))

    bar = Progress(len(tasks), enabled=progress)
    labels = {t.hash: t.point.label() for t in tasks}
    ran = 0
    handle = None
    writer = None
    try:
        if results_csv is not None:
            fresh = not results_csv.exists()
            handle = open(results_csv, "a", newline="")
            writer = csv.DictWriter(handle, fieldnames=_columns(keys), lineterminator="\n")
            if fresh:
                writer.writeheader()
                handle.flush()
        stream = _local(tasks, workers) if executor == "local" else _dask(tasks, workers, dask_address)
        for row, report in stream:
            ran += 1
            if out is not None and report is not None:
                _write_json(out / "points" / f"{row['hash']}.json", report)
            if writer is not None and handle is not None:
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
    table = pd.DataFrame([_typed(done[h], keys) for h in hashes if h in done], columns=_columns(keys))
    if results_csv is not None:
        staging = results_csv.with_suffix(".csv.tmp")
        table.to_csv(staging, index=False)
        os.replace(staging, results_csv)
    written: list[Path] = []
    if out is not None and plots:
        from accelsim.sweep_plots import plot_sweep

        written = plot_sweep(table, keys, out)
    failed = int((table["status"] != "ok").sum()) if len(table) else 0
    return SweepOutcome(table, ran, skipped, failed, traced, written, time.perf_counter() - began)


def _check_model(model: str) -> None:
    if model.endswith(".json"):
        if not Path(model).is_file():
            raise ValueError(f"{model}: no such graph file")
        return
    from frontend.zoo import check_model_name

    check_model_name(model)


def _trace(model: str, dtype: str, input_shape: Any, cache_dir: str | Path | None,
           inline: bool) -> tuple[str, bool, dict[str, Any] | None]:
    """(graph source for the workers, cache hit, the graph as JSON when it travels with the tasks)."""
    from frontend.graph import graph_to_json

    if model.endswith(".json"):
        import frontend

        graph = frontend.load_graph(model)
        return str(Path(model).resolve()), True, graph_to_json(graph) if inline else None
    from frontend.cache import cached_trace

    cached = cached_trace(model, dtype, tuple(input_shape) if input_shape else None, cache_dir)
    return str(cached.path), cached.hit, graph_to_json(cached.graph) if inline else None


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    staging = path.with_suffix(".json.tmp")
    staging.write_text(json.dumps(data, indent=1, default=str))
    os.replace(staging, path)


_INTS = {"cycles", "dram_read_bytes", "dram_write_bytes", "noncompulsory_bytes", "peak_bytes", "min_capacity_bytes"}
_FLOATS = {"seconds", "utilization", "energy_j", "wall_s"}
_BOOLS = {"deterministic"}


def _typed(row: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """A row with numbers as numbers (rows read back from results.csv are text)."""
    out: dict[str, Any] = {}
    for name in _columns(keys):
        value = row.get(name)
        if value in ("", None):
            out[name] = None
        elif name in _INTS:
            out[name] = int(float(value))
        elif name in _FLOATS:
            out[name] = float(value)
        elif name in _BOOLS:
            out[name] = value if isinstance(value, bool) else value == "True"
        elif name in keys and isinstance(value, str):
            out[name] = _number_or_text(value)
        else:
            out[name] = value
    return out


def _number_or_text(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return {"True": True, "False": False}.get(text, text)
    return number if math.isfinite(number) else text

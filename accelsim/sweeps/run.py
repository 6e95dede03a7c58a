"""The sweep itself: ``check_sweep`` (every check before any work), ``run_sweep`` / ``sweep``,
its outcome, Ctrl-C (``SweepInterrupted``) and progress. See ``accelsim.sweeps``.
"""

from __future__ import annotations

import csv
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelsim.hw import apply_overrides
from accelsim.outputs import Output, check_outputs
from accelsim.sources import input_files, is_saved_graph
from accelsim.sweeps.executors import WORKER_DIED, DaskExecutor, Task, parse_dask_address, run_local
from accelsim.sweeps.grid import (
    INPUT_OPTIONS,
    MAX_POINTS,
    OPTION_FLAGS,
    Base,
    Point,
    check_one_name,
    config_hash,
    config_of,
    effective,
    generation_of,
    grid_points,
    parse_grid,
)
from accelsim.sweeps.index_html import write_index, write_point_page, write_point_pages
from accelsim.sweeps.results import (
    SWEEP_FILES,
    check_results_folder,
    ends_with_newline,
    result_columns,
    typed_row,
    write_json,
)

if TYPE_CHECKING:
    import pandas


EXECUTORS = ("local", "dask")


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
    inputs = RunOptions.build(None, **{k: base_options[k] for k in INPUT_OPTIONS if k in base_options})
    inputs.check()
    for model in models:
        if not isinstance(model, str) or not model:
            raise ValueError(f"model {model!r}: give a zoo name, a user model path/to/file.py:FUNCTION or a graph "
                             "saved as .json")
        if is_saved_graph(model):
            if any("dtype" in place for place in (keys, base_options, fixed)):
                raise ValueError(f"{model}: dtype cannot apply to a graph already traced (its dtype was fixed then); "
                                 "sweep the zoo model's name instead")
            chosen = [f"--grid {k}" if k in keys else OPTION_FLAGS[k] for k in INPUT_OPTIONS
                      if k in base_options or k in keys]
            if chosen:
                raise ValueError(f"{model}: {', '.join(chosen)} cannot apply to a graph already traced (its shapes "
                                 "were fixed then); sweep the model itself instead")
            if not Path(model).is_file():
                raise ValueError(f"{model}: no such graph file")
            import frontend

            graphs[model] = frontend.load_graph(model)  # a bad graph (a cycle, a bad field) is refused now
        else:
            from accelsim.pipeline import check_model
            from frontend.user_model import is_user_model
            from frontend.zoo import check_model_name

            if not is_user_model(model):
                check_model_name(model)
            for batch in parsed.get("batch", [inputs.batch]):  # each model with every batch it runs at
                check_model(model, RunOptions.build(inputs, batch=batch))
    points = grid_points(models, parsed)
    hashes: list[str] = []
    dtypes: list[str] = []
    first: dict[str, Point] = {}
    for point in points:
        config, opts = effective(point, base)  # every point's config is checked before any work
        run_opts = dict(opts)
        steps = generation_of(run_opts)
        RunOptions(**run_opts).check()
        if steps is not None:
            from accelsim.generation import check_generation

            check_generation(point.model, *steps)
        digest = config_hash(point, config, opts)
        if digest in first:
            raise ValueError(f"the points {first[digest].label()!r} and {point.label()!r} are one configuration; "
                             "give each value once")
        first[digest] = point
        hashes.append(digest)
        dtypes.append(str(opts["dtype"]))
    return SweepPlan(keys, base, points, hashes, dtypes, graphs, workers)


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
    out = None
    if out_dir is not None:
        # absolute before any user model's build() runs in this process (it may change the working folder)
        inputs = [pair for model in dict.fromkeys(p.model for p in plan.points) for pair in input_files(model).items()]
        out = check_outputs([Output("--out", out_dir, folder=True, files=SWEEP_FILES)],
                            inputs + list(input_files(None, hw).items()))[0]
    if cache_dir is not None:
        cache_dir = Path(cache_dir).expanduser().absolute()
    results_csv = out / "results.csv" if out is not None else None
    done, others = _earlier_rows(plan, out)

    todo = [i for i, h in enumerate(plan.hashes) if h not in done]
    skipped = len(plan.points) - len(todo)
    if any(not is_saved_graph(plan.points[i].model) for i in todo):
        from frontend.cache import check_cache_dir, default_cache_dir

        check_cache_dir(cache_dir if cache_dir is not None else default_cache_dir())
    ran = 0
    dask = None
    interrupted = False
    sources = {h: p.model for h, p in zip(plan.hashes, plan.points, strict=True)}  # each point's model, by hash
    try:
        if todo and executor == "dask":
            dask = DaskExecutor(plan.workers, dask_address)
        tasks, traced = _tasks(plan, todo, cache_dir, inline=executor == "dask" and dask_address is not None)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / "points").mkdir(exist_ok=True)
        bar = Progress(len(tasks), enabled=progress)
        labels = {t.hash: t.point.describe() for t in tasks}
        handle = None
        try:
            if results_csv is not None:
                handle, writer = _open_results(results_csv, keys)
            stream = dask.run(tasks) if dask is not None else run_local(tasks, plan.workers)
            for row, report in stream:
                ran += 1
                if out is not None:
                    if report is not None:
                        write_json(out / "points" / f"{row['hash']}.json", report)
                    write_point_page(out, row, keys, report, plan.base, sources[row["hash"]])
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
    table = pd.DataFrame([typed_row(done[h], keys) for h in plan.hashes if h in done], columns=result_columns(keys))
    if results_csv is not None:
        _rewrite_results(results_csv, table, others, keys)
    written: list[Path] = []
    if out is not None and plots:
        from accelsim.sweeps.plots import plot_sweep

        written = plot_sweep(table, keys, out)
    if out is not None:
        # the points of an earlier run, when it wrote no pages
        write_point_pages(out, table, plan.base, sources)
        over = ", ".join(keys) or "models"
        write_index(table, written, out, title=f"accelsim sweep: {len(table)} points over {over}")
    failed = int((table["status"] != "ok").sum()) if len(table) else 0
    return SweepOutcome(table, ran, skipped, failed, traced, written, time.perf_counter() - began)


def _earlier_rows(plan: SweepPlan, out: Path | None) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The rows of ``out/results.csv`` (checked, ``check_results_folder``): this grid's points
    already done, by hash (not those whose worker died: they run again), and the rows of other
    points, which are kept (one per hash)."""
    done: dict[str, dict[str, Any]] = {}
    others: list[dict[str, Any]] = []  # rows of results.csv that are not this grid's points: kept
    if out is not None:
        ours = set(plan.hashes)
        for row in check_results_folder(out, plan.keys):
            if row["hash"] not in ours:
                others.append(row)
            elif not row["status"].startswith(WORKER_DIED):  # that point runs again
                done[row["hash"]] = row
    return done, list({row["hash"]: row for row in others}.values())


def _open_results(results_csv: Path, keys: Sequence[str]) -> tuple[Any, Any]:
    """``results.csv`` open for the rows to come (its header written when it is new or empty)
    and its CSV writer."""
    fresh = not results_csv.exists() or results_csv.stat().st_size == 0
    handle = open(results_csv, "w" if fresh else "a", newline="", encoding="utf-8")
    try:
        writer = csv.DictWriter(handle, fieldnames=result_columns(keys), lineterminator="\n")
        if fresh:
            writer.writeheader()
        elif not ends_with_newline(results_csv):
            handle.write("\n")  # a file edited by hand: the next row starts on its own line
        handle.flush()
    except BaseException:
        handle.close()
        raise
    return handle, writer


def _rewrite_results(results_csv: Path, table: pandas.DataFrame, others: Sequence[Mapping[str, Any]],
                     keys: Sequence[str]) -> None:
    """``results.csv`` rewritten in grid order, the rows of other points after this grid's."""
    import pandas as pd

    staging = results_csv.with_suffix(".csv.tmp")
    whole = pd.concat([table, pd.DataFrame([typed_row(r, keys) for r in others], columns=result_columns(keys))]) \
        if others else table
    whole.to_csv(staging, index=False)
    os.replace(staging, results_csv)


def _tasks(plan: SweepPlan, todo: Sequence[int], cache_dir: str | Path | None,
           inline: bool) -> tuple[list[Task], int]:
    """The tasks of the points ``todo`` (indices into the plan) and how many graphs were traced
    now: each (model, dtype, batch) is traced once (through the trace cache, at the sweep's input
    shapes and model options) or loaded, before any runs."""
    from frontend.graph import graph_to_json

    sources: dict[tuple[str, str, int | None], str] = {}
    graph_json: dict[str, dict[str, Any]] = {}
    traced = 0
    shape = plan.base.options.get("input_shape")
    model_options = dict(plan.base.options.get("model_options") or {}) or None
    from frontend.trace import Tracing

    tracing = Tracing(plan.base.options.get("trace_method", "auto"), tuple(plan.base.options.get("host", ())))
    tasks = []
    for i in todo:
        point, dtype = plan.points[i], plan.dtypes[i]
        if "decode" in point.run_settings():  # a generation traces its own steps (accelsim.generation)
            tasks.append(Task(point, plan.base, plan.hashes[i], ""))
            continue
        batch = point.run_settings().get("batch", plan.base.options.get("batch"))
        key = (point.model, dtype, batch)
        if key not in sources:
            saved = True  # False: the graph is in no file a worker can read
            if point.model in plan.graphs:
                source, graph = str(Path(point.model).resolve()), plan.graphs[point.model]
            else:
                from frontend.cache import cached_trace

                cached = cached_trace(point.model, dtype, shape, cache_dir, batch=batch, options=model_options,
                                      tracing=tracing)
                source, graph = str(cached.path), cached.graph
                traced += 0 if cached.hit else 1
                saved = cached.saved
            sources[key] = source
            if inline or not saved:
                graph_json[source] = graph_to_json(graph)
        source = sources[key]
        tasks.append(Task(point, plan.base, plan.hashes[i], source, graph_json.get(source)))
    return tasks, traced

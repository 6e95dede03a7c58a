"""``accelsim bench``: allocation methods over benchmark CSV files, every solution validated.

One row per instance, capacity and method: buffers, LOAD, status, peak, % over LOAD, seconds
(median of the repeats), search nodes (``telamalloc``: steps) and microseconds per node. The
first call of a numba-compiled method pays for loading (or compiling) its machine code, so
every method is warmed up once on tiny problems first (``warm_up``) and that time is reported
separately, never mixed into the solve times.

A method name ``telamalloc:STRATEGY`` runs ``telamalloc`` with one of the block-selection
strategies of TelaMalloc Fig. 14 (``max-size``, ``max-area``, ``max-lifetime``,
``lowest-position``, ``telamalloc``); ``strategy_summary`` counts their failures and the
geometric mean of their steps, as the figure does.
"""

from __future__ import annotations

import csv
import math
import re
import statistics
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from allocator.core.csv_io import read_csv
from allocator.core.problem import AllocationResult, MinimizeResult, Problem, UnknownMethodError
from allocator.core.registry import METHODS, solve
from allocator.core.validate import InvalidSolutionError, lower_bound, validate
from allocator.search import anytime, warmup
from allocator.search.warmup import Mode

_CAPACITY_IN_NAME = re.compile(r"\.(\d+)\.csv$")


@dataclass
class BenchRow:
    instance: str
    method: str
    buffers: int
    load: int
    capacity: int | None  #: None when minimising
    status: str
    peak: int | None
    lower_bound: int | None  #: best proven bound (minimise mode), else None
    over_load_percent: float | None
    seconds: float  #: median over the repeats
    nodes: int
    #: (seconds, % over LOAD) each time the best peak improved, in the last repeat (for ``--plot``;
    #: not written to the CSV)
    trace: list[tuple[float, float]] = field(default_factory=list)
    reason: str = ""  #: why the status is not solved/optimal (the method's reason, or the error of a bad file)
    read_seconds: float = 0.0  #: reading and checking the instance's CSV (once per file)
    load_seconds: float = 0.0  #: computing its LOAD (once per file)
    timeout: float | None = None  #: the time limit the method had (seconds), so a row says what bound it

    def csv_record(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in CSV_FIELDS}


CSV_FIELDS = ("instance", "method", "buffers", "load", "capacity", "status", "peak", "lower_bound",
              "over_load_percent", "seconds", "nodes", "reason", "read_seconds", "load_seconds",
              "timeout")


def instance_files(paths: Iterable[str | Path]) -> list[Path]:
    """CSV files named by ``paths`` (a folder stands for the CSV files in it, sorted)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(path.glob("*.csv"))
            if not found:
                raise ValueError(f"{path}: no .csv files in this folder")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise ValueError(f"{path}: no such file or folder")
    return files


def capacity_from_name(path: Path) -> int:
    """The capacity in a name like ``A.1048576.csv``."""
    match = _CAPACITY_IN_NAME.search(path.name)
    if not match:
        raise ValueError(f"{path}: no capacity in the file name (expected NAME.<bytes>.csv)")
    return int(match.group(1))


def parse_method(spec: str) -> tuple[str, dict[str, object]]:
    """A bench method spec as (registered method, options): ``telamalloc:max-size`` picks a strategy.

    >>> parse_method("telamalloc:max-area")[1]["options"].selection
    'area'
    """
    name, _, variant = spec.partition(":")
    if name not in METHODS:
        raise UnknownMethodError(
            f"unknown allocator method {name!r}; known: {', '.join(sorted(METHODS))}")
    if not variant:
        return name, {}
    from allocator.methods.telamalloc import STRATEGIES, TelaMallocOptions  # its kernels load only when it is asked for

    if name != "telamalloc":
        raise ValueError(f"method {spec!r}: only telamalloc takes a strategy after ':'")
    if variant not in STRATEGIES:
        raise ValueError(f"method {spec!r}: unknown strategy {variant!r}; known: {', '.join(STRATEGIES)}")
    return name, {"options": TelaMallocOptions.strategy(variant)}


def warm_up(methods: Sequence[str], mode: Mode = "minimize") -> dict[str, float]:
    """Load (or compile) each method's kernels on tiny problems; return the seconds each took.

    ``allocator.search.warmup.warm_up`` per method spec (``telamalloc:max-area`` warms that strategy):
    ``mode="fit"`` loads only what ``solve`` reaches (``accelsim alloc`` and ``bench`` without
    ``--minimize``: a ``minimalloc`` fit then loads neither the greedy placement nor the
    starting heuristics); ``"minimize"`` (the default) also what ``minimize`` reaches,
    so no compilation happens inside a timed run of either kind.
    """
    spent = {}
    for method in methods:
        name, extra = parse_method(method)
        spent[method] = warmup.warm_up(name, mode, extra.get("options"))
    return spent


def run(files: Sequence[Path], methods: Sequence[str], capacity: int | None = None, from_name: bool = False,
        minimize: bool = False, timeout: float = 10.0, repeat: int = 1, threads: int = 0,
        load_fractions: Sequence[float] = ()) -> list[BenchRow]:
    """All the rows of ``iter_rows`` as a list."""
    return list(iter_rows(files, methods, capacity, from_name, minimize, timeout, repeat, threads, load_fractions))


def iter_rows(files: Sequence[Path], methods: Sequence[str], capacity: int | None = None, from_name: bool = False,
              minimize: bool = False, timeout: float = 10.0, repeat: int = 1, threads: int = 0,
              load_fractions: Sequence[float] = ()) -> Iterator[BenchRow]:
    """Benchmark ``methods`` on ``files``, yielding each row as soon as it is measured.

    The capacity is ``capacity``, the one in the file name (``from_name``), none
    (``minimize``), or, for each of ``load_fractions``, that multiple of the instance's LOAD
    rounded up (one row each). ``threads`` is the number of threads of the ``minimalloc``
    portfolio (0: one per core; 1 compares like for like with a single-threaded tool). Other
    methods are single-threaded.

    Every placement is validated; an invalid one raises ``InvalidSolutionError`` (a method bug
    must stop the benchmark). A bad instance (unreadable file, malformed line, no capacity in
    its name, a problem a method refuses) does not: it gives one row with status ``"error"``
    and the reason, naming the file, and the other files go on.
    """
    specs = {method: parse_method(method) for method in methods}
    if repeat < 1:
        raise ValueError(f"--repeat must be at least 1, got {repeat}")
    if threads < 0:
        raise ValueError(f"--threads must be 0 (one per core) or more, got {threads}")
    if not timeout > 0 or not math.isfinite(timeout):
        raise ValueError(f"--timeout must be a positive, finite number of seconds, got {timeout!r}")
    for fraction in load_fractions:
        if not fraction > 0 or not math.isfinite(fraction):
            raise ValueError(f"--load-fraction values must be positive and finite, got {fraction!r}")
    from allocator.methods.minimalloc import MiniMallocOptions

    options = MiniMallocOptions(workers=threads)
    for path in files:
        try:
            began = time.perf_counter()
            problem = read_csv(path, capacity=None)
            read_seconds = time.perf_counter() - began
            began = time.perf_counter()
            load = lower_bound(problem)
            load_seconds = time.perf_counter() - began
            if load_fractions:
                capacities: list[int | None] = [math.ceil(fraction * load) for fraction in load_fractions]
            elif minimize:
                capacities = [None]
            else:
                capacities = [capacity_from_name(path) if from_name else capacity]
        except (ValueError, OSError) as exc:
            yield _error_row(path, "-", exc)
            continue
        for cap in capacities:
            try:
                instance = problem.with_capacity(cap)
            except ValueError as exc:
                yield _error_row(path, "-", exc)
                continue
            for method in methods:
                name, extra = specs[method]
                if name == "minimalloc":
                    extra = {"options": options}
                times: list[float] = []
                last: MinimizeResult | AllocationResult | None = None
                try:
                    for _ in range(repeat):
                        began = time.perf_counter()
                        if minimize:
                            last = anytime.minimize(instance, method=name, timeout=timeout,
                                                      options=extra.get("options"))  # type: ignore[arg-type]
                        else:
                            last = solve(instance, name, timeout, **extra)
                        times.append(time.perf_counter() - began)
                except InvalidSolutionError:
                    raise
                except ValueError as exc:  # the method refuses this instance (e.g. values beyond its range)
                    yield _error_row(path, method, exc, len(problem), load, cap)
                    continue
                row = _row(path, method, instance, load, cap, last, statistics.median(times), minimize)
                row.read_seconds, row.load_seconds, row.timeout = read_seconds, load_seconds, timeout
                yield row


def _error_row(path: Path, method: str, exc: BaseException, buffers: int = 0, load: int = 0,
               capacity: int | None = None) -> BenchRow:
    message = " ".join(str(exc).split("\n")).strip() or type(exc).__name__
    if path.name not in message:
        message = f"{path}: {message}"
    return BenchRow(path.name, method, buffers, load, capacity, "error", None, None, None, 0.0, 0, reason=message)


class RowPrinter:
    """The rows of ``format_rows`` printed one at a time, as they are measured.

    Column widths are fixed up front from the file and method names (numbers get room for
    large instances), so each row can be printed as soon as it exists.
    """

    HEADER = ("instance", "method", "buffers", "LOAD", "capacity", "status", "peak", "bound", "% over LOAD",
              "seconds", "nodes", "us/node")

    def __init__(self, files: Sequence[Path], methods: Sequence[str]) -> None:
        name = max([len(p.name) for p in files] + [len("instance")])
        method = max([len(m) for m in methods] + [len("method")])
        self.widths = (name, method, 9, 13, 13, 9, 13, 13, 11, 8, 11, 7)

    def _join(self, cells: Sequence[str]) -> str:
        return "  ".join(cell.ljust(w) for cell, w in zip(cells, self.widths, strict=True)).rstrip()

    def header(self) -> str:
        return self._join(self.HEADER)

    def line(self, row: BenchRow) -> str:
        text = self._join(_cells(row))
        return f"{text}  {row.reason}" if row.status in ("error", "timeout", "failed") and row.reason else text


def strategy_summary(rows: Sequence[BenchRow]) -> str:
    """Per method: configurations without a placement, and the geometric mean of nodes (steps)
    over the configurations that every method placed (TelaMalloc Fig. 14's two panels)."""
    methods = list(dict.fromkeys(r.method for r in rows))
    configs = list(dict.fromkeys((r.instance, r.capacity) for r in rows))
    by_key = {(r.instance, r.capacity, r.method): r for r in rows}

    def placed(r: BenchRow | None) -> bool:
        return r is not None and r.status == "solved"

    common = [c for c in configs if all(placed(by_key.get((*c, m))) for m in methods)]
    lines = [f"{len(configs)} configurations; {len(common)} placed by every method"]
    for m in methods:
        failures = sum(1 for c in configs if not placed(by_key.get((*c, m))))
        steps = [max(by_key[(*c, m)].nodes, 1) for c in common]
        mean = math.exp(sum(math.log(v) for v in steps) / len(steps)) if steps else float("nan")
        lines.append(f"{m}: {failures} failed; geomean nodes on the common ones {mean:,.0f}")
    return "\n".join(lines)


def _row(path: Path, method: str, problem: Problem, load: int, capacity: int | None, result: object,
         seconds: float, minimize: bool) -> BenchRow:
    if minimize:
        assert isinstance(result, MinimizeResult)
        if result.solution is None or result.peak is None:  # not even the fallback placed them in time
            return BenchRow(path.name, method, len(problem), load, None, "timeout", None, result.lower_bound, None,
                            seconds, int(result.stats.get("nodes", 0)), [], result.reason)
        report = validate(problem.with_capacity(None), result.solution)
        if not report.ok:
            raise InvalidSolutionError(f"{path.name} / {method}: {report}")
        status = "optimal" if result.optimal else "best"
        trace = [(t, 100 * (peak - load) / load if load else 0.0) for t, peak, _ in result.history]
        return BenchRow(path.name, method, len(problem), load, None, status, result.peak, result.lower_bound,
                        100 * (result.peak - load) / load if load else 0.0, seconds,
                        int(result.stats.get("nodes", 0)), trace, result.reason)
    assert isinstance(result, AllocationResult)
    if result.solution is not None:
        checked = problem if result.solved else problem.with_capacity(None)
        report = validate(checked, result.solution)
        if not report.ok:
            raise InvalidSolutionError(f"{path.name} / {method}: {report}")
    over = 100 * (result.peak - load) / load if result.peak is not None and load else None
    return BenchRow(path.name, method, len(problem), load, capacity, result.status, result.peak, None, over, seconds,
                    int(result.stats.get("nodes", 0)), [] if over is None else [(seconds, over)],
                    " ".join(result.reason.split("\n")))


def _cells(r: BenchRow) -> tuple[str, ...]:
    return (
        r.instance, r.method, f"{r.buffers:,}", f"{r.load:,}", "-" if r.capacity is None else f"{r.capacity:,}",
        r.status,
        "-" if r.peak is None else f"{r.peak:,}", "-" if r.lower_bound is None else f"{r.lower_bound:,}",
        "-" if r.over_load_percent is None else f"{r.over_load_percent:.2f}", f"{r.seconds:.3f}",
        f"{r.nodes:,}", f"{1e6 * r.seconds / r.nodes:.1f}" if r.nodes else "-",
    )


def format_rows(rows: Sequence[BenchRow]) -> str:
    """An aligned text table of the rows."""
    lines = [RowPrinter.HEADER] + [_cells(r) for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(RowPrinter.HEADER))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in lines)


def write_rows(path: str | Path, rows: Sequence[BenchRow]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(CSV_FIELDS), lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow(r.csv_record())


def plot_rows(path: str | Path, rows: Sequence[BenchRow]) -> None:
    """Quality versus time: one panel per instance, % over LOAD against seconds, one line per method.

    In minimise mode the anytime methods draw a step line through every improvement of the
    best peak (the last point is where the run stopped); a one-shot heuristic is one point.
    Rows without a placement are left out. Written with matplotlib's non-interactive backend.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    instances = list(dict.fromkeys(r.instance for r in rows))
    if not instances:
        raise ValueError("nothing to plot: no rows")
    methods = list(dict.fromkeys(r.method for r in rows))
    columns = min(4, len(instances))
    lines = -(-len(instances) // columns)
    figure, axes = plt.subplots(lines, columns, figsize=(4 * columns, 3 * lines), squeeze=False)
    many = len(methods) > 10
    colours = plt.get_cmap("tab20" if many else "tab10")
    markers = "osD^v<>ph*XP8d"  # with more than 10 methods, colour and marker tell them apart
    for panel, instance in enumerate(instances):
        ax = axes[panel // columns][panel % columns]
        for r in rows:
            if r.instance != instance or not r.trace or r.over_load_percent is None:
                continue
            index = methods.index(r.method)
            colour = colours(index % 20 if many else index % 10)
            marker = markers[index % len(markers)] if many else "o"
            xs = [max(t, 1e-3) for t, _ in r.trace] + [max(r.seconds, 1e-3)]
            ys = [v for _, v in r.trace] + [r.over_load_percent]
            ax.step(xs, ys, where="post", color=colour, marker=marker, markersize=3, label=r.method)
        ax.set_xscale("log")
        ax.set_title(instance, fontsize=9)
        ax.set_xlabel("seconds")
        ax.set_ylabel("% over LOAD")
        ax.grid(True, alpha=0.3)
    for panel in range(len(instances), lines * columns):
        axes[panel // columns][panel % columns].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        figure.legend(handles, labels, loc="upper center", ncol=min(len(labels), 6), fontsize=8)
    figure.tight_layout(rect=(0, 0, 1, 0.94))
    figure.savefig(path, dpi=110)
    plt.close(figure)

"""Plots of a sweep's results table: what each grid key does to cycles, DRAM traffic and energy.

``plot_sweep(results, keys, out_dir)`` reads the table ``accelsim sweep`` writes (one row per
grid point: ``model``, ``hw``, one column per grid key, ``status``, the metrics) and writes
into ``out_dir``:

* ``KEY.png`` for every numeric key that varies -- three panels sharing the x axis (the key):
  cycles, DRAM traffic (bytes read + written) and energy. One line per model; when other keys
  vary too, one line per model and combination of their values, labelled ``model, k=v, ...``;
* ``heatmap_KEY1_KEY2_MODEL.png`` for every pair of varying numeric keys and every model --
  cycles over the two keys (KEY1 across, KEY2 up), the value written in each cell when the
  grid is at most 8 x 8. A cell with no successful point is hatched (``failed`` written in it
  when a point there was run and failed);
* ``pareto_sram.png`` when ``sram`` is a key -- one panel per model: every point's scratchpad
  size against its non-compulsory DRAM traffic (spills and retrievals), coloured by cycles,
  with the Pareto-optimal points (``pareto_mask`` over SRAM, non-compulsory bytes and cycles)
  circled and joined in order of SRAM. They are the configurations worth building: any other
  point costs more SRAM, more traffic or more cycles than one of them for nothing in return.

Decisions:

* Only rows whose ``status`` is ``ok`` are plotted. A failed point leaves a gap in its line
  (lines are drawn with markers, so a point between two gaps is still seen) and a hatched cell
  in a heatmap; it never contributes a number.
* A key is numeric when every one of its non-missing values in the ``ok`` rows is a number
  (booleans are not); it varies when it takes at least two distinct values there. Keys that
  are strings (scheduler, allocator, dtype, ...) or do not vary get no figure of their own but
  still split the lines of the others. ``hw`` splits them too when it is not a key and the
  table holds several configs.
* Keys whose name says bytes (``sram``, ``alignment``, ``..._bytes``, ``..._bytes_per_pe``)
  are labelled in KiB/MiB; ``..._bytes_per_s`` in GB/s (decimal, as bandwidths are quoted);
  other numbers compactly (``1.07G``). An axis is logarithmic (base 2 for bytes) when its positive values span more
  than a factor of 16, so a doubling sweep spaces its points evenly.
* A figure draws at most ``MAX_LINES`` lines, taken round-robin over the models (every model
  keeps lines while it has some and the cap allows); the title says how many were left out.
* A heatmap shows, in a cell, the fewest cycles over the values of the keys that are not its
  two axes (the best the rest of the grid reaches there); its title names those keys. Two
  rows for the same point (a sweep run twice) are averaged in the line plots.
* Every value axis is readable whatever the numbers: a series that does not vary is drawn
  on an axis from 0 to a quarter above its value, 0 and the value its only ticks, said in a note
  (``all points: 0 B``), never a range of meaningless ticks around it; an axis of non-negative
  values never goes below 0; tick labels (colour bars too) take as many digits as it takes
  for each to be written once, and a colour bar of one value has one tick.
* Nothing hides behind anything: every line has its own colour and marker shape. Lines that
  coincide in a panel (within ``OVERLAP_TOLERANCE`` of its height wherever both have a
  point) are drawn as a stack, the first widest and faintest, with big hollow markers,
  beneath the next, the last thin and filled on top; the legend numbers the lines and the
  panel says which coincide. In ``pareto_sram.png`` points at one place (the same SRAM and
  traffic, other settings differing) are concentric discs, fewest cycles innermost.
* Everything is sorted: models by name, values in order (numbers before strings), keys in the
  order given, so the same table gives the same files in the same order, byte for byte.

matplotlib is imported inside ``plot_sweep`` (Agg backend, nothing displayed) and every figure
is closed, so importing this module is cheap and a long sweep does not accumulate figures.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from accelsim.outputs import replaced
from accelsim.sweeps.results import quantity
from accelsim.units import byte_axis_unit, format_bandwidth, format_bytes

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MAX_LINES = 12  # lines drawn in one figure; more make the legend unreadable
MAX_ANNOTATED = 8  # a heatmap writes its values in the cells up to this many columns and rows
LOG_SPAN = 16  # an axis turns logarithmic when max / min of its positive values exceeds this
OVERLAP_TOLERANCE = 0.01  # lines closer than this fraction of their panel's height coincide on screen
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")  # one shape per line, as colours

_ALWAYS_USED = ("model", "status", "cycles", "dram_read_bytes", "dram_write_bytes", "energy_j")
_METRICS = ("cycles", "dram_read_bytes", "dram_write_bytes", "energy_j", "noncompulsory_bytes")


# --------------------------------------------------------------------------------------------
# the Pareto front


def pareto_mask(points: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """Which rows of ``points`` (n x d, every column a cost to minimise) are Pareto-optimal.

    A point is optimal when no other point is less than or equal to it in every column and
    strictly less in one. Equal points do not dominate each other, so duplicates of an optimal
    point are all optimal. A row holding NaN is never optimal and dominates nothing.

    >>> pareto_mask([[1, 3], [2, 2], [3, 1], [2, 3], [1, 3], [0, float("nan")]]).tolist()
    [True, True, True, False, True, False]
    """
    costs = np.asarray(points, dtype=float)
    if costs.ndim != 2:
        raise ValueError(f"pareto_mask needs an n x d array of costs, got shape {costs.shape}")
    valid = ~np.isnan(costs).any(axis=1)
    candidates = costs[valid]
    mask = valid.copy()
    for i in np.flatnonzero(valid):
        no_worse = (candidates <= costs[i]).all(axis=1)
        better = (candidates < costs[i]).any(axis=1)
        mask[i] = not bool((no_worse & better).any())
    return mask


# --------------------------------------------------------------------------------------------
# values: which are numbers, how they sort and how they read


def _is_missing(value: Any) -> bool:
    if value is None or isinstance(value, str):
        return value is None
    try:
        return bool(value != value)  # NaN (float or numpy) and pandas' NA are not equal to themselves
    except TypeError:  # pandas.NA refuses bool()
        return True


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_) and not _is_missing(value)


def _order(value: Any) -> tuple[int, float, str]:
    """Sort key over mixed values: numbers by value, then strings, then missing values."""
    if _is_number(value):
        return (0, float(value), "")
    if _is_missing(value):
        return (2, 0.0, "")
    return (1, 0.0, str(value))


def _unit_kind(key: str) -> str:
    """``bytes``, ``bytes/s`` or ``number``: the axis units of a key (``results.quantity``)."""
    kind = quantity(key)
    return kind if kind in ("bytes", "bytes/s") else "number"


def _compact(value: float, digits: int = 3) -> str:
    """A short reading of a number in ``digits`` significant digits: ``950``, ``12.5k``, ``1.61M``, ``0.25``."""
    if abs(value) >= 1000:
        for suffix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
            if abs(value) >= scale:
                return f"{value / scale:.{digits}g}{suffix}"
    if float(value).is_integer():
        return f"{int(value)}"
    return f"{value:.{digits}g}"


def distinct_labels(values: Sequence[float], show: Callable[[float, int], str], most_digits: int = 9) -> list[str]:
    """Labels of tick ``values``, each written once: ``show(value, digits)`` with the fewest
    digits (3 at least, ``most_digits`` at most) that tell the values apart. Values that still
    read alike (closer than ``most_digits`` digits show) keep the first label; the others are
    blank, so no label is written twice.

    >>> distinct_labels([725_500, 726_000, 726_500], _compact)
    ['725.5k', '726k', '726.5k']
    >>> distinct_labels([1.0, 1.0 + 1e-12, 2.0], _compact)
    ['1', '', '2']
    """
    labels = [show(v, 3) for v in values]
    for digits in range(4, most_digits + 1):
        if len(set(labels)) == len(labels):
            return labels
        labels = [show(v, digits) for v in values]
    seen: set[str] = set()
    unique = []
    for label in labels:
        unique.append("" if label in seen else label)
        seen.add(label)
    return unique


def constant_limits(values: Sequence[float]) -> tuple[float, float] | None:
    """The range of a value axis whose finite ``values`` are all one value (to a part in 10^9):
    from 0 to a quarter above it, or 0 to 1 when it is 0 (the mirror image below 0 for a
    negative value). None when the values vary or none is finite: the plotting library's
    range shows them.

    >>> constant_limits([0.0, 0.0]), constant_limits([726e3, 726e3, float("nan")]), constant_limits([1, 2])
    ((0.0, 1.0), (0.0, 907500.0), None)
    """
    finite = [float(v) for v in values if math.isfinite(v)]
    if not finite:
        return None
    low, high = min(finite), max(finite)
    if high - low > 1e-9 * max(abs(low), abs(high)):
        return None
    if high == 0:
        return 0.0, 1.0
    return (0.0, 1.25 * high) if high > 0 else (1.25 * low, 0.0)


def overlapping_series(series: Sequence[tuple[npt.ArrayLike, npt.ArrayLike]],
                       tolerance: float = OVERLAP_TOLERANCE) -> list[list[int]]:
    """Which of the lines ``series`` (pairs of x and y arrays) coincide: groups of their
    indices, in order, each of two lines or more. A line joins the first group whose first
    line it shares an x value with and stays within ``tolerance`` of the y range of all lines
    (or of the largest |y| when they do not vary) at every shared x; NaN points are no points.

    >>> overlapping_series([([1, 2], [5, 6]), ([1, 2], [9, 9]), ([2, 3], [6, 0]), ([1, 2], [5, 6.001])])
    [[0, 2, 3]]
    """
    points = [dict(zip(np.asarray(x, dtype=float).tolist(), np.asarray(y, dtype=float).tolist(), strict=True))
              for x, y in series]
    finite = [v for line in points for v in line.values() if math.isfinite(v)]
    if not finite:
        return []
    span = (max(finite) - min(finite)) or max(abs(v) for v in finite) or 1.0
    groups: list[list[int]] = []
    for i, line in enumerate(points):
        for group in groups:
            first = points[group[0]]
            shared = [x for x in line if x in first and math.isfinite(line[x]) and math.isfinite(first[x])]
            if shared and all(abs(line[x] - first[x]) <= tolerance * span for x in shared):
                group.append(i)
                break
        else:
            groups.append([i])
    return [group for group in groups if len(group) > 1]


def _format_value(key: str, value: Any) -> str:
    if not _is_number(value):
        return "-" if _is_missing(value) else str(value)
    kind = _unit_kind(key)
    if kind == "bytes":
        return format_bytes(float(value))
    if kind == "bytes/s":
        return format_bandwidth(float(value))
    return _compact(float(value))


def _energy_scale(largest: float) -> tuple[str, float]:
    for unit, scale in (("J", 1.0), ("mJ", 1e-3), ("µJ", 1e-6)):
        if largest >= scale:
            return unit, scale
    return "nJ", 1e-9


def _spans_decades(values: Sequence[float]) -> bool:
    positive = [v for v in values if v > 0]
    return len(positive) == len(values) and len(positive) > 1 and max(positive) / min(positive) > LOG_SPAN


def _finite_max(values: npt.ArrayLike) -> float:
    array = np.asarray(values, dtype=float)
    finite = array[np.isfinite(array)]
    return float(finite.max()) if finite.size else 0.0


def _file_name(parts: Sequence[str], taken: set[str]) -> str:
    """``part_part.png`` with anything but letters, digits, ``-`` and ``_`` made ``_``; unique."""
    stem = "_".join(re.sub(r"[^A-Za-z0-9_-]+", "_", part).strip("_") or "key" for part in parts)
    name, n = f"{stem}.png", 2
    while name in taken:
        name, n = f"{stem}_{n}.png", n + 1
    taken.add(name)
    return name


# --------------------------------------------------------------------------------------------
# the table


def _distinct(values: Sequence[Any]) -> list[Any]:
    seen: dict[Any, Any] = {}
    for value in values:
        if not _is_missing(value):
            seen.setdefault(float(value) if _is_number(value) else str(value), value)
    return sorted(seen.values(), key=_order)


def _numeric_keys(ok: Any, keys: Sequence[str]) -> list[str]:
    numeric = []
    for key in keys:
        values = [v for v in ok[key].tolist() if not _is_missing(v)]
        if all(_is_number(v) for v in values) and len(_distinct(values)) >= 2:
            numeric.append(key)
    return numeric


def _check_columns(results: Any, keys: Sequence[str]) -> None:
    columns = set(results.columns)
    for key in keys:
        if key not in columns:
            raise ValueError(f"sweep key {key!r} is not a column of the results table "
                             f"(columns: {', '.join(map(str, results.columns))})")
    needed = _ALWAYS_USED + (("noncompulsory_bytes",) if "sram" in keys else ())
    missing = [c for c in needed if c not in columns]
    if missing:
        raise ValueError(f"the results table has no column {', '.join(map(repr, missing))}")


def plot_sweep(results: Any, keys: Sequence[str], out_dir: str | Path) -> list[Path]:
    """Write the sweep's figures (see the module docstring) into ``out_dir``; return their paths.

    ``results``: a ``pandas.DataFrame``, one row per grid point; ``keys``: the grid keys, column
    names exactly as the user wrote them. The paths come in a fixed order: ``KEY.png`` per
    numeric key in the order of ``keys``, then the heatmaps (per pair of keys, per model in
    sorted order), then ``pareto_sram.png``. No row with status ``ok``: nothing is written and
    the list is empty. ``out_dir`` is created when the first figure is written.

    Raises ``ValueError`` when a key, or a column the plots read, is not in the table.
    """
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    keys = list(dict.fromkeys(keys))
    _check_columns(results, keys)
    # a copy: the metrics are made numbers (text becomes NaN) without touching the caller's table
    table = results.reset_index(drop=True)
    for column in _METRICS:
        if column in table.columns:
            table[column] = pd.to_numeric(table[column], errors="coerce")
    table["dram_traffic_bytes"] = table["dram_read_bytes"] + table["dram_write_bytes"]
    ok = table[table["status"] == "ok"]
    if ok.empty:
        return []

    numeric = _numeric_keys(ok, keys)
    varying = [k for k in keys if len(_distinct(ok[k].tolist())) >= 2]
    if "hw" in ok.columns and "hw" not in keys and len(_distinct(ok["hw"].tolist())) >= 2:
        varying.append("hw")
    models = _distinct(ok["model"].tolist())
    folder = Path(out_dir)
    taken: set[str] = set()
    written: list[Path] = []

    def save(fig: Figure, parts: Sequence[str]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / _file_name(parts, taken)
        with replaced(path) as staging:
            fig.savefig(staging, bbox_inches="tight")
        written.append(path)

    for key in numeric:
        with _figure() as fig:
            if _plot_key(fig, table, key, varying):
                save(fig, [key])
    for i, across in enumerate(numeric):
        for up in numeric[i + 1:]:
            for model in models:
                with _figure() as fig:
                    if _plot_heatmap(fig, table[table["model"] == model], model, across, up, varying):
                        save(fig, ["heatmap", across, up, str(model)])
    if "sram" in keys and all(_is_number(v) for v in ok["sram"].tolist() if not _is_missing(v)):
        with _figure() as fig:
            if _plot_pareto(fig, ok, models):
                save(fig, ["pareto_sram"])
    return written


@contextmanager
def _figure() -> Iterator[Figure]:
    """A new figure, closed however its drawing ends."""
    import matplotlib.pyplot as plt

    fig = plt.figure(dpi=110)
    try:
        yield fig
    finally:
        plt.close(fig)


# --------------------------------------------------------------------------------------------
# KEY.png: cycles, DRAM traffic and energy against one key


def _line_groups(table: Any, key: str, others: Sequence[str]) -> dict[tuple[Any, ...], dict[float, list]]:
    """(model, other keys' values) -> key value -> the ok rows' (cycles, traffic, energy) there.

    Failed rows enter with no measurement, so that their key value is a gap in the line; a
    group with no ok row at all is left out."""
    groups: dict[tuple[Any, ...], dict[float, list]] = {}
    columns = ["model", key, *others, "status", "cycles", "dram_traffic_bytes", "energy_j"]
    for model, x, *rest in table[columns].itertuples(index=False):
        *values, status, cycles, traffic, energy = rest
        if not _is_number(x):
            continue
        group = (_canonical(model), *(_canonical(v) for v in values))
        measured = groups.setdefault(group, {}).setdefault(float(x), [])
        if status == "ok":
            measured.append((cycles, traffic, energy))
    return {group: by_x for group, by_x in groups.items() if any(by_x.values())}


def _canonical(value: Any) -> Any:
    """One dictionary key per value: missing values are all None (NaN is not equal to itself)."""
    if _is_missing(value):
        return None
    return float(value) if _is_number(value) else value


def _round_robin(groups: Sequence[tuple[Any, ...]], cap: int) -> list[tuple[Any, ...]]:
    """At most ``cap`` groups, taking one per model in turn so that every model keeps lines."""
    per_model: dict[Any, list[tuple[Any, ...]]] = {}
    for group in groups:
        per_model.setdefault(group[0], []).append(group)
    chosen: list[tuple[Any, ...]] = []
    depth = 0
    while len(chosen) < min(cap, len(groups)):
        for model_groups in per_model.values():
            if depth < len(model_groups) and len(chosen) < cap:
                chosen.append(model_groups[depth])
        depth += 1
    return sorted(chosen, key=lambda g: [_order(v) for v in g])


def _plot_key(fig: Figure, table: Any, key: str, varying: Sequence[str]) -> bool:
    others = [k for k in varying if k != key]
    groups = _line_groups(table, key, others)
    ok = table[table["status"] == "ok"]
    ordered = sorted(groups, key=lambda g: [_order(v) for v in g])
    chosen = _round_robin(ordered, MAX_LINES)
    omitted = len(ordered) - len(chosen)

    xs = _distinct(ok[key].tolist())
    traffic_unit, traffic_scale = byte_axis_unit(_finite_max(ok["dram_traffic_bytes"]))
    energy_unit, energy_scale = _energy_scale(_finite_max(ok["energy_j"]))
    fig.set_size_inches(10, 8.5)
    axes = fig.subplots(3, 1, sharex=True)
    panels = [
        (axes[0], "cycles", "cycles", 1.0),
        (axes[1], f"DRAM read + write ({traffic_unit})", traffic_unit, traffic_scale),
        (axes[2], f"energy ({energy_unit})", energy_unit, energy_scale),
    ]
    lines: list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], str]] = []
    for group in chosen:
        by_x = groups[group]
        x = np.asarray(sorted(by_x), dtype=float)
        # the mean of repeated rows; NaN where every row failed, which breaks the line there
        means = np.asarray([np.mean(by_x[v], axis=0) if by_x[v] else [np.nan] * 3 for v in x], dtype=float)
        settings = [f"{other}={_format_value(other, v)}" for other, v in zip(others, group[1:], strict=True)]
        lines.append((x, means, ", ".join([str(group[0]), *settings])))
    overlaps = [overlapping_series([(x, means[:, column] / scale) for x, means, _ in lines])
                for column, (_, _, _, scale) in enumerate(panels)]
    numbered = any(overlaps)  # the notes name lines by their number in the legend
    labels = [f"[{i + 1}] {label}" if numbered else label for i, (_, _, label) in enumerate(lines)]
    colours = _colours(len(lines))
    for column, (ax, ylabel, unit, scale) in enumerate(panels):
        layers = _layers(len(lines), overlaps[column])
        for i, (x, means, _) in enumerate(lines):
            _draw_line(ax, x, means[:, column] / scale, colours[i], MARKERS[i % len(MARKERS)], layers[i])
        notes = []
        value = _settle_value_axis(ax, [v for _, means, _ in lines for v in means[:, column] / scale])
        if value is not None:
            notes.append(f"all points: {_compact(value)} {unit}")
        if overlaps[column]:
            notes.append("lines that coincide\n(the first widest, beneath):")
            notes += [" = ".join(f"[{i + 1}]" for i in group) for group in overlaps[column]]
        if notes:
            ax.text(1.01, 0.0, "\n".join(notes), transform=ax.transAxes, va="bottom", ha="left", fontsize=8)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    _format_key_axis(axes[2], key, [float(v) for v in xs])
    axes[2].set_xlabel(key)
    title = f"{key}: cycles, DRAM traffic and energy"
    if others:
        title += f" (lines: model x {', '.join(others)})"
    if omitted:
        title += f"\n{omitted} more line{'s' if omitted > 1 else ''} omitted (first {len(chosen)} shown)"
    axes[0].set_title(title)
    handles = [_legend_line(colours[i], MARKERS[i % len(MARKERS)], label) for i, label in enumerate(labels)]
    axes[0].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    return True


def _layers(count: int, overlaps: Sequence[Sequence[int]]) -> list[int]:
    """How far beneath the top each of ``count`` lines is drawn: 0 for a line that coincides
    with none; in a group that coincides, the last is 0 and each earlier one a layer deeper."""
    layers = [0] * count
    for group in overlaps:
        for position, i in enumerate(group):
            layers[i] = len(group) - 1 - position
    return layers


def _draw_line(ax: Axes, x: Any, y: Any, colour: Any, marker: str, layer: int) -> None:
    """A line with its markers; the deeper its layer, the wider, fainter and lower it is drawn,
    with bigger hollow markers, so that the lines stacked on it leave it in sight."""
    depth = min(layer, 4)  # beyond this a wider line would blot out the panel
    ax.plot(x, y, marker=marker, color=colour, linewidth=1.3 + 3.5 * depth, markersize=4.5 + 4.5 * depth,
            markerfacecolor=colour if depth == 0 else "none", markeredgewidth=1.0 if depth == 0 else 1.8,
            alpha=1.0 if depth == 0 else 0.5, zorder=10 - depth, solid_capstyle="butt")


def _legend_line(colour: Any, marker: str, label: str) -> Any:
    from matplotlib.lines import Line2D

    return Line2D([], [], color=colour, marker=marker, markersize=4.5, linewidth=1.3, label=label)


def _settle_value_axis(ax: Axes, values: Sequence[float], axis: str = "y") -> float | None:
    """Make a value axis readable (see the module docstring): labels written once each; a
    constant series from 0, 0 and its value the only ticks (returned, for the caller's note); no
    range below 0 for values that are not. Call it after drawing."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(_distinct_formatter(_compact))
    finite = [float(v) for v in values if math.isfinite(v)]
    limits = constant_limits(finite)
    if limits is not None:
        (ax.set_ylim if axis == "y" else ax.set_xlim)(*limits)
        target.set_ticks(sorted({0.0, finite[0]}))
        return finite[0]
    low, high = ax.get_ylim() if axis == "y" else ax.get_xlim()
    if finite and min(finite) >= 0 and low < 0 and target.get_scale() == "linear":
        (ax.set_ylim if axis == "y" else ax.set_xlim)(0.0, high)
    return None


def _colours(n: int) -> list[Any]:
    """``n`` distinct colours: tab10 up to ten, tab20 beyond."""
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def _formatter(show: Any) -> Any:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _position: show(value))


def _distinct_formatter(show: Callable[[float, int], str]) -> Any:
    """A tick formatter writing ``show(value, digits)`` with the digits ``distinct_labels`` picks."""
    from matplotlib.ticker import Formatter

    class Distinct(Formatter):
        def __call__(self, x: float, pos: int | None = None) -> str:  # one value alone (a cursor's)
            return show(x, 3)

        def format_ticks(self, values: Any) -> list[str]:
            self.set_locs(values)
            return distinct_labels(list(values), show)

    return Distinct()


def crowded(values: Sequence[float], log: bool, share: float = 0.3) -> bool:
    """Whether two neighbouring ticks at ``values`` lie closer than ``share`` of the axis (on a log
    axis when ``log``), so that their labels would run into each other side by side.

    >>> crowded([160 * 1024, 256 * 1024, 1024 * 1024], log=True), crowded([1, 2, 3], log=False)
    (True, False)
    """
    import math

    points = sorted(math.log(v) if log else v for v in values if v > 0 or not log)
    span = points[-1] - points[0] if len(points) > 1 else 0
    return span > 0 and min(b - a for a, b in zip(points, points[1:], strict=False)) < share * span


def _format_key_axis(ax: Axes, key: str, values: Sequence[float], axis: str = "x") -> None:
    """Log scale (base 2 for bytes) over wide spans; ticks at the grid values when they are few."""
    from matplotlib.ticker import NullFormatter, NullLocator

    target = ax.xaxis if axis == "x" else ax.yaxis
    if _spans_decades(values):
        base = 2 if _unit_kind(key) == "bytes" else 10
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=base)
    if len(values) <= MAX_LINES:
        target.set_ticks(list(values), labels=[_format_value(key, v) for v in values])
        target.set_minor_locator(NullLocator())
    else:
        target.set_major_formatter(_formatter(lambda v: _format_value(key, v)))
    target.set_minor_formatter(NullFormatter())
    if axis == "x" and (len(values) > 6 or crowded(values, log=_spans_decades(values))):
        for label in target.get_ticklabels():
            label.set_rotation(30)
            label.set_horizontalalignment("right")


# --------------------------------------------------------------------------------------------
# heatmap_KEY1_KEY2_MODEL.png: cycles over two keys


def _plot_heatmap(fig: Figure, rows: Any, model: Any, across: str, up: str, varying: Sequence[str]) -> bool:
    from matplotlib.patches import Rectangle

    placed = [(x, y, status, cycles) for x, y, status, cycles in
              zip(rows[across].tolist(), rows[up].tolist(), rows["status"].tolist(), rows["cycles"].tolist(),
                  strict=True) if _is_number(x) and _is_number(y)]
    xs = _distinct([p[0] for p in placed])
    ys = _distinct([p[1] for p in placed])
    column = {float(v): i for i, v in enumerate(xs)}
    row = {float(v): i for i, v in enumerate(ys)}
    best = np.full((len(ys), len(xs)), np.nan)
    ran = np.zeros((len(ys), len(xs)), dtype=bool)
    for x, y, status, cycles in placed:
        i, j = row[float(y)], column[float(x)]
        ran[i, j] = True
        value = float(cycles) if _is_number(cycles) else math.nan
        if status == "ok" and not math.isnan(value):
            best[i, j] = value if math.isnan(best[i, j]) else min(best[i, j], value)
    if np.isnan(best).all():
        return False

    fig.set_size_inches(min(14.0, max(5.0, 0.9 * len(xs) + 3.0)), min(11.0, max(4.0, 0.55 * len(ys) + 2.5)))
    ax = fig.subplots()
    # hatching under the image shows through the cells it leaves transparent (no ok point)
    ax.add_patch(Rectangle((-0.5, -0.5), len(xs), len(ys), fill=False, hatch="///", edgecolor="0.75",
                           linewidth=0, zorder=0))
    finite = best[np.isfinite(best)].tolist()
    norm = _cycles_norm(finite)
    image = ax.imshow(np.ma.masked_invalid(best), origin="lower", cmap="viridis", norm=norm, aspect="auto",
                      interpolation="nearest", zorder=1)
    _colorbar(fig, image, ax, finite)
    if len(xs) <= MAX_ANNOTATED and len(ys) <= MAX_ANNOTATED:
        values = sorted(set(finite))  # written with the digits that tell cells of different values apart
        reading = dict(zip(values, distinct_labels(values, _compact), strict=True))
        for i in range(len(ys)):
            for j in range(len(xs)):
                if np.isfinite(best[i, j]):
                    dark = float(norm(best[i, j])) < 0.5  # viridis is dark at its low end
                    text = reading[float(best[i, j])] or _compact(best[i, j], 9)
                    ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black",
                            zorder=2)
                elif ran[i, j]:
                    ax.text(j, i, "failed", ha="center", va="center", fontsize=8, color="0.3", zorder=2)
    ax.set_xticks(*_sparse_ticks(across, xs))
    ax.set_yticks(*_sparse_ticks(up, ys))
    if len(xs) > 6:
        for label in ax.get_xticklabels():
            label.set_rotation(30)
            label.set_horizontalalignment("right")
    ax.set_xlim(-0.5, len(xs) - 0.5)
    ax.set_ylim(-0.5, len(ys) - 0.5)
    ax.set_xlabel(across)
    ax.set_ylabel(up)
    others = [k for k in varying if k not in (across, up)]
    title = f"{model}: cycles over {across} x {up}"
    if others:
        title += f"\nfewest cycles over {', '.join(others)}"
    if np.isnan(best).any():
        title += "\nhatched: no successful point"
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return True


def _sparse_ticks(key: str, values: Sequence[Any], most: int = 16) -> tuple[list[int], list[str]]:
    """Cell positions and labels, every k-th one so that at most ``most`` are written."""
    step = math.ceil(len(values) / most)
    positions = list(range(0, len(values), step))
    return positions, [_format_value(key, values[i]) for i in positions]


def _cycles_norm(values: Sequence[float]) -> Any:
    """Colours for cycles: logarithmic over a wide span; one value in the middle of the map."""
    from matplotlib.colors import LogNorm, Normalize

    low, high = min(values), max(values)
    if constant_limits(values) is not None:
        pad = max(abs(high) * 0.05, 0.5)  # the colour bar needs a range; the value sits in its middle
        return Normalize(low - pad, high + pad)
    return LogNorm(low, high) if low > 0 and high / low > LOG_SPAN else Normalize(low, high)


def _colorbar(fig: Figure, mappable: Any, ax: Axes, values: Sequence[float]) -> None:
    """A colour bar for cycles (``values``, all finite) whose labels are each written once: 1, 2,
    5 x 10^k on a log scale; one tick and ``all points`` in the label when the values are one."""
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import LogLocator, MaxNLocator, NullFormatter, NullLocator

    bar = fig.colorbar(mappable, ax=ax, label="cycles", format=_distinct_formatter(_compact))
    if constant_limits(values) is not None:
        bar.set_ticks([values[0]])
        bar.set_label(f"cycles (all points: {_compact(values[0])})")
    elif isinstance(mappable.norm, LogNorm):
        bar.ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    else:
        bar.ax.yaxis.set_major_locator(MaxNLocator(nbins=6))
    bar.ax.yaxis.set_minor_locator(NullLocator())
    bar.ax.yaxis.set_minor_formatter(NullFormatter())


# --------------------------------------------------------------------------------------------
# pareto_sram.png: SRAM against non-compulsory traffic, coloured by cycles


def _plot_pareto(fig: Figure, ok: Any, models: Sequence[Any]) -> bool:
    panels: list[tuple[Any, npt.NDArray[np.float64]]] = []
    for model in models:
        rows = ok[ok["model"] == model]
        measured = [(float(s), float(n), float(c)) for s, n, c in
                  zip(rows["sram"].tolist(), rows["noncompulsory_bytes"].tolist(), rows["cycles"].tolist(),
                      strict=True) if _is_number(s) and np.isfinite(n) and np.isfinite(c)]
        if measured:
            panels.append((model, np.asarray(sorted(measured), dtype=float)))
    if not panels:
        return False
    ncols = min(len(panels), 3)
    nrows = math.ceil(len(panels) / ncols)
    fig.set_size_inches(5.8 * ncols, 4.6 * nrows)
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    for ax, (model, points) in zip(axes, panels, strict=False):
        optimal = pareto_mask(points)  # rows sorted by (sram, traffic, cycles): the join runs along SRAM
        unit, scale = byte_axis_unit(_finite_max(points[:, 1]))
        traffic = points[:, 1] / scale
        stacks = overlapping_series([([x], [y]) for x, y in zip(points[:, 0], traffic, strict=True)])
        diameters = _disc_diameters(points[:, 2], stacks)
        order = np.argsort(-diameters, kind="stable")  # the biggest first: smaller discs lie on them
        cloud = ax.scatter(points[order, 0], traffic[order], c=points[order, 2], s=diameters[order] ** 2,
                           cmap="viridis", norm=_cycles_norm(points[:, 2].tolist()), edgecolors="white",
                           linewidths=0.6, zorder=2, clip_on=False)
        ax.plot(points[optimal, 0], traffic[optimal], color="red", linewidth=1.0, zorder=1)
        rings = np.asarray([max(diameters[g] for g in _stack_of(i, stacks)) + 4.5 for i in range(len(points))])
        ax.scatter(points[optimal, 0], traffic[optimal], s=rings[optimal] ** 2, facecolors="none", edgecolors="red",
                   linewidths=1.5, zorder=3, clip_on=False,
                   label=f"Pareto-optimal ({int(optimal.sum())} of {len(points)})")
        _colorbar(fig, cloud, ax, points[:, 2].tolist())
        _format_key_axis(ax, "sram", [float(v) for v in _distinct(points[:, 0].tolist())])
        constant = _settle_value_axis(ax, traffic.tolist())
        ax.set_xlabel("sram")
        ax.set_ylabel(f"non-compulsory DRAM traffic ({unit})")
        title = str(model) if constant is None else f"{model}\nall points: {format_bytes(constant * scale)}"
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        handles, _ = ax.get_legend_handles_labels()
        if stacks:
            handles.append(_legend_line("0.55", "o", "concentric: points at one place,\nfewest cycles inside"))
            handles[-1].set_linestyle("none")
        ax.legend(handles=handles, loc="upper right", fontsize=8)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    fig.suptitle("SRAM against non-compulsory DRAM traffic, colour = cycles; circled: Pareto-optimal in all three")
    fig.tight_layout()
    return True


def _disc_diameters(cycles: npt.NDArray[np.float64], stacks: Sequence[Sequence[int]]) -> npt.NDArray[np.float64]:
    """The diameter (points) of each point's disc: the same for all, but in a stack of points
    at one place, where the one of fewest cycles keeps it and each next one is wider."""
    diameters = np.full(len(cycles), 6.0)
    for stack in stacks:
        for depth, i in enumerate(sorted(stack, key=lambda i: (cycles[i], i))):
            diameters[i] = 6.0 + 6.0 * min(depth, 4)  # the fifth and further stay the size of the fourth
    return diameters


def _stack_of(i: int, stacks: Sequence[Sequence[int]]) -> Sequence[int]:
    return next((stack for stack in stacks if i in stack), [i])

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
* Everything is sorted: models by name, values in order (numbers before strings), keys in the
  order given, so the same table gives the same files in the same order, byte for byte.

matplotlib is imported inside ``plot_sweep`` (Agg backend, nothing displayed) and every figure
is closed, so importing this module is cheap and a long sweep does not accumulate figures.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from accelsim.units import byte_axis_unit, format_bytes

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MAX_LINES = 12  # lines drawn in one figure; more make the legend unreadable
MAX_ANNOTATED = 8  # a heatmap writes its values in the cells up to this many columns and rows
LOG_SPAN = 16  # an axis turns logarithmic when max / min of its positive values exceeds this

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
    """``bytes``, ``bytes/s`` or ``number``, read from the key's last dotted part."""
    name = key.rsplit(".", 1)[-1]
    if name.endswith("_bytes_per_s"):
        return "bytes/s"
    if name in ("sram", "alignment") or name.endswith(("_bytes", "_bytes_per_pe")):
        return "bytes"
    return "number"


def _compact(value: float) -> str:
    """A short reading of a number: ``950``, ``12.5k``, ``1.61M``, ``0.25``."""
    if abs(value) >= 1000:
        for suffix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
            if abs(value) >= scale:
                return f"{value / scale:.3g}{suffix}"
    if float(value).is_integer():
        return f"{int(value)}"
    return f"{value:.3g}"


def _format_value(key: str, value: Any) -> str:
    if not _is_number(value):
        return "-" if _is_missing(value) else str(value)
    kind = _unit_kind(key)
    if kind == "bytes":
        return format_bytes(float(value))
    if kind == "bytes/s":  # bandwidths are quoted in decimal units (64 GB/s is 64e9 B/s)
        for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
            if abs(value) >= scale:
                return f"{value / scale:.3g} {prefix}B/s"
        return f"{value:.3g} B/s"
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
        fig.savefig(path, bbox_inches="tight")
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
        (axes[0], "cycles", 1.0),
        (axes[1], f"DRAM read + write ({traffic_unit})", traffic_scale),
        (axes[2], f"energy ({energy_unit})", energy_scale),
    ]
    colours = _colours(len(chosen))
    for colour, group in zip(colours, chosen, strict=True):
        by_x = groups[group]
        x = np.asarray(sorted(by_x), dtype=float)
        # the mean of repeated rows; NaN where every row failed, which breaks the line there
        means = np.asarray([np.mean(by_x[v], axis=0) if by_x[v] else [np.nan] * 3 for v in x], dtype=float)
        settings = [f"{other}={_format_value(other, v)}" for other, v in zip(others, group[1:], strict=True)]
        label = ", ".join([str(group[0]), *settings])
        for column, (ax, _, scale) in enumerate(panels):
            ax.plot(x, means[:, column] / scale, marker="o", markersize=4, linewidth=1.3, color=colour, label=label)
    for ax, ylabel, _ in panels:
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    axes[0].yaxis.set_major_formatter(_formatter(_compact))
    _format_key_axis(axes[2], key, [float(v) for v in xs])
    axes[2].set_xlabel(key)
    title = f"{key}: cycles, DRAM traffic and energy"
    if others:
        title += f" (lines: model x {', '.join(others)})"
    if omitted:
        title += f"\n{omitted} more line{'s' if omitted > 1 else ''} omitted (first {len(chosen)} shown)"
    axes[0].set_title(title)
    axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    return True


def _colours(n: int) -> list[Any]:
    """``n`` distinct colours: tab10 up to ten, tab20 beyond."""
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def _formatter(show: Any) -> Any:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _position: show(value))


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
    if axis == "x" and len(values) > 6:
        for label in target.get_ticklabels():
            label.set_rotation(30)
            label.set_horizontalalignment("right")


# --------------------------------------------------------------------------------------------
# heatmap_KEY1_KEY2_MODEL.png: cycles over two keys


def _plot_heatmap(fig: Figure, rows: Any, model: Any, across: str, up: str, varying: Sequence[str]) -> bool:
    from matplotlib.colors import LogNorm, Normalize
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
    finite = best[np.isfinite(best)]
    low, high = float(finite.min()), float(finite.max())
    norm = LogNorm(low, high) if low > 0 and high / low > LOG_SPAN else Normalize(low, high)
    image = ax.imshow(np.ma.masked_invalid(best), origin="lower", cmap="viridis", norm=norm, aspect="auto",
                      interpolation="nearest", zorder=1)
    _colorbar(fig, image, ax)
    if len(xs) <= MAX_ANNOTATED and len(ys) <= MAX_ANNOTATED:
        for i in range(len(ys)):
            for j in range(len(xs)):
                if np.isfinite(best[i, j]):
                    dark = float(norm(best[i, j])) < 0.5  # viridis is dark at its low end
                    ax.text(j, i, _compact(best[i, j]), ha="center", va="center", fontsize=8,
                            color="white" if dark else "black", zorder=2)
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


def _colorbar(fig: Figure, mappable: Any, ax: Axes) -> None:
    """A colour bar for cycles with compact labels (1, 2, 5 x 10^k on a log scale)."""
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import LogLocator, NullFormatter, NullLocator

    bar = fig.colorbar(mappable, ax=ax, label="cycles", format=_formatter(_compact))
    if isinstance(mappable.norm, LogNorm):
        bar.ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
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
        optimal = points[pareto_mask(points)]  # rows sorted by (sram, traffic, cycles): the join runs along SRAM
        unit, scale = byte_axis_unit(_finite_max(points[:, 1]))
        cloud = ax.scatter(points[:, 0], points[:, 1] / scale, c=points[:, 2], cmap="viridis", s=28, zorder=2)
        ax.plot(optimal[:, 0], optimal[:, 1] / scale, color="red", linewidth=1.0, zorder=1)
        ax.scatter(optimal[:, 0], optimal[:, 1] / scale, s=90, facecolors="none", edgecolors="red", linewidths=1.5,
                   zorder=3, label=f"Pareto-optimal ({len(optimal)} of {len(points)})")
        _colorbar(fig, cloud, ax)
        _format_key_axis(ax, "sram", [float(v) for v in _distinct(points[:, 0].tolist())])
        ax.set_xlabel("sram")
        ax.set_ylabel(f"non-compulsory DRAM traffic ({unit})")
        ax.set_title(str(model), fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize=8)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    fig.suptitle("SRAM against non-compulsory DRAM traffic, colour = cycles; circled: Pareto-optimal in all three")
    fig.tight_layout()
    return True

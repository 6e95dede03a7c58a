"""Charts written as SVG text: axes, ticks, rectangles, lines, points and a legend, with no plotting library.

The report's pictures (``accelsim.report``) are a few hundred rectangles, a step line and a
scatter: writing the SVG elements directly costs a few milliseconds, where importing
matplotlib alone costs about half a CPU-second. An SVG opens in any browser, zooms without
blurring, and each element can carry a tooltip (``<title>``) with the numbers behind it.

A ``Chart`` is one plot area with a title, two labelled axes (linear or logarithmic, ticks
at round numbers) and an optional legend to the right. Data elements are added in data
coordinates and clipped to the plot area; ``to_svg`` returns the document. ``LabelPlacer``
puts text labels where they overlap neither each other nor what the caller reserved (a
greedy first fit over a few candidate positions per label). ``short_label`` shortens a name
for a label and keeps the part that tells it from its neighbours (the layer number);
``spread_points`` moves points that would hide one another apart, so that each stays visible.

A chart is as wide as its ``width`` and no wider than what shows it (``max-width: 100%`` with
its ``viewBox``): a browser window narrower than the chart scales it down instead of cutting it.

>>> chart = Chart(title="t", x_label="x", y_label="y", x_range=(0, 10), y_range=(1, 1000), y_log=True)
>>> chart.add("data", chart.rect(1, 2, 10, 100, fill="#4c72b0"))
>>> chart.x(0) == chart.left and chart.y(1000) == chart.top
True
>>> import xml.etree.ElementTree as ET
>>> ET.fromstring(chart.to_svg()).tag
'{http://www.w3.org/2000/svg}svg'
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape  # (xml.sax.saxutils would import urllib.request, http and ssl)

#: average advance of a sans-serif character, as a share of the font size (for laying out labels)
CHAR_WIDTH = 0.6
FONT_SIZE = 12
SMALL_FONT = 10
_LEGEND_LINE = 16  # pixels per legend entry


def text_width(text: str, size: float = FONT_SIZE) -> float:
    """Estimated width in pixels of ``text`` at ``size`` (no font metrics: an average advance)."""
    return len(text) * size * CHAR_WIDTH


def _num(v: float) -> str:
    """A coordinate with at most two decimals and no trailing zeros: ``_num(3.0)`` is ``'3'``."""
    text = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def linear_ticks(lo: float, hi: float, target: int = 6) -> tuple[list[float], float]:
    """Round tick values in ``[lo, hi]`` (steps of 1, 2, 2.5 or 5 times a power of ten) and the step.

    >>> linear_ticks(0, 10)
    ([0.0, 2.0, 4.0, 6.0, 8.0, 10.0], 2.0)
    >>> linear_ticks(0, 0.7)[0]
    [0.0, 0.2, 0.4, 0.6]
    """
    span = hi - lo
    if not span > 0:
        return [lo], 1.0
    raw = span / target
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if raw <= m * magnitude * (1 + 1e-9))
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    k = first
    while k * step <= hi + step * 1e-9:
        ticks.append(round(k * step, 12))
        k += 1
    return ticks, step


def linear_label(value: float, step: float) -> str:
    """A tick label with as many decimals as the step needs and thousands separators.

    >>> linear_label(1500, 500), linear_label(0.25, 0.05), linear_label(7.5, 2.5)
    ('1,500', '0.25', '7.5')
    """
    decimals = 0
    while decimals < 12 and abs(step * 10**decimals - round(step * 10**decimals)) > 1e-9 * 10**decimals:
        decimals += 1
    return f"{value:,.{decimals}f}"


def log_ticks(lo: float, hi: float) -> tuple[list[float], list[float]]:
    """Labelled and unlabelled ticks of a log axis on ``[lo, hi]``: the powers of ten (also 2 and 5
    times them when the range spans less than two decades), and the other multiples 2..9.

    >>> log_ticks(0.5, 200)[0]
    [1.0, 10.0, 100.0]
    >>> log_ticks(3, 40)[0]
    [5.0, 10.0, 20.0]
    """
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    major: list[float] = []
    minor: list[float] = []
    few = math.log10(hi / lo) < 2
    for exponent in range(first, last + 1):
        base = 10.0**exponent
        for m in range(1, 10):
            v = m * base
            if not lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9):
                continue
            (major if m == 1 or (few and m in (2, 5)) else minor).append(v)
    return major, minor


def log_label(value: float) -> str:
    """``0.01`` ... ``10,000`` in plain digits, larger and smaller as ``1e6``.

    >>> log_label(0.1), log_label(1000.0), log_label(1e6), log_label(2e-5)
    ('0.1', '1,000', '1e6', '2e-5')
    """
    exponent = math.floor(math.log10(value) + 1e-9)
    if -2 <= exponent <= 4:
        return f"{value:,.{max(0, -exponent)}f}"
    mantissa = value / 10.0**exponent
    return f"{mantissa:g}e{exponent}"


#: what separates the parts of an operator's or tensor's name (``layer4.0.conv2``, ``encoder_layer_11``)
_NAME_SEPARATORS = re.compile(r"([._\-/:])")
_ELLIPSIS = "\u2026"


def short_label(name: str, most: int = 36) -> str:
    """``name`` in at most ``most`` characters for a label, keeping what tells it apart from the
    names around it: its first part, every part with a digit (the layer and block numbers) and its
    last part. Parts are the pieces between ``.``, ``_``, ``-``, ``/`` and ``:``. The other parts go
    first, from the left, then the next-to-last part, then the words just before a number; each run
    of dropped parts shows as one ``…``. Still too long, the first part goes, then the numbered
    parts from the left (the last numbered part stays); a name still too long keeps its end.

    A middle cut (``encoder_laye...elf_attention``) would give every layer of a transformer the
    same label; this keeps their numbers:

    >>> short_label("encoder_layers_encoder_layer_11_self_attention", 32)
    'encoder…layer_11_self_attention'
    >>> short_label("encoder_layers_encoder_layer_11_self_attention", 26)
    'encoder…layer_11…attention'
    >>> short_label("features.denseblock4.denselayer16.conv2.weight", 30)
    '…denselayer16.conv2.weight'
    >>> short_label("layer4.0.conv2.weight")  # short enough: unchanged
    'layer4.0.conv2.weight'
    >>> short_label("averyveryverylongname", 10)
    '…ylongname'
    """
    if len(name) <= most:
        return name
    pieces = _NAME_SEPARATORS.split(name)  # part, separator, part, ..., part
    parts, separators = pieces[0::2], pieces[1::2]
    last = len(parts) - 1
    numbered = [i for i, p in enumerate(parts) if any(c.isdigit() for c in p)]
    keep_longest = {0, last, *numbered}
    before_numbers = {i - 1 for i in numbered if i > 0}
    order = [i for i in range(1, last - 1) if i not in keep_longest and i not in before_numbers]
    order += [last - 1] if last > 1 and last - 1 not in keep_longest else []
    order += sorted(i for i in before_numbers if i not in keep_longest and i != last - 1)
    order += ([0] if last > 0 else []) + [i for i in numbered if i not in (0, last)][:-1]
    kept = [True] * len(parts)

    def joined() -> str:
        out, dropped = "", False
        for i, part in enumerate(parts):
            if not kept[i]:
                dropped = True
                continue
            if out or dropped:
                out += _ELLIPSIS if dropped else separators[i - 1]
            out, dropped = out + part, False
        return out + (_ELLIPSIS if dropped else "")

    text = name
    for i in order:
        if len(text) <= most:
            break
        kept[i] = False
        text = joined()
    if len(text) > most:
        text = _ELLIPSIS + text[len(text) - most + 1:]
    return text


#: the scale of ``spread_points``' half sunflower: 1.2 keeps its closest two points 1.0017 gaps
#: apart (at 14 points; checked for every count up to 300), 1.1 does not (0.92 gaps)
HALF_SPIRAL = 1.2


def spread_points(points: Sequence[tuple[float, float]], gap: float = 7.0,
                  near: float | None = None) -> list[tuple[float, float]]:
    """``points`` (pixels) moved apart so that each stays visible and can be hovered, as a map
    spreads the markers of one address. The points closer than ``near`` (default ``gap / 2``) to
    one another (in chains) form a group, drawn in the order of their ``(x, y)`` on the lower
    half of a circle centred at the group's mean x and its highest point's y, so that none is
    drawn above that point (y grows downwards; on a roofline a spread point never seems to beat
    a roof its operator stays under): up to six on a half ring whose neighbours are ``gap``
    apart, more on a half sunflower spiral (point ``k`` at radius ``HALF_SPIRAL x gap x
    sqrt(k + 0.5)``, at ``k`` x 137.5 degrees folded into the half plane). A point alone stays
    where it is. A group spread onto another point joins it, and they spread again as one, until
    no two points are closer than ``near``. A chart joins each moved point to where it belongs
    with a thin line; report.html's roofline spreads its points the same way.

    >>> spread_points([(10.0, 10.0), (10.0, 10.0), (50.0, 50.0)], gap=6)
    [(7.0, 10.0), (13.0, 10.0), (50.0, 50.0)]
    """
    near = gap / 2 if near is None else near
    parent = list(range(len(points)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def join(at: Sequence[tuple[float, float]]) -> bool:
        """Put the points of ``at`` closer than ``near`` in one group; whether any two groups joined."""
        cell: dict[tuple[int, int], list[int]] = {}
        for i, (x, y) in enumerate(at):
            cell.setdefault((math.floor(x / near), math.floor(y / near)), []).append(i)
        joined = False
        for (cx, cy), members in cell.items():
            for dx in (-1, 0, 1):
                for dy in (-1, 0, 1):
                    for j in cell.get((cx + dx, cy + dy), ()):
                        for i in members:
                            if i < j and root(i) != root(j) and math.dist(at[i], at[j]) < near:
                                parent[root(i)] = root(j)
                                joined = True
        return joined

    join(points)
    out = list(points)
    for _ in range(len(points)):  # a spread group can land on another point: then they spread as one
        groups: dict[int, list[int]] = {}
        for i in range(len(points)):
            groups.setdefault(root(i), []).append(i)
        out = _spread_groups(points, list(groups.values()), gap)
        if not join(out):
            break
    return out


def _spread_groups(points: Sequence[tuple[float, float]], groups: list[list[int]],
                   gap: float) -> list[tuple[float, float]]:
    """``spread_points``' placement of each group (lists of indices into ``points``)."""
    out = list(points)
    golden = math.pi * (3 - math.sqrt(5))
    for members in groups:
        n = len(members)
        if n == 1:
            continue
        members.sort(key=lambda i: (points[i], i))
        mx = sum(points[i][0] for i in members) / n
        top = min(points[i][1] for i in members)  # the group's highest point (y grows downwards)
        for k, i in enumerate(members):
            if n <= 6:
                radius, angle = gap / (2 * math.sin(math.pi / (2 * (n - 1)))), math.pi - math.pi * k / (n - 1)
            else:
                radius, angle = HALF_SPIRAL * gap * math.sqrt(k + 0.5), math.pi - (k * golden) % math.pi
            out[i] = (round(mx + radius * math.cos(angle), 6), round(top + radius * math.sin(angle), 6))
    return out


#: a rectangle in pixels: left, top, right, bottom
Box = tuple[float, float, float, float]


def text_element(px: float, py: float, text: str, *, colour: str = "black", size: float = SMALL_FONT,
                 anchor: str = "start", halo: bool = False) -> str:
    """``<text>`` with its baseline at pixel ``(px, py)``; ``anchor`` is ``"start"``, ``"middle"``, ``"end"``
    or ``"vertical"`` (read upwards, centred on ``py``); ``halo`` outlines it in white, so that it stays
    readable over coloured shapes."""
    extra = ' stroke="white" stroke-width="3" stroke-linejoin="round" paint-order="stroke"' if halo else ""
    if anchor == "vertical":
        anchor = "middle"
        extra += f' transform="rotate(-90 {_num(px)} {_num(py)})"'
    return (f'<text x="{_num(px)}" y="{_num(py)}" fill="{colour}" font-size="{_num(size)}" '
            f'text-anchor="{anchor}"{extra}>{escape(text)}</text>')


def text_box(px: float, py: float, text: str, size: float = SMALL_FONT, anchor: str = "start") -> Box:
    """The box (pixels) that ``text_element(px, py, text, size=size, anchor=anchor)`` covers, estimated.

    >>> text_box(100, 50, "abcde", size=10, anchor="end")
    (70.0, 42.0, 100.0, 52.5)
    >>> text_box(100, 50, "abcde", size=10, anchor="vertical")
    (92.0, 35.0, 102.5, 65.0)
    """
    width = text_width(text, size)
    if anchor == "vertical":
        return (px - 0.8 * size, py - width / 2, px + 0.25 * size, py + width / 2)
    left = {"start": px, "middle": px - width / 2, "end": px - width}[anchor]
    return (left, py - 0.8 * size, left + width, py + 0.25 * size)


def pixel_line(px0: float, py0: float, px1: float, py1: float, *, colour: str = "#666666",
               width: float = 0.7) -> str:
    """A segment in pixels (a leader from a label to what it names)."""
    return (f'<line x1="{_num(px0)}" y1="{_num(py0)}" x2="{_num(px1)}" y2="{_num(py1)}" stroke="{colour}" '
            f'stroke-width="{_num(width)}"/>')


def circle_element(px: float, py: float, *, colour: str, radius: float = 3.0, opacity: float = 0.75,
                   tooltip: str | None = None, hollow: bool = False) -> str:
    """A point at pixel ``(px, py)`` (``hollow``: a white disc ringed in ``colour``); ``tooltip`` becomes
    its ``<title>``."""
    attrs = f'cx="{_num(px)}" cy="{_num(py)}" r="{_num(radius)}" '
    if hollow:
        attrs += f'fill="white" stroke="{colour}" stroke-width="1.2"'
    else:
        attrs += f'fill="{colour}" fill-opacity="{_num(opacity)}"'
    if tooltip is None:
        return f"<circle {attrs}/>"
    return f"<circle {attrs}><title>{escape(tooltip)}</title></circle>"


def boxes_overlap(a: Box, b: Box, gap: float = 0.0) -> bool:
    """Whether two boxes overlap (or come closer than ``gap`` pixels)."""
    return a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] + gap and b[1] < a[3] + gap


class LabelPlacer:
    """Labels that do not overlap: each takes the first of its candidate positions whose box lies
    inside ``bounds`` and clear of every box taken so far (labels placed, boxes reserved).

    >>> placer = LabelPlacer((0, 0, 200, 100))
    >>> placer.place("first", [(10, 20, "start")]) is not None
    True
    >>> placer.place("second", [(12, 22, "start")]) is None  # would cover "first"
    True
    >>> placer.place("second", [(12, 22, "start"), (12, 60, "start")]).startswith('<text x="12" y="60"')
    True
    """

    def __init__(self, bounds: Box, reserved: Iterable[Box] = (), gap: float = 2.0) -> None:
        self.bounds = bounds
        self.taken: list[Box] = list(reserved)
        self.gap = gap

    def fits(self, box: Box) -> bool:
        """Whether ``box`` is inside the bounds and clear of every box taken."""
        left, top, right, bottom = self.bounds
        inside = left <= box[0] and box[2] <= right and top <= box[1] and box[3] <= bottom
        return inside and not any(boxes_overlap(box, other, self.gap) for other in self.taken)

    def choose(self, text: str, candidates: Iterable[tuple[float, float, str]],
               size: float = SMALL_FONT) -> tuple[float, float, str] | None:
        """The first candidate ``(px, py, anchor)`` (as ``text_element``) where ``text`` fits, its box
        then taken; None when none fits."""
        for px, py, anchor in candidates:
            box = text_box(px, py, text, size, anchor)
            if self.fits(box):
                self.taken.append(box)
                return px, py, anchor
        return None

    def place(self, text: str, candidates: Iterable[tuple[float, float, str]], *, size: float = SMALL_FONT,
              colour: str = "black", halo: bool = True) -> str | None:
        """The ``<text>`` at the first candidate that fits (``choose``), or None when none does."""
        chosen = self.choose(text, candidates, size)
        if chosen is None:
            return None
        px, py, anchor = chosen
        return text_element(px, py, text, colour=colour, size=size, anchor=anchor, halo=halo)


@dataclass(frozen=True)
class LegendEntry:
    """One legend line: a swatch in ``colour`` and its label. Swatches: ``"box"``, ``"line"``, ``"dash"``,
    ``"dot"``, ``"ring"`` (a hollow dot), ``"drop"`` (a ring above a dot, joined by a thin line) and
    ``"spread"`` (three dots around a centre: points moved apart by ``spread_points``)."""

    label: str
    colour: str
    kind: str = "box"


class Chart:
    """One plot area with a title, two axes and an optional legend; see the module docstring.

    Layers, drawn in this order: ``"data"`` (clipped to the plot area) and ``"overlay"``
    (not clipped: labels on top of the data). ``group`` wraps elements in a ``<g>`` with an
    ``id``, so that a reader (or a test) can find one kind of element.
    """

    def __init__(
        self, *, title: str, x_label: str, y_label: str, x_range: tuple[float, float],
        y_range: tuple[float, float], x_log: bool = False, y_log: bool = False, width: int = 1200,
        height: int = 500, legend: Sequence[LegendEntry] = (), legend_inside: bool = False,
    ) -> None:
        for name, (lo, hi), log in (("x", x_range, x_log), ("y", y_range, y_log)):
            if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo and (lo > 0 or not log)):
                raise ValueError(f"Chart: {name}_range {(lo, hi)!r} must be finite and increasing"
                                 + (", and positive on a log axis" if log else ""))
        self.title, self.x_label, self.y_label = title, x_label, y_label
        self.x_range, self.y_range, self.x_log, self.y_log = x_range, y_range, x_log, y_log
        self.width, self.height = width, height
        self.legend = list(legend)
        self.legend_inside = legend_inside
        legend_width = 0.0
        if self.legend and not legend_inside:
            legend_width = 36 + max(text_width(e.label, SMALL_FONT) for e in self.legend)
        self.left, self.top = 78.0, 34.0
        self.right = width - 16.0 - legend_width
        self.bottom = height - 48.0
        self.layers: dict[str, list[str]] = {"data": [], "overlay": []}

    # --- coordinates -------------------------------------------------------------------------

    @staticmethod
    def _fraction(v: float, lo: float, hi: float, log: bool) -> float:
        if log:
            return (math.log10(max(v, 1e-300)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
        return (v - lo) / (hi - lo)

    def x(self, v: float) -> float:
        """The pixel column of data value ``v``."""
        return self.left + self._fraction(v, *self.x_range, self.x_log) * (self.right - self.left)

    def y(self, v: float) -> float:
        """The pixel row of data value ``v`` (up is larger)."""
        return self.bottom - self._fraction(v, *self.y_range, self.y_log) * (self.bottom - self.top)

    # --- elements (strings of SVG, in data coordinates) ---------------------------------------

    def rect(self, x0: float, x1: float, y0: float, y1: float, *, fill: str, stroke: str | None = None,
             stroke_width: float = 0.3, opacity: float = 1.0, tooltip: str | None = None) -> str:
        """The rectangle ``[x0, x1] x [y0, y1]``; ``tooltip`` becomes its ``<title>``."""
        px0, px1 = self.x(x0), self.x(x1)
        py0, py1 = self.y(y1), self.y(y0)
        attrs = (f'x="{_num(px0)}" y="{_num(py0)}" width="{_num(max(px1 - px0, 0.0))}" '
                 f'height="{_num(max(py1 - py0, 0.0))}" fill="{fill}"')
        if stroke is not None:
            attrs += f' stroke="{stroke}" stroke-width="{_num(stroke_width)}"'
        if opacity != 1.0:
            attrs += f' fill-opacity="{_num(opacity)}"'
        if tooltip is None:
            return f"<rect {attrs}/>"
        return f"<rect {attrs}><title>{escape(tooltip)}</title></rect>"

    def polyline(self, xs: Iterable[float], ys: Iterable[float], *, colour: str, width: float = 1.2,
                 dash: str | None = None) -> str:
        """Straight segments through the points (data coordinates)."""
        points = " ".join(f"{_num(self.x(a))},{_num(self.y(b))}" for a, b in zip(xs, ys, strict=True))
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        return (f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="{_num(width)}"'
                f'{extra}/>')

    def _steps(self, xs: Sequence[float], ys: Sequence[float], until: float) -> str:
        """Path commands from the first point on: ``ys[i]`` holds from ``xs[i]`` to the next x."""
        parts = [f"H{_num(self.x(xs[i]))}V{_num(self.y(ys[i]))}" for i in range(1, len(xs))]
        return "".join(parts) + f"H{_num(self.x(until))}"

    def step_line(self, xs: Sequence[float], ys: Sequence[float], *, until: float, colour: str,
                  width: float = 1.0) -> str:
        """A step function as a line: ``ys[i]`` holds from ``xs[i]`` to the next x (the last to ``until``)."""
        if not xs:
            return ""
        d = f"M{_num(self.x(xs[0]))},{_num(self.y(ys[0]))}" + self._steps(xs, ys, until)
        return f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="{_num(width)}"/>'

    def step_area(self, xs: Sequence[float], ys: Sequence[float], *, until: float, colour: str,
                  opacity: float = 0.6) -> str:
        """The area under a step function (as ``step_line``), down to the bottom of the plot area."""
        if not xs:
            return ""
        base = _num(self.bottom)
        d = f"M{_num(self.x(xs[0]))},{base}V{_num(self.y(ys[0]))}" + self._steps(xs, ys, until) + f"V{base}Z"
        return f'<path d="{d}" fill="{colour}" fill-opacity="{_num(opacity)}" stroke="none"/>'

    def hline(self, y: float, *, colour: str, width: float = 1.2, dash: str | None = "6,4") -> str:
        """A horizontal line across the plot area at data value ``y``."""
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        py = _num(self.y(y))
        return (f'<line x1="{_num(self.left)}" y1="{py}" x2="{_num(self.right)}" y2="{py}" stroke="{colour}" '
                f'stroke-width="{_num(width)}"{extra}/>')

    def line(self, x0: float, y0: float, x1: float, y1: float, *, colour: str, width: float = 1.0,
             dash: str | None = None, tooltip: str | None = None) -> str:
        """A straight segment from ``(x0, y0)`` to ``(x1, y1)`` (data coordinates)."""
        attrs = (f'x1="{_num(self.x(x0))}" y1="{_num(self.y(y0))}" x2="{_num(self.x(x1))}" y2="{_num(self.y(y1))}" '
                 f'stroke="{colour}" stroke-width="{_num(width)}"')
        if dash:
            attrs += f' stroke-dasharray="{dash}"'
        if tooltip is None:
            return f"<line {attrs}/>"
        return f"<line {attrs}><title>{escape(tooltip)}</title></line>"

    def circle(self, x: float, y: float, *, colour: str, radius: float = 3.0, opacity: float = 0.75,
               tooltip: str | None = None, hollow: bool = False) -> str:
        """A point (``hollow``: a white disc ringed in ``colour``); ``tooltip`` becomes its ``<title>``."""
        return circle_element(self.x(x), self.y(y), colour=colour, radius=radius, opacity=opacity, tooltip=tooltip,
                              hollow=hollow)

    def label(self, x: float, y: float, text: str, *, colour: str = "black", size: float = SMALL_FONT,
              anchor: str = "start", dy: float = -3.0, halo: bool = False) -> str:
        """Text at data point ``(x, y)``, ``dy`` pixels below it (negative: above)."""
        return text_element(self.x(x) + (3 if anchor == "start" else 0), self.y(y) + dy, text, colour=colour,
                            size=size, anchor=anchor, halo=halo)

    def plot_box(self) -> Box:
        """The plot area in pixels."""
        return (self.left, self.top, self.right, self.bottom)

    def add(self, layer: str, *elements: str) -> None:
        """Append SVG elements to ``"data"`` (clipped) or ``"overlay"``."""
        self.layers[layer].extend(e for e in elements if e)

    def group(self, layer: str, group_id: str, elements: Iterable[str]) -> None:
        """Append ``elements`` to ``layer`` inside ``<g id="group_id">``."""
        self.layers[layer].append(f'<g id="{group_id}">' + "".join(elements) + "</g>")

    # --- the document -------------------------------------------------------------------------

    def _axis(self) -> list[str]:
        out: list[str] = ['<g id="axes" font-size="10" fill="black">']
        grid: list[str] = []
        marks: list[str] = []
        left, right, top, bottom = self.left, self.right, self.top, self.bottom

        def ticks(lo: float, hi: float, log: bool) -> tuple[list[tuple[float, str]], list[float]]:
            if log:
                major, minor = log_ticks(lo, hi)
                return [(v, log_label(v)) for v in major], minor
            values, step = linear_ticks(lo, hi)
            return [(v, linear_label(v, step)) for v in values], []

        x_major, x_minor = ticks(*self.x_range, self.x_log)
        y_major, y_minor = ticks(*self.y_range, self.y_log)
        for v, text in x_major:
            px = _num(self.x(v))
            grid.append(f'<line x1="{px}" y1="{_num(top)}" x2="{px}" y2="{_num(bottom)}"/>')
            marks.append(f'<line x1="{px}" y1="{_num(bottom)}" x2="{px}" y2="{_num(bottom + 5)}" stroke="black"/>')
            out.append(f'<text x="{px}" y="{_num(bottom + 17)}" text-anchor="middle">{escape(text)}</text>')
        for v in x_minor:
            px = _num(self.x(v))
            marks.append(f'<line x1="{px}" y1="{_num(bottom)}" x2="{px}" y2="{_num(bottom + 3)}" stroke="black"/>')
        for v, text in y_major:
            py = _num(self.y(v))
            grid.append(f'<line x1="{_num(left)}" y1="{py}" x2="{_num(right)}" y2="{py}"/>')
            marks.append(f'<line x1="{_num(left - 5)}" y1="{py}" x2="{_num(left)}" y2="{py}" stroke="black"/>')
            out.append(f'<text x="{_num(left - 8)}" y="{_num(self.y(v) + 3.5)}" text-anchor="end">'
                       f'{escape(text)}</text>')
        for v in y_minor:
            py = _num(self.y(v))
            marks.append(f'<line x1="{_num(left - 3)}" y1="{py}" x2="{_num(left)}" y2="{py}" stroke="black"/>')
        out.append("</g>")
        middle_y = (top + bottom) / 2
        labels = [
            f'<text x="{_num((left + right) / 2)}" y="{_num(self.height - 12)}" text-anchor="middle">'
            f"{escape(self.x_label)}</text>",
            f'<text x="16" y="{_num(middle_y)}" text-anchor="middle" transform="rotate(-90 16 {_num(middle_y)})">'
            f"{escape(self.y_label)}</text>",
        ]
        return (['<g id="grid" stroke="#dddddd" stroke-width="0.6">', *grid, "</g>"]
                + ['<g id="ticks" stroke-width="0.8">', *marks, "</g>"] + out + labels)

    def legend_box(self) -> Box | None:
        """Where the legend is drawn (pixels), or None without a legend."""
        if not self.legend:
            return None
        width = 36 + max(text_width(e.label, SMALL_FONT) for e in self.legend)
        height = _LEGEND_LINE * len(self.legend) + 6
        if self.legend_inside:  # lower right corner of the plot area
            x0, y0 = self.right - width - 8, self.bottom - 8 - height
        else:
            x0, y0 = self.right + 10, self.top
        return (x0, y0, x0 + width, y0 + height)

    def _legend(self) -> list[str]:
        box = self.legend_box()
        if box is None:
            return []
        line_height = _LEGEND_LINE
        x0, y0 = box[0], box[1]
        width, height = box[2] - box[0], box[3] - box[1]
        out = [f'<g id="legend" font-size="{SMALL_FONT}">',
               f'<rect x="{_num(x0)}" y="{_num(y0)}" width="{_num(width)}" height="{height}" fill="white" '
               'fill-opacity="0.85" stroke="#bbbbbb" stroke-width="0.8"/>']
        for i, entry in enumerate(self.legend):
            cy = y0 + 3 + line_height * i + line_height / 2
            sx = x0 + 6
            if entry.kind == "box":
                out.append(f'<rect x="{_num(sx)}" y="{_num(cy - 5)}" width="18" height="10" fill="{entry.colour}"/>')
            elif entry.kind == "dot":
                out.append(f'<circle cx="{_num(sx + 9)}" cy="{_num(cy)}" r="3.5" fill="{entry.colour}"/>')
            elif entry.kind == "ring":
                out.append(f'<circle cx="{_num(sx + 9)}" cy="{_num(cy)}" r="3.5" fill="white" '
                           f'stroke="{entry.colour}" stroke-width="1.2"/>')
            elif entry.kind == "drop":
                out.append(f'<line x1="{_num(sx + 9)}" y1="{_num(cy - 4)}" x2="{_num(sx + 9)}" y2="{_num(cy + 4)}" '
                           f'stroke="{entry.colour}" stroke-width="1"/>'
                           f'<circle cx="{_num(sx + 9)}" cy="{_num(cy - 4)}" r="2.5" fill="white" '
                           f'stroke="{entry.colour}" stroke-width="1.2"/>'
                           f'<circle cx="{_num(sx + 9)}" cy="{_num(cy + 4)}" r="2.5" fill="{entry.colour}"/>')
            elif entry.kind == "spread":  # points spread apart around their centre (spread_points)
                out.extend(f'<circle cx="{_num(sx + 9 + dx)}" cy="{_num(cy + dy)}" r="2.2" fill="{entry.colour}"/>'
                           for dx, dy in ((-4.5, 2.5), (4.5, 2.5), (0, -4)))
            else:
                dash = ' stroke-dasharray="5,3"' if entry.kind == "dash" else ""
                out.append(f'<line x1="{_num(sx)}" y1="{_num(cy)}" x2="{_num(sx + 18)}" y2="{_num(cy)}" '
                           f'stroke="{entry.colour}" stroke-width="1.6"{dash}/>')
            out.append(f'<text x="{_num(sx + 24)}" y="{_num(cy + 3.5)}">{escape(entry.label)}</text>')
        out.append("</g>")
        return out

    def to_svg(self) -> str:
        """The SVG document: background, title, grid, clipped data, frame, axes, overlay, legend."""
        w, h = self.width, self.height
        plot = (f'x="{_num(self.left)}" y="{_num(self.top)}" width="{_num(self.right - self.left)}" '
                f'height="{_num(self.bottom - self.top)}"')
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            'style="max-width:100%;height:auto" '
            f'font-family="DejaVu Sans, Arial, Helvetica, sans-serif" font-size="{FONT_SIZE}">',
            f"<title>{escape(self.title)}</title>",
            f'<defs><clipPath id="plot-area"><rect {plot}/></clipPath></defs>',
            f'<rect width="{w}" height="{h}" fill="white"/>',
            f'<text x="{_num((self.left + self.right) / 2)}" y="20" text-anchor="middle" font-size="13">'
            f"{escape(self.title)}</text>",
        ]
        axes = self._axis()
        parts += axes[: axes.index("</g>") + 1]  # the grid under the data
        parts.append('<g clip-path="url(#plot-area)">' + "".join(self.layers["data"]) + "</g>")
        parts.append(f'<rect {plot} fill="none" stroke="black" stroke-width="0.8"/>')
        parts += axes[axes.index("</g>") + 1:]
        parts += self.layers["overlay"]
        parts += self._legend()
        parts.append("</svg>\n")
        return "\n".join(parts)


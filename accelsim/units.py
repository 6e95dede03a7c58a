"""Quantities as people write and read them: byte counts (``parse_bytes("8MiB")``,
``format_bytes(3 * 2**20)``, the unit of a byte axis), bandwidths, times and frequencies
(``format_bandwidth``, ``format_seconds``, ``format_hertz``). One module for every command and
picture (the hardware configs, the summary, the report's and the sweep's plots and pages, the
sweep's progress), importing nothing heavy.
"""

from __future__ import annotations

import re

_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
#: ASCII digits only (``re.ASCII``): ``\d`` alone would accept any Unicode digit ("٣" as 3); no
#: ``_`` separators either (see ``SEPARATOR``)
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$", re.ASCII)

#: what a number typed as text may not hold, though Python's ``int()`` and ``float()`` skip it:
#: ``1_0_0`` read as 100 would hide a typo (a digit too few or too many between separators).
#: The CSV reader and MiniMalloc's format refuse it too, so every number a user types is read
#: the same way, as ASCII digits.
SEPARATOR = "_"


def parse_bytes(value: int | str, what: str = "size") -> int:
    """A byte count from an integer or a string such as ``"8MiB"``, ``"512KiB"``, ``"2MB"``.

    Binary units (KiB, MiB, GiB, TiB) are powers of 1024, decimal ones (KB, MB, GB, TB) powers
    of 1000; letters are case-insensitive. Fractions are allowed when the result is a whole
    number of bytes. The digits are ASCII, without ``_`` separators (``SEPARATOR``). ``what``
    names the quantity in error messages.

    >>> parse_bytes("8MiB"), parse_bytes("1.5GiB"), parse_bytes("2MB"), parse_bytes(4096)
    (8388608, 1610612736, 2000000, 4096)
    >>> parse_bytes("8 apples")
    Traceback (most recent call last):
    ...
    ValueError: size '8 apples': unknown unit 'apples' (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)
    >>> parse_bytes("1_024KiB", "--sram")
    Traceback (most recent call last):
    ...
    ValueError: --sram '1_024KiB' is not a byte count: write it in ASCII digits, without '_' separators
    """
    if isinstance(value, bool):
        raise ValueError(f"{what} {value!r} is not a byte count")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{what} {value} is negative")
        return value
    if isinstance(value, float):
        if not value.is_integer() or value < 0:
            raise ValueError(f"{what} {value!r} is not a non-negative whole number of bytes")
        return int(value)
    if not isinstance(value, str):
        raise ValueError(f"{what} {value!r} is not a byte count")
    if SEPARATOR in value:
        raise ValueError(f"{what} {value!r} is not a byte count: write it in ASCII digits, without "
                         f"{SEPARATOR!r} separators")
    match = _SIZE_RE.match(value)
    if match is None:
        raise ValueError(f"{what} {value!r} is not a byte count (examples: 1048576, 512KiB, 8MiB, 1.5GiB, 2MB)")
    number, unit = match.groups()
    if unit.lower() not in _UNITS:
        raise ValueError(
            f"{what} {value!r}: unknown unit {unit!r} (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)"
        )
    scale = _UNITS[unit.lower()]
    whole, _, frac = number.partition(".")
    # exact arithmetic: "1.5GiB" must not go through a float
    numerator = int(whole + frac) * scale
    denominator = 10 ** len(frac)
    if numerator % denominator:
        raise ValueError(f"{what} {value!r} is not a whole number of bytes")
    return numerator // denominator


def format_bytes(n: float) -> str:
    """A short human reading of a byte count in binary units.

    >>> format_bytes(3 * 2**20), format_bytes(1536), format_bytes(100)
    ('3 MiB', '1.50 KiB', '100 B')
    """
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n // scale:.0f} {unit}" if n % scale == 0 else f"{n / scale:.2f} {unit}"
    return f"{int(n)} B"


def _decimal(value: float, unit: str, prefixes: tuple[tuple[str, float], ...]) -> str:
    """``value`` in ``unit`` with the largest decimal prefix it reaches, in 3 significant digits;
    a value that rounds up to 1000 of one prefix is written in the next (``1 GB/s``, not ``1e+03 MB/s``)."""
    for prefix, scale in prefixes:
        if abs(value) >= scale * 0.9995:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


_PREFIXES = (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def format_bandwidth(bytes_per_s: float) -> str:
    """A bandwidth in decimal units, as bandwidths are quoted (64 GB/s is 64e9 B/s), in 3
    significant digits.

    >>> format_bandwidth(25.6e9), format_bandwidth(4e9), format_bandwidth(512e6), format_bandwidth(999.9e6)
    ('25.6 GB/s', '4 GB/s', '512 MB/s', '1 GB/s')
    >>> format_bandwidth(100)
    '100 B/s'
    """
    return _decimal(float(bytes_per_s), "B/s", _PREFIXES)


def format_hertz(hz: float) -> str:
    """A frequency in decimal units, 3 significant digits.

    >>> format_hertz(1.066e9), format_hertz(940e6)
    ('1.07 GHz', '940 MHz')
    """
    return _decimal(float(hz), "Hz", _PREFIXES)


def format_seconds(seconds: float) -> str:
    """A duration in s, ms, us or ns, 3 significant digits (whole seconds from 1,000 s up).

    >>> format_seconds(16.136), format_seconds(0.0552), format_seconds(6.3583e-06), format_seconds(4e-9)
    ('16.1 s', '55.2 ms', '6.36 us', '4 ns')
    >>> format_seconds(0), format_seconds(3600.4)
    ('0 s', '3,600 s')
    """
    s = float(seconds)
    if abs(s) >= 999.5:
        return f"{s:,.0f} s"
    if s == 0:
        return "0 s"
    return _decimal(s, "s", (("", 1.0), ("m", 1e-3), ("u", 1e-6), ("n", 1e-9)))


def byte_axis_unit(largest: float) -> tuple[str, float]:
    """The unit of an axis whose largest value is ``largest`` bytes: the largest binary unit
    that gives at least 2 of it (``("MiB", 2**20)``), else bytes.

    >>> byte_axis_unit(3 * 2**20), byte_axis_unit(1000)
    (('MiB', 1048576), ('B', 1))
    """
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if largest >= 2 * scale:
            return unit, scale
    return "B", 1


#: the byte axis of the layout and memory pictures reaches this much above the peak
PEAK_HEADROOM = 1.12
#: the capacity is drawn as a line when it is at most this many times the axis's top, else noted
CAPACITY_IN_VIEW = 1.25


def byte_axis_top(peak: int, capacity: int) -> tuple[float, bool]:
    """The top (bytes) of a layout or memory picture's byte axis, and whether the capacity is in view.

    The axis follows the peak: at the default capacity a small model's peak would fill the bottom
    few percent of an axis that reached the capacity. It reaches the capacity only when that is
    close; otherwise the picture notes the capacity instead. ``layout.svg``, ``memory.svg`` and
    ``report.html`` all use this rule.

    >>> top, in_view = byte_axis_top(100, 2000)
    >>> round(top, 6), in_view, byte_axis_top(100, 120)
    (112.0, False, (126.0, True))
    """
    top = max(peak, 1) * PEAK_HEADROOM
    in_view = capacity <= CAPACITY_IN_VIEW * top
    return (max(top, capacity * 1.05) if in_view else top), in_view

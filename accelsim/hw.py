"""Hardware configurations: loading and checking ``hw_configs/*.yaml``, and byte-size parsing.

A ``HardwareConfig`` describes one target as the simulator sees it: how many processing
elements (PEs) run the same program, how much scratchpad each has, the compute rates, and
the DRAM behind it. Two scopes of on-chip memory are modelled:

* ``per_pe`` (Pixel 6): every PE has its own scratchpad and all PEs run the same program, so
  one allocation serves every PE. Each tensor is split evenly over the PEs; its per-PE size
  is ``ceil(nbytes / n_pe)`` rounded up to ``alignment``. Capacities and peaks are per PE.
* ``chip`` (TPUv4): one memory (CMEM) shared on chip; a tensor's on-chip size is its size
  rounded up to ``alignment``.

Bundled configurations live in the ``hw_configs`` package; ``load_hw`` takes either their
name or the path of a YAML file written the same way. Every field is checked: an unknown,
missing, mistyped or out-of-range field raises ``HardwareConfigError`` naming the field and
the file.

>>> hw = load_hw("pixel6")
>>> hw.n_pe, hw.capacity_scope, hw.onchip_bytes(1000)
(16, 'per_pe', 64)
>>> hw.with_sram("512KiB").sram_bytes_per_pe
524288
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields, replace
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

CAPACITY_SCOPES = ("per_pe", "chip")


class HardwareConfigError(ValueError):
    """A hardware configuration that cannot be used; the message names the field and the file."""


# --------------------------------------------------------------------------------------------
# byte sizes

_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_SIZE_RE = re.compile(r"^\s*(\d[\d_]*(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_bytes(value: int | str, what: str = "size") -> int:
    """A byte count from an integer or a string such as ``"8MiB"``, ``"512KiB"``, ``"2MB"``.

    Binary units (KiB, MiB, GiB, TiB) are powers of 1024, decimal ones (KB, MB, GB, TB) powers
    of 1000; letters are case-insensitive. Fractions are allowed when the result is a whole
    number of bytes. ``what`` names the quantity in error messages.

    >>> parse_bytes("8MiB"), parse_bytes("1.5GiB"), parse_bytes("2MB"), parse_bytes(4096)
    (8388608, 1610612736, 2000000, 4096)
    >>> parse_bytes("8 apples")
    Traceback (most recent call last):
    ...
    ValueError: size '8 apples': unknown unit 'apples' (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)
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
    match = _SIZE_RE.match(value)
    if match is None:
        raise ValueError(f"{what} {value!r} is not a byte count (examples: 1048576, 512KiB, 8MiB, 1.5GiB, 2MB)")
    number, unit = match.groups()
    if unit.lower() not in _UNITS:
        raise ValueError(
            f"{what} {value!r}: unknown unit {unit!r} (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)"
        )
    scale = _UNITS[unit.lower()]
    number = number.replace("_", "")
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


# --------------------------------------------------------------------------------------------
# the configuration record


@dataclass(frozen=True)
class HardwareConfig:
    """One accelerator target. Units are in the field names; every count is a chip total unless
    it says ``per_pe``."""

    name: str  #: short name, e.g. "pixel6"
    description: str  #: one line for listings
    n_pe: int  #: processing elements running the same program (tensors are split over them)
    sram_bytes_per_pe: int  #: scratchpad bytes per PE (the whole shared memory when n_pe == 1)
    alignment: int  #: every on-chip offset and size is a multiple of this many bytes
    clock_hz: float  #: core clock; one simulated cycle is 1 / clock_hz seconds
    macs_per_cycle: int  #: multiply-accumulates per cycle, whole chip
    vector_elements_per_cycle: int  #: elements per cycle for operators without MACs, whole chip
    dram_bandwidth_bytes_per_s: float  #: DRAM (LPDDR / HBM) bandwidth available to the accelerator
    dram_bytes: int  #: DRAM capacity
    dram_latency_cycles: int  #: fixed cost added to every DMA transfer
    dtype: str  #: default storage dtype of tensors on this target ("int8", "bf16", ...)
    capacity_scope: str  #: "per_pe" (one scratchpad per PE) or "chip" (one shared memory)
    weight_tile_bytes: int  #: largest weight slice one operator loads at once (per PE on a per_pe target)
    source: str = ""  #: file the config was read from (not a YAML field)

    # ---- derived quantities

    @property
    def sram_bytes_total(self) -> int:
        """On-chip scratchpad bytes summed over the PEs."""
        return self.sram_bytes_per_pe * self.n_pe

    @property
    def dram_bytes_per_cycle(self) -> float:
        return self.dram_bandwidth_bytes_per_s / self.clock_hz

    @property
    def capacity_label(self) -> str:
        """How to read capacities and peaks: ``"per PE (16 PEs)"`` or ``"chip"``."""
        return f"per PE ({self.n_pe} PEs)" if self.capacity_scope == "per_pe" else "chip"

    def share_bytes(self, nbytes: int) -> int:
        """Data bytes of a tensor of ``nbytes`` held by each PE: ``ceil(nbytes / n_pe)`` on a
        ``per_pe`` target, ``nbytes`` on a ``chip`` one (what a DMA moves per PE)."""
        return -(-nbytes // self.n_pe) if self.capacity_scope == "per_pe" else nbytes

    def onchip_bytes(self, nbytes: int) -> int:
        """On-chip bytes a tensor of ``nbytes`` occupies: ``share_bytes`` rounded up to ``alignment``.

        An empty tensor stays 0 bytes (the scheduler gives it no residency).
        """
        return -(-self.share_bytes(nbytes) // self.alignment) * self.alignment

    def chip_bytes(self, pe_bytes: int) -> int:
        """DRAM bytes of a transfer that moves ``pe_bytes`` to or from each PE (every PE gets its share)."""
        return pe_bytes * (self.n_pe if self.capacity_scope == "per_pe" else 1)

    def dma_cycles(self, chip_bytes: int) -> int:
        """Cycles one DMA of ``chip_bytes`` occupies the DRAM interface: latency + bytes / bandwidth."""
        # exact rational arithmetic: a float quotient such as 20.000000001 would add a spurious cycle
        transfer = Fraction(chip_bytes) * Fraction(self.clock_hz) / Fraction(self.dram_bandwidth_bytes_per_s)
        return self.dram_latency_cycles + math.ceil(transfer)

    def compute_cycles(self, macs: int, elements: int) -> int:
        """Cycles of one operator: ``ceil(macs / macs_per_cycle)`` when it has MACs, otherwise
        ``ceil(elements / vector_elements_per_cycle)``; at least one cycle."""
        if macs > 0:
            return max(1, -(-macs // self.macs_per_cycle))
        return max(1, -(-elements // self.vector_elements_per_cycle))

    def seconds(self, cycles: float) -> float:
        return cycles / self.clock_hz

    def with_sram(self, sram: int | str) -> HardwareConfig:
        """A copy with another scratchpad size per PE (the ``--sram`` what-if), e.g. ``"8MiB"``."""
        size = parse_bytes(sram, "sram")
        if size <= 0:
            raise HardwareConfigError(f"sram must be positive, got {sram!r}")
        return replace(self, sram_bytes_per_pe=size)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# --------------------------------------------------------------------------------------------
# loading

# field -> (kind, required); kinds: "str", "bytes" (int or "8MiB"), "int", "number"
_FIELDS: dict[str, tuple[str, bool]] = {
    "name": ("str", True),
    "description": ("str", False),
    "n_pe": ("int", True),
    "sram_bytes_per_pe": ("bytes", True),
    "alignment": ("bytes", True),
    "clock_hz": ("number", True),
    "macs_per_cycle": ("int", True),
    "vector_elements_per_cycle": ("int", True),
    "dram_bandwidth_bytes_per_s": ("number", True),
    "dram_bytes": ("bytes", True),
    "dram_latency_cycles": ("int", True),
    "dtype": ("str", True),
    "capacity_scope": ("str", True),
    "weight_tile_bytes": ("bytes", True),
}
_MAY_BE_ZERO = {"dram_latency_cycles"}


def _check_field(where: str, key: str, value: Any) -> Any:
    kind, _ = _FIELDS[key]
    if kind == "str":
        if not isinstance(value, str) or (key != "description" and not value):
            raise HardwareConfigError(f"{where}: field {key!r} must be a non-empty string, got {value!r}")
        return value
    if kind == "bytes":
        try:
            number: Any = parse_bytes(value, key)
        except ValueError as exc:
            raise HardwareConfigError(f"{where}: field {key!r}: {exc}") from None
    elif kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise HardwareConfigError(f"{where}: field {key!r} must be an integer, got {value!r}")
        number = value
    else:
        # YAML reads 1.2e12 (no sign in the exponent) as a string; accept any float literal
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise HardwareConfigError(f"{where}: field {key!r} must be a number, got {value!r}")
        number = value
    if number < 0 or (number == 0 and key not in _MAY_BE_ZERO):
        bound = "non-negative" if key in _MAY_BE_ZERO else "positive"
        raise HardwareConfigError(f"{where}: field {key!r} must be {bound}, got {value!r}")
    return number


def config_from_dict(data: Any, where: str = "<dict>") -> HardwareConfig:
    """Check a parsed YAML mapping and build the config; ``where`` names it in errors."""
    if not isinstance(data, dict):
        raise HardwareConfigError(f"{where}: expected a mapping of fields, got {type(data).__name__}")
    unknown = [k for k in data if k not in _FIELDS]
    if unknown:
        raise HardwareConfigError(
            f"{where}: unknown field {unknown[0]!r} (known fields: {', '.join(_FIELDS)})"
        )
    missing = [k for k, (_, required) in _FIELDS.items() if required and k not in data]
    if missing:
        raise HardwareConfigError(f"{where}: missing field {missing[0]!r}")
    values = {k: _check_field(where, k, v) for k, v in data.items()}
    values.setdefault("description", "")
    from frontend.graph import DTYPE_BYTES  # the dtypes a run can store tensors in (no torch import)

    if values["dtype"] not in DTYPE_BYTES:
        raise HardwareConfigError(
            f"{where}: field 'dtype' must be one of {', '.join(DTYPE_BYTES)}, got {values['dtype']!r}"
        )
    if values["capacity_scope"] not in CAPACITY_SCOPES:
        raise HardwareConfigError(
            f"{where}: field 'capacity_scope' must be one of {', '.join(CAPACITY_SCOPES)}, "
            f"got {values['capacity_scope']!r}"
        )
    if values["capacity_scope"] == "chip" and values["n_pe"] != 1:
        raise HardwareConfigError(
            f"{where}: field 'n_pe' must be 1 when capacity_scope is 'chip' (one shared memory), got {values['n_pe']}"
        )
    for key in ("clock_hz", "dram_bandwidth_bytes_per_s"):
        values[key] = float(values[key])
    return HardwareConfig(**values, source=where)


def _bundled_dir() -> Path:
    return Path(str(resources.files("hw_configs")))


def list_configs() -> list[str]:
    """Names of the bundled hardware configs (``hw_configs/*.yaml``)."""
    return sorted(p.stem for p in _bundled_dir().glob("*.yaml"))


def load_hw(name_or_path: str | Path | HardwareConfig) -> HardwareConfig:
    """A bundled config by name (``"pixel6"``) or a config read from a YAML file.

    Raises ``HardwareConfigError`` for an unknown name, an unreadable file, or any bad field.
    """
    if isinstance(name_or_path, HardwareConfig):
        return name_or_path
    text = str(name_or_path)
    path = Path(text)
    looks_like_path = path.suffix in (".yaml", ".yml") or "/" in text or path.exists()
    if not looks_like_path:
        bundled = _bundled_dir() / f"{text}.yaml"
        if not bundled.is_file():
            raise HardwareConfigError(
                f"unknown hardware config {text!r}; bundled: {', '.join(list_configs())} "
                "(or give the path of a .yaml file)"
            )
        path = bundled
    try:
        raw = path.read_text()
    except OSError as exc:
        raise HardwareConfigError(f"{path}: cannot read hardware config: {exc.strerror}") from None
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise HardwareConfigError(f"{path}: not valid YAML: {exc}") from None
    return config_from_dict(data, str(path))

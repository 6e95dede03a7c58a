"""Hardware configurations: one typed schema, loading and checking ``hw_configs/*.yaml``, overrides.

A ``HardwareConfig`` describes one target as the simulator sees it: how many processing
elements (PEs) run the same program, how much scratchpad each has and how fast it streams,
the compute block (systolic arrays or SIMD lanes), the DMA engines, the DRAM behind them and
the energy of each action. Two scopes of on-chip memory are modelled:

* ``per_pe`` (Pixel 6): every PE has its own scratchpad and all PEs run the same program, so
  one allocation serves every PE. Each tensor is split evenly over the PEs; its per-PE size
  is ``ceil(nbytes / n_pe)`` rounded up to ``alignment``. Capacities and peaks are per PE.
* ``chip`` (TPUv4): one memory (CMEM) shared on chip; a tensor's on-chip size is its size
  rounded up to ``alignment``.

**One schema.** Every field is declared once, on the dataclasses below, with its type, unit,
physical range and meaning in the field's metadata (``spec``). Loading, checking, ``--set``
overrides, the error messages and ``describe_fields`` all read that declaration; nothing
else lists the fields. Nested blocks (``compute``, ``dma``, ``energy``) are dataclasses too
and their fields are named with dots: ``compute.rows``.

**Compute kinds are types.** The compute block is one record type per ``compute.kind``
(``SystolicCompute``, ``LanesCompute``, ``IdealCompute``), each with only its own fields beside
the ones every kind has (``ComputeBlock``), and each answering ``operator_cost``'s questions
(``accelsim.compute.ComputeKind``): its cycles, its scratchpad traffic, its peak and its
mapping's name. ``COMPUTE_KINDS`` maps the YAML ``kind`` to its type; the loader picks the
record there, and a field of another kind is refused. Which kinds a field belongs to is read
from the types.

**Checks.** An unknown, missing or ill-typed field, a duplicate YAML key, or a value outside
its physical range (a clock below 1 kHz, a bandwidth of zero, a 2^60-byte scratchpad) raises
``HardwareConfigError`` with one line naming the field and the file.

>>> hw = load_hw("pixel6")
>>> hw.n_pe, hw.capacity_scope, hw.onchip_bytes(1000), hw.compute.kind
(16, 'per_pe', 64, 'lanes')
>>> hw.with_sram("512KiB").sram_bytes_per_pe
524288
>>> tpu = load_hw("tpuv4", overrides={"compute.rows": "256", "sram_bytes_per_pe": "8MiB"})
>>> tpu.compute.rows, tpu.sram_bytes_per_pe, tpu.peak_macs_per_cycle
(256, 8388608, 262144)
>>> load_hw("tpuv4", overrides={"compute.rowz": 1})
Traceback (most recent call last):
...
accelsim.hw.HardwareConfigError: --set compute.rowz: unknown field (did you mean compute.rows?)
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml

from accelsim.compute import (
    GemmEntry,
    ideal_cycles,
    in_turn,
    lanes_cycles,
    lanes_traffic,
    systolic_os_cycles,
    systolic_os_traffic,
    systolic_ws_cycles,
    systolic_ws_traffic,
)
from accelsim.units import SEPARATOR, format_bytes, parse_bytes  # noqa: F401  (re-exported: accelsim.hw.parse_bytes)

CAPACITY_SCOPES = ("per_pe", "chip")
DATAFLOWS = ("ws", "os")


class HardwareConfigError(ValueError):
    """A hardware configuration that cannot be used; the message names the field and the file."""


# --------------------------------------------------------------------------------------------
# byte sizes

#: what a config's ``name`` may be: it becomes part of folder names, so no separator, no ``..``
_CONFIG_NAME = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*", re.ASCII)


# --------------------------------------------------------------------------------------------
# the schema: one declaration per field


def spec(
    kind: str, doc: str, *, low: float | None = None, high: float | None = None, choices: tuple[str, ...] = (),
    required: bool = True, default: Any = MISSING, block: type | Mapping[str, type] | None = None,
) -> Any:
    """A dataclass field carrying its schema in ``metadata``.

    ``kind``: ``str``, ``choice`` (one of ``choices``), ``int``, ``bytes`` (an integer or a
    string such as ``"8MiB"``), ``number`` (int or float) or ``bool``. ``low`` / ``high``: the
    physically sensible range, inclusive. ``block``: for kind ``block``, the dataclass of the
    nested block, or a table from the block's ``kind`` to the dataclass of that kind
    (``COMPUTE_KINDS``).
    """
    metadata = {"kind": kind, "doc": doc, "low": low, "high": high, "choices": choices, "required": required,
                "block": block}
    if not required:
        default = None if default is MISSING else default
    return field(default=default, metadata=metadata)


@dataclass(frozen=True, kw_only=True)
class ComputeBlock:
    """The fields every compute kind has: what runs the element-wise operators and how many
    arrays or PEs work in parallel. Each kind is a record of its own below, with only its own
    fields; its mapping rules are ``accelsim.compute``'s functions, which its methods call
    (the interface is ``accelsim.compute.ComputeKind``).
    """

    kind: ClassVar[str]  #: the YAML ``compute.kind`` of this record type (``COMPUTE_KINDS`` reads it)
    #: whether ``cycles`` reads the GEMM shapes: an operator without them is then costed at the bound
    needs_gemm_shapes: ClassVar[bool] = True

    units: int = spec("int", "arrays (systolic) or PEs (lanes) that work in parallel", low=1, high=1 << 16)
    vector_elements_per_cycle: int = spec(
        "int", "elements per cycle of operators without MACs (the vector unit), whole chip", low=1, high=1 << 24)
    pack_groups: bool = spec("bool", "place several groups of a grouped convolution side by side in one fold",
                             required=False, default=True)


@dataclass(frozen=True, kw_only=True)
class SystolicCompute(ComputeBlock):
    """``units`` arrays of ``rows`` x ``cols`` multiply-accumulate cells (TPU MXUs), weight or
    output stationary: ``accelsim.compute.systolic_ws_cycles`` / ``systolic_os_cycles``."""

    kind: ClassVar[Literal["systolic"]] = "systolic"

    rows: int = spec("int", "rows of one systolic array (the reduction side in ws)", low=1, high=1 << 14)
    cols: int = spec("int", "columns of one systolic array (output channels)", low=1, high=1 << 14)
    dataflow: str = spec("choice", "ws (weight stationary) or os (output stationary)", choices=DATAFLOWS)
    fold_overlap: bool = spec("bool", "the next fold's operands preload while the current fold computes")

    @property
    def peak_macs_per_cycle(self) -> int:
        """MACs per cycle with every cell busy."""
        return self.units * self.rows * self.cols

    @property
    def mapping(self) -> str:
        return f"systolic-{self.dataflow}"

    @property
    def label(self) -> str:
        """A short description for listings: ``8x 128x128 ws``."""
        return f"{self.units}x {self.rows}x{self.cols} {self.dataflow}"

    def cycles(self, gemms: Sequence[GemmEntry], macs: int) -> tuple[int, int]:
        """(cycles, folds): ``systolic_ws_cycles`` or ``systolic_os_cycles`` of each GEMM, by ``dataflow``."""
        if self.dataflow == "os":
            return in_turn(systolic_os_cycles(t, k, n, self.rows, self.cols, count=count, units=self.units,
                                              fold_overlap=self.fold_overlap) for t, k, n, count in gemms)
        return in_turn(systolic_ws_cycles(t, k, n, self.rows, self.cols, count=count, units=self.units,
                                          fold_overlap=self.fold_overlap, pack_groups=self.pack_groups)
                       for t, k, n, count in gemms)

    def sram_bytes(self, gemms: Sequence[GemmEntry], element_bytes: int, io_bytes: int) -> int:
        """``systolic_ws_traffic`` or ``systolic_os_traffic`` of each GEMM, by ``dataflow``, in bytes."""
        if self.dataflow == "os":
            return element_bytes * sum(systolic_os_traffic(t, k, n, self.rows, self.cols, count=count)
                                       for t, k, n, count in gemms)
        return element_bytes * sum(systolic_ws_traffic(t, k, n, self.cols, count=count) for t, k, n, count in gemms)


@dataclass(frozen=True, kw_only=True)
class LanesCompute(ComputeBlock):
    """``units`` PEs of ``cores_per_unit`` cores with ``lanes_per_core`` SIMD lanes each (Edge-TPU
    style): ``accelsim.compute.lanes_cycles``."""

    kind: ClassVar[Literal["lanes"]] = "lanes"
    mapping: ClassVar[str] = "lanes"

    cores_per_unit: int = spec("int", "SIMD cores per PE", low=1, high=1 << 10)
    lanes_per_core: int = spec("int", "MAC lanes per core (output channels computed at once)", low=1, high=1 << 14)

    @property
    def peak_macs_per_cycle(self) -> int:
        """MACs per cycle with every lane busy."""
        return self.units * self.cores_per_unit * self.lanes_per_core

    @property
    def label(self) -> str:
        """A short description for listings: ``16x4x64 lanes``."""
        return f"{self.units}x{self.cores_per_unit}x{self.lanes_per_core} lanes"

    def cycles(self, gemms: Sequence[GemmEntry], macs: int) -> tuple[int, int]:
        """(cycles, passes): ``lanes_cycles`` of each GEMM."""
        return in_turn(lanes_cycles(t, k, n, count=count, units=self.units, cores=self.cores_per_unit,
                                    lanes=self.lanes_per_core, pack_groups=self.pack_groups)
                       for t, k, n, count in gemms)

    def sram_bytes(self, gemms: Sequence[GemmEntry], element_bytes: int, io_bytes: int) -> int:
        """``lanes_traffic`` of each GEMM, in bytes."""
        return element_bytes * sum(lanes_traffic(t, k, n, self.lanes_per_core, count=count)
                                   for t, k, n, count in gemms)


@dataclass(frozen=True, kw_only=True)
class IdealCompute(ComputeBlock):
    """``macs_per_cycle`` MACs every cycle whatever the shape (the bound, for comparison):
    ``accelsim.compute.ideal_cycles``."""

    kind: ClassVar[Literal["ideal"]] = "ideal"
    mapping: ClassVar[str] = "ideal"
    label: ClassVar[str] = "ideal"  #: a short description for listings
    needs_gemm_shapes: ClassVar[bool] = False

    macs_per_cycle: int = spec("int", "MACs per cycle of the ideal machine, whole chip", low=1, high=1 << 30)

    @property
    def peak_macs_per_cycle(self) -> int:
        return self.macs_per_cycle

    def cycles(self, gemms: Sequence[GemmEntry], macs: int) -> tuple[int, int]:
        """(``ideal_cycles``, no folds): the shapes do not matter."""
        return ideal_cycles(macs, self.macs_per_cycle), 0

    def sram_bytes(self, gemms: Sequence[GemmEntry], element_bytes: int, io_bytes: int) -> int:
        """The operator's inputs and outputs, streamed once."""
        return io_bytes


#: the compute block of a config: one of the kinds' records
ComputeConfig = SystolicCompute | LanesCompute | IdealCompute

#: the YAML ``compute.kind`` -> the record type of that kind: the loader (``_build``) picks the
#: record here, and nothing else asks a block's kind by name
COMPUTE_KINDS: dict[str, type[ComputeConfig]] = {
    record.kind: record for record in (SystolicCompute, LanesCompute, IdealCompute)}

#: the ``compute.kind`` field: a YAML field like any other, but held by the record's type
#: (``kind`` above) rather than by its instances
COMPUTE_KIND = spec("choice", "systolic, lanes or ideal", choices=tuple(COMPUTE_KINDS))


@dataclass(frozen=True)
class DmaConfig:
    """The DMA engines between DRAM and the scratchpad."""

    channels: int = spec("int", "transfers in flight at once; they share the DRAM bandwidth", low=1, high=1024)
    prefetch_depth: int = spec(
        "int", "the load-timing planner issues a load at most this many steps before the operator that needs it "
        "(0: at its operator's boundary, no overlap with compute)", low=0, high=1 << 20)


@dataclass(frozen=True)
class EnergyConfig:
    """Energy of each action, in picojoules; every value in the YAML cites a source or says "assumption"."""

    pj_per_mac: float = spec("number", "one multiply-accumulate in the storage dtype", low=1e-6, high=1e4)
    pj_per_vector_element: float = spec("number", "one element of an operator without MACs", low=0, high=1e4)
    pj_per_sram_byte: float = spec("number", "one byte read from or written to the scratchpad", low=0, high=1e4)
    pj_per_dram_byte: float = spec("number", "one byte moved across the DRAM interface", low=0, high=1e5)


@dataclass(frozen=True)
class HardwareConfig:
    """One accelerator target. Units are in the field names; every count is a chip total unless
    it says ``per_pe``."""

    name: str = spec("str", "short name, e.g. pixel6")
    n_pe: int = spec("int", "processing elements running the same program (tensors are split over them)",
                     low=1, high=1 << 16)
    capacity_scope: str = spec("choice", "per_pe (one scratchpad per PE) or chip (one shared memory)",
                               choices=CAPACITY_SCOPES)
    sram_bytes_per_pe: int = spec("bytes", "scratchpad bytes per PE (the whole shared memory when n_pe is 1)",
                                  low=1, high=1 << 44)
    sram_bandwidth_bytes_per_cycle: int = spec(
        "bytes", "bytes per cycle the scratchpad streams to and from the compute, per PE", low=1, high=1 << 24)
    alignment: int = spec("bytes", "every on-chip offset and size is a multiple of this many bytes",
                          low=1, high=1 << 30)
    weight_tile_bytes: int = spec(
        "bytes", "largest weight slice one operator loads at once (per PE on a per_pe target)", low=1, high=1 << 44)
    clock_hz: float = spec("number", "core clock; one simulated cycle is 1 / clock_hz seconds", low=1e3, high=1e11)
    dram_bandwidth_bytes_per_s: float = spec("number", "DRAM (LPDDR / HBM) bandwidth available to the accelerator",
                                             low=1e3, high=1e16)
    dram_bytes: int = spec("bytes", "DRAM capacity", low=1, high=1 << 56)
    dram_latency_cycles: int = spec("int", "fixed cost of every DMA transfer before its data moves", low=0,
                                    high=1 << 30)
    dtype: str = spec("str", "default storage dtype of tensors on this target (int8, bf16, ...)")
    compute: ComputeConfig = spec("block", "the compute block (accelsim.compute)", block=COMPUTE_KINDS)
    dma: DmaConfig = spec("block", "the DMA engines", block=DmaConfig)
    energy: EnergyConfig = spec("block", "energy per action (picojoules)", block=EnergyConfig)
    description: str = spec("str", "one line for listings", required=False, default="")
    source: str = field(default="", compare=False)  #: the file the config was read from (not a YAML field)

    # ---- derived quantities

    @property
    def sram_bytes_total(self) -> int:
        """On-chip scratchpad bytes summed over the PEs."""
        return self.sram_bytes_per_pe * self.n_pe

    @property
    def sram_bytes_per_cycle_total(self) -> int:
        """Scratchpad bandwidth of the whole chip: per-PE bandwidth times the PEs."""
        return self.sram_bandwidth_bytes_per_cycle * self.n_pe

    @property
    def peak_macs_per_cycle(self) -> int:
        return self.compute.peak_macs_per_cycle

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
        """Chip bytes of ``pe_bytes`` on each PE (every PE holds or moves its share): the DRAM bytes of a
        transfer, or a per-PE size such as the scratchpad across the chip."""
        return pe_bytes * (self.n_pe if self.capacity_scope == "per_pe" else 1)

    def dram_cycles(self, chip_bytes: int) -> int:
        """Cycles ``chip_bytes`` take at the whole DRAM bandwidth, rounded up (no latency)."""
        # exact rational arithmetic: a float quotient such as 20.000000001 would add a spurious cycle
        return math.ceil(Fraction(chip_bytes) * Fraction(self.clock_hz) / Fraction(self.dram_bandwidth_bytes_per_s))

    def dma_cycles(self, chip_bytes: int) -> int:
        """Cycles of one DMA of ``chip_bytes`` when it has the DRAM interface to itself:
        ``dram_latency_cycles + ceil(bytes / bytes per cycle)``."""
        return self.dram_latency_cycles + self.dram_cycles(chip_bytes)

    def seconds(self, cycles: float) -> float:
        return cycles / self.clock_hz

    def with_sram(self, sram: int | str) -> HardwareConfig:
        """A copy with another scratchpad size per PE (the ``--sram`` what-if), e.g. ``"8MiB"``."""
        size = parse_bytes(sram, "sram")
        if size <= 0:
            raise HardwareConfigError(f"sram must be positive, got {sram!r}")
        return self.with_overrides({"sram_bytes_per_pe": size}, label="sram")

    def with_overrides(self, overrides: Mapping[str, Any], label: str = "--set") -> HardwareConfig:
        """A copy with dotted fields replaced, each value parsed with its field's type and units.

        Raises ``HardwareConfigError`` naming the key for an unknown field or a bad value.
        """
        return apply_overrides(self, overrides, label)

    def to_dict(self) -> dict[str, Any]:
        """The YAML fields as nested dicts (fields of another compute kind left out); loads back equal."""
        return _as_dict(self, HardwareConfig)


def _as_dict(record: Any, block: type | Mapping[str, type]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (f, _) in _block_fields(block).items():
        value = getattr(record, name, None)  # None: a field of another compute kind
        if f.metadata["kind"] == "block":
            out[name] = _as_dict(value, f.metadata["block"])
        elif value is not None:
            out[name] = value
    return out


# --------------------------------------------------------------------------------------------
# checking


def _block_fields(block: type | Mapping[str, type]) -> dict[str, tuple[Any, tuple[str, ...]]]:
    """A block's YAML fields by name -> (dataclass ``Field``, the compute kinds it belongs to), the
    required fields before the optional ones, as the YAML files and the reference page list them.

    ``block`` is a dataclass, whose fields belong to no kind (``()``), or a table of kinds
    (``COMPUTE_KINDS``): then its fields are ``kind`` (``COMPUTE_KIND``) and every kind's fields
    once, each with the kinds whose record has it, ``()`` when every kind has it.
    """
    if isinstance(block, Mapping):
        found: dict[str, Any] = {}
        owners: dict[str, list[str]] = {}
        for kind, record in block.items():
            for name, (f, _) in _block_fields(record).items():
                found.setdefault(name, f)
                owners.setdefault(name, []).append(kind)
        pairs = {"kind": (COMPUTE_KIND, ())} | {
            name: (f, () if len(owners[name]) == len(block) else tuple(owners[name])) for name, f in found.items()}
    else:
        pairs = {f.name: (f, ()) for f in fields(block) if "kind" in f.metadata}
    return dict(sorted(pairs.items(), key=lambda pair: not pair[1][0].metadata["required"]))


def _schema(block: type | Mapping[str, type], prefix: str) -> Iterator[tuple[str, Any, tuple[str, ...]]]:
    """(dotted name, ``Field``, compute kinds) of every YAML field under ``block``, nested blocks expanded."""
    for name, (f, kinds) in _block_fields(block).items():
        if f.metadata["kind"] == "block":
            yield from _schema(f.metadata["block"], f"{prefix}{name}.")
        else:
            yield prefix + name, f, kinds


def schema_fields() -> dict[str, Any]:
    """Every YAML field by its dotted name (``"compute.rows"``) -> its dataclass ``Field``."""
    return {name: f for name, f, _ in _schema(HardwareConfig, "")}


def describe_fields() -> list[tuple[str, str, str]]:
    """(dotted name, type and range, meaning) of every field: the reference table of the README."""
    rows = []
    for name, f, kinds in _schema(HardwareConfig, ""):
        m = f.metadata
        kind = m["kind"] if not m["choices"] else " | ".join(m["choices"])
        if m["low"] is not None:
            kind += f" in [{_bound(m['low'])}, {_bound(m['high'])}]"
        if kinds:
            kind += f" (compute.kind {' / '.join(kinds)})"
        elif not m["required"]:
            kind += f" (optional, default {f.default!r})"
        rows.append((name, kind, m["doc"]))
    return rows


def _bound(value: float) -> str:
    """A range bound as a reader writes it: ``1,024``, ``2^44``, ``1e+11``."""
    if float(value).is_integer() and value >= 1 << 20 and (int(value) & (int(value) - 1)) == 0:
        return f"2^{int(value).bit_length() - 1}"
    if float(value).is_integer() and abs(value) < 1e7:
        return f"{int(value):,}"
    return f"{value:g}"


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


class QuotedStr(str):
    """A YAML scalar written in quotes (``n_pe: "16"``): text, never a number.

    ``read_yaml`` returns quoted scalars as this ``str`` subclass, so ``parse_value`` can refuse
    a quoted number in a file (YAML says it is a string) while it still parses the text of a
    ``--set`` value, which is always a string.
    """


def parse_value(name: str, f: Any, value: Any) -> Any:
    """``value`` as field ``name`` wants it (type, units, range); raises ``ValueError`` saying why.

    Text is parsed for numeric and boolean fields (``--set`` values are text, and YAML reads
    ``1.2e12`` as text), except a ``QuotedStr``: a value quoted in a YAML file is a string,
    and a field that wants a number or true/false refuses it. A number as text is ASCII
    digits without ``_`` separators (``accelsim.units.SEPARATOR``).
    """
    m = f.metadata
    kind = m["kind"]
    if isinstance(value, QuotedStr) and kind not in ("str", "choice"):
        raise ValueError(f"field {name!r} is the quoted string {str(value)!r}; write the {kind_noun(kind)} without "
                         "quotes")
    if kind in ("str", "choice"):
        if not isinstance(value, str) or (not value and name != "description"):
            raise ValueError(f"field {name!r} must be a non-empty string, got {value!r}")
        if m["choices"] and value not in m["choices"]:
            raise ValueError(f"field {name!r} must be one of {', '.join(m['choices'])}, got {value!r}")
        if name == "name" and not _CONFIG_NAME.fullmatch(value):
            # the name becomes part of report folder names (accelsim-out/MODEL-NAME): no path in it
            raise ValueError(f"field 'name' must be letters, digits and . _ + - (not starting with .), got {value!r}: "
                             "it names report folders")
        return str(value)
    if kind == "bool":
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        if not isinstance(value, bool):
            raise ValueError(f"field {name!r} must be true or false, got {value!r}")
        return value
    number: int | float
    if kind == "bytes":
        try:
            number = parse_bytes(value, name)
        except ValueError as exc:
            raise ValueError(f"field {name!r}: {exc}") from None
    elif kind == "int":
        if isinstance(value, str):
            _refuse_separators(name, value, "an integer")
            try:
                if not value.isascii():  # int() would read any Unicode digit ("٣" as 3)
                    raise ValueError(value)
                value = int(value)
            except ValueError:
                raise ValueError(f"field {name!r} must be an integer, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"field {name!r} must be an integer, got {value!r}")
        number = value
    else:
        # YAML reads 1.2e12 (no sign in the exponent) as a string; accept any float literal
        if isinstance(value, str) and value.isascii():  # float() would read any Unicode digit
            _refuse_separators(name, value, "a number")
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"field {name!r} must be a finite number, got {value!r}")
        number = float(value)
    low, high = m["low"], m["high"]
    if low is not None and number < low:
        bound = "non-negative" if low == 0 else ("positive" if low in (1, 1e-6) else f"at least {_bound(low)}")
        raise ValueError(f"field {name!r} must be {bound}, got {value!r}")
    if high is not None and number > high:
        raise ValueError(f"field {name!r} must be at most {_bound(high)} (a physically sensible value), got {value!r}")
    return number


def _refuse_separators(name: str, text: str, noun: str) -> None:
    """Refuse ``1_066_000_000`` as text: ``int()`` and ``float()`` skip the ``_``, so ``1_0_0`` would be
    read as 100 and hide a typo. (A YAML file may write ``clock_hz: 1_066_000_000``: YAML reads that
    as an integer itself, which never comes here as text.)"""
    if SEPARATOR in text:
        raise ValueError(f"field {name!r} must be {noun} in ASCII digits (no {SEPARATOR!r} separators), got {text!r}")


def kind_noun(kind: str) -> str:
    """What a field of ``kind`` holds, for error messages: ``"integer"``, ``"byte count"``, ..."""
    return {"int": "integer", "bytes": "byte count", "number": "number", "bool": "true or false"}.get(kind, "value")


def _build(block: type | Mapping[str, type], data: Any, where: str, prefix: str) -> Any:
    label = prefix.rstrip(".") or "the config"
    if not isinstance(data, dict):
        raise HardwareConfigError(f"{where}: {label} must be a mapping of fields, got {type(data).__name__}")
    own = _block_fields(block)
    unknown = [k for k in data if k not in own]
    if unknown:
        key = f"{prefix}{unknown[0]}"
        hint = _hint(key)
        raise HardwareConfigError(f"{where}: unknown field {key!r}{hint} (known fields: {', '.join(own)})")
    if isinstance(block, Mapping):  # the compute block: its kind picks the record type
        if "kind" not in data:
            raise HardwareConfigError(f"{where}: missing field {prefix + 'kind'!r}")
        kind = _parse(where, prefix + "kind", COMPUTE_KIND, data["kind"])
        record_type = block[kind]
    else:
        kind, record_type = "", block
    record_fields = _block_fields(record_type)
    values: dict[str, Any] = {}
    for name, (f, kinds) in own.items():
        dotted = prefix + name
        m = f.metadata
        if name not in record_fields:  # the kind itself (read above), or a field of another kind
            if kinds and name in data:
                raise HardwareConfigError(
                    f"{where}: field {dotted!r} does not apply to {prefix}kind {kind!r} "
                    f"(it is a field of {' / '.join(kinds)})")
            continue
        if m["kind"] == "block":
            if name not in data:
                raise HardwareConfigError(f"{where}: missing block {dotted!r}")
            values[name] = _build(m["block"], data[name], where, dotted + ".")
            continue
        if name not in data:
            if m["required"]:
                needed = f" (needed by {prefix}kind {kind!r})" if kinds else ""
                raise HardwareConfigError(f"{where}: missing field {dotted!r}{needed}")
            continue
        values[name] = _parse(where, dotted, f, data[name])
    return record_type(**values)


def _parse(where: str, dotted: str, f: Any, value: Any) -> Any:
    """``parse_value``, its error naming the file."""
    try:
        return parse_value(dotted, f, value)
    except ValueError as exc:
        raise HardwareConfigError(f"{where}: {exc}") from None


def _hint(key: str) -> str:
    if key == "macs_per_cycle":
        return " (the compute block replaced it: compute.kind, compute.rows / cols / units or lanes)"
    if key == "vector_elements_per_cycle":
        return " (it moved into the compute block: compute.vector_elements_per_cycle)"
    close = difflib.get_close_matches(key, list(schema_fields()), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def config_from_dict(data: Any, where: str = "<dict>") -> HardwareConfig:
    """Check a parsed YAML mapping and build the config; ``where`` names it in errors."""
    config = _build(HardwareConfig, data, where, "")
    from frontend.dtypes import DTYPE_BYTES  # the dtypes a run can store tensors in (no networkx, no torch)

    if config.dtype not in DTYPE_BYTES:
        raise HardwareConfigError(
            f"{where}: field 'dtype' must be one of {', '.join(DTYPE_BYTES)}, got {config.dtype!r}"
        )
    if config.capacity_scope == "chip" and config.n_pe != 1:
        raise HardwareConfigError(
            f"{where}: field 'n_pe' must be 1 when capacity_scope is 'chip' (one shared memory), got {config.n_pe}"
        )
    if config.alignment > config.sram_bytes_per_pe:
        # Checked here, with the other checks between fields, so that it also runs after --set and --sram: else the
        # first error would be an M_R inflated by the alignment, naming an operator instead of the field at fault.
        # An alignment equal to the scratchpad passes: one tensor fits.
        raise HardwareConfigError(
            f"{where}: field 'alignment' ({format_bytes(config.alignment)}) is larger than the scratchpad, "
            f"sram_bytes_per_pe ({format_bytes(config.sram_bytes_per_pe)}): every tensor would take at least one "
            "alignment unit; lower alignment or raise sram_bytes_per_pe"
        )
    return replace(config, source=where)


def apply_overrides(config: HardwareConfig, overrides: Mapping[str, Any], label: str = "--set") -> HardwareConfig:
    """``config`` with the dotted fields of ``overrides`` replaced (see ``HardwareConfig.with_overrides``)."""
    if not overrides:
        return config
    known = schema_fields()
    data = config.to_dict()
    for key, value in overrides.items():
        if key not in known:
            raise HardwareConfigError(f"{label} {key}: unknown field{_hint(key)}")
        try:
            parsed = parse_value(key, known[key], value)
        except ValueError as exc:
            raise HardwareConfigError(f"{label} {key}={value}: {exc}") from None
        *blocks, leaf = key.split(".")
        target = data
        for block in blocks:
            target = target[block]
        target[leaf] = parsed
    where = f"{config.source or config.name} with {label} " + " ".join(f"{k}={v}" for k, v in overrides.items())
    new_kind = data["compute"]["kind"]
    if new_kind != config.compute.kind:
        # a new compute kind: drop the fields of the old one that the override did not set again
        for name, (_, kinds) in _block_fields(COMPUTE_KINDS).items():
            if kinds and new_kind not in kinds and f"compute.{name}" not in overrides:
                data["compute"].pop(name, None)
    return config_from_dict(data, where)


def parse_overrides(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``["compute.rows=256", ...]`` (the ``--set`` arguments) as a dict; a repeated key is an error."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise HardwareConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. compute.rows=256")
        if key in out:
            raise HardwareConfigError(f"--set {key}: given twice ({out[key]!r} and {value!r})")
        out[key] = value
    return out


# --------------------------------------------------------------------------------------------
# loading


class _DuplicateKey(Exception):
    pass


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key written twice in one mapping (PyYAML keeps the last silently)
    and a key that is not a scalar (a list or a mapping as a key would fail later, unhashable)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            line = key_node.start_mark.line + 1
            if not isinstance(key, str | int | float | bool) and key is not None:  # `? [a, b]`: a list as a key
                raise _DuplicateKey(f"the key at line {line} is a {type(key).__name__}, not a field name")
            if key in seen:
                raise _DuplicateKey(f"duplicate key {key!r} at line {line} (first at line {seen[key]})")
            seen[key] = line
        return super().construct_mapping(node, deep)

    def construct_quoted_aware_str(self, node: yaml.ScalarNode) -> str:
        text = self.construct_scalar(node)
        return QuotedStr(text) if node.style in ("'", '"') else str(text)


_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:str", _UniqueKeyLoader.construct_quoted_aware_str)


def _bundled_dir() -> Path:
    return Path(str(resources.files("hw_configs")))


def list_configs() -> list[str]:
    """Names of the bundled hardware configs (``hw_configs/*.yaml``)."""
    return sorted(p.stem for p in _bundled_dir().glob("*.yaml"))


def read_yaml(path: Path) -> Any:
    """Parse ``path`` strictly: one-line errors for an unreadable, binary or invalid file and duplicate keys."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise HardwareConfigError(f"{path}: cannot read hardware config: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HardwareConfigError(f"{path}: not a text file (byte {exc.start} is not UTF-8)") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)
    except _DuplicateKey as exc:
        raise HardwareConfigError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise HardwareConfigError(f"{path}: not valid YAML{where}: {problem}") from None


def load_hw(
    name_or_path: str | Path | HardwareConfig, overrides: Mapping[str, Any] | None = None,
) -> HardwareConfig:
    """A bundled config by name (``"pixel6"``) or a config read from a YAML file, with ``overrides``
    (dotted field -> value, e.g. ``{"compute.rows": 256, "sram_bytes_per_pe": "8MiB"}``) applied.

    Raises ``HardwareConfigError`` for an unknown name, an unreadable file, or any bad field.
    """
    if isinstance(name_or_path, HardwareConfig):
        return apply_overrides(name_or_path, overrides or {})
    path = config_path(name_or_path)
    config = config_from_dict(read_yaml(path), str(path))
    return apply_overrides(config, overrides or {})


def config_path(name_or_path: str | Path) -> Path:
    """The YAML file ``load_hw`` reads for ``name_or_path``: the file itself when it looks like a
    path (a ``.yaml``/``.yml`` suffix, a ``/``, or a file of that name here), else the bundled
    config of that name. Raises ``HardwareConfigError`` for an unknown bundled name. The command
    line keeps every output off this file (``accelsim.outputs.check_outputs``): a bundled config
    is an input too.
    """
    text = str(name_or_path)
    path = Path(text)
    if path.suffix in (".yaml", ".yml") or "/" in text or path.exists():
        return path
    bundled = _bundled_dir() / f"{text}.yaml"
    if not bundled.is_file():
        raise HardwareConfigError(
            f"unknown hardware config {text!r}; bundled: {', '.join(list_configs())} "
            "(or give the path of a .yaml file)"
        )
    return bundled

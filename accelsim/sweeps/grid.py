"""The grid of a sweep: its keys and values parsed, one name per field, the point count limit,
the points, what each point runs (``effective``) and its hash. See ``accelsim.sweeps``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from accelsim.hw import HardwareConfig, apply_overrides, load_hw, parse_value, schema_fields
from accelsim.sources import is_saved_graph, model_label, model_labels
from accelsim.sweeps.results import format_setting
from accelsim.units import format_bytes, parse_bytes
from scheduler.registry import DEFAULT_SCHEDULER, ONLINE_ARENA, scheduler_entry

#: grid keys that are run options rather than hardware fields
RUN_KEYS = ("sram", "scheduler", "allocator", "budget", "dtype", "weights", "batch", "tiling", "prefill", "decode")
#: grid keys that make each point a generation (``accelsim.generation``: a prompt of ``prefill`` tokens,
#: 512 unless the grid says, then ``decode`` steps) instead of one compile and simulate
GENERATION_KEYS = ("prefill", "decode")
#: the run options that choose how a model is built and traced (``RunOptions`` fields): a point's
#: hash keys on the model's effective inputs instead (``model_inputs``)
INPUT_OPTIONS = ("input_shape", "batch", "model_options")
#: ``allocator`` grid value for the scheduler's own placement: the online first-fit arena of a
#: scheduler that takes an allocator (short for ``online-first-fit``, which is accepted too), the
#: own addresses of one that places its tensors itself
ONLINE = "online"
#: one field, two names: a grid key or run option -> the hardware field it sets. A sweep takes
#: each field under one name, in one place (``--grid``, ``--set`` or a run option)
FIELD_ALIASES: dict[str, str] = {"sram": "sram_bytes_per_pe"}
#: the most points (models x the grid's combinations) a sweep runs unless ``max_points``
#: (``--max-points``) raises it; counted before any point is made
MAX_POINTS = 100_000
#: the run options ``accelsim sweep`` sets with a flag, for messages
OPTION_FLAGS = {"scheduler": "--scheduler", "allocator": "--allocator", "timeout": "--timeout",
                "time_limit": "--time-limit", "dtype": "--dtype", "budget": "--budget", "weights": "--no-weights",
                "batch": "--batch", "input_shape": "--input-shape", "model_options": "--model-option",
                "tiling": "--tiling"}
#: what a point measures beyond its inputs: raised whenever the flow's answer for the same inputs changes
#: (2: loads issued at the steps the scheduler plans, ``scheduler.load_timing``; 3: ``--tiling auto`` cuts
#: rows where an operator cannot run whole, ``frontend.row_tiling``; 4: gathers read rows, ``frontend.gathers``,
#: and DRAM-bound operators stream smaller weight tiles, ``accelsim.tiling.streaming_limits``), so that a
#: resumed sweep never mixes points of two engines
ENGINE = 4

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


# --------------------------------------------------------------------------------------------
# the grid


def _positive_bytes(key: str, text: Any, shown: str, rule: str) -> int:
    """``text`` as a byte count above 0 (``parse_bytes``), or ``ValueError`` ``--grid KEY=VALUE: ...``
    with the parser's words or ``rule``."""
    try:
        size = parse_bytes(text, key)
    except ValueError as exc:
        raise ValueError(f"--grid {key}={shown}: {exc}") from None
    if size <= 0:
        raise ValueError(f"--grid {key}={shown}: {rule}")
    return size


def parse_grid_value(key: str, value: Any) -> Any:
    """``value`` (text as written, or already a Python value) as grid key ``key`` wants it.

    Hardware fields are parsed by their field's type, units and range (``accelsim.hw``); run
    options: ``sram`` bytes (positive), ``scheduler`` one of ``scheduler.SCHEDULERS``,
    ``allocator`` an allocator method or ``"online"``, ``budget`` ``MR``/``MH``/``MP`` or
    bytes, ``dtype`` a storage dtype, ``weights`` true/false, ``batch`` a positive integer (the
    batch dimension of every input, as ``--batch``), ``prefill`` and ``decode`` positive
    integers (a generation of an ``llm.*`` decoder, as ``accelsim run --prefill --decode``).
    Raises ``ValueError`` naming the key and the value.

    >>> parse_grid_value("sram", "256KiB"), parse_grid_value("dram_bandwidth_bytes_per_s", "25.6e9")
    (262144, 25600000000.0)
    """
    text = value.strip() if isinstance(value, str) else value
    shown = _shown(value)
    if key == "sram":
        return _positive_bytes(key, text, shown, "must be positive")
    if key == "scheduler":
        try:
            return scheduler_entry(text).name
        except ValueError as exc:
            raise ValueError(f"--grid scheduler={shown}: {exc}") from None
    if key == "allocator":
        import allocator

        if not isinstance(text, str) or (text not in (ONLINE, ONLINE_ARENA) and text not in allocator.METHODS):
            raise ValueError(f"--grid allocator={shown}: unknown allocator method; valid: {ONLINE} (the "
                             f"scheduler's own first fit), {', '.join(sorted(allocator.METHODS))}")
        return text
    if key == "budget":
        if isinstance(text, str) and text.upper() in ("MR", "MH", "MP"):
            return text.upper()
        return _positive_bytes(key, text, shown, "must be MR, MH, MP or a positive number of bytes")
    if key == "tiling":
        from accelsim.tiling import check_tiling

        try:
            return check_tiling(text)
        except ValueError as exc:
            raise ValueError(f"--grid tiling={shown}: {exc}") from None
    if key == "dtype":
        from frontend import DTYPE_BYTES

        if not isinstance(text, str) or text not in DTYPE_BYTES:
            raise ValueError(f"--grid dtype={shown}: unknown dtype; valid: {', '.join(sorted(DTYPE_BYTES))}")
        return text
    if key in ("batch", *GENERATION_KEYS):
        if isinstance(text, int) and not isinstance(text, bool) and text >= 1:
            return text
        if isinstance(text, str) and re.fullmatch(r"[0-9]+", text, re.ASCII) and int(text) >= 1:
            return int(text)
        raise ValueError(f"--grid {key}={shown}: must be a positive integer")
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
            label = OPTION_FLAGS.get(key, f"option {_shown(key)}") if place == "options" else f"{place} {_shown(key)}"
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
    #: how rows and progress name the model (``accelsim.sources.model_labels``: one per model of
    #: the sweep); empty: ``model_label``'s
    name: str = field(default="", compare=False)

    @property
    def model_name(self) -> str:
        """The model's label in this sweep."""
        return self.name or model_label(self.model)

    def hw_overrides(self) -> dict[str, Any]:
        return {k: v for k, v in self.settings if k not in RUN_KEYS}

    def run_settings(self) -> dict[str, Any]:
        return {k: v for k, v in self.settings if k in RUN_KEYS}

    def label(self) -> str:
        """The model and the grid values as ``KEY=VALUE``, as the grid spells them (error messages)."""
        parts = [f"{k}={format_bytes(v) if k in ('sram', 'sram_bytes_per_pe') and isinstance(v, int) else v}"
                 for k, v in self.settings]
        return " ".join([self.model_name, *parts])

    def describe(self) -> str:
        """The model and the grid values in human units, as progress lines print them:
        ``resnet18, sram 256 KiB, dram_bandwidth 25.6 GB/s`` (``format_setting``)."""
        return ", ".join([self.model_name, *(format_setting(k, v) for k, v in self.settings)])


def grid_points(models: Sequence[str], grid: Mapping[str, Sequence[Any]]) -> list[Point]:
    """Every model × the cartesian product of the grid, models outermost, keys in grid order;
    each point names its model so that no two models of the sweep share a label."""
    keys = list(grid)
    combos = list(itertools.product(*(grid[k] for k in keys))) if keys else [()]
    names = model_labels(list(models))
    return [Point(model, tuple(zip(keys, combo, strict=True)), names[model]) for model in models for combo in combos]


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
        options["allocator"] = ONLINE_ARENA if chosen == ONLINE else chosen
    options.update(run)
    if (options.get("allocator") == ONLINE_ARENA
            and not scheduler_entry(options.get("scheduler", DEFAULT_SCHEDULER)).capabilities.allocator):
        options["allocator"] = None  # "online" = the scheduler's own placement: a COSMA schedule's is its addresses
    options.setdefault("dtype", None)
    if options["dtype"] is None:
        options["dtype"] = config.dtype
    return config, options


def generation_of(options: dict[str, Any]) -> tuple[int, int] | None:
    """Remove a point's ``prefill`` and ``decode`` from its ``effective`` options: ``(prefill,
    decode)`` for a generation (prefill 512 unless given), None for one compile and simulate.
    ``ValueError`` for a ``prefill`` without ``decode``."""
    prefill, decode = options.pop("prefill", None), options.pop("decode", None)
    if decode is None:
        if prefill is not None:
            raise ValueError("--grid prefill needs --grid decode (a prompt alone is --input-shape 1,N)")
        return None
    from frontend.llm import DEFAULT_TOKENS

    return (DEFAULT_TOKENS if prefill is None else prefill), decode


def point_hash(point: Point, base: Base) -> str:
    """A short digest of the point's effective configuration (see the module docstring)."""
    return config_hash(point, *effective(point, base))


def config_hash(point: Point, config: HardwareConfig, options: Mapping[str, Any]) -> str:
    """``point_hash`` of an already computed ``effective(point, base)``: the model, the
    hardware config, the run options, and the model's effective inputs (``model_inputs``) in
    place of the options that choose them."""
    payload: dict[str, Any] = {
        "engine": ENGINE, "model": point.model, "hw": config.to_dict(),
        "options": {k: options[k] for k in sorted(options) if k not in INPUT_OPTIONS},
    }
    inputs = model_inputs(point.model, options)
    if inputs is not None:
        payload["inputs"] = inputs
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: file digests of user models, by (path, modification time, size): a sweep hashes every point
_DIGESTS: dict[tuple[str, int, int], str] = {}


def model_inputs(model: str, options: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a point's model is traced at, for its hash, so that results of other inputs never mix.

    A zoo model: its input shapes and build options in effect (``frontend.zoo``:
    ``resolve_input_shapes`` with the batch folded in, ``model_options`` with the defaults
    filled in), so ``--input-shape 1,3,224,224`` and no option are one point; ``None`` for the
    defaults, which keeps the hashes of points written before these options existed. A user
    model spec: the SHA-256 of its file (editing the file makes new points) with the input
    shapes and batch asked. A saved graph: ``None`` (its shapes were fixed when traced).
    """
    from frontend import user_model, zoo

    shape, batch = options.get("input_shape"), options.get("batch")
    if is_saved_graph(model):
        return None
    if user_model.is_user_model(model):
        spec = user_model.parse_spec(model)
        stat = spec.path.stat() if spec.path.is_file() else None
        where = (str(spec.path.resolve()), stat.st_mtime_ns, stat.st_size) if stat is not None else None
        if where is None or where not in _DIGESTS:
            digest = user_model.file_digest(spec)  # a missing file raises here, naming it
            if where is not None:
                _DIGESTS[where] = digest
        else:
            digest = _DIGESTS[where]
        shapes = user_model.as_shapes(f"user model {spec.text}", shape)
        return {"file_sha256": digest, "input_shape": shapes, "batch": batch}
    shapes = zoo.resolve_input_shapes(model, shape, batch)
    built = zoo.model_options(model, options.get("model_options"))
    if shapes == zoo.default_input_shapes(model) and built == zoo.model_options(model):
        return None
    return {"input_shapes": shapes, "options": built}

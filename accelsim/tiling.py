"""How a run tiles its operators (``--tiling``): the choices, listed once, and the weight-tile limit each gives.

* ``auto`` (the default): weights tile by output features to at most a quarter of the
  scratchpad the run has (``sram_bytes_per_pe``, after ``--sram``), and never above the config's
  ``weight_tile_bytes``. A what-if at less SRAM tiles as a compiler targeting that SRAM would: the
  bundled configs set ``weight_tile_bytes`` to a quarter of their own scratchpad (assumption,
  written in each YAML), so at the shipped size ``auto`` and ``weights`` are the same run; below
  it, smaller tiles stream (each tile's load overlaps the compute of the tile before, as the
  load-timing planner issues them) and fewer bytes must sit on chip at once. Tiles cost a concat
  that copies their outputs into the operator's output (``frontend.tiling``), so where whole
  weights could double-buffer, ``auto`` can be slower than ``weights``: on eight 64 KiB linear
  layers at 160 KiB (``tests/accelsim/test_tiling_choices.py``) it took 21,348 cycles against 17,694. On
  resnet50 (pixel6, 160 KiB to 2 MiB) it was faster at every size; a rule that tiled only the
  operators that could not double-buffer whole lost there (1,236,083 cycles at 384 KiB against
  1,136,547), because consecutive large weights need more than one buffer of room.
* ``weights``: the config's ``weight_tile_bytes`` whatever the scratchpad (the rule before
  ``auto``; every operator's ``compute_cycles`` as then).
* ``none``: no operator is tiled.

Under ``auto`` activations tile too (``frontend.row_tiling``, before weight tiling), but only
where they must: an operator whose inputs and output do not fit the scratchpad whole seeds a
region, a chain around it that runs as row tiles (output rows of convolutions with their halo,
tokens, query blocks of attention, heads) whose slices take at most a quarter of the scratchpad
each, so an attention score matrix is never whole and M_R becomes the largest tile's working
set. Where every operator fits, nothing is cut: tiles pay concats and re-read weights they
cannot keep, so on resnet50 (pixel6) seeding at half the scratchpad made 160 KiB slower
(1,184,453 cycles against 1,182,227) and the curve rose from 160 to 192 KiB; seeding at the
whole scratchpad changes nothing from 160 KiB up and runs 64 and 128 KiB, which did not run.
``weights`` and ``none`` never tile activations.

>>> from accelsim.hw import load_hw
>>> hw = load_hw("pixel6")  # 16 PEs, 2 MiB each, weight_tile_bytes 512 KiB
>>> weight_tile_limit("auto", hw.with_sram("160KiB")) == 40 * 1024 * 16  # chip bytes: 40 KiB per PE
True
>>> weight_tile_limit("auto", hw) == weight_tile_limit("weights", hw) == 512 * 1024 * 16
True
>>> weight_tile_limit("none", hw) is None
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from accelsim.hw import HardwareConfig

#: every ``--tiling`` choice and what it does (module docstring)
TILINGS: dict[str, str] = {
    "auto": "weights tile to at most a quarter of the run's scratchpad (never above weight_tile_bytes); "
            "activations and attention tile by rows, tokens, query blocks or heads to slices of at most a quarter",
    "weights": "weights tile to the config's weight_tile_bytes whatever the scratchpad",
    "none": "no operator is tiled",
}
DEFAULT_TILING = "auto"
#: ``auto``'s weight tile: this fraction of the scratchpad (assumption: the bundled configs' own rule)
AUTO_SHARE = 4


def check_tiling(tiling: object) -> str:
    """``tiling`` if it is one of ``TILINGS``, else ``ValueError`` naming it and the choices."""
    if not isinstance(tiling, str) or tiling not in TILINGS:
        raise ValueError(f"tiling={tiling!r} is not one of {', '.join(TILINGS)}")
    return tiling


def row_tile_limits(tiling: str, hw: HardwareConfig) -> tuple[int, int] | None:
    """``(slice bytes, seed bytes)`` of row tiling (``frontend.row_tiling.tile_rows``, chip bytes) under
    ``tiling`` on ``hw``: an operator whose tensors exceed the scratchpad seeds a region, cut so
    that each tile's slices take at most a quarter of it; None: activations are not tiled.

    >>> from accelsim.hw import load_hw
    >>> row_tile_limits("auto", load_hw("tpuv4")) == (32 << 20, 128 << 20)
    True
    >>> row_tile_limits("weights", load_hw("tpuv4")) is None
    True
    """
    check_tiling(tiling)
    if tiling != "auto":
        return None
    chip = hw.chip_bytes(hw.sram_bytes_per_pe)
    return chip // AUTO_SHARE, chip


def weight_tile_limit(tiling: str, hw: HardwareConfig) -> int | None:
    """The largest weight (chip bytes) an operator keeps whole under ``tiling`` on ``hw``; None: no limit."""
    check_tiling(tiling)
    if tiling == "none":
        return None
    per_pe = hw.weight_tile_bytes
    if tiling == "auto":
        per_pe = min(per_pe, hw.sram_bytes_per_pe // AUTO_SHARE)
    return hw.chip_bytes(per_pe)

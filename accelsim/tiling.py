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

Activations (output rows with their halo, tokens) and attention (heads, query blocks) do not tile
yet: M_R is still set by the largest operator's activations.

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


def row_tile_limit(tiling: str, hw: HardwareConfig) -> int | None:
    """The largest slice bytes (chip bytes) one row tile of a region cuts under ``tiling`` on ``hw``
    (``frontend.row_tiling``); None: activations are not tiled."""
    check_tiling(tiling)
    if tiling != "auto":
        return None
    return hw.sram_bytes_per_pe // AUTO_SHARE * (hw.n_pe if hw.capacity_scope == "per_pe" else 1)


def weight_tile_limit(tiling: str, hw: HardwareConfig) -> int | None:
    """The largest weight (chip bytes) an operator keeps whole under ``tiling`` on ``hw``; None: no limit."""
    check_tiling(tiling)
    if tiling == "none":
        return None
    per_pe = hw.weight_tile_bytes
    if tiling == "auto":
        per_pe = min(per_pe, hw.sram_bytes_per_pe // AUTO_SHARE)
    return per_pe * (hw.n_pe if hw.capacity_scope == "per_pe" else 1)

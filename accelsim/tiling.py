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
  auto's 1,136,547 then, before streaming tiles), because consecutive large weights need more than one buffer of room.
  An operator whose weights load for longer than it computes (a decode step's projections) tiles
  to half that limit, an eighth of the scratchpad (``streaming_limits``), so loads stream behind it.
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

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

    from accelsim.hw import HardwareConfig

#: every ``--tiling`` choice and what it does (module docstring)
TILINGS: dict[str, str] = {
    "auto": "weights tile to at most a quarter of the run's scratchpad (never above weight_tile_bytes; an eighth "
            "for an operator that waits on DRAM); activations and attention tile by rows, tokens, query blocks or "
            "heads to slices of at most a quarter",
    "weights": "weights tile to the config's weight_tile_bytes whatever the scratchpad",
    "none": "no operator is tiled",
}
DEFAULT_TILING = "auto"
#: a DRAM-bound operator streams smaller tiles only when they cost at most this ratio of its whole
#: compute cycles (``streaming_limits``; assumption, measured: a one-token 2,048 x 8,192 product in
#: two tiles costs 1.015x on tpuv4's array, a 7 x 7 convolution of resnet50 at 64 KiB 1.14x)
TILE_COST_SLACK = (17, 16)
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


def streaming_limits(graph: nx.DiGraph, hw: HardwareConfig, limit: int) -> dict[str, int]:
    """Operators whose weights load for longer than the operator computes (DRAM-bound: a decode
    step's projections, a language model's head), with their tile limit under ``auto``: half of
    ``limit`` (an eighth of the scratchpad), for those whose largest weight is above that.

    Why: a DRAM-bound operator cannot hide its own weight's load behind its compute, so the
    next operator's load must already be running; whole weights of a quarter of the scratchpad
    leave room for too few loads in flight. Measured on Llama-3.2-1B's decode step at 512
    positions on tpuv4 (``studies/llm_study.py``): with 32 MiB tiles 1.145x its bound, with
    16 MiB tiles for every operator 1.00x, but the prefill, compute-bound, 3 % slower (more tiles
    and concats); tiling only the DRAM-bound ones keeps the prefill's tiles. Only operators whose
    tiles cost no more compute than they do whole qualify (``_tiles_cost_no_more``), and only those
    whose weights no other operator reads (the row tiles of one convolution share their weight,
    which must be sliced one way: slicing some of them finer re-loaded it and cost resnet50 at
    64 KiB per PE 18 % more cycles). A CNN's convolutions keep the quarter. (An assumption of the
    rule, not a search: half is the measured point.)
    """
    from accelsim.sim.compute_array import graph_operator_cost
    from frontend.graph import dtype_bytes

    half = limit // 2
    bytes_per_cycle = hw.dram_bytes_per_cycle
    element_bytes = dtype_bytes(graph.graph["dtype"])
    tensors = graph.graph["tensors"]
    found: dict[str, int] = {}
    for name, data in graph.nodes(data=True):
        read = [t for t in data["in_tensors"] if tensors[t]["kind"] == "weight"]
        weights = [int(tensors[t]["nbytes"]) for t in read]
        if not weights or max(weights) <= half or any(len(tensors[t]["consumers"]) > 1 for t in read):
            continue  # a weight several operators read (row tiles of one convolution) is sliced one way for all
        whole = graph_operator_cost(graph, name, hw, element_bytes).cycles
        if sum(weights) / bytes_per_cycle > whole and _tiles_cost_no_more(data, whole, -(-max(weights) // half), hw,
                                                                          element_bytes):
            found[name] = half
    return found


def _tiles_cost_no_more(data: dict[str, Any], whole: int, tiles: int, hw: HardwareConfig, element_bytes: int) -> bool:
    """Whether ``tiles`` tiles of the operator (``data``: a graph node, cut along its GEMM's
    columns as weight tiling cuts it) take at most ``TILE_COST_SLACK`` of its compute cycles
    whole: true of a one-token product, whose cycles follow its weight's size, not of a
    convolution over many positions, whose narrower tiles fill the array less."""
    from accelsim.compute import operator_cost

    gemm = [(t, k, -(-n // tiles), count) for t, k, n, count in data.get("gemm") or ()]
    if not gemm:
        return False
    macs = sum(t * k * n * count for t, k, n, count in gemm)
    cost = operator_cost(macs=macs, elements=-(-int(data.get("elements", 0)) // tiles), gemm=gemm,
                         compute=hw.compute, element_bytes=element_bytes, io_bytes=0,
                         sram_bytes_per_cycle=hw.sram_bytes_per_cycle_total)
    return cost.cycles * tiles * TILE_COST_SLACK[1] <= whole * TILE_COST_SLACK[0]


def weight_tile_limit(tiling: str, hw: HardwareConfig) -> int | None:
    """The largest weight (chip bytes) an operator keeps whole under ``tiling`` on ``hw``; None: no limit."""
    check_tiling(tiling)
    if tiling == "none":
        return None
    per_pe = hw.weight_tile_bytes
    if tiling == "auto":
        per_pe = min(per_pe, hw.sram_bytes_per_pe // AUTO_SHARE)
    return hw.chip_bytes(per_pe)

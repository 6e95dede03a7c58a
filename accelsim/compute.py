"""The per-operator compute model: cycles, utilisation and scratchpad traffic of one operator.

Pure functions of an operator's shape and the ``compute`` block of a hardware config; the
simulator (``accelsim.sim``) calls ``operator_cost`` once per operator. One mapping function
per compute kind, each with its formula here and a hand-worked example as a doctest.

**Lowering.** The frontend records every MAC-carrying operator as GEMMs (node attribute
``gemm``, see ``frontend.cost.gemms``): entries ``(t, k, n, count)``, ``count`` independent
products of a ``t x k`` streamed operand (batch x output positions, im2col rows) with a
``k x n`` stationary one (weights). A convolution has ``t`` = batch x output positions,
``k`` = kh x kw x cin / groups, ``n`` = cout / groups and ``count`` = groups; an attention
has two entries (``Q K^T`` and ``A V``, one GEMM per batch x head). Entries run one after
the other; an operator's cycles are their sum.

**Systolic arrays** (``kind: systolic``, R = ``rows``, C = ``cols``, U = ``units``):

* weight stationary (``ws``): a fold holds a K-tile x N-tile of the weights in the array and
  streams the ``t`` rows through it. Folds per GEMM: ``ceil(k / R) * ceil(n / C)``. One fold
  takes ``R`` cycles to load its weights, ``t`` to stream the rows, and ``R + C - 2`` for the
  skewed wavefront to fill and drain: ``2R + C + t - 2``. ``f`` folds back to back take
  ``f * (2R + C + t - 2) - 1`` cycles, SCALE-Sim's stall-free count
  (``scalesim/compute/systolic_compute_ws.py``).
* output stationary (``os``): a fold keeps an R x C tile of outputs (``R`` positions x ``C``
  channels) and streams the ``k`` reduction through it. Folds: ``ceil(t / R) * ceil(n / C)``,
  each ``k + R + C - 2`` cycles: ``f * (k + R + C - 2) - 1``.
* ``units``: the folds of an operator are spread evenly over the arrays, which work in
  parallel: each array runs ``ceil(folds / U)`` of them. When there are fewer folds than
  arrays (ws only), the idle arrays are not left idle: each fold's weights go to
  ``r = U // folds`` arrays, which stream ``ceil(t / r)`` rows each (the data parallelism a
  compiler uses for a layer with few weights and many positions). With one array, as in
  SCALE-Sim, this never applies.
* ``fold_overlap`` (double-buffered operands, as TPU MXUs double-buffer weights): the next
  fold's stationary operand loads while the current fold streams, and consecutive folds
  follow each other through the wavefront. A fold then costs ``max(t, R)`` (ws; the next
  weight tile needs ``R`` cycles to shift in) or ``max(k, R)`` (os; the finished outputs need
  ``R`` cycles to shift out) after the first, which still pays the whole fill and drain:
  ws ``2R + C + t - 3 + (f - 1) * max(t, R)``, os ``k + R + C - 3 + (f - 1) * max(k, R)``.
  With one fold both equal the formulas without overlap.
* **grouped and depthwise convolutions**: each group is its own small GEMM. With
  ``pack_groups`` (the default) a ws fold places ``g = min(R // k, C // n)`` groups
  block-diagonally (group i uses rows ``[i k, (i+1) k)`` and columns ``[i n, (i+1) n)``), so a
  3x3 depthwise layer fills 14 x 9 = 126 of the 128 rows but only 14 of the 128 columns: one
  fold uses 0.77 % of the cells. Without packing each group is a fold of its own. Output
  stationary never packs: the rows of an os array share their streamed inputs, and groups
  need different ones.

**SIMD lanes** (``kind: lanes``, Edge-TPU style, U PEs x ``cores_per_unit`` cores x
``lanes_per_core`` lanes): the output positions (``t``, over every GEMM of the entry) are
spread over all cores; a core computes one position at a time with its lanes on up to
``lanes`` output channels, one MAC per lane per cycle, so one pass costs ``k`` cycles. A
dense GEMM needs ``ceil(n / lanes)`` passes per position; with ``pack_groups`` the lanes take
``min(count, lanes // n)`` small groups side by side (a depthwise layer runs one channel per
lane). Cycles: ``ceil(t * passes / (U * cores)) * k``.

**Ideal** (``kind: ideal``): ``ceil(macs / macs_per_cycle)``, every cell busy every cycle.

**Element-wise** operators (no MACs) run on the vector unit: ``ceil(elements /
vector_elements_per_cycle)``. An operator with MACs but no recorded GEMM shape (a hand-made or
older graph) is costed at the ideal bound and says so in ``mapping``.

**Scratchpad traffic.** An operator streams its operands from the scratchpad and its results
back: ws re-streams the inputs once per N-fold (``t k ceil(n / C)`` elements), reads the
weights once and writes the outputs once (partial sums accumulate beside the array); os
re-reads the weights once per T-fold instead; lanes re-read the inputs once per pass of
channels and read the weights once. Element-wise operators read their inputs and write their
outputs once. ``sram_cycles`` = traffic / the chip's scratchpad bandwidth; an operator whose
traffic takes longer than its compute is memory-bound and waits the difference (``stall``).

Every count is at least one cycle. ``utilization`` = MACs / (compute cycles x peak MACs per
cycle).

>>> from accelsim.hw import load_hw
>>> tpu = load_hw("tpuv4").compute
>>> cost = operator_cost(macs=3136 * 576 * 64, elements=3136 * 64, gemm=[(3136, 576, 64, 1)],
...                      compute=tpu, element_bytes=2, io_bytes=0, sram_bytes_per_cycle=4096)
>>> cost.folds, cost.compute_cycles       # 5 folds over 8 MXUs: one fold each, 2*128+128+3136-3
(5, 3517)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from accelsim.hw import ComputeConfig

GemmEntry = tuple[int, int, int, int]  #: (t, k, n, count)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def packed_groups(k: int, n: int, count: int, rows: int, cols: int) -> int:
    """Groups of a grouped GEMM that fit block-diagonally in one R x C fold (1 if they do not).

    >>> packed_groups(9, 1, 144, 128, 128)     # 3x3 depthwise: 14 groups per fold
    14
    >>> packed_groups(576, 64, 1, 128, 128)    # a dense GEMM is one group
    1
    """
    if count <= 1 or k > rows or n > cols:
        return 1
    return max(1, min(count, rows // k, cols // n))


def systolic_ws_cycles(
    t: int, k: int, n: int, rows: int, cols: int, *, count: int = 1, units: int = 1,
    fold_overlap: bool = False, pack_groups: bool = True,
) -> tuple[int, int]:
    """(cycles, folds) of ``count`` GEMMs (t x k) @ (k x n) on ``units`` weight-stationary arrays.

    Hand-worked: k = 300, n = 200 on 128 x 128 is ceil(300/128) * ceil(200/128) = 3 * 2 = 6
    folds; with t = 50 one fold is 2*128 + 128 + 50 - 2 = 432 cycles, so 6 * 432 - 1 = 2591.
    On 4 arrays each runs 2 folds: 2 * 432 - 1 = 863. With fold overlap a fold after the
    first costs max(50, 128) = 128: 2*128 + 128 + 50 - 3 + 128 = 559. On 12 arrays each fold
    goes to 2 arrays streaming 25 rows: 2*128 + 128 + 25 - 2 - 1 = 406.

    >>> systolic_ws_cycles(50, 300, 200, 128, 128)
    (2591, 6)
    >>> systolic_ws_cycles(50, 300, 200, 128, 128, units=4)
    (863, 6)
    >>> systolic_ws_cycles(50, 300, 200, 128, 128, units=4, fold_overlap=True)
    (559, 6)
    >>> systolic_ws_cycles(50, 300, 200, 128, 128, units=12)
    (406, 6)
    """
    group = packed_groups(k, n, count, rows, cols) if pack_groups else 1
    blocks = _ceil(count, group)
    folds = blocks * _ceil(k * group, rows) * _ceil(n * group, cols)
    per_unit = _ceil(folds, units)
    if folds < units:  # replicate each fold's weights over the idle arrays, split the rows
        t = _ceil(t, units // folds)
    if fold_overlap:
        cycles = 2 * rows + cols + t - 3 + (per_unit - 1) * max(t, rows)
    else:
        cycles = per_unit * (2 * rows + cols + t - 2) - 1
    return max(1, cycles), folds


def systolic_os_cycles(
    t: int, k: int, n: int, rows: int, cols: int, *, count: int = 1, units: int = 1, fold_overlap: bool = False,
) -> tuple[int, int]:
    """(cycles, folds) of ``count`` GEMMs on ``units`` output-stationary arrays (groups never pack).

    Hand-worked: t = 300, n = 200, k = 64 on 128 x 128 is ceil(300/128) * ceil(200/128) = 6
    folds of 64 + 128 + 128 - 2 = 318 cycles: 6 * 318 - 1 = 1907.

    >>> systolic_os_cycles(300, 64, 200, 128, 128)
    (1907, 6)
    >>> systolic_os_cycles(300, 64, 200, 128, 128, fold_overlap=True)   # 64+128+128-3 + 5*128
    (957, 6)
    """
    folds = count * _ceil(t, rows) * _ceil(n, cols)
    per_unit = _ceil(folds, units)
    if fold_overlap:
        cycles = k + rows + cols - 3 + (per_unit - 1) * max(k, rows)
    else:
        cycles = per_unit * (k + rows + cols - 2) - 1
    return max(1, cycles), folds


def lanes_cycles(
    t: int, k: int, n: int, *, count: int = 1, units: int, cores: int, lanes: int, pack_groups: bool = True,
) -> tuple[int, int]:
    """(cycles, passes) of ``count`` GEMMs on SIMD lanes: ``ceil(t * passes_per_position / (units * cores)) * k``.

    Hand-worked on 16 PEs x 4 cores x 64 lanes: a 3x3 conv, 64 -> 64 channels at 56 x 56
    (t = 3136, k = 576, n = 64) needs one pass per position: ceil(3136 / 64) * 576 = 28224
    cycles, every lane busy. A 3x3 depthwise layer of 144 channels (k = 9, n = 1, count = 144)
    packs 64 channels per pass, 3 passes per position: ceil(3136 * 3 / 64) * 9 = 1323.

    >>> lanes_cycles(3136, 576, 64, units=16, cores=4, lanes=64)
    (28224, 3136)
    >>> lanes_cycles(3136, 9, 1, count=144, units=16, cores=4, lanes=64)
    (1323, 9408)
    """
    if pack_groups and n < lanes:
        per_position = _ceil(count, min(count, lanes // n))
    else:
        per_position = count * _ceil(n, lanes)
    passes = t * per_position
    return max(1, _ceil(passes, units * cores) * k), passes


def vector_cycles(elements: int, elements_per_cycle: int) -> int:
    """Cycles of an element-wise operator: ``ceil(elements / elements_per_cycle)``, at least 1."""
    return max(1, _ceil(elements, elements_per_cycle))


def gemm_traffic(entry: GemmEntry, compute: ComputeConfig) -> int:
    """Elements one GEMM entry streams to and from the scratchpad under ``compute``'s dataflow."""
    t, k, n, count = entry
    outputs = t * n * count
    weights = k * n * count
    if compute.kind == "systolic":
        cols, rows = int(compute.cols or 1), int(compute.rows or 1)
        inputs = t * k * count * _ceil(n, cols)
        if compute.dataflow == "os":
            weights *= _ceil(t, rows)
        return inputs + weights + outputs
    if compute.kind == "lanes":
        lanes = int(compute.lanes_per_core or 1)
        inputs = t * k * count * _ceil(n, lanes)  # one read per pass of channels (packed groups: one pass)
        return inputs + weights + outputs
    return t * k * count + weights + outputs


@dataclass(frozen=True)
class OpCost:
    """What one operator costs on the compute block (cycles are whole cycles)."""

    compute_cycles: int  #: cycles the array / lanes / vector unit is busy with the operator
    ideal_cycles: int  #: the bound: MACs / peak MACs per cycle (elements / vector rate without MACs)
    sram_bytes: int  #: operand and result bytes streamed between the scratchpad and the compute
    sram_cycles: int  #: ``sram_bytes`` at the chip's scratchpad bandwidth
    folds: int  #: folds (systolic) or passes (lanes); 0 for element-wise and ideal
    mapping: str  #: "systolic-ws", "systolic-os", "lanes", "ideal", "vector" or "ideal (no GEMM shape)"
    utilization: float  #: MACs / (compute_cycles x peak MACs per cycle); 0 without MACs

    @property
    def cycles(self) -> int:
        """Cycles the operator takes: compute, or the scratchpad traffic when that is longer."""
        return max(self.compute_cycles, self.sram_cycles)

    @property
    def sram_stall_cycles(self) -> int:
        """Cycles the operator waits for its operands beyond its compute (memory-bound)."""
        return self.cycles - self.compute_cycles


def operator_cost(
    *, macs: int, elements: int, gemm: Sequence[Sequence[int]] | None, compute: ComputeConfig,
    element_bytes: int, io_bytes: int, sram_bytes_per_cycle: int,
) -> OpCost:
    """The cost of one operator (the rules in the module docstring).

    ``gemm``: the node's GEMM entries (``None`` or empty when it has none). ``element_bytes``:
    bytes per element of the run's dtype. ``io_bytes``: bytes of the operator's input and output
    tensors (the traffic of an element-wise or ideal-mapped operator). ``sram_bytes_per_cycle``:
    the whole chip's scratchpad bandwidth.
    """
    peak = compute.peak_macs_per_cycle
    entries = [tuple(int(v) for v in e) for e in gemm or ()]
    if macs <= 0:
        cycles = vector_cycles(elements, compute.vector_elements_per_cycle)
        traffic = io_bytes
        return OpCost(cycles, cycles, traffic, _ceil(traffic, sram_bytes_per_cycle), 0, "vector", 0.0)
    ideal = max(1, _ceil(macs, peak))
    folds = 0
    if compute.kind == "ideal" or not entries:
        cycles, traffic = ideal, io_bytes
        mapping = "ideal" if compute.kind == "ideal" else "ideal (no GEMM shape)"
    else:
        cycles, traffic = 0, 0
        for t, k, n, count in entries:
            if compute.kind == "systolic":
                rows, cols = int(compute.rows or 1), int(compute.cols or 1)
                if compute.dataflow == "os":
                    c, f = systolic_os_cycles(t, k, n, rows, cols, count=count, units=compute.units,
                                              fold_overlap=bool(compute.fold_overlap))
                else:
                    c, f = systolic_ws_cycles(t, k, n, rows, cols, count=count, units=compute.units,
                                              fold_overlap=bool(compute.fold_overlap), pack_groups=compute.pack_groups)
            else:
                c, f = lanes_cycles(t, k, n, count=count, units=compute.units, cores=int(compute.cores_per_unit or 1),
                                    lanes=int(compute.lanes_per_core or 1), pack_groups=compute.pack_groups)
            cycles += c
            folds += f
            traffic += gemm_traffic((t, k, n, count), compute) * element_bytes
        mapping = f"systolic-{compute.dataflow}" if compute.kind == "systolic" else "lanes"
    return OpCost(cycles, ideal, traffic, _ceil(traffic, sram_bytes_per_cycle), folds, mapping,
                  macs / (cycles * peak))

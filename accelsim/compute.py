"""The per-operator compute model: cycles, utilisation and scratchpad traffic of one operator.

The simulator (``accelsim.sim``) calls ``operator_cost`` once per operator with the ``compute``
block of the hardware config. That block is one record per compute kind (``accelsim.hw``:
``SystolicCompute``, ``LanesCompute``, ``IdealCompute``), and every record answers the same
questions, ``ComputeKind``: its peak MACs per cycle, the name of its mapping, and the cycles and
scratchpad bytes of an operator's GEMMs. The records answer with the pure functions below, one
per mapping, as SCALE-Sim keeps one module per dataflow; each function's docstring holds its
formula and a hand-worked example as a doctest, the one place the formula is written.

**GEMMs.** The frontend records every MAC-carrying operator as GEMM entries ``(t, k, n, count)``
(node attribute ``gemm``, lowered by ``frontend.cost.gemms``): ``count`` independent products of
a ``t x k`` streamed operand (batch x output positions, im2col rows) with a ``k x n`` stationary
one (the weights). An operator's entries run one after the other: its cycles and its traffic
are their sums.

**The kinds.**

* ``systolic``: ``units`` arrays of ``rows`` x ``cols`` multiply-accumulate cells. A weight
  stationary array holds a tile of the weights and streams the rows through it
  (``systolic_ws_cycles``, ``systolic_ws_traffic``); an output stationary one holds a tile of the
  outputs and streams the reduction through it (``systolic_os_cycles``, ``systolic_os_traffic``).
  Small groups of a grouped convolution share a fold (``packed_groups``).
* ``lanes``: SIMD lanes that each compute one output channel of one position at a time
  (``lanes_cycles``, ``lanes_traffic``).
* ``ideal``: every MAC cell busy every cycle whatever the shape, the bound (``ideal_cycles``);
  it streams the operator's inputs and outputs once.

**Every kind.** An operator without MACs runs on the vector unit (``vector_cycles``) and streams
its inputs and outputs once. An operator with MACs but no recorded GEMM shape (a hand-made or
older graph) is costed at the ideal bound and says so in its ``mapping``. An operator whose
traffic takes longer at the scratchpad's bandwidth than its compute is memory-bound and waits
the difference. Every count is at least one cycle; ``OpCost`` says what each number is.

>>> from accelsim.hw import load_hw
>>> tpu = load_hw("tpuv4").compute
>>> cost = operator_cost(macs=3136 * 576 * 64, elements=3136 * 64, gemm=[(3136, 576, 64, 1)],
...                      compute=tpu, element_bytes=2, io_bytes=0, sram_bytes_per_cycle=4096)
>>> cost.folds, cost.compute_cycles       # 5 folds over 8 MXUs: one fold each, 2*128+128+3136-3
(5, 3517)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

GemmEntry = tuple[int, int, int, int]  #: (t, k, n, count)


class ComputeKind(Protocol):
    """What ``operator_cost`` asks the compute block: the one interface every compute kind's record
    implements (``accelsim.hw.SystolicCompute``, ``LanesCompute``, ``IdealCompute``)."""

    @property
    def vector_elements_per_cycle(self) -> int:
        """Elements per cycle of operators without MACs, whole chip."""
        ...

    @property
    def peak_macs_per_cycle(self) -> int:
        """MACs per cycle with every cell or lane busy."""
        ...

    @property
    def mapping(self) -> str:
        """The name an operator's report gives the mapping: ``"systolic-ws"``, ``"lanes"``, ..."""
        ...

    @property
    def needs_gemm_shapes(self) -> bool:
        """Whether ``cycles`` reads the GEMM shapes (an operator without them is then costed at the bound)."""
        ...

    def cycles(self, gemms: Sequence[GemmEntry], macs: int) -> tuple[int, int]:
        """(cycles, folds or passes) of an operator's GEMMs run one after the other."""
        ...

    def sram_bytes(self, gemms: Sequence[GemmEntry], element_bytes: int, io_bytes: int) -> int:
        """Bytes the operator streams between the scratchpad and the compute."""
        ...


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def in_turn(costs: Iterable[tuple[int, int]]) -> tuple[int, int]:
    """(cycles, folds) of GEMMs that run one after the other, from each one's: the sums.

    >>> in_turn([(10, 2), (5, 1)])
    (15, 3)
    """
    cycles = folds = 0
    for c, f in costs:
        cycles += c
        folds += f
    return cycles, folds


def packed_groups(k: int, n: int, count: int, rows: int, cols: int) -> int:
    """Groups of a grouped GEMM that fit block-diagonally in one R x C fold (1 if they do not).

    Each group of a grouped or depthwise convolution is its own small GEMM. A weight-stationary
    fold can place ``g = min(R // k, C // n)`` of them block-diagonally: group ``i`` uses rows
    ``[i k, (i+1) k)`` and columns ``[i n, (i+1) n)``. A 3x3 depthwise layer then fills
    ``14 x 9 = 126`` of the 128 rows but only 14 of the 128 columns: one fold uses 0.77 % of the
    cells.

    Examples:
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

    With R = ``rows``, C = ``cols``, U = ``units``: a fold holds a K-tile x N-tile of the weights
    in the array and streams the ``t`` rows through it. Folds per GEMM: ``ceil(k / R) * ceil(n /
    C)``. One fold takes ``R`` cycles to load its weights, ``t`` to stream the rows and ``R + C -
    2`` for the skewed wavefront to fill and drain: ``2R + C + t - 2``. ``f`` folds back to back
    take ``f * (2R + C + t - 2) - 1`` cycles, SCALE-Sim's stall-free count
    (``scalesim/compute/systolic_compute_ws.py``).

    * ``units``: the folds are spread evenly over the arrays, which work in parallel: each runs
      ``f = ceil(folds / U)`` of them. With fewer folds than arrays the idle arrays are not left
      idle: each fold's weights go to ``r = U // folds`` arrays, which stream ``ceil(t / r)`` rows
      each (the data parallelism a compiler uses for a layer with few weights and many
      positions). With one array, as in SCALE-Sim, this never applies.
    * ``fold_overlap`` (double-buffered weights, as TPU MXUs have): the next fold's weights load
      while the current fold streams, and consecutive folds follow each other through the
      wavefront. A fold after the first costs ``max(t, R)`` (the next weight tile needs ``R``
      cycles to shift in); the first still pays the whole fill and drain: ``2R + C + t - 3 +
      (f - 1) * max(t, R)``. With one fold this equals the count without overlap.
    * ``pack_groups``: ``packed_groups`` groups share a fold; without it each group is a fold of
      its own.

    Examples:
        Hand-worked: k = 300, n = 200 on 128 x 128 is ``ceil(300/128) * ceil(200/128) = 3 * 2 = 6``
        folds; with t = 50 one fold is ``2*128 + 128 + 50 - 2 = 432`` cycles, so ``6 * 432 - 1 =
        2591``. On 4 arrays each runs 2 folds: ``2 * 432 - 1 = 863``. With fold overlap a fold after
        the first costs ``max(50, 128) = 128``: ``2*128 + 128 + 50 - 3 + 128 = 559``. On 12 arrays
        each fold goes to 2 arrays streaming 25 rows: ``2*128 + 128 + 25 - 2 - 1 = 406``.

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
    """(cycles, folds) of ``count`` GEMMs on ``units`` output-stationary arrays.

    With R = ``rows``, C = ``cols``, U = ``units``: a fold keeps an R x C tile of outputs (``R``
    positions x ``C`` channels) and streams the ``k`` reduction through it. Folds: ``count *
    ceil(t / R) * ceil(n / C)``, spread over the arrays as in ``systolic_ws_cycles`` (``f =
    ceil(folds / U)`` each, never replicated), each ``k + R + C - 2`` cycles: ``f * (k + R + C -
    2) - 1``. With ``fold_overlap`` a fold after the first costs ``max(k, R)`` (the finished
    outputs need ``R`` cycles to shift out): ``k + R + C - 3 + (f - 1) * max(k, R)``. Groups never
    pack: the rows of an output-stationary array share their streamed inputs, and groups need
    different ones.

    Examples:
        Hand-worked: t = 300, n = 200, k = 64 on 128 x 128 is ``ceil(300/128) * ceil(200/128) = 6``
        folds of ``64 + 128 + 128 - 2 = 318`` cycles: ``6 * 318 - 1 = 1907``; with fold overlap
        ``64 + 128 + 128 - 3 + 5 * 128 = 957``.

        >>> systolic_os_cycles(300, 64, 200, 128, 128)
        (1907, 6)
        >>> systolic_os_cycles(300, 64, 200, 128, 128, fold_overlap=True)
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

    The output positions (``t``, over every GEMM of the entry) are spread over all ``units x
    cores`` cores; a core computes one position at a time with its lanes on up to ``lanes``
    output channels, one MAC per lane per cycle, so one pass costs ``k`` cycles. A dense GEMM
    needs ``ceil(n / lanes)`` passes per position; with ``pack_groups`` the lanes take
    ``min(count, lanes // n)`` small groups side by side (a depthwise layer runs one channel per
    lane).

    Examples:
        Hand-worked on 16 PEs x 4 cores x 64 lanes: a 3x3 conv, 64 -> 64 channels at 56 x 56
        (t = 3136, k = 576, n = 64) needs one pass per position: ``ceil(3136 / 64) * 576 = 28224``
        cycles, every lane busy. A 3x3 depthwise layer of 144 channels (k = 9, n = 1, count = 144)
        packs 64 channels per pass, 3 passes per position: ``ceil(3136 * 3 / 64) * 9 = 1323``.

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


def ideal_cycles(macs: int, macs_per_cycle: int) -> int:
    """Cycles of ``macs`` MACs with every cell busy every cycle: ``ceil(macs / macs_per_cycle)``, at least 1.

    The ``ideal`` kind's count, and every operator's bound (``OpCost.ideal_cycles``).

    Examples:
        >>> ideal_cycles(2500, 1000)
        3
    """
    return max(1, _ceil(macs, macs_per_cycle))


def vector_cycles(elements: int, elements_per_cycle: int) -> int:
    """Cycles of an element-wise operator: ``ceil(elements / elements_per_cycle)``, at least 1.

    Examples:
        >>> vector_cycles(4097, 4096)
        2
    """
    return max(1, _ceil(elements, elements_per_cycle))


def systolic_ws_traffic(t: int, k: int, n: int, cols: int, *, count: int = 1) -> int:
    """Elements ``count`` GEMMs stream to and from the scratchpad on weight-stationary arrays of ``cols`` columns.

    The inputs are streamed once per N-fold, the weights read once, the outputs written once
    (partial sums accumulate beside the array): ``count * (t k ceil(n / C) + k n + t n)``.

    Examples:
        Hand-worked: t = 50, k = 300, n = 200 on 128 columns: ``50*300*2 + 300*200 + 50*200 = 100000``.

        >>> systolic_ws_traffic(50, 300, 200, 128)
        100000
    """
    return count * (t * k * _ceil(n, cols) + k * n + t * n)


def systolic_os_traffic(t: int, k: int, n: int, rows: int, cols: int, *, count: int = 1) -> int:
    """Elements ``count`` GEMMs stream to and from the scratchpad on output-stationary arrays.

    As ``systolic_ws_traffic``, but the weights are read again for every T-fold:
    ``count * (t k ceil(n / C) + k n ceil(t / R) + t n)``.

    Examples:
        Hand-worked: t = 300, k = 64, n = 200 on 128 x 128: ``300*64*2 + 64*200*3 + 300*200 = 136800``.

        >>> systolic_os_traffic(300, 64, 200, 128, 128)
        136800
    """
    return count * (t * k * _ceil(n, cols) + k * n * _ceil(t, rows) + t * n)


def lanes_traffic(t: int, k: int, n: int, lanes: int, *, count: int = 1) -> int:
    """Elements ``count`` GEMMs stream to and from the scratchpad on SIMD lanes.

    The inputs are read once per pass of channels (packed groups: one pass), the weights once,
    the outputs written once: ``count * (t k ceil(n / lanes) + k n + t n)``.

    Examples:
        Hand-worked: t = 3136, k = 576, n = 64 on 64 lanes: ``3136*576 + 576*64 + 3136*64 = 2043904``.

        >>> lanes_traffic(3136, 576, 64, 64)
        2043904
    """
    return count * (t * k * _ceil(n, lanes) + k * n + t * n)


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
    *, macs: int, elements: int, gemm: Sequence[Sequence[int]] | None, compute: ComputeKind,
    element_bytes: int, io_bytes: int, sram_bytes_per_cycle: int,
) -> OpCost:
    """The cost of one operator (the rules in the module docstring).

    ``gemm``: the node's GEMM entries (``None`` or empty when it has none). ``compute``: the
    config's compute block, which maps the GEMMs. ``element_bytes``: bytes per element of the
    run's dtype. ``io_bytes``: bytes of the operator's input and output tensors (the traffic of
    an element-wise or ideal-mapped operator). ``sram_bytes_per_cycle``: the whole chip's
    scratchpad bandwidth.
    """
    if macs <= 0:
        cycles = vector_cycles(elements, compute.vector_elements_per_cycle)
        return OpCost(cycles, cycles, io_bytes, _ceil(io_bytes, sram_bytes_per_cycle), 0, "vector", 0.0)
    peak = compute.peak_macs_per_cycle
    ideal = ideal_cycles(macs, peak)
    entries = [(int(t), int(k), int(n), int(count)) for t, k, n, count in gemm or ()]
    if not entries and compute.needs_gemm_shapes:  # a hand-made or older graph: nothing to map
        cycles, folds, traffic, mapping = ideal, 0, io_bytes, "ideal (no GEMM shape)"
    else:
        cycles, folds = compute.cycles(entries, macs)
        traffic, mapping = compute.sram_bytes(entries, element_bytes, io_bytes), compute.mapping
    return OpCost(cycles, ideal, traffic, _ceil(traffic, sram_bytes_per_cycle), folds, mapping,
                  macs / (cycles * peak))

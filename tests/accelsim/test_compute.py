"""The per-operator compute model: hand-derived cycle counts and the invariants every mapping keeps."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accelsim.compute import (
    ideal_cycles,
    lanes_cycles,
    lanes_traffic,
    operator_cost,
    packed_groups,
    systolic_os_cycles,
    systolic_os_traffic,
    systolic_ws_cycles,
    systolic_ws_traffic,
    vector_cycles,
)
from accelsim.hw import load_hw


def test_weight_stationary_by_hand():
    # k = 5, n = 7 on a 4 x 4 array: ceil(5/4) * ceil(7/4) = 4 folds of 2*4 + 4 + 10 - 2 = 20 cycles
    assert systolic_ws_cycles(10, 5, 7, 4, 4) == (4 * 20 - 1, 4)
    # three arrays: two folds on the busiest one
    assert systolic_ws_cycles(10, 5, 7, 4, 4, units=3) == (2 * 20 - 1, 4)
    # fold overlap: the second fold costs max(t, R) = 10 after the first's 2R + C + t - 3 = 19
    assert systolic_ws_cycles(10, 5, 7, 4, 4, units=3, fold_overlap=True) == (19 + 10, 4)
    # t smaller than R: the next weight tile (R cycles) is what a fold waits for
    assert systolic_ws_cycles(2, 5, 7, 4, 4, fold_overlap=True) == (2 * 4 + 4 + 2 - 3 + 3 * 4, 4)
    # one fold: overlap changes nothing
    assert systolic_ws_cycles(10, 3, 3, 4, 4, fold_overlap=True) == systolic_ws_cycles(10, 3, 3, 4, 4)


def test_output_stationary_by_hand():
    # t = 10, n = 7 on 4 x 4: ceil(10/4) * ceil(7/4) = 6 folds of 5 + 4 + 4 - 2 = 11 cycles
    assert systolic_os_cycles(10, 5, 7, 4, 4) == (6 * 11 - 1, 6)
    assert systolic_os_cycles(10, 5, 7, 4, 4, units=2) == (3 * 11 - 1, 6)
    assert systolic_os_cycles(10, 5, 7, 4, 4, units=2, fold_overlap=True) == (5 + 4 + 4 - 3 + 2 * 5, 6)


def test_depthwise_packs_groups_block_diagonally():
    # 3x3 depthwise, 144 channels on 128 x 128: 14 groups per fold (126 rows, 14 columns)
    assert packed_groups(9, 1, 144, 128, 128) == 14
    cycles, folds = systolic_ws_cycles(3136, 9, 1, 128, 128, count=144)
    assert folds == 11 and cycles == 11 * (2 * 128 + 128 + 3136 - 2) - 1
    unpacked, folds = systolic_ws_cycles(3136, 9, 1, 128, 128, count=144, pack_groups=False)
    assert folds == 144 and unpacked == 144 * (2 * 128 + 128 + 3136 - 2) - 1
    # a group too big for the array is never packed
    assert packed_groups(200, 1, 4, 128, 128) == 1
    # output stationary does not pack: each group is its own fold per T-tile
    assert systolic_os_cycles(3136, 9, 1, 128, 128, count=144)[1] == 144 * 25


def test_lanes_by_hand():
    # 2 PEs x 2 cores x 4 lanes; t = 10 positions, n = 6 channels: 2 passes per position,
    # 20 passes over 4 cores = 5 rounds of k = 3 cycles
    assert lanes_cycles(10, 3, 6, units=2, cores=2, lanes=4) == (15, 20)
    # depthwise: 8 groups of one channel pack 4 per pass
    assert lanes_cycles(10, 9, 1, count=8, units=2, cores=2, lanes=4) == (5 * 9, 20)
    assert lanes_cycles(10, 9, 1, count=8, units=2, cores=2, lanes=4, pack_groups=False) == (20 * 9, 80)


def test_vector_and_ideal_cycles():
    assert vector_cycles(4097, 4096) == 2 and vector_cycles(0, 16) == 1
    assert ideal_cycles(2500, 1000) == 3 and ideal_cycles(1, 1000) == 1


def test_traffic_by_hand():
    # t = 10, k = 5, n = 7 on 4 x 4: the inputs re-streamed per N-fold (2), weights and outputs once
    assert systolic_ws_traffic(10, 5, 7, 4) == 10 * 5 * 2 + 5 * 7 + 10 * 7
    # output stationary re-reads the weights per T-fold (3)
    assert systolic_os_traffic(10, 5, 7, 4, 4) == 10 * 5 * 2 + 5 * 7 * 3 + 10 * 7
    # lanes re-read the inputs per pass of channels; count multiplies everything
    assert lanes_traffic(10, 5, 7, 4, count=3) == 3 * (10 * 5 * 2 + 5 * 7 + 10 * 7)


#: each kind's own functions, as its record's fields feed them: what ``operator_cost`` must give
OWN_FUNCTIONS = {
    "systolic-ws": (
        lambda c, t, k, n, count: systolic_ws_cycles(t, k, n, c.rows, c.cols, count=count, units=c.units,
                                                     fold_overlap=c.fold_overlap, pack_groups=c.pack_groups),
        lambda c, t, k, n, count: systolic_ws_traffic(t, k, n, c.cols, count=count)),
    "systolic-os": (
        lambda c, t, k, n, count: systolic_os_cycles(t, k, n, c.rows, c.cols, count=count, units=c.units,
                                                     fold_overlap=c.fold_overlap),
        lambda c, t, k, n, count: systolic_os_traffic(t, k, n, c.rows, c.cols, count=count)),
    "lanes": (
        lambda c, t, k, n, count: lanes_cycles(t, k, n, count=count, units=c.units, cores=c.cores_per_unit,
                                               lanes=c.lanes_per_core, pack_groups=c.pack_groups),
        lambda c, t, k, n, count: lanes_traffic(t, k, n, c.lanes_per_core, count=count)),
}


@pytest.mark.parametrize(("config", "overrides", "mapping"), [
    ("tpuv4", {}, "systolic-ws"),
    ("tpuv4", {"compute.dataflow": "os", "compute.units": 3}, "systolic-os"),
    ("tpuv4", {"compute.pack_groups": "no", "compute.fold_overlap": "no"}, "systolic-ws"),
    ("pixel6", {}, "lanes"),
    ("pixel6", {"compute.pack_groups": "no"}, "lanes"),
])
def test_operator_cost_is_the_kinds_own_function(config, overrides, mapping):
    hw = load_hw(config, overrides=overrides)
    compute = hw.compute
    cycles_of, traffic_of = OWN_FUNCTIONS[mapping]
    entries = [(3136, 9, 1, 144), (50, 300, 200, 1), (1, 2048, 1000, 1)]
    cost = _cost(hw, macs=sum(t * k * n * count for t, k, n, count in entries), elements=1, gemm=entries,
                 element_bytes=2)
    assert cost.mapping == compute.mapping == mapping
    assert (cost.compute_cycles, cost.folds) == (sum(cycles_of(compute, *e)[0] for e in entries),
                                                 sum(cycles_of(compute, *e)[1] for e in entries))
    assert cost.sram_bytes == 2 * sum(traffic_of(compute, *e) for e in entries)
    assert cost.ideal_cycles == ideal_cycles(sum(t * k * n * count for t, k, n, count in entries),
                                             compute.peak_macs_per_cycle)


def test_the_ideal_kind_ignores_the_shapes_and_streams_inputs_and_outputs_once():
    hw = load_hw("pixel6", overrides={"compute.kind": "ideal", "compute.macs_per_cycle": 1000})
    for gemm in ([[5, 50, 10, 1]], None):
        cost = _cost(hw, macs=2500, elements=1, gemm=gemm, io_bytes=640)
        assert (cost.compute_cycles, cost.folds, cost.sram_bytes, cost.mapping) == (3, 0, 640, "ideal")


def _cost(hw, **kw):
    defaults = dict(element_bytes=1, io_bytes=0, sram_bytes_per_cycle=hw.sram_bytes_per_cycle_total)
    return operator_cost(compute=hw.compute, **(defaults | kw))


def test_batch1_fc_on_the_tpu_uses_one_row_of_the_array():
    hw = load_hw("tpuv4")
    # resnet50's fc: t = 1, k = 2048, n = 1000: 16 * 8 = 128 folds, 16 per MXU
    cost = _cost(hw, macs=2048 * 1000, elements=1000, gemm=[[1, 2048, 1000, 1]], element_bytes=2)
    assert cost.folds == 128
    assert cost.compute_cycles == 2 * 128 + 128 + 1 - 3 + 15 * 128
    assert cost.ideal_cycles == 16
    assert cost.utilization == pytest.approx(2048 * 1000 / (cost.compute_cycles * 131072))
    # inputs re-streamed per N-fold, weights once, outputs once (bf16)
    assert cost.sram_bytes == 2 * (2048 * 8 + 2048 * 1000 + 1000)


def test_element_wise_operator_can_be_memory_bound():
    hw = load_hw("pixel6")  # 4096 lanes, 16 x 256 B/cycle of scratchpad
    cost = _cost(hw, macs=0, elements=4096 * 10, gemm=None, io_bytes=3 * 4096 * 10)
    assert cost.compute_cycles == 10 and cost.sram_cycles == 30
    assert (cost.cycles, cost.sram_stall_cycles, cost.mapping) == (30, 20, "vector")


def test_operator_without_gemm_shape_is_costed_at_the_ideal_bound():
    hw = load_hw("tpuv4")
    cost = _cost(hw, macs=131072 * 3 + 1, elements=10, gemm=None, io_bytes=64)
    assert (cost.compute_cycles, cost.mapping) == (4, "ideal (no GEMM shape)")
    ideal = load_hw("tpuv4", overrides={"compute.kind": "ideal", "compute.macs_per_cycle": 1000})
    assert _cost(ideal, macs=2500, elements=1, gemm=[[5, 50, 10, 1]]).compute_cycles == 3


def test_entries_run_one_after_the_other():
    hw = load_hw("tpuv4")
    first = _cost(hw, macs=64 * 64 * 64, elements=1, gemm=[[64, 64, 64, 1]])
    both = _cost(hw, macs=2 * 64 * 64 * 64, elements=1, gemm=[[64, 64, 64, 1], [64, 64, 64, 1]])
    assert both.compute_cycles == 2 * first.compute_cycles


_shapes = st.tuples(st.integers(1, 3000), st.integers(1, 3000), st.integers(1, 3000), st.integers(1, 64))


@settings(max_examples=300, deadline=None)
@given(shape=_shapes, rows=st.sampled_from([4, 32, 128]), cols=st.sampled_from([4, 32, 128]),
       units=st.integers(1, 8), overlap=st.booleans(), pack=st.booleans())
def test_systolic_never_beats_the_ideal_bound_and_overlap_never_hurts(shape, rows, cols, units, overlap, pack):
    t, k, n, count = shape
    macs = t * k * n * count
    peak = rows * cols * units
    for cycles, _ in (
        systolic_ws_cycles(t, k, n, rows, cols, count=count, units=units, fold_overlap=overlap, pack_groups=pack),
        systolic_os_cycles(t, k, n, rows, cols, count=count, units=units, fold_overlap=overlap),
    ):
        assert cycles * peak >= macs
    ws_plain = systolic_ws_cycles(t, k, n, rows, cols, count=count, units=units, pack_groups=pack)[0]
    ws_overlap = systolic_ws_cycles(t, k, n, rows, cols, count=count, units=units, fold_overlap=True,
                                    pack_groups=pack)[0]
    assert ws_overlap <= ws_plain
    os_plain = systolic_os_cycles(t, k, n, rows, cols, count=count, units=units)[0]
    assert systolic_os_cycles(t, k, n, rows, cols, count=count, units=units, fold_overlap=True)[0] <= os_plain
    # more arrays never slow an operator down
    more = systolic_ws_cycles(t, k, n, rows, cols, count=count, units=units + 1, fold_overlap=overlap,
                              pack_groups=pack)[0]
    assert more <= systolic_ws_cycles(t, k, n, rows, cols, count=count, units=units, fold_overlap=overlap,
                                      pack_groups=pack)[0]


@settings(max_examples=200, deadline=None)
@given(shape=_shapes, units=st.integers(1, 16), cores=st.integers(1, 4), lanes=st.sampled_from([8, 64]),
       pack=st.booleans())
def test_lanes_never_beat_the_ideal_bound(shape, units, cores, lanes, pack):
    t, k, n, count = shape
    cycles, _ = lanes_cycles(t, k, n, count=count, units=units, cores=cores, lanes=lanes, pack_groups=pack)
    assert cycles * units * cores * lanes >= t * k * n * count


def test_few_folds_split_their_rows_over_idle_arrays():
    # one fold (k = n = 64) of 3136 rows on 8 arrays: each streams 392 rows
    assert systolic_ws_cycles(3136, 64, 64, 128, 128, units=8) == (2 * 128 + 128 + 392 - 2 - 1, 1)
    # three folds on 8 arrays: two arrays per fold, 1568 rows each
    assert systolic_ws_cycles(3136, 300, 64, 128, 128, units=8) == (2 * 128 + 128 + 1568 - 2 - 1, 3)

"""The shared placement kernel: the same offsets as a plain scan over every placed buffer, work in
proportion to the overlapping pairs, the deadline, and arithmetic near the int64 limit."""


import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from allocator import Buffer, Problem, Solution, validate
from allocator.core.generators import generate
from allocator.core.kernel_clock import work_clock
from allocator.core.sections import compress_times, range_max, sweep_arrays
from allocator.methods.heuristics import conflict_counts
from allocator.methods.placement import Placement, greedy_method, place, verdict
from allocator.methods.sorting import lexsort_order, sort_in_place, stable_argsort


def reference_place(starts, ends, sizes, alignments, fixed, order, best_fit):
    """The placement rule written out plainly: every placed buffer is checked for a time overlap,
    the overlapping address ranges are walked in address order, Python integers throughout."""
    placed = [(int(s), int(e), int(f), int(f) + int(z))
              for s, e, z, f in zip(starts, ends, sizes, fixed, strict=True) if f >= 0]
    offsets = [int(f) for f in fixed]
    for i in order:
        if offsets[i] >= 0:
            continue
        s, e, size, align = int(starts[i]), int(ends[i]), int(sizes[i]), int(alignments[i])
        ranges = sorted((low, high) for ps, pe, low, high in placed if ps < e and pe > s)
        cursor, chosen, best_gap = 0, None, None
        for low, high in ranges:
            aligned = -(-cursor // align) * align
            if low > cursor and aligned + size <= low:
                if not best_fit:
                    chosen = aligned
                    break
                if best_gap is None or low - cursor < best_gap:
                    best_gap, chosen = low - cursor, aligned
            cursor = max(cursor, high)
        if chosen is None:
            chosen = -(-cursor // align) * align
        offsets[i] = chosen
        placed.append((s, e, chosen, chosen + size))
    return offsets


@st.composite
def instances(draw, max_buffers=40):
    """Arrays of up to ``max_buffers`` buffers (some pinned, stacked so they never collide) and an
    order that is a random permutation of them."""
    n = draw(st.integers(1, max_buffers))
    starts, ends, sizes, aligns, fixed = [], [], [], [], []
    pinned_top = 0
    for _ in range(n):
        start = draw(st.integers(0, 25))
        size, align = draw(st.integers(1, 64)), draw(st.sampled_from([1, 1, 2, 4, 16]))
        offset = -1
        if draw(st.integers(0, 6)) == 0:
            offset = -(-pinned_top // align) * align + align * draw(st.integers(0, 3))
            pinned_top = offset + size
        starts.append(start)
        ends.append(start + draw(st.integers(1, 10)))
        sizes.append(size)
        aligns.append(align)
        fixed.append(offset)
    order = draw(st.permutations(range(n)))
    arrays = tuple(np.array(column, np.int64) for column in (starts, ends, sizes, aligns, fixed))
    return arrays, np.array(order, np.int64)


@given(instances(), st.booleans())
def test_the_kernel_places_exactly_like_a_scan_over_every_placed_buffer(instance, best_fit):
    arrays, order = instance
    result = place(*arrays, order, best_fit=best_fit)
    assert result.complete and result.placed == len(order)
    assert result.offsets.tolist() == reference_place(*arrays, order, best_fit)


def test_many_overlapping_buffers_take_the_radix_sort_and_place_like_the_scan():
    # 900 buffers live together for most of their lifetimes: from the 512th on, a buffer meets
    # more placed ranges than _RADIX_FROM, so the gap walk sorts them with the radix sort (and
    # with numpy's or numba's sort before that); large sizes make several 11-bit passes
    from allocator.methods.placement import _RADIX_FROM

    rng = np.random.default_rng(7)
    n = 900
    starts = rng.integers(0, 10, n)
    ends = starts + rng.integers(40, 60, n)
    sizes = rng.integers(1, 2**30, n)
    alignments = rng.choice(np.array([1, 1, 2, 4096]), n)
    fixed = np.full(n, -1, np.int64)
    order = rng.permutation(n)
    assert n > _RADIX_FROM
    for best_fit in (False, True):
        result = place(starts, ends, sizes, alignments, fixed, order, best_fit=best_fit)
        assert result.complete
        assert result.offsets.tolist() == reference_place(starts, ends, sizes, alignments, fixed, order, best_fit)


def overlapping_pairs(starts, ends):
    return int(conflict_counts(starts, ends).sum()) // 2


def short_lived(n, seed):
    """``n`` buffers of 1 to 20 steps starting anywhere in ``[0, n)``: about 20 overlaps each."""
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, n, n)
    sizes = rng.integers(1, 1000, n)
    ones = np.ones(n, np.int64)
    return starts, starts + rng.integers(1, 21, n), sizes, ones, -ones


def test_the_kernel_reads_each_overlapping_pair_at_most_twice():
    sparse = short_lived(3000, seed=4)
    dense = generate("random", 3000, seed=4).arrays()  # one in seven pairs overlaps
    for arrays in (sparse, dense):
        starts, ends, sizes, _, _ = arrays
        pairs = overlapping_pairs(starts, ends)
        for best_fit in (False, True):
            result = place(*arrays, lexsort_order((-sizes,), len(sizes)), best_fit=best_fit)
            # every pair is looked at once, when its later buffer is placed: from the start lists,
            # from the tree path, or (a placed buffer starting in the same section) from both
            assert pairs <= result.records_read <= 2 * pairs
    # a scan over every placed buffer reads n (n - 1) / 2 records: 50 times the bound here
    n = len(sparse[0])
    assert 50 * 2 * overlapping_pairs(sparse[0], sparse[1]) < n * (n - 1) // 2


def test_the_work_follows_the_overlaps_not_the_number_of_buffers():
    # The same 200 mutually overlapping buffers, repeated in 50 disjoint time windows: 50 times the
    # pairs, 50 times the records read (a scan over every placed buffer would read 2,500 times more).
    def windows(count):
        rng = np.random.default_rng(0)
        starts = rng.integers(0, 5, 200)
        sizes = rng.integers(1, 100, 200)
        s = np.concatenate([starts + 100 * w for w in range(count)])
        return s, s + 5, np.tile(sizes, count)

    reads = []
    for count in (1, 50):
        starts, ends, sizes = windows(count)
        ones = np.ones(len(starts), np.int64)
        result = place(starts, ends, sizes, ones, -ones, lexsort_order((-sizes,), len(starts)))
        reads.append(result.records_read)
        assert result.records_read <= 2 * overlapping_pairs(starts, ends)
    assert reads[1] == 50 * reads[0]


def test_a_passed_deadline_stops_the_kernel_before_any_free_buffer():
    problem = generate("random", 2000, seed=1)
    starts, ends, sizes, aligns, _ = problem.arrays()
    fixed = np.full(len(starts), -1, np.int64)
    fixed[0] = 0  # a pinned buffer is placed whatever the clock says
    result = place(starts, ends, sizes, aligns, fixed, np.arange(len(starts)), deadline=work_clock() - 1)
    assert result.stop == "deadline" and not result.complete
    assert result.placed == 1 and (result.offsets[1:] == -1).all()
    out = verdict(problem, result, sizes, "some-method")
    assert out.status == "timeout" and out.offsets is None
    assert out.reason == "some-method placed 1 of 2,000 buffers before the deadline"


def test_a_top_above_the_int64_range_stops_the_kernel_instead_of_wrapping_around():
    # A pinned buffer from 0 to 2**40 below 2**63 (beyond the problem's limits; the kernel takes
    # any int64 arrays): the free one (2**41 bytes) overlaps it and can only go on top.
    starts, ends, ones = np.array([0, 0]), np.array([2, 2]), np.ones(2, np.int64)
    fixed = np.array([0, -1])
    sizes = np.array([2**63 - 2**40, 2**41])
    result = place(starts, ends, sizes, ones, fixed, np.array([1]))
    assert result.stop == "overflow" and result.placed == 1
    fits = place(starts, ends, np.array([2**63 - 2**42, 2**41]), ones, fixed, np.array([1]))
    assert fits.complete and fits.offsets.tolist() == [0, 2**63 - 2**42]
    out = verdict(Problem([Buffer("a", 0, 2, 1), Buffer("b", 0, 2, 1)]), result, sizes, "x")
    assert out.status == "failed" and out.offsets is None and "2**63 - 1" in out.reason


def test_values_near_the_problem_limits_are_placed_exactly():
    # Times near MAX_VALUE = 2**62 - 1, sizes near 2**59, alignment 2**40, a pinned buffer at
    # 2**60, every stacking sum the problem allows: the gap test must not wrap around, and the
    # validator accepts the result.
    top = 2**62 - 1
    problem = Problem([
        Buffer("pinned", 0, 10, 2**58, offset=2**60, alignment=2**40),
        Buffer("a", 0, 5, 2**59, alignment=2**40),
        Buffer("b", 3, 9, 2**58 + 1),
        Buffer("c", top - 2**61, top, 2**40),
    ])
    arrays = problem.arrays()
    order = lexsort_order((-arrays[2],), 4)
    for best_fit in (False, True):
        out = greedy_method(problem, arrays, (-arrays[2],), best_fit=best_fit, name="x", deadline=None)
        assert out.status == "solved"
        assert validate(problem, Solution(out.offsets)).ok
        assert list(out.offsets.values()) == reference_place(*arrays, order, best_fit)
    assert out.offsets == {"pinned": 2**60, "a": 0, "b": 2**59, "c": 0}


def test_placement_reports_completion():
    p = Placement(np.zeros(1, np.int64), 1, 0, "complete")
    assert p.complete and not Placement(np.full(1, -1), 0, 0, "deadline").complete


@given(st.lists(st.tuples(st.integers(0, 2**62 - 2), st.integers(1, 2**20)), min_size=1, max_size=30),
       st.sampled_from([10, 2**30, 2**62]))
def test_compress_times_matches_unique_and_searchsorted(spans, horizon):
    # horizons exercise the three paths: a table indexed by time, packed keys, an argsort
    starts = np.array([s % horizon for s, _ in spans], np.int64)
    ends = np.minimum(starts + np.array([w for _, w in spans]), 2**62 - 1)
    ends = np.maximum(ends, starts + 1)
    times, first, last = compress_times(starts, ends)
    expected = np.unique(np.concatenate([starts, ends]))
    assert times.tolist() == expected.tolist()
    assert first.tolist() == np.searchsorted(expected, starts).tolist()
    assert last.tolist() == np.searchsorted(expected, ends).tolist()


@given(st.lists(st.integers(-2**62, 2**62), min_size=1, max_size=50), st.data())
def test_range_max_matches_the_definition(values, data):
    values = np.array(values, np.int64)
    pairs = data.draw(st.lists(st.tuples(st.integers(0, len(values) - 1), st.integers(1, len(values))), max_size=20))
    first = np.array([min(a, b - 1) for a, b in pairs], np.int64)
    last = np.array([max(a + 1, b) for a, b in pairs], np.int64)
    assert range_max(values, first, last).tolist() == [int(values[a:b].max()) for a, b in zip(first, last, strict=True)]


def test_section_totals_are_exact_near_2_to_the_62():
    starts, ends = np.array([0, 1, 2]), np.array([3, 4, 5])
    sizes = np.array([2**61, 2**60, 2**60 - 1])
    cross = sweep_arrays(starts, ends, sizes)
    assert cross.section_total.tolist() == [2**61, 2**61 + 2**60, 2**62 - 1, 2**61 - 1, 2**60 - 1]
    assert cross.span_total().tolist() == [2**62 - 1] * 3


@given(st.lists(st.integers(0, 2**62), max_size=400), st.integers(0, 3), st.integers(0, 8))
def test_the_written_out_sorts_agree_with_numpy(values, modulus_choice, tail):
    """``sort_in_place`` (the gap walk's and ``sort_by_key``'s sort) sorts like ``np.sort`` and
    ``stable_argsort`` (their fallback) orders like a stable ``np.argsort``, duplicates included,
    and neither touches the entries past ``m``."""
    modulus = (2, 17, 2**20, 2**62 + 1)[modulus_choice]
    keys = np.array([v % modulus for v in values] + [-1] * tail, np.int64)
    m = len(values)
    sorted_keys = keys.copy()
    sort_in_place(sorted_keys, m)
    assert sorted_keys[:m].tolist() == sorted(keys[:m].tolist())
    assert sorted_keys[m:].tolist() == [-1] * tail
    order, scratch = np.empty(m, np.int64), np.empty(m, np.int64)
    stable_argsort(keys, m, scratch, order)
    assert order.tolist() == np.argsort(keys[:m], kind="stable").tolist()

"""The greedy methods: validated placements, their documented orders, capacity verdicts, determinism."""

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from allocator import (
    METHODS,
    Buffer,
    InvalidProblemError,
    Problem,
    UnknownMethodError,
    lower_bound,
    read_csv,
    solve,
    validate,
)
from allocator.core.kernel_clock import work_clock
from allocator.core.options import NoOptions
from allocator.core.problem import MAX_VALUE
from allocator.methods.greedy import wide_product

GREEDY = ["first-fit", "greedy-by-size", "best-fit", "load-best-fit"]

#: times near MAX_VALUE, sizes near 2**59, large alignments, a pinned buffer: every stacking sum
#: within the problem's limits (shared with test_heuristics)
NEAR_THE_LIMITS = Problem([
    Buffer("pinned", 0, MAX_VALUE, 2**58, offset=2**60, alignment=2**40),
    Buffer("a", 0, 2**61, 2**59, alignment=2**40),
    Buffer("b", 2**60, MAX_VALUE, 2**58 + 1),
    Buffer("c", MAX_VALUE - 2**40, MAX_VALUE, 2**40, alignment=2**20),
    Buffer("d", 5, 2**62 - 5, 3 * 2**56 + 7),
])


def test_registry_lists_the_greedy_methods_with_descriptions():
    for name in GREEDY:
        assert name in METHODS and METHODS[name].description


def test_unknown_method_and_bad_timeout_raise():
    p = Problem([Buffer("a", 0, 1, 1)], capacity=1)
    with pytest.raises(UnknownMethodError, match="'gredy'.*greedy-by-size"):
        solve(p, "gredy")
    with pytest.raises(InvalidProblemError, match="timeout"):
        solve(p, "first-fit", timeout=-1)
    with pytest.raises(TypeError):
        solve(p, "first-fit", frobnicate=True)


def test_greedy_by_size_places_largest_first_at_lowest_offset():
    p = Problem([Buffer("small", 0, 4, 2), Buffer("big", 1, 3, 8), Buffer("mid", 2, 6, 4)])
    r = solve(p, "greedy-by-size")
    assert r.solution.offsets == {"big": 0, "mid": 8, "small": 12}


def test_first_fit_follows_start_order():
    p = Problem([Buffer("late", 2, 4, 8), Buffer("early", 0, 3, 2)])
    assert solve(p, "first-fit").solution.offsets == {"early": 0, "late": 2}


def test_best_fit_prefers_the_smallest_gap():
    # Gaps [4, 10) (6 bytes) and [14, 17) (3 bytes) at step 1; a 3-byte buffer goes to the snug one.
    p = Problem([
        Buffer("lo", 0, 3, 4, offset=0), Buffer("mid", 0, 3, 4, offset=10), Buffer("hi", 0, 3, 4, offset=17),
        Buffer("x", 1, 2, 3),
    ])
    assert solve(p, "best-fit").solution.offsets["x"] == 14
    assert solve(p, "greedy-by-size").solution.offsets["x"] == 4


def test_alignment_and_fixed_offsets_are_kept():
    p = Problem([Buffer("f", 0, 4, 3, offset=5), Buffer("a", 0, 4, 4, alignment=8), Buffer("b", 1, 2, 2, alignment=4)])
    for method in GREEDY:
        r = solve(p, method)
        assert r.solved and validate(p, r.solution).ok
        assert r.solution.offsets["f"] == 5 and r.solution.offsets["a"] % 8 == 0


def test_capacity_miss_is_failed_with_the_peak_not_infeasible():
    # LOAD above the capacity is a proof; a heuristic's miss at a capacity >= LOAD is only "failed".
    p = Problem([Buffer("a", 0, 2, 6), Buffer("b", 1, 3, 6)], capacity=11)
    r = solve(p, "greedy-by-size")
    assert r.status == "infeasible" and "LOAD 12 exceeds capacity 11" in r.reason
    frag = Problem([Buffer("x", 0, 2, 1), Buffer("y", 1, 4, 2), Buffer("z", 2, 4, 2)], capacity=4)
    assert lower_bound(frag) == 4
    r = solve(frag, "first-fit")  # x at 0, y at 1: z finds [0, 1) and [3, 4) free, 2 bytes apart
    assert r.status == "failed" and r.peak == 5 and "peak 5 > capacity 4" in r.reason
    assert validate(frag.with_capacity(None), r.solution).ok


random_buffers = st.lists(
    st.tuples(st.integers(0, 20), st.integers(1, 8), st.integers(1, 64), st.sampled_from([1, 1, 2, 4, 16])),
    min_size=0, max_size=40,
)


@given(random_buffers, st.sampled_from(GREEDY))
def test_every_greedy_result_validates(items, method):
    bufs = [Buffer(f"b{i}", s, s + d, size, align) for i, (s, d, size, align) in enumerate(items)]
    p = Problem(bufs)
    r = solve(p, method)
    assert r.solved
    assert validate(p, r.solution).ok
    assert r.peak >= lower_bound(p)
    # the same placement under a capacity equal to its peak is "solved"
    if bufs:
        assert solve(p.with_capacity(r.peak), method).status == "solved"


def test_same_input_same_answer():
    rng = random.Random(3)
    bufs = [Buffer(str(i), s, s + rng.randint(1, 9), rng.randint(1, 50)) for i, s in
            enumerate(rng.randint(0, 30) for _ in range(200))]
    for method in GREEDY:
        a = solve(Problem(bufs), method).solution.offsets
        b = solve(Problem(list(bufs)), method).solution.offsets
        assert a == b


def test_greedy_by_size_on_a_real_trace_is_near_load(benchmarks):
    p = read_csv(benchmarks / "idealloc" / "iopddl" / "G_1.csv")
    r = solve(p, "greedy-by-size")
    assert r.solved and validate(p, r.solution).ok
    assert r.peak <= lower_bound(p) * 1.01


def test_load_best_fit_places_the_most_loaded_section_first():
    # sections: [0,1) holds 9 bytes, [5,6) 3 bytes. a and b span the 9-byte section; a is longer.
    p = Problem([Buffer("a", 0, 10, 1), Buffer("b", 0, 1, 8), Buffer("c", 5, 6, 2)])
    assert solve(p, "load-best-fit").solution.offsets == {"a": 0, "b": 1, "c": 1}
    assert solve(p, "greedy-by-size").solution.offsets == {"b": 0, "c": 0, "a": 8}


def reference_greedy(problem, method):
    """A greedy method written out from its docstring: the order as a Python sort key over exact
    integers, then the lowest offset or the smallest gap among the placed buffers overlapping in
    time, found by checking every placed buffer."""
    buffers = problem.buffers
    times = sorted({t for b in buffers for t in (b.start, b.end)})
    totals = [sum(b.size for b in buffers if b.start <= t < b.end) for t in times[:-1]]

    def heaviest_section(b):
        return max(total for t, total in zip(times, totals, strict=False) if b.start <= t < b.end)

    keys = {
        "first-fit": lambda i, b: (b.start, -b.size, i),
        "greedy-by-size": lambda i, b: (-b.size, b.start, -b.lifetime, i),
        "best-fit": lambda i, b: (-b.size, -b.lifetime, b.start, i),
        "load-best-fit": lambda i, b: (-heaviest_section(b), -b.lifetime, -b.lifetime * b.size, b.start, i),
    }
    order = sorted(range(len(buffers)), key=lambda i: keys[method](i, buffers[i]))
    best_fit = method in ("best-fit", "load-best-fit")
    offsets = {b.id: b.offset for b in buffers if b.offset is not None}
    for i in order:
        b = buffers[i]
        if b.id in offsets:
            continue
        ranges = sorted((offsets[o.id], offsets[o.id] + o.size) for o in buffers
                        if o.id in offsets and o.overlaps_in_time(b))
        cursor, chosen, best_gap = 0, None, None
        for low, high in ranges:
            aligned = -(-cursor // b.alignment) * b.alignment
            if low > cursor and aligned + b.size <= low and (best_gap is None or low - cursor < best_gap):
                chosen, best_gap = aligned, low - cursor
                if not best_fit:
                    break
            cursor = max(cursor, high)
        offsets[b.id] = chosen if chosen is not None else -(-cursor // b.alignment) * b.alignment
    return offsets


@st.composite
def problems_with_pins(draw):
    """Up to 30 buffers, some pinned (stacked, so they never collide), alignments up to 16."""
    buffers, pinned_top = [], 0
    for i in range(draw(st.integers(1, 30))):
        start, size, align = draw(st.integers(0, 20)), draw(st.integers(1, 64)), draw(st.sampled_from([1, 1, 2, 16]))
        offset = None
        if draw(st.integers(0, 6)) == 0:
            offset = -(-pinned_top // align) * align + align * draw(st.integers(0, 2))
            pinned_top = offset + size
        buffers.append(Buffer(f"b{i}", start, start + draw(st.integers(1, 8)), size, align, offset))
    return Problem(buffers)


@given(problems_with_pins(), st.sampled_from(GREEDY))
def test_each_greedy_method_places_exactly_like_its_plain_definition(problem, method):
    assert solve(problem, method).solution.offsets == reference_greedy(problem, method)


@pytest.mark.parametrize("method", GREEDY)
def test_a_passed_deadline_gives_timeout_without_a_placement(method):
    p = Problem([Buffer("a", 0, 2, 4), Buffer("pinned", 1, 3, 4, offset=0), Buffer("b", 2, 5, 4)])
    out = METHODS[method].function(p, work_clock() - 1, NoOptions())
    assert out.status == "timeout" and out.offsets is None
    assert out.reason == f"{method} placed 1 of 3 buffers before the deadline"  # the pinned one


def test_wide_product_is_exact_where_int64_wraps_around():
    rng = np.random.default_rng(2)
    a = rng.integers(0, MAX_VALUE, 500, dtype=np.int64)
    b = rng.integers(0, MAX_VALUE, 500, dtype=np.int64)
    high, low = wide_product(a, b)
    assert [(int(h) << 64) | int(lo) for h, lo in zip(high, low, strict=True)] == [
        int(x) * int(y) for x, y in zip(a, b, strict=True)]


def test_load_best_fit_orders_by_the_exact_area_beyond_int64():
    # Same section total, same lifetime 2**61: the areas 2**61 x 2**40 and 2**61 x 2**39 pass
    # 2**63, and as int64 products both wrap to 0, which would put "small" (first in input) first.
    life = 2**61
    p = Problem([Buffer("small", 0, life, 2**39), Buffer("large", 0, life, 2**40)])
    r = solve(p, "load-best-fit")
    assert r.solution.offsets == {"large": 0, "small": 2**40}
    assert validate(p, r.solution).ok


def test_every_greedy_method_is_exact_near_the_value_limits():
    # Times near MAX_VALUE, sizes near 2**59, large alignments, a pinned buffer: every stacking
    # sum within the problem's limits; each result must match the plain definition and validate.
    p = NEAR_THE_LIMITS
    for method in GREEDY:
        r = solve(p, method)
        assert r.solved and validate(p, r.solution).ok
        assert r.solution.offsets == reference_greedy(p, method)

"""The greedy methods: validated placements, their documented orders, capacity verdicts, determinism."""

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
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

GREEDY = ["first-fit", "greedy-by-size", "best-fit", "load-best-fit"]
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "benchmarks"


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


@settings(max_examples=150, deadline=None)
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


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared/benchmarks not present")
def test_greedy_by_size_on_a_real_trace_is_near_load():
    p = read_csv(SHARED / "idealloc" / "iopddl" / "G_1.csv")
    r = solve(p, "greedy-by-size")
    assert r.solved and validate(p, r.solution).ok
    assert r.peak <= lower_bound(p) * 1.01


def test_load_best_fit_places_the_most_loaded_section_first():
    # sections: [0,1) holds 9 bytes, [5,6) 3 bytes. a and b span the 9-byte section; a is longer.
    p = Problem([Buffer("a", 0, 10, 1), Buffer("b", 0, 1, 8), Buffer("c", 5, 6, 2)])
    assert solve(p, "load-best-fit").solution.offsets == {"a": 0, "b": 1, "c": 1}
    assert solve(p, "greedy-by-size").solution.offsets == {"b": 0, "c": 0, "a": 8}

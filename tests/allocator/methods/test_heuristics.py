"""The production heuristics of allocator.methods.heuristics: valid placements, their documented orders, verdicts."""


import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from allocator import METHODS, Buffer, Problem, lower_bound, read_csv, solve, validate
from allocator.core.kernel_clock import work_clock
from allocator.core.problem import MAX_VALUE
from allocator.core.registry import starting_heuristics
from allocator.methods.heuristics import breadth_visit_rank, conflict_counts, product_limbs
from tests.allocator.methods.test_greedy import NEAR_THE_LIMITS

HEURISTICS = ["greedy-in-order", "greedy-by-breadth", "greedy-by-conflicts", "hill-climb", "telamalloc-heuristic"]


@st.composite
def problems(draw, max_buffers=30):
    """Up to ``max_buffers`` buffers, alignments 1/2/4, about one in six pinned. Pinned buffers
    are stacked one above the other, so they never overlap each other whatever their lifetimes."""
    buffers = []
    pinned_top = 0
    for i in range(draw(st.integers(0, max_buffers))):
        start, life = draw(st.integers(0, 20)), draw(st.integers(1, 8))
        size, alignment = draw(st.integers(1, 64)), draw(st.sampled_from([1, 2, 4]))
        offset = None
        if draw(st.integers(0, 5)) == 0:
            offset = -(-pinned_top // alignment) * alignment + alignment * draw(st.integers(0, 3))
            pinned_top = offset + size
        buffers.append(Buffer(f"b{i}", start, start + life, size, alignment, offset))
    return Problem(buffers)


def offsets(problem, method, **options):
    return solve(problem, method, **options).solution.offsets


def test_registry_lists_the_heuristics_with_descriptions():
    for name in HEURISTICS:
        assert name in METHODS and METHODS[name].description


@given(problems(), st.sampled_from(HEURISTICS), st.integers(0, 40))
def test_every_heuristic_validates_and_fails_exactly_above_the_capacity(problem, method, slack):
    free = problem.with_capacity(None)
    r = solve(free, method)
    assert r.status == "solved"
    assert validate(free, r.solution).ok
    assert r.peak >= lower_bound(free)
    assert solve(Problem(list(problem.buffers)), method).solution.offsets == r.solution.offsets
    if not problem.buffers:
        return
    # any capacity >= LOAD that holds the pinned buffers; below the heuristic's peak it must say "failed"
    pinned_top = max((b.offset + b.size for b in problem.buffers if b.offset is not None), default=1)
    capacity = max(lower_bound(free), pinned_top) + slack
    capped = solve(problem.with_capacity(capacity), method)
    assert capped.status in ("solved", "failed")
    assert (capped.status == "failed") == (capped.peak > capacity)
    assert validate(free, capped.solution).ok
    if capped.status == "failed":
        assert f"peak {capped.peak} > capacity {capacity}" in capped.reason
    if method != "hill-climb":  # hill-climb stops early once it fits; the others ignore the capacity
        assert capped.solution.offsets == r.solution.offsets


@given(problems())
def test_hill_climb_is_never_worse_than_greedy_by_size(problem):
    assert solve(problem, "hill-climb").peak <= solve(problem, "greedy-by-size").peak


def test_alignment_and_pinned_offsets_are_kept():
    p = Problem([Buffer("f", 0, 4, 3, offset=5), Buffer("a", 0, 4, 4, alignment=8), Buffer("b", 1, 2, 2, alignment=4)])
    for method in HEURISTICS:
        placed = offsets(p, method)
        assert validate(p, solve(p, method).solution).ok
        assert placed["f"] == 5 and placed["a"] % 8 == 0 and placed["b"] % 4 == 0


def test_greedy_in_order_keeps_input_order_at_equal_starts_where_first_fit_puts_the_largest_first():
    p = Problem([Buffer("small", 0, 2, 2), Buffer("big", 0, 2, 8), Buffer("late", 1, 3, 4)])
    assert offsets(p, "greedy-in-order") == {"small": 0, "big": 2, "late": 10}
    assert offsets(p, "first-fit") == {"big": 0, "small": 8, "late": 10}


def test_greedy_by_conflicts_places_the_most_overlapped_buffer_first():
    # hub overlaps big and x (2 conflicts); big and x overlap only hub (1 each; big is larger).
    p = Problem([Buffer("big", 0, 2, 8), Buffer("hub", 0, 10, 2), Buffer("x", 4, 6, 4)])
    starts, ends, _, _, _ = p.arrays()
    assert conflict_counts(starts, ends).tolist() == [1, 2, 1]
    assert offsets(p, "greedy-by-conflicts") == {"hub": 0, "big": 2, "x": 2}
    assert offsets(p, "greedy-by-size") == {"big": 0, "x": 0, "hub": 8}


def test_conflict_counts_match_the_pairwise_definition():
    rng = np.random.default_rng(5)
    starts = rng.integers(0, 30, 200)
    ends = starts + rng.integers(1, 10, 200)
    pairwise = [(np.count_nonzero((starts < e) & (ends > s)) - 1) for s, e in zip(starts, ends, strict=True)]
    assert conflict_counts(starts, ends).tolist() == pairwise


def test_greedy_by_breadth_visits_the_widest_step_first_and_takes_the_snuggest_gap():
    # Breadths: step 0 = a+b+d+e = 20, step 1 = a+b+c+e = 20, step 2 = a+c+e+f = 24.
    # Step 2 first, largest first (a before c at equal size: input order): f 0, a 7, c 13, e 19.
    # Then step 0 (ties: earlier step): d overlaps a [7,13) and e [19,24), so the gaps are
    # [0,7) and [13,19); d takes the 6-byte one, which leaves [0,7) to b. Step 1 adds nothing.
    p = Problem([
        Buffer("a", 0, 3, 6), Buffer("b", 0, 2, 3), Buffer("c", 1, 3, 6),
        Buffer("d", 0, 1, 6), Buffer("e", 0, 3, 5), Buffer("f", 2, 3, 7),
    ])
    assert breadth_visit_rank(p).tolist() == [0, 1, 0, 1, 0, 0]
    r = solve(p, "greedy-by-breadth")
    assert r.solution.offsets == {"f": 0, "a": 7, "c": 13, "e": 19, "d": 13, "b": 0}
    assert r.peak == lower_bound(p) == 24
    # lowest-fit in size order puts d at 0, and b no longer fits below the peak
    assert offsets(p, "greedy-by-size") == {"f": 0, "a": 7, "c": 13, "e": 19, "d": 0, "b": 24}


def test_telamalloc_heuristic_orders_by_contention_then_alignment_then_size_times_lifetime_squared():
    # Slot 0 holds al+L+a+b = 8 bytes, slot 1 holds L+big = 6: al, L, a, b have contention 8.
    # Ties: al has the larger alignment; then L (1 x 2^2 = 4) before a and b (3 x 1^2 = 3).
    # Row by row: al takes row 0; big (last in priority) is the only block whose floor is still
    # 0; then a and b stack on al, and L, whose floor big has raised to 5, goes on top.
    p = Problem([
        Buffer("a", 0, 1, 3), Buffer("b", 0, 1, 3), Buffer("big", 1, 2, 5),
        Buffer("L", 0, 2, 1), Buffer("al", 0, 1, 1, alignment=2),
    ])
    r = solve(p, "telamalloc-heuristic")
    assert r.solution.offsets == {"al": 0, "big": 0, "a": 1, "b": 4, "L": 7}
    assert r.peak == lower_bound(p) == 8
    assert solve(p, "greedy-by-size").peak == 9


def test_telamalloc_heuristic_breaks_the_last_tie_by_lifetime():
    # c (4 x 1^2) and d (1 x 2^2) tie on contention 5, alignment and size x lifetime^2: longer first.
    p = Problem([Buffer("c", 0, 1, 4), Buffer("d", 0, 2, 1)])
    assert offsets(p, "telamalloc-heuristic") == {"d": 0, "c": 1}


def test_telamalloc_heuristic_fills_rows_bottom_up():
    # Figure 4's rule: A (contention 11, 9 x 1) goes first; X (11, 2 x 2^2) would be next but its
    # floor is now 9, so Y (contention 5) takes the bottom row at step 1 first.
    p = Problem([Buffer("A", 0, 1, 9), Buffer("X", 0, 2, 2), Buffer("Y", 1, 2, 3)])
    assert offsets(p, "telamalloc-heuristic") == {"A": 0, "X": 9, "Y": 0}
    # the skyline is the highest address per slot: nothing drops below a pinned buffer
    p = Problem([Buffer("F", 0, 4, 2, offset=10), Buffer("x", 0, 4, 3)])
    assert offsets(p, "telamalloc-heuristic") == {"F": 10, "x": 12}


# Greedy-by-size: big 0, a 0, b 3, L 6, al 8 (aligned above L): peak 9 over LOAD 8.
FRAGMENTED = Problem([
    Buffer("a", 0, 1, 3), Buffer("b", 0, 1, 3), Buffer("big", 1, 2, 5),
    Buffer("L", 0, 2, 1), Buffer("al", 0, 1, 1, alignment=2),
])


def test_hill_climb_starts_from_greedy_by_size_and_climbs_to_load():
    assert offsets(FRAGMENTED, "hill-climb", iterations=0) == offsets(FRAGMENTED, "greedy-by-size")
    r = solve(FRAGMENTED, "hill-climb")
    assert r.peak == lower_bound(FRAGMENTED) == 8
    assert 1 <= r.stats["attempts"] < 200  # it stops once the peak reaches LOAD


def test_hill_climb_is_reproducible_per_seed():
    rng = np.random.default_rng(11)
    bufs = [Buffer(str(i), int(s), int(s) + int(rng.integers(1, 9)), int(rng.integers(1, 50)))
            for i, s in enumerate(rng.integers(0, 30, 120))]
    p = Problem(bufs)
    for seed in (0, 7):
        first = solve(p, "hill-climb", seed=seed, iterations=50)
        again = solve(Problem(list(bufs)), "hill-climb", seed=seed, iterations=50)
        assert first.solution.offsets == again.solution.offsets
        assert first.stats["attempts"] == again.stats["attempts"]


def test_hill_climb_stops_once_the_peak_fits_the_capacity():
    r = solve(FRAGMENTED.with_capacity(9), "hill-climb")
    assert r.status == "solved" and r.peak == 9 and r.stats["attempts"] == 0


def test_hill_climb_refuses_a_negative_iteration_count():
    with pytest.raises(ValueError, match="iterations"):
        solve(FRAGMENTED, "hill-climb", iterations=-1)


@pytest.mark.parametrize("method", HEURISTICS)
def test_a_passed_deadline_gives_timeout_without_a_placement(method):
    # hill-climb too: the deadline passes before its first (greedy-by-size) placement is complete
    entry = METHODS[method]
    out = entry.function(FRAGMENTED.with_capacity(8), work_clock() - 1, entry.options())
    assert out.status == "timeout" and out.offsets is None
    assert out.reason == f"{method} placed 0 of 5 buffers before the deadline"
    pinned = Problem([Buffer("p", 0, 2, 4, offset=0), Buffer("x", 1, 3, 4)])
    assert entry.function(pinned, work_clock() - 1, entry.options()).reason == (
        f"{method} placed 1 of 2 buffers before the deadline")


def test_product_limbs_are_exact_beyond_int64():
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, MAX_VALUE, 300, dtype=np.int64)
    lifetimes = rng.integers(1, MAX_VALUE, 300, dtype=np.int64)
    low, middle, high = product_limbs(sizes, lifetimes)
    assert [int(a) | (int(b) << 64) | (int(c) << 128) for a, b, c in zip(low, middle, high, strict=True)] == [
        int(s) * int(t) ** 2 for s, t in zip(sizes, lifetimes, strict=True)]


def test_telamalloc_heuristic_compares_size_times_lifetime_squared_exactly():
    # Equal contention (17) and alignment; size x lifetime^2 is 16 x 2**78 for "a" and 1 x 2**80 for
    # "b", so "a" goes first. As int64 products both wrap to 0, and the tie on lifetime would put
    # the longer-lived "b" first.
    p = Problem([Buffer("b", 0, 2**40, 1), Buffer("a", 0, 2**39, 16)])
    assert offsets(p, "telamalloc-heuristic") == {"a": 0, "b": 16}


def test_every_heuristic_is_valid_near_the_value_limits():
    p = NEAR_THE_LIMITS
    for method in HEURISTICS:
        r = solve(p, method)
        assert r.solved and validate(p, r.solution).ok
        assert r.peak >= lower_bound(p)


@pytest.mark.parametrize("name", ["A", "J"])
def test_heuristics_on_challenging_instances_are_valid(name, benchmarks):
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / f"{name}.1048576.csv")
    for method in HEURISTICS:
        r = solve(problem, method)
        assert r.solved and validate(problem, r.solution).ok
        assert r.peak >= lower_bound(problem)


def _skyline_by_scanning(problem):
    """TelaMalloc §3.1's rule as the paper states it, in plain Python: at every step, scan every
    unplaced buffer for the lowest floor (the highest top it overlaps in time, aligned up) and,
    among those, the highest priority. The compiled kernel keeps the floors in a queue instead."""
    from allocator.core.sections import sweep
    from allocator.methods.sorting import lexsort_order

    starts, ends, sizes, aligns, fixed = problem.arrays()
    lifetime = ends - starts
    low, middle, high = product_limbs(sizes, lifetime)
    contention = sweep(problem).span_total()
    order = lexsort_order((-lifetime, ~low, ~middle, ~high, -aligns, -contention), len(sizes)).tolist()
    rank = {buffer: position for position, buffer in enumerate(order)}
    offsets = {i: int(fixed[i]) for i in range(len(sizes)) if fixed[i] >= 0}
    while len(offsets) < len(sizes):
        def floor(j):
            top = max((offsets[i] + sizes[i] for i in offsets if starts[i] < ends[j] and starts[j] < ends[i]),
                      default=0)
            return -(-int(top) // int(aligns[j])) * int(aligns[j])
        best = min((j for j in range(len(sizes)) if j not in offsets), key=lambda j: (floor(j), rank[j]))
        offsets[best] = floor(best)
    return {problem.ids[i]: offset for i, offset in offsets.items()}


@given(problems(max_buffers=25))
def test_telamalloc_heuristic_queue_makes_the_choices_of_the_full_scan(problem):
    assert offsets(problem, "telamalloc-heuristic") == _skyline_by_scanning(problem)


def test_starting_heuristics_stop_once_one_reaches_load(monkeypatch):
    import allocator.core.progress as progress
    from allocator import minimize

    ran = []

    def counting_solve(problem, method, **options):
        ran.append(method)
        return solve(problem, method, **options)

    monkeypatch.setattr(progress, "solve", counting_solve)
    # the first starting heuristic packs three buffers of 4 at LOAD: optimal, nothing more to run
    p = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4), Buffer("c", 2, 4, 4)])
    r = minimize(p, "minimalloc", timeout=60)
    assert r.optimal and r.peak == lower_bound(p) == 8
    assert ran == [starting_heuristics()[0]]

"""Values near 2**62: the canonical search's int64 arithmetic never wraps around.

``allocator.core.problem`` bounds every value and the stacked sum of sizes plus alignments by
MAX_VALUE = 2**62 - 1; within that range the search must give the same verdicts as a brute
force over placement orders in exact Python integers, and ``minimize`` the same optimum.
"""

from itertools import permutations

from hypothesis import given, reject, settings
from hypothesis import strategies as st

from allocator import Buffer, Problem, lower_bound, minimize, solve, validate
from allocator.methods.minimalloc import MiniMallocOptions, PreparedProblem

MAX_VALUE = 2**62 - 1


def _floor_peak(buffers: list[Buffer], order: tuple[int, ...]) -> int:
    """Peak of placing ``buffers`` in ``order``, each at the lowest aligned offset above the
    placed buffers it meets in time. Every placement can be pushed down into such a one (sort
    it by offset), so the least peak over all orders is the optimum."""
    tops: dict[int, int] = {}
    for i in order:
        b = buffers[i]
        floor = max((tops[j] for j in tops if b.overlaps_in_time(buffers[j])), default=0)
        offset = -(-floor // b.alignment) * b.alignment
        tops[i] = offset + b.size
    return max(tops.values(), default=0)


def brute_force_optimum(buffers: list[Buffer]) -> int:
    return min(_floor_peak(buffers, order) for order in permutations(range(len(buffers))))


@st.composite
def huge_problems(draw):
    n = draw(st.integers(2, 4))
    buffers = []
    for i in range(n):
        start = draw(st.integers(0, MAX_VALUE - 1))
        end = draw(st.integers(start + 1, MAX_VALUE))
        size = draw(st.integers(10**17, MAX_VALUE // n - 2**56))
        alignment = 2 ** draw(st.integers(0, 55))
        buffers.append(Buffer(f"b{i}", start, end, size, alignment))
    capacity = draw(st.integers(max(b.size for b in buffers), MAX_VALUE))
    try:
        return Problem(buffers, capacity)
    except ValueError:  # beyond the stacked-sum limit of allocator.core.problem
        reject()


@settings(max_examples=40)
@given(huge_problems())
def test_verdict_near_2_62_matches_brute_force(problem):
    buffers = list(problem.buffers)
    fits = brute_force_optimum(buffers) <= problem.capacity
    result = solve(problem, "minimalloc", options=MiniMallocOptions(workers=1, node_limit=100_000))
    assert result.status == ("solved" if fits else "infeasible"), result.reason
    if fits:
        assert validate(problem, result.solution).ok


@settings(max_examples=15)
@given(huge_problems())
def test_minimize_near_2_62_reaches_the_brute_force_optimum(problem):
    free = problem.with_capacity(None)
    result = minimize(free, timeout=600, node_limit=100_000, options=MiniMallocOptions(workers=1))
    assert validate(free, result.solution).ok
    assert result.optimal and result.peak == brute_force_optimum(list(free.buffers))


def test_three_buffers_of_one_and_a_half_exabytes_fit_under_4_6e18():
    # the case, inside the limits: 3 x 1.5e18 B live together, capacity 4.6e18
    size = 1_500_000_000_000_000_000
    buffers = [Buffer(f"x{i}", i, 2**61 + i, size, 2**20) for i in range(3)]
    problem = Problem(buffers, capacity=4_600_000_000_000_000_000)
    assert lower_bound(problem) == 3 * size
    result = solve(problem, "minimalloc", options=MiniMallocOptions(workers=1))
    assert result.solved and validate(problem, result.solution).ok
    tight = problem.with_capacity(3 * size)  # the alignment padding no longer fits
    assert brute_force_optimum(list(problem.buffers)) > 3 * size
    assert solve(tight, "minimalloc", options=MiniMallocOptions(workers=1)).status == "infeasible"


def test_area_order_survives_products_beyond_int64():
    # width x size = 2**70 wraps to 0 in int64; the order must still put that buffer first
    huge = Buffer("huge", 0, 2**40, 2**30)
    small = Buffer("small", 0, 2, 2**30)
    rank = PreparedProblem(Problem([small, huge])).rank("A")
    assert rank.tolist() == [1, 0]

"""``allocator.methods.telamalloc_kernel``, the compiled TelaMalloc search: its switches and its arithmetic.

The kernel takes one typed record of switches, built from the options by name; with integers
near 2**62 the search stays exact (no product or sum wraps around in int64), checked against a
brute force in Python integers.
"""

import itertools
from dataclasses import fields, replace
from typing import get_type_hints

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from allocator import Buffer, Problem, lower_bound, solve, validate
from allocator.core.problem import MAX_VALUE, Solution
from allocator.methods.telamalloc import (
    SELECTIONS,
    STRATEGIES,
    Switches,
    TelaMallocOptions,
    area_ranks,
    kernel_switches,
    telamalloc_search,
)
from tests.allocator.methods.test_minimalloc import small_problems

# --------------------------------------------------------------------------------------------------
# The compiled search's inputs: one typed record of switches, built from the options by name.
#
# The kernel used to take 27 positional parameters, so two swapped boolean switches would have
# passed unnoticed. These tests pin that every option reaches the field of its own name, and
# only that one.


#: the MiniMalloc paper's example (Fig. 1): fits 12 bytes exactly
PAPER_EXAMPLE = Problem([Buffer("b1", 0, 3, 4), Buffer("b2", 3, 9, 4), Buffer("b3", 0, 9, 4),
                         Buffer("b4", 9, 21, 4), Buffer("b5", 0, 21, 4)], capacity=12)

#: options whose value is passed to the switch of the same name unchanged
SAME_NAME = ("max_candidates", "lowest_position", "propagate", "energy", "backjump", "prepend", "stuck_limit",
             "explain_depth", "step_limit")


def test_every_option_reaches_the_switch_of_its_name():
    options = TelaMallocOptions(selection="area", max_candidates=5, lowest_position=False, propagate=True,
                                energy=True, compulsory=True, backjump=False, prepend=True, stuck_limit=7,
                                explain_depth=3, step_limit=11)
    switches = kernel_switches(options, deadline=12.5)
    for name in SAME_NAME:
        assert getattr(switches, name) == getattr(options, name), name
    assert switches.selection == SELECTIONS["area"]
    assert switches.compulsory is True
    assert switches.deadline == 12.5
    assert kernel_switches(options, step_limit=3).step_limit == 3
    assert kernel_switches(options).deadline < 0  # no time limit


@pytest.mark.parametrize("name", ["lowest_position", "propagate", "compulsory", "energy", "backjump", "prepend"])
def test_each_boolean_option_flips_its_own_switch_only(name):
    base = TelaMallocOptions()
    flipped = replace(base, **{name: not getattr(base, name)})
    before, after = kernel_switches(base), kernel_switches(flipped)
    changed = [field for field in Switches._fields if getattr(before, field) != getattr(after, field)]
    # compulsory parts are found by propagation: without it there are none
    assert changed == (["propagate", "compulsory"] if name == "propagate" else [name])


def test_compulsory_parts_need_propagation():
    assert kernel_switches(TelaMallocOptions(propagate=False, compulsory=True)).compulsory is False


def test_switch_types_are_fixed_so_one_compiled_signature_serves_every_call():
    """numba compiles the kernel once per argument types: an int where a bool was (or a numpy
    integer) would compile it again."""
    expected = get_type_hints(Switches)
    for options in (TelaMallocOptions(), TelaMallocOptions.strategy("lowest-position"),
                    TelaMallocOptions(stuck_limit=0, energy=True)):
        switches = kernel_switches(options, step_limit=5, deadline=1.0)
        for name, value in zip(Switches._fields, switches, strict=True):
            assert type(value) is expected[name], name


def test_every_option_field_is_used_by_the_search_or_the_descent():
    """A new option must reach the kernel (or be one of the Python-side ones)."""
    python_side = {"phases", "phase_step", "probe_steps", "selection", "compulsory"}
    assert {f.name for f in fields(TelaMallocOptions)} - python_side == set(SAME_NAME)


@pytest.mark.parametrize("strategy", ["telamalloc", "max-size", "max-area", "max-lifetime", "lowest-position"])
def test_the_paper_example_fits_twelve_bytes_with_every_strategy(strategy):
    result = solve(PAPER_EXAMPLE, "telamalloc", options=TelaMallocOptions.strategy(strategy))
    assert result.status == "solved" and result.peak == 12


def test_a_deadline_that_does_not_expire_changes_nothing():
    """The deadline is only read, never used to steer: the same steps with or without it."""
    problem = PAPER_EXAMPLE.with_capacity(12)
    without = telamalloc_search(problem, 12)
    far = telamalloc_search(problem, 12, deadline=1e18)
    assert (without.status, without.stats) == (far.status, far.stats)
    assert without.offsets is not None and far.offsets is not None
    assert without.offsets.tolist() == far.offsets.tolist()


# --------------------------------------------------------------------------------------------------
# TelaMalloc with integers near 2**62.
#
# ``allocator.core.problem`` admits values up to 2**62 - 1 with the sizes plus alignment padding of
# all buffers summing to at most that. The search must then be exact: products such as size x
# lifetime (up to 2**124) must not wrap around in int64, and no position plus size may pass
# 2**63. Verdicts are checked against a brute force in Python integers.


def test_area_ranks_order_areas_beyond_int64_exactly():
    sizes = np.array([2**61, 2**60, 3, 2**61, 1], np.int64)
    lifetimes = np.array([8, 9, 2**62, 8, 1], np.int64)
    ranks = area_ranks(sizes, lifetimes)
    exact = [int(s) * int(t) for s, t in zip(sizes.tolist(), lifetimes.tolist(), strict=True)]
    for i, j in itertools.product(range(5), repeat=2):
        assert (ranks[i] < ranks[j]) == (exact[i] < exact[j])
        assert (ranks[i] == ranks[j]) == (exact[i] == exact[j])


@given(st.lists(st.tuples(st.integers(1, MAX_VALUE), st.integers(1, MAX_VALUE)), min_size=1, max_size=8))
def test_area_ranks_agree_with_python_integers(pairs):
    sizes = np.array([s for s, _ in pairs], np.int64)
    lifetimes = np.array([t for _, t in pairs], np.int64)
    ranks = area_ranks(sizes, lifetimes).tolist()
    exact = [s * t for s, t in pairs]
    for i, j in itertools.product(range(len(pairs)), repeat=2):
        assert (ranks[i] < ranks[j]) == (exact[i] < exact[j])


def test_largest_area_goes_first_even_when_size_times_lifetime_passes_2_63():
    # "long" has area 2**99 (0 when wrapped in int64), "wide" 2**60: max-area must place "long" first,
    # at the bottom of the memory
    problem = Problem([Buffer("wide", 0, 1, 2**60), Buffer("long", 0, 2**40, 2**59)], capacity=2**61)
    result = solve(problem, "telamalloc", options=TelaMallocOptions.strategy("max-area"))
    assert result.status == "solved"
    assert result.solution.offsets["long"] == 0 and result.solution.offsets["wide"] == 2**59


def lowest_peak(problem: Problem) -> int:
    """The optimal peak by brute force, in Python integers (no overflow possible).

    For every order, first-fit (each buffer at the lowest aligned offset clear of the earlier
    ones it meets in time). Complete: in an optimal placement sorted by offset, first-fit puts
    each buffer at or below its offset there (by induction), so some order reaches the optimum.
    """
    best = None
    buffers = problem.buffers
    for order in itertools.permutations(range(len(buffers))):
        placed: list[tuple[int, int, int, int]] = []  # start, end, low, high
        for i in order:
            b = buffers[i]
            if b.offset is not None:
                position = b.offset
            else:
                position = 0
                moved = True
                while moved:
                    moved = False
                    for start, end, low, high in placed:
                        if start < b.end and b.start < end and low < position + b.size and position < high:
                            position = -(-high // b.alignment) * b.alignment
                            moved = True
            placed.append((b.start, b.end, position, position + b.size))
        peak = max(high for _, _, _, high in placed)
        best = peak if best is None else min(best, peak)
    return best


def test_three_buffers_of_1_5e18_bytes_fit_4_6e18_and_4_5e18():
    size = 15 * 10**17
    buffers = [Buffer("a", 0, 10, size), Buffer("b", 0, 4, size), Buffer("c", 3, 10, size)]  # all live at 3
    assert lowest_peak(Problem(buffers)) == 3 * size
    for capacity in (46 * 10**17, 3 * size):
        for strategy in STRATEGIES:
            result = solve(Problem(buffers, capacity), "telamalloc", options=TelaMallocOptions.strategy(strategy))
            assert result.status == "solved", (capacity, strategy, result.reason)
            assert validate(Problem(buffers, capacity), result.solution).ok and result.peak == 3 * size


def test_alignment_rounding_near_the_capacity():
    """Large alignments leave gaps LOAD does not see: a brute force finds the optimum; the search
    places the buffers there and proves one byte less infeasible by itself (LOAD is lower)."""
    buffers = [Buffer("a", 0, 3, 2**60 + 1, alignment=2**60), Buffer("b", 1, 4, 2**60 + 1, alignment=2**59),
               Buffer("c", 2, 5, 2**58, alignment=2**58)]
    optimum = lowest_peak(Problem(buffers))
    assert lower_bound(Problem(buffers)) < optimum - 1
    result = solve(Problem(buffers, optimum), "telamalloc")
    assert result.status == "solved" and validate(Problem(buffers, optimum), result.solution).ok
    assert solve(Problem(buffers, optimum - 1), "telamalloc").status == "infeasible"


@st.composite
def huge_problems(draw):
    """Two to four buffers of 2**57..2**59 bytes, some with large alignments, capacity near LOAD."""
    n = draw(st.integers(2, 4))
    buffers = []
    for i in range(n):
        start = draw(st.integers(0, 4))
        alignment = draw(st.sampled_from([1, 1, 2**40, 3 * 10**15, 2**57]))
        size = draw(st.integers(2**57, 2**59))
        buffers.append(Buffer(f"b{i}", start, start + draw(st.integers(1, 4)), size, alignment))
    load = lower_bound(Problem(buffers))
    return Problem(buffers, min(load + draw(st.integers(0, 2**58)), MAX_VALUE))


@given(huge_problems())
def test_verdicts_near_2_62_agree_with_brute_force(problem):
    optimum = lowest_peak(problem.with_capacity(None))
    for strategy in STRATEGIES:
        result = solve(problem, "telamalloc", options=TelaMallocOptions.strategy(strategy))
        if result.status == "solved":  # solve validated it against the capacity
            assert result.peak >= optimum
        elif result.status == "infeasible":
            assert optimum > problem.capacity
        else:
            assert result.status == "failed"


def scaled(problem: Problem, size_factor: int, time_factor: int) -> Problem:
    return Problem([Buffer(b.id, b.start * time_factor, b.end * time_factor, b.size * size_factor,
                           b.alignment * size_factor, None if b.offset is None else b.offset * size_factor)
                    for b in problem.buffers], problem.capacity * size_factor)


@given(small_problems())
def test_the_search_is_the_same_with_sizes_and_times_scaled_near_2_62(problem):
    """Every comparison of the search is between sums of sizes, offsets and alignments, or between
    times: scaling sizes and times by powers of two changes no decision. Scaled so that the
    capacity or the sum of sizes plus alignments nears 2**62, areas reach 2**120."""
    height = problem.capacity + sum(b.size + b.alignment for b in problem.buffers)
    size_factor = 2 ** ((MAX_VALUE // height).bit_length() - 1)
    time_factor = 2 ** ((MAX_VALUE // max((b.end for b in problem.buffers), default=1)).bit_length() - 1)
    big = scaled(problem, size_factor, time_factor)
    for strategy in (*STRATEGIES, "energy"):
        options = TelaMallocOptions(energy=True) if strategy == "energy" else TelaMallocOptions.strategy(strategy)
        small = telamalloc_search(problem, problem.capacity, options)
        large = telamalloc_search(big, big.capacity, options)
        assert (small.status, small.stats) == (large.status, large.stats), strategy
        if small.status == "solved":
            assert (small.offsets * size_factor).tolist() == large.offsets.tolist()
            placement = Solution({b.id: int(o) for b, o in zip(big.buffers, large.offsets, strict=True)})
            assert validate(big, placement).ok

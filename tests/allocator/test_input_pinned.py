"""Pinned buffers that overlap each other in time and address are bad input, refused before any method runs."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from allocator import Buffer, CSVFormatError, InvalidProblemError, Problem, read_csv, solve
from allocator.core.problem import first_overlap


def test_clashing_pins_are_refused_naming_both_ids_and_their_ranges():
    buffers = [Buffer("x", 0, 9, 1), Buffer("a", 0, 2, 4, offset=0), Buffer("b", 1, 3, 4, offset=2)]
    with pytest.raises(InvalidProblemError) as info:
        Problem(buffers)
    assert str(info.value) == ("pinned buffers 'a' [0, 4) live [0, 2) and 'b' [2, 6) live [1, 3) overlap in both "
                               "time and address: no placement can exist")
    assert info.value.indices == (1, 2)
    with pytest.raises(InvalidProblemError, match="pinned buffers 'a' .* and 'b'"):
        Problem.from_arrays(["x", "a", "b"], [0, 0, 1], [9, 2, 3], [1, 4, 4], fixed=[-1, 0, 2])


def test_pins_that_only_touch_are_fine():
    touching = [Buffer("a", 0, 2, 4, offset=0), Buffer("b", 2, 4, 4, offset=0),  # one after the other in time
                Buffer("c", 0, 4, 4, offset=4)]  # right above both in address
    problem = Problem(touching, capacity=8)
    result = solve(problem, "greedy-by-size")
    assert result.solved and result.solution.offsets == {"a": 0, "b": 0, "c": 4}


def test_a_csv_clash_names_the_lines(tmp_path):
    path = tmp_path / "pins.csv"
    path.write_text("id,lower,upper,size,offset\nfree,0,5,2,\np,0,4,8,16\nq,3,6,8,20\n")
    with pytest.raises(CSVFormatError) as info:
        read_csv(path)
    assert str(info.value) == (f"{path}:4: pinned buffers 'p' [16, 24) live [0, 4) and 'q' [20, 28) live [3, 6) "
                               "overlap in both time and address: no placement can exist (see also line 3)")


def test_many_disjoint_pins_are_accepted():
    # a fully pinned placement read back (what write_csv of a solution gives): 3,000 pins, none clashing
    n = 3000
    problem = Problem.from_arrays([f"b{i}" for i in range(n)], np.arange(n), np.arange(n) + 10, np.full(n, 8),
                                  fixed=8 * (np.arange(n) % 10))
    assert len(problem) == n
    with pytest.raises(InvalidProblemError, match="'b2999'"):  # one more in a slot still in use: refused
        Problem.from_arrays([f"b{i}" for i in range(n + 1)], np.r_[np.arange(n), n - 1], np.r_[np.arange(n) + 10, n],
                            np.full(n + 1, 8), fixed=np.r_[8 * (np.arange(n) % 10), 8 * ((n - 1) % 10)])


rectangles = st.lists(st.tuples(st.integers(0, 20), st.integers(1, 5), st.integers(0, 20), st.integers(1, 5)),
                      max_size=25)


@given(rectangles)
def test_the_sweep_finds_a_clash_exactly_when_a_pairwise_check_does(items):
    # each item: (start, lifetime, low address, height)
    starts = np.array([s for s, _, _, _ in items], np.int64)
    ends = np.array([s + d for s, d, _, _ in items], np.int64)
    lows = np.array([lo for _, _, lo, _ in items], np.int64)
    highs = np.array([lo + h for _, _, lo, h in items], np.int64)
    clashing = {(i, j) for i in range(len(items)) for j in range(i + 1, len(items))
                if starts[i] < ends[j] and starts[j] < ends[i] and lows[i] < highs[j] and lows[j] < highs[i]}
    i, j = first_overlap(starts, ends, lows, highs)
    if not clashing:
        assert (i, j) == (-1, -1)
    else:
        assert (min(i, j), max(i, j)) in clashing


def test_the_sweep_is_exact_on_thousands_of_records():
    # Enough records for several levels of the sweep's bitmap (64 ranks per word, 64 words per summary bit).
    rng = np.random.default_rng(7)
    n = 20_000
    starts = rng.integers(0, 5_000, n)
    ends = starts + rng.integers(1, 60, n)
    slot = np.empty(n, np.int64)  # interval colouring: records live together get different slots
    free: list[int] = []
    busy: list[tuple[int, int]] = []
    for i in np.argsort(starts, kind="stable").tolist():
        busy.sort()
        while busy and busy[0][0] <= starts[i]:
            free.append(busy.pop(0)[1])
        slot[i] = free.pop() if free else len(free) + len(busy)
        busy.append((int(ends[i]), int(slot[i])))
    lows = 8 * slot
    assert first_overlap(starts, ends, lows, lows + 8) == (-1, -1)  # touching slots do not overlap
    for k in rng.choice(n, 20, replace=False).tolist():
        live = np.flatnonzero((starts < ends[k]) & (starts[k] < ends) & (np.arange(n) != k))
        if not len(live):
            continue
        moved = lows.copy()
        moved[k] = lows[rng.choice(live)] + 3  # now overlaps that record (and maybe others) in both dimensions
        i, j = first_overlap(starts, ends, moved, moved + 8)
        assert k in (i, j) and i != j
        other = j if i == k else i
        assert starts[other] < ends[k] and starts[k] < ends[other] and abs(moved[other] - moved[k]) < 8

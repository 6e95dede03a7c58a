"""studies/iopddl_like.py, the stand-in for issue 14's 62,185-buffer trace: built as its docstring
says (parts back to back in time, sizes kept, seeded), so a starting heuristic packs it at LOAD."""

from collections import Counter

import numpy as np

from allocator import lower_bound, minimize, solve


def test_the_stand_in_lays_copies_of_g1_back_to_back_and_is_packed_at_load(benchmarks, study):
    stand_in = study("iopddl_like")
    folder = benchmarks / "idealloc" / "iopddl"
    g_1 = stand_in.read_trace(folder / "G_1.csv")
    # 2,000 buffers: below S_1's size, so two whole G_1 copies and 368 buffers drawn from a third
    rows = stand_in.iopddl_like(2_000, seed=5, folder=folder)
    assert rows.shape == (2_000, 3)
    assert np.array_equal(rows, stand_in.iopddl_like(2_000, seed=5, folder=folder))  # seeded
    assert not np.array_equal(rows, stand_in.iopddl_like(2_000, seed=6, folder=folder))
    span = int(g_1[:, 1].max() - g_1[:, 0].min())
    whole = rows[rows[:, 1] <= 2 * span]  # the two whole copies, shifted by 0 and by G_1's span
    assert len(whole) == 2 * len(g_1)
    assert sorted(map(tuple, whole.tolist())) == sorted(
        map(tuple, np.concatenate([g_1, g_1 + [span, span, 0]]).tolist()))
    third = Counter(map(tuple, rows[rows[:, 1] > 2 * span].tolist()))  # the rest: drawn from a third copy
    copy = Counter(map(tuple, (g_1 + [2 * span, 2 * span, 0]).tolist()))
    assert third.total() == 368 and not third - copy  # each buffer of the copy drawn at most once
    problem = stand_in.as_problem(rows)
    load = lower_bound(problem)
    assert load == lower_bound(stand_in.as_problem(g_1))  # the copies do not overlap in time: LOAD is G_1's
    assert solve(problem, "load-best-fit").peak == load
    result = minimize(problem, "minimalloc", timeout=60, node_limit=1)
    assert result.optimal and result.stats["nodes"] == 0  # a starting heuristic proved it, no search


def test_mirroring_reverses_lifetimes_in_time(study):
    stand_in = study("iopddl_like")
    rows = np.array([[0, 3, 7], [2, 5, 1]])
    assert stand_in.mirrored(rows).tolist() == [[2, 5, 7], [0, 3, 1]]

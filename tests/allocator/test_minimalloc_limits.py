"""Time limits are limits: the canonical search stops at its deadline however slow its nodes are,
never starts a run after it, and lets Ctrl-C through. No test here reads the wall clock: a
fake clock that advances one second per reading makes every deadline a count of readings."""

import os
import signal
import threading
import time

import numpy as np
import pytest

from allocator import Buffer, Problem, lower_bound, read_csv, solve
from allocator.methods import minimalloc_kernel as kernel
from allocator.methods.minimalloc import MiniMallocOptions, PreparedProblem, canonical_search, kernel_switches


class FakeClock:
    """``time.perf_counter`` replaced by a counter: each reading advances one second."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.readings = 0

    def __call__(self) -> float:
        self.readings += 1
        self.now += 1.0
        return self.now


def _stack(n: int) -> Problem:
    """``n`` buffers all live at once: every node of the search scans all ``n`` of them."""
    problem = Problem([Buffer(f"b{i}", 0, 1, 1 + i % 7) for i in range(n)])
    return problem.with_capacity(lower_bound(problem))


def test_a_deadline_already_past_searches_nothing():
    problem = _stack(50)
    outcome = canonical_search(problem, problem.capacity, MiniMallocOptions(workers=1),
                               deadline=time.perf_counter() - 1.0)
    assert outcome.status == "timeout" and outcome.nodes == 0 and outcome.runs == 0


def test_slow_nodes_read_the_clock_by_work_not_by_node_count(monkeypatch):
    # Each node here visits 20,000 buffers. Reading the clock every 1,024 nodes (as the search
    # once did) would search 20 million buffers past the deadline; reading it every
    # CLOCK_WORK buffers stops within a few dozen nodes of it.
    problem = _stack(20_000)
    clock = FakeClock()
    monkeypatch.setattr(time, "perf_counter", clock)
    outcome = canonical_search(problem, problem.capacity, MiniMallocOptions(workers=1, portfolio=False),
                               deadline=clock.now + 12)
    assert outcome.status == "timeout"
    assert 0 < outcome.nodes <= 12 * kernel.CLOCK_WORK // 20_000 + 2


def test_a_run_that_starts_after_the_deadline_searches_nothing():
    # on threads a run can start late (its turn came after the deadline): it must not search
    problem = _stack(50)
    data = PreparedProblem(problem)
    preorder, _ = data.preorder("TWA", twins=True)
    result = kernel.run_search(data.instance(False), preorder, kernel_switches(MiniMallocOptions(), 50),
                               capacity=problem.capacity, node_limit=10**9, deadline=time.perf_counter() - 1.0,
                               stop=np.zeros(1, np.int64))
    assert result.status == kernel.TIME_LIMIT and result.nodes == 0


def test_the_timeout_reason_says_the_time_ran_out(monkeypatch):
    problem = _stack(20_000)
    clock = FakeClock()
    monkeypatch.setattr(time, "perf_counter", clock)
    result = solve(problem, "minimalloc", timeout=30, options=MiniMallocOptions(workers=1))
    assert result.status == "timeout" and result.solution is None
    assert result.reason.startswith("ran out of time after")


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_stops_the_search_as_a_keyboard_interrupt(benchmarks, workers):
    # D at its LOAD is beyond the search (no deadline, no node limit): only Ctrl-C ends it
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / "D.1048576.csv")
    problem = problem.with_capacity(lower_bound(problem))
    # Python's own handler: a library loaded earlier (OR-Tools' CP-SAT) may have replaced it
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            canonical_search(problem, problem.capacity, MiniMallocOptions(workers=workers))
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)


def test_capacity_beyond_the_kernels_range_is_refused():
    problem = Problem([Buffer("a", 0, 1, 8)])
    with pytest.raises(ValueError, match="MAX_VALUE"):
        canonical_search(problem, 2**62, MiniMallocOptions(workers=1))

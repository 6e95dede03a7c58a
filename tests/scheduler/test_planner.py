"""``Planner``: the spill loop's repeated plans share their set-up, and a plan honours a deadline."""

from __future__ import annotations

import random

import pytest

from allocator.core.kernel_clock import work_clock
from frontend.synthetic import chain, random_dag
from scheduler.planner import Planner, plan_residencies
from scheduler.residents import DEADLINE_STRIDE, DeadlineReached


def _plan_key(plan):
    return ([(r.id, r.start, r.end, r.size) for r in plan.residencies],
            [(t.kind, t.tensor, t.step, t.nbytes) for t in plan.transfers], plan.stats)


@pytest.mark.parametrize("seed", range(6))
def test_a_planner_plans_what_plan_residencies_plans(seed):
    rng = random.Random(seed)
    graph = random_dag(40, seed=seed)
    planner = Planner(graph, "program", rng.choice(["belady", "greedy"]), None, 4)
    for _ in range(4):  # the same planner, many budgets: its shared tables are never changed by a plan
        caps = [rng.randrange(1, 20_000) for _ in planner.names]
        expected = plan_residencies(graph, caps, "program", planner.replacement, None, 4)
        assert _plan_key(planner.plan(caps)) == _plan_key(expected)


def test_a_plan_past_its_deadline_raises_and_one_without_completes():
    graph = chain(3 * DEADLINE_STRIDE, size=64)
    planner = Planner(graph)
    caps = [1 << 20] * len(planner.names)
    with pytest.raises(DeadlineReached, match="deadline at step 0 of 768"):
        planner.plan(caps, deadline=work_clock() - 1)
    assert len(planner.plan(caps, deadline=work_clock() + 3600).residencies) > 0

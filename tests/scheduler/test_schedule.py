"""The schedule's types: typed statistics rendered as report.json always showed them, who placed
the offsets, the allocation problem with or without a capacity."""

from __future__ import annotations

import dataclasses
import json

import pytest

import scheduler
from frontend.synthetic import chain, random_dag
from scheduler.schedule import NOBODY, PlacedBy, Residency, Schedule, ScheduleStats


def test_every_field_is_typed_yes_no_as_bools_counts_as_ints():
    hints = {f.name: f.type for f in dataclasses.fields(ScheduleStats)}
    for name in ("clock_stopped", "fitted", "online_kept", "order_status_optimal", "warm_start"):
        assert hints[name] == "bool | None", name
    for name in ("min_capacity", "evictions", "compactions", "rounds", "objective", "bound", "variables",
                 "constraints", "parts", "peak_live_bytes", "peak_address", "order_peak"):
        assert hints[name] == "int | None", name


@pytest.mark.parametrize(("method", "allocator", "keys"), [
    ("program", None, ["min_capacity", "rounds", "fitted", "loop_noncompulsory_bytes", "online_noncompulsory_bytes",
                       "online_kept", "clock_stopped", "loop_seconds", "evictions", "peak_live_bytes", "peak_address"]),
    ("program", "online-first-fit", ["min_capacity", "evictions", "compactions", "peak_live_bytes", "peak_address",
                                     "clock_stopped"]),
    ("min-peak", "online-first-fit", ["min_capacity", "evictions", "compactions", "peak_live_bytes", "peak_address",
                                      "clock_stopped", "order_peak", "order_status_optimal"]),
    ("cosma", None, ["min_capacity", "objective", "bound", "gap", "solve_seconds", "peak_live_bytes",
                     "peak_address", "variables", "constraints", "clock_stopped"]),
    ("cosma-dnc", None, ["min_capacity", "objective", "bound", "gap", "solve_seconds", "peak_live_bytes",
                         "peak_address", "parts", "clock_stopped"]),
])
def test_the_report_shows_each_schedulers_statistics_in_its_order_and_types(method, allocator, keys):
    graph = random_dag(12, seed=1, max_size=2048)
    capacity = scheduler.min_capacity(graph)[0]
    extra = {} if allocator is None else {"allocator": allocator}
    shown = scheduler.make_schedule(graph, capacity, method, **extra).stats.as_report()
    assert list(shown) == keys
    floats = {"fitted", "online_kept", "clock_stopped", "loop_seconds", "order_status_optimal", "gap",
              "solve_seconds", "variables", "constraints", "parts", "warm_start"}
    for key, value in shown.items():
        assert type(value) is (float if key in floats else int), (key, value)
    json.dumps(shown)


def test_a_loop_without_a_fit_shows_minus_one():
    stats = ScheduleStats(min_capacity=1, rounds=1, fitted=False, online_noncompulsory_bytes=3, online_kept=True,
                          clock_stopped=False, loop_seconds=0.5, evictions=2, peak_live_bytes=4, peak_address=4)
    assert stats.as_report()["loop_noncompulsory_bytes"] == -1 and stats.as_report()["fitted"] == 0.0


def test_placed_by_names_who_chose_the_offsets():
    graph = chain(4, size=10)
    assert scheduler.make_schedule(graph, 30, "program", allocator="best-fit").placed_by == PlacedBy("allocator",
                                                                                                      "best-fit")
    assert scheduler.make_schedule(graph, 30, allocator="online-first-fit").placed_by.placer == "online arena"
    assert scheduler.make_schedule(graph, 30, "cosma").placed_by.name == "cosma (CP-SAT addresses)"
    plan = scheduler.planner.plan_residencies(graph, [30] * 4)
    assert plan.offsets is None and plan.placed_by == NOBODY


def test_the_problem_has_the_schedules_capacity_or_the_one_asked():
    s = Schedule(["a"], [Residency("x", "x", 0, 1, 8)], [], 16)
    assert s.problem().capacity == 16
    assert s.problem_under(None).capacity is None and s.problem_under(64).capacity == 64

"""The scheduler registry: every scheduler's function and capabilities, each rule of the options
checked once with one message, whoever asks (``make_schedule``, ``RunOptions``, ``accelsim size``)."""

from __future__ import annotations

import inspect

import pytest

import scheduler
from accelsim.pipeline import RunOptions
from accelsim.sizing import check_pairs
from frontend.synthetic import chain, random_dag
from scheduler.options import ScheduleOptions
from scheduler.registry import (
    BUILT_IN,
    ENTRIES,
    ONLINE_ARENA,
    SCHEDULERS,
    Capabilities,
    SchedulerEntry,
    check_options,
    scheduler_entry,
)
from scheduler.schedule import Schedule, ScheduleError


def test_the_table_lists_every_scheduler_once_in_order():
    assert SCHEDULERS == tuple(entry.name for entry in BUILT_IN) == scheduler.SCHEDULERS
    assert SCHEDULERS[:5] == ("program", "min-peak", "cosma", "cosma-fs", "cosma-dnc")
    assert list(ENTRIES) == list(SCHEDULERS) and len(set(SCHEDULERS)) == len(SCHEDULERS)


@pytest.mark.parametrize("name", SCHEDULERS)
def test_every_function_takes_a_graph_and_one_options_record(name):
    entry = scheduler_entry(name)
    function = entry.resolve()
    assert list(inspect.signature(function).parameters) == ["graph", "options"]
    result = function(chain(3, size=10), ScheduleOptions(capacity=30))
    assert isinstance(result, Schedule) and result.noncompulsory_bytes == 0
    # what it declares matches what it does
    assert result.offsets is not None
    assert (result.placed_by.placer == "own addresses") == entry.capabilities.own_offsets


def test_a_capability_decides_every_rule_never_a_name():
    # a made-up scheduler that takes only an order: the rules follow its capabilities
    made_up = SchedulerEntry("reverse", "no.module:function", "made up", Capabilities(order=True, host_operators=True))
    ENTRIES["reverse"] = made_up
    try:
        check_options("reverse", order=["a", "b"])
        with pytest.raises(ScheduleError, match="^replacement='greedy' applies to the program.* min-peak.* "
                                                "schedulers, not to scheduler='reverse'$"):
            check_options("reverse", replacement="greedy")
        with pytest.raises(ScheduleError, match="^scheduler='reverse' takes no allocator; allocator='best-fit' "
                                                "decides the spills of the program.* min-peak.* schedulers$"):
            check_options("reverse", allocator="best-fit")
        with pytest.raises(ScheduleError, match="use 'program' or 'cosma-fs' with the program order.* or 'reverse'$"):
            scheduler.registry.check_graph("min-peak", host_graph())
    finally:
        del ENTRIES["reverse"]


def host_graph():
    graph = chain(3, size=10)
    graph.graph["host_ops"] = [{"name": "nms"}]
    return graph


def _message(call) -> str:
    with pytest.raises(ValueError) as info:
        call()
    return str(info.value)


def test_one_rule_one_message_whoever_asks():
    graph = chain(3, size=10)
    # an allocator deciding the spills of a scheduler that places its own tensors
    expected = _message(lambda: scheduler.make_schedule(graph, 30, "cosma", allocator=ONLINE_ARENA))
    assert expected.startswith("scheduler='cosma' places its tensors itself; allocator='online-first-fit' decides "
                               "the spills of the program")
    assert _message(lambda: RunOptions(scheduler="cosma", allocator=ONLINE_ARENA).check()) == expected
    assert _message(lambda: check_pairs([("cosma", ONLINE_ARENA)])) == expected
    # a timeout for the online arena
    expected = "timeout=1.0 limits an allocator; the 'online-first-fit' arena has no time limit"
    assert _message(lambda: RunOptions(allocator=ONLINE_ARENA, timeout=1.0).check()) == expected
    assert _message(lambda: scheduler.make_schedule(graph, 30, allocator=ONLINE_ARENA, allocator_timeout=1.0)) == \
        expected.replace("timeout=", "allocator_timeout=")
    # an operator order for a scheduler that chooses its own
    expected = _message(lambda: RunOptions(scheduler="min-peak", order=["a"]).check())
    assert expected.startswith("order='a list of operators' is the 'program' scheduler's operator order; "
                               "scheduler='min-peak' chooses its own (cosma-fs")
    assert _message(lambda: scheduler.make_schedule(graph, 30, "min-peak", order=list(graph.nodes))) == expected
    # an unknown scheduler
    expected = f"unknown scheduler 'fast'; valid: {', '.join(SCHEDULERS)}"
    for call in (lambda: scheduler.make_schedule(graph, 30, "fast"), lambda: RunOptions(scheduler="fast").check(),
                 lambda: check_pairs([("fast", "auto")])):
        assert _message(call) == expected


def test_the_flow_re_places_a_schedule_with_a_method_but_not_with_the_online_arena():
    check_options("cosma", allocator="best-fit", allocator_timeout=5.0, re_place=True)
    with pytest.raises(ScheduleError, match="timeout=5.0 limits a re-placing allocator"):
        check_options("cosma", allocator_timeout=5.0, re_place=True, names={"allocator_timeout": "timeout"})
    with pytest.raises(ScheduleError, match="places its tensors itself"):
        check_options("cosma", allocator=ONLINE_ARENA, re_place=True)


def test_a_fixed_order_chosen_by_a_solver_makes_cosma_fs_reorder():
    entry = scheduler_entry("cosma-fs")
    assert not entry.reorders_with("program") and entry.reorders_with("min-peak")
    assert all(scheduler_entry(name).reorders_with("program") for name in ("min-peak", "cosma", "cosma-dnc"))
    with pytest.raises(ScheduleError, match="unknown fixed order 'lifo'"):
        scheduler.make_schedule(random_dag(5, seed=0), 10**6, "cosma-fs", fixed_order="lifo")

"""Input validation on its own: the driver's lookups from a good schedule, one-line errors for bad ones."""

from __future__ import annotations

from dataclasses import replace

import pytest

from accelsim.sim import SimulationError, check_inputs, simulate
from scheduler.schedule import Residency, Schedule, Transfer

OPS = {"op0", "op1"}  # check_inputs only asks whether the graph holds an operator


def _schedule() -> Schedule:
    """op0 reads x and writes y; op1 reads y and w; y is stored at the end."""
    residencies = [Residency("x", "x", 0, 1, 64), Residency("y", "y", 0, 2, 64), Residency("w", "w", 1, 2, 64)]
    base = [Transfer("load", "x", "x", 0, 64), Transfer("load", "w", "w", 1, 64), Transfer("store", "y", "y", 2, 64)]
    return Schedule(["op0", "op1"], residencies, base, capacity=1024)


OFFSETS = {"x": 0, "y": 64, "w": 0}


def test_check_inputs_returns_the_lookups_the_driver_walks():
    schedule = _schedule()
    index = check_inputs(OPS, schedule, OFFSETS)
    assert index.residency == {r.id: r for r in schedule.residencies}
    assert {s: [r.id for r in rs] for s, rs in index.starting.items()} == {0: ["x", "y"], 1: ["w"]}
    assert {s: [r.id for r in rs] for s, rs in index.ending.items()} == {1: ["x"], 2: ["y", "w"]}
    assert {rid: (t.kind, t.step) for rid, t in index.fill.items()} == {"x": ("load", 0), "w": ("load", 1)}
    assert {rid: (t.kind, t.step) for rid, t in index.drain.items()} == {"y": ("store", 2)}


@pytest.mark.parametrize(("residencies", "transfers", "offsets", "order", "message"), [
    ([Residency("x", "x", 0, 1, 64)] * 2, [], OFFSETS, ["op0"], "residency id 'x' appears twice in the schedule"),
    ([Residency("q", "q", 0, 1, 64)], [], OFFSETS, ["op0"], "residency 'q' has no offset"),
    ([Residency("x", "x", 1, 1, 64)], [], OFFSETS, ["op0"], r"residency 'x' lives on \[1, 1\), outside steps \[0, 1\]"),
    ([Residency("x", "x", 0, 3, 64)], [], OFFSETS, ["op0"], r"lives on \[0, 3\), outside steps \[0, 1\]"),
    ([Residency("x", "x", 0, 1, 64)], [Transfer("load", "q", "q", 0, 64)], OFFSETS, ["op0"],
     "load of 'q' at step 0 names unknown residency 'q'"),
    ([Residency("x", "x", 0, 1, 64)], [Transfer("store", "x", "x", 0, 64)], OFFSETS, ["op0"],
     r"store of residency 'x' at step 0, but the residency lives on \[0, 1\) \(a store happens at step 1\)"),
    ([Residency("x", "x", 0, 1, 64)], [Transfer("load", "x", "x", 0, 64)] * 2, OFFSETS, ["op0"],
     "residency 'x' has two fills"),
    ([Residency("x", "x", 0, 1, 64)], [], OFFSETS, ["nowhere"], "scheduled operator 'nowhere' is not in the graph"),
])
def test_check_inputs_names_the_first_thing_that_cannot_run(residencies, transfers, offsets, order, message):
    with pytest.raises(SimulationError, match=message):
        check_inputs(OPS, Schedule(order, residencies, transfers, capacity=1024), offsets)


@pytest.mark.parametrize(("transfer", "message"), [
    (Transfer("load", "w", "w", 1, 64, issue_step=2),
     r"load of residency 'w' at step 1 has issue step 2, outside \[0, 1\]"),
    (Transfer("load", "w", "w", 1, 64, issue_step=-1), r"has issue step -1, outside \[0, 1\]"),
    (Transfer("store", "y", "y", 2, 64, issue_step=1),
     "store of residency 'y' at step 2 has issue step 1: a store is issued at its step"),
    (Transfer("load", "w", "w", 1, 64, issue_step=0.5), "load of residency 'w' has issue step 0.5, not an integer"),
    (Transfer("load", "w", "w", 1, 64, issue_step=True), "has issue step True, not an integer"),
])
def test_an_issue_step_outside_its_transfer_s_window_is_refused(transfer, message):
    schedule = _schedule()
    schedule.transfers = [t for t in schedule.transfers if t.residency != transfer.residency] + [transfer]
    with pytest.raises(SimulationError, match=message) as info:
        check_inputs(OPS, schedule, OFFSETS)
    assert "\n" not in str(info.value)


def test_a_fill_issued_where_its_residency_starts_is_accepted_and_waited_for_at_its_step():
    schedule = _schedule()
    # w's window opens at step 0 (a prefetch), op1 needs it at step 1; w moves off x's range
    schedule.residencies[2] = Residency("w", "w", 0, 2, 64)
    schedule.transfers = [replace(schedule.transfers[0], issue_step=0), replace(schedule.transfers[1], issue_step=0),
                          replace(schedule.transfers[2], issue_step=2)]
    index = check_inputs(OPS, schedule, {**OFFSETS, "w": 128})
    assert set(index.fill) == {"x", "w"}
    assert index.needed == {0: ["x"], 1: ["w"]}


def test_simulate_refuses_bad_inputs_before_building_any_simpy_object(monkeypatch, toy_hw):
    import accelsim.sim.simulation as simulation

    def no_environment(*args, **kwargs):
        raise AssertionError("a SimPy environment was built for inputs that cannot run")

    monkeypatch.setattr(simulation.simpy, "Environment", no_environment)
    schedule = _schedule()
    schedule.transfers = [replace(t, issue_step=5) if t.residency == "w" else t for t in schedule.transfers]
    with pytest.raises(SimulationError, match="issue step 5"):
        simulate(OPS, schedule, OFFSETS, toy_hw())

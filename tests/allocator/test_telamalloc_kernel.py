"""The compiled search's inputs: one typed record of switches, built from the options by name.

The kernel used to take 27 positional parameters, so two swapped boolean switches would have
passed unnoticed. These tests pin that every option reaches the field of its own name, and
only that one.
"""

from dataclasses import fields, replace
from typing import get_type_hints

import pytest

from allocator import Buffer, Problem, solve
from allocator.methods.telamalloc import SELECTIONS, Switches, TelaMallocOptions, kernel_switches, telamalloc_search

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

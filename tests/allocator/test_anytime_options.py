"""Anytime routines refuse an options record of another method instead of running on the defaults.

Every minimisation here is bounded by a node budget or is a heuristic's first placement, and
every timeout is generous: no outcome depends on the machine's load.
"""

import time

import pytest

from allocator import Buffer, Problem, minimize, validate
from allocator.core.options import CPSATOptions
from allocator.core.registry import METHODS, MinimizeRequest
from allocator.methods.minimalloc import MiniMallocOptions, minimalloc_minimize
from allocator.methods.telamalloc import TelaMallocOptions, telamalloc_anytime
from allocator.methods.telamalloc_learned import LearnedOptions, learned_anytime
from allocator.search.portfolio import auto_minimize

#: a timeout that never binds
NO_RUSH = 600.0

#: each anytime routine with its method's name and its own options record
ROUTINES = [
    ("minimalloc", minimalloc_minimize, MiniMallocOptions),
    ("auto", auto_minimize, MiniMallocOptions),
    ("telamalloc", telamalloc_anytime, TelaMallocOptions),
    ("telamalloc-learned", learned_anytime, LearnedOptions),
]

#: records of the wrong type: another method's record, and a value that is no record at all
WRONG = [CPSATOptions(), {"workers": 1}]


def small() -> Problem:
    return Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4), Buffer("c", 2, 4, 2)])


def request(method: str, options: object) -> MinimizeRequest:
    began = time.perf_counter()
    node_limit = 1_000 if METHODS[method].capabilities.node_limit else None
    return MinimizeRequest(method, NO_RUSH, began, began + NO_RUSH, options, 0.6, node_limit, None)


def test_every_anytime_routine_is_listed_here():
    # a routine registered later must be added to ROUTINES, so that it is checked too
    listed = {name for name, _, _ in ROUTINES}
    assert listed == {name for name, entry in METHODS.items() if entry.capabilities.anytime is not None}
    assert all(METHODS[name].options is record for name, _, record in ROUTINES)


@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: type(w).__name__)
@pytest.mark.parametrize(("method", "routine", "record"), ROUTINES, ids=[r[0] for r in ROUTINES])
def test_a_routine_called_directly_refuses_another_record(method, routine, record, wrong):
    with pytest.raises(TypeError) as raised:
        routine(small(), request(method, wrong))
    message = str(raised.value)
    assert "\n" not in message
    assert repr(method) in message and record.__qualname__ in message and type(wrong).__qualname__ in message


@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: type(w).__name__)
@pytest.mark.parametrize(("method", "routine", "record"), ROUTINES, ids=[r[0] for r in ROUTINES])
def test_minimize_refuses_another_record(method, routine, record, wrong):
    with pytest.raises(TypeError) as raised:
        minimize(small(), method, timeout=NO_RUSH, options=wrong)
    message = str(raised.value)
    assert "\n" not in message
    assert repr(method) in message and record.__qualname__ in message and type(wrong).__qualname__ in message


@pytest.mark.parametrize(("method", "routine", "record"), ROUTINES, ids=[r[0] for r in ROUTINES])
def test_no_options_and_the_own_record_both_run(method, routine, record):
    problem = small()
    for options in (None, record()):
        direct = routine(problem, request(method, options))
        assert direct.solution is not None and validate(problem, direct.solution).ok
        node_limit = 1_000 if METHODS[method].capabilities.node_limit else None
        through = minimize(problem, method, timeout=NO_RUSH, options=options, node_limit=node_limit)
        assert through.solution is not None and validate(problem, through.solution).ok
        assert through.peak == direct.peak == 8  # a and b overlap in time: LOAD, reached

"""``allocator.search.explain``: the set it returns is infeasible, and feasible without any one of its buffers.

Both claims are checked with an independent CP-SAT model written here (it shares no code with
the allocator): every buffer a rectangle in time x address, NoOverlap2D, addresses inside
``[0, capacity)``, free offsets ``alignment * k``, pinned offsets fixed. Outcomes are bounded
by node limits only, never by time, so the tests give the same answers on any machine.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from accelsim.cli import main
from allocator import Buffer, InvalidProblemError, Problem, lower_bound, read_csv, write_csv
from allocator.search.explain import ExplainOptions, Explanation, FeasibleProblemError, explain_infeasible

REPO = Path(__file__).resolve().parents[3]

#: enough nodes for every probe on these small problems: asserted outcomes never depend on the clock
NODES = 100_000

#: LOAD 5 fits the capacity 5, yet nothing does. The long thin b1, b2 and b3 form a staircase:
#: f0 (4 B at step 0) pushes b1 to an edge, b4 (3 B at step 1) leaves b1 and b2 the two ends or
#: a pair beside it, f3 and b5 (steps 3, 4) push b3 to an edge; every combination puts b3 on b1
#: or b2 at step 2. Found by a random search over "tight" problems (every step filled to LOAD)
#: and checked by hand; all seven buffers are needed.
STAIRCASE = (Buffer("b1", 0, 3, 1), Buffer("b2", 1, 4, 1), Buffer("b3", 2, 5, 2), Buffer("b4", 1, 2, 3),
             Buffer("b5", 4, 5, 3), Buffer("f0", 0, 1, 4), Buffer("f3", 3, 4, 2))


def cpsat_feasible(buffers: Sequence[Buffer], capacity: int) -> bool:
    """Whether ``buffers`` have a placement in ``capacity`` bytes, decided by CP-SAT (no time limit: tiny models)."""
    model = cp_model.CpModel()
    times, addresses = [], []
    for i, b in enumerate(buffers):
        times.append(model.new_fixed_size_interval_var(b.start, b.end - b.start, f"time_{i}"))
        if b.offset is not None:
            if b.offset + b.size > capacity:
                return False
            addresses.append(model.new_fixed_size_interval_var(b.offset, b.size, f"address_{i}"))
        else:
            if b.size > capacity:
                return False
            k = model.new_int_var(0, (capacity - b.size) // b.alignment, f"k_{i}")
            addresses.append(model.new_fixed_size_interval_var(b.alignment * k, b.size, f"address_{i}"))
    model.add_no_overlap_2d(times, addresses)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    status = solver.solve(model)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE), solver.status_name(status)
    return status != cp_model.INFEASIBLE


def assert_minimal_infeasible(problem: Problem, explanation: Explanation) -> list[Buffer]:
    """The explanation is a subset of ``problem``, infeasible, and feasible without any one buffer (by CP-SAT)."""
    assert problem.capacity is not None
    chosen = [b for b in problem.buffers if b.id in set(explanation.ids)]
    assert [b.id for b in chosen] == list(explanation.ids), "ids are the problem's, in its order"
    assert explanation.problem.buffers == tuple(chosen) and explanation.problem.capacity == problem.capacity
    assert explanation.proven_infeasible and explanation.minimal_proven and not explanation.unproven
    assert not cpsat_feasible(chosen, problem.capacity), f"{explanation.ids} has a placement"
    for b in chosen:
        rest = [other for other in chosen if other is not b]
        assert cpsat_feasible(rest, problem.capacity), f"{explanation.ids} without {b.id!r} is still infeasible"
    return chosen


# --- LOAD above the capacity ------------------------------------------------------------------


def test_load_case_takes_the_largest_buffers_live_at_the_worst_step():
    # step 1: a, b, d live (4 + 5 + 2 = 11 > 8); b and a alone pass 8; c is never needed
    problem = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 5), Buffer("c", 2, 4, 1), Buffer("d", 1, 2, 2)], 8)
    explanation = explain_infeasible(problem, node_limit=NODES)
    assert explanation.ids == ("a", "b")
    assert explanation.cause == "load" and "step 1" in explanation.reason and "9 B" in explanation.reason
    assert explanation.probes == 0, "minimality of a plain stack is arithmetic: no probe"
    assert_minimal_infeasible(problem, explanation)


def test_load_case_prefers_the_step_that_needs_the_fewest_buffers():
    # step 0 holds the most bytes (six of 2 B = 12 > 10) but needs six buffers; step 5 has one of 11 B
    buffers = [Buffer(f"s{i}", 0, 2, 2) for i in range(6)] + [Buffer("big", 5, 6, 11)]
    problem = Problem(buffers, 10)
    explanation = explain_infeasible(problem, node_limit=NODES)
    assert explanation.ids == ("big",)
    assert explanation.describe().startswith("buffer 'big' cannot be placed (at step 5 it needs 11 B, more than")
    assert_minimal_infeasible(problem, explanation)


def test_load_case_with_a_pinned_buffer_is_shrunk_by_the_search():
    # Sizes 5 + 4 + 2 pass 10 at step 0, but P pinned at [4, 6) already leaves A (5 B) no room:
    # below P there are 4 bytes, above it 4. So {A, P} is infeasible with LOAD 7, and B goes.
    problem = Problem([Buffer("A", 0, 2, 5), Buffer("B", 0, 2, 4), Buffer("P", 0, 2, 2, offset=4)], 10)
    explanation = explain_infeasible(problem, node_limit=NODES)
    assert explanation.ids == ("A", "P")
    assert explanation.cause == "search" and lower_bound(explanation.problem) <= 10
    assert_minimal_infeasible(problem, explanation)


def test_load_case_with_alignment_is_proven_by_probes():
    # 3 + 3 + 3 = 9 > 8 live at step 0; each pair fits only because alignment 4 leaves no gap too large:
    # the pair x, y stacks as [0, 3) and [4, 7). Every removal is probed, not assumed.
    problem = Problem([Buffer("x", 0, 1, 3, alignment=4), Buffer("y", 0, 1, 3, alignment=4),
                       Buffer("z", 0, 1, 3), Buffer("w", 1, 2, 1)], 8)
    explanation = explain_infeasible(problem, node_limit=NODES)
    assert explanation.probes >= 3
    assert set(explanation.ids) == {"x", "y", "z"}
    assert_minimal_infeasible(problem, explanation)


def test_load_case_where_alignment_padding_makes_fewer_buffers_infeasible():
    # LOAD 3 + 3 + 1 = 7 > 6 takes x, y and z, but x and y (3 B aligned to 4) alone need [0, 3)
    # and [4, 7): padding makes their 6 bytes of LOAD a 7-byte stack, so z goes.
    problem = Problem([Buffer("x", 0, 1, 3, alignment=4), Buffer("y", 0, 1, 3, alignment=4),
                       Buffer("z", 0, 1, 1)], 6)
    explanation = explain_infeasible(problem, node_limit=NODES)
    assert explanation.ids == ("x", "y")
    assert explanation.cause == "search"
    assert_minimal_infeasible(problem, explanation)


# --- LOAD within the capacity: fragmentation ---------------------------------------------------


def test_fragmentation_needs_the_whole_staircase():
    problem = Problem(STAIRCASE, 5)
    assert lower_bound(problem) == 5
    explanation = explain_infeasible(problem, node_limit=NODES)
    assert explanation.cause == "search" and "within the capacity" in explanation.reason
    assert_minimal_infeasible(problem, explanation)
    assert len(explanation) == 7


#: buffers that do not make the staircase any harder at 5 B: one in the spare byte of step 2, and a
#: feasible part after it in time
NOT_NEEDED = (Buffer("mid", 2, 3, 1), Buffer("late1", 5, 9, 3), Buffer("late2", 6, 8, 2))


def test_fragmentation_drops_buffers_that_are_not_needed():
    problem = Problem(STAIRCASE + NOT_NEEDED, 5)
    assert lower_bound(problem) == 5
    explanation = explain_infeasible(problem, node_limit=NODES)
    assert set(explanation.ids) == {b.id for b in STAIRCASE}
    assert_minimal_infeasible(problem, explanation)


def test_fragmentation_with_a_buffer_live_throughout():
    # 2 B live over the whole staircase, at 7 B: the staircase alone fits 7 B (even 6), so "top" is
    # needed; whether all of the staircase still is, CP-SAT checks
    problem = Problem(STAIRCASE + (Buffer("top", 0, 5, 2),), 7)
    assert lower_bound(problem) == 7
    explanation = explain_infeasible(problem, node_limit=NODES)
    assert "top" in explanation.ids
    assert_minimal_infeasible(problem, explanation)


def test_a_pinned_buffer_leaves_a_hole_nothing_fits_in():
    # LOAD 7 <= 10, but A (5 B) meets P pinned at [4, 6) at step 1: 4 bytes below, 4 above
    problem = Problem([Buffer("A", 0, 2, 5), Buffer("P", 1, 3, 2, offset=4), Buffer("C", 0, 3, 1),
                       Buffer("D", 2, 4, 3)], 10)
    explanation = explain_infeasible(problem, node_limit=NODES)
    assert explanation.ids == ("A", "P")
    assert_minimal_infeasible(problem, explanation)


def test_alignment_fragmentation():
    # LOAD 4 = capacity: x and y (3 B) push a and b to the ends (0 or 3); z (2 B, aligned to 2)
    # then needs 0-1 or 2-3, where a or b sits at step 1
    problem = Problem([Buffer("a", 0, 2, 1), Buffer("b", 1, 3, 1), Buffer("x", 0, 1, 3), Buffer("y", 2, 3, 3),
                       Buffer("z", 1, 2, 2, alignment=2)], 4)
    assert lower_bound(problem) == 4
    explanation = explain_infeasible(problem, node_limit=NODES)
    assert_minimal_infeasible(problem, explanation)


def test_only_the_infeasible_part_in_time_is_kept():
    # the staircase shifted to steps 10..15, after a feasible part that never meets it
    shifted = [Buffer(b.id, b.start + 10, b.end + 10, b.size) for b in STAIRCASE]
    problem = Problem([Buffer("early", 0, 5, 5), Buffer("early2", 5, 7, 3)] + shifted, 5)
    explanation = explain_infeasible(problem, node_limit=NODES)
    assert set(explanation.ids) == {b.id for b in STAIRCASE}
    assert_minimal_infeasible(problem, explanation)


@pytest.mark.parametrize("switch", ["components", "windows", "groups", "heuristic_first", "retry_unproven", "all"])
def test_every_technique_can_be_switched_off(switch):
    off = {name: False for name in ("components", "windows", "groups", "heuristic_first", "retry_unproven")}
    options = ExplainOptions(**(off if switch == "all" else {switch: False}))
    problem = Problem(STAIRCASE + NOT_NEEDED, 5)
    explanation = explain_infeasible(problem, node_limit=NODES, options=options)
    assert set(explanation.ids) == {b.id for b in STAIRCASE}
    assert_minimal_infeasible(problem, explanation)


# --- limits and bad input ---------------------------------------------------------------------


def test_a_node_limit_too_small_to_prove_anything_says_so():
    # one node per probe: greedy shows the windows feasible, but no search can refute the staircase
    explanation = explain_infeasible(Problem(STAIRCASE, 5), node_limit=1)
    assert not explanation.proven_infeasible and not explanation.minimal_proven
    assert len(explanation) == 0 and explanation.cause == "unproven"
    assert "not proven" in explanation.reason and "not proven" in explanation.describe()


def test_probes_that_run_out_keep_their_buffer_and_say_so():
    # LOAD case (proven by arithmetic) with a pinned buffer: removals need the search. With one
    # node per probe, the removals greedy cannot place stay unproven, and the set stays infeasible.
    problem = Problem([Buffer("A", 0, 2, 5), Buffer("B", 0, 2, 4), Buffer("P", 0, 2, 2, offset=4)], 10)
    explanation = explain_infeasible(problem, node_limit=1)
    assert explanation.proven_infeasible
    assert not cpsat_feasible(list(explanation.problem.buffers), 10)
    assert explanation.unproven and not explanation.minimal_proven
    assert set(explanation.unproven) <= set(explanation.ids)
    assert "minimality not proven" in explanation.minimality()


def test_explaining_a_feasible_problem_is_refused():
    with pytest.raises(FeasibleProblemError, match="has a placement"):
        explain_infeasible(Problem(STAIRCASE, 6), node_limit=NODES)


def test_bad_arguments_are_refused_naming_them():
    with pytest.raises(InvalidProblemError, match="capacity"):
        explain_infeasible(Problem(STAIRCASE))
    with pytest.raises(InvalidProblemError, match="timeout"):
        explain_infeasible(Problem(STAIRCASE, 5), timeout=0)
    with pytest.raises(InvalidProblemError, match="node_limit"):
        explain_infeasible(Problem(STAIRCASE, 5), node_limit=0)
    with pytest.raises(InvalidProblemError, match="probe_time_share"):
        ExplainOptions(probe_time_share=0)


# --- random small problems against CP-SAT -------------------------------------------------------


@st.composite
def small_problems(draw):
    """Up to 7 buffers over 6 steps, alignments 1/2/4, some pinned, capacity LOAD - 2 .. LOAD + 1.

    Half the draws fill every step up to LOAD with a one-step buffer ("tight" problems): those
    are the ones where fragmentation, not LOAD, makes a capacity impossible.
    """
    raw = []
    for i in range(draw(st.integers(1, 7))):
        start = draw(st.integers(0, 5))
        end = min(6, start + draw(st.integers(1, 4)))
        raw.append((f"b{i}", start, end, draw(st.integers(1, 5)), draw(st.sampled_from([1, 1, 1, 2, 4]))))
    load = lower_bound(Problem([Buffer(*b) for b in raw]))
    if draw(st.booleans()):
        for t in range(6):
            live = sum(size for _, start, end, size, _ in raw if start <= t < end)
            if live < load:
                raw.append((f"fill{t}", t, t + 1, load - live, 1))
    capacity = max(1, load + draw(st.integers(-2, 1)))
    buffers: list[Buffer] = []
    for bid, start, end, size, alignment in raw:
        offset = None
        if size <= capacity and draw(st.integers(0, 5)) == 0:
            offset = draw(st.integers(0, (capacity - size) // alignment)) * alignment
            clash = any(b.offset is not None and b.start < end and start < b.end and b.offset < offset + size
                        and offset < b.offset + b.size for b in buffers)
            offset = None if clash else offset
        buffers.append(Buffer(bid, start, end, size, alignment, offset))
    return Problem(buffers, capacity)


@settings(max_examples=150)
@given(small_problems())
def test_random_problems_are_explained_or_refused_as_cpsat_decides(problem):
    assert problem.capacity is not None
    if cpsat_feasible(problem.buffers, problem.capacity):
        event("feasible")
        with pytest.raises(FeasibleProblemError):
            explain_infeasible(problem, node_limit=NODES)
    else:
        explanation = explain_infeasible(problem, node_limit=NODES)
        where = "above" if lower_bound(problem) > problem.capacity else "within"
        event(f"infeasible, proven by {explanation.cause}, LOAD {where} the capacity")  # all kinds are drawn
        assert_minimal_infeasible(problem, explanation)


# --- a real instance ------------------------------------------------------------------------------


def test_a_challenging_instance_one_byte_below_its_load(benchmarks):
    # A.1048576 packs perfectly at LOAD = 1,048,576; one byte less is the LOAD case
    problem = read_csv(benchmarks / "minimalloc" / "challenging" / "A.1048576.csv", capacity=1_048_575)
    explanation = explain_infeasible(problem, node_limit=NODES)
    assert explanation.cause == "load" and len(explanation) < len(problem)
    assert_minimal_infeasible(problem, explanation)


# --- the command line ----------------------------------------------------------------------------


@pytest.fixture
def staircase_csv(tmp_path: Path) -> Path:
    """The staircase and one buffer after it (not needed), as a MiniMalloc CSV."""
    path = tmp_path / "staircase.csv"
    write_csv(path, Problem(list(STAIRCASE) + [Buffer("after", 5, 8, 5)]))
    return path


def test_cli_explain_writes_the_set_and_exits_1(staircase_csv, tmp_path):
    out = tmp_path / "why.csv"
    done = subprocess.run([sys.executable, "-m", "accelsim", "alloc", str(staircase_csv), "--capacity", "5",
                           "--method", "minimalloc", "--explain", str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1, done.stderr
    assert done.stderr == ""
    written = read_csv(out, capacity=5)
    assert set(written.ids) == {b.id for b in STAIRCASE}
    assert not cpsat_feasible(written.buffers, 5)
    lines = [line for line in done.stdout.splitlines() if line.startswith("explain:")]
    assert lines == [f"explain: 7 buffers written to {out} " + lines[0].split(f"{out} ", 1)[1]]
    assert lines[0].endswith("; minimal (each removal proven feasible)")


def test_cli_explain_decides_what_a_failed_heuristic_could_not(staircase_csv, tmp_path, capsys):
    out = tmp_path / "why.csv"
    assert main(["alloc", str(staircase_csv), "--capacity", "5", "--method", "greedy-by-size",
                 "--explain", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "status     failed" in printed
    assert "greedy-by-size's 'failed' proves nothing; 7 buffers written to" in printed
    assert set(read_csv(out).ids) == {b.id for b in STAIRCASE}


def test_cli_explain_says_when_the_heuristic_missed_a_placement(staircase_csv, tmp_path, capsys):
    # at 6 bytes greedy-by-size misses (peak 7), but a placement exists (first-fit finds one)
    out = tmp_path / "why.csv"
    assert main(["alloc", str(staircase_csv), "--capacity", "6", "--method", "greedy-by-size", "--explain",
                 str(out)]) == 1
    printed = capsys.readouterr().out
    assert "status     failed" in printed
    assert "the exact search found a placement that fits" in printed and "not written" in printed
    assert not out.exists()


def test_cli_explain_writes_nothing_when_a_placement_fits(staircase_csv, tmp_path, capsys):
    out = tmp_path / "why.csv"
    assert main(["alloc", str(staircase_csv), "--capacity", "16", "--explain", str(out)]) == 0
    assert "explain: a placement fits the capacity, nothing to explain" in capsys.readouterr().out
    assert not out.exists()


def test_cli_names_the_set_without_explain(staircase_csv, capsys):
    assert main(["alloc", str(staircase_csv), "--capacity", "5", "--method", "minimalloc"]) == 1
    reason = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("reason"))
    assert "search space exhausted" in reason
    assert "buffers 'b1', 'b2', 'b3', 'b4', 'b5', 'f0', 'f3' cannot be placed together" in reason
    assert "'after'" not in reason and "minimal (each removal proven feasible)" in reason


def test_cli_names_the_load_set_without_explain(tmp_path, capsys):
    path = tmp_path / "load.csv"
    write_csv(path, Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 5), Buffer("c", 2, 4, 1), Buffer("d", 1, 2, 2)]))
    assert main(["alloc", str(path), "--capacity", "8"]) == 1
    reason = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("reason"))
    assert reason.split(None, 1)[1] == ("LOAD 11 exceeds capacity 8; buffers 'a', 'b' cannot be placed together "
                                        "(live together at step 1 they need 9 B, more than the capacity 8 B); "
                                        "minimal (each removal proven feasible)")


def test_cli_does_not_name_a_large_set(tmp_path, capsys):
    path = tmp_path / "many.csv"
    write_csv(path, Problem([Buffer(f"s{i}", 0, 2, 1) for i in range(12)]))
    assert main(["alloc", str(path), "--capacity", "11"]) == 1
    reason = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("reason"))
    assert "12 buffers cannot be placed together" in reason and "'s0'" not in reason
    assert "--explain OUT.csv writes them" in reason


@pytest.mark.parametrize(("argv", "message"), [
    ([], "--explain needs --capacity"),
    (["--capacity", "5", "--minimize"], "without --minimize"),
])
def test_cli_explain_refuses_options_that_mean_nothing(staircase_csv, tmp_path, capsys, argv, message):
    assert main(["alloc", str(staircase_csv), *argv, "--explain", str(tmp_path / "why.csv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1


def test_cli_explain_checks_its_path_before_any_work(staircase_csv, tmp_path, capsys):
    assert main(["alloc", str(staircase_csv), "--capacity", "5", "--explain", str(tmp_path / "no" / "why.csv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--explain" in err

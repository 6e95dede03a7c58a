"""Generated instances: TelaMalloc's microbenchmarks and seeded random ones."""

import pytest

from accelsim.cli import main
from allocator import InvalidProblemError, lower_bound, read_csv, solve, validate
from allocator.core.generators import generate


def test_microbenchmarks_have_the_documented_shape():
    apart = generate("non-overlapping", 50, seed=2)
    assert lower_bound(apart) == max(b.size for b in apart.buffers)
    stacked = generate("full-overlap", 50, seed=2)
    assert lower_bound(stacked) == sum(b.size for b in stacked.buffers)
    for problem in (apart, stacked):  # both pack at LOAD exactly
        r = solve(problem.with_capacity(lower_bound(problem)), "greedy-by-size")
        assert r.solved and validate(problem.with_capacity(lower_bound(problem)), r.solution).ok


def test_same_seed_same_instance_and_alignment_is_kept():
    a, b = generate("random", 200, seed=7, alignment=8), generate("random", 200, seed=7, alignment=8)
    assert a.buffers == b.buffers and a.buffers != generate("random", 200, seed=8, alignment=8).buffers
    assert all(x.size % 8 == 0 and x.alignment == 8 and x.end > x.start for x in a.buffers)


def test_bad_arguments_are_named(tmp_path, capsys):
    with pytest.raises(InvalidProblemError, match="unknown instance kind 'staggered'"):
        generate("staggered", 10)
    with pytest.raises(InvalidProblemError, match="positive integer"):
        generate("random", 0)
    assert main(["gen", "random", "30", str(tmp_path / "r.csv"), "--seed", "1"]) == 0
    assert len(read_csv(tmp_path / "r.csv")) == 30
    assert main(["gen", "nope", "3", str(tmp_path / "x.csv")]) == 2
    assert "unknown instance kind" in capsys.readouterr().err

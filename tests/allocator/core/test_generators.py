"""``allocator.core.generators``: TelaMalloc's microbenchmarks and seeded random instances.

Generators check their size before allocating (issue 22), and CSVs are written streaming and whole.
"""

from __future__ import annotations

import csv

import pytest

from accelsim.cli import main
from allocator import InvalidProblemError, lower_bound, read_csv, solve, validate, write_csv
from allocator.core import csv_io, generators
from allocator.core.generators import BYTES_PER_BUFFER, available_memory, check_size, estimated_bytes, generate

# --------------------------------------------------------------------------------------------------
# Generated instances: TelaMalloc's microbenchmarks and seeded random ones.


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


# --------------------------------------------------------------------------------------------------
# Generators check their size before allocating, and CSVs are written streaming and whole (issue 22).
#
# ``accelsim gen non-overlapping 1000000000 o.csv`` reached 12 GiB before it was killed. Now
# ``allocator.core.generators.check_size`` estimates the memory first and refuses, in one line naming
# the number of buffers, the estimate and the memory available, before anything is allocated or
# written.


def test_a_billion_buffers_are_refused_up_front_with_one_line_and_nothing_written(tmp_path, capsys):
    from accelsim.cli import main

    out = tmp_path / "o.csv"
    assert main(["gen", "non-overlapping", "1000000000", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: 1,000,000,000 buffers need about")
    assert "GiB of memory available" in err[0]
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_the_machine_tells_how_much_memory_is_available():
    available = available_memory()
    assert available is not None and available > 0  # Linux: /proc/meminfo


def test_the_estimate_grows_with_the_buffers_and_the_check_compares_it():
    assert estimated_bytes("random", 10) == 10 * BYTES_PER_BUFFER
    check_size("random", 1000, available=1000 * BYTES_PER_BUFFER)  # exactly enough: accepted
    with pytest.raises(InvalidProblemError, match=r"1,001 buffers need about .* ask for at most 1,000"):
        check_size("random", 1001, available=1000 * BYTES_PER_BUFFER)
    with pytest.raises(InvalidProblemError, match="unknown instance kind"):
        estimated_bytes("staggered", 10)


def test_generate_checks_before_it_allocates(monkeypatch):
    monkeypatch.setattr(generators, "available_memory", lambda: 100 * BYTES_PER_BUFFER)
    assert len(generate("random", 100)) == 100
    with pytest.raises(InvalidProblemError, match="101 buffers need about"):
        generate("random", 101)


def test_the_same_arguments_still_give_the_same_instance():
    # built from columns now: the instance the Buffer-by-Buffer code made for these arguments
    problem = generate("random", 5, seed=3, alignment=4)
    assert [(b.id, b.start, b.end, b.size, b.alignment) for b in problem.buffers] == [
        ("b0", 3, 6, 3324, 4), ("b1", 3, 7, 352, 4), ("b2", 2, 5, 736, 4), ("b3", 0, 1, 972, 4), ("b4", 0, 3, 744, 4)]
    assert generate("random", 50, seed=3).buffers == generate("random", 50, seed=3).buffers
    assert [(b.start, b.end) for b in generate("non-overlapping", 3).buffers] == [(0, 1), (1, 2), (2, 3)]


def test_write_csv_streams_in_chunks_and_reads_back(monkeypatch, tmp_path):
    monkeypatch.setattr(csv_io, "WRITE_CHUNK", 7)
    problem = generate("random", 50, seed=1, alignment=2)
    path = tmp_path / "p.csv"
    placement = solve(problem, "greedy-by-size").solution
    assert placement is not None
    write_csv(path, problem, placement)
    back = read_csv(path)
    assert [(b.id, b.start, b.end, b.size, b.alignment) for b in back.buffers] == [
        (b.id, b.start, b.end, b.size, b.alignment) for b in problem.buffers]
    assert {b.id: b.offset for b in back.buffers} == placement.offsets


def test_write_csv_interrupted_halfway_leaves_the_old_file(monkeypatch, tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("old\n")
    monkeypatch.setattr(csv_io, "WRITE_CHUNK", 5)
    real_writer = csv.writer

    class Interrupted:
        def __init__(self, handle, **kwargs):
            self.inner = real_writer(handle, **kwargs)
            self.chunks = 0

        def writerow(self, row):
            self.inner.writerow(row)

        def writerows(self, rows):
            self.chunks += 1
            if self.chunks == 2:
                raise KeyboardInterrupt
            self.inner.writerows(rows)

    monkeypatch.setattr(csv_io.csv, "writer", Interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_csv(path, generate("random", 20))
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["p.csv"]  # no temporary file left

"""Ctrl-C keeps every anytime method's best placement (issue 22).

Each method of the registry that declares an anytime routine (``Capabilities.anytime``), and
idealloc for the methods without one (``minimize`` reports their insurance placement first),
runs ``accelsim alloc D.1048576.csv --minimize`` with a long timeout; once stdout shows the
first "best so far" line the test sends SIGINT. The command must exit 130 without a
traceback, say it was interrupted, and write a placement of every buffer that validates.
D.1048576 is not solved to optimality in minutes, so no method finishes before the signal.
"""

from __future__ import annotations

import pytest

import allocator

#: every method that declares its own anytime routine, read from the registry
ANYTIME = sorted(name for name, entry in allocator.METHODS.items() if entry.capabilities.anytime is not None)
#: a method without one: minimize runs it once after an insurance placement
WITHOUT_ROUTINE = ["idealloc"]


def test_the_registry_declares_the_anytime_methods():
    # the parametrisation below is read from the registry; an empty list would test nothing
    assert {"minimalloc", "telamalloc"} <= set(ANYTIME)
    assert all(allocator.METHODS[name].capabilities.anytime is None for name in WITHOUT_ROUTINE)


@pytest.mark.parametrize("method", ANYTIME + WITHOUT_ROUTINE)
def test_ctrl_c_during_minimize_writes_the_best_placement_so_far(method, benchmarks, tmp_path,
                                                                 interrupt_after):
    hard = benchmarks / "minimalloc" / "challenging" / "D.1048576.csv"
    placed = tmp_path / "placed.csv"
    done = interrupt_after(["alloc", str(hard), "--minimize", "--method", method, "--timeout", "120",
                             "--output", str(placed)], "best so far", tmp_path)
    assert done.returncode == 130, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "interrupted before any placement" not in done.stderr
    assert "interrupted (Ctrl-C): best found so far" in done.stdout
    problem = allocator.read_csv(hard)
    written = allocator.read_csv(placed)  # the offsets come back as pinned offsets
    assert len(written) == len(problem)
    offsets = {buffer.id: buffer.offset for buffer in written.buffers}
    assert None not in offsets.values()
    report = allocator.validate(problem, allocator.Solution(offsets))
    assert report.ok, report

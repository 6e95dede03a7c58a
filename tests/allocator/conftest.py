"""Fixtures shared by the allocator's tests."""

import pytest

import allocator.problem


@pytest.fixture(params=["python", "compiled"])
def csv_reader(request, monkeypatch):
    """Runs a test once through each CSV parser: Python's csv module (what files under
    ``allocator.problem.COMPILED_FROM`` lines take) and the compiled scan (``COMPILED_FROM`` set
    to 0, so that every file takes it). Use it as ``pytest.mark.usefixtures("csv_reader")``."""
    if request.param == "compiled":
        monkeypatch.setattr(allocator.problem, "COMPILED_FROM", 0)
    return request.param

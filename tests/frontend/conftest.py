"""Fixtures for the frontend tests: a structural checker for traced graphs, and no downloads."""

from collections.abc import Callable
from typing import Any

import networkx as nx
import pytest

from frontend.graph import check_graph


def _assert_well_formed(graph: nx.DiGraph) -> None:
    """check_graph, plus: every activation is produced and read (or is a final output)."""
    check_graph(graph)
    tensors = graph.graph["tensors"]
    for name, rec in tensors.items():
        if rec["kind"] in ("activation", "output"):
            assert rec["producer"] is not None, f"{name} has no producer"
        if rec["kind"] == "activation":
            assert rec["consumers"], f"activation {name} is never read"
        if rec["kind"] == "weight":
            assert rec["consumers"], f"weight {name} is never read"
    assert graph.graph["outputs"], "graph has no outputs"
    for name in graph.graph["outputs"]:
        assert tensors[name]["kind"] in ("output", "input", "weight")
    for alias, base in graph.graph["aliases"].items():
        assert base in tensors, f"alias {alias} -> {base}, which is not a tensor"
        assert alias not in tensors, f"alias {alias} is also a tensor"


@pytest.fixture
def well_formed() -> Callable[[nx.DiGraph], None]:
    return _assert_well_formed


@pytest.fixture(autouse=True)
def _no_downloads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to download weights fails the test (the zoo must build with weights=None)."""
    import torch.hub

    def refuse(url: str, *args: object, **kwargs: object) -> None:
        raise AssertionError(f"test tried to download {url}")

    monkeypatch.setattr(torch.hub, "download_url_to_file", refuse)


@pytest.fixture
def functional_module() -> Callable[..., Any]:
    """``functional_module(fn)``: a module whose forward applies ``fn`` to its two or three inputs."""
    import torch.nn as nn

    class Functional(nn.Module):
        def __init__(self, fn: Callable[..., Any]) -> None:
            super().__init__()
            self.fn = fn

        def forward(self, a: Any, b: Any, c: Any = None) -> Any:
            return self.fn(a, b) if c is None else self.fn(a, b, c)

    return Functional

"""``frontend.gathers.read_rows``: a gather from a weight reads the rows it gathers, not the table."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from frontend.trace import trace

pytestmark = pytest.mark.torch


class Lookup(nn.Module):
    def __init__(self, tied: bool) -> None:
        super().__init__()
        self.table = nn.Embedding(1000, 16)
        self.head = None if tied else nn.Linear(16, 1000, bias=False)

    def forward(self, ids):
        x = self.table(ids)
        return x @ self.table.weight.T if self.head is None else self.head(x)


def test_an_untied_table_leaves_the_graph_and_its_rows_are_read():
    graph = trace(Lookup(tied=False), (torch.zeros(2, 5, dtype=torch.long),), dtype="fp32")
    tensors = graph.graph["tensors"]
    assert "table.weight" not in tensors
    rows = tensors["table.weight[table]"]
    assert rows["nbytes"] == 2 * 5 * 16 * 4 and rows["consumers"] == ["table"] and rows["kind"] == "weight"
    assert graph.nodes["table"]["in_tensors"] == ["ids", "table.weight[table]"]


def test_a_tied_table_stays_for_its_whole_reader_only():
    graph = trace(Lookup(tied=True), (torch.zeros(1, 3, dtype=torch.long),), dtype="bf16")
    tensors = graph.graph["tensors"]
    [reader] = tensors["table.weight"]["consumers"]  # the head's transpose (.T), not the lookup
    assert graph.nodes[reader]["op"] == "transpose"
    assert tensors["table.weight"]["nbytes"] == 1000 * 16 * 2
    assert tensors["table.weight[table]"]["nbytes"] == 3 * 16 * 2


class Bias(nn.Module):
    """Swin's relative-position bias: more lookups than the table has rows."""

    def __init__(self) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.zeros(9, 2))
        self.register_buffer("index", torch.zeros(49, dtype=torch.long))

    def forward(self, x):
        return x + self.table[self.index].sum()


def test_a_gather_of_more_bytes_than_its_table_reads_the_table():
    graph = trace(Bias(), (torch.zeros(3),), dtype="fp32")
    assert graph.graph["tensors"]["table"]["nbytes"] == 9 * 2 * 4
    assert not any("gathered_from" in t for t in graph.graph["tensors"].values())


def test_a_gather_from_an_activation_is_unchanged():
    class Pick(nn.Module):
        def forward(self, x, i):
            return torch.index_select(x * 2, 0, i)

    graph = trace(Pick(), (torch.zeros(100, 8), torch.zeros(3, dtype=torch.long)), dtype="fp32")
    assert not any("gathered_from" in t for t in graph.graph["tensors"].values())


class TiedModules(nn.Module):
    """A head bound to the embedding's parameter (``head.weight = emb.weight``), as transformers ties them."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(1000, 16)
        self.head = nn.Linear(16, 1000, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        return self.head(self.emb(ids))


@pytest.mark.parametrize("method", ["fx", "export"])
def test_a_tied_parameter_is_one_weight_read_whole_once_whichever_tracer(method):
    graph = trace(TiedModules(), (torch.zeros(1, 4, dtype=torch.long),), dtype="fp32", method=method)
    whole = {t: r for t, r in graph.graph["tensors"].items() if r["kind"] == "weight" and "gathered_from" not in r}
    assert list(whole) == ["emb.weight"] and len(whole["emb.weight"]["consumers"]) == 1
    [rows] = [r for r in graph.graph["tensors"].values() if r.get("gathered_from") == "emb.weight"]
    assert rows["nbytes"] == 4 * 16 * 4

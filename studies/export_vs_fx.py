"""Issue 24, part 3: the ``torch.export`` tracer against the ``torch.fx`` one on the zoo models.

For every model of ``frontend.zoo.SUPPORTED_MODELS`` (built on the meta device) both tracers
run; a row compares their graphs: operators, operators per kind, MACs, the bytes of inputs,
weights, activations and outputs, edges, and the operators without their names
(``same_operator_records``: the sorted list of each operator's kind, MACs, elements, GEMMs and
the shapes and kinds of the tensors it reads and writes). ``identical`` is true when all of
them agree. Result (torch 2.14, torchvision as installed): identical on all 24. The
differences are explained in ``frontend.export_convert``'s docstring.

    python studies/export_vs_fx.py [--csv docs/bench/export_vs_fx.csv] [--md docs/bench/export_vs_fx.md] [MODEL ...]
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import networkx as nx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's frontend, run as a script

from frontend import zoo  # noqa: E402
from frontend.trace import trace  # noqa: E402

BYTE_KINDS = ("input", "weight", "activation", "output")


def summary(graph: nx.DiGraph) -> dict[str, Any]:
    """Operators, operators per kind, MACs and bytes per tensor kind of ``graph``."""
    kinds = Counter(data["op"] for _, data in graph.nodes(data=True))
    tensors = graph.graph["tensors"]

    def record(data: dict[str, Any]) -> tuple[Any, ...]:
        """An operator without names: kind, costs, GEMMs, and the shape and kind of what it reads and writes."""
        def shapes(names: list[str]) -> tuple[Any, ...]:
            return tuple((tuple(tensors[t]["shape"]), tensors[t]["kind"]) for t in names)

        gemm = tuple(tuple(g) for g in data["gemm"])
        return (data["op"], data["macs"], data["elements"], gemm, shapes(data["in_tensors"]),
                shapes(data["out_tensors"]))

    nbytes = dict.fromkeys(BYTE_KINDS, 0)
    for rec in graph.graph["tensors"].values():
        nbytes[rec["kind"]] += rec["nbytes"]
    return {
        "operators": graph.number_of_nodes(),
        "kinds": dict(sorted(kinds.items())),
        "macs": sum(data["macs"] for _, data in graph.nodes(data=True)),
        **{f"{k}_bytes": v for k, v in nbytes.items()},
        "edges": graph.number_of_edges(),
        "records": sorted(record(data) for _, data in graph.nodes(data=True)),
    }


def kind_differences(fx: dict[str, int], export: dict[str, int]) -> str:
    """``"matmul +2; shifted_window_attention -1"``: export's count minus FX's, per kind that differs."""
    parts = []
    for kind in sorted(set(fx) | set(export)):
        delta = export.get(kind, 0) - fx.get(kind, 0)
        if delta:
            parts.append(f"{kind} {delta:+d}")
    return "; ".join(parts)


def compare(name: str) -> dict[str, Any]:
    """One row: both tracers' summaries of zoo model ``name`` and whether they agree."""
    model, inputs = zoo.load_model(name, device="meta")
    fx = summary(trace(model, inputs, name=name, method="fx"))
    model, inputs = zoo.load_model(name, device="meta")
    exported = summary(trace(model, inputs, name=name, method="export"))
    row: dict[str, Any] = {"model": name}
    for key in ("operators", "macs", *(f"{k}_bytes" for k in BYTE_KINDS)):
        row[f"fx_{key}"] = fx[key]
        row[f"export_{key}"] = exported[key]
    row["fx_edges"], row["export_edges"] = fx["edges"], exported["edges"]
    row["same_operator_records"] = fx["records"] == exported["records"]
    row["kind_differences"] = kind_differences(fx["kinds"], exported["kinds"])
    row["identical"] = all(fx[k] == exported[k] for k in fx)
    return row


def markdown(rows: list[dict[str, Any]]) -> str:
    """A table with one line per model: identical, or what differs."""
    lines = ["| model | identical | operators fx / export | MACs fx / export | differences |",
             "|---|---|---:|---:|---|"]
    for row in rows:
        notes = []
        for key in ("macs", *(f"{k}_bytes" for k in BYTE_KINDS)):
            fx, ex = row[f"fx_{key}"], row[f"export_{key}"]
            if fx != ex:
                notes.append(f"{key} {ex - fx:+,d}")
        if row["kind_differences"]:
            notes.append(row["kind_differences"])
        lines.append(f"| {row['model']} | {'yes' if row['identical'] else 'no'} | "
                     f"{row['fx_operators']:,} / {row['export_operators']:,} | "
                     f"{row['fx_macs']:,} / {row['export_macs']:,} | {'; '.join(notes)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="zoo models (default: all of SUPPORTED_MODELS)")
    parser.add_argument("--csv", type=Path, default=Path("docs/bench/export_vs_fx.csv"))
    parser.add_argument("--md", type=Path, default=Path("docs/bench/export_vs_fx.md"))
    args = parser.parse_args(argv)
    rows = []
    for name in args.models or zoo.SUPPORTED_MODELS:
        row = compare(name)
        rows.append(row)
        print(f"{name}: {'identical' if row['identical'] else 'differs'} {row['kind_differences']}",
              file=sys.stderr, flush=True)
    with args.csv.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    args.md.write_text(markdown(rows))
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

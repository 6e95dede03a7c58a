"""Where a model comes from, decided in one place for every command and the Python API.

A model is one of: a model zoo name (``"resnet50"``, traced through the trace cache), a graph
saved with ``frontend.save_graph`` (a path ending in ``.json``), a user model spec
(``path/to/file.py:function``: text ending in ``.py`` or holding ``.py:``, see
``frontend.user_model``; traced through the trace cache too), an ``nn.Module`` with example
inputs, or a ``DataflowGraph`` (``networkx.DiGraph``) already traced. A saved graph or a
``DataflowGraph`` is *traced already*: its dtype and shapes were fixed then, so options that
choose them (``--dtype``, ``--input-shape``) cannot apply. Reports and sweep rows name a saved
graph by its file name without ``.json``, a user model by ``STEM.FUNCTION``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: the suffix of a graph saved with ``frontend.save_graph``
SAVED_GRAPH_SUFFIX = ".json"


def is_saved_graph(model: Any) -> bool:
    """``model`` names a graph file (a ``str`` or ``Path`` ending in ``.json``).

    >>> is_saved_graph("out/resnet18.json"), is_saved_graph("resnet18")
    (True, False)
    """
    return isinstance(model, str | Path) and str(model).endswith(SAVED_GRAPH_SUFFIX)


def is_traced(model: Any) -> bool:
    """``model`` is traced already: a saved graph or a ``DataflowGraph`` (its dtype and shapes are fixed)."""
    if is_saved_graph(model):
        return True
    import networkx as nx  # only when the model is not a name: a name never needs networkx here

    return not isinstance(model, str | Path) and isinstance(model, nx.DiGraph)


def is_user_model(model: Any) -> bool:
    """``model`` is a user model spec (``path/to/file.py:function``; ``frontend.user_model``).

    >>> is_user_model("models/net.py:build"), is_user_model("resnet18")
    (True, False)
    """
    from frontend.user_model import is_user_model as spec  # light: no torch until a model is built

    return spec(model)


def model_label(model: str) -> str:
    """How reports, folders and sweep rows name ``model``: the zoo name, a saved graph's file name
    without ``.json``, or a user model's ``STEM.FUNCTION``. A malformed user model spec raises
    ``frontend.user_model.UserModelError`` (a ``ValueError``) naming it.

    >>> model_label("graphs/chain6.json"), model_label("resnet18"), model_label("models/net.py:build")
    ('chain6', 'resnet18', 'net.build')
    """
    if is_saved_graph(model):
        return Path(model).stem
    if is_user_model(model):
        from frontend.user_model import parse_spec

        return parse_spec(model).name
    return model


def model_labels(models: list[str]) -> dict[str, str]:
    """A label per model that tells every model of the list apart (sweep rows, progress lines).

    Each is ``model_label``'s, unless two models share one: then the files behind them (a
    saved graph, a user model's file) get as many of their folders in front as set them apart,
    so ``a/net.py:build`` and ``b/net.py:build`` are ``a/net.build`` and ``b/net.build`` (a zoo
    name keeps its own). Models that no folder tells apart (one file named two ways) are
    labelled as given.

    >>> model_labels(["m/a/net.py:build", "m/b/net.py:build", "resnet18", "graphs/resnet18.json"])
    {'m/a/net.py:build': 'a/net.build', 'm/b/net.py:build': 'b/net.build', 'resnet18': 'resnet18', \
'graphs/resnet18.json': 'graphs/resnet18'}
    """
    labels = {model: model_label(model) for model in models}
    for label in set(labels.values()):
        same = [model for model in models if labels[model] == label]
        if len(same) < 2:
            continue
        folders = {model: _folders(model) for model in same}
        deepest = max(len(parts) for parts in folders.values())
        for depth in range(1, deepest + 1):
            trial = {model: "/".join([*parts[len(parts) - min(depth, len(parts)):], label])
                     for model, parts in folders.items()}
            if len(set(trial.values())) == len(same):
                labels.update(trial)
                break
        else:
            labels.update({model: model for model in same})
    return labels


def _folders(model: str) -> tuple[str, ...]:
    """The folders of the file behind ``model`` (absolute, links followed), or none for a zoo name."""
    files = input_files(model)
    if not files:
        return ()
    return Path(os.path.realpath(next(iter(files.values())))).parent.parts[1:]


def input_files(model: Any, hw: Any = None) -> dict[str, Path]:
    """The files a run reads, by what they are: a saved graph, a user model's file, the hardware
    config's YAML (a bundled one's file too; a ``HardwareConfig`` object reads none). The command
    line keeps every output off them (``accelsim.outputs.check_outputs``).

    >>> sorted(input_files("graphs/chain6.json", "pixel6"))
    ['the graph', 'the hardware config']
    >>> input_files("resnet18", "pixel6")["the hardware config"].name
    'pixel6.yaml'
    """
    found: dict[str, Path] = {}
    if is_saved_graph(model):
        found["the graph"] = Path(model)
    elif isinstance(model, str | Path) and is_user_model(model):
        from frontend.user_model import parse_spec

        found["the model file"] = parse_spec(model).path
    if isinstance(hw, str | Path):
        from accelsim.hw import HardwareConfigError, config_path

        try:
            found["the hardware config"] = config_path(hw)  # a bundled one too: it is a file of the installation
        except HardwareConfigError:
            pass  # an unknown name: load_hw says so, naming it
    return found

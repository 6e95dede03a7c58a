"""A trace cache: each (zoo model, dtype, input shape) is traced once, later runs load its JSON.

``cached_trace(model, dtype, input_shape)`` returns the graph ``frontend.trace_model`` would
return. The first call traces it and saves it with ``frontend.save_graph`` as
``{model}-{dtype}-{key}.json`` in the cache folder (``default_cache_dir()`` unless given); later
calls read that file with ``frontend.load_graph``. A hit imports neither torch nor torchvision,
which is most of a first trace's time (about 5.7 CPU-seconds, see ``frontend.zoo``).

The key (``graph_key``) is a SHA-256 digest over everything that decides the graph:

* the model name, the dtype and the input shape, ``None`` resolved to the zoo's default (so
  ``None`` and the default shape spelled out share one file);
* the installed torch and torchvision versions, read from the package metadata
  (``importlib.metadata``), never by importing them;
* ``FRONTEND_VERSION``, which stands for the frontend's own code. ``frontend.graph`` has no
  format version of its own, so this one number covers the format too.

The key's inputs are also stored in the file, in the graph attribute ``"trace_cache"``
(``save_graph`` keeps extra attributes). A hit checks them against the call and removes the
attribute, so a graph from the cache has exactly the attributes of a freshly traced one. Unlike a
sidecar file, the record cannot get out of step with the graph it describes.

Files are written to a temporary name in the cache folder and renamed over the final name
(``os.replace``), so worker processes tracing the same model at once never read a half-written
file: each sees the old file, no file, or a whole new one (the last writer wins, and the graphs
are the same). A file that does not load (truncated, not JSON, breaks the format, written for
other key inputs) is traced again and overwritten. A leftover ``.*.tmp`` file from a killed
writer is never read, and can be deleted at any time.

A cache folder that cannot be created or written raises ``CacheDirError`` (an ``OSError``, one
line naming the folder) *before* anything is traced. Callers that run many models call
``check_cache_dir`` once first. A folder that can be read but not written still serves hits.
With ``must_save=False`` (``accelsim run`` with the default folder) an unwritable folder only
costs the saving: the model is traced and returned unsaved.

>>> graph_key("resnet18", "int8", None) == graph_key("resnet18", "int8", (1, 3, 224, 224))
True
>>> len(graph_key("resnet18", "int8", None))
20
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import networkx as nx

from frontend import zoo
from frontend.graph import GraphFormatError, dtype_bytes, load_graph, save_graph

#: The frontend's version in the cache key. Bump it whenever a traced graph would change:
#: tracing, shape propagation or costs (``frontend.trace``, ``frontend.fx_capture``,
#: ``frontend.fx_convert``, ``frontend.cost``), how the zoo builds a model or picks its default
#: input (``frontend.zoo``), or the format ``save_graph`` writes (``frontend.graph``). Every
#: cached graph is then traced again.
FRONTEND_VERSION = "1"

#: the graph attribute that holds the key inputs in a cache file (removed from a loaded graph)
RECORD_ATTRIBUTE = "trace_cache"

#: hex characters of the SHA-256 digest kept in the key (80 bits)
KEY_LENGTH = 20

# The names torchvision can build: ``resnet18``, ``segmentation.fcn_resnet50``. A name of this
# shape is safe in a file name; anything else is checked against the zoo, which rejects it.
_MODEL_NAME = re.compile(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)?")


class CacheDirError(OSError):
    """A cache folder that cannot be created or written; the message is one line naming it."""


@dataclass(frozen=True)
class CachedGraph:
    """The result of ``cached_trace``."""

    graph: nx.DiGraph  # the DataflowGraph, as ``frontend.trace_model`` returns it
    path: Path  # the cache file that holds it (or would, when ``saved`` is False)
    hit: bool  # True: loaded from ``path``; False: traced now and written to ``path``
    saved: bool = True  # False: traced now and not written (``must_save=False`` and the folder refused it)


def default_cache_dir() -> Path:
    """The cache folder: ``$ACCELSIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/accelsim/graphs``, else
    ``~/.cache/accelsim/graphs``.

    ``$ACCELSIM_CACHE_DIR`` is the folder of graph files itself (nothing is added to it). As the
    XDG spec asks, an empty or relative ``$XDG_CACHE_HOME`` is ignored.
    """
    override = os.environ.get("ACCELSIM_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "accelsim" / "graphs"


def check_cache_dir(path: str | Path) -> Path:
    """Create the folder ``path`` if needed and check that files can be written in it.

    Returns it as a ``Path``. Raises ``CacheDirError`` naming the folder and the reason: it
    cannot be created, is not a folder, or a file cannot be created in it. The check writes and
    deletes a small file, because permission bits alone do not tell (read-only mounts, ACLs,
    root).
    """
    folder = Path(path).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise CacheDirError(f"trace cache folder {folder}: exists and is not a folder") from None
    except OSError as exc:
        raise CacheDirError(f"trace cache folder {folder}: cannot create it: {exc.strerror or exc}") from None
    probe = folder / f".write-check.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise CacheDirError(f"trace cache folder {folder}: cannot write in it: {exc.strerror or exc}") from None
    return folder


def _installed_version(distribution: str) -> str:
    """The installed version of ``distribution``, from its metadata (without importing it)."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def _check_model(model: str) -> None:
    """``UnknownModelError`` unless torchvision (or the zoo itself) can build ``model``.

    ``list_models()`` names need no check. Other names are looked up in torchvision, which
    imports torch; ``cached_trace`` looks up only names it has no file for.
    """
    zoo.check_model_name(model)


def _resolved_shape(model: str, input_shape: Sequence[int] | None) -> list[int] | dict[str, list[int]]:
    """The input shape the model is traced at, JSON-ready: ``input_shape`` checked, or the default."""
    if model == "transformer":
        if input_shape is not None:
            raise ValueError(f"model 'transformer' takes two inputs of fixed shapes ({zoo.TRANSFORMER_SHAPES}); "
                             f"input_shape cannot be set for it")
        return {name: list(shape) for name, shape in zoo.TRANSFORMER_SHAPES.items()}
    shape = input_shape if input_shape is not None else zoo.default_input_shape(model)
    return list(zoo.checked_input_shape(model, shape))


def _key_inputs(model: str, dtype: str, input_shape: Sequence[int] | None) -> dict[str, Any]:
    """Everything the key is a digest of, and the digest itself under ``"key"``."""
    dtype_bytes(dtype)  # an unknown dtype fails here (GraphFormatError), not after a trace
    inputs: dict[str, Any] = {
        "model": model,
        "dtype": dtype,
        "input_shape": _resolved_shape(model, input_shape),
        "torch": _installed_version("torch"),
        "torchvision": _installed_version("torchvision"),
        "frontend_version": FRONTEND_VERSION,
    }
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
    inputs["key"] = hashlib.sha256(text.encode()).hexdigest()[:KEY_LENGTH]
    return inputs


def graph_key(model: str, dtype: str, input_shape: tuple[int, ...] | None) -> str:
    """The cache key of ``model`` traced at ``dtype`` and ``input_shape`` (hex, ``KEY_LENGTH`` chars).

    Raises ``UnknownModelError`` for a name the zoo does not know (for names outside
    ``list_models()`` this asks torchvision, which imports torch), ``ValueError`` for an input
    shape that is not positive integers or is set for ``"transformer"``, and
    ``GraphFormatError`` for an unknown dtype.
    """
    _check_model(model)
    key: str = _key_inputs(model, dtype, input_shape)["key"]
    return key


def _load(path: Path, expected: dict[str, Any]) -> nx.DiGraph | None:
    """The graph in ``path`` if it loads and was written for ``expected``; ``None`` otherwise."""
    if not path.is_file():
        return None
    try:
        graph = load_graph(path)
    except GraphFormatError:  # truncated, not JSON, or not a DataflowGraph: trace it again
        return None
    if graph.graph.pop(RECORD_ATTRIBUTE, None) != expected:
        return None
    return graph


def _write(graph: nx.DiGraph, path: Path, record: dict[str, Any]) -> None:
    """Save ``graph`` with ``record`` to ``path`` at once (a temporary file, then a rename)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    graph.graph[RECORD_ATTRIBUTE] = record
    try:
        save_graph(graph, temporary)
        os.replace(temporary, path)
    except OSError as exc:
        raise CacheDirError(f"trace cache folder {path.parent}: cannot write {path.name}: "
                            f"{exc.strerror or exc}") from None
    finally:
        del graph.graph[RECORD_ATTRIBUTE]
        with contextlib.suppress(OSError):  # gone after the rename; otherwise best effort
            temporary.unlink(missing_ok=True)


def cached_trace(model: str, dtype: str, input_shape: tuple[int, ...] | None = None,
                 cache_dir: str | Path | None = None, *, must_save: bool = True) -> CachedGraph:
    """``frontend.trace_model(model, dtype=dtype, input_shape=input_shape)``, from the cache if there.

    ``cache_dir`` defaults to ``default_cache_dir()``. On a hit the graph is loaded from
    ``{model}-{dtype}-{graph_key(...)}.json`` without importing torch; on a miss (no file, or
    one that does not load) the model is traced and the file written at once (see the module
    docstring).

    Raises what ``trace_model`` raises (``UnknownModelError``, ``ValueError`` for a bad input
    shape, ``TraceError``), ``GraphFormatError`` for an unknown dtype, and ``CacheDirError``
    when a miss finds the folder cannot be written, before tracing. With ``must_save=False`` a
    folder that cannot be created or written costs only the saving: the model is traced and
    returned with ``saved=False`` (``accelsim run`` does this with the default folder, so a
    read-only home does not stop a run that never asked for a cache).
    """
    if not _MODEL_NAME.fullmatch(model):
        _check_model(model)  # raises UnknownModelError; the name never reaches a file name
    folder = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    record = _key_inputs(model, dtype, input_shape)
    path = folder / f"{model}-{dtype}-{record['key']}.json"
    graph = _load(path, record)
    if graph is not None:
        return CachedGraph(graph=graph, path=path, hit=True)
    try:
        check_cache_dir(folder)
    except CacheDirError:
        if must_save:
            raise
        return CachedGraph(graph=zoo.trace_model(model, dtype=dtype, input_shape=input_shape), path=path,
                           hit=False, saved=False)
    graph = zoo.trace_model(model, dtype=dtype, input_shape=input_shape)
    try:
        _write(graph, path, record)
    except CacheDirError:
        if must_save:
            raise
        return CachedGraph(graph=graph, path=path, hit=False, saved=False)
    return CachedGraph(graph=graph, path=path, hit=False)

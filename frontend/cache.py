"""A trace cache: each (model, dtype, input shapes) is traced once, later runs load its JSON.

``cached_trace(model, dtype, input_shape, batch=, options=)`` returns the graph
``frontend.trace_model`` would return (``frontend.user_model.trace_user_model`` for a user
model spec, ``path/to/file.py:function``). The first call traces it and saves it with ``frontend.save_graph`` as
``{model}-{dtype}-{key}.json`` in the cache folder (``default_cache_dir()`` unless given); later
calls read that file with ``frontend.load_graph``. A hit imports neither torch nor torchvision,
which is most of a first trace's time (about 5.7 CPU-seconds, see ``frontend.zoo``).

The key (``graph_key``) is a SHA-256 digest over everything that decides the graph:

* the model name, the dtype and the input shapes the model is traced at
  (``zoo.resolve_input_shapes``: ``None`` resolved to the zoo's default, ``batch`` folded in,
  so ``None`` and the default spelled out share one file, as do ``batch=2`` and the batched
  shape spelled out), and the family's build options when it has any (``zoo.model_options``:
  RAFT's ``num_flow_updates``, its default filled in);
* for a user model spec instead of a name: the SHA-256 of the file's bytes, the graph name
  (``STEM.FUNCTION``), the input shapes and the batch as asked (``None`` when not given: the
  function's own example inputs are known only once the file runs, and the file's bytes fix
  them). Editing the file changes the key; moving or copying it does not. Modules the file
  imports are not part of the key: after editing one of those, run with ``--no-cache`` once
  (``cache=False``) or change the file itself (a comment will do);
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
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import networkx as nx

from frontend import user_model, zoo
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


def _resolved_shape(model: str, input_shape: Any, batch: int | None) -> Any:
    """The input shapes the model is traced at, JSON-ready (``zoo.resolve_input_shapes``): one
    list for a one-input model, a list per input for RAFT's two frames, and ``{"src": ...,
    "tgt": ...}`` for ``"transformer"`` (the forms of the keys written before models had more
    inputs, so a default shape keeps its key)."""
    shapes = zoo.resolve_input_shapes(model, input_shape, batch)
    if model == "transformer":
        return {name: list(shape) for name, shape in zip(zoo.TRANSFORMER_SHAPES, shapes, strict=True)}
    if len(shapes) == 1:
        return list(shapes[0])
    return [list(shape) for shape in shapes]


def _digest(inputs: dict[str, Any]) -> dict[str, Any]:
    """``inputs`` with their digest added under ``"key"``."""
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
    inputs["key"] = hashlib.sha256(text.encode()).hexdigest()[:KEY_LENGTH]
    return inputs


def _key_inputs(model: str, dtype: str, input_shape: Any, batch: int | None = None,
                options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Everything the key of a zoo model is a digest of, and the digest itself under ``"key"``."""
    dtype_bytes(dtype)  # an unknown dtype fails here (GraphFormatError), not after a trace
    inputs: dict[str, Any] = {
        "model": model,
        "dtype": dtype,
        "input_shape": _resolved_shape(model, input_shape, batch),
        "torch": _installed_version("torch"),
        "torchvision": _installed_version("torchvision"),
        "frontend_version": FRONTEND_VERSION,
    }
    chosen = zoo.model_options(model, options)
    if chosen:  # only families with options have the entry, so other keys are as they were
        inputs["options"] = chosen
    return _digest(inputs)


def _user_key_inputs(spec: user_model.UserModelSpec, dtype: str, input_shape: Any, batch: int | None,
                     options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The key inputs of a user model spec: its file's bytes, not its path (see the module docstring)."""
    if options:
        raise ValueError(f"user model {spec.text} takes no model options (its function takes no arguments), "
                         f"got {', '.join(sorted(options))}")
    dtype_bytes(dtype)
    shapes = user_model.as_shapes(f"user model {spec.text}", input_shape)
    inputs: dict[str, Any] = {
        "user_model": spec.name,
        "file_sha256": user_model.file_digest(spec),
        "dtype": dtype,
        "input_shape": [list(shape) for shape in shapes] if shapes is not None else None,
        "batch": user_model.check_batch(f"user model {spec.text}", batch),
        "torch": _installed_version("torch"),
        "torchvision": _installed_version("torchvision"),
        "frontend_version": FRONTEND_VERSION,
    }
    return _digest(inputs)


def graph_key(model: str, dtype: str, input_shape: Any = None, batch: int | None = None,
              options: Mapping[str, Any] | None = None) -> str:
    """The cache key of ``model`` traced at ``dtype``, ``input_shape`` (one shape, or one per
    input), ``batch`` and ``options`` (hex, ``KEY_LENGTH`` chars).

    ``model`` is a zoo name or a user model spec (``path/to/file.py:function``). Raises
    ``UnknownModelError`` for a name the zoo does not know (for names outside ``list_models()``
    this asks torchvision, which imports torch), ``ValueError`` for an input shape that is not
    positive integers or is set for ``"transformer"``, a bad batch or model option, or a user
    model file that is not there (``UserModelError``), and ``GraphFormatError`` for an unknown
    dtype.
    """
    if user_model.is_user_model(model):
        spec = user_model.check_spec(model)
        key: str = _user_key_inputs(spec, dtype, input_shape, batch, options)["key"]
        return key
    _check_model(model)
    key = _key_inputs(model, dtype, input_shape, batch, options)["key"]
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


def cached_trace(model: str, dtype: str, input_shape: Any = None, cache_dir: str | Path | None = None, *,
                 must_save: bool = True, batch: int | None = None,
                 options: Mapping[str, Any] | None = None) -> CachedGraph:
    """``frontend.trace_model(model, dtype, input_shape, batch, options)``, from the cache if there.

    ``model`` is a zoo name or a user model spec (``path/to/file.py:function``, traced by
    ``frontend.user_model.trace_user_model``; it takes no ``options``). ``input_shape`` is one
    shape or one per input; ``batch`` replaces the batch dimension of every input.
    ``cache_dir`` defaults to ``default_cache_dir()``. On a hit the graph is loaded from
    ``{model}-{dtype}-{graph_key(...)}.json`` (``user-{STEM.FUNCTION}-{dtype}-{key}.json`` for a
    user model) without importing torch; on a miss (no file, or one that does not load) the
    model is traced and the file written at once (see the module docstring).

    Raises what ``trace_model`` raises (``UnknownModelError``, ``ValueError`` for a bad input
    shape, batch or option, ``TraceError``) or ``trace_user_model`` (``UserModelError``),
    ``GraphFormatError`` for an unknown dtype, and ``CacheDirError`` when a miss finds the
    folder cannot be written, before tracing. With ``must_save=False`` a folder that cannot be
    created or written costs only the saving: the model is traced and returned with
    ``saved=False`` (``accelsim run`` does this with the default folder, so a read-only home
    does not stop a run that never asked for a cache).
    """
    folder = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    if user_model.is_user_model(model):
        spec = user_model.check_spec(model)
        record = _user_key_inputs(spec, dtype, input_shape, batch, options)
        stem = re.sub(r"[^A-Za-z0-9_.]", "_", spec.name)
        path = folder / f"user-{stem}-{dtype}-{record['key']}.json"

        def trace_now() -> nx.DiGraph:
            return user_model.trace_user_model(spec, dtype, input_shape, batch)
    else:
        if not _MODEL_NAME.fullmatch(model):
            _check_model(model)  # raises UnknownModelError; the name never reaches a file name
        record = _key_inputs(model, dtype, input_shape, batch, options)
        path = folder / f"{model}-{dtype}-{record['key']}.json"
        # batch and options are passed only when given: the graph is the same, and
        # ``zoo.trace_model``'s other callers (and stand-ins in tests) need not know them
        extra: dict[str, Any] = {}
        if batch is not None:
            extra["batch"] = batch
        if options:
            extra["options"] = dict(options)

        def trace_now() -> nx.DiGraph:
            return zoo.trace_model(model, dtype=dtype, input_shape=input_shape, **extra)
    graph = _load(path, record)
    if graph is not None:
        return CachedGraph(graph=graph, path=path, hit=True)
    try:
        check_cache_dir(folder)
    except CacheDirError:
        if must_save:
            raise
        return CachedGraph(graph=trace_now(), path=path, hit=False, saved=False)
    graph = trace_now()
    try:
        _write(graph, path, record)
    except CacheDirError:
        if must_save:
            raise
        return CachedGraph(graph=graph, path=path, hit=False, saved=False)
    return CachedGraph(graph=graph, path=path, hit=False)

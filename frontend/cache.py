"""A trace cache: each (model, dtype, input shapes) is traced once, later runs load its JSON.

``cached_trace(model, dtype, input_shape, batch=, options=)`` returns the graph
``frontend.trace_model`` would return (``frontend.user_model.trace_user_model`` for a user
model spec, ``path/to/file.py:function``). The first call traces it and saves it, in the JSON
form of ``frontend.save_graph``, as ``{model}-{dtype}-{key}.json`` in the cache folder
(``default_cache_dir()`` unless given); later calls read that file, once its digest proves it
(below). A hit imports neither torch nor torchvision, which is most of a first trace's time
(about 5.7 CPU-seconds, see ``frontend.zoo``).

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

Each entry proves itself: the record holds ``content_sha256``, the SHA-256 of the file's bytes
as written, read with the digest's own 64 hex characters as zeros. The file stays a graph that
``frontend.load_graph`` reads. A hit reads the bytes once, checks the digest, and only then
parses them (``frontend.graph.parse_graph_json``, once) and builds the graph
(``graph_from_json``, which checks the format). The digest covers the bytes, not a canonical
re-serialisation of the parsed data (``json.dumps(data, sort_keys=True)``): on resnet50's
170 kB entry the check takes about 0.15 ms of a hit's 8 to 12 ms, where serialising the parsed
data again took about 3 ms, more than parsing it (1.6 ms); every edit counts, even one to
spacing; a damaged file is never parsed; and the check does not depend on how ``json``
formats numbers. So an entry edited in place that is still valid JSON (an
activation's ``nbytes``, a tensor's shape) is not used: its content no longer matches its
digest. The digest guards against damage and edits by mistake, not against someone who
recomputes it on purpose.

An entry that is not used is traced again, so the answer is the one without a cache, and a
``CacheEntryWarning`` (``warnings.warn``, one line: ``trace cache entry PATH: why; traced
again``) says why:

* content that does not match its digest, or no digest at all (truncated, emptied,
  zero-filled, not a cache entry), or a proven entry whose record names other key inputs (a
  file copied or renamed by hand);
* something at the path that cannot be read (permission denied, a symlink loop, a read
  error): traced again and written over when the folder can be written;
* something at the path that is not a file (a folder, a FIFO, a socket, a device): traced
  again and not saved; what is there is left as it is (a user's folder is never deleted);
* an entry that cannot be written after the trace (the disk is full, a folder appeared at the
  path): the graph is returned unsaved (``saved=False``).

An entry written before entries had a digest (a graph whose record has no ``content_sha256``)
is not proven either; it is traced again and written over without a warning, as a newer
version of the cache would replace it. ``FRONTEND_VERSION`` did not change for the digest, so
such entries keep their names and are replaced one by one as they are used. The command line
(``accelsim run``, ``size``, ``sweep``) prints each warning as one ``warning: ...`` line on
stderr (``accelsim.cli.main``); a sweep traces in its parent process, so each entry is named
once.

Files are written to a temporary name in the cache folder and renamed over the final name
(``os.replace``), so worker processes tracing the same model at once never read a half-written
file: each sees the old file, no file, or a whole new one (the last writer wins, and the graphs
are the same). A leftover ``.*.tmp`` file from a killed writer is never read, and can be
deleted at any time.

A cache folder that cannot be created or written raises ``CacheDirError`` (an ``OSError``, one
line naming the folder) *before* anything is traced. Callers that run many models call
``check_cache_dir`` once first. A folder that can be read but not written still serves hits.
With ``must_save=False`` (``accelsim run`` with the default folder) an unwritable folder only
costs the saving: the model is traced and returned unsaved, without a warning. Problems with
one entry are never errors: only the folder is.

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
import stat
import uuid
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import networkx as nx

from frontend import user_model, zoo
from frontend.errors import CacheEntryWarning  # noqa: F401  (re-exported: frontend.cache.CacheEntryWarning)
from frontend.graph import GraphFormatError, dtype_bytes, graph_from_json, graph_to_json, parse_graph_json
from frontend.trace import Tracing

#: The frontend's version in the cache key. Bump it whenever a traced graph would change:
#: tracing, shape propagation or costs (``frontend.trace``, ``frontend.fx_capture``,
#: ``frontend.fx_convert``, ``frontend.cost``), how the zoo builds a model or picks its default
#: input (``frontend.zoo``), or the format ``save_graph`` writes (``frontend.graph``). Every
#: cached graph is then traced again.
FRONTEND_VERSION = "7"

#: the graph attribute that holds the key inputs in a cache file (removed from a loaded graph)
RECORD_ATTRIBUTE = "trace_cache"

#: hex characters of the SHA-256 digest kept in the key (80 bits)
KEY_LENGTH = 20

#: the field of the record that holds the entry's content digest (SHA-256, 64 hex characters)
DIGEST_FIELD = "content_sha256"
# how the field's value begins in the file (``json.dumps(..., indent=1)`` writes ": " after a key)
_DIGEST_LEAD = f'"{DIGEST_FIELD}": "'.encode()
_DIGEST_CHARS = 64
# the digest's place holds these while the digest is computed, when writing and when checking
_BLANK_DIGEST = b"0" * _DIGEST_CHARS

# The names torchvision can build: ``resnet18``, ``segmentation.fcn_resnet50``. A name of this
# shape is safe in a file name; anything else is checked against the zoo, which rejects it.
_MODEL_NAME = re.compile(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)?")


class CacheDirError(OSError):
    """A cache folder that cannot be created or written; the message is one line naming it."""


class _EntryUnusable(Exception):
    """Why the thing at an entry's path cannot be read (internal to ``_read_entry``)."""

    def __init__(self, reason: str, replaceable: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.replaceable = replaceable  # False: not a file (a folder, ...), left alone


@dataclass(frozen=True)
class _Lookup:
    """What ``_load`` found at an entry's path."""

    graph: nx.DiGraph | None = None  # the graph, on a hit
    problem: str | None = None  # why an entry there is not used (None: a hit, no entry, or an older one)
    replaceable: bool = True  # False: something other than a file is there; the trace is not saved over it


@dataclass(frozen=True)
class CachedGraph:
    """The result of ``cached_trace``."""

    graph: nx.DiGraph  # the DataflowGraph, as ``frontend.trace_model`` returns it
    path: Path  # the cache file that holds it (or would, when ``saved`` is False)
    hit: bool  # True: loaded from ``path``; False: traced now and written to ``path``
    saved: bool = True  # False: traced now and not written (the folder refused it with ``must_save=False``,
    # something other than a file is at ``path``, or the write failed: a ``CacheEntryWarning`` said so)


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


def _tracing(inputs: dict[str, Any], tracing: Tracing | None) -> dict[str, Any]:
    """``inputs`` with the tracer choice added when it is not the default, so default keys are as they were."""
    if tracing is not None and tracing.method != "auto":
        inputs["trace_method"] = tracing.method
    if tracing is not None and tracing.host:
        inputs["host"] = list(tracing.host)
    return inputs


def _key_inputs(model: str, dtype: str, input_shape: Any, batch: int | None = None,
                options: Mapping[str, Any] | None = None, tracing: Tracing | None = None) -> dict[str, Any]:
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
    return _digest(_tracing(inputs, tracing))


def _user_key_inputs(spec: user_model.UserModelSpec, dtype: str, input_shape: Any, batch: int | None,
                     options: Mapping[str, Any] | None, tracing: Tracing | None = None) -> dict[str, Any]:
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
    return _digest(_tracing(inputs, tracing))


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


def _kind(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, for a message."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _read_entry(path: Path) -> bytes | None:
    """The bytes of the entry at ``path``, read once; ``None`` when nothing is there.

    ``_EntryUnusable`` says why something there cannot be used: it cannot be read, or it is
    not a regular file (then ``replaceable`` is False). The file is opened without blocking
    and checked on the open descriptor, so a FIFO never stalls the read and nothing can be
    swapped in between the check and the read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):  # no entry (a symlink to nothing, or no folder): a miss
        return None
    except OSError as exc:
        if os.path.isdir(path):  # Windows cannot open a folder at all
            raise _EntryUnusable("is a folder, not a file", replaceable=False) from None
        raise _EntryUnusable(f"cannot be read: {exc.strerror or exc}") from None
    handle = None
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISREG(mode):
            handle = os.fdopen(descriptor, "rb")  # after the check: fdopen refuses a folder with its own error
            return handle.read()
    except OSError as exc:
        raise _EntryUnusable(f"cannot be read: {exc.strerror or exc}") from None
    finally:
        if handle is not None:
            handle.close()
        else:
            os.close(descriptor)
    raise _EntryUnusable(f"is {_kind(mode)}, not a file", replaceable=False)


def _content_digest(raw: bytes, at: int) -> bytes:
    """The SHA-256 (hex) of ``raw`` with the ``_DIGEST_CHARS`` bytes at ``at`` read as zeros."""
    view = memoryview(raw)
    digest = hashlib.sha256(view[:at])
    digest.update(_BLANK_DIGEST)
    digest.update(view[at + _DIGEST_CHARS:])
    return digest.hexdigest().encode()


def _proven(raw: bytes) -> bool | None:
    """True: ``raw`` is the bytes a writer stored with their digest; False: they are not (edited
    or damaged); None: they hold no digest at all."""
    lead = raw.find(_DIGEST_LEAD)
    if lead < 0:
        return None
    at = lead + len(_DIGEST_LEAD)
    if raw.find(_DIGEST_LEAD, at) >= 0:  # the writer stores one; a second is an edit
        return False
    return raw[at + _DIGEST_CHARS:at + _DIGEST_CHARS + 1] == b'"' and raw[at:at + _DIGEST_CHARS] == \
        _content_digest(raw, at)


def _older_entry(raw: bytes) -> bool:
    """Whether ``raw`` is an entry written before entries had a digest: a JSON graph whose
    record has no digest field. Only an entry without a digest is parsed for this."""
    try:
        data = parse_graph_json(raw, "entry")
    except GraphFormatError:
        return False
    attributes = data.get("graph") if isinstance(data, dict) else None
    record = attributes.get(RECORD_ATTRIBUTE) if isinstance(attributes, dict) else None
    return isinstance(record, dict) and DIGEST_FIELD not in record


def _load(path: Path, expected: dict[str, Any]) -> _Lookup:
    """The graph in ``path`` if its digest proves it and it was written for ``expected``;
    otherwise why not (see the module docstring).

    Unlike ``load_graph`` this does not count the operators before parsing: a proven entry is a
    graph a trace made, which tracing it again would make too, and the run checks its exact
    count against its own limit (``--max-operators``)."""
    try:
        raw = _read_entry(path)
    except _EntryUnusable as unusable:
        return _Lookup(problem=unusable.reason, replaceable=unusable.replaceable)
    if raw is None:
        return _Lookup()
    proven = _proven(raw)
    if proven is None:
        if _older_entry(raw):  # written by an older version: replaced without a word
            return _Lookup()
        return _Lookup(problem="it has no content digest (damaged, or not a trace cache entry)")
    if not proven:
        return _Lookup(problem="its content does not match its digest (edited or damaged)")
    try:
        graph = graph_from_json(parse_graph_json(raw, path.name))
    except GraphFormatError as exc:  # proven, yet not a graph: only a faulty writer gets here
        return _Lookup(problem=f"does not load: {exc}")
    record = graph.graph.pop(RECORD_ATTRIBUTE, None)
    if not isinstance(record, dict) or {k: v for k, v in record.items() if k != DIGEST_FIELD} != expected:
        return _Lookup(problem="it was written for other key inputs (model, dtype, input shapes or versions)")
    return _Lookup(graph=graph)


def _entry_bytes(graph: nx.DiGraph, record: dict[str, Any]) -> bytes:
    """The bytes of the entry for ``graph``: its JSON (as ``save_graph`` writes it) with ``record``
    and, in it, the digest of those bytes (see ``_content_digest``)."""
    graph.graph[RECORD_ATTRIBUTE] = {**record, DIGEST_FIELD: _BLANK_DIGEST.decode()}
    try:
        raw = json.dumps(graph_to_json(graph), indent=1).encode()
    finally:
        del graph.graph[RECORD_ATTRIBUTE]
    lead = raw.find(_DIGEST_LEAD)
    at = lead + len(_DIGEST_LEAD)
    if lead < 0 or raw.find(_DIGEST_LEAD, at) >= 0:  # another attribute of that name: a reader could not tell
        raise ValueError(f"the graph holds a field named {DIGEST_FIELD!r} besides the cache's own")
    return raw[:at] + _content_digest(raw, at) + raw[at + _DIGEST_CHARS:]


def _save_bytes(raw: bytes, target: Path) -> None:
    """Write ``raw`` to the new file ``target``."""
    with open(target, "xb") as handle:
        handle.write(raw)


def _write(graph: nx.DiGraph, path: Path, record: dict[str, Any]) -> None:
    """Save ``graph`` with ``record`` to ``path`` at once (a temporary file, then a rename).
    Raises ``OSError`` when it cannot (``ValueError`` for a graph whose digest could not be
    found again); the temporary file is removed either way."""
    raw = _entry_bytes(graph, record)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        _save_bytes(raw, temporary)
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(OSError):  # gone after the rename; otherwise best effort
            temporary.unlink(missing_ok=True)


def _warn(path: Path, what: str) -> None:
    """A ``CacheEntryWarning`` naming the entry at ``path``, attributed to ``cached_trace``'s caller."""
    warnings.warn(f"trace cache entry {path}: {what}", CacheEntryWarning, stacklevel=3)


def cached_trace(model: str, dtype: str, input_shape: Any = None, cache_dir: str | Path | None = None, *,
                 must_save: bool = True, batch: int | None = None,
                 options: Mapping[str, Any] | None = None, tracing: Tracing | None = None) -> CachedGraph:
    """``frontend.trace_model(model, dtype, input_shape, batch, options)``, from the cache if there.

    ``tracing`` chooses the tracer and the host operators (``frontend.trace.Tracing``; the key
    has them when they are not the default, so a graph torch.export made is not one fx made).

    ``model`` is a zoo name or a user model spec (``path/to/file.py:function``, traced by
    ``frontend.user_model.trace_user_model``; it takes no ``options``). ``input_shape`` is one
    shape or one per input; ``batch`` replaces the batch dimension of every input.
    ``cache_dir`` defaults to ``default_cache_dir()``. On a hit the graph is loaded from
    ``{model}-{dtype}-{graph_key(...)}.json`` (``user-{STEM.FUNCTION}-{dtype}-{key}.json`` for a
    user model) without importing torch, once its digest proves it; on a miss (no entry, or one
    that is not proven or cannot be read) the model is traced and the file written at once. An
    entry that is not used, or cannot be written, is a ``CacheEntryWarning`` naming it and why
    (see the module docstring); the graph is the one a fresh trace gives.

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
        record = _user_key_inputs(spec, dtype, input_shape, batch, options, tracing)
        stem = re.sub(r"[^A-Za-z0-9_.]", "_", spec.name)
        path = folder / f"user-{stem}-{dtype}-{record['key']}.json"

        def trace_now() -> nx.DiGraph:
            return user_model.trace_user_model(spec, dtype, input_shape, batch, tracing=tracing)
    else:
        if not _MODEL_NAME.fullmatch(model):
            _check_model(model)  # raises UnknownModelError; the name never reaches a file name
        record = _key_inputs(model, dtype, input_shape, batch, options, tracing)
        path = folder / f"{model}-{dtype}-{record['key']}.json"
        # batch and options are passed only when given: the graph is the same, and
        # ``zoo.trace_model``'s other callers (and stand-ins in tests) need not know them
        extra: dict[str, Any] = {}
        if batch is not None:
            extra["batch"] = batch
        if options:
            extra["options"] = dict(options)
        if tracing is not None and tracing != Tracing():
            extra["tracing"] = tracing

        def trace_now() -> nx.DiGraph:
            return zoo.trace_model(model, dtype=dtype, input_shape=input_shape, **extra)
    lookup = _load(path, record)
    if lookup.graph is not None:
        return CachedGraph(graph=lookup.graph, path=path, hit=True)
    try:
        check_cache_dir(folder)
        writable = True
    except CacheDirError:
        if must_save:
            raise
        writable = False
    if lookup.problem is not None:
        after = "traced again" if lookup.replaceable else "traced again and not saved (it is left as it is)"
        _warn(path, f"{lookup.problem}; {after}")
    graph = trace_now()
    if not writable or not lookup.replaceable:
        return CachedGraph(graph=graph, path=path, hit=False, saved=False)
    try:
        _write(graph, path, record)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        _warn(path, f"cannot be written: {reason}; the graph was traced and is not saved")
        return CachedGraph(graph=graph, path=path, hit=False, saved=False)
    return CachedGraph(graph=graph, path=path, hit=False)

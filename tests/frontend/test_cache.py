"""The trace cache: a zoo model is traced once per key, and every later call loads the same graph."""

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from frontend import UnknownModelError, cache, zoo
from frontend.cache import CacheDirError, CacheEntryWarning, cached_trace, check_cache_dir, default_cache_dir, graph_key
from frontend.graph import GraphFormatError, graph_to_json, load_graph

MODEL = "squeezenet1_0"  # the fastest zoo model to trace (64 operators)
SMALL = (1, 3, 64, 64)  # a small input keeps the trace quick; the key is what is tested


def as_json(graph):
    return json.loads(json.dumps(graph_to_json(graph)))


@pytest.fixture
def traces(monkeypatch):
    """The models ``cached_trace`` traced, in order (the real ``trace_model`` still runs)."""
    calls = []
    real = zoo.trace_model

    def counting(name, dtype="fp32", input_shape=None):
        calls.append((name, dtype, input_shape))
        return real(name, dtype=dtype, input_shape=input_shape)

    monkeypatch.setattr(zoo, "trace_model", counting)
    return calls


def test_first_call_traces_and_second_loads_the_same_graph(tmp_path, traces):
    first = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    assert not first.hit and len(traces) == 1
    assert first.path.parent == tmp_path and first.path.is_file()
    assert first.path.name == f"{MODEL}-int8-{graph_key(MODEL, 'int8', SMALL)}.json"

    second = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    assert second.hit and len(traces) == 1
    assert second.path == first.path
    # same operators, tensors, shapes, nbytes, attributes: the whole JSON form is equal
    assert as_json(second.graph) == as_json(first.graph)
    assert as_json(second.graph) == as_json(zoo.trace_model(MODEL, dtype="int8", input_shape=SMALL))
    assert cache.RECORD_ATTRIBUTE not in second.graph.graph


def test_the_key_inputs_are_stored_in_the_file(tmp_path, traces):
    path = cached_trace(MODEL, "bf16", SMALL, cache_dir=tmp_path).path
    record = json.loads(path.read_text())["graph"][cache.RECORD_ATTRIBUTE]
    assert record["model"] == MODEL and record["dtype"] == "bf16" and record["input_shape"] == list(SMALL)
    assert record["frontend_version"] == cache.FRONTEND_VERSION
    assert record["torch"] == cache._installed_version("torch") != "not installed"
    assert record["torchvision"] == cache._installed_version("torchvision") != "not installed"
    assert record["key"] == graph_key(MODEL, "bf16", SMALL)


def test_default_input_shape_and_none_share_one_entry(tmp_path, traces):
    assert graph_key(MODEL, "fp32", None) == graph_key(MODEL, "fp32", zoo.default_input_shape(MODEL))
    assert not cached_trace(MODEL, "fp32", None, cache_dir=tmp_path).hit
    assert cached_trace(MODEL, "fp32", zoo.default_input_shape(MODEL), cache_dir=tmp_path).hit
    assert len(traces) == 1


def test_another_dtype_or_input_shape_misses(tmp_path, traces):
    cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    assert not cached_trace(MODEL, "fp32", SMALL, cache_dir=tmp_path).hit
    other = cached_trace(MODEL, "int8", (2, 3, 64, 64), cache_dir=tmp_path)
    assert not other.hit
    assert other.graph.graph["tensors"][other.graph.graph["inputs"][0]]["shape"] == [2, 3, 64, 64]
    assert len(traces) == 3 and len(list(tmp_path.glob("*.json"))) == 3


def test_a_new_torch_version_misses(tmp_path, traces, monkeypatch):
    cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    real = cache._installed_version
    monkeypatch.setattr(cache, "_installed_version", lambda name: "99.0" if name == "torch" else real(name))
    again = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    assert not again.hit and len(traces) == 2
    assert cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path).hit


def test_a_new_frontend_version_misses(tmp_path, traces, monkeypatch):
    old = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    monkeypatch.setattr(cache, "FRONTEND_VERSION", cache.FRONTEND_VERSION + "-next")
    new = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    assert not new.hit and new.path != old.path and len(traces) == 2


@pytest.mark.parametrize(("damage", "why"), [
    (lambda text: text[: len(text) // 2], "does not match its digest"),  # truncated: not valid JSON
    (lambda text: "", "has no content digest"),
    (lambda text: "\0" * len(text), "has no content digest"),  # zero-filled, as after a crash
    (lambda text: "[1, 2, 3]", "has no content digest"),  # JSON, but not a graph
    (lambda text: text.replace('"nbytes": ', '"nbytes": -', 1), "does not match its digest"),  # breaks the format
    (lambda text: text.replace(f'"frontend_version": "{cache.FRONTEND_VERSION}"', '"frontend_version": "0"'),
     "does not match its digest"),
], ids=["truncated", "empty", "zero-filled", "not-a-graph", "bad-format", "other-key-inputs"])
def test_a_damaged_file_is_traced_again_and_overwritten(tmp_path, traces, damage, why):
    good = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    text = good.path.read_text()
    good.path.write_text(damage(text))
    with pytest.warns(CacheEntryWarning, match=why) as seen:
        again = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    [message] = [str(w.message) for w in seen]
    assert message.startswith(f"trace cache entry {good.path}: ") and message.endswith("; traced again")
    assert not again.hit and again.saved and again.path == good.path and len(traces) == 2
    assert good.path.read_text() == text
    assert cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path).hit


def _edit_largest_activation(path: Path, edit) -> None:
    """Rewrite the entry at ``path`` as valid JSON with ``edit`` applied to its largest activation's record."""
    data = json.loads(path.read_text())
    tensors = data["graph"]["tensors"]
    name = max((t for t, rec in tensors.items() if rec["kind"] == "activation"), key=lambda t: tensors[t]["nbytes"])
    edit(tensors[name])
    path.write_text(json.dumps(data, indent=1))
    load_graph(path)  # still a graph that passes every format check


def _nbytes_times_64(rec):
    rec["nbytes"] *= 64


def _shape_and_bytes_times_2(rec):
    rec["shape"][0] *= 2
    rec["nbytes"] *= 2


@pytest.mark.parametrize("edit", [_nbytes_times_64, _shape_and_bytes_times_2], ids=["nbytes-x64", "shape-and-bytes-x2"])
def test_an_entry_edited_in_place_that_still_loads_is_traced_again(tmp_path, traces, edit):
    first = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    written = first.path.read_bytes()
    _edit_largest_activation(first.path, edit)
    with pytest.warns(CacheEntryWarning) as seen:
        again = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    assert [str(w.message) for w in seen] == [
        f"trace cache entry {first.path}: its content does not match its digest (edited or damaged); traced again"]
    assert not again.hit and len(traces) == 2
    assert as_json(again.graph) == as_json(first.graph)  # the graph a trace gives, not the edited one
    assert first.path.read_bytes() == written  # written over by the fresh trace
    assert cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path).hit


def test_the_entry_holds_the_digest_of_its_bytes_and_stays_a_graph_file(tmp_path, traces):
    path = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path).path
    raw = path.read_bytes()
    digest = json.loads(raw)["graph"][cache.RECORD_ATTRIBUTE][cache.DIGEST_FIELD]
    assert len(digest) == 64 and raw.count(digest.encode()) == 1
    assert hashlib.sha256(raw.replace(digest.encode(), b"0" * 64)).hexdigest() == digest
    graph = load_graph(path)  # an ordinary graph file, its record kept as an extra attribute
    assert graph.graph[cache.RECORD_ATTRIBUTE][cache.DIGEST_FIELD] == digest


def test_an_entry_without_a_digest_is_traced_again_silently_and_rewritten(tmp_path, traces):
    """As an older version wrote it: the same name, a record without the digest."""
    path = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path).path
    data = json.loads(path.read_text())
    del data["graph"][cache.RECORD_ATTRIBUTE][cache.DIGEST_FIELD]
    path.write_text(json.dumps(data, indent=1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheEntryWarning)
        again = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    assert not again.hit and again.saved and len(traces) == 2
    assert cache.DIGEST_FIELD in json.loads(path.read_text())["graph"][cache.RECORD_ATTRIBUTE]
    assert cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path).hit


def _folder(path: Path) -> None:
    path.mkdir()
    (path / "mine.txt").write_text("a user's file")


@pytest.mark.parametrize(("make", "kind"), [(_folder, "a folder"), (os.mkfifo, "a FIFO (named pipe)")],
                         ids=["folder", "fifo"])
def test_something_other_than_a_file_at_the_entry_is_left_alone_and_the_trace_not_saved(tmp_path, traces, make, kind):
    path = tmp_path / f"{MODEL}-int8-{graph_key(MODEL, 'int8', SMALL)}.json"
    make(path)
    with pytest.warns(CacheEntryWarning) as seen:
        cached = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)  # must_save: the folder itself is fine
    assert [str(w.message) for w in seen] == [
        f"trace cache entry {path}: is {kind}, not a file; traced again and not saved (it is left as it is)"]
    assert not cached.hit and not cached.saved and cached.path == path and len(traces) == 1
    assert as_json(cached.graph) == as_json(zoo.trace_model(MODEL, dtype="int8", input_shape=SMALL))
    if kind == "a folder":
        assert path.is_dir() and (path / "mine.txt").read_text() == "a user's file"
    else:
        assert path.is_fifo()
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary file left behind


def test_an_entry_that_cannot_be_read_is_traced_again_and_replaced(tmp_path, traces):
    path = tmp_path / f"{MODEL}-int8-{graph_key(MODEL, 'int8', SMALL)}.json"
    path.symlink_to(path.name)  # a symlink loop
    with pytest.warns(CacheEntryWarning) as seen:
        cached = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    assert [str(w.message) for w in seen] == [
        f"trace cache entry {path}: cannot be read: Too many levels of symbolic links; traced again"]
    assert not cached.hit and cached.saved and not path.is_symlink()
    assert cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path).hit and len(traces) == 1


def test_writes_leave_no_temporary_files(tmp_path, traces):
    cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [f"{MODEL}-int8-{graph_key(MODEL, 'int8', SMALL)}.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path, traces, monkeypatch):
    path = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path).path
    path.write_text("{")  # damaged, so the next call traces and writes again

    targets = []

    def disk_full(raw, target):
        targets.append(Path(target))
        Path(target).write_text('{"graph": ')  # part written, then the disk is full
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache, "_save_bytes", disk_full)
    with pytest.warns(CacheEntryWarning) as seen:
        cached = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    assert [str(w.message) for w in seen][-1] == (
        f"trace cache entry {path}: cannot be written: No space left on device; the graph was traced and is not saved")
    assert not cached.saved and len(traces) == 2 and cached.graph.number_of_nodes() > 0
    assert [p.name for p in tmp_path.iterdir()] == [path.name] and path.read_text() == "{"
    # written beside the final file (same file system, so the rename is atomic), never over it
    assert targets[0].parent == tmp_path and targets[0] != path


def test_unknown_model_raises_the_zoo_error(tmp_path, traces):
    with pytest.raises(UnknownModelError, match="resnet18"):
        graph_key("resnet_18", "int8", None)
    with pytest.raises(UnknownModelError, match="'resnet_18'"):
        cached_trace("resnet_18", "int8", cache_dir=tmp_path)
    with pytest.raises(UnknownModelError):  # never reaches a file name
        cached_trace("../escape", "int8", cache_dir=tmp_path)
    assert not list(tmp_path.glob("*.json")) and not (tmp_path.parent / "escape").exists()


def test_bad_dtype_or_input_shape_fails_before_tracing(tmp_path, traces):
    with pytest.raises(GraphFormatError, match="unknown dtype 'int3'"):
        cached_trace(MODEL, "int3", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="integer >= 1"):
        cached_trace(MODEL, "int8", (1, 3, 0, 64), cache_dir=tmp_path)
    with pytest.raises(ValueError, match="input_shape cannot be set"):
        graph_key("transformer", "int8", (1, 3, 224, 224))
    assert traces == [] and not any(tmp_path.iterdir())


def test_default_cache_dir_reads_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ACCELSIM_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("ACCELSIM_CACHE_DIR")
    assert default_cache_dir() == tmp_path / "xdg" / "accelsim" / "graphs"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # the XDG spec says to ignore it
    assert default_cache_dir() == Path.home() / ".cache" / "accelsim" / "graphs"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "accelsim" / "graphs"


def test_default_cache_dir_is_used_when_none_is_given(monkeypatch, tmp_path, traces):
    monkeypatch.setenv("ACCELSIM_CACHE_DIR", str(tmp_path / "env"))
    assert cached_trace(MODEL, "int8", SMALL).path.parent == tmp_path / "env"


def test_check_cache_dir_creates_the_folder_or_names_it(tmp_path):
    assert check_cache_dir(tmp_path / "a" / "b") == tmp_path / "a" / "b" and (tmp_path / "a" / "b").is_dir()
    assert not list((tmp_path / "a" / "b").iterdir())  # the write check leaves nothing behind
    (tmp_path / "file").write_text("")
    with pytest.raises(CacheDirError, match="file: exists and is not a folder"):
        check_cache_dir(tmp_path / "file")
    with pytest.raises(CacheDirError, match="cannot create it") as info:
        check_cache_dir(tmp_path / "file" / "below")
    assert isinstance(info.value, OSError) and "\n" not in str(info.value)


def test_an_unwritable_folder_fails_before_tracing(tmp_path, traces):
    (tmp_path / "file").write_text("")
    with pytest.raises(CacheDirError, match="file/below: cannot create it"):
        cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path / "file" / "below")
    assert traces == []


def test_a_hit_does_not_need_a_writable_folder(tmp_path, traces, monkeypatch):
    cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)

    def unwritable(path):
        raise CacheDirError(f"trace cache folder {path}: cannot write in it: Read-only file system")

    monkeypatch.setattr(cache, "check_cache_dir", unwritable)
    assert cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path).hit
    with pytest.raises(CacheDirError, match="Read-only"):
        cached_trace(MODEL, "fp32", SMALL, cache_dir=tmp_path)
    assert len(traces) == 1


def test_a_hit_imports_neither_torch_nor_torchvision(tmp_path):
    cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path)
    code = textwrap.dedent(f"""
        import sys
        from frontend import cached_trace
        result = cached_trace({MODEL!r}, "int8", {SMALL!r}, cache_dir={str(tmp_path)!r})
        assert result.hit, result
        loaded = sorted(m for m in ("torch", "torchvision") if m in sys.modules)
        assert not loaded, loaded
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert run.returncode == 0, run.stderr


def test_must_save_false_traces_into_an_unwritable_folder_without_saving(tmp_path, traces):
    (tmp_path / "file").write_text("")
    cached = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path / "file" / "below", must_save=False)
    assert not cached.hit and not cached.saved and len(traces) == 1
    assert as_json(cached.graph) == as_json(zoo.trace_model(MODEL, dtype="int8", input_shape=SMALL))
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


def test_must_save_false_keeps_the_graph_when_the_write_fails(tmp_path, traces, monkeypatch):
    def disk_full(raw, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache, "_save_bytes", disk_full)
    with pytest.warns(CacheEntryWarning, match="cannot be written: No space left on device"):
        cached = cached_trace(MODEL, "int8", SMALL, cache_dir=tmp_path, must_save=False)
    assert not cached.saved and len(traces) == 1 and cached.graph.number_of_nodes() > 0
    assert not list(tmp_path.glob("*.json"))

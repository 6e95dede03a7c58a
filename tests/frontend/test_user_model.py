"""The user's own model, ``path/to/file.py:function`` (issue 24, part 4): how a spec is told apart,
what the function may return, the inputs it is traced at, one-line errors naming the file and the
function, and the trace cache keyed by the file's bytes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from frontend import cache, user_model, zoo
from frontend.cache import cached_trace, graph_key
from frontend.user_model import UserModelError, is_user_model, load_user_model, parse_spec, trace_user_model

REPO = Path(__file__).resolve().parents[2]

#: a two-conv CNN: ``build`` returns it with an example input, ``bare`` alone, the rest misbehave
MODEL_FILE = textwrap.dedent("""
    import torch
    from torch import nn

    from blocks import WIDTH  # a neighbour of this file: its folder is on sys.path while it runs


    class TwoConv(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, WIDTH, 3, padding=1)
            self.drop = nn.Dropout(0.5)
            self.conv2 = nn.Conv2d(WIDTH, 4, 3, padding=1)

        def forward(self, x):
            return self.conv2(self.drop(torch.relu(self.conv1(x))))


    def build():
        return TwoConv(), torch.randn(1, 3, 16, 16)


    def bare():
        return TwoConv()


    def two_inputs():
        class Add(nn.Module):
            def forward(self, a, b):
                return a + b
        return Add(), (torch.randn(1, 8), torch.randn(1, 8))


    def token_ids():
        return nn.Embedding(10, 4), torch.tensor([[1, 2, 3]])


    def text():
        return "not a module"


    def inputs_of_a_list_of_ints():
        return TwoConv(), [1, 2]


    def raises():
        raise RuntimeError("no weights\\nhere")


    NOT_A_FUNCTION = 3

    if __name__ == "__main__":
        raise SystemExit("the main block must not run")
""")


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    (tmp_path / "blocks.py").write_text("WIDTH = 8\n")
    path = tmp_path / "mynet.py"
    path.write_text(MODEL_FILE)
    return path


def input_shapes(graph):
    return [graph.graph["tensors"][name]["shape"] for name in graph.graph["inputs"]]


def input_bytes(graph):
    return sum(graph.graph["tensors"][name]["nbytes"] for name in graph.graph["inputs"])


@pytest.mark.parametrize(("text", "spec"), [
    ("models/net.py:build", True), ("net.py", True), (r"C:\models\net.py:build", True), (Path("a/b.py"), True),
    ("resnet18", False), ("video.s3d", False), ("optical_flow.raft_small", False), ("graph.json", False),
    ("out/net.py.json", False),
])
def test_a_spec_is_text_ending_in_py_or_holding_py_colon(text, spec):
    assert is_user_model(text) == spec


def test_the_function_is_after_the_last_colon_and_names_the_graph():
    spec = parse_spec(r"C:\models\net.py:build_model")
    assert spec.path == Path(r"C:\models\net.py") and spec.function == "build_model"
    assert parse_spec("models/net.py:build").name == "net.build"
    with pytest.raises(UserModelError, match=r"name the function that builds the model: net.py:FUNCTION"):
        parse_spec("net.py")
    with pytest.raises(UserModelError, match="'9lives' is not a function name"):
        parse_spec("net.py:9lives")


def test_a_module_with_its_inputs_traces_in_eval_mode_named_stem_dot_function(model_file):
    module, inputs = load_user_model(f"{model_file}:build")
    assert not module.training and not module.conv1.training  # eval mode, every submodule
    graph = trace_user_model(f"{model_file}:build", "int8")
    assert graph.graph["name"] == "mynet.build" and graph.graph["dtype"] == "int8"
    assert input_shapes(graph) == [[1, 3, 16, 16]]
    assert sorted(rec["op"] for _, rec in graph.nodes(data=True)) == ["conv2d", "conv2d", "relu"]  # no dropout


def test_batch_replaces_dim_0_and_doubles_the_input_bytes(model_file):
    one = trace_user_model(f"{model_file}:build", "int8")
    two = trace_user_model(f"{model_file}:build", "int8", batch=2)
    assert input_shapes(two) == [[2, 3, 16, 16]] and input_bytes(two) == 2 * input_bytes(one)
    # a returned input keeps its values: its rows repeat (token ids stay valid indices)
    _, (ids,) = load_user_model(f"{model_file}:token_ids", batch=3)
    assert ids.tolist() == [[1, 2, 3]] * 3


def test_input_shape_supplies_or_overrides_the_inputs(model_file):
    import torch

    with pytest.raises(UserModelError) as info:
        trace_user_model(f"{model_file}:bare")
    message = str(info.value)
    assert message.startswith(f"user model {model_file}:bare: bare() gives no example inputs")
    assert "--input-shape" in message and "\n" not in message
    assert input_shapes(trace_user_model(f"{model_file}:bare", input_shape=(1, 3, 8, 8))) == [[1, 3, 8, 8]]
    assert input_shapes(trace_user_model(f"{model_file}:build", input_shape=[1, 3, 8, 8], batch=2)) == [[2, 3, 8, 8]]
    two = trace_user_model(f"{model_file}:two_inputs", input_shape=((2, 5), (2, 5)))
    assert input_shapes(two) == [[2, 5], [2, 5]]
    with pytest.raises(UserModelError, match=r"two_inputs\(\) gives 2 example input\(s\) but 1 input shape"):
        trace_user_model(f"{model_file}:two_inputs", input_shape=(2, 5))
    _, (ids,) = load_user_model(f"{model_file}:token_ids", input_shape=(2, 7))
    assert ids.dtype == torch.int64 and ids.shape == (2, 7)  # the returned input's dtype is kept


@pytest.mark.parametrize(("function", "needle"), [
    ("nope", "has no function 'nope' (it defines TwoConv, bare, build, inputs_of_a_list_of_ints, raises, text, "),
    ("NOT_A_FUNCTION", "'NOT_A_FUNCTION' in"),
    ("text", "text() returned a str; expected an nn.Module, or (nn.Module, example inputs)"),
    ("inputs_of_a_list_of_ints", "returned example inputs a list of 2 item(s) (int, int); expected a tensor"),
    ("raises", "raises() raised RuntimeError: no weights here"),
])
def test_a_function_that_is_missing_or_misbehaves_is_one_line_naming_file_and_function(model_file, function, needle):
    with pytest.raises(UserModelError) as info:
        trace_user_model(f"{model_file}:{function}", input_shape=(1, 3, 8, 8))
    message = str(info.value)
    assert message.startswith(f"user model {model_file}:{function}: ") and needle in message
    assert "\n" not in message and "Traceback" not in message


@pytest.mark.parametrize(("source", "needle"), [
    ("import torch\nraise ValueError('bad\\nconfig')\n", "raised ValueError: bad config"),
    ("def build(:\n", "raised SyntaxError: invalid syntax (line 1)"),
    ("import sys\nsys.exit(3)\n", "raised SystemExit: 3"),
    ("import no_such_module_here\n", "raised ModuleNotFoundError: No module named 'no_such_module_here'"),
])
def test_a_file_that_raises_on_import_is_one_line_with_the_exception(tmp_path, source, needle):
    path = tmp_path / "broken.py"
    path.write_text(source)
    with pytest.raises(UserModelError) as info:
        trace_user_model(f"{path}:build")
    assert str(info.value) == f"user model {path}:build: importing {path} {needle}"
    assert str(tmp_path) not in sys.path


def test_a_missing_file_or_a_folder_is_named(tmp_path):
    with pytest.raises(UserModelError, match=f"user model {tmp_path}/gone.py:build: no such file {tmp_path}/gone.py"):
        cached_trace(f"{tmp_path}/gone.py:build", "int8", cache_dir=tmp_path)
    (tmp_path / "dir.py").mkdir()
    with pytest.raises(UserModelError, match="dir.py is a folder"):
        trace_user_model(f"{tmp_path}/dir.py:build")


def test_the_files_folder_is_on_sys_path_only_while_it_runs(model_file):
    before = list(sys.path)
    trace_user_model(f"{model_file}:build")  # imports its neighbour blocks.py
    assert sys.path == before and str(model_file.parent) not in sys.path


def test_the_cache_hits_for_the_same_bytes_and_misses_when_the_file_changes(model_file, tmp_path, monkeypatch):
    calls = []
    real = user_model.trace_user_model
    monkeypatch.setattr(user_model, "trace_user_model", lambda *a, **k: calls.append(a) or real(*a, **k))
    folder = tmp_path / "cache"
    first = cached_trace(f"{model_file}:build", "int8", cache_dir=folder)
    assert not first.hit and first.path.name.startswith("user-mynet.build-int8-")
    again = cached_trace(f"{model_file}:build", "int8", cache_dir=folder)
    assert again.hit and again.path == first.path and len(calls) == 1
    assert input_shapes(again.graph) == [[1, 3, 16, 16]] and cache.RECORD_ATTRIBUTE not in again.graph.graph

    # the batch, the shapes and the dtype are in the key
    assert not cached_trace(f"{model_file}:build", "int8", cache_dir=folder, batch=2).hit
    assert not cached_trace(f"{model_file}:build", "int8", (1, 3, 8, 8), cache_dir=folder).hit
    assert not cached_trace(f"{model_file}:build", "fp32", cache_dir=folder).hit
    assert len(calls) == 4

    # the file's bytes are, its path and modification time are not
    copy = tmp_path / "elsewhere" / "mynet.py"
    copy.parent.mkdir()
    copy.write_bytes(model_file.read_bytes())
    assert graph_key(f"{copy}:build", "int8") == graph_key(f"{model_file}:build", "int8")
    key = graph_key(f"{model_file}:build", "int8")
    model_file.write_text(MODEL_FILE.replace("torch.randn(1, 3, 16, 16)", "torch.randn(1, 3, 32, 32)"))
    assert graph_key(f"{model_file}:build", "int8") != key
    edited = cached_trace(f"{model_file}:build", "int8", cache_dir=folder)
    assert not edited.hit and edited.path != first.path and input_shapes(edited.graph) == [[1, 3, 32, 32]]
    with pytest.raises(ValueError, match="takes no model options"):
        cached_trace(f"{model_file}:build", "int8", cache_dir=folder, options={"num_flow_updates": 4})


def test_a_cache_hit_of_a_user_model_imports_neither_torch_nor_the_file(model_file, tmp_path):
    folder = tmp_path / "cache"
    cached_trace(f"{model_file}:build", "int8", cache_dir=folder)
    model_file.with_name("blocks.py").write_text("raise RuntimeError('must not be imported')\n")  # key: mynet.py only
    probe = textwrap.dedent(f"""
        import sys
        from frontend.cache import cached_trace
        hit = cached_trace({str(model_file) + ':build'!r}, "int8", cache_dir={str(folder)!r}).hit
        print(hit, "torch" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=False,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.stdout.split() == ["True", "False"], done.stderr


def test_zoo_keys_fold_batch_and_options_into_the_effective_inputs():
    assert graph_key("resnet18", "int8", None, batch=2) == graph_key("resnet18", "int8", (2, 3, 224, 224))
    assert graph_key("resnet18", "int8", None, batch=1) == graph_key("resnet18", "int8", None)
    raft = "optical_flow.raft_small"
    default = graph_key(raft, "int8", None)
    assert graph_key(raft, "int8", (1, 3, 368, 496)) == default  # one shape: both frames
    assert graph_key(raft, "int8", ((1, 3, 368, 496),) * 2, options={"num_flow_updates": 12}) == default
    assert graph_key(raft, "int8", None, options={"num_flow_updates": 4}) != default
    with pytest.raises(ValueError, match="takes no option 'num_flow_updates'"):
        graph_key("resnet18", "int8", None, options={"num_flow_updates": 4})


def test_a_zoo_model_at_a_batch_shares_the_entry_of_its_shape_spelled_out(tmp_path):
    model = "squeezenet1_0"
    first = cached_trace(model, "int8", (1, 3, 64, 64), cache_dir=tmp_path, batch=2)
    assert not first.hit and input_shapes(first.graph) == [[2, 3, 64, 64]]
    assert cached_trace(model, "int8", (2, 3, 64, 64), cache_dir=tmp_path).hit
    assert zoo.resolve_input_shapes(model, (1, 3, 64, 64), 2) == ((2, 3, 64, 64),)

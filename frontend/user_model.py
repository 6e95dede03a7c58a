"""The user's own model: ``path/to/file.py:function``, a Python file and a function in it that
builds an ``nn.Module``.

``accelsim run my_models/net.py:build --input-shape 1,3,64,64`` (and ``size``, ``sweep``,
``compile_and_simulate("my_models/net.py:build", ...)``) imports ``net.py``, calls ``build()``
with no arguments and traces what it returns, as ``frontend.trace`` traces any module.

Which text is a spec. A model given as text is, in this order: a saved graph when it ends in
``.json`` (``accelsim.sources.is_saved_graph``); a user model spec when it ends in ``.py`` or
contains ``.py:`` (``is_user_model``); a zoo name otherwise. Zoo names are letters, digits,
``_`` and one ``.`` after a family (``video.s3d``), so none ends in ``.py`` or holds a ``:``.
The function is after the *last* ``:``, so a Windows path (``C:\\models\\net.py:build``) reads
as meant; ``net.py`` without ``:function`` is refused, naming the form.

What the function may return:

* an ``nn.Module``: then ``input_shape`` (``--input-shape``, one per input, in order) is
  required, and the inputs are float32 tensors drawn from a fixed seed;
* ``(module, example_inputs)``, the inputs a tensor or a tuple (or list) of tensors. An
  ``input_shape`` given as well overrides them: one shape per returned input, each new input
  of the returned one's dtype (integer inputs such as token ids become zeros, valid indices).

``batch`` replaces dimension 0 of every input (``--batch N``): a built input is drawn at that
shape; a returned one keeps its values, its rows repeated or cut to ``batch``.

The module is put in eval mode (``module.eval()``) before tracing: the graph is the inference
graph (dropout folds away, BatchNorm reads its running statistics), as for every zoo model.

The graph's name, which reports and folders show, is ``STEM.FUNCTION`` (``net.build``): the
function's qualified name as Python would spell it were the file imported as a module. Two
functions of one file are two models; the folder a file sits in is not part of the name.

Importing. The file is imported by path (``importlib.util.spec_from_file_location``) under a
module name of its own (``accelsim_user_model_N``, new on every import, so a file edited
between two calls is read again and never collides with a module of the same name); it stays in
``sys.modules`` under that name, because tracing may look up the module a class was defined in.
Its folder is put first on ``sys.path`` while the file runs, so it can import its neighbours
(``from blocks import Stem``), and taken off afterwards; the neighbours it imported stay
imported, as after any import. ``if __name__ == "__main__":`` blocks do not run. The working
folder is the same after the file, ``build()`` and tracing run as before (``same_folder``),
whatever ``os.chdir`` the user's code called.

The model path must be a regular file: a FIFO or a device would block the read or never end.

Errors are ``UserModelError`` (a ``ValueError``), one line beginning ``user model SPEC:`` and
naming the file and the function: no such file, not a regular file, no such function, an
exception while importing the file or calling the function (its type and message, no
traceback; ``SystemExit`` too: ``sys.exit()`` in a model is an error, not the command's exit),
a return value of another kind, missing or ill-shaped inputs, example inputs larger than the
machine's memory. An exception while tracing (the model's ``forward`` runs then) is a
``frontend.TraceError`` of one line naming the spec. ``accelsim`` prints either as
``error: ...``, exit 2; Ctrl-C (``KeyboardInterrupt``) is never caught here.

>>> parse_spec("models/net.py:build").name
'net.build'
>>> is_user_model("models/net.py:build"), is_user_model("resnet18"), is_user_model("graph.json")
(True, False, False)
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import itertools
import math
import os
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from frontend.trace import Tracing
from frontend.zoo import positive_dimensions

if TYPE_CHECKING:
    import networkx as nx
    import torch

#: the suffix of a model file
MODEL_FILE_SUFFIX = ".py"

_FUNCTION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
#: numbers the module names of imported files (``accelsim_user_model_N``)
_IMPORTS = itertools.count()


class UserModelError(ValueError):
    """A user model spec that cannot be built or traced; one line naming the file and the function."""


def is_user_model(model: Any) -> bool:
    """``model`` is a user model spec: text (or a ``Path``) ending in ``.py`` or holding ``.py:``.

    >>> is_user_model("net.py:build"), is_user_model("net.py"), is_user_model("video.s3d")
    (True, True, False)
    """
    if not isinstance(model, str | Path):
        return False
    text = str(model)
    return text.endswith(MODEL_FILE_SUFFIX) or f"{MODEL_FILE_SUFFIX}:" in text


@dataclass(frozen=True)
class UserModelSpec:
    """A parsed ``path/to/file.py:function``."""

    text: str  #: the spec as given (messages quote it)
    path: Path  #: the file, as given (relative to the working folder unless absolute)
    function: str  #: the function's name in the file

    @property
    def name(self) -> str:
        """The graph's name: ``STEM.FUNCTION`` (``net.build`` for ``models/net.py:build``)."""
        return f"{self.path.stem}.{self.function}"

    def error(self, message: str) -> UserModelError:
        """``UserModelError('user model SPEC: message')``."""
        return UserModelError(f"user model {self.text}: {message}")


def parse_spec(model: str | Path) -> UserModelSpec:
    """``model`` (``path/to/file.py:function``) parsed; ``UserModelError`` when it is not of that
    form (no ``:function``, a function name that is not a Python identifier). The file is not
    read: ``check_spec`` checks it is there.

    >>> parse_spec("net.py")
    Traceback (most recent call last):
    ...
    frontend.user_model.UserModelError: user model net.py: name the function that builds the model: net.py:FUNCTION
    """
    text = str(model)
    path, colon, function = text.rpartition(":")
    if not colon or not path.endswith(MODEL_FILE_SUFFIX):
        raise UserModelError(f"user model {text}: name the function that builds the model: "
                             f"{text.split(':')[0]}:FUNCTION")
    if not _FUNCTION.fullmatch(function):
        raise UserModelError(f"user model {text}: {function!r} is not a function name (give FILE.py:FUNCTION, "
                             "e.g. net.py:build_model)")
    return UserModelSpec(text, Path(path).expanduser(), function)


def check_spec(model: str | Path) -> UserModelSpec:
    """``parse_spec(model)``, and its file is there and readable (``UserModelError`` otherwise).
    Imports nothing: what the file defines is known only once it runs."""
    spec = parse_spec(model)
    file_bytes(spec)
    return spec


def file_bytes(spec: UserModelSpec) -> bytes:
    """The model file's content; ``UserModelError`` naming it when it is missing or unreadable."""
    try:
        if spec.path.exists() and not spec.path.is_dir() and not spec.path.is_file():
            raise spec.error(f"{spec.path} is not a regular file (a FIFO, a device or a socket cannot hold a model)")
        return spec.path.read_bytes()
    except FileNotFoundError:
        raise spec.error(f"no such file {spec.path}") from None
    except IsADirectoryError:
        raise spec.error(f"{spec.path} is a folder, not a Python file") from None
    except OSError as exc:
        raise spec.error(f"cannot read {spec.path}: {exc.strerror or exc}") from None


def file_digest(spec: UserModelSpec) -> str:
    """SHA-256 (hex) of the model file's bytes: what the trace cache and sweep hashes key on."""
    return hashlib.sha256(file_bytes(spec)).hexdigest()


def _one_line(exc: BaseException) -> str:
    """``Type: message`` on one line (a ``SyntaxError`` with its line number)."""
    if isinstance(exc, SyntaxError):
        message = f"{exc.msg} (line {exc.lineno})"
    else:
        message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


@contextlib.contextmanager
def same_folder() -> Iterator[None]:
    """Run the user's code, then return to the working folder it started in: a ``build()`` or a
    ``forward`` that calls ``os.chdir`` must not move the files the command reads and writes
    after it (relative paths it was given)."""
    folder = os.getcwd()
    try:
        yield
    finally:
        with contextlib.suppress(OSError):  # the folder was removed meanwhile: nothing to return to
            os.chdir(folder)


def import_function(spec: UserModelSpec) -> Any:
    """Import the file (see the module docstring) and return its ``spec.function``."""
    file_bytes(spec)  # missing or unreadable: the one-line error, before importlib's own
    module_name = f"accelsim_user_model_{next(_IMPORTS)}"
    loader_spec = importlib.util.spec_from_file_location(module_name, spec.path)
    if loader_spec is None or loader_spec.loader is None:
        raise spec.error(f"{spec.path} cannot be imported as a Python file")
    module = importlib.util.module_from_spec(loader_spec)
    folder = str(spec.path.resolve().parent)
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    sys.modules[module_name] = module
    try:
        with same_folder():
            loader_spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # the user's code: anything it raises is bad input
        del sys.modules[module_name]
        raise spec.error(f"importing {spec.path} raised {_one_line(exc)}") from None
    finally:
        if added:
            # the file may have changed sys.path itself: take off our entry, not whatever is first
            try:
                sys.path.remove(folder)
            except ValueError:
                pass
    function = getattr(module, spec.function, None)
    if function is None:
        defined = sorted(n for n, v in vars(module).items()
                         if callable(v) and not n.startswith("_") and getattr(v, "__module__", None) == module_name)
        listed = f" (it defines {', '.join(defined)})" if defined else ""
        raise spec.error(f"{spec.path} has no function {spec.function!r}{listed}")
    if not callable(function):
        raise spec.error(f"{spec.function!r} in {spec.path} is not a function (its type is {type(function).__name__})")
    return function


def build(spec: UserModelSpec, light: bool = False) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...] | None]:
    """Call ``spec.function()``: the module (in eval mode) and its example inputs as a tuple, or
    ``None`` when it returned the module alone. ``UserModelError`` for anything else. With
    ``light``, every parameter and buffer the function registers lands on the meta device
    (``frontend.zoo.weights_on_meta``): no weight is ever materialised or initialised."""
    from frontend.zoo import require_torch, weights_on_meta

    require_torch(f"tracing user model {spec.text}")
    import torch

    function = import_function(spec)
    call = f"{spec.function}()"
    try:
        with same_folder(), (weights_on_meta() if light else contextlib.nullcontext()):
            returned = function()
    except (Exception, SystemExit) as exc:
        raise spec.error(f"{call} raised {_one_line(exc)}") from None
    inputs: Any = None
    if isinstance(returned, tuple) and len(returned) == 2 and isinstance(returned[0], torch.nn.Module):
        returned, inputs = returned
    if not isinstance(returned, torch.nn.Module):
        raise spec.error(f"{call} returned {_kind(returned)}; expected an nn.Module, or (nn.Module, example inputs)")
    if inputs is None:
        return returned.eval(), None
    given = (inputs,) if isinstance(inputs, torch.Tensor) else inputs
    if (not isinstance(given, tuple | list) or not given
            or not all(isinstance(x, torch.Tensor) for x in given)):
        raise spec.error(f"{call} returned example inputs {_kind(inputs)}; expected a tensor or a tuple of tensors")
    return returned.eval(), tuple(given)


def _kind(value: Any) -> str:
    """What ``value`` is, for a message: ``a str``, ``a tuple of 3 items``."""
    if isinstance(value, tuple | list):
        inner = ", ".join(type(v).__name__ for v in value[:4]) + (", ..." if len(value) > 4 else "")
        return f"a {type(value).__name__} of {len(value)} item(s) ({inner})"
    return "None" if value is None else f"a {type(value).__name__}"


def as_shapes(what: str, input_shape: Any) -> tuple[tuple[int, ...], ...] | None:
    """``input_shape`` as one shape per input: ``None``, one shape (``(1, 3, 64, 64)``) or a
    sequence of shapes. ``ValueError`` beginning ``what`` for a dimension that is not an integer
    >= 1 or an empty shape.

    >>> as_shapes("m", (1, 3, 8, 8)), as_shapes("m", [[1, 4], (2, 4)])
    (((1, 3, 8, 8),), ((1, 4), (2, 4)))
    """
    if input_shape is None:
        return None
    if isinstance(input_shape, str | bytes) or not isinstance(input_shape, Sequence) or not input_shape:
        raise ValueError(f"{what}: input shape {input_shape!r}: expected a non-empty sequence of integers, "
                         "or one such sequence per input")
    many = any(isinstance(d, Sequence) and not isinstance(d, str | bytes) for d in input_shape)
    shapes = list(input_shape) if many else [input_shape]
    checked = []
    for shape in shapes:
        if isinstance(shape, str | bytes) or not isinstance(shape, Sequence) or not shape:
            raise ValueError(f"{what}: input shape {shape!r}: expected a non-empty sequence of integers")
        try:
            checked.append(positive_dimensions(shape))
        except ValueError as exc:
            raise ValueError(f"{what}: input shape {tuple(shape)!r}: {exc}") from None
    return tuple(checked)


def check_batch(what: str, batch: Any) -> int | None:
    """``batch`` when it is ``None`` or an integer >= 1; ``ValueError`` beginning ``what`` otherwise."""
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise ValueError(f"{what}: batch={batch!r} must be an integer >= 1")
    return batch


def example_inputs(what: str, returned: Sequence[torch.Tensor] | None, input_shape: Any = None,
                   batch: int | None = None) -> tuple[torch.Tensor, ...]:
    """The inputs to trace with: ``returned`` (a module's own example inputs, or ``None``), with
    ``input_shape`` overriding their shapes (one per input; required without ``returned``) and
    ``batch`` replacing dimension 0 of each. ``ValueError`` beginning ``what``.

    Built inputs are drawn from a fixed seed (float32 ``randn``, or zeros of an integer or bool
    returned input's dtype); a returned input that only changes batch keeps its values, its
    rows repeated or cut.
    """
    import torch

    shapes = as_shapes(what, input_shape)
    check_batch(what, batch)
    if returned is None and shapes is None:
        raise ValueError(f"{what} gives no example inputs; give their shapes, one --input-shape per input "
                         "in order (input_shape= in Python)")
    if returned is not None and shapes is not None and len(shapes) != len(returned):
        raise ValueError(f"{what} gives {len(returned)} example input(s) but {len(shapes)} input shape(s) "
                         f"were given; give one per input, in order, or none")
    count = len(shapes) if shapes is not None else len(returned or ())
    plans: list[tuple[torch.Tensor | None, tuple[int, ...] | None]] = []  # (given, shape to build or None)
    need = 0  # bytes the new tensors take while they are made
    for i in range(count):
        given = returned[i] if returned is not None else None
        if given is not None and shapes is None:
            if batch is not None and given.dim() == 0:
                raise ValueError(f"{what}: batch={batch} cannot apply to example input {i}, a 0-d tensor "
                                 "(it has no batch dimension)")
            if batch is not None and given.shape[0] != batch and not given.is_meta:
                need += batch * (given.numel() // max(given.shape[0], 1)) * given.element_size()
            plans.append((given, None))
            continue
        assert shapes is not None
        try:
            built = positive_dimensions(shapes[i] if batch is None else (batch, *shapes[i][1:]))
        except ValueError as exc:
            raise ValueError(f"{what}: input {i}: {exc}") from None
        dtype = given.dtype if given is not None else torch.float32
        if given is None or not given.is_meta:
            size = math.prod(built)
            drawn = 4 if dtype.is_floating_point or dtype.is_complex else 0  # randn draws float32, then casts
            need += size * (drawn + (0 if dtype == torch.float32 else dtype.itemsize))
        plans.append((given, built))
    check_input_memory(what, need)
    generator = torch.Generator().manual_seed(0)
    inputs: list[torch.Tensor] = []
    for given, shape in plans:
        if shape is None:
            assert given is not None
            if batch is None or given.dim() > 0 and given.shape[0] == batch:
                inputs.append(given)
            else:
                rows = torch.arange(batch, device=given.device) % given.shape[0]
                inputs.append(given.index_select(0, rows))
            continue
        dtype = given.dtype if given is not None else torch.float32
        device = given.device if given is not None else torch.device("cpu")
        if device.type == "meta":
            inputs.append(torch.empty(shape, dtype=dtype, device=device))
        elif dtype.is_floating_point or dtype.is_complex:
            inputs.append(torch.randn(shape, generator=generator).to(dtype=dtype, device=device))
        else:
            inputs.append(torch.zeros(shape, dtype=dtype, device=device))
    return tuple(inputs)


def check_input_memory(what: str, need: int) -> None:
    """Refuse example inputs that would take more memory than the machine has available now
    (``frontend.limits.available_memory``), before any is made: one ``ValueError`` line instead of
    torch's allocator failing with a traceback, or the machine swapping. Where the available
    memory is not known, nothing is refused."""
    from frontend.limits import available_memory

    available = available_memory()
    if available is not None and need > available:
        raise ValueError(f"{what}: the example inputs would take {need / 2**30:,.1f} GiB of memory, more than the "
                         f"{available / 2**30:.1f} GiB this machine has available; give a smaller --input-shape "
                         "or --batch (input_shape= or batch= in Python)")


def load_user_model(model: str | Path | UserModelSpec, input_shape: Any = None,
                    batch: int | None = None, light: bool = False) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """The module ``model`` (``path/to/file.py:function``) builds, in eval mode, and the inputs
    to trace it with (see the module docstring). Raises ``UserModelError``. With ``light``, the
    weights are on the meta device and so are the inputs (shapes and dtypes only)."""
    spec = model if isinstance(model, UserModelSpec) else parse_spec(model)
    as_shapes(f"user model {spec.text}", input_shape)  # a bad shape is refused before the file runs
    check_batch(f"user model {spec.text}", batch)
    module, returned = build(spec, light)
    try:
        inputs = example_inputs(f"{spec.function}()", returned, input_shape, batch)
    except ValueError as exc:
        raise spec.error(str(exc)) from None
    if light:
        import torch

        inputs = tuple(torch.empty_like(x, device="meta") for x in inputs)
    return module, inputs


def trace_user_model(model: str | Path | UserModelSpec, dtype: str = "fp32", input_shape: Any = None,
                     batch: int | None = None, tracing: Tracing | None = None) -> nx.DiGraph:
    """``frontend.trace`` of ``load_user_model(model, input_shape, batch)``, named ``STEM.FUNCTION``,
    with ``tracing``'s tracer and host operators (``frontend.trace.Tracing``; default ``"auto"``).

    Raises ``UserModelError`` and ``frontend.TraceError`` (the model fails on its inputs, or
    torch.fx cannot trace it; one line naming the spec).
    """
    from frontend.trace import TraceError, trace

    spec = model if isinstance(model, UserModelSpec) else parse_spec(model)
    tracing = tracing or Tracing()
    try:  # light first: weights and inputs on meta (the graph is the same; nothing materialised)
        module, inputs = load_user_model(spec, input_shape, batch, light=True)
        with same_folder():
            return trace(module, inputs, dtype=dtype, name=spec.name, method=tracing.method, host=tracing.host)
    except (Exception, SystemExit):  # a build or model that needs real data (a prefilled cache, a data-dependent
        pass  # shape): as it is; the real attempt below raises what is wrong with the spec or the model
    module, inputs = load_user_model(spec, input_shape, batch)
    try:
        with same_folder():
            return trace(module, inputs, dtype=dtype, name=spec.name, method=tracing.method, host=tracing.host)
    except TraceError as exc:
        raise TraceError(f"user model {spec.text}: {' '.join(str(exc).split())}") from None
    except (Exception, SystemExit) as exc:  # the user's forward runs while tracing: anything it raises is its own
        raise TraceError(f"user model {spec.text}: tracing {spec.name} raised {_one_line(exc)}") from None

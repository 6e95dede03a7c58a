"""Trace a PyTorch model into a ``DataflowGraph`` (see ``frontend.graph`` for the format).

``trace(model, example_inputs)`` runs ``torch.fx`` symbolic tracing and then shape propagation
(``torch.fx.passes.shape_prop.ShapeProp``'s job) on *fake* copies of the example inputs, and
turns the FX graph into operators and tensors. Fake tensors (``torch._subclasses.FakeTensorMode``)
carry shape, dtype and device but no data, so no activation is ever computed: memory and time do
not grow with the input size, and the model's weights may be on the ``meta`` device (the zoo's
``trace_model`` builds them there). Only an operator whose output shape depends on tensor
*data* (``nonzero``, boolean masks) makes the propagation fall back to the real inputs; see
``frontend.fx_capture``. The graph:

* **operators** are the FX ``call_module`` / ``call_function`` / ``call_method`` nodes that
  compute tensors, named after their FX node, with a normalised ``op`` kind and their cost
  (``macs`` or ``elements``, see ``frontend.cost``) and, for MAC-carrying kinds, the GEMM shape
  of those MACs (``gemm``, ``frontend.cost.gemms``); ``target`` is the FX target as a string
  (the qualified class name for ``call_module``).
* **weights** are the parameters and buffers of the leaf modules an operator calls, and the
  tensors read by ``get_attr`` nodes (ViT's ``class_token``, a ``layer_scale``), named by their
  qualified name (``"layer1.0.conv1.weight"``); a weight read by many operators is one tensor.
  BatchNorm's ``num_batches_tracked`` counter is not a weight (inference never reads it).
* **inputs** are the placeholders that receive tensors, **outputs** every tensor that reaches
  the FX ``output`` node through any nesting of tuples, lists and dicts (segmentation models
  return ``{"out": ...}``).
* nodes that compute no tensor (``x.size(0)``, ``getattr``, ``operator.*`` on ints, ``_assert``)
  are not operators. Operators with several tensor results (``nn.MultiheadAttention``'s
  ``(out, weights)``, ``torch.max(x, dim)``) write one tensor per result, named
  ``"<node>.<index>"`` (``"<node>.<key>"`` for a dict); a ``getitem`` on such a result is not an
  operator either, its FX name maps to the picked tensor in ``graph.graph["aliases"]``. So every
  FX value that holds a tensor is found under its FX name in ``tensors`` or in ``aliases``.

Sizes: ``nbytes = numel * dtype_bytes(dtype)`` for floating-point tensors, where ``dtype`` is the
storage dtype chosen for the run (``"int8"``, ``"bf16"``, ...); integer and bool tensors (index
buffers, masks) keep their own itemsize and dtype (``"int64"``). A 0-d tensor has one element.

Aliasing
--------
A view shares its base's memory, so it is not an operator and has no tensor of its own: its
FX name is recorded in ``graph.graph["aliases"]`` (alias -> base, chains already resolved) and
every operator that reads the view reads the base tensor instead, which keeps the base live as
long as the view is used. If a graph output is a view, its base becomes the output. Per op:

* ``view``, ``reshape``, ``flatten`` / ``torch.flatten`` / ``nn.Flatten``, ``unflatten``,
  ``view_as``, ``reshape_as``, ``squeeze``, ``unsqueeze``: a new shape over the same elements.
  On an accelerator they change only the addressing of the buffer, never its bytes. (``reshape``
  of a permuted tensor copies in eager PyTorch; here the permute already materialised the new
  layout, see below, so the reshape is free.)
* ``expand``, ``expand_as``, ``broadcast_to``: broadcasting reads the base with stride 0; the
  consumer reads the (smaller) base.
* ``x[...]`` basic indexing (ints, slices, ``None``, ``...``), ``select``, ``narrow``,
  ``chunk``, ``split``, ``unbind``: a window of the base; every piece aliases the base, so the
  whole base stays live while any piece is read. Advanced indexing (``x[idx_tensor]``) is a
  gather and *is* an operator (``op="index"``).
* ``contiguous``, ``detach``, ``.to()`` / ``.type()`` / ``.float()`` that keep the dtype and
  device: no data movement. ``contiguous`` is free because layout changes are paid for by the
  ``permute`` that made them. A dtype-changing ``.to()`` is an operator (``op="cast"``).
* ``dropout`` (``nn.Dropout*`` in eval mode, ``F.dropout(training=False)``), torchvision's
  ``stochastic_depth(training=False)`` and ``nn.Identity``: the identity, nothing is computed.
  Active dropout (training mode) is an operator.

Not aliases: ``permute``, ``transpose``, ``t``, ``movedim``, ``x.T`` are operators with a new
output tensor costed in elements (``op="permute"`` / ``"transpose"``). In PyTorch they are
strided views, but an accelerator's memory system reads and writes dense tiles, so a layout
change is a copy (as in XLA or a TPU compiler); treating it as free would under-count both
memory and time. ``clone`` is a copy too (``op="copy"``).

In-place operators (``x.add_(y)``, ``relu_``, ``nn.ReLU(inplace=True)``) are functionalised:
the operator writes a new tensor (its FX name) and every later read of the mutated tensor, or
of a view of it, reads the new one, so dependences follow the program order. A memory planner
may place the new tensor over the old one when the old one dies at that operator. (torch.fx
itself records ``x += y`` as an out-of-place ``add``, and cannot trace ``x[i] = y``.)

Dead code: operators none of whose results reach an output are dropped, and so are results
of a live operator that nothing reads (``torch.max``'s unused indices), so every activation
has a producer and a consumer or is an output.

Tracing
-------
Modules from ``torch.nn`` without children (``Conv2d``, ``BatchNorm2d``, ``ReLU``, ...) and
``nn.MultiheadAttention`` are leaves (one ``call_module`` operator, costed from the module's
configuration); everything else, including composite ``torch.nn`` modules such as
``nn.TransformerEncoderLayer``, is traced through. Functions that torchvision marks with
``torch.fx.wrap`` (Swin's ``shifted_window_attention``) are leaf operators costed from their
arguments' shapes. Forward arguments not covered by ``example_inputs`` are specialised to their
default values.

If plain symbolic tracing fails, the model is traced again with a shape-specialising tracer
that runs (fake copies of) the example inputs alongside the trace: control flow and ``len()`` over tensor
*metadata* (``x.dim() == 3``, ``x.size(1) != y.size(1)``, ``x.is_nested``, ``len(x.shape)``)
resolves to the example's values, which the graph is specialised to anyway. Control flow on
tensor *data* (``if x.sum() > 0``), iterating a tensor (``for img in images``) and any other
untraceable construct still fail, and ``trace`` raises ``TraceError`` with torch.fx's reason.
This is how ``nn.Transformer`` traces (its layers check ``src.dim()`` before choosing a fast path).

Tracers (``method``)
--------------------
``"fx"`` is the tracing above. ``"export"`` runs ``torch.export.export(..., strict=False)``
instead, which executes the model's Python on fake tensors and so also takes ``for row in x``
over a tensor and other constructs symbolic tracing refuses (only control flow on tensor data
still fails), and converts its ATen graph under this same policy: the same leaves (recovered
from each node's module stack), the same kinds, weights, aliases and costs; see
``frontend.export_convert``. On the 24 zoo models the two give the same operators per kind, MACs,
GEMMs and tensor bytes (``studies/export_vs_fx.py``); the FX graph keeps FX's operator names.
``"auto"``, the default, runs FX and, only when FX *symbolic tracing* fails (not when the model
fails on its inputs, which export would repeat), export, and then a ``TracerFallbackWarning``
says in one line why FX failed (the command line prints it as a ``note:``);
``graph.graph["tracer"]`` says which tracer made the graph (``"fx"`` or ``"export"``). When both
fail, the error gives both reasons.

Gathers
-------
Whichever tracer ran, an embedding or other gather from a weight then reads only the rows it
gathers, not the table (``frontend.gathers.read_rows``).

Errors
------
Every failure is one ``TraceError`` line (a ``ValueError``, so the command line prints it as
``error: ...`` and exits 2) naming the model and the example input shapes, then the reason: for
a model that cannot run on its input (``--input-shape 1,3,224`` on resnet18) the failing
operator and the model's own error, the first paragraph of its message, without a traceback:

    cannot trace 'resnet18' on example inputs of shape (1, 3, 224): RuntimeError: Given groups=1,
    weight of size [64, 3, 7, 7], expected input[1, 1, 3, 224] to have 3 channels, but got 1
    channels instead (at operator 'conv1')

(one line in reality). The message is the fake kernel's, which for most operators is the real
kernel's; a few meta kernels word it differently (a matmul says ``a and b must have same
reduction dim``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from frontend.errors import SymbolicTraceError, TraceError  # TraceError re-exported: frontend.TraceError

#: the tracers ``trace`` can run: ``"auto"`` is torch.fx, then torch.export where symbolic tracing fails
METHODS = ("auto", "fx", "export")


@dataclass(frozen=True)
class Tracing:
    """How a model is traced: ``trace``'s ``method`` and ``host`` (``--trace-method``, ``--host``).

    >>> Tracing("export", ("postprocess",))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: --host postprocess marks host operators in the torch.fx tracer's graph;
    --trace-method export cannot mark them (use fx or auto)
    """

    method: str = "auto"
    host: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"trace method {self.method!r} (--trace-method) is not one of {', '.join(METHODS)}")
        if not isinstance(self.host, tuple) or not all(isinstance(h, str) and h for h in self.host):
            raise ValueError(f"host={self.host!r} (--host) must be a tuple of module names or operator kinds")
        if self.host and self.method == "export":
            raise ValueError(f"--host {' '.join(self.host)} marks host operators in the torch.fx tracer's graph; "
                             "--trace-method export cannot mark them (use fx or auto)")

if TYPE_CHECKING:
    import networkx as nx
    import torch


def trace(
    model: torch.nn.Module,
    example_inputs: torch.Tensor | Sequence[Any],
    dtype: str = "fp32",
    name: str | None = None,
    leaf_modules: Iterable[type] = (),
    method: str = "auto",
    host: Iterable[str] = (),
) -> nx.DiGraph:
    """Trace ``model`` on ``example_inputs`` into a checked ``DataflowGraph``.

    Parameters
    ----------
    model:
        The module to trace, in the mode it should be traced in (call ``model.eval()`` first
        for inference: eval-mode dropout folds away, BatchNorm reads its running statistics).
    example_inputs:
        A tensor or a tuple of the first positional arguments of ``model.forward``; they fix
        every shape in the graph. Later arguments keep their defaults.
    dtype:
        Storage dtype of the run (a key of ``frontend.graph.DTYPE_BYTES``): the byte size of
        every floating-point tensor.
    name:
        Graph name; defaults to the model's class name.
    leaf_modules:
        Extra module classes to keep as single operators instead of tracing through them
        (they get ``macs = 0`` unless their kind has a rule in ``frontend.cost.MAC_RULES``).
    method:
        ``"auto"`` (torch.fx, then torch.export where symbolic tracing fails), ``"fx"`` or
        ``"export"`` (see "Tracers" above).
    host:
        The model's host operators (``frontend.host``): module qualified names (``"postprocess"``,
        kept whole as one host operator) and operator kinds (``"nms"``, ``"topk"``): they leave
        the accelerator's graph for ``graph.graph["host_ops"]``, and the tensors that cross
        become accelerator outputs and inputs. A name that matches neither raises
        ``TraceError``. Host operators are marked by the torch.fx tracer: with ``"export"``,
        or when ``"auto"`` would fall back to it, ``host`` raises instead.

    Returns
    -------
    networkx.DiGraph
        A graph that passes ``frontend.graph.check_graph``.

    Raises
    ------
    TraceError
        The tracer cannot trace the model (data-dependent control flow, ...; with ``"auto"``,
        neither can, and both reasons are given), or the traced graph fails to run on the
        example inputs (a wrong input rank, ...); one line naming the model, the input shapes
        and the reason (see "Errors" above).
    GraphFormatError
        ``dtype`` is unknown.
    ValueError
        ``method`` is not one of ``METHODS``.
    """
    if method not in METHODS:
        raise ValueError(f"unknown trace method {method!r}; valid methods: {', '.join(METHODS)}")
    leaves = tuple(leaf_modules)
    host_names = (host,) if isinstance(host, str) else tuple(host)
    if host_names and method == "export":
        raise ValueError(f"host={list(host_names)!r} marks host operators in the torch.fx tracer's graph; "
                         "method='export' cannot mark them (use 'fx' or 'auto')")
    from frontend.gathers import read_rows

    graph = _traced(model, example_inputs, dtype, name, leaves, method, host_names)
    read_rows(graph)
    return graph


def _traced(model: torch.nn.Module, example_inputs: Any, dtype: str, name: str | None, leaves: tuple[type, ...],
            method: str, host_names: tuple[str, ...]) -> nx.DiGraph:
    """The graph of the tracer ``method`` chooses (``trace``'s "Tracers"), before ``read_rows``."""
    if method == "export":
        from frontend import export_convert  # imports torch; kept out of ``import frontend``

        return export_convert.trace(model, example_inputs, dtype=dtype, name=name, leaf_modules=leaves)
    from frontend import fx_convert  # imports torch; kept out of ``import frontend``

    try:
        graph = fx_convert.trace(model, example_inputs, dtype=dtype, name=name, leaf_modules=leaves,
                                 host_names=host_names)
    except TraceError as fx_error:
        if method == "fx" or host_names or not isinstance(fx_error, SymbolicTraceError):
            raise
        import warnings

        from frontend import export_convert
        from frontend.errors import TracerFallbackWarning

        try:
            graph = export_convert.trace(model, example_inputs, dtype=dtype, name=name, leaf_modules=leaves)
        except TraceError as export_error:  # one line with both reasons, no note before it
            reason = str(export_error).partition(" with torch.export: ")[2] or str(export_error)
            raise TraceError(f"{fx_error}; with torch.export: {reason}") from fx_error
        warnings.warn(TracerFallbackWarning(f"{fx_error}; traced with torch.export instead (slower)"), stacklevel=3)
        return graph
    graph.graph["tracer"] = "fx"
    return graph

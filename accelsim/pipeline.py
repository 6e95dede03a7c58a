"""The end-to-end flow: model -> graph -> schedule -> offsets -> checked placement -> simulation.

``compile_and_simulate`` runs every stage of DESIGN.md's flow with the hardware config's
numbers and returns a ``SimReport``:

1. **trace** the model (``frontend.trace_model`` for a zoo name and
   ``frontend.user_model.trace_user_model`` for a user model spec ``path/to/file.py:function``,
   both through the trace cache ``frontend.cached_trace`` unless ``cache=False``: a hit loads
   the saved graph without importing torch; ``frontend.trace`` for a module with example
   inputs; or take a graph as given) in the config's dtype, at ``input_shape`` (one shape, or
   one per input), ``batch`` and ``model_options``;
2. **tile** operators whose weights exceed the config's ``weight_tile_bytes``
   (``frontend.tiling.tile_weights``: output-feature tiles plus a concat), as a compiler would;
3. **size** every tensor on chip: per PE on a ``per_pe`` target (``ceil(nbytes / n_pe)``),
   whole on a ``chip`` target, rounded up to the config's alignment by the scheduler;
4. **schedule** it under the scratchpad capacity, or under a COSMA budget (M_R, M_H, M_P or
   bytes): ``scheduler.make_schedule`` with the program-order baseline (Belady spilling) by
   default, or the MPMF order, COSMA's joint model, its fixed-order or divide-and-conquer
   variants; a capacity below M_R raises the scheduler's ``CapacityError``. With
   ``weights=False`` weights take no memory and no traffic (activations only, as in COSMA's
   first setting);
5. **place** the residencies. With a scheduler that takes an allocator (program order,
   min-peak: ``scheduler.registry``) the allocator decides the spills: ``auto``
   (``allocator.DEFAULT_METHOD``) by default, or any ``allocator`` method, places each residency
   plan, and the plan spills more only where it could not
   (``scheduler.spill_loop.allocation_aware``); ``online-first-fit``
   (``scheduler.registry.ONLINE_ARENA``) lets the online arena's first fit decide the spills. A
   scheduler that places its own tensors (the COSMA models) keeps its CP-SAT addresses unless an
   ``allocator`` is named, which then re-places the same residencies;
6. **validate** the placement with ``allocator.core.validate`` (never simulate an invalid one);
7. **simulate** it (``accelsim.sim``) and, with ``out_dir``, write the report folder.

**The same answer on every machine.** Every default limit of these stages is work, never
seconds: the spill loop's rounds and its allocator's search nodes
(``allocator.METHODS[name].work_limit``), CP-SAT's deterministic time for the cosma* models and
the MPMF order (``scheduler.CosmaOptions``). Compiled code loads (or, with an empty compile
cache, compiles) when a stage first calls it, only for the kernels the run reaches; every
clock reads ``allocator.core.kernel_clock.work_clock``, which stands still meanwhile, so that
time never eats into a stage or a limit and is reported apart as the ``kernels`` stage.
``timeout`` and ``time_limit`` add wall-clock limits as safety nets (off by default); when one
fires, the report's ``deterministic`` is False and ``clock_stopped`` names the
stages whose clock ended a search.

Frontend, scheduler and allocator are imported inside the function, so ``import accelsim``
stays light (no torch).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelsim.errors import AllocationFailedError, CompileError, InvalidPlacementError  # noqa: F401  (re-exported)
from accelsim.hw import HardwareConfig, load_hw
from accelsim.results import SimReport
from accelsim.sim import simulate
from accelsim.sources import input_files, is_saved_graph, is_traced
from accelsim.tiling import DEFAULT_TILING, check_tiling
from accelsim.units import format_bytes
from allocator.core.defaults import DEFAULT_METHOD
from allocator.core.kernel_clock import kernel_seconds, work_clock
from frontend.limits import MAX_OPERATORS
from scheduler.order import PROGRAM
from scheduler.registry import DEFAULT_SCHEDULER, ONLINE_ARENA, check_allocator, check_options, scheduler_entry

if TYPE_CHECKING:
    import networkx as nx

    from frontend.trace import Tracing
    from scheduler.schedule import Schedule


def _to_graph(
    model_or_name: Any, dtype: str, input_shape: Any, example_inputs: Any, name: str | None, opts: RunOptions,
) -> nx.DiGraph:
    """The run's graph. A zoo name or a user model spec goes through the trace cache
    (``frontend.cached_trace``) unless ``opts.cache`` is False, so a hit imports neither torch
    nor torchvision; the default folder (``opts.cache_dir`` None) that cannot be written only
    costs the saving, a named one raises ``frontend.CacheDirError``. A module is traced on its
    ``example_inputs``, their shapes replaced by ``input_shape`` and their batch by ``opts.batch``
    when given (``frontend.user_model.example_inputs``)."""
    import networkx as nx

    import frontend  # light: torch is imported only when a model is traced
    from frontend import user_model
    from frontend.trace import Tracing

    if isinstance(model_or_name, nx.DiGraph):
        return model_or_name
    if isinstance(model_or_name, str | Path):
        text = str(model_or_name)
        if is_saved_graph(text):
            return frontend.load_graph(text, opts.max_operators)
        options = dict(opts.model_options) or None
        tracing = opts.tracing
        if not opts.cache:
            if user_model.is_user_model(text):
                check_model(text, opts)  # (the cache refuses model options itself)
                return user_model.trace_user_model(text, dtype, input_shape, opts.batch, tracing=tracing)
            extra: dict[str, Any] = {}  # passed only when given, as cached_trace passes them
            if opts.batch is not None:
                extra["batch"] = opts.batch
            if options:
                extra["options"] = options
            if tracing != Tracing():
                extra["tracing"] = tracing
            return frontend.trace_model(text, dtype=dtype, input_shape=input_shape, **extra)
        return frontend.cached_trace(text, dtype, input_shape, opts.cache_dir, must_save=opts.cache_dir is not None,
                                     batch=opts.batch, options=options, tracing=tracing).graph
    label = name or type(model_or_name).__name__
    check_model(model_or_name, opts)
    if example_inputs is None and input_shape is None:
        raise ValueError(
            f"a {type(model_or_name).__name__} module needs example_inputs to be traced, or their input_shape "
            "(or pass a zoo model name, a user model spec path/to/file.py:FUNCTION or a traced graph)"
        )
    if input_shape is not None or opts.batch is not None:
        example_inputs = user_model.example_inputs(
            f"module {label}", _as_tuple(example_inputs) if example_inputs is not None else None,
            input_shape, opts.batch)
    return frontend.trace(model_or_name, example_inputs, dtype=dtype, name=label, method=opts.tracing.method,
                          host=opts.tracing.host)


def _as_tuple(example_inputs: Any) -> tuple[Any, ...]:
    """A module's ``example_inputs`` (a tensor, or a tuple or list of them) as a tuple."""
    return tuple(example_inputs) if isinstance(example_inputs, tuple | list) else (example_inputs,)


def check_model(model_or_name: Any, opts: RunOptions) -> None:
    """Refuse ``opts.input_shape``, ``batch`` and ``model_options`` where they cannot apply to
    this model, before any work, with one line (``ValueError``): a zoo name's shapes and options
    are checked against the zoo (``frontend.zoo.resolve_input_shapes``, ``model_options``: a
    wrong number of shapes, an option its family does not take); a user model spec must name a
    file that is there (``frontend.user_model.check_spec``) and takes no model options, nor does
    a module; a traced graph takes none of the three (``RunOptions.check``). Imports no torch.
    """
    from frontend import user_model, zoo

    if is_traced(model_or_name):
        return
    if isinstance(model_or_name, str | Path):
        text = str(model_or_name)
        if user_model.is_user_model(text):
            user_model.check_spec(text)
            what = f"user model {text}"
        else:
            zoo.resolve_input_shapes(text, opts.input_shape, opts.batch)
            try:
                zoo.model_options(text, opts.model_options)
            except ValueError as exc:
                raise ValueError(f"model_options (--model-option): {exc}") from None
            return
    else:
        what = f"module {type(model_or_name).__name__}"
    if opts.model_options:
        raise ValueError(f"model_options {dict(opts.model_options)!r} (--model-option) cannot apply to {what}: "
                         "only zoo families "
                         f"take options ({', '.join(f'{f}.*: {o}' for f, o in zoo.MODEL_OPTIONS.items())})")
    user_model.as_shapes(what, opts.input_shape)


def tensor_shares(graph: nx.DiGraph, hw: HardwareConfig) -> dict[str, int] | None:
    """Per-PE data bytes of every tensor for the scheduler's ``sizes`` (``None`` on a chip-scope target)."""
    if hw.capacity_scope != "per_pe":
        return None
    return {name: hw.share_bytes(rec["nbytes"]) for name, rec in graph.graph["tensors"].items()}


def on_chip_graph(
    graph: nx.DiGraph, hw: HardwareConfig, weights: bool = True, tiling: str = "weights",
) -> tuple[nx.DiGraph, dict[str, int] | None, list[str]]:
    """The graph as the scheduler sees it on ``hw``: tiled, and every tensor's on-chip bytes.

    Under ``auto``, chains around operators that do not fit the scratchpad whole are cut into row
    tiles first (``frontend.row_tiling.tile_rows`` with ``accelsim.tiling.row_tile_limits``); then
    operators whose weights exceed the limit ``tiling`` gives (``accelsim.tiling``: ``weights``,
    the default here, is ``hw.weight_tile_bytes`` per PE on a per-PE target) are
    split (``frontend.tiling.tile_weights``); sizes are per PE on a per-PE target (``tensor_shares``,
    ``None`` on a chip-scope target: the graph's own bytes), and with ``weights=False`` every
    weight takes 0 bytes (activations only). Returns ``(graph, sizes, tiled operators)``.
    """
    from accelsim.tiling import row_tile_limits, streaming_limits, weight_tile_limit
    from frontend.tiling import tile_weights

    tiled: list[str] = []
    row_limit = row_tile_limits(tiling, hw)
    if row_limit is not None:
        from frontend.row_tiling import tile_rows

        graph, tiled = tile_rows(graph, *row_limit)
    tile_limit = weight_tile_limit(tiling, hw)
    if tile_limit is not None:
        streaming = streaming_limits(graph, hw, tile_limit) if tiling == "auto" else {}
        graph, split = tile_weights(graph, tile_limit, streaming)
        tiled += split
    sizes = tensor_shares(graph, hw)
    if not weights:
        sizes = dict(sizes or {name: rec["nbytes"] for name, rec in graph.graph["tensors"].items()})
        sizes.update({name: 0 for name, rec in graph.graph["tensors"].items() if rec["kind"] == "weight"})
    return graph, sizes, tiled


def dram_footprint_bytes(graph: nx.DiGraph, schedule: Schedule | None, hw: HardwareConfig,
                         weights: bool = True) -> int:
    """Bytes a run keeps in DRAM (whole chip): every tensor it loads, stores, spills or retrieves,
    once, at its full size. The DRAM holds them all at once in this accounting (a model's
    weights, inputs and outputs stay for the whole run; a spilled tensor's copy is not reused
    for another), so ``hw.dram_bytes`` must be at least this much.

    Without a ``schedule`` (before scheduling): the compulsory part alone, the graph's inputs,
    outputs and (with ``weights``) weights, which every schedule keeps there.
    """
    tensors = graph.graph["tensors"]
    if schedule is None:
        kinds = ("input", "output", "weight") if weights else ("input", "output")
        outputs = set(graph.graph.get("outputs", ()))
        return sum(int(rec["nbytes"]) for name, rec in tensors.items() if rec["kind"] in kinds or name in outputs)
    held: dict[str, int] = {}
    for transfer in schedule.transfers:
        rec = tensors.get(transfer.tensor)
        size = int(rec["nbytes"]) if rec is not None else hw.chip_bytes(transfer.nbytes)
        held[transfer.tensor] = max(held.get(transfer.tensor, 0), size)
    return sum(held.values())


def check_dram(need: int, hw: HardwareConfig, what: str) -> None:
    """Refuse a run whose DRAM footprint ``need`` exceeds ``hw.dram_bytes`` (``ValueError``, exit 2)."""
    if need > hw.dram_bytes:
        raise ValueError(f"dram_bytes={hw.dram_bytes:,} B cannot hold the {need:,} B ({format_bytes(need)}) this "
                         f"run keeps in DRAM ({what}); raise it with --set dram_bytes=...")


def place(schedule: Schedule, method: str | None, timeout: float | None = None) -> tuple[str, dict[str, int], bool]:
    """Who placed ``schedule``'s residencies, their offsets, and whether the wall-clock ``timeout``
    ended the search: the schedule's own offsets (``method=None``; named by
    ``Schedule.placed_by``, the online arena's name for offsets nobody is named for) or
    ``allocator.solve``'s (``allocator.DEFAULT_METHOD`` when the schedule has none).

    The search is bounded in work as the spill loop bounds it (``allocator.METHODS[name].work_limit``: this one
    placement gets the loop's whole work limit), so without ``timeout`` the answer is the same on
    every machine. Raises ``AllocationFailedError`` naming the method and its reason when it
    cannot fit.
    """
    import allocator

    if method is None and schedule.offsets is not None:
        return schedule.placed_by.name or ONLINE_ARENA, dict(schedule.offsets), False
    problem = schedule.problem()
    chosen = method or DEFAULT_METHOD
    work = allocator.METHODS[chosen].work_limit
    limit = {} if work is None else {work.option: work.total}
    began = work_clock()
    result = allocator.solve(problem, chosen, timeout, **limit)
    stopped = timeout is not None and work_clock() - began >= timeout
    if not result.solved or result.solution is None:
        peak = f", best peak {result.peak} bytes" if result.peak is not None else ""
        raise AllocationFailedError(
            f"allocator {result.method!r} could not place the {len(problem)} residencies of the schedule in "
            f"{schedule.capacity} bytes: {result.status}{peak}: {result.reason or 'no reason given'}"
        )
    return result.method, dict(result.solution.offsets), stopped


@dataclass(frozen=True)
class RunOptions:
    """How ``compile_and_simulate`` compiles and simulates: every option of ``accelsim run`` in one record.

    ``compile_and_simulate(model, hw, options)`` takes it whole; its keyword arguments are a
    shorthand that fills the same fields (``compile_and_simulate(m, sram="1MiB")``).
    """

    sram: int | str | None = None  #: scratchpad bytes per PE instead of the config's, e.g. "8MiB"
    #: an allocator.METHODS name or "online-first-fit" (``scheduler.registry.ONLINE_ARENA``); None:
    #: ``allocator.DEFAULT_METHOD`` for a scheduler that takes an allocator (it decides its spills),
    #: the solver's own addresses for one that places its tensors itself (cosma*)
    allocator: str | None = None
    dtype: str | None = None  #: storage dtype (default: the config's, e.g. int8 on the Pixel 6)
    #: the model's input shape, or one per input in order (default: the zoo's, or a user model's own example inputs)
    input_shape: tuple[int, ...] | tuple[tuple[int, ...], ...] | None = None
    #: replaces the batch dimension (dim 0) of every input of a zoo or user model (``--batch``); None: as built
    batch: int | None = None
    #: a zoo family's build options (``--model-option``; ``frontend.zoo.MODEL_OPTIONS``, e.g.
    #: ``{"num_flow_updates": 4}`` for ``optical_flow.*``); empty: the family's defaults
    model_options: Mapping[str, int] = field(default_factory=dict)
    scheduler: str = DEFAULT_SCHEDULER  #: one of scheduler.SCHEDULERS (``scheduler.registry``)
    #: replacement policy of the program / min-peak schedulers: belady or greedy (None: belady)
    replacement: str | None = None
    #: the order of the "program" scheduler: "program" (the graph's) or a list of every operator; other
    #: schedulers choose their own (``fixed_order`` is cosma-fs's), so for them it is refused
    order: str | Sequence[str] = PROGRAM
    fixed_order: str | None = None  #: the order of cosma-fs: program or min-peak (None: program)
    budget: int | str | None = None  #: MR, MH, MP or bytes (per PE) to schedule in instead of the scratchpad
    weights: bool = True  #: False gives weights no memory and no traffic (activations only)
    #: how operators tile (``--tiling``): auto, weights or none (``accelsim.tiling``)
    tiling: str = DEFAULT_TILING
    #: weight-only quantisation (``--weight-dtype``, e.g. "int4"; ``frontend.precision``): weights take this
    #: dtype's bytes, operators compute at the run's dtype; None: the run's dtype
    weight_dtype: str | None = None
    #: a language model's KV cache in its own dtype (``--kv-dtype``; ``frontend.precision``); None: the run's
    kv_dtype: str | None = None
    #: the tracer (``--trace-method``): auto (torch.fx, then torch.export where it cannot trace), fx or export
    trace_method: str = "auto"
    #: more host operators (``--host``, repeatable): module qualified names or operator kinds (``frontend.host``)
    host: tuple[str, ...] = ()
    #: a wall-clock safety net in seconds for the allocator (default None: none; its limit is work,
    #: ``allocator.METHODS[name].work_limit``): the allocation-aware loop of program / min-peak, or the
    #: re-placement of a cosma* schedule (needs ``allocator``). When it fires the report says so
    timeout: float | None = None
    #: a wall-clock safety net in seconds for each solve of a solver-based scheduler (cosma*; default
    #: None: none; its limit is work, CP-SAT deterministic time, ``scheduler.CosmaOptions``)
    time_limit: float | None = None
    raise_on_violation: bool = False  #: raise MemoryViolation instead of reporting it
    overrides: Mapping[str, Any] = field(default_factory=dict)  #: hardware fields to replace (``--set``), dotted
    #: a zoo name's graph comes from the trace cache (``frontend.cached_trace``: traced and saved on a miss);
    #: False traces the model and neither reads nor writes the cache (``--no-cache``)
    cache: bool = True
    #: the trace cache folder (``--cache``); None: ``frontend.default_cache_dir()``, skipped when not writable
    cache_dir: str | Path | None = None
    #: the most operators a graph may have (``--max-operators``; ``frontend.MAX_OPERATORS``); a run's memory
    #: grows by about 16 KiB per operator, and a graph whose run would need more than the machine has is
    #: refused whatever this says (``frontend.check_operator_count``); None: that check alone
    max_operators: int | None = MAX_OPERATORS

    def check(self, traced: bool = True) -> None:
        """Refuse options that would be accepted but mean nothing, with one line naming them.

        ``traced`` is False when the model is a graph already (a ``.json`` file or a
        ``DataflowGraph``): its dtype and shapes were fixed when it was traced, so
        ``input_shape``, ``batch`` and ``model_options`` cannot apply, and ``dtype`` only when it
        repeats the graph's own (``check_graph_dtype``). Which scheduler takes ``replacement``,
        ``order``, ``fixed_order``, ``time_limit``, ``allocator`` and ``timeout`` is the scheduler
        registry's rule (``scheduler.registry.check_options``: an ``allocator`` re-places the
        schedule of a scheduler that places its own tensors, and ``timeout`` limits it);
        ``cache_dir`` applies to a zoo model read through the trace cache (not with
        ``cache=False``, not to a traced graph). Raises ``ValueError``.

        >>> RunOptions(scheduler="cosma", replacement="greedy").check()
        Traceback (most recent call last):
        ...
        scheduler.schedule.ScheduleError: replacement='greedy' applies to the program... schedulers, not to \
scheduler='cosma'
        """
        for name in ("timeout", "time_limit"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not math.isfinite(value) or value <= 0):
                raise ValueError(f"{name}={value!r} must be a positive, finite number of seconds")
        check_options(self.scheduler, replacement=self.replacement, order=self.order, fixed_order=self.fixed_order,
                      time_limit=self.time_limit, allocator=self.allocator, allocator_timeout=self.timeout,
                      re_place=True, names={"allocator_timeout": "timeout"})
        if self.allocator is not None:
            check_allocator(self.allocator)
        if self.max_operators is not None and (isinstance(self.max_operators, bool)
                                               or not isinstance(self.max_operators, int) or self.max_operators < 1):
            raise ValueError(f"max_operators={self.max_operators!r} must be a positive integer (or None)")
        check_tiling(self.tiling)
        from frontend.precision import PRECISIONS

        self.tracing  # noqa: B018 (it raises ValueError naming the flag)
        for key in ("weight_dtype", "kv_dtype"):
            value = getattr(self, key)
            if value is not None and value not in PRECISIONS:
                flag = "--" + key.replace("_", "-")
                raise ValueError(f"{key}={value!r} ({flag}) is not one of {', '.join(PRECISIONS)}")
        if self.input_shape is not None and not _is_shape_or_shapes(self.input_shape):
            raise ValueError(f"input_shape={self.input_shape!r} must be a non-empty tuple of positive integers, "
                             "or one such tuple per input")
        if self.batch is not None and (isinstance(self.batch, bool) or not isinstance(self.batch, int)
                                       or self.batch < 1):
            raise ValueError(f"batch={self.batch!r} must be a positive integer (or None)")
        if not isinstance(self.model_options, Mapping):
            raise ValueError(f"model_options={self.model_options!r} must be a mapping of option names to integers")
        for key, value in self.model_options.items():
            if not isinstance(key, str) or not key.isidentifier():
                raise ValueError(f"model_options: {key!r} is not an option name")
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:  # the zoo says where 0 is allowed
                raise ValueError(f"model_options: {key}={value!r} must be a non-negative integer")
        if self.cache_dir is not None and not self.cache:
            raise ValueError(f"cache_dir={str(self.cache_dir)!r} names a trace cache that cache=False does not use")
        if self.cache_dir is not None and not traced:
            raise ValueError(f"cache_dir={str(self.cache_dir)!r} applies to a zoo model name or a user model spec; "
                             "a graph that is already traced is not cached")
        if self.sram is not None and "sram_bytes_per_pe" in self.overrides:
            raise ValueError(f"sram={self.sram!r} (--sram) and sram_bytes_per_pe="
                             f"{self.overrides['sram_bytes_per_pe']!r} (--set) name one field; give it once")
        if self.dtype is not None and "dtype" in self.overrides:
            raise ValueError(f"dtype={self.dtype!r} (--dtype) and dtype={self.overrides['dtype']!r} (--set) name one "
                             "setting, the storage dtype; give it once")
        if not traced and self.input_shape is not None:
            raise ValueError(f"input_shape={self.input_shape!r} cannot apply to a graph that is already traced "
                             "(its shapes were fixed when it was traced); trace the model again")
        if not traced and self.batch is not None:
            raise ValueError(f"batch={self.batch!r} cannot apply to a graph that is already traced (its shapes were "
                             "fixed when it was traced); trace the model again")
        if not traced and (self.trace_method != "auto" or self.host):
            raise ValueError("--trace-method and --host cannot apply to a graph that is already traced; trace the "
                             "model again")
        if not traced and self.model_options:
            raise ValueError(f"model_options={dict(self.model_options)!r} cannot apply to a graph that is already "
                             "traced (the model was built when it was traced); trace the model again")

    @property
    def tracing(self) -> Tracing:
        """``trace_method`` and ``host`` as ``frontend.trace.Tracing`` (``ValueError`` naming the flag)."""
        from frontend.trace import Tracing

        return Tracing(self.trace_method, tuple(self.host))

    def check_graph_dtype(self, graph_dtype: str) -> None:
        """A traced graph's dtype is fixed: ``dtype``, and a ``dtype`` among the hardware
        ``overrides`` (``--set dtype=bf16``), may only repeat it (raises ``ValueError``)."""
        if self.dtype is not None and self.dtype != graph_dtype:
            raise ValueError(f"dtype={self.dtype!r} cannot apply to a graph already traced in {graph_dtype!r}; "
                             "trace the model again in that dtype")
        wanted = self.overrides.get("dtype")
        if wanted is not None and str(wanted).strip() != graph_dtype:
            raise ValueError(f"--set dtype={wanted} cannot apply to a graph already traced in {graph_dtype!r} "
                             "(the hardware's dtype is the one a model is traced in); trace the model again in "
                             "that dtype")

    @classmethod
    def build(cls, options: RunOptions | None = None, **changes: Any) -> RunOptions:
        """``options`` (or the defaults) with ``changes`` applied; an unknown name raises ``ValueError``."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValueError(f"unknown run option {unknown[0]!r} (options: {', '.join(sorted(known))})")
        return replace(options or cls(), **changes)


def compile_and_simulate(
    model_or_name: Any,
    hw: str | Path | HardwareConfig = "pixel6",
    options: RunOptions | None = None,
    *,
    out_dir: str | Path | None = None,
    plots: bool = True,
    example_inputs: Any = None,
    name: str | None = None,
    **option_fields: Any,
) -> SimReport:
    """Compile ``model_or_name`` for ``hw`` and simulate it.

    Parameters
    ----------
    model_or_name:
        a model zoo name (``"resnet50"``), a user model spec (``"path/to/file.py:function"``,
        a function that returns an ``nn.Module`` or ``(module, example inputs)``; see
        ``frontend.user_model``), a path to a graph saved with ``frontend.save_graph``
        (``*.json``), an ``nn.Module`` (with ``example_inputs``, or ``input_shape``), or an
        already traced ``DataflowGraph``.
    hw:
        a bundled config name, a YAML path or a ``HardwareConfig``.
    options:
        a ``RunOptions``; keyword arguments named like its fields (``sram=``, ``allocator=``,
        ``scheduler=``, ``budget=``, ``overrides=``, ...) change single fields.
    out_dir:
        when given, write report.json, report.html, trace.json and the pictures layout.svg,
        memory.svg and roofline.svg there (``accelsim.report.write_report``).
    plots:
        False writes report.json, report.html and trace.json only, no SVG pictures
        (``accelsim run --no-plots``).
    example_inputs, name:
        for an ``nn.Module``: the inputs to trace it with (``input_shape`` and ``batch`` replace
        their shapes, as for a user model), and the name to report.

    Raises
    ------
    ValueError subclasses for bad input (unknown model, option or hardware field, bad ``sram``,
    ``scheduler.CapacityError`` below M_R); ``AllocationFailedError`` when the allocator
    cannot fit; ``InvalidPlacementError`` when the offsets are invalid.
    """
    opts = RunOptions.build(options, **option_fields)
    opts.check(traced=not is_traced(model_or_name))
    check_model(model_or_name, opts)
    if out_dir is not None:
        from accelsim.outputs import Output, check_outputs
        from accelsim.report import REPORT_FILES

        # absolute now: a user model's build() may change the working folder
        target = check_outputs([Output("out_dir", out_dir, folder=True, files=REPORT_FILES)],
                               input_files(model_or_name, hw))[0]
    # "kernels" first in the report's order, filled in at the end: the seconds this run spent
    # loading or compiling allocator kernels, left out of every other stage's clock
    run = _Run(stage={"kernels": 0.0}, stopped=[])
    kernels_before = kernel_seconds()
    config = load_hw(hw, opts.overrides)
    if opts.sram is not None:
        config = config.with_sram(opts.sram)
    run_dtype = opts.dtype or config.dtype
    graph = _trace_stage(model_or_name, run_dtype, example_inputs, name, opts, run)
    if opts.weight_dtype is not None or opts.kv_dtype is not None:
        from frontend.precision import set_precision

        graph = set_precision(graph, opts.weight_dtype, opts.kv_dtype)
    clock = work_clock()
    graph, sizes, tiled = on_chip_graph(graph, config, opts.weights, opts.tiling)
    check_dram(dram_footprint_bytes(graph, None, config, opts.weights), config,
               "the model's inputs, outputs" + (" and weights" if opts.weights else ""))
    sched, allocator_name, offsets, capacity = _schedule_stage(graph, sizes, config, opts, run, clock)
    sched, offsets = _load_timing_stage(graph, sched, offsets, allocator_name, config, opts, run)
    dram_need = dram_footprint_bytes(graph, sched, config, opts.weights)
    check_dram(dram_need, config, "every tensor it loads, stores, spills or retrieves")
    placed = _validate_stage(sched, offsets, allocator_name, run)
    clock = work_clock()
    result = simulate(graph, sched, offsets, config, capacity=capacity, raise_on_violation=opts.raise_on_violation)
    run.stage["simulate"] = work_clock() - clock
    run.stage["kernels"] = kernel_seconds() - kernels_before
    import scheduler

    need, need_op = scheduler.min_capacity(graph, sizes=sizes, alignment=config.alignment)
    report = SimReport.from_run(
        graph, sched, offsets, placed, config, result, allocator=allocator_name, capacity=capacity,
        min_capacity=(need, need_op), tiled=tiled, dtype=run_dtype, dram_footprint=dram_need,
        stage_seconds=run.stage, clock_stopped=run.stopped, weights=opts.weights)
    if out_dir is not None:
        from accelsim.outputs import staged_folder
        from accelsim.report import write_report

        # Written under a temporary name and moved into place at the end: an error or Ctrl-C
        # while plotting never leaves a half-written report folder.
        with staged_folder(target) as staging:
            write_report(report, staging, recorded_dir=out_dir, plots=plots)
    return report


@dataclass
class _Run:
    """What the stages of one ``compile_and_simulate`` record as they go."""

    stage: dict[str, float]  #: wall seconds per stage (``SimReport.stage_seconds``)
    stopped: list[str]  #: the stages whose wall-clock limit fired (``SimReport.clock_stopped``)


def _is_shape_or_shapes(value: Any) -> bool:
    """``value`` is a non-empty sequence of positive ints, or a non-empty sequence of those."""
    def is_shape(shape: Any) -> bool:
        return (isinstance(shape, Sequence) and not isinstance(shape, str | bytes) and len(shape) > 0
                and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape))

    if is_shape(value):
        return True
    return (isinstance(value, Sequence) and not isinstance(value, str | bytes) and len(value) > 0
            and all(is_shape(shape) for shape in value))


def _trace_stage(model_or_name: Any, run_dtype: str, example_inputs: Any, name: str | None, opts: RunOptions,
                 run: _Run) -> nx.DiGraph:
    """The run's graph (traced, from the cache or a file), its size and dtype checked: the trace stage."""
    from frontend.limits import check_operator_count

    clock = work_clock()
    graph = _to_graph(model_or_name, run_dtype, opts.input_shape, example_inputs, name, opts)
    check_operator_count(graph.number_of_nodes(), str(graph.graph.get("name", "the graph")), opts.max_operators)
    if "dtype" in graph.graph and is_traced(model_or_name):
        opts.check_graph_dtype(str(graph.graph["dtype"]))
    run.stage["trace"] = work_clock() - clock
    return graph


def _capacity(graph: nx.DiGraph, sizes: dict[str, int] | None, config: HardwareConfig, opts: RunOptions,
              cosma_options: Any, run: _Run) -> int:
    """The bytes the schedule may use: the scratchpad, or the ``budget`` (MR, MH, MP or bytes) below it."""
    import scheduler

    capacity = config.sram_bytes_per_pe
    if opts.budget is None:
        return capacity
    if isinstance(opts.budget, str) and opts.budget.upper() in ("MH", "MP"):
        # the MPMF order, solved here so that a time limit that cut it short is reported
        mpmf = scheduler.cosma.min_peak(graph, sizes, config.alignment, cosma_options)
        if mpmf.clock_stopped:
            run.stopped.append("schedule")
        wanted = scheduler.budgets(graph, sizes, config.alignment, cosma_options, order=mpmf)[opts.budget.upper()]
    else:
        wanted = scheduler.methods.resolve_budget(graph, opts.budget, sizes, config.alignment, cosma_options)
    if wanted > capacity:
        raise ValueError(
            f"budget {opts.budget!r} = {wanted:,} bytes exceeds the scratchpad of {capacity:,} bytes "
            f"{config.capacity_label}; raise it with sram="
        )
    return wanted


def _schedule_stage(graph: nx.DiGraph, sizes: dict[str, int] | None, config: HardwareConfig, opts: RunOptions,
                    run: _Run, clock: float) -> tuple[Schedule, str, dict[str, int], int]:
    """Schedule and place: ``(schedule, who placed it, offsets, capacity)``. For a scheduler that
    takes an allocator (program, min-peak) the allocator decides the spills
    (``scheduler.spill_loop``) and its loop is the allocate stage; the schedule of one that places
    its own tensors (cosma*) is re-placed only when ``allocator`` is named."""
    import scheduler
    from scheduler.options import DEFAULT_REPLACEMENT

    cosma_options = (scheduler.CosmaOptions() if opts.time_limit is None
                     else scheduler.CosmaOptions(time_limit=opts.time_limit))
    capacity = _capacity(graph, sizes, config, opts, cosma_options, run)
    replacement = opts.replacement or DEFAULT_REPLACEMENT
    if scheduler_entry(opts.scheduler).capabilities.allocator:
        sched = scheduler.make_schedule(
            graph, capacity, opts.scheduler, replacement, sizes, config.alignment, cosma_options,
            allocator=opts.allocator or DEFAULT_METHOD, allocator_timeout=opts.timeout, order=opts.order,
        )
        assert sched.offsets is not None
        looped = sched.stats.loop_seconds or 0.0
        run.stage["schedule"] = work_clock() - clock - looped
        run.stage["allocate"] = looped
        if sched.stats.clock_stopped:
            run.stopped.append("allocate")
        return sched, sched.placed_by.name, dict(sched.offsets), capacity
    sched = scheduler.make_schedule(
        graph, capacity, opts.scheduler, replacement, sizes, config.alignment, cosma_options,
        opts.fixed_order or PROGRAM,
    )
    run.stage["schedule"] = work_clock() - clock
    if sched.stats.clock_stopped and "schedule" not in run.stopped:
        run.stopped.append("schedule")
    clock = work_clock()
    allocator_name, offsets, placement_stopped = place(sched, opts.allocator, opts.timeout)
    run.stage["allocate"] = work_clock() - clock
    if placement_stopped:
        run.stopped.append("allocate")
    return sched, allocator_name, offsets, capacity


#: the load-timing planner's placements share 1/LOAD_TIMING_WORK of the allocator's work limit
#: (``allocator.METHODS[name].work_limit``): 1/16 of the spill loop's, since a plan that does not place
#: only costs prefetch, never correctness (its schedule keeps the offsets it had)
LOAD_TIMING_WORK = 16


def _load_timing_stage(graph: nx.DiGraph, sched: Schedule, offsets: dict[str, int], allocator_name: str,
                       config: HardwareConfig, opts: RunOptions, run: _Run) -> tuple[Schedule, dict[str, int]]:
    """The load-timing stage (``time_loads``): ``(schedule, offsets)``, its wall time recorded."""
    clock = work_clock()
    planned = time_loads(graph, sched.with_offsets(offsets), config, allocator_name, opts.timeout)
    run.stage["load timing"] = work_clock() - clock
    assert planned.offsets is not None
    return planned, dict(planned.offsets)


def time_loads(graph: nx.DiGraph, schedule: Schedule, hw: HardwareConfig, placed_by: str,
               timeout: float | None = None) -> Schedule:
    """``schedule`` (with offsets) with the step each load and retrieve is issued at planned
    (``scheduler.load_timing``) with the simulator's own operator cycles and DMA figures, as
    ``compile_and_simulate`` plans it.

    ``placed_by`` names who chose the offsets (``SimReport.allocator``). Offsets an
    ``allocator.METHODS`` method chose are chosen again by it for the prefetch windows, with
    1/``LOAD_TIMING_WORK`` of its work limit (``timeout``: its wall-clock safety net); offsets the
    scheduler chose itself (COSMA's addresses, the online arena's) stay, and prefetches grow only
    into the room they leave. ``hw.dma.prefetch_depth`` bounds how far ahead a load goes.
    """
    import allocator
    from accelsim.sim.compute_array import graph_operator_cost
    from frontend.graph import dtype_bytes
    from scheduler.load_timing import DmaModel, plan_load_timing

    element_bytes = dtype_bytes(str(graph.graph.get("dtype", "int8")))
    op_cycles = [graph_operator_cost(graph, name, hw, element_bytes).cycles for name in schedule.order]
    dma = DmaModel(hw.dram_bytes_per_cycle, hw.dram_latency_cycles, hw.chip_bytes(1))
    place = None
    if placed_by in allocator.METHODS:
        work = allocator.METHODS[placed_by].work_limit
        # a shared work limit: the planner's placements share 1/LOAD_TIMING_WORK of the method's, each
        # taking half of what is left, and a failed one spends its share (as in the spill loop)
        left = math.inf if work is None else work.total / LOAD_TIMING_WORK

        def place(planned: Schedule) -> dict[str, int] | None:
            nonlocal left
            extra: dict[str, float] = {}
            if work is not None:
                share = left / 2 if work.shared else work.total
                extra[work.option] = max(int(share), 1) if isinstance(work.total, int) else share
            result = allocator.solve(planned.problem(), placed_by, timeout, **extra)
            if result.solved and result.solution is not None:
                return dict(result.solution.offsets)
            if work is not None and work.shared:
                left -= extra[work.option]
            return None

    return plan_load_timing(schedule, op_cycles, dma, lookahead=hw.dma.prefetch_depth, place=place)


def _validate_stage(sched: Schedule, offsets: dict[str, int], allocator_name: str, run: _Run) -> Any:
    """The residencies as an allocation problem, the offsets checked by the independent validator
    (``InvalidPlacementError``: not simulated); the problem also lists the report's buffers."""
    import allocator as alloc

    clock = work_clock()
    placed = sched.problem()
    verdict = alloc.validate(placed, alloc.Solution(offsets))
    if not verdict.ok:
        first = verdict.violations[0].message
        raise InvalidPlacementError(
            f"placement by {allocator_name!r} is invalid ({len(verdict.violations)} violation(s)), not simulated; "
            f"first: {first}"
        )
    run.stage["validate"] = work_clock() - clock
    return placed

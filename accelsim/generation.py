"""A generation as one run: a prompt of ``prefill`` tokens, then ``decode`` steps, on one schedule.

``generate(model, hw, prefill=N, decode=M)`` (``accelsim run llm.NAME --prefill N --decode M``)
runs a zoo language model (``llm.*`` decoders) the way a static-shape compiler deploys one:

1. **Prefill**: the prompt's ``N`` tokens, compiled and simulated as any run
   (``compile_and_simulate``); its cycles are the time to first token (TTFT).
2. **One decode schedule for every step.** The step at the longest context (``N + M - 1``
   cached tokens) is compiled once: order, residencies, offsets and load timing. Every step
   ``j`` runs that schedule at its own context ``N + j``: its operators cost what they cost at
   that context and its tensors take their own bytes, at the same offsets (each is at most as
   large as at the longest context, so the placement holds; the simulator's memory check
   proves it at every step). A compiler for static shapes does the same: one program for the
   longest context, run with the valid length.
3. **The KV cache is persistent state.** When the whole cache of the generation (``N + M``
   tokens, every layer's keys and values) takes at most half the scratchpad
   (``KV_SHARE``; assumption: the other half is left for the weights to stream through), it
   is pinned: one region at the top of the scratchpad, at a fixed offset for the whole
   generation, that every step appends to in place. The first step loads the prefill's cache
   into it (its own schedule, compiled as the step is: the prefill wrote the cache to DRAM);
   the later steps' schedule is made in the rest of the scratchpad (``capacity - region``),
   and they read the cache from the region: no DRAM traffic and no copy, whatever the context. When
   the cache does not fit, it streams: each step loads each layer's cache from DRAM once
   (decode attention then reads it once per step, bandwidth-bound). Either way the new keys and
   values of every step are also written to DRAM (write-through, so the cache outlives the
   chip's state; one token per layer per step).
4. **Weights** re-stream every step (the load timing of ``--tiling auto``) unless they fit in
   the region's share with the cache: then the first step loads them with the cache and they
   stay, and the later steps read only their ids from DRAM and write their new keys and values.

Each step's cycles come from simulating it (``accelsim.sim.simulate``), never from a formula.
The steps' graphs are made from two traces, at the first and the last step's context: every
number of a decoder step's graph (shapes, bytes, MACs, GEMM sizes, elements) is affine in the
context, so the graph at any context between is exact (``graph_at``; the tests compare it with
a direct trace). Assumptions: steps run one after another (the next token needs this one's
logits, sampled on the host in no time); a pinned cache is read at the scratchpad's bandwidth,
which the operators' SRAM model does not charge (``--no-weights``-style: zero DRAM bytes).

The report (``GenerationReport``): TTFT, time per output token (TPOT, the mean step), tokens
per second (batch / TPOT), cycles of every step, the KV cache's bytes and where it lives, DRAM
bytes per token, and each phase's bound: the prefill's floor, and for each step (weights +
KV read from DRAM) / DRAM bandwidth.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from allocator.core.kernel_clock import kernel_seconds, work_clock

if TYPE_CHECKING:
    import networkx as nx

    from accelsim.hw import HardwareConfig
    from accelsim.pipeline import RunOptions
    from accelsim.results import SimReport
    from scheduler.schedule import Schedule

#: the most of the scratchpad a pinned KV cache may take (module docstring; assumption)
KV_SHARE = 2


@dataclass
class GenerationReport:
    """What ``generate`` measured (module docstring); cycles at ``clock_hz``."""

    model: str
    hw: str
    batch: int
    prefill_tokens: int
    decode_steps: int
    clock_hz: float
    prefill: SimReport  #: the prefill's whole report
    decode: SimReport  #: the report of the step at the longest context, as compiled
    step_cycles: list[int]  #: cycles of each decode step, in order
    step_dram_bytes: list[int]  #: DRAM bytes (read + write) of each step
    step_bounds: list[int]  #: each step's bound: (weights + KV read from DRAM) / DRAM bytes per cycle
    step_floors: list[int]  #: each step's floor: max(its operators' stall-free cycles, its DRAM bytes at full rate)
    kv_bytes: int  #: the whole generation's KV cache, chip bytes (``prefill + decode`` tokens)
    kv_resident: bool  #: the cache is pinned on chip (True) or streams from DRAM each step
    kv_region: int  #: bytes of the pinned region: the cache, and the weights when they stay (per PE; 0: it streams)
    weights_resident: bool  #: the weights stay on chip after the first step (they fit in the region too)
    memory_check: str  #: "ok" when the prefill and every step passed the overlap check
    #: wall seconds: kernels (loading or compiling allocator kernels, left out of the other
    #: clocks), prefill, compile decode, steps
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ttft_s(self) -> float:
        return self.prefill.cycles / self.clock_hz

    @property
    def tpot_s(self) -> float:
        return sum(self.step_cycles) / len(self.step_cycles) / self.clock_hz

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.tpot_s

    @property
    def dram_bytes_per_token(self) -> float:
        return sum(self.step_dram_bytes) / (len(self.step_dram_bytes) * self.batch)

    @property
    def over_bound(self) -> float:
        """Decode cycles over the steps' bounds (1.0: every step as fast as its DRAM reads allow)."""
        return sum(self.step_cycles) / sum(self.step_bounds)

    @property
    def over_floor(self) -> float:
        """Decode cycles over the steps' floors (a compute-bound step's floor is above its read bound)."""
        return sum(self.step_cycles) / sum(self.step_floors)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready figures (``generation.json``)."""
        return {
            "model": self.model, "hw": self.hw, "batch": self.batch, "prefill_tokens": self.prefill_tokens,
            "decode_steps": self.decode_steps, "clock_hz": self.clock_hz,
            "ttft_s": self.ttft_s, "ttft_cycles": int(self.prefill.cycles),
            "prefill_floor_cycles": self.prefill.floor_cycles["cycles"],
            "prefill_cycles_over_floor": self.prefill.cycles_over_floor,
            "tpot_s": self.tpot_s, "tokens_per_s": self.tokens_per_s, "step_cycles": self.step_cycles,
            "step_bound_cycles": self.step_bounds, "decode_cycles_over_bound": self.over_bound,
            "step_floor_cycles": self.step_floors, "decode_cycles_over_floor": self.over_floor,
            "step_dram_bytes": self.step_dram_bytes, "dram_bytes_per_token": self.dram_bytes_per_token,
            "kv_cache_bytes": self.kv_bytes, "kv_cache_resident": self.kv_resident,
            "kv_region_bytes": self.kv_region, "weights_resident": self.weights_resident,
            "memory_check": self.memory_check, "seconds": self.seconds,
        }


def graph_at(first: nx.DiGraph, last: nx.DiGraph, first_past: int, last_past: int, past: int) -> nx.DiGraph:
    """The step graph at ``past`` cached tokens, from the same model's graphs at ``first_past`` and
    ``last_past`` (same operators and tensors; every number affine in the context).

    Raises ``ValueError`` when the two graphs differ in structure or a number is not affine with
    an integer slope (the graph is then not a decoder step of this family).
    """
    if not first_past <= past <= last_past:
        raise ValueError(f"past={past} is outside [{first_past}, {last_past}]")
    if past == first_past or first_past == last_past:
        return _numbers_copied(first)
    if list(first.nodes) != list(last.nodes) or set(first.graph["tensors"]) != set(last.graph["tensors"]):
        raise ValueError(f"the step graphs at {first_past} and {last_past} cached tokens differ in their operators "
                         "or tensors (tiled differently); run fewer decode steps")
    span, at = last_past - first_past, past - first_past

    def value(a: Any, b: Any, where: str) -> Any:
        if isinstance(a, bool) or not isinstance(a, int) or a == b:
            if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
                return [value(x, y, where) for x, y in zip(a, b, strict=True)]
            if a != b:
                raise ValueError(f"{where}: {a!r} and {b!r} are not numbers affine in the context")
            return a
        step, rest = divmod((b - a) * at, span)
        if rest:
            raise ValueError(f"{where}: {a} at {first_past} and {b} at {last_past} cached tokens are not affine")
        return a + step

    out = _numbers_copied(first)
    for name, data in out.nodes(data=True):
        other = last.nodes[name]
        for key in ("macs", "elements", "gemm"):
            if key in data:
                data[key] = value(data[key], other[key], f"operator {name!r} {key}")
    for name, record in out.graph["tensors"].items():
        other = last.graph["tensors"][name]
        record["shape"] = value(record["shape"], other["shape"], f"tensor {name!r} shape")
        record["nbytes"] = value(record["nbytes"], other["nbytes"], f"tensor {name!r} bytes")
    return out


def _numbers_copied(graph: nx.DiGraph) -> nx.DiGraph:
    """A copy of ``graph`` whose attribute dicts and tensor records are its own (``graph_at`` replaces
    numbers in them, never mutates a list in place), sharing the rest: a deep copy per step cost
    more than the step's simulation."""
    out = graph.copy()  # new node and edge attribute dicts (values shared)
    out.graph = dict(graph.graph)
    out.graph["tensors"] = {name: dict(record) for name, record in graph.graph["tensors"].items()}
    return out


def resized(schedule: Schedule, sizes: dict[str, int]) -> Schedule:
    """``schedule`` with each residency and transfer of a tensor in ``sizes`` taking those bytes
    (offsets and steps as they are; the caller makes sure no size grows)."""
    from scheduler.schedule import Schedule as Sched

    residencies = [replace(r, size=sizes.get(r.tensor, r.size)) for r in schedule.residencies]
    transfers = [replace(t, nbytes=sizes.get(t.tensor, t.nbytes)) for t in schedule.transfers]
    return Sched(list(schedule.order), residencies, transfers, schedule.capacity, schedule.alignment,
                 dict(schedule.offsets or {}), schedule.method, replace(schedule.stats), schedule.status,
                 schedule.placed_by, list(schedule.rounds))


def _on_chip_sizes(graph: nx.DiGraph, hw: HardwareConfig) -> dict[str, int]:
    """Every tensor's on-chip bytes (per PE on per-PE targets), as the scheduler sized them."""
    from accelsim.pipeline import tensor_shares

    shares = tensor_shares(graph, hw)
    return shares if shares is not None else {t: int(r["nbytes"]) for t, r in graph.graph["tensors"].items()}


def _cache_names(graph: nx.DiGraph) -> tuple[list[str], list[str]]:
    """The cache a step reads (inputs after the ids) and the keys and values it writes."""
    cache = list(graph.graph.get("kv_cache", ()))
    inputs = set(graph.graph["inputs"])
    return [t for t in cache if t in inputs], [t for t in cache if t not in inputs]


def _pinned(last: nx.DiGraph, config: HardwareConfig, weights: bool) -> tuple[list[str], int, bool]:
    """What stays on chip across the steps (the tensors, the region's bytes, whether the weights are
    among them): the cache when it takes at most ``1/KV_SHARE`` of the scratchpad, and the weights
    too when they fit in that share with it; nothing otherwise."""
    reads, writes = _cache_names(last)
    sizes = _on_chip_sizes(last, config)
    align = config.alignment
    tensors = last.graph["tensors"]

    def room(names: list[str]) -> int:
        return sum(-(-sizes[t] // align) * align for t in names)

    limit = config.sram_bytes_per_pe // KV_SHARE
    cache = room(reads + writes)
    if cache > limit:
        return [], 0, False
    held = [t for t, r in tensors.items() if r["kind"] == "weight"] if weights else []
    if held and cache + room(held) <= limit:
        return reads + held, cache + room(held), True
    return reads, cache, False


def check_generation(model: Any, prefill: int, decode: int) -> None:
    """``ValueError`` (one line) unless ``model`` is a zoo decoder and the counts are positive."""
    from frontend import llm

    if not isinstance(model, str) or not llm.is_llm(model) or model not in llm.shapes():
        raise ValueError(f"--prefill/--decode run a zoo language model (llm.*: {', '.join(llm.names())}), "
                         f"not {model!r}")
    if llm.shape_of(model).kind != "decoder":
        raise ValueError(f"model {model!r} is an encoder: it generates no tokens (--decode needs a decoder)")
    for what, count in (("prefill", prefill), ("decode", decode)):
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"--{what} {count!r}: must be an integer >= 1")
    llm.check_options(model, 1, prefill + decode - 1)


def generate(model: str, hw: str | HardwareConfig = "pixel6", options: RunOptions | None = None, *,
             prefill: int, decode: int, **option_fields: Any) -> GenerationReport:
    """Run a prompt of ``prefill`` tokens and ``decode`` steps of ``model`` on ``hw`` (module docstring).

    ``options`` / ``option_fields`` are ``compile_and_simulate``'s (``batch``, ``sram``,
    ``weight_dtype``, ``kv_dtype``, ...); ``input_shape`` and ``model_options`` are set here.
    """
    from accelsim.hw import load_hw
    from accelsim.pipeline import RunOptions, compile_and_simulate

    check_generation(model, prefill, decode)
    opts = RunOptions.build(options, **option_fields)
    if opts.input_shape is not None or opts.model_options:
        raise ValueError("--prefill/--decode set the input shape and the KV cache length themselves: "
                         "give --batch, not --input-shape or --model-option")
    config = load_hw(hw, opts.overrides)
    if opts.sram is not None:
        config = config.with_sram(opts.sram)
    batch = opts.batch or 1
    seconds: dict[str, float] = {"kernels": 0.0}  # first in order, filled in at the end
    kernels_before = kernel_seconds()
    clock = work_clock()
    first = compile_and_simulate(model, config, replace(opts, sram=None, overrides={}, input_shape=(batch, prefill),
                                                        batch=None), plots=False)
    seconds["prefill"] = work_clock() - clock
    clock = work_clock()
    steps = _Steps(model, config, opts, batch, prefill, decode)
    seconds["compile decode"] = work_clock() - clock
    clock = work_clock()
    cycles, dram, bounds, floors, checks = steps.run()
    seconds["steps"] = work_clock() - clock
    seconds["kernels"] = kernel_seconds() - kernels_before
    failed = [c for c in [first.memory_check, steps.report.memory_check, *checks] if c != "ok"]
    return GenerationReport(
        model=model, hw=config.name, batch=batch, prefill_tokens=prefill, decode_steps=decode,
        clock_hz=config.clock_hz, prefill=first, decode=steps.report, step_cycles=cycles, step_dram_bytes=dram,
        step_bounds=bounds, step_floors=floors, kv_bytes=steps.kv_bytes, kv_resident=steps.region > 0,
        kv_region=steps.region, weights_resident=steps.weights_resident,
        memory_check=failed[0] if failed else "ok", seconds=seconds,
    )


class _Steps:
    """The decode steps: the two traced anchors, the pinned region, the one compiled schedule."""

    def __init__(self, model: str, config: HardwareConfig, opts: RunOptions, batch: int, prefill: int,
                 decode: int) -> None:
        from accelsim.pipeline import compile_and_simulate, on_chip_graph

        self.config, self.first_past, self.last_past = config, prefill, prefill + decode - 1
        first, last = (self._traced(model, opts, batch, past) for past in (self.first_past, self.last_past))
        pinned, self.region, self.weights_resident = _pinned(last, config, opts.weights)
        reads, writes = _cache_names(last)
        self.kv_bytes = sum(int(last.graph["tensors"][t]["nbytes"]) for t in reads + writes)
        step_hw = config
        step_opts = replace(opts, sram=None, overrides={}, input_shape=None, batch=None, model_options={},
                            weight_dtype=None, kv_dtype=None)  # the anchors are narrowed already
        self.first_report: SimReport | None = None
        if self.region:
            step_hw = config.with_sram(config.sram_bytes_per_pe - self.region)
            # the first step loads what it pins (the prefill's cache, weights that stay): compiled as it is
            self.first_report = compile_and_simulate(copy.deepcopy(first), step_hw, step_opts, plots=False)
            for graph in (first, last):  # pinned: no room in the steps' plan, no DRAM traffic after
                for t in pinned:
                    graph.graph["tensors"][t]["nbytes"] = 0
        self.report = compile_and_simulate(last, step_hw, step_opts, plots=False)
        self.first, _, _ = on_chip_graph(first, step_hw, opts.weights, opts.tiling)
        self.step_hw = step_hw

    def _traced(self, model: str, opts: RunOptions, batch: int, past: int) -> nx.DiGraph:
        import frontend
        from frontend.precision import set_precision

        dtype = opts.dtype or self.config.dtype
        options = {"past": past}
        graph = (frontend.cached_trace(model, dtype, (batch, 1), opts.cache_dir, must_save=opts.cache_dir is not None,
                                       options=options, tracing=opts.tracing).graph
                 if opts.cache else frontend.trace_model(model, dtype, (batch, 1), options=options,
                                                         tracing=opts.tracing))
        if opts.weight_dtype is not None or opts.kv_dtype is not None:
            graph = set_precision(graph, opts.weight_dtype, opts.kv_dtype)
        return graph

    def run(self) -> tuple[list[int], list[int], list[int], list[int], list[str]]:
        """Every step simulated at its context: cycles, DRAM bytes, bounds, floors, memory checks."""
        from accelsim.sim import simulate

        last = self.report.graph
        schedule = self.report.schedule
        per_cycle = self.step_hw.dram_bytes_per_cycle
        cycles: list[int] = []
        dram: list[int] = []
        bounds: list[int] = []
        floors: list[int] = []
        checks: list[str] = []
        for past in range(self.first_past, self.last_past + 1):
            if past == self.first_past and self.first_report is not None:  # the step that fills the region
                graph, result = self.first_report.graph, self.first_report.sim
                assert result is not None  # compile_and_simulate keeps its SimResult
            else:
                graph = graph_at(self.first, last, self.first_past, self.last_past, past)
                step = resized(schedule, _on_chip_sizes(graph, self.step_hw))
                result = simulate(graph, step, step.offsets, self.step_hw, capacity=self.report.capacity_bytes)
            cycles.append(int(result.cycles))
            dram.append(int(result.dram_read_bytes + result.dram_write_bytes))
            reads = sum(int(r["nbytes"]) for r in graph.graph["tensors"].values()
                        if r["kind"] in ("weight", "input"))
            bounds.append(math.ceil(reads / per_cycle))
            floors.append(int(result.floor_cycles))
            checks.append(result.memory_check)
        return cycles, dram, bounds, floors, checks


def format_generation(report: GenerationReport) -> str:
    """The plain-text summary ``accelsim run --prefill N --decode M`` prints."""
    from accelsim.units import format_bytes

    r = report
    steps = r.step_cycles
    where = (f"pinned on chip at one offset: a region of {format_bytes(r.kv_region)} "
             f"{r.prefill.capacity_scope} at the top of the scratchpad" if r.kv_resident
             else "streams: each step loads each layer's cache from DRAM")
    rows = [
        ("time to first token", f"{r.ttft_s * 1e3:.3f} ms",
         f"{int(r.prefill.cycles):,} cycles, {r.prefill.cycles_over_floor:.2f}× the prefill's floor "
         f"{r.prefill.floor_cycles['cycles']:,} ({r.prefill.floor_cycles['bound']}-bound)"),
        ("time per token", f"{r.tpot_s * 1e3:.3f} ms",
         f"mean of {len(steps)} steps ({min(steps):,} to {max(steps):,} cycles), {r.over_bound:.2f}× "
         f"(weights + KV read from DRAM) ÷ bandwidth, {r.over_floor:.2f}× the steps' floors"),
        ("tokens/s", f"{r.tokens_per_s:,.1f}", f"batch {r.batch}"),
        ("KV cache", format_bytes(r.kv_bytes), f"{r.prefill_tokens + r.decode_steps:,} tokens; {where}"),
        ("weights", "stay" if r.weights_resident else "stream",
         "on chip after the first step loads them (they fit in the region with the cache)" if r.weights_resident
         else "from DRAM every step"),
        ("DRAM per token", format_bytes(r.dram_bytes_per_token), "read and written, mean over the steps"),
        ("memory check", "ok" if r.memory_check == "ok" else "FAILED",
         "prefill and every step" if r.memory_check == "ok" else r.memory_check),
        ("wall time", f"{sum(r.seconds.values()):.3f} s", ", ".join(f"{k} {v:.2f}s" for k, v in r.seconds.items())),
    ]
    width = max(len(name) for name, _, _ in rows)
    value_width = max(len(value) for _, value, _ in rows)
    title = (f"accelsim: {r.model} on {r.hw}: a prompt of {r.prefill_tokens:,} tokens, then {r.decode_steps:,} "
             f"decode steps (batch {r.batch})")
    return "\n".join([title, *(f"  {name:<{width}}  {value:<{value_width}}  {note}".rstrip()
                               for name, value, note in rows)])


#: what ``write_generation`` writes in the report folder: the prefill's report files, the figures,
#: and the decode step's report (the longest context, as compiled) in ``decode/``
def generation_files() -> tuple[str, ...]:
    from accelsim.report import REPORT_FILES

    return (*REPORT_FILES, "generation.json", "decode/")


def write_generation(report: GenerationReport, out_dir: str | Path, plots: bool = True) -> None:
    """Write ``generation.json`` and the prefill's report into ``out_dir``, the decode step's into
    ``out_dir/decode`` (each folder staged: an error leaves the old files)."""
    import json

    from accelsim.outputs import staged_folder
    from accelsim.report import write_report

    target = Path(out_dir)
    with staged_folder(target / "decode") as staging:
        write_report(report.decode, staging, recorded_dir=target / "decode", plots=plots)
    with staged_folder(target) as staging:
        write_report(report.prefill, staging, recorded_dir=target, plots=plots)
        (staging / "generation.json").write_text(json.dumps(report.to_dict(), indent=1) + "\n", encoding="utf-8")

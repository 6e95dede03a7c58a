"""``SimReport``: everything one run measured, and ``report.json``.

A module of its own, below both ``accelsim.pipeline`` (which fills it) and ``accelsim.report``
(which prints and draws it), so that neither imports the other back. ``accelsim.pipeline``
re-exports it, and ``accelsim.SimReport`` is this class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelsim.hw import HardwareConfig
from accelsim.sim import OpRecord, SimResult


@dataclass
class SimReport:
    """Everything one run measured. ``to_dict`` is the content of ``report.json``.

    Capacities and peaks are in the config's scope (per PE on the Pixel 6); DRAM byte counts
    are chip totals (all PEs together).
    """

    model: str  #: the model's name: a zoo name, a saved graph's name, or ``FILE.FUNCTION`` for your own model
    hw: str  #: the hardware config's ``name`` (``hw_config`` holds all its fields)
    dtype: str  #: the storage dtype of the graph's floating tensors (``--dtype``, or the config's)
    scheduler: str  #: the scheduler that ran, with its order and replacement policy, e.g. "program+belady"
    allocator: str  #: the method whose offsets were simulated, e.g. "auto" or "online-first-fit"
    capacity_bytes: int  #: the bytes the schedule may use: the scratchpad (``sram_bytes_per_pe``) or the ``--budget``
    capacity_scope: str  #: "per PE (16 PEs)" or "chip"
    min_capacity_bytes: int  #: M_R, the smallest capacity any schedule can run in
    min_capacity_op: str  #: the operator that sets M_R
    #: operators cut into row tiles (``frontend.row_tiling``), then those split into weight tiles
    #: (``frontend.tiling.tile_weights``; a row tile split again is listed by its own name)
    tiled_operators: list[str]
    peak_bytes: int  #: highest address in use during the simulation
    peak_live_bytes: int  #: most bytes allocated at once during the simulation
    cycles: int  #: simulated cycles until the last operator or transfer ends
    seconds: float  #: ``cycles`` / ``clock_hz``: the simulated time (the accelerator's, not the host's)
    clock_hz: float  #: the config's core clock, Hz
    dram_read_bytes: int  #: bytes read from DRAM: loads and retrieves
    dram_write_bytes: int  #: bytes written to DRAM: stores and spills
    compulsory_bytes: int  #: DRAM bytes any schedule moves: each weight and input loaded once, each output stored once
    noncompulsory_bytes: int  #: DRAM bytes beyond those: spills and retrieves (re-reading a dropped weight is one)
    dram_bytes_by_kind: dict[str, int]  #: load / store (compulsory), spill / retrieve (not)
    #: bytes the run keeps in DRAM: every tensor moved, once, at full size;
    #: at most the config's ``dram_bytes``, or the run is refused
    dram_footprint_bytes: int
    weight_bytes: int  #: sum of the graph's weight tensors (chip total)
    input_bytes: int  #: sum of the graph's input tensors
    output_bytes: int  #: sum of the graph's output tensors
    macs: int  #: multiply-accumulates of the scheduled operators
    n_ops: int  #: operators the accelerator ran (host operators not counted)
    n_residencies: int  #: stays of a tensor in the scratchpad: the buffers placed (``buffers``)
    n_transfers: int  #: DMA transfers: loads, stores, spills and retrieves
    spills: int  #: transfers that wrote an evicted activation to DRAM to read it back later
    retrieves: int  #: transfers that read back a spilled tensor or re-read an evicted weight or input
    compute_cycles: int  #: cycles the compute array was busy
    dma_cycles: int  #: cycles at least one DMA channel was busy
    memory_check: str  #: "ok" or the memory violation
    #: per operator of the traced graph, in schedule order of its first part: name, op, start_cycle,
    #: end_cycle, macs, compute_cycles, ideal_cycles, utilization, stall_cycles {dma_wait, sram_bandwidth},
    #: dma_wait_split {bandwidth, late}, sram_bytes, dram_bytes {read, write} (chip total, the
    #: transfers of its step), mapping, folds, energy {compute, sram, dram, total}
    #: (joules), and tiles: the records of its tiles and concat when it was tiled (their sums are above)
    ops: list[dict[str, Any]]
    #: wall time of kernels (loading or, the first time, compiling the allocator kernels the run
    #: reaches; left out of every other stage's clock), trace, schedule, allocate, validate,
    #: simulate, report (writing the folder; the allocation-aware loop of the program / min-peak
    #: schedulers, plans and placements, counts as allocate). The report's
    #: timing fields are this and every ``scheduler_stats`` key ending in ``seconds``: all else is
    #: the same on every machine while ``deterministic`` holds
    stage_seconds: dict[str, float]
    scheduler_status: str = "heuristic"  #: "heuristic", or "optimal" / "feasible" / "timeout" (cosma*)
    scheduler_stats: dict[str, float] = field(default_factory=dict)  #: e.g. objective, bound, gap, solve_seconds
    weights_on_chip: bool = True  #: False when the run considered activations only
    peak_macs_per_cycle: int = 0  #: MACs per cycle with every cell or lane busy
    ideal_cycles: int = 0  #: sum over operators of MACs / peak (elements / vector rate without MACs)
    #: the cycles no run of these operators and DRAM bytes can beat: cycles, its compute and dram terms,
    #: and the bound that sets it (``accelsim.sim.results`` defines them)
    floor_cycles: dict[str, Any] = field(default_factory=dict)
    #: ``cycles`` / the floor's cycles: 1.0 is a run as fast as its operators or its DRAM traffic allow
    #: (0.0 when the floor is 0: nothing ran)
    cycles_over_floor: float = 0.0
    utilization: float = 0.0  #: MACs / (cycles x peak MACs per cycle), the whole run
    stall_cycles: dict[str, int] = field(default_factory=dict)  #: by cause: dma_wait, sram_bandwidth
    #: the DMA wait split: bandwidth (what the DRAM link alone forced) and late (what loads issued later
    #: than that cost: scratchpad room, lookahead, write-backs, latencies; ``accelsim.sim.results``)
    dma_wait_split: dict[str, int] = field(default_factory=dict)
    energy: dict[str, float] = field(default_factory=dict)  #: joules: compute, sram, dram, total
    sim_events: int = 0  #: SimPy events the simulation processed
    #: False when a wall-clock limit (``timeout``, ``time_limit``) ended a search before its work
    #: limit did: the answer then depends on the machine's speed and load
    deterministic: bool = True
    clock_stopped: list[str] = field(default_factory=list)  #: the stages whose wall-clock limit fired
    #: the placed residencies: id, start, end (steps, end exclusive), size, alignment, offset (bytes),
    #: the rows ``write_buffers`` writes in the MiniMalloc CSV format
    buffers: list[dict[str, Any]] = field(default_factory=list)
    #: the steps that ran on the host (``frontend.host``: a detector's anchors, NMS, RoI align):
    #: name, kind, after (the accelerator operator before it), inputs and outputs (tensor, shape,
    #: dtype, bytes, side), waits_for. Not simulated: the time above is the accelerator's
    host_ops: list[dict[str, Any]] = field(default_factory=list)
    #: bytes the accelerator wrote for the host to read (in the DRAM traffic above: they are
    #: accelerator outputs)
    to_host_bytes: int = 0
    from_host_bytes: int = 0  #: bytes the host wrote for the accelerator to read (accelerator inputs)
    out_dir: str | None = None  #: the report folder (``null`` when the run wrote none)
    #: the tracer that made the graph, ``"fx"`` or ``"export"`` (``frontend.trace``: torch.export runs
    #: where torch.fx cannot trace); ``null`` for a graph built by hand (a saved graph keeps its own)
    tracer: str | None = None
    #: the dtypes weights and the KV cache take apart from the run's (``frontend.precision``: ``{"weights":
    #: "int4", "kv_cache": "int8"}``); empty: every tensor in the run's dtype
    precision: dict[str, str] = field(default_factory=dict)
    # the objects behind the numbers, for plots and further analysis (not in report.json)
    graph: Any = field(default=None, repr=False)
    schedule: Any = field(default=None, repr=False)
    offsets: dict[str, int] = field(default_factory=dict, repr=False)
    sim: SimResult | None = field(default=None, repr=False)
    hardware: HardwareConfig | None = field(default=None, repr=False)

    _NOT_IN_JSON = ("graph", "schedule", "offsets", "sim", "hardware")

    @classmethod
    def from_run(cls, graph: Any, sched: Any, offsets: dict[str, int], placed: Any, config: HardwareConfig,
                 result: SimResult, *, allocator: str, capacity: int, min_capacity: tuple[int, str],
                 tiled: list[str], dtype: str, dram_footprint: int, stage_seconds: dict[str, float],
                 clock_stopped: list[str], weights: bool) -> SimReport:
        """The report of one run: the graph as scheduled, the schedule, its offsets and the
        validated residencies (``placed``, an ``allocator.Problem``), the config and the simulation."""
        tensors = graph.graph["tensors"]
        from frontend.host import crossing_bytes, host_operators

        to_host, from_host = crossing_bytes(graph)

        def kind_bytes(kind: str) -> int:
            return sum(rec["nbytes"] for rec in tensors.values() if rec["kind"] == kind)

        return cls(
            model=str(graph.graph.get("name", "model")), hw=config.name, dtype=str(graph.graph.get("dtype", dtype)),
            scheduler=sched.method, allocator=allocator, capacity_bytes=capacity,
            capacity_scope=config.capacity_label, min_capacity_bytes=min_capacity[0],
            min_capacity_op=min_capacity[1], tiled_operators=tiled, peak_bytes=result.peak_bytes,
            peak_live_bytes=result.peak_live_bytes, cycles=int(result.cycles), seconds=result.seconds,
            clock_hz=config.clock_hz, dram_read_bytes=result.dram_read_bytes,
            dram_write_bytes=result.dram_write_bytes, compulsory_bytes=result.compulsory_bytes,
            noncompulsory_bytes=result.noncompulsory_bytes, dram_bytes_by_kind=result.bytes_by_kind,
            dram_footprint_bytes=dram_footprint, weight_bytes=kind_bytes("weight"), input_bytes=kind_bytes("input"),
            output_bytes=sum(tensors[t]["nbytes"] for t in graph.graph["outputs"]),
            macs=sum(int(graph.nodes[n].get("macs", 0)) for n in sched.order), n_ops=len(sched.order),
            n_residencies=len(sched.residencies), n_transfers=len(sched.transfers),
            spills=sum(1 for t in sched.transfers if t.kind == "spill"),
            retrieves=sum(1 for t in sched.transfers if t.kind == "retrieve"),
            compute_cycles=int(result.compute_cycles), dma_cycles=int(result.dma_cycles),
            memory_check=result.memory_check,
            ops=traced_operator_records(result.ops, tiled, config.peak_macs_per_cycle),
            peak_macs_per_cycle=config.peak_macs_per_cycle, ideal_cycles=result.ideal_cycles,
            floor_cycles={"cycles": result.floor_cycles, "compute": result.floor_compute_cycles,
                          "dram": result.floor_dram_cycles, "bound": result.floor_bound},
            cycles_over_floor=int(result.cycles) / result.floor_cycles if result.floor_cycles else 0.0,
            utilization=result.utilization, stall_cycles={k: int(v) for k, v in result.stall_cycles.items()},
            dma_wait_split={k: int(v) for k, v in result.dma_wait_split.items()},
            energy=result.energy, sim_events=result.events, deterministic=not clock_stopped,
            clock_stopped=clock_stopped,
            buffers=[{"id": b.id, "start": b.start, "end": b.end, "size": b.size, "alignment": b.alignment,
                      "offset": offsets[b.id]} for b in placed.buffers],
            # the schedule's typed statistics as report.json has always shown them: the fields the
            # scheduler set, in its order, yes/no values as 1.0 / 0.0 (``ScheduleStats.as_report``)
            stage_seconds=stage_seconds, scheduler_status=sched.status, scheduler_stats=sched.stats.as_report(),
            weights_on_chip=weights, host_ops=host_operators(graph), to_host_bytes=to_host,
            from_host_bytes=from_host, graph=graph, schedule=sched, offsets=offsets, sim=result,
            hardware=config, tracer=graph.graph.get("tracer"), precision=dict(graph.graph.get("precision", {})),
        )

    @property
    def ok(self) -> bool:
        return self.memory_check == "ok"

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready report: every number above plus ``hw_config``, the hardware fields used
        (the objects kept for plotting are left out)."""
        data = {k: v for k, v in self.__dict__.items() if k not in self._NOT_IN_JSON}
        if self.hardware is not None:
            data["hw_config"] = self.hardware.to_dict()
        return data

    def write_buffers(self, path: str | Path) -> None:
        """Write the placed residencies (``buffers``) to ``path`` in the MiniMalloc CSV format,
        ``id,lower,upper,size[,alignment],offset`` (``allocator.write_csv``), so that
        ``accelsim alloc`` and ``allocator.read_csv`` read them back. The capacity is not in the
        format: it is the report's ``capacity_bytes``."""
        import allocator

        problem = allocator.Problem([allocator.Buffer(b["id"], b["start"], b["end"], b["size"], b["alignment"])
                                     for b in self.buffers])
        allocator.write_csv(path, problem, allocator.Solution({b["id"]: b["offset"] for b in self.buffers}))



def _op_record(o: OpRecord) -> dict[str, Any]:
    """One simulated operator as report.json's ``ops`` shows it (``tiles`` empty: ``traced_operator_records``)."""
    return {"name": o.name, "op": o.op, "start_cycle": int(o.start_cycle), "end_cycle": int(o.end_cycle),
            "macs": o.macs, "compute_cycles": o.compute_cycles, "ideal_cycles": o.ideal_cycles,
            "utilization": o.utilization,
            "stall_cycles": {"dma_wait": int(o.dma_stall_cycles), "sram_bandwidth": int(o.sram_stall_cycles)},
            "dma_wait_split": {"bandwidth": int(o.dma_bandwidth_stall_cycles), "late": int(o.dma_late_stall_cycles)},
            "sram_bytes": o.sram_bytes,
            "dram_bytes": {"read": int(o.dram_read_bytes), "write": int(o.dram_write_bytes)},
            "mapping": o.mapping, "folds": o.folds, "energy": o.energy, "tiles": []}


def traced_operator_records(ops: list[OpRecord], tiled: list[str], peak_macs_per_cycle: int) -> list[dict[str, Any]]:
    """report.json's ``ops``: one record per operator of the traced graph, so per-layer tables line up by
    name whatever the tiling. A tiled operator's record sums its tiles and concat (``frontend.tiling``)
    and lists them under ``tiles`` (each without a ``tiles`` key): its start is the first part's, its
    end the last's, its kind and mapping its first tile's, its utilization MACs / (compute cycles x
    peak). An operator left whole has ``tiles`` empty."""
    from frontend.tiling import traced_operator

    groups: dict[str, list[OpRecord]] = {}
    for o in ops:
        groups.setdefault(traced_operator(o.name, tiled), []).append(o)
    records = []
    for name, parts in groups.items():
        if len(parts) == 1 and parts[0].name == name:
            records.append(_op_record(parts[0]))
            continue
        shown = [_op_record(p) for p in parts]
        for part in shown:
            del part["tiles"]
        first = shown[0]
        record = dict(first, name=name, end_cycle=shown[-1]["end_cycle"], tiles=shown)
        for key in ("macs", "compute_cycles", "ideal_cycles", "sram_bytes", "folds"):
            record[key] = sum(p[key] for p in shown)
        record["utilization"] = (record["macs"] / (record["compute_cycles"] * peak_macs_per_cycle)
                                 if record["macs"] and record["compute_cycles"] else first["utilization"])
        for key in ("stall_cycles", "dma_wait_split", "dram_bytes", "energy"):
            record[key] = {k: sum(p[key][k] for p in shown) for k in first[key]}
        records.append(record)
    return records

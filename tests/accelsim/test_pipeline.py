"""compile_and_simulate on hand-built graphs, and the report folder it writes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

import accelsim.pipeline as pipeline
import allocator
import scheduler
from accelsim import (
    AllocationFailedError,
    InvalidPlacementError,
    compile_and_simulate,
    load_hw,
)
from accelsim.pipeline import tensor_shares
from accelsim.report import chrome_trace, format_summary
from allocator.core.registry import METHODS, MethodOutput, register
from scheduler import CapacityError

REPORT_KEYS = {
    "model", "hw", "scheduler", "allocator", "capacity_bytes", "capacity_scope", "peak_bytes", "cycles", "seconds",
    "dram_read_bytes", "dram_write_bytes", "compulsory_bytes", "noncompulsory_bytes", "memory_check", "ops",
    "min_capacity_bytes", "weight_bytes", "input_bytes", "n_ops", "n_residencies", "spills", "retrieves",
    "stage_seconds", "utilization", "ideal_cycles", "stall_cycles", "energy", "hw_config", "peak_macs_per_cycle",
    "floor_cycles", "cycles_over_floor",
}
OP_KEYS = {"name", "op", "start_cycle", "end_cycle", "macs", "compute_cycles", "ideal_cycles", "utilization",
           "stall_cycles", "sram_bytes", "mapping", "folds", "energy"}


def check_trace(trace: dict, report, clock_hz: float, channels: int) -> None:
    """Check a Chrome trace against what the schedule and the simulation say, not against the
    function that wrote it: one track per DMA channel, one complete event per operator (in the
    schedule's order) and per transfer (the scheduler's list), each at its simulated cycles
    converted with the clock, no two events overlapping on a track, and counters that never
    pass the peak."""
    def us(cycles: float) -> float:
        return cycles / clock_hz * 1e6

    events = trace["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert sorted(tracks.values()) == ["compute"] + [f"dma channel {c}" for c in range(channels)]
    track = {name: tid for tid, name in tracks.items()}
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == len(report.schedule.order) + len(report.schedule.transfers)
    assert all(e["tid"] in tracks and e["ts"] >= 0 and e["dur"] >= 0 for e in complete)

    # operators: the schedule's order, at their simulated cycles (the trace rounds to whole ns)
    compute = [e for e in complete if e["tid"] == track["compute"]]
    assert [e["name"] for e in compute] == list(report.schedule.order) == [op["name"] for op in report.ops]
    for e, op in zip(compute, report.ops, strict=True):
        assert e["ts"] == pytest.approx(us(op["start_cycle"]), abs=1e-3)
        assert e["dur"] == pytest.approx(us(op["end_cycle"] - op["start_cycle"]), abs=2e-3)

    # transfers: the scheduler's, each on the track of the channel that carried it
    dma = [e for e in complete if e["tid"] != track["compute"]]
    assert sorted(e["name"] for e in dma) == sorted(f"{t.kind} {t.tensor}" for t in report.schedule.transfers)
    by_fill = {(e["args"]["residency"], e["args"]["direction"]): e for e in dma}
    assert len(by_fill) == len(dma)
    for t in report.sim.transfers:
        e = by_fill[(t.residency, "read" if t.kind in ("load", "retrieve") else "write")]
        assert (e["name"], e["tid"]) == (f"{t.kind} {t.tensor}", track[f"dma channel {t.channel}"])
        assert e["ts"] == pytest.approx(us(t.start_cycle), abs=1e-3)
        assert e["dur"] == pytest.approx(us(t.end_cycle - t.start_cycle), abs=2e-3)

    # the run ends with the last event; slices on one track never overlap (Perfetto drops them)
    assert max(e["ts"] + e["dur"] for e in complete) == pytest.approx(us(report.cycles), abs=1e-3)
    for tid in tracks:
        spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in complete if e["tid"] == tid)
        assert all(end <= nxt + 1e-9 for (_, end), (nxt, _) in zip(spans, spans[1:], strict=False))

    counters = [e["args"] for e in events if e["ph"] == "C"]
    assert max(c["highest address"] for c in counters) == report.peak_bytes <= report.capacity_bytes
    assert all(0 <= c["live"] <= c["highest address"] for c in counters)


def test_chain_on_pixel6_uses_per_pe_sizes(chain_graph):
    report = compile_and_simulate(chain_graph(), hw="pixel6")
    assert report.ok and report.memory_check == "ok"
    assert report.capacity_bytes == 2 * 2**20
    assert report.capacity_scope == "per PE (16 PEs)"
    assert report.allocator == allocator.DEFAULT_METHOD  # the chain fits: the loop's first plan is placed
    assert report.scheduler == "program+belady"
    # 1 KiB activations split over 16 PEs are 64 B per PE; conv0 holds x, w0 and a0
    assert report.min_capacity_bytes == 3 * 64
    assert report.peak_bytes <= report.capacity_bytes
    assert report.dram_read_bytes >= report.weight_bytes + report.input_bytes
    assert report.noncompulsory_bytes == 0
    assert report.n_ops == len(report.ops) == 7
    assert [op["name"] for op in report.ops][:2] == ["conv0", "conv1"]
    assert set(report.to_dict()) >= REPORT_KEYS
    json.dumps(report.to_dict())


def test_report_folder(chain_graph, tmp_path):
    out = tmp_path / "chain-tpuv4"
    report = compile_and_simulate(chain_graph(), hw="tpuv4", out_dir=out)
    assert sorted(p.name for p in out.iterdir()) == [
        "layout.svg", "memory.svg", "report.html", "report.json", "roofline.svg", "trace.json"]
    data = json.loads((out / "report.json").read_text())
    assert set(data) >= REPORT_KEYS
    assert data["capacity_scope"] == "chip" and data["memory_check"] == "ok"
    assert data["hw_config"]["sram_bytes_per_pe"] == 128 * 2**20 and data["hw_config"]["name"] == "tpuv4"
    assert "report" in data["stage_seconds"] and data["out_dir"] == str(out)
    for picture in ("layout.svg", "memory.svg", "roofline.svg"):
        assert ET.parse(out / picture).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    check_trace(json.loads((out / "trace.json").read_text()), report, clock_hz=data["hw_config"]["clock_hz"],
                channels=load_hw("tpuv4").dma.channels)


def test_chrome_trace_has_a_track_per_dma_channel_and_an_event_per_operator_and_transfer(chain_graph, toy_hw):
    # 3 KiB on the toy config: the online arena spills a1 and a5 and brings them back; two DMA channels
    # share the work
    report = compile_and_simulate(chain_graph(), hw=toy_hw(dma=dict(channels=2)), sram=3072,
                                  allocator="online-first-fit")
    assert report.spills == report.retrieves == 2
    trace = chrome_trace(report)
    check_trace(trace, report, clock_hz=1e9, channels=2)
    events = trace["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    complete = [(tracks[e["tid"]], e) for e in events if e["ph"] == "X"]
    assert {track for track, _ in complete} == {"compute", "dma channel 0", "dma channel 1"}
    writes = {e["name"] for track, e in complete if track != "compute" and e["args"]["direction"] == "write"}
    assert writes == {"spill a1", "spill a5", "store out"}
    # a flow arrow from every load and retrieve to the operator of its step, which reads the tensor
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    reads = [t for t in report.sim.transfers if t.to_chip]
    assert len(starts) == len(finishes) == len(reads) > 0 and starts.keys() == finishes.keys()
    ops = {o["name"]: o for o in report.ops}
    for flow, start in starts.items():
        end = finishes[flow]
        assert tracks[start["tid"]].startswith("dma channel") and tracks[end["tid"]] == "compute"
        tensor, reader = start["name"].split(" -> ")
        assert tensor in report.graph.nodes[reader]["in_tensors"]
        assert end["ts"] == pytest.approx(ops[reader]["start_cycle"] / 1e3, abs=1e-3) and end["bp"] == "e"


def test_summary_table_lists_the_key_numbers(chain_graph):
    text = format_summary(compile_and_simulate(chain_graph(), hw="pixel6"))
    assert text.splitlines()[0] == "accelsim: chain on pixel6 (int8)"
    for label in ("capacity", "M_R", "peak address", "cycles", "DRAM read", "non-compulsory", "memory check"):
        assert label in text
    assert "per PE (16 PEs)" in text
    assert "traced by" not in text  # a graph built by hand was traced by nothing


@pytest.mark.parametrize("method, name", [("fx", "torch.fx"), ("export", "torch.export")])
def test_the_report_says_which_tracer_made_the_graph(method, name, tmp_path):
    import json

    import torch

    import frontend

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    graph = frontend.trace(model, (torch.zeros(1, 3, 8, 8),), dtype="int8", name="tiny", method=method)
    report = compile_and_simulate(graph, hw="pixel6", out_dir=tmp_path / "r", plots=False)
    assert report.tracer == method
    assert format_summary(report).splitlines()[1].split() == ["traced", "by", name]
    assert json.loads((tmp_path / "r" / "report.json").read_text())["tracer"] == method
    # a saved graph keeps the tracer that made it
    frontend.save_graph(graph, tmp_path / "g.json")
    assert compile_and_simulate(str(tmp_path / "g.json"), hw="pixel6").tracer == method


def test_smaller_sram_means_more_noncompulsory_traffic(chain_graph, toy_hw, tmp_path):
    graph = chain_graph()
    big = compile_and_simulate(graph, hw=toy_hw(), sram=8192)
    small = compile_and_simulate(graph, hw=toy_hw(), sram=3072)
    assert big.noncompulsory_bytes == 0 < small.noncompulsory_bytes
    assert small.spills > 0 and small.retrieves > 0
    assert small.cycles > big.cycles
    assert small.compulsory_bytes == big.compulsory_bytes


def test_capacity_below_min_capacity_names_operator_and_m_r(chain_graph, toy_hw):
    with pytest.raises(CapacityError, match="below M_R = 3072 bytes: operator 'skip'"):
        compile_and_simulate(chain_graph(), hw=toy_hw(), sram=2048)


def test_allocator_method_replaces_the_online_placement(chain_graph, toy_hw):
    report = compile_and_simulate(chain_graph(), hw=toy_hw(), sram=3072, allocator="greedy-by-size")
    assert report.allocator in ("greedy-by-size", "online-first-fit")
    assert report.scheduler_stats["rounds"] >= 1
    assert report.memory_check == "ok"
    assert set(report.offsets) == {r.id for r in report.schedule.residencies}


@pytest.mark.parametrize("sram", [3072, 3584, 4096, 8192])
def test_the_allocator_decides_the_spills_and_never_moves_more_than_the_online_arena(chain_graph, toy_hw, sram):
    graph = chain_graph()
    online = compile_and_simulate(graph, hw=toy_hw(), sram=sram, allocator="online-first-fit")
    assert online.allocator == "online-first-fit" and "rounds" not in online.scheduler_stats
    for method in ("best-fit", "greedy-by-size", None):  # None: the default
        report = compile_and_simulate(graph, hw=toy_hw(), sram=sram, allocator=method)
        assert report.ok, report.memory_check  # the simulator's memory check at every moment
        assert report.noncompulsory_bytes <= online.noncompulsory_bytes
        assert report.compulsory_bytes == online.compulsory_bytes
        assert report.scheduler_stats["online_noncompulsory_bytes"] == online.schedule.noncompulsory_bytes
        assert report.allocator in (method or allocator.DEFAULT_METHOD, "online-first-fit")
        assert scheduler.check_schedule(report.graph, report.schedule, tensor_shares(report.graph, report.hardware)) \
            == []


def test_online_first_fit_applies_to_the_program_schedulers_only(chain_graph, toy_hw):
    with pytest.raises(ValueError, match="scheduler='cosma' places its tensors itself"):
        compile_and_simulate(chain_graph(), hw=toy_hw(), scheduler="cosma", allocator="online-first-fit")
    with pytest.raises(ValueError, match="no time limit"):
        compile_and_simulate(chain_graph(), hw=toy_hw(), allocator="online-first-fit", timeout=1.0)


def test_unknown_allocator_is_bad_input(chain_graph, toy_hw):
    with pytest.raises(ValueError, match="no-such-method"):
        compile_and_simulate(chain_graph(), hw=toy_hw(), allocator="no-such-method")


@pytest.fixture
def failing_method():
    name = "test-always-gives-up"

    @register(name, "test double: never places anything")
    def _give_up(problem, deadline, options):
        return MethodOutput("infeasible", None, reason="gave up on purpose")

    yield name
    del METHODS[name]


def test_allocator_that_cannot_fit_raises_naming_it_and_the_reason(chain_graph, toy_hw, failing_method):
    # re-placing a COSMA schedule: nothing else can place it
    with pytest.raises(AllocationFailedError, match=f"allocator '{failing_method}'.*gave up on purpose"):
        compile_and_simulate(chain_graph(), hw=toy_hw(), scheduler="cosma-fs", allocator=failing_method)


def test_a_loop_whose_allocator_never_fits_keeps_the_online_arena(chain_graph, toy_hw, failing_method):
    report = compile_and_simulate(chain_graph(), hw=toy_hw(), sram=3072, allocator=failing_method)
    assert report.allocator == "online-first-fit" and report.ok
    assert report.scheduler_stats["fitted"] == 0 and report.scheduler_stats["online_kept"] == 1
    assert report.schedule.rounds[0].status == "infeasible"


def test_invalid_placement_is_not_simulated(chain_graph, toy_hw, monkeypatch):
    def overlapping(schedule, method, timeout=None):
        return "broken", {r.id: 0 for r in schedule.residencies}, False

    monkeypatch.setattr(pipeline, "place", overlapping)
    with pytest.raises(InvalidPlacementError, match="placement by 'broken' is invalid.*overlap"):
        compile_and_simulate(chain_graph(), hw=toy_hw(), scheduler="cosma-fs")


def test_graph_json_path_is_accepted(chain_graph, tmp_path):
    from frontend.graph import save_graph

    path = tmp_path / "chain.json"
    save_graph(chain_graph(), path)
    report = compile_and_simulate(path, hw=load_hw("tpuv4"))
    assert report.model == "chain" and report.ok


def test_report_json_carries_per_operator_fidelity_and_energy(chain_graph, tmp_path):
    out = tmp_path / "r"
    report = compile_and_simulate(chain_graph(), hw="tpuv4", out_dir=out)
    data = json.loads((out / "report.json").read_text())
    for op in data["ops"]:
        assert set(op) >= OP_KEYS
        assert set(op["stall_cycles"]) == {"dma_wait", "sram_bandwidth"}
        assert set(op["energy"]) == {"compute", "sram", "dram", "total"}
        assert op["end_cycle"] - op["start_cycle"] == op["compute_cycles"] + op["stall_cycles"]["sram_bandwidth"]
        assert 0 <= op["utilization"] <= 1
    assert {o["mapping"] for o in data["ops"] if o["macs"]} == {"systolic-ws"}
    total = sum(o["energy"]["total"] for o in data["ops"])
    assert data["energy"]["total"] == pytest.approx(total)
    assert data["energy"]["total"] == pytest.approx(sum(data["energy"][k] for k in ("compute", "sram", "dram")))
    assert data["utilization"] == pytest.approx(report.macs / (report.cycles * 131072))
    assert data["hw_config"]["compute"]["rows"] == 128
    text = format_summary(report)
    for label in ("utilization", "stalls", "energy", "× the floor"):
        assert label in text
    floor = data["floor_cycles"]
    assert f"{floor['cycles']:,} ({'compute' if floor['bound'] == 'compute' else 'DRAM'}-bound" in text


def test_overrides_change_the_hardware_and_are_recorded(chain_graph):
    base = compile_and_simulate(chain_graph(), hw="tpuv4")
    small = compile_and_simulate(chain_graph(), hw="tpuv4",
                                 overrides={"compute.rows": "8", "compute.cols": "8", "compute.units": 1})
    assert small.hardware.compute.rows == 8 and small.to_dict()["hw_config"]["compute"]["cols"] == 8
    assert small.peak_macs_per_cycle == 64
    conv_cycles = [o["compute_cycles"] for o in small.ops if o["macs"]]
    assert conv_cycles != [o["compute_cycles"] for o in base.ops if o["macs"]]
    slow_dram = compile_and_simulate(chain_graph(), hw="tpuv4", overrides={"dram_bandwidth_bytes_per_s": "1e9"})
    assert slow_dram.cycles > base.cycles and slow_dram.dram_read_bytes == base.dram_read_bytes


def test_run_options_record_and_keyword_shorthand_agree(chain_graph):
    from accelsim.pipeline import RunOptions

    options = RunOptions(sram="8KiB", allocator="best-fit")
    whole = compile_and_simulate(chain_graph(), "tpuv4", options)
    short = compile_and_simulate(chain_graph(), "tpuv4", sram="8KiB", allocator="best-fit")
    assert (whole.capacity_bytes, whole.allocator) == (short.capacity_bytes, short.allocator) == (8192, "best-fit")
    assert whole.cycles == short.cycles and whole.offsets == short.offsets
    with pytest.raises(ValueError, match="unknown run option 'sramm'"):
        compile_and_simulate(chain_graph(), "tpuv4", sramm="1MiB")


@pytest.mark.parametrize("scheduler", ["min-peak", "cosma", "cosma-fs", "cosma-dnc"])
def test_an_operator_order_for_a_scheduler_that_chooses_its_own_is_refused_up_front(scheduler):
    from accelsim.pipeline import RunOptions

    with pytest.raises(ValueError, match=f"order='min-peak' is the 'program' scheduler's operator order; "
                                         f"scheduler='{scheduler}' chooses its own"):
        RunOptions(scheduler=scheduler, order="min-peak").check()
    RunOptions(scheduler="program", order=["op0"]).check()  # the program scheduler takes one (checked later)

"""SCALE-Sim 3.0.0 reference cycle counts for every convolution and linear layer of resnet50 and mobilenet_v2.

SCALE-Sim is a reference to check accelsim's compute model against, not a dependency: it lives in its own
venv, outside the repository (it needs ``numpy<2.4``; with numpy 2.4 it crashes)::

    python3.11 -m venv /work/scalesim-venv
    /work/scalesim-venv/bin/pip install scalesim==3.0.0 'numpy<2.4'

Two steps, run from the repository root, because the two halves need different environments:

1. ``OMP_NUM_THREADS=1 python studies/scalesim_reference.py export docs/scalesim`` (accelsim's environment)
   traces both models with ``frontend.trace_model(model, dtype="int8")`` and writes

   * ``{model}_layers.csv``: ``layer,op,T,K,N,groups,macs`` for every conv2d/linear, dense and grouped. The
     GEMM view: K = kh*kw*cin/groups (the weight's dims past the first), N = output channels per group
     (weight.shape[0] / groups), T = batch x output positions (output elements / output channels), and each of
     the ``groups`` groups is one T x K x N product, so T*K*N*groups == the node's MACs (checked).
   * ``{model}_topology.csv``: the dense layers (groups == 1) in SCALE-Sim's GEMM topology format.

2. ``/work/scalesim-venv/bin/python studies/scalesim_reference.py run docs/scalesim`` (SCALE-Sim's venv;
   imports neither torch nor accelsim) writes the config ``scalesim_ws128.cfg``, runs SCALE-Sim on each
   topology through its Python API (``scalesim(save_disk_space=True, ...)``, so no traces are written) and
   writes ``{model}_scalesim.csv``: layer, T, K, N and every per-layer figure of SCALE-Sim's COMPUTE_REPORT
   and DETAILED_ACCESS_REPORT. SCALE-Sim's own three report CSVs are kept in ``raw/{model}/``. It takes
   about eleven minutes (resnet50; the two models run in parallel): SCALE-Sim checks every operand address of
   every cycle against its SRAM model in pure Python.

   ``--dataflow os`` runs the same topologies on the same array with SCALE-Sim's output-stationary dataflow
   instead (ws is the default): ``/work/scalesim-venv/bin/python studies/scalesim_reference.py run
   docs/scalesim --dataflow os`` writes the config ``scalesim_os128.cfg``, ``{model}_scalesim_os.csv`` (same
   columns) and the raw reports in ``raw_os/{model}/``, leaving the ws files alone. It took 8 minutes
   (resnet50 482 s, mobilenet_v2 113 s, in parallel on 2 cores).

Both runs end by checking SCALE-Sim's ``total_cycles`` against the dataflow's formula (``ws_formula``,
``os_formula``) on every dense layer: each is exact on all 54 + 36 layers, with no stall cycles.

Why the GEMM topology format: a row ``name, M, N, K`` becomes, inside SCALE-Sim, a convolution of an
M x K ifmap by N filters of 1 x K with one channel and stride 1, so its operand matrices are exactly
T x K (ifmap), K x N (filter) and T x N (ofmap) with T = M: weight stationary maps K on the array rows,
N on the columns and streams T. The conv format would need an ifmap size chosen so that SCALE-Sim's ofmap
positions equal T (it knows no padding, batch or groups), would repeat ifmap addresses (im2col of
overlapping windows) and only reproduce the same T, K, N at best; the GEMM format is exact by construction.

What SCALE-Sim's numbers mean under ws (read from scalesim/single_layer_sim.py,
memory/double_buffered_scratchpad_mem.py and compute/systolic_compute_ws.py):

* ``total_cycles`` ("Total Cycles" in COMPUTE_REPORT, printed as "Compute cycles" by its verbose run) is the
  cycle at which the last ofmap row is written: the compute demand (per fold R cycles to load the weights,
  then T ifmap rows skewed over R rows and C columns, 2R + C + T - 2 cycles) plus the stall cycles, minus
  one (cycles are counted from 0). This is the figure to compare with a compute model.
* ``stall_cycles``: cycles the array waited for an SRAM that missed (operand not yet fetched from DRAM) or an
  ofmap buffer that was full. The SRAMs here hold every operand of every layer, so it must be 0.
* ``total_cycles_incl_prefetch`` ("Total Cycles (incl. prefetch)"): from the first DRAM read that fills the
  ifmap/filter SRAMs (at negative cycles, before compute starts) to the last DRAM write that drains the
  ofmap SRAM; it depends on the DRAM bandwidth and counts each layer's load and drain in full.
* ``overall_util_pct`` = MACs / (total_cycles x R x C); ``mapping_efficiency_pct`` = mean over folds of
  the fraction of PEs holding a weight; ``compute_util_pct`` = mean over folds of PEs holding a weight x T
  / (R x C x (2R + 2C + T - 3)) (SCALE-Sim's per-fold cycle count for this one is C - 1 longer than the demand).
* ``sram_*``/``dram_*`` columns: DETAILED_ACCESS_REPORT's first/last cycle and number of SRAM reads
  (writes for ofmap) by the array and of DRAM reads/writes by the SRAMs. Ofmap writes count a T x N partial
  sum per fold of K; DRAM reads count whole bandwidth-wide lines including the null padding of partial folds
  (conv1: 3.2 M ifmap words read for its 1.8 M), so they are not traffic figures.

Under os (read from compute/systolic_compute_os.py) the figures mean the same with another demand: SCALE-Sim
maps the T x N ofmap on the array, T on the R rows and N on the C columns, and streams K (the variable it
calls ``T``); a fold is one R x C block of outputs, ceil(T/R) x ceil(N/C) folds, run one after the other
(column folds outer). Per fold the ifmap demand is K rows plus C - 1 null rows (the drain) skewed over R rows,
the filter demand K rows plus R - 1 skewed over C, the ofmap demand K - 1 null rows, then the R output rows
(flipped: they leave from the bottom edge) skewed over C: K + R + C - 2 cycles each, so with no stalls
``total_cycles = ceil(T/R) * ceil(N/C) * (K + R + C - 2) - 1``. Under os ``compute_util_pct`` uses the same
K + R + C - 2 per fold; ``sram_ifmap_reads`` = T*K*ceil(N/C) and ``sram_filter_reads`` = K*N*ceil(T/R);
``sram_ofmap_writes`` = T*N + folds*(R + C), because SCALE-Sim also adds each padded fold's rows + columns to
its write count (a counting quirk, no traffic).

The configuration: one 128 x 128 array, weight stationary (output stationary with ``--dataflow os``), 64 MiB
for each of the ifmap, filter and ofmap SRAMs (SCALE-Sim keeps half of each active; the largest operand here,
2.4 M words, fits many times over, so nothing is refetched and nothing stalls; SCALE-Sim splits each SRAM into
100 sets and searches the sets on every access, so bigger sets also make it faster), and 256 words/cycle to
DRAM in USER bandwidth mode. SCALE-Sim 3.0.0 takes the ifmap and filter DRAM bandwidth from
``[layout] IfmapSRAMBankBandwidth`` and ``FilterSRAMBankBandwidth``, and only the ofmap's from
``[architecture_presets] Bandwidth``, so all three are set; it also opens a layout file even with custom
layouts off, so an empty one is passed.
"""

from __future__ import annotations

import argparse
import csv
import math
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

MODELS = ("resnet50", "mobilenet_v2")
ARRAY_ROWS = ARRAY_COLS = 128
SRAM_KB = 64 * 1024
BANDWIDTH_WORDS = 256
# SCALE-Sim's default operand address offsets; run() checks that no operand overlaps the next one.
IFMAP_OFFSET, FILTER_OFFSET, OFMAP_OFFSET = 0, 10_000_000, 20_000_000
# Per dataflow: SCALE-Sim's run name (its report folder), the config file, the results' suffix and the raw
# reports' folder. ws is the default and keeps the names of the first run.
DATAFLOWS = {
    "ws": {"run_name": "ws128", "config": "scalesim_ws128.cfg", "suffix": "", "raw": "raw"},
    "os": {"run_name": "os128", "config": "scalesim_os128.cfg", "suffix": "_os", "raw": "raw_os"},
}

LAYER_COLUMNS = ["layer", "op", "T", "K", "N", "groups", "macs"]
# SCALE-Sim's COMPUTE_REPORT and DETAILED_ACCESS_REPORT items, in the order single_layer_sim returns them.
COMPUTE_COLUMNS = ["total_cycles_incl_prefetch", "total_cycles", "stall_cycles", "overall_util_pct",
                   "mapping_efficiency_pct", "compute_util_pct"]
DETAIL_COLUMNS = [f"{level}_{operand}_{item}"
                  for level in ("sram", "dram")
                  for operand in ("ifmap", "filter", "ofmap")
                  for item in ("start_cycle", "stop_cycle", "writes" if operand == "ofmap" else "reads")]


def gemm_view(graph, name: str) -> dict:
    """The conv2d/linear node ``name`` as ``groups`` products of T x K by K x N, checked against its MACs."""
    node = graph.nodes[name]
    tensors = graph.graph["tensors"]
    weights = [t for t in node["in_tensors"] if tensors[t]["kind"] == "weight" and len(tensors[t]["shape"]) >= 2]
    inputs = [t for t in node["in_tensors"] if tensors[t]["kind"] != "weight"]
    assert len(weights) == 1 and len(inputs) == 1 and len(node["out_tensors"]) == 1, name
    weight = tensors[weights[0]]["shape"]
    out_channels = weight[0]
    groups = tensors[inputs[0]]["shape"][1] // weight[1] if node["op"] == "conv2d" else 1
    n = out_channels // groups
    k = math.prod(weight[1:])
    t = math.prod(tensors[node["out_tensors"][0]]["shape"]) // out_channels
    assert t * k * n * groups == node["macs"], (name, t, k, n, groups, node["macs"])
    return {"layer": name, "op": node["op"], "T": t, "K": k, "N": n, "groups": groups, "macs": node["macs"]}


def export(outdir: Path) -> None:
    """Trace both models (accelsim's environment) and write the layer tables and SCALE-Sim topologies."""
    import frontend

    outdir.mkdir(parents=True, exist_ok=True)
    for model in MODELS:
        graph = frontend.trace_model(model, dtype="int8")
        layers = [gemm_view(graph, name) for name, op in graph.nodes(data="op") if op in ("conv2d", "linear")]
        with open(outdir / f"{model}_layers.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=LAYER_COLUMNS)
            writer.writeheader()
            writer.writerows(layers)
        dense = [row for row in layers if row["groups"] == 1]
        # GEMM format: header line skipped, "name, M, N, K," per layer; SCALE-Sim drops the field after the
        # last comma, so the trailing comma is required.
        with open(outdir / f"{model}_topology.csv", "w") as f:
            f.write("Layer, M, N, K,\n")
            for row in dense:
                f.write(f"{row['layer']}, {row['T']}, {row['N']}, {row['K']},\n")
        print(f"{model}: {len(layers)} conv/linear layers, {len(dense)} dense -> {outdir}")


def results_path(outdir: Path, model: str, dataflow: str) -> Path:
    """Where the per-layer SCALE-Sim figures of ``model`` under ``dataflow`` are written."""
    return outdir / f"{model}_scalesim{DATAFLOWS[dataflow]['suffix']}.csv"


def write_config(path: Path, dataflow: str = "ws") -> None:
    """The SCALE-Sim config: one 128 x 128 array of ``dataflow`` whose SRAMs never miss after the first fill."""
    path.write_text(f"""\
[general]
run_name = {DATAFLOWS[dataflow]['run_name']}

[run_presets]
InterfaceBandwidth = USER
UseRamulatorTrace = False

[architecture_presets]
ArrayHeight = {ARRAY_ROWS}
ArrayWidth = {ARRAY_COLS}
IfmapSramSzkB = {SRAM_KB}
FilterSramSzkB = {SRAM_KB}
OfmapSramSzkB = {SRAM_KB}
IfmapOffset = {IFMAP_OFFSET}
FilterOffset = {FILTER_OFFSET}
OfmapOffset = {OFMAP_OFFSET}
Bandwidth = {BANDWIDTH_WORDS}
Dataflow = {dataflow}
ReadRequestBuffer = 32
WriteRequestBuffer = 32

[layout]
IfmapCustomLayout = False
IfmapSRAMBankBandwidth = {BANDWIDTH_WORDS}
IfmapSRAMBankNum = 1
IfmapSRAMBankPort = 2
FilterCustomLayout = False
FilterSRAMBankBandwidth = {BANDWIDTH_WORDS}
FilterSRAMBankNum = 1
FilterSRAMBankPort = 2

[sparsity]
SparsitySupport = false
""")


def read_topology(path: Path) -> list[dict]:
    """The GEMM topology written by export(), as rows with layer, T, K, N."""
    rows = []
    with open(path) as f:
        next(f)
        for line in f:
            if line.strip():
                name, m, n, k = (field.strip() for field in line.split(",")[:4])
                rows.append({"layer": name, "T": int(m), "K": int(k), "N": int(n)})
    return rows


def plain(value):
    """SCALE-Sim's report items as plain numbers: numpy scalars to int when integral, else a rounded float."""
    value = float(value)
    return int(value) if value.is_integer() else round(value, 6)


def run_model(outdir: Path, model: str, dataflow: str = "ws") -> tuple[str, float]:
    """Run SCALE-Sim on one model's topology and write ``{model}_scalesim[_os].csv`` and its raw reports."""
    from scalesim.scale_sim import scalesim

    start = time.perf_counter()
    topology = outdir / f"{model}_topology.csv"
    layers = read_topology(topology)
    for row in layers:  # operand address ranges must not overlap, or SRAM hits would be counted wrongly
        assert row["T"] * row["K"] <= FILTER_OFFSET - IFMAP_OFFSET, row
        assert row["K"] * row["N"] <= OFMAP_OFFSET - FILTER_OFFSET, row
    with tempfile.TemporaryDirectory(prefix=f"scalesim-{model}-") as tmp:
        layout = Path(tmp) / "layout.csv"
        layout.write_text("Layer,\n")  # SCALE-Sim opens it unconditionally; custom layouts are off
        sim = scalesim(save_disk_space=True, verbose=False, config=str(outdir / DATAFLOWS[dataflow]["config"]),
                       topology=str(topology), layout=str(layout), input_type_gemm=True)
        sim.run_scale(top_path=tmp)
        results = sim.runner.single_layer_sim_object_list
        assert len(results) == len(layers), (model, len(results), len(layers))
        rows = []
        for row, layer in zip(layers, results, strict=True):
            items = layer.get_compute_report_items() + layer.get_detail_report_items()
            rows.append(row | dict(zip(COMPUTE_COLUMNS + DETAIL_COLUMNS, map(plain, items), strict=True)))
        raw = outdir / DATAFLOWS[dataflow]["raw"] / model
        raw.mkdir(parents=True, exist_ok=True)
        # only the reports: save_disk_space writes no trace
        for report in Path(tmp, DATAFLOWS[dataflow]["run_name"]).glob("*.csv"):
            shutil.copy(report, raw / report.name)
    with open(results_path(outdir, model, dataflow), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["layer", "T", "K", "N"] + COMPUTE_COLUMNS + DETAIL_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return model, time.perf_counter() - start


def ws_formula(t: int, k: int, n: int, rows: int = ARRAY_ROWS, cols: int = ARRAY_COLS) -> int:
    """Weight stationary without overlap between folds: each fold loads R weights rows, streams T, drains."""
    return math.ceil(k / rows) * math.ceil(n / cols) * (2 * rows + cols + t - 2) - 1


def os_formula(t: int, k: int, n: int, rows: int = ARRAY_ROWS, cols: int = ARRAY_COLS) -> int:
    """Output stationary without overlap between folds: each fold of R x C outputs streams K, then drains."""
    return math.ceil(t / rows) * math.ceil(n / cols) * (k + rows + cols - 2) - 1


FORMULAS = {"ws": ws_formula, "os": os_formula}


def check(outdir: Path, model: str, dataflow: str = "ws") -> None:
    """Print how SCALE-Sim's total_cycles compares with the dataflow's formula on every layer of one model."""
    with open(results_path(outdir, model, dataflow)) as f:
        rows = list(csv.DictReader(f))
    errors = []
    for row in rows:
        formula = FORMULAS[dataflow](int(row["T"]), int(row["K"]), int(row["N"]))
        simulated = int(row["total_cycles"])
        errors.append((abs(formula - simulated) / simulated, row["layer"], formula, simulated))
    exact = sum(error == 0 for error, *_ in errors)
    close = sum(error <= 0.01 for error, *_ in errors)
    worst = max(errors)
    worst_text = "none off" if worst[0] == 0 else f"worst {worst[0]:.4%} on {worst[1]} ({worst[2]} vs {worst[3]})"
    stalls = [row["layer"] for row in rows if int(row["stall_cycles"])]
    print(f"{model} ({dataflow}): {len(rows)} dense layers, formula exact on {exact}, within 1 % on {close}, "
          f"{worst_text}; stall cycles on {stalls or 'no layer'}")


def run(outdir: Path, dataflow: str = "ws") -> None:
    """Run SCALE-Sim (its own venv) on both models under ``dataflow``, one process each, then check the formula."""
    write_config(outdir / DATAFLOWS[dataflow]["config"], dataflow)
    n = len(MODELS)
    with ProcessPoolExecutor(max_workers=n) as pool:
        for model, seconds in pool.map(run_model, [outdir] * n, MODELS, [dataflow] * n):
            print(f"{model} ({dataflow}): SCALE-Sim took {seconds:.0f} s -> {results_path(outdir, model, dataflow)}")
    for model in MODELS:
        check(outdir, model, dataflow)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["export", "run"], help="export: accelsim's env; run: SCALE-Sim's venv")
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--dataflow", choices=list(DATAFLOWS), default="ws",
                        help="run: SCALE-Sim's dataflow (default ws; os writes *_os files beside the ws ones)")
    args = parser.parse_args()
    if args.mode == "export":
        export(args.outdir)
    else:
        run(args.outdir, args.dataflow)


if __name__ == "__main__":
    main()

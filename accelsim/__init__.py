"""accelsim: hardware configs, the simulator, the end-to-end pipeline and the command line.

Public surface::

    from accelsim import compile_and_simulate, load_hw
    report = compile_and_simulate("resnet18", hw="pixel6", sram="1MiB", out_dir="out/")
    print(report.cycles, report.noncompulsory_bytes, report.memory_check)
    report = compile_and_simulate("resnet18", "tpuv4", RunOptions(overrides={"compute.rows": 256}))
    hw = load_hw("tpuv4", overrides={"dma.channels": 8})
    table = sweep(["resnet18"], "pixel6", ["sram=256KiB,1MiB"], out_dir="sweep-out/")  # a pandas DataFrame
    print(size("resnet50", "pixel6").format())        # M_R and the smallest spill-free SRAM per allocator

Importing this package does not import torch: the frontend is loaded when a model is traced.
A zoo name's graph comes from the trace cache (``frontend.cached_trace``; ``cache_dir=`` names
the folder, ``cache=False`` traces anew), so a run of a model traced before imports neither
torch nor torchvision. ``out_dir=`` writes report.json, report.html, trace.json and the SVG
pictures layout.svg, memory.svg and roofline.svg (``plots=False``: all but the SVG pictures).
"""

from typing import Any

from accelsim.errors import AllocationFailedError, CompileError, InvalidPlacementError

#: the public names and the module each is loaded from on first use: ``import accelsim`` stays
#: cheap (the command line's ``alloc``, ``models`` and ``configs`` need neither the simulator
#: nor the pipeline), and ``accelsim.run_name`` still works as an attribute
_LAZY = {
    "compute": None, "HardwareConfig": "hw", "HardwareConfigError": "hw", "list_configs": "hw", "load_hw": "hw",
    "parse_bytes": "hw", "RunOptions": "pipeline", "SimReport": "results", "compile_and_simulate": "pipeline",
    "MemoryViolation": "sim", "Scratchpad": "sim", "SimResult": "sim", "SimulationError": "sim", "simulate": "sim",
    "SizeReport": "sizing", "size": "sizing", "sweep": "sweeps",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'accelsim' has no attribute {name!r}")
    import importlib

    module = _LAZY[name]
    value = importlib.import_module(f"accelsim.{name}" if module is None else f"accelsim.{module}")
    if module is not None:
        value = getattr(value, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "AllocationFailedError", "CompileError", "HardwareConfig", "HardwareConfigError", "InvalidPlacementError",
    "MemoryViolation", "RunOptions", "Scratchpad", "SimReport", "SimResult", "SimulationError", "SizeReport",
    "compile_and_simulate", "compute", "list_configs", "load_hw", "parse_bytes", "simulate", "size", "sweep",
]

"""Fixtures of the accelsim tests: a hardware config with round numbers and a small graph."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import pytest

from accelsim.hw import HardwareConfig, config_from_dict
from frontend.graph import add_operator, add_tensor, new_graph


def _toy_hw(**change) -> HardwareConfig:
    """Round numbers for hand computation: 1 GHz, 64 bytes per cycle, 10-cycle DMA latency, one DMA
    channel, loads one step ahead, an ideal 1024-MAC array, a scratchpad that never limits.

    ``compute`` / ``dma`` / ``energy`` in ``change`` update those blocks' fields."""
    fields: dict = dict(
        name="toy", n_pe=1, capacity_scope="chip", sram_bytes_per_pe=1 << 16, alignment=64, clock_hz=1e9,
        sram_bandwidth_bytes_per_cycle=1 << 20, dram_bandwidth_bytes_per_s=64e9, dram_bytes=1 << 30,
        dram_latency_cycles=10, dtype="int8", weight_tile_bytes=1 << 14,
        compute=dict(kind="ideal", units=1, macs_per_cycle=1024, vector_elements_per_cycle=16),
        dma=dict(channels=1, prefetch_depth=1),
        energy=dict(pj_per_mac=1.0, pj_per_vector_element=0.5, pj_per_sram_byte=2.0, pj_per_dram_byte=10.0),
    )
    for key, value in change.items():
        if key in ("compute", "dma", "energy"):
            fields[key] = {**fields[key], **value}
        else:
            fields[key] = value
    return config_from_dict(fields, "toy")


@pytest.fixture
def toy_hw() -> Callable[..., HardwareConfig]:
    """``toy_hw(**changes)`` builds the toy config with some fields changed."""
    return _toy_hw


def _chain_graph() -> nx.DiGraph:
    """Six 3x3 convolutions on 1x4x16x16 int8 activations (1 KiB each) and a skip connection."""
    g = new_graph("chain", dtype="int8")
    add_tensor(g, "x", (1, 4, 16, 16), kind="input")
    prev = "x"
    for i in range(6):
        add_tensor(g, f"w{i}", (4, 4, 3, 3), kind="weight")
        add_operator(g, f"conv{i}", "conv2d", inputs=[prev, f"w{i}"], outputs={f"a{i}": (1, 4, 16, 16)},
                     macs=4 * 4 * 9 * 256, gemm=[[256, 36, 4, 1]])
        prev = f"a{i}"
    add_operator(g, "skip", "add", inputs=["a1", prev], outputs={"out": (1, 4, 16, 16)})
    g.graph["outputs"] = ["out"]
    g.graph["tensors"]["out"]["kind"] = "output"
    return g


@pytest.fixture
def chain_graph() -> Callable[[], nx.DiGraph]:
    """``chain_graph()`` builds a fresh copy of the small chain graph."""
    return _chain_graph


def _heavy_linear(layers: int = 8) -> nx.DiGraph:
    """``layers`` linear layers of 64 KiB weights and 8 KiB activations: 2,048 cycles of compute each on the
    toy config, against 1,034 to load a weight (weight tiling's test graph)."""
    g = new_graph("heavy", dtype="int8")
    add_tensor(g, "x", (32, 256), kind="input")
    prev = "x"
    for i in range(layers):
        add_tensor(g, f"w{i}", (256, 256), kind="weight")
        add_operator(g, f"fc{i}", "linear", inputs=[prev, f"w{i}"], outputs={f"y{i}": (32, 256)},
                     macs=32 * 256 * 256, gemm=[[32, 256, 256, 1]])
        prev = f"y{i}"
    g.graph["outputs"] = [prev]
    g.graph["tensors"][prev]["kind"] = "output"
    return g


@pytest.fixture
def heavy_linear() -> Callable[..., nx.DiGraph]:
    """``heavy_linear(layers=8)`` builds a fresh chain of linear layers whose weights dwarf their activations."""
    return _heavy_linear



@pytest.fixture
def interrupt_after() -> Callable[[list[str], str, Path], subprocess.CompletedProcess[str]]:
    """``interrupt_after(argv, marker, cwd)`` runs ``python -m accelsim ARGV`` and sends SIGINT once a
    stdout line contains ``marker``; it returns the finished process (stdout whole, stderr).

    The child starts with SIGINT at its default, as in a terminal: a test run launched as a
    background job of a non-interactive shell inherits SIGINT ignored, and Python then keeps
    ignoring it (the child would never see the Ctrl-C the test sends)."""

    def run(argv: list[str], marker: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        process = subprocess.Popen([sys.executable, "-m", "accelsim", *argv], cwd=cwd, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=env,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert process.stdout is not None
        seen = []
        for line in process.stdout:
            seen.append(line)
            if marker in line:
                process.send_signal(signal.SIGINT)
                break
        out, err = process.communicate(timeout=120)
        return subprocess.CompletedProcess(process.args, process.returncode, "".join(seen) + out, err)

    return run

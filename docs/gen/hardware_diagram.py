"""Draw the hardware model of each bundled config as an SVG diagram: DRAM, the DMA engines, the
on-chip memory (one scratchpad per PE, or one shared memory) and the compute.

    python docs/gen/hardware_diagram.py           # write docs/img/hardware-NAME.svg for every bundled config
    python docs/gen/hardware_diagram.py --check   # exit 1 when a committed diagram differs from what this draws

Every number in a diagram is read from the config (``accelsim.load_hw``) when it is drawn, so a
diagram cannot disagree with ``hw_configs/NAME.yaml``; a test checks that the committed files are
what this script draws now. The shapes say what the simulator models (``docs/concepts/models.md``):
transfers in flight share the DRAM link's bandwidth, each pays the DRAM latency first and takes
one of the DMA channels; the scratchpad feeds the compute at its bandwidth per cycle.
"""

from __future__ import annotations

import argparse
import math
import sys
from html import escape
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
IMG = REPO / "docs" / "img"
WIDTH = 820
FONT = "font-family=\"Helvetica, Arial, sans-serif\""
#: fill and stroke of each agent
DRAM_COLOURS = ("#e8e8e8", "#555555")
DMA_COLOURS = ("#dcefd9", "#3a7d34")
MEMORY_COLOURS = ("#d6e4f5", "#2f5f98")
COMPUTE_COLOURS = ("#fbe3c8", "#b8650f")
#: the most PEs or arrays drawn one by one; more are summed up in the caption
MOST_DRAWN = 16


def text(x: float, y: float, words: str, size: int = 12, anchor: str = "middle", weight: str = "normal",
         colour: str = "#222222") -> str:
    """One line of text at (x, y), its baseline at y."""
    bold = ' font-weight="bold"' if weight == "bold" else ""
    return (f'<text x="{x:g}" y="{y:g}" font-size="{size}" text-anchor="{anchor}"{bold} fill="{colour}">'
            f"{escape(words)}</text>")


def box(x: float, y: float, w: float, h: float, colours: tuple[str, str], radius: float = 4) -> str:
    """A rectangle with rounded corners."""
    fill, stroke = colours
    return (f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" rx="{radius:g}" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="1.2"/>')


def arrow(x0: float, y0: float, x1: float, y1: float) -> str:
    """A line with an arrowhead at both ends: data moves both ways (loads, and stores or spills)."""
    return (f'<line x1="{x0:g}" y1="{y0:g}" x2="{x1:g}" y2="{y1:g}" stroke="#444444" stroke-width="1.6" '
            'marker-start="url(#head)" marker-end="url(#head)"/>')


def grid(count: int) -> tuple[int, int]:
    """(columns, rows) of a near-square grid for ``count`` tiles."""
    columns = math.ceil(math.sqrt(count))
    return columns, math.ceil(count / columns)


def per_core(hw: Any) -> str:
    """What one PE computes with, for a tile's label: ``4 x 64 lanes``, or the compute's kind."""
    compute = hw.compute
    if compute.kind == "lanes" and compute.units == hw.n_pe:
        return f"{compute.cores_per_unit} × {compute.lanes_per_core} lanes"
    return "compute"


def compute_words(hw: Any) -> str:
    """The compute block in words: what the arrays or lanes are."""
    compute = hw.compute
    if compute.kind == "systolic":
        flow = {"ws": "weight-stationary", "os": "output-stationary"}.get(compute.dataflow, compute.dataflow)
        return f"{compute.units} systolic arrays of {compute.rows} × {compute.cols}, {flow}"
    if compute.kind == "lanes":
        return (f"{compute.units} PEs × {compute.cores_per_unit} cores × {compute.lanes_per_core} lanes, "
                "one MAC per lane per cycle")
    return f"ideal: {compute.macs_per_cycle:,} MACs every cycle"


def chip_per_pe(hw: Any, x: float, y: float, w: float) -> tuple[list[str], float]:
    """The inside of a per-PE chip from ``y`` down: a grid of PEs, each a scratchpad over its compute;
    and the bottom of what it drew."""
    from accelsim.units import format_bytes

    drawn = min(hw.n_pe, MOST_DRAWN)
    columns, rows = grid(drawn)
    gap, tile_h = 10, 44.0
    tile_w = min(80.0, (w - 40 - gap * (columns - 1)) / columns)
    left = x + (w - (tile_w * columns + gap * (columns - 1))) / 2
    shown = f"{hw.n_pe} PEs" if drawn == hw.n_pe else f"{hw.n_pe} PEs ({drawn} drawn)"
    parts = [text(x + w / 2, y + 16, f"{shown}, one program: one allocation, every tensor split over them", 12)]
    for index in range(drawn):
        tx = left + (index % columns) * (tile_w + gap)
        ty = y + 30 + (index // columns) * (tile_h + gap)
        parts += [box(tx, ty, tile_w, tile_h / 2, MEMORY_COLOURS, 2),
                  text(tx + tile_w / 2, ty + tile_h / 4 + 4, format_bytes(hw.sram_bytes_per_pe), 10),
                  box(tx, ty + tile_h / 2, tile_w, tile_h / 2, COMPUTE_COLOURS, 2),
                  text(tx + tile_w / 2, ty + tile_h * 3 / 4 + 4, per_core(hw), 9)]
    below = y + 30 + rows * (tile_h + gap) + 8
    parts += [text(x + w / 2, below, f"each PE: a {format_bytes(hw.sram_bytes_per_pe)} scratchpad "
                   f"(blue), {hw.sram_bandwidth_bytes_per_cycle:,} B/cycle to its compute (orange)", 11),
              text(x + w / 2, below + 16, compute_words(hw), 11)]
    return parts, below + 16


def chip_shared(hw: Any, x: float, y: float, w: float) -> tuple[list[str], float]:
    """The inside of a chip-scope chip from ``y`` down: one shared memory over the compute arrays;
    and the bottom of what it drew."""
    from accelsim.units import format_bytes

    parts = [box(x + 20, y, w - 40, 86, MEMORY_COLOURS),
             text(x + w / 2, y + 30, f"on-chip memory: {format_bytes(hw.sram_bytes_per_pe)}, shared", 13,
                  weight="bold"),
             text(x + w / 2, y + 50, "one allocation for the chip; tensors whole", 11),
             text(x + w / 2, y + 68, f"{format_bytes(hw.sram_bandwidth_bytes_per_cycle)}/cycle to the compute", 11)]
    units = hw.compute.units if hw.compute.kind != "ideal" else 1
    drawn = min(units, MOST_DRAWN)
    gap = 8
    unit_w = (w - 40 - gap * (drawn - 1)) / drawn
    top = y + 114
    parts.append(arrow(x + w / 2, y + 88, x + w / 2, top - 4))
    for index in range(drawn):
        ux = x + 20 + index * (unit_w + gap)
        parts.append(box(ux, top, unit_w, 56, COMPUTE_COLOURS, 2))
        if hw.compute.kind == "systolic":
            parts += [text(ux + unit_w / 2, top + 24, f"{hw.compute.rows}", 10),
                      text(ux + unit_w / 2, top + 38, f"× {hw.compute.cols}", 10)]
    parts.append(text(x + w / 2, top + 76, compute_words(hw), 11))
    return parts, top + 76


def memory_side(hw: Any, mid: float) -> list[str]:
    """DRAM, the link and the DMA engines, centred on height ``mid``."""
    from accelsim.units import format_bandwidth, format_bytes

    parts = [box(20, mid - 80, 130, 160, DRAM_COLOURS),
             text(85, mid - 40, "DRAM", 14, weight="bold"),
             text(85, mid - 16, format_bytes(hw.dram_bytes), 12),
             text(85, mid + 20, f"{hw.dram_latency_cycles:,} cycles", 11),
             text(85, mid + 36, "latency per transfer", 11),
             arrow(152, mid, 238, mid),
             text(195, mid - 10, format_bandwidth(hw.dram_bandwidth_bytes_per_s), 12, weight="bold"),
             text(195, mid + 20, "shared by the", 10), text(195, mid + 33, "transfers in flight", 10)]
    channels = hw.dma.channels
    slot = min(34, 150 // channels)
    top = mid - (channels * slot - 8) / 2
    parts += [text(295, top - 30, "DMA engines", 13, weight="bold"),
              text(295, top - 14, f"{channels} channels", 11)]
    for index in range(channels):
        parts += [box(248, top + index * slot, 94, slot - 8, DMA_COLOURS, 3),
                  text(295, top + index * slot + (slot - 8) / 2 + 4, f"DMA {index + 1}", 11)]
    return parts + [text(295, top + channels * slot + 12, "loads planned up to", 10),
                    text(295, top + channels * slot + 25, f"{hw.dma.prefetch_depth:,} steps ahead", 10),
                    arrow(344, mid, 404, mid)]


def diagram(name: str) -> str:
    """The SVG diagram of bundled config ``name``."""
    from accelsim.hw import load_hw
    from accelsim.units import format_hertz

    hw = load_hw(name)
    chip_x, chip_y, chip_w = 408.0, 48.0, 392.0
    inside, bottom = (chip_per_pe if hw.capacity_scope == "per_pe" else chip_shared)(hw, chip_x, chip_y + 40, chip_w)
    chip_h = bottom + 16 - chip_y
    height = round(chip_y + chip_h + 40)
    parts = [f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
             text(20, 28, f"{name}: {hw.description}", 14, "start", "bold"),
             box(chip_x, chip_y, chip_w, chip_h, ("#fafafa", "#333333"), 8),
             text(chip_x + 12, chip_y + 22, f"chip: {format_hertz(hw.clock_hz)}, "
                  f"{hw.compute.peak_macs_per_cycle:,} MACs per cycle, {hw.dtype}", 12, "start", "bold"),
             *inside, *memory_side(hw, chip_y + chip_h / 2),
             text(WIDTH / 2, height - 14, f"Drawn from hw_configs/{name}.yaml by docs/gen/hardware_diagram.py; "
                  "every field is listed in the reference's Hardware fields.", 10, colour="#666666")]
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
        f'height="{height}" style="max-width: 100%; height: auto" {FONT} role="img">',
        f"<title>The hardware model of {escape(name)}: DRAM, DMA engines, on-chip memory and compute</title>",
        '<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#444444"/></marker></defs>',
        *parts, "</svg>", ""])


def diagrams() -> dict[Path, str]:
    """Every bundled config's diagram, by the file it belongs in."""
    from accelsim.hw import list_configs

    return {IMG / f"hardware-{name}.svg": diagram(name) for name in list_configs()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a committed diagram differs")
    args = parser.parse_args(argv)
    stale = []
    for path, svg in diagrams().items():
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != svg:
                stale.append(path)
        else:
            path.write_text(svg, encoding="utf-8")
            print(f"wrote {path.relative_to(REPO)}")
    for path in stale:
        print(f"{path.relative_to(REPO)} differs from its config: run python docs/gen/hardware_diagram.py",
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())

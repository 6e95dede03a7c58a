"""Take the screenshots of the docs (docs/img/) from real runs, in headless Chromium.

    python docs/gen/screenshots.py            # writes docs/img/*.png (needs chromium)

* ``report-1024.png`` and ``report-1920.png``: resnet50 on pixel6, the top of ``report.html`` in a
  window 1,024 and 1,920 pixels wide, down to the end of the layout: the summary against the floor,
  where the time went, the operators that stalled longest and the layout, each chart as wide as
  the window;
* ``report-layout.png``: the same page's layout with the mouse over the largest residency, so the
  tooltip shows;
* ``report-roofline.png``: the same page's roofline with its legend and the operators it leaves out;
* ``sweep-index.png``: a small sweep's ``index.html``, with points that fail (a scratchpad below
  the model's M_R);
* ``layout-svg.png``: the run's ``layout.svg``, for those who keep pictures.

The browser is driven by ``tests/accelsim/headless.py`` (the DevTools protocol on a pipe, the
same driver as the browser tests).
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def headless():
    spec = importlib.util.spec_from_file_location("headless", REPO / "tests" / "accelsim" / "headless.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def capture(page, element: str, out: Path, pad: int = 8) -> None:
    """A PNG of the element with this CSS selector (scrolled into view), with ``pad`` pixels around it."""
    box = page.evaluate(f"""(() => {{
        const e = document.querySelector({element!r}); e.scrollIntoView({{block: 'start'}});
        const b = e.getBoundingClientRect(); return [b.x, b.y, b.width, b.height];
    }})()""")
    x, y, width, height = box
    clip = {"x": max(0, x - pad), "y": max(0, y - pad) + page.evaluate("window.scrollY"),
            "width": width + 2 * pad, "height": height + 2 * pad, "scale": 1}
    data = page.call("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True})
    out.write_bytes(base64.b64decode(data["data"]))
    print(f"wrote {out.relative_to(REPO)} ({out.stat().st_size:,} B)")


def capture_span(page, first: str, last: str, out: Path, pad: int = 4) -> None:
    """A PNG of the page from the top of element ``first`` (``"body"``: the page's top) to the bottom of
    ``last`` (CSS selectors), the window's whole width."""
    top, bottom, width = page.evaluate(f"""(() => {{
        const a = document.querySelector({first!r}).getBoundingClientRect(),
              b = document.querySelector({last!r}).getBoundingClientRect();
        return [a.top + window.scrollY, b.bottom + window.scrollY, document.documentElement.clientWidth];
    }})()""")
    top = 0 if first == "body" else max(0, top - pad)
    clip = {"x": 0, "y": top, "width": width, "height": bottom + pad - top, "scale": 1}
    data = page.call("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True})
    out.write_bytes(base64.b64decode(data["data"]))
    print(f"wrote {out.relative_to(REPO)} ({out.stat().st_size:,} B)")


def hover_largest(page) -> str:
    """Move the mouse over the largest residency of the layout; its tensor's name."""
    tensor, x, y = page.evaluate("""(() => {
        let best = null, area = 0;
        for (const r of document.querySelectorAll('#residencies rect')) {
            const b = r.getBoundingClientRect();
            if (b.width * b.height > area) { area = b.width * b.height; best = r; }
        }
        const b = best.getBoundingClientRect();
        return [best.dataset.tensor, b.x + b.width / 2, b.y + b.height / 2];
    })()""")
    page.hover(x, y)
    return str(tensor)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "img"), help="folder of the PNGs (default docs/img)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    browser = headless()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        subprocess.run(["accelsim", "run", "resnet50", "--hw", "pixel6", "--out", str(run)], check=True,
                       stdout=subprocess.DEVNULL)
        sweep = Path(tmp) / "sweep"
        # 16 KiB is below resnet18's M_R: those points fail, as a user's sweep may, and the page
        # must keep the other points' results readable
        subprocess.run(["accelsim", "sweep", "resnet18", "mobilenet_v2", "--hw", "pixel6", "--grid",
                        "sram=16KiB,256KiB,1MiB", "--grid", "dram_bandwidth_bytes_per_s=25.6e9,51.2e9",
                        "--out", str(sweep), "--jobs", "2"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        for width, height in ((1024, 768), (1920, 1080)):
            with browser.Page(run / "report.html", width=width, height=height) as page:
                capture_span(page, "body", "#layout", out / f"report-{width}.png")
                assert page.errors == [], page.errors
        with browser.Page(run / "report.html", width=1240, height=1000) as page:
            page.evaluate("document.querySelector('#layout').scrollIntoView({block: 'start'})")
            print("hovering", hover_largest(page))
            capture_span(page, "#legend-layout", "#layout", out / "report-layout.png")
            page.hover(0, 0)
            capture_span(page, "#legend-roofline", "#not-drawn", out / "report-roofline.png")
            assert page.errors == [], page.errors
        with browser.Page(sweep / "index.html", width=1240, height=1000) as page:
            page.evaluate("document.body.style.zoom = 1")
            capture(page, "body", out / "sweep-index.png", pad=0)
            assert page.errors == [], page.errors
        with browser.Page(run / "layout.svg", width=1100, height=700) as page:
            capture(page, "svg", out / "layout-svg.png", pad=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())

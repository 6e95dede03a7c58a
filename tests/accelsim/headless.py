"""A page in headless Chromium, driven over the DevTools protocol on a pipe (no extra package).

``Page(path)`` starts ``chromium --headless --remote-debugging-pipe``, opens the file and
records every JavaScript exception and console error. Chromium reads commands on file
descriptor 3 and writes replies and events on 4, one JSON message per NUL-terminated record.
Used by the browser tests of ``report.html`` (issue 25); CI installs Debian's ``chromium``.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser() -> str:
    """The Chromium executable; a test that needs one fails (never skips) when there is none."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    raise AssertionError(f"no headless browser on PATH (tried {', '.join(BROWSERS)}): apt-get install -y chromium")


class Page:
    """One page of a headless Chromium; ``errors`` lists the JavaScript errors seen so far."""

    def __init__(self, path: str | Path, width: int = 1240, height: int = 1400, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.errors: list[str] = []
        self._events: list[dict[str, Any]] = []
        self._next = 0
        self._buffer = b""
        to_child, self._write = os.pipe()
        self._read, from_child = os.pipe()
        self._profile = tempfile.mkdtemp(prefix="accelsim-chromium-")

        def wire() -> None:  # in the child: the pipe ends on descriptors 3 and 4
            # first above 9, so that neither end is overwritten or left close-on-exec when a pipe
            # end already is descriptor 3 or 4 (as in a process with few files open)
            reads, writes = fcntl.fcntl(to_child, fcntl.F_DUPFD, 10), fcntl.fcntl(from_child, fcntl.F_DUPFD, 10)
            os.dup2(reads, 3)
            os.dup2(writes, 4)

        self._process = subprocess.Popen(
            [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", f"--user-data-dir={self._profile}", f"--window-size={width},{height}"],
            # close_fds=False: descriptors 3 and 4 are made after the fork, and pass_fds keeps
            # only descriptors the parent has under those numbers
            preexec_fn=wire, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child)
        os.close(from_child)
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        self.call("Page.navigate", {"url": Path(path).resolve().as_uri()})
        self._wait_for("Page.loadEventFired")

    # ---- the protocol

    def _send(self, message: dict[str, Any]) -> int:
        self._next += 1
        message["id"] = self._next
        os.write(self._write, json.dumps(message).encode() + b"\0")
        return self._next

    def _receive(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise AssertionError("headless Chromium did not answer in time")
            chunk = os.read(self._read, 1 << 16)
            if not chunk:
                raise AssertionError("headless Chromium closed its pipe")
            self._buffer += chunk
        record, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(record)
        self._note(message)
        return message

    def _note(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.errors.append(details.get("exception", {}).get("description") or details.get("text", "?"))
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            self.errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.errors.append(params["entry"].get("text", "?"))
        elif method:
            self._events.append(message)

    def _call(self, method: str, params: dict[str, Any] | None = None,
              session: str | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        wanted = self._send(message)
        while True:
            reply = self._receive()
            if reply.get("id") == wanted:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result

    def _wait_for(self, event: str) -> None:
        while not any(e.get("method") == event for e in self._events):
            self._receive()

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A DevTools command in the page's session; its result."""
        return self._call(method, params, self._session)

    # ---- what a test needs

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def hover(self, x: float, y: float) -> None:
        """Move the mouse to page coordinates (x, y), as a person would."""
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def screenshot(self) -> bytes:
        """The visible page as PNG bytes."""
        return base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])

    def close(self) -> None:
        try:
            self._call("Browser.close")
        except AssertionError:
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
        os.close(self._write)
        os.close(self._read)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Page:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def distinct_colours(png: bytes) -> int:
    """How many distinct RGB(A) pixel values a PNG has (a blank screenshot has one): decodes the
    8-bit, non-interlaced PNGs Chromium writes with stdlib zlib, undoing each row's filter."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, chunks, header = 8, [], b""
    while position < len(png):
        length = int.from_bytes(png[position:position + 4], "big")
        kind, body = png[position + 4:position + 8], png[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        position += 12 + length
    width, height = int.from_bytes(header[:4], "big"), int.from_bytes(header[4:8], "big")
    channels = {2: 3, 6: 4}[header[9]]
    raw, stride = zlib.decompress(b"".join(chunks)), width * channels
    previous, colours = bytearray(stride), set()
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        if row % 8 == 0:  # every 8th row is plenty to tell a drawing from a blank page
            colours.update(bytes(line[i:i + 3]) for i in range(0, stride, channels * 4))
        previous = line
    return len(colours)

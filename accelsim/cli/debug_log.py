"""The command line's debug log: where the libraries' log records go instead of the terminal.

torch, Dask and the other libraries a command loads log warnings and dumps (torch.export
prints a dozen lines of graph code for a model it cannot trace) that say nothing a user of
``accelsim`` acts on: every failure is already one ``error:`` line. The command line therefore
sends every log record to a file, the debug log, which is there to attach to a bug report:

* ``$ACCELSIM_DEBUG_LOG`` when set, else ``debug.log`` beside the trace cache's folder
  (``$XDG_CACHE_HOME/accelsim/debug.log``, or ``~/.cache/accelsim/debug.log``);
* opened on the first record only (a command that logs nothing creates no file), appended to,
  each record with its time, process, level and logger;
* kept below ``MAX_BYTES`` (the older half is moved to ``debug.log.1``), so it never grows
  without bound;
* a log that cannot be written (a read-only home) drops the records: the command goes on, and
  nothing is printed in their place.

torch gives its loggers handlers of their own that write to stderr; ``frontend.fx_capture``
takes them off while tracing, so torch's records reach this log too.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
from pathlib import Path

#: the debug log is rotated when it reaches this size (one older copy is kept)
MAX_BYTES = 4 * 2**20


def debug_log_path() -> Path:
    """``$ACCELSIM_DEBUG_LOG``, else ``debug.log`` in accelsim's cache folder (beside ``graphs/``)."""
    chosen = os.environ.get("ACCELSIM_DEBUG_LOG")
    if chosen:
        return Path(chosen).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "accelsim" / "debug.log"


class _DebugLogHandler(logging.handlers.RotatingFileHandler):
    """A rotating file handler that makes its folder on the first record, and that falls silent
    (instead of printing a traceback per record) when the file cannot be written."""

    def _open(self):  # type: ignore[no-untyped-def]
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()

    def handleError(self, record: logging.LogRecord) -> None:
        self.setLevel(logging.CRITICAL + 1)  # the log cannot be written: drop this record and the rest


def start_debug_log() -> None:
    """Send every log record of this process to the debug log instead of the terminal (idempotent)."""
    root = logging.getLogger()
    if any(isinstance(h, _DebugLogHandler) for h in root.handlers):
        return
    handler = _DebugLogHandler(debug_log_path(), maxBytes=MAX_BYTES, backupCount=1, delay=True, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)

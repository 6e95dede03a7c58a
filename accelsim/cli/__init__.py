"""The ``accelsim`` command line (also ``python -m accelsim``).

Subcommands::

    accelsim run MODEL [--hw NAME|FILE.yaml] [--sram 8MiB] [--allocator M] [--out DIR] [--no-plots]
                       [--dtype D] [--input-shape 1,3,224,224] [--set KEY=VALUE ...] [--cache DIR | --no-cache]
                       [--buffers OUT.csv] [--timeout S] [--time-limit S]
    accelsim alloc FILE.csv [--capacity 1MiB] [--method M] [--timeout S] [--output OUT.csv] [--explain WHY.csv]
    accelsim alloc --methods
    accelsim size MODEL [--hw NAME|FILE.yaml] [--scheduler S,...] [--allocator A,...] [--set KEY=VALUE ...]
    accelsim sweep MODEL... --grid KEY=V1,V2,... --out DIR [--executor local|dask] [--jobs N]
    accelsim bench PATH... (--capacity C | --capacity-from-name | --minimize | --load-fraction F,...)
    accelsim gen KIND N OUT.csv [--seed S]
    accelsim models
    accelsim configs [--fields]

Exit status: 0 success; 1 the run or allocation did not succeed (memory check failed, the
allocator could not fit, a search timed out or was infeasible); 2 bad input (unknown model,
bad hardware field, malformed CSV, capacity below M_R, ...), reported as one ``error:`` line
on stderr; 3 (``run`` and ``size``) the result is valid but not the deterministic one: a
wall-clock safety net (``--timeout``, ``--time-limit``) ended a search before its work limit
did, so another machine, or this one under another load, may answer differently (``run``:
the summary's ``deterministic`` line and ``report.json``'s ``deterministic`` and
``clock_stopped`` say where). Without those options every work limit counts work, and the answer
is the same everywhere. 130: interrupted (Ctrl-C), keeping what was done.

One module per command (``run``, ``sweep``, ``size``, ``alloc``, ``bench_command``, ``gen``,
``listing`` for ``models`` and ``configs``), each with ``add_parser`` and its handler; the
argparse types they share are in ``args``, the exit statuses and the Ctrl-C handling in
``status``. This module assembles the parser and turns errors into exit statuses.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

from accelsim.cli import alloc, bench_command, gen, listing, run, size, sweep
from accelsim.cli.args import Parser
from accelsim.cli.debug_log import start_debug_log
from accelsim.cli.status import (
    DEFAULT_METHOD,
    EXIT_NOT_DETERMINISTIC,
    Exception_or_interrupt,
    from_ctrl_c,
    watch_ctrl_c,
)
from accelsim.errors import CompileError, one_line
from frontend.errors import CacheEntryWarning, TracerFallbackWarning

__all__ = ["DEFAULT_METHOD", "EXIT_NOT_DETERMINISTIC", "Exception_or_interrupt", "build_parser", "main", "program"]


def build_parser() -> argparse.ArgumentParser:
    """The ``accelsim`` parser: each command's parser comes from its module."""
    parser = Parser(
        prog="accelsim",
        description="Compile PyTorch models for accelerators with software-managed on-chip memory, and simulate them.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run.add_parser(sub)
    alloc.add_parser(sub)
    sweep.add_parser(sub)
    size.add_parser(sub)
    bench_command.add_parser(sub)
    gen.add_parser(sub)
    listing.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    watch_ctrl_c()
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a one-line usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else 2
    start_debug_log()
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warning(warnings.showwarning)
            return int(args.handler(args))
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        sys.stdout = open(os.devnull, "w")  # so the interpreter's final flush does not fail again
        return 0
    except Exception_or_interrupt as exc:
        if from_ctrl_c(exc):
            print("error: interrupted (Ctrl-C)", file=sys.stderr)
            return 130
        if isinstance(exc, CompileError):
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return 1
        if isinstance(exc, ValueError):
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return 2
        if isinstance(exc, OSError):  # e.g. the disk filled up while writing: the paths were checked before the work
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return 1
        raise


def _one_line_warning(show: Any) -> Any:
    """``warnings.showwarning`` that prints a trace cache warning (``frontend.cache.CacheEntryWarning``:
    an entry not used or not saved, the model traced again) as one ``warning: ...`` line on stderr,
    torch.fx's failure before torch.export runs (``TracerFallbackWarning``) as one ``note: ...``
    line, and leaves every other warning to ``show``."""
    def showwarning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                    file: Any = None, line: str | None = None) -> None:
        if issubclass(category, CacheEntryWarning):
            print("warning: " + " ".join(str(message).split()), file=sys.stderr)
        elif issubclass(category, TracerFallbackWarning):
            print("note: " + " ".join(str(message).split()), file=sys.stderr)
        else:
            show(message, category, filename, lineno, file, line)
    return showwarning


def program() -> NoReturn:
    """The ``accelsim`` program (the console script and ``python -m accelsim``): ``main()`` on
    ``sys.argv``, then the process ends with its exit status.

    Once the command is done, its output is flushed and the exit handlers run (``atexit``:
    multiprocessing, logging, coverage), then the process ends at once (``os._exit``) instead of
    tearing the interpreter down object by object. With numba loaded that teardown (LLVM frees
    every compiled module) is a large share of a short command's CPU time, and nothing a user
    can see depends on it. It also means the command ends once its report is written, whatever
    threads a user's model left running (none of the commands leaves one): the ordinary exit
    would wait for every non-daemon thread, for ever if one never ends.
    """
    import atexit

    status = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`accelsim models | head`) or a closed stream
            pass
    atexit._run_exitfuncs()
    os._exit(status)

"""Output paths: checked before any work, written so that an interruption leaves nothing half done.

A run that traces, schedules and simulates for a minute and then cannot write its report
because ``--out`` names a file, or ``--csv`` a folder, has thrown the minute away. The
commands therefore check every output path first (``check_output_file``,
``check_output_folder``) and refuse a bad one with one line naming the option.

``staged_folder`` writes a report folder under a temporary name next to its destination and
renames it into place only when everything in it is written, so an error or Ctrl-C in the
middle never leaves a half-written report where a finished one is expected.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: file suffixes matplotlib can write without extra backends
PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")


class OutputPathError(ValueError):
    """An output path that cannot be written; the message names the option and the path."""


def _can_create_in(folder: Path) -> bool:
    """True when a file can really be created in ``folder`` (a probe: permission bits say yes to
    root on read-only places such as /proc)."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".accelsim-probe-"):
            return True
    except OSError:
        return False


def _existing_ancestor(path: Path) -> Path:
    for parent in path.parents:
        if parent.exists():
            return parent
    return Path(".")


def check_output_file(path: str | Path, option: str, suffixes: tuple[str, ...] | None = None) -> Path:
    """Check that ``path`` can be written as a file before any work is done; return it.

    The path must not be a folder, its folder must exist and be writable, and when
    ``suffixes`` is given its suffix must be one of them. Raises ``OutputPathError`` naming
    ``option``.

    >>> check_output_file(tempfile.gettempdir(), "--csv")
    Traceback (most recent call last):
    ...
    accelsim.outputs.OutputPathError: --csv ... is a folder, not a file
    """
    target = Path(path)
    if str(path) == "":
        raise OutputPathError(f"{option}: empty path")
    if target.is_dir():
        raise OutputPathError(f"{option} {str(path)!r} is a folder, not a file")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.exists():
        raise OutputPathError(f"{option} {str(path)!r}: folder {str(folder)!r} does not exist")
    if not folder.is_dir():
        raise OutputPathError(f"{option} {str(path)!r}: {str(folder)!r} is not a folder")
    if target.exists() and not os.access(target, os.W_OK):
        raise OutputPathError(f"{option} {str(path)!r}: the file exists and is not writable")
    if not _can_create_in(folder):
        raise OutputPathError(f"{option} {str(path)!r}: folder {str(folder)!r} is not writable")
    if suffixes is not None and target.suffix.lower() not in suffixes:
        raise OutputPathError(f"{option} {str(path)!r}: unknown image type {target.suffix or '(no suffix)'!r}; "
                              f"use one of {', '.join(suffixes)}")
    return target


def check_output_folder(path: str | Path, option: str) -> Path:
    """Check that a report folder can be created (with its parents) or replaced at ``path``.

    An existing folder is fine (its report files are replaced); an existing file is not; the
    nearest existing ancestor must be a writable folder. Raises ``OutputPathError`` naming
    ``option``.
    """
    target = Path(path)
    if str(path) == "":
        raise OutputPathError(f"{option}: empty path")
    if target.exists() and not target.is_dir():
        raise OutputPathError(f"{option} {str(path)!r} is a file, not a folder")
    if target.is_dir():
        if not _can_create_in(target):
            raise OutputPathError(f"{option} {str(path)!r}: the folder is not writable")
        return target
    ancestor = _existing_ancestor(target)
    if not ancestor.is_dir():
        raise OutputPathError(f"{option} {str(path)!r}: {str(ancestor)!r} is a file, not a folder")
    if not _can_create_in(ancestor):
        raise OutputPathError(f"{option} {str(path)!r}: cannot create it, {str(ancestor)!r} is not writable")
    return target


@contextmanager
def staged_folder(path: str | Path) -> Iterator[Path]:
    """Yield a temporary folder next to ``path``; on success it replaces ``path``'s files.

    Files written into the yielded folder are moved into ``path`` (created with its parents)
    only when the block finishes without an exception; on an exception (or KeyboardInterrupt)
    the temporary folder is removed and ``path`` is left as it was. Files in ``path`` that the
    block did not write are kept.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        yield staging
        target.mkdir(exist_ok=True)
        for item in sorted(staging.iterdir()):
            os.replace(item, target / item.name)  # atomic per file, same file system
    finally:
        shutil.rmtree(staging, ignore_errors=True)

"""Output paths: checked before any work, never an input, written so that an interruption
leaves nothing half done.

A run that traces, schedules and simulates for a minute and then cannot write its report
because ``--out`` names a file, or ``--csv`` a folder, has thrown the minute away. The
commands therefore check every output path first (``check_output_file``,
``check_output_folder``) and refuse a bad one with one line naming the option.

An output must never replace an input: ``accelsim run m/net.py:build --buffers m/net.py``
would put a CSV where the user's model was. ``check_outputs`` takes every path a command will
write (``Output``: a file, or a folder with the names the command writes in it) and every file
it reads, and refuses, with one line naming the option, an output that is an input (the same
file by any path: a symbolic or hard link counts; a bundled hardware config is an input too), a
file that one of the folders writes (``--buffers r/report.json`` beside ``--out r``), an input
that a folder would replace (``run r/report.json --out r``), two outputs at one path, or an
existing file of another kind than the output holds (``--buffers blocks.py``: the command cannot
know every file a model imports, so a CSV output replaces only a ``.csv`` file). It returns the paths made
absolute, so a model whose ``build()`` changes the working folder cannot move the outputs.

``staged_folder`` writes a report folder under a temporary name next to its destination and
renames it into place only when everything in it is written, so an error or Ctrl-C in the
middle never leaves a half-written report where a finished one is expected; ``replaced``
does the same for one file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Output:
    """A path a command writes: a file, or a folder (``files``: the names it writes there; a name
    ending in ``/`` is a subfolder the command owns whole, ``*.png`` every file of that suffix)."""

    option: str  #: how the user named it (``"--buffers"``), for messages
    path: str | Path
    folder: bool = False
    files: tuple[str, ...] = ()
    #: for a file: the suffix of what it holds (``".csv"``); an existing file of another suffix is
    #: refused, since inputs the command cannot name (a module the model imports, a notebook)
    #: must not be replaced by a typo
    suffix: str | None = None

    def owns(self, path: Path) -> bool:
        """Whether the folder writes ``path`` (absolute): one of its ``files``, or inside one of its subfolders."""
        if not self.folder:
            return False
        folder = Path(os.path.realpath(self.path))
        real = Path(os.path.realpath(path))
        for name in self.files:
            if name.endswith("/"):
                if real.is_relative_to(folder / name.rstrip("/")):
                    return True
            elif name.startswith("*."):
                if real.parent == folder and real.suffix == name[1:]:
                    return True
            elif same_path(real, folder / name):
                return True
        return False


def same_path(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` name one file: the same path once links are followed, or (both
    existing) the same inode, which is how a hard link shows."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def check_outputs(outputs: Sequence[Output],
                  inputs: Mapping[str, str | Path] | Sequence[tuple[str, str | Path]]) -> list[Path]:
    """Check every output a command will write before any work; return their absolute paths, in order.

    ``inputs`` maps what each input is (``"the model file"``) to its path (or lists such pairs,
    where several inputs are one kind of thing). Each output is
    checked as ``check_output_file`` or ``check_output_folder`` do, and refused (an
    ``OutputPathError`` naming its option) when it is an input, when a folder among the outputs
    writes it, when it would replace an input (a folder: one of its files is an input), or when
    another output has its path.

    >>> check_outputs([Output("--out", "r", folder=True, files=("report.json",))], {"the graph": "r/report.json"})
    Traceback (most recent call last):
    ...
    accelsim.outputs.OutputPathError: --out 'r' would replace report.json there, which is the graph 'r/report.json'; \
give another folder
    """
    pairs = list(inputs.items()) if isinstance(inputs, Mapping) else list(inputs)
    for output in outputs:
        where = str(output.path)
        for what, source in pairs:
            if same_path(output.path, source):
                raise OutputPathError(f"{output.option} {where!r} is {what} {str(source)!r}: writing it would "
                                      "replace it; give another path")
            if output.owns(Path(source)):
                raise OutputPathError(f"{output.option} {where!r} would replace {Path(source).name} there, which is "
                                      f"{what} {str(source)!r}; give another folder")
        for other in outputs:
            if other is output:
                continue
            if same_path(output.path, other.path):
                raise OutputPathError(f"{output.option} and {other.option} name one path, {where!r}; give each its own")
            if not output.folder and other.owns(Path(output.path)):
                raise OutputPathError(f"{output.option} {where!r} is a file {other.option} {str(other.path)!r} writes; "
                                      "give another path")
        if output.folder:
            check_output_folder(output.path, output.option)
        else:
            check_output_file(output.path, output.option)
            target = Path(output.path)
            if output.suffix is not None and target.is_file() and target.suffix.lower() != output.suffix:
                raise OutputPathError(f"{output.option} {where!r} is an existing file that is not a {output.suffix} "
                                      f"file: writing it would replace it; give a new file or a {output.suffix} one")
    return [Path(os.path.abspath(output.path)) for output in outputs]


@contextmanager
def replaced(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` (same suffix) to write; on success it is renamed over
    ``path``, on an exception it is removed and ``path`` is left as it was."""
    target = Path(path)
    # a fresh name rather than mkstemp's file, which would be created private (0600) and keep
    # that mode once renamed: the written file gets the permissions any new file gets
    staging = target.with_name(f".{target.stem}.{os.getpid()}.{uuid.uuid4().hex[:8]}.partial{target.suffix}")
    try:
        yield staging
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all (``replaced``); returns the path."""
    with replaced(path) as staging:
        staging.write_text(text, encoding="utf-8")
    return Path(path)

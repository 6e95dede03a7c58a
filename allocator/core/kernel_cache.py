"""Where numba keeps accelsim's compiled kernels: a user cache directory, set before any kernel exists.

Every module with ``@njit(cache=True)`` kernels imports this one among its imports
(``from allocator.core import kernel_cache  # noqa: F401``), so before its first decorator runs.
On import it chooses the directory numba caches compiled code in:

* when the environment has ``NUMBA_CACHE_DIR`` (even empty), the user's choice stands;
* otherwise ``$XDG_CACHE_HOME/accelsim/numba``, or ``~/.cache/accelsim/numba`` when
  ``XDG_CACHE_HOME`` is unset, empty or not an absolute path (as the XDG base-directory
  specification asks).

It sets ``os.environ["NUMBA_CACHE_DIR"]`` and, when numba is already imported,
``numba.config.CACHE_DIR`` too. Both are needed in numba 0.68: numba reads the variable once,
when it is imported, into ``numba.config.CACHE_DIR``, and a kernel picks its cache directory
from ``numba.config.CACHE_DIR`` when it is decorated, so setting the config attribute after
``import numba`` works for every kernel decorated afterwards. But numba's compiler re-reads the
environment (``config.reload_config``) whenever some ``NUMBA_*`` variable changed since the last
reading, and that resets ``CACHE_DIR`` from the environment; with the variable set as well, a
kernel module imported later (the kernels load lazily, with the method that needs them) still
finds the same directory. Child processes inherit the variable, so they share the cache. A
kernel decorated before this module ran keeps numba's default (a ``__pycache__`` next to its
source), which is why every kernel module imports it. When the directory cannot be created or written,
numba falls back to that default by itself.

What numba 0.68 keys an entry on, and so what survives a reinstall:

* the directory: one sub-folder per source folder, named after a SHA-1 of the folder's
  absolute path. The same version reinstalled to the same place (``pip install --force-reinstall``
  into the same environment) finds its entries again; installed into another environment or
  another checkout, it compiles anew (the old entries stay until the folder is deleted);
* the source file's contents: an index is valid while a SHA-256 of the whole ``.py`` file
  matches (numba 0.68's ``_SourceFileBackedLocatorMixin.get_source_stamp``; older releases
  compared the file's modification time and size instead). So a reinstall, which rewrites the
  files with new times, keeps the cache as long as their contents are the same, and any edit of
  a module recompiles all of its kernels;
* the function (its qualified name, first line and bytecode), the argument types, the Python
  version, the numba version, and the CPU (name and features): another machine sharing a home
  directory keeps entries of its own beside these.

``rm -rf ~/.cache/accelsim/numba`` (or the directory below) empties it; numba rebuilds what it needs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from allocator.core import kernel_clock

__all__ = ["CACHE_DIR", "ENV", "default_cache_dir"]

#: the environment variable numba reads its cache directory from
ENV = "NUMBA_CACHE_DIR"


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/accelsim/numba``, or ``~/.cache/accelsim/numba`` when ``XDG_CACHE_HOME``
    is unset, empty or relative.

    >>> str(default_cache_dir({"XDG_CACHE_HOME": "/var/cache/me"}))
    '/var/cache/me/accelsim/numba'
    >>> default_cache_dir({"XDG_CACHE_HOME": "relative"}) == Path.home() / ".cache" / "accelsim" / "numba"
    True
    """
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "accelsim" / "numba"


def _configure() -> str:
    chosen = os.environ.get(ENV)
    if chosen is None:
        chosen = str(default_cache_dir())
        os.environ[ENV] = chosen
    numba = sys.modules.get("numba")
    if numba is not None:  # imported before us: its config already read the environment
        numba.config.CACHE_DIR = chosen
    return chosen


#: the directory numba caches compiled kernels in for this process ("" : numba's default, next to the sources)
CACHE_DIR: str = _configure()

# Measured from the first kernel on, so that every clock of the library can leave the time out
# (``allocator.core.kernel_clock``).
kernel_clock.install(CACHE_DIR)

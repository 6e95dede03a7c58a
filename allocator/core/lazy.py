"""Lazy package attributes (PEP 562), for a package whose ``import`` must stay cheap.

``allocator`` and ``scheduler`` name their public objects in ``__init__`` but import the
modules that define them only when a name is first used: the command line reads a constant or
a registry without loading numpy, networkx or OR-Tools. This module imports nothing.
(``frontend`` has the same few lines of its own: it may import no other package of ours.)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_attributes(package: str, namespace: dict[str, Any], homes: Mapping[str, str],
                    submodules: Sequence[str] = ()) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (whose globals are ``namespace``): each
    name of ``homes`` is imported from ``package.<home>`` on first use and kept in ``namespace``
    (later lookups are plain), each of ``submodules`` is the module ``package.<name>``."""

    def __getattr__(name: str) -> Any:
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(homes) | set(submodules))

    return __getattr__, __dir__

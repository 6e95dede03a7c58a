"""accelsim's frontend: PyTorch models to ``DataflowGraph``s (see ``frontend.graph``).

``trace`` turns a module and example inputs into a graph; ``trace_model`` / ``load_model`` do
the same for the torchvision names of the model zoo; ``frontend.synthetic`` builds small graphs
without torch; ``cached_trace`` traces a zoo model once and loads its saved graph after that
(``frontend.cache``).

Importing this package imports nothing else: each public name loads its module on first use
(PEP 562 ``__getattr__``), so ``frontend.list_models()`` needs neither networkx nor torch, and
torch is imported only when a model is traced (``trace`` and the zoo import it when they run).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from frontend.cache import CacheDirError, cached_trace, check_cache_dir, default_cache_dir
    from frontend.dtypes import DTYPE_BYTES
    from frontend.graph import (
        MAX_OPERATORS,
        GraphFormatError,
        GraphTooLargeError,
        add_operator,
        add_tensor,
        check_graph,
        check_operator_count,
        dtype_bytes,
        load_graph,
        new_graph,
        save_graph,
    )
    from frontend.zoo import (
        FrontendMissingError,
        UnknownModelError,
        list_models,
        load_model,
        require_torch,
        trace_model,
    )

# ``trace`` is both a submodule and the function it defines: bound now (frontend.trace imports
# nothing heavy), the function stays ``frontend.trace`` whoever imports the submodule later.
from frontend.trace import TraceError, trace

#: each public name and the module that defines it
_HOMES = {
    "CacheDirError": "cache", "cached_trace": "cache", "check_cache_dir": "cache", "default_cache_dir": "cache",
    "DTYPE_BYTES": "dtypes",
    "GraphFormatError": "graph", "add_operator": "graph", "add_tensor": "graph", "check_graph": "graph",
    "dtype_bytes": "graph", "load_graph": "graph", "new_graph": "graph", "save_graph": "graph",
    "GraphTooLargeError": "limits", "MAX_OPERATORS": "limits", "check_operator_count": "limits",
    "FrontendMissingError": "zoo", "UnknownModelError": "zoo", "list_models": "zoo", "load_model": "zoo",
    "require_torch": "zoo", "trace_model": "zoo",
}

__all__ = [
    "CacheDirError",
    "DTYPE_BYTES",
    "FrontendMissingError",
    "GraphFormatError",
    "GraphTooLargeError",
    "MAX_OPERATORS",
    "check_operator_count",
    "TraceError",
    "UnknownModelError",
    "add_operator",
    "add_tensor",
    "cached_trace",
    "check_cache_dir",
    "check_graph",
    "default_cache_dir",
    "dtype_bytes",
    "list_models",
    "load_graph",
    "load_model",
    "new_graph",
    "require_torch",
    "save_graph",
    "trace",
    "trace_model",
]


#: submodules reachable as attributes after ``import frontend`` alone (``frontend.zoo.SUPPORTED_MODELS``)
_SUBMODULES = ("cache", "cost", "dtypes", "graph", "host", "synthetic", "user_model", "zoo")


def __getattr__(name: str) -> Any:
    """Load a public name's module on first use and keep the name here (later lookups are plain)."""
    if name in _SUBMODULES:
        return importlib.import_module(f"frontend.{name}")
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'frontend' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"frontend.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES) | set(_SUBMODULES))

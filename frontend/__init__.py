"""accelsim's frontend: PyTorch models to ``DataflowGraph``s (see ``frontend.graph``).

``trace`` turns a module and example inputs into a graph; ``trace_model`` / ``load_model`` do
the same for the torchvision names of the model zoo; ``frontend.synthetic`` builds small graphs
without torch; ``cached_trace`` traces a zoo model once and loads its saved graph after that
(``frontend.cache``). Importing this package does not import torch: ``trace`` and the zoo import
it when they run.
"""

from frontend.cache import CacheDirError, cached_trace, check_cache_dir, default_cache_dir
from frontend.graph import (
    DTYPE_BYTES,
    GraphFormatError,
    add_operator,
    add_tensor,
    check_graph,
    dtype_bytes,
    load_graph,
    new_graph,
    save_graph,
)
from frontend.trace import TraceError, trace
from frontend.zoo import FrontendMissingError, UnknownModelError, list_models, load_model, require_torch, trace_model

__all__ = [
    "CacheDirError",
    "DTYPE_BYTES",
    "FrontendMissingError",
    "GraphFormatError",
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

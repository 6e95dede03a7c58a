"""Static memory allocation: buffers with fixed lifetimes placed at offsets in a scratchpad.

Public surface::

    from allocator import Buffer, Problem, Solution, solve, validate, lower_bound
    result = solve(problem)                      # DEFAULT_METHOD, "auto": heuristics, then the exact search

Every method is registered by name in ``METHODS``, with its ``Capabilities`` and its options
record (``METHODS[name].options``, see ``allocator.registry``); ``solve`` checks its input,
runs the method and validates the output with the independent ``validate`` before returning
it. Importing this package imports no method module, nor numba or OR-Tools: ``METHODS`` is a
table whose functions are imported when a method first runs, and the compiled kernels of the
input checks, the validator and the CSV reader load on first use too. ``explain_infeasible``
and its types, which run the exact search, are imported when first named. Every number a
problem holds lies within ``MAX_VALUE`` (2**62 - 1, see ``allocator.problem``); ``Problem``
refuses anything else, naming the buffer.
"""

from typing import Any

from allocator.anytime import MinimizeResult, minimize
from allocator.csv_io import CSVFormatError, read_csv, write_csv
from allocator.options import CPSATOptions, HillClimbOptions, IdeallocOptions, MIPOptions, NoOptions
from allocator.problem import (
    MAX_VALUE,
    AllocationResult,
    Buffer,
    InvalidProblemError,
    Problem,
    Solution,
    UnknownMethodError,
)
from allocator.registry import (
    DEFAULT_METHOD,
    METHODS,
    Capabilities,
    InvalidOptionError,
    MethodEntry,
    describe_options,
    register,
    solve,
)
from allocator.validate import InvalidSolutionError, ValidationReport, Violation, check, lower_bound, validate

#: names imported from ``allocator.explain`` when first used: it imports the exact search (numba)
_FROM_EXPLAIN = ("ExplainOptions", "Explanation", "FeasibleProblemError", "explain_infeasible")


def __getattr__(name: str) -> Any:
    if name in _FROM_EXPLAIN:
        from allocator import explain

        return getattr(explain, name)
    raise AttributeError(f"module 'allocator' has no attribute {name!r}")


__all__ = [
    "DEFAULT_METHOD", "MAX_VALUE", "AllocationResult", "Buffer", "Capabilities", "CPSATOptions", "CSVFormatError",
    "ExplainOptions", "Explanation", "FeasibleProblemError", "HillClimbOptions", "IdeallocOptions",
    "InvalidOptionError", "InvalidProblemError", "InvalidSolutionError", "METHODS", "MIPOptions", "MethodEntry",
    "MinimizeResult", "NoOptions", "minimize", "Problem", "Solution", "UnknownMethodError", "ValidationReport",
    "Violation", "check", "describe_options", "explain_infeasible", "lower_bound", "read_csv", "register", "solve",
    "validate", "write_csv",
]

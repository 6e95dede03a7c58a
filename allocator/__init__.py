"""Static memory allocation: buffers with fixed lifetimes placed at offsets in a scratchpad.

Public surface::

    from allocator import Buffer, Problem, Solution, solve, validate, lower_bound
    result = solve(problem, method="greedy-by-size", timeout=10)

Every method is registered by name in ``METHODS``, with its ``Capabilities``; ``solve`` checks
its input, runs the method and validates the output with the independent ``validate`` before
returning it. Importing this package imports every method module, which registers its methods
(``allocator.registry`` itself imports none, so no module of the package imports in a cycle).
Every number a problem holds lies within ``MAX_VALUE`` (2**62 - 1, see
``allocator.problem``); ``Problem`` refuses anything else, naming the buffer.
"""

from allocator.anytime import MinimizeResult, minimize
from allocator.csv_io import CSVFormatError, read_csv, write_csv
from allocator.problem import (
    MAX_VALUE,
    AllocationResult,
    Buffer,
    InvalidProblemError,
    Problem,
    Solution,
    UnknownMethodError,
)
from allocator.registry import METHODS, Capabilities, MethodEntry, register, solve
from allocator.validate import InvalidSolutionError, ValidationReport, Violation, check, lower_bound, validate

# The method modules register their methods when imported; METHODS keeps this order.
from allocator import greedy, heuristics, exact, telamalloc, minimalloc, portfolio  # noqa: F401  # isort: skip
from allocator import idealloc  # noqa: F401, E402  # isort: skip
from allocator import telamalloc_learned  # noqa: F401, E402  # isort: skip
from allocator.explain import ExplainOptions, Explanation, FeasibleProblemError, explain_infeasible  # noqa: E402

__all__ = [
    "MAX_VALUE", "AllocationResult", "Buffer", "Capabilities", "CSVFormatError", "ExplainOptions", "Explanation",
    "FeasibleProblemError", "InvalidProblemError", "InvalidSolutionError", "METHODS", "MethodEntry", "MinimizeResult",
    "minimize", "Problem", "Solution", "UnknownMethodError", "ValidationReport", "Violation", "check",
    "explain_infeasible", "lower_bound", "read_csv", "register", "solve", "validate", "write_csv",
]

"""Static memory allocation: buffers with fixed lifetimes placed at offsets in a scratchpad.

The public surface (``__all__``, 26 names)::

    from allocator import Buffer, Problem, solve, minimize, validate
    problem = Problem([Buffer("a", 0, 2, 64), Buffer("b", 1, 3, 32)], capacity=96)
    result = solve(problem)                      # DEFAULT_METHOD, "auto": heuristics, then the exact search
    assert result.status == "solved" and validate(problem, result.solution).ok
    best = minimize(problem.with_capacity(None), timeout=1)   # the lowest peak found, and a proven bound

* types: ``Buffer``, ``Problem``, ``Solution``, ``AllocationResult``, ``MinimizeResult``;
* entry points: ``solve`` (fit a capacity), ``minimize`` (anytime peak minimisation),
  ``validate`` (the independent checker every answer passes), ``lower_bound`` (LOAD),
  ``read_csv``/``write_csv`` (MiniMalloc's CSV format), ``explain_infeasible`` with
  ``ExplainOptions`` and ``Explanation`` (why nothing fits);
* the methods: ``METHODS`` (name -> entry: description, ``Capabilities``, options record),
  ``DEFAULT_METHOD``, ``register`` (add a method of your own), ``describe_options``, ``WorkLimit``
  (how the flow bounds a method's work);
* errors: ``InvalidProblemError`` and its kinds ``UnknownMethodError``, ``InvalidOptionError``,
  ``CSVFormatError``; ``InvalidSolutionError``; ``FeasibleProblemError``; and ``MAX_VALUE``
  (2**62 - 1), the largest number a problem holds (``Problem`` refuses anything else, naming
  the buffer).

Everything else is importable from its module, in three rooms (ARCHITECTURE.md):
``allocator.core`` (the problem types, CSV, the validator, cross sections, generators, the
options records, the registry, deadlines, the bookkeeping of a minimisation), ``allocator.methods``
(one module per method and its compiled kernel: ``greedy``, ``heuristics``, ``exact``,
``minimalloc`` + ``minimalloc_kernel``, ``telamalloc`` + ``telamalloc_kernel``,
``telamalloc_learned`` + ``backtrack_model``, ``idealloc``) and ``allocator.search`` (what
composes methods: ``anytime``, ``portfolio`` (``auto``), ``explain``, ``warmup``, ``bench``).
A method's options record comes from where the method is defined
(``allocator.methods.minimalloc.MiniMallocOptions``, ``allocator.core.options.CPSATOptions``,
or ``METHODS[name].options``).

``solve`` checks its input, runs the method and validates the output with ``validate`` before
returning it. Importing this package imports no method module, nor numba or OR-Tools:
``METHODS`` is a table whose functions are imported when a method first runs, and the compiled
kernels of the input checks, the validator and the CSV reader load on first use too.
``explain_infeasible`` and its types, which run the exact search, are imported when first named.
"""

from typing import Any

from allocator.core.csv_io import CSVFormatError, read_csv, write_csv
from allocator.core.problem import (
    MAX_VALUE,
    AllocationResult,
    Buffer,
    InvalidProblemError,
    MinimizeResult,
    Problem,
    Solution,
    UnknownMethodError,
)
from allocator.core.registry import (
    DEFAULT_METHOD,
    METHODS,
    InvalidOptionError,
    WorkLimit,
    describe_options,
    register,
    solve,
)
from allocator.core.validate import InvalidSolutionError, lower_bound, validate
from allocator.search.anytime import minimize

#: names imported from ``allocator.search.explain`` when first used: it imports the exact search (numba)
_FROM_EXPLAIN = ("ExplainOptions", "Explanation", "FeasibleProblemError", "explain_infeasible")


def __getattr__(name: str) -> Any:
    if name in _FROM_EXPLAIN:
        from allocator.search import explain

        return getattr(explain, name)
    raise AttributeError(f"module 'allocator' has no attribute {name!r}")


__all__ = [
    "AllocationResult", "Buffer", "MinimizeResult", "Problem", "Solution",
    "explain_infeasible", "ExplainOptions", "Explanation", "lower_bound", "minimize", "read_csv", "solve",
    "validate", "write_csv",
    "DEFAULT_METHOD", "METHODS", "WorkLimit", "describe_options", "register",
    "CSVFormatError", "FeasibleProblemError", "InvalidOptionError", "InvalidProblemError", "InvalidSolutionError",
    "UnknownMethodError", "MAX_VALUE",
]

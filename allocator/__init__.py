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
returning it. Importing this package imports nothing: each public name is imported from its
module when first used (``import allocator.core.defaults``, which the command line reads, so
costs no numpy). Naming one imports no method module, nor numba or OR-Tools either:
``METHODS`` is a table whose functions are imported when a method first runs, and the compiled
kernels of the input checks, the validator and the CSV reader load on first use too.
``explain_infeasible`` and its types import the exact search, and numba with it, when first named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from allocator.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from allocator.core.csv_io import CSVFormatError, read_csv, write_csv
    from allocator.core.defaults import DEFAULT_METHOD
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
    from allocator.core.registry import METHODS, InvalidOptionError, WorkLimit, describe_options, register, solve
    from allocator.core.validate import InvalidSolutionError, lower_bound, validate
    from allocator.search.anytime import minimize
    from allocator.search.explain import ExplainOptions, Explanation, FeasibleProblemError, explain_infeasible

#: each public name and the module that defines it, imported when the name is first used: so
#: ``import allocator.core.defaults`` (which the command line reads) imports neither numpy nor
#: the rest of the package
_HOMES = {
    "CSVFormatError": "core.csv_io", "read_csv": "core.csv_io", "write_csv": "core.csv_io",
    "DEFAULT_METHOD": "core.defaults",
    "MAX_VALUE": "core.problem", "AllocationResult": "core.problem", "Buffer": "core.problem",
    "InvalidProblemError": "core.problem", "MinimizeResult": "core.problem", "Problem": "core.problem",
    "Solution": "core.problem", "UnknownMethodError": "core.problem",
    "METHODS": "core.registry", "InvalidOptionError": "core.registry", "WorkLimit": "core.registry",
    "describe_options": "core.registry", "register": "core.registry", "solve": "core.registry",
    "InvalidSolutionError": "core.validate", "lower_bound": "core.validate", "validate": "core.validate",
    "minimize": "search.anytime",
    "ExplainOptions": "search.explain", "Explanation": "search.explain", "FeasibleProblemError": "search.explain",
    "explain_infeasible": "search.explain",
}

#: the rooms, reachable as attributes after ``import allocator`` alone
_SUBMODULES = ("core", "methods", "search")


__getattr__, __dir__ = lazy_attributes('allocator', globals(), _HOMES, _SUBMODULES)


__all__ = [
    "AllocationResult", "Buffer", "MinimizeResult", "Problem", "Solution",
    "explain_infeasible", "ExplainOptions", "Explanation", "lower_bound", "minimize", "read_csv", "solve",
    "validate", "write_csv",
    "DEFAULT_METHOD", "METHODS", "WorkLimit", "describe_options", "register",
    "CSVFormatError", "FeasibleProblemError", "InvalidOptionError", "InvalidProblemError", "InvalidSolutionError",
    "UnknownMethodError", "MAX_VALUE",
]

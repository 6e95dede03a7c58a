"""The registry of placement methods and ``solve``, the one entry point over it.

A method is a plain function ``method(problem, deadline, options) -> MethodOutput`` with one
options record (a frozen dataclass): ``options`` is always an instance of that record
(``NoOptions()`` for a method without options), built and checked by ``solve``, never its
fields as keyword arguments, so every method, built-in or registered, is called the same way.
``METHODS`` maps each name to its ``MethodEntry``: the function, a one-line description, what it
can do (``Capabilities``: whether it proves infeasibility, needs a capacity, has its own anytime
peak minimisation for ``allocator.minimize``), its options record and where the composed
searches use it (``Roles``). ``solve`` owns the shared contract so a method
only implements placement: it rejects a problem that is not a ``Problem``, unknown methods and
unknown or ill-typed options, refuses a problem without a capacity for a method that needs
one, proves the trivial infeasibility (LOAD above the capacity) once for all methods, times
the run, and validates every returned placement with the independent validator before
handing it back. Malformed input never reaches a method: ``Problem`` refuses it when it is
built (values beyond ``MAX_VALUE``, duplicate ids, pinned buffers that clash, ...).

The built-in methods are a table here (``METHODS`` keeps its order: ``accelsim alloc
--methods`` lists it), whose functions, anytime routines and options records are named as
``"module:name"`` and imported on first use: importing ``allocator`` imports no method
module, and so neither numba nor OR-Tools, and listing ``METHODS`` (names, descriptions,
capabilities) imports nothing either. ``register`` adds a user's own method, given as a
function. A new built-in method is a function in its module plus a row of the table.

The table is the one place method names live. What composes methods (``auto``'s stages, the
starting heuristics of the anytime searches, ``minimize``'s insurance placement) never lists
names: each built-in row declares its ``Roles`` (its place in each of those
orders), and the composing code asks ``fit_stages``, ``minimize_stages``,
``starting_heuristics`` and ``fallback_heuristic``. So moving a heuristic in or out of a
portfolio is an edit of its row, and the reasons for each order are written once, in those
functions' docstrings. A registered method takes no role (``register`` offers none): the
portfolios are built-in behaviour whose answers must not change when a user adds a method.

Options, one way for every method: ``solve(problem, name, options=record)`` with an instance
of ``METHODS[name].options``, or ``solve(problem, name, field=value, ...)`` as shorthand for
that record's fields (both together: the fields replace the record's). The records:
``NoOptions`` (the greedy heuristics and ``telamalloc-heuristic``), ``HillClimbOptions``,
``IdeallocOptions``, ``CPSATOptions``, ``MIPOptions`` (``allocator.core.options``),
``MiniMallocOptions`` (``minimalloc`` and ``auto``), ``TelaMallocOptions`` (``telamalloc``)
and ``LearnedOptions`` (``telamalloc-learned``); ``describe_options(name)`` lists a method's
fields with their types and defaults.
"""

from __future__ import annotations

import dataclasses
import importlib
import numbers
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from allocator.core.defaults import DEFAULT_METHOD
from allocator.core.kernel_clock import work_clock
from allocator.core.options import NoOptions
from allocator.core.problem import (
    AllocationResult,
    InvalidProblemError,
    MinimizeResult,
    Problem,
    Solution,
    Status,
    UnknownMethodError,
)
from allocator.core.validate import InvalidSolutionError, lower_bound, validate


class InvalidOptionError(InvalidProblemError, TypeError):
    """An option a method does not have, or a value of the wrong type for one; the message names
    the option, the method and the method's options with their types.

    A ``ValueError`` (through ``InvalidProblemError``, like all bad input to the allocator) and a
    ``TypeError`` too: an unknown keyword argument was a ``TypeError`` before options were
    checked here, and code that caught one still does.
    """


@dataclass
class MethodOutput:
    """What a method hands back to ``solve``.

    ``offsets`` is a complete placement (buffer id -> ``int`` offset) or ``None``. ``status``
    is the method's verdict, one of ``Status`` (solved, infeasible, failed, timeout); for
    ``"solved"`` the placement must fit the capacity. ``solve`` checks all of it
    (``check_output``, then the validator) and raises naming the method otherwise.
    """

    status: Status
    offsets: dict[str, int] | None
    reason: str = ""
    stats: dict[str, float] = field(default_factory=dict)


#: a method: ``function(problem, deadline, options) -> MethodOutput``, where ``options`` is an
#: instance of the method's options record (``MethodEntry.options``) and ``deadline`` a
#: ``work_clock()`` value or None
MethodFunction = Callable[..., MethodOutput]


R = typing.TypeVar("R")


@dataclass(frozen=True)
class MinimizeRequest:
    """What ``allocator.minimize`` hands a method's anytime routine, its arguments checked."""

    method: str  #: the registered name the result is reported under
    timeout: float  #: seconds for the whole call, positive and finite
    began: float  #: ``work_clock()`` when the call began
    deadline: float  #: ``began + timeout``: no work starts after it
    options: object | None  #: the method's own options record, if the caller gave one (another type raises)
    load_share: float  #: share of the time (and of ``node_limit``) for a first probe at LOAD, in (0, 1]
    node_limit: int | None  #: nodes of all exact probes together; only for a routine that declares ``node_limit``
    on_improve: Callable[[MinimizeResult], None] | None  #: called with the result so far on every improvement

    def options_or_defaults(self, record_class: type[R]) -> R:
        """``options`` when it is a ``record_class``, the record's defaults when it is None;
        ``TypeError`` otherwise (``minimize`` has checked the fields of a record it was given).

        >>> from allocator.core.options import HillClimbOptions
        >>> request = MinimizeRequest("hill-climb", 1.0, 0.0, 1.0, None, 0.6, None, None)
        >>> request.options_or_defaults(HillClimbOptions)
        HillClimbOptions(seed=0, iterations=200)
        """
        if self.options is None:
            return record_class()
        if not isinstance(self.options, record_class):
            raise TypeError(f"options of method {self.method!r} must be an instance of {record_class.__module__}."
                            f"{record_class.__qualname__}, got {type(self.options).__qualname__}")
        return self.options


#: a method's own peak minimisation: ``routine(problem, request) -> MinimizeResult``. It
#: minimises the peak of ``problem`` (the problem's capacity, when set, is an upper limit on the
#: answer) by ``request.deadline`` and returns a validated placement, or none.
AnytimeFunction = Callable[[Problem, MinimizeRequest], MinimizeResult]


def resolve(reference: str) -> Any:
    """The object a ``"module:name"`` reference names, importing its module (Python imports a module once).

    >>> resolve("allocator.core.options:NoOptions").__name__
    'NoOptions'
    """
    module, _, name = reference.partition(":")
    if not module or not name:
        raise ValueError(f"a reference is 'module:name', got {reference!r}")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Capabilities:
    """What a method declares it can do; ``solve`` and ``minimize`` act on these, never on names."""

    #: complete: given the time, it finds a placement under the capacity when one exists and
    #: proves the capacity infeasible otherwise (a heuristic's miss proves nothing)
    exact: bool = False
    #: refuses a problem without a capacity (it searches for a placement under one)
    needs_capacity: bool = False
    #: its own peak minimisation, which ``allocator.minimize`` runs (a function, or a
    #: ``"module:name"`` reference imported on first use: ``MethodEntry.anytime``); None:
    #: ``minimize`` runs the method once without a capacity (after an insurance placement)
    anytime: AnytimeFunction | str | None = None
    #: its anytime routine honours ``minimize(..., node_limit=...)`` (a deterministic budget)
    node_limit: bool = False

    def labels(self) -> tuple[str, ...]:
        """The capabilities as short words, for listings.

        >>> Capabilities(exact=True, needs_capacity=True).labels()
        ('exact', 'needs capacity')
        """
        flags = (("exact", self.exact), ("needs capacity", self.needs_capacity),
                 ("anytime", self.anytime is not None), ("node limit", self.node_limit))
        return tuple(label for label, on in flags if on)


@dataclass(frozen=True)
class Roles:
    """Where the searches that compose methods use a built-in method: its place in each of their
    orders (0 first; None: not in that order). ``fit_stages``, ``minimize_stages``,
    ``starting_heuristics`` and ``fallback_heuristic`` read them; their docstrings give the
    orders and why."""

    fit: int | None = None  #: ``auto`` under a capacity: its place among the heuristics tried until one fits
    #: ``auto`` under a capacity: the exact search run after those heuristics, with ``auto``'s
    #: options record (so its record class is ``auto``'s)
    exact: bool = False
    minimize: int | None = None  #: ``auto``'s minimisation: its place among the heuristics run first
    start: int | None = None  #: the anytime searches: its place among the heuristics of the first incumbent
    #: places the buffers when no starting heuristic did, and is ``minimize``'s insurance placement
    fallback: bool = False


@dataclass(frozen=True)
class WorkLimit:
    """A method's deterministic work limit inside the flow, in the unit of one field of its options record.

    The scheduler's allocation-aware spill loop (``scheduler.spill_loop``) places many residency
    plans with one method; it bounds each placement by this limit so that the answer is the same
    on every machine, never by seconds. A method without one (``MethodEntry.work_limit`` None)
    ends by itself: a one-pass heuristic, or a search bounded by its own options (hill-climb's
    ``iterations``, the TelaMalloc searches' ``step_limit``); ``mip`` has none because OR-Tools'
    MIP wrapper offers only a time limit.
    """

    option: str  #: the field of the method's options record (a ``solve`` keyword) that bounds its work
    total: float  #: ``shared``: the budget of work the loop's placements share, in that unit; else each one's
    shared: bool  #: the placements share ``total`` (a search that fails spends its share); False: each gets all


#: search nodes of the exact search (``auto``, ``minimalloc``) for one allocation-aware loop: at
#: 4,000,000 the first placement gets 2,000,000, about what the former wall-clock default gave it,
#: and the answers on the spill study's random DAGs did not change (``docs/results/spills.md``)
NODE_LIMIT = 4_000_000
#: CP-SAT deterministic time of ``cpsat`` for one allocation-aware loop, shared as the nodes are
CPSAT_LIMIT = 8.0
#: idealloc's draws when it has no deadline (its ``DEFAULT_RUNS``), pinned so a timeout only cuts it short
IDEALLOC_RUNS = 20


class MethodEntry:
    """One registered method.

    ``function``, ``options`` and ``capabilities.anytime`` may be given as ``"module:name"``
    references; the properties ``function``, ``options`` and ``anytime`` import them on first
    use, so a listing of ``METHODS`` (``name``, ``description``, ``capabilities``) imports no
    method. ``options`` is the method's options record class (``NoOptions`` for none); the
    function is called as ``function(problem, deadline, record)`` with an instance of it.
    """

    __slots__ = ("name", "description", "capabilities", "work_limit", "roles", "_function", "_options",
                 "_anytime")

    def __init__(self, name: str, function: MethodFunction | str, description: str,
                 capabilities: Capabilities = Capabilities(), options: type | str = NoOptions,
                 work_limit: WorkLimit | None = None, roles: Roles = Roles()) -> None:
        self.name = name
        self.description = description  #: one line: what it does and which paper/section/compiler it follows
        self.capabilities = capabilities  #: what it can do; solve and minimize act on it
        #: the flow's deterministic limit of its work (``WorkLimit``); None: it ends by itself
        self.work_limit = work_limit
        self.roles = roles  #: where the composed searches use it (``Roles``); a registered method has none
        self._function = function
        self._options = options
        self._anytime: AnytimeFunction | str | None = capabilities.anytime

    def __repr__(self) -> str:
        return f"MethodEntry({self.name!r}, {self.description!r}, {self.capabilities!r})"

    @property
    def module(self) -> str:
        """The name of the module that defines the function, without importing it."""
        if isinstance(self._function, str):
            return self._function.partition(":")[0]
        return str(self._function.__module__)

    @property
    def function(self) -> MethodFunction:
        """The method's function (imported on first use)."""
        if isinstance(self._function, str):
            self._function = resolve(self._function)
        return self._function  # type: ignore[return-value]

    @property
    def options(self) -> type:
        """The method's options record class, a frozen dataclass (imported on first use)."""
        if isinstance(self._options, str):
            self._options = resolve(self._options)
        return self._options  # type: ignore[return-value]

    @property
    def anytime(self) -> AnytimeFunction | None:
        """The method's anytime routine (imported on first use), or None."""
        if isinstance(self._anytime, str):
            self._anytime = resolve(self._anytime)
        routine = self._anytime
        assert not isinstance(routine, str)
        return routine

    def record(self, options: object = None, fields: Mapping[str, Any] | None = None) -> Any:
        """The method's options record: ``options`` (an instance of ``self.options``, or None for
        the defaults) with ``fields`` replacing its fields, every name and type checked.

        Raises ``TypeError`` when ``options`` is not a ``self.options``, and
        ``InvalidOptionError`` for a field the record does not have or a value of the wrong
        type; the record's own checks (``__post_init__``) raise what they raise.
        """
        record_class = self.options
        if options is not None and not isinstance(options, record_class):
            raise TypeError(f"options of method {self.name!r} must be an instance of {record_class.__module__}."
                            f"{record_class.__qualname__}, got {type(options).__qualname__}")
        fields = dict(fields or {})
        hints = _field_hints(record_class)
        for key, value in fields.items():
            if key not in hints:
                raise InvalidOptionError(f"method {self.name!r} has no option {key!r}; {describe_options(self)}")
            _check_type(self, key, value, hints[key])
        if options is None:
            return record_class(**fields)
        for key, hint in hints.items():  # a record built by the caller: its fields were not checked
            if key not in fields:
                _check_type(self, key, getattr(options, key), hint)
        return dataclasses.replace(options, **fields) if fields else options  # type: ignore[type-var]


#: ``_field_hints`` of each record class met so far
_HINTS: dict[type, dict[str, Any]] = {}


def _field_hints(record_class: type) -> dict[str, Any]:
    """The fields a record's constructor takes, in order, with their types (annotations evaluated)."""
    if record_class not in _HINTS:
        hints = typing.get_type_hints(record_class)
        _HINTS[record_class] = {f.name: hints[f.name] for f in dataclasses.fields(record_class) if f.init}
    return _HINTS[record_class]


def describe_options(method: str | MethodEntry) -> str:
    """A method's options as one line: the record, and each field with its type and default.

    >>> describe_options("hill-climb")
    "hill-climb's options (HillClimbOptions): seed: int = 0, iterations: int = 200"
    >>> describe_options("first-fit")
    'first-fit takes no options (NoOptions)'
    """
    entry = method if isinstance(method, MethodEntry) else method_entry(method)
    record_class = entry.options
    shown = []
    for f in dataclasses.fields(record_class):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            default = f" = {f.default!r}"
        elif f.default_factory is not dataclasses.MISSING:
            default = f" = {f.default_factory()!r}"
        else:
            default = ""
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", repr(f.type))
        shown.append(f"{f.name}: {kind}{default}")
    if not shown:
        return f"{entry.name} takes no options ({record_class.__qualname__})"
    return f"{entry.name}'s options ({record_class.__qualname__}): {', '.join(shown)}"


def _conforms(value: object, hint: Any) -> bool:
    """Whether ``value`` is of the annotated type ``hint`` (the types records use; a bool is no number)."""
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return any(_conforms(value, arg) for arg in typing.get_args(hint))
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_conforms(item, args[0]) for item in value)
        return len(args) == len(value) and all(_conforms(item, arg) for item, arg in zip(value, args, strict=True))
    if origin is not None:
        return isinstance(value, origin)
    return isinstance(value, hint) if isinstance(hint, type) else True


def _check_type(entry: MethodEntry, key: str, value: object, hint: Any) -> None:
    if not _conforms(value, hint):
        declared = next(f.type for f in dataclasses.fields(entry.options) if f.name == key)
        raise InvalidOptionError(f"option {key!r} of method {entry.name!r} must be {declared}, got {value!r}; "
                                 f"{describe_options(entry)}")


#: the built-in methods, in the order ``METHODS`` lists them; each one's function, anytime
#: routine and options record are imported on first use (see the module docstring)
BUILT_IN = (
    MethodEntry("first-fit", "allocator.methods.greedy:first_fit",
                "buffers in start order, each at the lowest offset that fits (TelaMalloc §3.1 baseline)",
                roles=Roles(start=4)),
    MethodEntry("greedy-by-size", "allocator.methods.greedy:greedy_by_size",
                "largest first, lowest offset that fits (TensorFlow Lite GreedyBySize)",
                roles=Roles(fit=1, minimize=1, start=0, fallback=True)),
    MethodEntry("best-fit", "allocator.methods.greedy:best_fit",
                "largest first, into the smallest gap that holds it (XLA global decreasing-size best fit)",
                roles=Roles(fit=0, minimize=2, start=3)),
    MethodEntry("load-best-fit", "allocator.methods.greedy:load_best_fit",
                "most loaded cross section first, then longest, then largest area, into the smallest gap "
                "(MiniMalloc's TWA preorder as a greedy order)",
                roles=Roles(fit=2, minimize=0, start=2)),
    MethodEntry("greedy-in-order", "allocator.methods.heuristics:greedy_in_order",
                "buffers in first-use order (start, then input order), lowest offset that fits "
                "(TensorFlow Lite in-order)"),
    MethodEntry("greedy-by-breadth", "allocator.methods.heuristics:greedy_by_breadth",
                "steps in decreasing breadth, their live buffers largest first, into the smallest gap "
                "(TensorFlow Lite GreedyByBreadth)"),
    MethodEntry("greedy-by-conflicts", "allocator.methods.heuristics:greedy_by_conflicts",
                "most time-overlapping buffers first, then largest, lowest offset that fits "
                "(TVM USMP greedy_by_conflicts)"),
    MethodEntry("telamalloc-heuristic", "allocator.methods.heuristics:telamalloc_heuristic",
                "skyline filled bottom-up row by row: on the lowest floor, highest contention first "
                "(ties: alignment, size x lifetime^2, lifetime) (TelaMalloc §3.1 baseline, Fig. 4)",
                roles=Roles(start=1)),
    MethodEntry("hill-climb", "allocator.methods.heuristics:hill_climb",
                "greedy-by-size's order, then seeded random moves of a peak buffer earlier in the order, "
                "keeping orders no worse (TVM USMP hill_climb)",
                options="allocator.core.options:HillClimbOptions"),
    MethodEntry("cpsat", "allocator.methods.exact:cpsat",
                "CP-SAT on the NoOverlap2D model with a redundant cumulative: feasibility under the capacity, "
                "or the minimal peak without one",
                Capabilities(exact=True), "allocator.core.options:CPSATOptions",
                work_limit=WorkLimit("deterministic_time", CPSAT_LIMIT, shared=True)),
    MethodEntry("mip", "allocator.methods.exact:mip",
                "the big-M ILP of TelaMalloc Fig. 5 (§3.2) through pywraplp (SCIP or HiGHS): feasibility under "
                "the capacity, or the minimal peak without one",
                Capabilities(exact=True), "allocator.core.options:MIPOptions"),
    MethodEntry("telamalloc", "allocator.methods.telamalloc:telamalloc",
                "search with per-step block selection (longest, largest, largest area), lowest valid position "
                "from propagation, contention phases and smart backtracking (TelaMalloc, Maas et al. ASPLOS'23 "
                "§4-5); without a capacity, bisects the peak",
                Capabilities(anytime="allocator.methods.telamalloc:telamalloc_anytime"),
                "allocator.methods.telamalloc:TelaMallocOptions"),
    MethodEntry("minimalloc", "allocator.methods.minimalloc:minimalloc",
                "exact search over canonical solutions with section inference, dominance and dynamic "
                "decomposition (MiniMalloc, Moffitt ASPLOS'23 §5-7)",
                Capabilities(exact=True, needs_capacity=True,
                             anytime="allocator.methods.minimalloc:minimalloc_minimize",
                             node_limit=True),
                "allocator.methods.minimalloc:MiniMallocOptions",
                work_limit=WorkLimit("node_limit", NODE_LIMIT, shared=True), roles=Roles(exact=True)),
    MethodEntry("auto", "allocator.search.portfolio:auto",
                "portfolio: best-fit, greedy-by-size, load-best-fit until one fits the capacity, then the exact "
                "minimalloc search with the time left; without a capacity the best heuristic; minimising, the best "
                "heuristic, then minimalloc's bisection",
                Capabilities(exact=True, anytime="allocator.search.portfolio:auto_minimize", node_limit=True),
                "allocator.methods.minimalloc:MiniMallocOptions",
                work_limit=WorkLimit("node_limit", NODE_LIMIT, shared=True)),
    MethodEntry("idealloc", "allocator.methods.idealloc:idealloc",
                "boxing with random point selection, unboxing, tightening down and up in turn, repeated with new "
                "random draws keeping the lowest peak (Buchsbaum et al. STOC'03 as in CONVOLVE D5.5 §4)",
                options="allocator.core.options:IdeallocOptions",
                work_limit=WorkLimit("runs", IDEALLOC_RUNS, shared=False)),
    MethodEntry("telamalloc-learned", "allocator.methods.telamalloc_learned:telamalloc_learned",
                "telamalloc whose major backtracks jump where a gradient-boosted tree model trained on an exact "
                "oracle's labels says, when its score clears a threshold (TelaMalloc, Maas et al. ASPLOS'23 §6, "
                "§7.3); without a capacity, bisects the peak as telamalloc does",
                Capabilities(anytime="allocator.methods.telamalloc_learned:learned_anytime"),
                "allocator.methods.telamalloc_learned:LearnedOptions"),
)

METHODS: dict[str, MethodEntry] = {entry.name: entry for entry in BUILT_IN}


def _ranked(place: Callable[[Roles], int | None]) -> tuple[str, ...]:
    """The methods that have a place in one order (``place`` reads it from their ``Roles``), in that order."""
    placed = [(rank, name) for name, entry in METHODS.items() if (rank := place(entry.roles)) is not None]
    return tuple(name for _, name in sorted(placed))


def _the_one(chosen: Callable[[Roles], bool], role: str) -> str:
    """The one method whose ``Roles`` ``chosen`` picks; ``LookupError`` naming ``role`` unless exactly one."""
    names = [name for name, entry in METHODS.items() if chosen(entry.roles)]
    if len(names) != 1:
        raise LookupError(f"the method table declares {len(names)} methods as {role} ({', '.join(names)}); one must be")
    return names[0]


def fit_stages() -> tuple[str, ...]:
    """``auto``'s stages under a capacity, in order: the heuristics (``Roles.fit``), tried in turn
    until one fits, then the exact search (``Roles.exact``) with the time they left; ``auto``'s
    ``stats["stage"]`` is an index into it. The heuristics answer in milliseconds on the
    challenging suite, so the exact stage gets nearly all of the time when they miss
    (``docs/results/allocators.md``, "auto against its members").

    >>> fit_stages()
    ('best-fit', 'greedy-by-size', 'load-best-fit', 'minimalloc')
    """
    return (*_ranked(lambda roles: roles.fit), _the_one(lambda roles: roles.exact, "auto's exact stage"))


def minimize_stages() -> tuple[str, ...]:
    """The heuristics ``auto``'s minimisation runs first, in order (``Roles.minimize``), each with
    what is left of the whole time. On large traces each takes seconds and under a short
    timeout only one or two finish, so the one with the lowest peak on most large traces goes
    first: load-best-fit (the lowest of the three on three of the four), then greedy-by-size (the
    lowest on the fourth, pangu_2.6B), then best-fit, never the lowest of them there
    (``docs/results/allocators.md``, "auto against its members").

    >>> minimize_stages()
    ('load-best-fit', 'greedy-by-size', 'best-fit')
    """
    return _ranked(lambda roles: roles.minimize)


def starting_heuristics() -> tuple[str, ...]:
    """The heuristics of an anytime search's first incumbent (``minimalloc``'s, ``telamalloc``'s,
    ``auto``'s after its own), in order (``Roles.start``); they share the first third of the time
    and stop once one reaches the lower bound (``Progress.run_heuristics``).

    greedy-by-size goes first: it is among the cheapest, and of those the lowest peak on random
    instances too large for a second heuristic to finish in the time, and on pangu_2.6B. The
    row-by-row skyline of telamalloc-heuristic follows: it costs about as much as a greedy
    placement and has the lowest peak of the five on the large traces and the challenging
    suite. Then load-best-fit, best-fit and first-fit (``docs/results/allocators.md``: "Large
    real traces", "Minimising the peak", "Time limits").

    >>> starting_heuristics()
    ('greedy-by-size', 'telamalloc-heuristic', 'load-best-fit', 'best-fit', 'first-fit')
    """
    return _ranked(lambda roles: roles.start)


def fallback_heuristic() -> str:
    """The heuristic that places the buffers when no starting heuristic did in its time, and that
    ``minimize`` runs first as insurance before a method without an anytime routine
    (``Roles.fallback``): the first starting heuristic, for the same reasons.

    >>> fallback_heuristic()
    'greedy-by-size'
    """
    return _the_one(lambda roles: roles.fallback, "the fallback heuristic")


def register(name: str, description: str, *, exact: bool = False, needs_capacity: bool = False,
             anytime: AnytimeFunction | None = None, node_limit: bool = False, options: type = NoOptions,
             work_limit: WorkLimit | None = None) -> Callable[[MethodFunction], MethodFunction]:
    """Decorator adding a user's method to ``METHODS`` under ``name``, with its ``Capabilities``
    (keyword arguments of the same names; a heuristic declares none) and its options record
    (a dataclass; ``NoOptions`` by default). ``solve`` calls the decorated function as
    ``function(problem, deadline, options)``, ``options`` an instance of that record whose
    names and types it has checked (``NoOptions()`` for a method without options).

    ``work_limit`` is how the flow bounds the method's work when it places many plans
    (``WorkLimit``: a field of its options record and an amount); without one the flow runs it
    unbounded, which is right for a method that ends by itself (one pass, or a search bounded
    by its own options) and makes a search that runs until its deadline depend on the clock."""
    if node_limit and anytime is None:
        raise ValueError(f"allocator method {name!r}: node_limit is a property of an anytime routine; give one")
    if not (isinstance(options, type) and dataclasses.is_dataclass(options)):
        raise TypeError(f"allocator method {name!r}: options must be a dataclass (the options record), "
                        f"got {options!r}")
    if work_limit is not None:
        if not isinstance(work_limit, WorkLimit):
            raise TypeError(f"allocator method {name!r}: work_limit must be an allocator.WorkLimit, got {work_limit!r}")
        if work_limit.option not in {f.name for f in dataclasses.fields(options)}:
            raise ValueError(f"allocator method {name!r}: work_limit bounds {work_limit.option!r}, which its options "
                             f"record {options.__qualname__} does not have")
    capabilities = Capabilities(exact=exact, needs_capacity=needs_capacity, anytime=anytime, node_limit=node_limit)

    def add(function: MethodFunction) -> MethodFunction:
        if name in METHODS:
            raise ValueError(f"allocator method {name!r} registered twice")
        METHODS[name] = MethodEntry(name, function, description, capabilities, options, work_limit)
        return function

    return add


def check_problem(problem: object, function: str) -> None:
    """Raise ``TypeError`` naming the argument ``problem`` of ``function`` when it is not a ``Problem``."""
    if not isinstance(problem, Problem):
        raise TypeError(f"{function}: argument 'problem' must be an allocator.Problem, got {type(problem).__qualname__}"
                        " (build one with Problem([Buffer(...), ...], capacity) or Problem.from_arrays)")


def method_entry(method: object) -> MethodEntry:
    """``METHODS[method]``; ``TypeError`` when ``method`` is not a string, ``UnknownMethodError`` when unknown."""
    if not isinstance(method, str):
        raise TypeError(f"argument 'method' must be a method name (str), got {type(method).__qualname__}; "
                        f"known: {', '.join(sorted(METHODS))}")
    if method not in METHODS:
        raise UnknownMethodError(f"unknown allocator method {method!r}; known: {', '.join(sorted(METHODS))}")
    return METHODS[method]


#: the statuses a method may return (``Status``)
STATUSES: tuple[str, ...] = typing.get_args(Status)

#: what a method returns, for the errors that name it
_OUTPUT = "allocator.core.registry.MethodOutput(status, offsets, reason, stats)"


def check_output(method: str, out: object) -> None:
    """Raise when ``out``, what ``method`` returned, is not a ``MethodOutput`` of the documented shape.

    ``TypeError`` for the wrong type or a field of the wrong type, ``InvalidSolutionError`` for a
    status outside ``Status``: like an invalid placement, a bug in the method. A wrong value
    passed on would surface later, far from its cause (an ``AttributeError`` inside ``solve``,
    a status no caller tests for), so the method is named here. The offsets' values are checked
    by the validator (``check_offset_types`` words a wrong type when it fails), which costs
    nothing more on the placements that pass.

    >>> check_output("mine", {"status": "solved"})
    Traceback (most recent call last):
    ...
    TypeError: method 'mine' returned a dict; a method returns allocator.core.registry.MethodOutput(status, \
offsets, reason, stats)
    """
    if not isinstance(out, MethodOutput):
        raise TypeError(f"method {method!r} returned {_a(type(out).__qualname__)}; a method returns {_OUTPUT}")
    if not isinstance(out.status, str) or out.status not in STATUSES:
        raise InvalidSolutionError(f"method {method!r} returned status {out.status!r}; a status is one of "
                                   f"{', '.join(STATUSES)}")
    if out.offsets is not None and not isinstance(out.offsets, Mapping):
        raise TypeError(f"method {method!r} returned offsets of type {type(out.offsets).__qualname__}; offsets are "
                        "None or a mapping of buffer id -> int")
    if not isinstance(out.stats, Mapping):
        raise TypeError(f"method {method!r} returned stats of type {type(out.stats).__qualname__}; stats are a "
                        "mapping of name -> number")
    if not isinstance(out.reason, str):
        raise TypeError(f"method {method!r} returned reason {out.reason!r}; a reason is a string")


def check_offset_types(method: str, offsets: Mapping[Any, Any]) -> None:
    """Raise ``TypeError`` naming ``method`` and the buffer when an offset is not an ``int`` (a
    numpy integer, a float, a string, a bool); return quietly otherwise."""
    for bid, value in offsets.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"method {method!r} returned offset {value!r} ({type(value).__qualname__}) for buffer "
                            f"{bid!r}; offsets are Python ints (numpy's: convert with int() or .tolist())")


def _a(noun: str) -> str:
    """``noun`` with its indefinite article: ``a dict``, ``an int``."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"




def solve(problem: Problem, method: str = DEFAULT_METHOD, timeout: float | None = None, options: object = None,
          **fields: Any) -> AllocationResult:
    """Place every buffer of ``problem`` with ``method``; the result is validated.

    Parameters
    ----------
    problem : a ``Problem``: the buffers and the capacity (``None`` capacity: place without a
        limit and report the peak).
    method : a name in ``METHODS`` (``accelsim alloc --methods`` lists them); ``DEFAULT_METHOD``,
        ``"auto"``: the greedy heuristics, which answer in milliseconds when one fits, then the
        exact search, which proves the capacity infeasible or finds a placement. The exact stage
        has no budget of its own: bound it in work with ``node_limit=N`` (the same answer on every
        machine) or in seconds with ``timeout``.
    timeout : seconds, or ``None`` for no limit. A method that runs out of time returns
        status ``"timeout"`` with the best complete placement it has, if any.
    options : the method's options record, an instance of ``METHODS[method].options``
        (``MiniMallocOptions`` for ``minimalloc``, ``NoOptions`` for ``greedy-by-size``, ...);
        None: its defaults.
    fields : shorthand for fields of that record (``solve(p, "auto", node_limit=100_000)``,
        ``solve(p, "hill-climb", seed=3)``); with ``options`` too, they replace its fields.
        ``describe_options(method)`` lists them.

    Raises ``TypeError`` when ``problem`` is not a ``Problem``, ``method`` not a string,
    ``options`` not the method's record or ``timeout`` not a number; ``InvalidOptionError``
    (a ``ValueError``) for an option the method does not have or a value of the wrong type,
    naming the method's options with their types; ``UnknownMethodError`` for an unknown
    method; ``InvalidProblemError`` for a timeout that is not positive, a problem without a
    capacity for a method that ``needs_capacity`` (or input a method cannot represent, e.g.
    ``mip`` beyond 2**52 units) and an option value the method refuses (a negative seed,
    ...). A method that breaks its contract raises (a bug in that method, never hidden):
    ``TypeError`` when it returns something other than a ``MethodOutput`` or fields of the
    wrong type (``offsets`` not None or a mapping of buffer id -> ``int``, ``stats`` not a
    mapping, ``reason`` not a string), and ``InvalidSolutionError`` when it returns a status
    outside ``Status`` (solved, infeasible, failed, timeout), ``"solved"`` without a placement,
    or a placement that breaks a constraint.

    The result's ``stats["lower_bound"]`` is LOAD (``validate.lower_bound``), computed once
    here for every status: a caller that wants LOAD reads it there instead of computing it
    again.

    >>> from allocator.core.problem import Buffer
    >>> p = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4)], capacity=8)
    >>> r = solve(p, method="greedy-by-size")
    >>> r.status, r.peak, sorted(r.solution.offsets.values())
    ('solved', 8, [0, 4])
    >>> solve(p.with_capacity(7)).reason
    'LOAD 8 exceeds capacity 7'
    >>> r.stats["lower_bound"]
    8
    >>> solve(p, "hill-climb", seed=3, iterations=10).status
    'solved'
    >>> solve(p, "hill-climb", sed=3)
    Traceback (most recent call last):
    ...
    allocator.core.registry.InvalidOptionError: method 'hill-climb' has no option 'sed'; hill-climb's options ...
    """
    check_problem(problem, "solve")
    entry = method_entry(method)
    if timeout is not None and (not isinstance(timeout, numbers.Real) or isinstance(timeout, bool)):
        raise TypeError(f"timeout must be seconds (a number) or None, got {timeout!r}")
    if timeout is not None and not timeout > 0:
        raise InvalidProblemError(f"timeout must be positive seconds or None, got {timeout!r}")
    record = entry.record(options, fields)
    if problem.capacity is None and entry.capabilities.needs_capacity:
        raise InvalidProblemError(f"{method} searches for a placement under a capacity; give the problem one "
                                  "(allocator.minimize finds the lowest peak)")
    function = entry.function  # imports the method's module (numba, its kernels) before the clock starts
    began = work_clock()
    load = lower_bound(problem)
    if problem.capacity is not None and load > problem.capacity:
        return AllocationResult(
            method, "infeasible", None, None, f"LOAD {load} exceeds capacity {problem.capacity}",
            {"seconds": work_clock() - began, "lower_bound": load},
        )
    deadline = None if timeout is None else began + timeout
    out = function(problem, deadline, record)
    seconds = work_clock() - began
    check_output(method, out)
    solution = None if out.offsets is None else Solution(dict(out.offsets))
    peak = None
    if solution is not None:
        # "solved" must fit the capacity; other statuses may carry a placement that does not.
        checked = problem if out.status == "solved" else problem.with_capacity(None)
        report = validate(checked, solution)
        if not report.ok:
            check_offset_types(method, solution.offsets)
            raise InvalidSolutionError(f"method {method!r} returned an invalid placement: {report}")
        peak = solution.peak(problem)
    elif out.status == "solved":
        raise InvalidSolutionError(f"method {method!r} reported 'solved' without a placement")
    stats = {"seconds": seconds, "lower_bound": load, **out.stats}
    return AllocationResult(method, out.status, solution, peak, out.reason, stats)

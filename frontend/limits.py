"""How large a graph a run accepts: the operator limit and the memory a run needs per operator.

A module of its own that imports nothing heavy, so ``accelsim.pipeline`` and the command line
read ``MAX_OPERATORS`` without networkx. ``frontend.load_graph`` counts a file's operators
before parsing it and calls ``check_operator_count``; the pipeline and ``size`` call it again
on the exact count.

Why a limit: a run's memory grows with its operators, and on graphs of a million
operators it takes minutes and many GiB, so there is a limit (``MAX_OPERATORS``, raised with
``--max-operators`` or ``RunOptions.max_operators``) and, whatever the limit, a graph whose run
would need more memory than the machine has available is refused up front, with a line that
says what it would need.
"""

from __future__ import annotations

#: the most operators a graph may have before a run refuses it (``--max-operators`` raises it).
#: A run's memory grows with the operators (``RUN_BYTES_PER_OPERATOR``): at this limit about 4 GiB
MAX_OPERATORS = 250_000
#: memory a run takes per operator, with a margin: 50,000- and 100,000-operator chains ran
#: ``accelsim run`` in 0.92 and 1.65 GB (maximum resident set), about 14.6 KiB per operator
#: on top of 0.2 GB (/usr/bin/time -f %M on `accelsim run CHAIN.json --no-plots`, chains from
#: ``frontend.synthetic.chain``)
RUN_BYTES_PER_OPERATOR = 16 * 1024
RUN_BASE_BYTES = 256 * 2**20


class GraphTooLargeError(ValueError):
    """A graph with more operators than a run accepts (``check_operator_count``)."""


def available_memory() -> int | None:
    """Bytes of memory the machine can give a new process now (``MemAvailable`` of
    ``/proc/meminfo``), or None where that is not known."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def check_operator_count(count: int, what: str, limit: int | None = MAX_OPERATORS, approximate: bool = False) -> None:
    """Refuse a graph of ``count`` operators that a run could not hold or that passes ``limit``.

    Raises ``GraphTooLargeError`` with one line naming ``what`` (a file or graph), the count,
    the limit and the flag that raises it (``--max-operators``), and the memory a run would
    need (``RUN_BASE_BYTES`` + ``RUN_BYTES_PER_OPERATOR`` per operator) beside what the machine
    has available. A graph whose run needs more memory than is available is refused whatever
    the limit (``limit=None``: that check alone). ``approximate`` says the count is an estimate
    (from the file, before it is parsed).
    """
    need = RUN_BASE_BYTES + RUN_BYTES_PER_OPERATOR * count
    about = "about " if approximate else ""
    available = available_memory()
    memory = (f"a run needs about {_gib(need)} of memory ({RUN_BYTES_PER_OPERATOR // 1024} KiB per operator)"
              + (f", {_gib(available)} is available" if available is not None else ""))
    if limit is not None and count > limit:
        raise GraphTooLargeError(f"{what}: {about}{count:,} operators, more than the limit of {limit:,} "
                                 f"(--max-operators N raises it): {memory}")
    if available is not None and need > available:
        raise GraphTooLargeError(f"{what}: {about}{count:,} operators: {memory}; more than this machine has")

"""The flow's own errors, in a module that imports nothing, so that the command line can catch
them without importing the pipeline (``accelsim alloc`` never needs it).

``accelsim.pipeline`` and the ``accelsim`` package re-export them: ``accelsim.CompileError``
is this class.
"""


class CompileError(Exception):
    """The flow could not produce a correct program for valid input (exit status 1 in the CLI)."""


class AllocationFailedError(CompileError):
    """The chosen allocator could not place the schedule's residencies in the capacity."""


class InvalidPlacementError(CompileError):
    """The offsets break a constraint of the allocation problem (overlap, capacity, alignment)."""


def one_line(exc: BaseException, limit: int | None = None) -> str:
    """``exc``'s message on one line (whitespace runs as one space), at most ``limit`` characters
    when given (a sweep row's status: ``STATUS_CHARS``), or its type's name when it has none: what
    an ``error:`` line or a sweep row's status shows.

    >>> one_line(ValueError("bad\\n  value"))
    'bad value'
    """
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."

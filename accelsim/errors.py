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

"""The command line's exit statuses and its Ctrl-C handling, shared by every command module
(``accelsim.cli`` re-exports them; they live here so that a command module need not import the
package that assembles it)."""

from __future__ import annotations

# the method of ``accelsim alloc`` when ``--method`` is not given, and the flow's default allocator:
# the allocator's one definition (its module imports nothing), re-exported for the command modules
from allocator.core.defaults import DEFAULT_METHOD  # noqa: F401  (re-exported)

#: exit status of ``run`` and ``size`` when a wall-clock limit ended a search (see ``accelsim.cli``'s docstring)
EXIT_NOT_DETERMINISTIC = 3

#: what a Ctrl-C can surface as: KeyboardInterrupt, or another error it caused inside a library
Exception_or_interrupt = (KeyboardInterrupt, Exception)
#: set by ``watch_ctrl_c``'s handler when SIGINT arrives during a command
_ctrl_c_seen = False


def watch_ctrl_c() -> None:
    """Note every SIGINT (Ctrl-C) before raising KeyboardInterrupt as Python does.

    A SIGINT that arrives while numba's dispatcher runs a Python callback (choosing the compiled
    version of a kernel, loading cached code) surfaces as that callback's error: a SystemError
    whose cause is the KeyboardInterrupt, or a TypeError (``_c_sort expected 1 argument, got
    0``) with no trace of it. With the flag, any error that ends a command after a Ctrl-C is
    the Ctrl-C's (exit 130, what was found so far kept). Only when SIGINT has Python's own
    handler (not ignored, as in a background job), and only in the main thread."""
    import signal
    import threading

    global _ctrl_c_seen
    _ctrl_c_seen = False
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return

    def handler(signum: int, frame: object) -> None:
        global _ctrl_c_seen
        _ctrl_c_seen = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)


def from_ctrl_c(exc: BaseException) -> bool:
    """``exc`` is Ctrl-C's KeyboardInterrupt, or an error it caused: one raised after a SIGINT
    arrived (``watch_ctrl_c``), or one whose cause or context is the KeyboardInterrupt."""
    if _ctrl_c_seen:
        return True
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and not any(seen is e for e in chain):  # a chain can loop
        if isinstance(seen, KeyboardInterrupt):
            return True
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return False

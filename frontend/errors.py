"""The frontend's errors and warnings, in a module that imports nothing: below both
``frontend.trace`` (which raises ``TraceError`` and re-exports it as ``frontend.TraceError``)
and ``frontend.fx_capture`` / ``frontend.fx_convert`` (the torch.fx capture and converter,
which raise it too), so that neither imports the other back; and light enough for the command
line to name ``CacheEntryWarning`` without loading the trace cache (and networkx)."""


class TraceError(ValueError):
    """The model cannot be traced; the message names the model and torch.fx's reason."""


class SymbolicTraceError(TraceError):
    """torch.fx symbolic tracing itself failed (``frontend.fx_capture.symbolic_trace``), as opposed
    to the model failing on its example inputs; ``frontend.trace(method="auto")`` then tries
    torch.export."""


class CacheEntryWarning(UserWarning):
    """A trace cache entry that was not used or could not be saved; the model was traced again
    (``frontend.cache``).

    The message is one line: ``trace cache entry PATH: why; ...``. The answer is the one
    without a cache, so this is a warning, never an error.
    """


class TracerFallbackWarning(UserWarning):
    """torch.fx could not trace the model, so ``frontend.trace(method="auto")`` traced it with
    torch.export instead. The message is one line: the model, why torch.fx failed, and that
    torch.export ran (slower: it executes the model's Python on fake tensors); when torch.export
    fails too there is no warning, the ``TraceError`` gives both reasons. The command line
    prints it as one ``note:`` line; ``trace(method="export")`` skips torch.fx and the note."""

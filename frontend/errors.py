"""The tracing error, in a module that imports nothing, below both ``frontend.trace`` (which
raises it and re-exports it as ``frontend.TraceError``) and ``frontend.fx_capture`` /
``frontend.fx_convert`` (the torch.fx capture and converter, which raise it too), so that
neither imports the other back."""


class TraceError(ValueError):
    """The model cannot be traced; the message names the model and torch.fx's reason."""


class SymbolicTraceError(TraceError):
    """torch.fx symbolic tracing itself failed (``frontend.fx_capture.symbolic_trace``), as opposed
    to the model failing on its example inputs; ``frontend.trace(method="auto")`` then tries
    torch.export."""

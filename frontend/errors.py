"""The tracing error, in a module that imports nothing, below both ``frontend.trace`` (which
raises it and re-exports it as ``frontend.TraceError``) and ``frontend._fx`` (the torch.fx
converter, which raises it too), so that neither imports the other back."""


class TraceError(ValueError):
    """The model cannot be traced; the message names the model and torch.fx's reason."""

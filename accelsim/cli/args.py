"""What the commands' parsers share: the one-line-error parser and the argparse types and
checks of options that more than one command takes."""

from __future__ import annotations

import argparse
import math
import re
from typing import NoReturn

from accelsim.units import SEPARATOR, parse_bytes


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``error: accelsim run: argument --timeout: ...`` and exit 2.

    The stock parser prints the whole usage block before the message; the README's contract is
    one line naming the item (``accelsim COMMAND --help`` shows the usage).
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message}\n")


#: the largest integer an option takes: torch's sizes, numpy's and the kernels' counts are int64
MAX_INT = 2**63 - 1


def positive_seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds (``0``, ``-1``, ``nan``, ``inf`` refused;
    ASCII digits only, without ``_`` separators: ``float`` alone would read ``"５"`` as 5 and ``"1_0"``
    as 10)."""
    if SEPARATOR in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds: write it in ASCII digits, without "
                                         f"{SEPARATOR!r} separators")
    try:
        if not text.isascii():
            raise ValueError(text)
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive, finite number of seconds")
    return value


def positive_int(text: str) -> int:
    """An argparse type: a positive integer in ASCII digits (no ``_`` separators: ``int`` alone reads
    ``"1_0"`` as 10)."""
    if not re.fullmatch(r"[0-9]+", text.strip(), re.ASCII) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    if int(text) > MAX_INT:
        raise argparse.ArgumentTypeError(f"{text!r} is more than 2^63 - 1, the largest count an int64 holds")
    return int(text)


def count(text: str) -> int:
    """An argparse type: a non-negative integer in ASCII digits."""
    if not re.fullmatch(r"[0-9]+", text.strip(), re.ASCII):
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative integer")
    if int(text) > MAX_INT:
        raise argparse.ArgumentTypeError(f"{text!r} is more than 2^63 - 1, the largest count an int64 holds")
    return int(text)


_SHAPE = re.compile(r"\s*[0-9]+(?:\s*[,x]\s*[0-9]+)*\s*", re.ASCII)


def parse_shape(text: str) -> tuple[int, ...]:
    """``--input-shape``: positive ASCII integers separated by ``,`` (or ``x``), nothing else.

    >>> parse_shape("1,3,224,224"), parse_shape("1x3x299x299")
    ((1, 3, 224, 224), (1, 3, 299, 299))
    >>> parse_shape("1,3,x")
    Traceback (most recent call last):
    ...
    ValueError: --input-shape '1,3,x' is not a list of positive integers such as 1,3,224,224
    """
    if not _SHAPE.fullmatch(text):
        raise ValueError(f"--input-shape {text!r} is not a list of positive integers such as 1,3,224,224")
    shape = tuple(int(part) for part in re.split(r"[,x]", text.replace(" ", "")))
    if any(d <= 0 for d in shape):
        raise ValueError(f"--input-shape {text!r}: every dimension must be positive, e.g. 1,3,224,224")
    if any(d > MAX_INT for d in shape):
        raise ValueError(f"--input-shape {text!r}: a dimension is more than 2^63 - 1, the most a tensor's int64 "
                         "sizes hold")
    return shape


def parse_shapes(texts: list[str] | None) -> tuple[int, ...] | tuple[tuple[int, ...], ...] | None:
    """Repeated ``--input-shape``: ``None`` when not given, one shape when given once (a zoo
    model with two inputs, RAFT, gives it to both), else one shape per input, in order.

    >>> parse_shapes(["1,3,64,64"]), parse_shapes(["1,3,8,8", "1,3,8,8"]), parse_shapes(None)
    ((1, 3, 64, 64), ((1, 3, 8, 8), (1, 3, 8, 8)), None)
    """
    if not texts:
        return None
    shapes = tuple(parse_shape(text) for text in texts)
    return shapes[0] if len(shapes) == 1 else shapes


_OPTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


def parse_model_options(texts: list[str] | None) -> dict[str, int]:
    """Repeated ``--model-option KEY=VALUE``: a name and a non-negative integer in ASCII digits,
    each key once. Whether the model takes the option, and at that value (most options are at
    least 1; an llm's ``past`` may be 0), is checked with the model (``accelsim.pipeline.check_model``).

    >>> parse_model_options(["num_flow_updates=4"])
    {'num_flow_updates': 4}
    >>> parse_model_options(["num_flow_updates=four"])  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: --model-option 'num_flow_updates=four': the value must be a non-negative integer,
    e.g. num_flow_updates=4
    """
    chosen: dict[str, int] = {}
    for text in texts or []:
        key, sep, value = text.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not _OPTION_NAME.fullmatch(key):
            raise ValueError(f"--model-option {text!r}: expected KEY=VALUE, e.g. num_flow_updates=4")
        if not re.fullmatch(r"[0-9]+", value, re.ASCII):  # the zoo says which options may be 0
            raise ValueError(f"--model-option {text!r}: the value must be a non-negative integer, e.g. {key}=4")
        if key in chosen:
            raise ValueError(f"--model-option {key} is given twice")
        chosen[key] = int(value)
    return chosen


def add_model_input_arguments(parser: argparse.ArgumentParser) -> None:
    """``--input-shape`` (repeatable), ``--batch``, ``--trace-method``, ``--host`` (repeatable) and
    ``--model-option`` (repeatable): how a zoo or user model is built and traced; ``run``, ``size``
    and ``sweep`` take them alike."""
    parser.add_argument("--input-shape", action="append", metavar="SHAPE",
                        help="input shape, e.g. 1,3,224,224 (default: the zoo's, or the user model's own example "
                             "inputs); repeat it for a model of several inputs, one per input in order (one shape "
                             "alone gives RAFT's two frames that shape); required for a user model whose function "
                             "returns no example inputs")
    parser.add_argument("--batch", type=positive_int, metavar="N",
                        help="batch size: replaces dimension 0 of every input of a zoo or user model (the "
                             "transformer's batch dimension, its second)")
    parser.add_argument("--trace-method", default="auto", choices=("auto", "fx", "export"),
                        help="the tracer: auto (default: torch.fx, then torch.export where torch.fx cannot trace, "
                             "with a note saying why), fx, or export (slower; executes the model on fake tensors)")
    parser.add_argument("--host", action="append", metavar="NAME", default=[],
                        help="run this module (qualified name) or operator kind on the host, not the accelerator "
                             "(repeatable; needs torch.fx): it leaves the graph, and what crosses is DRAM traffic")
    parser.add_argument("--model-option", action="append", metavar="KEY=VALUE",
                        help="a zoo model family's build option (repeatable): num_flow_updates=N for "
                             "optical_flow.* (RAFT's refinements, default 12), region_batch=N for the two-stage "
                             "detectors (regions per batch of their region heads, default 50), past=N for "
                             "llm.* decoders (tokens already in the KV cache: --input-shape 1,1 --model-option "
                             "past=511 is one decode step at 512 positions; default 0, a prefill); refused where "
                             "it does not apply")


def parse_budget(text: str) -> int | str:
    """``MR``, ``MH``, ``MP`` or a byte count such as ``2MiB``."""
    if text.upper() in ("MR", "MH", "MP"):
        return text.upper()
    return parse_bytes(text, "--budget (MR, MH, MP or bytes)")


def check_named_cache(path: str | None) -> None:
    """A ``--cache`` folder the user named is input: one that cannot be used (a file, a folder
    that cannot be created or written) is bad input, exit 2, refused before any work or output
    folder. (The default folder is not input: ``run`` goes on without saving when it cannot be
    written.)"""
    if path is None:
        return
    from frontend.cache import CacheDirError, check_cache_dir

    try:
        check_cache_dir(path)
    except CacheDirError as exc:
        raise ValueError(f"--cache: {exc}") from None


def names(text: str, option: str, noun: str, hint: str = "") -> list[str]:
    """A comma-separated list of ``noun`` names, refusing empty ones and repeats (one line naming ``option``)."""
    found = [name.strip() for name in text.split(",")]
    if not all(found):
        raise ValueError(f"{option} {text!r}: empty {noun} name (give a comma-separated list of names"
                         + (f", {hint})" if hint else ")"))
    if len(set(found)) != len(found):
        raise ValueError(f"{option} {text!r} names a{'n' if noun[0] in 'aeiou' else ''} {noun} twice")
    return found

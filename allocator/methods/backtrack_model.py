"""The learned backtracking model of ``telamalloc-learned`` as flat arrays, scored in numba (TelaMalloc §6.4–6.5).

TelaMalloc §6.5 trains gradient-boosted trees (Yggdrasil Decision Forests) offline and bakes
the model into the allocator, where it never changes. We do the same: ``studies/train_backtracking.py``
trains a ydf regression forest and ``export`` flattens it into numpy arrays, saved as
``allocator/methods/backtrack_model.npz`` (shipped in the package). At run time nothing of ydf is
needed: ``load`` reads the arrays into a ``BacktrackModel`` (a typed record numba compiles as a
struct) and the search calls ``score`` on all candidate targets of one major backtrack at
once, from compiled code (the paper's batched inference, without a Python round trip).

The forest is stored node by node: a node with ``feature >= 0`` sends a row whose feature
value is ``>= threshold`` to ``positive`` and the others to ``negative`` (ydf's only condition
for numerical features, ``NumericalHigherThanCondition``); a node with ``feature == -1`` is a
leaf holding ``value``. The prediction is ``bias`` (ydf's initial prediction) plus one leaf
value per tree (regression: identity link). Thresholds are float32 and feature values are
rounded to float32 before the comparison, as ydf does, so the scores match ydf's ``predict``.
Our features are never missing, so ydf's missing-value branch is not stored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from allocator.core import kernel_cache  # noqa: F401  (numba's cache directory, before any kernel is decorated)
from allocator.core.problem import InvalidProblemError

#: the features of one candidate target, in column order (TelaMalloc §6.4; the last two are ours:
#: the level backtracked from and the distance, which trees cannot form from two columns)
FEATURES = ("size", "lifetime", "contention", "level", "reason_count", "backtracks_to", "subtree_backtracks",
            "same_phase", "total_backtracks", "depth", "distance")
N_FEATURES = len(FEATURES)
#: the model shipped with the package
DEFAULT_PATH = Path(__file__).with_name("backtrack_model.npz")


class BacktrackModel(NamedTuple):
    """A gradient-boosted regression forest as flat arrays (one entry per node, trees back to back)."""

    feature: np.ndarray  #: int64 feature column tested at the node; -1 at a leaf
    threshold: np.ndarray  #: float32: a row goes to ``positive`` when its value >= threshold
    positive: np.ndarray  #: int64 child for rows meeting the condition
    negative: np.ndarray  #: int64 child for the others
    value: np.ndarray  #: float64 leaf value (0 at inner nodes)
    roots: np.ndarray  #: int64 root node of each tree
    bias: float  #: the initial prediction, added to every score


def constant(value: float) -> BacktrackModel:
    """A model of no trees that scores every candidate ``value`` (for tests and ablations).

    >>> float(score(constant(-1.0), np.zeros((2, N_FEATURES)), 2)[1])
    -1.0
    """
    empty_i = np.zeros(0, np.int64)
    return BacktrackModel(empty_i, np.zeros(0, np.float32), empty_i, empty_i, np.zeros(0, np.float64), empty_i,
                          float(value))


def _checked(arrays: dict[str, np.ndarray], source: str) -> BacktrackModel:
    """The arrays as a ``BacktrackModel``, after checking that every tree walk ends at a leaf."""
    names = ("feature", "threshold", "positive", "negative", "value", "roots", "bias")
    missing = [name for name in names if name not in arrays]
    if missing:
        raise InvalidProblemError(f"backtracking model {source}: missing array(s) {', '.join(missing)}")
    model = BacktrackModel(np.asarray(arrays["feature"], np.int64), np.asarray(arrays["threshold"], np.float32),
                           np.asarray(arrays["positive"], np.int64), np.asarray(arrays["negative"], np.int64),
                           np.asarray(arrays["value"], np.float64), np.asarray(arrays["roots"], np.int64),
                           float(np.asarray(arrays["bias"]).reshape(-1)[0]))
    nodes = model.feature.shape[0]
    if any(getattr(model, name).shape != (nodes,) for name in ("threshold", "positive", "negative", "value")):
        raise InvalidProblemError(f"backtracking model {source}: node arrays of different lengths")
    inner = model.feature >= 0
    if (model.feature >= N_FEATURES).any() or (model.feature < -1).any():
        raise InvalidProblemError(f"backtracking model {source}: a node tests a feature outside 0..{N_FEATURES - 1}")
    for name in ("positive", "negative"):
        child = getattr(model, name)[inner]
        # children come after their parent, so every walk ends (no cycles)
        if ((child <= np.flatnonzero(inner)) | (child >= nodes)).any():
            raise InvalidProblemError(f"backtracking model {source}: a node's {name} child is out of order")
    if ((model.roots < 0) | (model.roots >= nodes)).any():
        raise InvalidProblemError(f"backtracking model {source}: a tree root is outside the node arrays")
    return model


def load(path: str | Path = DEFAULT_PATH) -> BacktrackModel:
    """Read a model saved by ``save``; a malformed file raises ``InvalidProblemError`` naming it."""
    try:
        with np.load(path) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError) as error:
        raise InvalidProblemError(f"cannot read backtracking model {path}: {error}") from error
    return _checked(arrays, str(path))


def save(model: BacktrackModel, path: str | Path) -> None:
    """Write ``model`` as an uncompressed ``.npz`` (what ``load`` reads)."""
    np.savez(path, feature=model.feature, threshold=model.threshold, positive=model.positive,
             negative=model.negative, value=model.value, roots=model.roots, bias=np.array([model.bias]))


def export(forest: Any) -> BacktrackModel:
    """Flatten a trained ydf gradient-boosted regression model whose input features are ``FEATURES``.

    Nodes are numbered in depth-first order (a child after its parent). Only numerical
    ``>=`` conditions are accepted (what ydf grows on numerical columns); anything else
    raises, so an unexpected model cannot be exported wrongly.
    """
    from ydf.model.tree import condition as conditions  # ydf is a training-time dependency only
    from ydf.model.tree import node as nodes

    columns = [column.name for column in forest.data_spec().columns]
    initial = np.asarray(forest.initial_predictions(), np.float64).reshape(-1)
    if initial.shape[0] != 1:
        raise InvalidProblemError("backtracking model: expected a single-output regression forest")
    feature: list[int] = []
    threshold: list[float] = []
    positive: list[int] = []
    negative: list[int] = []
    value: list[float] = []
    roots: list[int] = []

    def add(node: Any) -> int:
        index = len(feature)
        feature.append(-1)
        threshold.append(0.0)
        positive.append(-1)
        negative.append(-1)
        value.append(0.0)
        if isinstance(node, nodes.Leaf):
            value[index] = float(node.value.value)
            return index
        condition = node.condition
        if not isinstance(condition, conditions.NumericalHigherThanCondition):
            raise InvalidProblemError(f"backtracking model: unsupported condition {type(condition).__name__}")
        name = columns[condition.attribute]
        if name not in FEATURES:
            raise InvalidProblemError(f"backtracking model: unknown feature {name!r}")
        feature[index] = FEATURES.index(name)
        threshold[index] = float(condition.threshold)
        positive[index] = add(node.pos_child)
        negative[index] = add(node.neg_child)
        return index

    for tree in forest.iter_trees():
        roots.append(add(tree.root))
    arrays: dict[str, np.ndarray] = {
        "feature": np.array(feature, np.int64), "threshold": np.array(threshold, np.float32),
        "positive": np.array(positive, np.int64), "negative": np.array(negative, np.int64),
        "value": np.array(value, np.float64), "roots": np.array(roots, np.int64), "bias": initial[:1]}
    return _checked(arrays, "export")


@njit(cache=True)
def score(model, features, n):  # pragma: no cover - compiled
    """The model's score of each of the first ``n`` rows of ``features`` (a float64 2-d array,
    one row per candidate target, columns as ``FEATURES``); one call scores a whole batch."""
    out = np.full(n, model.bias, np.float64)
    for r in range(n):
        total = 0.0
        for t in range(model.roots.shape[0]):
            node = model.roots[t]
            while model.feature[node] >= 0:
                if np.float32(features[r, model.feature[node]]) >= model.threshold[node]:
                    node = model.positive[node]
                else:
                    node = model.negative[node]
            total += model.value[node]
        out[r] += total
    return out

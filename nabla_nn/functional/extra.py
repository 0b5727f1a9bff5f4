"""More of `torch.nn.functional`: pairwise distances within a batch (`pdist`, re-exported from
`nabla.torch_distances`: torch's top-level name too), Gumbel-softmax sampling, and the
multi-class / multi-label margin losses and the triplet loss with a custom distance.

Like the other losses, these are lazy compositions of nabla ops (gathers by constant or target
indices, masks, clamps), so they differentiate, vmap and compile. `gumbel_softmax` draws its
noise with nabla's random ops, so `nb.manual_seed` makes it reproducible (its samples differ from
PyTorch's, whose generator is another).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.common import dtypes as _dt
from nabla.ops.creation import known_values
from nabla.torch_distances import pairwise_distance, pdist

from ._checks import check_float as _float
from ._checks import number as _number
from .loss import _like, _reduce, _reduction, _tensor

__all__ = [
    "gumbel_softmax",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "pdist",
    "triplet_margin_with_distance_loss",
]


# -- gumbel_softmax --------------------------------------------------------------------------------
def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """A sample of the Gumbel-softmax (concrete) distribution: softmax((logits + g) / tau) along
    `dim`, g ~ Gumbel(0, 1) drawn with nabla's random ops (seeded by `nb.manual_seed`).

    Args:
        logits: unnormalized log-probabilities (any shape, floating point).
        tau: the temperature (positive); smaller is closer to one-hot.
        hard: return exact one-hot vectors (the argmax of the soft sample) whose gradient is the
            soft sample's: `y_hard - y_soft.detach() + y_soft` (straight-through estimator).
        eps: deprecated and unused, as in PyTorch (a warning when changed).
        dim: the dimension of the categories.

    Example:
        >>> y = F.gumbel_softmax(nb.zeros(2, 5), tau=0.5, hard=True)
        >>> nb.sum(y, axis=-1).tolist()
        [1.0, 1.0]
    """
    op = "gumbel_softmax"
    _float(logits, op, "logits")
    t = _number(tau, op, "tau")
    if eps != 1e-10:
        warnings.warn(f"{op}: the `eps` parameter is deprecated and has no effect", stacklevel=2)
    if logits.ndim == 0:
        raise ValueError(f"{op}: logits must have at least 1 dimension (the categories), got a 0-d tensor")
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or not -logits.ndim <= dim < logits.ndim:
        raise ValueError(f"{op}: dim must be an int in [{-logits.ndim}, {logits.ndim - 1}], got {dim!r}")
    axis = int(dim) % logits.ndim
    # Gumbel noise -log(E), E = -log(U) ~ Exp(1); U >= the smallest normal keeps E finite.
    u = nb.clamp(nb.rand_like(logits), min=float(np.finfo(_dt.to_numpy_dtype(logits.dtype)).tiny))
    gumbels = -nb.log(-nb.log(u))
    y_soft = nb.softmax((logits + gumbels) / t, axis=axis)
    if not hard:
        return y_soft
    index = nb.argmax(y_soft, axis=axis, keepdims=True)
    classes = nb.reshape(nb.arange(logits.shape[axis]), [-1 if d == axis else 1 for d in range(logits.ndim)])
    y_hard = nb.cast(nb.eq(classes, index), logits.dtype)
    return y_hard - nb.detach(y_soft) + y_soft


# -- margin losses ---------------------------------------------------------------------------------
def _index_tensor(target: Any, op: str) -> Tensor:
    _tensor(target, op, "target")
    if not _dt.is_integer(target.dtype):
        raise TypeError(f"{op}: target must be an integer tensor of class indices, got dtype {target.dtype.name}")
    return target


def _scores(input: Any, op: str) -> tuple[Tensor, int]:
    """input as (N, C) (a (C,) or 0-d input is one sample) and C, after checking it."""
    _float(input, op)
    if input.ndim > 2 or (input.ndim == 2 and input.shape[1] == 0) or (input.ndim == 1 and input.shape[0] == 0):
        raise ValueError(
            f"{op}: input must be a non-empty (C,) vector or an (N, C) matrix (N may be 0), got shape {input.shape}"
        )
    x = nb.reshape(input, (1, -1)) if input.ndim < 2 else input
    return x, x.shape[1]


def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-class hinge loss: per sample, sum over classes i != y of
    w[y] * max(0, margin - x[y] + x[i]) ** p, divided by the number of classes C.

    Args:
        input: scores (N, C) or (C,).
        target: int class indices in [0, C), shape (N,) (() or (1,) for a (C,) input).
        p: 1 or 2.
        margin: the required gap between the target's score and the others'.
        weight: optional per-class weights (C,), applied by the target's class.
        reduction: "none" | "mean" (over samples) | "sum".
        size_average, reduce: deprecated; set `reduction` instead.

    Example:
        >>> x = nb.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> F.multi_margin_loss(x, nb.tensor([3])).item()  # (0.3 + 0.4 + 0.6) / 4
        0.32499998807907104
    """
    op = "multi_margin_loss"
    red = _reduction(reduction, op, size_average, reduce)
    if isinstance(p, bool) or p not in (1, 2):
        raise ValueError(f"{op}: only p == 1 and p == 2 are supported, got p={p!r}")
    x, c = _scores(input, op)
    _index_tensor(target, op)
    n = x.shape[0]
    if not (target.ndim == 1 and target.shape[0] == n) and not (input.ndim < 2 and target.ndim == 0):
        raise ValueError(
            f"{op}: target must be 1-D with one class index per sample, expected shape ({n},), got "
            f"{target.shape} (input shape {input.shape})"
        )
    data = known_values(target) if target.numel() else None
    if data is not None and (data.min() < 0 or data.max() >= c):
        bad = data[(data < 0) | (data >= c)]
        raise IndexError(f"{op}: target {int(bad.flat[0])} is out of bounds for {c} classes")
    m = _number(margin, op, "margin")
    t = nb.reshape(target, (n, 1))
    x_y = nb.take_along_axis(x, t, 1)
    z = nb.relu(x - x_y + m)  # relu, not clamp: no gradient at z == 0 (PyTorch counts only z > 0)
    h = z if p == 1 else z * z
    others = nb.cast(nb.not_equal(nb.reshape(nb.arange(c), (1, c)), t), x.dtype)
    loss = nb.sum(h * others, axis=1) / float(c)
    if weight is not None:
        _float(weight, op, "weight")
        if weight.ndim != 1:
            raise ValueError(f"{op}: weight must be one-dimensional, got shape {weight.shape}")
        if weight.shape[0] != c:
            raise ValueError(f"{op}: weight must have one entry per class, expected shape ({c},), got {weight.shape}")
        loss = loss * nb.index_select(_like(weight, x), 0, nb.reshape(target, (n,)))
    if input.ndim < 2 and target.ndim == 0:
        loss = nb.reshape(loss, ())
    return _reduce(loss, red)


def multilabel_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-label hinge loss: per sample, sum over its target classes j and the non-target classes
    i of max(0, 1 - (x[j] - x[i])), divided by the number of classes C.

    The target classes of a sample are the entries of its target row before the first -1 (a
    repeated class counts again, as in PyTorch).

    Args:
        input: scores (N, C) or (C,).
        target: int tensor of input's shape, entries in [-1, C): class indices, then -1 padding.
        reduction: "none" | "mean" (over samples) | "sum".
        size_average, reduce: deprecated; set `reduction` instead.

    Example:
        >>> x = nb.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> F.multilabel_margin_loss(x, nb.tensor([[3, 0, -1, 1]])).item()  # targets 3 and 0
        0.8500000238418579
    """
    op = "multilabel_margin_loss"
    red = _reduction(reduction, op, size_average, reduce)
    x, c = _scores(input, op)
    _index_tensor(target, op)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"{op}: target shape {target.shape} must equal input shape {input.shape}")
    data = known_values(target) if target.numel() else None
    if data is not None and (data.min() < -1 or data.max() >= c):
        bad = data[(data < -1) | (data >= c)]
        raise IndexError(f"{op}: target {int(bad.flat[0])} is out of range: entries must lie in [-1, {c})")
    n = x.shape[0]
    t = nb.reshape(target, (n, c))
    # entry k is a target while no -1 came at or before it
    valid = nb.eq(nb.cumsum(nb.cast(nb.eq(t, -1), nb.int64), axis=1), 0)
    safe = nb.where(valid, t, 0)
    classes = nb.reshape(nb.arange(c), (1, 1, c))
    is_target = nb.any(nb.logical_and(nb.unsqueeze(valid, 2), nb.eq(nb.unsqueeze(safe, 2), classes)), axis=1)
    x_t = nb.take_along_axis(x, safe, 1)  # (N, K): the score of each target entry
    z = nb.relu(nb.unsqueeze(x, 1) - nb.unsqueeze(x_t, 2) + 1.0)  # (N, K, C); no gradient at z == 0, as PyTorch
    pair = nb.cast(nb.logical_and(nb.unsqueeze(valid, 2), nb.unsqueeze(nb.logical_not(is_target), 1)), x.dtype)
    loss = nb.sum(z * pair, axis=(1, 2)) / float(c)
    if input.ndim < 2:
        loss = nb.reshape(loss, ())
    return _reduce(loss, red)


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """max(d(a, p) - d(a, n) + margin, 0) with any distance d; `swap` uses min(d(a, n), d(p, n))
    as the negative distance.

    Args:
        anchor, positive, negative: tensors with the same number of dimensions (e.g. (N, D)).
        distance_function: a callable (x1, x2) -> non-negative distances; default
            `pairwise_distance` (the Euclidean distance).
        margin: the required gap (positive).
        swap: use the smaller of d(a, n) and d(p, n).
        reduction: "none" | "mean" | "sum".

    Example:
        >>> a = nb.tensor([[0.0, 0.0]])
        >>> l_inf = lambda x1, x2: nb.max(nb.abs(x1 - x2), axis=-1)
        >>> F.triplet_margin_with_distance_loss(a, a + 1.0, a + 3.0, distance_function=l_inf).item()
        0.0
    """
    op = "triplet_margin_with_distance_loss"
    red = _reduction(reduction, op)
    if _number(margin, op, "margin") <= 0:
        raise ValueError(f"{op}: margin must be greater than 0, got {margin}")
    for x, arg in ((anchor, "anchor"), (positive, "positive"), (negative, "negative")):
        _tensor(x, op, arg)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise ValueError(
            f"{op}: anchor, positive and negative must have the same number of dimensions, got "
            f"{anchor.ndim}-D {anchor.shape}, {positive.ndim}-D {positive.shape} and {negative.ndim}-D {negative.shape}"
        )
    if distance_function is not None and not callable(distance_function):
        raise TypeError(f"{op}: distance_function must be a callable or None, got {type(distance_function).__name__}")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = nb.minimum(d_neg, dist(positive, negative))
    return _reduce(nb.clamp(d_pos - d_neg + float(margin), min=0.0), red)

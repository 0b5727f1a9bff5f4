"""Loss functions with PyTorch's names, signatures, reductions and weighting rules.

Every loss is a lazy composition of nabla ops: nothing is read back to the host, so a loss is
part of the one graph of a training step, and works under `nb.grad`, `nb.vmap` and `nb.compile`.
Constants (margins, label smoothing, class counts) are fixed per call, so they do not change the
graph from one step to the next.

cross_entropy is built on nabla's `log_softmax` primitive (stable, with its own VJP) and picks
the target's log-probability with `take_along_axis`. Class-index targets may hold
`ignore_index`; with reduction="mean" the sum is divided by the total weight of the targets that
are not ignored, as in PyTorch. Logs of probabilities that may be exactly 0 or 1 (binary cross
entropy, kl_div's target * log(target)) are taken of a masked argument, so gradients stay finite.

The deprecated `size_average` / `reduce` arguments are accepted where PyTorch has them (they
override `reduction` the same way, with a warning), so positional calls line up.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.common import dtypes as _dt
from nabla.ops.cast import autocast_to_float32 as _autocast_fp32
from nabla.ops.creation import known_values

from ._checks import check_float as _float
from ._checks import first_outside
from ._checks import number as _number
from .fused_loss import fused_cross_entropy, target_weights

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "gaussian_nll_loss",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "mse_loss",
    "nll_loss",
    "poisson_nll_loss",
    "smooth_l1_loss",
]

_REDUCTIONS = ("none", "mean", "sum")
_BCE_EPS = float(np.float32(1e-12))  # PyTorch's floor on x * (1 - x) in BCE's input gradient (a float32 1e-12)


# -- argument checks ------------------------------------------------------------------------------
def _reduction(reduction: Any, op: str, size_average: Any = None, reduce: Any = None, extra: tuple = ()) -> str:
    """The reduction string, after PyTorch's legacy size_average/reduce override."""
    if size_average is not None or reduce is not None:
        warnings.warn(
            f"{op}: size_average and reduce are deprecated; use reduction='none' | 'mean' | 'sum'", stacklevel=3
        )
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        return ("mean" if size_average else "sum") if reduce else "none"
    if reduction not in _REDUCTIONS + extra:
        expected = ", ".join(repr(r) for r in _REDUCTIONS + extra)
        raise ValueError(f"{op}: reduction must be one of {expected}, got {reduction!r}")
    return reduction


def _tensor(x: Any, op: str, arg: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")
    return x


def _like(x: Tensor, ref: Tensor) -> Tensor:
    """x in ref's dtype (targets and weights follow the input's precision)."""
    return x if x.dtype == ref.dtype else nb.cast(x, ref.dtype)


def _promoted(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """input and target in one dtype, as PyTorch's promoting losses (mse, l1, kl_div, ...) take
    them: a float target of a wider dtype widens both (float32 input, float64 target: a float64
    loss); any other target takes the input's dtype."""
    if _dt.is_float(target.dtype) and target.dtype != input.dtype:
        wide = _dt.promote_types(input.dtype, target.dtype)
        input = input if input.dtype == wide else nb.cast(input, wide)
    return input, _like(target, input)


def _same_shape(input: Tensor, target: Tensor, op: str) -> None:
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"{op}: target shape {target.shape} must equal input shape {input.shape}")


def _broadcast_target(input: Tensor, target: Tensor, op: str) -> Tensor:
    """The target broadcast to input's shape, as PyTorch's soft-margin losses take it (no warning)."""
    if tuple(target.shape) != tuple(input.shape):
        try:
            if np.broadcast_shapes(tuple(target.shape), tuple(input.shape)) != tuple(input.shape):
                raise ValueError
        except ValueError:
            raise ValueError(
                f"{op}: target of shape {target.shape} does not broadcast to input shape {input.shape}"
            ) from None
        target = nb.broadcast_to(target, tuple(input.shape))
    return target


def _broadcast_pair(input: Tensor, target: Tensor, op: str) -> tuple[Tensor, Tensor]:
    """PyTorch broadcasts a differently shaped target, with a warning."""
    if tuple(input.shape) == tuple(target.shape):
        return input, target
    warnings.warn(
        f"{op}: using a target size ({target.shape}) that is different to the input size ({input.shape}); "
        "this will likely lead to incorrect results due to broadcasting",
        stacklevel=3,
    )
    try:
        shape = nb.broadcast_shapes(tuple(input.shape), tuple(target.shape), op=op)
    except ValueError:
        raise ValueError(
            f"{op}: target shape {target.shape} does not broadcast with input shape {input.shape}"
        ) from None
    return nb.broadcast_to(input, shape), nb.broadcast_to(target, shape)


def _broadcastable(op: str, **tensors: Tensor) -> None:
    """A ValueError naming every operand's shape unless they broadcast together (losses that
    PyTorch broadcasts silently: one target for a whole batch)."""
    try:
        nb.broadcast_shapes(*(tuple(t.shape) for t in tensors.values()), op=op)
    except ValueError:
        shapes = ", ".join(f"{name} {tuple(t.shape)}" for name, t in tensors.items())
        raise ValueError(f"{op}: the shapes do not broadcast together: {shapes}") from None


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return nb.mean(loss)
    if reduction == "sum":
        return nb.sum(loss)
    return loss


def _weighted(loss: Tensor, weight: Tensor | None, reduction: str, op: str) -> Tensor:
    """mse/l1's optional elementwise weight: mean divides by the sum of the weights."""
    if weight is None:
        return _reduce(loss, reduction)
    _float(weight, op, "weight")
    if tuple(weight.shape) != tuple(loss.shape):
        raise ValueError(f"{op}: weight shape {weight.shape} must equal input shape {loss.shape}")
    loss = loss * _like(weight, loss)
    if reduction == "mean":
        return nb.sum(loss) / nb.sum(_like(weight, loss))
    return _reduce(loss, reduction)


# -- regression losses ----------------------------------------------------------------------------
def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean squared error: (input - target) ** 2, reduced.

    Args:
        input, target: floating-point tensors of the same shape (a different target shape
            broadcasts, with a warning, as in PyTorch).
        reduction: "none" | "mean" | "sum".
        weight: optional elementwise weights of input's shape; "mean" then divides by their sum.

    Example:
        >>> F.mse_loss(nb.tensor([1.0, 2.0]), nb.tensor([1.0, 4.0])).item()
        2.0
    """
    op = "mse_loss"
    input = _autocast_fp32(input)  # (torch's autocast runs losses in float32)
    red = _reduction(reduction, op, size_average, reduce)
    x, t = _broadcast_pair(*_promoted(_float(input, op, "input"), _tensor(target, op, "target")), op)
    d = x - t
    return _weighted(d * d, weight, red, op)


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean absolute error: |input - target|, reduced (gradient sign(input - target), 0 at 0).

    Args:
        input, target: floating-point tensors of the same shape (a different target shape
            broadcasts, with a warning, as in PyTorch).
        reduction: "none" | "mean" | "sum".
        weight: optional elementwise weights of input's shape; "mean" then divides by their sum.

    Example:
        >>> F.l1_loss(nb.tensor([1.0, 2.0]), nb.tensor([1.0, 4.0])).item()
        1.0
    """
    op = "l1_loss"
    input = _autocast_fp32(input)  # (torch's autocast runs losses in float32)
    red = _reduction(reduction, op, size_average, reduce)
    x, t = _broadcast_pair(*_promoted(_float(input, op, "input"), _tensor(target, op, "target")), op)
    return _weighted(nb.abs(x - t), weight, red, op)


def _smooth_l1(d: Tensor, beta: float) -> Tensor:
    ad = nb.abs(d)
    if beta == 0.0:
        return ad
    return nb.where(ad < beta, d * d * (0.5 / beta), ad - 0.5 * beta)


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """0.5 * d**2 / beta where |d| < beta, else |d| - 0.5 * beta (d = input - target); beta=0 is L1.

    Args:
        input, target: floating-point tensors of the same shape.
        reduction: "none" | "mean" | "sum".
        beta: non-negative threshold between the quadratic and linear parts.

    Example:
        >>> F.smooth_l1_loss(nb.tensor([0.0, 3.0]), nb.tensor([0.5, 0.0])).item()  # (0.125 + 2.5) / 2
        1.3125
    """
    op = "smooth_l1_loss"
    input = _autocast_fp32(input)  # (torch's autocast runs losses in float32)
    red = _reduction(reduction, op, size_average, reduce)
    b = _number(beta, op, "beta")
    if b < 0:
        raise ValueError(f"{op}: beta must be non-negative, got {beta}")
    x, t = _broadcast_pair(*_promoted(_float(input, op, "input"), _tensor(target, op, "target")), op)
    return _reduce(_smooth_l1(x - t, b), red)


def huber_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0, weight: Tensor | None = None
) -> Tensor:
    """0.5 * d**2 where |d| < delta, else delta * (|d| - 0.5 * delta) (d = input - target).

    Args:
        input, target: floating-point tensors of the same shape.
        reduction: "none" | "mean" | "sum".
        delta: positive threshold between the quadratic and linear parts.
        weight: optional elementwise weights; "mean" is then the plain mean of the weighted
            losses (PyTorch's rule for huber_loss).

    Example:
        >>> F.huber_loss(nb.tensor([0.0, 3.0]), nb.tensor([0.5, 0.0])).item()
        1.3125
    """
    op = "huber_loss"
    input = _autocast_fp32(input)  # (torch's autocast runs losses in float32)
    red = _reduction(reduction, op)
    dl = _number(delta, op, "delta")
    if dl <= 0:
        raise ValueError(f"{op}: delta must be positive, got {delta}")
    x, t = _broadcast_pair(_float(input, op, "input"), _like(_tensor(target, op, "target"), input), op)
    loss = _smooth_l1(x - t, dl) * dl
    if weight is not None:
        _float(weight, op, "weight")
        if tuple(weight.shape) != tuple(loss.shape):
            raise ValueError(f"{op}: weight shape {weight.shape} must equal input shape {loss.shape}")
        loss = loss * _like(weight, loss)
    return _reduce(loss, red)


# -- classification losses ------------------------------------------------------------------------
def _class_weight(weight: Any, c: int, ref: Tensor, op: str) -> Tensor | None:
    if weight is None:
        return None
    _float(weight, op, "weight")
    if tuple(weight.shape) != (c,):
        raise ValueError(f"{op}: weight must have shape ({c},) (one entry per class), got {weight.shape}")
    return _like(weight, ref)


def _index_target(input: Tensor, target: Tensor, op: str) -> tuple[int, int]:
    """(class_dim, C) after checking that `target` holds class indices of the right shape."""
    if input.ndim == 0:
        raise ValueError(f"{op}: input must have shape (C,), (N, C) or (N, C, d1, ...), got a 0-d tensor")
    class_dim = 0 if input.ndim == 1 else 1
    expected = tuple(input.shape[:class_dim]) + tuple(input.shape[class_dim + 1 :])
    if not _dt.is_integer(target.dtype):
        raise TypeError(
            f"{op}: target must be an integer tensor for class indices (or, for cross_entropy, a float "
            f"tensor of probabilities with input's shape {input.shape}), got dtype {target.dtype.name} "
            f"and shape {target.shape}"
        )
    if tuple(target.shape) != expected:
        raise ValueError(f"{op}: expected target shape {expected} for input of shape {input.shape}, got {target.shape}")
    return class_dim, input.shape[class_dim]


def _check_target_values(target: Tensor, c: int, ignore_index: int, op: str) -> None:
    """Eager bounds check when the host has the target's values (`known_values`)."""
    values = known_values(target)
    bad = None if values is None else first_outside(values, c, ignore_index)
    if bad is not None:
        raise IndexError(f"{op}: target {bad} is out of bounds for {c} classes")


def _pick(logp: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, class_dim: int) -> tuple:
    """Per-target -w[t] * logp[t] and its weight w[t] (both 0 where target == ignore_index)."""
    safe, w = target_weights(target, weight, ignore_index, logp.dtype)  # ignored targets read class 0, masked
    picked = nb.squeeze(nb.take_along_axis(logp, nb.unsqueeze(safe, class_dim), class_dim), class_dim)
    return -(picked * w), w


def _classes_sharded(x: Tensor, class_dim: int) -> bool:
    return _sharded(x) and bool(x.sharding.dim_axes[class_dim])


def _sharded(x: Tensor) -> bool:
    spec = x.sharding
    return spec is not None and not spec.manual


def _pick_by_match(logp: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, class_dim: int) -> tuple:
    """`_pick` for sharded logits: each device sums the log-probabilities of the targets among
    its classes (a class index laid out like the classes; a partial sum when they are split)."""
    safe, w = target_weights(target, weight, ignore_index, logp.dtype)
    spec, c = logp.sharding, logp.shape[class_dim]
    classes = nb.shard(nb.arange(c), spec.mesh, nb.P(spec.dim_axes[class_dim]))
    shape = tuple(c if d == class_dim else 1 for d in range(logp.ndim))
    match = nb.eq(nb.unsqueeze(safe, class_dim), nb.reshape(classes, shape))
    picked = nb.sum(nb.where(match, logp, nb.zeros((), dtype=logp.dtype)), axis=class_dim)
    return -(picked * w), w


def _nll(
    logp: Tensor,
    target: Tensor,
    weight: Tensor | None,
    ignore_index: int,
    reduction: str,
    smoothing: float,
    class_dim: int,
    pick: Callable[..., tuple] | None = None,
) -> Tensor:
    c = logp.shape[class_dim]
    loss, w = (pick or _pick)(logp, target, weight, ignore_index, class_dim)
    if smoothing > 0.0:
        # PyTorch: (1 - eps) * nll + eps / C * (-sum_c w[c] * logp[c]), masked where ignored.
        wl = logp if weight is None else logp * nb.reshape(weight, (c,) + (1,) * (logp.ndim - class_dim - 1))
        smooth = -nb.sum(wl, axis=class_dim) * nb.cast(nb.not_equal(target, ignore_index), logp.dtype)
        loss = loss * (1.0 - smoothing) + smooth * (smoothing / c)
    if reduction == "mean":
        # ignored targets get no gradient, also when all are ignored and the mean is 0 / 0 = nan
        # (PyTorch's rule): a `where`, as 0 * (1 / 0) would be nan
        return nb.sum(nb.where(nb.not_equal(target, ignore_index), loss, 0.0)) / nb.sum(w)
    return nb.sum(loss) if reduction == "sum" else loss


def _soft_cross_entropy(
    logp: Tensor, target: Tensor, weight: Tensor | None, reduction: str, smoothing: float, class_dim: int
) -> Tensor:
    """Cross entropy with class probabilities as targets: -sum_c w[c] * target[c] * logp[c]."""
    c = logp.shape[class_dim]
    logp, t = _promoted(logp, target)
    if smoothing > 0.0:
        t = t * (1.0 - smoothing) + smoothing / c
    prod = logp * t
    if weight is not None:
        prod = prod * nb.reshape(weight, (c,) + (1,) * (logp.ndim - class_dim - 1))
    loss = -nb.sum(prod, axis=class_dim)
    if reduction == "mean":  # PyTorch divides by the number of samples (nan when there are none)
        n = logp.numel() // c if c else 0
        return nb.sum(loss) / float(n) if n else nb.sum(loss) * math.nan
    return nb.sum(loss) if reduction == "sum" else loss


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy between unnormalized logits and class targets.

    Args:
        input: logits (C,), (N, C) or (N, C, d1, ...).
        target: class indices (), (N,) or (N, d1, ...) (an integer tensor), or class
            probabilities of input's shape (a floating-point tensor).
        weight: optional (C,) rescaling weight per class.
        ignore_index: class-index target value that contributes nothing (not to the mean's
            denominator either).
        reduction: "none" | "mean" | "sum". For class indices "mean" divides by the sum of the
            weights of the non-ignored targets; for probabilities by N * d1 * ....
        label_smoothing: in [0, 1]: mixes the target with the uniform distribution, as PyTorch.

    Example:
        >>> logits = nb.tensor([[2.0, 0.5, -1.0]])
        >>> F.cross_entropy(logits, nb.tensor([0])).item()  # 0.2413...
    """
    op = "cross_entropy"
    input = _autocast_fp32(input)  # (torch's autocast runs losses in float32)
    red = _reduction(reduction, op, size_average, reduce)
    _float(input, op, "input")
    _tensor(target, op, "target")
    eps = _number(label_smoothing, op, "label_smoothing")
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"{op}: label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    if input.ndim == 0:
        raise ValueError(f"{op}: input must have shape (C,), (N, C) or (N, C, d1, ...), got a 0-d tensor")
    class_dim = 0 if input.ndim == 1 else 1
    c = input.shape[class_dim]
    w = _class_weight(weight, c, input, op)
    if _dt.is_float(target.dtype):
        if tuple(target.shape) != tuple(input.shape):
            _index_target(input, target, op)  # raises the class-index message
        return _soft_cross_entropy(nb.log_softmax(input, axis=class_dim), target, w, red, eps, class_dim)
    _index_target(input, target, op)
    _check_target_values(target, c, int(ignore_index), op)
    # Megatron's vocabulary-parallel cross entropy (split classes), and (N, C, d...) logits
    # split along d (a sequence over devices): the targets are matched against a class index
    # instead of gathered with take_along_axis, which would flatten (and so gather) the dims.
    if _classes_sharded(input, class_dim) or (input.ndim > 2 and _sharded(input)):
        logp = nb.log_softmax(input, axis=class_dim)  # split classes: from all-reduced maxima and sums
        return _nll(logp, target, w, int(ignore_index), red, eps, class_dim, pick=_pick_by_match)
    fused = fused_cross_entropy(input, target, w, int(ignore_index), red, eps)
    if fused is not None:  # one op forward, one backward (classifier and LM losses)
        return fused
    return _nll(nb.log_softmax(input, axis=class_dim), target, w, int(ignore_index), red, eps, class_dim)


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log likelihood of class targets under log-probabilities `input`: -w[t] * input[t].

    Args:
        input: log-probabilities (C,), (N, C) or (N, C, d1, ...).
        target: integer class indices (), (N,) or (N, d1, ...).
        weight: optional (C,) weight per class.
        ignore_index: target value that contributes nothing.
        reduction: "none" | "mean" (divides by the sum of the weights of the non-ignored
            targets) | "sum".

    Example:
        >>> F.nll_loss(nb.tensor([[-0.5, -1.0]]), nb.tensor([1])).item()
        1.0
    """
    op = "nll_loss"
    input = _autocast_fp32(input)  # (torch's autocast runs losses in float32)
    red = _reduction(reduction, op, size_average, reduce)
    _float(input, op, "input")
    _tensor(target, op, "target")
    class_dim, c = _index_target(input, target, op)
    w = _class_weight(weight, c, input, op)
    _check_target_values(target, c, int(ignore_index), op)
    pick = _pick_by_match if _classes_sharded(input, class_dim) else None  # no gather of split classes
    return _nll(input, target, w, int(ignore_index), red, 0.0, class_dim, pick=pick)


def _safe_log(x: Tensor) -> Tensor:
    """log(x) clamped at -100 (PyTorch's BCE rule), with a finite gradient at x == 0: the log is
    taken of x + 1 there and then replaced (arithmetic masks, no `where` around the log)."""
    zero = nb.cast(nb.eq(x, 0), x.dtype)
    return nb.clamp(nb.log(x + zero) * (1.0 - zero) - 100.0 * zero, min=-100.0)


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """-w * (t * log(x) + (1 - t) * log(1 - x)) for probabilities x in [0, 1]; logs clamp at -100.

    Args:
        input: probabilities (any shape).
        target: same shape, values in [0, 1].
        weight: optional, broadcastable to input's shape.
        reduction: "none" | "mean" | "sum".

    Example:
        >>> F.binary_cross_entropy(nb.tensor([0.5]), nb.tensor([1.0])).item()  # 0.6931...
    """
    op = "binary_cross_entropy"
    input = _autocast_fp32(input)  # (torch's autocast runs losses in float32)
    red = _reduction(reduction, op, size_average, reduce)
    _float(input, op, "input")
    _same_shape(input, _tensor(target, op, "target"), op)
    for name, value in (("input", input), ("target", target)):  # (when the host has the values)
        known = known_values(value) if isinstance(value, Tensor) else None
        if known is not None and known.size and not ((known >= 0) & (known <= 1)).all():
            raise ValueError(f"{op}: all elements of {name} should be between 0 and 1, got values in "
                             f"[{np.nanmin(known)}, {np.nanmax(known)}]")  # fmt: skip
    t = _like(target, input)
    # PyTorch's input gradient is (x - t) / max(x * (1 - x), 1e-12). Where x * (1 - x) >= 1e-12
    # that is the derivative of the logs below; elsewhere (x at or within ~1e-12 of 0 or 1) the
    # logs carry no gradient (x detached) and a zero-valued term (x - x.detach()) * g supplies g.
    edge = nb.less(input * (1.0 - input), _BCE_EPS)
    x = nb.where(edge, nb.detach(input), input)
    g = nb.detach((input - t) / nb.maximum(input * (1.0 - input), _BCE_EPS))
    loss = -(t * _safe_log(x) + (1.0 - t) * _safe_log(1.0 - x))
    loss = loss + nb.where(edge, g * (input - nb.detach(input)), 0.0)
    if weight is not None:
        loss = loss * _like(_float(weight, op, "weight"), input)
        if tuple(loss.shape) != tuple(input.shape):
            raise ValueError(f"{op}: weight shape {weight.shape} does not broadcast to input shape {input.shape}")
    return _reduce(loss, red)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross entropy of sigmoid(input), computed stably from the logits:
    (1 - t) * x - (1 + (pos_weight - 1) * t) * logsigmoid(x), times `weight`.

    Args:
        input: logits (any shape).
        target: same shape, values in [0, 1].
        weight: optional, broadcastable to input's shape.
        reduction: "none" | "mean" | "sum".
        pos_weight: optional weight of positive examples, broadcast along the last dim (per class).

    Example:
        >>> F.binary_cross_entropy_with_logits(nb.tensor([0.0]), nb.tensor([1.0])).item()  # 0.6931...
    """
    op = "binary_cross_entropy_with_logits"
    input = _autocast_fp32(input)  # (torch's autocast runs losses in float32)
    red = _reduction(reduction, op, size_average, reduce)
    _float(input, op, "input")
    _same_shape(input, _tensor(target, op, "target"), op)
    input, t = _promoted(input, target)
    log_sig = nb.logsigmoid(input)
    if pos_weight is not None:
        lw = (_like(_float(pos_weight, op, "pos_weight"), input) - 1.0) * t + 1.0
        loss = (1.0 - t) * input - lw * log_sig
    else:
        loss = (1.0 - t) * input - log_sig
    if weight is not None:
        loss = loss * _like(_float(weight, op, "weight"), input)
    if tuple(loss.shape) != tuple(input.shape):
        raise ValueError(f"{op}: weight / pos_weight must broadcast to input shape {input.shape}")
    return _reduce(loss, red)


def _xlogx(t: Tensor) -> Tensor:
    """t * log(t), 0 where t == 0 (the log is taken of 1 there, so the gradient stays finite)."""
    zero = nb.cast(nb.eq(t, 0), t.dtype)
    return t * nb.log(t + zero)


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """Kullback-Leibler divergence KL(target || exp(input)), pointwise target * (log(target) - input).

    Args:
        input: log-probabilities.
        target: probabilities (or log-probabilities with log_target=True), input's shape.
        reduction: "none" | "batchmean" (sum / batch size: the mathematical KL) | "sum" |
            "mean" (sum / number of elements; PyTorch warns about it, and so does this).
        log_target: whether target is given in log space.

    Example:
        >>> p = nb.tensor([[0.5, 0.5]])
        >>> F.kl_div(nb.log(p), p, reduction="batchmean").item()
        0.0
    """
    op = "kl_div"
    input = _autocast_fp32(input)  # (torch's autocast runs losses in float32)
    if size_average is not None or reduce is not None:
        red = _reduction(reduction, op, size_average, reduce)
    else:
        red = _reduction(reduction, op, extra=("batchmean",))
        if red == "mean":
            warnings.warn(
                "kl_div: reduction='mean' divides the total loss by both the batch size and the support size; "
                "'batchmean' divides only by the batch size and matches the KL divergence's definition",
                stacklevel=2,
            )
    _float(input, op, "input")
    input, t = _promoted(input, _float(target, op, "target"))
    loss = nb.exp(t) * (t - input) if log_target else _xlogx(t) - t * input
    if red == "batchmean":
        return nb.sum(loss) / float(input.shape[0]) if input.ndim else nb.sum(loss)
    return _reduce(loss, red)


# -- likelihood losses -----------------------------------------------------------------------------
def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average: bool | None = None,
    eps: float = 1e-8,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log likelihood of a Poisson target: exp(x) - t * x (log_input) or
    x - t * log(x + eps); `full` adds Stirling's term t * log(t) - t + 0.5 * log(2 pi t) where t > 1.

    Args:
        input: log-rates (log_input=True) or rates.
        target: counts, input's shape.
        log_input: whether input is the log of the rate.
        full: add Stirling's approximation of log(target!).
        eps: added inside the log when log_input is False.
        reduction: "none" | "mean" | "sum".

    Example:
        >>> F.poisson_nll_loss(nb.tensor([0.0]), nb.tensor([1.0])).item()
        1.0
    """
    op = "poisson_nll_loss"
    red = _reduction(reduction, op, size_average, reduce)
    _float(input, op, "input")
    input, t = _promoted(input, _tensor(target, op, "target"))
    if log_input:
        loss = nb.exp(input) - t * input
    else:
        loss = input - t * nb.log(input + _number(eps, op, "eps"))
    if full:
        big = nb.cast(t > 1, input.dtype)
        safe = t * big + (1.0 - big) * 2.0  # the term is only used where t > 1
        stirling = safe * nb.log(safe) - safe + 0.5 * nb.log(safe * (2.0 * math.pi))
        loss = loss + stirling * big
    return _reduce(loss, red)


def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var: Tensor | float,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """Negative log likelihood of a Gaussian: 0.5 * (log(max(var, eps)) + (input - target)**2 / max(var, eps))
    (+ 0.5 * log(2 pi) with `full`). The clamp of var passes its gradient through, as PyTorch's
    no_grad clamp does.

    Args:
        input: expected values.
        target: samples, input's shape.
        var: variances: input's shape, or one dim short / with one size-1 dim (homoscedastic),
            or a Python float.
        full: include the constant term.
        eps: lower bound of var.
        reduction: "none" | "mean" | "sum".

    Example:
        >>> F.gaussian_nll_loss(nb.tensor([0.0]), nb.tensor([0.0]), nb.tensor([1.0])).item()
        0.0
    """
    op = "gaussian_nll_loss"
    red = _reduction(reduction, op)
    _float(input, op, "input")
    input, t = _promoted(input, _tensor(target, op, "target"))
    if isinstance(var, int | float | np.integer | np.floating) and not isinstance(var, bool):
        if var < 0:
            raise ValueError(f"{op}: var has negative entry/entries, got {var}")
        var = nb.full_like(input, float(var))
    v = _like(_float(var, op, "var"), input)
    known = known_values(v)  # (checked when the host has the variances)
    if known is not None and (known < 0).any():
        raise ValueError(f"{op}: var has negative entry/entries")
    if tuple(v.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(v.shape):
            v = nb.unsqueeze(v, -1)
        elif not (input.ndim == v.ndim and sum(b for a, b in zip(input.shape, v.shape, strict=True) if a != b) == 1):
            raise ValueError(f"{op}: var is of incorrect size: {v.shape} for input of shape {input.shape}")
    e = _number(eps, op, "eps")
    v = v + nb.detach(nb.clamp(v, min=e) - v)  # clamp the value, keep the identity gradient
    d = input - t
    loss = (nb.log(v) + d * d / v) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, red)

"""Connectionist temporal classification loss (PyTorch's `F.ctc_loss`).

The loss is -log of the total probability of every alignment of a target to the input frames
(Graves et al., 2006). It is computed by the forward ("alpha") recursion in log space over the
extended target `blank, l1, blank, l2, ..., blank`: a Python loop over time whose every step
is a handful of tensor ops on (N, 2S + 1) tensors, so the whole loss is one lazy graph and its
gradient comes from autodiff. The lengths are read on the host (they size the loop and the
final read-out); the targets and log-probabilities stay lazy.

Unreachable states hold -inf. The log-sum-exp of a step subtracts a detached maximum and
leaves an all -inf sum at -inf without taking log(0), so no NaN reaches the gradient: an
infeasible sample (an input shorter than its target needs) has loss inf and gradient 0
(PyTorch's is NaN there), and `zero_infinity=True` makes its loss 0 as well.

Gradients: autodiff gives d loss / d log_probs exactly. PyTorch's kernel returns that plus
exp(log_probs) on each sample's valid frames (its backward assumes a log_softmax in front, see
pytorch/pytorch#52241); through a `log_softmax` the extra term cancels, so gradients with
respect to the logits agree with PyTorch's, as they do whenever log_probs come from
log_softmax, the documented use.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.common import dtypes as _dt
from nabla.ops.creation import known_values

from ._checks import check_float

__all__ = ["ctc_loss"]

_OP = "ctc_loss"
_REDUCTIONS = ("none", "mean", "sum")


def _lengths(value: Any, n: int, arg: str, unbatched: bool) -> np.ndarray:
    """`value` (a Tensor, a sequence of ints, or an int when unbatched) as an int64 array (n,)."""
    if isinstance(value, Tensor):
        if not _dt.is_integer(value.dtype):
            raise TypeError(f"{_OP}: {arg} must be an integer tensor, got dtype {value.dtype.name}")
        arr = value.numpy()
    else:
        arr = np.asarray(value)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{_OP}: {arg} must hold integers, got {value!r}")
    if unbatched and arr.size == 1:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{_OP}: {arg} must have one entry per batch element ({n}), got shape {arr.shape}")
    if np.any(arr < 0):
        raise ValueError(f"{_OP}: {arg} must be non-negative, got {arr.tolist()}")
    return arr.astype(np.int64)


def _padded_targets(targets: Any, target_lengths: np.ndarray, unbatched: bool) -> Tensor:
    """The targets as (N, max target length) int64: padded rows as given, or concatenated 1-D
    targets split by `target_lengths` (on the host: the lengths are known)."""
    if not isinstance(targets, Tensor):
        raise TypeError(f"{_OP}: targets must be a Tensor, got {type(targets).__name__}")
    if not _dt.is_integer(targets.dtype):
        raise TypeError(f"{_OP}: targets must be an integer tensor of class indices, got dtype {targets.dtype.name}")
    n, s = target_lengths.shape[0], int(target_lengths.max(initial=0))
    if unbatched and targets.ndim == 1:
        targets = nb.unsqueeze(targets, 0)
    if targets.ndim == 2:
        if targets.shape[0] != n or targets.shape[1] < s:
            raise ValueError(
                f"{_OP}: padded targets must be (N={n}, S >= {s}) for target_lengths {target_lengths.tolist()}, "
                f"got shape {targets.shape}"
            )
        return nb.cast(targets[:, :s], nb.int64)
    if targets.ndim != 1 or unbatched:
        raise ValueError(f"{_OP}: targets must be (N, S) padded or 1-D concatenated, got shape {targets.shape}")
    total = int(target_lengths.sum())
    if targets.shape[0] != total:
        raise ValueError(
            f"{_OP}: concatenated targets must have sum(target_lengths) = {total} entries, got {targets.shape[0]}"
        )
    if s == 0:
        return nb.zeros((n, 0), dtype=nb.int64)
    starts = np.concatenate([[0], np.cumsum(target_lengths)[:-1]])
    index = starts[:, None] + np.minimum(np.arange(s)[None, :], np.maximum(target_lengths - 1, 0)[:, None])
    return nb.take(nb.cast(targets, nb.int64), nb.tensor(np.minimum(index, max(total - 1, 0))), 0)


def _check_target_values(targets: Tensor, target_lengths: np.ndarray, classes: int) -> None:
    """Targets in [0, C), checked when their values are already known (never evaluates)."""
    values = known_values(targets) if targets.numel() else None
    if values is None:
        return
    used = values[np.arange(values.shape[1])[None, :] < target_lengths[:, None]]
    bad = used[(used < 0) | (used >= classes)]
    if bad.size:
        raise ValueError(f"{_OP}: target class {int(bad[0])} is out of range [0, {classes})")


def _logsumexp(x: Tensor, axis: int) -> Tensor:
    """log(sum(exp(x))) over `axis` that is -inf where every term is -inf, with a finite
    gradient (0 into -inf terms) everywhere: the maximum is detached, log(0) is never taken."""
    top = nb.detach(nb.max(x, axis=axis, keepdims=True))
    top = nb.where(nb.isinf(top), 0.0, top)
    total = nb.sum(nb.exp(x - top), axis=axis)
    some = nb.greater(total, 0.0)
    return nb.where(some, nb.log(nb.where(some, total, 1.0)) + nb.squeeze(top, axis), float("-inf"))


def _shifted(alpha: Tensor, k: int) -> Tensor:
    """alpha moved k states to the right along axis 1, -inf coming in. (One pad that crops:
    MAX 26's compiler crashed on the gradient of the slice-and-concatenate spelling.)"""
    width = alpha.shape[1]
    if k >= width:
        return nb.full(tuple(alpha.shape), float("-inf"), alpha.dtype)
    return nb.pad(alpha, (k, -k), value=float("-inf"))


def _extended(targets: Tensor, blank: int) -> Tensor:
    """(N, 2S + 1): blank, l1, blank, l2, ..., blank."""
    n, s = targets.shape
    blanks = nb.full((n, s), blank, nb.int64)
    pairs = nb.reshape(nb.stack([blanks, targets], 2), (n, 2 * s))
    return nb.cat([pairs, nb.full((n, 1), blank, nb.int64)], 1)


def _negative_log_likelihood(
    log_probs: Tensor, targets: Tensor, input_lengths: np.ndarray, target_lengths: np.ndarray, blank: int
) -> Tensor:
    """Each sample's -log p(target | input), (N,), by the alpha recursion."""
    steps, n, _ = log_probs.shape
    ext = _extended(targets, blank)
    width = ext.shape[1]
    emit = nb.take_along_axis(log_probs, nb.broadcast_to(nb.unsqueeze(ext, 0), (steps, n, width)), 2)
    # A label may follow the label two states back directly (skipping the blank between them)
    # unless the two are equal: PyTorch's rule, which also covers blanks at even states.
    skip = nb.cat([nb.full((n, min(2, width)), False, nb.bool_), nb.not_equal(ext[:, 2:], ext[:, :-2])], 1)
    neg_inf = float("-inf")
    alpha = nb.where(nb.tensor(np.arange(width) < 2), emit[0], neg_inf)
    for t in range(1, int(input_lengths.max(initial=0))):
        came_from = nb.stack([alpha, _shifted(alpha, 1), nb.where(skip, _shifted(alpha, 2), neg_inf)], 0)
        step = emit[t] + _logsumexp(came_from, 0)
        running = input_lengths > t  # samples whose input has ended keep their alpha
        alpha = step if running.all() else nb.where(nb.tensor(running[:, None]), step, alpha)
    states = np.arange(width)[None, :]
    last = 2 * target_lengths[:, None]
    ends = (states == last) | ((states == last - 1) & (target_lengths[:, None] > 0))
    nll = -_logsumexp(nb.where(nb.tensor(ends), alpha, neg_inf), 1)
    if np.any(input_lengths == 0):  # no frames: probability 1 for an empty target, else 0
        empty = np.where(target_lengths == 0, 0.0, np.inf).astype(_dt.to_numpy_dtype(nll.dtype))
        nll = nb.where(nb.tensor(input_lengths == 0), nb.tensor(empty), nll)
    return nll


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Any,
    target_lengths: Any,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """The connectionist temporal classification loss (PyTorch's `F.ctc_loss`).

    Args:
        log_probs: (T, N, C) or unbatched (T, C) log-probabilities over C classes (blank
            included), e.g. from `log_softmax(dim=-1)`.
        targets: class indices in [0, C), not blank: padded (N, S) (row n's first
            target_lengths[n] entries are used; unbatched: (S,)), or concatenated 1-D
            (sum(target_lengths),) for a batched input.
        input_lengths: (N,) frames used per sample, each <= T (a Tensor or a sequence of ints;
            an int when unbatched); read on the host.
        target_lengths: (N,) target lengths (same forms); read on the host.
        blank: the blank class (default 0).
        reduction: "none" ((N,) losses), "mean" (each loss divided by its target length
            (at least 1), then the batch mean) or "sum".
        zero_infinity: replace infinite losses (inputs too short for their targets) and their
            gradients by 0.

    Example:
        >>> lp = nb.log_softmax(nb.randn(50, 16, 20), axis=-1)
        >>> targets = nb.randint(1, 20, (16, 30))
        >>> F.ctc_loss(lp, targets, [50] * 16, [30] * 16).shape
        ()
    """
    check_float(log_probs, _OP, "log_probs")
    if log_probs.ndim not in (2, 3):
        raise ValueError(f"{_OP}: log_probs must be (T, N, C) or unbatched (T, C), got shape {log_probs.shape}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{_OP}: reduction must be one of 'none', 'mean', 'sum', got {reduction!r}")
    unbatched = log_probs.ndim == 2
    lp = nb.unsqueeze(log_probs, 1) if unbatched else log_probs
    steps, n, classes = lp.shape
    if isinstance(blank, bool) or not isinstance(blank, int | np.integer) or not 0 <= blank < classes:
        raise ValueError(f"{_OP}: blank must be in the label range [0, {classes}), got {blank!r}")
    in_lens = _lengths(input_lengths, n, "input_lengths", unbatched)
    tg_lens = _lengths(target_lengths, n, "target_lengths", unbatched)
    if np.any(in_lens > steps):
        raise ValueError(f"{_OP}: input_lengths must be at most T = {steps}, got {in_lens.tolist()}")
    padded = _padded_targets(targets, tg_lens, unbatched)
    _check_target_values(padded, tg_lens, classes)
    # the padding past each target's length may hold anything (torch ignores it): blank, so the
    # emission gather stays in range
    inside = np.arange(padded.shape[1])[None, :] < tg_lens[:, None]
    padded = nb.where(nb.tensor(inside), padded, int(blank))
    loss = _negative_log_likelihood(lp, padded, in_lens, tg_lens, int(blank))
    if zero_infinity:
        loss = nb.where(nb.isinf(loss), 0.0, loss)
    if reduction == "mean":
        return nb.mean(loss / nb.tensor(np.maximum(tg_lens, 1).astype(_dt.to_numpy_dtype(loss.dtype))))
    if reduction == "sum":
        return nb.sum(loss)
    return nb.reshape(loss, ()) if unbatched else loss

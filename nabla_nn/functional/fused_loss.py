"""Softmax cross-entropy with class-index targets as one primitive, and its gradient as another.

`cross_entropy(logits, targets)` ends nearly every classifier and language model. Recorded op
by op it is about 20 ops forward and as many backward; as two primitives a training step
records two, and MAX gets one region to fuse. For per-sample target t, valid v = (t !=
ignore_index), class weights w (ones when absent) and label smoothing e over C classes:

    a_ic   = v * ((1 - e) * w_t * [c == t] + e / C * w_c)      the weighted target distribution
    loss_i = -sum_c a_ic * log_softmax(x)_ic
    A_i    = sum_c a_ic = v * ((1 - e) * w_t + e / C * sum_c w_c)
    d loss_i / d x_ic = A_i * softmax(x)_ic - a_ic

"mean" divides the summed loss by sum_i v_i * w_t (PyTorch's rule), "sum" sums, "none" keeps
loss_i. Ignored rows get a gradient of exactly 0, also when every row is ignored and the mean is
0 / 0 = nan (PyTorch's rule: an all-padding batch leaves the weights unchanged). Both ops take
logits (N, C), int64 targets (N,) and optionally weights (C,); the gradient op's own
derivatives are written with nabla ops, so higher-order autodiff works.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from max.dtype import DType
from max.graph import ops

import nabla as nb
from nabla import Operation, Tensor
from nabla.core.sharding import OpShardingRule
from nabla.ops.base import AVal, shape_of
from nabla.ops.reduction_softmax import LogSoftmaxOp, SoftmaxOp

_Kw = dict[str, Any]
_SOFTMAX, _LOG_SOFTMAX = SoftmaxOp(), LogSoftmaxOp()  # their NumPy kernels are the references


# -- the target distribution: NumPy, MAX and nabla-op versions of one formula ------------------
def _np_targets(x: np.ndarray, t: np.ndarray, w: np.ndarray | None, ignore_index: int, smoothing: float) -> tuple:
    n, c = x.shape
    onehot = (t[:, None] == np.arange(c)[None, :]).astype(x.dtype)
    valid = (t != ignore_index).astype(x.dtype)
    w_row = np.ones(c, x.dtype) if w is None else w
    wt = (onehot @ w_row) * valid
    a = onehot * (wt * (1 - smoothing))[:, None] + (smoothing / c) * w_row[None, :] * valid[:, None]
    big_a = wt * (1 - smoothing) + (smoothing / c) * w_row.sum() * valid
    return a, big_a.astype(x.dtype), wt


def _max_targets(x: Any, t: Any, w: Any, ignore_index: int, smoothing: float) -> tuple:
    n, c = shape_of(x)
    dt, dev = x.dtype, x.device

    def const(v: float) -> Any:
        return ops.constant(v, dt, dev)

    classes = ops.range(0, c, 1, out_dim=c, dtype=DType.int64, device=dev)
    onehot = ops.cast(
        ops.equal(
            ops.broadcast_to(ops.reshape(t, (n, 1)), (n, c)), ops.broadcast_to(ops.reshape(classes, (1, c)), (n, c))
        ),
        dt,
    )
    valid = ops.cast(ops.not_equal(t, ops.constant(ignore_index, DType.int64, dev)), dt)
    if w is None:
        wt, w_sum, w_row = valid, const(float(c)), None
    else:
        w_row = ops.reshape(w, (1, c))
        wt = ops.reshape(ops.sum(onehot * w_row, axis=1), (n,)) * valid
        w_sum = ops.reshape(ops.sum(w, axis=0), ())
    a = onehot * ops.reshape(wt * const(1 - smoothing), (n, 1))
    if smoothing:
        spread = ops.reshape(valid, (n, 1)) * const(smoothing / c)
        a = a + (spread if w_row is None else spread * w_row)
    big_a = wt * const(1 - smoothing) + w_sum * const(smoothing / c) * valid
    return a, big_a, wt


def _reference_targets(x: Tensor, t: Tensor, w: Tensor | None, ignore_index: int, smoothing: float) -> tuple:
    c = x.shape[-1]
    onehot = nb.cast(nb.eq(nb.unsqueeze(t, 1), nb.arange(c, dtype=nb.int64)), x.dtype)
    valid = nb.cast(nb.not_equal(t, ignore_index), x.dtype)
    w_row = nb.ones(c, dtype=x.dtype) if w is None else w
    wt = nb.sum(onehot * w_row, axis=1) * valid
    a = onehot * nb.unsqueeze(wt * (1 - smoothing), 1) + (smoothing / c) * w_row * nb.unsqueeze(valid, 1)
    big_a = wt * (1 - smoothing) + (smoothing / c) * nb.sum(w_row) * valid
    return a, big_a, wt


def _weight_arg(args: tuple) -> Any:
    return args[0] if args else None


def _rule(in_shapes: list, loss_shape: tuple | None, reduction: str) -> OpShardingRule:
    """Rows ("n") split like the batch, classes ("c") kept whole (a softmax needs whole rows).
    A summed loss over split rows is a partial sum; a mean's denominator is global, so a
    "mean" keeps the rows whole too (`fused_cross_entropy` turns a sharded mean into a sum).
    `loss_shape`: the loss cotangent's shape (the gradient op), None for the loss op."""
    n, c = in_shapes[0]
    operands: list = [(("n",), ("c",)), (("n",),)]
    if loss_shape is not None:
        operands.append((("n",),) if loss_shape else ())
    operands += [(("c",),)] * (len(in_shapes) - len(operands))  # the class weights
    if loss_shape is None:
        results = ((("n",),) if reduction == "none" else (),)
    else:
        results = ((("n",), ("c",)),)
    whole = {"c", "n"} if reduction == "mean" else {"c"}
    return OpShardingRule(tuple(operands), results, {"n": n, "c": c}, frozenset(whole), "sum")


# -- forward ---------------------------------------------------------------------------------
class CrossEntropyOp(Operation):
    """loss(logits (N, C), targets (N,) int64[, weight (C,)]): () for mean/sum, (N,) for none."""

    name = "softmax_cross_entropy"

    def abstract_eval(self, x: AVal, t: AVal, *w: AVal, ignore_index: int, smoothing: float, reduction: str) -> AVal:
        return ((x[0][0],) if reduction == "none" else ()), x[1]

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _rule(in_shapes, None, kwargs["reduction"])

    def kernel(self, x: Any, t: Any, *w: Any, ignore_index: int, smoothing: float, reduction: str) -> Any:
        n, c = shape_of(x)
        a, _, wt = _max_targets(x, t, _weight_arg(w), ignore_index, smoothing)
        # A class with no target weight adds 0, also where its logit is -inf (0 * -inf is nan).
        zero = ops.constant(0.0, x.dtype, x.device)
        picked = ops.where(ops.equal(a, zero), ops.broadcast_to(zero, (n, c)), a * ops.logsoftmax(x, axis=1))
        loss = ops.reshape(ops.sum(picked, axis=1), (n,))
        loss = ops.negate(loss)
        if reduction == "none":
            return loss
        total = ops.reshape(ops.sum(loss, axis=0), ())
        return total if reduction == "sum" else total / ops.reshape(ops.sum(wt, axis=0), ())

    def numpy_kernel(self, x: np.ndarray, t: np.ndarray, *w: np.ndarray, **kw: Any) -> np.ndarray:
        a, _, wt = _np_targets(x, t, _weight_arg(w), kw["ignore_index"], kw["smoothing"])
        with np.errstate(invalid="ignore"):  # a class with no target weight adds 0, even at -inf
            loss = -np.where(a == 0, 0, a * _LOG_SOFTMAX.numpy_kernel(x, axis=1)).sum(axis=1)
        if kw["reduction"] == "none":
            return loss
        with np.errstate(invalid="ignore", divide="ignore"):
            return loss.sum() if kw["reduction"] == "sum" else loss.sum() / wt.sum()

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kw: Any) -> list:
        x, t, *w = primals
        g = cotangents[0]
        if g._impl.batch_dims > x._impl.batch_dims:
            # a batch of cotangents (jacrev, a vmapped pullback): the fused kernel takes one
            # (N, C) problem, so the gradient is the composite form, which vmap batches
            sm, a, big_a, denom, valid = _grad_parts(x, t, w, kw)
            dx = _valid_rows(valid, _row_scale(g, denom, kw["reduction"]) * _dlogits(sm, a, big_a))
        else:
            dx = _cross_entropy_grad(x, t, g, *w, **kw)
        return [dx, None, *[None] * len(w)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        x, t, *w = primals
        dx = _cross_entropy_grad(x, t, nb.ones_like(outputs[0]), *w, **kw)
        per_sample = nb.sum(dx * tangents[0], axis=1)
        return [per_sample if kw["reduction"] == "none" else nb.sum(per_sample)]


# -- gradient --------------------------------------------------------------------------------
class CrossEntropyGradOp(Operation):
    """d loss / d logits, scaled by the loss cotangent g (() for mean/sum, (N,) for none)."""

    name = "softmax_cross_entropy_grad"

    def abstract_eval(self, x: AVal, t: AVal, g: AVal, *w: AVal, **kw: Any) -> AVal:
        return x

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _rule(in_shapes, tuple(in_shapes[2]), kwargs["reduction"])

    def kernel(self, x: Any, t: Any, g: Any, *w: Any, ignore_index: int, smoothing: float, reduction: str) -> Any:
        n, c = shape_of(x)
        a, big_a, wt = _max_targets(x, t, _weight_arg(w), ignore_index, smoothing)
        if reduction == "mean":
            g = g / ops.reshape(ops.sum(wt, axis=0), ())
        scale = ops.reshape(g, (n, 1)) if reduction == "none" else g
        out = scale * (ops.reshape(big_a, (n, 1)) * ops.softmax(x, axis=1) - a)
        # ignored rows: exactly 0, not 0 * (g / 0) = nan when every row is ignored
        valid = ops.not_equal(t, ops.constant(ignore_index, DType.int64, x.device))
        valid = ops.broadcast_to(ops.reshape(valid, (n, 1)), (n, c))
        return ops.where(valid, out, ops.broadcast_to(ops.constant(0.0, x.dtype, x.device), (n, c)))

    def numpy_kernel(self, x: np.ndarray, t: np.ndarray, g: np.ndarray, *w: np.ndarray, **kw: Any) -> np.ndarray:
        a, big_a, wt = _np_targets(x, t, _weight_arg(w), kw["ignore_index"], kw["smoothing"])
        sm = _SOFTMAX.numpy_kernel(x, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = g[:, None] if kw["reduction"] == "none" else g / wt.sum() if kw["reduction"] == "mean" else g
            out = scale * (big_a[:, None] * sm - a)
        return np.where((t != kw["ignore_index"])[:, None], out, 0).astype(x.dtype)

    # out = V * S * (A * sm - a) with S the per-row loss cotangent (divided by sum(w_t) for mean)
    # and V the valid rows (a `where`, so ignored rows stay 0 when S is inf): linear in g, and in
    # x through sm = softmax(x). Written with nabla ops, so differentiable.
    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kw: Any) -> list:
        x, t, g, *w = primals
        h = cotangents[0]
        sm, a, big_a, denom, valid = _grad_parts(x, t, w, kw)
        scale = _row_scale(g, denom, kw["reduction"])
        dx = _valid_rows(valid, scale * nb.unsqueeze(big_a, 1) * sm * (h - nb.sum(h * sm, axis=1, keepdims=True)))
        per_row = nb.sum(h * _dlogits(sm, a, big_a), axis=1)  # 0 on ignored rows
        dg = per_row if kw["reduction"] == "none" else nb.sum(nb.where(valid, per_row / denom, 0.0))
        return [dx, None, dg, *[None] * len(w)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        x, t, g, *w = primals
        tx, tg = tangents[0], tangents[2]
        sm, a, big_a, denom, valid = _grad_parts(x, t, w, kw)
        d_sm = sm * (tx - nb.sum(sm * tx, axis=1, keepdims=True))
        red = kw["reduction"]
        return [
            _valid_rows(
                valid,
                _row_scale(g, denom, red) * nb.unsqueeze(big_a, 1) * d_sm
                + _row_scale(tg, denom, red) * _dlogits(sm, a, big_a),
            )
        ]


def _grad_parts(x: Tensor, t: Tensor, w: list, kw: _Kw) -> tuple:
    """softmax(x), a, A, the "mean" denominator sum(w_t) (1.0 for sum/none) and the valid rows
    (t != ignore_index, bool (N,)), as nabla ops."""
    a, big_a, wt = _reference_targets(x, t, _weight_arg(w), kw["ignore_index"], kw["smoothing"])
    denom = nb.sum(wt) if kw["reduction"] == "mean" else 1.0
    return nb.softmax(x, axis=1), a, big_a, denom, nb.not_equal(t, kw["ignore_index"])


def _dlogits(sm: Tensor, a: Tensor, big_a: Tensor) -> Tensor:
    """A * softmax(x) - a: each row's loss derivative by its logits, before the row's scale."""
    return nb.unsqueeze(big_a, 1) * sm - a


def _row_scale(g: Tensor, denom: Any, reduction: str) -> Tensor:
    return nb.unsqueeze(g, 1) if reduction == "none" else g / denom


def _valid_rows(valid: Tensor, v: Tensor) -> Tensor:
    """v with the ignored rows set to 0 (a `where`: their g / 0 = inf scale gives no nan)."""
    return nb.where(nb.unsqueeze(valid, 1), v, 0.0)


_cross_entropy, _cross_entropy_grad = CrossEntropyOp(), CrossEntropyGradOp()


def fused_cross_entropy(
    logits: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, reduction: str, smoothing: float
) -> Tensor | None:
    """The fused loss for unbatched (N, C) or (C,) logits with int targets, or None when the
    composite path must run (vmap, a weight that requires grad, N-d inputs)."""
    if logits.ndim not in (1, 2) or logits._impl.batch_dims or target._impl.batch_dims:
        return None
    if weight is not None and (weight.requires_grad or weight._impl.batch_dims):
        return None
    squeeze = logits.ndim == 1
    if squeeze:
        logits, target = nb.unsqueeze(logits, 0), nb.reshape(target, (1,))
    if target.dtype != nb.int64:
        target = nb.cast(target, nb.int64)
    extra = () if weight is None else (weight,)
    kw = {"ignore_index": int(ignore_index), "smoothing": float(smoothing)}
    if reduction == "mean" and (_rows_split(logits) or _rows_split(target)):
        # data parallel: each device sums its rows' losses (a partial sum, reduced when read);
        # the mean's denominator is global, so it is all-reduced (one scalar)
        denom = nb.sum(target_weights(target, weight, int(ignore_index), logits.dtype)[1])
        if denom.sharding is not None and denom.sharding.partial:
            denom = nb.reshard(denom, denom.sharding.without_partial())
        return _cross_entropy(logits, target, *extra, **kw, reduction="sum") / denom
    loss = _cross_entropy(logits, target, *extra, **kw, reduction=reduction)
    return nb.reshape(loss, ()) if squeeze and reduction == "none" else loss


def target_weights(target: Tensor, weight: Tensor | None, ignore_index: int, dtype: Any) -> tuple[Tensor, Tensor]:
    """(targets with ignored ones read as class 0, each target's weight w[t], 0 where ignored):
    what the composite path picks with, and what "mean" divides the summed loss by."""
    valid = nb.not_equal(target, ignore_index)
    safe = nb.where(valid, nb.cast(target, nb.int64), 0)
    w = nb.cast(valid, dtype)
    if weight is not None:
        w = w * nb.reshape(nb.index_select(weight, 0, nb.reshape(safe, (safe.numel(),))), safe.shape)
    return safe, w


def _rows_split(t: Tensor) -> bool:
    spec = t.sharding
    return spec is not None and bool(spec.dim_axes[0])

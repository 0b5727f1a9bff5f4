"""Scaled dot-product attention as one primitive: `dot_product_attention`.

`softmax(q k^T * scale + mask) v` written as ops is ~8 op calls (scale, transpose, matmul,
mask, softmax, matmul, plus broadcasts), and its backward ~20. As one primitive it is one
call. The VJP and JVP need the attention weights, which the second primitive,
`attention_weights`, recomputes from q, k and the mask, as layer_norm's derivatives
recompute its rstd (a forward and its backward in one MAX graph give the compiler both
copies of the same expressions to merge).

Rows that mask every key give zero weights (torch's SDPA and `_safe_softmax`), so neither the
output nor a derivative sees a NaN. Sharded, the key length and the head dim stay whole
(softmax needs a whole row; a partial q k^T cannot pass a softmax); batch dims, query length
and the value dim may be split.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from max.dtype import DType
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.sharding import OpShardingRule
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import reduction as _red
from .base import AVal, Operation, public, shape_of
from .cast import cast
from .linalg import matmul
from .view import broadcast_shapes, reshape, sum_to_shape, transpose

__all__ = ["dot_product_attention"]

_NEG_INF = -math.inf


# -- the scores and weights, on each backend ------------------------------------------------------
def _np_weights(
    q: np.ndarray, k: np.ndarray, mask: np.ndarray | None, scale: float, causal: bool, row_offset: int = 0
) -> np.ndarray:
    s = np.matmul(q * q.dtype.type(scale), np.swapaxes(k, -1, -2))
    if mask is not None:
        s = np.where(mask, s, s.dtype.type(_NEG_INF)) if mask.dtype == np.bool_ else s + mask
    if causal:
        s = np.where(np.tri(*s.shape[-2:], k=row_offset, dtype=bool), s, s.dtype.type(_NEG_INF))
    return _red._safe_softmax.numpy_kernel(s, axis=s.ndim - 1)


def _mx_weights(q: Any, k: Any, mask: Any, scale: float, causal: bool, row_offset: int = 0) -> Any:
    """`row_offset`: the global index of q's first row (queries split over devices)."""
    rank = q.rank
    s = ops.matmul(q * ops.constant(scale, q.dtype, q.device), ops.transpose(k, rank - 2, rank - 1))
    neg = ops.constant(_NEG_INF, s.dtype, s.device)
    if mask is not None:
        s = ops.where(mask, s, neg) if mask.dtype == DType.bool else s + mask
    if causal:  # keep j <= i (top-left aligned, as `tri`); band_part takes symbolic dims
        ones = ops.broadcast_to(ops.constant(1.0, s.dtype, s.device), shape_of(s)[-2:])
        keep = ops.band_part(ones, num_lower=None, num_upper=row_offset)
        s = ops.where(ops.greater(keep, ops.constant(0.0, s.dtype, s.device)), s, neg)
    return _red._safe_softmax.kernel(s, axis=rank - 1)


def _check_avals(q: AVal, k: AVal, v: AVal | None, mask: AVal | None, name: str) -> None:
    """Internal: the public function has checked (and shaped) the operands."""
    (qs, qd), (ks, kd) = q, k
    ok = len(qs) >= 2 and len(ks) == len(qs) and qs[:-2] == ks[:-2] and qs[-1] == ks[-1] and qd == kd
    ok = ok and _dt.is_float(qd)
    if v is not None:
        ok = ok and len(v[0]) == len(qs) and v[0][:-1] == ks[:-1] and v[1] == qd
    if mask is not None:
        scores = (*qs[:-1], ks[-2])
        ok = ok and len(mask[0]) == len(qs) and all(m in (1, n) for m, n in zip(mask[0], scores, strict=True))
        ok = ok and (mask[1] == qd or mask[1] == _dt.bool_)
    if not ok:
        raise TypeError(f"internal error: {name} got q {q}, k {k}, v {v}, mask {mask}")


def _causal_rows(kwargs: dict, offsets: list | None) -> dict:
    """A device holding queries from row r0 on (the queries split over devices) keeps keys
    j <= i + r0 under the causal mask; the keys are whole on every device (factor "s")."""
    if not kwargs["causal"] or offsets is None or offsets[0] is None or not offsets[0][-2]:
        return kwargs
    return {**kwargs, "row_offset": offsets[0][-2]}


def _sharding_rule(in_shapes: list, out_shapes: list, with_v: bool) -> OpShardingRule:
    """Factors: l (queries), s (keys), e (head dim), v (value dim); leading dims shared. A size-1
    mask dim facing l or s gets a factor of its own (x, y)."""
    terms = ["... l e", "... s e"] + (["... s v"] if with_v else [])
    if len(in_shapes) > len(terms):
        mask, queries, keys = in_shapes[-1], in_shapes[0][-2], in_shapes[1][-2]
        terms.append(f"... {'l' if mask[-2] == queries else 'x'} {'s' if mask[-1] == keys else 'y'}")
    out = "... l v" if with_v else "... l s"
    return OpShardingRule.parse(
        ", ".join(terms) + " -> " + out, in_shapes, out_shapes, whole=("e", "s"), reduction=None
    )


# -- derivatives shared by both ops -----------------------------------------------------------------
def _softmax_vjp(p: Tensor, dp: Tensor) -> Tensor:
    """dS = P (dP - rowsum(dP P)), softmax's own rule (its JVP is the same map); zero on
    masked entries and dead rows, where P = 0."""
    return _red._softmax.vjp_rule([], [dp], [p], axis=p.ndim - 1)[0]


def _scores_vjp(primals: list, p: Tensor, dp: Tensor, scale: float) -> list:
    """Cotangents of q, k (and a float mask) from the weights' cotangent `dp`."""
    q, k, *mask = primals
    ds = _softmax_vjp(p, dp)
    grads = [
        _bin.mul(matmul(ds, k), scale) if q._impl.requires_grad else None,
        _bin.mul(matmul(transpose(ds, -1, -2), q), scale) if k._impl.requires_grad else None,
    ]
    if mask:
        m = mask[0]
        grads.append(sum_to_shape(ds, m.shape) if m._impl.requires_grad and _dt.is_float(m.dtype) else None)
    return grads


def _weights_jvp(primals: list, tangents: list, p: Tensor, scale: float) -> Tensor:
    """dP = P (dS - rowsum(P dS)) with dS = (dq k^T + q dk^T) scale (+ d mask)."""
    q, k, *mask = primals
    tq, tk, *tmask = tangents
    ds = _bin.mul(_bin.add(matmul(tq, transpose(k, -1, -2)), matmul(q, transpose(tk, -1, -2))), scale)
    if mask and _dt.is_float(mask[0].dtype):
        ds = _bin.add(ds, tmask[0])
    return _softmax_vjp(p, ds)


class _ScoresOp(Operation):
    """Both attention ops: position-dependent, so that queries split along the sequence mask
    by their global rows (`_causal_rows`)."""

    position_dependent = True

    def local_kwargs(
        self, kwargs: dict, in_avals: list, out_shapes: list, offsets: list | None = None, sizes: list | None = None
    ) -> dict:
        return _causal_rows(kwargs, offsets)


class AttentionOp(_ScoresOp):
    """softmax(q k^T * scale + mask) v over q (..., L, E), k (..., S, E), v (..., S, Ev) with
    equal leading dims, and an optional mask of q's rank whose dims are 1 or the scores'
    (..., L, S): bool (True: attend) or float of q's dtype (added). kwargs: `scale` and
    `causal` (also keep only keys j <= i)."""

    name = "dot_product_attention"

    def abstract_eval(self, q: AVal, k: AVal, v: AVal, *mask: AVal, scale: float, causal: bool, **_: Any) -> AVal:
        _check_avals(q, k, v, mask[0] if mask else None, self.name)
        return (*q[0][:-1], v[0][-1]), q[1]

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _sharding_rule(in_shapes, out_shapes, with_v=True)

    def kernel(
        self, q: Any, k: Any, v: Any, mask: Any = None, *, scale: float, causal: bool, row_offset: int = 0
    ) -> Any:
        return ops.matmul(_mx_weights(q, k, mask, scale, causal, row_offset), v)

    def numpy_kernel(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Any = None, **kw: Any) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            return np.matmul(_np_weights(q, k, mask, **kw), v)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, scale: float, causal: bool) -> list:
        # O = P v: dv = P^T dO, dP = dO v^T, then through the weights
        q, k, v, *mask = primals
        g = cotangents[0]
        p = _weights(q, k, *mask, scale=scale, causal=causal)
        grads = _scores_vjp([q, k, *mask], p, matmul(g, transpose(v, -1, -2)), scale)
        dv = matmul(transpose(p, -1, -2), g) if v._impl.requires_grad else None
        return [*grads[:2], dv, *grads[2:]]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, scale: float, causal: bool) -> list:
        q, k, v, *mask = primals
        p = _weights(q, k, *mask, scale=scale, causal=causal)
        tp = _weights_jvp([q, k, *mask], [tangents[0], tangents[1], *tangents[3:]], p, scale)
        return [_bin.add(matmul(tp, v), matmul(p, tangents[2]))]


class AttentionWeightsOp(_ScoresOp):
    """softmax(q k^T * scale + mask) over the keys, (..., L, S): attention's derivatives."""

    name = "attention_weights"

    def abstract_eval(self, q: AVal, k: AVal, *mask: AVal, scale: float, causal: bool, **_: Any) -> AVal:
        _check_avals(q, k, None, mask[0] if mask else None, self.name)
        return (*q[0][:-1], k[0][-2]), q[1]

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _sharding_rule(in_shapes, out_shapes, with_v=False)

    def kernel(self, q: Any, k: Any, mask: Any = None, *, scale: float, causal: bool, row_offset: int = 0) -> Any:
        return _mx_weights(q, k, mask, scale, causal, row_offset)

    def numpy_kernel(self, q: np.ndarray, k: np.ndarray, mask: Any = None, **kw: Any) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            return _np_weights(q, k, mask, **kw)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, scale: float, causal: bool) -> list:
        return _scores_vjp(primals, outputs[0], cotangents[0], scale)

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, scale: float, causal: bool) -> list:
        return [_weights_jvp(primals, tangents, outputs[0], scale)]


_attention, _weights = AttentionOp(), AttentionWeightsOp()


@public()
def dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    scale: float | None = None,
    is_causal: bool = False,
) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v as one op (`F.scaled_dot_product_attention`'s core).

    Args:
        q: (..., L, E), floating point.
        k: (..., S, E), with q's leading dims and dtype.
        v: (..., S, Ev), with q's leading dims and dtype.
        mask: broadcastable to the scores (..., L, S) without growing them: bool (True: the
            key takes part) or floating point (added to the scores).
        scale: the score scale; 1 / sqrt(E) when None.
        is_causal: also keep only keys j <= i (the top-left aligned lower triangle).

    Rows that keep no key give zeros.

    Example:
        >>> q = nabla.ones(2, 4, 3)
        >>> nabla.dot_product_attention(q, q, q, is_causal=True).shape
        (2, 4, 3)
    """
    op = "dot_product_attention"
    for x, arg in ((q, "q"), (k, "k"), (v, "v")):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")
        if x.ndim < 2:
            raise ValueError(f"{op}: {arg} must have at least 2 dimensions, got shape {x.shape}")
        if x.dtype != q.dtype or not _dt.is_float(x.dtype):
            raise TypeError(f"{op}: q, k and v must share one floating dtype, got {q.dtype.name} and {x.dtype.name}")
    if k.shape[:-2] != q.shape[:-2] or v.shape[:-2] != q.shape[:-2] or k.shape[-1] != q.shape[-1]:
        raise ValueError(
            f"{op}: expected q (..., L, E), k (..., S, E), v (..., S, Ev); got {q.shape}, {k.shape}, {v.shape}"
        )
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(f"{op}: k and v must have the same length S (dim -2), got {k.shape} and {v.shape}")
    scores = (*q.shape[:-1], k.shape[-2])
    masks = ()
    if mask is not None:
        if not isinstance(mask, Tensor) or not (mask.dtype == _dt.bool_ or _dt.is_float(mask.dtype)):
            raise TypeError(f"{op}: mask must be a bool or floating-point Tensor, got {mask!r}")
        try:
            fits = broadcast_shapes(mask.shape, scores) == scores
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"{op}: mask of shape {mask.shape} does not broadcast to the scores' shape {scores}")
        if mask.ndim < q.ndim:
            mask = reshape(mask, (1,) * (q.ndim - mask.ndim) + mask.shape)
        masks = (mask if mask.dtype in (_dt.bool_, q.dtype) else cast(mask, q.dtype),)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return _attention(q, k, v, *masks, scale=scale, causal=bool(is_causal))

"""Layer normalization as one primitive: `layer_norm` (PyTorch's `torch.layer_norm`).

`(x - mean) * rsqrt(var + eps)` over the trailing `n` dims, written as ops, is ~18 op calls
with the affine part (keepdims reductions, broadcasts, scalar fills), and its backward twice
that. As one primitive it is one call, the affine weight and bias included.
The VJP and JVP need the reciprocal standard deviation, which the second primitive,
`layer_norm_rstd`, recomputes from `x` (on MAX the two lowerings share their subexpressions).
Both keep the trailing dims whole when sharded (a normalized row lives on one device).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.sharding import OpShardingRule
from ..core.sharding import rules as _rules
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import reduction as _red
from . import unary as _un
from .base import AVal, Operation, public, shape_of

__all__ = ["layer_norm"]


def _trailing(rank: int, n: int) -> tuple[int, ...]:
    return tuple(range(rank - n, rank))


def _np_stats(x: np.ndarray, n: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """NumPy: (x - mean, rsqrt(var + eps)) over the trailing `n` dims, kept as size 1."""
    axes = _trailing(x.ndim, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        centered = x - np.mean(x, axis=axes, keepdims=True)
        var = np.mean(centered * centered, axis=axes, keepdims=True)
        return centered, (1 / np.sqrt(var + x.dtype.type(eps))).astype(x.dtype)


def _mx_stats(x: Any, n: int, eps: float) -> tuple[Any, Any, tuple]:
    """MAX: (x - mean, rsqrt(var + eps)) with the trailing `n` dims merged into one, and the
    shape to restore."""
    shape = shape_of(x)
    lead = list(shape[: len(shape) - n])
    if n != 1:
        x = ops.reshape(x, [*lead, math.prod(shape[len(shape) - n :])])
    centered = x - ops.mean(x, axis=-1)
    var = ops.mean(centered * centered, axis=-1)
    return centered, ops.rsqrt(var + ops.constant(eps, x.dtype, x.device)), shape


# Both ops normalize one float input over its trailing `n` dims (kwargs `n`, `eps`); those
# dims are trailing in the physical shape too, so vmap's batch dims need no adapting.
class LayerNormOp(Operation):
    """The normalized x, times `weight` and plus `bias` over the normalized dims when the
    kwargs `has_weight` / `has_bias` say they follow x (unbatched operands of x's dtype)."""

    name = "layer_norm"

    def abstract_eval(self, x: AVal, *affine: AVal, n: int, eps: float, has_weight: bool, has_bias: bool) -> AVal:
        if len(affine) != has_weight + has_bias or any(a[0] != x[0][len(x[0]) - n :] for a in affine):
            raise TypeError(f"internal error: layer_norm of {x[0]} over {n} dims got affine {[a[0] for a in affine]}")
        return x

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        n = kwargs["n"]
        if len(in_shapes) == 1:
            return _rules.elementwise(in_shapes, out_shapes, whole=_trailing(len(in_shapes[0]), n))
        dims = " ".join(f"t{i}" for i in range(n))
        text = ", ".join([f"... {dims}", *[dims] * (len(in_shapes) - 1)]) + f" -> ... {dims}"
        return OpShardingRule.parse(text, in_shapes, out_shapes, whole=[f"t{i}" for i in range(n)])

    def kernel(self, x: Any, *affine: Any, n: int, eps: float, has_weight: bool, has_bias: bool) -> Any:
        centered, rstd, shape = _mx_stats(x, n, eps)
        y = centered * rstd
        for k, a in enumerate(affine):  # on the merged trailing dim, like y
            a = ops.reshape(a, [-1]) if n != 1 else a
            y = y * a if has_weight and k == 0 else y + a
        return ops.reshape(y, list(shape)) if n != 1 else y

    def numpy_kernel(
        self, x: np.ndarray, *affine: np.ndarray, n: int, eps: float, has_weight: bool, has_bias: bool
    ) -> np.ndarray:
        centered, rstd = _np_stats(x, n, eps)
        y = centered * rstd
        if has_weight:
            y = y * affine[0]
        return y + affine[-1] if has_bias else y

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kw: Any) -> list:
        # x_hat = (x - mean) rstd, y = x_hat w + b; with g_hat = g w:
        # dx = rstd (g_hat - mean(g_hat) - x_hat mean(g_hat x_hat)), dw = sum(g x_hat), db = sum(g)
        x, *affine = primals
        g, n, has_weight = cotangents[0], kw["n"], kw["has_weight"]
        x_hat = _normalized(x, outputs[0], n, kw["eps"], affine)
        axes, lead = _trailing(x.ndim, n), tuple(range(x.ndim - n))
        g_hat = _bin.mul(g, affine[0]) if has_weight else g
        rstd = _rstd(x, n=n, eps=kw["eps"])
        mean_g = _red.mean(g_hat, axes, True)
        mean_gy = _red.mean(_bin.mul(g_hat, x_hat), axes, True)
        grads = [_bin.mul(rstd, _bin.sub(_bin.sub(g_hat, mean_g), _bin.mul(x_hat, mean_gy)))]
        for k, a in enumerate(affine):
            part = _bin.mul(g, x_hat) if has_weight and k == 0 else g
            grads.append((_red.sum(part, lead) if lead else part) if a._impl.requires_grad else None)
        return grads

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        # u = rstd (t - mean(t)); dx_hat = u - x_hat mean(x_hat u); dy = dx_hat w + x_hat dw + db
        x, *affine = primals
        t, n, has_weight = tangents[0], kw["n"], kw["has_weight"]
        x_hat = _normalized(x, outputs[0], n, kw["eps"], affine)
        axes = _trailing(x.ndim, n)
        u = _bin.mul(_rstd(x, n=n, eps=kw["eps"]), _bin.sub(t, _red.mean(t, axes, True)))
        dy = _bin.sub(u, _bin.mul(x_hat, _red.mean(_bin.mul(x_hat, u), axes, True)))
        if has_weight:
            dy = _bin.add(_bin.mul(dy, affine[0]), _bin.mul(x_hat, tangents[1]))
        return [_bin.add(dy, tangents[-1]) if kw["has_bias"] else dy]


def _normalized(x: Tensor, y: Tensor, n: int, eps: float, affine: list) -> Tensor:
    """x_hat: the output itself without affine parameters, else recomputed without them."""
    return _layer_norm(x, n=n, eps=eps, has_weight=False, has_bias=False) if affine else y


class LayerNormRstdOp(Operation):
    """rsqrt(var + eps) over the trailing `n` dims, kept as size 1: layer_norm's derivatives."""

    name = "layer_norm_rstd"

    def abstract_eval(self, x: AVal, *, n: int, eps: float) -> AVal:
        shape = x[0]
        return shape[: len(shape) - n] + (1,) * n, x[1]

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _rules.reduction(in_shapes[0], _trailing(len(in_shapes[0]), kwargs["n"]), True, reduce=None)

    def kernel(self, x: Any, *, n: int, eps: float) -> Any:
        _, rstd, shape = _mx_stats(x, n, eps)
        return ops.reshape(rstd, [*shape[: len(shape) - n], *([1] * n)]) if n != 1 else rstd

    def numpy_kernel(self, x: np.ndarray, *, n: int, eps: float) -> np.ndarray:
        return _np_stats(x, n, eps)[1]

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, n: int, eps: float) -> list:
        # d rstd / dx = -rstd^3 (x - mean) / N
        (x,), g, rstd = primals, cotangents[0], outputs[0]
        axes = _trailing(x.ndim, n)
        centered = _bin.sub(x, _red.mean(x, axes, True))
        count = math.prod(x.shape[a] for a in axes)
        scale = _bin.mul(g, _bin.pow(rstd, 3.0))
        return [_bin.mul(_bin.div(scale, -float(count)), centered)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, n: int, eps: float) -> list:
        # d rstd = -rstd^3 mean((x - mean) t)
        (x,), t, rstd = primals, tangents[0], outputs[0]
        axes = _trailing(x.ndim, n)
        centered = _bin.sub(x, _red.mean(x, axes, True))
        return [_un.neg(_bin.mul(_bin.pow(rstd, 3.0), _red.mean(_bin.mul(centered, t), axes, True)))]


_layer_norm, _rstd = LayerNormOp(), LayerNormRstdOp()


@public()
def layer_norm(
    x: Tensor, normalized_shape: Any, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5
) -> Tensor:
    """Normalize over the trailing `normalized_shape` dims (biased variance), then scale by
    `weight` and shift by `bias` (PyTorch's `torch.layer_norm`).

    Args:
        x: (*, *normalized_shape), floating point.
        normalized_shape: int or tuple: the trailing dims to normalize over.
        weight, bias: optional elementwise affine parameters of shape `normalized_shape`.
        eps: added to the variance.

    Example:
        >>> nabla.layer_norm(nabla.tensor([[1.0, 3.0]]), 2, eps=0.0).tolist()
        [[-1.0, 1.0]]
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"layer_norm: x must be a Tensor, got {type(x).__name__}")
    if not _dt.is_float(x.dtype):
        raise TypeError(f"layer_norm: x must be floating point, got dtype {x.dtype.name}")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    n = len(shape)
    if n == 0 or n > x.ndim or tuple(x.shape[x.ndim - n :]) != shape:
        raise ValueError(f"layer_norm: normalized_shape {shape} must be the trailing dims of x's shape {x.shape}")
    for name, a in (("weight", weight), ("bias", bias)):  # torch rejects a broadcastable other shape too
        if a is not None and not isinstance(a, Tensor):
            raise TypeError(f"layer_norm: {name} must be a Tensor or None, got {type(a).__name__}")
        if a is not None and tuple(a.shape) != shape:
            raise ValueError(f"layer_norm: {name} must have shape normalized_shape {shape}, got {tuple(a.shape)}")
    affine = [a for a in (weight, bias) if a is not None]
    if all(a.dtype == x.dtype for a in affine) and not any(  # shapes are normalized_shape (checked above)
        t._impl.batch_dims for t in (x, *affine)
    ):  # one op; vmapped or mixed-dtype parameters take the broadcasting mul and add
        return _layer_norm(x, *affine, n=n, eps=float(eps), has_weight=weight is not None, has_bias=bias is not None)
    y = _layer_norm(x, n=n, eps=float(eps), has_weight=False, has_bias=False)
    if weight is not None:
        y = _bin.mul(y, weight)
    if bias is not None:
        y = _bin.add(y, bias)
    return y

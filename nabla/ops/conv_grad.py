"""The weight gradient of convolution: conv2d_weight_grad and conv3d_weight_grad, the third
primitive of the convolution family (with conv.py's conv2d/conv3d and conv_transpose2d/3d, whose
VJP rules call `_weight_grad`). Its MAX lowering, NumPy kernel, VJP, JVP and sharding rule are
side by side here, as in conv.py, with the same explicit per-side padding (`windows.py`).

conv.py imports this module; the helpers of conv.py that these ops use (the vmap folding arrays,
the channel sharding factors, `_apply`, `_prims`, conv2d's MAX kernel) are read through the module
(`_conv.`) when an op runs, never at import time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from max.graph import TensorType, ops

from ..core.sharding import OpShardingRule
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import conv as _conv
from . import mojo_kernels
from . import view as _view
from ._layout import as_nhwc
from .base import AVal, Operation
from .windows import (
    Pads,
    _axes,
    _mx_channels_last,
    _mx_pad,
    _np_pad,
    _np_windows,
    _offsets,
    _pairs,
    _shape,
    _subscripts,
)

__all__: list[str] = []  # internal: conv.py's VJP rules reach these primitives


def _fold_batch(v: Any, prefix: tuple, permute: Any, reshape: Any, shape: Any) -> Any:
    """(P.., N, C, *S) -> (N, P*C, *S): vmap's batch joins the channels as groups (the weight
    gradient's operands, which share the prefix)."""
    if not prefix:
        return v
    dims, b = tuple(shape(v)), len(prefix)
    v = permute(v, [b, *range(b), *range(b + 1, len(dims))])
    return reshape(v, (dims[b], math.prod(prefix) * dims[b + 1]) + dims[b + 2 :])


def _weight_grad(
    inp: Tensor, gout: Tensor, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple, groups: int
) -> Tensor:
    """`sum_{n,oh,ow} gout[n, o, oh, ow] * pad(inp)[n, c, oh*s + i*d, ow*s + j*d]` (likewise in
    3-D): the weight gradient of a convolution (inp = x, gout = cotangent) and of its transpose
    (inp = cotangent, gout = x). `padding` must be exact (every padded row is read).
    Shape (O, C/G, *kernel)."""
    n = len(kernel)
    m = math.prod(inp.shape[: -n - 1])
    inp = _view.reshape(inp, (m,) + inp.shape[-n - 1 :])
    gout = _view.reshape(gout, (m,) + gout.shape[-n - 1 :])
    return _conv._prims(n)[2](
        inp, gout, kernel=tuple(kernel), stride=stride, padding=padding, dilation=dilation, groups=groups
    )


class Conv2dWeightGradOp(mojo_kernels.UsesKernels, Operation):
    """`x (N, C, H, W)` and `g (N, O, OH, OW)` -> `(O, C/groups, kH, kW)`: conv2d's weight gradient
    (Conv3dWeightGradOp: the same over (D, H, W)). Bilinear; the batch is contracted (a
    batch-sharded operand leaves a partial sum).

    MAX: a stride-1 convolution is one matmul per group. Flattened with the padded width Wp,
    the input row read by offset (i, j) is the output row plus i*d*Wp + j*d, so each offset's
    operand is a contiguous shift of the flattened input (g is zero-padded to Hp x Wp, which
    zeroes the rows that wrap). Strided ones run as a convolution whose batch is C/G and whose
    channels are the images."""

    name = "conv2d_weight_grad"
    partial_ok = (0, 1)
    scales_partials = True
    spatial = 2

    def abstract_eval(self, x: AVal, g: AVal, *, kernel: tuple, groups: int, **kw: Any) -> AVal:
        (xs, dtype), gs, n = x, g[0], self.spatial
        if len(xs) < n + 2 or len(gs) != len(xs) or xs[: -n - 1] != gs[: -n - 1]:
            raise ValueError(f"{self.name}: input {xs} and output gradient {gs} do not match")
        return xs[: -n - 2] + (gs[-n - 1], xs[-n - 1] // groups) + tuple(kernel), dtype

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        x, g = in_shapes
        n, axes = self.spatial, _axes(self.spatial)
        ci, co, sizes, whole = _conv._channel_factors(kwargs["groups"], x[-n - 1], g[-n - 1], n)
        x_dims = (("n",), ci, *((a,) for a in axes))
        g_dims = (("n",), co, *((f"o{a}",) for a in axes))
        out = (co, ci[-1:], *((f"k{a}",) for a in axes))
        return OpShardingRule((x_dims, g_dims), (out,), sizes, frozenset(whole), "sum", self.partial_ok)

    def local_kwargs(self, kwargs: dict, in_avals: list, out_shapes: list) -> dict:
        n = self.spatial
        per_group = out_shapes[0][-n - 1]
        if kwargs["groups"] == 1 or not per_group:
            return kwargs
        return {**kwargs, "groups": in_avals[0][0][-n - 1] // per_group}  # a sharded group factor

    def kernel(
        self, x: Any, g: Any, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple, groups: int
    ) -> Any:
        prefix = _shape(x)[: -self.spatial - 2]
        x, g = _fold_batch(x, prefix, *_conv._MX_ARRAYS), _fold_batch(g, prefix, *_conv._MX_ARRAYS)
        groups *= math.prod(prefix)
        if self.spatial == 2 and _mojo_fits(x, g, kernel, stride, padding, dilation, groups):
            res = _mx_wgrad_mojo(x, g, kernel, padding)
        elif all(s == 1 for s in stride):
            res = _mx_wgrad_shifted(x, g, kernel, padding, dilation, groups)
        else:
            res = _mx_wgrad_conv(x, g, stride, padding, dilation, groups)
        return ops.reshape(res, prefix + (_shape(res)[0] // math.prod(prefix),) + _shape(res)[1:])

    def numpy_kernel(
        self, x: np.ndarray, g: np.ndarray, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple, groups: int
    ) -> np.ndarray:
        n = self.spatial
        prefix = x.shape[: -n - 2]
        p = math.prod(prefix)
        x, g, groups = _fold_batch(x, prefix, *_conv._NP_ARRAYS), _fold_batch(g, prefix, *_conv._NP_ARRAYS), groups * p
        m, c = x.shape[:2]
        o, out = g.shape[1], g.shape[2:]
        xg = _np_pad(x.reshape((m, groups, c // groups) + x.shape[2:]), padding)
        win = _np_windows(xg, kernel, stride, dilation, out)
        sp, taps = _subscripts(n)
        gg = g.reshape((m, groups, o // groups) + out)
        res = np.einsum(f"ngc{sp}{taps},ngo{sp}->goc{taps}", win, gg, optimize=True)
        res = res.reshape(prefix + (o // p,) + res.shape[2:])  # (G, O/G, ...) -> (P.., O, ...)
        return np.ascontiguousarray(res, dtype=x.dtype)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, kernel: tuple, **kw: Any) -> list:
        x, g = primals
        ct = cotangents[0]
        conv, transpose, _ = _conv._prims(self.spatial)
        dx = _conv._apply(transpose, g, ct, **kw) if x.requires_grad else None
        dg = _conv._apply(conv, x, ct, **kw) if g.requires_grad else None
        return [dx, dg]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        x, g = primals
        tx, tg = tangents
        return [_bin.add(self(tx, g, **kw), self(x, tg, **kw))]


class Conv3dWeightGradOp(Conv2dWeightGradOp):
    """`x (N, C, D, H, W)` and `g (N, O, OD, OH, OW)` -> `(O, C/groups, kD, kH, kW)`."""

    name = "conv3d_weight_grad"
    spatial = 3


def _mx_wgrad_shifted(x: Any, g: Any, kernel: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
    """MAX, stride 1: per group, (K*C/G, M) shifted rows of the flattened padded input times
    the (M, O/G) zero-padded output gradient, M = N * Hp * Wp (N * Dp * Hp * Wp in 3-D)."""
    n = len(kernel)
    b, c, size = _shape(x)[0], _shape(x)[1], _shape(x)[2:]
    o, out = _shape(g)[1], _shape(g)[2:]
    cg, og, sp = c // groups, o // groups, list(range(3, n + 3))
    if groups == 1:  # the same layouts as below without the unit group axis (MAX's 2-D kernels are faster)
        xt = _mx_pad(ops.permute(x, [1, 0, *range(2, n + 2)]), padding)  # (C, N, *Sp)
        gt = _mx_channels_last(g)  # (N, *OS, O)
    else:
        xt = _mx_pad(ops.permute(ops.reshape(x, (b, groups, cg) + size), [1, 2, 0, *sp]), padding)
        gt = ops.permute(ops.reshape(g, (b, groups, og) + out), [1, 0, *sp, 2])  # (G, N, *OS, O/G)
    padded = _shape(xt)[-n:]
    m, lead = b * math.prod(padded), () if groups == 1 else (groups,)
    steps = [math.prod(padded[i + 1 :]) for i in range(n)]  # the flattened strides of the padded dims
    offsets = [sum(a * s for a, s in zip(offs, steps, strict=True)) for _, *offs in _offsets(kernel, dilation)]
    xt = ops.reshape(xt, lead + (cg, m))
    xt = ops.pad(xt, [0, 0] * len(lead) + [0, 0, 0, offsets[-1]])  # the rows the last shift reads
    zeros = [p for a, q in zip(padded, out, strict=True) for p in (0, a - q)]
    gt = ops.pad(gt, [0, 0] * len(lead) + [0, 0, *zeros, 0, 0])  # zeroes the wrapped rows
    sliced = [ops.slice_tensor(xt, [slice(None)] * len(lead) + [slice(None), slice(s, s + m)]) for s in offsets]
    cols = ops.reshape(ops.stack(sliced, axis=len(lead)), lead + (len(offsets) * cg, m))
    res = ops.matmul(cols, ops.reshape(gt, lead + (m, og)))  # (G.., K*C/G, O/G)
    res = ops.permute(ops.reshape(res, (groups, *kernel, cg, og)), [0, n + 2, n + 1, *range(1, n + 1)])
    return ops.reshape(res, (o, cg) + tuple(kernel))


_MOJO_TASKS = 8  # partial sums, one per task: MAX's CPU workers share them
_MOJO_MAX_WEIGHT = 1 << 17  # weight elements up to which the Mojo kernel is used (its partials stay small)


def _mojo_fits(x: Any, g: Any, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> bool:
    """Whether nabla's Mojo kernel takes this 2-D weight gradient: stride and dilation 1, one
    group, float32 on the CPU, a small weight (W2's: 288 and 18,432 elements), where MAX's
    matmul of shifted rows has its worst shapes."""
    if not (groups == 1 and all(s == 1 for s in stride) and all(d == 1 for d in dilation)):
        return False
    (_, c, *size), (_, o, *out) = _shape(x), _shape(g)
    if not all(isinstance(d, int) for d in (c, o, *size, *out)):  # the batch alone may be symbolic
        return False
    # the kernel reads the padded input at every output pixel plus every offset: sizes must agree
    exact = all(s + a + b - k + 1 == q for s, (a, b), k, q in zip(size, _pairs(padding), kernel, out, strict=True))
    return exact and c * o * math.prod(kernel) <= _MOJO_MAX_WEIGHT and mojo_kernels.usable(x, g)


def _mx_wgrad_mojo(x: Any, g: Any, kernel: tuple, padding: Pads) -> Any:
    """MAX: the weight gradient by nabla's kernel (`mojo/conv.mojo`) on the NHWC forms (twins
    inside a conv net, see `_layout.py`): per-task partial sums (T, kH*kW*C, O), summed here."""
    xp = _mx_pad(as_nhwc(x), padding, trail=1)
    c, o = _shape(x)[1], _shape(g)[1]
    out = TensorType(x.dtype, (_MOJO_TASKS, math.prod(kernel) * c, o), device=x.device)
    parts = mojo_kernels.call("nabla_conv2d_weight_grad_nhwc", [xp, as_nhwc(g)], out, kh=kernel[0], kw=kernel[1])
    dw = ops.reshape(ops.sum(parts, axis=0), (*kernel, c, o))
    return ops.permute(dw, [3, 2, 0, 1])  # (kH, kW, C, O) -> (O, C, kH, kW)


def _mx_wgrad_conv(x: Any, g: Any, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
    """MAX, any stride: a convolution of the input (batch C/G, channels (G, N)) with the output
    gradient as its filter (G*O/G, N, *OS); stride and dilation swap roles."""
    n = len(stride)
    b, c, size = _shape(x)[0], _shape(x)[1], _shape(x)[2:]
    o, out = _shape(g)[1], _shape(g)[2:]
    cg, og, sp = c // groups, o // groups, list(range(3, n + 3))
    a = ops.reshape(ops.permute(ops.reshape(x, (b, groups, cg) + size), [2, 1, 0, *sp]), (cg, groups * b) + size)
    f = ops.reshape(ops.permute(ops.reshape(g, (b, groups, og) + out), [1, 2, 0, *sp]), (o, b) + out)
    res = _conv.Conv2dOp._kernel(a, f, stride=dilation, padding=padding, dilation=stride, groups=groups)  # (C/G, O, *K)
    return ops.permute(res, [1, 0, *range(2, n + 2)])


_conv2d_weight_grad = Conv2dWeightGradOp()
_conv3d_weight_grad = Conv3dWeightGradOp()

"""Pooling with PyTorch's layouts (NCHW / NCL): max, average and adaptive average pooling.

Primitives (each with MAX lowering, NumPy kernel, VJP and JVP side by side):
    max_pool2d          window maximum over -inf padding
    max_pool2d_grad     routes a cotangent to each window's first maximum (max_pool2d's VJP)
    max_pool2d_gather   reads a tensor at each window's first maximum (max_pool2d's JVP; the
                        transpose of max_pool2d_grad)
    avg_pool2d          window sum over a per-window divisor
    avg_pool2d_grad     its transpose

Padding inside the primitives is explicit per side, as in `conv.py`; the window helpers both
use are in `windows.py`. The 1-D functions run the 2-D primitives on a height-1 image;
`adaptive_avg_pool2d` is composite.

Sharding (`_spatial_rule`): the leading (batch, channel) dims pass through, the two spatial dims
stay whole (a window may cross a shard boundary).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from max.dtype import DType
from max.graph import BufferType, TensorType, ops

from ..core.sharding import OpShardingRule
from ..core.sharding import rules as _rules
from ..core.tensor.tensor import Tensor
from . import linalg as _linalg
from . import mojo_kernels
from . import reduction as _red
from . import view as _view
from ._layout import as_nhwc, nhwc, to_nchw
from .base import AVal, Operation, public
from .creation import tensor
from .windows import (  # the window helpers are shared with convolution
    Pads,
    _batched,
    _check_tensor,
    _ints,
    _lead,
    _mx_const,
    _mx_pad,
    _mx_pool,
    _mx_strided,
    _np_pad,
    _np_windows,
    _offsets,
    _out_size,
    _shape,
)

__all__ = ["adaptive_avg_pool2d", "avg_pool1d", "avg_pool2d", "max_pool1d", "max_pool2d"]


# -- max pooling ----------------------------------------------------------------------------------
def _pool_out(x_shape: tuple, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple) -> tuple[int, int]:
    return (
        _out_size(x_shape[-2], padding[0], padding[1], kernel[0], stride[0], dilation[0]),
        _out_size(x_shape[-1], padding[2], padding[3], kernel[1], stride[1], dilation[1]),
    )


def _spatial_rule(in_shapes: list, out_shapes: list, partial_ok: str | tuple | None) -> OpShardingRule:
    rank = len(out_shapes[0])
    return _rules.elementwise(in_shapes, out_shapes, whole=(rank - 2, rank - 1), partial_ok=partial_ok)


class _PoolOp(Operation):
    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _spatial_rule(in_shapes, out_shapes, self.partial_ok)

    def abstract_eval(
        self, x: AVal, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple, **kw: Any
    ) -> AVal:
        lead = _lead(x[0], 2, self.name)
        oh, ow = _pool_out(x[0], kernel, stride, padding, dilation)
        if oh < 1 or ow < 1:
            raise ValueError(f"{self.name}: input {x[0]} with padding {padding} is smaller than the kernel {kernel}")
        return lead + (oh, ow), x[1]


def _real_windows(size: tuple, padding: Pads, kernel: tuple, stride: tuple, dilation: tuple, out: tuple) -> Any:
    """(OH, OW, kH, kW) bool: whether each window element is an input element, not padding;
    None without padding. PyTorch's scan starts at a window's first input element, so padding
    never wins, not even a tie with an all -inf window (whose gradient goes to that element)."""
    if max(padding) <= 0:
        return None
    return _np_windows(_np_pad(np.ones(size, bool), padding, False), kernel, stride, dilation, out)


def _np_first_max(x: np.ndarray, padding: Pads, kernel: tuple, stride: tuple, dilation: tuple, out: tuple) -> Any:
    """Index k (PyTorch scan order) of each window's first maximum among its input elements; a
    NaN wins (the last one, as PyTorch's `val > max || isnan(val)` update does)."""
    win = _np_windows(_np_pad(x, padding, -np.inf), kernel, stride, dilation, out)
    real = _real_windows(x.shape[-2:], padding, kernel, stride, dilation, out)
    best = win[..., 0, 0].copy()
    seen = True if real is None else real[..., 0, 0]  # whether the scan has met an input element
    idx = np.zeros(best.shape, np.int64)
    for k, _, _ in _offsets(kernel, dilation)[1:]:
        v = win[..., k // kernel[1], k % kernel[1]]
        upd = (v > best) | np.isnan(v)
        if real is not None:
            ok = real[..., k // kernel[1], k % kernel[1]]
            upd, seen = ok & (upd | ~seen), seen | ok
        best = np.where(upd, v, best)
        idx[upd] = k
    return idx


def _mx_real(
    x_size: tuple, padding: Pads, kernel: tuple, stride: tuple, dilation: tuple, out: tuple, device: Any, trail: int = 0
) -> list | None:
    """MAX: `_real_windows` as one bool constant per window offset, (OH, OW) ((OH, OW, 1) with
    `trail`=1, NHWC), in PyTorch's scan order; None without padding."""
    real = _real_windows(x_size, padding, kernel, stride, dilation, out)
    if real is None:
        return None
    shape = real.shape[:2] + (1,) * trail
    return [
        ops.constant(real[..., k // kernel[1], k % kernel[1]].reshape(shape), DType.bool, device=device)
        for k, _, _ in _offsets(kernel, dilation)
    ]


_MAX_PIECES = 16  # larger windows: MAX's NHWC max_pool2d beats one strided slice per offset


def _mx_pieces(xp: Any, kernel: tuple, stride: tuple, dilation: tuple, out: tuple, trail: int = 0) -> list:
    """MAX: each window offset's strided view (..., OH, OW) of `xp (..., H, W)` (with `trail`=1,
    (N, OH, OW, C) of NHWC), in PyTorch's scan order. Kept as separate strided slices: on CPU,
    MAX's stack and its reductions over a short axis cost 10-20x what the slices and an
    elementwise chain over them cost."""
    return [_mx_strided(xp, (r, c), stride, out, trail) for _, r, c in _offsets(kernel, dilation)]


def _mx_first_max(pieces: list, real: list | None = None) -> Any:
    """MAX: the float32 index k of each window's first maximum over the window `pieces`; a NaN
    wins (the last one), as in PyTorch. Scores: NaN at k -> 2K + k, the maximum at k -> K - k,
    others 0; the best score is unique per window and decodes to k. `real` (`_mx_real`) keeps
    padding from winning a tie with an all -inf window. Materialized, so consumers that read
    an element several times (an upsample) do not recompute the chain."""
    k = len(pieces)
    m = functools.reduce(ops.max, pieces)
    best = None
    for i, v in enumerate(pieces):
        nan = ops.cast(ops.is_nan(v), DType.float32)
        top = ops.equal(v, m)
        top = ops.cast(top if real is None else ops.logical_and(top, real[i]), DType.float32)
        score = ops.add(ops.mul(nan, float(2 * k + i)), ops.mul(top, float(k - i)))
        best = score if best is None else ops.max(best, score)
    index = ops.where(ops.greater_equal(best, float(2 * k)), ops.sub(best, float(2 * k)), ops.sub(float(k), best))
    return _mx_materialize(index)


def _mx_materialize(v: Any) -> Any:
    """MAX: `v` computed once into memory (a store to a scratch buffer). MAX fuses elementwise
    producers into their consumers, which recomputes them per read."""
    buf = ops.buffer_create(BufferType(v.dtype, v.shape, device=v.device))
    ops.buffer_store(buf, v)
    return ops.buffer_load(buf)


def _mx_shares(index: Any, values: list) -> list:
    """MAX: `values[k]` where a window's `index` is k, else 0, for each k."""
    zero = ops.constant(0, values[0].dtype, device=values[0].device)
    return [ops.where(ops.equal(index, float(k)), v, zero) for k, v in enumerate(values)]


def _mx_fold(cols: Any, kernel: tuple, stride: tuple, dilation: tuple, size: tuple) -> Any:
    """MAX: add the window values `cols (..., K, OH, OW)` back into a zero (..., *size) tensor."""
    shape = _shape(cols)
    lead, (k, oh, ow) = shape[:-3], shape[-3:]
    cols = ops.reshape(cols, (math.prod(lead), k, oh * ow))
    res = ops.fold(cols, tuple(size), tuple(kernel), stride=tuple(stride), dilation=tuple(dilation))
    return ops.reshape(res, lead + tuple(size))


def _tiles_fit(kernel: tuple, stride: tuple, dilation: tuple) -> bool:
    """Windows that tile the image without overlap (kernel == stride, no dilation): the common
    `max_pool2d(x, 2)`. Its gradient is an upsample, not a scatter."""
    return tuple(stride) == tuple(kernel) and tuple(dilation) == (1, 1)


def _mx_upsample(v: Any, kernel: tuple) -> Any:
    """MAX: every element of `v (..., OH, OW)` repeated over its kH x kW tile: (..., OH*kH, OW*kW)."""
    shape = _shape(v)
    size = shape[:-2] + (shape[-2] * kernel[0], shape[-1] * kernel[1])
    return ops.resize_nearest(v, size, coordinate_transform_mode=2, round_mode=2)  # asymmetric, floor: exact


def _kernel_takes(padding: Pads, *values: Any) -> bool:
    """Whether nabla's Mojo kernel takes a tile gradient: no padding, its values usable."""
    return max(padding) <= 0 and mojo_kernels.usable(*values)


def _mx_tiles_grad_nhwc(x: Any, g: Any, kernel: tuple, padding: Pads) -> Any:
    """MAX: max_pool2d_grad for windows that tile the image, on the NHWC `x` (N, H, W, C) and the
    NCHW `g` (its twin, or a permute: g is the smaller): each tile's first maximum takes g,
    broadcast over the tile in a 6-D (N, OH, kH, OW, kW, C) view whose contiguous inner axis
    is the channels. Returns NHWC. On W2's 64x32x28x28 activation this takes 4.0 ms against
    6.8 ms for the NCHW form (where the tile axes are innermost and short); on CPU, without
    padding, nabla's Mojo kernel (`mojo/pooling.mojo`) does it in one pass: 0.7-1.0 ms."""
    gt = as_nhwc(g)
    if _kernel_takes(padding, x, gt):
        out = TensorType(x.dtype, x.shape, device=x.device)
        return mojo_kernels.call("nabla_max_pool_tiles_grad_nhwc", [x, gt], out, kh=kernel[0], kw=kernel[1])
    xp = _mx_pad(x, padding, float("-inf"), trail=1)
    n, oh, ow, c = _shape(gt)
    (kh, kw), size = kernel, _shape(xp)[1:3]
    real = _mx_real(_shape(x)[1:3], padding, kernel, kernel, (1, 1), (oh, ow), g.device, trail=1)
    index = _mx_first_max(_mx_pieces(xp, kernel, kernel, (1, 1), (oh, ow), trail=1), real)
    position = np.arange(kh * kw, dtype=np.float32).reshape(1, 1, kh, 1, kw, 1)
    position = ops.constant(position, DType.float32, device=g.device)
    tile = ops.equal(ops.reshape(index, (n, oh, 1, ow, 1, c)), position)
    zero = ops.constant(0, g.dtype, device=g.device)
    dxp = ops.reshape(ops.where(tile, ops.reshape(gt, (n, oh, 1, ow, 1, c)), zero), (n, oh * kh, ow * kw, c))
    dxp = _mx_pad(dxp, (0, size[0] - oh * kh, 0, size[1] - ow * kw), trail=1)  # rows no window reads
    return _mx_pad(dxp, tuple(-p for p in padding), trail=1)


class MaxPool2dOp(_PoolOp):
    """Window maximum of `x (..., H, W)`; padding is -inf, so it never wins over real values."""

    name = "max_pool2d"

    def kernel(self, x: Any, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple) -> Any:
        # A NaN in a window makes its maximum NaN, as in PyTorch (MAX's max and max_pool2d drop NaNs).
        nan = ops.constant(float("nan"), x.dtype, device=x.device)
        if math.prod(kernel) <= _MAX_PIECES:  # an elementwise chain over strided slices: no layout change
            out = _pool_out(_shape(x), kernel, stride, padding, dilation)
            twin = nhwc(x)  # x's NHWC form where a convolution left one: slices there are faster
            trail = 0 if twin is None else 1
            xp = _mx_pad(x if twin is None else twin, padding, float("-inf"), trail)
            pieces = _mx_pieces(xp, kernel, stride, dilation, out, trail)
            has_nan = functools.reduce(ops.logical_or, [ops.is_nan(v) for v in pieces])
            y = ops.where(has_nan, nan, functools.reduce(ops.max, pieces))
            return y if twin is None else to_nchw(y)
        xp = _mx_pad(x, padding, float("-inf"))

        def pool(xn: Any) -> Any:
            return ops.max_pool2d(xn, tuple(kernel), stride=tuple(stride), dilation=tuple(dilation))

        has_nan = ops.greater(
            _mx_pool(ops.cast(ops.is_nan(xp), x.dtype), pool), ops.constant(0, x.dtype, device=x.device)
        )
        return ops.where(has_nan, nan, _mx_pool(xp, pool))

    def numpy_kernel(
        self, x: np.ndarray, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple
    ) -> np.ndarray:
        out = _pool_out(x.shape, kernel, stride, padding, dilation)
        win = _np_windows(_np_pad(x, padding, -np.inf), kernel, stride, dilation, out)
        return np.ascontiguousarray(win.max(axis=(-2, -1)))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kw: Any) -> list:
        return [_max_pool2d_grad(primals[0], cotangents[0], **kw)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        return [_max_pool2d_gather(primals[0], tangents[0], **kw)]


class MaxPool2dGradOp(mojo_kernels.UsesKernels, Operation):
    """`g (..., OH, OW)` added into a zero tensor shaped like `x` at each window's first maximum
    of `x`. Linear in `g`; `x` only chooses positions (no gradient)."""

    name = "max_pool2d_grad"
    partial_ok = (1,)  # linear in g

    def abstract_eval(self, x: AVal, g: AVal, **kw: Any) -> AVal:
        return x

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _spatial_rule(in_shapes, out_shapes, self.partial_ok)

    def kernel(self, x: Any, g: Any, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple) -> Any:
        fits = _tiles_fit(kernel, stride, dilation)
        twin = nhwc(x) if fits else None
        if twin is None and fits and x.rank == 4 and _kernel_takes(padding, x, g):
            # No twin (a pool on the input, or after a layer that is not a convolution):
            # permuting x for nabla's kernel and back still beats the NCHW form below (at
            # W2's pool shapes: 2.8 / 1.8 ms vs 8.3 / 4.8).
            twin = as_nhwc(x)
        if twin is not None:
            return to_nchw(_mx_tiles_grad_nhwc(twin, g, kernel, padding))
        xp = _mx_pad(x, padding, float("-inf"))
        out, size = _shape(g)[-2:], _shape(xp)[-2:]
        real = _mx_real(_shape(x)[-2:], padding, kernel, stride, dilation, out, g.device)
        index = _mx_first_max(_mx_pieces(xp, kernel, stride, dilation, out), real)
        if _tiles_fit(kernel, stride, dilation):  # g goes to the tile position its index names
            tiled = (out[0] * kernel[0], out[1] * kernel[1])
            rows, cols = np.arange(tiled[0]) % kernel[0], np.arange(tiled[1]) % kernel[1]
            position = ops.constant(
                (rows[:, None] * kernel[1] + cols[None, :]).astype(np.float32), DType.float32, device=g.device
            )
            zero = ops.constant(0, g.dtype, device=g.device)
            dxp = ops.where(ops.equal(_mx_upsample(index, kernel), position), _mx_upsample(g, kernel), zero)
            dxp = _mx_pad(dxp, (0, size[0] - tiled[0], 0, size[1] - tiled[1]))  # rows no window reads
        else:  # overlapping windows: scatter-add each window's share
            shares = _mx_shares(index, [g] * math.prod(kernel))
            dxp = _mx_fold(ops.stack(shares, axis=-3), kernel, stride, dilation, size)
        return _mx_pad(dxp, tuple(-p for p in padding))

    def numpy_kernel(
        self, x: np.ndarray, g: np.ndarray, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple
    ) -> np.ndarray:
        out = g.shape[-2:]
        xp = _np_pad(x, padding, -np.inf)
        idx = _np_first_max(x, padding, kernel, stride, dilation, out)
        dxp = np.zeros(xp.shape, g.dtype)
        for k, r, c in _offsets(kernel, dilation):
            rows = slice(r, r + (out[0] - 1) * stride[0] + 1, stride[0])
            cols = slice(c, c + (out[1] - 1) * stride[1] + 1, stride[1])
            dxp[..., rows, cols] += np.where(idx == k, g, 0)
        return np.ascontiguousarray(_np_pad(dxp, tuple(-p for p in padding)))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kw: Any) -> list:
        return [None, _max_pool2d_gather(primals[0], cotangents[0], **kw)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        return [_max_pool2d_grad(primals[0], tangents[1], **kw)]


class MaxPool2dGatherOp(_PoolOp):
    """`z` (shaped like `x`) read at each window's first maximum of `x`: the pooled shape.
    Linear in `z`; the transpose of max_pool2d_grad."""

    name = "max_pool2d_gather"
    partial_ok = (1,)  # linear in z

    def abstract_eval(self, x: AVal, z: AVal, **kw: Any) -> AVal:
        return super().abstract_eval(x, **kw)

    def kernel(self, x: Any, z: Any, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple) -> Any:
        out = _pool_out(_shape(x), kernel, stride, padding, dilation)
        real = _mx_real(_shape(x)[-2:], padding, kernel, stride, dilation, out, x.device)
        index = _mx_first_max(_mx_pieces(_mx_pad(x, padding, float("-inf")), kernel, stride, dilation, out), real)
        return functools.reduce(
            ops.add, _mx_shares(index, _mx_pieces(_mx_pad(z, padding), kernel, stride, dilation, out))
        )

    def numpy_kernel(
        self, x: np.ndarray, z: np.ndarray, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple
    ) -> np.ndarray:
        out = _pool_out(x.shape, kernel, stride, padding, dilation)
        idx = _np_first_max(x, padding, kernel, stride, dilation, out)
        zw = _np_windows(_np_pad(z, padding), kernel, stride, dilation, out)
        zw = zw.reshape(zw.shape[:-2] + (-1,))
        return np.ascontiguousarray(np.take_along_axis(zw, idx[..., None], axis=-1)[..., 0])

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kw: Any) -> list:
        return [None, _max_pool2d_grad(primals[0], cotangents[0], **kw)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        return [_max_pool2d_gather(primals[0], tangents[1], **kw)]


_max_pool2d = MaxPool2dOp()
_max_pool2d_grad = MaxPool2dGradOp()
_max_pool2d_gather = MaxPool2dGatherOp()


# -- average pooling ------------------------------------------------------------------------------
def _avg_divisor(div_h: tuple, div_w: tuple) -> np.ndarray:
    return np.outer(np.asarray(div_h, np.float64), np.asarray(div_w, np.float64))


class AvgPool2dOp(_PoolOp):
    """Window sums of zero-padded `x (..., H, W)` divided by `outer(div_h, div_w)` (one divisor
    per output position, so count_include_pad / ceil_mode / divisor_override are all data)."""

    name = "avg_pool2d"
    partial_ok = "additive"

    def abstract_eval(self, x: AVal, *, div_h: tuple, div_w: tuple, **kw: Any) -> AVal:
        shape, dtype = super().abstract_eval(x, dilation=(1, 1), **kw)
        if shape[-2:] != (len(div_h), len(div_w)):
            raise ValueError(f"{self.name}: divisors {len(div_h)}x{len(div_w)} do not match the output {shape}")
        return shape, dtype

    def kernel(self, x: Any, *, kernel: tuple, stride: tuple, padding: Pads, div_h: tuple, div_w: tuple) -> Any:
        def pool(xn: Any) -> Any:  # the window sum / (kH * kW)
            return ops.avg_pool2d(xn, tuple(kernel), stride=tuple(stride), count_boundary=True)

        y = _mx_pool(_mx_pad(x, padding), pool)
        return ops.mul(y, _mx_const(kernel[0] * kernel[1] / _avg_divisor(div_h, div_w), y))

    def numpy_kernel(
        self, x: np.ndarray, *, kernel: tuple, stride: tuple, padding: Pads, div_h: tuple, div_w: tuple
    ) -> np.ndarray:
        out = (len(div_h), len(div_w))
        win = _np_windows(_np_pad(x, padding), kernel, stride, (1, 1), out)
        res = win.sum(axis=(-2, -1)) / _avg_divisor(div_h, div_w)
        return np.ascontiguousarray(res, dtype=x.dtype)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kw: Any) -> list:
        return [_avg_pool2d_grad(cotangents[0], size=primals[0].shape[-2:], **kw)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        return [_avg_pool2d(tangents[0], **kw)]


class AvgPool2dGradOp(Operation):
    """The transpose of avg_pool2d: `g (..., OH, OW)` over the divisors, added back over each
    window, into a tensor of spatial `size`."""

    name = "avg_pool2d_grad"
    partial_ok = "additive"

    def abstract_eval(self, g: AVal, *, size: tuple, **kw: Any) -> AVal:
        return g[0][:-2] + tuple(size), g[1]

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _spatial_rule(in_shapes, out_shapes, self.partial_ok)

    def kernel(
        self, g: Any, *, size: tuple, kernel: tuple, stride: tuple, padding: Pads, div_h: tuple, div_w: tuple
    ) -> Any:
        gs = ops.mul(g, _mx_const(1.0 / _avg_divisor(div_h, div_w), g))
        shape = _shape(gs)
        cols = ops.broadcast_to(ops.unsqueeze(gs, -3), shape[:-2] + (kernel[0] * kernel[1],) + shape[-2:])
        padded = (size[0] + padding[0] + padding[1], size[1] + padding[2] + padding[3])
        dxp = _mx_fold(cols, kernel, stride, (1, 1), padded)
        return _mx_pad(dxp, tuple(-p for p in padding))

    def numpy_kernel(
        self, g: np.ndarray, *, size: tuple, kernel: tuple, stride: tuple, padding: Pads, div_h: tuple, div_w: tuple
    ) -> np.ndarray:
        out = g.shape[-2:]
        gs = g / _avg_divisor(div_h, div_w)
        padded = (size[0] + padding[0] + padding[1], size[1] + padding[2] + padding[3])
        dxp = np.zeros(g.shape[:-2] + padded, np.result_type(g.dtype, np.float32))
        for _, r, c in _offsets(kernel, (1, 1)):
            dxp[
                ..., r : r + (out[0] - 1) * stride[0] + 1 : stride[0], c : c + (out[1] - 1) * stride[1] + 1 : stride[1]
            ] += gs
        return np.ascontiguousarray(_np_pad(dxp, tuple(-p for p in padding)), dtype=g.dtype)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, size: tuple, **kw: Any) -> list:
        return [_avg_pool2d(cotangents[0], **kw)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        return [_avg_pool2d_grad(tangents[0], **kw)]


_avg_pool2d = AvgPool2dOp()
_avg_pool2d_grad = AvgPool2dGradOp()


def _pool_geometry(
    op: str,
    size: tuple,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
    spatial: int,
    max_pad: str,
) -> tuple[tuple, tuple, tuple, tuple, list[tuple[int, int]], tuple]:
    """PyTorch's pooling arguments -> (kernel, stride, padding, dilation, exact pads per dim, out)."""
    kernel = _ints(kernel_size, spatial, op, "kernel_size", 1)
    stride = kernel if stride is None or (isinstance(stride, tuple | list) and not stride) else stride
    stride = _ints(stride, spatial, op, "stride", 1)
    pad = _ints(padding, spatial, op, "padding", 0)
    dilation = _ints(dilation, spatial, op, "dilation", 1)
    exact, out = [], []
    for n, k, s, p, d in zip(size, kernel, stride, pad, dilation, strict=True):
        limit = ((k - 1) * d + 1) // 2 if max_pad == "effective" else k // 2
        if p > limit:
            raise ValueError(
                f"{op}: padding {pad} should be at most half of the {'effective ' * (max_pad == 'effective')}"
                f"kernel size {kernel}"
            )
        num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
        o = num // s + 1
        if ceil_mode and (o - 1) * s >= n + p:  # the last window must start inside the input or left pad
            o -= 1
        if o < 1:
            raise ValueError(
                f"{op}: input size {tuple(size)} with kernel_size {kernel}, padding {pad}, dilation {dilation} "
                "gives an output size smaller than 1"
            )
        exact.append((p, (o - 1) * s + d * (k - 1) + 1 - n - p))
        out.append(o)
    return kernel, stride, pad, dilation, exact, tuple(out)


def _max_pool(
    op: str, x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: bool, spatial: int
) -> Tensor:
    x, unbatched = _batched(x, spatial, op)
    kernel, stride, _, dilation, exact, _ = _pool_geometry(
        op, x.shape[2:], kernel_size, stride, padding, dilation, bool(ceil_mode), spatial, "effective"
    )
    if spatial == 1:
        x, kernel, stride, dilation, exact = (
            _view.unsqueeze(x, 2),
            (1, *kernel),
            (1, *stride),
            (1, *dilation),
            [(0, 0), *exact],
        )
    out = _max_pool2d(x, kernel=kernel, stride=stride, padding=(*exact[0], *exact[1]), dilation=dilation)
    if spatial == 1:
        out = _view.squeeze(out, 2)
    return _view.squeeze(out, 0) if unbatched else out


@public()
def max_pool2d(
    x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False
) -> Tensor:
    """2-D max pooling of (N, C, H, W) or (C, H, W), as `torch.nn.functional.max_pool2d`.

    Padding is -inf (at most half the effective kernel size); `stride` defaults to `kernel_size`.
    The gradient goes to the first maximum of each window, as in PyTorch.

    Example:
        >>> nabla.max_pool2d(nabla.ones(1, 3, 8, 8), 2).shape
        (1, 3, 4, 4)
    """
    return _max_pool("max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode, 2)


@public()
def max_pool1d(
    x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False
) -> Tensor:
    """1-D max pooling of (N, C, L) or (C, L), as `torch.nn.functional.max_pool1d`."""
    return _max_pool("max_pool1d", x, kernel_size, stride, padding, dilation, ceil_mode, 1)


def _avg_pool(
    op: str,
    x: Any,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Any,
    spatial: int,
) -> Tensor:
    x, unbatched = _batched(x, spatial, op)
    kernel, stride, pad, _, exact, out = _pool_geometry(
        op, x.shape[2:], kernel_size, stride, padding, 1, bool(ceil_mode), spatial, "kernel"
    )
    if divisor_override is not None and (
        not isinstance(divisor_override, int | np.integer) or isinstance(divisor_override, bool) or divisor_override < 1
    ):
        raise ValueError(f"{op}: divisor_override must be a positive int, got {divisor_override!r}")
    divisors = []
    for n, k, s, p, o in zip(x.shape[2:], kernel, stride, pad, out, strict=True):
        per = []
        for i in range(o):
            start = i * s - p
            end = min(start + k, n + p)  # windows are clipped to the padded input
            count = end - start if count_include_pad else min(end, n) - max(start, 0)
            per.append(max(count, 1))
        divisors.append(tuple(per))
    if divisor_override is not None:
        divisors = [(int(divisor_override),) * out[0]] + [(1,) * o for o in out[1:]]
    if spatial == 1:
        x, kernel, stride, exact, divisors = (
            _view.unsqueeze(x, 2),
            (1, *kernel),
            (1, *stride),
            [(0, 0), *exact],
            [(1,), *divisors],
        )
    res = _avg_pool2d(
        x, kernel=kernel, stride=stride, padding=(*exact[0], *exact[1]), div_h=divisors[0], div_w=divisors[1]
    )
    if spatial == 1:
        res = _view.squeeze(res, 2)
    return _view.squeeze(res, 0) if unbatched else res


@public()
def avg_pool2d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """2-D average pooling of (N, C, H, W) or (C, H, W), as `torch.nn.functional.avg_pool2d`.

    Zero padding (at most half the kernel size); `count_include_pad` counts it in the divisor;
    `divisor_override` replaces the divisor.
    """
    return _avg_pool("avg_pool2d", x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2)


@public()
def avg_pool1d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """1-D average pooling of (N, C, L) or (C, L), as `torch.nn.functional.avg_pool1d`."""
    return _avg_pool("avg_pool1d", x, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


def _adaptive_matrix(n: int, m: int) -> np.ndarray:
    """(m, n) averaging matrix of PyTorch's adaptive windows [floor(i*n/m), ceil((i+1)*n/m))."""
    a = np.zeros((m, n))
    for i in range(m):
        start, end = (i * n) // m, -((-(i + 1) * n) // m)
        a[i, start:end] = 1.0 / (end - start)
    return a


@public()
def adaptive_avg_pool2d(x: Tensor, output_size: Any) -> Tensor:
    """Average pooling to a fixed output size, as `torch.nn.functional.adaptive_avg_pool2d`.

    Window i of a dim of size n pooled to m spans [floor(i*n/m), ceil((i+1)*n/m)).

    Args:
        x: (N, C, H, W) or (C, H, W).
        output_size: int or (oh, ow); a None entry keeps that input size.

    Example:
        >>> nabla.adaptive_avg_pool2d(nabla.ones(2, 3, 7, 5), (3, None)).shape
        (2, 3, 3, 5)
    """
    op = "adaptive_avg_pool2d"
    _check_tensor(x, op, "input")
    if x.ndim not in (3, 4):
        raise ValueError(f"{op}: expected a 3-D (unbatched) or 4-D (batched) input, got shape {x.shape}")
    size = (
        (output_size, output_size) if output_size is None or isinstance(output_size, int | np.integer) else output_size
    )
    if not isinstance(size, tuple | list) or len(size) != 2:
        raise TypeError(f"{op}: output_size must be an int or a tuple of 2 ints (or None), got {output_size!r}")
    size = tuple(n if s is None else s for s, n in zip(size, x.shape[-2:], strict=True))
    if not all(isinstance(s, int | np.integer) and not isinstance(s, bool) and s >= 1 for s in size):
        raise ValueError(f"{op}: output_size must be positive ints, got {output_size!r}")
    if 0 in x.shape[-2:]:
        raise ValueError(f"{op}: input spatial size {x.shape[-2:]} must be non-empty")
    (h, w), (oh, ow) = x.shape[-2:], size
    if (oh, ow) == (h, w):
        return x
    if (oh, ow) == (1, 1):
        return _red.mean(x, (-2, -1), keepdims=True)
    if h % oh == 0 and w % ow == 0:  # windows tile the input: a plain average pooling
        k = (h // oh, w // ow)
        return _avg_pool2d(x, kernel=k, stride=k, padding=(0, 0, 0, 0), div_h=(k[0],) * oh, div_w=(k[1],) * ow)
    # general windows: average along W then along H with constant averaging matrices
    if ow != w:
        x = _linalg.raw_matmul(x, tensor(_adaptive_matrix(w, ow).T, dtype=x.dtype))
    if oh != h:
        x = _linalg.raw_matmul(tensor(_adaptive_matrix(h, oh), dtype=x.dtype), x)
    return x

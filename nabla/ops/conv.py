"""Convolution and pooling with PyTorch's layouts: NCHW / NCL inputs, OIHW / OIL weights, and
transposed-convolution weights `(in, out/groups, kH, kW)`, so PyTorch checkpoints load unchanged.
The MAX lowerings permute to MAX's NHWC input and RSCF filter layouts inside the kernel.

Primitives (each with MAX lowering, NumPy kernel, VJP and JVP side by side):
    conv2d              grouped, strided, dilated 2-D convolution
    conv_transpose2d    its transpose: the input gradient of conv2d (and conv2d is its input gradient)
    max_pool2d          window maximum over -inf padding
    max_pool2d_grad     routes a cotangent to each window's first maximum (max_pool2d's VJP)
    max_pool2d_gather   reads a tensor at each window's first maximum (max_pool2d's JVP; the
                        transpose of max_pool2d_grad)
    avg_pool2d          window sum over a per-window divisor
    avg_pool2d_grad     its transpose

Inside the primitives padding is explicit per side, `(top, bottom, left, right)`, and a negative
entry crops. The public functions turn PyTorch's arguments ("same", ceil_mode, output_padding)
into it, and the gradient rules use negative entries to drop rows a strided window never reads.
The 1-D functions run the 2-D primitives on a height-1 image; `adaptive_avg_pool2d` is composite.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from max.dtype import DType
from max.graph import ops
from max.graph.ops import reduction as _max_red
from numpy.lib.stride_tricks import sliding_window_view

from ..core.common import dtypes as _dt
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import linalg as _linalg
from . import reduction as _red
from . import view as _view
from .base import AVal, Operation, public
from .creation import tensor

__all__ = [
    "adaptive_avg_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "conv1d",
    "conv2d",
    "conv_transpose2d",
    "max_pool1d",
    "max_pool2d",
]

Pads = tuple[int, int, int, int]  # (top, bottom, left, right); negative entries crop


# -- small helpers shared by the kernels ----------------------------------------------------------
def _np_pad(x: np.ndarray, pads: Pads, value: float = 0.0) -> np.ndarray:
    """Pad (positive) or crop (negative) the last two axes of `x`."""
    top, bottom, left, right = pads
    h, w = x.shape[-2:]
    x = x[..., max(-top, 0) : h - max(-bottom, 0), max(-left, 0) : w - max(-right, 0)]
    widths = [(0, 0)] * (x.ndim - 2) + [(max(top, 0), max(bottom, 0)), (max(left, 0), max(right, 0))]
    if any(a or b for a, b in widths):
        x = np.pad(x, widths, constant_values=value)
    return x


def _np_windows(x: np.ndarray, kernel: tuple, stride: tuple, dilation: tuple, out: tuple) -> np.ndarray:
    """The (strided, dilated) windows of the last two axes: shape (..., OH, OW, kH, kW), a view."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, stride, dilation, out
    win = sliding_window_view(x, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(-2, -1))
    return win[..., : (oh - 1) * sh + 1 : sh, : (ow - 1) * sw + 1 : sw, ::dh, ::dw]


def _offsets(kernel: tuple, dilation: tuple) -> list[tuple[int, int, int]]:
    """(k, row offset, column offset) of every kernel element, in PyTorch's scan order."""
    return [(i * kernel[1] + j, i * dilation[0], j * dilation[1]) for i in range(kernel[0]) for j in range(kernel[1])]


def _out_size(size: int, before: int, after: int, kernel: int, stride: int, dilation: int) -> int:
    return (size + before + after - dilation * (kernel - 1) - 1) // stride + 1


def _shape(v: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in v.shape)


def _mx_pad(v: Any, pads: Pads, value: float = 0.0) -> Any:
    """MAX: pad (positive) or crop (negative) the last two axes of `v`."""
    shape = _shape(v)
    lead, (h, w) = len(shape) - 2, shape[-2:]
    top, bottom, left, right = pads
    if min(pads) < 0:
        v = ops.slice_tensor(
            v,
            [slice(None)] * lead + [slice(max(-top, 0), h - max(-bottom, 0)), slice(max(-left, 0), w - max(-right, 0))],
        )
    if max(pads) > 0:
        v = ops.pad(v, [0, 0] * lead + [max(top, 0), max(bottom, 0), max(left, 0), max(right, 0)], value=value)
    return v


def _mx_strided(v: Any, start: tuple, stride: tuple, out: tuple) -> Any:
    """MAX: `v[..., r0::sh][:OH], [c0::sw][:OW]` on the last two axes."""
    lead = len(v.shape) - 2
    return ops.slice_tensor(
        v,
        [slice(None)] * lead
        + [
            slice(start[0], start[0] + (out[0] - 1) * stride[0] + 1, stride[0]),
            slice(start[1], start[1] + (out[1] - 1) * stride[1] + 1, stride[1]),
        ],
    )


def _mx_place(v: Any, start: tuple, stride: tuple, size: tuple) -> Any:
    """MAX, the transpose of `_mx_strided`: put `v` (..., OH, OW) at rows start[0] + i*sh and
    columns start[1] + j*sw of a zero tensor (..., size[0], size[1])."""
    shape = _shape(v)
    lead, (oh, ow) = shape[:-2], shape[-2:]
    (sh, sw), n = stride, len(lead)
    if (sh, sw) != (1, 1):  # insert stride-1 zeros between elements
        v = ops.reshape(v, lead + (oh, 1, ow, 1))
        v = ops.pad(v, [0, 0] * n + [0, 0, 0, sh - 1, 0, 0, 0, sw - 1])
        v = ops.reshape(v, lead + (oh * sh, ow * sw))
    return _mx_pad(v, (start[0], size[0] - start[0] - oh * sh, start[1], size[1] - start[1] - ow * sw))


def _mx_to_nhwc(v: Any) -> tuple[Any, tuple[int, ...]]:
    """MAX: (..., C, H, W) -> (N, H, W, C) with the leading dims merged; returns the lead dims."""
    shape = _shape(v)
    lead = shape[:-3]
    v = ops.reshape(v, (math.prod(lead),) + shape[-3:]) if len(lead) != 1 else v
    return ops.permute(v, [0, 2, 3, 1]), lead


def _mx_from_nhwc(v: Any, lead: tuple[int, ...]) -> Any:
    v = ops.permute(v, [0, 3, 1, 2])
    return ops.reshape(v, lead + _shape(v)[1:]) if len(lead) != 1 else v


def _mx_pool(xp: Any, pool: Any) -> Any:
    """MAX: run an NHWC pooling `pool` over the last two axes of the padded `xp (..., C, H, W)`."""
    shape = _shape(xp)
    v = ops.reshape(xp, (1,) + shape) if len(shape) < 3 else xp
    xn, lead = _mx_to_nhwc(v)
    y = _mx_from_nhwc(pool(xn), lead)
    return ops.reshape(y, shape[:-2] + _shape(y)[-2:])


def _mx_const(array: np.ndarray, like: Any) -> Any:
    return ops.cast(ops.constant(array.astype(np.float32), DType.float32, device=like.device), like.dtype)


def _lead(shape: tuple, rank: int, op: str, arg: str = "x") -> tuple[int, ...]:
    if len(shape) < rank:
        raise ValueError(f"{op}: {arg} must have rank >= {rank}, got shape {shape}")
    return shape[:-rank]


def _check_weight(shape: tuple, op: str) -> None:
    if len(shape) != 4:
        raise ValueError(f"{op}: weight must be 4-D (a batched/vmapped weight is not supported), got shape {shape}")


# -- conv2d ---------------------------------------------------------------------------------------
class Conv2dOp(Operation):
    """`x (..., C, H, W)` with `w (O, C/groups, kH, kW)` -> `(..., O, OH, OW)`; explicit pads."""

    name = "conv2d"

    def abstract_eval(self, x: AVal, w: AVal, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> AVal:
        lead = _lead(x[0], 3, self.name)
        c, h, wd = x[0][-3:]
        _check_weight(w[0], self.name)
        o, cg, kh, kw = w[0]
        if cg * groups != c or o % groups:
            raise ValueError(f"{self.name}: weight of shape {w[0]} with groups={groups} does not fit input {x[0]}")
        oh = _out_size(h, padding[0], padding[1], kh, stride[0], dilation[0])
        ow = _out_size(wd, padding[2], padding[3], kw, stride[1], dilation[1])
        if oh < 1 or ow < 1:
            raise ValueError(f"{self.name}: input {x[0]} with padding {padding} is smaller than the kernel")
        return lead + (o, oh, ow), x[1]

    def kernel(self, x: Any, w: Any, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
        # negative pads crop the input; positive ones go to the conv
        xn, lead = _mx_to_nhwc(_mx_pad(x, tuple(min(p, 0) for p in padding)))
        pads = tuple(max(p, 0) for p in padding)
        filt = ops.permute(w, [2, 3, 1, 0])  # OIHW -> RSCF
        y = ops.conv2d(xn, filt, stride=tuple(stride), dilation=tuple(dilation), padding=pads, groups=groups)
        return _mx_from_nhwc(y, lead)

    def numpy_kernel(
        self, x: np.ndarray, w: np.ndarray, *, stride: tuple, padding: Pads, dilation: tuple, groups: int
    ) -> np.ndarray:
        lead = x.shape[:-3]
        c, h, wd = x.shape[-3:]
        o, cg, kh, kw = w.shape
        oh = _out_size(h, padding[0], padding[1], kh, stride[0], dilation[0])
        ow = _out_size(wd, padding[2], padding[3], kw, stride[1], dilation[1])
        xp = _np_pad(x.reshape((math.prod(lead), groups, cg) + x.shape[-2:]), padding)
        win = _np_windows(xp, (kh, kw), stride, dilation, (oh, ow))  # (N, G, Cg, OH, OW, kH, kW)
        wg = w.reshape(groups, o // groups, cg, kh, kw)
        out = np.einsum("ngchwij,gocij->ngohw", win, wg, optimize=True)
        return np.ascontiguousarray(out.reshape(lead + (o, oh, ow)), dtype=x.dtype)

    def vjp_rule(
        self,
        primals: list,
        cotangents: list,
        outputs: list,
        *,
        stride: tuple,
        padding: Pads,
        dilation: tuple,
        groups: int,
    ) -> list:
        x, w = primals
        g = cotangents[0]
        kh, kw = w.shape[-2:]
        # rows/columns of the padded input that no window reads get no gradient: crop them
        unread = (
            (x.shape[-2] + padding[0] + padding[1] - dilation[0] * (kh - 1) - 1) % stride[0],
            (x.shape[-1] + padding[2] + padding[3] - dilation[1] * (kw - 1) - 1) % stride[1],
        )
        exact = (padding[0], padding[1] - unread[0], padding[2], padding[3] - unread[1])
        dx = None
        if x.requires_grad:
            dx = _conv_transpose2d(g, w, stride=stride, padding=exact, dilation=dilation, groups=groups)
        dw = _weight_grad(x, g, stride, exact, dilation, groups) if w.requires_grad else None
        return [dx, dw]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        x, w = primals
        return [_bin.add(_conv2d(tangents[0], w, **kw), _conv2d(x, tangents[1], **kw))]


def _weight_grad(inp: Tensor, gout: Tensor, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> Tensor:
    """`sum_{n,oh,ow} gout[n, o, oh, ow] * pad(inp)[n, c, oh*s + i*d, ow*s + j*d]` as a conv2d:
    the weight gradient of conv2d (inp = x, gout = cotangent) and of conv_transpose2d (inp =
    cotangent, gout = x). `padding` must be exact (every padded row is read). Shape (O, C/G, kH, kW)."""
    c, h, w = inp.shape[-3:]
    o, oh, ow = gout.shape[-3:]
    n = math.prod(inp.shape[:-3])
    cg, og = c // groups, o // groups
    # input: batch = C/G, channels = (G, N); weight: (G*O/G, N, OH, OW); stride and dilation swap
    a = _view.reshape(_view.permute(_view.reshape(inp, (n, groups, cg, h, w)), (2, 1, 0, 3, 4)), (cg, groups * n, h, w))
    b = _view.reshape(_view.permute(_view.reshape(gout, (n, groups, og, oh, ow)), (1, 2, 0, 3, 4)), (o, n, oh, ow))
    res = _conv2d(a, b, stride=dilation, padding=padding, dilation=stride, groups=groups)  # (C/G, O, kH, kW)
    return _view.permute(res, (1, 0, 2, 3))


_conv2d = Conv2dOp()


# -- conv_transpose2d -----------------------------------------------------------------------------
class ConvTranspose2dOp(Operation):
    """`x (..., Cin, H, W)` with `w (Cin, Cout/groups, kH, kW)`. The full output has extent
    `(H - 1) * s + d * (k - 1) + 1`; `padding` crops it per side (negative entries extend it)."""

    name = "conv_transpose2d"

    def abstract_eval(self, x: AVal, w: AVal, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> AVal:
        lead = _lead(x[0], 3, self.name)
        c, h, wd = x[0][-3:]
        _check_weight(w[0], self.name)
        cin, og, kh, kw = w[0]
        if cin != c or c % groups:
            raise ValueError(f"{self.name}: weight of shape {w[0]} with groups={groups} does not fit input {x[0]}")
        oh = (h - 1) * stride[0] + dilation[0] * (kh - 1) + 1 - padding[0] - padding[1]
        ow = (wd - 1) * stride[1] + dilation[1] * (kw - 1) + 1 - padding[2] - padding[3]
        if oh < 1 or ow < 1:
            raise ValueError(f"{self.name}: output size ({oh}, {ow}) for input {x[0]} is too small")
        return lead + (og * groups, oh, ow), x[1]

    def kernel(self, x: Any, w: Any, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
        lead = _shape(x)[:-3]
        cin, og, kh, kw = _shape(w)
        top, bottom, left, right = padding
        if groups == 1:
            # MAX's transposed convolution (filter (kH, kW, out, in)); negative pads extend after it.
            xn, lead = _mx_to_nhwc(x)
            filt = ops.permute(w, [2, 3, 1, 0])
            pads = (max(top, 0), max(bottom, 0), max(left, 0), max(right, 0))
            y = ops.conv2d_transpose(xn, filt, stride=tuple(stride), dilation=tuple(dilation), padding=pads)
            y = _mx_from_nhwc(y, lead)
            return _mx_pad(y, tuple(-min(p, 0) for p in padding))
        # Grouped: a stride-1 convolution of the zero-upsampled input with the flipped kernel.
        h, wd = _shape(x)[-2:]
        x4 = ops.reshape(x, (math.prod(lead), cin, h, wd))
        xd = _mx_place(x4, (0, 0), stride, ((h - 1) * stride[0] + 1, (wd - 1) * stride[1] + 1))
        filt = ops.reshape(w, (groups, cin // groups, og, kh, kw))
        filt = ops.reshape(ops.permute(filt, [3, 4, 1, 0, 2]), (kh, kw, cin // groups, groups * og))
        filt = ops.slice_tensor(
            filt, [(slice(None, None, -1), kh), (slice(None, None, -1), kw), slice(None), slice(None)]
        )
        eh, ew = dilation[0] * (kh - 1), dilation[1] * (kw - 1)
        xd = _mx_pad(xd, (min(eh - top, 0), min(eh - bottom, 0), min(ew - left, 0), min(ew - right, 0)))
        pads = (max(eh - top, 0), max(eh - bottom, 0), max(ew - left, 0), max(ew - right, 0))
        y = ops.conv2d(ops.permute(xd, [0, 2, 3, 1]), filt, dilation=tuple(dilation), padding=pads, groups=groups)
        return _mx_from_nhwc(y, lead)

    def numpy_kernel(
        self, x: np.ndarray, w: np.ndarray, *, stride: tuple, padding: Pads, dilation: tuple, groups: int
    ) -> np.ndarray:
        lead = x.shape[:-3]
        cin, h, wd = x.shape[-3:]
        _, og, kh, kw = w.shape
        n = math.prod(lead)
        full = ((h - 1) * stride[0] + dilation[0] * (kh - 1) + 1, (wd - 1) * stride[1] + dilation[1] * (kw - 1) + 1)
        out = np.zeros((n, groups, og) + full, dtype=np.result_type(x.dtype, np.float32))
        xg = x.reshape(n, groups, cin // groups, h, wd)
        wg = w.reshape(groups, cin // groups, og, kh, kw)
        for k, r, c in _offsets((kh, kw), dilation):
            part = np.einsum("ngchw,gco->ngohw", xg, wg[..., k // kw, k % kw], optimize=True)
            out[..., r : r + (h - 1) * stride[0] + 1 : stride[0], c : c + (wd - 1) * stride[1] + 1 : stride[1]] += part
        out = _np_pad(out, tuple(-p for p in padding))
        return np.ascontiguousarray(out.reshape(lead + (groups * og,) + out.shape[-2:]), dtype=x.dtype)

    def vjp_rule(
        self,
        primals: list,
        cotangents: list,
        outputs: list,
        *,
        stride: tuple,
        padding: Pads,
        dilation: tuple,
        groups: int,
    ) -> list:
        x, w = primals
        g = cotangents[0]
        dx = (
            _conv2d(g, w, stride=stride, padding=padding, dilation=dilation, groups=groups) if x.requires_grad else None
        )
        dw = _weight_grad(g, x, stride, padding, dilation, groups) if w.requires_grad else None
        return [dx, dw]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        x, w = primals
        return [_bin.add(_conv_transpose2d(tangents[0], w, **kw), _conv_transpose2d(x, tangents[1], **kw))]


_conv_transpose2d = ConvTranspose2dOp()


# -- max pooling ----------------------------------------------------------------------------------
def _pool_out(x_shape: tuple, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple) -> tuple[int, int]:
    return (
        _out_size(x_shape[-2], padding[0], padding[1], kernel[0], stride[0], dilation[0]),
        _out_size(x_shape[-1], padding[2], padding[3], kernel[1], stride[1], dilation[1]),
    )


class _PoolOp(Operation):
    def abstract_eval(
        self, x: AVal, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple, **kw: Any
    ) -> AVal:
        lead = _lead(x[0], 2, self.name)
        oh, ow = _pool_out(x[0], kernel, stride, padding, dilation)
        if oh < 1 or ow < 1:
            raise ValueError(f"{self.name}: input {x[0]} with padding {padding} is smaller than the kernel {kernel}")
        return lead + (oh, ow), x[1]


def _np_first_max(xp: np.ndarray, kernel: tuple, stride: tuple, dilation: tuple, out: tuple) -> np.ndarray:
    """Index k (PyTorch scan order) of each window's first maximum; a NaN wins (the last one, as
    PyTorch's `val > max || isnan(val)` update does)."""
    win = _np_windows(xp, kernel, stride, dilation, out)
    best = win[..., 0, 0].copy()
    idx = np.zeros(best.shape, np.int64)
    for k, _, _ in _offsets(kernel, dilation)[1:]:
        v = win[..., k // kernel[1], k % kernel[1]]
        upd = (v > best) | np.isnan(v)
        best = np.where(upd, v, best)
        idx[upd] = k
    return idx


def _mx_windows(xp: Any, kernel: tuple, stride: tuple, dilation: tuple, out: tuple) -> Any:
    """MAX: the windows of the last two axes stacked: (..., K, OH, OW), k in PyTorch's scan order."""
    return ops.stack([_mx_strided(xp, (r, c), stride, out) for _, r, c in _offsets(kernel, dilation)], axis=-3)


def _mx_first_max(win: Any) -> Any:
    """MAX: bool mask (..., K, OH, OW) of each window's first maximum; a NaN wins (the last one),
    as in PyTorch. Scores: NaN at k -> 2K + k, the maximum at k -> K - k, others 0; the best
    score is unique per window."""
    k = int(win.shape[-3])
    ks = ops.constant(np.arange(k, dtype=np.int32).reshape(k, 1, 1), DType.int32, device=win.device)
    is_max = ops.cast(ops.equal(win, _max_red.max(win, axis=-3)), DType.int32)
    is_nan = ops.cast(ops.not_equal(win, win), DType.int32)
    score = ops.add(ops.mul(is_nan, ops.add(ks, 2 * k)), ops.mul(is_max, ops.sub(k, ks)))
    return ops.equal(score, _max_red.max(score, axis=-3))


def _mx_fold(cols: Any, kernel: tuple, stride: tuple, dilation: tuple, size: tuple) -> Any:
    """MAX: add the window values `cols (..., K, OH, OW)` back into a zero (..., *size) tensor."""
    shape = _shape(cols)
    lead, (k, oh, ow) = shape[:-3], shape[-3:]
    cols = ops.reshape(cols, (math.prod(lead), k, oh * ow))
    res = ops.fold(cols, tuple(size), tuple(kernel), stride=tuple(stride), dilation=tuple(dilation))
    return ops.reshape(res, lead + tuple(size))


class MaxPool2dOp(_PoolOp):
    """Window maximum of `x (..., H, W)`; padding is -inf, so it never wins over real values."""

    name = "max_pool2d"

    def kernel(self, x: Any, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple) -> Any:
        def pool(xn: Any) -> Any:
            return ops.max_pool2d(xn, tuple(kernel), stride=tuple(stride), dilation=tuple(dilation))

        return _mx_pool(_mx_pad(x, padding, float("-inf")), pool)

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


class MaxPool2dGradOp(Operation):
    """`g (..., OH, OW)` added into a zero tensor shaped like `x` at each window's first maximum
    of `x`. Linear in `g`; `x` only chooses positions (no gradient)."""

    name = "max_pool2d_grad"

    def abstract_eval(self, x: AVal, g: AVal, **kw: Any) -> AVal:
        return x

    def kernel(self, x: Any, g: Any, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple) -> Any:
        xp = _mx_pad(x, padding, float("-inf"))
        mask = _mx_first_max(_mx_windows(xp, kernel, stride, dilation, _shape(g)[-2:]))
        cols = ops.mul(ops.cast(mask, g.dtype), ops.unsqueeze(g, -3))
        dxp = _mx_fold(cols, kernel, stride, dilation, _shape(xp)[-2:])
        return _mx_pad(dxp, tuple(-p for p in padding))

    def numpy_kernel(
        self, x: np.ndarray, g: np.ndarray, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple
    ) -> np.ndarray:
        out = g.shape[-2:]
        xp = _np_pad(x, padding, -np.inf)
        idx = _np_first_max(xp, kernel, stride, dilation, out)
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

    def abstract_eval(self, x: AVal, z: AVal, **kw: Any) -> AVal:
        return super().abstract_eval(x, **kw)

    def kernel(self, x: Any, z: Any, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple) -> Any:
        out = _pool_out(_shape(x), kernel, stride, padding, dilation)
        mask = _mx_first_max(_mx_windows(_mx_pad(x, padding, float("-inf")), kernel, stride, dilation, out))
        zw = _mx_windows(_mx_pad(z, padding), kernel, stride, dilation, out)
        picked = _max_red.sum(ops.mul(ops.cast(mask, z.dtype), zw), axis=-3)
        return ops.squeeze(picked, -3)

    def numpy_kernel(
        self, x: np.ndarray, z: np.ndarray, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple
    ) -> np.ndarray:
        out = _pool_out(x.shape, kernel, stride, padding, dilation)
        idx = _np_first_max(_np_pad(x, padding, -np.inf), kernel, stride, dilation, out)
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

    def abstract_eval(self, g: AVal, *, size: tuple, **kw: Any) -> AVal:
        return g[0][:-2] + tuple(size), g[1]

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


# -- argument checking ----------------------------------------------------------------------------
def _ints(value: Any, n: int, op: str, arg: str, minimum: int) -> tuple[int, ...]:
    """An int or a tuple of `n` ints (each >= minimum), as a tuple of `n` ints."""
    items = (value,) * n if isinstance(value, int | np.integer) and not isinstance(value, bool) else value
    if (
        not isinstance(items, tuple | list)
        or len(items) != n
        or not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in items)
    ):
        raise TypeError(f"{op}: {arg} must be an int or a tuple of {n} ints, got {value!r}")
    items = tuple(int(v) for v in items)
    if any(v < minimum for v in items):
        what = "positive" if minimum == 1 else "non-negative"
        raise ValueError(f"{op}: {arg} must be {what}, got {value!r}")
    return items


def _check_tensor(x: Any, op: str, arg: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")
    if not _dt.is_float(x.dtype):
        raise TypeError(f"{op}: {arg} must have a floating-point dtype, got {x.dtype.name}")


def _batched(x: Any, spatial: int, op: str) -> tuple[Tensor, bool]:
    """Accept (C, *spatial) or (N, C, *spatial): returns the batched tensor and whether the input
    was unbatched."""
    _check_tensor(x, op, "input")
    if x.ndim not in (spatial + 1, spatial + 2):
        raise ValueError(
            f"{op}: expected a {spatial + 1}-D (unbatched) or {spatial + 2}-D (batched) input, got shape {x.shape}"
        )
    return (_view.unsqueeze(x, 0), True) if x.ndim == spatial + 1 else (x, False)


def _conv(
    op: str,
    x: Any,
    weight: Any,
    bias: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    groups: Any,
    spatial: int,
) -> Tensor:
    """conv1d / conv2d: checks in the 1-D or 2-D terms the user wrote, then the 2-D primitive."""
    x, unbatched = _batched(x, spatial, op)
    _check_tensor(weight, op, "weight")
    if weight.ndim != spatial + 2:
        raise ValueError(f"{op}: weight must have rank {spatial + 2}, got shape {weight.shape}")
    if weight.dtype != x.dtype:
        raise TypeError(f"{op}: input dtype {x.dtype.name} and weight dtype {weight.dtype.name} differ")
    if not isinstance(groups, int | np.integer) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    groups = int(groups)
    c, o = x.shape[1], weight.shape[0]
    if o % groups:
        raise ValueError(f"{op}: out_channels={o} (weight.shape[0]) is not divisible by groups={groups}")
    if c % groups:
        raise ValueError(f"{op}: in_channels={c} is not divisible by groups={groups}")
    if weight.shape[1] * groups != c:
        raise ValueError(
            f"{op}: expected input with {weight.shape[1] * groups} channels (weight.shape[1]={weight.shape[1]} * "
            f"groups={groups}), got {c} channels (input shape {x.shape}, weight shape {weight.shape})"
        )
    stride = _ints(stride, spatial, op, "stride", 1)
    dilation = _ints(dilation, spatial, op, "dilation", 1)
    kernel = weight.shape[2:]
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * spatial
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{op}: padding='same' is not supported for strided convolutions (stride={stride})")
            total = [d * (k - 1) for d, k in zip(dilation, kernel, strict=True)]
            pads = [(t // 2, t - t // 2) for t in total]  # the odd extra goes after, as in PyTorch
        else:
            raise ValueError(f"{op}: padding must be 'valid', 'same', an int or a tuple of ints, got {padding!r}")
    else:
        pads = [(p, p) for p in _ints(padding, spatial, op, "padding", 0)]
    size = x.shape[2:]
    padded = tuple(s + a + b for s, (a, b) in zip(size, pads, strict=True))
    extent = tuple(d * (k - 1) + 1 for d, k in zip(dilation, kernel, strict=True))
    if any(e > p for e, p in zip(extent, padded, strict=True)):
        raise ValueError(
            f"{op}: kernel size {extent} (after dilation) is larger than the padded input size {padded} "
            f"(input shape {x.shape}, padding {tuple(pads)})"
        )
    if bias is not None:
        _check_tensor(bias, op, "bias")
        if bias.shape != (o,):
            raise ValueError(f"{op}: bias must have shape ({o},) (out_channels), got {bias.shape}")
        if bias.dtype != x.dtype:
            raise TypeError(f"{op}: bias dtype {bias.dtype.name} differs from input dtype {x.dtype.name}")
    if spatial == 1:
        x4, w4 = _view.unsqueeze(x, 2), _view.unsqueeze(weight, 2)
        stride, dilation, pads = (1, *stride), (1, *dilation), [(0, 0), *pads]
    else:
        x4, w4 = x, weight
    out = _conv2d(x4, w4, stride=stride, padding=(*pads[0], *pads[1]), dilation=dilation, groups=groups)
    if spatial == 1:
        out = _view.squeeze(out, 2)
    if bias is not None:
        out = _bin.add(out, _view.reshape(bias, (o,) + (1,) * spatial))
    return _view.squeeze(out, 0) if unbatched else out


@public()
def conv2d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """2-D convolution (cross-correlation), as `torch.nn.functional.conv2d`.

    Args:
        x: input (N, C, H, W) or unbatched (C, H, W).
        weight: (out_channels, C / groups, kH, kW).
        bias: optional (out_channels,).
        stride, dilation: int or (h, w).
        padding: int, (h, w), "valid" or "same" (stride 1 only; an odd total pads one more after).
        groups: split the channels into this many independent convolutions.

    Example:
        >>> nabla.conv2d(nabla.ones(1, 3, 8, 8), nabla.ones(4, 3, 3, 3), padding=1).shape
        (1, 4, 8, 8)
    """
    return _conv("conv2d", x, weight, bias, stride, padding, dilation, groups, 2)


@public()
def conv1d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """1-D convolution of (N, C, L) or unbatched (C, L) with weight (out_channels, C / groups, k),
    as `torch.nn.functional.conv1d` (padding: int, (p,), "valid" or "same")."""
    return _conv("conv1d", x, weight, bias, stride, padding, dilation, groups, 1)


@public()
def conv_transpose2d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """2-D transposed convolution, as `torch.nn.functional.conv_transpose2d` (same argument order).

    Output size per spatial dim: (H - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1.

    Args:
        x: input (N, C_in, H, W) or unbatched (C_in, H, W).
        weight: (C_in, out_channels / groups, kH, kW).
        bias: optional (out_channels,).
        output_padding: extra size added after each spatial dim; smaller than stride or dilation.
    """
    op = "conv_transpose2d"
    x, unbatched = _batched(x, 2, op)
    _check_tensor(weight, op, "weight")
    if weight.ndim != 4:
        raise ValueError(f"{op}: weight must have rank 4, got shape {weight.shape}")
    if weight.dtype != x.dtype:
        raise TypeError(f"{op}: input dtype {x.dtype.name} and weight dtype {weight.dtype.name} differ")
    if not isinstance(groups, int | np.integer) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    groups = int(groups)
    c = x.shape[1]
    if weight.shape[0] != c:
        raise ValueError(
            f"{op}: expected input with {weight.shape[0]} channels (weight.shape[0]), got {c} channels "
            f"(input shape {x.shape}, weight shape {weight.shape})"
        )
    if c % groups:
        raise ValueError(f"{op}: in_channels={c} is not divisible by groups={groups}")
    if isinstance(padding, str):
        raise ValueError(f"{op}: padding must be an int or a tuple of 2 ints, got {padding!r}")
    stride = _ints(stride, 2, op, "stride", 1)
    dilation = _ints(dilation, 2, op, "dilation", 1)
    pad = _ints(padding, 2, op, "padding", 0)
    out_pad = _ints(output_padding, 2, op, "output_padding", 0)
    for p, s, d in zip(out_pad, stride, dilation, strict=True):
        if p >= s and p >= d:
            raise ValueError(
                f"{op}: output_padding {out_pad} must be smaller than either stride {stride} or dilation {dilation}"
            )
    kernel = weight.shape[2:]
    size = tuple(
        (n - 1) * s - 2 * p + d * (k - 1) + q + 1
        for n, s, p, d, k, q in zip(x.shape[2:], stride, pad, dilation, kernel, out_pad, strict=True)
    )
    if min(size) < 1:
        raise ValueError(f"{op}: calculated output size {size} for input shape {x.shape} is too small")
    o = weight.shape[1] * groups
    if bias is not None:
        _check_tensor(bias, op, "bias")
        if bias.shape != (o,):
            raise ValueError(f"{op}: bias must have shape ({o},) (out_channels), got {bias.shape}")
        if bias.dtype != x.dtype:
            raise TypeError(f"{op}: bias dtype {bias.dtype.name} differs from input dtype {x.dtype.name}")
    pads = (pad[0], pad[0] - out_pad[0], pad[1], pad[1] - out_pad[1])
    out = _conv_transpose2d(x, weight, stride=stride, padding=pads, dilation=dilation, groups=groups)
    if bias is not None:
        out = _bin.add(out, _view.reshape(bias, (o, 1, 1)))
    return _view.squeeze(out, 0) if unbatched else out


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
        x = _linalg.matmul(x, tensor(_adaptive_matrix(w, ow).T, dtype=x.dtype))
    if oh != h:
        x = _linalg.matmul(tensor(_adaptive_matrix(h, oh), dtype=x.dtype), x)
    return x

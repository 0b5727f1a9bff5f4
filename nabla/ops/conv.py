"""Convolution with PyTorch's layouts: NCHW / NCL inputs, OIHW / OIL weights, and
transposed-convolution weights `(in, out/groups, kH, kW)`, so PyTorch checkpoints load unchanged.
The MAX lowerings work in MAX's NHWC input and RSCF filter layouts: an input's NHWC twin
(`_layout.py`: the form a previous convolution or pooling left) is used as it is, anything else
is permuted inside the kernel, and the NCHW result remembers its NHWC form for the next kernel.

Primitives (each with MAX lowering, NumPy kernel, VJP and JVP side by side):
    conv2d              grouped, strided, dilated 2-D convolution
    conv_transpose2d    its transpose: the input gradient of conv2d (and conv2d is its input gradient)
    conv2d_weight_grad  the weight gradient of both (the batch and the output positions contracted)

Inside the primitives padding is explicit per side, `(top, bottom, left, right)`, and a negative
entry crops. The public functions turn PyTorch's arguments ("same", output_padding) into it, and
the gradient rules use negative entries to drop rows a strided window never reads. conv1d runs
the 2-D primitive on a height-1 image. The window helpers below are shared with `pooling.py`.

Under vmap both operands arrive with one batch prefix (x `(P.., N, C, H, W)`, w `(P.., O, C/g, kH, kW)`);
the kernels fold the prefix into the groups (one grouped convolution, `groups * prod(P)`), since a
batched weight cannot be told from a broadcast one at op level. `_apply` avoids that broadcast
when the weight is unbatched and needs no gradient: x's batch dims then join its leading dims.

Sharding (`_ConvOperation.sharding_rule_for`): x's leading (batch) dims pass through to the
output, the output channels follow the weight's, the contracted input channels leave partial
sums (the weight gradient of a batch-sharded convolution contracts the batch: data parallelism),
and the spatial dims stay whole (no halo exchange). With groups > 1 the channel dims are
"(groups, per-group)": the group factor can be sharded (evenly), which splits the groups.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from max.dtype import DType
from max.graph import ops
from numpy.lib.stride_tricks import sliding_window_view

from ..core.common import dtypes as _dt
from ..core.sharding import OpShardingRule
from ..core.tensor.tensor import Tensor, grad_enabled_for
from . import batching as _batching
from . import binary as _bin
from . import view as _view
from ._layout import NCHW, NHWC, as_nhwc, to_nchw
from .base import AVal, Operation, public, shape_of

__all__ = ["conv1d", "conv2d", "conv_transpose2d"]

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
    return shape_of(v)


def _mx_pad(v: Any, pads: Pads, value: float = 0.0, trail: int = 0) -> Any:
    """MAX: pad (positive) or crop (negative) the two spatial axes of `v`, which `trail` axes
    follow (0: (..., H, W); 1: NHWC)."""
    shape = _shape(v)
    lead, (h, w) = len(shape) - 2 - trail, shape[len(shape) - 2 - trail :][:2]
    top, bottom, left, right = pads
    if min(pads) < 0:
        crop = [slice(max(-top, 0), h - max(-bottom, 0)), slice(max(-left, 0), w - max(-right, 0))]
        v = ops.slice_tensor(v, [slice(None)] * lead + crop + [slice(None)] * trail)
    if max(pads) > 0:
        widths = [max(top, 0), max(bottom, 0), max(left, 0), max(right, 0)]
        v = ops.pad(v, [0, 0] * lead + widths + [0, 0] * trail, value=value)
    return v


def _mx_strided(v: Any, start: tuple, stride: tuple, out: tuple, trail: int = 0) -> Any:
    """MAX: `v[..., r0::sh][:OH], [c0::sw][:OW]` on the two spatial axes (`trail` as in `_mx_pad`)."""
    lead = len(v.shape) - 2 - trail
    return ops.slice_tensor(
        v,
        [slice(None)] * lead
        + [
            slice(start[0], start[0] + (out[0] - 1) * stride[0] + 1, stride[0]),
            slice(start[1], start[1] + (out[1] - 1) * stride[1] + 1, stride[1]),
        ]
        + [slice(None)] * trail,
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
    """MAX: (..., C, H, W) -> (N, H, W, C) with the leading dims merged (a 4-D value's NHWC
    twin when it has one: no permute); returns the lead dims."""
    shape = _shape(v)
    lead = shape[:-3]
    if len(lead) == 1:
        return as_nhwc(v), lead
    return ops.permute(ops.reshape(v, (math.prod(lead),) + shape[-3:]), list(NHWC)), lead


def _mx_from_nhwc(v: Any, lead: tuple[int, ...]) -> Any:
    """MAX: the inverse of `_mx_to_nhwc`; a 4-D result keeps `v` as its NHWC twin."""
    if len(lead) == 1:
        return to_nchw(v)
    v = ops.permute(v, list(NCHW))
    return ops.reshape(v, lead + _shape(v)[1:])


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


def _check_weight(x: tuple, w: tuple, op: str) -> None:
    """w is 4-D plus the vmap batch prefix it shares with x (operands are aligned)."""
    bd = len(w) - 4
    if bd < 0 or len(x) < bd + 3 or x[:bd] != w[:bd]:
        raise ValueError(f"{op}: weight of shape {w} does not fit input {x} (expected a 4-D weight)")


# -- vmap: a batched weight folds into the groups ---------------------------------------------------
def _fold(x: Any, w: Any, groups: int, permute: Any, reshape: Any, shape: Any) -> tuple:
    """x (P.., L.., C, H, W), w (P.., O, I, kH, kW) -> x (L.., P*C, H, W), w (P*O, I, kH, kW),
    groups * P, and the function unfolding an output (L.., P*O', OH, OW) to (P.., L.., O', OH, OW).
    `permute`, `reshape`, `shape` are the array library's (NumPy or MAX)."""
    ws, xs = shape(w), shape(x)
    bd = len(ws) - 4
    if not bd:
        return x, w, groups, lambda y: y
    prefix, lead, p = ws[:bd], xs[bd:-3], math.prod(ws[:bd])
    nl = len(lead)
    chw = [bd + nl, bd + nl + 1, bd + nl + 2]  # the last three axes
    x = reshape(permute(x, [*range(bd, bd + nl), *range(bd), *chw]), lead + (p * xs[-3],) + xs[-2:])
    w = reshape(w, (p * ws[-4],) + ws[-3:])

    def unfold(y: Any) -> Any:
        ys = shape(y)
        y = reshape(y, lead + prefix + (ys[-3] // p,) + ys[-2:])
        return permute(y, [*range(nl, nl + bd), *range(nl), *chw])

    return x, w, groups * p, unfold


_NP_ARRAYS = (np.transpose, np.reshape, np.shape)  # (permute, reshape, shape) for `_fold`, `_fold_batch`
_MX_ARRAYS = (lambda v, p: ops.permute(v, list(p)), ops.reshape, _shape)


def _np_fold(x: np.ndarray, w: np.ndarray, groups: int) -> tuple:
    return _fold(x, w, groups, *_NP_ARRAYS)


def _mx_fold(x: Any, w: Any, groups: int) -> tuple:
    return _fold(x, w, groups, *_MX_ARRAYS)


def _fold_batch(v: Any, prefix: tuple, permute: Any, reshape: Any, shape: Any) -> Any:
    """(P.., N, C, H, W) -> (N, P*C, H, W): vmap's batch joins the channels as groups (the
    weight gradient's operands, which share the prefix)."""
    if not prefix:
        return v
    dims, b = tuple(shape(v)), len(prefix)
    v = permute(v, [b, *range(b), b + 1, b + 2, b + 3])
    return reshape(v, (dims[b], math.prod(prefix) * dims[b + 1]) + dims[-2:])


def _apply(op: Operation, x: Tensor, w: Tensor, **kw: Any) -> Tensor:
    """Call a conv primitive. An unbatched weight that needs no gradient is not broadcast over
    x's extra vmap levels: they become leading (image) dims of x instead. (With a gradient, the
    broadcast must stay: it is where per-example weight gradients come from.)"""
    levels = x._impl.batch_dims
    keep = w._impl.batch_dims
    if levels <= keep or grad_enabled_for([w._impl]):
        return op(x, w, **kw)
    prefix = x._impl.physical_shape[:levels]
    for level in range(levels, keep, -1):
        x = _batching.move_from_batch(x, 0, prefix[:level])
    y = op(x, w, **kw)
    for level in range(keep, levels):
        y = _batching.move_to_batch(y, 0, prefix[:level])
    return y


def _channel_factors(groups: int, cin: int, cout: int) -> tuple:
    """The sharding factors of a convolution's input and output channels: `(ci, co, sizes,
    whole)`. With groups > 1 the channels are "(group, per-group)" and only the group factor
    can be sharded; the spatial and kernel factors always stay whole."""
    whole = {"h", "w", "kh", "kw", "oh", "ow"}
    if groups == 1:
        return ("ci",), ("co",), {"ci": cin, "co": cout}, whole
    if not (cin and cout):
        whole.add("g")
    return ("g", "ci"), ("g", "co"), {"g": groups, "ci": cin // groups, "co": cout // groups}, whole


class _ConvOperation(Operation):
    """A conv primitive whose weight may carry vmap batch dims: both kernels fold them into the
    groups (`_fold`), run the unbatched `_kernel` (MAX) or `_numpy`, and unfold the result."""

    partial_ok = (0, 1)  # bilinear: one operand may hold partial sums
    scales_partials = True
    transposed = False  # conv_transpose2d: the weight is (in, out / groups, kH, kW)

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        x, w = in_shapes
        lead = tuple((f"n{i}",) for i in range(len(x) - 3))
        ci, co, sizes, whole = _channel_factors(kwargs["groups"], x[-3], out_shapes[0][-3])
        w_in, w_out = ci[-1:], co[-1:]  # the weight holds one group's channels
        x_dims = (*lead, ci, ("h",), ("w",))
        w_dims = (ci, w_out, ("kh",), ("kw",)) if self.transposed else (co, w_in, ("kh",), ("kw",))
        out = (*lead, co, ("oh",), ("ow",))
        return OpShardingRule((x_dims, w_dims), (out,), sizes, frozenset(whole), "sum", self.partial_ok)

    def local_kwargs(self, kwargs: dict, in_avals: list, out_shapes: list) -> dict:
        (x, _), (w, _) = in_avals
        per_group = w[-3]  # conv2d: input channels per group; conv_transpose2d: output channels per group
        if kwargs["groups"] == 1 or not per_group:
            return kwargs
        # a sharded group factor leaves each device some of the groups
        channels = out_shapes[0][-3] if self.transposed else x[-3]
        return {**kwargs, "groups": channels // per_group}

    def kernel(self, x: Any, w: Any, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
        x, w, groups, unfold = _mx_fold(x, w, groups)
        return unfold(self._kernel(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups))

    def numpy_kernel(
        self, x: np.ndarray, w: np.ndarray, *, stride: tuple, padding: Pads, dilation: tuple, groups: int
    ) -> np.ndarray:
        x, w, groups, unfold = _np_fold(x, w, groups)
        return unfold(self._numpy(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups))


# -- conv2d ---------------------------------------------------------------------------------------
class Conv2dOp(_ConvOperation):
    """`x (..., C, H, W)` with `w (O, C/groups, kH, kW)` -> `(..., O, OH, OW)`; explicit pads."""

    name = "conv2d"

    def abstract_eval(self, x: AVal, w: AVal, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> AVal:
        lead = _lead(x[0], 3, self.name)
        c, h, wd = x[0][-3:]
        _check_weight(x[0], w[0], self.name)
        o, cg, kh, kw = w[0][-4:]
        if cg * groups != c or o % groups:
            raise ValueError(f"{self.name}: weight of shape {w[0]} with groups={groups} does not fit input {x[0]}")
        oh = _out_size(h, padding[0], padding[1], kh, stride[0], dilation[0])
        ow = _out_size(wd, padding[2], padding[3], kw, stride[1], dilation[1])
        if oh < 1 or ow < 1:
            raise ValueError(f"{self.name}: input {x[0]} with padding {padding} is smaller than the kernel")
        return lead + (o, oh, ow), x[1]

    @staticmethod
    def _kernel(x: Any, w: Any, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
        # negative pads crop the input; positive ones go to the conv
        xn, lead = _mx_to_nhwc(x)
        xn = _mx_pad(xn, tuple(min(p, 0) for p in padding), trail=1)
        pads = tuple(max(p, 0) for p in padding)
        filt = ops.permute(w, [2, 3, 1, 0])  # OIHW -> RSCF
        y = ops.conv2d(xn, filt, stride=tuple(stride), dilation=tuple(dilation), padding=pads, groups=groups)
        return _mx_from_nhwc(y, lead)

    @staticmethod
    def _numpy(x: np.ndarray, w: np.ndarray, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
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
            dx = _apply(_conv_transpose2d, g, w, stride=stride, padding=exact, dilation=dilation, groups=groups)
        dw = _weight_grad(x, g, (kh, kw), stride, exact, dilation, groups) if w.requires_grad else None
        return [dx, dw]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        x, w = primals
        return [_bin.add(_apply(_conv2d, tangents[0], w, **kw), _apply(_conv2d, x, tangents[1], **kw))]


def _weight_grad(
    inp: Tensor, gout: Tensor, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple, groups: int
) -> Tensor:
    """`sum_{n,oh,ow} gout[n, o, oh, ow] * pad(inp)[n, c, oh*s + i*d, ow*s + j*d]`: the weight
    gradient of conv2d (inp = x, gout = cotangent) and of conv_transpose2d (inp = cotangent,
    gout = x). `padding` must be exact (every padded row is read). Shape (O, C/G, kH, kW)."""
    n = math.prod(inp.shape[:-3])
    inp = _view.reshape(inp, (n,) + inp.shape[-3:])
    gout = _view.reshape(gout, (n,) + gout.shape[-3:])
    return _conv2d_weight_grad(
        inp, gout, kernel=tuple(kernel), stride=stride, padding=padding, dilation=dilation, groups=groups
    )


class Conv2dWeightGradOp(Operation):
    """`x (N, C, H, W)` and `g (N, O, OH, OW)` -> `(O, C/groups, kH, kW)`: conv2d's weight gradient.
    Bilinear; the batch is contracted (a batch-sharded operand leaves a partial sum).

    MAX: a stride-1 convolution is one matmul per group. Flattened with the padded width Wp,
    the input row read by offset (i, j) is the output row plus i*d*Wp + j*d, so each offset's
    operand is a contiguous shift of the flattened input (g is zero-padded to Hp x Wp, which
    zeroes the rows that wrap). Strided ones run as a convolution whose batch is C/G and whose
    channels are the images."""

    name = "conv2d_weight_grad"
    partial_ok = (0, 1)
    scales_partials = True

    def abstract_eval(self, x: AVal, g: AVal, *, kernel: tuple, groups: int, **kw: Any) -> AVal:
        (xs, dtype), gs = x, g[0]
        if len(xs) < 4 or len(gs) != len(xs) or xs[:-3] != gs[:-3]:
            raise ValueError(f"{self.name}: input {xs} and output gradient {gs} do not match")
        return xs[:-4] + (gs[-3], xs[-3] // groups) + tuple(kernel), dtype

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        x, g = in_shapes
        ci, co, sizes, whole = _channel_factors(kwargs["groups"], x[-3], g[-3])
        dims = ((("n",), ci, ("h",), ("w",)), (("n",), co, ("oh",), ("ow",)))
        out = (co, ci[-1:], ("kh",), ("kw",))
        return OpShardingRule(dims, (out,), sizes, frozenset(whole), "sum", self.partial_ok)

    def local_kwargs(self, kwargs: dict, in_avals: list, out_shapes: list) -> dict:
        per_group = out_shapes[0][-3]
        if kwargs["groups"] == 1 or not per_group:
            return kwargs
        return {**kwargs, "groups": in_avals[0][0][-3] // per_group}  # a sharded group factor

    def kernel(
        self, x: Any, g: Any, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple, groups: int
    ) -> Any:
        prefix = _shape(x)[:-4]
        x, g = _fold_batch(x, prefix, *_MX_ARRAYS), _fold_batch(g, prefix, *_MX_ARRAYS)
        groups *= math.prod(prefix)
        if tuple(stride) == (1, 1):
            res = _mx_wgrad_shifted(x, g, kernel, padding, dilation, groups)
        else:
            res = _mx_wgrad_conv(x, g, stride, padding, dilation, groups)
        return ops.reshape(res, prefix + (_shape(res)[0] // math.prod(prefix),) + _shape(res)[1:])

    def numpy_kernel(
        self, x: np.ndarray, g: np.ndarray, *, kernel: tuple, stride: tuple, padding: Pads, dilation: tuple, groups: int
    ) -> np.ndarray:
        prefix = x.shape[:-4]
        p = math.prod(prefix)
        x, g, groups = _fold_batch(x, prefix, *_NP_ARRAYS), _fold_batch(g, prefix, *_NP_ARRAYS), groups * p
        n, c = x.shape[:2]
        o, oh, ow = g.shape[1:]
        win = _np_windows(
            _np_pad(x.reshape(n, groups, c // groups, *x.shape[-2:]), padding), kernel, stride, dilation, (oh, ow)
        )
        res = np.einsum("ngchwij,ngohw->gocij", win, g.reshape(n, groups, o // groups, oh, ow), optimize=True)
        res = res.reshape(prefix + (o // p,) + res.shape[2:])  # (G, O/G, ...) -> (P.., O, ...)
        return np.ascontiguousarray(res, dtype=x.dtype)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, kernel: tuple, **kw: Any) -> list:
        x, g = primals
        ct = cotangents[0]
        dx = _apply(_conv_transpose2d, g, ct, **kw) if x.requires_grad else None
        dg = _apply(_conv2d, x, ct, **kw) if g.requires_grad else None
        return [dx, dg]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        x, g = primals
        tx, tg = tangents
        return [_bin.add(_conv2d_weight_grad(tx, g, **kw), _conv2d_weight_grad(x, tg, **kw))]


def _mx_wgrad_shifted(x: Any, g: Any, kernel: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
    """MAX, stride 1: per group, (K*C/G, M) shifted rows of the flattened padded input times
    the (M, O/G) zero-padded output gradient, M = N * Hp * Wp."""
    n, c = _shape(x)[:2]
    o, oh, ow = _shape(g)[1:]
    cg, og, (kh, kw) = c // groups, o // groups, kernel
    if groups == 1:  # the same layouts as below without the unit group axis (MAX's 2-D kernels are faster)
        xt = _mx_pad(ops.permute(x, [1, 0, 2, 3]), padding)  # (C, N, Hp, Wp)
        gt = as_nhwc(g)  # (N, OH, OW, O)
    else:
        xt = _mx_pad(ops.permute(ops.reshape(x, (n, groups, cg) + _shape(x)[-2:]), [1, 2, 0, 3, 4]), padding)
        gt = ops.permute(ops.reshape(g, (n, groups, og, oh, ow)), [1, 0, 3, 4, 2])  # (G, N, OH, OW, O/G)
    hp, wp = _shape(xt)[-2:]
    m, lead = n * hp * wp, () if groups == 1 else (groups,)
    offsets = [i * dilation[0] * wp + j * dilation[1] for i in range(kh) for j in range(kw)]
    xt = ops.reshape(xt, lead + (cg, m))
    xt = ops.pad(xt, [0, 0] * len(lead) + [0, 0, 0, offsets[-1]])  # the rows the last shift reads
    gt = ops.pad(gt, [0, 0] * len(lead) + [0, 0, 0, hp - oh, 0, wp - ow, 0, 0])  # zeroes the wrapped rows
    sliced = [ops.slice_tensor(xt, [slice(None)] * len(lead) + [slice(None), slice(s, s + m)]) for s in offsets]
    cols = ops.reshape(ops.stack(sliced, axis=len(lead)), lead + (kh * kw * cg, m))
    res = ops.matmul(cols, ops.reshape(gt, lead + (m, og)))  # (G.., K*C/G, O/G)
    res = ops.permute(ops.reshape(res, (groups, kh, kw, cg, og)), [0, 4, 3, 1, 2])
    return ops.reshape(res, (o, cg, kh, kw))


def _mx_wgrad_conv(x: Any, g: Any, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
    """MAX, any stride: a convolution of the input (batch C/G, channels (G, N)) with the output
    gradient as its filter (G*O/G, N, OH, OW); stride and dilation swap roles."""
    n, c, h, w = _shape(x)
    o, oh, ow = _shape(g)[1:]
    cg, og = c // groups, o // groups
    a = ops.reshape(ops.permute(ops.reshape(x, (n, groups, cg, h, w)), [2, 1, 0, 3, 4]), (cg, groups * n, h, w))
    b = ops.reshape(ops.permute(ops.reshape(g, (n, groups, og, oh, ow)), [1, 2, 0, 3, 4]), (o, n, oh, ow))
    res = Conv2dOp._kernel(a, b, stride=dilation, padding=padding, dilation=stride, groups=groups)  # (C/G, O, kH, kW)
    return ops.permute(res, [1, 0, 2, 3])


_conv2d_weight_grad = Conv2dWeightGradOp()
_conv2d = Conv2dOp()


# -- conv_transpose2d -----------------------------------------------------------------------------
class ConvTranspose2dOp(_ConvOperation):
    """`x (..., Cin, H, W)` with `w (Cin, Cout/groups, kH, kW)`. The full output has extent
    `(H - 1) * s + d * (k - 1) + 1`; `padding` crops it per side (negative entries extend it)."""

    name = "conv_transpose2d"
    transposed = True

    def abstract_eval(self, x: AVal, w: AVal, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> AVal:
        lead = _lead(x[0], 3, self.name)
        c, h, wd = x[0][-3:]
        _check_weight(x[0], w[0], self.name)
        cin, og, kh, kw = w[0][-4:]
        if cin != c or c % groups:
            raise ValueError(f"{self.name}: weight of shape {w[0]} with groups={groups} does not fit input {x[0]}")
        oh = (h - 1) * stride[0] + dilation[0] * (kh - 1) + 1 - padding[0] - padding[1]
        ow = (wd - 1) * stride[1] + dilation[1] * (kw - 1) + 1 - padding[2] - padding[3]
        if oh < 1 or ow < 1:
            raise ValueError(f"{self.name}: output size ({oh}, {ow}) for input {x[0]} is too small")
        return lead + (og * groups, oh, ow), x[1]

    @staticmethod
    def _kernel(x: Any, w: Any, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
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

    @staticmethod
    def _numpy(x: np.ndarray, w: np.ndarray, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
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
            _apply(_conv2d, g, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
            if x.requires_grad
            else None
        )
        dw = _weight_grad(g, x, w.shape[-2:], stride, padding, dilation, groups) if w.requires_grad else None
        return [dx, dw]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        x, w = primals
        return [
            _bin.add(_apply(_conv_transpose2d, tangents[0], w, **kw), _apply(_conv_transpose2d, x, tangents[1], **kw))
        ]


_conv_transpose2d = ConvTranspose2dOp()


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
    out = _apply(_conv2d, x4, w4, stride=stride, padding=(*pads[0], *pads[1]), dilation=dilation, groups=groups)
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
    out = _apply(_conv_transpose2d, x, weight, stride=stride, padding=pads, dilation=dilation, groups=groups)
    if bias is not None:
        out = _bin.add(out, _view.reshape(bias, (o, 1, 1)))
    return _view.squeeze(out, 0) if unbatched else out

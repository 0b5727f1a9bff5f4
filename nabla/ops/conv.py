"""Convolution with PyTorch's layouts: NCHW / NCL / NCDHW inputs, OIHW / OIL / OIDHW weights, and
transposed-convolution weights `(in, out/groups, *kernel)`, so PyTorch checkpoints load unchanged.
The MAX lowerings work in MAX's channels-last input and filter layouts (NHWC / RSCF, NDHWC / QRSCF):
a 4-D input's NHWC twin (`_layout.py`: the form a previous convolution or pooling left) is used
as it is, anything else is permuted inside the kernel, and an NCHW result remembers its NHWC form
for the next kernel.

Primitives (each with MAX lowering, NumPy kernel, VJP and JVP side by side):
    conv2d              grouped, strided, dilated 2-D convolution
    conv_transpose2d    its transpose: the input gradient of conv2d (and conv2d is its input gradient)
    conv2d_weight_grad  the weight gradient of both (the batch and the output positions contracted)
    conv3d, conv_transpose3d, conv3d_weight_grad
                        the same three over (D, H, W): subclasses that set `spatial = 3`; the
                        classes are written for any number of spatial dims

Inside the primitives padding is explicit per side, `(before, after)` for each spatial dim
(`(top, bottom, left, right)` in 2-D), and a negative entry crops. The public functions turn
PyTorch's arguments ("same", output_padding) into it, and the gradient rules use negative entries
to drop rows a strided window never reads. conv1d runs the 2-D primitive on a height-1 image.
The window arithmetic shared with `pooling.py` lives in `windows.py`; the weight-gradient
primitives in `conv_grad.py`.

Under vmap both operands arrive with one batch prefix (x `(P.., N, C, *S)`, w `(P.., O, C/g, *K)`);
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
from max.graph import ops

from ..core.sharding import OpShardingRule
from ..core.tensor.tensor import Tensor, grad_enabled_for
from . import batching as _batching
from . import binary as _bin
from . import view as _view
from .base import AVal, Operation, public
from .cast import autocast_operands
from .conv_grad import _conv2d_weight_grad, _conv3d_weight_grad, _weight_grad
from .windows import (
    Pads,
    _axes,
    _batched,
    _channels_last,
    _check_tensor,
    _ints,
    _lead,
    _mx_from_nhwc,
    _mx_pad,
    _mx_place,
    _mx_to_nhwc,
    _np_pad,
    _np_windows,
    _offsets,
    _out_sizes,
    _pairs,
    _shape,
    _subscripts,
    _transposed_sizes,
)

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose2d", "conv_transpose3d"]


def _check_weight(x: tuple, w: tuple, op: str, spatial: int = 2) -> None:
    """w is (spatial + 2)-D plus the vmap batch prefix it shares with x (operands are aligned)."""
    bd = len(w) - spatial - 2
    if bd < 0 or len(x) < bd + spatial + 1 or x[:bd] != w[:bd]:
        raise ValueError(f"{op}: weight of shape {w} does not fit input {x} (expected a {spatial + 2}-D weight)")


# -- vmap: a batched weight folds into the groups ---------------------------------------------------
def _fold(x: Any, w: Any, groups: int, spatial: int, permute: Any, reshape: Any, shape: Any) -> tuple:
    """x (P.., L.., C, *S), w (P.., O, I, *K) -> x (L.., P*C, *S), w (P*O, I, *K), groups * P,
    and the function unfolding an output (L.., P*O', *OS) to (P.., L.., O', *OS).
    `permute`, `reshape`, `shape` are the array library's (NumPy or MAX)."""
    ws, xs = shape(w), shape(x)
    nc = spatial + 1  # the channel and spatial axes
    bd = len(ws) - nc - 1
    if not bd:
        return x, w, groups, lambda y: y
    prefix, lead, p = ws[:bd], xs[bd:-nc], math.prod(ws[:bd])
    nl = len(lead)
    tail = list(range(bd + nl, bd + nl + nc))  # the channel and spatial axes
    x = reshape(permute(x, [*range(bd, bd + nl), *range(bd), *tail]), lead + (p * xs[-nc],) + xs[-spatial:])
    w = reshape(w, (p * ws[-nc - 1],) + ws[-nc:])

    def unfold(y: Any) -> Any:
        ys = shape(y)
        y = reshape(y, lead + prefix + (ys[-nc] // p,) + ys[-spatial:])
        return permute(y, [*range(nl, nl + bd), *range(nl), *tail])

    return x, w, groups * p, unfold


_NP_ARRAYS = (np.transpose, np.reshape, np.shape)  # (permute, reshape, shape) for `_fold`, conv_grad's `_fold_batch`
_MX_ARRAYS = (lambda v, p: ops.permute(v, list(p)), ops.reshape, _shape)


def _np_fold(x: np.ndarray, w: np.ndarray, groups: int, spatial: int) -> tuple:
    return _fold(x, w, groups, spatial, *_NP_ARRAYS)


def _mx_fold(x: Any, w: Any, groups: int, spatial: int) -> tuple:
    return _fold(x, w, groups, spatial, *_MX_ARRAYS)


def _apply(op: Operation, x: Tensor, w: Tensor, **kw: Any) -> Tensor:
    """Call a conv primitive. An unbatched weight that needs no gradient is not broadcast over
    x's extra vmap levels: they become leading (image) dims of x instead. (With a gradient, the
    broadcast must stay: it is where per-example weight gradients come from. So it must for an
    input that records a gradient, or carries a forward-mode tangent: jacrev's cotangents and
    jacfwd's tangents may be batched over more levels than x, and a batch dim cannot move out
    from under them.)"""
    levels = x._impl.batch_dims
    keep = w._impl.batch_dims
    if levels <= keep or grad_enabled_for([x._impl, w._impl]) or x._impl.tangent or w._impl.tangent:
        return op(x, w, **kw)
    prefix = x._impl.physical_shape[:levels]
    for level in range(levels, keep, -1):
        x = _batching.move_from_batch(x, 0, prefix[:level])
    y = op(x, w, **kw)
    for level in range(keep, levels):
        y = _batching.move_to_batch(y, 0, prefix[:level])
    return y


def _channel_factors(groups: int, cin: int, cout: int, spatial: int = 2) -> tuple:
    """The sharding factors of a convolution's input and output channels: `(ci, co, sizes,
    whole)`. With groups > 1 the channels are "(group, per-group)" and only the group factor
    can be sharded; the spatial and kernel factors always stay whole."""
    whole = {f"{p}{a}" for a in _axes(spatial) for p in ("", "k", "o")}
    if groups == 1:
        return ("ci",), ("co",), {"ci": cin, "co": cout}, whole
    if not (cin and cout):
        whole.add("g")
    return ("g", "ci"), ("g", "co"), {"g": groups, "ci": cin // groups, "co": cout // groups}, whole


def _prims(spatial: int) -> tuple[Operation, Operation, Operation]:
    """The convolution, transposed convolution and weight-gradient primitives of `spatial` dims."""
    if spatial == 3:
        return _conv3d, _conv_transpose3d, _conv3d_weight_grad
    return _conv2d, _conv_transpose2d, _conv2d_weight_grad


class _ConvOperation(Operation):
    """A conv primitive whose weight may carry vmap batch dims: both kernels fold them into the
    groups (`_fold`), run the unbatched `_kernel` (MAX) or `_numpy`, and unfold the result."""

    partial_ok = (0, 1)  # bilinear: one operand may hold partial sums
    scales_partials = True
    transposed = False  # conv_transpose: the weight is (in, out / groups, *kernel)
    spatial = 2  # spatial dims: 3 for the 3-D subclasses

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        x, w = in_shapes
        n, axes = self.spatial, _axes(self.spatial)
        lead = tuple((f"n{i}",) for i in range(len(x) - n - 1))
        ci, co, sizes, whole = _channel_factors(kwargs["groups"], x[-n - 1], out_shapes[0][-n - 1], n)
        w_in, w_out = ci[-1:], co[-1:]  # the weight holds one group's channels
        taps = tuple((f"k{a}",) for a in axes)
        x_dims = (*lead, ci, *((a,) for a in axes))
        w_dims = (ci, w_out, *taps) if self.transposed else (co, w_in, *taps)
        out = (*lead, co, *((f"o{a}",) for a in axes))
        return OpShardingRule((x_dims, w_dims), (out,), sizes, frozenset(whole), "sum", self.partial_ok)

    def local_kwargs(self, kwargs: dict, in_avals: list, out_shapes: list) -> dict:
        (x, _), (w, _) = in_avals
        n = self.spatial
        per_group = w[-n - 1]  # conv: input channels per group; conv_transpose: output channels per group
        if kwargs["groups"] == 1 or not per_group:
            return kwargs
        # a sharded group factor leaves each device some of the groups
        channels = out_shapes[0][-n - 1] if self.transposed else x[-n - 1]
        return {**kwargs, "groups": channels // per_group}

    def kernel(self, x: Any, w: Any, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
        x, w, groups, unfold = _mx_fold(x, w, groups, self.spatial)
        return unfold(self._kernel(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups))

    def numpy_kernel(
        self, x: np.ndarray, w: np.ndarray, *, stride: tuple, padding: Pads, dilation: tuple, groups: int
    ) -> np.ndarray:
        x, w, groups, unfold = _np_fold(x, w, groups, self.spatial)
        return unfold(self._numpy(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups))


# -- conv2d / conv3d ------------------------------------------------------------------------------
class Conv2dOp(_ConvOperation):
    """`x (..., C, H, W)` with `w (O, C/groups, kH, kW)` -> `(..., O, OH, OW)`; explicit pads.
    Written for `spatial` dims (Conv3dOp sets 3); the kernels read it from the weight's rank."""

    name = "conv2d"

    def abstract_eval(self, x: AVal, w: AVal, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> AVal:
        n = self.spatial
        lead = _lead(x[0], n + 1, self.name)
        c, size = x[0][-n - 1], x[0][-n:]
        _check_weight(x[0], w[0], self.name, n)
        o, cg, kernel = w[0][-n - 2], w[0][-n - 1], w[0][-n:]
        if cg * groups != c or o % groups:
            raise ValueError(f"{self.name}: weight of shape {w[0]} with groups={groups} does not fit input {x[0]}")
        out = _out_sizes(size, padding, kernel, stride, dilation)
        if min(out) < 1:
            raise ValueError(f"{self.name}: input {x[0]} with padding {padding} is smaller than the kernel")
        return lead + (o, *out), x[1]

    @staticmethod
    def _kernel(x: Any, w: Any, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
        n = len(_shape(w)) - 2
        # negative pads crop the input; positive ones go to the conv
        xn, lead = _mx_to_nhwc(x, n)
        xn = _mx_pad(xn, tuple(min(p, 0) for p in padding), trail=1)
        pads = tuple(max(p, 0) for p in padding)
        filt = ops.permute(w, [*range(2, n + 2), 1, 0])  # OIHW -> RSCF (OIDHW -> QRSCF)
        conv = ops.conv2d if n == 2 else ops.conv3d
        y = conv(xn, filt, stride=tuple(stride), dilation=tuple(dilation), padding=pads, groups=groups)
        return _mx_from_nhwc(y, lead)

    @staticmethod
    def _numpy(x: np.ndarray, w: np.ndarray, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
        n = w.ndim - 2
        lead, size = x.shape[: -n - 1], x.shape[-n:]
        o, cg, kernel = w.shape[0], w.shape[1], w.shape[2:]
        out = _out_sizes(size, padding, kernel, stride, dilation)
        xp = _np_pad(x.reshape((math.prod(lead), groups, cg) + size), padding)
        win = _np_windows(xp, kernel, stride, dilation, out)  # (N, G, Cg, *out, *kernel)
        wg = w.reshape((groups, o // groups, cg) + kernel)
        sp, taps = _subscripts(n)
        res = np.einsum(f"ngc{sp}{taps},goc{taps}->ngo{sp}", win, wg, optimize=True)
        return np.ascontiguousarray(res.reshape(lead + (o,) + out), dtype=x.dtype)

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
        n = self.spatial
        kernel = w.shape[-n:]
        # trailing rows of the padded input that no window reads get no gradient: crop them
        unread = [
            (s + a + b - d * (k - 1) - 1) % st
            for s, (a, b), k, st, d in zip(x.shape[-n:], _pairs(padding), kernel, stride, dilation, strict=True)
        ]
        exact = tuple(p - unread[i // 2] if i % 2 else p for i, p in enumerate(padding))
        dx = None
        if x.requires_grad:
            transpose = _prims(n)[1]
            dx = _apply(transpose, g, w, stride=stride, padding=exact, dilation=dilation, groups=groups)
        dw = _weight_grad(x, g, kernel, stride, exact, dilation, groups) if w.requires_grad else None
        return [dx, dw]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        x, w = primals
        return [_bin.add(_apply(self, tangents[0], w, **kw), _apply(self, x, tangents[1], **kw))]


class Conv3dOp(Conv2dOp):
    """`x (..., C, D, H, W)` with `w (O, C/groups, kD, kH, kW)` -> `(..., O, OD, OH, OW)`; MAX's
    conv3d (NDHWC input, QRSCF filter)."""

    name = "conv3d"
    spatial = 3


_conv2d = Conv2dOp()
_conv3d = Conv3dOp()


# -- conv_transpose2d / conv_transpose3d ----------------------------------------------------------
class ConvTranspose2dOp(_ConvOperation):
    """`x (..., Cin, H, W)` with `w (Cin, Cout/groups, kH, kW)`. The full output has extent
    `(H - 1) * s + d * (k - 1) + 1`; `padding` crops it per side (negative entries extend it).
    Written for `spatial` dims (ConvTranspose3dOp sets 3)."""

    name = "conv_transpose2d"
    transposed = True

    def abstract_eval(self, x: AVal, w: AVal, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> AVal:
        n = self.spatial
        lead = _lead(x[0], n + 1, self.name)
        c, size = x[0][-n - 1], x[0][-n:]
        _check_weight(x[0], w[0], self.name, n)
        cin, og, kernel = w[0][-n - 2], w[0][-n - 1], w[0][-n:]
        if cin != c or c % groups:
            raise ValueError(f"{self.name}: weight of shape {w[0]} with groups={groups} does not fit input {x[0]}")
        out = _transposed_sizes(size, padding, kernel, stride, dilation)
        if min(out) < 1:
            raise ValueError(f"{self.name}: output size {out} for input {x[0]} is too small")
        return lead + (og * groups, *out), x[1]

    @staticmethod
    def _kernel(x: Any, w: Any, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
        n = len(_shape(w)) - 2
        # MAX's conv2d_transpose fails on NVIDIA GPUs (cuDNN BAD_PARAM, modular/modular#6726):
        # there, as for groups and 3-D, the flipped-kernel convolution below.
        if groups == 1 and n == 2 and x.device.is_cpu():
            # MAX's transposed convolution (filter (kH, kW, out, in)); negative pads extend after it.
            xn, lead = _mx_to_nhwc(x)
            filt = ops.permute(w, [2, 3, 1, 0])
            pads = tuple(max(p, 0) for p in padding)
            y = ops.conv2d_transpose(xn, filt, stride=tuple(stride), dilation=tuple(dilation), padding=pads)
            y = _mx_from_nhwc(y, lead)
            return _mx_pad(y, tuple(-min(p, 0) for p in padding))
        # Grouped, 3-D (MAX has no 3-D transposed convolution) or on an accelerator: a stride-1
        # convolution of the zero-upsampled input with the flipped kernel.
        lead, cin, size = _shape(x)[: -n - 1], _shape(x)[-n - 1], _shape(x)[-n:]
        og, kernel = _shape(w)[1], _shape(w)[2:]
        xs = ops.reshape(x, (math.prod(lead), cin) + size)
        xd = _mx_place(xs, (0,) * n, stride, tuple((s - 1) * st + 1 for s, st in zip(size, stride, strict=True)))
        filt = ops.reshape(w, (groups, cin // groups, og) + kernel)
        filt = ops.reshape(ops.permute(filt, [*range(3, n + 3), 1, 0, 2]), kernel + (cin // groups, groups * og))
        filt = ops.slice_tensor(filt, [(slice(None, None, -1), k) for k in kernel] + [slice(None), slice(None)])
        edges = [d * (k - 1) for d, k in zip(dilation, kernel, strict=True) for _ in range(2)]
        edges = [e - p for e, p in zip(edges, padding, strict=True)]  # pad by e - p per side; negative crops
        xd = _mx_pad(xd, tuple(min(e, 0) for e in edges))
        pads = tuple(max(e, 0) for e in edges)
        conv = ops.conv2d if n == 2 else ops.conv3d
        y = conv(ops.permute(xd, _channels_last(n)), filt, dilation=tuple(dilation), padding=pads, groups=groups)
        return _mx_from_nhwc(y, lead)

    @staticmethod
    def _numpy(x: np.ndarray, w: np.ndarray, *, stride: tuple, padding: Pads, dilation: tuple, groups: int) -> Any:
        n = w.ndim - 2
        lead, cin, size = x.shape[: -n - 1], x.shape[-n - 1], x.shape[-n:]
        og, kernel = w.shape[1], w.shape[2:]
        m = math.prod(lead)
        full = _transposed_sizes(size, (0,) * 2 * n, kernel, stride, dilation)
        out = np.zeros((m, groups, og) + full, dtype=np.result_type(x.dtype, np.float32))
        xg = x.reshape((m, groups, cin // groups) + size)
        wg = w.reshape((groups, cin // groups, og) + kernel)
        sp, _ = _subscripts(n)
        for k, *offs in _offsets(kernel, dilation):
            part = np.einsum(f"ngc{sp},gco->ngo{sp}", xg, wg[(..., *np.unravel_index(k, kernel))], optimize=True)
            at = tuple(slice(r, r + (s - 1) * st + 1, st) for r, s, st in zip(offs, size, stride, strict=True))
            out[(..., *at)] += part
        out = _np_pad(out, tuple(-p for p in padding))
        return np.ascontiguousarray(out.reshape(lead + (groups * og,) + out.shape[-n:]), dtype=x.dtype)

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
        n = self.spatial
        dx = None
        if x.requires_grad:
            dx = _apply(_prims(n)[0], g, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
        dw = _weight_grad(g, x, w.shape[-n:], stride, padding, dilation, groups) if w.requires_grad else None
        return [dx, dw]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        x, w = primals
        return [_bin.add(_apply(self, tangents[0], w, **kw), _apply(self, x, tangents[1], **kw))]


class ConvTranspose3dOp(ConvTranspose2dOp):
    """`x (..., Cin, D, H, W)` with `w (Cin, Cout/groups, kD, kH, kW)`; on MAX a conv3d of the
    zero-upsampled input."""

    name = "conv_transpose3d"
    spatial = 3


_conv_transpose2d = ConvTranspose2dOp()
_conv_transpose3d = ConvTranspose3dOp()


# -- argument checking (the checks shared with pooling are in windows.py) -------------------------
def _check_groups(groups: Any, op: str) -> int:
    if not isinstance(groups, int | np.integer) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    return int(groups)


def _check_bias(bias: Any, o: int, x: Tensor, op: str) -> None:
    if bias is None:
        return
    _check_tensor(bias, op, "bias")
    if bias.shape != (o,):
        raise ValueError(f"{op}: bias must have shape ({o},) (out_channels), got {bias.shape}")
    if bias.dtype != x.dtype:
        raise TypeError(f"{op}: bias dtype {bias.dtype.name} differs from input dtype {x.dtype.name}")


def _add_bias(out: Tensor, bias: Tensor | None, spatial: int) -> Tensor:
    if bias is None:
        return out
    return _bin.add(out, _view.reshape(bias, (bias.shape[0],) + (1,) * spatial))


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
    """conv1d / conv2d / conv3d: checks in the terms the user wrote, then the 2-D (1-D too) or
    3-D primitive."""
    x, weight, bias = autocast_operands(x, weight, bias)  # (inside nabla.autocast only)
    x, unbatched = _batched(x, spatial, op)
    _check_tensor(weight, op, "weight")
    if weight.ndim != spatial + 2:
        raise ValueError(f"{op}: weight must have rank {spatial + 2}, got shape {weight.shape}")
    if weight.dtype != x.dtype:
        raise TypeError(f"{op}: input dtype {x.dtype.name} and weight dtype {weight.dtype.name} differ")
    groups = _check_groups(groups, op)
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
    _check_bias(bias, o, x, op)
    xk, wk = x, weight
    if spatial == 1:
        xk, wk = _view.unsqueeze(x, 2), _view.unsqueeze(weight, 2)
        stride, dilation, pads = (1, *stride), (1, *dilation), [(0, 0), *pads]
    prim = _conv3d if spatial == 3 else _conv2d
    flat = tuple(p for pair in pads for p in pair)
    out = _apply(prim, xk, wk, stride=stride, padding=flat, dilation=dilation, groups=groups)
    if spatial == 1:
        out = _view.squeeze(out, 2)
    out = _add_bias(out, bias, spatial)
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
def conv3d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """3-D convolution (cross-correlation), as `torch.nn.functional.conv3d`.

    Args:
        x: input (N, C, D, H, W) or unbatched (C, D, H, W).
        weight: (out_channels, C / groups, kD, kH, kW).
        bias: optional (out_channels,).
        stride, dilation: int or (d, h, w).
        padding: int, (d, h, w), "valid" or "same" (stride 1 only; an odd total pads one more after).
        groups: split the channels into this many independent convolutions.

    Example:
        >>> nabla.conv3d(nabla.ones(1, 3, 4, 8, 8), nabla.ones(2, 3, 3, 3, 3), padding=1).shape
        (1, 2, 4, 8, 8)
    """
    return _conv("conv3d", x, weight, bias, stride, padding, dilation, groups, 3)


def _conv_transpose(
    op: str,
    x: Any,
    weight: Any,
    bias: Any,
    stride: Any,
    padding: Any,
    output_padding: Any,
    groups: Any,
    dilation: Any,
    spatial: int,
) -> Tensor:
    """conv_transpose2d / conv_transpose3d: PyTorch's checks, then the primitive of `spatial` dims."""
    x, weight, bias = autocast_operands(x, weight, bias)  # (inside nabla.autocast only)
    x, unbatched = _batched(x, spatial, op)
    _check_tensor(weight, op, "weight")
    if weight.ndim != spatial + 2:
        raise ValueError(f"{op}: weight must have rank {spatial + 2}, got shape {weight.shape}")
    if weight.dtype != x.dtype:
        raise TypeError(f"{op}: input dtype {x.dtype.name} and weight dtype {weight.dtype.name} differ")
    groups = _check_groups(groups, op)
    c = x.shape[1]
    if weight.shape[0] != c:
        raise ValueError(
            f"{op}: expected input with {weight.shape[0]} channels (weight.shape[0]), got {c} channels "
            f"(input shape {x.shape}, weight shape {weight.shape})"
        )
    if c % groups:
        raise ValueError(f"{op}: in_channels={c} is not divisible by groups={groups}")
    if isinstance(padding, str):
        raise ValueError(f"{op}: padding must be an int or a tuple of {spatial} ints, got {padding!r}")
    stride = _ints(stride, spatial, op, "stride", 1)
    dilation = _ints(dilation, spatial, op, "dilation", 1)
    pad = _ints(padding, spatial, op, "padding", 0)
    out_pad = _ints(output_padding, spatial, op, "output_padding", 0)
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
    _check_bias(bias, weight.shape[1] * groups, x, op)
    pads = tuple(v for p, q in zip(pad, out_pad, strict=True) for v in (p, p - q))  # output_padding extends after
    prim = _conv_transpose3d if spatial == 3 else _conv_transpose2d
    out = _apply(prim, x, weight, stride=stride, padding=pads, dilation=dilation, groups=groups)
    out = _add_bias(out, bias, spatial)
    return _view.squeeze(out, 0) if unbatched else out


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
    return _conv_transpose("conv_transpose2d", x, weight, bias, stride, padding, output_padding, groups, dilation, 2)


@public()
def conv_transpose3d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """3-D transposed convolution, as `torch.nn.functional.conv_transpose3d` (same argument order).

    Output size per spatial dim: (D - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1.

    Args:
        x: input (N, C_in, D, H, W) or unbatched (C_in, D, H, W).
        weight: (C_in, out_channels / groups, kD, kH, kW).
        bias: optional (out_channels,).
        stride, padding, dilation: int or (d, h, w); padding crops each side of the output.
        output_padding: extra size added after each spatial dim; smaller than stride or dilation.
        groups: split the channels into this many independent convolutions.

    Example:
        >>> nabla.conv_transpose3d(nabla.ones(1, 4, 2, 3, 3), nabla.ones(4, 2, 3, 3, 3), stride=2).shape
        (1, 2, 5, 7, 7)
    """
    return _conv_transpose("conv_transpose3d", x, weight, bias, stride, padding, output_padding, groups, dilation, 3)

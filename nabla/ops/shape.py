"""Shape ops beyond reshape/permute: flip, pad, concatenate, split (primitives), and stack,
chunk, tensor_split, unbind (composites of those and of view.py's ops). roll, tile,
repeat_interleave, meshgrid, moveaxis, unflatten, rot90, fliplr/flipud, hsplit/vsplit/dsplit
and unfold are in rearrange.py (which imports this module's private helpers); tril/triu and
diagonal are in triangular.py.

`pad` with negative widths crops: it is also this module's slice primitive (VJP of constant
padding = padding with the negated widths). Multi-output `split` (and `chunk`/`unbind`) return
one tuple whose tensors share a single OpNode.

Rules receive physical (batch-shifted) kwargs; they call ops with logical ones (`_logical`).

Sharding (`_sharding.py`): dims an op moves data along stay whole; partial sums pass (linear ops).
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any

import numpy as np
from max.graph import TensorType, ops

from ..core.common import dtypes as _dt
from ..core.tensor.impl import TensorImpl
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import creation as _cr
from . import mojo_kernels
from . import reduction as _red
from ._sharding import picked, whole_dims
from .base import AVal, Operation, public, shape_of
from .cast import cast
from .communication import reshard, shard
from .spmd import window, windowable
from .view import normalize_axis, unsqueeze

__all__ = [
    "cat",
    "chunk",
    "concat",
    "concatenate",
    "flip",
    "pad",
    "split",
    "stack",
    "tensor_split",
    "unbind",
]


# -- helpers -----------------------------------------------------------------------------------
def _check_tensor(x: Any, op: str, arg: str = "x") -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")


def _int(value: Any, op: str, arg: str) -> int:
    if not isinstance(value, int | np.integer) or isinstance(value, bool | np.bool_):
        raise TypeError(f"{op}: {arg} must be an int, got {value!r}")
    return int(value)


def _axes(axis: Any, rank: int, op: str, arg: str = "dim") -> tuple[int, ...]:
    """Normalize an int or a sequence of ints; a 0-d tensor accepts 0 and -1 (as PyTorch)."""
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    if rank == 0:
        for a in axes:
            _int(a, op, arg)
            if a not in (0, -1):
                raise ValueError(f"{op}: {arg}={a} is out of range for a tensor of rank 0")
        return ()
    out = tuple(normalize_axis(a, rank, op, arg) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: {arg} {tuple(axes)} names a dimension twice")
    return out


def _shift(axis: int, batch_dims: int) -> int:
    return axis + batch_dims


def _empty(shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
    """A MAX value of a shape with a zero dimension (MAX's slice/split/concat reject those)."""
    return ops.broadcast_to(ops.constant(False if dtype == _dt.bool_ else 0, dtype, device), shape)


def _static_shape(value: Any) -> tuple[int, ...]:
    return shape_of(value)


def _tensor_list(tensors: Any, op: str) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, list | tuple):
        raise TypeError(f"{op}: tensors must be a list or tuple of Tensors, got {type(tensors).__name__}")
    if not tensors:
        raise ValueError(f"{op}: expected a non-empty list of tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: input {i} must be a Tensor, got {type(t).__name__}")
    return list(tensors)


def _promote(tensors: list[Tensor]) -> list[Tensor]:
    dtype = functools.reduce(_dt.promote_types, [t.dtype for t in tensors])
    return [cast(t, dtype) for t in tensors]


# -- flip --------------------------------------------------------------------------------------
class FlipOp(Operation):
    saves_values = False  # (see Operation.saves_values)
    name = "flip"

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        return {"axes": tuple(_shift(a, batch_dims) for a in kwargs["axes"])}

    def abstract_eval(self, x: AVal, *, axes: tuple) -> AVal:
        return x

    sharding_rule_for = whole_dims(lambda kw, rank: kw["axes"])

    def kernel(self, x: Any, *, axes: tuple) -> Any:
        shape = _static_shape(x)
        if 0 in shape:
            return x
        for a in axes:
            index = ops.constant(np.arange(shape[a] - 1, -1, -1, dtype=np.int64), _dt.int64, x.device)
            x = ops.gather(x, index, a)
        return x

    def numpy_kernel(self, x: np.ndarray, *, axes: tuple) -> np.ndarray:
        return np.flip(x, axes)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axes: tuple) -> list:
        return [_flip(cotangents[0], axes=axes)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axes: tuple) -> list:
        return [_flip(tangents[0], axes=axes)]


_flip = FlipOp()


@public()
def flip(x: Tensor, axis: Any = None, *, dims: Any = None) -> Tensor:
    """Reverse the order of elements along `axis` (int or tuple; None: every axis).

    Example:
        >>> nb.flip(nb.arange(3), 0).tolist()
        [2, 1, 0]
    """
    _check_tensor(x, "flip")
    if dims is not None:
        if axis is not None:
            raise TypeError("flip: pass either axis= or dims=, not both")
        axis = dims
    axes = tuple(range(x.ndim)) if axis is None else _axes(axis, x.ndim, "flip")
    axes = tuple(sorted(a for a in axes if x.shape[a] > 1))
    for a in [a for a in axes if windowable(x, a)]:  # each device gets its mirror piece: no gather
        x = window(x, a, x.shape[a] - 1, x.shape[a], reverse=True)
    local = tuple(a for a in axes if not windowable(x, a))
    return _flip(x, axes=local) if local else x


# -- pad (and crop: negative widths) -----------------------------------------------------------
_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "edge": "edge", "circular": "circular"}


class PadOp(Operation):
    """`widths`: one (before, after) pair per dimension; negative widths crop first.
    `mode`: "constant" (fill with `value`), "reflect" or "edge" (replicate)."""

    saves_values = False  # (see Operation.saves_values)

    name = "pad"

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        return {**kwargs, "widths": ((0, 0),) * batch_dims + tuple(kwargs["widths"])}

    def abstract_eval(self, x: AVal, *, widths: tuple, mode: str, value: Any) -> AVal:
        shape = tuple(n + lo + hi for n, (lo, hi) in zip(x[0], widths, strict=True))
        if any(s < 0 for s in shape):
            raise ValueError(f"pad: widths {widths} give a negative size for a tensor of shape {x[0]}")
        return shape, x[1]

    sharding_rule_for = whole_dims(  # linear unless a nonzero fill
        lambda kw, rank: [d for d, w in enumerate(kw["widths"]) if w != (0, 0)],
        lambda kw: "additive" if kw["mode"] != "constant" or kw["value"] == 0 else None,
    )

    def kernel(self, x: Any, *, widths: tuple, mode: str, value: Any) -> Any:
        shape = _static_shape(x)
        out_shape = tuple(n + lo + hi for n, (lo, hi) in zip(shape, widths, strict=True))
        if 0 in out_shape:
            return _empty(out_shape, x.dtype, x.device)
        crop = [(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(shape, widths, strict=True)]
        mid = tuple(b - a for a, b in crop)
        if 0 in mid:  # nothing of x survives: a constant fill
            return ops.broadcast_to(ops.constant(value, x.dtype, x.device), out_shape)
        if any((a, b) != (0, n) for (a, b), n in zip(crop, shape, strict=True)):
            x = ops.slice_tensor(x, [slice(a, b) for a, b in crop])
        paddings = [p for lo, hi in widths for p in (max(lo, 0), max(hi, 0))]
        if any(paddings):
            x = ops.pad(x, paddings, mode=mode, value=value) if mode == "constant" else ops.pad(x, paddings, mode=mode)
        return x

    def numpy_kernel(self, x: np.ndarray, *, widths: tuple, mode: str, value: Any) -> np.ndarray:
        x = x[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(x.shape, widths, strict=True))]
        pos = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
        if not any(p for pair in pos for p in pair):
            return x
        if mode == "constant":
            return np.pad(x, pos, mode="constant", constant_values=value)
        return np.pad(x, pos, mode=mode)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, widths: tuple, mode: str, value: Any) -> list:
        g = cotangents[0]
        if mode != "constant":
            # Fold the padded margins back onto the cells they copy, one axis at a time.
            for axis, (lo, hi) in enumerate(widths):
                if max(lo, 0) or max(hi, 0):
                    g = _fold(g, axis, max(lo, 0), max(hi, 0), mode)
            widths = tuple((min(lo, 0), min(hi, 0)) for lo, hi in widths)
        # Constant padding's transpose is the crop by the same widths (and vice versa).
        return [_pad_widths(g, tuple((-lo, -hi) for lo, hi in widths))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, widths: tuple, mode: str, value: Any) -> list:
        t = tangents[0]
        return [_pad(t, widths=widths, mode=mode, value=_fill(0, t.dtype))]


_pad = PadOp()


def _pad_widths(x: Tensor, widths: tuple, mode: str = "constant", value: Any = 0) -> Tensor:
    """Padding by logical `widths` (negative crops); a no-op for all-zero widths. Sharded dims
    padded with zeros are windowed, keeping their layout (other pads gather them)."""
    if not any(w for pair in widths for w in pair):
        return x
    if x._impl.sharding is not None and mode == "constant" and type(value) in (int, float) and value == 0:
        widths = list(widths)
        for d, (lo, hi) in enumerate(widths):
            if (lo or hi) and (y := window(x, d, -lo, x.shape[d] + lo + hi)) is not None:
                x, widths[d] = y, (0, 0)
        if not any(w for pair in widths for w in pair):
            return x
    return _pad(x, widths=tuple(widths), mode=mode, value=_fill(value, x.dtype))


def _axis_widths(rank: int, axis: int, lo: int, hi: int) -> tuple:
    return tuple((lo, hi) if i == axis else (0, 0) for i in range(rank))


def _slice(x: Tensor, axis: int, start: int, stop: int) -> Tensor:
    """x[..., start:stop, ...] along logical `axis` (0 <= start <= stop <= size)."""
    return _pad_widths(x, _axis_widths(x.ndim, axis, -start, stop - x.shape[axis]))


def _zero_pad(x: Tensor, axis: int, lo: int, hi: int) -> Tensor:
    return _pad_widths(x, _axis_widths(x.ndim, axis, lo, hi))


def _fold(g: Tensor, axis: int, lo: int, hi: int, mode: str) -> Tensor:
    """Transpose of reflect/edge padding by (lo, hi) >= 0 along one axis."""
    m = g.shape[axis] - lo - hi
    parts = [_slice(g, axis, lo, lo + m)]
    if mode == "edge":
        if lo:
            parts.append(_zero_pad(_red.sum(_slice(g, axis, 0, lo), axis, True), axis, 0, m - 1))
        if hi:
            parts.append(_zero_pad(_red.sum(_slice(g, axis, lo + m, lo + m + hi), axis, True), axis, m - 1, 0))
    else:  # reflect: output j < lo copies input lo - j; output lo + m + k copies input m - 2 - k
        if lo:
            parts.append(_zero_pad(_flip(_slice(g, axis, 0, lo), axes=(axis,)), axis, 1, m - 1 - lo))
        if hi:
            parts.append(_zero_pad(_flip(_slice(g, axis, lo + m, lo + m + hi), axes=(axis,)), axis, m - 1 - hi, 1))
    return functools.reduce(_bin.add, parts)


def _fill(value: Any, dtype: Any) -> Any:
    if _dt.is_float(dtype):
        return float(value)
    return bool(value) if dtype == _dt.bool_ else int(value)


@public()
def pad(x: Tensor, pad: Any, mode: str = "constant", value: Any = 0.0) -> Tensor:
    """Pad `x` as `torch.nn.functional.pad`: `pad` is a flat tuple of (before, after) pairs
    starting from the LAST dimension; negative entries crop.

    Args:
        x: the tensor.
        pad: (left_last, right_last, left_second_last, right_second_last, ...).
        mode: "constant", "reflect", "replicate" (alias "edge") or "circular".
        value: the fill value for "constant".

    Example:
        >>> nb.pad(nb.ones(2, 2), (1, 1)).shape  # pads the last dimension
        (2, 4)
    """
    _check_tensor(x, "pad")
    if mode not in _MODES:
        raise ValueError(f"pad: mode must be one of {sorted(_MODES)}, got {mode!r}")
    try:
        flat = tuple(_int(p, "pad", "pad") for p in pad)
    except TypeError:
        raise TypeError(f"pad: pad must be a sequence of ints, got {pad!r}") from None
    if len(flat) % 2:
        raise ValueError(f"pad: pad must have an even length (before, after pairs), got length {len(flat)}: {flat}")
    if len(flat) > 2 * x.ndim:
        raise ValueError(
            f"pad: pad of length {len(flat)} pads {len(flat) // 2} dimensions, but the tensor has rank {x.ndim} "
            f"(shape {x.shape})"
        )
    kind = _MODES[mode]
    if kind != "constant" and value is not None and value != 0:
        raise ValueError(f"pad: mode {mode!r} takes no fill value, got value={value!r}")
    k = len(flat) // 2
    widths = [(0, 0)] * (x.ndim - k) + [(flat[2 * i], flat[2 * i + 1]) for i in reversed(range(k))]
    for d, (lo, hi) in enumerate(widths):
        n = x.shape[d]
        cropped = n + min(lo, 0) + min(hi, 0)
        if cropped < 0 or cropped + max(lo, 0) + max(hi, 0) < 0:
            raise ValueError(f"pad: padding ({lo}, {hi}) of dim {d} (size {n}) gives a negative size")
        if kind == "constant" or (lo <= 0 and hi <= 0):
            continue
        if n == 0:
            raise ValueError(f"pad: mode {mode!r} cannot pad dim {d} of size 0 (shape {x.shape})")
        if kind == "reflect" and max(lo, hi) >= n:
            raise ValueError(
                f"pad: reflect padding ({lo}, {hi}) of dim {d} must be less than its size {n} (shape {x.shape})"
            )
        if kind == "circular" and (cropped == 0 or max(lo, hi) > cropped):
            raise ValueError(
                f"pad: circular padding ({lo}, {hi}) of dim {d} wraps more than once around its size {cropped}"
            )
    if kind == "constant":
        return _pad_widths(x, tuple(widths), kind, 0 if value is None else value)
    grown = tuple((max(lo, 0), max(hi, 0)) for lo, hi in widths)
    crop = tuple((min(lo, 0), min(hi, 0)) for lo, hi in widths)
    if kind == "circular":  # torch crops, then wraps what is left
        return _pad_circular(_pad_widths(x, crop), grown)
    # reflect and replicate: torch pads the whole input, then crops (a reflection may reach
    # elements the crop removes)
    x = _pad_widths(x, grown, kind, 0)
    return _pad_widths(x, crop, "constant", 0) if any(lo or hi for lo, hi in crop) else x


def _pad_circular(x: Tensor, widths: tuple) -> Tensor:
    """Wrap by the (non-negative) widths: a concatenation of slices per padded axis."""
    for axis, (lo, hi) in enumerate(widths):
        if lo or hi:
            n = x.shape[axis]
            parts = [_slice(x, axis, n - lo, n)] if lo else []
            parts += [x] + ([_slice(x, axis, 0, hi)] if hi else [])
            x = concatenate(parts, axis)
    return x


# -- concatenate / split -----------------------------------------------------------------------
def _mx_concat_rows(parts: list, axis: int, shape: list[int]) -> Any:
    """MAX: `parts` concatenated along `axis` into `shape` by nabla's Mojo kernel
    (`mojo/concat.mojo`), each part viewed as rows of its `axis` and later dims: W3's three
    attention gradients in about 0.1 ms against 0.66 for MAX's concat."""
    outer = math.prod(shape[:axis])
    rows = [ops.reshape(p, [outer, math.prod(int(d) for d in p.shape[axis:])]) for p in parts]
    out = TensorType(parts[0].dtype, [outer, math.prod(shape[axis:])], device=parts[0].device)
    return ops.reshape(mojo_kernels.call("nabla_concat_rows", rows, out), shape)


class ConcatenateOp(mojo_kernels.UsesKernels, Operation):
    saves_values = False  # (see Operation.saves_values)
    name = "concatenate"

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        return {"axis": _shift(kwargs["axis"], batch_dims)}

    def abstract_eval(self, *xs: AVal, axis: int) -> AVal:
        first = xs[0][0]
        for i, (shape, _) in enumerate(xs[1:], 1):
            if len(shape) != len(first) or any(
                a != b for d, (a, b) in enumerate(zip(shape, first, strict=True)) if d != axis
            ):
                raise ValueError(f"concatenate: input {i} has shape {shape}, input 0 has shape {first}")
        out = list(first)
        out[axis] = sum(s[axis] for s, _ in xs)
        return tuple(out), xs[0][1]

    sharding_rule_for = whole_dims(lambda kw, rank: (kw["axis"],))

    def kernel(self, *xs: Any, axis: int) -> Any:
        shape = list(_static_shape(xs[0]))
        shape[axis] = sum(int(x.shape[axis]) for x in xs)
        if 0 in shape:
            return _empty(tuple(shape), xs[0].dtype, xs[0].device)
        parts = [x for x in xs if int(x.shape[axis]) != 0]
        if len(parts) == 1:
            return parts[0]
        if all(type(d) is int for d in shape) and mojo_kernels.usable(*parts):
            return _mx_concat_rows(parts, axis, shape)
        return ops.concat(parts, axis)

    def numpy_kernel(self, *xs: np.ndarray, axis: int) -> np.ndarray:
        return np.concatenate(xs, axis=axis)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axis: int) -> list:
        sizes = tuple(p.shape[axis] for p in primals)
        return list(_split(cotangents[0], sizes=sizes, axis=axis, keepdims=True))

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axis: int) -> list:
        return [_concatenate(*tangents, axis=axis)]


class SplitOp(Operation):
    """Pieces of `sizes` along `axis`, one output each; `keepdims=False` drops the axis (unbind)."""

    saves_values = False  # (see Operation.saves_values)

    name = "split"
    always_tuple = True

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        return {**kwargs, "axis": _shift(kwargs["axis"], batch_dims)}

    def abstract_eval(self, x: AVal, *, sizes: tuple, axis: int, keepdims: bool) -> list[AVal]:
        if sum(sizes) != x[0][axis]:
            raise ValueError(f"split: sizes {sizes} do not sum to {x[0][axis]} (dim {axis} of shape {x[0]})")
        return [(_piece_shape(x[0], axis, s, keepdims), x[1]) for s in sizes]

    sharding_rule_for = picked(  # unbind (keepdims False) drops the axis
        lambda kw, rank, n: ([[d for d in range(rank) if kw["keepdims"] or d != kw["axis"]]] * n, (kw["axis"],))
    )

    def kernel(self, x: Any, *, sizes: tuple, axis: int, keepdims: bool) -> Any:
        shape = _static_shape(x)
        if 0 in shape:
            return [_empty(_piece_shape(shape, axis, s, keepdims), x.dtype, x.device) for s in sizes]
        nonzero = [s for s in sizes if s]
        parts = iter(ops.split(x, nonzero, axis) if len(nonzero) > 1 else [x])
        out = []
        for s in sizes:
            piece_shape = _piece_shape(shape, axis, s, keepdims)
            if s == 0:
                out.append(_empty(piece_shape, x.dtype, x.device))
            else:
                piece = next(parts)
                out.append(piece if keepdims else ops.reshape(piece, piece_shape))
        return out

    def numpy_kernel(self, x: np.ndarray, *, sizes: tuple, axis: int, keepdims: bool) -> list:
        pieces = np.split(x, np.cumsum(sizes)[:-1].tolist(), axis=axis)
        return pieces if keepdims else [np.squeeze(p, axis) for p in pieces]

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, sizes: tuple, axis: int, keepdims: bool):
        x = primals[0]
        cots = []
        for c, s in zip(cotangents, sizes, strict=True):
            if c is None:  # an unused output: its cotangent is zero
                c = _cr.zeros(_piece_shape(x.shape, axis, s, keepdims), dtype=x.dtype)
            cots.append(c if keepdims else unsqueeze(c, axis))
        return [cots[0] if len(cots) == 1 else _concatenate(*cots, axis=axis)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, sizes: tuple, axis: int, keepdims: bool):
        return list(_split(tangents[0], sizes=sizes, axis=axis, keepdims=keepdims))


def _piece_shape(shape: tuple, axis: int, size: int, keepdims: bool) -> tuple:
    if keepdims:
        return shape[:axis] + (size,) + shape[axis + 1 :]
    return shape[:axis] + shape[axis + 1 :]


_concatenate = ConcatenateOp()
_split = SplitOp()


@public()
def concatenate(tensors: Any, axis: int = 0) -> Tensor:
    """Join tensors along an existing axis (dtypes promote as in `add`).

    Example:
        >>> nb.concatenate([nb.ones(2, 3), nb.zeros(1, 3)], 0).shape
        (3, 3)
    """
    tensors = _tensor_list(tensors, "concatenate")
    if any(t.shape == (0,) for t in tensors) and any(t.ndim > 1 for t in tensors):
        # torch's legacy rule: an empty 1-D tensor beside tensors of higher rank is skipped
        # (its dtype still takes part in the promotion)
        keep = [t for t in tensors if t.shape != (0,)]
        dtype = _promote(tensors)[0].dtype
        tensors = [t if t.dtype == dtype else t.astype(dtype) for t in keep]
    first = tensors[0]
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise ValueError(f"concatenate: input {i} is 0-d (shape ()); 0-d tensors cannot be concatenated")
    a = normalize_axis(axis, first.ndim, "concatenate")
    for i, t in enumerate(tensors[1:], 1):
        if t.ndim != first.ndim:
            raise ValueError(
                f"concatenate: input {i} has rank {t.ndim} (shape {t.shape}), input 0 has rank {first.ndim} "
                f"(shape {first.shape})"
            )
        if any(p != q for d, (p, q) in enumerate(zip(t.shape, first.shape, strict=True)) if d != a):
            raise ValueError(
                f"concatenate: input {i} has shape {t.shape}, input 0 has shape {first.shape}; "
                f"they must match except in dim {a}"
            )
    tensors = _promote(tensors)
    if len(tensors) == 1:
        return tensors[0]
    first = next((t for t in tensors if windowable(t, a)), None)
    if first is not None:  # the axis is sharded: windows of one layout, summed
        spec = first._impl.sharding
        if not spec.partial:  # the others in its layout: unsharded ones split locally, others moved
            tensors = [_laid_out_as(t, spec) for t in tensors]
        if all(t._impl.sharding == spec for t in tensors):
            sizes = [t.shape[a] for t in tensors]
            total, starts = sum(sizes), itertools.accumulate(sizes, initial=0)  # as split's
            windows = [window(t, a, -start, total) for t, start in zip(tensors, starts, strict=False)]
            return functools.reduce(_bin.add, windows)
    return _concatenate(*tensors, axis=a)


cat = concat = concatenate


def _laid_out_as(t: Tensor, spec: Any) -> Tensor:
    """`t` in the layout `spec` on its mesh: split locally when unsharded, resharded by the
    cheapest collectives when laid out otherwise on the same mesh (else as it is)."""
    current = t._impl.sharding
    if current is None:
        return shard(t, spec.mesh, spec)
    if current != spec and current.mesh == spec.mesh and not current.manual:
        return reshard(t, spec)
    return t


@public()
def stack(tensors: Any, axis: int = 0) -> Tensor:
    """Join equally shaped tensors along a new axis.

    Example:
        >>> nb.stack([nb.ones(2), nb.zeros(2)], 1).shape
        (2, 2)
    """
    tensors = _tensor_list(tensors, "stack")
    first = tensors[0]
    for i, t in enumerate(tensors[1:], 1):
        if t.shape != first.shape:
            raise ValueError(f"stack: input {i} has shape {t.shape}, input 0 has shape {first.shape}; they must match")
    a = normalize_axis(axis, first.ndim + 1, "stack")
    tensors = _promote(tensors)
    return concatenate([unsqueeze(t, a) for t in tensors], a)


def _split_axis(x: Tensor, axis: Any, op: str) -> int:
    _check_tensor(x, op)
    if x.ndim == 0:
        raise ValueError(f"{op}: expected a tensor of rank >= 1, got a 0-d tensor")
    return normalize_axis(axis, x.ndim, op)


@public()
def split(x: Tensor, split_size_or_sections: Any, axis: int = 0) -> tuple[Tensor, ...]:
    """Split along `axis` as `torch.split`: an int is the piece size (the last piece may be
    smaller); a sequence gives each piece's size and must sum to the dimension's size.

    Example:
        >>> [p.shape for p in nb.split(nb.ones(5, 2), 2)]
        [(2, 2), (2, 2), (1, 2)]
    """
    a = _split_axis(x, axis, "split")
    n = x.shape[a]
    s = split_size_or_sections
    if isinstance(s, int | np.integer) and not isinstance(s, bool):
        s = int(s)
        if s < 0 or (s == 0 and n != 0):
            raise ValueError(f"split: split_size must be positive, got {s} for dim {a} of size {n}")
        sizes = (0,) if n == 0 else (s,) * (n // s) + ((n % s,) if n % s else ())
    else:
        try:
            sizes = tuple(_int(v, "split", "split_size_or_sections") for v in s)
        except TypeError:
            raise TypeError(f"split: split_size_or_sections must be an int or a sequence of ints, got {s!r}") from None
        if any(v < 0 for v in sizes):
            raise ValueError(f"split: sizes must be non-negative, got {sizes}")
        if sum(sizes) != n or not sizes:
            raise ValueError(f"split: sizes {sizes} sum to {sum(sizes)}, but dim {a} has size {n} (shape {x.shape})")
    if len(sizes) > 1 and windowable(x, a):
        starts = itertools.accumulate(sizes, initial=0)  # a sharded axis: one window per piece
        return tuple(window(x, a, start, size) for start, size in zip(starts, sizes, strict=False))
    return _split(x, sizes=sizes, axis=a, keepdims=True)


@public()
def chunk(x: Tensor, chunks: int, axis: int = 0) -> tuple[Tensor, ...]:
    """Split into `chunks` pieces of size ceil(n / chunks) as `torch.chunk` (possibly fewer pieces).

    Example:
        >>> [p.shape for p in nb.chunk(nb.ones(6), 4)]
        [(2,), (2,), (2,)]
    """
    a = _split_axis(x, axis, "chunk")
    chunks = _int(chunks, "chunk", "chunks")
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    n = x.shape[a]
    if n == 0:
        return _split(x, sizes=(0,) * chunks, axis=a, keepdims=True)
    return split(x, -(-n // chunks), a)


def _split_points(spec: Any, op: str) -> int | list[int]:
    """tensor_split's argument as an int (sections) or a list of ints (indices); a tensor is read
    from the host (0-d: sections, 1-d: indices), as PyTorch reads its CPU tensor."""
    if isinstance(spec, Tensor):
        if not _dt.is_integer(spec.dtype) or spec.ndim > 1:
            raise TypeError(f"{op}: a tensor indices_or_sections must be a 0-d or 1-d integer tensor, got {spec!r}")
        spec = spec.numpy().tolist()
    if isinstance(spec, int | np.integer):
        return _int(spec, op, "indices_or_sections")
    try:
        return [_int(i, op, "indices_or_sections") for i in spec]
    except TypeError:
        raise TypeError(f"{op}: indices_or_sections must be an int or a sequence of ints, got {spec!r}") from None


def _slice_bounds(indices: list[int], n: int) -> list[int]:
    """0, the indices read as Python slice bounds (negative from the end, clipped to [0, n]), n."""
    return [0, *(min(max(i + n if i < 0 else i, 0), n) for i in indices), n]


@public()
def tensor_split(x: Tensor, indices_or_sections: Any, axis: int = 0) -> tuple[Tensor, ...]:
    """Split along `axis` as `torch.tensor_split`. An int k gives k pieces, the first n % k of
    them one longer; a sequence of indices gives the pieces between them, each read as the
    Python slice `x[start:stop]` (negative indices count from the end; out-of-order or
    out-of-range ones give empty pieces). Ordered indices cost one split.

    Args:
        x: a tensor of rank >= 1.
        indices_or_sections: an int, a sequence of ints, or a 0-d (sections) or 1-d (indices)
            integer tensor, whose values are read.
        axis: the dimension to split (`dim=` also accepted).

    Example:
        >>> [p.tolist() for p in nb.tensor_split(nb.arange(7), 3)]
        [[0, 1, 2], [3, 4], [5, 6]]
        >>> [p.tolist() for p in nb.tensor_split(nb.arange(7), [1, 5])]
        [[0], [1, 2, 3, 4], [5, 6]]
    """
    a = _split_axis(x, axis, "tensor_split")
    n, spec = x.shape[a], _split_points(indices_or_sections, "tensor_split")
    if isinstance(spec, int):
        if spec <= 0:
            raise ValueError(f"tensor_split: the number of sections must be positive, got {spec}")
        q, r = divmod(n, spec)
        return split(x, (q + 1,) * r + (q,) * (spec - r), a)
    bounds = _slice_bounds(spec, n)
    if all(lo <= hi for lo, hi in itertools.pairwise(bounds)):  # pieces that tile the axis
        return split(x, [hi - lo for lo, hi in itertools.pairwise(bounds)], a)
    return tuple(_slice(x, a, lo, max(lo, hi)) for lo, hi in itertools.pairwise(bounds))


@public()
def unbind(x: Tensor, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices along `axis`, with that axis removed.

    Example:
        >>> [t.shape for t in nb.unbind(nb.ones(2, 3), 1)]
        [(2,), (2,), (2,)]
    """
    a = _split_axis(x, axis, "unbind")
    n = x.shape[a]
    return () if n == 0 else _split(x, sizes=(1,) * n, axis=a, keepdims=False)

"""Resampling with PyTorch's layouts (NCW / NCHW / NCDHW): `interpolate` (nearest, nearest-exact,
linear, bilinear, bicubic, trilinear, area; antialiased bilinear / bicubic), its deprecated `upsample*` forms, and
`pixel_shuffle` / `pixel_unshuffle`.

Every mode but area is separable: resampling one spatial axis from n to m samples is a fixed
(m, n) linear map that depends only on the sizes and options, never on the values. It is built
with NumPy (cached) following PyTorch's CPU kernels, including their float32 index arithmetic, so
the sampled positions match PyTorch's bit for bit. The interpolating modes apply it with
`matmul`, the nearest modes gather rows with `index_select`, and area mode is adaptive average
pooling. Values, gradients, forward-mode derivatives and vmap therefore all come from existing
nabla ops. pixel_shuffle / pixel_unshuffle are a reshape and a permute.

Gradients are the exact transpose of the forward map. PyTorch's backward kernels copy the
gradient through an axis whose size is unchanged even where its forward kernel resamples that
axis (1-D nearest and bicubic with a scale_factor such as 1.2 on 3 samples, antialiased modes),
so there the input gradients differ from PyTorch's while the values agree.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.ops.linalg import raw_matmul

from ._checks import check_float
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

__all__ = [
    "interpolate",
    "pixel_shuffle",
    "pixel_unshuffle",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
]

_INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")
_RANK = {"linear": 3, "bilinear": 4, "trilinear": 5}  # the modes PyTorch names a rank for
_CUBIC_A = -0.75  # PyTorch's bicubic coefficient (antialiased bicubic uses -0.5, as PIL)


# -- the (m, n) resampling maps, as PyTorch's CPU kernels compute them ----------------------------
def _scale(n: int, m: int, align_corners: bool, scale_factor: float | None, dt: type) -> Any:
    """PyTorch's `area_pixel_compute_scale`: input step per output step, in the kernel's precision."""
    if align_corners:
        return dt(n - 1) / dt(m - 1) if m > 1 else dt(0)
    if scale_factor is not None and scale_factor > 0:
        return dt(1.0 / scale_factor)  # the user's factor, not n / m (they differ after flooring m)
    return dt(n) / dt(m)


def _source(scale: Any, m: int, align_corners: bool, cubic: bool, dt: type) -> np.ndarray:
    """PyTorch's `area_pixel_compute_source_index` of outputs 0..m-1: the real input position.
    Computed in float64 and rounded once, as the kernel's fused multiply-add does in float32."""
    i = np.arange(m, dtype=np.float64)
    src = (np.float64(scale) * i if align_corners else np.float64(scale) * (i + 0.5) - 0.5).astype(dt)
    return src if cubic or align_corners else np.maximum(src, dt(0))


def _floor_and_frac(src: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's `guard_index_and_lambda`: the left neighbour (float32 floor, at most n - 1) and
    the fraction past it, clamped to [0, 1]."""
    i0 = np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), n - 1)
    return i0, np.clip(src - i0.astype(src.dtype), 0, 1)


def _cubic(x: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel with parameter a, at |x| (zero from 2 on)."""
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


def _antialiased(n: int, m: int, cubic: bool, scale: Any, dt: type) -> np.ndarray:
    """PyTorch's `_compute_indices_min_size_weights_aa`: when shrinking (scale > 1) the filter is
    stretched by `scale` so every input sample contributes; each row is normalised to sum 1."""
    support = (2.0 if cubic else 1.0) * (scale if scale >= 1 else 1.0)
    width = int(math.ceil(support)) * 2 + 1
    center = (np.float64(scale) * (np.arange(m) + 0.5)).astype(dt)
    xmin = np.maximum(np.trunc((center - dt(support)).astype(np.float64) + 0.5), 0).astype(np.int64)
    xmax = np.minimum(np.trunc((center + dt(support)).astype(np.float64) + 0.5).astype(np.int64), n)
    xsize = np.clip(xmax - xmin, 0, width)
    j = np.arange(width)[None, :]
    x = (j + xmin[:, None] - center[:, None] + 0.5) * (1.0 / scale if scale >= 1 else 1.0)
    w = _cubic(x, -0.5) if cubic else np.maximum(1 - np.abs(x), 0)
    w = np.where(j < xsize[:, None], w, 0.0)
    total = w.sum(axis=1, keepdims=True)
    w = np.divide(w, total, out=np.zeros_like(w), where=total != 0)
    out = np.zeros((m, n))
    rows, cols = np.broadcast_arrays(np.arange(m)[:, None], np.minimum(xmin[:, None] + j, n - 1))
    np.add.at(out, (rows, cols), w)
    return out


@functools.lru_cache(maxsize=256)
def _weights(
    n: int, m: int, cubic: bool, align_corners: bool, scale_factor: float | None, antialias: bool, double: bool
) -> np.ndarray | None:
    """The (m, n) matrix of linear (2-tap) or cubic (4-tap, border-clamped) interpolation of n
    samples to m, or None where it is the identity. PyTorch's linear and antialiased kernels copy
    when m == n; its bicubic kernel resamples even then (which moves the samples when the step
    is 1 / scale_factor rather than n / m)."""
    dt = np.float64 if double else np.float32
    scale = _scale(n, m, align_corners, scale_factor, dt)
    if m == n and (antialias or not cubic):
        return None
    if antialias:
        w = _antialiased(n, m, cubic, scale, dt)
    elif not cubic:
        i0, t = _floor_and_frac(_source(scale, m, align_corners, False, dt), n)
        w = np.zeros((m, n))
        np.add.at(w, (np.arange(m), i0), 1 - t.astype(np.float64))
        np.add.at(w, (np.arange(m), i0 + (i0 < n - 1)), t.astype(np.float64))
    else:
        i0, t = _floor_and_frac(_source(scale, m, align_corners, True, dt), n)
        t = t.astype(np.float64)
        taps = np.stack([t + 1, t, 1 - t, 2 - t])  # distances to the inputs i0 - 1 .. i0 + 2
        w = np.zeros((m, n))
        for k in range(4):  # taps past the border read the edge sample (they add up there)
            np.add.at(w, (np.arange(m), np.clip(i0 - 1 + k, 0, n - 1)), _cubic(taps[k], _CUBIC_A))
    if m == n and np.array_equal(w, np.eye(n)):
        return None
    w.flags.writeable = False
    return w


@functools.lru_cache(maxsize=256)
def _nearest(n: int, m: int, exact: bool, scale_factor: float | None, double: bool, planar: bool) -> np.ndarray | None:
    """Input index of each of m outputs: floor(i * scale) ("nearest", PyTorch's historical rule,
    which is not the nearest sample) or floor((i + 1/2) * scale) ("nearest-exact", as PIL and
    scikit-image); None where it is the identity. PyTorch's kernels for 4-D (`planar`) inputs
    round differently from its 1-D ones: always in float32, and "nearest" copies when m == n."""
    dt = np.float64 if double and not planar else np.float32
    scale = _scale(n, m, False, scale_factor, dt)
    i = np.arange(m)
    if planar and not exact and m in (n, 2 * n):
        pos = i * n // m
    elif planar:
        pos = (np.float64(scale) * (i + 0.5 if exact else i)).astype(dt)
    elif exact:
        pos = _source(scale, m, False, False, dt).astype(np.float64) + 0.5
    else:
        pos = (np.float64(scale) * i).astype(dt)
    idx = np.minimum(np.floor(pos.astype(np.float32)).astype(np.int64), n - 1)
    if m == n and np.array_equal(idx, np.arange(n)):
        return None
    idx.flags.writeable = False
    return idx


def _resample(x: Tensor, axis: int, w: np.ndarray) -> Tensor:
    """x with `axis` mapped through the (m, n) matrix w (one matmul; an axis before the last
    two, a volume's depth, is moved next to them for it)."""
    if axis < x.ndim - 2:
        return nb.movedim(_resample(nb.movedim(x, axis, -2), x.ndim - 2, w), -2, axis)
    if axis == x.ndim - 2:
        return raw_matmul(nb.tensor(w, dtype=x.dtype), x)  # (raw: autocast keeps upsampling in x's dtype)
    return raw_matmul(x, nb.tensor(np.ascontiguousarray(w.T), dtype=x.dtype))


# -- argument handling, as torch.nn.functional.interpolate ----------------------------------------
def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool)


def _output_size(input: Tensor, size: Any, scale_factor: Any, dim: int) -> tuple[list[int] | None, list[float] | None]:
    """(output sizes, None) from `size`, or (None, scale factors) from `scale_factor`."""
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError(
            f"interpolate: only one of size or scale_factor should be defined, got size={size!r} and "
            f"scale_factor={scale_factor!r}"
        )
    if size is not None:
        if not isinstance(size, tuple | list):
            size = [size] * dim
        elif len(size) != dim:
            raise ValueError(
                "interpolate: input and output must have the same number of spatial dimensions, but got input "
                f"with spatial dimensions of {spatial} and output size of {size!r}. Please provide input tensor "
                "in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format."
            )
        if not all(_is_int(s) for s in size):
            raise TypeError(
                "interpolate: expected size to be one of int or Tuple[int] or Tuple[int, int], but got "
                f"size={size!r} with types {[type(s).__name__ for s in size]}"
            )
        return [int(s) for s in size], None
    if scale_factor is None:
        raise ValueError("interpolate: either size or scale_factor should be defined, got neither")
    if not isinstance(scale_factor, tuple | list):
        scale_factor = [scale_factor] * dim
    elif len(scale_factor) != dim:
        raise ValueError(
            "interpolate: input and scale_factor must have the same number of spatial dimensions, but got input "
            f"with spatial dimensions of {spatial} and scale_factor of shape {scale_factor!r}. Please provide "
            "input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
        )
    if not all(isinstance(s, int | float | np.integer | np.floating) and not isinstance(s, bool) for s in scale_factor):
        raise TypeError(f"interpolate: scale_factor must be a number or a tuple of numbers, got {scale_factor!r}")
    return None, [float(s) for s in scale_factor]


def _check_mode_rank(mode: str, ndim: int) -> None:
    """PyTorch's NotImplementedError for a mode it lacks or an input rank the mode cannot take."""
    need = _RANK.get(mode)
    if need is not None and ndim in (3, 4, 5) and ndim != need:
        raise NotImplementedError(f"interpolate: got {ndim}D input, but {mode} mode needs {need}D input")
    if (
        mode not in ("nearest", "nearest-exact", "area", *_INTERPOLATING)
        or ndim not in (3, 4, 5)
        or (mode == "bicubic" and ndim != 4)
    ):
        raise NotImplementedError(
            f"interpolate: Input Error: Only 3D, 4D and 5D input Tensors supported (got {ndim}D) for the modes: "
            f"nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got {mode!r})"
        )


def _check_sizes(spatial: tuple, out: list[int]) -> None:
    if all(s > 0 for s in (*spatial, *out)):
        return
    names = ("D", "H", "W")[3 - len(out) :]
    shown_in = ", ".join(f"{k}: {s}" for k, s in zip(names, spatial, strict=True))
    shown_out = ", ".join(f"{k}: {s}" for k, s in zip(names, out, strict=True))
    joiner = " and" if len(out) == 1 else ""  # PyTorch's wording differs by rank
    raise ValueError(
        "interpolate: Input and output sizes should be greater than 0, but got "
        f"input ({shown_in}){joiner} output ({shown_out})"
    )


def interpolate(
    input: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resample (N, C, W), (N, C, H, W) or (N, C, D, H, W) to a given size or by a given factor,
    as PyTorch.

    Args:
        input: (N, C, W) for "nearest", "nearest-exact", "linear", "area"; (N, C, H, W) for
            those (but "linear") and "bilinear", "bicubic"; (N, C, D, H, W) for "nearest",
            "nearest-exact", "area" and "trilinear".
        size: output spatial size: an int (every spatial dim) or a tuple with one int per dim.
        scale_factor: multiplier of the spatial size: a number or a tuple with one per dim; the
            output size is floor(in * scale_factor).
        mode: "nearest" (floor(i * in / out), PyTorch's default), "nearest-exact" (the nearest
            sample), "linear", "bilinear", "bicubic" (a = -0.75, edge samples repeated past the
            border) or "area" (adaptive average pooling).
        align_corners: for the interpolating modes only: True maps the centres of the corner
            pixels onto each other, False (default) their outer edges.
        recompute_scale_factor: True computes the output size from scale_factor, then samples
            as if that size had been given; otherwise, with scale_factor, the positions use
            1 / scale_factor itself (which differs when in * scale_factor is not an integer).
        antialias: low-pass filter while shrinking, as PIL ("bilinear" / "bicubic" on 4-D only).

    Example:
        >>> F.interpolate(nb.tensor([[[1.0, 2.0]]]), scale_factor=2).tolist()
        [[[1.0, 1.0, 2.0, 2.0]]]
        >>> F.interpolate(nb.tensor([[[1.0, 2.0]]]), size=4, mode="linear").tolist()
        [[[1.0, 1.25, 1.75, 2.0]]]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"interpolate: input must be a Tensor, got {type(input).__name__}")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "interpolate: align_corners option can only be set with the interpolating modes: "
                f"linear | bilinear | bicubic | trilinear, got mode={mode!r} and align_corners={align_corners!r}"
            )
    else:
        align_corners = bool(align_corners)
    dim = input.ndim - 2
    out, scales = _output_size(input, size, scale_factor, dim)
    if recompute_scale_factor and size is not None:
        raise ValueError(
            f"interpolate: recompute_scale_factor is not meaningful with an explicit size, got size={size!r} "
            f"and recompute_scale_factor={recompute_scale_factor!r}"
        )
    if scales is not None and (recompute_scale_factor or mode == "area"):
        out, scales = [int(n * s) for n, s in zip(input.shape[2:], scales, strict=True)], None
    if antialias and not (mode in ("bilinear", "bicubic") and input.ndim == 4):
        raise ValueError(
            "interpolate: Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor "
            f"as input, got mode={mode!r} and input of shape {input.shape}"
        )
    _check_mode_rank(mode, input.ndim)
    spatial = tuple(input.shape[2:])
    if out is None:
        out = [int(n * s) for n, s in zip(spatial, scales, strict=True)]  # PyTorch truncates too
    _check_sizes(spatial, out)
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[dim - 1](
            input, out[0] if dim == 1 else tuple(out)
        )
    if mode not in ("nearest", "nearest-exact"):
        check_float(input, "interpolate")
    double = input.dtype == nb.float64  # PyTorch's kernels work in float32 below float64
    x = input
    for k, (n, m) in enumerate(zip(spatial, out, strict=True)):
        s = None if scales is None else scales[k]
        axis = 2 + k
        if mode in ("nearest", "nearest-exact"):
            idx = _nearest(n, m, mode == "nearest-exact", s, double, input.ndim == 4)  # (torch's 2-D kernel only)
            if idx is not None:
                x = nb.index_select(x, axis, nb.tensor(idx))
        else:
            w = _weights(n, m, mode == "bicubic", align_corners, s, antialias, double)
            if w is not None:
                x = _resample(x, axis, w)
    return x.clone() if x is input else x  # a new tensor, as PyTorch, even when nothing moves


def upsample(
    input: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
) -> Tensor:
    """Deprecated form of `interpolate` (as in PyTorch, with the same warning).

    Args:
        input, size, scale_factor, mode, align_corners: as `interpolate`.

    Example:
        >>> F.upsample(nb.ones(1, 1, 2), scale_factor=2).shape  # warns: use interpolate
        (1, 1, 4)
    """
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: `interpolate(input, size, scale_factor, mode="nearest")` (warns, as PyTorch).

    Args:
        input: (N, C, W) or (N, C, H, W).
        size, scale_factor: as `interpolate` (one of them).

    Example:
        >>> F.upsample_nearest(nb.ones(1, 1, 2, 2), scale_factor=2).shape  # warns
        (1, 1, 4, 4)
    """
    warnings.warn(
        "`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2
    )
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: `interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)`
    (warns, as PyTorch).

    Args:
        input: (N, C, H, W).
        size, scale_factor: as `interpolate` (one of them).

    Example:
        >>> F.upsample_bilinear(nb.tensor([[[[1.0, 2.0]]]]), size=(1, 3)).tolist()  # warns
        [[[[1.0, 1.5, 2.0]]]]
    """
    warnings.warn(
        "`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2
    )
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# -- pixel shuffle --------------------------------------------------------------------------------
def _check_shuffle(input: Any, factor: Any, op: str, arg: str) -> int:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    if not _is_int(factor):
        raise TypeError(f"{op}: {arg} must be an int, got {factor!r}")
    if factor <= 0:
        raise ValueError(f"{op} expects a positive {arg}, but got {factor}")
    if input.ndim < 3:
        raise ValueError(
            f"{op} expects input to have at least 3 dimensions, but got input with {input.ndim} dimension(s)"
        )
    return int(factor)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Rearrange (*, C * r * r, H, W) into (*, C, H * r, W * r): channel c * r * r + i * r + j
    becomes the sub-pixel (i, j) of each r x r block of output channel c.

    Args:
        input: (*, C * r * r, H, W), any number of leading dims.
        upscale_factor: r.

    Example:
        >>> F.pixel_shuffle(nb.ones(1, 9, 4, 4), 3).shape
        (1, 1, 12, 12)
    """
    r = _check_shuffle(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise ValueError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
            f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    k = len(lead)
    x = nb.reshape(input, (*lead, c // (r * r), r, r, h, w))
    x = nb.permute(x, (*range(k), k, k + 3, k + 1, k + 4, k + 2))
    return nb.reshape(x, (*lead, c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """Inverse of `pixel_shuffle`: (*, C, H * r, W * r) into (*, C * r * r, H, W).

    Args:
        input: (*, C, H * r, W * r), any number of leading dims.
        downscale_factor: r.

    Example:
        >>> F.pixel_unshuffle(nb.ones(1, 1, 12, 12), 3).shape
        (1, 9, 4, 4)
    """
    r = _check_shuffle(input, downscale_factor, "pixel_unshuffle", "downscale_factor")
    *lead, c, h, w = input.shape
    for name, n, d in (("height", h, -2), ("width", w, -1)):
        if n % r:
            raise ValueError(
                f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but input.size({d})={n} "
                f"is not divisible by {r}"
            )
    k = len(lead)
    x = nb.reshape(input, (*lead, c, h // r, r, w // r, r))
    x = nb.permute(x, (*range(k), k, k + 2, k + 4, k + 1, k + 3))
    return nb.reshape(x, (*lead, c * r * r, h // r, w // r))

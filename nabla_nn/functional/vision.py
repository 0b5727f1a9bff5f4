"""Spatial transformers and channel shuffling (PyTorch's `affine_grid`, `grid_sample`,
`channel_shuffle`).

`affine_grid` maps a fixed grid of normalized output coordinates through each affine matrix
(one batched matmul). `grid_sample` turns the grid's normalized coordinates into input pixel
coordinates, applies the padding rule to them (border: clamp; reflection: reflect, then clamp),
and reads the input at the neighbouring pixels with one `take_along_axis` per tap on the
flattened spatial dims, weighting the taps by the fractional parts. Everything is composed of
differentiable ops, so the input gradient (a scatter-add through `take_along_axis`) and the grid
gradient (through the weights and the coordinate transforms) come from autodiff and match
PyTorch's, whose CPU kernels use the same formulas (including a zero grid gradient at coordinates
exactly on a clamp boundary). In "nearest" mode the grid gets no gradient (None; PyTorch's is zeros).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor

from ._checks import check_float

__all__ = ["affine_grid", "channel_shuffle", "grid_sample", "native_channel_shuffle"]

_MODES = ("bilinear", "nearest", "bicubic")
_PADDING_MODES = ("zeros", "border", "reflection")
_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) bicubic convolution parameter


def _align_corners(align_corners: bool | None, op: str) -> bool:
    if align_corners is None:
        warnings.warn(
            f"{op}: the default align_corners is False (PyTorch's since 1.3.0); pass align_corners explicitly",
            stacklevel=3,
        )
        return False
    return bool(align_corners)


# -- affine_grid ----------------------------------------------------------------------------------
def _base_coordinates(steps: int, align_corners: bool, dtype: np.dtype) -> np.ndarray:
    """Normalized coordinates of `steps` pixel centers (align_corners=False) or corners (True),
    rounded as PyTorch's linspace and scaling round them in `dtype` (a grid point that lands
    exactly on a pixel then lands there here too)."""
    if steps <= 1:
        return np.zeros(steps, dtype)
    step = np.float64(dtype.type(2) / dtype.type(steps - 1))  # rounded to dtype, then a fused multiply-add
    i = np.arange(steps)
    line = np.where(i < steps // 2, -1.0 + step * i, 1.0 - step * (steps - 1 - i)).astype(dtype)
    return line if align_corners else (line * dtype.type(steps - 1)) / dtype.type(steps)


def _base_grid(spatial: Sequence[int], align_corners: bool, dtype: np.dtype) -> np.ndarray:
    """(prod(spatial), d + 1): each output point's (x, y[, z], 1), x running over the last dim."""
    axes = [_base_coordinates(s, align_corners, dtype) for s in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")  # one array per spatial dim, first dim first
    coords = [m.reshape(-1) for m in reversed(mesh)] + [np.ones(math.prod(spatial), dtype)]
    return np.stack(coords, axis=1)


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid of a batch of affine maps, for `grid_sample` (spatial transformer networks).

    Args:
        theta: (N, 2, 3) affine matrices for 2-D, or (N, 3, 4) for 3-D; they map normalized
            output coordinates (x, y[, z], 1) to normalized input coordinates.
        size: the output size (N, C, H, W) or (N, C, D, H, W).
        align_corners: whether -1 and 1 are the centers of the corner pixels (True) or their
            outer edges (False, the default, with a warning when not given, as PyTorch).

    Returns:
        (N, H, W, 2) or (N, D, H, W, 3) normalized coordinates, (x, y[, z]) last.

    Example:
        >>> theta = nb.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
        >>> F.affine_grid(theta, (1, 1, 2, 2), align_corners=True).tolist()[0][0]
        [[-1.0, -1.0], [1.0, -1.0]]
    """
    op = "affine_grid"
    aligned = _align_corners(align_corners, op)
    check_float(theta, op, "theta")
    size = tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise NotImplementedError(
            f"{op} only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size {size}."
        )
    d = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (d, d + 1):
        raise ValueError(
            f"{op}: expected a batch of {d}D affine matrices of shape Nx{d}x{d + 1} for size {size}, got {theta.shape}"
        )
    if theta.shape[0] != size[0]:
        raise ValueError(f"{op}: theta holds {theta.shape[0]} matrices but size asks for N={size[0]}")
    spatial = size[2:]
    if aligned and min(spatial) == 1:
        warnings.warn(f"{op}: unit-size grids with align_corners=True are not an intended use case", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"{op}: expected a non-zero, positive output size, got {size}")
    np_dtype = np.dtype(np.float64 if theta.dtype == nb.float64 else np.float32)
    base = nb.tensor(_base_grid(spatial, aligned, np_dtype), dtype=theta.dtype)
    grid = nb.matmul(nb.unsqueeze(base, 0), nb.swapaxes(theta, 1, 2))  # (N, P, d)
    return nb.reshape(grid, (size[0], *spatial, d))


# -- grid_sample ----------------------------------------------------------------------------------
def _unnormalize(coord: Tensor, size: int, align_corners: bool, dims: int) -> Tensor:
    """Normalized [-1, 1] coordinates to pixel coordinates along a dim of `size` pixels, with
    the operation order of PyTorch's CPU kernels (vectorized for 2-D, scalar for 3-D), so that
    values on pixel centers round alike."""
    if dims == 2:
        if align_corners:
            return (coord + 1.0) * ((size - 1) / 2.0)
        return (coord + 1.0) * (size / 2.0) - 0.5
    if align_corners:
        return ((coord + 1.0) / 2.0) * (size - 1)
    return ((coord + 1.0) * size - 1.0) / 2.0


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """PyTorch's reflect_coordinates: coord folded into [low, high] by mirror reflections."""
    if twice_low == twice_high:
        return nb.zeros_like(coord)
    low = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    shifted = coord - low
    distance = nb.where(nb.less(shifted, 0.0), -shifted, shifted)  # |.|, gradient +1 at 0 as PyTorch
    extra = nb.fmod(distance, span)
    flips = nb.floor(distance / span)
    even = nb.eq(nb.remainder(flips, 2.0), 0.0)
    return nb.where(even, extra + low, (span - extra) + low)


def _padded_coordinate(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """PyTorch's compute_coordinates: border clamps, reflection reflects then clamps."""
    if padding_mode == "zeros":
        return coord
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
    # PyTorch's clip passes the gradient strictly inside (0, size - 1) only: its borders count as outside.
    inside = nb.logical_and(nb.greater(coord, 0.0), nb.less(coord, float(size - 1)))
    return nb.where(inside, coord, nb.detach(nb.clamp(coord, 0.0, float(size - 1))))


def _gather(flat: Tensor, taps: list[Tensor], sizes: tuple[int, ...]) -> Tensor:
    """flat (N, C, prod(sizes)) read at integer-valued pixel coordinates `taps` (one (N, P)
    tensor per spatial dim): (N, C, P), 0 where a tap lies outside the input."""
    inside = None
    linear = None
    for coord, size in zip(taps, sizes, strict=True):
        index = nb.cast(coord, nb.int64)
        ok = nb.logical_and(nb.greater_equal(index, 0), nb.less(index, size))
        inside = ok if inside is None else nb.logical_and(inside, ok)
        index = nb.clamp(index, 0, size - 1)
        linear = index if linear is None else linear * size + index
    n, c, _ = flat.shape
    values = nb.take_along_axis(flat, nb.broadcast_to(nb.unsqueeze(linear, 1), (n, c, linear.shape[1])), 2)
    return nb.where(nb.unsqueeze(inside, 1), values, 0.0)


def _interpolate_linear(flat: Tensor, coords: list[Tensor], sizes: tuple[int, ...]) -> Tensor:
    """(Bi/tri)linear interpolation: the 2^d neighbours weighted by the fractional parts."""
    lows = [nb.floor(c) for c in coords]
    fracs = [c - lo for c, lo in zip(coords, lows, strict=True)]
    out = None
    for corner in itertools.product((0, 1), repeat=len(coords)):
        weight = None
        for bit, frac in zip(corner, fracs, strict=True):
            w = frac if bit else 1.0 - frac
            weight = w if weight is None else weight * w
        taps = [lo + bit for lo, bit in zip(lows, corner, strict=True)]
        term = _gather(flat, taps, sizes) * nb.unsqueeze(weight, 1)
        out = term if out is None else out + term
    return out


def _cubic_coefficients(t: Tensor) -> list[Tensor]:
    """The 4 cubic-convolution weights of taps at -1, 0, 1, 2 for a fractional offset t."""
    a = _CUBIC_A

    def near(x: Tensor) -> Tensor:  # |x| <= 1
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0

    def far(x: Tensor) -> Tensor:  # 1 < |x| < 2
        return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a

    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


def _interpolate_cubic(
    flat: Tensor, coords: list[Tensor], sizes: tuple[int, ...], padding_mode: str, align_corners: bool
) -> Tensor:
    """Bicubic interpolation over the 4 x 4 neighbours; the padding rule applies to each tap."""
    (y, x), (h, w) = coords, sizes
    y0, x0 = nb.floor(y), nb.floor(x)
    wy, wx = _cubic_coefficients(y - y0), _cubic_coefficients(x - x0)
    out = None
    for i in range(4):
        row_y = _padded_coordinate(y0 + (i - 1), h, padding_mode, align_corners)
        row = None
        for j in range(4):
            col_x = _padded_coordinate(x0 + (j - 1), w, padding_mode, align_corners)
            term = _gather(flat, [row_y, col_x], sizes) * nb.unsqueeze(wx[j], 1)
            row = term if row is None else row + term
        term = row * nb.unsqueeze(wy[i], 1)
        out = term if out is None else out + term
    return out


def _check_grid_sample(input: Any, grid: Any, mode: Any, padding_mode: Any) -> None:
    op = "grid_sample"
    check_float(input, op, "input")
    check_float(grid, op, "grid")
    if mode not in _MODES:
        raise ValueError(f"{op}: expected mode to be 'bilinear', 'nearest' or 'bicubic', but got {mode!r}")
    if padding_mode not in _PADDING_MODES:
        raise ValueError(
            f"{op}: expected padding_mode to be 'zeros', 'border', or 'reflection', but got {padding_mode!r}"
        )
    if input.ndim not in (4, 5):
        raise ValueError(f"{op}: input must be 4-D (N, C, H, W) or 5-D (N, C, D, H, W), got shape {input.shape}")
    d = input.ndim - 2
    if grid.ndim != input.ndim or grid.shape[-1] != d or grid.shape[0] != input.shape[0]:
        expected = "(N, H_out, W_out, 2)" if d == 2 else "(N, D_out, H_out, W_out, 3)"
        raise ValueError(
            f"{op}: grid must be {expected} with N = {input.shape[0]} for input {input.shape}, got {grid.shape}"
        )
    if input.dtype != grid.dtype:
        raise TypeError(f"{op}: input and grid must have one dtype, got {input.dtype.name} and {grid.dtype.name}")
    if any(s == 0 for s in input.shape[2:]):
        raise ValueError(f"{op}: input must have non-empty spatial dimensions, got shape {input.shape}")
    if mode == "bicubic" and d != 2:
        raise ValueError(f"{op}: bicubic interpolation only supports 4-D input, got shape {input.shape}")


def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """Sample `input` at the normalized locations in `grid` (PyTorch's `F.grid_sample`).

    grid[n, h, w] = (x, y) reads input[n, :] at x along W and y along H, both in [-1, 1]
    (-1 the left/top, 1 the right/bottom); 5-D inputs take (x, y, z) with z along D.

    Args:
        input: (N, C, H, W) or (N, C, D, H, W).
        grid: (N, H_out, W_out, 2) or (N, D_out, H_out, W_out, 3), input's dtype.
        mode: "bilinear" (trilinear for 5-D), "nearest" (ties to even, as PyTorch) or
            "bicubic" (4-D only; cubic convolution with A = -0.75).
        padding_mode: outside locations read "zeros", the "border" pixels, or the input's
            "reflection" at its border.
        align_corners: -1 and 1 are the centers of the corner pixels (True) or their outer
            edges (False, the default, with a warning when not given, as PyTorch).

    Returns:
        (N, C, H_out, W_out) or (N, C, D_out, H_out, W_out).

    Example:
        >>> x = nb.arange(16, dtype=nb.float32).reshape(1, 1, 4, 4)
        >>> theta = nb.tensor([[[0.5, 0.0, 0.0], [0.0, 0.5, 0.0]]])  # zoom into the center
        >>> grid = F.affine_grid(theta, (1, 1, 2, 2), align_corners=False)
        >>> F.grid_sample(x, grid, align_corners=False).tolist()
        [[[[5.0, 6.0], [9.0, 10.0]]]]
    """
    aligned = _align_corners(align_corners, "grid_sample")
    _check_grid_sample(input, grid, mode, padding_mode)
    n, c, *sizes = input.shape
    sizes = tuple(sizes)
    d = len(sizes)
    out_spatial = tuple(grid.shape[1:-1])
    points = nb.reshape(grid, (n, math.prod(out_spatial), d))
    # grid's last axis is (x, y[, z]): the last spatial dim first.
    coords = [_unnormalize(points[:, :, d - 1 - k], sizes[k], aligned, d) for k in range(d)]
    flat = nb.reshape(input, (n, c, math.prod(sizes)))
    if mode == "bicubic":
        out = _interpolate_cubic(flat, coords, sizes, padding_mode, aligned)
    else:
        coords = [_padded_coordinate(co, s, padding_mode, aligned) for co, s in zip(coords, sizes, strict=True)]
        if mode == "nearest":
            out = _gather(flat, [nb.round(co) for co in coords], sizes)
        else:
            out = _interpolate_linear(flat, coords, sizes)
    return nb.reshape(out, (n, c, *out_spatial))


# -- channel_shuffle -------------------------------------------------------------------------------
def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of `groups` groups (ShuffleNet): (N, C, *) viewed as
    (N, groups, C / groups, *), the two group dims swapped, and flattened back.

    Args:
        input: (N, C, *) with at least 3 dims.
        groups: number of groups; must divide C.

    Example:
        >>> F.channel_shuffle(nb.arange(6, dtype=nb.float32).reshape(1, 6, 1), 2).reshape(-1).tolist()
        [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    """
    op = "channel_shuffle"
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    if isinstance(groups, bool) or not isinstance(groups, int | np.integer) or groups <= 0:
        raise ValueError(f"{op}: groups (the number of groups to divide channels in) must be positive, got {groups!r}")
    if input.ndim < 3:
        raise ValueError(f"{op}: expects input with > 2 dims (N, C, *), got shape {input.shape}")
    n, c, *rest = input.shape
    if c % groups != 0:
        raise ValueError(f"{op}: number of channels must be divisible by groups, got {c} channels and {groups} groups")
    grouped = nb.reshape(input, (n, int(groups), c // int(groups), *rest))
    return nb.reshape(nb.swapaxes(grouped, 1, 2), tuple(input.shape))


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """`channel_shuffle` (PyTorch's native_channel_shuffle names the same computation).

    Args:
        input: (N, C, *) with at least 3 dims.
        groups: number of groups; must divide C.

    Example:
        >>> F.native_channel_shuffle(nb.ones(2, 4, 3), 2).shape
        (2, 4, 3)
    """
    return channel_shuffle(input, groups)

"""PyTorch's strides for nabla's views, computed from the chain of views (`views.py`): nabla
stores every value contiguously, but whether a PyTorch view is contiguous decides what user
code sees. `contiguous()` of a transposed tensor is a copy, `reshape` of one copies where
PyTorch's cannot be a view (and `view` raises), and `stride()` / `is_contiguous()` answer as
PyTorch's do.

A layout is (shape, strides) in elements; a step maps a view's base layout to its own.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only
    from .tensor import Tensor

Layout = tuple[tuple[int, ...], tuple[int, ...]]


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def layout_of(t: Tensor) -> Layout:
    """The (shape, strides) PyTorch would give `t`: a tensor that is no view is contiguous."""
    view = getattr(t, "_view", None)
    if view is None:
        shape = tuple(t.shape)
        return shape, contiguous_strides(shape)
    base, _, kind, arg, _ = view
    layout = layout_of(base)
    for step_kind, step_arg in arg if kind == "chain" else ((kind, arg),):
        layout = _STEPS[step_kind](layout, step_arg)
    return layout


def is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """PyTorch's rule: size-1 dims may have any stride; an empty tensor is contiguous."""
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


def reshape_strides(layout: Layout, new_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides of `new_shape` viewing the same elements, or None where no view can (a
    copy): ATen's `computeStride`, which merges dims only over contiguous chunks."""
    shape, strides = layout
    if not shape:
        return (1,) * len(new_shape)
    if math.prod(shape) == 0:
        return strides if tuple(new_shape) == shape else contiguous_strides(tuple(new_shape))
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base = strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = strides[d - 1]
                tensor_numel = view_numel = 1
    return tuple(new_strides) if view_d == -1 else None


def _reshape(layout: Layout, new_shape: tuple[int, ...]) -> Layout:
    strides = reshape_strides(layout, new_shape)
    # (a view that PyTorch could only copy is never recorded: `reshape` copies it)
    return tuple(new_shape), strides if strides is not None else contiguous_strides(tuple(new_shape))


def _permute(layout: Layout, perm: tuple[int, ...]) -> Layout:
    shape, strides = layout
    return tuple(shape[p] for p in perm), tuple(strides[p] for p in perm)


def _index(layout: Layout, index: Any) -> Layout:
    """A basic index (ints, slices, None, Ellipsis) of the layout."""
    shape, strides = layout
    items = index if type(index) is tuple else (index,)
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items = items[:at] + (slice(None),) * (len(shape) - used) + items[at + 1 :]
    else:
        items = items + (slice(None),) * (len(shape) - used)
    out_shape, out_strides, d = [], [], 0
    for item in items:
        if item is None:
            out_shape.append(1)
            out_strides.append(strides[d] * shape[d] if d < len(shape) else 1)
        elif type(item) is slice:
            start, stop, step = item.indices(shape[d])
            out_shape.append(len(range(start, stop, step)))
            out_strides.append(strides[d] * step)
            d += 1
        else:  # an int: the dim goes
            d += 1
    return tuple(out_shape), tuple(out_strides)


def _diagonal(layout: Layout, arg: tuple[int, int, int]) -> Layout:
    offset, d1, d2 = arg
    shape, strides = layout
    n = max(min(shape[d1], shape[d2] - offset) if offset >= 0 else min(shape[d1] + offset, shape[d2]), 0)
    keep = [d for d in range(len(shape)) if d not in (d1, d2)]
    return tuple(shape[d] for d in keep) + (n,), tuple(strides[d] for d in keep) + (strides[d1] + strides[d2],)


def _unfold(layout: Layout, arg: tuple[int, int, int]) -> Layout:
    dim, size, step = arg
    shape, strides = list(layout[0]), list(layout[1])
    inner = strides[dim]
    shape[dim], strides[dim] = (shape[dim] - size) // step + 1, inner * step
    return (*shape, size), (*strides, inner)


_STEPS = {
    "alias": lambda layout, _: layout,
    "reshape": _reshape,
    "permute": _permute,
    "index": _index,
    "diagonal": _diagonal,
    "unfold": _unfold,
}

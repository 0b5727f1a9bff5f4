"""Argument checks shared by the functional modules (one wording for every op's errors)."""

from __future__ import annotations

from typing import Any

import numpy as np

from nabla import Tensor
from nabla.core.common import dtypes as _dt
from nabla.core.common.context import autocast_dtype


def check_float(x: Any, op: str, arg: str = "input") -> Tensor:
    """`x` itself, if it is a floating-point Tensor; else a TypeError naming `op` and `arg`."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")
    if not _dt.is_float(x.dtype):
        raise TypeError(f"{op}: {arg} must be a floating-point tensor, got dtype {x.dtype.name}")
    return x


def check_same_dtype(op: str, **tensors: Tensor | None) -> None:
    """A TypeError unless the given tensors (None skipped) share one dtype, as PyTorch's layers
    require (nabla's core ops would promote, silently changing the layer's precision). Inside
    `nabla.autocast` the op casts its operands itself, as torch's autocast does."""
    if autocast_dtype() is not None:
        return
    present = {k: v for k, v in tensors.items() if v is not None}
    dtypes = {v._impl.dtype for v in present.values()}
    if len(dtypes) > 1:
        listed = ", ".join(f"{k} {v.dtype.name}" for k, v in present.items())
        raise TypeError(
            f"{op}: expected one dtype, got {listed}; cast the input (e.g. x.float()) or the module (module.to(dtype))"
        )


def number(v: Any, op: str, arg: str) -> float:
    """`v` as a Python float, if it is a real number (not a bool)."""
    if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
        raise TypeError(f"{op}: {arg} must be a number, got {v!r}")
    return float(v)


def in_place(input: Tensor, out: Tensor, inplace: bool) -> Tensor:
    """PyTorch's `inplace=True`: `input` takes the result and is returned, so every name bound
    to it (and the tensor it is a view of) sees it; else the new tensor `out`."""
    return input.copy_(out) if inplace and out is not input else out


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def all_below(data: np.ndarray, n: int) -> bool:
    """Whether every value of an integer array lies in [0, n) (class targets, embedding
    indices: checked every training step). One reduction: read as unsigned, a negative value
    is larger than any n."""
    if data.dtype.kind == "i":
        data = data.view(_UNSIGNED[data.itemsize])
    elif data.dtype.kind not in "ub":
        return bool(np.minimum.reduce(data, axis=None) >= 0 and np.maximum.reduce(data, axis=None) < n)
    return bool(np.maximum.reduce(data, axis=None) < n)


def first_outside(data: np.ndarray, n: int, ignore: int | None = None) -> int | None:
    """The first value of an integer array outside [0, n), other than `ignore`; None when
    there is none (the common case costs one reduction: `all_below`)."""
    if not data.size or all_below(data, n):
        return None
    outside = (data < 0) | (data >= n)
    bad = data[outside if ignore is None else outside & (data != ignore)]
    return int(bad.flat[0]) if bad.size else None

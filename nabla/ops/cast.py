"""cast / astype: dtype conversion."""

from __future__ import annotations

from typing import Any

import numpy as np
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.common.context import autocast_device, autocast_dtype
from ..core.tensor.dispatch import register
from ..core.tensor.tensor import Tensor
from .base import AVal, Operation

__all__ = ["astype", "cast"]


class CastOp(Operation):
    saves_values = False  # (see Operation.saves_values)
    name = "cast"
    sharding_rule = "elementwise"

    def abstract_eval(self, x: AVal, *, dtype: Any) -> AVal:
        return x[0], dtype

    def kernel(self, x: Any, *, dtype: Any) -> Any:
        if dtype == _dt.bool_ and _dt.is_float(x.dtype):  # (MAX's cast makes NaN False; it is nonzero)
            return ops.logical_not(ops.equal(x, ops.constant(0.0, x.dtype, x.device)))
        return ops.cast(x, dtype)

    def numpy_kernel(self, x: np.ndarray, *, dtype: Any) -> np.ndarray:
        with np.errstate(over="ignore"):  # a value past a narrower float's range is inf there, silently (as torch)
            return x.astype(_dt.to_numpy_dtype(dtype))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kwargs: Any) -> list:
        (x,) = primals
        return [cast(cotangents[0], x.dtype) if _dt.is_float(x.dtype) else None]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, dtype: Any) -> list:
        return [cast(tangents[0], dtype) if _dt.is_float(dtype) else None]


_cast = CastOp()


@register()
def cast(x: Tensor, dtype: Any) -> Tensor:
    """Convert `x` to `dtype` (a no-op when it already has it)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"cast: x must be a Tensor, got {type(x).__name__}")
    dt = _dt.as_dtype(dtype)
    return x if dt == x.dtype else _cast(x, dtype=dt)


astype = cast


def autocast_operands(*xs: Any) -> list[Any]:
    """Inside `nabla.autocast`: the float32 / half operands of a matmul or convolution cast to
    its dtype (float64, integers and None are left alone, as torch's autocast leaves them)."""
    dtype = autocast_dtype()
    if dtype is None:
        return list(xs)
    eligible = (_dt.float32, _dt.float16, _dt.bfloat16)
    return [cast(x, dtype) if isinstance(x, Tensor) and x.dtype in eligible and x.dtype != dtype else x for x in xs]


def autocast_to_float32(x: Any, *, cuda_only: bool = False) -> Any:
    """Inside `nabla.autocast`: a half operand of an op torch's autocast runs in float32 (the
    losses; softmax and log_softmax only on "cuda", `cuda_only`) cast to float32."""
    if autocast_dtype() is None or (cuda_only and autocast_device() == "cpu"):
        return x
    if isinstance(x, Tensor) and x.dtype in (_dt.float16, _dt.bfloat16):
        return cast(x, _dt.float32)
    return x

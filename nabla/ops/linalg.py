"""matmul: 1-D and batched operands with NumPy broadcasting of batch dimensions."""

from __future__ import annotations

from typing import Any

import numpy as np
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.tensor.dispatch import register
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from .base import AVal, Operation
from .cast import cast
from .creation import tensor
from .view import broadcast_shapes, broadcast_to, reshape, transpose

__all__ = ["matmul"]


class MatmulOp(Operation):
    """`x @ y` for operands of rank >= 2 with identical batch dimensions."""

    name = "matmul"
    sharding_rule = "... m k, ... k n -> ... m n"

    def abstract_eval(self, x: AVal, y: AVal) -> AVal:
        return x[0][:-1] + (y[0][-1],), x[1]

    def kernel(self, x: Any, y: Any) -> Any:
        return ops.matmul(x, y)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.matmul(x, y)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x, y = primals
        g = cotangents[0]
        return [_matmul(g, transpose(y, -1, -2)), _matmul(transpose(x, -1, -2), g)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        x, y = primals
        return [_bin.add(_matmul(tangents[0], y), _matmul(x, tangents[1]))]


_matmul = MatmulOp()


@register()
def matmul(x: Any, y: Any) -> Tensor:
    """Matrix product with NumPy semantics: 1-D operands are vectors, leading dims broadcast.

    Example:
        >>> nabla.matmul(nabla.ones(8, 2, 3), nabla.ones(3, 4)).shape
        (8, 2, 4)
    """
    x = x if isinstance(x, Tensor) else tensor(x)
    y = y if isinstance(y, Tensor) else tensor(y)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError(f"matmul: operands must have rank >= 1, got shapes {x.shape} and {y.shape}")
    dtype = _dt.promote_types(x.dtype, y.dtype)
    if dtype == _dt.bool_:
        raise TypeError("matmul: bool operands are not supported")
    x, y = cast(x, dtype), cast(y, dtype)
    x_vec, y_vec = x.ndim == 1, y.ndim == 1
    if x_vec:
        x = reshape(x, (1,) + x.shape)
    if y_vec:
        y = reshape(y, y.shape + (1,))
    if x.shape[-1] != y.shape[-2]:
        raise ValueError(
            f"matmul: contracting dimensions differ: x has shape {x.shape[1:] if x_vec else x.shape} "
            f"(last dim {x.shape[-1]}), y has shape {y.shape[:-1] if y_vec else y.shape} (dim -2 is {y.shape[-2]})"
        )
    try:
        batch = broadcast_shapes(x.shape[:-2], y.shape[:-2], op="matmul")
    except ValueError:
        raise ValueError(
            f"matmul: batch dimensions of x {x.shape} and y {y.shape} cannot be broadcast together"
        ) from None
    x = broadcast_to(x, batch + x.shape[-2:])
    y = broadcast_to(y, batch + y.shape[-2:])
    out = _matmul(x, y)
    if x_vec and y_vec:
        return reshape(out, batch)
    if x_vec:
        return reshape(out, batch + (out.shape[-1],))
    if y_vec:
        return reshape(out, batch + (out.shape[-2],))
    return out

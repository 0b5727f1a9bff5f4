"""Control flow. For now: `where` (cond, while_loop and scan arrive with the full op library)."""

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
from .creation import full
from .view import broadcast_shapes, broadcast_to

__all__ = ["where"]


class WhereOp(Operation):
    name = "where"

    def abstract_eval(self, cond: AVal, x: AVal, y: AVal) -> AVal:
        return x

    def kernel(self, cond: Any, x: Any, y: Any) -> Any:
        return ops.where(cond, x, y)

    def numpy_kernel(self, cond: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.where(cond, x, y)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        cond = primals[0]
        g = cotangents[0]
        zero = full((), 0, g.dtype)
        return [None, where(cond, g, zero), where(cond, zero, g)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        return [where(primals[0], tangents[1], tangents[2])]


_where = WhereOp()


@register()
def where(condition: Any, x: Any, y: Any) -> Tensor:
    """Elementwise `x if condition else y`, broadcasting all three."""
    if not isinstance(condition, Tensor):
        raise TypeError(f"where: condition must be a Tensor, got {type(condition).__name__}")
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        # Two Python scalars: type them together, as torch.where does.
        x = full((), x, _dt.promote_types(_dt.python_scalar_dtype(x), _dt.python_scalar_dtype(y)))
    x, y = _bin.binary_operands("where", x, y)
    shape = broadcast_shapes(condition.shape, x.shape, op="where")
    cond = broadcast_to(cast(condition, _dt.bool_), shape)
    return _where(cond, broadcast_to(x, shape), broadcast_to(y, shape))

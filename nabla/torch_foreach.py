"""torch's `_foreach_*` functions: one op applied to every tensor of a list, as EMA helpers
(timm's ModelEmaV3) and hand-written optimizers call them. torch fuses them into few kernels;
here each is a loop of the ordinary op, and a step's graph fuses the elementwise math anyway.

`other` may be a list (one per tensor), a tensor or a number (the same for all), as in torch.

Example:
    >>> ema, current = [nabla.zeros(2)], [nabla.ones(2)]
    >>> nabla._foreach_lerp_(ema, current, 0.1)
    >>> ema[0].tolist()
    [0.1, 0.1]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .core.tensor import Tensor
from .ops.linalg import vector_norm

__all__ = [
    "_foreach_add",
    "_foreach_add_",
    "_foreach_addcdiv_",
    "_foreach_addcmul_",
    "_foreach_copy_",
    "_foreach_div",
    "_foreach_div_",
    "_foreach_lerp_",
    "_foreach_maximum_",
    "_foreach_mul",
    "_foreach_mul_",
    "_foreach_neg",
    "_foreach_norm",
    "_foreach_sqrt",
    "_foreach_sqrt_",
    "_foreach_sub",
    "_foreach_sub_",
    "_foreach_zero_",
]


def _each(op: str, tensors: Sequence[Tensor], other: Any, name: str = "other") -> list:
    """`other` per tensor: a list of matching length, or one tensor or number for all."""
    tensors = list(tensors)
    if not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"{op}: self must be a list of Tensors")
    if isinstance(other, list | tuple):
        if len(other) != len(tensors):
            raise ValueError(f"{op}: {name} has {len(other)} entries, self has {len(tensors)} tensors")
        return list(other)
    return [other] * len(tensors)


def _foreach_add_(self: Sequence[Tensor], other: Any, *, alpha: Any = 1) -> None:
    for t, o in zip(self, _each("_foreach_add_", self, other), strict=True):
        t.add_(o, alpha=alpha)


def _foreach_add(self: Sequence[Tensor], other: Any, *, alpha: Any = 1) -> list[Tensor]:
    return [t.add(o, alpha=alpha) for t, o in zip(self, _each("_foreach_add", self, other), strict=True)]


def _foreach_sub_(self: Sequence[Tensor], other: Any, *, alpha: Any = 1) -> None:
    for t, o in zip(self, _each("_foreach_sub_", self, other), strict=True):
        t.sub_(o, alpha=alpha)


def _foreach_sub(self: Sequence[Tensor], other: Any, *, alpha: Any = 1) -> list[Tensor]:
    return [t.sub(o, alpha=alpha) for t, o in zip(self, _each("_foreach_sub", self, other), strict=True)]


def _foreach_mul_(self: Sequence[Tensor], other: Any) -> None:
    for t, o in zip(self, _each("_foreach_mul_", self, other), strict=True):
        t.mul_(o)


def _foreach_mul(self: Sequence[Tensor], other: Any) -> list[Tensor]:
    return [t * o for t, o in zip(self, _each("_foreach_mul", self, other), strict=True)]


def _foreach_div_(self: Sequence[Tensor], other: Any) -> None:
    for t, o in zip(self, _each("_foreach_div_", self, other), strict=True):
        t.div_(o)


def _foreach_div(self: Sequence[Tensor], other: Any) -> list[Tensor]:
    return [t / o for t, o in zip(self, _each("_foreach_div", self, other), strict=True)]


def _foreach_lerp_(self: Sequence[Tensor], tensors1: Sequence[Tensor], weight: Any) -> None:
    ends = _each("_foreach_lerp_", self, list(tensors1), "tensors1")
    for t, end, w in zip(self, ends, _each("_foreach_lerp_", self, weight, "weight"), strict=True):
        t.lerp_(end, w)


def _foreach_addcmul_(self: Sequence[Tensor], tensor1: Any, tensor2: Any, value: Any = 1) -> None:
    for t, a, b, v in _triples("_foreach_addcmul_", self, tensor1, tensor2, value):
        t.addcmul_(a, b, value=v)


def _foreach_addcdiv_(self: Sequence[Tensor], tensor1: Any, tensor2: Any, value: Any = 1) -> None:
    for t, a, b, v in _triples("_foreach_addcdiv_", self, tensor1, tensor2, value):
        t.addcdiv_(a, b, value=v)


def _triples(op: str, self: Sequence[Tensor], tensor1: Any, tensor2: Any, value: Any) -> Any:
    firsts, seconds = _each(op, self, tensor1, "tensor1"), _each(op, self, tensor2, "tensor2")
    return zip(self, firsts, seconds, _each(op, self, value, "value"), strict=True)


def _foreach_maximum_(self: Sequence[Tensor], other: Any) -> None:
    for t, o in zip(self, _each("_foreach_maximum_", self, other), strict=True):
        t.copy_(t.maximum(o) if isinstance(o, Tensor) else t.clamp(min=o))


def _foreach_copy_(self: Sequence[Tensor], src: Sequence[Tensor], non_blocking: bool = False) -> None:
    for t, s in zip(self, _each("_foreach_copy_", self, list(src), "src"), strict=True):
        t.copy_(s)


def _foreach_zero_(self: Sequence[Tensor]) -> None:
    for t in self:
        t.zero_()


def _foreach_sqrt_(self: Sequence[Tensor]) -> None:
    for t in self:
        t.sqrt_()


def _foreach_sqrt(self: Sequence[Tensor]) -> list[Tensor]:
    return [t.sqrt() for t in self]


def _foreach_neg(self: Sequence[Tensor]) -> list[Tensor]:
    return [-t for t in self]


def _foreach_norm(self: Sequence[Tensor], ord: Any = 2, dtype: Any = None) -> list[Tensor]:
    """Each tensor's vector norm (as torch.linalg.vector_norm of the flattened tensor)."""
    return [vector_norm(t, ord, dtype=dtype) for t in self]

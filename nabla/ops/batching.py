"""The three ops through which vmap moves dimensions between the logical and the batch part of
a tensor's physical shape (physical = batch dims first, then the logical shape the user sees).

    move_to_batch     logical axis -> new innermost batch dim     (vmap entry, in_axes)
    move_from_batch   innermost batch dim -> logical axis          (vmap exit, out_axes)
    broadcast_batch   add missing batch levels, broadcasting       (operands meet, central)

Levels are positional: `batch_dims == k` means the tensor is batched over vmap levels 1..k, in
that order. `Operation.__call__` aligns operands with `broadcast_batch` before any op sees them,
so op rules only ever meet operands with one batch prefix.

`broadcast_batch` is where vmap and reverse mode meet. At the logical level of a `grad` taken
inside a vmap, adding that vmap's level is the identity and the cotangent keeps its batch dim
(per-example gradients); for a vmap inside the differentiated function it is a real broadcast
and the cotangent is summed over it. Levels up to the vmap depth at which the backward pass runs
are outside it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from max.graph import ops

from ..core.common.context import vmap_depth
from ..core.sharding import OpShardingRule
from ..core.sharding import rules as _rules
from ..core.tensor.dispatch import register
from ..core.tensor.impl import TensorImpl
from ..core.tensor.tensor import Tensor
from . import reduction as _red
from .base import AVal, Operation
from .view import normalize_axis

__all__: list[str] = []  # internal: reached through nabla.vmap


def _moved(rank: int, src: int, dst: int) -> tuple[int, ...]:
    perm = [d for d in range(rank) if d != src]
    perm.insert(dst, src)
    return tuple(perm)


class _PermuteBatch(Operation):
    """A physical transpose that changes how many leading dims count as batch dims; a sharded
    dim keeps its mesh axes wherever it moves."""

    delta = 0
    physical_rule = True

    def sharding_rule_for(self, in_shapes: list[tuple], out_shapes: list[tuple], kwargs: dict) -> OpShardingRule:
        return _rules.permutation(in_shapes[0], kwargs["perm"])

    def out_batch_dims(self, batch_dims: int, kwargs: dict) -> int:
        return batch_dims + self.delta

    def abstract_eval(self, x: AVal, *, perm: tuple, **kw: Any) -> AVal:
        return tuple(x[0][p] for p in perm), x[1]

    def kernel(self, x: Any, *, perm: tuple, **kw: Any) -> Any:
        return ops.permute(x, list(perm)) if perm != tuple(range(len(perm))) else x

    def numpy_kernel(self, x: np.ndarray, *, perm: tuple, **kw: Any) -> np.ndarray:
        return np.transpose(x, perm)


class MoveToBatchOp(_PermuteBatch):
    name = "move_to_batch"
    delta = 1

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        (x,) = impls
        axis = normalize_axis(kwargs["axis"], len(x.logical_shape), "vmap", "in_axes")
        return {"axis": axis, "perm": _moved(len(x.physical_shape), batch_dims + axis, batch_dims)}

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axis: int, **kw: Any) -> list:
        return [move_from_batch(cotangents[0], axis, _prefix(outputs[0]))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axis: int, **kw: Any) -> list:
        return [move_to_batch(tangents[0], axis, _prefix(primals[0]))]


class MoveFromBatchOp(_PermuteBatch):
    name = "move_from_batch"
    delta = -1

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        (x,) = impls
        axis = normalize_axis(kwargs["axis"], len(x.logical_shape) + 1, "vmap", "out_axes")
        return {"axis": axis, "perm": _moved(len(x.physical_shape), batch_dims - 1, batch_dims - 1 + axis)}

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axis: int, **kw: Any) -> list:
        return [move_to_batch(cotangents[0], axis, _prefix(outputs[0]))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axis: int, **kw: Any) -> list:
        return [move_from_batch(tangents[0], axis, _prefix(primals[0]))]


class BroadcastBatchOp(Operation):
    name = "broadcast_batch"
    physical_rule = True

    def sharding_rule_for(self, in_shapes: list[tuple], out_shapes: list[tuple], kwargs: dict) -> OpShardingRule:
        # The new batch levels sit between the old batch dims and the logical dims: map the
        # input's dims around them; the new ones start replicated.
        (x,), (out,) = in_shapes, out_shapes
        at, n = kwargs["at"], len(kwargs["sizes"])
        names = [f"d{i}" for i in range(len(out))]
        dims = tuple((names[i if i < at else i + n],) for i in range(len(x)))
        sizes = {name: int(v) for name, v in zip(names, out, strict=True)}
        return OpShardingRule((dims,), (tuple((m,) for m in names),), sizes, reduction=None, partial_ok="additive")

    def out_batch_dims(self, batch_dims: int, kwargs: dict) -> int:
        return batch_dims + len(kwargs["sizes"])

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        return {"sizes": tuple(kwargs["sizes"]), "at": batch_dims}

    def abstract_eval(self, x: AVal, *, sizes: tuple, at: int) -> AVal:
        return x[0][:at] + sizes + x[0][at:], x[1]

    @staticmethod
    def _target(x_shape: tuple, at: int, sizes: tuple) -> tuple[tuple, tuple]:
        return x_shape[:at] + (1,) * len(sizes) + x_shape[at:], x_shape[:at] + sizes + x_shape[at:]

    def kernel(self, x: Any, *, sizes: tuple, at: int) -> Any:
        shape = tuple(x.shape)
        expanded, target = self._target(shape, at, sizes)
        return ops.broadcast_to(ops.reshape(x, expanded), target)

    def numpy_kernel(self, x: np.ndarray, *, sizes: tuple, at: int) -> np.ndarray:
        expanded, target = self._target(x.shape, at, sizes)
        return np.broadcast_to(x.reshape(expanded), target)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, sizes: tuple, at: int) -> list:
        cot = cotangents[0]
        at = primals[0]._impl.batch_dims  # (rule kwargs are adapted for unbatched operands)
        out_levels = at + len(sizes)
        if cot._impl.batch_dims < out_levels:
            cot = broadcast_batch(cot, _prefix(outputs[0]))
        # Levels up to the current vmap depth belong to vmaps around the backward pass: the
        # cotangent keeps them. Levels added inside the differentiated function are summed.
        keep = max(at, vmap_depth())
        for level in range(out_levels, keep, -1):
            if cot._impl.batch_dims != level:
                break
            cot = _red.sum(move_from_batch(cot, 0, _prefix(cot)), 0)
        return [cot]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, sizes: tuple, at: int) -> list:
        # A tangent may already carry more levels than the output (a jacfwd inside a vmap, with
        # a primal that is batched only over the outer level): it then has the output's too.
        tangent = tangents[0]
        if tangent._impl.batch_dims >= outputs[0]._impl.batch_dims:
            return [tangent]
        return [broadcast_batch(tangent, _prefix(outputs[0]))]


def _prefix(x: Tensor) -> tuple[int, ...]:
    impl = x._impl
    return impl.physical_shape[: impl.batch_dims]


_move_to_batch = MoveToBatchOp()
_move_from_batch = MoveFromBatchOp()
_broadcast_batch = BroadcastBatchOp()


@register("broadcast_batch")
def broadcast_batch(x: Tensor, prefix: tuple[int, ...]) -> Tensor:
    """Batch `x` over the levels of `prefix` (sizes, outermost first) it lacks, by broadcasting."""
    impl = x._impl
    have = impl.physical_shape[: impl.batch_dims]
    if have != tuple(prefix[: len(have)]) or len(have) > len(prefix):
        raise ValueError(
            f"vmap: a tensor batched with sizes {have} cannot be combined with one batched with sizes {tuple(prefix)}"
        )
    if len(have) == len(prefix):
        return x
    return _broadcast_batch(x, sizes=tuple(prefix[len(have) :]))


@register("move_to_batch")
def move_to_batch(x: Tensor, axis: int, prefix: tuple[int, ...]) -> Tensor:
    """Make logical `axis` of `x` the batch dim of level `len(prefix) + 1`."""
    return _move_to_batch(broadcast_batch(x, prefix), axis=axis)


def move_from_batch(x: Tensor, axis: int, prefix: tuple[int, ...]) -> Tensor:
    """Make the batch dim of level `len(prefix)` logical axis `axis` of the result."""
    return _move_from_batch(broadcast_batch(x, prefix), axis=axis)


@register("align_batch")
def align_batch(tensors: list[Tensor]) -> list[Tensor]:
    """Give operands one batch prefix (that of the most batched one)."""
    impls = [t._impl for t in tensors]
    top = max(impls, key=lambda i: i.batch_dims)
    prefix = top.physical_shape[: top.batch_dims]
    if all(i.physical_shape[: i.batch_dims] == prefix for i in impls):
        return tensors
    return [broadcast_batch(t, prefix) for t in tensors]

"""TensorImpl: all state of a tensor. `Tensor` is a thin facade over it.

A TensorImpl is either a *promise* (no data yet; `output_refs` holds the OpNode that will
compute it, and its shape/dtype are already known) or *realized* (`data` holds a NumPy array
or a MAX Buffer). Shapes are physical: `batch_dims` leading vmap dimensions come first.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

from max.dtype import DType

from ..common.devices import CPU_DEVICE, Device

_SEQ = itertools.count()
# Non-leaf impls whose gradient `backward()` keeps in their tensor's `.grad` (`retain_grad()`).
RETAINED: weakref.WeakSet = weakref.WeakSet()


class _Hooks:
    """Gradient hooks (`Tensor.register_hook`). A leaf's live on its Tensor (`_hooks`), so they
    outlast the new impl each optimizer step gives it; a non-leaf's on its impl (the value
    they were registered for), here. The backward looks for hooks only while `count` > 0."""

    def __init__(self) -> None:
        self.count = 0
        self.on_impl: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # post-accumulate hooks registered (on Tensors' `_post_hooks`): looked for while > 0
        self.post_count = 0
        # bumped by every registration and removal: a compiled backward traces again after one
        self.version = 0

    def added(self, post: bool = False) -> None:
        self.version += 1
        if post:
            self.post_count += 1
        else:
            self.count += 1

    def removed(self) -> None:
        self.version += 1
        self.count -= 1

    def post_removed(self) -> None:
        self.version += 1
        self.post_count -= 1

    def of(self, impl: TensorImpl) -> dict | None:
        """The hooks registered for `impl` (a non-leaf's value, or its leaf tensor's), or None."""
        hooks = self.on_impl.get(impl)
        if hooks is None and impl.facade is not None:
            t = impl.facade()
            hooks = getattr(t, "_hooks", None) if t is not None else None
        return hooks or None


GRAD_HOOKS = _Hooks()


def next_seq() -> int:
    """A creation number no impl has: impls created before have smaller ones, after larger."""
    return next(_SEQ)


class TensorImpl:
    __slots__ = (
        "seq",
        "data",
        "physical_shape",
        "dtype",
        "device",
        "batch_dims",
        "sharding",
        "output_refs",
        "output_index",
        "requires_grad",
        "tangent",
        "graph_values",
        "graph_values_epoch",
        "facade",
        "weak_type",
        "host",
        "__weakref__",
    )

    def __init__(
        self,
        physical_shape: tuple[int, ...],
        dtype: DType,
        # (not keyword-only: an op call makes its outputs positionally, 0.25 us less each)
        data: Any = None,
        device: Device = CPU_DEVICE,
        batch_dims: int = 0,
        requires_grad: bool = False,
        sharding: Any = None,
    ) -> None:
        self.seq = next(_SEQ)  # creation order: evaluation targets are sorted by it
        self.data = data
        self.physical_shape = physical_shape if type(physical_shape) is tuple else tuple(physical_shape)
        self.dtype = dtype
        self.device = device
        self.batch_dims = batch_dims
        # ShardingSpec (nabla.core.sharding) of a tensor laid out on a mesh; its `data` is then a
        # tuple with one storage per distinct piece (spec.piece_of maps devices to pieces).
        self.sharding = sharding
        self.output_refs = None  # OpNode for promises (and for realized tensors autograd needs)
        self.output_index = 0
        self.requires_grad = requires_grad
        self.tangent: dict[int, TensorImpl] | None = None  # forward-mode tangents, by jvp level
        self.graph_values: list | tuple = ()  # MAX values in the eager graph (NABLA_EAGER_MAX_GRAPH)
        self.graph_values_epoch = -1  # -1 marks a promise without eager graph values
        self.facade: weakref.ref | None = None  # the leaf Tensor whose .grad backward fills
        self.weak_type = False  # a Python scalar made a tensor (compile input): promotes like one
        # (Buffer, ndarray): the NumPy array a realized Buffer `data` views (see `host_array`)
        self.host: tuple | None = None

    @property
    def is_realized(self) -> bool:
        return self.data is not None

    @property
    def is_leaf(self) -> bool:
        """An autodiff leaf: not produced by a differentiable op (its recipe may still exist)."""
        node = self.output_refs
        return node is None or not node.op.differentiable

    @property
    def logical_shape(self) -> tuple[int, ...]:
        return self.physical_shape[self.batch_dims :]

    @property
    def sharding_key(self) -> Any:
        return None if self.sharding is None else self.sharding.structural_key()

    def share(self) -> TensorImpl:
        """A fresh realized impl on the same storage (no history, no requires_grad)."""
        return TensorImpl(
            self.physical_shape,
            self.dtype,
            data=self.data,
            device=self.device,
            batch_dims=self.batch_dims,
            sharding=self.sharding,
        )

    def set_realized(self, data: Any) -> None:
        self.data = data
        self.graph_values = ()
        self.graph_values_epoch = -1
        if not self.requires_grad or self.is_leaf:
            # Autodiff may still walk through the recipe of a non-leaf that requires grad
            # (and must be able to say it was released); any other recipe is garbage now.
            self.output_refs = None

    def __repr__(self) -> str:
        state = "realized" if self.is_realized else "promise"
        return f"TensorImpl({state}, shape={self.physical_shape}, dtype={self.dtype.name})"

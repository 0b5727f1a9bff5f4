"""Parameter: a Tensor that a Module registers as trainable state; Buffer: one it registers as
state that is not trained; UninitializedParameter / UninitializedBuffer: a lazy module's
placeholders until its first forward."""

from __future__ import annotations

from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.graph.executors import available_device

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter", "is_lazy"]


def placed(tensor: Tensor, device: Any) -> Tensor:
    """A tensor a layer just made on the CPU, on the device its `device` argument names (None:
    the CPU). Nothing is copied now: an accelerator gets the storage when a computation there
    first reads it, and `nabla_nn.init` writes in place on the tensor's device."""
    return tensor if device is None else tensor._moved_to(available_device(device, "device argument"))


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning one to a `Module` attribute registers it.

    It is a `Tensor` subclass, so a parameter stays a parameter whatever data is loaded into it
    (`p.data = t` swaps the value, not the kind). `requires_grad` defaults to True.

    Args:
        data: the initial value (a Tensor, or anything `nabla.tensor` accepts). A realized
            tensor's storage is shared, not copied.
        requires_grad: whether the optimizer should train it.

    Example:
        >>> w = Parameter(nb.zeros(3, 2))
        >>> w.requires_grad, w.is_leaf
        (True, True)
    """

    __slots__ = ()

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            data = nb.zeros(0)
        elif not isinstance(data, Tensor):
            data = nb.tensor(data)
        carrier = Tensor(data.data._impl)  # a fresh leaf holding data's value, no history
        super().__init__(carrier._impl)
        self.requires_grad_(requires_grad and nb.core.common.dtypes.is_float(self.dtype))

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("Parameters are not pickled: save a state_dict with nabla_nn.save (safetensors)")


class Buffer(Tensor):
    """A tensor that is module state but not a parameter (PyTorch >= 2.5's `nn.Buffer`):
    assigning one to a `Module` attribute registers it as a buffer, as `register_buffer` does.

    Args:
        data: the value (a Tensor, or anything `nabla.tensor` accepts); a realized tensor's
            storage is shared, not copied. None gives an empty float32 tensor.
        persistent: whether the buffer is part of the module's `state_dict` (keyword only).

    Example:
        >>> class Scale(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.factor = nn.Buffer(nb.ones(3), persistent=False)
        >>> [name for name, _ in Scale().named_buffers()], list(Scale().state_dict())
        (['factor'], [])
    """

    __slots__ = ("persistent",)

    def __init__(self, data: Any = None, *, persistent: bool = True) -> None:
        if data is None:
            data = nb.zeros(0)
        elif not isinstance(data, Tensor):
            data = nb.tensor(data)
        super().__init__(Tensor(data.data._impl)._impl)  # a fresh leaf holding data's value
        self.persistent = bool(persistent)
        self.requires_grad_(data.requires_grad)

    def __copy__(self) -> Buffer:
        new = super().__copy__()
        new.persistent = self.persistent
        return new

    def __deepcopy__(self, memo: dict) -> Buffer:
        new = super().__deepcopy__(memo)
        new.persistent = self.persistent
        return new


class _UninitializedTensor:
    """What UninitializedParameter and UninitializedBuffer share (PyTorch's
    `UninitializedTensorMixin`): a placeholder whose shape a lazy module learns at its first
    forward. Reading its shape raises; `materialize(shape)` gives it zeros of that shape (the
    module's `reset_parameters` then fills them) and turns it, the same object, into
    `cls_to_become`, so references held elsewhere stay valid."""

    __slots__ = ()
    cls_to_become: type = Tensor

    @property
    def shape(self) -> tuple[int, ...]:
        raise RuntimeError(
            f"Can't access the shape of an uninitialized parameter or buffer ({type(self).__name__}). "
            "Call the lazy module's forward with a dummy batch (a dry run) to initialize its parameters first, "
            "or load a state_dict into it (or into a module holding it)"
        )

    @property
    def data(self) -> Tensor:
        # The placeholder itself, so a state_dict holds placeholders (as PyTorch's does), not
        # empty tensors that would save or load as if they were values.
        return self

    @data.setter
    def data(self, value: Tensor) -> None:
        Tensor.data.fset(self, value)

    def materialize(self, shape: tuple[int, ...], device: Any = None, dtype: Any = None) -> None:
        """Become a realized zero tensor of `shape` (in `dtype`, default this placeholder's).

        Args:
            shape: the shape to take.
            device: where it lives; None keeps the placeholder's (set by the constructor or
                `module.to(device)`).
            dtype: the dtype to take; None keeps the placeholder's (set by `module.to(dtype)`).
        """
        dt = self.dtype if dtype is None else nb.core.common.dtypes.as_dtype(dtype)
        zeros = np.zeros(tuple(int(s) for s in shape), dtype=np.float32)
        self.data = placed(Tensor.from_numpy(zeros, dtype=dt), self.device if device is None else device)
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError(f"an {type(self).__name__} has no value to pickle: run the lazy module's forward first")


def _placeholder(dtype: Any, device: Any) -> Tensor:
    """The empty float tensor an uninitialized parameter or buffer holds until materialized."""
    dt = nb.core.common.dtypes.DEFAULT_FLOAT if dtype is None else nb.core.common.dtypes.as_dtype(dtype, arg="dtype")
    if not nb.core.common.dtypes.is_float(dt):
        raise TypeError(f"dtype must be a floating dtype for a lazy parameter or buffer, got {dt.name}")
    return placed(Tensor.from_numpy(np.zeros(0, dtype=np.float32), dtype=dt), device)


class UninitializedParameter(_UninitializedTensor, Parameter):
    """A parameter whose shape is not known yet (a lazy module's, until its first forward).

    It is registered like any Parameter, so `module.parameters()` yields it, but its shape
    cannot be read: create optimizers after a dry run, as in PyTorch. `materialize(shape)`
    turns it into an ordinary `Parameter` in place.

    Args:
        requires_grad: whether the materialized parameter is trained (default True).
        device: where it will live ("cpu", "gpu", "cuda:N"; default the CPU).
        dtype: the floating dtype it will have (float32 by default).

    Example:
        >>> p = UninitializedParameter()
        >>> p.materialize((2, 3))
        >>> type(p).__name__, p.shape
        ('Parameter', (2, 3))
    """

    __slots__ = ()
    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(_placeholder(dtype, device), requires_grad)


class UninitializedBuffer(_UninitializedTensor, Buffer):
    """A buffer whose shape is not known yet (a lazy BatchNorm's running stats, until its first
    forward); `materialize(shape)` turns it into an ordinary `Buffer` in place.

    Args:
        requires_grad: whether the materialized buffer requires grad (default False).
        device: where it will live ("cpu", "gpu", "cuda:N"; default the CPU).
        dtype: the floating dtype it will have (float32 by default).
        persistent: whether it is part of the module's state_dict (default True).

    Example:
        >>> b = UninitializedBuffer()
        >>> b.materialize((4,))
        >>> type(b).__name__, b.shape
        ('Buffer', (4,))
    """

    __slots__ = ()
    cls_to_become = Buffer

    def __init__(
        self, requires_grad: bool = False, device: Any = None, dtype: Any = None, persistent: bool = True
    ) -> None:
        super().__init__(_placeholder(dtype, device), persistent=persistent)
        self.requires_grad_(requires_grad)


def is_lazy(value: Any) -> bool:
    """Whether `value` is an UninitializedParameter or UninitializedBuffer.

    Example:
        >>> is_lazy(UninitializedParameter()), is_lazy(Parameter(nb.zeros(2)))
        (True, False)
    """
    return isinstance(value, _UninitializedTensor)

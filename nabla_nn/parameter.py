"""Parameter: a Tensor that a Module registers as trainable state."""

from __future__ import annotations

from typing import Any

import nabla as nb
from nabla import Tensor


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

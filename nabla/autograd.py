"""torch.autograd's functions on nabla tensors: `nabla.autograd.grad(outputs, inputs, ...)`
returns gradients (a gradient penalty takes `create_graph=True`), `nabla.autograd.backward`
accumulates them into `.grad` as `Tensor.backward` does. The JAX-style transforms
(`nabla.grad(fn)`, `vjp`, ...) differentiate functions instead.

Example:
    >>> x = nabla.tensor([1.0, 2.0], requires_grad=True)
    >>> (g,) = nabla.autograd.grad((x**3).sum(), x, create_graph=True)
    >>> nabla.autograd.grad(g.sum(), x)[0].tolist()
    [6.0, 12.0]
"""

from __future__ import annotations

from typing import Any

from .core.autograd import tensor_grad
from .core.autograd.engine import as_tensor_list, tensors_backward

__all__ = ["backward", "grad"]


grad = tensor_grad  # (its docstring has the arguments)


def backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """torch.autograd.backward: one backward from every tensor in `tensors`, each seeded with
    its `grad_tensors` entry (ones for a scalar); hooks see the summed gradients."""
    outs = as_tensor_list(tensors)
    cots = [None] * len(outs) if grad_tensors is None else as_tensor_list(grad_tensors)
    tensors_backward(outs, cots, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)

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

from .core.autograd import tensor_backward, tensor_grad
from .core.tensor import Tensor

__all__ = ["backward", "grad"]


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    materialize_grads: bool = False,
) -> tuple:
    """The gradients of `outputs` with respect to `inputs` (a tuple, one per input).

    Args:
        outputs: a tensor or sequence of tensors to differentiate.
        inputs: a tensor or sequence of tensors (leaves or not) to differentiate against.
        grad_outputs: the cotangent of each output (default: ones, for scalar outputs).
        retain_graph: keep the trace for another backward (default: `create_graph`).
        create_graph: record the gradient computation, for higher-order derivatives.
        allow_unused: an input the outputs do not depend on gets None instead of an error.
        materialize_grads: such an input gets zeros instead.
    """
    return tensor_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads)


def backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """`Tensor.backward` of each tensor in `tensors` with its `grad_tensors` entry."""
    outs = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    cots = [grad_tensors] if isinstance(grad_tensors, Tensor) or grad_tensors is None else list(grad_tensors)
    if grad_tensors is None:
        cots = [None] * len(outs)
    for i, (out, cot) in enumerate(zip(outs, cots, strict=True)):
        last = i == len(outs) - 1
        keep = retain_graph if retain_graph is not None else create_graph
        tensor_backward(out, cot, retain_graph=keep or not last, create_graph=create_graph, inputs=inputs)

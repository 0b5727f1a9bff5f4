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
from .transforms.vmap import vmap

__all__ = ["backward", "grad"]


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """torch.autograd.grad (see `tensor_grad` for the arguments). With `is_grads_batched=True`
    each `grad_outputs` entry has a leading batch dim and the backward is vmapped over it, as
    torch's: one vector-Jacobian product per row (a Jacobian, with identity rows)."""
    kwargs = {"create_graph": create_graph, "allow_unused": allow_unused, "materialize_grads": materialize_grads}
    if not is_grads_batched:
        return tensor_grad(outputs, inputs, grad_outputs, retain_graph, **kwargs)
    if grad_outputs is None:
        raise RuntimeError("grad: is_grads_batched=True needs grad_outputs (each with a leading batch dim)")
    cotangents = as_tensor_list(grad_outputs)
    single = not isinstance(outputs, list | tuple)

    def one(*rows: Any) -> tuple:
        return tensor_grad(outputs, inputs, rows[0] if single else list(rows), True, **kwargs)

    return vmap(one)(*cotangents)  # (each row's backward keeps the trace: the graph is retained)


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

"""torch.func's names for nabla's transforms: `nabla.func.vmap`, `grad`, `grad_and_value`,
`jacrev`, `jacfwd`, `hessian`, `vjp`, `jvp`, `linearize` (`functional_call` is
`nabla_nn.utils.stateless.functional_call`: it belongs to the module layer).

Example:
    >>> from nabla import func
    >>> func.grad_and_value(lambda x: (x * x).sum())(nabla.tensor([1.0, 2.0]))[0].tolist()
    [2.0, 4.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .transforms.grad import grad, jvp, value_and_grad, vjp
from .transforms.jacobians import hessian, jacfwd, jacrev, linearize
from .transforms.vmap import vmap

__all__ = ["grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "vjp", "vmap"]


def grad_and_value(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """torch.func.grad_and_value: `(gradient, value)` (with `has_aux`: `(gradient, (value, aux))`),
    the reverse of `value_and_grad`'s order."""
    both = value_and_grad(fn, argnums, has_aux)

    def wrapped(*args: Any, **kwargs: Any) -> tuple:
        value, gradient = both(*args, **kwargs)
        return gradient, value

    return wrapped

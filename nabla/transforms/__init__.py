"""Function transforms: grad, value_and_grad, vjp, jvp, vmap."""

from .grad import grad, jvp, value_and_grad, vjp
from .vmap import vmap

__all__ = ["grad", "jvp", "value_and_grad", "vjp", "vmap"]

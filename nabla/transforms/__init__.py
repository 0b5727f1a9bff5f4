"""Function transforms: grad, value_and_grad, vjp, jvp, vmap, jacrev, jacfwd, hessian, linearize."""

from .grad import grad, jvp, value_and_grad, vjp
from .jacobians import hessian, jacfwd, jacrev, linearize
from .vmap import vmap

__all__ = ["grad", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "value_and_grad", "vjp", "vmap"]

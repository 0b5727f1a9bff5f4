"""Function transforms. This version: grad, value_and_grad, vjp, jvp."""

from .grad import grad, jvp, value_and_grad, vjp

__all__ = ["grad", "jvp", "value_and_grad", "vjp"]

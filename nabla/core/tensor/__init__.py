"""Level 2 of the core: the Tensor facade, its TensorImpl state, and the op dispatch table."""

from .dispatch import OPS, register
from .impl import CPU_DEVICE, Device, TensorImpl
from .tensor import Tensor, grad_enabled_for

__all__ = ["CPU_DEVICE", "OPS", "Device", "Tensor", "TensorImpl", "grad_enabled_for", "register"]

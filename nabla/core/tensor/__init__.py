"""Level 2 of the core: the Tensor facade, its TensorImpl state, and the op dispatch table."""

from ..common.devices import CPU_DEVICE, Device, as_device
from .dispatch import OPS, register
from .impl import TensorImpl
from .tensor import Size, Tensor, grad_enabled_for

__all__ = ["CPU_DEVICE", "OPS", "Device", "Size", "Tensor", "TensorImpl", "as_device", "grad_enabled_for", "register"]

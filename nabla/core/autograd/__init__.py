"""Level 4 of the core: the trace-based VJP engine."""

from ..tensor.dispatch import register_value
from .engine import RELEASED_MESSAGE, backward_on_trace, tensor_backward, tensor_grad

register_value("backward", tensor_backward)

__all__ = ["RELEASED_MESSAGE", "backward_on_trace", "tensor_backward", "tensor_grad"]

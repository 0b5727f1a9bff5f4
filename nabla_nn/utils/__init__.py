"""nabla_nn.utils: gradient clipping and parameter/vector conversion (PyTorch's torch.nn.utils).

Example:
    >>> loss.backward()
    >>> nabla_nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    >>> opt.step()
"""

from .clip_grad import (
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "get_total_norm",
    "parameters_to_vector",
    "vector_to_parameters",
]

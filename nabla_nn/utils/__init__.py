"""nabla_nn.utils: gradient clipping, parameter/vector conversion, packed sequences (`rnn`),
parametrizations (weight_norm, spectral_norm), pruning (`prune`), `stateless.functional_call`,
conv/linear-BatchNorm fusion (PyTorch's torch.nn.utils), and torch.utils.checkpoint's API
(`checkpoint`).

Example:
    >>> loss.backward()
    >>> nabla_nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    >>> opt.step()
"""

from . import checkpoint, parametrizations, parametrize, prune, rnn, stateless
from .clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .init import skip_init
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "checkpoint",
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
    "get_total_norm",
    "parameters_to_vector",
    "parametrizations",
    "parametrize",
    "prune",
    "remove_spectral_norm",
    "remove_weight_norm",
    "rnn",
    "skip_init",
    "spectral_norm",
    "stateless",
    "vector_to_parameters",
    "weight_norm",
]

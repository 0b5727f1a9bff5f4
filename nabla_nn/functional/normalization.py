"""Normalization layers in functional form: batch, layer, group, RMS and instance norm.

All are compositions of nabla's mean / rsqrt / arithmetic ops, so their gradients (including
through the batch statistics) come from autodiff. Variances are biased (divide by n), as in
PyTorch's forward pass.

Running statistics (batch_norm, instance_norm) are updated IN PLACE, under `nb.no_grad()`, with
`running.mul_(1 - momentum).add_(momentum * stat)`: nabla's in-place methods swap in a lazy
value, so the update joins the training step's graph and costs no evaluation of its own. The
unbiased batch variance goes into `running_var`, as in PyTorch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor

from ._checks import check_float as _check_float
from ._checks import number as _number

__all__ = ["batch_norm", "group_norm", "instance_norm", "layer_norm", "local_response_norm", "rms_norm"]

# torch.finfo(dtype).eps, rms_norm's default eps (NumPy has no bfloat16).
_FINFO_EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}
_HALF = (nb.float16, nb.bfloat16)


def _check_param(t: Any, shape: tuple, op: str, arg: str) -> None:
    if t is None:
        return
    _check_float(t, op, arg)
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{op}: {arg} must have shape {tuple(shape)}, got {t.shape}")


def _channel_view(t: Tensor, ndim: int) -> Tensor:
    """(C,) -> (C, 1, ..., 1) to broadcast against (N, C, *spatial) with `ndim` dims."""
    return nb.reshape(t, (t.shape[0],) + (1,) * (ndim - 2))


def _affine(y: Tensor, weight: Tensor | None, bias: Tensor | None, ndim: int) -> Tensor:
    if weight is not None:
        y = y * _channel_view(weight, ndim)
    if bias is not None:
        y = y + _channel_view(bias, ndim)
    return y


def _in_dtype_of(y: Tensor, input: Tensor) -> Tensor:
    """The result in the input's dtype: a float16/bfloat16 input normalized with float32
    parameters or statistics (mixed precision's norms kept in float32) stays float16, as in
    PyTorch."""
    return y if y.dtype == input.dtype else y.to(input.dtype)


def _float32(*tensors: Tensor | None) -> list[Tensor | None]:
    """float16/bfloat16 tensors in float32: normalization computes in float32, as PyTorch's
    kernels (in half precision a deviation of 256 squared is inf and the output all zeros)."""
    return [t.float() if t is not None and t.dtype in _HALF else t for t in tensors]


def _update_running(running: Tensor, stat: Tensor, momentum: float | Tensor, op: str, arg: str) -> None:
    """running = (1 - momentum) * running + momentum * stat, in place and lazily."""
    if stat._impl.batch_dims and not running._impl.batch_dims:
        raise RuntimeError(
            f"{op}: cannot update {arg} in place inside vmap with a batched input (each batch element "
            f"would write a different value); pass training=False or {arg}=None under vmap"
        )
    with nb.no_grad():
        running.mul_(1.0 - momentum).add_(nb.detach(stat) * momentum)


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalization over (N, C), (N, C, L) or (N, C, H, W) (statistics per channel C).

    In training the batch mean and biased variance normalize the input, and the running
    statistics (if given) are updated in place: running = (1 - momentum) * running +
    momentum * stat, with the unbiased variance for running_var. In evaluation the running
    statistics normalize the input.

    Args:
        input: (N, C, *).
        running_mean, running_var: (C,) running statistics, or None (training only).
        weight, bias: optional (C,) affine parameters.
        training: use (and accumulate) batch statistics.
        momentum: weight of the new batch statistic in the running average.
        eps: added to the variance for stability.

    Example:
        >>> rm, rv = nb.zeros(3), nb.ones(3)
        >>> y = F.batch_norm(nb.randn(8, 3), rm, rv, training=True)
        >>> y.shape
        (8, 3)
    """
    op = "batch_norm"
    _check_float(input, op)
    if input.ndim < 2:
        raise ValueError(f"{op}: expected input of shape (N, C, *) with at least 2 dims, got {input.shape}")
    c = input.shape[1]
    for t, arg in ((running_mean, "running_mean"), (running_var, "running_var"), (weight, "weight"), (bias, "bias")):
        _check_param(t, (c,), op, arg)
    eps = _number(eps, op, "eps")
    momentum = momentum if isinstance(momentum, Tensor) else _number(momentum, op, "momentum")
    nd = input.ndim
    x, weight, bias = _float32(input, weight, bias)
    if not training:
        if running_mean is None or running_var is None:
            raise ValueError(f"{op}: running_mean and running_var must be given when training=False")
        mean, var = (_channel_view(t, nd) for t in _float32(running_mean, running_var))
        return _in_dtype_of(_affine((x - mean) * nb.rsqrt(var + eps), weight, bias, nd), input)
    axes = (0, *range(2, nd))
    n = math.prod(input.shape[a] for a in axes)
    if n <= 1:
        raise ValueError(f"{op}: expected more than 1 value per channel when training, got input size {input.shape}")
    mean = nb.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    var = nb.mean(centered * centered, axis=axes, keepdims=True)
    if running_mean is not None:
        _update_running(running_mean, nb.reshape(mean, (c,)), momentum, op, "running_mean")
    if running_var is not None:
        _update_running(running_var, nb.reshape(var, (c,)) * (n / (n - 1)), momentum, op, "running_var")
    return _in_dtype_of(_affine(centered * nb.rsqrt(var + eps), weight, bias, nd), input)


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Instance normalization: each (sample, channel) of (N, C, *spatial) normalized over its
    spatial dims. With `use_input_stats=False` the running statistics normalize instead.

    The running statistics (if given, with use_input_stats) are updated in place with the
    batch average of the per-instance mean and unbiased variance, as in PyTorch.

    Args:
        input: (N, C, *spatial) with at least one spatial dim.
        running_mean, running_var: optional (C,) running statistics.
        weight, bias: optional (C,) affine parameters.
        use_input_stats: normalize with each instance's own statistics.
        momentum: weight of the new statistic in the running average.
        eps: added to the variance for stability.

    Example:
        >>> F.instance_norm(nb.randn(2, 3, 8)).shape
        (2, 3, 8)
    """
    op = "instance_norm"
    _check_float(input, op)
    if input.ndim < 3:
        raise ValueError(f"{op}: expected input of shape (N, C, *spatial) with at least 3 dims, got {input.shape}")
    c, nd = input.shape[1], input.ndim
    for t, arg in ((running_mean, "running_mean"), (running_var, "running_var"), (weight, "weight"), (bias, "bias")):
        _check_param(t, (c,), op, arg)
    eps = _number(eps, op, "eps")
    momentum = momentum if isinstance(momentum, Tensor) else _number(momentum, op, "momentum")
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError(f"{op}: running_mean and running_var must be given when use_input_stats=False")
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    axes = tuple(range(2, nd))
    n = math.prod(input.shape[2:])
    if n <= 1:
        raise ValueError(f"{op}: expected more than 1 spatial element when training, got input size {input.shape}")
    x, weight, bias = _float32(input, weight, bias)
    mean = nb.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    var = nb.mean(centered * centered, axis=axes, keepdims=True)
    if running_mean is not None:
        _update_running(running_mean, nb.mean(nb.reshape(mean, input.shape[:2]), axis=0), momentum, op, "running_mean")
    if running_var is not None:
        unbiased = nb.mean(nb.reshape(var, input.shape[:2]), axis=0) * (n / (n - 1))
        _update_running(running_var, unbiased, momentum, op, "running_var")
    return _in_dtype_of(_affine(centered * nb.rsqrt(var + eps), weight, bias, nd), input)


def _normalized_shape(normalized_shape: Any, op: str) -> tuple[int, ...]:
    shape = (normalized_shape,) if isinstance(normalized_shape, int | np.integer) else tuple(normalized_shape)
    if not all(isinstance(s, int | np.integer) and not isinstance(s, bool) for s in shape):
        raise TypeError(f"{op}: normalized_shape must be an int or a sequence of ints, got {normalized_shape!r}")
    return tuple(int(s) for s in shape)


def _trailing_axes(input: Tensor, shape: tuple[int, ...], op: str) -> tuple[int, ...]:
    k = len(shape)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k :]) != shape:
        raise ValueError(
            f"{op}: input shape {input.shape} does not end with normalized_shape {shape} "
            f"(expected input of shape (*, {', '.join(map(str, shape))}))"
        )
    return tuple(range(input.ndim - k, input.ndim))


def layer_norm(
    input: Tensor,
    normalized_shape: Any,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Layer normalization over the trailing `normalized_shape` dims (biased variance).

    Args:
        input: (*, *normalized_shape).
        normalized_shape: int or tuple: the trailing dims to normalize over.
        weight, bias: optional elementwise affine parameters of shape normalized_shape.
        eps: added to the variance for stability.

    Example:
        >>> F.layer_norm(nb.randn(4, 10), (10,)).shape
        (4, 10)
    """
    op = "layer_norm"
    _check_float(input, op)
    shape = _normalized_shape(normalized_shape, op)
    _trailing_axes(input, shape, op)
    _check_param(weight, shape, op, "weight")
    _check_param(bias, shape, op, "bias")
    x, weight, bias = _float32(input, weight, bias)
    return _in_dtype_of(nb.layer_norm(x, shape, weight, bias, _number(eps, op, "eps")), input)


def rms_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """Root-mean-square normalization: x / sqrt(mean(x**2) + eps) over the trailing dims.

    Args:
        input: (*, *normalized_shape).
        normalized_shape: int or tuple: the trailing dims to normalize over.
        weight: optional elementwise scale of shape normalized_shape.
        eps: added to the mean square; None uses the machine epsilon of input's dtype
            (torch.finfo(dtype).eps), as PyTorch.

    Example:
        >>> F.rms_norm(nb.ones(4, 10), (10,)).tolist()[0][0]
        1.0
    """
    op = "rms_norm"
    _check_float(input, op)
    shape = _normalized_shape(normalized_shape, op)
    axes = _trailing_axes(input, shape, op)
    _check_param(weight, shape, op, "weight")
    e = _FINFO_EPS[input.dtype.name] if eps is None else _number(eps, op, "eps")
    x, weight = _float32(input, weight)
    y = x * nb.rsqrt(nb.mean(x * x, axis=axes, keepdims=True) + e)
    return _in_dtype_of(y if weight is None else y * weight, input)


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Group normalization: the C channels of (N, C, *) split into `num_groups` groups, each
    normalized over its channels and spatial dims; then a per-channel affine.

    Args:
        input: (N, C, *).
        num_groups: number of groups; must divide C.
        weight, bias: optional (C,) affine parameters.
        eps: added to the variance for stability.

    Example:
        >>> F.group_norm(nb.randn(2, 6, 5), 3).shape
        (2, 6, 5)
    """
    op = "group_norm"
    _check_float(input, op)
    if input.ndim < 2:
        raise ValueError(f"{op}: expected input of shape (N, C, *) with at least 2 dims, got {input.shape}")
    if isinstance(num_groups, bool) or not isinstance(num_groups, int | np.integer) or num_groups < 1:
        raise ValueError(f"{op}: num_groups must be a positive int, got {num_groups!r}")
    n, c = input.shape[:2]
    if c % num_groups:
        raise ValueError(f"{op}: expected the number of channels {c} to be divisible by num_groups={num_groups}")
    _check_param(weight, (c,), op, "weight")
    _check_param(bias, (c,), op, "bias")
    g = int(num_groups)
    x, weight, bias = _float32(input, weight, bias)
    x = nb.reshape(x, (n, g, math.prod(input.shape[1:]) // g))
    mean = nb.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    var = nb.mean(centered * centered, axis=-1, keepdims=True)
    y = nb.reshape(centered * nb.rsqrt(var + _number(eps, op, "eps")), input.shape)
    return _in_dtype_of(_affine(y, weight, bias, input.ndim), input)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """Local response normalization across channels: x / (k + alpha * mean of x**2 over `size`
    neighbouring channels) ** beta, with PyTorch's zero padding of size // 2 before and
    (size - 1) // 2 after.

    Args:
        input: (N, C, *) with at least one spatial dim.
        size: number of neighbouring channels summed over.
        alpha: multiplicative factor.
        beta: exponent.
        k: additive factor.

    Example:
        >>> F.local_response_norm(nb.ones(1, 4, 3, 3), 2).shape
        (1, 4, 3, 3)
    """
    op = "local_response_norm"
    _check_float(input, op)
    if input.ndim < 3:
        raise ValueError(f"{op}: expected 3D or higher dimensional input, got shape {input.shape}")
    if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
        raise ValueError(f"{op}: size must be a positive int, got {size!r}")
    size = int(size)
    c = input.shape[1]
    sq = input * input
    # sum over a sliding window of channels: pad the channel dim and add shifted slices
    pad = [(0, 0)] * input.ndim
    pad[1] = (size // 2, (size - 1) // 2)
    flat = [v for pair in reversed(pad) for v in pair]
    padded = nb.pad(sq, flat)
    acc = padded[:, 0:c]
    for i in range(1, size):
        acc = acc + padded[:, i : i + c]
    div = nb.pow(acc * (_number(alpha, op, "alpha") / size) + _number(k, op, "k"), _number(beta, op, "beta"))
    return input / div

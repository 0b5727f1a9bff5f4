"""Folding an eval-mode BatchNorm into the convolution or linear layer before it (PyTorch's
`torch.nn.utils.fusion`): y = bn(conv(x)) becomes one conv with rescaled weight and bias."""

from __future__ import annotations

import copy
from typing import TypeVar

import nabla as nb
from nabla import Tensor

from ..module import Module
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]

ConvT = TypeVar("ConvT", bound=Module)
LinearT = TypeVar("LinearT", bound=Module)


def _check_eval(layer: Module, bn: Module) -> None:
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def _fused_parameters(
    weight: Tensor, bias: Tensor, like_weight: Tensor, like_bias: Tensor
) -> tuple[Parameter, Parameter]:
    """New realized Parameters holding the fused values (requires_grad as the originals')."""
    w = Parameter(weight, like_weight.requires_grad)
    b = Parameter(bias, like_bias.requires_grad)
    nb.evaluate(w, b)
    return w, b


def fuse_conv_bn_eval(conv: ConvT, bn: Module, transpose: bool = False) -> ConvT:
    """A copy of `conv` computing `bn(conv(x))` of the eval-mode pair in one convolution.

    Args:
        conv: a convolution (Conv1d/2d/3d or, with `transpose`, ConvTranspose*d) in eval mode.
        bn: a BatchNorm in eval mode with running statistics.
        transpose: the convolution is transposed (its weight's dim 1 is the output channel).

    Returns:
        The fused convolution (a new module; `conv` is unchanged).

    Example:
        >>> fused = fuse_conv_bn_eval(conv.eval(), bn.eval())
    """
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose
    )
    return fused


def fuse_conv_bn_weights(
    conv_w: Tensor,
    conv_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor | None,
    bn_b: Tensor | None,
    transpose: bool = False,
) -> tuple[Parameter, Parameter]:
    """The weight and bias of a convolution followed by an eval-mode BatchNorm, as one.

    w' = w * (bn_w / sqrt(bn_rv + eps)) per output channel; b' = (b - bn_rm) * bn_w /
    sqrt(bn_rv + eps) + bn_b. A missing conv bias or BatchNorm affine term counts as 0 (1 for
    bn_w); the results keep the conv weight's and bias's dtypes.

    Args:
        conv_w: the convolution weight.
        conv_b: its bias, or None.
        bn_rm: the BatchNorm running mean.
        bn_rv: the BatchNorm running variance.
        bn_eps: the BatchNorm epsilon.
        bn_w: the BatchNorm weight, or None.
        bn_b: the BatchNorm bias, or None.
        transpose: the weight is a transposed convolution's (output channels in dim 1).

    Returns:
        (weight, bias) as new Parameters.

    Example:
        >>> w, b = fuse_conv_bn_weights(conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.eps,
        ...                             bn.weight, bn.bias)
    """
    bias_dtype = conv_b.dtype if conv_b is not None else conv_w.dtype
    conv_b = nb.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = nb.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = nb.zeros_like(bn_rm) if bn_b is None else bn_b
    with nb.no_grad():
        rsqrt = nb.rsqrt(bn_rv + bn_eps)
        shape = [1, -1] if transpose else [-1, 1]
        shape += [1] * (len(conv_w.shape) - 2)
        weight = (conv_w * (bn_w * rsqrt).reshape(shape)).to(dtype=conv_w.dtype)
        bias = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(dtype=bias_dtype)
    return _fused_parameters(weight, bias, conv_w, conv_b)


def fuse_linear_bn_eval(linear: LinearT, bn: Module) -> LinearT:
    """A copy of `linear` computing `bn(linear(x))` of the eval-mode pair in one Linear.

    Args:
        linear: a Linear in eval mode.
        bn: a BatchNorm in eval mode with running statistics, with `linear.out_features`
            features (or 1).

    Returns:
        The fused Linear (a new module; `linear` is unchanged).

    Example:
        >>> fused = fuse_linear_bn_eval(linear.eval(), bn.eval())
    """
    _check_eval(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, "
            f"got linear.out_features={linear.out_features} and bn.num_features={bn.num_features}"
        )
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
    )
    return fused


def fuse_linear_bn_weights(
    linear_w: Tensor,
    linear_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor,
    bn_b: Tensor,
) -> tuple[Parameter, Parameter]:
    """The weight and bias of a Linear followed by an eval-mode BatchNorm, as one.

    w' = w * (bn_w / sqrt(bn_rv + eps))[:, None]; b' = (b - bn_rm) * bn_w / sqrt(bn_rv + eps)
    + bn_b (a missing Linear bias counts as 0).

    Args:
        linear_w: the Linear weight.
        linear_b: its bias, or None.
        bn_rm: the BatchNorm running mean.
        bn_rv: the BatchNorm running variance.
        bn_eps: the BatchNorm epsilon.
        bn_w: the BatchNorm weight.
        bn_b: the BatchNorm bias.

    Returns:
        (weight, bias) as new Parameters.

    Example:
        >>> w, b = fuse_linear_bn_weights(lin.weight, lin.bias, bn.running_mean, bn.running_var, bn.eps,
        ...                               bn.weight, bn.bias)
    """
    bias_dtype = linear_b.dtype if linear_b is not None else linear_w.dtype
    linear_b = nb.zeros_like(bn_rm) if linear_b is None else linear_b
    with nb.no_grad():
        scale = bn_w * nb.rsqrt(bn_rv + bn_eps)
        weight = linear_w * scale.unsqueeze(-1).to(dtype=linear_w.dtype)
        bias = ((linear_b - bn_rm) * scale + bn_b).to(dtype=bias_dtype)
    return _fused_parameters(weight, bias, linear_w, linear_b)

"""Activation functions, softmax and friends (PyTorch's `torch.nn.functional` names and defaults).

Most are thin wrappers over nabla's primitives (relu, gelu, softplus, log_softmax, ...); the rest
are short compositions whose gradients follow from them. PyTorch's `inplace=True` writes the result
into the input tensor (an in-place update, as `Tensor.copy_`) and returns it.
"""

from __future__ import annotations

import warnings
from typing import Any

import nabla as nb
from nabla import Tensor
from nabla.ops.cast import autocast_operands

from ._checks import check_float as _check_float
from ._checks import in_place as _in_place
from ._checks import number as _number

__all__ = [
    "celu",
    "elu",
    "gelu",
    "glu",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "leaky_relu",
    "log_softmax",
    "logsigmoid",
    "mish",
    "normalize",
    "prelu",
    "relu",
    "relu6",
    "rrelu",
    "selu",
    "sigmoid",
    "silu",
    "softmax",
    "softmin",
    "softplus",
    "softshrink",
    "softsign",
    "tanh",
    "tanhshrink",
    "threshold",
    "relu_",
    "elu_",
    "celu_",
    "selu_",
    "leaky_relu_",
    "hardtanh_",
    "threshold_",
    "rrelu_",
]

# SELU's constants (Klambauer et al. 2017), as PyTorch spells them.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0) elementwise.

    Args:
        input: a tensor.
        inplace: write the result into `input` and return it.

    Example:
        >>> F.relu(nb.tensor([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """
    return _in_place(input, nb.relu(input), inplace)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6) elementwise.

    Example:
        >>> F.relu6(nb.tensor([-1.0, 7.0])).tolist()
        [0.0, 6.0]
    """
    return _in_place(input, nb.relu6(input), inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x.

    Args:
        input: a floating-point tensor.
        negative_slope: slope for x <= 0 (also the gradient at 0, as PyTorch).

    Example:
        >>> F.leaky_relu(nb.tensor([-1.0, 2.0]), 0.1).tolist()
        [-0.1, 2.0]
    """
    return _in_place(input, nb.leaky_relu(input, negative_slope), inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha * (exp(x) - 1).

    Args:
        input: a floating-point tensor.
        alpha: scale of the negative branch.

    Example:
        >>> F.elu(nb.tensor([0.0, 1.0])).tolist()
        [0.0, 1.0]
    """
    return _in_place(input, nb.elu(input, alpha), inplace)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with SELU's fixed alpha ~1.6733 and scale ~1.0507.

    Example:
        >>> F.selu(nb.tensor([1.0])).tolist()  # [1.0507...]
    """
    _check_float(input, "selu")
    return _in_place(input, nb.elu(input, _SELU_ALPHA) * _SELU_SCALE, inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).

    Args:
        input: a floating-point tensor.
        alpha: nonzero scale of the negative branch.

    Example:
        >>> F.celu(nb.tensor([2.0]), alpha=0.5).tolist()
        [2.0]
    """
    _check_float(input, "celu")
    a = _number(alpha, "celu", "alpha")
    if a == 0.0:
        raise ValueError("celu: alpha must be nonzero, got 0")
    # celu(x, a) = a * elu(x / a, 1): the positive branch is a * (x / a) = x.
    return _in_place(input, nb.elu(input / a, 1.0) * a, inplace)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit x * Phi(x).

    Args:
        input: a floating-point tensor.
        approximate: "none" (exact, with erf) or "tanh" (PyTorch's tanh approximation).

    Example:
        >>> F.gelu(nb.tensor([0.0])).tolist()
        [0.0]
    """
    return nb.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (swish).

    Example:
        >>> F.silu(nb.tensor([0.0])).tolist()
        [0.0]
    """
    return _in_place(input, nb.silu(input), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x)).

    Example:
        >>> F.mish(nb.tensor([0.0])).tolist()
        [0.0]
    """
    return _in_place(input, nb.mish(input), inplace)


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-x)) elementwise.

    Example:
        >>> F.sigmoid(nb.tensor([0.0])).tolist()
        [0.5]
    """
    return nb.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent elementwise.

    Example:
        >>> F.tanh(nb.tensor([0.0])).tolist()
        [0.0]
    """
    return nb.tanh(input)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """Clamp to [min_val, max_val].

    Args:
        input: a floating-point tensor.
        min_val, max_val: the bounds; the gradient is 0 outside (min_val, max_val).

    Example:
        >>> F.hardtanh(nb.tensor([-3.0, 0.5, 3.0])).tolist()
        [-1.0, 0.5, 1.0]
    """
    return _in_place(input, nb.hardtanh(input, min_val, max_val), inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6.

    Example:
        >>> F.hardsigmoid(nb.tensor([0.0])).tolist()
        [0.5]
    """
    return _in_place(input, nb.hardsigmoid(input), inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6.

    Example:
        >>> F.hardswish(nb.tensor([3.0])).tolist()
        [3.0]
    """
    return _in_place(input, nb.hardswish(input), inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, and x where beta * x > threshold.

    Args:
        input: a floating-point tensor.
        beta: nonzero sharpness.
        threshold: above beta * x > threshold the result is x (linear regime).

    Example:
        >>> F.softplus(nb.tensor([100.0])).tolist()
        [100.0]
    """
    return nb.softplus(input, beta, threshold)


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|) elementwise.

    Example:
        >>> F.softsign(nb.tensor([1.0])).tolist()
        [0.5]
    """
    _check_float(input, "softsign")
    return input / (nb.abs(input) + 1.0)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x) elementwise.

    Example:
        >>> F.tanhshrink(nb.tensor([0.0])).tolist()
        [0.0]
    """
    _check_float(input, "tanhshrink")
    return input - nb.tanh(input)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0.

    Args:
        input: a floating-point tensor.
        lambd: the dead-zone half width.

    Example:
        >>> F.hardshrink(nb.tensor([-1.0, 0.2, 1.0])).tolist()
        [-1.0, 0.0, 1.0]
    """
    _check_float(input, "hardshrink")
    lam = _number(lambd, "hardshrink", "lambd")
    dead = nb.logical_and(input >= -lam, input <= lam)  # (NaN is outside: it passes, as torch)
    return nb.where(dead, nb.zeros_like(input), input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0.

    Args:
        input: a floating-point tensor.
        lambd: the shrinkage, >= 0.

    Example:
        >>> F.softshrink(nb.tensor([-1.0, 0.2, 1.0])).tolist()
        [-0.5, 0.0, 0.5]
    """
    _check_float(input, "softshrink")
    lam = _number(lambd, "softshrink", "lambd")
    if lam < 0:
        raise ValueError(f"softshrink: lambd must be greater or equal to 0, got {lambd}")
    dead = nb.logical_and(input >= -lam, input <= lam)  # (NaN is outside: it passes, as torch)
    return nb.where(dead, nb.zeros_like(input), input - nb.sign(input) * lam)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), stable for large |x|.

    Example:
        >>> F.logsigmoid(nb.tensor([0.0])).tolist()  # [-0.6931...]
    """
    return nb.logsigmoid(input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else `value`.

    Args:
        input: a tensor.
        threshold: the cut-off.
        value: what replaces entries <= threshold.

    Example:
        >>> F.threshold(nb.tensor([0.5, 2.0]), 1.0, -1.0).tolist()
        [-1.0, 2.0]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"threshold: input must be a Tensor, got {type(input).__name__}")
    th, v = _number(threshold, "threshold", "threshold"), _number(value, "threshold", "value")
    # x <= threshold, not x > threshold: NaN passes through, as torch
    return _in_place(input, nb.where(input <= th, nb.full_like(input, v), input), inplace)


def rrelu(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False
) -> Tensor:
    """Randomized leaky ReLU: in training each negative entry is scaled by a slope drawn uniformly
    from [lower, upper]; in evaluation the slope is (lower + upper) / 2.

    Args:
        input: a floating-point tensor.
        lower, upper: the range of the random slope.
        training: draw random slopes (True) or use their mean (False).

    Example:
        >>> F.rrelu(nb.tensor([-1.0, 1.0])).tolist()  # eval: slope 11/48
        [-0.2291..., 1.0]
    """
    _check_float(input, "rrelu")
    lo, hi = _number(lower, "rrelu", "lower"), _number(upper, "rrelu", "upper")
    if lo > hi:
        raise ValueError(f"rrelu: lower={lower} must not be greater than upper={upper}")
    if not training:
        return _in_place(input, nb.leaky_relu(input, (lo + hi) / 2), inplace)
    slope = nb.uniform(input.shape, lo, hi, dtype=input.dtype)
    return _in_place(input, nb.where(input >= 0, input, input * slope), inplace)


def _softmax_dim(op: str, ndim: int, dim: Any) -> int:
    """PyTorch's choice when `dim` is omitted (deprecated there too, with the same warning)."""
    if dim is not None:
        return dim
    warnings.warn(f"{op}: implicit dimension choice is deprecated (as in PyTorch); pass dim= explicitly", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def _as_dtype(input: Tensor, dtype: Any, op: str) -> Tensor:
    if dtype is not None:
        if not isinstance(input, Tensor):
            raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
        input = nb.cast(input, dtype)
    _check_float(input, op)
    return input


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`, computed stably.

    Args:
        input: a floating-point tensor.
        dim: the dimension to normalize over (omitting it picks PyTorch's legacy default, with a warning).
        dtype: cast the input to this dtype first.

    Example:
        >>> F.softmax(nb.tensor([0.0, 0.0]), dim=0).tolist()
        [0.5, 0.5]
    """
    x = _as_dtype(input, dtype, "softmax")
    return nb.softmax(x, axis=_softmax_dim("softmax", x.ndim, dim))


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """x - logsumexp(x) along `dim`, computed stably (nabla's log_softmax primitive).

    Args:
        input: a floating-point tensor.
        dim: the dimension to normalize over (omitting it picks PyTorch's legacy default, with a warning).
        dtype: cast the input to this dtype first.

    Example:
        >>> F.log_softmax(nb.tensor([0.0, 0.0]), dim=0).tolist()  # [-0.6931..., -0.6931...]
    """
    x = _as_dtype(input, dtype, "log_softmax")
    return nb.log_softmax(x, axis=_softmax_dim("log_softmax", x.ndim, dim))


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """softmax(-x) along `dim`.

    Args:
        input: a floating-point tensor.
        dim: the dimension to normalize over.
        dtype: cast the input to this dtype first.

    Example:
        >>> F.softmin(nb.tensor([0.0, 0.0]), dim=0).tolist()
        [0.5, 0.5]
    """
    x = _as_dtype(input, dtype, "softmin")
    return nb.softmax(-x, axis=_softmax_dim("softmin", x.ndim, dim))


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: a * sigmoid(b), where a and b are the two halves of `input` along `dim`.

    Args:
        input: a floating-point tensor whose size along `dim` is even.
        dim: the dimension to split.

    Example:
        >>> F.glu(nb.ones(2, 4)).shape
        (2, 2)
    """
    _check_float(input, "glu")
    if input.ndim == 0:
        raise ValueError("glu: does not support scalars because halving size must be even")
    d = dim + input.ndim if dim < 0 else dim
    if not 0 <= d < input.ndim:
        raise IndexError(f"glu: dim={dim} is out of range for a tensor of rank {input.ndim}")
    if input.shape[d] % 2:
        raise ValueError(f"glu: halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    a, b = nb.split(input, input.shape[d] // 2, axis=d)
    return a * nb.sigmoid(b)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else weight * x, with a learned slope per channel (dim 1).

    Args:
        input: a floating-point tensor.
        weight: a tensor of 1 element (shared slope) or of `input.shape[1]` elements (a 1-D or
            0-D input has one channel).

    Example:
        >>> F.prelu(nb.tensor([[-1.0, -1.0]]), nb.tensor([0.1, 0.2])).tolist()
        [[-0.1, -0.2]]
    """
    _check_float(input, "prelu")
    _check_float(weight, "prelu", "weight")
    if weight.ndim > 1:
        raise ValueError(f"prelu: weight must be a 0-d or 1-d tensor, got shape {weight.shape}")
    channels = input.shape[1] if input.ndim >= 2 else 1  # PyTorch: a 1-D input has one channel
    n = weight.numel()
    if n != 1 and n != channels:
        raise ValueError(
            f"prelu: mismatch in parameter numbers: weight has {n} elements, input has {channels} "
            f"channels (input shape {input.shape}); weight must have 1 element or one per channel"
        )
    input, weight = autocast_operands(input, weight)  # (on torch's autocast list)
    w = nb.reshape(weight, (n,) + (1,) * (input.ndim - 2) if n != 1 else ())
    return nb.where(input > 0, input, input * w)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Any = None) -> Tensor:
    """x / max(||x||_p, eps) along `dim` (L_p normalization).

    Args:
        input: a floating-point tensor.
        p: the norm's exponent.
        dim: the dimension (or tuple of dimensions) to normalize over.
        eps: lower bound of the denominator.
        out: not supported (results are new tensors); must be None.

    Example:
        >>> F.normalize(nb.tensor([[3.0, 4.0]])).tolist()
        [[0.6, 0.8]]
    """
    _check_float(input, "normalize")
    if out is not None:
        raise NotImplementedError("normalize: out= is not supported; use the returned tensor")
    e = _number(eps, "normalize", "eps")
    norm = nb.norm(input, _number(p, "normalize", "p"), axis=dim, keepdims=True)
    return input / nb.clamp(norm, min=e)


# -- PyTorch's in-place spellings: the same functions with inplace=True ---------------------------
_threshold = threshold  # (threshold_'s argument of the same name hides it)


def relu_(input: Tensor) -> Tensor:
    return relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    return selu(input, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return _threshold(input, threshold, value, inplace=True)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, inplace=True)

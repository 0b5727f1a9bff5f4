"""Activation layers (PyTorch's `torch.nn.modules.activation`, except MultiheadAttention,
which lives in `attention.py`). Each forwards to `nabla_nn.functional`."""

from __future__ import annotations

from typing import Any

from nabla import Tensor

from .. import functional as F
from .. import init
from ..module import Module
from .linear import empty_parameter

__all__ = [
    "CELU",
    "ELU",
    "GELU",
    "GLU",
    "SELU",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LeakyReLU",
    "LogSigmoid",
    "LogSoftmax",
    "Mish",
    "PReLU",
    "ReLU",
    "ReLU6",
    "RReLU",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Softmax2d",
    "Softmin",
    "Softplus",
    "Softshrink",
    "Softsign",
    "Tanh",
    "Tanhshrink",
    "Threshold",
]


class _Inplace(Module):
    """An activation whose only option is `inplace` (repr shows it only when True)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


def _inplace_str(inplace: bool) -> str:
    return ", inplace=True" if inplace else ""


class ReLU(_Inplace):
    """max(0, x), elementwise.

    Args:
        inplace: write the result into the input tensor.

    Example:
        >>> nn.ReLU()(nb.tensor([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)


class SELU(_Inplace):
    """scale * (max(0, x) + min(0, alpha * (exp(x) - 1))) with PyTorch's constants.

    Args:
        inplace: write the result into the input tensor.

    Example:
        >>> nn.SELU()(nb.randn(2)).shape
        (2,)
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.selu(input, self.inplace)


class SiLU(_Inplace):
    """x * sigmoid(x) (Swish).

    Args:
        inplace: write the result into the input tensor.

    Example:
        >>> nn.SiLU()(nb.randn(2)).shape
        (2,)
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, inplace=self.inplace)


class Mish(_Inplace):
    """x * tanh(softplus(x)).

    Args:
        inplace: write the result into the input tensor.

    Example:
        >>> nn.Mish()(nb.randn(2)).shape
        (2,)
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input, inplace=self.inplace)


class Hardsigmoid(_Inplace):
    """relu6(x + 3) / 6.

    Args:
        inplace: write the result into the input tensor.

    Example:
        >>> nn.Hardsigmoid()(nb.tensor([0.0])).tolist()
        [0.5]
    """

    def extra_repr(self) -> str:
        return ""

    def forward(self, input: Tensor) -> Tensor:
        return F.hardsigmoid(input, self.inplace)


class Hardswish(_Inplace):
    """x * relu6(x + 3) / 6.

    Args:
        inplace: write the result into the input tensor.

    Example:
        >>> nn.Hardswish()(nb.tensor([3.0])).tolist()
        [3.0]
    """

    def extra_repr(self) -> str:
        return ""

    def forward(self, input: Tensor) -> Tensor:
        return F.hardswish(input, self.inplace)


class Hardtanh(Module):
    """clamp(x, min_val, max_val).

    Args:
        min_val: lower bound (default -1).
        max_val: upper bound (default 1).
        inplace: write the result into the input tensor.

    Example:
        >>> nn.Hardtanh(-2, 2)(nb.tensor([-3.0, 0.5, 3.0])).tolist()
        [-2.0, 0.5, 2.0]
    """

    def __init__(
        self,
        min_val: float = -1.0,
        max_val: float = 1.0,
        inplace: bool = False,
        min_value: float | None = None,
        max_value: float | None = None,
    ) -> None:
        super().__init__()
        self.min_val = min_val if min_value is None else min_value  # min_value/max_value: deprecated names
        self.max_val = max_val if max_value is None else max_value
        self.inplace = inplace
        if not self.max_val > self.min_val:
            raise ValueError(f"Hardtanh: max_val ({self.max_val}) must be greater than min_val ({self.min_val})")

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """min(max(0, x), 6).

    Args:
        inplace: write the result into the input tensor.

    Example:
        >>> nn.ReLU6()(nb.tensor([-1.0, 7.0])).tolist()
        [0.0, 6.0]
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """max(0, x) + negative_slope * min(0, x).

    Args:
        negative_slope: slope for x < 0 (default 0.01).
        inplace: write the result into the input tensor.

    Example:
        >>> nn.LeakyReLU(0.1)(nb.tensor([-2.0, 2.0])).tolist()
        [-0.20000000298023224, 2.0]
    """

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class RReLU(Module):
    """Randomized leaky ReLU: in training mode each negative entry is scaled by a slope drawn
    from U(lower, upper); in eval mode the slope is (lower + upper) / 2.

    Args:
        lower: lower bound of the slope (default 1/8).
        upper: upper bound of the slope (default 1/3).
        inplace: write the result into the input tensor.

    Example:
        >>> nn.RReLU(0.1, 0.3).eval()(nb.tensor([-1.0, 1.0])).tolist()
        [-0.20000000298023224, 1.0]
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class _AlphaActivation(Module):
    """ELU's and CELU's arguments (siblings, as in torch: a CELU is not an ELU)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class ELU(_AlphaActivation):
    """x for x > 0, alpha * (exp(x) - 1) otherwise.

    Args:
        alpha: the saturation value for negative inputs (default 1).
        inplace: write the result into the input tensor.

    Example:
        >>> nn.ELU()(nb.randn(2)).shape
        (2,)
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)


class CELU(_AlphaActivation):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).

    Args:
        alpha: the saturation value for negative inputs (default 1).
        inplace: write the result into the input tensor.

    Example:
        >>> nn.CELU(2.0)(nb.randn(2)).shape
        (2,)
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)


class GELU(Module):
    """x * Phi(x), Phi the standard normal CDF ("tanh" uses the tanh approximation).

    Args:
        approximate: "none" (exact, default) or "tanh".

    Example:
        >>> nn.GELU(approximate="tanh")(nb.randn(2)).shape
        (2,)
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class _NoArgs(Module):
    """An activation without options."""

    def __init__(self) -> None:
        super().__init__()


class Sigmoid(_NoArgs):
    """1 / (1 + exp(-x)).

    Example:
        >>> nn.Sigmoid()(nb.tensor([0.0])).tolist()
        [0.5]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class Tanh(_NoArgs):
    """tanh(x).

    Example:
        >>> nn.Tanh()(nb.tensor([0.0])).tolist()
        [0.0]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Softsign(_NoArgs):
    """x / (1 + |x|).

    Example:
        >>> nn.Softsign()(nb.tensor([1.0])).tolist()
        [0.5]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class Tanhshrink(_NoArgs):
    """x - tanh(x).

    Example:
        >>> nn.Tanhshrink()(nb.tensor([0.0])).tolist()
        [0.0]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)


class LogSigmoid(_NoArgs):
    """log(sigmoid(x)), computed stably.

    Example:
        >>> nn.LogSigmoid()(nb.randn(2)).shape
        (2,)
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear where beta * x > threshold.

    Args:
        beta: sharpness (default 1).
        threshold: above beta * x = threshold the identity is used (default 20).

    Example:
        >>> nn.Softplus()(nb.randn(2)).shape
        (2,)
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class _Shrink(Module):
    """Hardshrink's and Softshrink's threshold (siblings, as in torch)."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """x where |x| > lambd, else 0.

    Args:
        lambd: the threshold (default 0.5).

    Example:
        >>> nn.Hardshrink()(nb.tensor([0.3, -1.0])).tolist()
        [0.0, -1.0]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)


class Softshrink(_Shrink):
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0.

    Args:
        lambd: the threshold, non-negative (default 0.5).

    Example:
        >>> nn.Softshrink()(nb.tensor([0.3, -1.0])).tolist()
        [0.0, -0.5]
    """

    def __init__(self, lambd: float = 0.5) -> None:
        if lambd < 0:
            raise ValueError(f"lambda must be no less than zero, but got {lambd}")
        super().__init__(lambd)

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)


class Threshold(Module):
    """x where x > threshold, else value.

    Args:
        threshold: the threshold.
        value: the replacement for x <= threshold.
        inplace: write the result into the input tensor.

    Example:
        >>> nn.Threshold(0.1, 20.0)(nb.tensor([0.0, 1.0])).tolist()
        [20.0, 1.0]
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class PReLU(Module):
    """max(0, x) + weight * min(0, x) with a learned slope `weight`.

    Args:
        num_parameters: 1 (one slope shared by all channels) or the channel count C
            (dim 1 of the input).
        init: initial slope (default 0.25).

    Example:
        >>> m = nn.PReLU(3)
        >>> m(nb.randn(2, 3, 4)).shape, m.weight.shape
        ((2, 3, 4), (3,))
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if isinstance(num_parameters, bool) or not isinstance(num_parameters, int) or num_parameters < 1:
            raise ValueError(f"PReLU: num_parameters must be a positive int, got {num_parameters!r}")
        self.num_parameters = num_parameters
        self.init = init
        self.weight = empty_parameter((num_parameters,), dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every slope = init."""
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        n = self.num_parameters
        if n != 1 and (input.ndim < 2 or input.shape[1] != n) and not (input.ndim == 1 and input.shape[0] == n):
            raise self.input_error(input.shape, f"(N, {n}, *) or ({n},)")
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    """a * sigmoid(b), where a and b are the two halves of the input along `dim`.

    Args:
        dim: the dimension to split (default -1); its size must be even.

    Example:
        >>> nn.GLU()(nb.randn(4, 2)).shape
        (4, 1)
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim == 0 or not -input.ndim <= self.dim < input.ndim or input.shape[self.dim] % 2:
            raise self.input_error(input.shape, f"a tensor whose dim {self.dim} has an even size")
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _SoftmaxBase(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """exp(x) / sum(exp(x)) along `dim`.

    Args:
        dim: the dimension to normalize (None: PyTorch's legacy choice, 0 for 0-, 1- and 3-D
            input, else 1).

    Example:
        >>> nn.Softmax(dim=1)(nb.zeros(2, 4)).tolist()[0]
        [0.25, 0.25, 0.25, 0.25]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)


class Softmin(_SoftmaxBase):
    """softmax(-x) along `dim`.

    Args:
        dim: the dimension to normalize.

    Example:
        >>> nn.Softmin(dim=1)(nb.zeros(2, 4)).tolist()[0]
        [0.25, 0.25, 0.25, 0.25]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim)


class LogSoftmax(_SoftmaxBase):
    """log(softmax(x)) along `dim`, computed stably.

    Args:
        dim: the dimension to normalize.

    Example:
        >>> nn.LogSoftmax(dim=1)(nb.randn(2, 3)).shape
        (2, 3)
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)


class Softmax2d(_NoArgs):
    """Softmax over the channel dim of (N, C, H, W) or (C, H, W) input.

    Example:
        >>> nn.Softmax2d()(nb.randn(2, 3, 12, 13)).shape
        (2, 3, 12, 13)
    """

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise self.input_error(input.shape, "(N, C, H, W) or (C, H, W)")
        return F.softmax(input, -3)

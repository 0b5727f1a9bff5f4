"""Linear layers: Identity, Linear, NonDynamicallyQuantizableLinear, Bilinear (PyTorch's
`torch.nn.modules.linear`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nabla import Tensor
from nabla.core.common import dtypes as _dt

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter, placed

__all__ = ["Bilinear", "Identity", "Linear", "NonDynamicallyQuantizableLinear"]


def _float_dtype(dtype: Any, arg: str = "dtype") -> Any:
    """The parameter dtype (float32 unless given); integer dtypes cannot be trained."""
    dt = _dt.DEFAULT_FLOAT if dtype is None else _dt.as_dtype(dtype, arg=arg)
    if not _dt.is_float(dt):
        raise TypeError(f"{arg} must be a floating dtype for parameters, got {dt.name}")
    return dt


def empty_parameter(shape: tuple[int, ...], dtype: Any = None, device: Any = None) -> Parameter:
    """A realized zero-filled Parameter of `shape` on `device`, for `reset_parameters` to fill."""
    dt = _float_dtype(dtype)
    return Parameter(placed(Tensor.from_numpy(np.zeros(shape, dtype=np.float32), dtype=dt), device))


def realized_buffer(values: np.ndarray, dtype: Any = None, device: Any = None) -> Tensor:
    """A realized buffer tensor holding `values` (in `dtype` when given) on `device`."""
    return placed(Tensor.from_numpy(np.asarray(values), dtype=None if dtype is None else _dt.as_dtype(dtype)), device)


def _check_positive(value: Any, name: str, cls: str, allow_zero: bool = True) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if allow_zero else 1):
        kind = "a non-negative" if allow_zero else "a positive"
        raise ValueError(f"{cls}: {name} must be {kind} int, got {value!r}")


class Identity(Module):
    """A placeholder that returns its input unchanged (any constructor arguments are ignored).

    Example:
        >>> nn.Identity(54, unused="x")(nb.ones(2, 3)).shape
        (2, 3)
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """Affine map `y = x @ weight.T + bias` on the last dimension.

    Args:
        in_features: size of each input's last dimension.
        out_features: size of each output's last dimension.
        bias: whether to learn an additive bias.
        device: where the parameters live ("cpu", "gpu", "cuda:N"; default the CPU).
        dtype: parameter dtype (float32 by default).

    Shape:
        input `(*, in_features)`, output `(*, out_features)`; `weight` is
        `(out_features, in_features)`, `bias` `(out_features,)`, as in PyTorch.

    Example:
        >>> m = nn.Linear(20, 30)
        >>> m(nb.randn(128, 20)).shape
        (128, 30)
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        _check_positive(in_features, "in_features", "Linear")
        _check_positive(out_features, "out_features", "Linear")
        self.in_features = in_features
        self.out_features = out_features
        self.weight = empty_parameter((out_features, in_features), dtype, device)
        if bias:
            self.bias = empty_parameter((out_features,), dtype, device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform_(a=sqrt(5)) weight, U(+-1/sqrt(fan_in)) bias."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        if not isinstance(input, Tensor):  # a list or NumPy array: name the layer, not `.ndim`
            raise self.input_type_error(input)
        if input.ndim < 1 or input.shape[-1] != self.in_features:
            raise self.input_error(input.shape, f"(*, {self.in_features})")
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """A `Linear` under another name: PyTorch's MultiheadAttention `out_proj` class (its name
    keeps that layer out of dynamic quantization there), so models print and match as in
    PyTorch. Same arguments, parameters and forward as `Linear`.

    Example:
        >>> nn.NonDynamicallyQuantizableLinear(8, 8)
        NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)
    """


class Bilinear(Module):
    """Bilinear map `y[..., k] = x1 @ weight[k] @ x2 + bias[k]`.

    Args:
        in1_features: size of the first input's last dimension.
        in2_features: size of the second input's last dimension.
        out_features: size of the output's last dimension.
        bias: whether to learn an additive bias.

    Shape:
        inputs `(*, in1_features)` and `(*, in2_features)` with equal leading dims, output
        `(*, out_features)`; `weight` is `(out_features, in1_features, in2_features)`.

    Example:
        >>> m = nn.Bilinear(20, 30, 40)
        >>> m(nb.randn(128, 20), nb.randn(128, 30)).shape
        (128, 40)
    """

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        for name, value in (("in1_features", in1_features), ("in2_features", in2_features)):
            _check_positive(value, name, "Bilinear")
        _check_positive(out_features, "out_features", "Bilinear")
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = empty_parameter((out_features, in1_features, in2_features), dtype, device)
        if bias:
            self.bias = empty_parameter((out_features,), dtype, device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: weight and bias from U(+-1/sqrt(in1_features))."""
        bound = 1 / math.sqrt(self.weight.shape[1]) if self.weight.shape[1] > 0 else 0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        ok = (
            input1.ndim >= 1
            and input1.shape[-1] == self.in1_features
            and input2.ndim == input1.ndim
            and input2.shape[-1] == self.in2_features
            and input1.shape[:-1] == input2.shape[:-1]
        )
        if not ok:
            raise self.input_error(
                (input1.shape, input2.shape), f"((*, {self.in1_features}), (*, {self.in2_features})) with equal *"
            )
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )

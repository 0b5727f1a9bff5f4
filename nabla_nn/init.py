"""Parameter initialisation (PyTorch's `torch.nn.init`), in place and without autodiff.

Values are drawn on the host from nabla's global generator (`nabla.manual_seed` makes them
repeat) and swapped into the tensor already realized, so a new model holds plain buffers and
its first training step has the same graph as every later one. No graph is built or compiled.

Example:
    >>> w = nn.Parameter(nb.empty(64, 32))
    >>> init.kaiming_uniform_(w, a=math.sqrt(5))   # what nn.Linear does
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from nabla import Tensor, no_grad
from nabla.core.common import dtypes as _dt
from nabla.ops.random_state import generator_arg
from nabla.ops.special import _on_numpy
from nabla.ops.special_erf import _ndtri_formula

__all__ = [
    "calculate_gain",
    "constant_",
    "dirac_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "orthogonal_",
    "sparse_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]


def _rng(generator: Any = None) -> np.random.Generator:
    # The same draw a `nabla.uniform`/`normal` op makes on the NumPy executor: one seed from
    # the generator (torch's `generator=`: a nabla.Generator; the global one by default) per call.
    return np.random.default_rng(int(generator_arg(generator, "init").next_seed_array()[0]))


def _assign(tensor: Tensor, values: np.ndarray) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"init: expected a Tensor, got {type(tensor).__name__}")
    storage = np.ascontiguousarray(np.broadcast_to(values, tensor.shape), dtype=_dt.to_numpy_dtype(tensor.dtype))
    value = Tensor.from_numpy(storage, dtype=tensor.dtype).to(tensor.device)  # in place: on its device
    if tensor._is_view():  # `init.zeros_(w[0])`: written into w, as PyTorch's in-place init does
        with no_grad():
            tensor.copy_(value)
    else:
        tensor.data = value
    return tensor


def _check_float(tensor: Tensor, fn: str) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{fn}: expected a Tensor, got {type(tensor).__name__}")
    if not _dt.is_float(tensor.dtype):
        raise TypeError(f"{fn}: tensor must have a floating dtype, got {tensor.dtype.name}")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table), e.g. sqrt(2) for relu."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, int | float):
            raise ValueError(f"negative_slope {slope} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError(
            f"Fan in and fan out can not be computed for a tensor with fewer than 2 dimensions (shape {tensor.shape})"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


_calculate_correct_fan = _fan  # torch's private name, which some initialization code calls


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with samples from U(a, b)."""
    _check_float(tensor, "uniform_")
    if a > b:
        raise RuntimeError(f"uniform_: expects a range [a, b) with a <= b, got a={a} > b={b}")
    return _assign(tensor, _rng(generator).uniform(a, b, size=tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with samples from N(mean, std^2)."""
    _check_float(tensor, "normal_")
    if std < 0:
        raise RuntimeError(f"normal_: expects std >= 0.0, got std={std}")
    return _assign(tensor, _rng(generator).normal(mean, std, size=tensor.shape))


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator: Any = None
) -> Tensor:
    """Fill with N(mean, std^2) samples truncated to [a, b], by torch's inverse-CDF method: p
    uniform in [Phi(a'), Phi(b')] (a', b' standardized), mapped back through the normal
    quantile and clamped to [a, b]. An interval far in a tail takes no longer than any other:
    the upper tail is mirrored into the lower one, where Phi and its inverse keep precision."""
    _check_float(tensor, "trunc_normal_")
    if not a < b:
        raise ValueError(f"trunc_normal_: a={a} must be less than b={b}")
    if not std >= 0:
        raise ValueError(f"trunc_normal_: std must be non-negative, got std={std}")
    rng = _rng(generator)
    if std == 0:
        return _assign(tensor, np.clip(np.full(tensor.shape, float(mean)), a, b))
    lo, hi = (a - mean) / std, (b - mean) / std
    flip = lo > 0  # (upper tail: draw -z from [-hi, -lo])
    if flip:
        lo, hi = -hi, -lo
    if _normal_cdf(hi) > 0:
        p = rng.uniform(_normal_cdf(lo), _normal_cdf(hi), size=tensor.shape)
        z = _on_numpy(_ndtri_formula, np.asarray(p, dtype=np.float64))
    else:  # beyond float64's Phi (hi < -37): the density there is ~ exp(hi * (hi - z)), an exponential
        z = np.maximum(hi - rng.exponential(-1.0 / hi, size=tensor.shape), lo)
    values = mean + std * (-z if flip else z)
    return _assign(tensor, np.clip(values, a, b))


def _normal_cdf(x: float) -> float:
    """Phi(x), accurate in the lower tail (erfc keeps relative precision there)."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def constant_(tensor: Tensor, val: float) -> Tensor:
    return _assign(tensor, np.asarray(val))


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix."""
    if tensor.ndim != 2:
        raise ValueError(f"eye_: only tensors with 2 dimensions are supported, got shape {tensor.shape}")
    return _assign(tensor, np.eye(*tensor.shape))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-5-D conv weight with the Dirac delta (the conv passes its input through)."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"dirac_: only tensors with 3, 4, or 5 dimensions are supported, got shape {tensor.shape}")
    if tensor.shape[0] % groups:
        raise ValueError(f"dirac_: dim 0 of the weight (shape {tensor.shape}) must be divisible by groups={groups}")
    out_per_group = tensor.shape[0] // groups
    min_dim = min(out_per_group, tensor.shape[1])
    values = np.zeros(tensor.shape)
    centre = tuple(s // 2 for s in tensor.shape[2:])
    for g in range(groups):
        for d in range(min_dim):
            values[(g * out_per_group + d, d, *centre)] = 1
    return _assign(tensor, values)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator: Any = None
) -> Tensor:
    """He uniform: U(-b, b) with b = gain * sqrt(3 / fan). `nn.Linear` and `nn.Conv*` use
    `a=sqrt(5)`, which gives U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    if isinstance(tensor, Tensor) and 0 in tensor.shape:  # (before the fans, as torch: even a 1-d one)
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _fan(tensor, mode)
    if fan == 0:
        return tensor
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator: Any = None
) -> Tensor:
    """He normal: N(0, std^2) with std = gain / sqrt(fan)."""
    if isinstance(tensor, Tensor) and 0 in tensor.shape:  # (before the fans, as torch: even a 1-d one)
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _fan(tensor, mode)
    if fan == 0:
        return tensor
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix (trailing dims flattened), scaled by `gain`."""
    _check_float(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: only tensors with 2 or more dimensions are supported, got {tensor.shape}")
    rows = tensor.shape[0]
    cols = tensor.numel() // rows if rows else 0
    flat = _rng(generator).normal(0.0, 1.0, size=(rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))  # makes the decomposition unique (uniform over orthogonal matrices)
    if rows < cols:
        q = q.T
    return _assign(tensor, gain * q.reshape(tensor.shape))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Any = None) -> Tensor:
    """Fill a 2-D tensor as a sparse matrix (Martens, 2010): N(0, std^2) values, with
    `ceil(sparsity * rows)` random entries of each column set to zero.

    Args:
        tensor: a 2-D floating tensor.
        sparsity: the fraction of each column's entries set to zero.
        std: the standard deviation of the non-zero values.

    Example:
        >>> init.sparse_(nn.Parameter(nb.empty(3, 5)), sparsity=0.1)
    """
    _check_float(tensor, "sparse_")
    if tensor.ndim != 2:
        raise ValueError(f"sparse_: only tensors with 2 dimensions are supported, got shape {tensor.shape}")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    rng = _rng(generator)
    values = rng.normal(0.0, std, size=(rows, cols))
    for col in range(cols):
        values[rng.permutation(rows)[:num_zeros], col] = 0.0
    return _assign(tensor, values)


def _deprecated(init: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """PyTorch's pre-0.4 name of an initialiser (no trailing underscore): warns, then runs it."""
    old_name = init.__name__[:-1]

    def deprecated_init(*args: object, **kwargs: object) -> Tensor:
        warnings.warn(
            f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{init.__name__}`.",
            FutureWarning,
            stacklevel=2,
        )
        return init(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = f"Deprecated alias of `{init.__name__}` (PyTorch's old name)."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)

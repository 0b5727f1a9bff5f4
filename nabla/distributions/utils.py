"""Helpers shared by the distributions (torch.distributions.utils' names)."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import numpy as np

from .. import ops
from ..core.common import dtypes as _dt
from ..core.tensor import Size, Tensor
from ..ops.creation import known_values
from ..ops.random_state import next_seed_array
from ..torch_functions import broadcast_tensors

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits"]


_SAME_VALUES = ("broadcast_to", "reshape", "cast")  # ops whose result holds the input's values


def known_host(value: Any) -> np.ndarray | None:
    """The values of `value` a validation can check without evaluating anything: a realized
    host tensor, or one seen through broadcasts, reshapes and casts (a number parameter
    broadcast to a tensor's shape). None for anything else: its check is skipped."""
    if isinstance(value, int | float):
        return np.asarray(value)
    if not isinstance(value, Tensor):
        return None
    impl, chain = value._impl, []
    while impl.data is None:
        node = impl.output_refs
        if node is None or node.op.name not in _SAME_VALUES:
            return None
        chain.append(node)
        impl = node.args[0]
    known = known_values(Tensor(impl))
    for node in reversed(chain):
        if known is None:
            return None
        if node.op.name == "broadcast_to":
            known = np.broadcast_to(known, node.kwargs["shape"])
        elif node.op.name == "reshape":
            known = known.reshape(node.kwargs["shape"])
        else:
            known = known.astype(_dt.to_numpy_dtype(node.kwargs["dtype"]))
    return known


def _finfo(dtype: Any) -> np.finfo:
    return np.finfo(np.float32 if dtype == _dt.bfloat16 else _dt.to_numpy_dtype(dtype))


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Broadcast tensors and Python numbers to one shape; numbers become tensors of the first
    tensor's dtype (the default float dtype when there is none), as torch's `broadcast_all`.

    Example:
        >>> loc, scale = broadcast_all(nabla.zeros(3), 1.0)
        >>> scale.shape
        (3,)
    """
    for v in values:
        if not isinstance(v, Tensor | Number) or isinstance(v, bool):
            raise ValueError(
                f"Input arguments must all be instances of numbers.Number or Tensor, got {type(v).__name__}"
            )
    first = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = first.dtype if first is not None and _dt.is_float(first.dtype) else _dt.DEFAULT_FLOAT
    tensors = [v if isinstance(v, Tensor) else ops.tensor(float(v), dtype=dtype) for v in values]
    return tuple(broadcast_tensors(*tensors))


def as_float_tensor(value: Any, name: str) -> Tensor:
    """A parameter given as a number or tensor, as a floating tensor."""
    if isinstance(value, Tensor):
        return value if _dt.is_float(value.dtype) else value.astype(_dt.DEFAULT_FLOAT)
    if isinstance(value, Number) and not isinstance(value, bool):
        return ops.tensor(float(value))
    raise TypeError(f"{name} must be a Tensor or a number, got {type(value).__name__}")


def clamp_probs(probs: Tensor) -> Tensor:
    """Clamp probabilities into [eps, 1 - eps] of their dtype (keeps their logs finite)."""
    eps = float(_finfo(probs.dtype).eps)
    return ops.clamp(probs, eps, 1.0 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Sigmoid of binary logits, or softmax over the last dim of categorical logits."""
    return ops.sigmoid(logits) if is_binary else ops.softmax(logits, -1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits of (clamped) probabilities: log(p) - log1p(-p) for binary, log(p) otherwise."""
    p = clamp_probs(probs)
    return ops.sub(ops.log(p), ops.log1p(ops.neg(p))) if is_binary else ops.log(p)


def bce_with_logits(logits: Tensor, target: Tensor) -> Tensor:
    """Elementwise binary cross entropy of logits, max(l, 0) - l * t + log1p(exp(-|l|))."""
    return ops.add(
        ops.sub(ops.maximum(logits, 0.0), ops.mul(logits, target)), ops.log1p(ops.exp(ops.neg(ops.abs(logits))))
    )


def sum_rightmost(value: Any, dim: int) -> Any:
    """Sum out the `dim` rightmost dims of `value` (a number is returned as is)."""
    if dim == 0 or not isinstance(value, Tensor):
        return value
    return ops.sum(value, tuple(range(-dim, 0)))


def size(shape: Any) -> Size:
    """A sample_shape / batch_shape argument as a `Size` (an int is a 1-D shape)."""
    if isinstance(shape, int | np.integer):
        return Size((int(shape),))
    try:
        dims = tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"expected a shape (a tuple of ints), got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"shape dims must be non-negative, got {dims}")
    return Size(dims)


def support_values(values: Tensor, batch_shape: Any, expand: bool) -> Tensor:
    """`enumerate_support`'s result from the support's `values` (one per point along dim 0,
    then any event dims): a dim of size 1 per batch dim is put before the event dims, and
    broadcast to `batch_shape` when `expand`.

    Example:
        >>> support_values(nabla.arange(2), (3,), expand=True).shape
        (2, 3)
    """
    n, event = values.shape[0], tuple(values.shape[1:])
    values = values.reshape((n,) + (1,) * len(batch_shape) + event)
    return ops.broadcast_to(values, (n, *batch_shape, *event)) if expand else values


def numel(shape: tuple) -> int:
    return math.prod(shape)


def host_values(x: Tensor) -> np.ndarray:
    """`x`'s values on the host (computes them if pending), for draws NumPy makes."""
    known = known_values(x)
    return known if known is not None else x.numpy()


def host_rng() -> np.random.Generator:
    """A NumPy generator seeded from nabla's global generator (`nabla.manual_seed` repeats it)."""
    return np.random.default_rng(int(next_seed_array()[0]))


class lazy_property:  # noqa: N801 (torch's name)
    """A property computed once on first access, then stored on the instance (torch's
    `lazy_property`: `probs` and `logits` of a distribution given the other)."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


def probs_or_logits(probs: Any, logits: Any) -> tuple[str, Any]:
    """The name and value of whichever of `probs` and `logits` was given (exactly one must be).

    Example:
        >>> probs_or_logits(None, nabla.zeros(3))[0]
        'logits'
    """
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return ("probs", probs) if probs is not None else ("logits", logits)


class ProbsLogits:
    """Mixin of the distributions made from either `probs` or `logits` (Bernoulli, Binomial,
    Geometric, Categorical): the one given is stored under its name, the other is computed
    from it on first use, with sigmoid / log-odds (`_binary`) or softmax / log over the last
    dim. Both are listed in `arg_constraints`; `Distribution` checks only those stored."""

    _binary = True

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=self._binary)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=self._binary)

    @property
    def _param(self) -> Tensor:
        """The parameter stored (either one when both are: they share shape and dtype)."""
        return self.__dict__["probs"] if "probs" in self.__dict__ else self.__dict__["logits"]

    def _init_params(self, probs: Any, logits: Any, validate_args: bool | None, *total_count: Any) -> None:
        """Store whichever of `probs` and `logits` was given (broadcast with `total_count`, which
        is stored in its dtype, when one is passed) and initialize the distribution with its
        shape as the batch shape (Bernoulli, Geometric, Binomial, NegativeBinomial)."""
        name, given = probs_or_logits(probs, logits)
        *counts, param = broadcast_all(*total_count, given)
        if counts:
            self.total_count = counts[0].astype(param.dtype)
        setattr(self, name, param)
        super().__init__(param.shape, validate_args=validate_args)  # type: ignore[call-arg]

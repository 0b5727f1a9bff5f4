"""The Bernoulli distribution."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..core.tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import ProbsLogits, bce_with_logits, broadcast_all, support_values

__all__ = ["Bernoulli"]


class Bernoulli(ProbsLogits, Distribution):
    """0/1 samples that are 1 with probability `probs` (or `sigmoid(logits)`).

    Args:
        probs: the probability of 1, in [0, 1].
        logits: the log-odds of 1 (give exactly one of probs and logits).
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> d = Bernoulli(logits=nabla.tensor([0.0, 2.0]))
        >>> d.log_prob(nabla.tensor([1.0, 0.0])).shape
        (2,)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _expand_params = ("probs", "logits")

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        self._init_params(probs, logits, validate_args)

    @property
    def param_shape(self) -> Size:
        return Size(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).astype(self.probs.dtype)
        return ops.where(self.probs == 0.5, float("nan"), mode)  # (a tie has no mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        p = ops.broadcast_to(self.probs.detach(), shape)
        return (ops.rand(shape, dtype=p.dtype) < p).astype(p.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -bce_with_logits(logits, value)

    def entropy(self) -> Tensor:
        return bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        return support_values(ops.arange(2, dtype=self._param.dtype), self._batch_shape, expand)

"""The Bernoulli distribution."""

from __future__ import annotations

from numbers import Number
from typing import Any

from .. import ops
from ..core.tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import bce_with_logits, broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli"]


def _one_param(probs: Any, logits: Any) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class Bernoulli(Distribution):
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

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        _one_param(probs, logits)
        given = probs if probs is not None else logits
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = Size() if isinstance(given, Number) else self._param.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Bernoulli:
        new = self._get_checked_instance(Bernoulli, _instance)
        shape = tuple(batch_shape)
        if "probs" in self.__dict__:
            new.probs = ops.broadcast_to(self.probs, shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = ops.broadcast_to(self.logits, shape)
            new._param = new.logits
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

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
        values = ops.arange(2, dtype=self._param.dtype).reshape((-1,) + (1,) * len(self._batch_shape))
        return ops.broadcast_to(values, (2, *self._batch_shape)) if expand else values

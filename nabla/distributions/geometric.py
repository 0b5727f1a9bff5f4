"""The geometric distribution."""

from __future__ import annotations

from numbers import Number
from typing import Any

from .. import ops
from ..core.tensor import Size, Tensor
from . import constraints
from .bernoulli import _one_param
from .distribution import Distribution, _known
from .utils import _finfo, bce_with_logits, broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Geometric"]


class Geometric(Distribution):
    """The number of failures before the first success in Bernoulli(probs) trials:
    P(k) = (1 - p)**k p, for k = 0, 1, 2, ...

    Args:
        probs: the success probability, in (0, 1].
        logits: the log-odds of success (give exactly one of probs and logits).
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> Geometric(nabla.tensor([0.25])).mean
        Tensor([3.], dtype=float32)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        _one_param(probs, logits)
        given = probs if probs is not None else logits
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        param = self.probs if probs is not None else self.logits
        super().__init__(Size() if isinstance(given, Number) else param.shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            known = _known(self.probs)
            if known is not None and not (known > 0).all():
                raise ValueError(
                    f"Expected parameter probs ({type(self.probs).__name__} of shape {tuple(self.probs.shape)}) "
                    f"of distribution {self!r} to be positive but found invalid values:\n{known[~(known > 0)]}"
                )

    def expand(self, batch_shape: Any, _instance: Any = None) -> Geometric:
        new = self._get_checked_instance(Geometric, _instance)
        shape = tuple(batch_shape)
        if "probs" in self.__dict__:
            new.probs = ops.broadcast_to(self.probs, shape)
        if "logits" in self.__dict__:
            new.logits = ops.broadcast_to(self.logits, shape)
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
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return ops.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        p = self.probs.detach()
        u = ops.clamp(ops.rand(shape, dtype=p.dtype), float(_finfo(p.dtype).tiny))  # (log(0) would be -inf)
        return (u.log() / (-p).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # p = 1 and k = 0: 0 * log(0) is 0 here (log P = 0), as torch sets it
        safe = ops.where(ops.logical_and(probs == 1, value == 0), 0.0, probs)
        return value * (-safe).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return bce_with_logits(self.logits, self.probs) / self.probs

"""The geometric distribution."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..core.tensor import Tensor
from . import constraints
from .distribution import Distribution, _known
from .utils import ProbsLogits, _finfo, bce_with_logits, broadcast_all

__all__ = ["Geometric"]


class Geometric(ProbsLogits, Distribution):
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
    _expand_params = ("probs", "logits")

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        self._init_params(probs, logits, validate_args)
        if self._validate_args and probs is not None:
            known = _known(self.probs)
            if known is not None and not (known > 0).all():
                raise ValueError(
                    f"Expected parameter probs ({type(self.probs).__name__} of shape {tuple(self.probs.shape)}) "
                    f"of distribution {self!r} to be positive but found invalid values:\n{known[~(known > 0)]}"
                )

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

"""The gamma distribution (and Chi2, a gamma with rate 1/2), with a composite gamma sampler."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..core.common import dtypes as _dt
from ..core.tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import _finfo, broadcast_all

__all__ = ["Chi2", "Gamma", "standard_gamma"]

# Marsaglia-Tsang accepts a candidate with probability >= 0.95, so the chance that all of
# _CANDIDATES are rejected is below 0.05**8 ~ 4e-11 per draw (that draw then takes d, the mode).
_CANDIDATES = 8


def standard_gamma(concentration: Tensor) -> Tensor:
    """Gamma(concentration, 1) draws of `concentration`'s shape, without gradient.

    Marsaglia and Tsang's method written with nabla ops, so it stays lazy, seeded by
    `nabla.manual_seed`: every element proposes `_CANDIDATES` candidates at once and takes the
    first one accepted; a concentration below 1 draws Gamma(a + 1) times U**(1/a).

    Example:
        >>> standard_gamma(nabla.full((1000,), 2.0)).mean()  # about 2
    """
    a = concentration.detach()
    shape, dtype = tuple(a.shape), a.dtype
    boost = a < 1
    d = ops.where(boost, a + 1, a) - 1.0 / 3.0
    c = (9 * d).rsqrt()
    z = ops.randn((_CANDIDATES, *shape), dtype=dtype)
    u = ops.rand((_CANDIDATES, *shape), dtype=dtype)
    v = (1 + c * z) ** 3
    positive = v > 0
    log_v = ops.where(positive, v, 1.0).log()  # (log of v <= 0 is never used)
    accept = ops.logical_and(positive, u.log() < 0.5 * z * z + d - d * v + d * log_v)
    first = ops.argmax(accept.astype(_dt.int32), 0, True)  # (the first accepted candidate)
    x = d * ops.gather(v, 0, first).squeeze(0)
    x = ops.where(ops.any(accept, 0), x, d)
    u_boost = ops.rand(shape, dtype=dtype)
    x = ops.where(boost, x * (u_boost.log() / a).exp(), x)
    return ops.clamp(x, float(_finfo(dtype).tiny))  # (torch's floor: a draw is never 0)


class Gamma(Distribution):
    """The gamma distribution with shape `concentration` and `rate` (1 / scale).

    Sampling is not reparameterized (`has_rsample` is False, `rsample` raises
    NotImplementedError): torch's implicit reparameterization gradient is not built.

    Args:
        concentration: the shape parameter alpha, > 0.
        rate: the rate beta, > 0.
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> Gamma(nabla.tensor([2.0]), nabla.tensor([4.0])).mean
        Tensor([0.5], dtype=float32)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Gamma:
        new = self._get_checked_instance(Gamma, _instance)
        shape = tuple(batch_shape)
        new.concentration, new.rate = ops.broadcast_to(self.concentration, shape), ops.broadcast_to(self.rate, shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ops.clamp((self.concentration - 1) / self.rate, 0.0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        value = standard_gamma(ops.broadcast_to(self.concentration.detach(), shape)) / self.rate.detach()
        return ops.clamp(value, float(_finfo(value.dtype).tiny))

    def log_prob(self, value: Any) -> Tensor:
        if not isinstance(value, Tensor):
            value = ops.tensor(float(value), dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        return ops.xlogy(c, r) + ops.xlogy(c - 1, value) - r * value - ops.lgamma(c)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - self.rate.log() + ops.lgamma(c) + (1.0 - c) * ops.digamma(c)


class Chi2(Gamma):
    """The chi-squared distribution with `df` degrees of freedom: Gamma(df / 2, 1 / 2).

    Args:
        df: the degrees of freedom, > 0.
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> Chi2(nabla.tensor([3.0])).mean
        Tensor([3.], dtype=float32)
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Any, validate_args: bool | None = None) -> None:
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Chi2:
        return super().expand(batch_shape, self._get_checked_instance(Chi2, _instance))

    @property
    def df(self) -> Tensor:
        return self.concentration * 2

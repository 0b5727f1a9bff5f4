"""Student's t-distribution."""

from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from . import constraints
from .distribution import Distribution
from .gamma import _standard_gamma_rsample
from .utils import broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t-distribution with `df` degrees of freedom, location `loc` and `scale`.

    `rsample` is loc + scale * X / sqrt(Z / df) for X ~ N(0, 1) and Z ~ Chi2(df),
    differentiable in all three parameters (in df through `Gamma`'s rsample).

    Args:
        df: the degrees of freedom, > 0.
        loc: the location.
        scale: the scale, > 0.
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> StudentT(nabla.tensor([3.0])).variance
        Tensor([3.], dtype=float32)
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _expand_params = ("df", "loc", "scale")

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0, validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(self.df.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return ops.where(self.df <= 1, float("nan"), self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        finite = self.scale.pow(2) * df / ops.where(df > 2, df - 2, 1.0)
        return ops.where(df > 2, finite, ops.where(df > 1, float("inf"), float("nan")))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        x = ops.randn(shape, dtype=self.df.dtype)
        chi2 = 2 * _standard_gamma_rsample(0.5 * self.df, shape)  # (Chi2(df) = 2 Gamma(df/2))
        return self.loc + self.scale * x * (chi2 / self.df).rsqrt()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        df = self.df
        y = (value - self.loc) / self.scale
        z = (
            self.scale.log()
            + 0.5 * df.log()
            + 0.5 * math.log(math.pi)
            + ops.lgamma(0.5 * df)
            - ops.lgamma(0.5 * (df + 1.0))
        )
        return -0.5 * (df + 1.0) * (y.pow(2) / df).log1p() - z

    def entropy(self) -> Tensor:
        df = self.df
        lbeta = ops.lgamma(0.5 * df) + math.lgamma(0.5) - ops.lgamma(0.5 * (df + 1))
        return (
            self.scale.log()
            + 0.5 * (df + 1) * (ops.digamma(0.5 * (df + 1)) - ops.digamma(0.5 * df))
            + 0.5 * df.log()
            + lbeta
        )

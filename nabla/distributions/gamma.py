"""The gamma distribution (and Chi2, a gamma with rate 1/2), with a composite gamma sampler."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..core.common import dtypes as _dt
from ..core.tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import _finfo, broadcast_all

__all__ = ["Chi2", "Gamma", "standard_gamma", "standard_gamma_grad"]

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


# torch's bivariate rational fit of d x / d alpha in u = log(x / alpha), v = log(alpha)
# (aten/src/ATen/native/Distributions.h, standard_gamma_grad_one): rows are u^0, u^1, u^2.
_COEF_UV = (
    (0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1.0, 0.32668115, 0.10406089, 0.0014179084),
    (0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
    (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07),
)  # fmt: skip


def standard_gamma_grad(alpha: Tensor, x: Tensor) -> Tensor:
    """d x / d alpha of a Gamma(alpha, 1) draw x at a fixed quantile (implicit
    reparameterization), by torch's approximations: a Taylor series for x < 0.8, Rice's saddle
    point expansion for alpha > 8, a bivariate rational fit otherwise. Every branch is computed
    and one is selected per element; the result carries no gradient of its own.

    Example:
        >>> standard_gamma_grad(nabla.tensor([2.0]), nabla.tensor([1.5]))  # torch._standard_gamma_grad
    """
    a, x = alpha.detach(), x.detach()
    log_x = x.log()
    # x < 0.8: the series of the incomplete gamma function and of its alpha-derivative
    numer, denom = ops.ones_like(x), a
    series1, series2 = numer / denom, numer / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    # -(d cdf / d alpha) / pdf with the common factor x^(alpha - 1) cancelled (no underflow)
    small = -x * x.exp() * ((log_x - ops.digamma(a)) * series1 - series2)
    small = ops.where(ops.isnan(small), 0.0, small)
    # alpha > 8: Rice's saddle point expansion (its own form within 10% of alpha)
    n1 = 1 + 24 * a * (1 + 12 * a)
    n2 = 1440 * a * a + 6 * x * (53 - 120 * x) - 65 * x * x / a + a * (107 + 3600 * x)
    near = n1 * n2 / (1244160 * (a * a) * (a * a))
    den = (8 * a).sqrt()
    t2 = den / (a - x)
    t3 = (x - a - a * (x / a).log()).pow(-1.5)
    t1 = (x / a).log() * ops.where(x < a, t2 - t3, t2 + t3) - (2 / a).sqrt() * (a + x) / ((a - x) * (a - x))
    stirling = 1 + 1 / (12 * a) * (1 + 1 / (24 * a))
    far = -stirling * x * t1 / den
    in_band = ops.logical_and(0.9 * a <= x, x <= 1.1 * a)
    large = ops.where(in_band, near, far)
    # otherwise: the rational fit
    u, v = (x / a).log(), a.log()
    c = [_COEF_UV[0][i] + u * (_COEF_UV[1][i] + u * _COEF_UV[2][i]) for i in range(8)]
    p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
    q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
    rational = (p / q).exp()
    return ops.where(x < 0.8, small, ops.where(a > 8, large, rational))


def _standard_gamma_rsample(alpha: Tensor, shape: Any) -> Tensor:
    """Gamma(alpha, 1) draws of `shape` (alpha broadcast to it) whose gradient with respect to
    alpha is `standard_gamma_grad`: x + (alpha - alpha.detach()) * g has x's value and g as
    its derivative. Gamma, Dirichlet (and Beta) and StudentT draw through it."""
    alpha = ops.broadcast_to(alpha, tuple(shape))
    x = standard_gamma(alpha)
    if not alpha.requires_grad:
        return x
    g = standard_gamma_grad(alpha, x)
    g = ops.where(ops.isfinite(g), g, 0.0)  # (an overflowing branch must not turn x into nan)
    return x + (alpha - alpha.detach()) * g


def _floor_tiny(x: Tensor) -> Tensor:
    """x raised to its dtype's smallest normal number where below it, keeping x's gradient
    (torch's floor on gamma-based draws, so that their logs stay finite)."""
    tiny = float(_finfo(x.dtype).tiny)
    return x + (ops.clamp(x.detach(), tiny) - x.detach())


class Gamma(Distribution):
    """The gamma distribution with shape `concentration` and `rate` (1 / scale).

    `rsample` is differentiable in both parameters: in `rate` directly, in `concentration`
    by implicit reparameterization (`standard_gamma_grad`, torch's approximations).

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
    has_rsample = True
    _expand_params = ("concentration", "rate")

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ops.clamp((self.concentration - 1) / self.rate, 0.0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        value = _standard_gamma_rsample(self.concentration, self._extended_shape(sample_shape)) / self.rate
        return _floor_tiny(value)

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

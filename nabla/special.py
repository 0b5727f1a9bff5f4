"""torch.special's names for nabla's special functions (`nabla.special.gammaln(x)` is
`nabla.lgamma(x)`). Everything here is an op of `nabla.ops`; see `nabla/ops/special.py`.

Not built: the Bessel functions other than i0, i0e, i1 and i1e (bessel_j*/y*, modified_bessel_*,
scaled_modified_bessel_*, spherical_bessel_j0, airy_ai), the orthogonal polynomials
(chebyshev_*, hermite_*, laguerre_*, legendre_*) and gammainc/gammaincc.
"""

from .ops import (
    digamma,
    entr,
    erf,
    erfc,
    erfcx,
    erfinv,
    exp2,
    expm1,
    i0,
    i0e,
    i1,
    i1e,
    lgamma,
    log1p,
    log_ndtr,
    log_softmax,
    logit,
    logsumexp,
    mvlgamma,
    ndtr,
    ndtri,
    polygamma,
    round,  # noqa: A004
    sigmoid,
    sinc,
    softmax,
    xlog1py,
    xlogy,
    zeta,
)

gammaln = lgamma
psi = digamma
expit = sigmoid
multigammaln = mvlgamma

__all__ = [
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammaln",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "sinc",
    "softmax",
    "xlog1py",
    "xlogy",
    "zeta",
]

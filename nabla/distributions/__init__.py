"""torch.distributions for nabla: probability distributions with sampling, `log_prob`,
`entropy`, moments and KL divergences, differentiable through nabla's autograd.

Everything is a composite of nabla ops (no ops of its own), so `log_prob`, `entropy`,
`kl_divergence` and `rsample` stay lazy and have gradients with respect to the parameters.
Samples come from nabla's generator (`nabla.manual_seed`); Poisson, Binomial and
NegativeBinomial draw their counts on the host with NumPy, seeded from it. Arguments are
validated by default, as torch does, on values the host already has (a pending parameter is not
evaluated to check it).

Example:
    >>> import nabla as nb
    >>> from nabla.distributions import Normal, Categorical, biject_to, constraints, kl_divergence
    >>> mu = nb.zeros(3, requires_grad=True)
    >>> z = Normal(mu, 1.0).rsample()  # a VAE's reparameterized sample
    >>> logp = Categorical(logits=nb.zeros(4)).log_prob(nb.tensor(2))  # a policy gradient's
    >>> kl = kl_divergence(Normal(mu, 1.0), Normal(0.0, 2.0)).sum()
    >>> scale = biject_to(constraints.positive)(nb.zeros(3))  # a VI parameter kept > 0

Gamma-family `rsample` (Gamma, Chi2, Beta, Dirichlet, StudentT, InverseGamma) is differentiable
in the concentrations by implicit reparameterization, with torch's approximations of
d x / d alpha.

Not built: Wishart, LKJCholesky, VonMises, Kumaraswamy, ContinuousBernoulli, FisherSnedecor,
LogisticNormal, GeneralizedPareto, the KL pairs of LowRankMultivariateNormal, the
ExponentialFamily base (and its Bregman-divergence KL fallback), Gamma.cdf (needs gammainc),
and the CorrCholesky and CumulativeDistribution transforms.
"""

from . import constraints, transforms
from .bernoulli import Bernoulli
from .binomial import Binomial
from .categorical import Categorical, OneHotCategorical
from .cauchy import Cauchy
from .constraint_registry import biject_to, transform_to
from .dirichlet import Beta, Dirichlet
from .distribution import Distribution
from .exponential import Exponential
from .gamma import Chi2, Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half import HalfCauchy, HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .pareto import Pareto
from .poisson import Poisson
from .relaxed import ExpRelaxedCategorical, LogitRelaxedBernoulli, RelaxedBernoulli, RelaxedOneHotCategorical
from .studentt import StudentT
from .transformed_distribution import LogNormal, TransformedDistribution
from .transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
)
from .uniform import Uniform
from .weibull import Weibull

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "Bernoulli",
    "Beta",
    "Binomial",
    "CatTransform",
    "Categorical",
    "Cauchy",
    "Chi2",
    "ComposeTransform",
    "Dirichlet",
    "Distribution",
    "ExpRelaxedCategorical",
    "ExpTransform",
    "Exponential",
    "Gamma",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "IndependentTransform",
    "InverseGamma",
    "Laplace",
    "LogNormal",
    "LogitRelaxedBernoulli",
    "LowerCholeskyTransform",
    "LowRankMultivariateNormal",
    "MixtureSameFamily",
    "Multinomial",
    "MultivariateNormal",
    "NegativeBinomial",
    "Normal",
    "OneHotCategorical",
    "Pareto",
    "Poisson",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "StudentT",
    "TanhTransform",
    "Transform",
    "TransformedDistribution",
    "Uniform",
    "Weibull",
    "biject_to",
    "constraints",
    "kl_divergence",
    "register_kl",
    "transform_to",
    "transforms",
]

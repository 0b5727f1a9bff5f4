"""torch.distributions for nabla: probability distributions with sampling, `log_prob`,
`entropy`, moments and KL divergences, differentiable through nabla's autograd.

Everything is a composite of nabla ops (no ops of its own), so `log_prob`, `entropy`,
`kl_divergence` and `rsample` stay lazy and have gradients with respect to the parameters.
Samples come from nabla's generator (`nabla.manual_seed`); Poisson and Binomial draw on the
host with NumPy, seeded from it. Arguments are validated by default, as torch does, on values
the host already has (a pending parameter is not evaluated to check it).

Example:
    >>> import nabla as nb
    >>> from nabla.distributions import Normal, Categorical, kl_divergence
    >>> mu = nb.zeros(3, requires_grad=True)
    >>> z = Normal(mu, 1.0).rsample()  # a VAE's reparameterized sample
    >>> logp = Categorical(logits=nb.zeros(4)).log_prob(nb.tensor(2))  # a policy gradient's
    >>> kl = kl_divergence(Normal(mu, 1.0), Normal(0.0, 2.0)).sum()

Gamma-family `rsample` (Gamma, Chi2, Beta, Dirichlet, StudentT) is differentiable in the
concentrations by implicit reparameterization, with torch's approximations of d x / d alpha.

Not built: Gamma.cdf (needs gammainc), LowRankMultivariateNormal, Multinomial, the mixture,
Wishart, von Mises and other rarer families, and the other transforms of
torch.distributions.transforms.
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
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .poisson import Poisson
from .relaxed import ExpRelaxedCategorical, LogitRelaxedBernoulli, RelaxedBernoulli, RelaxedOneHotCategorical
from .studentt import StudentT
from .transformed_distribution import LogNormal, TransformedDistribution
from .transforms import AffineTransform, ComposeTransform, ExpTransform, SigmoidTransform, TanhTransform, Transform
from .uniform import Uniform

__all__ = [
    "AffineTransform",
    "Bernoulli",
    "Beta",
    "Binomial",
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
    "Independent",
    "Laplace",
    "LogNormal",
    "LogitRelaxedBernoulli",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "Poisson",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "SigmoidTransform",
    "StudentT",
    "TanhTransform",
    "Transform",
    "TransformedDistribution",
    "Uniform",
    "biject_to",
    "constraints",
    "kl_divergence",
    "register_kl",
    "transform_to",
    "transforms",
]

"""MixtureSameFamily: a Categorical mixture of components of one family."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ops
from ..core.common import no_grad
from ..core.tensor import Tensor
from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .utils import size

__all__ = ["MixtureSameFamily", "MixtureSameFamilyConstraint"]


class MixtureSameFamilyConstraint(constraints.Constraint):
    """A component distribution's support, checked for a value of the mixture: the value is
    given the mixture dim back and must lie in the support of every component."""

    def __init__(self, base_constraint: constraints.Constraint) -> None:
        if not isinstance(base_constraint, constraints.Constraint):
            raise TypeError(f"base_constraint must be a Constraint, got {type(base_constraint).__name__}")
        self.base_constraint = base_constraint

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim

    def check(self, value: Any) -> Any:
        if value.ndim < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.ndim}")
        axis = value.ndim - self.event_dim
        if isinstance(value, np.ndarray):
            result = self.base_constraint.check(np.expand_dims(value, axis))
        else:
            result = self.base_constraint.check(value.unsqueeze(axis))
        result = result.reshape((*tuple(result.shape[:axis]), -1))
        return result.all(-1)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_constraint!r})"


class MixtureSameFamily(Distribution):
    """A mixture: draw a component index from `mixture_distribution`, then a value from that
    component of `component_distribution` (whose rightmost batch dim indexes the components).

    log_prob is logsumexp over components of log w_k + log p_k(x); mean and variance are the
    mixture's (the law of total variance). Not reparameterized (`rsample` is not available).

    Args:
        mixture_distribution: a Categorical over the K components, batch shape broadcastable
            with the component's batch shape less its last dim.
        component_distribution: a distribution of batch shape (*batch_shape, K).
        validate_args: check values given to `log_prob` (see `Distribution`).

    Example:
        >>> from nabla.distributions import Categorical, Normal
        >>> gmm = MixtureSameFamily(Categorical(logits=nabla.zeros(3)),
        ...                         Normal(nabla.tensor([-2.0, 0.0, 2.0]), 1.0))
        >>> gmm.log_prob(nabla.tensor([0.5, 1.0])).shape, gmm.sample((4,)).shape
        ((2,), (4,))
    """

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(
        self,
        mixture_distribution: Categorical,
        component_distribution: Distribution,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("The Mixture distribution needs to be an instance of nabla.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of nabla.distributions.Distribution")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        mdbs = tuple(mixture_distribution.batch_shape)
        cdbs = tuple(component_distribution.batch_shape[:-1])
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs), strict=False):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(
                    f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible with "
                    f"`component_distribution.batch_shape`({cdbs})"
                )
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1] if len(component_distribution.batch_shape) else None
        if km != kc:
            raise ValueError(
                f"`mixture_distribution component` ({km}) does not equal "
                f"`component_distribution.batch_shape[-1]` ({kc})"
            )
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(cdbs, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> MixtureSameFamily:
        batch_shape = tuple(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand((*batch_shape, self._num_component))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        Distribution.__init__(new, batch_shape, new._component_distribution.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        return MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    @property
    def mean(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        mean_cond_var = (probs * self.component_distribution.variance).sum(-1 - self._event_ndims)
        deviation = (self.component_distribution.mean - self._pad(self.mean)).pow(2.0)
        var_cond_mean = (probs * deviation).sum(-1 - self._event_ndims)
        return mean_cond_var + var_cond_mean

    def cdf(self, x: Tensor) -> Tensor:
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))  # [S, B, k]
        log_mix_prob = ops.log_softmax(self.mixture_distribution.logits, -1)  # [B, k]
        return ops.logsumexp(log_prob_x + log_mix_prob, -1)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with no_grad():
            sample_shape = tuple(size(sample_shape))
            gather_dim = len(sample_shape) + len(self._batch_shape)
            es = tuple(self._event_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)
            comp_samples = self.component_distribution.sample(sample_shape)
            mix_shape = tuple(mix_sample.shape)
            index = mix_sample.reshape(mix_shape + (1,) * (len(es) + 1))
            index = ops.broadcast_to(index, (*mix_shape, 1, *es))
            if tuple(comp_samples.shape[:gather_dim]) != mix_shape:  # (a mixture batch broadcast)
                index = ops.broadcast_to(index, (*tuple(comp_samples.shape[:gather_dim]), 1, *es))
            return ops.gather(comp_samples, gather_dim, index).squeeze(gather_dim)

    def _pad(self, x: Tensor) -> Tensor:
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x: Tensor) -> Tensor:
        dist_batch_ndims = len(self._batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = tuple(x.shape)
        return x.reshape(xs[:-1] + (1,) * pad_ndims + xs[-1:] + (1,) * self._event_ndims)

    def __repr__(self) -> str:
        return f"MixtureSameFamily(\n  {self.mixture_distribution},\n  {self.component_distribution})"

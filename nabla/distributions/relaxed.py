"""Relaxed (Gumbel-softmax / Concrete) distributions: continuous stand-ins for Bernoulli and
one-hot categorical samples that are differentiable in the logits."""

from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform, SigmoidTransform
from .utils import as_float_tensor, broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli", "RelaxedOneHotCategorical", "ExpRelaxedCategorical"]


class LogitRelaxedBernoulli(Distribution):
    """The logit of a RelaxedBernoulli sample (Maddison et al., 2017).

    Args:
        temperature: the relaxation temperature, > 0 (lower is closer to Bernoulli).
        probs: the probability of 1.
        logits: the log-odds of 1 (give exactly one of probs and logits).
        validate_args: check the parameters (see `Distribution`).
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True
    _expand_params = ("_bernoulli",)
    _expand_shared = ("temperature",)

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None):
        self._bernoulli = Bernoulli(probs, logits, validate_args=validate_args)
        self.temperature = as_float_tensor(temperature, "temperature")
        super().__init__(self._bernoulli.batch_shape, validate_args=False)
        self._validate_args = self._bernoulli._validate_args

    @property
    def probs(self) -> Tensor:
        return self._bernoulli.probs

    @property
    def logits(self) -> Tensor:
        return self._bernoulli.logits

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        probs = clamp_probs(ops.broadcast_to(self.probs, shape))
        u = clamp_probs(ops.rand(shape, dtype=probs.dtype))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """A relaxed Bernoulli in (0, 1): sigmoid of a LogitRelaxedBernoulli sample; `rsample` is
    differentiable in probs/logits.

    Args:
        temperature: the relaxation temperature, > 0.
        probs: the probability of 1.
        logits: the log-odds of 1 (give exactly one of probs and logits).
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> d = RelaxedBernoulli(nabla.tensor(0.5), logits=nabla.zeros(3))
        >>> d.rsample().shape
        (3,)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None):
        base = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, SigmoidTransform(), validate_args=False)
        self._validate_args = base._validate_args

    def expand(self, batch_shape: Any, _instance: Any = None) -> RelaxedBernoulli:
        return super().expand(batch_shape, self._get_checked_instance(RelaxedBernoulli, _instance))

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical sample (a log-simplex vector).

    Args:
        temperature: the relaxation temperature, > 0.
        probs: category weights, (*batch_shape, K).
        logits: unnormalized log-probabilities, (*batch_shape, K).
        validate_args: check the parameters (see `Distribution`).
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True
    _expand_params = ("_categorical",)
    _expand_shared = ("temperature",)

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        self.temperature = as_float_tensor(temperature, "temperature")
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args=False)
        self._validate_args = self._categorical._validate_args

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        u = clamp_probs(ops.rand(shape, dtype=self.logits.dtype))
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - ops.logsumexp(scores, -1, True)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self._categorical._num_events
        logits, value = broadcast_all(self.logits, value)
        log_scale = math.lgamma(k) + (k - 1) * self.temperature.log()
        score = logits - value * self.temperature
        score = (score - ops.logsumexp(score, -1, True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """A relaxed one-hot categorical on the simplex (Gumbel-softmax / Concrete): `rsample` is
    differentiable in probs/logits.

    Args:
        temperature: the relaxation temperature, > 0.
        probs: category weights, (*batch_shape, K).
        logits: unnormalized log-probabilities, (*batch_shape, K).
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> d = RelaxedOneHotCategorical(nabla.tensor(0.5), logits=nabla.zeros(2, 3))
        >>> d.rsample().shape
        (2, 3)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=False)
        self._validate_args = base._validate_args

    def expand(self, batch_shape: Any, _instance: Any = None) -> RelaxedOneHotCategorical:
        return super().expand(batch_shape, self._get_checked_instance(RelaxedOneHotCategorical, _instance))

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits

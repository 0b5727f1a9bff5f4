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
from .transforms import ExpTransform, SigmoidTransform, Transform
from .utils import as_float_tensor, broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli", "RelaxedOneHotCategorical", "ExpRelaxedCategorical"]


class _Tempered(Distribution):
    """Base of LogitRelaxedBernoulli and ExpRelaxedCategorical: a `temperature` and the
    discrete distribution `_discrete_class(probs, logits)`, which holds and checks the
    parameters; the event shape is its parameter's dims past the batch (K categories)."""

    has_rsample = True
    _discrete_class: type[Distribution]
    _expand_shared = ("temperature",)  # (each subclass lists _expand_params = ("_discrete",))

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None):
        self._discrete = self._discrete_class(probs, logits, validate_args=validate_args)
        self.temperature = as_float_tensor(temperature, "temperature")
        batch_shape = self._discrete.batch_shape
        super().__init__(batch_shape, self._discrete.param_shape[len(batch_shape) :], validate_args=False)
        self._validate_args = self._discrete._validate_args

    @property
    def probs(self) -> Tensor:
        return self._discrete.probs

    @property
    def logits(self) -> Tensor:
        return self._discrete.logits


class _Relaxed(TransformedDistribution):
    """Base of RelaxedBernoulli and RelaxedOneHotCategorical: a `_base_class` (a `_Tempered`)
    pushed through `_transform_class`, with the base's temperature, probs and logits."""

    has_rsample = True
    _base_class: type[_Tempered]
    _transform_class: type[Transform]

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None):
        base = self._base_class(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, self._transform_class(), validate_args=False)
        self._validate_args = base._validate_args

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits


class LogitRelaxedBernoulli(_Tempered):
    """The logit of a RelaxedBernoulli sample (Maddison et al., 2017).

    Args:
        temperature: the relaxation temperature, > 0 (lower is closer to Bernoulli).
        probs: the probability of 1.
        logits: the log-odds of 1 (give exactly one of probs and logits).
        validate_args: check the parameters (see `Distribution`).
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    _discrete_class = Bernoulli
    _expand_params = ("_discrete",)

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


class RelaxedBernoulli(_Relaxed):
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
    _base_class, _transform_class = LogitRelaxedBernoulli, SigmoidTransform

    def expand(self, batch_shape: Any, _instance: Any = None) -> RelaxedBernoulli:
        return super().expand(batch_shape, self._get_checked_instance(RelaxedBernoulli, _instance))


class ExpRelaxedCategorical(_Tempered):
    """The log of a RelaxedOneHotCategorical sample (a log-simplex vector).

    Args:
        temperature: the relaxation temperature, > 0.
        probs: category weights, (*batch_shape, K).
        logits: unnormalized log-probabilities, (*batch_shape, K).
        validate_args: check the parameters (see `Distribution`).
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    _discrete_class = Categorical
    _expand_params = ("_discrete",)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        u = clamp_probs(ops.rand(shape, dtype=self.logits.dtype))
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - ops.logsumexp(scores, -1, True)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self._discrete._num_events
        logits, value = broadcast_all(self.logits, value)
        log_scale = math.lgamma(k) + (k - 1) * self.temperature.log()
        score = logits - value * self.temperature
        score = (score - ops.logsumexp(score, -1, True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(_Relaxed):
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
    _base_class, _transform_class = ExpRelaxedCategorical, ExpTransform

    def expand(self, batch_shape: Any, _instance: Any = None) -> RelaxedOneHotCategorical:
        return super().expand(batch_shape, self._get_checked_instance(RelaxedOneHotCategorical, _instance))

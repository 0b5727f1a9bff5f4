"""The categorical distribution, over indices (Categorical) or one-hot vectors
(OneHotCategorical)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ops
from ..core.common import dtypes as _dt
from ..core.tensor import Size, Tensor
from ..torch_functions import broadcast_tensors, multinomial
from . import constraints
from .distribution import Distribution, _known
from .utils import ProbsLogits, _finfo, numel, probs_or_logits, support_values

__all__ = ["Categorical", "OneHotCategorical"]


def _at_least_1d(x: Any, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"`{name}` must be a Tensor, got {type(x).__name__}")
    if x.ndim < 1:
        raise ValueError(f"`{name}` parameter must be at least one-dimensional.")
    return x if _dt.is_float(x.dtype) else x.astype(_dt.DEFAULT_FLOAT)


class Categorical(ProbsLogits, Distribution):
    """Category indices 0 .. K-1, drawn with the (normalized) weights of the last dim of
    `probs`, or of `softmax(logits)`.

    `probs` need not sum to 1 (they are divided by their sum) and `logits` are normalized to
    log-probabilities (`logits - logsumexp(logits)`), as torch does.

    Args:
        probs: non-negative weights, shape (*batch_shape, K).
        logits: unnormalized log-probabilities, shape (*batch_shape, K).
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> d = Categorical(logits=nabla.zeros(2, 3))
        >>> d.sample((4,)).shape, d.log_prob(nabla.tensor([0, 2])).shape
        ((4, 2), (2,))
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True
    _binary = False
    _expand_params = ("probs", "logits")

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        probs_or_logits(probs, logits)  # (raises unless exactly one is given)
        if probs is not None:
            probs = _at_least_1d(probs, "probs")
            self.probs = probs / probs.sum(-1, keepdim=True)
            raw = _known(probs)
            if raw is not None:  # (torch checks the normalized probs: the same division on the host)
                with np.errstate(divide="ignore", invalid="ignore"):
                    self._host_params = {"probs": raw / raw.sum(-1, keepdims=True)}
        else:
            logits = _at_least_1d(logits, "logits")
            self.logits = logits - ops.logsumexp(logits, -1, True)
            raw = _known(logits)
            if raw is not None:  # (normalizing keeps nan, which is all real_vector rejects)
                self._host_params = {"logits": raw}
        super().__init__(self._param.shape[:-1], validate_args=validate_args)

    @property
    def _num_events(self) -> int:
        return self._param.shape[-1]

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self) -> Size:
        return Size(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return ops.full(self._extended_shape(), float("nan"), dtype=self._param.dtype)

    @property
    def mode(self) -> Tensor:
        return ops.argmax(self.probs, -1)

    @property
    def variance(self) -> Tensor:
        return ops.full(self._extended_shape(), float("nan"), dtype=self._param.dtype)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        n = numel(shape[: len(shape) - len(self._batch_shape)])  # (samples per batch element)
        probs_2d = self.probs.detach().reshape(-1, self._num_events)
        samples_2d = multinomial(probs_2d, n, True).mT if n else ops.zeros((0,), dtype=_dt.int64)
        return samples_2d.reshape(tuple(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.astype(_dt.int64).unsqueeze(-1)
        value, log_pmf = broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        min_real = float(_finfo(self.logits.dtype).min)  # (-inf logits times p = 0 would be nan)
        p_log_p = ops.clamp(self.logits, min_real) * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        return support_values(ops.arange(self._num_events, dtype=_dt.int64), self._batch_shape, expand)


class OneHotCategorical(Distribution):
    """One-hot vectors of length K, hot at a category drawn as by `Categorical`.

    Args:
        probs: non-negative weights, shape (*batch_shape, K).
        logits: unnormalized log-probabilities, shape (*batch_shape, K).
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> OneHotCategorical(probs=nabla.tensor([0.2, 0.8])).sample((3,)).shape
        (3, 2)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True
    _expand_params = ("_categorical",)

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        # (the parameters were checked by the Categorical; only the default is taken here)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args=False)
        self._validate_args = self._categorical._validate_args

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self._categorical.probs

    @property
    def mode(self) -> Tensor:
        probs = self._categorical.probs
        return ops.one_hot(ops.argmax(probs, -1), probs.shape[-1]).astype(probs.dtype)

    @property
    def variance(self) -> Tensor:
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        indices = self._categorical.sample(sample_shape)
        return ops.one_hot(indices, self._categorical._num_events).astype(self._param.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(ops.argmax(value, -1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        return support_values(ops.eye(self._event_shape[0], dtype=self._param.dtype), self._batch_shape, expand)

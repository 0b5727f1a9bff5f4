"""The Gumbel (type-I extreme value) distribution."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import _finfo, broadcast_all

__all__ = ["Gumbel"]

_EULER = 0.57721566490153286060


class Gumbel(TransformedDistribution):
    """The Gumbel distribution: loc - scale * log(-log(U)) for U ~ Uniform(0, 1) (the law of a
    maximum; Gumbel-max sampling), reparameterized.

    Args:
        loc: the location (mode).
        scale: the scale, > 0.
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> Gumbel(0.0, 1.0).mean  # Euler's constant
        Tensor(0.5772157, dtype=float32)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        info = _finfo(self.loc.dtype)
        tiny, top = float(info.tiny), 1 - float(info.eps)
        if isinstance(loc, Number) and isinstance(scale, Number):
            base = Uniform(tiny, top, validate_args=validate_args)
        else:
            base = Uniform(ops.full_like(self.loc, tiny), ops.full_like(self.loc, top), validate_args=validate_args)
        transforms = [
            ExpTransform().inv,
            AffineTransform(loc=0.0, scale=-ops.ones_like(self.scale)),
            ExpTransform().inv,
            AffineTransform(loc=loc, scale=-self.scale),
        ]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Gumbel:
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = ops.broadcast_to(self.loc, tuple(batch_shape))
        new.scale = ops.broadcast_to(self.scale, tuple(batch_shape))
        return super().expand(batch_shape, new)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * _EULER

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + _EULER)

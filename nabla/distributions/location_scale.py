"""`LocationScale`, the shared base of Normal, Laplace and Cauchy."""

from __future__ import annotations

from typing import Any

from ..core.tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LocationScale"]


class LocationScale(Distribution):
    """A family whose draws are `loc + scale * eps` for a fixed standard draw `eps`: real
    values, reparameterized, with `loc` and `scale` broadcast together into the batch shape.

    Subclasses give the standard draw (`rsample`) and its density; each lists
    `_expand_params = ("loc", "scale")` itself, so that `expand` names it in its errors.

    Args:
        loc: the location (a Tensor or number).
        scale: the scale, > 0 (a Tensor or number).
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> d = nabla.distributions.Laplace(nabla.zeros(3), 2.0)
        >>> d.loc.shape, d.scale.shape, d.mode.shape
        ((3,), (3,), (3,))
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mode(self) -> Tensor:
        return self.loc

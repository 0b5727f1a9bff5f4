"""The multivariate normal distribution."""

from __future__ import annotations

import math
from typing import Any

from .. import linalg, ops
from ..core.tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    """Matrix times vector over broadcast batch dims."""
    return ops.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL: Tensor, bx: Tensor) -> Tensor:
    """|L^-1 x|^2 for lower-triangular L, over broadcast batch dims."""
    y = linalg.solve_triangular(bL, bx.unsqueeze(-1), upper=False).squeeze(-1)
    return y.pow(2).sum(-1)


def _precision_to_scale_tril(precision: Tensor) -> Tensor:
    """The lower Cholesky factor L of P^-1 (L L^T = P^-1) without inverting P: the Cholesky
    factor of the flipped P, flipped and transposed, is L^-1."""
    lf = linalg.cholesky(ops.flip(precision, (-2, -1)))
    l_inv = ops.flip(lf, (-2, -1)).mT
    eye = ops.eye(precision.shape[-1], dtype=precision.dtype)
    return linalg.solve_triangular(l_inv, ops.broadcast_to(eye, l_inv.shape), upper=False)


def _matrix_arg(m: Any, name: str) -> Tensor:
    if not isinstance(m, Tensor):
        raise TypeError(f"{name} must be a Tensor, got {type(m).__name__}")
    if m.ndim < 2:
        raise ValueError(f"{name} matrix must be at least two-dimensional, with optional leading batch dimensions")
    return m


class MultivariateNormal(Distribution):
    """A multivariate normal distribution with mean `loc` and covariance given by exactly one
    of `covariance_matrix`, `precision_matrix` (its inverse) or `scale_tril` (its lower
    Cholesky factor: the cheapest, nothing is factorized).

    Args:
        loc: the mean, shape (*batch_shape, D).
        covariance_matrix: positive-definite (*batch_shape, D, D).
        precision_matrix: positive-definite (*batch_shape, D, D).
        scale_tril: lower-triangular with a positive diagonal, (*batch_shape, D, D).
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> d = MultivariateNormal(nabla.zeros(2), covariance_matrix=nabla.eye(2))
        >>> d.rsample((5,)).shape, d.log_prob(nabla.zeros(2)).shape
        ((5, 2), ())
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True
    # (expand broadcasts whichever matrices are set; the factor they came from is shared)
    _expand_params = ("loc", "covariance_matrix", "precision_matrix", "scale_tril")
    _expand_shared = ("_unbroadcasted_scale_tril",)

    def __init__(
        self,
        loc: Tensor,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(loc, Tensor):
            raise TypeError(f"loc must be a Tensor, got {type(loc).__name__}")
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix), ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]  # fmt: skip
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        name, matrix = given[0]
        matrix = _matrix_arg(matrix, name)
        batch_shape = ops.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        setattr(self, name, ops.broadcast_to(matrix, batch_shape + tuple(matrix.shape[-2:])))
        self.loc = ops.broadcast_to(loc, batch_shape + tuple(loc.shape[-1:]))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @lazy_property
    def scale_tril(self) -> Tensor:
        return ops.broadcast_to(self._unbroadcasted_scale_tril, self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return ops.broadcast_to(ops.matmul(L, L.mT), self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        return ops.broadcast_to(ops.cholesky_inverse(self._unbroadcasted_scale_tril), self._matrix_shape())

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        var = self._unbroadcasted_scale_tril.pow(2).sum(-1)
        return ops.broadcast_to(var, tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = ops.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self) -> Tensor:
        return ops.diagonal(self._unbroadcasted_scale_tril, 0, -2, -1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self) -> Tensor:
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return ops.broadcast_to(h, tuple(self._batch_shape))

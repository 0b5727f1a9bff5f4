"""The multivariate normal with a low-rank-plus-diagonal covariance."""

from __future__ import annotations

import math
from typing import Any

from .. import linalg, ops
from ..core.tensor import Size, Tensor
from ..torch_functions import broadcast_tensors
from . import constraints
from .distribution import Distribution
from .multivariate_normal import _batch_mv
from .utils import lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _add_eye(k: Tensor) -> Tensor:
    return k + ops.eye(k.shape[-1], dtype=k.dtype)


def _batch_capacitance_tril(w: Tensor, d: Tensor) -> Tensor:
    """The Cholesky factor of I + W^T D^-1 W (m x m: the cheap side of the Woodbury identity)."""
    wt_dinv = w.mT / d.unsqueeze(-2)
    return linalg.cholesky(_add_eye(ops.matmul(wt_dinv, w)))


def _batch_lowrank_logdet(d: Tensor, capacitance_tril: Tensor) -> Tensor:
    """log det(W W^T + D) by the matrix determinant lemma."""
    return 2 * ops.diagonal(capacitance_tril, 0, -2, -1).log().sum(-1) + d.log().sum(-1)


def _batch_lowrank_mahalanobis(w: Tensor, d: Tensor, x: Tensor, capacitance_tril: Tensor) -> Tensor:
    """x^T (W W^T + D)^-1 x by the Woodbury identity."""
    wt_dinv_x = _batch_mv(w.mT / d.unsqueeze(-2), x)
    term1 = (x.pow(2) / d).sum(-1)
    batch = ops.broadcast_shapes(tuple(capacitance_tril.shape[:-2]), tuple(wt_dinv_x.shape[:-1]))
    m = capacitance_tril.shape[-1]
    lower = ops.broadcast_to(capacitance_tril, (*batch, m, m))
    rhs = ops.broadcast_to(wt_dinv_x, (*batch, m)).unsqueeze(-1)
    term2 = linalg.solve_triangular(lower, rhs, upper=False).squeeze(-1).pow(2).sum(-1)
    return term1 - term2


class LowRankMultivariateNormal(Distribution):
    """A multivariate normal whose covariance is `cov_factor @ cov_factor.mT + diag(cov_diag)`:
    log_prob and entropy cost O(n m^2) for rank m (Woodbury identity and determinant lemma)
    rather than O(n^3); a factor-analysis or low-rank variational posterior.

    Args:
        loc: the mean, shape (*batch_shape, n).
        cov_factor: the low-rank factor W, shape (*batch_shape, n, m).
        cov_diag: the diagonal D, > 0, shape (*batch_shape, n).
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> d = LowRankMultivariateNormal(nabla.zeros(3), nabla.ones(3, 1), nabla.ones(3))
        >>> d.covariance_matrix  # [[2, 1, 1], [1, 2, 1], [1, 1, 2]]
        >>> d.log_prob(nabla.zeros(3)).shape, d.rsample((4,)).shape
        ((), (4, 3))
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True
    # (expand broadcasts the parameters; the unbroadcasted ones and the factor made from them are shared)
    _expand_params = ("loc", "cov_factor", "cov_diag")
    _expand_shared = ("_unbroadcasted_cov_factor", "_unbroadcasted_cov_diag", "_capacitance_tril")

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor, validate_args: bool | None = None) -> None:
        for name, value, ndim in (("loc", loc, 1), ("cov_factor", cov_factor, 2), ("cov_diag", cov_diag, 1)):
            if not isinstance(value, Tensor):
                raise TypeError(f"{name} must be a Tensor, got {type(value).__name__}")
            if value.ndim < ndim:
                raise ValueError(
                    f"{name} must be at least {'one' if ndim == 1 else 'two'}-dimensional"
                    + (", with optional leading batch dimensions" if ndim == 2 else ".")
                )
        event_shape = tuple(loc.shape[-1:])
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = broadcast_tensors(loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except (RuntimeError, ValueError) as e:
            raise ValueError(
                f"Incompatible batch shapes: loc {tuple(loc.shape)}, cov_factor {tuple(cov_factor.shape)}, "
                f"cov_diag {tuple(cov_diag.shape)}"
            ) from e
        self.loc, self.cov_diag = loc_[..., 0], cov_diag_[..., 0]
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def _full(self, x: Tensor, matrix: bool = False) -> Tensor:
        event = tuple(self._event_shape) * (2 if matrix else 1)
        return ops.broadcast_to(x, (*tuple(self._batch_shape), *event))

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:  # type: ignore[override]
        return self._full(self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag)

    @lazy_property
    def scale_tril(self) -> Tensor:
        d_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        dinvsqrt_w = self._unbroadcasted_cov_factor / d_sqrt
        k = _add_eye(ops.matmul(dinvsqrt_w, dinvsqrt_w.mT))
        return self._full(d_sqrt * linalg.cholesky(k), matrix=True)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        w = self._unbroadcasted_cov_factor
        return self._full(ops.matmul(w, w.mT) + ops.diag_embed(self._unbroadcasted_cov_diag), matrix=True)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        wt_dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        lower = self._capacitance_tril
        batch = ops.broadcast_shapes(tuple(lower.shape[:-2]), tuple(wt_dinv.shape[:-2]))
        m = lower.shape[-1]
        a = linalg.solve_triangular(
            ops.broadcast_to(lower, (*batch, m, m)), ops.broadcast_to(wt_dinv, (*batch, *tuple(wt_dinv.shape[-2:]))),
            upper=False,
        )  # fmt: skip
        return self._full(ops.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - ops.matmul(a.mT, a), matrix=True)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        eps_w = ops.randn((*shape[:-1], self.cov_factor.shape[-1]), dtype=self.loc.dtype)
        eps_d = ops.randn(shape, dtype=self.loc.dtype)
        return self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w) + self._unbroadcasted_cov_diag.sqrt() * eps_d

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_lowrank_mahalanobis(
            self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, diff, self._capacitance_tril
        )
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + m)

    def entropy(self) -> Tensor:
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        return ops.broadcast_to(h, tuple(self._batch_shape)) if len(self._batch_shape) else h

    @property
    def param_shape(self) -> Size:
        return Size(self.loc.shape)

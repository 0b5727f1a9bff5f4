"""torch's top-level linear algebra that `nabla.linalg` has no name for: the randomized
`svd_lowrank` and `pca_lowrank`, and the deprecated `triangular_solve` that older scientific
code still calls. Composites of `nabla.ops` (QR by Householder reflections, SVD on the host),
so they differentiate as those do.

Example:
    >>> U, S, V = nabla.svd_lowrank(nabla.randn(50, 3) @ nabla.randn(3, 40), q=3)
    >>> U.shape, S.shape, V.shape
    ((50, 3), (3,), (40, 3))
"""

from __future__ import annotations

from typing import Any

from . import ops
from .core.common import dtypes as _dt
from .core.tensor import Tensor

__all__ = ["pca_lowrank", "svd_lowrank", "triangular_solve"]


def _matrix(x: Any, op: str, arg: str = "A") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")
    if x.ndim < 2 or not _dt.is_float(x.dtype):
        raise ValueError(f"{op}: {arg} must be a floating-point (..., m, n) tensor, got {x.dtype.name} {x.shape}")
    return x


def svd_lowrank(A: Any, q: int | None = 6, niter: int = 2, M: Any = None) -> tuple[Tensor, Tensor, Tensor]:  # noqa: N803
    """torch.svd_lowrank: `(U, S, V)` with `A - M ~= U diag(S) V^T` of rank `q`, by Halko et
    al.'s randomized range finder (a Gaussian sketch, `niter` power iterations, re-orthogonalized
    by QR each time) and an exact SVD of the small projected matrix.

    Args:
        A: (..., m, n), floating.
        q: the rank (at most min(m, n); default 6, or min(m, n) when smaller).
        niter: power iterations (more: more accurate for a slowly decaying spectrum).
        M: subtracted from A first (broadcast), e.g. the column means.

    Example:
        >>> U, S, V = nabla.svd_lowrank(nabla.randn(20, 2) @ nabla.randn(2, 10), q=2)
    """
    A = _matrix(A, "svd_lowrank")
    if M is not None:
        A = A - M
    m, n = A.shape[-2:]
    q = min(6, m, n) if q is None else q
    if not isinstance(q, int) or not 0 < q <= min(m, n):
        raise ValueError(f"svd_lowrank: q must be an int in [1, min(m, n) = {min(m, n)}], got {q!r}")
    At = ops.swapaxes(A, -1, -2)
    sketch = ops.randn(*A.shape[:-2], n, q, dtype=A.dtype)
    Q = ops.qr(A @ sketch).Q
    for _ in range(niter):
        Q = ops.qr(A @ ops.qr(At @ Q).Q).Q
    u, s, vh = ops.linalg_svd(ops.swapaxes(Q, -1, -2) @ A, full_matrices=False)
    return Q @ u, s, ops.swapaxes(vh, -1, -2)


def pca_lowrank(A: Any, q: int | None = None, center: bool = True, niter: int = 2) -> tuple[Tensor, Tensor, Tensor]:  # noqa: N803
    """torch.pca_lowrank: `svd_lowrank` of A with its column means subtracted (`center`); V's
    columns are the principal directions, S**2 / (m - 1) the variances along them.

    Args:
        A: (..., m, n) samples in rows, floating.
        q: the rank (default min(6, m, n)).
        center: subtract the column means first.
        niter: power iterations.
    """
    A = _matrix(A, "pca_lowrank")
    m, n = A.shape[-2:]
    q = min(6, m, n) if q is None else q
    return svd_lowrank(A, q, niter, ops.mean(A, axis=-2, keepdims=True) if center else None)


def triangular_solve(
    b: Any,
    A: Any,
    upper: bool = True,
    transpose: bool = False,
    unitriangular: bool = False,  # noqa: N803
) -> Any:
    """torch.triangular_solve (deprecated in torch for `linalg.solve_triangular`): `(solution,
    cloned_coefficient)` with `A X = b` (`A^T X = b` for transpose), A upper (default) or lower
    triangular; `Tensor.triangular_solve`."""
    return _matrix(b, "triangular_solve", "b").triangular_solve(
        _matrix(A, "triangular_solve"), upper, transpose, unitriangular
    )

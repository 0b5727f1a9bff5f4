"""torch.linalg's names for nabla's linear algebra (`nabla.linalg.norm(A)`, `nabla.linalg.solve`,
...). Everything is an op of `nabla.ops` (see `nabla/ops/linalg.py`, `linalg_matrix.py`,
`reduction.py`); `norm`, `diagonal` and `cross` are thin wrappers that give torch.linalg's
defaults where they differ from torch's top-level functions.

eigh, eigvalsh, svd, svdvals and what builds on them (pinv, matrix_rank, cond, lstsq, the
"nuc" and 2-norms) run LAPACK on the host when recorded (`nabla/ops/linalg_host.py`).

The `*_ex` variants return an `info` tensor (int32, one per matrix: 0 for success) instead of
raising, as torch's; with `check_errors=True` they read it and raise `LinAlgError` (a
RuntimeError, as torch's). Unlike torch, `cholesky`, `inv` and `solve` themselves do not raise
on a matrix that is not positive-definite or is singular: they are recorded lazily, before the
values exist, and give NaN/inf there (as JAX's do). A jitter loop that retries on the error
calls `cholesky_ex(A, check_errors=True)`, which reads the info (one evaluation).

Not built: eig / eigvals (general, complex results) and ldl_*.
"""

import math
from collections import namedtuple
from typing import Any

import numpy as np

from . import ops as _ops
from .core.common import dtypes as _dt
from .core.tensor import Tensor
from .ops import (
    cholesky,
    det,
    eigh,
    eigvalsh,
    householder_product,
    inv,
    lstsq,
    lu,
    lu_factor,
    lu_solve,
    matmul,
    matrix_exp,
    matrix_norm,
    matrix_power,
    matrix_rank,
    multi_dot,
    pinv,
    qr,
    slogdet,
    solve,
    solve_triangular,
    svdvals,
    vander,
    vecdot,
    vector_norm,
)
from .ops import cross as _cross
from .ops import diagonal as _diagonal
from .ops import linalg_cond as cond
from .ops import linalg_svd as svd


def norm(x: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A002
    """torch.linalg.norm: a vector norm over an int `dim` (or of the flattened tensor when both
    `ord` and `dim` are None), a matrix norm over a 2-tuple `dim` (or of a 2-D tensor with an
    `ord` and no `dim`)."""
    if dim is None:
        if ord is None:
            return vector_norm(x, 2, None, keepdim)
        if x.ndim == 2:
            return matrix_norm(x, ord, (-2, -1), keepdim)
        if x.ndim != 1:
            raise ValueError(f"linalg.norm: with ord and no dim, x must be 1-D or 2-D, got shape {x.shape}")
        return vector_norm(x, ord, None, keepdim)
    if isinstance(dim, int):
        return vector_norm(x, 2 if ord is None else ord, dim, keepdim)
    if len(tuple(dim)) == 2:
        return matrix_norm(x, "fro" if ord is None else ord, tuple(dim), keepdim)
    raise ValueError(f"linalg.norm: dim must be an int or a 2-tuple, got {dim!r}")


def diagonal(x: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """torch.linalg.diagonal: the diagonal of the last two dims by default."""
    return _diagonal(x, offset, dim1, dim2)


def cross(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """torch.linalg.cross: the cross product over `dim` (the last by default)."""
    return _cross(x, y, dim)


CholeskyExResult = namedtuple("CholeskyExResult", ["L", "info"])
InvExResult = namedtuple("InvExResult", ["inverse", "info"])
SolveExResult = namedtuple("SolveExResult", ["result", "info"])
LUFactorExResult = namedtuple("LUFactorExResult", ["LU", "pivots", "info"])


def _first_bad(bad: Tensor) -> Tensor:
    """Per matrix, 1 + the position of the first True of `bad` (..., n), or 0 where none is."""
    first = _ops.add(_ops.argmax(_ops.cast(bad, _dt.int32), -1), 1)
    return _ops.cast(_ops.where(_ops.any(bad, -1), first, 0), _dt.int32)


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: what the `*_ex` functions raise with `check_errors=True`."""


def _checked(info: Tensor, op: str, what: str, check_errors: bool) -> None:
    if check_errors:
        found = np.asarray(info.numpy()).reshape(-1)
        if found.any():
            raise LinAlgError(f"linalg.{op}: {what} (info = {int(found[found != 0][0])})")


def _lu_info(a: Any, pivot: bool = True) -> tuple[Any, Tensor]:
    """(lu_factor(a), info): info is 1 + the first zero of U's diagonal (a singular matrix)."""
    factored = lu_factor(a, pivot=pivot)
    return factored, _first_bad(_ops.equal(_diagonal(factored.LU, 0, -2, -1), 0.0))


def cholesky_ex(A: Any, *, upper: bool = False, check_errors: bool = False) -> CholeskyExResult:  # noqa: N803
    """torch.linalg.cholesky_ex: `(L, info)`; info is the order of the first leading minor that
    is not positive definite (0 when A is), where `cholesky`'s factor turns nan.

    Example:
        >>> L, info = nabla.linalg.cholesky_ex(nabla.tensor([[1.0, 2.0], [2.0, 1.0]]))
        >>> info.item()
        2
    """
    factor = cholesky(A, upper)
    # the first pivot that is not positive: 0 (a singular minor, sqrt(0)) or nan (a negative one)
    info = _first_bad(_ops.logical_not(_ops.greater(_diagonal(factor, 0, -2, -1), 0)))
    _checked(info, "cholesky_ex", "the input is not positive-definite", check_errors)
    return CholeskyExResult(factor, info)


def inv_ex(A: Any, *, check_errors: bool = False) -> InvExResult:  # noqa: N803
    """torch.linalg.inv_ex: `(inverse, info)`; info is 1 + the first zero pivot of A's LU
    factorization (0 when A is invertible), which also gives the inverse (`lu_solve` of I)."""
    factored, info = _lu_info(A)
    _checked(info, "inv_ex", "the input is singular", check_errors)
    lu_data = factored.LU
    eye = _ops.broadcast_to(_ops.eye(lu_data.shape[-1], dtype=lu_data.dtype), lu_data.shape)
    return InvExResult(lu_solve(lu_data, factored.pivots, eye), info)


def solve_ex(A: Any, B: Any, *, left: bool = True, check_errors: bool = False) -> SolveExResult:  # noqa: N803
    """torch.linalg.solve_ex: `(solve(A, B), info)`, info as in `inv_ex` (A is factored twice:
    `solve` eliminates on [A | B], with its broadcasting and vector rules)."""
    _, info = _lu_info(A)
    _checked(info, "solve_ex", "the input is singular", check_errors)
    return SolveExResult(solve(A, B, left=left), info)


def lu_factor_ex(A: Any, *, pivot: bool = True, check_errors: bool = False) -> LUFactorExResult:  # noqa: N803
    """torch.linalg.lu_factor_ex: `(LU, pivots, info)`, info as in `inv_ex`."""
    factored, info = _lu_info(A, pivot)
    _checked(info, "lu_factor_ex", "U is singular", check_errors)
    return LUFactorExResult(factored.LU, factored.pivots, info)


def tensorinv(A: Any, ind: int = 2) -> Tensor:  # noqa: N803
    """torch.linalg.tensorinv: the inverse of A for `tensordot` over its first `ind` dims: A
    reshaped to a (prod(shape[:ind]), prod(shape[ind:])) square matrix, inverted, and shaped
    shape[ind:] + shape[:ind]."""
    a = _ops.asarray(A)
    if isinstance(ind, bool) or not isinstance(ind, int) or ind <= 0:
        raise ValueError(f"linalg.tensorinv: ind must be a positive int, got {ind!r}")
    rows, cols = math.prod(a.shape[:ind]), math.prod(a.shape[ind:])
    if rows != cols:
        raise ValueError(
            f"linalg.tensorinv: the product of the first {ind} dims must equal that of the rest, got shape {a.shape}"
        )
    out = inv(_ops.reshape(a, (rows, cols)))
    return _ops.reshape(out, (*a.shape[ind:], *a.shape[:ind]))


def tensorsolve(A: Any, B: Any, dims: Any = None) -> Tensor:  # noqa: N803
    """torch.linalg.tensorsolve: X with `tensordot(A, X, X.ndim) == B`: A's dims `dims` moved
    last, A reshaped to a (B.numel(), prod(rest)) square matrix and solved against B."""
    a, b = _ops.asarray(A), _ops.asarray(B)
    if dims is not None:
        moved = [d % a.ndim for d in dims]
        a = _ops.permute(a, [d for d in range(a.ndim) if d not in moved] + moved)
    x_shape = a.shape[b.ndim :]
    rows, cols = b.numel(), math.prod(x_shape)
    if a.shape[: b.ndim] != b.shape or rows != cols:
        raise ValueError(
            f"linalg.tensorsolve: A's leading dims must be B's {b.shape} and the rest hold as many elements, "
            f"got A {a.shape}"
        )
    x = solve(_ops.reshape(a, (rows, cols)), _ops.reshape(b, (rows, 1)))
    return _ops.reshape(x, x_shape)


__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "householder_product",
    "inv",
    "inv_ex",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_triangular",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "vander",
    "vecdot",
    "vector_norm",
]

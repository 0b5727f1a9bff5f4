"""The LU factorization and what is built on it (torch.linalg's lu_factor, lu, lu_solve, det,
slogdet; torch's lu_unpack and logdet): composites of argmax, where, matmul, reductions and
shape ops, so their derivatives, MAX lowering and vmap come from those ops.

One elimination serves them all: Gaussian elimination with partial pivoting (LAPACK getrf's
choice: the largest |entry| of the column at or below the diagonal, the first of ties),
unrolled over the min(m, n) columns, so the graph grows linearly with the size (static
structure: nothing branches on values). The row swaps are recorded as LAPACK's 1-based `pivots`
(int32); the permutation they make is applied as a one-hot matrix product. A zero pivot is
divided as 1, so a singular matrix stays finite: det 0, slogdet (0, -inf).
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import numpy as np

from ..core.common import dtypes as _dt
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import control_flow as _cf
from . import reduction as _red
from . import unary as _un
from .base import public
from .cast import cast
from .creation import eye, zeros
from .indexing import getitem
from .linalg import raw_matmul as matmul
from .linalg_matrix import _const, _float_tensor, _mT, _square, _swap_in_pivot, _working, solve_triangular
from .shape import stack
from .triangular import diagonal, tril, triu
from .view import broadcast_to, unsqueeze

__all__ = ["det", "logdet", "lu", "lu_factor", "lu_solve", "lu_unpack", "slogdet"]

LUFactorResult = namedtuple("LUFactorResult", ["LU", "pivots"])
LUResult = namedtuple("LUResult", ["P", "L", "U"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])


def _eliminate(a: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(LU, pivots, sign, singular): U on and above the diagonal and L's multipliers below it,
    the 0-based pivot row of each step (..., k) (int64), the sign of the row permutation (...,)
    and whether a pivot was exactly 0 (...,)."""
    m, n = a.shape[-2], a.shape[-1]
    rows = np.arange(m)
    cols_t = _const(np.arange(n))
    sign = _bin.add(_red.sum(_bin.mul(a, 0.0), axis=(-2, -1)), 1.0)
    singular = _bin.ne(sign, sign)  # all False, of the batch's shape
    pivots = []
    for j in range(min(m, n)):
        a, p, row_p = _swap_in_pivot(a, j)
        p = getitem(p, (Ellipsis, 0))
        sign = _cf.where(_bin.ne(p, j), _un.neg(sign), sign)
        pivots.append(p)
        pivot = getitem(row_p, (Ellipsis, 0, j))
        zero = _bin.eq(pivot, 0.0)
        singular = _bin.logical_or(singular, zero)
        below = _const(rows > j)
        factors = _bin.div(getitem(a, (Ellipsis, slice(None), j)), unsqueeze(_cf.where(zero, 1.0, pivot), -1))
        factors = _cf.where(below, factors, 0.0)
        update = _bin.mul(unsqueeze(factors, -1), row_p)
        a = _bin.sub(a, _cf.where(_bin.greater(cols_t, j), update, 0.0))  # the trailing columns
        a = _cf.where(_bin.logical_and(unsqueeze(below, -1), _bin.eq(cols_t, j)), unsqueeze(factors, -1), a)
    if not pivots:  # (an empty matrix: no steps)
        return a, zeros(*a.shape[:-2], 0, dtype=_dt.int64), sign, singular
    return a, stack(pivots, axis=-1), sign, singular


def _permutation(pivots: Tensor, m: int, dtype: Any) -> Tensor:
    """P (..., m, m) with A = P L U from 0-based pivots (..., k): the swaps applied in turn to
    the row order 0..m-1 give perm, and P[perm[i], i] = 1."""
    rows = _const(np.arange(m))
    perm = broadcast_to(rows, pivots.shape[:-1] + (m,))
    for j in range(pivots.shape[-1]):
        p = getitem(pivots, (Ellipsis, slice(j, j + 1)))
        at_p = _bin.eq(rows, p)
        from_p = _red.sum(_cf.where(at_p, perm, 0), axis=-1, keepdims=True)
        from_j = getitem(perm, (Ellipsis, slice(j, j + 1)))
        perm = _cf.where(_bin.eq(rows, j), from_p, _cf.where(at_p, from_j, perm))
    return cast(_bin.eq(unsqueeze(rows, -1), unsqueeze(perm, -2)), dtype)


def _factor(a: Any, op: str) -> tuple[Tensor, Tensor, Tensor, Tensor, Any]:
    a = _float_tensor(a, op, "A", 2)
    (a,), dtype = _working(a)
    lu_, pivots, sign, singular = _eliminate(a)
    return lu_, pivots, sign, singular, dtype


@public()
def lu_factor(a: Any, *, pivot: bool = True) -> LUFactorResult:
    """The LU factorization with partial pivoting in LAPACK's compact form
    (torch.linalg.lu_factor): `(LU, pivots)` with U on and above LU's diagonal, L's multipliers
    below it (L's unit diagonal implicit) and the 1-based row swaps `pivots` (int32, (..., k),
    k = min(m, n)). Differentiable in LU.

    Args:
        a: (..., m, n), floating.
        pivot: only True (torch runs without pivoting on CUDA only).

    Example:
        >>> lu, pivots = nabla.lu_factor(nabla.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> pivots.numpy()
        array([2, 2], dtype=int32)
    """
    if not pivot:
        raise ValueError("lu_factor: pivot=False is not supported (torch supports it on CUDA only)")
    lu_, pivots, _, _, dtype = _factor(a, "lu_factor")
    return LUFactorResult(cast(lu_, dtype), cast(_bin.add(pivots, 1), _dt.int32))


def _unpack(lu_: Tensor, pivots: Tensor) -> LUResult:
    """(P, L, U) from the compact factors and 0-based pivots."""
    m, n = lu_.shape[-2], lu_.shape[-1]
    k = min(m, n)
    lower = _bin.add(tril(getitem(lu_, (Ellipsis, slice(None), slice(0, k))), -1), eye(m, k, dtype=lu_.dtype))
    upper = triu(getitem(lu_, (Ellipsis, slice(0, k), slice(None))))
    return LUResult(_permutation(pivots, m, lu_.dtype), lower, upper)


@public()
def lu(a: Any, *, pivot: bool = True) -> LUResult:
    """`(P, L, U)` with A = P L U (torch.linalg.lu): P a permutation, L (..., m, k) unit lower
    triangular, U (..., k, n) upper triangular. Differentiable in L and U.

    Example:
        >>> p, l, u = nabla.lu(nabla.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> (p @ l @ u).numpy()
        array([[1., 2.],
               [3., 4.]], dtype=float32)
    """
    if not pivot:
        raise ValueError("lu: pivot=False is not supported (torch supports it on CUDA only)")
    lu_, pivots, _, _, dtype = _factor(a, "lu")
    return LUResult(*(cast(t, dtype) for t in _unpack(lu_, pivots)))


@public()
def lu_unpack(lu_data: Any, lu_pivots: Any) -> LUResult:
    """`(P, L, U)` from `lu_factor`'s compact factors (torch.lu_unpack)."""
    lu_data = _float_tensor(lu_data, "lu_unpack", "LU_data", 2)
    pivots = _pivots(lu_pivots, lu_data, "lu_unpack")
    return LUResult(*_unpack(lu_data, pivots))


def _pivots(pivots: Any, lu_data: Tensor, op: str) -> Tensor:
    if not isinstance(pivots, Tensor) or not _dt.is_integer(pivots.dtype):
        raise TypeError(f"{op}: pivots must be an integer Tensor (lu_factor's), got {type(pivots).__name__}")
    k = min(lu_data.shape[-2], lu_data.shape[-1])
    if tuple(pivots.shape) != tuple(lu_data.shape[:-2]) + (k,):
        raise ValueError(f"{op}: pivots must have shape {tuple(lu_data.shape[:-2]) + (k,)}, got {pivots.shape}")
    return _bin.sub(cast(pivots, _dt.int64), 1)


@public()
def lu_solve(lu_data: Any, pivots: Any, b: Any, *, left: bool = True, adjoint: bool = False) -> Tensor:
    """The solution X of `A X = B` from A's `lu_factor` (torch.linalg.lu_solve); `adjoint=True`
    solves A^T X = B, `left=False` X A = B. Two triangular solves and the permutation.

    Args:
        lu_data, pivots: `lu_factor(A)` of square A (..., n, n).
        b: (..., n, k) (or (..., k, n) for left=False).
    """
    lu_data = _float_tensor(lu_data, "lu_solve", "LU", 2)
    _square(lu_data, "lu_solve")
    b = _float_tensor(b, "lu_solve", "B", 2)
    piv = _pivots(pivots, lu_data, "lu_solve")
    n = lu_data.shape[-1]
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return _mT(lu_solve(lu_data, pivots, _mT(b), adjoint=not adjoint))
    p = _permutation(piv, n, lu_data.dtype)
    if not adjoint:  # P L U X = B
        y = solve_triangular(lu_data, matmul(_mT(p), b), upper=False, unitriangular=True)
        return solve_triangular(lu_data, y, upper=True)
    # U^T L^T P^T X = B
    z = solve_triangular(_mT(lu_data), b, upper=False)
    return matmul(p, solve_triangular(_mT(lu_data), z, upper=True, unitriangular=True))


# -- determinants -----------------------------------------------------------------------------------
def _determinant_parts(a: Any, op: str) -> tuple[Tensor, Tensor, Tensor, Any]:
    """U's diagonal (..., n), the permutation's sign and the singular flag, by elimination."""
    a = _float_tensor(a, op, "A", 2)
    _square(a, op)
    (a,), dtype = _working(a)
    if a.shape[-1] == 0:
        ones = _bin.add(_red.sum(a, axis=(-2, -1)), 1.0)
        return unsqueeze(ones, -1), ones, _bin.ne(ones, ones), dtype
    lu_, _, sign, singular = _eliminate(a)
    return diagonal(lu_, 0, -2, -1), sign, singular, dtype


@public()
def det(a: Any) -> Tensor:
    """Determinants of square matrices (torch.linalg.det): the product of the pivots of
    Gaussian elimination with partial pivoting (O(n) ops), 0 for a singular matrix.
    Differentiable where the matrix is invertible.

    Args:
        a: (..., n, n), floating.

    Example:
        >>> nabla.det(nabla.tensor([[2.0, 1.0], [1.0, 3.0]])).item()
        5.0
    """
    pivots, sign, singular, dtype = _determinant_parts(a, "det")
    out = _bin.mul(sign, _red.prod(pivots, axis=-1))
    return cast(_cf.where(singular, 0.0, out), dtype)


@public()
def slogdet(a: Any) -> SlogdetResult:
    """`(sign, logabsdet)` of square matrices (torch.linalg.slogdet): det = sign * exp(logabsdet)
    without overflow; a singular matrix gives (0, -inf). Differentiable where invertible.

    Args:
        a: (..., n, n), floating.
    """
    pivots, sign, singular, dtype = _determinant_parts(a, "slogdet")
    sign = _bin.mul(sign, _red.prod(_un.sign(pivots), axis=-1))
    logabs = _red.sum(_un.log(_un.abs(_cf.where(_bin.eq(pivots, 0.0), 1.0, pivots))), axis=-1)
    sign = _cf.where(singular, 0.0, sign)
    logabs = _cf.where(singular, -math.inf, logabs)
    return SlogdetResult(cast(sign, dtype), cast(logabs, dtype))


@public()
def logdet(a: Any) -> Tensor:
    """log(det(A)) (torch.logdet): nan for a negative determinant, -inf for a singular matrix."""
    sign, logabs = slogdet(a)
    return _cf.where(_bin.less(sign, 0.0), math.nan, logabs)

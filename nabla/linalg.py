"""torch.linalg's names for nabla's linear algebra (`nabla.linalg.norm(A)`, `nabla.linalg.solve`,
...). Everything is an op of `nabla.ops` (see `nabla/ops/linalg.py`, `linalg_matrix.py`,
`reduction.py`); `norm`, `diagonal` and `cross` are thin wrappers that give torch.linalg's
defaults where they differ from torch's top-level functions.

eigh, eigvalsh, svd, svdvals and what builds on them (pinv, matrix_rank, cond, lstsq, the
"nuc" and 2-norms) run LAPACK on the host when recorded (`nabla/ops/linalg_host.py`).

Not built: eig / eigvals (general, complex results), ldl_*, tensorinv/tensorsolve and the
`*_ex` variants.
"""

from typing import Any

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


__all__ = [
    "cholesky",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "householder_product",
    "inv",
    "lstsq",
    "lu",
    "lu_factor",
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
    "solve_triangular",
    "svd",
    "svdvals",
    "vander",
    "vecdot",
    "vector_norm",
]

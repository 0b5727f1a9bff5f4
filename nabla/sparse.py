"""torch.sparse's construction and products, on dense storage.

nabla has no sparse layout. `sparse_coo_tensor(indices, values, size)` builds the dense tensor
(duplicate indices summed, as torch's `coalesce` does; differentiable in `values`), and
`sparse.mm` / `sparse.addmm` are dense matrix products, so a program written around torch's
sparse adjacency (a GCN's normalized A, `torch.sparse.mm(A, h)`) runs unchanged and gives
torch's values. The cost is the dense tensor's memory and a dense matmul: fine for graphs of a
few thousand nodes. For larger ones, write the edge-list form (`h[src]` gathered, then
`index_add_` over `dst`), which nabla runs as gather/scatter ops.

`Tensor.to_dense()` / `to_sparse()` / `coalesce()` return the tensor itself and `is_sparse` is
False. The sparse-only reductions whose meaning differs on dense storage (`sparse.softmax`,
which treats unspecified entries as -inf) are not provided.

Example:
    >>> A = nabla.sparse_coo_tensor([[0, 1, 1], [1, 0, 0]], [1.0, 2.0, 3.0], (2, 2))
    >>> A.tolist()
    [[0.0, 1.0], [5.0, 0.0]]
    >>> nabla.sparse.mm(A, nabla.ones(2, 1)).tolist()
    [[1.0], [5.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import ops
from .core.common import dtypes as _dt
from .core.tensor import Tensor
from .ops.linalg import _as_tensor

__all__ = ["FloatTensor", "addmm", "mm", "sparse_coo_tensor", "sparse_csr_tensor", "sum"]


def sparse_coo_tensor(
    indices: Any,
    values: Any,
    size: Any = None,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    check_invariants: Any = None,
    is_coalesced: Any = None,
) -> Tensor:
    """torch.sparse_coo_tensor, as the dense tensor it stands for (see the module doc).

    Args:
        indices: (sparse_dims, nnz) integer coordinates.
        values: (nnz, *dense_dims) values; entries at the same coordinates are summed.
        size: the full shape (default: the largest index + 1 per sparse dim, then values' dims).
        dtype: the values' dtype (default: values').
        device: where to place the result.
        requires_grad: make the result a leaf that requires grad.
    """
    idx = _as_tensor(indices, "sparse_coo_tensor", "indices")
    vals = _as_tensor(values, "sparse_coo_tensor", "values")
    vals = vals if dtype is None else vals.to(dtype)
    if idx.ndim != 2 or not _dt.is_integer(idx.dtype):
        raise ValueError(f"sparse_coo_tensor: indices must be a 2-D integer tensor, got {idx.dtype.name} {idx.shape}")
    sparse_dims, nnz = idx.shape
    if vals.ndim < 1 or vals.shape[0] != nnz:
        raise ValueError(
            f"sparse_coo_tensor: values must have nnz = {nnz} rows (indices {idx.shape}), got {vals.shape}"
        )
    if size is None:
        top = idx.numpy().max(axis=1) + 1 if nnz else np.zeros(sparse_dims, dtype=np.int64)
        size = (*(int(t) for t in top), *vals.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dims + vals.ndim - 1 or tuple(size[sparse_dims:]) != tuple(vals.shape[1:]):
        raise ValueError(
            f"sparse_coo_tensor: size {size} must be {sparse_dims} sparse dims then values' dense dims "
            f"{tuple(vals.shape[1:])}"
        )
    out = ops.zeros(size, dtype=vals.dtype).index_put(tuple(idx[d] for d in range(sparse_dims)), vals, True)
    if device is not None:
        out = out.to(device)
    return out.detach().requires_grad_(True) if requires_grad else out


def sparse_csr_tensor(crow_indices: Any, col_indices: Any, values: Any, size: Any = None, **kwargs: Any) -> Tensor:
    """torch.sparse_csr_tensor (a 2-D matrix in compressed rows), as its dense tensor."""
    crow = np.asarray(_as_tensor(crow_indices, "sparse_csr_tensor", "crow_indices").numpy(), dtype=np.int64)
    rows = np.repeat(np.arange(len(crow) - 1), np.diff(crow))
    cols = _as_tensor(col_indices, "sparse_csr_tensor", "col_indices")
    indices = ops.stack([ops.tensor(rows, dtype=_dt.int64), cols.to(_dt.int64)])
    if size is None:
        size = (len(crow) - 1, int(cols.numpy().max()) + 1 if cols.numel() else 0)
    return sparse_coo_tensor(indices, values, size, **kwargs)


def FloatTensor(indices: Any, values: Any, size: Any = None) -> Tensor:  # noqa: N802 (torch.sparse.FloatTensor)
    """torch.sparse.FloatTensor(indices, values, size): the legacy float32 constructor."""
    return sparse_coo_tensor(indices, values, size, dtype=_dt.float32)


def mm(sparse: Tensor, dense: Tensor) -> Tensor:
    """torch.sparse.mm: the matrix product (dense here)."""
    return ops.matmul(sparse, dense)


def addmm(mat: Any, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """torch.sparse.addmm: beta * mat + alpha * (mat1 @ mat2)."""
    return ops.addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input: Tensor, dim: Any = None, dtype: Any = None) -> Tensor:  # noqa: A001 (torch.sparse.sum)
    """torch.sparse.sum: the sum over `dim` (all dims for None)."""
    x = input if dtype is None else input.to(dtype)
    return ops.sum(x) if dim is None else ops.sum(x, axis=dim)

"""Matrix structure over the last dims of a tensor: tril/triu (a triangle kept, the rest
zeroed) and diagonal (with its gradient, a diagonal embedded in zeros).

Rules receive physical (batch-shifted) kwargs; they call ops with logical ones.

Sharding: tril/triu keep every dim split, each device masking its piece with the diagonal
shifted by where the piece starts (`local_kwargs`); diagonal keeps a split dim by selecting
and summing locally (`_diagonal_over_pieces`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.tensor.impl import TensorImpl
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import control_flow as _cf
from . import creation as _cr
from . import reduction as _red
from ._sharding import picked
from .base import AVal, Operation, public
from .rearrange import moveaxis
from .shape import _check_tensor, _empty, _int, _shift, _slice, _static_shape, _zero_pad
from .spmd import windowable
from .view import normalize_axis, permute, reshape, unsqueeze

__all__ = ["diag", "diag_embed", "diagflat", "diagonal", "diagonal_scatter", "tril", "triu"]


# -- tril / triu -------------------------------------------------------------------------------
class _TriangleOp(Operation):
    """Keep the lower (tril) or upper (triu) triangle of the last two dims; zero the rest."""

    lower = True
    # Every dim stays sharded: a device's piece is masked with the diagonal shifted by where
    # the piece starts (`local_kwargs`).
    sharding_rule = "elementwise"
    partial_ok = "additive"
    position_dependent = True

    def abstract_eval(self, x: AVal, *, diagonal: int) -> AVal:
        if len(x[0]) < 2:
            raise ValueError(f"{self.name}: expected a tensor of rank >= 2, got shape {x[0]}")
        return x

    def local_kwargs(
        self, kwargs: dict, in_avals: list, out_shapes: list, offsets: list | None = None, sizes: list | None = None
    ) -> dict:
        # local (i, j) is global (r0 + i, c0 + j): col - row <= k there is j - i <= k + r0 - c0
        if offsets is None or offsets[0] is None:
            return kwargs
        r0, c0 = offsets[0][-2:]
        return {"diagonal": kwargs["diagonal"] + r0 - c0} if r0 != c0 else kwargs

    def kernel(self, x: Any, *, diagonal: int) -> Any:
        *_, m, n = _static_shape(x)
        if m == 0 or n == 0:
            return x
        rows = ops.reshape(ops.range(0, m, 1, out_dim=m, dtype=_dt.int64, device=x.device), (m, 1))
        cols = ops.reshape(ops.range(0, n, 1, out_dim=n, dtype=_dt.int64, device=x.device), (1, n))
        k = ops.constant(diagonal, _dt.int64, x.device)
        # tril keeps col - row <= k; triu keeps col - row >= k
        keep = ops.greater_equal(k, cols - rows) if self.lower else ops.greater_equal(cols - rows, k)
        zero = ops.constant(False if x.dtype == _dt.bool_ else 0, x.dtype, x.device)
        return ops.where(ops.broadcast_to(keep, x.shape), x, zero)

    def numpy_kernel(self, x: np.ndarray, *, diagonal: int) -> np.ndarray:
        return np.tril(x, diagonal) if self.lower else np.triu(x, diagonal)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, diagonal: int) -> list:
        return [self(cotangents[0], diagonal=diagonal)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, diagonal: int) -> list:
        return [self(tangents[0], diagonal=diagonal)]


class TrilOp(_TriangleOp):
    name = "tril"
    lower = True


class TriuOp(_TriangleOp):
    name = "triu"
    lower = False


_tril, _triu = TrilOp(), TriuOp()


def _triangle(op: _TriangleOp, x: Tensor, diagonal: Any) -> Tensor:
    _check_tensor(x, op.name)
    diagonal = _int(diagonal, op.name, "diagonal")
    if x.ndim < 2:
        raise ValueError(f"{op.name}: expected a tensor of rank >= 2, got shape {x.shape}")
    return op(x, diagonal=diagonal)


@public()
def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """Lower triangle of the last two dims (elements with col - row <= diagonal), rest zero."""
    return _triangle(_tril, x, diagonal)


@public()
def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """Upper triangle of the last two dims (elements with col - row >= diagonal), rest zero."""
    return _triangle(_triu, x, diagonal)


# -- diagonal ----------------------------------------------------------------------------------
def _diag_len(n1: int, n2: int, offset: int) -> int:
    return max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))


class DiagonalOp(Operation):
    """The diagonal of dims (axis1, axis2), appended as the last dim (as torch/NumPy)."""

    name = "diagonal"

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        return {
            "offset": kwargs["offset"],
            "axis1": _shift(kwargs["axis1"], batch_dims),
            "axis2": _shift(kwargs["axis2"], batch_dims),
        }

    def abstract_eval(self, x: AVal, *, offset: int, axis1: int, axis2: int) -> AVal:
        shape = x[0]
        rest = tuple(s for i, s in enumerate(shape) if i not in (axis1, axis2))
        return rest + (_diag_len(shape[axis1], shape[axis2], offset),), x[1]

    sharding_rule_for = picked(  # the other dims, then the diagonal (a new dim)
        lambda kw, rank, n: (
            [[*(d for d in range(rank) if d not in (kw["axis1"], kw["axis2"])), None]],
            (kw["axis1"], kw["axis2"]),
        )
    )

    def kernel(self, x: Any, *, offset: int, axis1: int, axis2: int) -> Any:
        shape = _static_shape(x)
        n1, n2 = shape[axis1], shape[axis2]
        rest = tuple(s for i, s in enumerate(shape) if i not in (axis1, axis2))
        length = _diag_len(n1, n2, offset)
        if length == 0 or 0 in rest:
            return _empty(rest + (length,), x.dtype, x.device)
        perm = [i for i in range(len(shape)) if i not in (axis1, axis2)] + [axis1, axis2]
        if perm != list(range(len(shape))):
            x = ops.permute(x, perm)
        flat = ops.reshape(x, rest + (n1 * n2,))
        start = offset if offset >= 0 else -offset * n2
        index = start + (n2 + 1) * np.arange(length, dtype=np.int64)
        return ops.gather(flat, ops.constant(index, _dt.int64, x.device), len(rest))

    def numpy_kernel(self, x: np.ndarray, *, offset: int, axis1: int, axis2: int) -> np.ndarray:
        return np.diagonal(x, offset, axis1, axis2).copy()

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, offset: int, axis1: int, axis2: int):
        x = primals[0]
        a1, a2 = axis1, axis2
        return [_diag_embed(cotangents[0], x.shape, offset, a1, a2)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, offset: int, axis1: int, axis2: int):
        return [_diagonal(tangents[0], offset=offset, axis1=axis1, axis2=axis2)]


_diagonal = DiagonalOp()


def _diag_embed(g: Tensor, shape: tuple, offset: int, a1: int, a2: int) -> Tensor:
    """Transpose of `diagonal`: `g` (..., L) placed on the diagonal of zeros of `shape`.

    In the row-major flattening of the (n1, n2) plane the diagonal sits at start + i*(n2+1):
    append n2 zeros to each entry, flatten, and shift/crop to length n1*n2.
    """
    n1, n2 = shape[a1], shape[a2]
    length = g.shape[-1]
    rest = tuple(s for i, s in enumerate(shape) if i not in (a1, a2))
    if length == 0:
        h = _cr.zeros(rest + (n1, n2), dtype=g.dtype)
    else:
        start = offset if offset >= 0 else -offset * n2
        h = _zero_pad(unsqueeze(g, g.ndim), g.ndim, 0, n2)
        h = reshape(h, rest + (length * (n2 + 1),))
        h = _zero_pad(h, len(rest), start, n1 * n2 - start - length * (n2 + 1))
        h = reshape(h, rest + (n1, n2))
    perm = [i for i in range(len(shape)) if i not in (a1, a2)] + [a1, a2]
    return permute(h, tuple(int(i) for i in np.argsort(perm)))


@public()
def diagonal(
    x: Tensor, offset: int = 0, axis1: int = 0, axis2: int = 1, *, dim1: Any = None, dim2: Any = None
) -> Tensor:
    """The diagonal with `offset` of dims (axis1, axis2), moved to the last dim (as `torch.diagonal`;
    `dim1=`/`dim2=` are accepted as in PyTorch).

    Example:
        >>> nb.diagonal(nb.ones(2, 3, 3), 0, 1, 2).shape
        (2, 3)
    """
    _check_tensor(x, "diagonal")
    axis1 = axis1 if dim1 is None else dim1
    axis2 = axis2 if dim2 is None else dim2
    offset = _int(offset, "diagonal", "offset")
    if x.ndim < 2:
        raise ValueError(f"diagonal: expected a tensor of rank >= 2, got shape {x.shape}")
    a1 = normalize_axis(axis1, x.ndim, "diagonal", "dim1")
    a2 = normalize_axis(axis2, x.ndim, "diagonal", "dim2")
    if a1 == a2:
        raise ValueError(f"diagonal: dim1 and dim2 must differ, both are {a1}")
    if _dt.is_float(x.dtype) and (windowable(x, a1) or windowable(x, a2)):
        return _diagonal_over_pieces(x, offset, a1, a2)
    return _diagonal(x, offset=offset, axis1=a1, axis2=a2)


def _diagonal_over_pieces(x: Tensor, offset: int, a1: int, a2: int) -> Tensor:
    """`diagonal` of a tensor split along dim a1 or a2, without gathering it: the entries off
    the diagonal are zeroed (selected, so inf or nan there cannot leak) and summed away along
    the other dim, which keeps the split one; its diagonal part is then windowed out."""
    n1, n2 = x.shape[a1], x.shape[a2]
    keep, other = (a1, a2) if windowable(x, a1) else (a2, a1)
    rows = reshape(_cr.arange(n1), tuple(n1 if d == a1 else 1 for d in range(x.ndim)))
    cols = reshape(_cr.arange(n2), tuple(n2 if d == a2 else 1 for d in range(x.ndim)))
    on = _bin.equal(_bin.sub(cols, rows), offset)
    kept = _red.sum(_cf.where(on, x, _cr.zeros((), dtype=x.dtype)), other)  # the split dim remains
    k = keep - (other < keep)
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    first = max(0, -offset) if keep == a1 else max(0, offset)
    part = _slice(kept, k, first, first + length) if length else _slice(kept, k, 0, 0)
    return moveaxis(part, k, -1)


@public()
def diagonal_scatter(x: Tensor, src: Tensor, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
    """x with its diagonal (`diagonal(x, offset, axis1, axis2)`) replaced by `src`, which has that
    diagonal's shape (`torch.diagonal_scatter`, `dim1=`/`dim2=` as axis1/axis2); gradients reach both."""
    _check_tensor(x, "diagonal_scatter")
    _check_tensor(src, "diagonal_scatter", "src")
    want = diagonal(x, offset, axis1, axis2).shape
    if tuple(src.shape) != tuple(want):
        raise ValueError(f"diagonal_scatter: src must have the diagonal's shape {want}, got {src.shape}")
    a1, a2 = (
        normalize_axis(axis1, x.ndim, "diagonal_scatter", "dim1"),
        normalize_axis(axis2, x.ndim, "diagonal_scatter", "dim2"),
    )
    rows = reshape(_cr.arange(x.shape[a1]), tuple(x.shape[a1] if d == a1 else 1 for d in range(x.ndim)))
    cols = reshape(_cr.arange(x.shape[a2]), tuple(x.shape[a2] if d == a2 else 1 for d in range(x.ndim)))
    on = _bin.equal(_bin.sub(cols, rows), _int(offset, "diagonal_scatter", "offset"))
    embedded = _diag_embed(src.astype(x.dtype), x.shape, int(offset), a1, a2)
    return _cf.where(on, embedded, x)


@public()
def diag_embed(x: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices with the last dim of `x` on their `offset` diagonal (torch.diag_embed): a
    (..., n) input gives (..., n + |offset|, n + |offset|) with the new dims at dim1, dim2 of
    the result; zeros elsewhere.

    Example:
        >>> nb.diag_embed(nb.ones(2, 3)).shape
        (2, 3, 3)
    """
    _check_tensor(x, "diag_embed")
    offset = _int(offset, "diag_embed", "offset")
    if x.ndim < 1:
        raise ValueError(f"diag_embed: expected a tensor of rank >= 1, got shape {x.shape}")
    a1 = normalize_axis(dim1, x.ndim + 1, "diag_embed", "dim1")
    a2 = normalize_axis(dim2, x.ndim + 1, "diag_embed", "dim2")
    if a1 == a2:
        raise ValueError(f"diag_embed: dim1 and dim2 must differ, both are {a1}")
    m = x.shape[-1] + abs(offset)
    rest = iter(x.shape[:-1])
    shape = tuple(m if d in (a1, a2) else next(rest) for d in range(x.ndim + 1))
    return _diag_embed(x, shape, offset, a1, a2)


_take_diagonal = diagonal  # diag's argument is named `diagonal`, as torch's


@public()
def diag(x: Tensor, diagonal: int = 0) -> Tensor:
    """torch.diag: a 1-D `x` becomes a square matrix with it on the `diagonal`-th diagonal; a
    2-D `x` gives that diagonal as a 1-D tensor.

    Example:
        >>> nb.diag(nb.tensor([1.0, 2.0])).numpy()
        array([[1., 0.],
               [0., 2.]], dtype=float32)
    """
    _check_tensor(x, "diag")
    if x.ndim == 1:
        return diag_embed(x, diagonal)
    if x.ndim == 2:
        return _take_diagonal(x, diagonal)
    raise ValueError(f"diag: expected a 1-D or 2-D tensor, got shape {x.shape}")


@public()
def diagflat(x: Tensor, offset: int = 0) -> Tensor:
    """A square matrix with the flattened `x` on its `offset` diagonal (torch.diagflat)."""
    _check_tensor(x, "diagflat")
    return diag_embed(reshape(x, (x.numel(),)), offset)

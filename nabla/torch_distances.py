"""torch's top-level distance functions that torch.nn.functional shares: `cosine_similarity`,
`pairwise_distance` and `pdist` (`cdist` is in `torch_functions.py`). They live here, below
`nabla_nn`, so `nabla.pdist` and `nabla_nn.functional.pdist` are one function. Each is a
composite of public ops, so derivatives, vmap and the MAX lowering come from those ops.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from . import ops
from .core.common import dtypes as _dt
from .core.tensor import Tensor

__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]


def _float(x: Any, op: str, arg: str = "input") -> Tensor:
    """`x` itself, if it is a floating-point Tensor (the wording of nabla_nn.functional's checks)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")
    if not _dt.is_float(x.dtype):
        raise TypeError(f"{op}: {arg} must be a floating-point tensor, got dtype {x.dtype.name}")
    return x


def _number(v: Any, op: str, arg: str) -> float:
    """`v` as a Python float, if it is a real number (not a bool)."""
    if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
        raise TypeError(f"{op}: {arg} must be a number, got {v!r}")
    return float(v)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along `dim` (x1, x2 broadcast).

    Args:
        x1, x2: floating-point tensors that broadcast together.
        dim: the dimension of the vectors.
        eps: lower bound of each norm.

    Example:
        >>> nabla.cosine_similarity(nabla.tensor([[1.0, 0.0]]), nabla.tensor([[1.0, 1.0]])).tolist()  # [0.7071...]
    """
    op = "cosine_similarity"
    _float(x1, op, "x1")
    _float(x2, op, "x2")
    e = _number(eps, op, "eps")
    shape = ops.broadcast_shapes(x1.shape, x2.shape)  # torch broadcasts first: the norms are over `dim` of that
    x1, x2 = ops.broadcast_to(x1, shape), ops.broadcast_to(x2, shape)
    n1 = ops.clamp(ops.norm(x1, 2, axis=dim, keepdims=True), min=e)
    n2 = ops.clamp(ops.norm(x2, 2, axis=dim, keepdims=True), min=e)
    return ops.sum((x1 / n1) * (x2 / n2), axis=dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p over the last dim.

    Args:
        x1, x2: floating-point tensors that broadcast together.
        p: the norm's exponent.
        eps: added to the difference (avoids the norm's kink at 0).
        keepdim: keep the reduced dim as size 1.

    Example:
        >>> nabla.pairwise_distance(nabla.tensor([[0.0, 0.0]]), nabla.tensor([[3.0, 4.0]]), eps=0.0).tolist()
        [5.0]
    """
    op = "pairwise_distance"
    _float(x1, op, "x1")
    _float(x2, op, "x2")
    diff = x1 - x2 + _number(eps, op, "eps")
    out = ops.norm(diff, _number(p, op, "p"), axis=-1, keepdims=bool(keepdim))
    if p == 0:  # a count of nonzeros has no autodiff history: tie it to diff with a zero gradient, as PyTorch
        zero = ops.where(ops.isfinite(diff), diff, 0.0) * 0.0  # finite * 0: exactly 0, also for inf / nan entries
        out = out + ops.sum(zero, axis=-1, keepdims=bool(keepdim))
    return out


@functools.lru_cache(maxsize=64)
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (i, j), i < j, of the strict upper triangle of an n x n matrix, row-major."""
    i, j = np.triu_indices(n, 1)
    return i.astype(np.int64), j.astype(np.int64)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """p-norm distances between every pair of rows: `||x[i] - x[j]||_p` for i < j, in row-major
    order of the upper triangle (torch.pdist), shape (N * (N - 1) / 2,).

    Args:
        input: (N, M) floating-point rows.
        p: the norm's exponent, in [0, inf]: 0 counts differing entries, inf is the largest
            absolute difference. The gradient is 0 where two rows (or, for p < 1, two entries)
            are equal, as in PyTorch.

    Example:
        >>> nabla.pdist(nabla.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])).tolist()
        [5.0, 1.0, 4.242640495300293]
    """
    op = "pdist"
    _float(input, op)
    if input.ndim != 2:
        raise ValueError(f"{op}: input must be a 2-D (N, M) tensor, got shape {input.shape}")
    q = _number(p, op, "p")
    if not q >= 0:
        raise ValueError(f"{op}: p must be non-negative (in [0, inf]), got {p}")
    n, m = input.shape
    i, j = _pairs(n)
    diff = ops.index_select(input, 0, ops.tensor(i)) - ops.index_select(input, 0, ops.tensor(j))
    if i.size and not m:  # no coordinates: every distance is 0
        return ops.sum(diff, axis=-1)
    if q == 0.0:  # a count: zero gradient, but still a function of the input (as in PyTorch)
        s = ops.sum(diff, axis=-1)
        return ops.norm(diff, 0.0, axis=-1) + (s - ops.detach(s)) * 0.0
    if q in (1.0, 2.0) or math.isinf(q):
        return ops.norm(diff, q, axis=-1)
    # (sum |d|**p) ** (1/p) with zero (not nan) derivatives at d == 0 and at a zero distance.
    a = ops.abs(diff)
    zero = ops.cast(ops.equal(a, 0), a.dtype)
    s = ops.sum(ops.pow(a + zero, q) * (1.0 - zero), axis=-1)
    zero_s = ops.cast(ops.equal(s, 0), s.dtype)
    return ops.pow(s + zero_s, 1.0 / q) * (1.0 - zero_s)

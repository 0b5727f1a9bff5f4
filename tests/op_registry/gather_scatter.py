"""Registry entries for nabla.ops.gather_scatter's PyTorch-named reads beyond indexing.py's
entries: take_along_dim (family "indexing")."""

from __future__ import annotations

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "indexing"
I64 = np.int64
X2 = uniform((4, 6), seed="tad2")
X3 = uniform((3, 4, 5), seed="tad3")


def _np_take_along_dim(x: np.ndarray, indices: np.ndarray, axis: int | None = None) -> np.ndarray:
    if axis is None:
        return np.take(x.reshape(-1), indices.reshape(-1))
    return np.take_along_axis(x, indices, axis)  # broadcasts the other dims; negative indices wrap


def _torch_take_along_dim(torch, x, indices, axis=None):
    n = x.numel() if axis is None else x.shape[axis]
    return torch.take_along_dim(x, indices % max(n, 1), dim=axis)  # torch reads only some negatives


SPECS: list[OpSpec] = [
    OpSpec(
        name="take_along_dim",
        fn=nb.take_along_dim,
        ref=_np_take_along_dim,
        samples=[
            Sample((X2, np.array([[0, 5, 1], [2, 2, 2], [1, 0, 3], [4, 4, 5]], I64)), {"axis": 1}, label="axis1"),
            Sample((X2, np.array([[3, 0, 1, 2, 2, 0]], I64)), {"axis": 0}, label="bcast-index"),
            Sample((X3[:1], np.array([[[0, 3, 2]], [[2, 1, 1]]], I64)), {"axis": -1}, label="bcast-x-neg-dim"),
            Sample((X2, np.array([[-1, 0], [-6, 5], [2, -2], [0, 0]], I64)), {"axis": 1}, label="neg-indices"),
            Sample((X3, np.array([[59, 0], [-1, 7]], I64)), {}, label="flat-2d-indices"),
            Sample((uniform((), seed="tad0"), np.array([0, 0], I64)), {}, label="0d-flat"),
            Sample((X2, np.zeros((4, 0), I64)), {"axis": 1}, label="empty-indices"),
            Sample((np.arange(6, dtype=I64).reshape(2, 3), np.array([[2], [0]], I64)), {"axis": 1}, label="int64"),
        ],
        family=FAMILY,
        covers=("take",),
        torch_ref=_torch_take_along_dim,
    ),
]

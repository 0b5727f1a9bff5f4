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


# -- composites: torch's functional scatters ------------------------------------------------------
def _c(*args, label: str = "", grad: bool = True, **kwargs) -> Sample:
    return Sample(args, kwargs, label=label, grad=grad, max=False)


def _np_select_scatter(x, src, axis, index):
    out = x.copy()
    out[(slice(None),) * (axis % x.ndim) + (index,)] = src
    return out


def _np_slice_scatter(x, src, axis=0, start=None, end=None, step=1):
    out = x.copy()
    out[(slice(None),) * (axis % x.ndim) + (slice(start, end, step),)] = src
    return out


def _np_index_update(mode):
    def ref(x, axis, index, source, alpha=1):
        out = np.moveaxis(x.copy(), axis, 0)
        src = np.moveaxis(source, axis, 0)
        if mode == "add":
            np.add.at(out, index, alpha * src)
        else:
            out[index] = src
        return np.moveaxis(out, 0, axis)

    return ref


def _np_index_fill(x, axis, index, value):
    out = np.moveaxis(x.copy(), axis, 0)
    out[index] = value
    return np.moveaxis(out, 0, axis)


_NP_REDUCE = {"sum": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _np_scatter_reduce(x, axis, index, src, reduce, include_self=True):
    """PyTorch's loop: index[i][j] picks the row of x along `axis` that src[i][j] joins."""
    out = x.astype(np.float64 if x.dtype.kind == "f" else np.int64).copy()
    groups: dict = {}
    for pos in np.ndindex(index.shape):
        target = list(pos)
        target[axis] = index[pos]
        groups.setdefault(tuple(target), []).append(src[pos])
    for target, values in groups.items():
        values = ([x[target]] if include_self else []) + values
        if reduce == "mean":
            total = np.sum(values)
            out[target] = total / len(values) if x.dtype.kind == "f" else total // len(values)
        else:
            out[target] = _NP_REDUCE[reduce].reduce(np.asarray(values))
    return out.astype(x.dtype)


def _np_masked_scatter(x, mask, source):
    out = x.copy()
    full_mask = np.broadcast_to(mask, x.shape)
    out[full_mask] = source.reshape(-1)[: int(full_mask.sum())]
    return out


XS = uniform((3, 4), seed="xs")
SR_INDEX = np.array([[0, 2, 2, 1], [2, 2, 0, 0]], I64)
SR_SRC = uniform((2, 4), seed="srsrc")
SR_INTS = (np.arange(12, dtype=I64).reshape(3, 4), SR_INDEX, np.arange(8, dtype=I64).reshape(2, 4) * 3 - 10)
MASK = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, True]])

SPECS += [
    OpSpec(
        name="select_scatter",
        fn=nb.select_scatter,
        ref=_np_select_scatter,
        samples=[
            _c(XS, uniform((4,), seed="ss"), 0, 1, label="dim0"),
            _c(XS, uniform((3,), seed="ss1"), 1, -1, label="dim1-neg"),
            _c(uniform((2, 3, 4), seed="ss3"), uniform((2, 4), seed="ss4"), -2, 2, label="3d"),
        ],
        family=FAMILY,
        covers=("slice_scatter", "slice"),
        torch_ref=lambda torch, x, src, axis, index: torch.select_scatter(x, src, axis, index),
    ),
    OpSpec(
        name="slice_scatter",
        fn=nb.slice_scatter,
        ref=_np_slice_scatter,
        samples=[
            _c(XS, uniform((3, 4), seed="sl"), label="defaults"),
            _c(XS, uniform((3, 2), seed="sl1"), 1, 0, None, 2, label="step2"),
            _c(XS, uniform((2, 4), seed="sl2"), 0, -2, label="negative-start"),
            _c(XS, uniform((3, 1), seed="sl3"), 1, 1, 2, label="one-column"),
        ],
        family=FAMILY,
        covers=("slice_scatter", "slice"),
        torch_ref=lambda torch, x, src, *a: torch.slice_scatter(x, src, *a),
    ),
    OpSpec(
        name="index_add",
        fn=nb.index_add,
        ref=_np_index_update("add"),
        samples=[
            _c(XS, 1, np.array([2, 0, 2], I64), uniform((3, 3), seed="ia"), label="dim1-repeats"),
            _c(XS, 0, np.array([1], I64), uniform((1, 4), seed="ia1"), alpha=-2.0, label="alpha"),
            _c(np.arange(6, dtype=I64), 0, np.array([5, 5, 0], I64), np.array([1, 2, 3], I64), label="int64"),
        ],
        family=FAMILY,
        covers=("take_scatter",),
        torch_ref=lambda torch, x, axis, index, source, **kw: torch.index_add(x, axis, index, source, **kw),
    ),
    OpSpec(
        name="index_copy",
        fn=nb.index_copy,
        ref=_np_index_update("set"),
        samples=[
            _c(XS, 0, np.array([2, 0], I64), uniform((2, 4), seed="ic"), label="dim0"),
            _c(XS, -1, np.array([3, 1, 0], I64), uniform((3, 3), seed="ic1"), label="dim-1"),
        ],
        family=FAMILY,
        covers=("take_scatter",),
        torch_ref=lambda torch, x, axis, index, source: torch.index_copy(x, axis, index, source),
    ),
    OpSpec(
        name="index_fill",
        fn=nb.index_fill,
        ref=_np_index_fill,
        samples=[
            _c(XS, 1, np.array([3, 0], I64), -1.5, label="scalar"),
            _c(XS, 0, np.array([1], I64), np.array(2.5), label="0-d-tensor"),
            _c(np.arange(6, dtype=I64).reshape(2, 3), 1, np.array([0, 0], I64), 7, label="int64-repeats"),
        ],
        family=FAMILY,
        covers=("take_scatter", "broadcast_to"),
        torch_ref=lambda torch, x, axis, index, value: torch.index_fill(x, axis, index, value),
    ),
    OpSpec(
        name="scatter_reduce",
        fn=nb.scatter_reduce,
        ref=_np_scatter_reduce,
        samples=[
            _c(XS, 0, SR_INDEX, SR_SRC, reduce, include_self=inc, label=f"{reduce}-{inc}")
            for reduce in ("sum", "prod", "mean", "amax", "amin")
            for inc in (True, False)
        ]
        + [_c(*SR_INTS[:1], 0, *SR_INTS[1:], r, include_self=False, label=f"int64-{r}") for r in ("mean", "amax")]
        + [_c(XS, 1, np.array([[0, 0], [3, 1], [2, 2]], I64), uniform((3, 2), seed="sr1"), "sum", label="dim1")],
        family=FAMILY,
        covers=("take_scatter", "where"),
        torch_ref=lambda torch, x, axis, index, src, reduce, **kw: torch.scatter_reduce(
            x, axis, index, src, reduce, **kw
        ),
    ),
    OpSpec(
        name="masked_scatter",
        fn=nb.masked_scatter,
        ref=_np_masked_scatter,
        samples=[
            _c(XS, MASK, uniform((12,), seed="ms"), label="full-mask"),
            _c(XS, MASK[0], uniform((3, 3), seed="ms1"), label="broadcast-mask"),
            _c(XS, np.zeros((3, 4), bool), uniform((2,), seed="ms2"), label="no-true"),
            _c(
                np.arange(6, dtype=I64).reshape(2, 3),
                np.array([True, False, True]),
                np.array([9, 8, 7, 6], I64),
                label="int64",
            ),
        ],
        family=FAMILY,
        covers=("sort", "take", "take_scatter", "where"),
        torch_ref=lambda torch, x, mask, source: torch.masked_scatter(x, mask, source),
    ),
]

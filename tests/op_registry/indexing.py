"""Registry entries for nabla.ops.indexing: getitem/setitem/at, gather/scatter, one_hot, masked_fill.

Index expressions travel in `kwargs["index"]`. An `Arg(i)` inside one stands for positional
argument i (an int64 array, so nabla receives a realized int tensor); `Arg(i, lazy=True)`
makes it an unrealized tensor (computed indices: no eager checks, wrapped in the graph).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "indexing"
I64 = np.int64


@dataclass(frozen=True)
class Arg:
    pos: int
    lazy: bool = False


def _resolve(index, args, *, nabla: bool):
    items = index if isinstance(index, tuple) else (index,)
    out = []
    for item in items:
        if isinstance(item, Arg):
            a = args[item.pos]
            out.append(nb.add(a, 0) if nabla and item.lazy else a)
        else:
            out.append(item)
    return tuple(out) if isinstance(index, tuple) else out[0]


def _torch_index(torch, shape, index, args):
    """The index for torch, which has no negative slice steps: arrays become tensors and a
    negative-step slice becomes the positive slice of the same elements plus a flip of that
    result dim (only in samples without advanced indices). Returns (index, dims to flip)."""
    items = [args[i.pos] if isinstance(i, Arg) else i for i in (index if isinstance(index, tuple) else (index,))]
    items = [torch.from_numpy(i) if isinstance(i, np.ndarray) else i for i in items]
    if Ellipsis in items:
        k = items.index(Ellipsis)
        used = sum(1 for i in items if i is not None and i is not Ellipsis)
        items[k : k + 1] = [slice(None)] * (len(shape) - used)
    out, flips, dim, out_dim = [], [], 0, 0
    for item in items:
        if isinstance(item, slice):
            start, stop, step = item.indices(shape[dim])
            r = range(start, stop, step)
            if step < 0:
                item = slice(r[-1], r[0] + 1, -step) if len(r) else slice(0, 0)
                flips.append(out_dim)
        out.append(item)
        dim += item is not None
        out_dim += item is None or isinstance(item, slice)
    return tuple(out), flips


def _x(shape, seed="x"):
    return uniform(shape, seed=seed)


X3 = _x((3, 4, 5))
X2 = _x((4, 6), "x2")

# -- getitem ---------------------------------------------------------------------------------------
_GET = [
    ("int", X3, 1),
    ("neg-int", X3, (-1, -2)),
    ("int-trailing", X2, (slice(None), 3)),
    ("0d-none", _x(()), None),
    ("0d-ellipsis", _x(()), Ellipsis),
    ("slices", X3, (slice(1, None), slice(None, None, 2))),
    ("slice-clamp", X3, (slice(-10, 10), slice(2, 100, 3))),
    ("empty-slice", X3, (slice(2, 1),)),
    ("neg-step", X3, (slice(None, None, -1),)),
    ("neg-step2", X3, (Ellipsis, slice(3, 0, -2))),
    ("neg-step-int", X3, (slice(None, None, -2), 1, slice(4, None, -3))),
    ("none", X3, (None, 1, None)),
    ("ellipsis", X3, (Ellipsis, 0)),
    ("ellipsis-none", X3, (1, Ellipsis, None)),
    ("array-dup", X3, (np.array([0, 2, 0], I64),)),
    ("array-neg", X2, (slice(None), np.array([-1, 0, -6], I64))),
    ("array-2d", X2, (np.array([[0, 3], [3, 3]], I64),)),
    ("list", X3, ([2, 0],)),
    ("two-arrays", X3, (np.array([0, 1, 2], I64), np.array([3, 0, 3], I64))),
    ("two-arrays-bcast", X3, (np.array([[0], [2]], I64), np.array([1, 3], I64))),
    ("slice-array", X3, (slice(None), np.array([1, 3], I64))),
    ("slice-int-array", X3, (slice(None), 1, np.array([0, 4], I64))),
    ("array-none-array", X3, (np.array([0, 2], I64), None, np.array([1, 1], I64))),
    ("array-slice-array", X3, (np.array([[0], [2]], I64), slice(1, 3), np.array([4, 0], I64))),
    ("empty-array", X3, (np.array([], I64),)),
    ("mask-full", X2, (X2 > 0.3,)),
    ("mask-lead", X3, (np.array([True, False, True]),)),
    ("mask-2d-lead", X3, (X3[:, :, 0] > 0,)),
    ("mask-slice", X3, (slice(None), np.array([False, True, True, False]))),
    ("tensor-index", X3, (slice(None), Arg(1))),
    ("tensor-index-lazy", X3, (Arg(1, lazy=True), slice(1, None), Arg(2, lazy=True))),
]


def _get_sample(label, x, index):
    args = [x]
    if label == "tensor-index":
        args.append(np.array([3, 0, 3], I64))
    if label == "tensor-index-lazy":
        args += [np.array([[2], [-1]], I64), np.array([0, -5, 4], I64)]
    return Sample(tuple(args), {"index": index}, label=label)


def _getitem(x, *arrays, index):
    return nb.getitem(x, _resolve(index, (x, *arrays), nabla=True))


def _getitem_ref(x, *arrays, index):
    return np.asarray(x[_resolve(index, (x, *arrays), nabla=False)])


def _getitem_torch(torch, x, *arrays, index):
    idx, flips = _torch_index(torch, x.shape, index, (x, *arrays))
    return torch.flip(x[idx], flips) if flips else x[idx]


# -- setitem / at ----------------------------------------------------------------------------------
_SET = [
    ("int", X3, 1, (4, 5)),
    ("int-bcast", X3, (1, slice(None, None, 2)), (5,)),
    ("neg-step", X3, (slice(None, None, -2), slice(None), -1), (2, 4)),
    ("none-ellipsis", X3, (None, Ellipsis, 2), ()),
    ("full", X2, (Ellipsis,), (6,)),
    ("array", X3, (np.array([2, 0], I64),), (2, 1, 5)),
    ("two-arrays", X3, (np.array([0, 2], I64), slice(1, 3), np.array([4, 0], I64)), (2, 2)),
    ("mask", X2, (X2 > 0.5,), ()),
    ("mask-lead", X3, (np.array([True, False, True]), 1), (2, 5)),
    ("tensor-index-lazy", X3, (slice(None), Arg(2, lazy=True)), (3, 2, 5)),
]


def _set_sample(label, x, index, vshape):
    args = [x, _x(vshape, "v" + label)]
    if label == "tensor-index-lazy":
        args.append(np.array([-1, 1], I64))
    return Sample(tuple(args), {"index": index}, label=label)


def _setitem(x, value, *arrays, index):
    return nb.setitem(x, _resolve(index, (x, value, *arrays), nabla=True), value)


def _setitem_ref(x, value, *arrays, index):
    out = np.array(x)
    out[_resolve(index, (x, value, *arrays), nabla=False)] = value
    return out


def _setitem_torch(torch, x, value, *arrays, index):
    out = x.clone()
    idx, flips = _torch_index(torch, x.shape, index, (x, value, *arrays))
    if flips:  # basic indexing: out[idx] is a view
        target = out[idx]
        target.copy_(torch.flip(torch.broadcast_to(value, target.shape), flips))
    else:
        out[idx] = value
    return out


_NP_AT = {
    "add": np.add.at,
    "subtract": np.subtract.at,
    "multiply": np.multiply.at,
    "min": np.minimum.at,
    "max": np.maximum.at,
}


def _at(x, value, index, mode):
    ref = nb.at(x)[index]
    return ref.get() if mode == "get" else getattr(ref, mode)(value)


def _at_ref(x, value, index, mode):
    if mode == "get":
        return np.asarray(x[index])
    out = np.array(x)
    if mode == "set":
        out[index] = value
    else:
        _NP_AT[mode](out, index, value)
    return out


_DUP = (np.array([0, 2, 0, 0], I64),)
_AT = [
    ("set", X3, (slice(None), np.array([1, 3], I64)), (3, 2, 5), True),
    ("get", X3, (np.array([1, 1], I64), 2), (), True),
    ("add-dup", X3, _DUP, (4, 4, 5), True),
    ("add-basic", X3, (slice(1, None), None, 0), (1, 5), True),
    ("subtract-dup", X2, (np.array([1, 1, 3], I64), np.array([0, 0, 5], I64)), (3,), True),
    ("multiply-dup", X3, _DUP, (4, 4, 5), True),
    ("multiply-basic", X2, (slice(None, None, -3),), (6,), True),
    ("min-dup", X3, _DUP, (4, 4, 5), True),
    ("max-dup", X3, (slice(None), np.array([3, 3, 1], I64)), (3, 3, 5), True),
    ("max-basic", X2, (slice(1, 3), slice(None, None, 2)), (2, 3), True),
    ("min-0d", _x((), "0d"), (), (), True),
]


def _at_samples():
    out = []
    for label, x, index, vshape, grad in _AT:
        mode = label.split("-")[0]
        v = _x(vshape, "at" + label)
        out.append(Sample((x, v), {"index": index, "mode": mode}, label=label, grad=grad))
    # products with zeros among duplicates (exact derivatives through the zero-count path)
    v = _x((3, 5), "mz")
    v[0, 1] = v[2, 3] = v[1, 3] = 0.0
    out.append(
        Sample((X2[:3, :5] + 0, v), {"index": (np.array([0, 0, 2], I64),), "mode": "multiply"}, label="mul-zeros")
    )
    # ties between x and the update: no derivative there
    x = X2.copy()
    out.append(Sample((x, x[1] + 0), {"index": (1,), "mode": "max"}, label="max-ties", grad=False))
    return out


# -- gather / scatter --------------------------------------------------------------------------
def _gather_ref(x, index, axis):
    if x.ndim == 0:
        return x.copy()
    part = x[tuple(slice(None) if d == axis % x.ndim else slice(0, n) for d, n in enumerate(index.shape))]
    return np.take_along_axis(part, index, axis)


def _scatter_ref(x, index, src, axis, add=False):
    out = np.array(x)
    if x.ndim == 0:
        return out + src if add else np.array(src, x.dtype)
    axis %= x.ndim
    src = np.broadcast_to(src, index.shape) if np.ndim(src) == 0 else src
    coords = list(np.indices(index.shape))
    coords[axis] = index
    values = src[tuple(slice(0, n) for n in index.shape)]
    if add:
        np.add.at(out, tuple(coords), values)
    else:
        out[tuple(coords)] = values
    return out


GATHER_SAMPLES = [
    Sample((X2, np.array([[0, 3], [2, 2], [1, 0]], I64)), {"axis": 0}, label="axis0-smaller"),
    Sample((X2, np.array([[5, 0, 5], [1, 1, 1], [0, 2, 4], [3, 3, 3]], I64)), {"axis": 1}, label="axis1"),
    Sample((X3, np.array([[[1, 0]], [[3, 3]]], I64)), {"axis": -2}, label="axis-neg"),
    Sample((uniform((5,), seed="g1"), np.array([4, 4, 0, 2, 1, 0, 0], I64)), {"axis": 0}, label="1d-larger"),
    Sample((_x((), "g0"), np.array(0, I64)), {"axis": 0}, label="0d"),
]

SCATTER_SAMPLES = [
    Sample((X2, np.array([[0, 3], [2, 1]], I64), _x((2, 3), "s1")), {"axis": 0}, label="axis0"),
    Sample((X2, np.array([[5, 0, 2], [1, 3, 4]], I64), _x((3, 4), "s2")), {"axis": 1}, label="axis1-src-larger"),
    Sample((X3, np.array([[[4], [0]], [[1], [2]]], I64), _x((2, 2, 1), "s3")), {"axis": -1}, label="axis-neg"),
    Sample((_x((), "s0"), np.array(0, I64), _x((), "s0v")), {"axis": 0}, label="0d"),
]

SCATTER_ADD_SAMPLES = [
    Sample((X2, np.array([[0, 3], [0, 0], [3, 1]], I64), _x((3, 2), "a1")), {"axis": 0}, label="axis0-dup"),
    Sample((X2, np.array([[5, 5, 5, 0]], I64), _x((2, 4), "a2")), {"axis": 1}, label="axis1-dup-src-larger"),
    Sample(
        (uniform((3,), seed="a3"), np.array([0, 2, 0, 0, 1, 2, 2], I64), _x((7,), "a4")), {"axis": 0}, label="1d-bins"
    ),
    Sample((X3, np.array([[[1, 1, 1]]], I64), _x((1, 1, 3), "a5")), {"axis": 1}, label="3d"),
]

TAKE_ALONG_SAMPLES = [
    Sample((X2, np.array([[0, 5, -1], [2, 2, 2], [1, 0, 3], [4, 4, -6]], I64)), {"axis": 1}, label="axis1-neg"),
    Sample((X2, np.array([[3, 0, 1, 2, 2, 0]], I64)), {"axis": 0}, label="bcast-index"),
    Sample((X3[:1], np.array([[[0, 3, -2]], [[2, 1, 1]]], I64)), {"axis": 2}, label="bcast-x"),
    Sample((X3, np.array([59, 0, -1, 7], I64)), {"axis": None}, label="axis-none"),
]


def _bool(shape, seed):
    return uniform(shape, seed=seed) > 0


MASKED_FILL_SAMPLES = [
    Sample((X2, _bool((4, 6), "m1")), {"value": -1.5}, label="same-shape"),
    Sample((X3, _bool((4, 1), "m2")), {"value": 2}, label="bcast-mask"),
    Sample((uniform((5,), seed="m3"), _bool((2, 5), "m4")), {"value": 0.0}, label="mask-expands-x"),
    Sample((_x((), "m5"), np.array(True)), {"value": 3.0}, label="0d"),
    Sample((X2, _bool((6,), "m6"), np.array(0.25)), {}, label="tensor-value"),
]

ONE_HOT_SAMPLES = [
    Sample((np.array([0, 2, 1, 2], I64),), {"num_classes": 4}, label="1d"),
    Sample((np.array([[1, 0], [3, 3]], I64),), {"num_classes": -1}, label="inferred", vmap_ints=False),
    Sample((np.array(2, I64),), {"num_classes": 3}, label="0d"),
    Sample((np.array([], I64),), {"num_classes": 2}, label="empty"),
]


def _one_hot_ref(indices, num_classes):
    n = int(indices.max()) + 1 if num_classes == -1 else num_classes
    return (indices[..., None] == np.arange(n)).astype(np.int64)


def _masked_fill(x, mask, *value, **kw):
    return nb.masked_fill(x, mask, value[0] if value else kw["value"])


def _masked_fill_ref(x, mask, *value, **kw):
    v = value[0] if value else kw["value"]
    return np.where(mask, np.asarray(v, x.dtype), x).astype(x.dtype)


SPECS: list[OpSpec] = [
    OpSpec(
        name="getitem",
        fn=_getitem,
        ref=_getitem_ref,
        samples=[_get_sample(*g) for g in _GET],
        family=FAMILY,
        covers=("getitem", "slice", "take", "take_transpose"),
        torch_ref=_getitem_torch,
        dtypes=("float64", "float16"),
    ),
    OpSpec(
        name="setitem",
        fn=_setitem,
        ref=_setitem_ref,
        samples=[_set_sample(*s) for s in _SET],
        family=FAMILY,
        covers=("setitem", "slice_scatter", "take_scatter"),
        torch_ref=_setitem_torch,
        diff_args=(0, 1),
    ),
    OpSpec(
        name="at",
        fn=_at,
        ref=_at_ref,
        samples=_at_samples(),
        family=FAMILY,
        covers=("at", "take_scatter", "slice_scatter"),
    ),
    OpSpec(
        name="index_select",
        fn=lambda x, index, axis: nb.index_select(x, axis, index),
        ref=lambda x, index, axis: np.take(x, index, axis=axis),
        samples=[
            Sample((X3, np.array([2, 0, 2], I64)), {"axis": 0}, label="axis0-dup"),
            Sample((X3, np.array([4, 1], I64)), {"axis": -1}, label="axis-last"),
            Sample((X2, np.array([], I64)), {"axis": 1}, label="empty"),
            Sample((X2, np.array([3], I64)), {"axis": 0}, label="single"),
        ],
        family=FAMILY,
        covers=("index_select", "take", "take_transpose"),
        torch_ref=lambda torch, x, index, axis: torch.index_select(x, axis, index),
    ),
    OpSpec(
        name="take",
        fn=lambda x, indices, axis: nb.take(x, indices, axis),
        ref=lambda x, indices, axis: np.take(x, indices, axis=axis),
        samples=[
            Sample((X3, np.array([[2, 0], [1, 2]], I64)), {"axis": 0}, label="2d-indices"),
            Sample((X3, np.array([[4], [1]], I64)), {"axis": -1}, label="axis-last"),
            Sample((X2, np.array(3, I64)), {"axis": 0}, label="0d-index"),
        ],
        family=FAMILY,
        covers=("take", "take_transpose"),
        torch_ref=lambda torch, x, indices, axis: torch.index_select(x, axis, indices.reshape(-1)).reshape(
            x.shape[: axis % x.ndim] + tuple(indices.shape) + x.shape[axis % x.ndim + 1 :]
        ),
    ),
    OpSpec(
        name="gather",
        fn=lambda x, index, axis: nb.gather(x, axis, index),
        ref=_gather_ref,
        samples=GATHER_SAMPLES,
        family=FAMILY,
        covers=("gather", "take", "take_transpose"),
        torch_ref=lambda torch, x, index, axis: torch.gather(x, axis, index),
    ),
    OpSpec(
        name="take_along_axis",
        fn=lambda x, indices, axis: nb.take_along_axis(x, indices, axis),
        ref=lambda x, indices, axis: np.take_along_axis(x, indices, axis),
        samples=TAKE_ALONG_SAMPLES,
        family=FAMILY,
        covers=("take_along_axis", "take"),
    ),
    OpSpec(
        name="scatter",
        fn=lambda x, index, src, axis: nb.scatter(x, axis, index, src),
        ref=_scatter_ref,
        samples=[
            *SCATTER_SAMPLES,
            Sample((X2, np.array([[1], [3]], I64)), {"axis": 1, "src": 7.5}, label="scalar-src"),
        ],
        family=FAMILY,
        covers=("scatter", "take_scatter"),
        torch_ref=lambda torch, x, index, src=None, axis=0: torch.scatter(x, axis, index, src),
    ),
    OpSpec(
        name="scatter_add",
        fn=lambda x, index, src, axis: nb.scatter_add(x, axis, index, src),
        ref=lambda x, index, src, axis: _scatter_ref(x, index, src, axis, add=True),
        samples=SCATTER_ADD_SAMPLES,
        family=FAMILY,
        covers=("scatter_add", "take_scatter"),
        torch_ref=lambda torch, x, index, src, axis: torch.scatter_add(x, axis, index, src),
    ),
    OpSpec(
        name="masked_fill",
        fn=_masked_fill,
        ref=_masked_fill_ref,
        samples=MASKED_FILL_SAMPLES,
        family=FAMILY,
        torch_ref=lambda torch, x, mask, *v, **kw: torch.masked_fill(x, mask, v[0] if v else kw["value"]),
    ),
    OpSpec(
        name="one_hot",
        fn=lambda indices, num_classes: nb.one_hot(indices, num_classes),
        ref=_one_hot_ref,
        samples=ONE_HOT_SAMPLES,
        family=FAMILY,
        differentiable=False,
        torch_ref=lambda torch, indices, num_classes: torch.nn.functional.one_hot(indices, num_classes),
    ),
]

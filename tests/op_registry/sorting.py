"""Registry entries for nabla.ops.sorting: sort, argsort, topk (stable: ties keep index order), unique."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "sorting"

TIES = np.array([[3.0, 1.0, 3.0, 2.0, 1.0, 3.0], [0.5, 0.5, -1.0, 0.5, 2.0, 2.0]])
INTS = np.array([[4, -2, 4, 0], [1, 1, 1, -5]], np.int64)


def _np_argsort(x, axis, descending):
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    flipped = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return x.shape[axis] - 1 - np.flip(flipped, axis)


def _np_sort(x, axis=-1, descending=False):
    if x.ndim == 0:
        return x.copy(), np.array(0, np.int64)
    idx = _np_argsort(x, axis, descending).astype(np.int64)
    return np.take_along_axis(x, idx, axis), idx


def _np_topk(x, k, axis=-1, largest=True, sorted=True):  # noqa: A002
    if x.ndim == 0:
        return x.copy(), np.array(0, np.int64)
    idx = np.take(_np_argsort(x, axis, largest), np.arange(k), axis=axis).astype(np.int64)
    return np.take_along_axis(x, idx, axis), idx


def _torch_topk(torch, x, k, axis=-1, largest=True, sorted=True):  # noqa: A002
    # torch.topk leaves the order of ties unspecified: compare with its stable sort instead.
    values, indices = torch.sort(x, dim=axis, descending=largest, stable=True)
    if x.ndim == 0:
        return values, indices
    return values.narrow(axis, 0, k), indices.narrow(axis, 0, k)


def _sort_samples(seed: str) -> list[Sample]:
    return [
        Sample((uniform((), seed=seed),), {}, label="0d"),
        Sample((uniform((7,), seed=seed),), {}, label="(7,)"),
        Sample((uniform((7,), seed=seed),), {"descending": True}, label="(7,)-desc"),
        Sample((uniform((3, 4), seed=seed),), {"axis": 0}, label="(3,4)-axis0"),
        Sample((uniform((3, 4), seed=seed),), {"axis": -1, "descending": True}, label="(3,4)-desc"),
        Sample((uniform((2, 5, 3), seed=seed),), {"axis": 1, "descending": True}, label="(2,5,3)-axis1-desc"),
        Sample((uniform((2, 3, 4), seed=seed),), {"axis": -3}, label="(2,3,4)-axis-3"),
        Sample((uniform((0, 3), seed=seed),), {"axis": 1}, label="empty-rows"),
        Sample((TIES,), {"axis": 1}, label="ties", grad=False),
        Sample((TIES,), {"axis": 1, "descending": True}, label="ties-desc", grad=False),
        Sample((TIES,), {"axis": 0, "descending": True}, label="ties-axis0-desc", grad=False),
        Sample((INTS,), {"axis": 1, "descending": True}, label="int64"),
    ]


def _topk_samples() -> list[Sample]:
    seed = "topk"
    return [
        Sample((uniform((), seed=seed), 1), {}, label="0d"),
        Sample((uniform((7,), seed=seed), 3), {}, label="(7,)-k3"),
        Sample((uniform((7,), seed=seed), 7), {"largest": False}, label="(7,)-all-smallest"),
        Sample((uniform((3, 4), seed=seed), 2), {"axis": 0}, label="(3,4)-axis0"),
        Sample((uniform((3, 4), seed=seed), 1), {"axis": -1, "largest": False}, label="(3,4)-k1-smallest"),
        Sample((uniform((2, 5, 3), seed=seed), 4), {"axis": 1, "sorted": False}, label="(2,5,3)-axis1"),
        Sample((uniform((3, 4), seed=seed), 0), {"axis": 1}, label="k=0"),
        Sample((TIES, 4), {"axis": 1}, label="ties", grad=False),
        Sample((TIES, 2), {"axis": 1, "largest": False}, label="ties-smallest", grad=False),
        Sample((INTS, 2), {"axis": 1}, label="int64"),
    ]


# -- unique: the result's size depends on the values (read on the host; no MAX graph, no vmap) ---
REPEATS = np.array([[2.0, -1.0, 2.0, 0.5], [0.5, 3.0, -1.0, 2.0]])
ROWS = np.array([[1, 2, 0], [0, 5, 1], [1, 2, 0], [0, 5, -1]], np.int64)


def _np_unique(x, sorted=True, return_inverse=False, return_counts=False, axis=None):  # noqa: A002
    values, inverse, counts = np.unique(x, return_inverse=True, return_counts=True, axis=axis, equal_nan=False)
    inverse = inverse.reshape(x.shape if axis is None else (x.shape[axis],)).astype(np.int64)
    extras = ([inverse] if return_inverse else []) + ([counts.astype(np.int64)] if return_counts else [])
    return (values, *extras) if extras else values


def _torch_unique(torch, x, sorted=True, return_inverse=False, return_counts=False, axis=None):  # noqa: A002
    return torch.unique(x, sorted=True, return_inverse=return_inverse, return_counts=return_counts, dim=axis)


def _unique_samples() -> list[Sample]:
    both = {"return_inverse": True, "return_counts": True}
    return [
        Sample((REPEATS,), {}, label="values"),
        Sample((REPEATS,), both, label="inverse-counts"),
        Sample((REPEATS,), {"return_counts": True, "sorted": False}, label="counts-unsorted"),
        Sample((np.array([np.nan, 1.0, np.nan, 1.0]),), both, label="nan-distinct"),
        Sample((uniform((), seed="unique"),), both, label="0d"),
        Sample((uniform((0,), seed="unique"),), both, label="empty"),
        Sample((INTS,), both, label="int64"),
        Sample((np.array([True, False, True]),), both, label="bool"),
        Sample((ROWS,), {**both, "axis": 0}, label="rows-axis0"),
        Sample((ROWS.T.copy(),), {**both, "axis": -1}, label="columns-axis-1"),
        Sample((np.stack([ROWS, ROWS]),), {**both, "axis": 1}, label="3d-axis1"),
    ]


SPECS: list[OpSpec] = [
    OpSpec(
        name="sort",
        fn=nb.sort,
        ref=_np_sort,
        samples=_sort_samples("sort"),
        family=FAMILY,
        covers=("sort", "sort_scatter", "sort_gather"),
        torch_ref=lambda torch, x, axis=-1, descending=False: torch.sort(
            x, dim=axis, descending=descending, stable=True
        ),
        dtypes=("float64",),
    ),
    OpSpec(
        name="argsort",
        fn=nb.argsort,
        ref=lambda x, axis=-1, descending=False: _np_sort(x, axis, descending)[1],
        samples=_sort_samples("argsort"),
        family=FAMILY,
        differentiable=False,
        torch_ref=lambda torch, x, axis=-1, descending=False: torch.argsort(
            x, dim=axis, descending=descending, stable=True
        ),
    ),
    OpSpec(
        name="topk",
        fn=nb.topk,
        ref=_np_topk,
        samples=_topk_samples(),
        family=FAMILY,
        covers=("topk", "sort_scatter", "sort_gather"),
        torch_ref=_torch_topk,
        dtypes=("float64",),
    ),
    OpSpec(
        name="unique",
        fn=nb.unique,
        ref=_np_unique,
        samples=[replace(s, max=False, vmap=False) for s in _unique_samples()],
        family=FAMILY,
        covers=("take", "detach"),
        differentiable=False,
        torch_ref=_torch_unique,
        dtypes=("float64", "float16"),
    ),
]

SPECS.append(
    OpSpec(
        name="msort",
        fn=nb.msort,
        ref=lambda x: np.sort(x, axis=0, kind="stable"),
        samples=[
            replace(s, max=False)
            for s in [
                Sample((uniform((5,), seed="msort"),), label="(5,)"),
                Sample((uniform((4, 3), seed="msort"),), label="(4,3)"),
                Sample((TIES.T.copy(),), label="ties", grad=False),
                Sample((INTS,), label="int64"),
            ]
        ],
        family=FAMILY,
        covers=("sort", "sort_scatter", "sort_gather"),
        torch_ref=lambda torch, x: torch.msort(x),
    )
)

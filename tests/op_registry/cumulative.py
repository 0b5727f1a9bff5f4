"""Registry entries for nabla.ops.cumulative's running extrema with indices: cummax, cummin (family
"reduction", with cumsum and cumprod, whose entries are in reduction.py)."""

from __future__ import annotations

import math

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "reduction"
NAN = math.nan

TIES = np.array([[3.0, 1.0, 1.0, 2.0, 1.0, 0.5, 0.5], [0.0, 0.0, 2.0, 2.0, -1.0, 3.0, -1.0]])
NANS = np.array([[2.0, NAN, 1.0, NAN, 0.0], [1.0, 2.0, 0.5, 0.5, NAN]])
INTS = np.array([[4, -2, 4, 0, -2], [1, 1, 7, -5, 7]], np.int64)
BOOLS = np.array([[True, False, True, True], [False, True, False, True]])


def _np_cum_extremum(x: np.ndarray, axis: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's loop, one row at a time: an element at least as extreme (or a nan) is taken."""
    if x.ndim == 0:
        return x.copy(), np.array(0, np.int64)
    moved = np.moveaxis(x, axis, -1)
    values, indices = np.empty_like(moved), np.zeros(moved.shape, np.int64)
    for row in np.ndindex(moved.shape[:-1]):
        best, at = None, 0
        for j, v in enumerate(moved[row]):
            if best is None or np.isnan(v) or (not np.isnan(best) and (v >= best if largest else v <= best)):
                best, at = v, j
            values[row + (j,)], indices[row + (j,)] = best, at
    return np.moveaxis(values, -1, axis), np.moveaxis(indices, -1, axis)


def _samples(name: str) -> list[Sample]:
    return [
        Sample((uniform((), seed=name),), {"axis": 0}, label="0d"),
        Sample((uniform((6,), seed=name),), {"axis": 0}, label="(6,)"),
        Sample((uniform((3, 5), seed=name),), {"axis": 1}, label="(3,5)-axis1"),
        Sample((uniform((3, 5), seed=name),), {"axis": -2}, label="(3,5)-axis-2"),
        Sample((uniform((2, 9, 3), seed=name),), {"axis": 1}, label="(2,9,3)-axis1-long"),
        Sample((uniform((0, 3), seed=name),), {"axis": 0}, label="empty-axis"),
        Sample((uniform((2, 0), seed=name),), {"axis": 0}, label="empty-rows"),
        Sample((TIES,), {"axis": 1}, label="ties", grad=False),
        Sample((TIES,), {"axis": 0}, label="ties-axis0", grad=False),
        Sample((NANS,), {"axis": -1}, label="nan", grad=False),
        Sample((INTS,), {"axis": 1}, label="int64"),
        Sample((BOOLS,), {"axis": 1}, label="bool"),
    ]


SPECS: list[OpSpec] = [
    OpSpec(
        name=name,
        fn=getattr(nb, name),
        ref=lambda x, axis, _largest=(name == "cummax"): _np_cum_extremum(x, axis, _largest),
        samples=_samples(name),
        family=FAMILY,
        covers=(name, "take", "take_transpose"),
        torch_ref=lambda torch, x, axis, _name=name: getattr(torch, _name)(x, axis),
        dtypes=("float64", "float16", "bfloat16"),
    )
    for name in ("cummax", "cummin")
]

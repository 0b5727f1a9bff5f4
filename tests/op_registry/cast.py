"""Registry entries for nabla.ops.cast."""

from __future__ import annotations

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

SPECS: list[OpSpec] = [
    OpSpec(
        name="cast",
        aliases=("astype",),
        fn=nb.cast,
        ref=lambda x, dtype: x.astype(nb.core.common.dtypes.to_numpy_dtype(nb.core.common.dtypes.as_dtype(dtype))),
        samples=[
            Sample((uniform((3, 4), seed="cast"), nb.float64), label="f32->f64"),
            Sample((uniform((3, 4), seed="cast"), nb.float16), label="f32->f16", grad=False),
            Sample((uniform((2, 3), -5, 5, seed="cast"), nb.int32), label="f32->i32", grad=False),
            Sample((np.array([[1, -2, 3]], np.int64), nb.float32), label="i64->f32", grad=False),
            Sample((np.array([True, False]), nb.int64), label="bool->i64", grad=False),
            Sample((np.array([0, 2, -1], np.int32), nb.bool_), label="i32->bool", grad=False),
        ],
        family="cast",
        diff_args=(0,),
        rtol=1e-3,
    ),
]

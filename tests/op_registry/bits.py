"""Registry entries for nabla.ops.bits: the integer shifts and nextafter.

The shift references are NumPy's shifts with torch's rules for shifts outside [0, bits)
(0 for `<<`, the sign fill for `>>`); nextafter's is `np.nextafter`. PyTorch is the second
oracle where installed.
"""

from __future__ import annotations

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "bits"
I32, I64 = np.iinfo(np.int32), np.iinfo(np.int64)


def _left(x: np.ndarray, s) -> np.ndarray:
    x, s = np.broadcast_arrays(np.asarray(x), np.asarray(s, x.dtype))
    bits = x.dtype.itemsize * 8
    valid = (s >= 0) & (s < bits)
    with np.errstate(over="ignore"):
        return np.where(valid, x << np.where(valid, s, 0), 0).astype(x.dtype)


def _right(x: np.ndarray, s) -> np.ndarray:
    x, s = np.broadcast_arrays(np.asarray(x), np.asarray(s, x.dtype))
    bits = x.dtype.itemsize * 8
    valid = (s >= 0) & (s < bits - 1)
    return np.where(valid, x >> np.where(valid, s, 0), np.where(x < 0, -1, 0)).astype(x.dtype)


def _shift_samples(dtype: type, info: np.iinfo) -> list[Sample]:
    x = np.array([[0, 1, -1, 5, -7, 100], [info.max, info.min, 3, -3, 12345, -12345]], dtype)
    shifts = np.array([0, 1, 2, info.bits - 1, info.bits, -1], dtype)  # past the width and negative
    return [
        Sample((x, shifts), label=f"{dtype.__name__}-edges", grad=False),
        Sample((x, 3), label=f"{dtype.__name__}-scalar", grad=False),
        Sample((x[:, :1], shifts), label=f"{dtype.__name__}-broadcast", grad=False),
    ]


def _shift(name: str, ref, torch_op) -> OpSpec:
    return OpSpec(
        name=name,
        fn=getattr(nb, name),
        ref=ref,
        samples=[*_shift_samples(np.int32, I32), *_shift_samples(np.int64, I64)],
        family=FAMILY,
        covers=(),  # a composite: floor_divide, mul, take and where run it
        torch_ref=lambda torch, x, y: torch_op(torch)(x, y if isinstance(y, torch.Tensor) else torch.tensor(y)),
        differentiable=False,
    )


def _nextafter_ref(x, y) -> np.ndarray:
    x = np.asarray(x)
    with np.errstate(over="ignore"):
        return np.nextafter(x, np.asarray(y, x.dtype))


_EDGES = (
    np.array([1.0, 0.0, -0.0, -1.0, np.inf, -np.inf, 2.0, 0.1, 1e-45, 3.4028235e38, 2.0**-126, np.nan, 5.0]),
    np.array([2.0, -1.0, 1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, np.inf, -1.0, 1.0, 5.0]),
)

SPECS = [
    _shift("bitwise_left_shift", _left, lambda torch: torch.bitwise_left_shift),
    _shift("bitwise_right_shift", _right, lambda torch: torch.bitwise_right_shift),
    OpSpec(
        name="nextafter",
        fn=nb.nextafter,
        ref=_nextafter_ref,
        samples=[
            Sample((uniform((3, 4), seed="na-x"), uniform((3, 4), seed="na-y")), label="3x4"),
            Sample((uniform((2, 3), seed="na-b"), uniform((3,), seed="na-c")), label="broadcast"),
            Sample((uniform((4,), seed="na-s"), 0.5), label="tensor-scalar"),
            Sample(_EDGES, label="edges", grad=False),
        ],
        family=FAMILY,
        torch_ref=lambda torch, x, y: torch.nextafter(x, y if isinstance(y, torch.Tensor) else torch.tensor(y)),
        rtol=0.0,
        atol=0.0,  # (float64, float16 and bfloat16: tests/test_bits.py, exactly against torch)
    ),
]

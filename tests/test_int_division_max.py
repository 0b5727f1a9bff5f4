"""Integer division on MAX: its division traps (SIGFPE ends the process) on a zero divisor and
on MIN // -1. floor_divide, remainder, fmod and div(rounding_mode='trunc') give NumPy's values
there instead (0 for a zero divisor, the wrapped -x for -1), as the NumPy executor does; one
graph, compared with the NumPy executor."""

from __future__ import annotations

import numpy as np

import nabla as nb

USES_MAX = True  # conftest: leave the MAX executor selected

DTYPES = ("int64", "int32", "int16", "int8", "uint8")


def _operands(name: str) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(name)
    x = np.array([7, -7, 5, info.min, info.max, 0, info.min, 3], dtype=np.int64)
    y = np.array([0, 0, -1, -1, -1, 0, 2, -2], dtype=np.int64)
    if info.min == 0:  # unsigned: no -1 divisors
        x, y = np.abs(x), np.abs(y)
    return x.astype(name), y.astype(name)


def _program() -> dict[str, nb.Tensor]:
    out = {}
    for name in DTYPES:
        x, y = (nb.tensor(a) for a in _operands(name))
        out[f"{name} //"] = x // y
        out[f"{name} %"] = x % y
        out[f"{name} fmod"] = nb.fmod(x, y)
        out[f"{name} trunc"] = nb.div(x, y, rounding_mode="trunc")
    return out


def test_integer_division_by_zero_and_minus_one_on_max():
    got = _program()
    nb.evaluate(*got.values())
    got = {k: v.numpy() for k, v in got.items()}
    nb.set_executor("numpy")
    try:
        want = {k: v.numpy() for k, v in _program().items()}
    finally:
        nb.set_executor("max")
    for name in got:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    assert (want["int64 //"][:2] == 0).all() and want["int64 //"][3] == np.iinfo(np.int64).min

"""NaN on the MAX path as NumPy and PyTorch have it: maximum/minimum propagate it, argmax/argmin
(and max/min over a dim) point at it, sort and topk rank it above every number, it is true as
a bool and unequal to everything, itself included. MAX's own kernels skip NaN; these are checked in one evaluation (one compile) against
the NumPy executor, and against torch where it is installed."""

from __future__ import annotations

import numpy as np
from _oracle import torch

import nabla as nb

USES_MAX = True  # conftest: leave the MAX executor selected

NAN = np.nan
# (rows without ties; one row holds +inf and no NaN, the others NaN and no +inf)
X = np.array(
    [[NAN, 1.0, -np.inf, 2.0, 0.5], [3.0, -1.0, NAN, 0.25, -2.0], [np.inf, 4.0, -3.0, 0.0, 1.5]],
    np.float32,
)


def _program(lib, x):
    return {
        "maximum": lib.maximum(x, lib.flip(x, (1,))),
        "minimum": lib.minimum(x, lib.full_like(x, 0.5)),
        "argmax": lib.argmax(x),
        "argmin rows": lib.argmin(x, 1),
        "max dim values": x.max(1)[0],
        "max dim indices": x.max(1)[1],
        "min dim indices": x.min(0)[1],
        "sort": lib.sort(x, 1)[0],
        "sort indices": lib.sort(x, 1)[1],
        "sort descending": lib.sort(x, 1, descending=True)[0],
        "argsort": lib.argsort(x, 1),
        "topk": lib.topk(x, 2, 1)[0],
        "topk indices": lib.topk(x, 2, 1)[1],
        "smallest": lib.topk(x, 2, 1, largest=False)[1],
        "bool": x.bool(),
        "not equal": x != 0.5,
        "not equal itself": x != x,
        "equal itself": x == x,
        "at most itself": x <= x,
        "at least itself": x >= x,
        "below itself": x < x,
        "amax": lib.amax(x, 1),
    }


def test_nan_on_max_matches_numpy_and_torch():
    got = _program(nb, nb.tensor(X))
    nb.evaluate(*got.values())
    got = {k: v.numpy() for k, v in got.items()}
    nb.set_executor("numpy")
    try:
        want = {k: v.numpy() for k, v in _program(nb, nb.tensor(X)).items()}
    finally:
        nb.set_executor("max")
    for name in got:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    if torch is not None:
        ref = _program(torch, torch.tensor(X))
        for name in got:
            np.testing.assert_array_equal(got[name], ref[name].numpy(), err_msg=name)
    assert np.isnan(got["maximum"][0, 0]) and got["argmax"] == 0 and got["bool"][0, 0]

"""uint8, int8 and int16 on MAX: the small-int cases of test_small_ints.py (which checks them
against torch on the NumPy executor) as one MAX graph, compared with the NumPy executor. MAX
negates signed types only and has no integer bitwise ops, so those lowerings are nabla's own."""

from __future__ import annotations

import numpy as np
from test_small_ints import CASES, SMALL

import nabla as nb

USES_MAX = True  # conftest: leave the MAX executor selected

# Every dtype: the arithmetic, reductions, casts and shifts; the bitwise kinds (a longer
# lowering each) once, on one dtype each.
COMMON = (
    "add_wraps",
    "neg_wraps",
    "floor_div",
    "remainder",
    "with_int8",
    "sum_is_int64",
    "cumsum_is_int64",
    "amax",
    "argmax",
    "compare",
    "abs",
    "from_int64_wraps",
    "to_float",
    "not",
    "shift_left_wraps",
    "shift_right",
)
BITWISE = {"uint8": "and", "int8": "or", "int16": "xor"}


def _program() -> dict[str, nb.Tensor]:
    return {f"{d}/{name}": CASES[name](nb, d) for d in SMALL for name in (*COMMON, BITWISE[d])}


def test_small_int_ops_on_max_match_the_numpy_executor():
    nb.set_executor("numpy")
    want = {k: v.numpy() for k, v in _program().items()}
    nb.set_executor("max")
    nb.reset_cache_info()
    got = _program()
    nb.evaluate(*got.values())
    assert nb.cache_info().per_executor["max"].compiles + nb.cache_info().per_executor["max"].hits == 1
    for key, w in want.items():
        g = got[key].numpy()
        assert g.dtype == w.dtype, f"{key}: MAX gave {g.dtype}, NumPy {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=key)

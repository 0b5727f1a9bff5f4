"""uint8, int8 and int16 tensors (image data, masks, quantized values): they keep their dtype,
wrap at their width and promote as torch's do. Values on the NumPy executor; the MAX lowering
of the same ops is checked by test_small_ints_max.py."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn

SMALL = ("uint8", "int8", "int16")


def _t(lib, dtype: str, values) -> object:
    return lib.tensor(np.array(values), dtype=getattr(lib, dtype))


# Each case: (lib, dtype) -> a tensor. Values stay in range for every dtype except where the
# case is about wrapping.
CASES = {
    "add_wraps": lambda L, d: _t(L, d, [100, 120, 7]) * 3 + _t(L, d, [100, 20, 7]),
    "int_operand_wraps": lambda L, d: _t(L, d, [100, 25, 5]) + 300,
    "negative_operand": lambda L, d: _t(L, d, [1, 2, 5]) + (-1),
    "neg_wraps": lambda L, d: -_t(L, d, [1, 2, 0]),
    "float_operand": lambda L, d: _t(L, d, [1, 2, 5]) * 2.5,
    "true_div": lambda L, d: _t(L, d, [7, 8, 9]) / _t(L, d, [2, 3, 4]),
    "floor_div": lambda L, d: _t(L, d, [7, 8, 9]) // _t(L, d, [2, 3, 4]),
    "remainder": lambda L, d: _t(L, d, [7, 8, 9]) % _t(L, d, [2, 3, 4]),
    "with_int32": lambda L, d: _t(L, d, [1, 2, 3]) + _t(L, "int32", [1, 2, 3]),
    "with_int8": lambda L, d: _t(L, d, [1, 2, 3]) + _t(L, "int8", [1, -2, 3]),
    "with_bool": lambda L, d: _t(L, d, [1, 2, 3]) + L.tensor([True, False, True]),
    "with_float16": lambda L, d: _t(L, d, [1, 2, 3]) + _t(L, "float16", [1, 2, 3]),
    "with_0d_int64": lambda L, d: _t(L, d, [1, 2, 3]) + L.tensor(1000),
    "sum_is_int64": lambda L, d: _t(L, d, [[100, 100], [100, 3]]).sum(0),
    "prod_is_int64": lambda L, d: _t(L, d, [10, 10, 10]).prod(),
    "cumsum_is_int64": lambda L, d: _t(L, d, [100, 100, 100]).cumsum(0),
    "amax": lambda L, d: _t(L, d, [[1, 9], [3, 0]]).amax(1),
    "argmax": lambda L, d: _t(L, d, [1, 9, 3]).argmax(),
    "compare": lambda L, d: _t(L, d, [1, 9, 3]) > 2,
    "abs": lambda L, d: _t(L, d, [1, 9, 3]).abs(),
    "clamp": lambda L, d: _t(L, d, [1, 9, 3]).clamp(2, 5),
    "where": lambda L, d: L.where(_t(L, d, [1, 9, 3]) > 2, _t(L, d, [1, 9, 3]), 0),
    "and": lambda L, d: _t(L, d, [12, 9, 3]) & _t(L, d, [10, 3, 1]),
    "or": lambda L, d: _t(L, d, [12, 9, 3]) | _t(L, d, [10, 3, 1]),
    "xor": lambda L, d: _t(L, d, [12, 9, 3]) ^ _t(L, d, [10, 3, 100]),
    "not": lambda L, d: ~_t(L, d, [12, 9, 3]),
    "shift_left_wraps": lambda L, d: _t(L, d, [12, 9, 3]) << 4,
    "shift_right": lambda L, d: _t(L, d, [120, 9, 3]) >> 2,
    "to_float": lambda L, d: _t(L, d, [120, 9, 3]).float() / 255,
    "from_int64_wraps": lambda L, d: L.tensor([300, -1, 5]).to(getattr(L, d)),
    "cat_promotes": lambda L, d: L.cat([_t(L, d, [1, 2]), _t(L, "int32", [3])]),
    "pow": lambda L, d: _t(L, d, [3, 1, 2]) ** 2,
    "arange": lambda L, d: L.arange(5, dtype=getattr(L, d)),
    "maximum": lambda L, d: L.maximum(_t(L, d, [1, 3]), _t(L, d, [2, 2])),
    "sign": lambda L, d: L.sign(_t(L, d, [1, 0])),
    "div_trunc": lambda L, d: L.div(_t(L, d, [7, 9]), _t(L, d, [2, 4]), rounding_mode="trunc"),
    "sqrt_is_float": lambda L, d: L.sqrt(_t(L, d, [4, 9])),
}
# What torch 2.13 gives for uint8 (the others agree where no value wraps).
UINT8_EXPECTED = {
    "add_wraps": ([144, 124, 28], "uint8"),
    "int_operand_wraps": ([144, 69, 49], "uint8"),
    "negative_operand": ([0, 1, 4], "uint8"),
    "neg_wraps": ([255, 254, 0], "uint8"),
    "with_int8": ([2, 0, 6], "int16"),
    "with_0d_int64": ([233, 234, 235], "uint8"),  # a 0-d operand of the same category keeps uint8
    "sum_is_int64": ([200, 103], "int64"),
    "not": ([243, 246, 252], "uint8"),
    "shift_left_wraps": ([192, 144, 48], "uint8"),
    "from_int64_wraps": ([44, 255, 5], "uint8"),
}


def _value(t) -> tuple[list, str]:
    return np.asarray(t.numpy()).tolist(), str(t.dtype).removeprefix("torch.").removeprefix("DType.")


@pytest.mark.parametrize("name", sorted(UINT8_EXPECTED))
def test_uint8_wraps_and_promotes_as_torch(name):
    assert _value(CASES[name](nb, "uint8")) == UINT8_EXPECTED[name]


@needs_torch
@pytest.mark.parametrize("dtype", SMALL)
def test_every_case_matches_torch(dtype):
    for name, case in CASES.items():
        got, want = _value(case(nb, dtype)), _value(case(torch, dtype))
        assert got[1] == want[1], f"{dtype} {name}: dtype {got[1]}, torch {want[1]}"
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, err_msg=f"{dtype} {name}")


def test_dtype_names_methods_and_numpy_round_trip():
    x = nb.tensor(np.array([250, 3], dtype=np.uint8))
    assert x.dtype == nb.uint8 and x.numpy().dtype == np.uint8  # (was read as int64)
    assert x.type() == "torch.ByteTensor" and x.char().type() == "torch.CharTensor"
    assert nb.tensor([70000, 2]).short().tolist() == [4464, 2] and nb.short == nb.int16
    assert nb.tensor([300, 2]).byte().tolist() == [44, 2]
    assert (nb.iinfo(nb.uint8).max, nb.iinfo(nb.int8).min, nb.iinfo(nb.int16).max) == (255, -128, 32767)
    assert nb.zeros(2, dtype="int8").dtype == nb.int8 and nb.randint(0, 5, (3,), dtype=nb.uint8).dtype == nb.uint8


def test_index_tensors_of_small_ints_follow_torch():
    x = nb.arange(5.0)
    with pytest.warns(UserWarning, match="indexing with dtype uint8 is deprecated"):
        assert x[nb.tensor([1, 0, 1, 0, 1], dtype=nb.uint8)].tolist() == [0.0, 2.0, 4.0]  # a byte mask
    for dtype in (nb.int8, nb.int16):
        with pytest.raises(IndexError, match="tensors used as indices must be int64, int32, uint8 or bool"):
            x[nb.tensor([1, 0], dtype=dtype)]


def test_safetensors_keep_small_int_dtypes(tmp_path):
    state = {name: nb.tensor(np.array([1, 2, 3]), dtype=getattr(nb, name)) for name in SMALL}
    nn.save(state, tmp_path / "ints.safetensors")
    loaded = nn.load(tmp_path / "ints.safetensors")
    assert {k: (v.dtype, v.tolist()) for k, v in loaded.items()} == {k: (getattr(nb, k), [1, 2, 3]) for k in SMALL}


def test_storing_a_python_int_follows_torchs_range_check():
    # uint8 takes a negative down to -255 and wraps it (torch's two's complement rule); any other
    # out-of-range value raises, as torch ("cannot be converted ... without overflow").
    x = nb.tensor([1, 2], dtype=nb.uint8)
    x[0] = -1
    assert x.tolist() == [255, 2]
    assert nb.full((2,), -255, dtype=nb.uint8).tolist() == [1, 1]
    assert x.masked_fill(nb.tensor([False, True]), -2).tolist() == [255, 254]
    assert nb.tensor([0], dtype=nb.int16).fill_(-32768).tolist() == [-32768]
    for make in (
        lambda: nb.full((2,), 256, dtype=nb.uint8),
        lambda: nb.full((2,), -256, dtype=nb.uint8),
        lambda: nb.tensor([1], dtype=nb.int8).fill_(128),
        lambda: nb.tensor([1], dtype=nb.int32).__setitem__(0, 2**31),
    ):
        with pytest.raises(RuntimeError, match="cannot be converted to .* without overflow"):
            make()

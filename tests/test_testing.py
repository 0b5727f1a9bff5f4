"""nabla.testing.assert_close / make_tensor against torch.testing's (messages included)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
from nabla.testing import assert_close, make_tensor


def _message(fn, *args, **kwargs) -> tuple[type, str]:
    try:
        fn(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 (the type is compared)
        return type(error), str(error)
    return type(None), ""


def test_close_values_pass_and_default_tolerances_per_dtype():
    assert_close(nb.tensor([1.0, 2.0]), nb.tensor([1.0, 2.0 + 1e-6]))  # within float32's 1.3e-6/1e-5
    with pytest.raises(AssertionError, match="Tensor-likes are not close!"):
        assert_close(nb.tensor([1.0, 2.0]), nb.tensor([1.0, 2.001]))
    f16 = nb.tensor([1.0, 2.0]).to(nb.float16)
    assert_close(f16, nb.tensor([1.0, 2.0019]).to(nb.float16))  # float16: rtol 1e-3
    with pytest.raises(AssertionError):
        assert_close(f16, nb.tensor([1.0, 2.01]).to(nb.float16))
    bf16 = nb.tensor([1.0, 4.0]).to(nb.bfloat16)
    assert_close(bf16, nb.tensor([1.0, 4.03125]).to(nb.bfloat16))  # bfloat16: rtol 1.6e-2
    f64 = nb.tensor(np.array([1.0, 2.0]))
    assert_close(f64, nb.tensor(np.array([1.0, 2.0 + 1e-7])))
    with pytest.raises(AssertionError):
        assert_close(f64, nb.tensor(np.array([1.0, 2.0 + 1e-5])))
    with pytest.raises(AssertionError, match="Tensor-likes are not equal!"):  # integers: exact
        assert_close(nb.tensor([1, 2]), nb.tensor([1, 3]))


def test_mismatch_message_follows_torch():
    kind, msg = _message(assert_close, nb.tensor([1.0, 2.0, 3.0, 4.0]), nb.tensor([1.0, 2.5, 3.0, 4.0]))
    assert kind is AssertionError
    assert msg.splitlines() == [
        "Tensor-likes are not close!",
        "",
        "Mismatched elements: 1 / 4 (25.0%)",
        "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)",
        "Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)",  # float32 0.2
    ]


def test_rtol_and_atol_go_together():
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or omitted, but got no atol"):
        assert_close(nb.tensor([1.0]), nb.tensor([1.0]), rtol=1e-3)
    with pytest.raises(ValueError, match="but got no rtol"):
        assert_close(1.0, 1.0, atol=1e-3)
    assert_close(nb.tensor([1.0]), nb.tensor([1.5]), rtol=0.0, atol=0.5)


def test_shape_dtype_and_sequence_errors():
    with pytest.raises(AssertionError, match=re.escape("attribute 'shape' do not match: (2,) != (3,)")):
        assert_close(nb.tensor([1.0, 2.0]), nb.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(AssertionError, match="attribute 'dtype' do not match: int64 != float32"):
        assert_close(nb.tensor([1, 2]), nb.tensor([1.0, 2.0]))
    assert_close(nb.tensor([1, 2]), nb.tensor([1.0, 2.0]), check_dtype=False)
    with pytest.raises(AssertionError, match="The length of the sequences mismatch: 2 != 3"):
        assert_close([1, 2], [1, 2, 3])
    with pytest.raises(AssertionError, match=r"Missing keys in the actual mapping: \['v'\]"):
        assert_close({"w": 1}, {"v": 1})


def test_paths_of_nested_items():
    _, msg = _message(assert_close, [nb.tensor(1.0), nb.tensor([2.0])], [nb.tensor(1.0), nb.tensor([3.0])])
    assert msg.endswith("The failure occurred for item [1]")
    _, msg = _message(assert_close, {"w": nb.tensor(1.0)}, {"w": nb.tensor(2.0)})
    assert msg.startswith("Scalars are not close!\n\nExpected 2.0 but got 1.0.")
    assert msg.endswith("The failure occurred for item ['w']")


def test_numbers_arrays_nan_and_msg():
    assert_close(1.0, 1.0 + 1e-9)
    with pytest.raises(AssertionError, match="The \\(d\\)types do not match"):
        assert_close(1, 1.0)
    with pytest.raises(AssertionError, match="Scalars are not equal!"):
        assert_close(1, 2)
    assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="No comparison pair"):  # as torch: an array is no tensor
        assert_close(nb.tensor([1.0]), np.array([1.0], np.float32))
    with pytest.raises(AssertionError):
        assert_close(nb.tensor([math.nan]), nb.tensor([math.nan]))
    assert_close(nb.tensor([math.nan, 1.0]), nb.tensor([math.nan, 1.0]), equal_nan=True)
    with pytest.raises(AssertionError, match="^custom$"):
        assert_close(nb.tensor([1.0]), nb.tensor([2.0]), msg="custom")
    with pytest.raises(AssertionError, match="^X: Tensor-likes"):
        assert_close(nb.tensor([1.0, 2.0]), nb.tensor([1.0, 3.0]), msg=lambda m: "X: " + m)


def test_make_tensor_ranges_and_seed():
    nb.manual_seed(3)
    a = make_tensor(2, 3, dtype=nb.float32, low=0, high=1)
    nb.manual_seed(3)
    assert_close(a, make_tensor((2, 3), dtype=nb.float32, low=0, high=1))
    assert a.shape == (2, 3) and a.dtype == nb.float32
    values = a.numpy()
    assert values.min() >= 0 and values.max() < 1
    ints = make_tensor(200, dtype=nb.int64).numpy()
    assert ints.min() >= -9 and ints.max() <= 9 and len(set(ints.tolist())) > 5
    assert make_tensor(50, dtype=nb.uint8, exclude_zero=True).numpy().min() >= 1
    assert make_tensor(2, 3, dtype=nb.float32, noncontiguous=True).stride() == (6, 2)
    assert make_tensor(2, dtype=nb.float32, requires_grad=True).requires_grad
    with pytest.raises(ValueError, match="requires_grad=True is not supported"):
        make_tensor(2, dtype=nb.int64, requires_grad=True)
    with pytest.raises(ValueError, match="`low` must be less than `high`, but got 2 >= 1"):
        make_tensor(2, dtype=nb.float32, low=2, high=1)


CASES = [
    (lambda T: (T([1.0, 2.0, 3.0, 4.0]), T([1.0, 2.0, 3.1, 4.0])), {}),
    (lambda T: (T([[1.0, 2.0], [3.0, 4.0]]), T([[1.0, 2.0], [3.1, 4.5]])), {}),
    (lambda T: (T([1, 2, 3]), T([1, 2, 300])), {}),
    (lambda T: (T([True, False]), T([True, True])), {}),
    (lambda T: (T([0.0, 2.0]), T([1e-3, 2.0])), {}),
    (lambda T: (T([1.0, 5.0]), T([0.0, 0.0])), {}),
    (lambda T: (T(1.0), T(math.inf)), {}),
    (lambda T: (T([math.nan, 1.0]), T([math.nan, 1.0])), {}),
    (lambda T: (T([1.0, 2.0]), T([1.0, 2.5])), {"rtol": 0, "atol": 0}),
    (lambda T: (T([1.0, 2.0]), T([1.0, 2.0])), {"atol": 1e-3}),
    (lambda T: ([T(1.0), T([2.0])], [T(1.0), T([3.0])]), {}),
    (lambda T: ({"w": T(1.0)}, {"w": T(2.0)}), {}),
    (lambda T: ([T([1.0]), {"b": [T(1.0), T([1.0, 2, 3])]}], [T([1.0]), {"b": [T(1.0), T([1.0, 2, 4])]}]), {}),
    (lambda T: ({"w": T(1.0)}, {"v": T(1.0)}), {}),
    (lambda T: ([1, 2], [1, 2, 3]), {}),
    (lambda T: (1.0, 1.1), {}),
    (lambda T: (True, False), {}),
    (lambda T: (None, 1), {}),
    (lambda T: (np.array([1.0, 2.0]), np.array([1.0, 2.5])), {}),
    (lambda T: (np.array([1.0, 2.0], np.float32), np.array([1.0, 2.5])), {"check_dtype": False}),
    (lambda T: ("a", "a"), {}),
    (lambda T: (T([1.0, 2.0]), T([1.0, 3.0])), {"msg": lambda m: "X" + m}),
]


@needs_torch
@pytest.mark.parametrize("case", range(len(CASES)))
def test_messages_match_torch(case):
    make, kwargs = CASES[case]
    expected = _message(torch.testing.assert_close, *make(torch.tensor), **kwargs)
    assert _message(assert_close, *make(nb.tensor), **kwargs) == expected

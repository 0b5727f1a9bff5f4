"""Where the dims of advanced indices land when they are mixed with ints, as PyTorch does.

PyTorch applies an int index (also a NumPy integer or a 0-d integer array/tensor) as a `select`
before the advanced indexing, so an int never counts as an advanced index: `x[0, :, I]` is
`x[0][:, I]` (shape (3, 2, 5) for x of shape (2, 3, 4, 5)), where NumPy would broadcast the int
with I and put their dims first (shape (2, 3, 5)). The advanced indices left (integer arrays,
lists, tensors, bool masks) keep their dims in place when they are adjacent (ints between them
do not separate them; a slice, None or a non-empty Ellipsis does), else their dims go first.
"""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb

X = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
S = slice(None)
I = np.array([1, 0])  # noqa: E741
J = np.array([2, 1])
M = np.array([True, False, True])

# Index expressions over X; np.ndarray entries become tensors for torch (and for nabla, per `kind`).
CASES = {
    "slice-adv-slice-int": (S, I, S, 0),
    "int-slice-adv": (0, S, I),
    "negint-slice-adv": (-1, S, I),
    "int-ellipsis-adv": (0, Ellipsis, I),
    "ellipsis-adv-int": (Ellipsis, I, 0),
    "none-int-slice-adv": (None, 0, S, I),
    "int-none-adv": (0, None, I),
    "int-adv": (0, I),
    "adv-int": (I, 0),
    "adv-slice-int": (I, S, 0),
    "adv-int-adv": (I, 0, J),
    "slice-adv-int-adv": (S, I, 0, J),
    "adv-slice-adv": (I, S, J),
    "slice-adv-adv": (S, I, J),
    "int-adv-slice-adv": (0, I, S, J),
    "adv-int-slice-adv": (I, 0, S, J),
    "adv-none-int-adv": (I, None, 0, J),
    "adv-none-adv": (I, None, J),
    "adv-ellipsis-adv": (I, Ellipsis, J),
    "bcast-adv-int-slice-adv": (I[:, None], 1, S, J),
    "int-stepslice-adv": (1, slice(None, None, 2), I),
    "int-adv2d-slice-int": (1, np.array([[0, 2], [1, 1]]), S, 3),
    "int-mask": (0, M),
    "slice-mask-int": (S, M, 0),
    "int-slice-mask-slice": (1, S, np.array([True, False, False, True]), S),
    "list-int": (S, [2, 0], S, -2),
    "npint-slice-adv": (np.int64(1), S, I),
    "0d-slice-adv": (np.array(1), S, I),
    "slice-0d-slice-adv": (S, np.array(2), S, I),
    # a scalar bool beside advanced indices is a new axis indexed by [0] (torch's rule)
    "true-adv": (True, I),
    "adv-true": (I, True),
    "int-true-adv": (1, True, J),
    "adv-slice-true": (I, S, True),
    "ellipsis-true-adv": (Ellipsis, True, J),
    "mask-true-int": (M[None].repeat(2, 0), True, 2),
}

# How nabla receives the integer arrays: as NumPy data, realized tensors, or computed (lazy) tensors.
KINDS = ("numpy", "tensor", "lazy")


def _nabla_index(index: tuple, kind: str) -> tuple:
    def conv(item):
        if not isinstance(item, np.ndarray) or kind == "numpy":
            return item
        t = nb.tensor(item)
        return nb.add(t, 0) if kind == "lazy" and item.dtype != np.bool_ else t

    return tuple(conv(item) for item in index)


def _torch_index(index: tuple) -> tuple:
    return tuple(torch.from_numpy(item) if isinstance(item, np.ndarray) else item for item in index)


def _torch_get(index: tuple) -> np.ndarray:
    return torch.from_numpy(X)[_torch_index(index)].numpy()


# -- without torch: expected results written down from torch 2.13 ----------------------------------
def test_a_scalar_bool_beside_advanced_indices_broadcasts_with_them():
    x = nb.tensor(X)
    assert x[True, I].shape == (2, 3, 4, 5) and x[I, S, True].shape == (2, 3, 4, 5)
    np.testing.assert_array_equal(x[True, I].numpy(), X[I])
    np.testing.assert_array_equal(x[1, True, J].numpy(), X[1][J])  # the int is a select first
    np.testing.assert_array_equal(x[..., True, J].numpy(), X[..., J])
    y = nb.tensor(X)
    y[I, S, True] = -1.0
    expected = X.copy()
    expected[I] = -1.0
    np.testing.assert_array_equal(y.numpy(), expected)
    with pytest.raises(ValueError, match=r"getitem: shapes \(0,\), \(2,\) cannot be broadcast together"):
        x[False, I]  # False selects nothing: an empty index that cannot broadcast with I


def test_int_is_a_select_not_an_advanced_index():
    x = nb.tensor(X)
    out = x[0, :, [2, 0]]  # torch: x[0][:, [2, 0]]
    assert out.shape == (3, 2, 5)
    np.testing.assert_array_equal(out[:, :, 0].numpy(), [[10, 0], [30, 20], [50, 40]])
    out = x[:, [1, 0], :, 0]  # torch: x[..., 0][:, [1, 0]] (NumPy: same shape, dims 0 and 1 swapped)
    assert out.shape == (2, 2, 4)
    np.testing.assert_array_equal(out[:, :, 1].numpy(), [[25, 5], [85, 65]])
    assert x[0, ..., [1, 0]].shape == (3, 4, 2)
    assert x[None, 0, :, [1, 0]].shape == (1, 3, 2, 5)
    assert x[[1, 0], 0, :, [2, 1]].shape == (2, 4)  # the int does not separate the two lists
    np.testing.assert_array_equal(x[1, ::-1, [2, 0]].numpy(), X[1][::-1][:, [2, 0]])  # no torch oracle


def test_zero_d_index_is_a_select():
    x = nb.tensor(X)
    for zero_d in (np.array(2), np.int64(2), nb.tensor(2), nb.add(nb.tensor(2), 0)):
        out = x[:, zero_d, :, [1, 0]]
        assert out.shape == (2, 4, 2)
        np.testing.assert_array_equal(out.numpy(), np.moveaxis(X[:, 2, :, [1, 0]], 0, -1))


def test_setitem_int_is_a_select():
    x = nb.tensor(np.zeros((2, 3, 4), np.float32))
    x[0, :, [2, 0]] = nb.tensor(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32))
    expected = np.zeros((2, 3, 4), np.float32)
    expected[0, :, 2], expected[0, :, 0] = [1, 3, 5], [2, 4, 6]
    np.testing.assert_array_equal(x.numpy(), expected)


# -- against torch ---------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(CASES))
def test_getitem_matches_torch(name: str, kind: str):
    index = CASES[name]
    expected = _torch_get(index)
    out = nb.tensor(X)[_nabla_index(index, kind)]
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


@needs_torch
@pytest.mark.parametrize("kind", ("numpy", "lazy"))
@pytest.mark.parametrize("name", list(CASES))
def test_setitem_matches_torch(name: str, kind: str):
    index = CASES[name]
    shape = _torch_get(index).shape
    value = np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape)
    expected = torch.from_numpy(X.copy())
    expected[_torch_index(index)] = torch.from_numpy(value)
    x = nb.tensor(X)
    x[_nabla_index(index, kind)] = nb.tensor(value)
    np.testing.assert_array_equal(x.numpy(), expected.numpy())


@needs_torch
@pytest.mark.parametrize("name", ["slice-adv-slice-int", "int-slice-adv", "adv-none-int-adv", "slice-0d-slice-adv"])
def test_at_add_matches_torch(name: str):
    index = CASES[name]  # no position is indexed twice, so `+=` is torch's reference
    shape = _torch_get(index).shape
    value = np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape)
    expected = torch.from_numpy(X.copy())
    expected[_torch_index(index)] += torch.from_numpy(value)
    out = nb.tensor(X).at[_nabla_index(index, "numpy")].add(nb.tensor(value))
    np.testing.assert_array_equal(out.numpy(), expected.numpy())


@needs_torch
@pytest.mark.parametrize("name", ["slice-adv-slice-int", "int-slice-adv", "bcast-adv-int-slice-adv", "int-mask"])
def test_gradient_matches_torch(name: str):
    index = CASES[name]
    shape = _torch_get(index).shape
    weight = np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape)

    xt = torch.from_numpy(X.copy()).requires_grad_()
    (xt[_torch_index(index)] * torch.from_numpy(weight)).sum().backward()

    g = nb.grad(lambda x: (x[_nabla_index(index, "lazy")] * nb.tensor(weight)).sum())(nb.tensor(X))
    np.testing.assert_array_equal(g.numpy(), xt.grad.numpy())


@needs_torch
def test_vmap_of_a_zero_d_index_selects_per_element():
    # Each element behaves as the unbatched call (torch.func.vmap would put the list's dim first).
    idx = np.array([2, 0, 1])
    out = nb.vmap(lambda i: nb.tensor(X)[:, i, :, [1, 0]])(nb.tensor(idx))
    expected = np.stack([_torch_get((S, np.array(i), S, I)) for i in idx])
    assert out.shape == expected.shape == (3, 2, 4, 2)
    np.testing.assert_array_equal(out.numpy(), expected)


def test_known_out_of_range_indices_raise_for_put_and_index_updates():
    """torch raises; a flat remainder (put) or a negative index (index_add/copy/fill) would
    otherwise land somewhere silently."""
    cases = {
        "put: index 6 is out of bounds for dim 0 with size 6": lambda: nb.zeros(2, 3).put_(
            nb.tensor([6]), nb.tensor([1.0])
        ),
        "put: index -7 is out of bounds for dim 0 with size 6": lambda: nb.zeros(2, 3).put([-7], nb.tensor([1.0])),
        "index_add: index -1 is out of bounds": lambda: nb.zeros(2, 3).index_add(1, nb.tensor([-1]), nb.ones(2, 1)),
        "index_copy: index 3 is out of bounds": lambda: nb.zeros(2, 3).index_copy(1, nb.tensor([3]), nb.ones(2, 1)),
        "index_fill: index -1 is out of bounds": lambda: nb.zeros(2, 3).index_fill(0, nb.tensor([-1]), 1.0),
    }
    for message, case in cases.items():
        with pytest.raises(IndexError, match=message):
            case()
    assert nb.zeros(2, 3).put_(nb.tensor([-6, 5]), nb.tensor([1.0, 2.0])).tolist() == [[1, 0, 0], [0, 0, 2]]


def test_a_range_indexes_as_a_list():
    x = nb.arange(6.0).reshape(2, 3)
    assert x[:, range(2)].tolist() == [[0.0, 1.0], [3.0, 4.0]] and x[range(1, 2)].tolist() == [[3.0, 4.0, 5.0]]
    x[:, range(2)] = 0.0
    assert x.tolist() == [[0.0, 0.0, 2.0], [0.0, 0.0, 5.0]]

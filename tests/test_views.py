"""In-place ops and views, as in PyTorch: a tensor taken from another by basic indexing, a shape
method, `.data` or `detach()` writes its in-place updates through to that tensor, and `a += b`
updates `a` (every name bound to it sees the change). NumPy executor; compared with torch where
it is installed."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import torch

import nabla as nb
import nabla_nn as nn

# (name, program): each takes the library and a fresh 2x3 tensor holding 0..5, updates it through
# a view, and returns it. Both libraries run the same code.
PROGRAMS = {
    "row": lambda lib, x: x[0].mul_(5),
    "element": lambda lib, x: x[1, 2].fill_(-1),
    "column slice": lambda lib, x: x[:, 1:].zero_(),
    "ellipsis and None": lambda lib, x: x[..., None][:, 0].add_(10),
    "setitem on a row": lambda lib, x: x[1].__setitem__(0, 7.0),
    "view": lambda lib, x: x.view(3, 2)[2].fill_(4),
    "reshape": lambda lib, x: x.reshape(-1).clamp_(1, 3),
    "flatten": lambda lib, x: x.flatten()[::2].zero_(),
    "unsqueeze/squeeze": lambda lib, x: x.unsqueeze(0).squeeze(0)[0].sub_(1),
    "transpose": lambda lib, x: x.transpose(0, 1)[0].fill_(9),
    "T": lambda lib, x: x.T[2].mul_(-1),
    "permute": lambda lib, x: x.permute(1, 0)[1:].div_(2),
    "split": lambda lib, x: x.split([1, 2], 1)[1].zero_(),
    "chunk": lambda lib, x: x.chunk(2, 0)[1].add_(100),
    "unbind": lambda lib, x: x.unbind(1)[1].fill_(0),
    "view of a view": lambda lib, x: x[1][1:].masked_fill_(x[1][1:] > 4, 0),
    "data": lambda lib, x: x.data.fill_(3),
    "detach": lambda lib, x: x.detach()[0].zero_(),
    "copy_": lambda lib, x: x[0].copy_(lib.tensor([7.0, 8.0, 9.0])),
    "iadd on an index": lambda lib, x: x[0].__iadd__(1),
    "no-op index": lambda lib, x: x[:].add_(1),  # (the op hands back its input: still a new view)
    "no-op reshape": lambda lib, x: x.reshape(2, 3).mul_(2),
    "no-op permute": lambda lib, x: x.permute(0, 1)[1].add_(1),
    "diagonal": lambda lib, x: x.diagonal().fill_(-1),
    "diagonal above": lambda lib, x: x.diagonal(1).zero_(),
    "diagonal of a transpose": lambda lib, x: x.t().diagonal(-1).mul_(3),
    "movedim": lambda lib, x: x.movedim(0, 1)[0].fill_(5),
    "unfold": lambda lib, x: x.unfold(1, 2, 1)[:, 1].fill_(7),
    # overlapping windows share elements: a write in one window is not undone by another's copy
    "overlapping unfold, one window": lambda lib, x: x.unfold(1, 2, 1)[0, 0].fill_(-1),
    "overlapping unfold, one element": lambda lib, x: x.unfold(1, 2, 1)[1, 0].__setitem__(1, 100.0),
    "overlapping unfold, every window": lambda lib, x: x.unfold(1, 2, 1).fill_(7),
    "overlapping unfold, last elements": lambda lib, x: x.unfold(1, 2, 1)[:, :, 1].mul_(0),
    "tensor_split": lambda lib, x: x.tensor_split([1], dim=1)[1].zero_(),
    "hsplit": lambda lib, x: x.hsplit([2])[0].add_(10),
    "contiguous of a row": lambda lib, x: x[1].contiguous().zero_(),
    "reshape of rows": lambda lib, x: x[1:].reshape(-1).add_(1),
}

# Views PyTorch lays out non-contiguously: `contiguous()` and a `reshape` no view can express copy.
COPIES = {
    "contiguous of a transpose": lambda lib, x: x.t().contiguous().zero_(),
    "reshape of a transpose": lambda lib, x: x.t().reshape(-1).add_(100),
    "flatten of a transpose": lambda lib, x: x.t().flatten().add_(100),
    "reshape of columns": lambda lib, x: x[:, 1:].reshape(-1).zero_(),
}


def _run(lib, program) -> np.ndarray:
    x = lib.arange(6.0).reshape(2, 3) * 1.0  # not a view of anything
    program(lib, x)
    return x.numpy()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_in_place_ops_on_a_view_write_through_to_its_base(name):
    got = _run(nb, PROGRAMS[name])
    assert not np.array_equal(got, np.arange(6.0).reshape(2, 3)), "the base did not change"
    if torch is not None:
        np.testing.assert_array_equal(got, _run(torch, PROGRAMS[name]))


@pytest.mark.parametrize("name", sorted(COPIES))
def test_contiguous_and_reshape_copy_a_non_contiguous_view(name):
    got = _run(nb, COPIES[name])
    np.testing.assert_array_equal(got, np.arange(6.0).reshape(2, 3))
    if torch is not None:
        np.testing.assert_array_equal(got, _run(torch, COPIES[name]))


# (view, PyTorch's strides and contiguity for a 3x4 base)
LAYOUTS = {
    "base": (lambda x: x, (4, 1), True),
    "transpose": (lambda x: x.t(), (1, 4), False),
    "columns": (lambda x: x[:, 1:], (4, 1), False),
    "every other row": (lambda x: x[::2], (8, 1), False),
    "rows": (lambda x: x[1:], (4, 1), True),
    "diagonal": (lambda x: x.diagonal(), (5,), False),
    "unfold": (lambda x: x.unfold(1, 2, 1), (4, 1, 1), False),
    "new axes": (lambda x: x[None, :, None], (12, 4, 4, 1), True),
    "unsqueezed transpose": (lambda x: x.t().unsqueeze(1), (1, 12, 4), False),
    "strided view of a reshape": (lambda x: x.reshape(2, 6)[:, ::3], (6, 3), False),
    "contiguous of a transpose": (lambda x: x.t().contiguous(), (3, 1), True),
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_stride_and_is_contiguous_follow_pytorch(name):
    view, strides, contiguous = LAYOUTS[name]
    got = view(nb.arange(12.0).reshape(3, 4))
    assert (got.stride(), got.is_contiguous()) == (strides, contiguous)
    assert got.stride(-1) == strides[-1]
    if torch is not None:
        ref = view(torch.arange(12.0).reshape(3, 4))
        assert (ref.stride(), ref.is_contiguous()) == (strides, contiguous)


def test_view_of_a_non_contiguous_view_raises_naming_the_layout():
    x = nb.arange(12.0).reshape(3, 4)
    with pytest.raises(RuntimeError, match=r"shape \(4, 3\) and strides \(1, 4\).*as shape \(12,\).*reshape"):
        x.t().view(-1)
    assert x.t().view(4, 1, 3).shape == (4, 1, 3)  # a view still can add a size-1 dim
    np.testing.assert_array_equal(x.t().contiguous().view(-1).numpy(), np.arange(12.0).reshape(3, 4).T.ravel())


def test_a_view_takes_its_bases_later_updates_before_its_own():
    x = nb.arange(6.0).reshape(2, 3) * 1.0
    row = x[0]
    x.zero_()
    row.add_(1)  # PyTorch: storage is shared, so row held zeros
    np.testing.assert_array_equal(x.numpy(), [[1, 1, 1], [0, 0, 0]])
    np.testing.assert_array_equal(row.numpy(), [1, 1, 1])


def test_advanced_indices_copy_as_in_pytorch():
    x = nb.arange(6.0).reshape(2, 3) * 1.0
    x[[0, 1]].zero_()
    x[x > 2].zero_()
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3))


def test_augmented_assignment_updates_the_tensor_every_name_sees():
    w = nb.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    params = [w]
    with nb.no_grad():
        for p in params:  # the classic manual SGD step
            p -= 0.1 * p.grad
    np.testing.assert_allclose(w.numpy(), [0.8, 1.6])
    assert w.requires_grad and w.is_leaf
    a = nb.tensor([1, 6])
    b = a
    a += 1
    a *= 2
    a //= 3
    a %= 3
    np.testing.assert_array_equal(b.numpy(), [1, 1])  # [2, 7] [4, 14] [1, 4] [1, 1]
    m = nb.tensor([True, False])
    alias = m
    m |= nb.tensor([False, True])
    assert alias.tolist() == [True, True]
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        w += 1


def test_in_place_updates_through_views_are_differentiated():
    w = nb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = w * 2
    y[0] += 5  # written through the view y[0] once (Python's setitem then sees it is done)
    y[1:].mul_(w[1:])  # y = (2 w0 + 5, 2 w1^2, 2 w2^2)
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 8.0, 12.0])
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        w[0].zero_()  # a view of a leaf that requires grad: as in PyTorch, outside no_grad


def test_parameter_updated_through_data_and_views_stays_a_leaf_parameter():
    layer = nn.Linear(3, 2)
    layer.weight.data.fill_(1.0)  # PyTorch's classic init idioms
    layer.bias.data.zero_()
    with nb.no_grad():
        layer.weight[0].mul_(2)
    nn.init.zeros_(layer.weight[1])
    np.testing.assert_array_equal(layer.weight.numpy(), [[2, 2, 2], [0, 0, 0]])
    np.testing.assert_array_equal(layer.bias.numpy(), [0, 0])
    assert isinstance(layer.weight, nn.Parameter) and layer.weight.is_leaf and layer.weight.requires_grad
    emb = nn.Embedding(4, 3)
    with nb.no_grad():
        emb.weight[0].zero_()  # the padding row
    np.testing.assert_array_equal(emb.weight[0].numpy(), [0, 0, 0])


# A view taken before its base changes layout in place, or gets new storage (`.data = ...`):
# PyTorch changed only the base's metadata (or storage), so the view keeps its own layout.
BASE_CHANGES = {
    "unsqueeze_": lambda lib, x: (lambda y: (x.unsqueeze_(0), y.add_(1), y)[2])(x[0]),
    "t_": lambda lib, x: (lambda y: (x.t_(), y.add_(1), y)[2])(x[0]),
    "transpose_ of a transpose": lambda lib, x: (lambda y: (x.transpose_(0, 1), y.add_(1), y)[2])(x.T),
    "flat view, then t_": lambda lib, x: (lambda y: (x.t_(), y.__setitem__(0, -1), y)[2])(x.view(6)),
    "data swap": lambda lib, x: (lambda y: (setattr(x, "data", lib.zeros(2, 3)), y.add_(1), y)[2])(x[:1]),
    "unsqueeze_, then a slice write": lambda lib, x: (lambda y: (x.unsqueeze_(1), y.fill_(0), y)[2])(x[1:]),
}


@pytest.mark.parametrize("name", sorted(BASE_CHANGES))
def test_a_view_keeps_its_layout_when_its_base_changes_in_place(name):
    x = nb.arange(6.0).reshape(2, 3) * 1.0
    y = BASE_CHANGES[name](nb, x)
    got = (x.numpy().tolist(), y.numpy().tolist())
    assert got != (np.arange(6.0).reshape(2, 3).tolist(), np.arange(6.0).tolist())  # something happened
    if torch is not None:
        tx = torch.arange(6.0).reshape(2, 3) * 1.0
        ty = BASE_CHANGES[name](torch, tx)
        assert got == (tx.numpy().tolist(), ty.numpy().tolist())

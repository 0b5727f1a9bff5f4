"""PyTorch ops added to nabla: unique, meshgrid, cross, kron, tensor_split, cummax/cummin and
take_along_dim, as functions and as Tensor methods. Hard-coded expectations run everywhere; the
`*_matches_torch` tests compare values, shapes, dtypes and gradients with PyTorch when it is
installed. The op registry (tests/op_registry) adds the generated numerics, gradient, vmap,
sharding and MAX checks."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest

import nabla as nb

NAN = math.nan


def _grad(fn, *xs: np.ndarray) -> list[np.ndarray]:
    """d sum(fn(*xs) * w)/dx for fixed weights w, through `backward` (float32)."""
    tensors = [nb.tensor(np.asarray(x, np.float32), requires_grad=True) for x in xs]
    out = fn(*tensors)
    weights = np.cos(np.arange(int(np.prod(out.shape)))).reshape(out.shape).astype(np.float32)
    (out * nb.tensor(weights)).sum().backward()
    return [t.grad.numpy() for t in tensors]


def _torch_grad(torch, fn, *xs: np.ndarray) -> list[np.ndarray]:
    tensors = [torch.tensor(np.asarray(x, np.float32), requires_grad=True) for x in xs]
    out = fn(*tensors)
    weights = np.cos(np.arange(int(np.prod(out.shape)))).reshape(tuple(out.shape)).astype(np.float32)
    (out * torch.tensor(weights)).sum().backward()
    return [t.grad.numpy() for t in tensors]


def _assert_same(got: nb.Tensor, want, exact: bool = True) -> None:
    """Shape, dtype and values of a nabla tensor against a torch tensor."""
    w = want.detach().numpy()
    assert got.shape == tuple(want.shape)
    assert got.numpy().dtype == w.dtype
    if exact:
        np.testing.assert_array_equal(got.numpy(), w)
    else:
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-5, atol=1e-6)


# -- cummax / cummin ---------------------------------------------------------------------------
def test_cummin_ties_take_the_last_index():
    values, indices = nb.cummin(nb.tensor([3.0, 1.0, 1.0, 2.0, 1.0, 0.0, 0.0]), 0)
    assert values.tolist() == [3.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    assert indices.tolist() == [0, 1, 2, 2, 4, 5, 6]
    assert indices.dtype == nb.int64


def test_cummax_ties_take_the_last_index():
    values, indices = nb.cummax(nb.tensor([1.0, 1.0, 2.0, 2.0, 1.0]), 0)
    assert values.tolist() == [1.0, 1.0, 2.0, 2.0, 2.0]
    assert indices.tolist() == [0, 1, 2, 3, 3]


@pytest.mark.parametrize("name", ["cummin", "cummax"])
def test_cum_extremum_nan_is_taken_and_stays(name):
    values, indices = getattr(nb, name)(nb.tensor([2.0, NAN, 1.0, NAN, 0.0]), 0)
    np.testing.assert_array_equal(values.numpy(), [2.0, NAN, NAN, NAN, NAN])
    assert indices.tolist() == [0, 1, 1, 3, 3]


def test_cummin_along_negative_dim_with_named_result():
    x = nb.tensor([[4, 2, 3], [1, 5, 0]])
    result = nb.cummin(x, dim=-1)
    assert result.values.tolist() == [[4, 2, 2], [1, 1, 0]]
    assert result.indices.tolist() == [[0, 1, 1], [0, 0, 2]]
    assert result.values.dtype == nb.int64  # integers keep their dtype (no widening, unlike cumsum)
    assert nb.cummin(x, -2).indices.tolist() == [[0, 0, 0], [1, 0, 1]]


def test_cum_extremum_bool_0d_and_empty():
    values, indices = nb.cummin(nb.tensor([True, False, True]), 0)
    assert values.dtype == nb.bool_ and values.tolist() == [True, False, False] and indices.tolist() == [0, 1, 1]
    values, indices = nb.cummax(nb.tensor(3.0), 0)
    assert values.shape == () and indices.shape == () and indices.item() == 0
    values, indices = nb.cummin(nb.zeros((0, 3)), 1)
    assert values.shape == indices.shape == (0, 3)
    with pytest.raises(ValueError, match="cummin"):
        nb.cummin(nb.zeros((2, 3)), 2)


def test_cummin_gradient_goes_to_the_indices():
    x = nb.tensor([3.0, 1.0, 2.0, 1.0], requires_grad=True)
    values, _ = x.cummin(0)
    (values * nb.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [1.0, 5.0, 0.0, 4.0]  # positions 1 and 2 read x[1]; ties move to x[3]


def test_cummax_forward_mode_matches_reverse_mode():
    x = nb.tensor([[0.5, 2.0, -1.0, 3.0], [1.0, 0.0, 4.0, 2.0]])
    t = nb.tensor(np.arange(8, dtype=np.float32).reshape(2, 4))
    _, tangent = nb.jvp(lambda a: nb.cummax(a, 1).values, (x,), (t,))
    assert tangent.tolist() == [[0.0, 1.0, 1.0, 3.0], [4.0, 4.0, 6.0, 6.0]]


def test_cummin_under_vmap_and_compile():
    x = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, -1.0]], np.float32)
    batched = nb.vmap(lambda r: nb.cummin(r, 0).indices)(nb.tensor(x))
    assert batched.tolist() == [[0, 1, 1], [0, 0, 2]]
    compiled = nb.compile(lambda a: nb.cummax(a, 1))
    assert compiled(nb.tensor(x)).indices.tolist() == [[0, 0, 0], [0, 1, 1]]


@pytest.mark.parametrize("name", ["cummin", "cummax"])
def test_cum_extremum_matches_torch(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for x, dim in [
        (rng.integers(0, 4, (3, 9, 5)).astype(np.float32), 1),  # many ties
        (rng.normal(size=(4, 6)).astype(np.float32), -1),
        (np.array([[2.0, NAN, 1.0, NAN], [NAN, 0.0, NAN, 3.0]], np.float32), 1),
        (rng.integers(-3, 3, (5, 4)), 0),
        (rng.integers(0, 2, (3, 6)).astype(bool), 1),
    ]:
        got, want = getattr(nb, name)(nb.tensor(x), dim), getattr(torch, name)(torch.tensor(x), dim)
        _assert_same(got.indices, want.indices)
        w = want.values.numpy()
        assert got.values.numpy().dtype == w.dtype
        np.testing.assert_array_equal(got.values.numpy(), w)
    x = rng.integers(0, 3, (4, 7)).astype(np.float32)  # ties: the gradient follows the indices
    got = _grad(lambda a: getattr(a, name)(1).values, x)
    want = _torch_grad(torch, lambda a: getattr(a, name)(1).values, x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)


# -- unique ------------------------------------------------------------------------------------
def test_unique_values_inverse_counts():
    x = nb.tensor([[2.0, -1.0, 2.0], [0.5, 2.0, -1.0]])
    values, inverse, counts = nb.unique(x, return_inverse=True, return_counts=True)
    assert values.tolist() == [-1.0, 0.5, 2.0] and values.dtype == nb.float32
    assert inverse.tolist() == [[2, 0, 2], [1, 2, 0]] and inverse.dtype == nb.int64
    assert counts.tolist() == [2, 1, 3] and counts.dtype == nb.int64
    assert nb.unique(x).tolist() == [-1.0, 0.5, 2.0]  # no extras: a tensor, not a tuple
    only_counts = x.unique(return_counts=True)
    assert len(only_counts) == 2 and only_counts[1].tolist() == [2, 1, 3]


def test_unique_along_a_dim():
    x = nb.tensor([[1, 2], [1, 2], [0, 5]])
    values, inverse, counts = nb.unique(x, dim=0, return_inverse=True, return_counts=True)
    assert values.tolist() == [[0, 5], [1, 2]]
    assert inverse.tolist() == [1, 1, 0] and counts.tolist() == [1, 2]
    values, inverse = x.unique(dim=-1, return_inverse=True)  # columns (1, 1, 0) and (2, 2, 5)
    assert values.tolist() == [[1, 2], [1, 2], [0, 5]] and inverse.tolist() == [0, 1]


def test_unique_nans_are_distinct_and_last():
    values, inverse, counts = nb.unique(nb.tensor([NAN, NAN, 1.0, 1.0]), return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(values.numpy(), [1.0, NAN, NAN])
    assert inverse.tolist() == [1, 2, 0, 0] and counts.tolist() == [2, 1, 1]


def test_unique_edge_cases():
    values, inverse, counts = nb.unique(nb.tensor(3.0), return_inverse=True, return_counts=True)
    assert values.shape == (1,) and inverse.shape == () and counts.tolist() == [1]
    values, inverse, counts = nb.unique(nb.zeros(0), return_inverse=True, return_counts=True)
    assert values.shape == inverse.shape == counts.shape == (0,)
    assert nb.unique(nb.zeros((0, 3)), dim=0).shape == (0, 3)
    assert nb.unique(nb.tensor([True, False, True])).tolist() == [False, True]
    assert nb.unique(nb.tensor([3, 1, 2, 1]), sorted=False).tolist() == [1, 2, 3]  # always sorted
    with pytest.raises(ValueError, match="empty dims"):
        nb.unique(nb.zeros((3, 0)), dim=0)
    with pytest.raises(IndexError, match="0-d"):
        nb.unique(nb.tensor(1.0), dim=0)


def test_unique_is_not_differentiable_and_reads_values():
    x = nb.tensor([1.0, 2.0, 1.0], requires_grad=True)
    assert not nb.unique(x).requires_grad
    with pytest.raises(ValueError, match="vmap"):
        nb.vmap(nb.unique)(nb.ones((2, 3)))
    with pytest.raises(nb.ConcretizationError):
        nb.compile(nb.unique)(nb.ones(3))


def test_unique_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    for x, dim in [
        (rng.integers(0, 5, (4, 6)), None),
        (rng.integers(0, 3, (6, 2)).astype(np.float32), 0),
        (rng.integers(0, 2, (2, 5, 3)), 1),
        (rng.integers(0, 2, (3, 4)), -1),
        (np.array([NAN, 2.0, NAN, 2.0, -1.0], np.float32), None),
        (np.zeros((0, 3), np.float32), 0),
    ]:
        got = nb.unique(nb.tensor(x), return_inverse=True, return_counts=True, dim=dim)
        want = torch.unique(torch.tensor(x), return_inverse=True, return_counts=True, dim=dim)
        for g, w in zip(got, want, strict=True):
            assert g.shape == tuple(w.shape) and g.numpy().dtype == w.numpy().dtype
            np.testing.assert_array_equal(g.numpy(), w.numpy())


# -- meshgrid ----------------------------------------------------------------------------------
def test_meshgrid_ij_and_xy():
    gi, gj = nb.meshgrid(nb.tensor([1, 2, 3]), nb.tensor([10, 20]))
    assert gi.tolist() == [[1, 1], [2, 2], [3, 3]] and gj.tolist() == [[10, 20], [10, 20], [10, 20]]
    gx, gy = nb.meshgrid([nb.tensor([1, 2, 3]), nb.tensor([10, 20])], indexing="xy")
    assert gx.tolist() == [[1, 2, 3], [1, 2, 3]] and gy.tolist() == [[10, 10, 10], [20, 20, 20]]
    grids = nb.meshgrid(nb.ones(2), nb.ones(3), nb.ones(4), indexing="xy")
    assert [g.shape for g in grids] == [(3, 2, 4)] * 3
    assert [g.shape for g in nb.meshgrid(nb.tensor(1.0), nb.ones(0))] == [(1, 0), (1, 0)]


def test_meshgrid_errors():
    with pytest.raises(ValueError, match="0-d or 1-d"):
        nb.meshgrid(nb.ones((2, 2)))
    with pytest.raises(TypeError, match="one dtype"):
        nb.meshgrid(nb.ones(2), nb.tensor([1, 2]))
    with pytest.raises(ValueError, match="indexing"):
        nb.meshgrid(nb.ones(2), indexing="ji")
    with pytest.raises(ValueError, match="non-empty"):
        nb.meshgrid()


def test_meshgrid_matches_torch():
    torch = pytest.importorskip("torch")
    a, b, c = np.arange(3.0, dtype=np.float32), np.array([5.0, 7.0], np.float32), np.ones(4, np.float32)
    for indexing in ("ij", "xy"):
        got = nb.meshgrid(nb.tensor(a), nb.tensor(b), nb.tensor(c), indexing=indexing)
        want = torch.meshgrid(torch.tensor(a), torch.tensor(b), torch.tensor(c), indexing=indexing)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)

        def first_two(lib, x, y, i=indexing):
            gx, gy = lib.meshgrid(x, y, indexing=i)
            return gx * 2 + gy * gy

        got, want = _grad(partial(first_two, nb), a, b), _torch_grad(torch, partial(first_two, torch), a, b)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-6)


# -- cross -------------------------------------------------------------------------------------
def test_cross_values_dims_and_method():
    e1, e2 = nb.tensor([1.0, 0.0, 0.0]), nb.tensor([0.0, 1.0, 0.0])
    assert nb.cross(e1, e2).tolist() == [0.0, 0.0, 1.0]
    assert nb.cross(nb.tensor([1, 2, 3]), nb.tensor([4, 5, 6])).tolist() == [-3, 6, -3]
    columns = nb.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])  # vectors e1, e2 along dim 0
    assert nb.cross(columns, nb.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), dim=0).tolist() == [
        [0.0, 1.0],
        [0.0, 0.0],
        [1.0, 0.0],
    ]
    assert columns.cross(columns).tolist() == [[0.0, 0.0]] * 3  # dim=None: the first size-3 dim
    assert nb.cross(nb.ones((4, 3)), nb.ones(3)).shape == (4, 3)  # broadcasting


def test_cross_errors():
    with pytest.raises(ValueError, match="size 3"):
        nb.cross(nb.ones((2, 4)), nb.ones((2, 4)))
    with pytest.raises(ValueError, match="size 3"):
        nb.cross(nb.ones((3, 3)), nb.ones((1, 3)), dim=0)
    with pytest.raises(ValueError, match="no dimension of size 3"):
        nb.cross(nb.ones((2, 4)), nb.ones((2, 4)), None)


def test_cross_gradient_is_a_cross_product():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5, 2.0])
    ga, gb = _grad(nb.cross, a, b)
    w = np.cos(np.arange(3))
    np.testing.assert_allclose(ga, np.cross(b, w), rtol=1e-5)  # d<a x b, w>/da = b x w
    np.testing.assert_allclose(gb, np.cross(w, a), rtol=1e-5)


def test_cross_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(2, 3, 4)).astype(np.float32), rng.normal(size=(1, 3, 4)).astype(np.float32)
    _assert_same(
        nb.cross(nb.tensor(a), nb.tensor(b), dim=1), torch.linalg.cross(*map(torch.tensor, (a, b)), dim=1), False
    )
    _assert_same(nb.tensor(a).cross(nb.tensor(b), dim=-2), torch.tensor(a).cross(torch.tensor(b), dim=-2), False)
    got, want = _grad(partial(_cross1, nb), a, b), _torch_grad(torch, partial(_cross1, torch), a, b)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _cross1(lib, x, y):
    return lib.cross(x, y, dim=1)


# -- kron --------------------------------------------------------------------------------------
def test_kron_values_and_shapes():
    assert nb.kron(nb.tensor([[1, 2]]), nb.tensor([[1], [10]])).tolist() == [[1, 2], [10, 20]]
    assert nb.kron(nb.tensor([1.0, 2.0]), nb.tensor([1.0, -1.0, 0.0])).tolist() == [1.0, -1.0, 0.0, 2.0, -2.0, 0.0]
    assert nb.kron(nb.ones((2, 3)), nb.ones(4)).shape == (2, 12)  # the lower rank gets leading 1s
    assert nb.kron(nb.tensor(2.0), nb.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]
    assert nb.kron(nb.ones((0, 3)), nb.ones((4, 2))).shape == (0, 6)
    assert nb.tensor([[1, 2]]).kron(nb.tensor([[3]])).tolist() == [[3, 6]]


def test_kron_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(2, 3)).astype(np.float32), rng.normal(size=(3, 2, 2)).astype(np.float32)
    _assert_same(nb.kron(nb.tensor(a), nb.tensor(b)), torch.kron(torch.tensor(a), torch.tensor(b)), False)
    ints = nb.kron(nb.tensor(np.ones((2, 2), np.int64)), nb.tensor(b))
    assert ints.dtype == nb.float32  # int64 and float32 promote as in torch
    for g, w in zip(_grad(nb.kron, a, b), _torch_grad(torch, torch.kron, a, b), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


# -- tensor_split ------------------------------------------------------------------------------
def _lists(pieces) -> list:
    return [p.tolist() for p in pieces]


def test_tensor_split_sections_and_indices():
    x = nb.arange(7)
    assert _lists(nb.tensor_split(x, 3)) == [[0, 1, 2], [3, 4], [5, 6]]
    assert _lists(nb.tensor_split(x, [1, 5])) == [[0], [1, 2, 3, 4], [5, 6]]
    assert _lists(nb.tensor_split(x, [5, 2])) == [[0, 1, 2, 3, 4], [], [2, 3, 4, 5, 6]]  # slices, may overlap
    assert _lists(nb.tensor_split(x, [-2, 9])) == [[0, 1, 2, 3, 4], [5, 6], []]
    assert _lists(nb.tensor_split(x, nb.tensor([1, 3]))) == [[0], [1, 2], [3, 4, 5, 6]]
    assert _lists(nb.tensor_split(x, nb.tensor(2))) == [[0, 1, 2, 3], [4, 5, 6]]
    assert _lists(x.tensor_split(())) == [[0, 1, 2, 3, 4, 5, 6]]
    assert [p.shape for p in nb.tensor_split(nb.ones((2, 3)), 5, dim=-1)] == [(2, 1)] * 3 + [(2, 0)] * 2
    assert [p.shape for p in nb.tensor_split(nb.ones((0, 2)), 3)] == [(0, 2)] * 3


def test_tensor_split_errors():
    with pytest.raises(ValueError, match="positive"):
        nb.tensor_split(nb.arange(4), 0)
    with pytest.raises(ValueError, match="rank >= 1"):
        nb.tensor_split(nb.tensor(1.0), 1)
    with pytest.raises(TypeError, match="indices_or_sections"):
        nb.tensor_split(nb.arange(4), [1.5])
    with pytest.raises(TypeError, match="integer tensor"):
        nb.tensor_split(nb.arange(4), nb.tensor([1.0]))


def test_tensor_split_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    for spec, dim in [(4, 1), ([1, 4], 1), ([3, 1], 0), ([-1], -1), (7, 0)]:
        got, want = nb.tensor_split(nb.tensor(x), spec, dim), torch.tensor_split(torch.tensor(x), spec, dim)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)

    def fn(lib, a):  # overlapping pieces: their gradients add up
        pieces = lib.tensor_split(a, [4, 2], 1)
        return lib.cat([p.sum(1) for p in pieces]) * lib.cat([pieces[0][:, :1].sum(1)] * 3)

    np.testing.assert_allclose(_grad(partial(fn, nb), x)[0], _torch_grad(torch, partial(fn, torch), x)[0], rtol=1e-5)


# -- take_along_dim ----------------------------------------------------------------------------
def test_take_along_dim_values():
    x = nb.tensor([[10.0, 30.0, 20.0], [5.0, 4.0, 6.0]])
    assert nb.take_along_dim(x, nb.tensor([[1], [2]]), 1).tolist() == [[30.0], [6.0]]
    assert nb.take_along_dim(x, nb.tensor([[5, 0], [1, 1]])).tolist() == [6.0, 10.0, 30.0, 30.0]  # flattened
    assert x.take_along_dim(nb.tensor([[0, 1, 0]]), dim=0).tolist() == [[10.0, 4.0, 20.0]]  # broadcast
    assert nb.take_along_dim(x, nb.tensor([[-1], [-3]]), 1).tolist() == [[20.0], [5.0]]
    assert nb.take_along_dim(nb.ones((1, 3)), nb.zeros((4, 1), dtype=nb.int64), 0).shape == (4, 3)
    assert nb.take_along_dim(nb.tensor(5.0), nb.tensor(0)).tolist() == [5.0]


def test_take_along_dim_errors():
    x = nb.ones((2, 3))
    with pytest.raises(ValueError, match="dims"):
        nb.take_along_dim(x, nb.tensor([1]), 1)
    with pytest.raises(IndexError, match="0-d"):
        nb.take_along_dim(nb.tensor(1.0), nb.tensor(0), 0)
    with pytest.raises(TypeError, match="integer"):
        nb.take_along_dim(x, nb.tensor([[0.0]]), 1)
    with pytest.raises(IndexError, match="out of bounds"):
        nb.take_along_dim(x, nb.tensor([[3]]), 1)


def test_take_along_dim_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 4, 5)).astype(np.float32)
    for idx, dim in [
        (rng.integers(0, 5, (3, 4, 2)), 2),
        (rng.integers(0, 3, (1, 4, 5)), 0),
        (np.array([0, 59, 7]), None),
    ]:
        got = nb.take_along_dim(nb.tensor(x), nb.tensor(idx), dim)
        _assert_same(got, torch.take_along_dim(torch.tensor(x), torch.tensor(idx), dim))
    idx = rng.integers(0, 4, (3, 6, 5))  # repeated indices: gradients accumulate
    got = _grad(lambda a: nb.take_along_dim(a, nb.tensor(idx), dim=1), x)
    want = _torch_grad(torch, lambda a: torch.take_along_dim(a, torch.tensor(idx), dim=1), x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)

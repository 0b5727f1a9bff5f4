"""SPMD sharding: ops that work along a split dimension without gathering it.

Moving data along a sharded dim (slices, flips, rolls, pads, concatenation) by windows, takes and
scatters along a split axis, softmax, cumulative sums and products, topk, sort and diagonals over a
split axis. Everything runs on the NumPy executor with simulated devices; results and gradients are
compared with the unsharded computation. Shared meshes and helpers live in `test_sharding.py`.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_sharding import MESH1, MESH4, MESH22, arr, comm_ops

import nabla as nb
from nabla import P

# -- moving data along a sharded dim: windows, not gathers -------------------------------------------
# (name, nabla function, NumPy reference): each moves data along dim 0 of a (7, 5) or (8, 5) array.
WINDOWED = [
    ("slice", lambda x: x[2:6], lambda a: a[2:6]),
    ("slice-end", lambda x: x[:-1], lambda a: a[:-1]),
    ("slice-start", lambda x: x[1:], lambda a: a[1:]),
    ("reversed-slice", lambda x: x[5:0:-1], lambda a: a[5:0:-1]),
    ("flip", lambda x: nb.flip(x, 0), lambda a: a[::-1]),
    ("roll", lambda x: nb.roll(x, 3, 0), lambda a: np.roll(a, 3, 0)),
    ("roll-back", lambda x: nb.roll(x, -2, 0), lambda a: np.roll(a, -2, 0)),
    ("chunk", lambda x: nb.chunk(x, 3, 0)[1], lambda a: np.array_split(a, [3, 6])[1]),
    ("split", lambda x: nb.split(x, [1, 4, x.shape[0] - 5], 0)[2], lambda a: a[5:]),
    ("pad", lambda x: nb.pad(x, (0, 0, 2, 1)), lambda a: np.pad(a, ((2, 1), (0, 0)))),
    ("crop", lambda x: nb.pad(x, (0, 0, -1, -2)), lambda a: a[1:-2]),
    (
        "concatenate",
        lambda x: nb.concatenate([x[1:], x * 2.0, x[:2]], 0),
        lambda a: np.concatenate([a[1:], a * 2, a[:2]]),
    ),
    (
        "concatenate-unsharded",  # the unsharded input is split locally first
        lambda x: nb.concatenate([nb.ones((2, 5)), x], 0),
        lambda a: np.concatenate([np.ones((2, 5)), a]),
    ),
]
WINDOW_LAYOUTS = [(7, MESH1, P("x")), (7, MESH4, P("x")), (8, MESH22, P(("b", "a"))), (7, MESH22, P("a", "b"))]


@pytest.mark.parametrize(("name", "fn", "ref"), WINDOWED, ids=[w[0] for w in WINDOWED])
@pytest.mark.parametrize(("rows", "mesh", "spec"), WINDOW_LAYOUTS, ids=str)
def test_moving_data_along_a_sharded_dim_keeps_it_sharded_without_gathering(name, fn, ref, rows, mesh, spec):
    a, w = arr(rows, 5), arr(*ref(np.zeros((rows, 5))).shape)
    x = nb.shard(nb.tensor(a), mesh, spec)
    y = fn(x)
    assert y.sharding.dim_axes == x.sharding.dim_axes
    assert set(comm_ops(y)) == {"window"}  # each device assembles its piece: no all_gather
    np.testing.assert_array_equal(y.numpy(), ref(a))
    # the transpose is a window back: the gradient keeps x's layout and equals the unsharded one
    g = nb.grad(lambda t: (fn(t) * nb.tensor(w)).sum())(x)
    want = nb.grad(lambda t: (fn(t) * nb.tensor(w)).sum())(nb.tensor(a))
    assert g.sharding.dim_axes == x.sharding.dim_axes and "all_gather" not in comm_ops(g)
    np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("rows", "mesh", "spec"), [(10, MESH1, P("x")), (3, MESH4, P("x")), (10, MESH22, P("a", "b"))])
def test_taking_along_a_sharded_axis_leaves_a_partial_sum_instead_of_gathering(rows, mesh, spec):
    table, index = arr(rows, 6), np.array([[rows - 1, 0], [1, rows - 1]])
    x = nb.shard(nb.tensor(table), mesh, spec)
    y = nb.index_select(x, 0, nb.tensor(index.reshape(-1)))  # each device: the rows it holds, else 0
    assert y.sharding.partial == {spec[0]} and comm_ops(y) == []
    np.testing.assert_array_equal(y.numpy(), table[index.reshape(-1)])
    g = nb.grad(lambda t: (nb.index_select(t, 0, nb.tensor(index.reshape(-1))) ** 2).sum())(x)
    assert g.sharding.dim_axes == x.sharding.dim_axes  # each piece scatters its own rows
    assert "all_gather" not in comm_ops(g)
    want = np.zeros_like(table)
    np.add.at(want, index.reshape(-1), 2 * table[index.reshape(-1)])
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("mode", ["set", "add", "max"])
def test_scattering_along_a_sharded_axis_keeps_it_sharded(mode):
    a, u, index = arr(7, 3), arr(4, 3), np.array([6, 0, 3, 6])
    x = nb.shard(nb.tensor(a), MESH4, P("x"))  # rows 2 2 2 1
    y = getattr(x.at[nb.tensor(index)], mode)(nb.tensor(u))
    assert y.sharding.dim_axes == x.sharding.dim_axes and comm_ops(y) == []
    want = getattr(nb.tensor(a).at[nb.tensor(index)], mode)(nb.tensor(u)).numpy()
    if mode == "set":  # duplicates: one of them wins, as in the unsharded scatter
        want[6] = y.numpy()[6]
        assert any(np.array_equal(y.numpy()[6], u[k]) for k in (0, 3))
    np.testing.assert_array_equal(y.numpy(), want)


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: nb.softmax(t, 1),
        lambda t: nb.softmax(t, 1, safe=True),
        lambda t: nb.log_softmax(t, -1),
        lambda t: nb.logsumexp(t, 1),
        lambda t: nb.logsumexp(t, 1, keepdims=True),
    ],
    ids=["softmax", "safe-softmax", "log_softmax", "logsumexp", "logsumexp-keepdims"],
)
def test_softmax_over_a_split_axis_all_reduces_row_vectors_instead_of_gathering(fn):
    a = arr(3, 9)
    a[1], a[2, :4] = -np.inf, -np.inf  # an all -inf row and a partly masked one
    x = nb.shard(nb.tensor(a), MESH4, P(None, "x"))  # 9 over 4 devices: 3 2 2 2
    y = fn(x)
    assert comm_ops(y) == ["all_reduce", "all_reduce"]  # the row maxima and the sums, (3, 1) each
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(y.numpy(), fn(nb.tensor(a)).numpy(), rtol=1e-6, atol=1e-6)
        w = nb.tensor(arr(*y.shape))
        grad = nb.grad(lambda t: nb.where(nb.isfinite(fn(t)), fn(t) * w, 0.0).sum())
        np.testing.assert_allclose(grad(x).numpy(), grad(nb.tensor(a)).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("shape", "mesh", "spec", "axis", "windows"),
    [
        ((3, 8), MESH4, P(None, "x"), 1, 0),
        ((8,), MESH22, P(("a", "b")), 0, 0),
        ((3, 10), MESH4, P(None, "x"), 1, 2),  # uneven: zeros appended to an even split, then cut
        ((3,), MESH4, P("x"), 0, 2),
    ],
    ids=str,
)
def test_cumsum_along_a_split_axis_gathers_only_each_pieces_total(shape, mesh, spec, axis, windows):
    a, w = arr(*shape), arr(*shape)
    x = nb.shard(nb.tensor(a), mesh, spec)
    y = nb.cumsum(x, axis)  # each device's running sums plus the totals of the pieces before it
    assert y.sharding.dim_axes == x.sharding.dim_axes
    assert comm_ops(y) == ["all_gather"] + ["window"] * windows
    np.testing.assert_allclose(y.numpy(), np.cumsum(a, axis), rtol=1e-5, atol=1e-5)
    grad = nb.grad(lambda t: (nb.cumsum(t, axis) * nb.tensor(w)).sum())
    np.testing.assert_allclose(grad(x).numpy(), grad(nb.tensor(a)).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("shape", "mesh", "spec", "axis", "windows"),
    [
        ((3, 8), MESH4, P(None, "x"), 1, 1),  # a window brings each device the previous piece's product
        ((8,), MESH22, P(("a", "b")), 0, 1),
        ((3, 10), MESH4, P(None, "x"), 1, 3),  # uneven: zeros appended to an even split, then cut
        ((2, 3), MESH4, P(None, "x"), 1, 3),
    ],
    ids=str,
)
def test_cumprod_along_a_split_axis_gathers_only_each_pieces_product(shape, mesh, spec, axis, windows):
    a, w = arr(*shape) + 1.0, arr(*shape)
    a.reshape(-1)[[1, 5]] = 0.0  # zeros: the blocked scan never divides, and neither does its gradient
    x = nb.shard(nb.tensor(a), mesh, spec)
    y = nb.cumprod(x, axis)  # each device's running products times the product of the pieces before it
    assert y.sharding.dim_axes == x.sharding.dim_axes
    assert sorted(comm_ops(y)) == ["all_gather"] + ["window"] * windows
    np.testing.assert_allclose(y.numpy(), np.cumprod(a, axis), rtol=1e-5, atol=1e-6)
    grad = nb.grad(lambda t: (nb.cumprod(t, axis) * nb.tensor(w)).sum())
    np.testing.assert_allclose(grad(x).numpy(), grad(nb.tensor(a)).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("shape", "mesh", "spec", "axis", "k", "windows"),
    [
        ((3, 16), MESH4, P(None, "x"), 1, 3, 0),
        ((16, 2), MESH22, P(("a", "b"), None), 0, 2, 0),  # a compound split
        ((8, 2), MESH22, P("a", "b"), 0, 3, 0),  # the other dim stays split
        ((2, 18), MESH4, P(None, "x"), 1, 4, 1),  # uneven (5 5 5 3): extended by values that never win
    ],
    ids=str,
)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_along_a_split_axis_gathers_only_each_devices_candidates(shape, mesh, spec, axis, k, windows, largest):
    a, w = arr(*shape), arr(*shape[:axis], k, *shape[axis + 1 :])
    a.reshape(-1)[::5] = 0.5  # ties across devices resolve by index, as in one topk
    x = nb.shard(nb.tensor(a), mesh, spec)
    values, indices = nb.topk(x, k, axis, largest=largest)
    # each device's own top k, gathered (values and their indices): k per device, not the axis;
    # an uneven split's extension for the smallest k is the row's maximum (all-reduced)
    extension = ["all_reduce"] if windows and not largest else []
    assert comm_ops(values, indices) == ["all_gather"] * 2 + extension + ["window"] * windows
    expected = nb.topk(nb.tensor(a), k, axis, largest=largest)
    np.testing.assert_array_equal(indices.numpy(), expected.indices.numpy())
    np.testing.assert_array_equal(values.numpy(), expected.values.numpy())
    grad = nb.grad(lambda t: (nb.topk(t, k, axis, largest=largest).values * nb.tensor(w)).sum())
    np.testing.assert_array_equal(grad(x).numpy(), grad(nb.tensor(a)).numpy())


def test_topk_along_a_split_axis_of_ints_and_of_few_elements():
    a = np.array([[5, 1, 9, 9, 2, 7, 0, 9, 3]], np.int32)  # 9 over 4 devices: 3 2 2 2
    x = nb.shard(nb.tensor(a), MESH4, P(None, "x"))
    values, indices = nb.topk(x, 1, 1, largest=False)  # the padding (int32's max) never wins
    assert values.numpy().tolist() == [[0]] and indices.numpy().tolist() == [[6]]
    values, indices = nb.topk(x, 2, 1)
    assert values.numpy().tolist() == [[9, 9]] and indices.numpy().tolist() == [[2, 3]]
    values, indices = nb.topk(x, 3, 1)  # k as large as a piece: a sort over the pieces, then its first k
    assert "all_gather" not in comm_ops(values, indices) and values.sharding.dim_axes == ((), ("x",))
    assert values.numpy().tolist() == [[9, 9, 9]] and indices.numpy().tolist() == [[2, 3, 7]]


def test_topk_of_the_smallest_keeps_nan_over_an_uneven_split():
    a = np.array([[np.nan, 2.0, np.nan, np.inf, np.nan, np.nan, 1.0, np.nan, np.nan]], np.float32)
    x = nb.shard(nb.tensor(a), MESH4, P(None, "x"))  # 9 over 4: extended by the row's maximum, nan
    for k in (2, 5):  # each device's candidates, and a sort over the pieces
        values, indices = nb.topk(x, k, 1, largest=False)
        expected = nb.topk(nb.tensor(a), k, 1, largest=False)
        np.testing.assert_array_equal(values.numpy(), expected.values.numpy())
        np.testing.assert_array_equal(indices.numpy(), expected.indices.numpy())


# -- sort along a split axis: odd-even transposition of the pieces, the result split alike -------------
@pytest.mark.parametrize(
    ("shape", "mesh", "spec", "axis", "windows"),
    [
        ((3, 16), MESH4, P(None, "x"), 1, 16),  # 4 rounds, each a window to either neighbour for values and indices
        ((16, 2), MESH22, P(("a", "b"), None), 0, 16),  # a compound split
        ((8, 2), MESH22, P("a", "b"), 0, 4),  # two pieces: one round; the other dim stays split
        ((2, 18), MESH4, P(None, "x"), 1, 19),  # uneven (5 5 5 3): extended by values that sort last, then cut
    ],
    ids=str,
)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_along_a_split_axis_keeps_it_split(shape, mesh, spec, axis, windows, descending):
    a, w = arr(*shape), arr(*shape)
    a.reshape(-1)[::5] = 0.5  # ties across devices keep their index order, as in one stable sort
    x = nb.shard(nb.tensor(a), mesh, spec)
    values, indices = nb.sort(x, axis, descending=descending)
    assert values.sharding.dim_axes == indices.sharding.dim_axes == x.sharding.dim_axes
    # no device holds more than two pieces: windows between neighbours, no gather
    extension = ["all_reduce"] if shape[axis] % 4 and not descending else []
    assert comm_ops(values, indices) == extension + ["window"] * windows
    expected = nb.sort(nb.tensor(a), axis, descending=descending)
    np.testing.assert_array_equal(indices.numpy(), expected.indices.numpy())
    np.testing.assert_array_equal(values.numpy(), expected.values.numpy())
    np.testing.assert_array_equal(nb.argsort(x, axis, descending).numpy(), expected.indices.numpy())
    grad = nb.grad(lambda t: (nb.sort(t, axis, descending=descending).values * nb.tensor(w)).sum())
    g = grad(x)
    assert g.sharding.dim_axes == x.sharding.dim_axes
    np.testing.assert_array_equal(g.numpy(), grad(nb.tensor(a)).numpy())


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_sort_along_an_uneven_split_with_nan_inf_and_integer_extremes(descending, dtype):
    if dtype == np.float32:  # nan sorts last ascending and first descending, as in PyTorch
        row = [np.inf, np.nan, 1.0, -np.inf, np.nan, 1.0, np.inf, -2.0, np.nan, -np.inf, 0.0]
    else:  # the extension ties with the integer extremes and sorts after them by index
        row = [2**31 - 1, 5, -(2**31), 0, 2**31 - 1, -(2**31), 5, 7, -1, 2**31 - 1, 3]
    a = np.array([row, row[::-1]], dtype)
    x = nb.shard(nb.tensor(a), MESH4, P(None, "x"))  # 11 over 4
    values, indices = nb.sort(x, 1, descending=descending)
    expected = nb.sort(nb.tensor(a), 1, descending=descending)
    np.testing.assert_array_equal(values.numpy(), expected.values.numpy())
    np.testing.assert_array_equal(indices.numpy(), expected.indices.numpy())


@pytest.mark.parametrize(
    ("shape", "mesh", "spec", "args"),
    [
        ((8, 6), MESH4, P("x"), (2, 0, 1)),
        ((8, 6), MESH4, P("x"), (-3, 0, 1)),
        ((6, 8), MESH4, P(None, "x"), (-2, 1, 0)),
        ((2, 7, 5), MESH4, P(None, "x"), (1, 1, 2)),
        ((6, 8), MESH22, P("a", "b"), (1, 0, 1)),
    ],
    ids=str,
)
def test_diagonal_of_a_split_dim_is_selected_and_summed_locally(shape, mesh, spec, args):
    a = arr(*shape)
    a[0, -1] = np.inf  # off the diagonal: selected away, not multiplied by 0
    x = nb.shard(nb.tensor(a), mesh, spec)
    y = nb.diagonal(x, *args)
    assert "all_gather" not in comm_ops(y)
    assert y.sharding.dim_axes[-1] or y.sharding.partial  # split like the kept dim, or a sum over the other
    np.testing.assert_array_equal(y.numpy(), np.diagonal(a, *args))
    w = nb.tensor(arr(*y.shape))
    grad = nb.grad(lambda t: (nb.diagonal(t, *args) * w).sum())
    np.testing.assert_allclose(grad(x).numpy(), grad(nb.tensor(a)).numpy(), rtol=1e-6)


@pytest.mark.parametrize("other", [P(None, "b"), P("b"), P()], ids=str)
def test_concatenating_differently_laid_out_inputs_moves_them_not_the_result(other):
    a, b = arr(6, 4), arr(3, 4)
    x, y = nb.shard(nb.tensor(a), MESH22, P("a")), nb.shard(nb.tensor(b), MESH22, other)
    z = nb.concatenate([x, y], 0)  # y is moved into x's layout; the result is never gathered
    assert z.sharding.dim_axes == x.sharding.dim_axes and comm_ops(z).count("window") == 2
    np.testing.assert_array_equal(z.numpy(), np.concatenate([a, b]))


def test_a_window_passes_partial_sums_through_and_has_a_tangent():
    xa, wa = arr(6, 4), arr(4, 5)
    y = nb.shard(nb.tensor(xa), MESH22, P("a", "b")) @ nb.shard(nb.tensor(wa), MESH22, P("b", None))
    assert y.sharding.partial == {"b"} and y.sharding.dim_axes[0] == ("a",)
    z = nb.flip(y, 0)[1:]  # linear: the sum over "b" is still pending
    assert z.sharding.partial == {"b"} and comm_ops(z) == ["window", "window"]
    np.testing.assert_allclose(z.numpy(), (xa @ wa)[::-1][1:], rtol=1e-5, atol=1e-5)
    x = nb.shard(nb.tensor(xa), MESH4, P("x"))
    tangent = nb.tensor(arr(6, 4))
    out, dout = nb.jvp(lambda t: nb.roll(t, 1, 0) * 2.0, (x,), (tangent,))
    np.testing.assert_allclose(dout.numpy(), np.roll(tangent.numpy(), 1, 0) * 2.0, rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), np.roll(xa, 1, 0) * 2.0, rtol=1e-6)

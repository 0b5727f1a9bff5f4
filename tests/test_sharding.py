"""SPMD sharding core: meshes, specs, propagation, resharding, collectives, shard_map.

Everything runs on the NumPy executor with simulated devices; results are compared with the
unsharded computation. `test_sharding_max.py` compiles the same programs on MAX.
"""

from __future__ import annotations

import numpy as np
import pytest

import nabla as nb
from nabla import DeviceMesh, DimSpec, P, ShardingSpec
from nabla.core.sharding import OpShardingRule, plan_reshard, propagate
from nabla.core.sharding import rules as sharding_rules
from nabla.ops.communication import count_collectives

RNG = np.random.default_rng(0)
MESH1 = DeviceMesh("m1", (2,), ("x",))
MESH4 = DeviceMesh("m4", (4,), ("x",))
MESH22 = DeviceMesh("m22", (2, 2), ("a", "b"))


def arr(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def comm_ops(*tensors: nb.Tensor) -> list[str]:
    """Names of the communicating ops recorded behind unevaluated tensors."""
    return sorted(count_collectives(*tensors).elements())


# -- meshes and specs --------------------------------------------------------------------------
def test_mesh_geometry():
    assert MESH22.size == 4 and MESH22.axis_size("b") == 2
    assert MESH22.coords == ((0, 0), (0, 1), (1, 0), (1, 1))
    assert MESH22.groups(("b",)) == [[0, 1], [2, 3]]
    assert MESH22.groups(("a",)) == [[0, 2], [1, 3]]
    assert MESH22.index_along(3, ("a", "b")) == 3 and MESH22.index_along(2, ("b", "a")) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("m", (2, 2), ("a",)), "has 2 axes but axis_names"),
        (("m", (2, 2), ("a", "b"), [0, 1, 2]), "needs 4 devices, got 3"),
        (("m", (2,), ("a",), [0, 0]), "distinct"),
        (("m", (2, 2), ("a", "a")), "distinct strings"),
        (("m", (0,), ("a",)), "positive"),
    ],
)
def test_mesh_errors(args, message):
    with pytest.raises(ValueError, match=message):
        DeviceMesh(*args)


def test_spec_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"no axis 'z' \(axes: \('a', 'b'\)\)"):
        ShardingSpec(MESH22, [("z",), ()])
    with pytest.raises(ValueError, match="'a' is used twice"):
        ShardingSpec(MESH22, [("a",), ("a",)])
    with pytest.raises(ValueError, match="used twice"):
        ShardingSpec(MESH22, [("a",), ()], partial=["a"])
    x = nb.tensor(arr(4, 4))
    with pytest.raises(ValueError, match=r"spec P\('a', None, None\) has 3 entries, the tensor has rank 2"):
        nb.shard(x, MESH22, P("a", None, None))
    with pytest.raises(ValueError, match="has 1 dimensions, the tensor has rank 2"):
        nb.shard(x, MESH22, ShardingSpec(MESH22, [("a",)]))
    with pytest.raises(ValueError, match="no axis 'q'"):
        nb.shard(x, MESH22, P("q"))
    with pytest.raises(TypeError, match="mesh must be a DeviceMesh"):
        nb.shard(x, "mesh", P())
    a = nb.shard(x, MESH1, P("x"))
    b = nb.shard(x, MESH4, P("x"))
    with pytest.raises(ValueError, match=r"different meshes \['m1', 'm4'\]"):
        a + b


def test_spec_repr_and_keys():
    spec = ShardingSpec(MESH22, [("a",), DimSpec(("b",), is_open=True)])
    assert repr(spec) == 'sharding<@m22, [{"a"}, {"b", ?}]>'
    assert repr(ShardingSpec(MESH22, [(), ()], partial=["b"])) == 'sharding<@m22, [{}, {}], partial={"b"}>'
    assert spec == ShardingSpec(MESH22, [("a",), DimSpec(("b",), is_open=True)])
    assert hash(spec) == hash(ShardingSpec(MESH22, [("a",), DimSpec(("b",), is_open=True)]))
    assert spec != ShardingSpec(MESH22, [("a",), ("b",)])


@pytest.mark.parametrize("shape", [(7, 5), (8, 4), (3, 1), (1, 9)])
@pytest.mark.parametrize("spec", [P("x"), P(None, "x"), P(("a", "b")), P("b", "a"), P(None, ("b", "a"))])
def test_split_and_assemble_uneven(shape, spec):
    mesh = MESH4 if "x" in str(spec) else MESH22
    value = arr(*shape)
    t = nb.shard(nb.tensor(value), mesh, spec)
    np.testing.assert_array_equal(t.numpy(), value)
    shards = t.shards()
    assert len(shards) == mesh.size
    for pos, s in enumerate(shards):
        assert s.shape == t.local_shape(pos)
        np.testing.assert_array_equal(s, value[t.sharding.local_slices(shape, pos)])
    # hierarchical splitting: the pieces tile the array exactly once per replica group
    assert sum(s.size for s in shards) == value.size * (mesh.size // t.sharding.num_pieces)


def test_pieces_are_shared_by_replicas():
    t = nb.shard(nb.tensor(arr(4, 6)), MESH22, P("a"))
    assert t.sharding.piece_of == (0, 0, 1, 1)
    assert len(t._impl.data) == 2


def test_shard_of_realized_tensor_records_no_op():
    nb.reset_cache_info()
    t = nb.shard(nb.tensor(arr(4, 4)), MESH22, P("a", "b"))
    assert t._impl.is_realized and t._impl.output_refs is None
    assert nb.cache_info().executions == 0


# -- propagation ---------------------------------------------------------------------------------
def test_matmul_rule_contracting_factor_leaves_partial_sum():
    rule = OpShardingRule.parse("... m k, ... k n -> ... m n", [(4, 6), (6, 8)], [(4, 8)], partial_ok=(0, 1))
    spec = ShardingSpec(MESH22, [(), ("b",)])
    prop = propagate(rule, [spec, None], [(4, 6), (6, 8)], MESH22)
    assert prop.in_specs[1] == ShardingSpec(MESH22, [("b",), ()])
    assert prop.out_specs[0] == ShardingSpec(MESH22, [(), ()], partial=["b"])


def test_conflict_resolution_prefers_the_larger_operand():
    rule = OpShardingRule.parse("a b, a b -> a b", [(8, 8), (8, 8)], [(8, 8)])
    small = ShardingSpec(MESH22, [("a",), ()])
    big = ShardingSpec(MESH22, [("b",), ()])
    prop = propagate(rule, [small, big], [(8, 8), (8, 8)], MESH22)
    assert prop.out_specs[0].dim_axes == (("a",), ())  # equal sizes: the earlier operand wins
    prop = propagate(rule, [small, big], [(2, 8), (8, 8)], MESH22)
    assert prop.out_specs[0].dim_axes == (("b",), ())  # the larger operand wins


def test_one_mesh_axis_shards_one_dim_per_tensor():
    rule = OpShardingRule.parse("a b -> a b", [(8, 8)], [(8, 8)])
    x = ShardingSpec(MESH22, [("a",), ("b",)])
    prop = propagate(rule, [x], [(8, 8)], MESH22)
    assert prop.out_specs[0] == x


def test_compound_dims_shard_only_the_major_factor_evenly():
    rule = OpShardingRule.parse("(h d) -> h d", [(8,)], [(4, 2)], sizes={"h": 4})
    prop = propagate(rule, [ShardingSpec(MESH1, [("x",)])], [(8,)], MESH1)
    assert prop.out_specs[0].dim_axes == (("x",), ())
    rule = OpShardingRule.parse("(h d) -> h d", [(6,)], [(3, 2)], sizes={"h": 3})
    prop = propagate(rule, [ShardingSpec(MESH1, [("x",)])], [(6,)], MESH1)
    assert prop.out_specs[0].dim_axes == ((), ())  # 3 does not split evenly over 2


def test_partial_sums_pass_through_linear_ops_and_reduce_once():
    xa, wa = arr(4, 6), arr(6, 5)
    x = nb.shard(nb.tensor(xa), MESH1, P(None, "x"))
    w = nb.shard(nb.tensor(wa), MESH1, P("x", None))
    y = x @ w
    assert y.sharding.partial == {"x"}
    z = (y * 3.0 - y).sum(axis=0)  # linear: still partial, no collective yet
    assert z.sharding.partial == {"x"} and comm_ops(z) == []
    r = nb.relu(z)  # not linear: one all_reduce
    assert r.sharding.partial == frozenset() and comm_ops(r) == ["all_reduce"]
    np.testing.assert_allclose(r.numpy(), np.maximum((xa @ wa * 2).sum(0), 0), rtol=1e-5, atol=1e-5)


def _partial_product(axis: str) -> tuple[nb.Tensor, np.ndarray]:
    """x @ w with the contraction sharded over `axis`: a sum left partial over it."""
    xa, wa = arr(3, 4), arr(4, 5)
    y = nb.shard(nb.tensor(xa), MESH22, P(None, axis)) @ nb.shard(nb.tensor(wa), MESH22, P(axis, None))
    return y, xa @ wa


def test_products_keep_partial_sums_only_by_finite_constants():
    (ya, a), (yb, b) = _partial_product("a"), _partial_product("b")
    scaled = ya * 0.5 / 4.0  # c * (a1 + a2) = c*a1 + c*a2 for a finite c: no collective yet
    assert scaled.sharding.partial == {"a"} and comm_ops(scaled) == []
    np.testing.assert_allclose(scaled.numpy(), a / 8, rtol=1e-5, atol=1e-6)
    # A tensor factor may hold inf, for which c*a1 + c*a2 is not c*(a1 + a2): both are reduced
    both = ya * yb
    assert both.sharding.partial == frozenset() and comm_ops(both) == ["all_reduce", "all_reduce"]
    np.testing.assert_allclose(both.numpy(), a * b, rtol=1e-5, atol=1e-5)
    quotient = ya / (yb + 1.0)
    assert quotient.sharding.partial == frozenset() and comm_ops(quotient) == ["all_reduce", "all_reduce"]
    np.testing.assert_allclose(quotient.numpy(), a / (b + 1.0), rtol=1e-5, atol=1e-5)


def _one_zero_partial() -> nb.Tensor:
    """[[1.0]] as a sum left partial over "x" whose pieces are 1 and 0."""
    x = nb.shard(nb.tensor(np.array([[1.0, 0.0]], np.float32)), MESH1, P(None, "x"))
    return x @ nb.shard(nb.tensor(np.ones((2, 1), np.float32)), MESH1, P("x", None))


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (lambda y: y * np.inf, np.inf),  # passed through, inf * 1 + inf * 0 would be nan
        (lambda y: y / 0.0, np.inf),  # 1/0 + 0/0 would be nan
        (lambda y: y * nb.exp(nb.tensor(np.full((1, 1), 100.0, np.float32))), np.inf),  # exp(100) is inf
        (lambda y: y @ nb.tensor(np.full((1, 1), -np.inf, np.float32)), -np.inf),
        (lambda y: y * -2.0, -2.0),  # a finite constant: still exact
    ],
    ids=["mul-inf", "div-zero", "mul-tensor", "matmul-inf", "mul-finite"],
)
def test_partial_sums_reduce_before_a_product_that_could_make_nan(fn, expected):
    np.testing.assert_array_equal(fn(_one_zero_partial()).numpy(), [[expected]])


def test_elementwise_with_unsharded_scalar_needs_no_collective():
    x = nb.shard(nb.tensor(arr(6, 4)), MESH22, P("a", "b"))
    y = nb.exp(x) * 2.0 + 1.0
    assert y.sharding == x.sharding and comm_ops(y) == []


# -- reshape across splits and merges ---------------------------------------------------------------
# (in shape, out shape, mesh, spec, collectives, the output's dim axes). A group of dims that is split
# and merged at once ((4, 16) -> (8, 8) is "a (b c) -> (a b) c") keeps a sharded dim when its major
# factor leads every dim holding it and splits evenly; otherwise the dim is gathered.
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
    # each device's own top k, gathered (values and their indices): k per device, not the axis
    assert comm_ops(values, indices) == ["all_gather"] * 2 + ["window"] * windows
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
    values, indices = nb.topk(x, 3, 1)  # k as large as a piece: the axis is gathered, as before
    assert comm_ops(values, indices) == ["all_gather"]
    assert values.numpy().tolist() == [[9, 9, 9]] and indices.numpy().tolist() == [[2, 3, 7]]


@pytest.mark.parametrize("mesh", [MESH1, DeviceMesh("m3", (3,), ("x",))], ids=["even", "uneven"])
@pytest.mark.parametrize("split_keys", [False, True], ids=["queries", "queries-and-keys"])
def test_causal_attention_over_split_queries_masks_by_global_position(mesh, split_keys):
    q, k, v = (arr(2, 3, 8, 4) for _ in range(3))
    qs = nb.shard(nb.tensor(q), mesh, P(None, None, "x"))  # the sequence over devices
    ks, vs = (nb.shard(nb.tensor(t), mesh, P(None, None, "x")) if split_keys else nb.tensor(t) for t in (k, v))

    def f(a, b, c):
        return (nb.dot_product_attention(a, b, c, is_causal=True) ** 2).sum()

    y = nb.dot_product_attention(qs, ks, vs, is_causal=True)
    assert y.sharding.dim_axes[2] == ("x",)  # each device its queries, keys j <= its rows' i
    want = nb.dot_product_attention(nb.tensor(q), nb.tensor(k), nb.tensor(v), is_causal=True)
    np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    got = nb.grad(f, (0, 1, 2))(qs, ks, vs)
    ref = nb.grad(f, (0, 1, 2))(nb.tensor(q), nb.tensor(k), nb.tensor(v))
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(
    ("q_len", "q_split"), [(8, True), (8, False), (6, False)], ids=["seq-parallel", "q-whole", "cross"]
)
def test_keys_split_along_the_sequence_run_ring_attention(causal, q_len, q_split):
    # Batch over dp, keys and values over sp: each device passes its key/value block round the
    # ring (ppermutes) and folds it into a running softmax; nothing gathers the keys.
    mesh = DeviceMesh("dpsp", (2, 4), ("dp", "sp"))
    q, k, v = arr(2, 3, q_len, 4), arr(2, 3, 8, 4), arr(2, 3, 8, 5)
    qs = nb.shard(nb.tensor(q), mesh, P("dp", None, "sp" if q_split else None))
    ks, vs = (nb.shard(nb.tensor(t), mesh, P("dp", None, "sp")) for t in (k, v))

    def f(a, b, c):
        return (nb.dot_product_attention(a, b, c, is_causal=causal) ** 2).sum()

    y = nb.dot_product_attention(qs, ks, vs, is_causal=causal)
    assert comm_ops(y) == ["ppermute"] * 6  # 3 passes of k and of v
    assert y.sharding.dim_axes == qs.sharding.dim_axes  # q's layout
    want = nb.dot_product_attention(nb.tensor(q), nb.tensor(k), nb.tensor(v), is_causal=causal)
    np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    got = nb.grad(f, (0, 1, 2))(qs, ks, vs)
    assert "all_gather" not in comm_ops(*got)
    ref = nb.grad(f, (0, 1, 2))(nb.tensor(q), nb.tensor(k), nb.tensor(v))
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(("q_split", "mask_kind"), [(True, None), (False, None), (True, "keys"), (True, "rows")])
def test_ring_attention_pads_a_sequence_that_does_not_split_evenly(causal, q_split, mask_kind):
    # 10 positions over 4 devices (3 3 2 2): each piece is zero-extended to 3, the padding's
    # keys are masked out and its query rows dropped; still no gather of the keys.
    mesh = DeviceMesh("dpsp", (2, 4), ("dp", "sp"))
    q, k, v = arr(2, 3, 10, 4), arr(2, 3, 10, 4), arr(2, 3, 10, 5)
    mask = None
    if mask_kind == "keys":  # (B, 1, 1, S) key padding: its key dim travels with k's blocks
        mask = np.ones((2, 1, 1, 10), bool)
        mask[1, ..., 7:] = False
    elif mask_kind == "rows":  # (1, 1, L, S) additive: rows split like q's, every key on each device
        mask = np.random.default_rng(3).standard_normal((1, 1, 10, 10)).astype(np.float32)
    qs = nb.shard(nb.tensor(q), mesh, P("dp", None, "sp" if q_split else None))
    ks, vs = (nb.shard(nb.tensor(t), mesh, P("dp", None, "sp")) for t in (k, v))
    masks = () if mask is None else (nb.tensor(mask),)

    def f(a, b, c, *m):
        return (nb.dot_product_attention(a, b, c, *m, is_causal=causal) ** 2).sum()

    y = nb.dot_product_attention(qs, ks, vs, *masks, is_causal=causal)
    assert comm_ops(y).count("ppermute") >= 6 and "all_gather" not in comm_ops(y)
    assert y.shape == (2, 3, 10, 5) and y.sharding.dim_axes == qs.sharding.dim_axes
    want = nb.dot_product_attention(nb.tensor(q), nb.tensor(k), nb.tensor(v), *masks, is_causal=causal)
    np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    argnums = (0, 1, 2, 3) if mask_kind == "rows" else (0, 1, 2)
    got = nb.grad(f, argnums)(qs, ks, vs, *masks)
    assert "all_gather" not in comm_ops(*got)
    ref = nb.grad(f, argnums)(nb.tensor(q), nb.tensor(k), nb.tensor(v), *masks)
    for g, r in zip(got, ref, strict=True):
        assert g.shape == r.shape
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mask_kind", ["key-padding", "float-per-query", "bool-full"])
def test_ring_attention_takes_masks_whose_key_blocks_travel_with_the_keys(mask_kind):
    mesh = DeviceMesh("dpsp", (2, 4), ("dp", "sp"))
    q, k, v = arr(2, 3, 8, 4), arr(2, 3, 8, 4), arr(2, 3, 8, 5)
    rng = np.random.default_rng(7)
    if mask_kind == "key-padding":  # (B, 1, 1, S): the last keys of the second sequence padded
        mask = np.ones((2, 1, 1, 8), bool)
        mask[1, ..., 5:] = False
    elif mask_kind == "float-per-query":  # (1, 1, L, S) additive, trained (its gradient flows)
        mask = rng.standard_normal((1, 1, 8, 8)).astype(np.float32)
    else:  # (B, H, L, S), whole rows masked out: zeros, as the one op gives
        mask = rng.random((2, 3, 8, 8)) > 0.3
        mask[0, 0, 2] = False
    qs, ks, vs = (nb.shard(nb.tensor(t), mesh, P("dp", None, "sp")) for t in (q, k, v))

    def f(a, b, c, m):
        return (nb.dot_product_attention(a, b, c, m, is_causal=True) ** 2).sum()

    y = nb.dot_product_attention(qs, ks, vs, nb.tensor(mask), is_causal=True)
    assert "all_gather" not in comm_ops(y)
    want = nb.dot_product_attention(nb.tensor(q), nb.tensor(k), nb.tensor(v), nb.tensor(mask), is_causal=True)
    np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    argnums = (0, 1, 2, 3) if mask.dtype != bool else (0, 1, 2)
    got = nb.grad(f, argnums)(qs, ks, vs, nb.tensor(mask))
    ref = nb.grad(f, argnums)(nb.tensor(q), nb.tensor(k), nb.tensor(v), nb.tensor(mask))
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("q_split", [True, False], ids=["seq-parallel", "q-whole"])
def test_ring_attention_dropout_drops_weights_block_by_block_without_gathering(q_split):
    # With v the identity, the output is the dropped weights themselves: each is 0 or the
    # unsharded weight / (1 - p), so the mask applies to the weighted values only (the row sums
    # normalize the undropped weights) and lands on the right (query, key) positions.
    nb.manual_seed(3)
    mesh, p = DeviceMesh("dpsp", (2, 4), ("dp", "sp")), 0.5
    q, k, v = arr(2, 1, 8, 4), arr(2, 1, 8, 4), np.broadcast_to(np.eye(8, dtype=np.float32), (2, 1, 8, 8)).copy()
    qs = nb.shard(nb.tensor(q), mesh, P("dp", None, "sp" if q_split else None))
    ks, vs = (nb.shard(nb.tensor(t), mesh, P("dp", None, "sp")) for t in (k, v))
    r = arr(2, 1, 8, 8)

    def f(a, b, c):
        return nb.dot_product_attention(a, b, c, is_causal=True, dropout_p=p)

    y, pullback = nb.vjp(f, qs, ks, vs)
    grads = pullback(nb.tensor(r))
    assert comm_ops(y) == ["ppermute"] * 6 and "all_gather" not in comm_ops(*grads)
    out = y.numpy()
    tril = nb.tensor(np.tril(np.ones((8, 8), bool)))

    def weights(a, b):
        return nb.softmax(nb.where(tril, nb.matmul(a * 0.5, nb.transpose(b, -1, -2)), -np.inf), -1)  # scale 1/sqrt(4)

    w = weights(nb.tensor(q), nb.tensor(k)).numpy()
    keep = out > 0
    np.testing.assert_allclose(out[keep], w[keep] / (1 - p), rtol=1e-5)
    lower = np.tril(np.ones((8, 8), bool))
    assert not out[..., ~lower].any()  # causal: nothing above the diagonal
    kept = keep[..., lower].mean()
    assert 0.25 < kept < 0.75
    assert (keep[0] != keep[1]).any()  # data-parallel replicas draw their own masks

    def ref(a, b, c):  # the same mask, unsharded, op by op
        return nb.matmul(weights(a, b) * nb.tensor(keep.astype(np.float32) / (1 - p)), c)

    _, ref_pullback = nb.vjp(ref, nb.tensor(q), nb.tensor(k), nb.tensor(v))
    for g, want in zip(grads, ref_pullback(nb.tensor(r)), strict=True):
        np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


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


RESHAPES = [
    ((8, 4, 16), (8, 8, 8), MESH1, P("x"), [], (("x",), (), ())),
    ((8, 16), (4, 32), MESH1, P("x"), [], (("x",), ())),  # (4k, 16) -> (2k, 32), k = 2
    ((12, 16), (6, 32), MESH1, P("x"), [], (("x",), ())),  # k = 3: local (6, 16) -> (3, 32)
    ((4, 16), (8, 8), MESH1, P("x"), [], (("x",), ())),
    ((8, 8), (4, 16), MESH1, P("x"), [], (("x",), ())),
    ((6, 4, 16), (6, 8, 8), MESH1, P(None, "x"), [], ((), ("x",), ())),
    ((8, 16), (4, 32), MESH22, P("a"), [], (("a",), ())),
    ((8, 16), (4, 32), MESH22, P(("a", "b")), [], (("a", "b"), ())),
    ((4, 16), (8, 8), MESH22, P(("b", "a")), [], (("b", "a"), ())),
    ((8, 16), (4, 32), MESH22, P("a", "b"), ["all_gather"], (("a",), ())),  # 16 is a minor part of 32
    ((6, 4, 16), (6, 8, 8), MESH1, P(None, None, "x"), ["all_gather"], ((), (), ())),  # 16 = 2 x 8: 2 is minor
    ((3, 16), (6, 8), MESH1, P("x"), ["all_gather"], ((), ())),  # 3 rows do not split evenly over 2
    ((6, 16), (12, 8), MESH4, P("x"), ["all_gather"], ((), ())),  # 6 rows over 4
    ((8, 6), (2, 24), MESH4, P("x"), ["all_gather"], ((), ())),  # the major factor 2 over 4
    ((6, 4), (4, 6), MESH1, P("x"), ["all_gather"], ((), ())),  # no common factors: whole
]


@pytest.mark.parametrize(("src", "dst", "mesh", "spec", "collectives", "dims"), RESHAPES, ids=str)
def test_reshape_keeps_the_major_factor_sharded_through_splits_and_merges(src, dst, mesh, spec, collectives, dims):
    value, weight = arr(*src), arr(*dst)
    x = nb.shard(nb.tensor(value), mesh, spec)
    y = nb.reshape(x, dst)
    assert comm_ops(y) == collectives and y.sharding.dim_axes == dims
    want = value.reshape(dst)
    np.testing.assert_array_equal(y.numpy(), want)
    for pos, s in enumerate(y.shards()):  # every device's local reshape gave its own piece
        np.testing.assert_array_equal(s, want[y.sharding.local_slices(dst, pos)])

    def loss(v):
        return (nb.reshape(v, dst) * nb.tensor(weight)).square().sum()

    g = nb.grad(loss)(x)
    assert comm_ops(g) == collectives  # the backward reshape needs no collective either
    assert g.sharding.dim_axes == x.sharding.dim_axes
    unsharded = nb.grad(loss)(nb.tensor(value))
    np.testing.assert_allclose(g.numpy(), unsharded.numpy(), rtol=1e-6)
    np.testing.assert_allclose(g.numpy(), (2 * want * weight**2).reshape(src), rtol=1e-5, atol=1e-6)


def test_reshape_rule_cuts_groups_into_common_factors():
    rule = OpShardingRule.parse("a (b c) -> (a b) c", [(4, 16)], [(8, 8)], sizes={"a": 4, "b": 2})
    from_template = sharding_rules.reshape((4, 16), (8, 8))
    rename = {"g1_0": "a", "g1_1": "b", "g1_2": "c"}
    assert tuple(tuple(rename[f] for f in d) for d in from_template.operands[0]) == rule.operands[0]
    assert tuple(tuple(rename[f] for f in d) for d in from_template.results[0]) == rule.results[0]
    assert {rename[f]: n for f, n in from_template.sizes.items()} == rule.sizes
    assert not from_template.whole
    assert sharding_rules.reshape((6, 4), (4, 6)).whole  # 4 and 6 share no row-major cut


# -- position-dependent ops -------------------------------------------------------------------------
# (shape, mesh, spec): row-, column- and both-sharded, uneven and empty pieces, a sharded batch dim.
TRIANGLE_LAYOUTS = [
    ((6, 5), MESH1, P("x")),
    ((6, 5), MESH1, P(None, "x")),
    ((6, 7), MESH4, P("x")),  # pieces of 2, 2, 1, 1 rows
    ((5, 6), MESH4, P(None, "x")),
    ((3, 5), MESH4, P("x")),  # one device holds no row
    ((6, 5), MESH22, P("a", "b")),
    ((5, 7), MESH22, P("b", "a")),
    ((7, 5), MESH22, P(("a", "b"))),
    ((4, 6), MESH22, P(None, ("b", "a"))),
    ((2, 5, 6), MESH22, P("a", None, "b")),
    ((4, 5, 6), MESH22, P("a", "b")),
]


@pytest.mark.parametrize("op", ["tril", "triu"])
@pytest.mark.parametrize(("shape", "mesh", "spec"), TRIANGLE_LAYOUTS, ids=str)
def test_tril_triu_keep_rows_and_columns_sharded(op, shape, mesh, spec):
    # Each device masks its piece with the diagonal shifted by the piece's row and column offsets.
    fn, ref = getattr(nb, op), getattr(np, op)
    value, weight = arr(*shape), arr(*shape)
    x = nb.shard(nb.tensor(value), mesh, spec)
    for k in (-7, -2, -1, 0, 1, 3, 8):
        y = fn(x, k)
        assert y.sharding == x.sharding and comm_ops(y) == []
        np.testing.assert_array_equal(y.numpy(), ref(value, k))

        def loss(v, k=k):
            return (fn(v, k) * nb.tensor(weight)).square().sum()

        g = nb.grad(loss)(x)
        assert g.sharding.dim_axes == x.sharding.dim_axes
        unsharded = nb.grad(loss)(nb.tensor(value))
        np.testing.assert_allclose(g.numpy(), unsharded.numpy(), rtol=1e-6)
        np.testing.assert_allclose(g.numpy(), ref(2 * value * weight**2, k), rtol=1e-5, atol=1e-6)


# -- resharding ----------------------------------------------------------------------------------
RESHARDS = [
    (P("a", None), P(None, "a"), ["all_to_all"]),
    (P("a", "b"), P(), ["all_gather", "all_gather"]),
    (P(), P("a", "b"), []),
    (P(("a", "b")), P("a"), ["all_gather"]),
    (P("a"), P(("a", "b")), []),
    # axes of equal size trade places: every piece moves whole to one device (or stays), one ppermute
    (P("b", "a"), P("a", "b"), ["ppermute"]),
    (P("a"), P("b"), ["ppermute"]),
    (P(("a", "b")), P(("b", "a")), ["ppermute"]),
    (P(None, "b"), P("a", None), ["all_gather"]),  # pieces of other shapes: gather, then slice locally
]


@pytest.mark.parametrize(("src", "dst", "collectives"), RESHARDS, ids=str)
def test_reshard_moves_data_with_the_cheapest_collectives(src, dst, collectives):
    value = arr(6, 5)
    x = nb.shard(nb.tensor(value), MESH22, src)
    y = nb.reshard(x, dst)
    assert comm_ops(y) == collectives
    assert y.sharding.dim_axes == nb.shard(nb.tensor(value), MESH22, dst).sharding.dim_axes
    np.testing.assert_array_equal(y.numpy(), value)
    for pos, s in enumerate(y.shards()):
        np.testing.assert_array_equal(s, value[y.sharding.local_slices(value.shape, pos)])


MESH24 = DeviceMesh("m24", (2, 4), ("a", "b"))
MESH222 = DeviceMesh("m222", (2, 2, 2), ("a", "b", "c"))


@pytest.mark.parametrize(
    ("mesh", "src", "dst", "collectives"),
    [
        (MESH222, P("a", "c"), P("c", "b"), ["ppermute"]),  # a 3-cycle of axis names
        (MESH222, P("a", None), P(None, "a"), ["all_to_all"]),
        # axes of different sizes cannot trade places: the pieces differ in shape
        (MESH24, P("b", "a"), P("a", "b"), ["all_gather", "all_to_all"]),
    ],
    ids=str,
)
def test_axis_swaps_are_one_ppermute_and_gradients_move_back(mesh, src, dst, collectives):
    value = arr(6, 5)
    x = nb.shard(nb.tensor(value), mesh, src).requires_grad_(True)
    y = nb.reshard(x, dst)
    assert comm_ops(y) == collectives
    for pos, s in enumerate(y.shards()):
        np.testing.assert_array_equal(s, value[y.sharding.local_slices(value.shape, pos)])
    (y * y).sum().backward()
    assert x.grad.sharding.dim_axes == x.sharding.dim_axes
    np.testing.assert_allclose(x.grad.numpy(), 2 * value, rtol=1e-6)


def test_axis_swap_plan_keeps_pieces_in_place_where_it_can():
    src = ShardingSpec(MESH22, [("b",), ("a",)])
    dst = ShardingSpec(MESH22, [("a",), ("b",)])
    (step,) = plan_reshard(src, dst)
    # devices (0, 0) and (1, 1) hold their piece already; (0, 1) and (1, 0) exchange theirs
    assert (step.kind, step.axes, step.perm) == ("ppermute", ("a", "b"), ((0, 0), (1, 2), (2, 1), (3, 3)))
    partial = ShardingSpec(MESH22, [("b",), ()], partial=["a"])
    assert [s.kind for s in plan_reshard(partial, ShardingSpec(MESH22, [(), ("b",)], partial=["a"]))] == ["all_to_all"]


def test_axis_swap_keeps_partial_sums():
    xa, wa = arr(6, 4), arr(4, 5)
    x = nb.shard(nb.tensor(xa), MESH222, P("b", "c"))
    w = nb.shard(nb.tensor(wa), MESH222, P("c", "a"))
    y = x @ w  # partial over "c"
    assert y.sharding.dim_axes == (("b",), ("a",)) and y.sharding.partial == {"c"}
    z = nb.reshard(y, ShardingSpec(MESH222, [("a",), ("b",)], partial=["c"]))
    assert z.sharding.partial == {"c"} and comm_ops(z) == ["ppermute"]
    np.testing.assert_allclose(z.numpy(), xa @ wa, rtol=1e-5, atol=1e-6)


def test_partial_to_sharded_is_a_reduce_scatter():
    xa, wa = arr(6, 4), arr(4, 5)
    y = nb.shard(nb.tensor(xa), MESH1, P(None, "x")) @ nb.shard(nb.tensor(wa), MESH1, P("x", None))
    z = nb.reshard(y, P("x", None))
    assert comm_ops(z) == ["reduce_scatter"]
    np.testing.assert_allclose(z.numpy(), xa @ wa, rtol=1e-5, atol=1e-5)
    steps = plan_reshard(y.sharding, z.sharding)
    assert [s.kind for s in steps] == ["reduce_scatter"]


def test_reshard_gradients_flow_back_to_the_source_layout():
    value = arr(6, 4)
    x = nb.shard(nb.tensor(value), MESH22, P("a", "b")).requires_grad_(True)
    y = nb.reshard(x, P(None, "a"))
    (y * y).sum().backward()
    assert x.grad.sharding.dim_axes == (("a",), ("b",))
    np.testing.assert_allclose(x.grad.numpy(), 2 * value, rtol=1e-6)


def test_unshard_and_shard_are_differentiable():
    value = arr(5, 3)
    x = nb.tensor(value, requires_grad=True)
    s = nb.shard(x, MESH4, P("x"))
    assert s._impl.output_refs is not None  # recorded: x needs a gradient
    u = nb.unshard(nb.sin(s))
    assert u.sharding is None
    u.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(value), rtol=1e-6)


# -- autodiff through propagated ops -------------------------------------------------------------
@pytest.mark.parametrize("mesh,xspec,wspec", [(MESH1, P("x"), P()), (MESH22, P("a"), P(None, "b")),
                                               (MESH4, P(None, "x"), P("x")), (MESH22, P("b", "a"), P("a", "b"))])  # fmt: skip
def test_mlp_gradients_match_unsharded(mesh, xspec, wspec):
    xa, w1, w2 = arr(6, 5), arr(5, 7), arr(7, 3)

    def loss(x, a, b):
        return (nb.tanh(x @ a) @ b).square().mean()

    want = nb.grad(loss, argnums=(1, 2))(nb.tensor(xa), nb.tensor(w1), nb.tensor(w2))
    got = nb.grad(loss, argnums=(1, 2))(
        nb.shard(nb.tensor(xa), mesh, xspec), nb.shard(nb.tensor(w1), mesh, wspec), nb.tensor(w2)
    )
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)


# (mesh, index spec, weight spec, expected gradient dim axes, expected partial axes)
TAKE_GRADIENT_CASES = [
    (MESH1, P("x"), P(), ((), ()), ("x",)),  # data parallel
    (MESH4, P("x"), P(), ((), ()), ("x",)),  # 6 indices on 4 devices: uneven shards
    (MESH22, P(("a", "b")), P(), ((), ()), ("a", "b")),  # the batch over both axes
    (MESH22, P("a"), P(None, "b"), ((), ("b",)), ("a",)),  # data x tensor parallel (columns)
]


@pytest.mark.parametrize(("mesh", "ispec", "wspec", "dims", "partial"), TAKE_GRADIENT_CASES)
def test_take_gradient_of_sharded_indices_is_a_local_scatter_left_partial(mesh, ispec, wspec, dims, partial):
    # An embedding lookup's weight gradient: each device scatter-adds its own rows, no gather.
    wa, idx, ca = arr(5, 4), np.array([0, 2, 2, 4, 0, 1]), arr(6, 4)

    def loss(w, i, c):
        return (nb.index_select(w, 0, i) ** 2 * c).sum()

    g = nb.grad(loss)(
        nb.shard(nb.tensor(wa), mesh, wspec),
        nb.shard(nb.tensor(idx), mesh, ispec),
        nb.shard(nb.tensor(ca), mesh, ispec),
    )
    assert g.sharding.dim_axes == dims and tuple(sorted(g.sharding.partial)) == partial
    assert comm_ops(g) == []
    assert comm_ops(nb.reshard(g, P(*[a or None for a in dims]))) == ["all_reduce"]  # one, over every axis
    want = nb.grad(loss)(nb.tensor(wa), nb.tensor(idx), nb.tensor(ca)).numpy()
    expected = np.zeros_like(wa)
    np.add.at(expected, idx, 2 * wa[idx] * ca)
    np.testing.assert_allclose(want, expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-6, atol=1e-6)


def test_jvp_through_sharded_ops():
    xa, ta = arr(4, 6), arr(4, 6)
    x = nb.shard(nb.tensor(xa), MESH22, P("a", "b"))
    t = nb.shard(nb.tensor(ta), MESH22, P("b", None))
    out, tangent = nb.jvp(lambda v: nb.sin(v).sum(axis=1), (x,), (t,))
    np.testing.assert_allclose(out.numpy(), np.sin(xa).sum(1), rtol=1e-5)
    np.testing.assert_allclose(tangent.numpy(), (np.cos(xa) * ta).sum(1), rtol=1e-5, atol=1e-6)


# -- shard_map and the collectives ---------------------------------------------------------------
def test_shard_map_dot_product_and_its_gradient():
    f = nb.shard_map(lambda a, b: nb.all_reduce((a * b).sum(), "x"), MESH4, (P("x"), P("x")), P())
    a, b = nb.arange(8.0), nb.ones(8)
    assert f(a, b).item() == 28.0
    ga, gb = nb.grad(f, argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(ga.numpy(), np.ones(8))
    np.testing.assert_array_equal(gb.numpy(), np.arange(8.0))


COLLECTIVE_CASES = {
    "all_reduce_sum": (lambda x: nb.all_reduce(x, "x"), P("x"), P(), lambda v: v.reshape(4, 2).sum(0)),
    "all_reduce_mean": (lambda x: nb.all_reduce(x, "x", "mean"), P("x"), P(), lambda v: v.reshape(4, 2).mean(0)),
    "all_reduce_max": (lambda x: nb.all_reduce(x, "x", "max"), P("x"), P(), lambda v: v.reshape(4, 2).max(0)),
    "all_reduce_min": (lambda x: nb.all_reduce(x, "x", "min"), P("x"), P(), lambda v: v.reshape(4, 2).min(0)),
    "all_gather": (lambda x: nb.all_gather(x, "x"), P("x"), P(), lambda v: v),
    "reduce_scatter": (lambda x: nb.reduce_scatter(x, "x"), P(), P("x"), lambda v: 4 * v),
    "ppermute": (
        lambda x: nb.ppermute(x, "x", [(i, (i + 1) % 4) for i in range(4)]),
        P("x"),
        P("x"),
        lambda v: np.roll(v, 2),
    ),
    "broadcast": (lambda x: nb.broadcast(x, "x", root=2), P("x"), P("x"), lambda v: np.tile(v[4:6], 4)),
    "axis_index": (
        lambda x: x * nb.axis_index("x").astype(nb.float32),
        P("x"),
        P("x"),
        lambda v: v * np.repeat(np.arange(4.0), 2),
    ),  # fmt: skip
}


@pytest.mark.parametrize("name", sorted(COLLECTIVE_CASES))
def test_collectives_values_and_gradients(name):
    body, ispec, ospec, ref = COLLECTIVE_CASES[name]
    value = RNG.permutation(8).astype(np.float32)
    f = nb.shard_map(body, MESH4, ispec, ospec)
    np.testing.assert_allclose(f(nb.tensor(value)).numpy(), ref(value), rtol=1e-6)
    cot = arr(*ref(value).shape).astype(np.float64)

    def loss(v):
        return (f(v) * nb.tensor(cot.astype(np.float32))).sum()

    grad = nb.grad(loss)(nb.tensor(value)).numpy()
    eps, numeric = 1e-2, np.zeros(8)
    for i in range(8):
        d = np.zeros(8, np.float32)
        d[i] = eps
        numeric[i] = ((ref(value + d) * cot).sum() - (ref(value - d) * cot).sum()) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-3, atol=1e-3)


def test_all_to_all_moves_a_sharded_dimension():
    value = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    f = nb.shard_map(lambda x: nb.all_to_all(x, "x", split_dim=1, concat_dim=0), MESH4, P("x"), P(None, "x"))
    out = f(nb.tensor(value))
    # device d sends column block j of its rows to device j: device j ends with column j, all rows
    np.testing.assert_array_equal(out.numpy(), value)
    np.testing.assert_array_equal(out.shards()[2], value[:, 2:3])
    g = nb.grad(lambda v: (f(v) ** 2).sum())(nb.tensor(value))
    np.testing.assert_allclose(g.numpy(), 2 * value)


def test_shard_map_on_2d_mesh_with_replicated_axis():
    xa, wa = arr(4, 3), arr(3, 2)
    h = nb.shard_map(lambda x, w: nb.all_gather(x @ w, "a", dim=0), MESH22, (P("a", None), P()), P())
    y = xa @ wa
    np.testing.assert_allclose(h(nb.tensor(xa), nb.tensor(wa)).numpy(), y, rtol=1e-5)
    gx, gw = nb.grad(lambda x, w: (h(x, w) ** 2).sum(), argnums=(0, 1))(nb.tensor(xa), nb.tensor(wa))
    np.testing.assert_allclose(gx.numpy(), 2 * y @ wa.T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gw.numpy(), xa.T @ (2 * y), rtol=1e-5, atol=1e-6)


def test_shard_map_errors():
    with pytest.raises(RuntimeError, match="run inside shard_map"):
        nb.all_reduce(nb.ones(4), "x")
    with pytest.raises(ValueError, match="does not split evenly"):
        nb.shard_map(lambda x: x, MESH4, P("x"), P("x"))(nb.ones(6))
    with pytest.raises(ValueError, match="axis_name 'y' is not an axis of mesh 'm4'"):
        nb.shard_map(lambda x: nb.all_reduce(x, "y"), MESH4, P("x"), P("x"))(nb.ones(8))
    with pytest.raises(ValueError, match="1 specs for 2 values"):
        nb.shard_map(lambda a, b: a, MESH4, (P("x"),), P())(nb.ones(8), nb.ones(8))
    with pytest.raises(ValueError, match=r"pair \(0, 4\) is out of range for 4 devices"):
        nb.shard_map(lambda x: nb.ppermute(x, "x", [(0, 4)]), MESH4, P("x"), P("x"))(nb.ones(8))


def test_sharded_program_is_cached_by_structure():
    def step(v):
        x = nb.shard(nb.tensor(v), MESH22, P("a", "b"))
        return (nb.relu(x) @ nb.shard(nb.tensor(np.ones((4, 3), np.float32)), MESH22, P("b"))).numpy()

    step(arr(6, 4))
    nb.reset_cache_info()
    for _ in range(3):
        out = step(arr(6, 4))
    info = nb.cache_info()
    assert (info.misses, info.hits) == (0, 3)
    assert out.shape == (6, 3)


# -- nabla.compile ----------------------------------------------------------------------------
def test_compile_keeps_layouts_and_keys_on_them():
    f = nb.compile(lambda x, w: nb.relu(x @ w))
    xa, wa = arr(6, 4), arr(4, 5)
    x = nb.shard(nb.tensor(xa), MESH22, P("a"))
    w = nb.shard(nb.tensor(wa), MESH22, P(None, "b"))
    y = f(x, w)
    assert y.sharding.dim_axes == (("a",), ("b",))
    np.testing.assert_allclose(y.numpy(), np.maximum(xa @ wa, 0), rtol=1e-5)
    f(x, w)
    assert (f.stats.misses, f.stats.hits) == (1, 1)
    f(nb.tensor(xa), nb.tensor(wa))  # the same shapes unsharded: a different program
    assert f.stats.misses == 2
    assert f.stats.recompile_reasons == ["x sharding changed"]


def test_compiled_function_under_grad_runs_as_one_sharded_call():
    f = nb.compile(lambda x, w: nb.relu(x @ w).sum())
    xa, wa = arr(6, 4), arr(4, 5)
    x = nb.shard(nb.tensor(xa), MESH22, P("a"))
    w = nb.shard(nb.tensor(wa), MESH22, P(None, "b"))
    g = nb.grad(f, argnums=1)(x, w)
    want = nb.grad(lambda x, w: nb.relu(x @ w).sum(), argnums=1)(nb.tensor(xa), nb.tensor(wa))
    np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert g.sharding.dim_axes == ((), ("b",))


def test_shard_moves_a_tensor_to_another_mesh_through_its_full_value():
    value = arr(6, 4)
    x = nb.shard(nb.tensor(value), MESH22, P("a", "b"))
    y = nb.shard(x, MESH4, P(None, "x"))  # realized: assembled and split on the host, no op
    assert y._impl.is_realized and y.sharding.mesh == MESH4
    np.testing.assert_array_equal(y.numpy(), value)
    w = nb.shard(nb.tensor(value), MESH22, P("a")).requires_grad_(True)
    z = nb.shard(w * 2.0, MESH4, P("x"))  # a promise: unshard, then distribute (differentiable)
    z.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full((6, 4), 2.0, np.float32))


# -- vmap over sharded tensors --------------------------------------------------------------------
def test_vmap_over_a_batch_sharded_input_keeps_the_batch_split_without_collectives():
    xa, wa = arr(4, 3), arr(3, 5)
    xs = nb.shard(nb.tensor(xa), MESH1, P("x", None))
    w = nb.shard(nb.tensor(wa), MESH1, P())
    out = nb.vmap(lambda v: nb.tanh(v @ w).sum())(xs)
    assert out.sharding.dim_axes == (("x",),) and comm_ops(out) == []
    np.testing.assert_allclose(out.numpy(), np.tanh(xa @ wa).sum(1), rtol=1e-5, atol=1e-6)
    # the gradient through the vmapped loss is a partial sum over the batch axis: one all_reduce, later
    g = nb.grad(lambda w: nb.vmap(lambda v: nb.tanh(v @ w).sum())(xs).sum())(w)
    assert g.sharding.partial == {"x"} and comm_ops(g) == []
    np.testing.assert_allclose(g.numpy(), xa.T @ (1 - np.tanh(xa @ wa) ** 2), rtol=1e-5, atol=1e-5)
    # per-example gradients stay split along the batch
    pe = nb.vmap(nb.grad(lambda w, v: nb.tanh(v @ w).sum()), in_axes=(None, 0))(w, xs)
    assert pe.sharding.dim_axes == (("x",), (), ()) and comm_ops(pe) == []
    want = np.stack([np.outer(r, 1 - np.tanh(r @ wa) ** 2) for r in xa])
    np.testing.assert_allclose(pe.numpy(), want, rtol=1e-5, atol=1e-5)


def test_vmap_spmd_axis_name_splits_the_mapped_axis_over_mesh_axes():
    xa, wa = arr(6, 4), arr(4, 3)
    xr = nb.shard(nb.tensor(xa), MESH22, P())  # replicated on the mesh
    out = nb.vmap(lambda v: nb.relu(v) * 3.0, spmd_axis_name="a")(xr)
    assert out.sharding.dim_axes == (("a",), ()) and comm_ops(out) == []
    np.testing.assert_allclose(out.numpy(), np.maximum(xa, 0) * 3.0)
    both = nb.vmap(lambda v, u: (v * u).sum(), spmd_axis_name=("a", "b"))(xr, nb.tensor(xa))  # u joins the mesh
    assert both.sharding.dim_axes == (("a", "b"),)
    np.testing.assert_allclose(both.numpy(), (xa * xa).sum(1), rtol=1e-5)
    w = nb.shard(nb.tensor(wa), MESH22, P(None, "b"))  # column-parallel weight, batch over "a"
    g = nb.grad(lambda w: nb.vmap(lambda v: nb.tanh(v @ w).sum(), spmd_axis_name="a")(xr).sum())(w)
    assert g.sharding.dim_axes == ((), ("b",)) and g.sharding.partial == {"a"} and comm_ops(g) == []
    np.testing.assert_allclose(g.numpy(), xa.T @ (1 - np.tanh(xa @ wa) ** 2), rtol=1e-5, atol=1e-5)


def test_vmap_spmd_axis_name_errors_name_the_problem():
    x = nb.tensor(arr(4, 2))
    with pytest.raises(ValueError, match="no mapped input is on a DeviceMesh"):
        nb.vmap(lambda v: v, spmd_axis_name="a")(x)
    with pytest.raises(ValueError, match=r"names axes \['zz'\] that mesh 'm22' lacks; its axes are \['a', 'b'\]"):
        nb.vmap(lambda v: v, spmd_axis_name="zz")(nb.shard(x, MESH22, P()))
    with pytest.raises(TypeError, match="spmd_axis_name must be a mesh axis name or a tuple of them, got 3"):
        nb.vmap(lambda v: v, spmd_axis_name=3)

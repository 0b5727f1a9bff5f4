"""SPMD sharding core: meshes, specs, propagation, reshape, resharding, collectives, shard_map.

Also tril/triu on sharded tensors, autodiff through propagated ops, `nabla.compile` and vmap over
sharded tensors. Everything runs on the NumPy executor with simulated devices; results are compared
with the unsharded computation. `test_sharding_split_axis.py` covers ops along a split dimension
(windows, scans, topk), `test_sharding_attention.py` attention over a split sequence, and
`test_sharding_max.py` compiles the same programs on MAX. The meshes and helpers here are shared.
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


@pytest.mark.parametrize("op", ["max", "min"])
def test_all_reduce_extremum_gradient_is_shared_among_tied_devices(op):
    """Devices holding the same extremum share its cotangent, as amax's ties (it was given in
    full to each: a replicated input's gradient came out 4 times too large)."""
    same = nb.shard_map(lambda a: nb.all_reduce(a, "x", op), MESH4, in_specs=(P(),), out_specs=P())
    np.testing.assert_allclose(nb.grad(lambda t: same(t).sum())(nb.tensor([1.0, 2.0])).numpy(), [1.0, 1.0])
    split = nb.shard_map(lambda a: nb.all_reduce(a, "x", op), MESH4, in_specs=(P("x"),), out_specs=P())
    x = nb.tensor([5.0, 5.0, 1.0, 5.0] if op == "max" else [1.0, 5.0, 1.0, 1.0])
    want = nb.grad(lambda t: t.amax() if op == "max" else t.amin())(x).numpy()
    np.testing.assert_allclose(nb.grad(lambda t: split(t).sum())(x).numpy(), want, rtol=1e-6)
    assert abs(want.sum() - 1.0) < 1e-6


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


def test_jacobians_through_collectives_keep_the_batch_dims_replicated():
    """jacrev's cotangents and jacfwd's tangents carry a vmap batch dim in front of the
    primal's layout (the collectives' rules moved them to a layout of the primal's rank)."""
    mesh = DeviceMesh("m2", (2,), ("x",))
    w = nb.tensor(RNG.standard_normal((4, 2)).astype(np.float32))
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    for jac in (nb.jacrev, nb.jacfwd):
        sharded = jac(lambda t: (t @ w).sin())(nb.shard(nb.tensor(a), mesh, P(None, "x")))
        np.testing.assert_allclose(sharded.numpy(), jac(lambda t: (t @ w).sin())(nb.tensor(a)).numpy(), rtol=1e-5)
    b = nb.shard(nb.tensor(a[:, :2]), mesh, P("x"))
    np.testing.assert_allclose(
        nb.jacfwd(lambda t: t * t.sum(0))(b).numpy(), nb.jacfwd(lambda t: t * t.sum(0))(nb.tensor(a[:, :2])).numpy()
    )


def test_reshard_under_vmap_and_vmap_of_shard_map():
    mesh = DeviceMesh("m2", (2,), ("x",))
    value = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    y = nb.vmap(lambda r: nb.reshard(r, P("x", None)))(nb.shard(nb.tensor(value), mesh, P(None, None, "x")))
    assert y.sharding.dim_axes == ((), ("x",), ())
    np.testing.assert_array_equal(y.numpy(), value)
    f = nb.shard_map(lambda t: t * 2, MESH4, in_specs=(P("x"),), out_specs=P("x"))
    with pytest.raises(NotImplementedError, match="shard_map argument 0 is batched by vmap"):
        nb.vmap(f)(nb.ones((2, 8)))

"""Laziness and the graph engine (model cache, pending tensors, no_recompile) on the NumPy executor."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import nabla as nb

RNG = np.random.default_rng(7)


def _settle() -> None:
    """Compute whatever earlier tests left pending and zero the counters, so that the counts a
    test asserts are its own."""
    gc.collect()
    pending = nb.GRAPH.pending_impls()
    if pending:
        nb.GRAPH.evaluate(pending)
    nb.reset_cache_info()
    info = nb.cache_info()
    assert (info.compiles, info.hits, info.misses, info.graph_builds, info.executions) == (0, 0, 0, 0, 0)


def _counts() -> tuple[int, int, int, int, int]:
    i = nb.cache_info()
    return i.compiles, i.hits, i.misses, i.graph_builds, i.executions


NB_DTYPE = {np.dtype(np.float16): nb.float16, np.dtype(np.float32): nb.float32, np.dtype(np.float64): nb.float64}


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# (nabla step, NumPy step): 50 op calls mixing elementwise, matmul, reductions, shapes, casts
STEPS = [
    (lambda t: t * 0.5, lambda a: a * np.float32(0.5)),
    (lambda t: t + 1.0, lambda a: a + np.float32(1.0)),
    (nb.tanh, np.tanh),
    (lambda t: t.T, lambda a: a.T),  # (3, 4)
    (lambda t: t @ nb.ones(4, 5), lambda a: a @ np.ones((4, 5), np.float32)),  # (3, 5)
    (nb.sigmoid, lambda a: 1 / (1 + np.exp(-a))),
    (lambda t: t.reshape(5, 3), lambda a: a.reshape(5, 3)),
    (lambda t: t.sum(axis=1, keepdims=True), lambda a: a.sum(axis=1, keepdims=True)),  # (5, 1)
    (lambda t: t - nb.arange(3).astype(nb.float32), lambda a: a - np.arange(3, dtype=np.float32)),  # (5, 3)
    (nb.relu, lambda a: np.maximum(a, 0)),
    (lambda t: t.unsqueeze(0), lambda a: a[None]),  # (1, 5, 3)
    (lambda t: nb.broadcast_to(t, (2, 5, 3)), lambda a: np.broadcast_to(a, (2, 5, 3))),
    (lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),  # (3, 2, 5)
    (lambda t: t.mean(axis=(0, 2)), lambda a: a.mean(axis=(0, 2))),  # (2,)
    (lambda t: t.astype(nb.float64), lambda a: a.astype(np.float64)),
    (lambda t: t * t, lambda a: a * a),
    (nb.exp, np.exp),
    (lambda t: t.unsqueeze(-1) * nb.ones(1, 4, dtype=nb.float64), lambda a: a[:, None] * np.ones((1, 4))),  # (2, 4)
    (lambda t: t.max(axis=0), lambda a: a.max(axis=0)),  # (4,)
    (lambda t: nb.maximum(t, 1.5), lambda a: np.maximum(a, 1.5)),
    (nb.sqrt, np.sqrt),
    (nb.log, np.log),
    (lambda t: t / 3, lambda a: a / 3),
    (lambda t: 2.0**t, lambda a: 2.0**a),
    (lambda t: t.reshape(2, 2), lambda a: a.reshape(2, 2)),
    (lambda t: t @ t, lambda a: a @ a),
    (lambda t: nb.minimum(t, t.T), lambda a: np.minimum(a, a.T)),
    (lambda t: nb.where(t > 1.2, t, -t), lambda a: np.where(a > 1.2, a, -a)),
    (lambda t: t.flatten(), lambda a: a.reshape(-1)),  # (4,)
    (lambda t: t - t.mean(), lambda a: a - a.mean()),
    (lambda t: t.astype(nb.float32), lambda a: a.astype(np.float32)),
    (lambda t: t * nb.full((4,), 0.25), lambda a: a * np.float32(0.25)),
    (nb.neg, np.negative),
    (lambda t: t.reshape(4, 1) + t, lambda a: a.reshape(4, 1) + a),  # (4, 4)
    (lambda t: t.sum(axis=-1), lambda a: a.sum(axis=-1)),  # (4,)
    (nb.tanh, np.tanh),
    (lambda t: t.unsqueeze(1).squeeze(), lambda a: a),
    (lambda t: nb.matmul(t, nb.ones(4, 3)), lambda a: a @ np.ones((4, 3), np.float32)),  # (3,)
    (lambda t: t.min(axis=0, keepdims=True), lambda a: a.min(axis=0, keepdims=True)),  # (1,)
    (lambda t: t + nb.zeros(2, 1), lambda a: a + np.zeros((2, 1), np.float32)),  # (2, 1)
    (lambda t: nb.transpose(t), lambda a: a.T),  # (1, 2)
    (lambda t: t * 10.0, lambda a: a * np.float32(10.0)),
    (nb.sigmoid, lambda a: 1 / (1 + np.exp(-a))),
    (lambda t: t.astype(nb.float16), lambda a: a.astype(np.float16)),
    (lambda t: t.astype(nb.float32), lambda a: a.astype(np.float32)),
    (lambda t: t**2, lambda a: a**2),
    (lambda t: t.sum(), lambda a: a.sum()),  # ()
    (lambda t: t.reshape(1, 1), lambda a: a.reshape(1, 1)),
    (lambda t: nb.broadcast_to(t, (3, 2)), lambda a: np.broadcast_to(a, (3, 2))),
    (lambda t: t + 0.0, lambda a: a + np.float32(0.0)),
]


def test_fifty_op_expression_is_lazy_until_read():
    assert len(STEPS) == 50
    _settle()
    x_np = _f32(4, 3)
    t = nb.tensor(x_np)
    a = x_np
    intermediates = []
    for nb_step, np_step in STEPS:
        t = nb_step(t)
        a = np_step(a)
        intermediates.append(t)
        # shape and dtype are known at once, without computing anything
        assert t.shape == a.shape, (t.shape, a.shape)
        assert t.dtype == NB_DTYPE[a.dtype], (t.dtype, a.dtype)
        assert not t.is_realized
    assert t.shape == (3, 2)
    assert t.dtype == nb.float32
    assert t.ndim == 2 and len(t) == 3 and str(t.device) == "cpu:0"
    assert _counts() == (0, 0, 0, 0, 0)
    del intermediates
    np.testing.assert_allclose(t.numpy(), a, rtol=2e-3)
    compiles, hits, misses, builds, executions = _counts()
    assert compiles == 0
    assert executions == 1
    assert misses + hits == 1


def test_loop_with_fresh_data_builds_once_then_hits():
    _settle()
    w_np = _f32(11, 5)
    w = nb.tensor(w_np)
    for i in range(20):
        x_np = _f32(17, 11)
        out = ((nb.tensor(x_np) @ w).relu() * 2.0 + 1.0).sum(axis=0)
        assert out.shape == (5,)
        expected = (np.maximum(x_np @ w_np, 0) * 2.0 + 1.0).sum(axis=0)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
        assert out.is_realized
        compiles, hits, misses, builds, executions = _counts()
        assert (misses, hits, executions) == (1, i, i + 1)
    info = nb.cache_info()
    assert info.misses == 1
    assert info.hits == 19
    assert info.graph_builds == 1
    assert info.compiles == 0
    assert info.executions == 20
    assert info.per_executor["numpy"].hits == 19
    assert "max" not in info.per_executor or info.per_executor["max"].executions == 0


def test_training_loop_forward_backward_update_hits_cache():
    _settle()
    x_np = _f32(6, 3).astype(np.float64)
    y_np = _f32(6, 2).astype(np.float64)
    w_np = _f32(3, 2).astype(np.float64)
    x, y = nb.tensor(x_np), nb.tensor(y_np)
    w = nb.tensor(w_np, requires_grad=True)
    lr = 0.1
    losses = []
    for _ in range(10):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with nb.no_grad():
            w = (w - lr * w.grad).detach().requires_grad_()
        losses.append(loss.item())
        # reference step in NumPy
        r = x_np @ w_np - y_np
        assert losses[-1] == pytest.approx((r**2).mean(), rel=1e-10)
        w_np = w_np - lr * (2 * x_np.T @ r / r.size)
    assert w.is_realized  # the live update was computed with the loss
    np.testing.assert_allclose(w.numpy(), w_np, rtol=1e-10)
    assert losses[-1] < losses[0]
    info = nb.cache_info()
    assert info.executions == 10
    assert info.graph_builds == info.misses
    assert (info.misses, info.hits) == (1, 9)


def test_python_scalars_are_constants_tensors_are_inputs():
    _settle()
    x = nb.tensor(_f32(9, 2))
    (x * 0.1).numpy()
    (x * 0.2).numpy()
    assert nb.cache_info().misses == 2  # a new constant is a new structure
    _settle()
    a = (x * nb.tensor(np.float32(0.1))).numpy()
    b = (x * nb.tensor(np.float32(0.2))).numpy()
    info = nb.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    np.testing.assert_allclose(b, 2 * a, rtol=1e-6)


def test_metadata_never_evaluates():
    _settle()
    x = nb.tensor(_f32(3, 4), requires_grad=True)
    y = (x @ x.T).tanh().sum(axis=0)
    assert y.shape == (3,)
    assert y.dtype == nb.float32
    assert y.ndim == 1
    assert y.numel() == 3
    assert y.requires_grad
    assert not y.is_leaf
    assert str(y.device) == "cpu:0"
    assert not y.is_realized
    assert nb.cache_info().executions == 0


def test_no_recompile_hit_passes_and_shape_change_raises():
    _settle()
    x = nb.tensor(np.ones((4, 3), np.float32))

    def step(t):
        return nb.sigmoid(nb.tanh(t)).exp().sum(axis=1).numpy()

    step(x)
    with nb.no_recompile():
        step(nb.tensor(_f32(4, 3)))  # same structure, new data: fine
        with pytest.raises(nb.RecompileError) as info:
            step(nb.tensor(np.ones((5, 3), np.float32)))
    assert isinstance(info.value, RuntimeError)
    assert "(4, 3) -> (5, 3)" in str(info.value)
    # outside the context a new structure is fine again
    assert step(nb.tensor(np.ones((5, 3), np.float32))).shape == (5,)


def test_no_recompile_names_the_matching_model_when_constants_are_broadcast():
    _settle()
    # An unrelated cached model with the same number of ops, cached first ...
    (nb.tensor(np.ones((7, 7), np.float32)).exp() + 3.0).sum().numpy()
    # ... and the model the next evaluation differs from only by its input shape.
    (nb.tensor(np.ones((4, 3), np.float32)).tanh() * 2.0).sum().numpy()
    with nb.no_recompile(), pytest.raises(nb.RecompileError) as info:
        (nb.tensor(np.ones((5, 3), np.float32)).tanh() * 2.0).sum().numpy()
    assert "(4, 3) -> (5, 3)" in str(info.value)


def test_no_recompile_dtype_change_raises():
    _settle()
    x = nb.tensor(np.ones((2, 6), np.float32))
    nb.exp(nb.sigmoid(x)).numpy()
    with nb.no_recompile(), pytest.raises(nb.RecompileError, match="float32 -> float64"):
        nb.exp(nb.sigmoid(nb.tensor(np.ones((2, 6), np.float64)))).numpy()


def test_dropped_promise_is_not_computed():
    _settle()
    base = nb.tensor(_f32(3, 5))
    d = base.exp() * 7.0
    ref = weakref.ref(d._impl)
    del d
    c = base * 2.0
    np.testing.assert_allclose(c.numpy(), base.numpy() * 2.0)
    assert ref() is None or not ref().is_realized
    assert nb.cache_info().executions == 1


def test_dropped_promise_kept_alive_internally_is_not_computed():
    _settle()
    base = nb.tensor(_f32(3, 5))
    d = nb.tanh(base) - 1.0
    impl = d._impl  # keep the state alive, drop the user-visible tensor
    del d
    gc.collect()
    (base + 1.0).numpy()
    assert not impl.is_realized
    assert nb.cache_info().executions == 1


def test_dropped_promise_does_not_change_the_cache_key():
    _settle()
    (nb.tensor(_f32(8, 3)) * 3.0).sum().numpy()
    base = nb.tensor(_f32(8, 3))
    dropped = nb.exp(base).mean()
    del dropped
    (base * 3.0).sum().numpy()
    info = nb.cache_info()
    assert (info.misses, info.hits) == (1, 1)


def test_intermediate_of_live_tensor_is_not_stored():
    _settle()
    a = nb.tensor(_f32(4))
    t = a.exp()
    u = t + 1.0
    impl = t._impl
    del t
    np.testing.assert_allclose(u.numpy(), np.exp(a.numpy()) + 1.0, rtol=1e-6)
    assert u.is_realized
    assert not impl.is_realized


def test_pending_live_tensors_are_computed_in_the_same_evaluation():
    _settle()
    x = nb.tensor(_f32(2, 3))
    a = x * 3.0
    b = nb.exp(x).sum(axis=0)
    c = (x @ x.T).relu()
    assert not (a.is_realized or b.is_realized or c.is_realized)
    before = nb.cache_info().executions
    a.numpy()
    assert nb.cache_info().executions == before + 1
    assert b.is_realized and c.is_realized
    # reading them later runs nothing
    np.testing.assert_allclose(b.numpy(), np.exp(x.numpy()).sum(axis=0), rtol=1e-6)
    np.testing.assert_allclose(c.numpy(), np.maximum(x.numpy() @ x.numpy().T, 0), rtol=1e-5, atol=1e-6)
    assert nb.cache_info().executions == before + 1


def test_backward_and_forward_evaluate_as_one_graph():
    _settle()
    x = nb.tensor(_f32(3, 3), requires_grad=True)
    loss = (x @ x).relu().sum()
    loss.backward()
    assert not x.grad.is_realized
    loss.item()
    assert x.grad.is_realized
    assert nb.cache_info().executions == 1


def test_evaluate_several_tensors_at_once():
    _settle()
    x = nb.tensor(_f32(5))
    p, q = x + 1.0, x * 2.0
    nb.evaluate(p, q)
    assert p.is_realized and q.is_realized
    assert nb.cache_info().executions == 1
    nb.evaluate(p, q)  # nothing left to do
    assert nb.cache_info().executions == 1


def test_random_ops_in_a_cached_program_draw_fresh_numbers():
    _settle()
    x = nb.tensor(np.zeros((3, 4), np.float32))

    def draw():
        return (x + nb.randn(3, 4)).numpy()

    first = draw()
    second = draw()
    info = nb.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    assert not np.array_equal(first, second)
    # and a seed reproduces the numbers, cache hit or not
    nb.manual_seed(11)
    r1 = draw()
    nb.manual_seed(11)
    r2 = draw()
    np.testing.assert_array_equal(r1, r2)
    assert nb.cache_info().misses == 1


def test_data_tensors_are_realized_and_promises_become_realized():
    t = nb.tensor([1.0, 2.0])
    assert t.is_realized
    p = t * 2.0
    assert not p.is_realized
    assert p.realize() is p
    assert p.is_realized


class TestInPlaceUpdates:
    """In-place methods are functional updates that rebind the facade (PyTorch names)."""

    def test_repeated_in_place_updates_on_one_tensor(self):
        x = nb.zeros(3)
        x.add_(1.0)
        x.add_(1.0)
        x[0] = 5.0
        x[1] = 7.0
        x.mul_(2.0).sub_(1.0)
        np.testing.assert_array_equal(x.numpy(), [9.0, 13.0, 3.0])

    def test_in_place_on_leaf_requiring_grad_raises(self):
        w = nb.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
            w.add_(1.0)
        with nb.no_grad():
            w.add_(1.0)  # allowed, as in torch (optimizer updates)
        np.testing.assert_array_equal(w.numpy(), [2.0, 2.0])

    def test_in_place_keeps_dtype_and_checks_shape(self):
        x = nb.zeros(2, 2, dtype=nb.int32)
        x.fill_(3)
        assert x.dtype == nb.int32
        with pytest.raises(ValueError, match=r"shapes \(3, 3\), \(2, 2\) cannot be broadcast"):
            x.copy_(nb.ones(3, 3))
        x.zero_()
        np.testing.assert_array_equal(x.numpy(), np.zeros((2, 2), np.int32))

    def test_add_with_alpha_and_a_number(self):  # torch: x + alpha * other
        x = nb.zeros(2)
        x.add_(1, alpha=2).sub_(0.5, alpha=4)
        np.testing.assert_array_equal(x.numpy(), [0.0, 0.0])
        x.add_(nb.ones(2), alpha=3)
        np.testing.assert_array_equal(x.numpy(), [3.0, 3.0])

    @pytest.mark.parametrize(
        "update",
        [lambda x: x.div_(2), lambda x: x.mul_(1.5), lambda x: x.__iadd__(1.5), lambda x: x.clamp_(0.5, 1.5)],
    )
    def test_in_place_refuses_a_higher_category_result(self, update):  # torch: can't be cast to Long
        x = nb.tensor([1, 2])
        with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
            update(x)
        with pytest.raises(RuntimeError, match="result type int64 can't be cast to the desired output type bool"):
            nb.tensor([True, False]).add_(1)
        y = nb.tensor([1, 2], dtype=nb.int32)
        y += nb.tensor([1, 2])  # same category: cast back, as torch
        assert y.dtype == nb.int32 and y.tolist() == [2, 4]

    def test_expand_refuses_minus_one_for_a_new_leading_dim(self):  # as torch
        for x, shape in [(nb.tensor([0.0, 1.0, 2.0]), (-1, 3)), (nb.ones((2, 3)), (-1, 2, 3))]:
            with pytest.raises(RuntimeError, match=r"expanded size of the tensor \(-1\) isn't allowed"):
                x.expand(*shape)
        assert nb.ones(1, 3).expand(4, -1, -1).shape == (4, 1, 3)


class TestTensorMethodsReachOps:
    """Each PyTorch-style method calls the op with the right argument mapping."""

    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7.0 - 1.0

    def _t(self):
        return nb.tensor(self.x)

    @pytest.mark.parametrize(
        "method, expected",
        [
            (lambda t: t.var(1, correction=0), lambda x: x.var(1)),
            (lambda t: t.std(dim=2, keepdim=True), lambda x: x.std(2, ddof=1, keepdims=True)),
            (lambda t: t.var(unbiased=False), lambda x: x.var()),
            (lambda t: t.prod(0), lambda x: x.prod(0)),
            (lambda t: t.norm(2, dim=1), lambda x: np.linalg.norm(x, axis=1)),
            (lambda t: t.norm(), lambda x: np.sqrt((x * x).sum())),
            (lambda t: t.cumsum(2), lambda x: x.cumsum(2)),
            (lambda t: t.softmax(-1).sum(-1), lambda x: np.ones((2, 3))),
            (lambda t: t.flip(0, 2), lambda x: x[::-1, :, ::-1]),
            (lambda t: t.repeat(1, 2, 1), lambda x: np.tile(x, (1, 2, 1))),
            (lambda t: t.diagonal(0, 1, 2), lambda x: np.diagonal(x, 0, 1, 2)),
            (lambda t: t.flatten(1), lambda x: x.reshape(2, 12)),
            (lambda t: t.movedim(0, -1), lambda x: np.moveaxis(x, 0, -1)),
            (lambda t: t[:, 1:, ::-2], lambda x: x[:, 1:, ::-2]),
            (lambda t: t.clamp(min=-0.5), lambda x: np.maximum(x, -0.5)),
            (lambda t: abs(t), np.abs),
            (lambda t: t.index_select(2, nb.tensor([3, 0])), lambda x: x[:, :, [3, 0]]),
            (lambda t: t.sort(dim=1, descending=True).values, lambda x: -np.sort(-x, axis=1)),
            (lambda t: t.topk(2).indices, lambda x: np.argsort(-x, axis=-1)[..., :2]),
        ],
    )
    def test_method(self, method, expected):
        got = method(self._t())
        np.testing.assert_allclose(got.numpy(), expected(self.x), rtol=1e-5, atol=1e-6)

    def test_split_chunk_unbind_methods(self):
        t = self._t()
        assert [p.shape for p in t.split(3, dim=2)] == [(2, 3, 3), (2, 3, 1)]
        assert [p.shape for p in t.chunk(3, 1)] == [(2, 1, 4)] * 3
        assert len(t.unbind(0)) == 2

    def test_bool_operators(self):
        a, b = nb.tensor([True, False, True]), nb.tensor([True, True, False])
        np.testing.assert_array_equal((a & b).numpy(), [True, False, False])
        np.testing.assert_array_equal((a | b).numpy(), [True, True, True])
        np.testing.assert_array_equal((a ^ b).numpy(), [False, True, True])
        np.testing.assert_array_equal((~a).numpy(), [False, True, False])

    def test_floordiv_and_mod_follow_python_signs(self):
        a = nb.tensor([7, -7, 7, -7])
        b = nb.tensor([2, 2, -2, -2])
        np.testing.assert_array_equal((a // b).numpy(), [3, -4, -4, 3])
        np.testing.assert_array_equal((a % b).numpy(), [1, 1, -1, -1])

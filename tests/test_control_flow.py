"""Control flow beyond the registry: which branches run, derivatives through loops (and the
reverse-mode error of while_loop), carry validation messages, and the scan helpers."""

from __future__ import annotations

import numpy as np
import pytest

import nabla as nb
from nabla.ops import control_flow as cf


def _raise(*_):
    raise AssertionError("this branch must not run")


def _fd_jvp(f, x: np.ndarray, v: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    plus = f(nb.tensor(x + eps * v)).numpy()
    minus = f(nb.tensor(x - eps * v)).numpy()
    return (plus - minus) / (2 * eps)


# -- cond ---------------------------------------------------------------------------------------
class TestCond:
    def test_python_and_realized_predicates_run_one_branch(self):
        x = nb.tensor([1.0, 2.0])
        assert nb.cond(True, lambda v: v * 2, _raise, x).tolist() == [2.0, 4.0]
        assert nb.cond(0, _raise, lambda v: v * 3, x).tolist() == [3.0, 6.0]
        assert nb.cond(np.bool_(True), lambda v: v, _raise, x) is x
        realized = nb.tensor(False)
        assert nb.cond(realized, _raise, lambda v: v - 1, x).tolist() == [0.0, 1.0]
        assert nb.cond(nb.tensor([2.5]), lambda: 1.0, _raise) == 1.0  # one-element predicate, no operands

    def test_pending_predicate_runs_both_and_selects(self):
        calls = []

        def branch(tag, scale):
            def fn(v):
                calls.append(tag)
                return v * scale

            return fn

        x = nb.tensor([1.0, -3.0])
        out = nb.cond(x.sum() > 0, branch("t", 2.0), branch("f", -1.0), x)
        assert sorted(calls) == ["f", "t"]
        assert out.tolist() == [-1.0, 3.0]

    @pytest.mark.parametrize("sign, slope", [(1.0, 2.0), (-1.0, 5.0)])
    def test_gradient_reaches_only_the_taken_branch(self, sign, slope):
        def f(v):
            return nb.cond(v.sum() * sign > 0, lambda a: (a * 2.0).sum(), lambda a: (a * 5.0).sum(), v)

        g = nb.grad(f)(nb.tensor([1.0, 2.0]))
        assert g.tolist() == [slope, slope]

    def test_jvp_through_pending_cond(self):
        def f(v):
            return nb.cond(v.sum() > 0, lambda a: nb.tanh(a) * a, lambda a: a * a, v)

        x = np.array([0.3, 0.8, -0.2])
        v = np.array([1.0, -0.5, 2.0])
        _, t = nb.jvp(f, (nb.tensor(x),), (nb.tensor(v),))
        np.testing.assert_allclose(t.numpy(), _fd_jvp(f, x, v), rtol=1e-3)

    def test_pytree_outputs(self):
        x = nb.tensor([1.0, 2.0])
        out = nb.cond(x.sum() < 0, lambda v: {"a": v, "b": (v * 2, 1.0)}, lambda v: {"a": -v, "b": (v, 2.0)}, x)
        assert out["a"].tolist() == [-1.0, -2.0]
        assert out["b"][0].tolist() == [1.0, 2.0] and out["b"][1].item() == 2.0

    def test_branch_mismatch_errors_name_the_leaf(self):
        x = nb.tensor([1.0, 2.0])
        pred = x.sum() > 0
        with pytest.raises(
            TypeError, match=r"cond: true_fn and false_fn must return the same structure: .*\('\*', '\*'\)"
        ):
            nb.cond(pred, lambda v: (v, v), lambda v: v, x)
        with pytest.raises(
            TypeError,
            match=r"cond: true_fn and false_fn outputs differ at output\['b'\]: "
            r"true_fn gave shape \(2,\) float32, false_fn gave shape \(\) float32",
        ):
            nb.cond(pred, lambda v: {"a": v, "b": v}, lambda v: {"a": v, "b": v.sum()}, x)
        with pytest.raises(TypeError, match=r"outputs differ at output\[0\]: .* float32, false_fn gave .* int64"):
            nb.cond(pred, lambda v: (v,), lambda v: (nb.tensor([1, 2]),), x)

    def test_bad_predicates_and_branches(self):
        x = nb.tensor([1.0, 2.0])
        with pytest.raises(TypeError, match=r"cond: pred must be a scalar, got a tensor of shape \(2,\)"):
            nb.cond(x > 0, lambda v: v, lambda v: v, x)
        with pytest.raises(TypeError, match="cond: pred must be a bool or a scalar Tensor, got str"):
            nb.cond("yes", lambda v: v, lambda v: v, x)
        with pytest.raises(TypeError, match="cond: false_fn must be callable, got int"):
            nb.cond(True, lambda v: v, 3, x)


# -- while_loop ---------------------------------------------------------------------------------
class TestWhileLoop:
    def test_values_and_host_predicate(self):
        nb.reset_cache_info()
        i, acc = nb.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 2.0), (0, nb.tensor([1.0, 3.0])))
        # the predicate was read on the host before each of the 5 trips and after the last
        assert nb.cache_info().executions == 6
        assert i.is_realized and acc.is_realized  # computed along with the last predicate
        assert i.item() == 5 and i.dtype == nb.int64
        assert acc.tolist() == [32.0, 96.0]

    def test_zero_iterations_returns_init(self):
        x = nb.tensor([1.0])
        assert nb.while_loop(lambda v: False, _raise, x) is x

    def test_forward_mode_matches_finite_differences(self):
        def f(x):
            return nb.while_loop(lambda c: c[1] < 4, lambda c: (nb.tanh(c[0]) * 1.5 + c[0], c[1] + 1), (x, 0))[0]

        x = np.array([0.2, -0.4, 1.0])
        v = np.array([1.0, 2.0, -1.0])
        _, t = nb.jvp(f, (nb.tensor(x),), (nb.tensor(v),))
        np.testing.assert_allclose(t.numpy(), _fd_jvp(f, x, v), rtol=1e-3)

    def test_reverse_mode_raises_like_jax(self):
        def f(x):
            return nb.while_loop(lambda c: c.sum() < 10, lambda c: c * 2, x).sum()

        with pytest.raises(RuntimeError, match="while_loop: reverse-mode differentiation does not work"):
            nb.grad(f)(nb.tensor([1.0, 2.0]))

    def test_reverse_mode_raises_for_captured_weights(self):
        w = nb.tensor([1.5], requires_grad=True)
        out = nb.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * w, c[1] + 1), (nb.tensor([1.0]), 0))[0]
        with pytest.raises(RuntimeError, match="use fori_loop with Python int bounds or scan"):
            out.sum().backward()

    def test_without_grad_no_marker_op(self):
        out = nb.while_loop(lambda c: c < 3.0, lambda c: c + 1.0, nb.tensor(0.0))
        assert out.item() == 3.0 and out._impl.output_refs is None

    def test_carry_validation(self):
        x = nb.tensor([1.0, 2.0])
        with pytest.raises(
            TypeError,
            match=r"while_loop: body_fun changed carry\[1\] from shape \(2,\) float32 to shape \(\) float32",
        ):
            nb.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, c[1].sum()), (0, x))
        with pytest.raises(TypeError, match=r"changed carry\['x'\] from shape \(2,\) float32 to shape \(2,\) float64"):
            nb.while_loop(lambda c: True, lambda c: {"x": c["x"].astype(nb.float64)}, {"x": x})
        with pytest.raises(TypeError, match=r"while_loop: body_fun must return a carry with the same structure"):
            nb.while_loop(lambda c: True, lambda c: [c], x)
        with pytest.raises(
            TypeError, match=r"while_loop: cond_fun must return a scalar predicate, got a tensor of shape"
        ):
            nb.while_loop(lambda c: c > 0, lambda c: c, x)
        with pytest.raises(TypeError, match="while_loop: init_val\\[0\\] must be a Tensor or a number, got str"):
            nb.while_loop(lambda c: False, lambda c: c, ("a",))


# -- fori_loop ----------------------------------------------------------------------------------
class TestForiLoop:
    def test_index_is_a_python_int_and_loop_unrolls(self):
        seen = []

        def body(i, v):
            seen.append(type(i))
            return v * 2.0 + i

        out = nb.fori_loop(1, 4, body, nb.tensor(1.0))
        assert out.item() == ((1 * 2 + 1) * 2 + 2) * 2 + 3 and seen == [int, int, int]
        assert nb.fori_loop(3, 3, _raise, nb.tensor(5.0)).item() == 5.0

    def test_reverse_mode_through_unrolled_loop(self):
        def f(w):
            return nb.fori_loop(0, 3, lambda i, v: v * w, nb.ones(2)).sum()

        g = nb.grad(f)(nb.tensor([2.0, 3.0]))
        np.testing.assert_allclose(g.numpy(), [3 * 2.0**2, 3 * 3.0**2])

    def test_tensor_bounds_are_a_while_loop(self):
        out = nb.fori_loop(nb.tensor(1), nb.tensor(4), lambda i, v: v + i, nb.tensor(0))
        assert out.item() == 6
        out = nb.fori_loop(0, nb.tensor(3, dtype=nb.int32), lambda i, v: v + 1.0, nb.tensor(0.5))
        assert out.item() == 3.5

        def f(x):
            return nb.fori_loop(0, nb.tensor(2), lambda i, v: v * v, x).sum()

        with pytest.raises(RuntimeError, match="while_loop: reverse-mode differentiation does not work"):
            nb.grad(f)(nb.tensor([1.0]))

    def test_errors(self):
        with pytest.raises(TypeError, match="fori_loop: upper must be an int or a scalar integer Tensor, got 2.5"):
            nb.fori_loop(0, 2.5, lambda i, v: v, nb.tensor(0.0))
        with pytest.raises(TypeError, match=r"fori_loop: lower must be .*, got shape \(\) float32"):
            nb.fori_loop(nb.tensor(0.0), 2, lambda i, v: v, nb.tensor(0.0))
        with pytest.raises(
            TypeError, match=r"fori_loop: body_fun changed carry from shape \(\) float32 to shape \(1,\)"
        ):
            nb.fori_loop(0, 2, lambda i, v: nb.reshape(v, (1,)), nb.tensor(0.0))


# -- scan ---------------------------------------------------------------------------------------
class TestScan:
    def test_cumsum_and_reverse(self):
        xs = nb.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        total, ys = nb.scan(lambda c, x: (c + x, c + x), nb.zeros(2), xs)
        np.testing.assert_array_equal(ys.numpy(), np.cumsum(xs.numpy(), 0))
        np.testing.assert_array_equal(total.numpy(), [9.0, 12.0])
        total, ys = nb.scan(lambda c, x: (c + x, c), nb.zeros(2), xs, reverse=True)
        # reverse: step k sees xs[k] after the later slices; ys stays aligned with xs
        np.testing.assert_array_equal(ys.numpy(), [[8.0, 10.0], [5.0, 6.0], [0.0, 0.0]])

    def test_pytree_xs_and_ys_none(self):
        xs = {"a": nb.tensor([1.0, 2.0, 3.0]), "b": nb.tensor([[1], [2], [3]])}
        carry, ys = nb.scan(lambda c, x: (c + x["a"] * x["b"].astype(nb.float32).sum(), None), nb.tensor(0.0), xs)
        assert carry.item() == 14.0 and ys is None

    def test_length_without_xs(self):
        carry, ys = nb.scan(lambda c, x: (c * 2, (c, x is None)), nb.tensor(1), None, length=3)
        assert carry.item() == 8 and ys[0].tolist() == [1, 2, 4] and ys[1].tolist() == [True, True, True]

    def test_zero_length_scan(self):
        carry, ys = nb.scan(lambda c, x: (c + x.sum(), {"y": x * 2, "n": 1}), nb.tensor(1.0), nb.zeros(0, 3))
        assert carry.item() == 1.0
        assert ys["y"].shape == (0, 3) and ys["y"].dtype == nb.float32
        assert ys["n"].shape == (0,) and ys["n"].dtype == nb.int64

    def test_gradient_matches_finite_differences(self):
        def f(xs):
            carry, ys = nb.scan(lambda c, x: (nb.tanh(c * x + x), c * c), nb.tensor(np.array([0.5, -0.5])), xs)
            return (ys.sum(0) + carry).sum()

        x = np.random.default_rng(0).uniform(-1, 1, (4, 2))
        v = np.random.default_rng(1).normal(size=(4, 2))
        g = nb.grad(f)(nb.tensor(x)).numpy()
        fd = _fd_jvp(lambda t: f(t), x, v)
        np.testing.assert_allclose(np.sum(g * v), fd, rtol=1e-4)

    def test_errors(self):
        xs = nb.ones(3, 2)
        with pytest.raises(ValueError, match=r"scan: xs\[1\] has leading dimension 4, but xs\[0\] has 3"):
            nb.scan(lambda c, x: (c, None), 0.0, (xs, nb.ones(4)))
        with pytest.raises(ValueError, match=r"scan: xs has leading dimension 3, but length=5"):
            nb.scan(lambda c, x: (c, None), 0.0, xs, length=5)
        with pytest.raises(ValueError, match=r"scan: xs\['a'\] is 0-d; every leaf of xs needs a leading axis"):
            nb.scan(lambda c, x: (c, None), 0.0, {"a": nb.tensor(1.0)})
        with pytest.raises(ValueError, match="scan: length is required when xs has no leaves"):
            nb.scan(lambda c, x: (c, None), 0.0, None)
        with pytest.raises(TypeError, match="scan: f must return a pair \\(carry, y\\), got Tensor"):
            nb.scan(lambda c, x: c + x.sum(), nb.tensor(0.0), xs)
        with pytest.raises(TypeError, match=r"scan: f changed carry from shape \(\) float32 to shape \(2,\) float32"):
            nb.scan(lambda c, x: (c + x, None), nb.tensor(0.0), xs)
        with pytest.raises(TypeError, match=r"scan: f returned y as shape \(\) .* then as shape \(1,\) .* at step 1"):
            nb.scan(lambda c, x: (c + 1, nb.reshape(c, (1,)) if c.item() > 0 else c), nb.tensor(0.0), xs)
        with pytest.raises(ValueError, match="scan: length must be a non-negative int, got -1"):
            nb.scan(lambda c, x: (c, None), 0.0, None, length=-1)


class TestScanHelpers:
    """The fallbacks used until view ops provide `stack`/`unbind`."""

    def test_stack_and_unstack_fallbacks(self):
        rows = [nb.tensor([1.0, 2.0]), nb.tensor([3.0, 4.0]), nb.tensor([5.0, 6.0])]
        stacked = cf._stack_fallback(rows)
        np.testing.assert_array_equal(stacked.numpy(), [[1, 2], [3, 4], [5, 6]])
        back = cf._unstack_fallback(stacked)
        assert [r.tolist() for r in back] == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
        ints = cf._unstack_fallback(nb.tensor([[True, False], [False, False]]))
        assert ints[0].dtype == nb.bool_ and ints[0].tolist() == [True, False]

    def test_fallback_gradients(self):
        x = nb.tensor(np.arange(6.0).reshape(3, 2))
        w = nb.tensor(np.array([[1.0, -1.0], [2.0, 0.5], [3.0, 0.0]]))

        def f(v):
            parts = cf._unstack_fallback(v)
            return (cf._stack_fallback([p * p for p in parts]) * w).sum()

        np.testing.assert_allclose(nb.grad(f)(x).numpy(), 2 * x.numpy() * w.numpy())

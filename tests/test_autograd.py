"""Reverse and forward mode against central finite differences (float64), and the autograd API."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from _oracle import torch

import nabla as nb
from nabla_nn import Parameter
from nabla_optim import SGD

RNG = np.random.default_rng(2024)
EPS = 1e-6
RTOL = 1e-6
ATOL = 1e-8


def _r(*shape: int, low: float = -1.5, high: float = 1.5) -> np.ndarray:
    return RNG.uniform(low, high, size=shape)


def _away_from_zero(*shape: int) -> np.ndarray:
    return RNG.uniform(0.3, 1.5, size=shape) * RNG.choice([-1.0, 1.0], size=shape)


def _t(a: np.ndarray) -> nb.Tensor:
    t = nb.tensor(np.asarray(a, dtype=np.float64))
    assert t.dtype == nb.float64
    return t


def _scalar(fn: Callable, arrays: list[np.ndarray]) -> float:
    out = fn(*[_t(a) for a in arrays])
    assert out.shape == (), f"test function must return a scalar, got {out.shape}"
    return float(out.item())


def numeric_grads(fn: Callable, arrays: list[np.ndarray], eps: float = EPS) -> list[np.ndarray]:
    """Central finite differences of scalar `fn` with respect to every argument."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [b.copy() for b in arrays]
            minus = [b.copy() for b in arrays]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            g[idx] = (_scalar(fn, plus) - _scalar(fn, minus)) / (2 * eps)
        grads.append(g)
    return grads


def check_grads(fn: Callable, arrays: list[np.ndarray], rtol: float = RTOL, atol: float = ATOL) -> None:
    tensors = [_t(a) for a in arrays]
    analytic = nb.grad(fn, argnums=tuple(range(len(arrays))))(*tensors)
    assert isinstance(analytic, tuple) and len(analytic) == len(arrays)
    numeric = numeric_grads(fn, arrays)
    for k, (g, n, a) in enumerate(zip(analytic, numeric, arrays, strict=True)):
        assert g.shape == np.shape(a), f"grad {k}: shape {g.shape}, input shape {np.shape(a)}"
        assert g.dtype == nb.float64
        np.testing.assert_allclose(g.numpy(), n, rtol=rtol, atol=atol, err_msg=f"gradient {k}")


def _weights(shape: tuple) -> nb.Tensor:
    """Fixed random cotangent so that the whole Jacobian is exercised, not only its column sums."""
    return _t(np.random.default_rng(len(shape) * 1000 + int(np.prod(shape))).uniform(0.5, 1.5, size=shape))


def _wsum(y: nb.Tensor) -> nb.Tensor:
    return (y * _weights(y.shape)).sum()


# =============================================================================================
# finite differences, op by op
# =============================================================================================
BINARY_CASES = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a**b,
    "maximum": nb.maximum,
    "minimum": nb.minimum,
}
BROADCAST_PAIRS = [((3, 1), (1, 4)), ((4,), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 3), ()), ((), (3,)), ((2, 3), (2, 3))]


@pytest.mark.parametrize("name", list(BINARY_CASES))
@pytest.mark.parametrize("sx, sy", BROADCAST_PAIRS)
def test_binary_grad_with_broadcasting(name, sx, sy):
    op = BINARY_CASES[name]
    if name == "pow":
        x, y = RNG.uniform(0.5, 2.0, size=sx), _r(*sy)
    elif name == "div":
        x, y = _r(*sx), _away_from_zero(*sy)
    else:
        x, y = _r(*sx), _r(*sy)  # continuous values: no ties for maximum/minimum
    check_grads(lambda a, b: _wsum(op(a, b)), [x, y])


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow"])
def test_binary_grad_with_python_scalar(name):
    op = BINARY_CASES[name]
    x = RNG.uniform(0.5, 2.0, size=(3,))
    check_grads(lambda a: _wsum(op(a, 1.7)), [x])
    check_grads(lambda a: _wsum(op(1.7, a)), [x])


UNARY_CASES = {
    "neg": (lambda a: -a, lambda s: _r(*s)),
    "exp": (nb.exp, lambda s: _r(*s)),
    "log": (nb.log, lambda s: RNG.uniform(0.2, 3.0, size=s)),
    "sqrt": (nb.sqrt, lambda s: RNG.uniform(0.2, 3.0, size=s)),
    "tanh": (nb.tanh, lambda s: _r(*s)),
    "relu": (nb.relu, lambda s: _away_from_zero(*s)),
    "sigmoid": (nb.sigmoid, lambda s: _r(*s, low=-4, high=4)),
}


@pytest.mark.parametrize("name", list(UNARY_CASES))
@pytest.mark.parametrize("shape", [(), (5,), (2, 3)])
def test_unary_grad(name, shape):
    fn, gen = UNARY_CASES[name]
    check_grads(lambda a: _wsum(fn(a)), [gen(shape)])


def test_relu_grad_at_zero_is_zero():
    g = nb.grad(lambda a: nb.relu(a).sum())(_t([-1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0, 1.0])


def test_pow_grad_wrt_base_and_exponent():
    x = np.array([0.5, 1.5, 2.0, 3.0])
    y = np.array([2.0, -1.0, 0.5, 3.0])
    gx, gy = nb.grad(lambda a, b: (a**b).sum(), argnums=(0, 1))(_t(x), _t(y))
    np.testing.assert_allclose(gx.numpy(), y * x ** (y - 1), rtol=1e-12)
    np.testing.assert_allclose(gy.numpy(), x**y * np.log(x), rtol=1e-12)
    check_grads(lambda a, b: (a**b).sum(), [x, y])
    if torch is not None:
        tx = torch.tensor(x, requires_grad=True)
        ty = torch.tensor(y, requires_grad=True)
        (tx**ty).sum().backward()
        np.testing.assert_allclose(gx.numpy(), tx.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(gy.numpy(), ty.grad.numpy(), rtol=1e-12)


def test_pow_grad_at_zero_base():
    # d/dy 0**y is defined as 0 (PyTorch); d/dx x**2 at 0 is 0
    gx, gy = nb.grad(lambda a, b: (a**b).sum(), argnums=(0, 1))(_t([0.0]), _t([2.0]))
    np.testing.assert_array_equal(gx.numpy(), [0.0])
    np.testing.assert_array_equal(gy.numpy(), [0.0])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf and nan partials computed on the way
def test_pow_grad_with_a_zero_exponent_at_a_zero_base():
    # d/dx x**0 is 0 everywhere, also at x == 0 where y * x**(y - 1) is 0 * inf (it was nan):
    # a polynomial sum(c_k * x**k) at 0 has a finite gradient, as in PyTorch and JAX
    assert nb.grad(lambda a: sum(c * a**k for k, c in enumerate([1.0, 2.0, 3.0])))(_t(0.0)).item() == 2.0
    assert nb.grad(lambda a: (a**0).sum())(_t([0.0, 1.0, -2.0])).tolist() == [0.0, 0.0, 0.0]
    assert [nb.grad(lambda a, k=k: a**k)(_t(0.0)).item() for k in (0, 1, 2, 3)] == [0.0, 1.0, 0.0, 0.0]
    assert [nb.grad(nb.grad(lambda a, k=k: a**k))(_t(0.0)).item() for k in (0, 1, 2, 3)] == [0.0, 0.0, 2.0, 0.0]
    assert nb.jvp(lambda a: a**0.0, (_t(0.0),), (_t(1.0),))[1].item() == 0.0
    # tensor exponents (PyTorch): d/dx is 0 where y == 0; d/dy = x**y * log(x) is 0 where x == 0
    # and y >= 0, and -inf (inf * log 0) where x == 0 and y < 0
    x = np.array([0.0, 0.0, 0.0, 0.0, 0.0, -2.0, 2.0])
    y = np.array([0.0, 1.0, 2.0, -1.0, 0.5, 0.0, 3.0])
    gx, gy = nb.grad(lambda a, b: (a**b).sum(), argnums=(0, 1))(_t(x), _t(y))
    np.testing.assert_array_equal(gx.numpy(), [0.0, 1.0, 0.0, -np.inf, np.inf, 0.0, 12.0])
    np.testing.assert_array_equal(gy.numpy(), [0.0, 0.0, 0.0, -np.inf, 0.0, np.nan, 8.0 * np.log(2.0)])
    _, tx = nb.jvp(lambda a: a ** _t(y), (_t(x),), (_t(np.ones(7)),))
    _, ty = nb.jvp(lambda b: _t(x) ** b, (_t(y),), (_t(np.ones(7)),))
    np.testing.assert_array_equal(tx.numpy(), gx.numpy())
    np.testing.assert_array_equal(ty.numpy(), gy.numpy())
    if torch is not None:
        ax, ay = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
        (ax**ay).sum().backward()
        np.testing.assert_allclose(gx.numpy(), ax.grad.numpy(), rtol=1e-15)
        np.testing.assert_allclose(gy.numpy(), ay.grad.numpy(), rtol=1e-15)


MATMUL_SHAPES = [
    ((3, 4), (4, 2)),
    ((4,), (4, 3)),
    ((3, 4), (4,)),
    ((4,), (4,)),
    ((2, 3, 4), (4, 5)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((4,), (2, 4, 3)),
]


@pytest.mark.parametrize("sx, sy", MATMUL_SHAPES)
def test_matmul_grad(sx, sy):
    check_grads(lambda a, b: _wsum(a @ b), [_r(*sx), _r(*sy)])


REDUCE_AXES = [None, 0, -1, (0, 2), (1,)]


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("axis", REDUCE_AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_grad(name, axis, keepdims):
    fn = getattr(nb, name)
    check_grads(lambda a: _wsum(fn(a, axis=axis, keepdims=keepdims)), [_r(2, 3, 4)])


def test_max_grad_ties_split_evenly():
    x = np.array([1.0, 3.0, 3.0, 2.0])
    g = nb.grad(lambda a: a.max())(_t(x))
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.5, 0.5, 0.0])
    x2 = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    g2 = nb.grad(lambda a: (a.max(axis=1) * _t([1.0, 3.0])).sum())(_t(x2))
    np.testing.assert_allclose(g2.numpy(), [[0.0, 0.5, 0.5], [1.0, 1.0, 1.0]], rtol=1e-15)
    g3 = nb.grad(lambda a: a.min(axis=0).sum())(_t([[0.0, 5.0], [0.0, 1.0]]))
    np.testing.assert_array_equal(g3.numpy(), [[0.5, 0.0], [0.5, 1.0]])
    if torch is not None:
        t = torch.tensor(x, requires_grad=True)
        torch.amax(t, dim=0).backward()
        np.testing.assert_array_equal(g.numpy(), t.grad.numpy())


def test_max_min_dim_send_the_gradient_to_the_returned_index():
    # Tensor.max(dim) / min(dim) return (values, indices); as in PyTorch the whole gradient goes
    # to the returned (first) index, not split among ties as by the amax reduction above
    x2 = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    g = nb.grad(lambda a: (a.max(dim=1).values * _t([1.0, 3.0])).sum())(_t(x2))
    np.testing.assert_array_equal(g.numpy(), [[0.0, 1.0, 0.0], [3.0, 0.0, 0.0]])
    g = nb.grad(lambda a: a.min(0, keepdim=True)[0].sum())(_t([[0.0, 5.0], [0.0, 5.0]]))
    np.testing.assert_array_equal(g.numpy(), [[1.0, 1.0], [0.0, 0.0]])
    _, tangent = nb.jvp(lambda a: a.max(-1).values, (_t(x2),), (_t([[1.0, 2.0, 4.0], [8.0, 16.0, 32.0]]),))
    np.testing.assert_array_equal(tangent.numpy(), [2.0, 8.0])
    g = nb.vmap(nb.grad(lambda a: a.max(0).values))(_t(x2))  # per row: a 1-d max
    np.testing.assert_array_equal(g.numpy(), [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_dim_values_indices_and_gradients_match_torch(name, keepdim):
    x = RNG.integers(-2, 3, (3, 4, 5)).astype(np.float64)  # many ties
    x[2, 1, 3] = np.nan  # the nan is the extreme, and gets the gradient
    for dim in range(-3, 3):
        tx = torch.tensor(x, requires_grad=True)
        tv, ti = getattr(tx, name)(dim, keepdim)
        c = RNG.standard_normal(tuple(tv.shape))
        (tv * torch.tensor(c)).sum().backward()
        v, i = getattr(_t(x), name)(dim, keepdim=keepdim)
        np.testing.assert_array_equal(v.numpy(), tv.detach().numpy())
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
        g = nb.grad(lambda a, name=name, dim=dim, c=c: (getattr(a, name)(dim, keepdim=keepdim)[0] * _t(c)).sum())(_t(x))
        np.testing.assert_array_equal(g.numpy(), tx.grad.numpy())


def test_maximum_minimum_ties_split_evenly():
    a, b = _t([1.0, 3.0, 2.0]), _t([2.0, 3.0, 1.0])
    ga, gb = nb.grad(lambda x, y: nb.maximum(x, y).sum(), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(ga.numpy(), [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(gb.numpy(), [1.0, 0.5, 0.0])
    ga, gb = nb.grad(lambda x, y: nb.minimum(x, y).sum(), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(ga.numpy(), [1.0, 0.5, 0.0])
    np.testing.assert_array_equal(gb.numpy(), [0.0, 0.5, 1.0])


SHAPE_FUNCS = {
    "reshape": lambda a: a.reshape(4, 6),
    "reshape_-1": lambda a: a.reshape(-1, 3),
    "transpose": lambda a: a.transpose(0, 2),
    "permute": lambda a: a.permute(2, 0, 1),
    "T": lambda a: a.T,
    "broadcast_to": lambda a: nb.broadcast_to(a.reshape(2, 1, 3, 4), (2, 5, 3, 4)),
    "squeeze": lambda a: a.reshape(2, 1, 12).squeeze(),
    "unsqueeze": lambda a: a.unsqueeze(1),
    "flatten": lambda a: a.flatten(),
    "expand": lambda a: a.reshape(1, 2, 3, 4).expand(3, 2, 3, 4),
    "identity": nb.identity,
    "clone": lambda a: a.clone(),
}


@pytest.mark.parametrize("name", list(SHAPE_FUNCS))
def test_shape_op_grad(name):
    fn = SHAPE_FUNCS[name]
    check_grads(lambda a: _wsum(fn(a)), [_r(2, 3, 4)])


def test_where_grad():
    x = _r(3, 4)
    y = _r(4)
    cond = _t(_r(3, 1)) > 0

    def f(a, b):
        return _wsum(nb.where(cond, a * a, b))

    check_grads(f, [x, y])
    ga, gb = nb.grad(f, argnums=(0, 1))(_t(x), _t(y))
    w = _weights((3, 4)).numpy()
    c = cond.numpy()
    np.testing.assert_allclose(ga.numpy(), np.where(c, 2 * x * w, 0.0), rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), np.where(c, 0.0, w).sum(axis=0), rtol=1e-12)
    # with a scalar branch
    check_grads(lambda a: _wsum(nb.where(a > 0, a, 0.0)), [_away_from_zero(5)])


def test_cast_grad():
    x = np.array([0.5, -1.25, 2.0])
    g = nb.grad(lambda a: (a.astype(nb.float32) ** 2).sum())(_t(x))
    assert g.dtype == nb.float64  # cotangent cast back to the input's dtype
    np.testing.assert_allclose(g.numpy(), 2 * x, rtol=1e-6)
    g32 = nb.grad(lambda a: (a.astype(nb.float64) * 3.0).sum())(nb.tensor([1.0, 2.0]))
    assert g32.dtype == nb.float32
    np.testing.assert_array_equal(g32.numpy(), [3.0, 3.0])
    check_grads(lambda a: _wsum(a.astype(nb.float64)), [_r(4)])
    # an integer cast blocks the gradient
    gi = nb.grad(lambda a: a.astype(nb.int64).astype(nb.float32).sum() + a.sum())(nb.tensor([1.5, 2.5]))
    np.testing.assert_array_equal(gi.numpy(), [1.0, 1.0])


def test_composite_function_grad():
    def f(w, b, x):
        h = nb.tanh(x @ w + b)
        return (nb.sigmoid(h).mean(axis=0) ** 2).sum() + nb.log(nb.exp(h).sum())

    check_grads(f, [_r(3, 4), _r(4), _r(5, 3)])


def test_argmax_and_comparisons_are_not_differentiable():
    x = nb.tensor([1.0, 3.0, 2.0], requires_grad=True)
    assert x.argmax().requires_grad is False
    assert (x > 1).requires_grad is False
    g = nb.grad(lambda a: (a * a.argmax().astype(nb.float32)).sum())(nb.tensor([1.0, 3.0]))
    np.testing.assert_array_equal(g.numpy(), [1.0, 1.0])


# =============================================================================================
# backward() and the functional API share one engine
# =============================================================================================
FUNCS = [
    lambda a: (a * a).sum(),
    lambda a: nb.tanh(a @ a.T).mean(),
    lambda a: (nb.exp(a).max(axis=1) * a.sum(axis=1)).sum(),
    lambda a: nb.where(a > 0, a**3, -a).sum() / 3.0,
]


@pytest.mark.parametrize("i", range(len(FUNCS)))
def test_backward_equals_grad(i):
    fn = FUNCS[i]
    x = _r(3, 3)
    leaf = _t(x).requires_grad_()
    fn(leaf).backward()
    g = nb.grad(fn)(_t(x))
    assert leaf.grad is not None
    assert leaf.grad.shape == (3, 3)
    np.testing.assert_array_equal(leaf.grad.numpy(), g.numpy())
    np.testing.assert_allclose(g.numpy(), numeric_grads(fn, [x])[0], rtol=RTOL, atol=ATOL)


def test_backward_two_leaves_and_shared_use():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    b = nb.tensor([3.0, 4.0], requires_grad=True)
    ((a * b) + a).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [4.0, 5.0])
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 2.0])
    assert a.grad.requires_grad is False


def test_grad_accumulates_with_retain_graph():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    loss = (a * a).sum()
    loss.backward(retain_graph=True)
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 4.0])
    loss.backward()
    np.testing.assert_array_equal(a.grad.numpy(), [4.0, 8.0])


def test_grad_accumulates_across_graphs():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    (a * 3).sum().backward()
    (a * a).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [5.0, 7.0])
    a.grad = None
    (a * 2).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0])


def test_backward_twice_without_retain_graph_raises():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    loss = (a * a).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_backward_twice_after_evaluation_raises():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    loss = (a * a).sum()
    loss.backward()
    assert loss.item() == 5.0
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 4.0])
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_backward_on_non_scalar_without_gradient_raises():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="scalar"):
        (a * a).backward()


def test_backward_on_tensor_not_requiring_grad_raises():
    with pytest.raises(RuntimeError):
        nb.tensor([1.0, 2.0]).sum().backward()
    a = nb.tensor([1.0], requires_grad=True)
    with nb.no_grad():
        y = (a * a).sum()
    with pytest.raises(RuntimeError):
        y.backward()


def test_backward_with_explicit_gradient():
    a = nb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = a * a
    y.backward(gradient=nb.tensor([1.0, 10.0, 100.0]))
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 40.0, 600.0])
    b = nb.tensor([[1.0, 2.0]], requires_grad=True)
    (b * 3).backward(nb.tensor([[2.0, 5.0]]))
    np.testing.assert_array_equal(b.grad.numpy(), [[6.0, 15.0]])


def test_backward_gradient_of_wrong_shape_raises():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"\(3,\)"):
        (a * 2).backward(gradient=nb.ones(3))


def test_backward_through_realized_intermediate():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    y = a * a
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0])
    (y * 3).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [6.0, 12.0])


def test_backward_to_created_leaf():
    w = nb.ones(3, requires_grad=True)
    assert w.is_leaf and w.requires_grad
    (w * nb.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0, 3.0])


def test_no_grad():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    assert nb.is_grad_enabled()
    with nb.no_grad():
        assert not nb.is_grad_enabled()
        b = a * 2
        with nb.enable_grad():
            c = a * 2
    assert nb.is_grad_enabled()
    assert b.requires_grad is False
    assert c.requires_grad is True
    assert (a * 2).requires_grad is True
    np.testing.assert_array_equal(b.numpy(), [2.0, 4.0])

    @nb.no_grad()
    def doubled(t):
        return t * 2

    assert doubled(a).requires_grad is False
    with nb.set_grad_enabled(False):
        assert (a + 1).requires_grad is False


def test_grad_modes_decorate_generators_and_work_without_parentheses():
    """As torch: each step of a decorated generator runs in the mode (not only the call that
    creates it), and `@no_grad` / `@enable_grad` / `@inference_mode` need no parentheses."""
    a = nb.tensor([1.0, 2.0], requires_grad=True)

    @nb.no_grad()
    def steps(t):
        yield t * 2
        yield t * 3

    @nb.set_grad_enabled(False)
    def more(t):
        yield (t * 2).requires_grad

    assert [s.requires_grad for s in steps(a)] == [False, False] and nb.is_grad_enabled()
    assert list(more(a)) == [False] and nb.is_grad_enabled()

    @nb.no_grad
    def off(t):
        return t * 2

    @nb.enable_grad
    def on(t):
        return t * 2

    @nb.inference_mode
    def infer(t):
        return t * 2, nb.is_inference_mode_enabled()

    assert off(a).requires_grad is False
    with nb.no_grad():
        assert on(a).requires_grad is True
    out, inside = infer(a)
    assert out.requires_grad is False and inside is True and not nb.is_inference_mode_enabled()


def test_inference_mode_false_turns_recording_back_on():
    a = nb.tensor([1.0], requires_grad=True)
    for outer in (nb.no_grad, nb.inference_mode):
        with outer():
            assert nb.is_inference_mode_enabled() is (outer is nb.inference_mode)  # (no_grad is not it)
            with nb.inference_mode(False):
                assert (a * 2).requires_grad and not nb.is_inference_mode_enabled()
            assert not (a * 2).requires_grad


def test_autograd_backward_of_several_tensors_is_one_backward():
    """Hooks see the summed gradient once (torch), not one partial gradient per tensor."""
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()) or g.clamp(max=5))
    nb.autograd.backward([(y * y).sum(), (y * 3).sum()])
    np.testing.assert_array_equal(x.grad.numpy(), [10.0, 10.0])
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], [7.0, 11.0])
    z = nb.tensor([1.0, 2.0], requires_grad=True)
    nb.autograd.backward([z * 2, z * 3], [nb.ones(2), nb.full((2,), 2.0)])
    np.testing.assert_array_equal(z.grad.numpy(), [8.0, 8.0])
    with pytest.raises(RuntimeError, match="element 1 of tensors does not require grad"):
        nb.autograd.backward([(z * 2).sum(), nb.ones(())])


def test_assigning_a_grad_of_another_dtype_raises():
    x = nb.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="assign a gradient with dtype float64 to a tensor with dtype float32"):
        x.grad = nb.ones(2, dtype=nb.float64)


def test_detach():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    d = a.detach()
    assert d.requires_grad is False
    np.testing.assert_array_equal(d.numpy(), [1.0, 2.0])
    p = (a * 3).detach()
    assert p.requires_grad is False
    np.testing.assert_array_equal(p.numpy(), [3.0, 6.0])
    (a * a.detach()).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 2.0])
    assert nb.detach(a).requires_grad is False


def test_requires_grad_():
    a = nb.tensor([1.0, 2.0])
    assert a.requires_grad is False
    assert a.requires_grad_() is a
    assert a.requires_grad is True and a.is_leaf
    y = a * a
    assert y.requires_grad and not y.is_leaf
    y.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 4.0])
    a.requires_grad_(False)
    assert a.requires_grad is False
    with pytest.raises(RuntimeError):
        (nb.tensor([1.0], requires_grad=True) * 2).requires_grad_(False)
    b = nb.tensor([1.0])
    b.requires_grad = True
    assert b.requires_grad


def test_grad_setter_checks_shape():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        a.grad = nb.ones(3)
    a.grad = nb.ones(2)
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 1.0])


# =============================================================================================
# higher order
# =============================================================================================
def test_second_and_third_derivative_of_cube():
    x = np.array([-1.5, 0.5, 2.0])

    def f(a):
        return (a**3).sum()

    def d1(a):
        return nb.grad(f)(a).sum()

    def d2(a):
        return nb.grad(d1)(a).sum()

    g1 = nb.grad(f)(_t(x))
    g2 = nb.grad(d1)(_t(x))
    g3 = nb.grad(d2)(_t(x))
    np.testing.assert_allclose(g1.numpy(), 3 * x**2, rtol=1e-12)
    np.testing.assert_allclose(g2.numpy(), 6 * x, rtol=1e-12)
    np.testing.assert_allclose(g3.numpy(), [6.0, 6.0, 6.0], rtol=1e-12)
    s = nb.grad(nb.grad(nb.grad(lambda a: a**3)))(_t(2.0))
    assert s.item() == pytest.approx(6.0)
    assert nb.grad(nb.grad(lambda a: a**3))(_t(2.0)).item() == pytest.approx(12.0)


@pytest.mark.parametrize(
    "fn",
    [
        lambda a: nb.tanh(a).sum(),
        lambda a: (nb.sigmoid(a) * nb.exp(a)).sum(),
        lambda a: (a @ a.T).max() + (a / (a * a + 1.0)).sum(),
        lambda a: nb.sqrt(a * a + 1.0).mean(),
    ],
)
def test_hessian_diagonal_against_finite_differences(fn):
    x = _r(2, 2)

    def first_sum_weighted(a):
        return _wsum(nb.grad(fn)(a))

    analytic = nb.grad(first_sum_weighted)(_t(x)).numpy()
    numeric = numeric_grads(first_sum_weighted, [x])[0]
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)


def test_create_graph_backward():
    a = nb.tensor([1.0, 2.0], dtype=nb.float64, requires_grad=True)
    (a**3).sum().backward(create_graph=True)
    g = a.grad
    np.testing.assert_array_equal(g.numpy(), [3.0, 12.0])
    a.grad = None
    g.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [6.0, 12.0])


def test_no_perturbation_confusion():
    # d/dx [ d/dy (x*y) at y=x ] = d/dx x = 1
    out = nb.grad(lambda x: nb.grad(lambda y: (x * y).sum())(x))(_t(3.0))
    assert out.item() == pytest.approx(1.0)
    # JAX's classic: d/dx [ x * d/dy (x + y) ] = 1
    out2 = nb.grad(lambda x: x * nb.grad(lambda y: x + y)(x))(_t(2.5))
    assert out2.item() == pytest.approx(1.0)
    v = nb.grad(lambda x: nb.grad(lambda y: (x * y).sum())(x).sum())(_t([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(v.numpy(), [1.0, 1.0, 1.0])


def test_inner_transform_keeps_the_dependence_on_what_it_closes_over():
    # the inner function closes over the outer variable w: d/dw sum(d/da sum(a w w)) = 2w
    x, w0 = _t([3.0, 4.0]), _t([1.0, 2.0])
    inner = {
        "grad": lambda w: nb.grad(lambda a: (a * w * w).sum())(x),
        "jacrev": lambda w: nb.jacrev(lambda a: a * w * w)(x),
        "vjp": lambda w: nb.vjp(lambda a: a * w * w, x)[1](nb.ones_like(x))[0],
    }
    for name, g in inner.items():
        np.testing.assert_allclose(nb.grad(lambda w, g=g: g(w).sum())(w0).numpy(), [2.0, 4.0], err_msg=name)
    assert nb.grad(lambda w: nb.grad(lambda a: a * w**3)(_t(2.0)))(_t(1.5)).item() == pytest.approx(6.75)
    # and with backward(): a gradient penalty on a captured parameter (torch.func.grad's answer)
    p = nb.tensor([1.0, 2.0], dtype=nb.float64, requires_grad=True)
    g = nb.grad(lambda a: (a * p * p).sum())(x)
    g.sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [2.0, 4.0])
    assert not nb.grad(lambda a: (a * a * x).sum())(w0).requires_grad  # nothing outer: a plain value


# =============================================================================================
# grad / value_and_grad / vjp / jvp
# =============================================================================================
def test_grad_argnums():
    x, y = _t([1.0, 2.0]), _t([3.0, 4.0])

    def f(a, b):
        return (a * a * b).sum()

    np.testing.assert_array_equal(nb.grad(f)(x, y).numpy(), [6.0, 16.0])
    np.testing.assert_array_equal(nb.grad(f, argnums=1)(x, y).numpy(), [1.0, 4.0])
    np.testing.assert_array_equal(nb.grad(f, argnums=-1)(x, y).numpy(), [1.0, 4.0])
    gx, gy = nb.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx.numpy(), [6.0, 16.0])
    np.testing.assert_array_equal(gy.numpy(), [1.0, 4.0])
    (only,) = nb.grad(f, argnums=(1,))(x, y)
    np.testing.assert_array_equal(only.numpy(), [1.0, 4.0])


def test_grad_of_unused_argument_is_zero():
    ga, gb = nb.grad(lambda a, b: (a * a).sum(), argnums=(0, 1))(_t([1.0, 2.0]), _t([3.0]))
    np.testing.assert_array_equal(ga.numpy(), [2.0, 4.0])
    assert gb.shape == (1,)
    np.testing.assert_array_equal(gb.numpy(), [0.0])


def test_grad_results_do_not_require_grad_at_top_level():
    g = nb.grad(lambda a: (a * a).sum())(nb.tensor([1.0, 2.0]))
    assert g.requires_grad is False
    with nb.no_grad():
        g2 = nb.grad(lambda a: (a * a).sum())(nb.tensor([1.0, 2.0]))
    np.testing.assert_array_equal(g2.numpy(), [2.0, 4.0])


def test_value_and_grad_with_argnums_and_aux():
    x, y = _t([1.0, 2.0]), _t([3.0, 4.0])

    def f(a, b):
        return (a * b).sum(), {"double": a * 2, "note": "aux"}

    (value, aux), (gx, gy) = nb.value_and_grad(f, argnums=(0, 1), has_aux=True)(x, y)
    assert value.item() == 11.0
    np.testing.assert_array_equal(aux["double"].numpy(), [2.0, 4.0])
    assert aux["note"] == "aux"
    np.testing.assert_array_equal(gx.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(gy.numpy(), [1.0, 2.0])

    value2, g2 = nb.value_and_grad(lambda a: (a**2).sum())(x)
    assert value2.item() == 5.0
    np.testing.assert_array_equal(g2.numpy(), [2.0, 4.0])

    g3, aux3 = nb.grad(lambda a: ((a * a).sum(), a + 1), has_aux=True)(x)
    np.testing.assert_array_equal(g3.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(aux3.numpy(), [2.0, 3.0])


def test_vjp_with_dict_input():
    u, v = _r(3), _r(3)

    def f(d):
        return d["u"] * d["v"] + nb.exp(d["u"])

    out, pullback = nb.vjp(f, {"u": _t(u), "v": _t(v)})
    np.testing.assert_allclose(out.numpy(), u * v + np.exp(u), rtol=1e-12)
    ct = np.array([1.0, 2.0, 3.0])
    (grads,) = pullback(_t(ct))
    assert set(grads) == {"u", "v"}
    np.testing.assert_allclose(grads["u"].numpy(), ct * (v + np.exp(u)), rtol=1e-12)
    np.testing.assert_allclose(grads["v"].numpy(), ct * u, rtol=1e-12)


def test_vjp_with_tuple_input_and_multiple_outputs():
    a, b = _r(2, 3), _r(3)

    def f(pair, scale):
        x, y = pair
        return x * y * scale, (x + y).sum()

    outs, pullback = nb.vjp(f, (_t(a), _t(b)), _t(2.0))
    assert isinstance(outs, tuple) and outs[0].shape == (2, 3) and outs[1].shape == ()
    (ga, gb), gs = pullback((nb.ones(2, 3, dtype=nb.float64), _t(1.0)))
    np.testing.assert_allclose(ga.numpy(), 2 * np.broadcast_to(b, (2, 3)) + 1, rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), 2 * a.sum(axis=0) + 2, rtol=1e-12)
    np.testing.assert_allclose(gs.numpy(), (a * b).sum(), rtol=1e-12)


def test_vjp_has_aux():
    out, pullback, aux = nb.vjp(lambda a: (a * 2, "aux"), _t([1.0, 2.0]), has_aux=True)
    assert aux == "aux"
    (g,) = pullback(_t([1.0, 1.0]))
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0])


def _jvp_fd(fn, primals, tangents, eps=EPS):
    plus = fn(*[_t(p + eps * t) for p, t in zip(primals, tangents, strict=True)]).numpy()
    minus = fn(*[_t(p - eps * t) for p, t in zip(primals, tangents, strict=True)]).numpy()
    return (plus - minus) / (2 * eps)


JVP_FUNCS = [
    (lambda a: nb.tanh(a) * a, [(3, 2)]),
    (lambda a, b: a @ b + nb.exp(b).sum(), [(2, 3), (3, 4)]),
    (lambda a, b: (a / (b * b + 1.0)) ** 2, [(3, 1), (1, 4)]),
    (lambda a: nb.sigmoid(a).max(axis=1) + nb.sqrt(a * a + 1.0).mean(axis=1), [(3, 4)]),
    (lambda a, b: nb.where(a > 0, a * b, nb.maximum(a, b)).sum(axis=0, keepdims=True), [(2, 3), (3,)]),
    (lambda a, b: a**b + a.T.reshape(-1).reshape(2, 2), [(2, 2), (2, 2)]),
]


@pytest.mark.parametrize("i", range(len(JVP_FUNCS)))
def test_jvp_against_finite_differences(i):
    fn, shapes = JVP_FUNCS[i]
    primals = [RNG.uniform(0.3, 1.5, size=s) for s in shapes]
    tangents = [_r(*s) for s in shapes]
    out, tan = nb.jvp(fn, tuple(_t(p) for p in primals), tuple(_t(t) for t in tangents))
    expected_out = fn(*[_t(p) for p in primals]).numpy()
    np.testing.assert_allclose(out.numpy(), expected_out, rtol=1e-12)
    assert tan.shape == out.shape
    np.testing.assert_allclose(tan.numpy(), _jvp_fd(fn, primals, tangents), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("i", range(len(JVP_FUNCS)))
def test_jvp_vjp_consistency(i):
    # <J v, u> == <v, J^T u>
    fn, shapes = JVP_FUNCS[i]
    primals = [_t(RNG.uniform(0.3, 1.5, size=s)) for s in shapes]
    vs = [_r(*s) for s in shapes]
    out, jv = nb.jvp(fn, tuple(primals), tuple(_t(v) for v in vs))
    u = _r(*out.shape)
    _, pullback = nb.vjp(fn, *primals)
    jtu = pullback(_t(u))
    lhs = float(np.sum(jv.numpy() * u))
    rhs = float(sum(np.sum(v * g.numpy()) for v, g in zip(vs, jtu, strict=True)))
    assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-12)


def test_jvp_with_pytree_and_simple_values():
    d = {"a": _t([1.0, 2.0]), "b": _t([3.0, 4.0])}
    td = {"a": _t([1.0, 0.0]), "b": _t([0.0, 1.0])}
    out, tan = nb.jvp(lambda p: p["a"] * p["b"], (d,), (td,))
    np.testing.assert_array_equal(out.numpy(), [3.0, 8.0])
    np.testing.assert_array_equal(tan.numpy(), [3.0, 2.0])
    out2, tan2 = nb.jvp(
        lambda a: a.max(axis=0), (nb.tensor([[1.0, 3.0], [3.0, 2.0]]),), (nb.tensor([[1.0, 2.0], [3.0, 4.0]]),)
    )
    np.testing.assert_array_equal(out2.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(tan2.numpy(), [3.0, 2.0])


def test_forward_over_reverse_hvp():
    x = _t([1.0, 2.0])
    _, hv = nb.jvp(nb.grad(lambda a: (a**3).sum()), (x,), (_t([1.0, 0.0]),))
    np.testing.assert_allclose(hv.numpy(), [6.0, 0.0], rtol=1e-12)
    g = nb.grad(lambda a: nb.jvp(lambda b: (b**3).sum(), (a,), (nb.ones_like(a),))[1])(x)
    np.testing.assert_allclose(g.numpy(), [6.0, 12.0], rtol=1e-12)


def test_grad_of_non_scalar_function_raises_type_error():
    with pytest.raises(TypeError, match=r"\(2,\)"):
        nb.grad(lambda a: a * a)(nb.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"\(2, 3\)"):
        nb.value_and_grad(lambda a: a + 1)(nb.ones(2, 3))


def test_jvp_tangent_with_wrong_shape_raises_value_error():
    with pytest.raises(ValueError) as info:
        nb.jvp(lambda a: a * a, (nb.tensor([1.0, 2.0]),), (nb.tensor([1.0, 1.0, 1.0]),))
    assert "(3,)" in str(info.value)
    assert "(2,)" in str(info.value)


def test_vjp_cotangent_with_wrong_shape_raises():
    _, pullback = nb.vjp(lambda a: a * 2, nb.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"\(3,\)"):
        pullback(nb.tensor([1.0, 2.0, 3.0]))


def test_grad_with_respect_to_int_raises():
    with pytest.raises(TypeError, match="int64"):
        nb.grad(lambda a: (a * a).sum())(nb.tensor([1, 2]))


def test_grad_bad_argnums_raises():
    with pytest.raises(ValueError, match="argnums"):
        nb.grad(lambda a: a.sum(), argnums=3)(nb.tensor([1.0]))
    f = lambda a, b: (a * a * b).sum()  # noqa: E731
    for transform in (nb.grad, nb.value_and_grad, nb.jacrev, nb.jacfwd, nb.hessian):
        with pytest.raises(ValueError, match=r"argnums \(0, -2\) must name each argument once"):
            transform(f, argnums=(0, -2))(nb.tensor([1.0]), nb.tensor([2.0]))  # (gave zeros)


def test_grad_is_taken_at_the_value_passed_in_and_in_place_updates_reach_the_caller():
    """`w.mul_(2)` inside fn gives the argument a new value: the gradient is still with respect
    to the value passed in (d/dw sum(2w) = 2; it was d/d(2w) = 1), and, as in PyTorch, the
    caller's tensor holds the updated value afterwards."""
    w = nb.tensor(np.array([1.0, 2.0], np.float32))
    np.testing.assert_allclose(nb.grad(lambda t: t.mul_(2.0).sum())(w).numpy(), [2.0, 2.0])
    np.testing.assert_allclose(w.numpy(), [2.0, 4.0])
    v = nb.tensor(np.array([1.0, 2.0], np.float32))
    np.testing.assert_allclose(nb.grad(lambda t: (t.add_(1.0) * t).sum())(v).numpy(), [4.0, 6.0])
    np.testing.assert_allclose(v.numpy(), [2.0, 3.0])
    assert not v.requires_grad  # the new value comes without the trace's autodiff history


def test_jvp_writes_in_place_updates_back_to_its_primals():
    # As torch.func.jvp (and nabla's vjp/grad/vmap): buf holds the new value, without tangent.
    buf = nb.tensor([3.0, 5.0])
    out, tangent = nb.jvp(lambda x, b: x * b.add_(1.0), (nb.tensor([1.0, 2.0]), buf), (nb.ones(2), nb.ones(2)))
    assert out.tolist() == [4.0, 12.0] and tangent.tolist() == [5.0, 8.0]
    assert buf.tolist() == [4.0, 6.0] and not buf._impl.tangent
    assert nb.jvp(lambda b: b * buf, (nb.ones(2),), (nb.ones(2),))[1].tolist() == [4.0, 6.0]


# =============================================================================================
# PyTorch's autograd conventions
# =============================================================================================
def test_set_grad_enabled_called_plainly_takes_effect_at_once():
    x = nb.tensor([1.0], requires_grad=True)
    try:
        nb.set_grad_enabled(False)  # the first line of many inference scripts
        assert not nb.is_grad_enabled() and not (x * 2).requires_grad
        with nb.enable_grad():
            assert (x * 2).requires_grad
        assert not nb.is_grad_enabled()
    finally:
        nb.set_grad_enabled(True)
    assert nb.is_grad_enabled()
    with nb.set_grad_enabled(False):
        assert not nb.is_grad_enabled()
    assert nb.is_grad_enabled()

    @nb.set_grad_enabled(False)
    def infer():
        return nb.is_grad_enabled()

    assert nb.is_grad_enabled() and infer() is False and nb.is_grad_enabled()


def test_tensors_that_do_not_require_grad_are_leaves_and_can_start_requiring_it():
    x = nb.tensor([1.0, 2.0])
    adv = x + nb.tensor([0.5, 0.5])  # computed without grad: a leaf, as in PyTorch
    assert adv.is_leaf
    adv.requires_grad_(True)  # an adversarial example's input
    (adv * adv).sum().backward()
    np.testing.assert_array_equal(adv.grad.numpy(), [3.0, 5.0])
    w = nb.tensor([1.0], requires_grad=True)
    with nb.no_grad():
        assert (w * 2).is_leaf
    assert not (w * 2).is_leaf
    with pytest.raises(RuntimeError, match="leaf variables"):
        (w * 2).requires_grad_(False)


def test_retain_grad_keeps_a_non_leaf_gradient():
    w = nb.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(2):  # the second backward has the same structure (no replay mix-up)
        w.grad = None
        h = w * 3
        h.retain_grad()
        (h * h).sum().backward()
        np.testing.assert_array_equal(h.grad.numpy(), [6.0, 12.0])
        np.testing.assert_array_equal(w.grad.numpy(), [18.0, 36.0])
    assert h.retains_grad and not w.retains_grad
    plain = w * 3
    (plain * plain).sum().backward()
    assert plain.grad is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        nb.tensor([1.0]).retain_grad()


def test_scalar_tensors_format_and_compare_with_none_as_in_pytorch():
    loss = nb.tensor(2.5)
    assert f"{loss:.2f}" == "2.50" and f"{loss}" == "2.5"  # as torch: the value
    assert (loss == None) is False and (loss != None) is True  # noqa: E711
    with pytest.raises(TypeError):
        f"{nb.tensor([1.0, 2.0]):.2f}"


# -- gradient hooks (Tensor.register_hook) -----------------------------------------------------
def _hooked_backward(lib):
    """PyTorch's semantics, as one program for both libraries: a non-leaf's hook sees and
    scales what flows on, a leaf's replaces what it accumulates, a post-accumulate hook
    sees the final .grad."""
    if lib == "torch":

        def make(a):
            return torch.tensor(a, requires_grad=True)
    else:

        def make(a):
            return nb.tensor(np.array(a, np.float32), requires_grad=True)

    x, w = make([1.0, 2.0, 3.0]), make([0.5, -1.0, 2.0])
    seen, accumulated = [], []
    h = x * w
    h.register_hook(lambda g: seen.append(g.detach().numpy().copy()) or g * 3)
    x.register_hook(lambda g: g + 1)
    w.register_post_accumulate_grad_hook(lambda t: accumulated.append(t.grad.detach().numpy().copy()))
    ((h * h).sum() + x.sum()).backward()
    return x.grad.detach().numpy(), w.grad.detach().numpy(), seen, accumulated


def test_gradient_hooks_see_replace_and_follow_the_gradient():
    gx, gw, seen, accumulated = _hooked_backward("nabla")
    x, w = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(seen[0], 2 * x * w)  # d/dh of sum(h^2)
    np.testing.assert_allclose(gx, 3 * 2 * x * w * w + 1 + 1)  # scaled by h's hook, +1 by x's own
    np.testing.assert_allclose(gw, 3 * 2 * x * w * x)
    np.testing.assert_allclose(accumulated[0], gw)


@pytest.mark.skipif(torch is None, reason="torch not installed")
def test_gradient_hooks_match_torch():
    for a, b in zip(_hooked_backward("nabla"), _hooked_backward("torch"), strict=True):
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-6)


def test_a_leaf_hook_outlasts_optimizer_steps_and_a_removed_one_stops():
    p = Parameter(nb.tensor(np.array([1.0, 2.0], np.float32)))
    opt = SGD([p], lr=0.1)
    handle = p.register_hook(lambda g: g * 0)  # freezes p while registered
    for _ in range(3):  # the same structure each step: replay must not skip the hook
        opt.zero_grad()
        (p * p).sum().backward()
        opt.step()
    np.testing.assert_allclose(p.numpy(), [1.0, 2.0])
    handle.remove()
    opt.zero_grad()
    (p * p).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [2.0, 4.0])


def test_gradient_hook_errors():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        nb.ones(2).register_hook(lambda g: g)
    x = nb.tensor(np.ones(2, np.float32), requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    with x.register_hook(lambda g: nb.ones(3)):
        with pytest.raises(RuntimeError, match=r"gradient's shape \(2,\), got \(3,\)"):
            (x * x).sum().backward()
    (x * x).sum().backward()  # the `with` block removed the hook
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_retained_gradients_are_kept_by_autograd_grad_and_backward_inputs():
    """As torch: retain_grad() keeps a non-leaf's gradient whatever the backward asks for."""
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    (gx,) = nb.autograd.grad((y * y).sum(), x)
    np.testing.assert_array_equal(gx.numpy(), [8.0, 16.0])
    np.testing.assert_array_equal(y.grad.numpy(), [4.0, 8.0])
    z = x * 3
    z.retain_grad()
    (z * z).sum().backward(inputs=[x])
    np.testing.assert_array_equal(z.grad.numpy(), [6.0, 12.0])
    np.testing.assert_array_equal(x.grad.numpy(), [18.0, 36.0])


def test_autograd_grad_takes_torchs_only_inputs_and_is_grads_batched():
    """The WGAN-GP penalty's `only_inputs=True` (ignored, as torch), and batched cotangents:
    one vector-Jacobian product per row."""
    x = nb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (g,) = nb.autograd.grad((x * x).sum(), x, nb.ones(()), True, True, only_inputs=True)
    np.testing.assert_array_equal(g.numpy(), [2.0, 4.0, 6.0])
    (jac,) = nb.autograd.grad(x**2, x, nb.eye(3), is_grads_batched=True)
    np.testing.assert_array_equal(jac.numpy(), np.diag([2.0, 4.0, 6.0]))
    with pytest.raises(RuntimeError, match="is_grads_batched=True needs grad_outputs"):
        nb.autograd.grad(x**2, x, is_grads_batched=True)


class _ScaledExp(nb.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, scale):
        ctx.save_for_backward(a, b)
        ctx.scale = scale
        return a.exp() * b * scale, a * 2.0

    @staticmethod
    def backward(ctx, gy, g2):
        a, b = ctx.saved_tensors
        return gy * a.exp() * b * ctx.scale + g2 * 2.0, gy * a.exp() * ctx.scale, None


class _Square(nb.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2.0 * x * g


class _Reverse(nb.autograd.Function):  # torch's newer style: forward(*args) + setup_context
    @staticmethod
    def forward(x, lam):
        return x * 1.0

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.lam = inputs[1]

    @staticmethod
    def backward(ctx, g):
        return -ctx.lam * g, None


def test_autograd_function_forward_backward_as_torch():
    a = nb.tensor([0.5, 1.0], requires_grad=True)
    b = nb.tensor([2.0, 3.0], requires_grad=True)
    y, z = _ScaledExp.apply(a, b, 1.5)
    (y.sum() + z.sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), np.exp([0.5, 1.0]) * [2.0, 3.0] * 1.5 + 2.0, rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), np.exp([0.5, 1.0]) * 1.5, rtol=1e-6)
    x = nb.tensor([3.0], requires_grad=True)
    (g,) = nb.autograd.grad(_Square.apply(x).sum(), x, create_graph=True)  # backward is differentiable
    g.sum().backward()
    assert g.item() == 6.0 and x.grad.item() == 2.0
    np.testing.assert_array_equal(nb.grad(lambda t: _Square.apply(t).sum())(nb.tensor([2.0, 5.0])).numpy(), [4, 10])
    r = nb.tensor([1.0, 2.0], requires_grad=True)
    (_Reverse.apply(r, 0.5) * 3.0).sum().backward()
    np.testing.assert_array_equal(r.grad.numpy(), [-1.5, -1.5])
    with nb.no_grad():
        assert not _Square.apply(x).requires_grad


def test_autograd_function_errors_name_the_function():
    class TooFew(nb.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g

    class WrongShape(nb.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.sum()

        @staticmethod
        def backward(ctx, g):
            return g

    a = nb.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"TooFewBackward returned an incorrect number of gradients \(expected 2"):
        TooFew.apply(a, nb.ones(2)).sum().backward()
    with pytest.raises(RuntimeError, match=r"WrongShapeBackward returned an invalid gradient at index 0"):
        WrongShape.apply(a).backward()


def test_detect_anomaly_names_the_backward_that_returned_nan():
    x = nb.tensor([0.0, 1.0], requires_grad=True)
    with nb.autograd.detect_anomaly():
        assert nb.autograd.is_anomaly_enabled()
        with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values in its 0th output"):
            (nb.sqrt(x) * 0.0).sum().backward()
    assert not nb.autograd.is_anomaly_enabled()
    (nb.sqrt(x) * 0.0).sum().backward()  # (outside: nan, as torch, no error)
    assert np.isnan(x.grad.numpy()[0])
    nb.autograd.set_detect_anomaly(True)
    try:
        with pytest.raises(RuntimeError, match="SqrtBackward0"):
            (nb.sqrt(x) * 0.0).sum().backward()
    finally:
        nb.autograd.set_detect_anomaly(False)


class _Exp(nb.autograd.Function):  # torch's documentation example: it saves its output
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


def test_a_function_that_saves_its_output_has_a_double_backward():
    want = np.exp([0.0, 1.0])
    second = nb.grad(lambda t: nb.grad(lambda u: _Exp.apply(u).sum())(t).sum())(nb.tensor([0.0, 1.0]))
    np.testing.assert_allclose(second.numpy(), want, rtol=1e-6)  # (it was zeros)
    x = nb.tensor([0.0, 1.0], requires_grad=True)
    (g,) = nb.autograd.grad(_Exp.apply(x).sum(), x, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)


def test_function_gradients_of_a_broadcast_shape_and_non_differentiable_aliases():
    class Widen(nb.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2.0

        @staticmethod
        def backward(ctx, g):
            return nb.broadcast_to(g, (4, 3)) * 2.0  # summed down to the input's shape, as torch

    class PassThrough(nb.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.mark_non_differentiable(a)
            return a, a * 2.0

        @staticmethod
        def backward(ctx, g1, g2):
            return g2 * 2.0

    a = nb.ones(3, requires_grad=True)
    Widen.apply(a).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [8.0, 8.0, 8.0])
    same, doubled = PassThrough.apply(nb.ones(3, requires_grad=True))
    assert not same.requires_grad and doubled.requires_grad


_SECOND_BACKWARD = {  # torch 2.13: a node that saved no tensors can be walked again
    "add": (lambda m, x: x + 1, True),
    "reshape": (lambda m, x: x.reshape(2, 1), True),
    "index": (lambda m, x: x[0], True),
    "diag": (lambda m, x: m.diag(x), True),
    "cat": (lambda m, x: m.cat([x, x]), True),
    "mul": (lambda m, x: x * 2, False),
    "exp": (lambda m, x: x.exp(), False),
    "diag then exp": (lambda m, x: m.diag(x).exp(), False),
}


@pytest.mark.parametrize("case", sorted(_SECOND_BACKWARD))
def test_a_second_backward_is_allowed_where_no_values_were_saved(case: str):
    """backward() without retain_graph releases the nodes whose gradient needs saved values
    (mul, exp); structural ones (add, reshape, indexing, diag, cat) stay usable, as in torch
    (an implicit-differentiation script reuses `A0 + diag(theta)` for two losses)."""
    fn, reusable = _SECOND_BACKWARD[case]
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    y = fn(nb, x)
    y.sum().backward()
    first = x.grad.numpy().copy()
    if reusable:
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * first)
    else:
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.sum().backward()
    if torch is not None:
        tx = torch.tensor([1.0, 2.0], requires_grad=True)
        ty = fn(torch, tx)
        ty.sum().backward()
        try:
            ty.sum().backward()
            torch_reusable = True
        except RuntimeError:
            torch_reusable = False
        assert torch_reusable == reusable

"""Reductions, scans, softmax and sorting beyond the registry: PyTorch semantics at edge cases
(zeros in products, norms at 0, -inf and huge logits, ties), error messages, Tensor methods and
PyTorch keyword names. Expected values were computed with PyTorch 2.x."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb

INF = math.inf


def t(data, dtype=np.float32):
    return nb.tensor(np.array(data, dtype))


def grad_of(fn, x):
    return nb.grad(fn)(t(x)).numpy()


def close(got, want, **kw):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want, np.float32), rtol=1e-6, atol=1e-6, **kw)


# -- products ----------------------------------------------------------------------------------
def test_prod_gradient_is_exact_with_zeros():
    x = [[2.0, 0.0, 3.0], [0.0, 0.0, 1.0], [1.0, 2.0, 3.0]]
    close(grad_of(lambda a: nb.prod(a, 1).sum(), x), [[0, 6, 0], [0, 0, 0], [6, 3, 2]])


def test_prod_of_empty_is_one_and_ints_give_int64():
    close(nb.prod(nb.zeros(0, 3), 0), [1, 1, 1])
    out = nb.prod(t([[2, 3], [4, 5]], np.int32), 1)
    assert out.dtype == nb.int64 and out.tolist() == [6, 20]


def test_cumprod_gradient_is_exact_with_zeros():
    x = [[2.0, 0.0, 3.0, 4.0], [0.0, 5.0, 0.0, 1.0], [1.0, 2.0, 3.0, 0.5]]
    w = t([1.0, 2.0, 3.0, 4.0])
    close(grad_of(lambda a: (nb.cumprod(a, 1) * w).sum(), x), [[1, 118, 0, 0], [11, 0, 0, 0], [35, 17, 10, 24]])


def test_cumprod_jvp_with_zeros_matches_the_jacobian():
    x = np.array([1.5, 0.0, 2.0, 0.0, 3.0], np.float64)
    eye = np.eye(5)
    jac = np.stack([nb.jvp(lambda a: nb.cumprod(a, 0), (nb.tensor(x),), (nb.tensor(e),))[1].numpy() for e in eye], 1)
    want = np.zeros((5, 5))
    for j in range(5):
        for i in range(j + 1):
            want[j, i] = np.prod(np.delete(x[: j + 1], i))
    np.testing.assert_allclose(jac, want)


def test_cumsum_and_cumprod_long_axis_and_dtypes():
    x = np.random.default_rng(0).uniform(0.5, 1.5, size=(2, 37)).astype(np.float32)
    np.testing.assert_allclose(nb.cumprod(nb.tensor(x), 1).numpy(), np.cumprod(x, 1), rtol=1e-5)
    assert nb.cumsum(t([True, False, True], np.bool_), 0).tolist() == [1, 1, 2]
    assert nb.cumsum(t([1, 2], np.int32), 0).dtype == nb.int64
    assert nb.cumsum(t(2.0), -1).shape == ()


# -- moments and norms -------------------------------------------------------------------------
def test_var_std_values_and_correction():
    x = t([[1.0, 2.0, 4.0], [3.0, 3.0, 9.0]])
    close(nb.var(x, 1, correction=0), [1.5555556, 8.0])
    close(nb.std(x), 2.8047578)
    assert math.isnan(nb.var(t([1.0]), 0).item())  # N - correction = 0
    assert math.isinf(nb.var(t([1.0, 2.0, 3.0]), correction=5).item())


def test_std_gradient_of_constant_input_is_zero():
    close(grad_of(lambda a: nb.std(a, 1).sum(), np.full((2, 3), 1.5)), np.zeros((2, 3)))


def test_norm_gradients_at_zero_and_ties():
    close(grad_of(lambda a: nb.norm(a), np.zeros((2, 3))), np.zeros((2, 3)))
    close(grad_of(lambda a: nb.norm(a, "fro", (0, 1)), np.zeros((2, 3))), np.zeros((2, 3)))
    close(grad_of(lambda a: nb.norm(a, INF, 1).sum(), [[1.0, -3.0, 3.0], [0.0, 0.0, 0.0]]), [[0, -0.5, 0.5], [0, 0, 0]])
    close(grad_of(lambda a: nb.norm(a, 1, 1).sum(), [[1.0, -3.0, 0.0], [0.0, 0.0, 0.0]]), [[1, -1, 0], [0, 0, 0]])


def test_norm_values():
    close(nb.norm(t([[3.0, -4.0], [1.0, 2.0]]), 3, 1), [4.4979415, 2.0800838])
    close(nb.norm(t([[3.0, -4.0], [0.0, 2.0]]), 0, 1), [2.0, 1.0])
    close(nb.norm(t([[3.0, -4.0], [0.0, 2.0]]), -INF, 1), [3.0, 0.0])
    close(nb.norm(t([[3.0, -4.0]]), None), 5.0)


# -- logsumexp and softmax ---------------------------------------------------------------------
def test_logsumexp_with_minus_inf_entries():
    x = t([[-INF, 0.0, 1.0], [-INF, -INF, -INF]])
    out = nb.logsumexp(x, 1).numpy()
    close(out[0], 1.3132616)
    assert out[1] == -INF
    g = nb.grad(lambda a: nb.logsumexp(a, 1)[0])(x).numpy()
    close(g[0], [0.0, 0.26894143, 0.7310586])


def test_logsumexp_of_huge_values_is_finite_and_empty_is_minus_inf():
    close(nb.logsumexp(t([1000.0, 1000.0]), 0), 1000.0 + math.log(2.0))
    close(nb.logsumexp(t([-1000.0, -1000.0]), 0), -1000.0 + math.log(2.0))
    assert nb.logsumexp(nb.zeros(0, 2), 0).tolist() == [-INF, -INF]
    assert nb.logsumexp(t([[1, 2]], np.int64), 1).dtype == nb.float32
    assert nb.logsumexp(t(3.0)).item() == 3.0
    assert nb.logsumexp(t([INF, 0.0]), 0).item() == INF
    close(nb.logsumexp(t([[1.0, 2.0], [3.0, 4.0]]), (0, 1), keepdims=True), [[math.log(np.exp([1, 2, 3, 4]).sum())]])


def test_softmax_huge_logits_have_exact_values_and_gradients():
    x = [1000.0, 0.0, -1000.0]
    w = t([1.0, 2.0, 3.0])
    close(nb.softmax(t(x), 0), [1.0, 0.0, 0.0])
    close(grad_of(lambda a: (nb.softmax(a, 0) * w).sum(), x), [0.0, 0.0, 0.0])
    close(nb.log_softmax(t(x), 0), [0.0, -1000.0, -2000.0])
    close(grad_of(lambda a: (nb.log_softmax(a, 0) * w).sum(), x), [-5.0, 2.0, 3.0])


def test_softmax_of_scalar_and_minus_inf():
    assert nb.softmax(t(3.0)).item() == 1.0
    assert nb.log_softmax(t(3.0), 0).item() == 0.0
    out = nb.softmax(t([[-INF, 0.0], [-INF, -INF]]), 1).numpy()
    close(out[0], [0.0, 1.0])
    assert np.isnan(out[1]).all()  # as torch: an all -inf row has no distribution


def test_softmax_second_derivative_matches_the_hessian_of_logsumexp():
    x = np.array([0.3, -1.2, 2.0])
    s = np.exp(x) / np.exp(x).sum()
    hess = np.stack(
        [
            nb.grad(lambda a, e=e: (nb.grad(lambda b: nb.logsumexp(b, 0))(a) * nb.tensor(e)).sum())(
                nb.tensor(x)
            ).numpy()
            for e in np.eye(3)
        ]
    )
    np.testing.assert_allclose(hess, np.diag(s) - np.outer(s, s), rtol=1e-12, atol=1e-12)


# -- any / all ---------------------------------------------------------------------------------
def test_any_all_semantics():
    x = t([[0.0, np.nan], [0.0, 0.0]])
    assert nb.any(x, 1).tolist() == [True, False]
    assert nb.all(x).tolist() is False
    assert nb.all(nb.zeros(0, 3), 0).tolist() == [True, True, True]
    assert nb.any(nb.zeros(0, 3), 0).tolist() == [False, False, False]
    assert nb.any(t([[1, 0]], np.int32), 1, keepdims=True).shape == (1, 1)
    assert nb.all(t([True, True], np.bool_)).dtype == nb.bool_


# -- sorting -----------------------------------------------------------------------------------
def test_sort_is_stable_both_ways_and_values_are_differentiable():
    x = [3.0, 1.0, 3.0, 2.0, 1.0, 3.0]
    v, i = nb.sort(t(x), descending=True)
    assert v.tolist() == [3, 3, 3, 2, 1, 1] and i.tolist() == [0, 2, 5, 3, 1, 4]
    assert nb.argsort(t(x)).tolist() == [1, 4, 3, 0, 2, 5]
    w = t([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    close(grad_of(lambda a: (nb.sort(a, descending=True).values * w).sum(), x), [0, 4, 1, 3, 5, 2])


def test_topk_values_indices_and_gradient():
    x = [[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]]
    v, i = nb.topk(t(x), 2, 0)
    assert v.tolist() == [[4, 5, 6], [1, 2, 3]] and i.tolist() == [[1, 0, 1], [0, 1, 0]]
    close(grad_of(lambda a: nb.topk(a, 1, 1, largest=False).values.sum(), x), [[1, 0, 0], [0, 1, 0]])
    r = nb.topk(t(x), 1)
    assert r.values.shape == (2, 1) and r.indices.dtype == nb.int64


def test_sort_of_scalar_bool_and_int():
    v, i = nb.sort(t(2.0))
    assert v.shape == () and i.item() == 0
    v, i = nb.sort(t([True, False, True], np.bool_), descending=True)
    assert v.tolist() == [True, True, False] and i.tolist() == [0, 2, 1]
    assert nb.sort(t([[4, -2, 4]], np.int64), 1).values.dtype == nb.int64


def test_sort_jvp_and_double_backward_build_valid_max_graphs():
    """sort_gather runs in the JVP and in the second derivative; MAX must agree on its shapes."""
    nb.set_eager_max_graph(True, verify_shapes=True)
    try:
        x = nb.tensor(np.random.default_rng(1).normal(size=(2, 5, 3)))
        _, tangent = nb.jvp(lambda a: nb.topk(a, 2, 1).values, (x,), (nb.ones_like(x),))
        assert tangent.shape == (2, 2, 3)

        def g(a):
            return nb.grad(lambda b: (nb.sort(b, 1).values ** 3).sum())(a).sum()

        second = nb.grad(g)(x)
    finally:
        nb.set_eager_max_graph(False, verify_shapes=False)
    np.testing.assert_allclose(tangent.numpy(), np.ones((2, 2, 3)))
    np.testing.assert_allclose(second.numpy(), 6 * x.numpy(), rtol=1e-12)


# -- Tensor methods and PyTorch keyword names --------------------------------------------------
def test_tensor_methods_reach_the_ops():
    x = t([[1.0, 2.0, 4.0], [3.0, 3.0, 9.0]])
    close(x.prod(1, keepdim=True), [[8.0], [81.0]])
    close(x.var(1, correction=0), [1.5555556, 8.0])
    close(x.std(1, unbiased=False), np.sqrt([1.5555556, 8.0]))
    close(x.logsumexp(0), np.log(np.exp([[1, 2, 4], [3, 3, 9]]).sum(0)))
    assert x.any().item() is True and x.all(1).tolist() == [True, True]
    close(x.norm(1, 1), [7.0, 15.0])
    close(x.cumsum(1), [[1, 3, 7], [3, 6, 15]])
    close(x.cumprod(0), [[1, 2, 4], [3, 6, 36]])
    close(x.softmax(0).sum(0), [1, 1, 1])
    close(x.log_softmax(1).exp().sum(1), [1, 1])
    assert x.sort(descending=True).indices.tolist() == [[2, 1, 0], [2, 0, 1]]
    assert x.argsort(0).tolist() == [[0, 0, 0], [1, 1, 1]]
    assert x.topk(1).values.tolist() == [[4.0], [9.0]]
    values, indices = x.max(1)
    assert values.tolist() == [4.0, 9.0] and indices.tolist() == [2, 2]


def test_pytorch_keyword_names():
    x = t([[1.0, 2.0, 4.0], [3.0, 3.0, 9.0]])
    assert nb.prod(x, dim=1, keepdim=True).shape == (2, 1)
    assert nb.var(x, dim=1, correction=0, keepdim=True).shape == (2, 1)
    assert nb.softmax(x, dim=0).shape == (2, 3)
    assert nb.cumsum(x, dim=0).tolist() == [[1, 2, 4], [4, 5, 13]]
    assert nb.sort(input=x, dim=0, descending=True).values.tolist() == [[3, 3, 9], [1, 2, 4]]
    assert nb.topk(x, 2, dim=1).indices.tolist() == [[2, 1], [2, 0]]
    assert nb.norm(x, p=INF, dim=1, keepdim=True).shape == (2, 1)


# -- errors name the op, the argument and the values -------------------------------------------
@pytest.mark.parametrize(
    "call, err, message",
    [
        (lambda x: nb.prod(x, 2), ValueError, "prod: dim=2 is out of range for a tensor of rank 2"),
        (lambda x: nb.any(x, (1, -1)), ValueError, "any: dim (1, -1) names an axis twice"),
        (lambda x: nb.var(x.astype(nb.int64)), TypeError, "var: expected a floating-point tensor, got dtype int64"),
        (lambda x: nb.std(x, correction="one"), TypeError, "std: correction must be a number, got 'one'"),
        (lambda x: nb.norm(x, "nuc"), ValueError, "norm: p='nuc' is not supported"),
        (lambda x: nb.norm(x.reshape(1, 2, 3), "fro", (0, 1, 2)), ValueError, "norm: p='fro' takes at most 2 dims"),
        (lambda x: nb.norm(x, [2]), TypeError, "norm: p must be a number or 'fro', got [2]"),
        (lambda x: nb.norm(nb.zeros(0, 3), INF, 0), ValueError, "norm: p=inf cannot reduce"),
        (lambda x: nb.cumsum(x, (0,)), TypeError, "cumsum: dim must be an int, got (0,)"),
        (lambda x: nb.cumprod(x, -3), ValueError, "cumprod: dim=-3 is out of range for a tensor of rank 2"),
        (lambda x: nb.cumsum(nb.tensor(1.0), 1), ValueError, "cumsum: dim=1 is out of range for a tensor of rank 0"),
        (lambda x: nb.softmax(x.astype(nb.int32)), TypeError, "softmax: expected a floating-point tensor"),
        (lambda x: nb.log_softmax(x, 2), ValueError, "log_softmax: dim=2 is out of range for a tensor of rank 2"),
        (lambda x: nb.topk(x, 4), ValueError, "topk: k=4 is out of range for dim -1 of size 3"),
        (lambda x: nb.topk(x, 1.0), TypeError, "topk: k must be an int, got 1.0"),
        (lambda x: nb.sort([1.0, 2.0]), TypeError, "sort: x must be a Tensor, got list"),
        (lambda x: nb.argsort(x, 5), ValueError, "argsort: dim=5 is out of range for a tensor of rank 2"),
        (lambda x: nb.logsumexp(x, 1.0), TypeError, "logsumexp: dim must be an int or a tuple of ints"),
    ],
)
def test_errors(call, err, message):
    with pytest.raises(err) as info:
        call(t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    assert message in str(info.value)


# -- PyTorch parity: half accumulation, dim=() ---------------------------------------------------
@needs_torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_reductions_accumulate_in_float32(dtype):
    # float16 sums of squares overflow, a count above 65504 is inf, 5000 ones sum to 2048
    data = (np.random.default_rng(0).random(1000) * 100).astype(np.float32)
    x, ref = nb.tensor(data).astype(dtype), torch.tensor(data).to(getattr(torch, dtype))
    for f in (lambda a: a.var(), lambda a: a.std(), lambda a: a.norm(), lambda a: a.mean(), lambda a: a.sum()):
        got, want = f(x), f(ref)
        assert got.dtype == getattr(nb, dtype)
        np.testing.assert_allclose(got.astype(nb.float32).numpy(), want.float().numpy(), rtol=1e-2)
    big = nb.full((70000,), 0.5, dtype=dtype)
    assert big.mean().item() == 0.5 and big.var(correction=0).item() == 0.0
    assert nb.ones(5000, dtype=dtype).sum().item() == torch.ones(5000, dtype=getattr(torch, dtype)).sum().item()
    tdt = getattr(torch, dtype)  # running sums and products too (a float16 cumsum of ones stalled at 2048)
    assert nb.cumsum(nb.ones(5000, dtype=dtype), 0)[-1].item() == torch.ones(5000, dtype=tdt).cumsum(0)[-1].item()
    got = nb.cumprod(nb.full((30,), 1.1, dtype=dtype), 0)
    assert got.dtype == getattr(nb, dtype)
    assert got[-1].item() == torch.full((30,), 1.1, dtype=tdt).cumprod(0)[-1].item()


@needs_torch
@pytest.mark.parametrize("dim", [(), []])
def test_empty_dim_reduces_every_dim_as_torch(dim):
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    x, ref = nb.tensor(data), torch.tensor(data)
    for expr in ["sum", "mean", "amax", "amin", "var", "std", "count_nonzero", "any", "all", "norm"]:
        for kw in [{}, {"keepdim": True}] if expr not in ("count_nonzero", "norm") else [{}]:
            got = getattr(x, expr)(dim=dim, **kw) if expr == "norm" else getattr(x, expr)(dim, **kw)
            want = getattr(ref, expr)(dim=dim, **kw) if expr == "norm" else getattr(ref, expr)(dim, **kw)
            assert got.shape == tuple(want.shape), expr
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.logsumexp(dim, keepdim=True).numpy(), ref.logsumexp(dim, keepdim=True).numpy())
    with pytest.raises(RuntimeError, match="output with shape"):  # as torch 2.13
        ref.logsumexp(dim)
    with pytest.raises(RuntimeError, match="logsumexp: output with shape"):
        x.logsumexp(dim)
    assert nb.tensor(2.0).logsumexp(dim).item() == 2.0
    assert nb.sum(x, axis=()).shape == (2, 3)  # the NumPy-style function: axis=() reduces nothing


def test_max_of_a_nan_sends_the_gradient_to_the_nan():
    for reduce in (lambda t: t.max(), lambda t: t.min(), lambda t: t.amax(0)):
        x = nb.tensor([1.0, float("nan"), 3.0], requires_grad=True)
        reduce(x).backward()
        assert x.grad.tolist() == [0.0, 1.0, 0.0]  # torch's max()/min() (evenly_distribute_backward)
    x = nb.tensor([[1.0, 5.0, 5.0]], requires_grad=True)
    x.amax(1).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.5, 0.5]]  # ties share it


def test_norm_below_one_has_zero_gradient_at_zero_entries():
    x = nb.tensor([[0.0, 1.0, -2.0]], requires_grad=True)
    nb.norm(x, 0.3).backward()
    g = x.grad.numpy()
    assert g[0, 0] == 0.0 and np.isfinite(g).all()  # torch: 0 (it was nan: inf * 0)
    np.testing.assert_allclose(g[0, 1:], [6.5047593, -4.004149], rtol=1e-5)  # torch 2.13


def test_half_precision_softmax_computes_in_float32():
    # As torch: over 70000 entries the float16 sum of exp was inf and every probability 0.
    out = nb.softmax(nb.zeros(2, 70000, dtype=nb.float16), 1)
    assert out.dtype == nb.float16
    np.testing.assert_allclose(out[:, :3].numpy().astype(np.float32), np.float16(1 / 70000), rtol=1e-3)
    x = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    want = nb.softmax(nb.tensor(x), 1).numpy().astype(np.float16)  # float32, rounded once
    np.testing.assert_array_equal(
        nb.softmax(nb.tensor(x).half(), 1).numpy(),
        nb.softmax(nb.tensor(x.astype(np.float16).astype(np.float32)), 1).numpy().astype(np.float16),
    )
    assert np.abs(want.astype(np.float32) - nb.softmax(nb.tensor(x).half(), 1).numpy()).max() < 2e-3

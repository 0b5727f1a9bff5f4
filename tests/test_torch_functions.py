"""torch's top-level functions under their torch names (nabla/torch_functions.py, torch_calculus.py): each expression
runs in nabla and in torch (where installed) and the results must agree; NumPy-checked
expectations and errors everywhere; gradients through the composites."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb

A = np.array([[0.5, -1.5, 2.25, 3.0], [-0.75, 1.0, -2.5, 0.25], [4.0, -3.5, 0.0, 1.5]], np.float32)
B = np.array([[1.0, 0.5, -2.0], [0.25, -1.0, 3.0], [2.0, 2.0, -0.5], [0.0, 1.5, 1.0]], np.float32)
SEQ = np.array([-2.0, -0.5, 0.0, 0.25, 1.0, 3.0], np.float32)

# expressions in both libraries; a, b, s: tensors of A, B, SEQ; T: the library
EXPRESSIONS = """T.mm(a, b)
T.bmm(T.stack([a, a]), T.stack([b, b]))
T.clone(a)
T.lerp(a, T.zeros_like(a), 0.25)
T.median(a)
T.median(a, 1)
T.kthvalue(a, 2, 0)
T.argwhere(a)
T.nonzero(a)
T.narrow(a, 1, 1, 2)
T.select(a, 0, 2)
T.masked_select(a, a > 0.3)
T.count_nonzero(a, 1)
T.diff(a, 1, 1)
T.diff(a, 2, 0, prepend=a[:1])
T.dist(a, T.zeros_like(a), 3)
T.frac(a)
T.rsub(a, 2.0, alpha=3)
T.atleast_1d(a[0, 0])
T.atleast_2d(a[0])
T.atleast_3d(a[0])
T.atleast_3d(a)
T.broadcast_tensors(a, a[:1], a[:, :1])
T.hstack([a, b.T])
T.hstack([a[0], a[1]])
T.vstack([a, a[0]])
T.row_stack([a[0], a[1]])
T.dstack([a, a])
T.column_stack([a[:, 0], a])
T.block_diag(a, b, a[0], a[0, 0])
T.cartesian_prod(s[:3], a[0], s[:2])
T.cdist(a, b.T)
T.cdist(a, b.T, p=1.0)
T.cdist(T.stack([a, a]), T.stack([b.T, b.T]), p=3.0)
T.searchsorted(s, a)
T.searchsorted(s, a, right=True)
T.searchsorted(T.stack([s, s, s]), a, side="right")
T.bucketize(a, s)
T.bucketize(a, s, right=True, out_int32=True)
T.isin(a, s)
T.isin(a, s, invert=True)
T.std_mean(a, 1)
T.var_mean(a, correction=0)
T.std_mean(a, unbiased=False)
T.var_mean(a, 1, False, True)
T.std(a, 0, False)
T.var(a, 1, True, True)
T.var(a, False)
T.trapezoid(a)
T.trapezoid(a, dx=0.5, dim=0)
T.trapezoid(a, s[:4])
T.trapz(a, b.T)
T.cumulative_trapezoid(a)
T.cumulative_trapezoid(a, s[:3], dim=0)
T.trapezoid(a[:, :0])
T.trapezoid(a[:, :0], dx=2.0)
T.cumulative_trapezoid(a[:, :0])
T.hann_window(8)
T.hann_window(7, periodic=False)
T.hamming_window(6)
T.blackman_window(9, False)
T.bartlett_window(7)
T.bartlett_window(1)
T.hann_window(1)
T.atleast_2d(a[0, 0])
T.atleast_3d(a[0, 0])
T.atleast_1d(a[0], a)
T.kaiser_window(10, True, 5.0)
T.scalar_tensor(3)
T.index_reduce(a, 0, T.tensor([0, 2, 0, 1]), T.cat([a, a[:1]]) * 0.5, "prod")
T.index_reduce(a, 1, T.tensor([3, 3, 0]), a[:, :3] + 1, "mean", include_self=False)
a.index_reduce(0, T.tensor([1, 1, 2, 0]), T.cat([a, a[:1]]) - 1, "amax")
T.index_put(a, (T.tensor([0, 0, 2]),), a[:3] * 2, accumulate=True)
T.index_put(a, (T.tensor([1, 2]), T.tensor([0, 3])), T.tensor([7.0, 8.0]))
T.scatter(a, 1, T.tensor([[2, 0], [1, 1], [0, 3]]), value=-1.5)
a.clone().index_reduce_(0, T.tensor([2, 2, 2, 2]), T.cat([a, a[:1]]), "amin", include_self=False)
T.histogram(a, 4)
T.histogram(a, 3, range=(-1.0, 2.0), weight=T.ones_like(a) * 2, density=True)
T.histogram(a, s, weight=a.abs())
T.histogram(T.tensor([5.0, 5.0]), 2)
a.histogram(s[:3], density=True)
T.frexp(a)
T.frexp(a.double() * 1e-310)
a.frexp()
T.prelu(a, T.tensor([0.25]))
T.prelu(T.stack([a, -a], 1), T.tensor([0.1, 0.2]))
a.prelu(T.tensor([0.5]))
T.unique_consecutive(T.tensor([1, 1, 2, 2, 3, 1, 1, 2]), True, True)
T.unique_consecutive(T.tensor([[1, 1], [1, 1], [2, 0], [1, 1]]), return_counts=True, dim=0)
T.tensor([3, 3, 1]).unique_consecutive()
T.as_tensor([1.5, 2.0])
T.t(a)
T.t(a[0])
T.swapdims(a, 0, 1)
T.adjoint(T.stack([a, a]))
T.inverse(a[:, :3] + T.eye(3) * 4)
T.frobenius_norm(a, (0, 1))
T.frobenius_norm(a, [1], True)
T.nuclear_norm(a)
T.nuclear_norm(a, True)
T.clamp_min(a, 0.3)
T.clamp_max(a, -0.3)
T.split_with_sizes(a, [1, 3], 1)
T.fill(a, 2.5)
T.fill(a, T.tensor(1.5))
T.tril_indices(3, 4, 1)
T.triu_indices(3, 3, -1)
T.tril_indices(4, 2, -1, dtype=T.int32)
T.unravel_index(T.tensor([5, 7, 11]), (3, 4))
T.unravel_index(T.tensor([[0, 23], [9, 4]]), (2, 3, 4))
T.combinations(a[0], 2)
T.combinations(a[0], 3, True)
T.combinations(a[0], 0)
T.combinations(a[0], 5)
T.linalg.cholesky_ex(a[:, :3] @ a[:, :3].T + T.eye(3))
T.linalg.cholesky_ex(T.stack([a[:, :3] @ a[:, :3].T + T.eye(3), -T.eye(3)])).info
T.linalg.inv_ex(a[:, :3] + T.eye(3) * 4)
T.linalg.inv_ex(T.stack([a[:, :3] + T.eye(3) * 4, T.zeros(3, 3)])).info
T.linalg.solve_ex(a[:, :3] + T.eye(3) * 4, a)
T.linalg.lu_factor_ex(a[:, :3] + T.eye(3) * 4)
T.linalg.tensorinv(T.kron(a[:, :3] + T.eye(3) * 4, T.eye(2)).reshape(3, 2, 6), 2)
T.gradient(a)
T.gradient(a, spacing=2.0, dim=1, edge_order=2)
T.gradient(a, spacing=(T.tensor([0.0, 1.0, 3.0]),), dim=0)
T.gradient(a, spacing=[2.0, 0.5])
T.gradient(a, spacing=(T.tensor([0.0, 1.0, 3.0]), T.tensor([0.0, 0.5, 2.0, 2.5])), edge_order=2)
T.gradient(s, edge_order=2)
T.linalg.tensorsolve(T.kron(a[:, :3] + T.eye(3) * 4, T.eye(2)).reshape(3, 2, 6), a[:, :2])
T.add(a, b.T[:3], alpha=2)
T.sub(a, 1.5, alpha=-2)
T.nonzero(a[0, 0])
T.nonzero(a[0, 0] * 0)
T.nonzero(a[0, 0], as_tuple=True)
T.repeat_interleave(T.tensor([1, 0, 2]))
T.repeat_interleave(a, 2, 0, output_size=6)
T.arange(T.tensor(4))
T.full((2, 3), a[0, 0])
T.full((2,), T.tensor(3))
T.cat([a, T.tensor([])])
T.cat([T.tensor([]), a.int()])
T.tensor([7], dtype=T.int32) + 2**40
T.tensor([7], dtype=T.int32) * (2**31 + 5)
T.vander(s[:3])
T.vander(s[:3], N=4, increasing=True)
T.searchsorted(s, T.tensor([float("nan"), 0.5]))
T.bucketize(T.tensor([float("nan"), 0.5]), s, right=True)
T.copysign(a.half(), -1)
T.linalg.matrix_rank(T.stack([a[:, :3], a[:, 1:], a[:, :3] * 0]), atol=T.tensor([0.1, 5.0, 100.0]))
T.linalg.pinv(T.stack([a[:, :3], a[:, 1:]]), rtol=T.tensor([0.1, 0.9]))
T.sum(a.int(), 1, dtype=T.float64)
T.mean(a, dim=0, dtype=T.float64)
T.prod(a, 1, dtype=T.float64)
T.cumsum(a, 1, dtype=T.float64)
T.cumprod(a.int(), 0, dtype=T.float32)
T.softmax(a, 1, dtype=T.float64)
T.log_softmax(a, 0, dtype=T.float64)
T.linalg.vector_norm(a, 2, dtype=T.float64)
T.std(a, 1, unbiased=False)
T.var(a, unbiased=True)"""


def _run(lib, expr: str):
    return eval(expr, {"T": lib, "a": lib.tensor(A), "b": lib.tensor(B), "s": lib.tensor(SEQ)})  # noqa: S307


def _np(v) -> np.ndarray:
    return np.asarray(v.detach().numpy() if hasattr(v, "detach") else v.numpy())


def _same(ours, ref) -> None:
    if isinstance(ref, tuple | list):
        assert len(ours) == len(ref)
        for o, r in zip(ours, ref, strict=True):
            _same(o, r)
        return
    assert tuple(ours.shape) == tuple(ref.shape)
    assert str(_np(ours).dtype) == str(_np(ref).dtype).replace("torch.", "")
    np.testing.assert_allclose(_np(ours), _np(ref), rtol=1e-5, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("expr", EXPRESSIONS.splitlines())
def test_function_matches_torch(expr: str):
    _same(_run(nb, expr), _run(torch, expr))


def test_values_without_torch():
    a, b, s = nb.tensor(A), nb.tensor(B), nb.tensor(SEQ)
    np.testing.assert_allclose(nb.mm(a, b).numpy(), A @ B, rtol=1e-6)
    assert nb.median(a).item() == np.sort(A.ravel())[(A.size - 1) // 2]
    np.testing.assert_array_equal(nb.searchsorted(s, a).numpy(), np.searchsorted(SEQ, A, "left"))
    np.testing.assert_array_equal(nb.bucketize(a, s, right=True).numpy(), np.searchsorted(SEQ, A, "right"))
    np.testing.assert_array_equal(nb.isin(a, s).numpy(), np.isin(A, SEQ))
    np.testing.assert_allclose(nb.cdist(a, b.T).numpy(), np.linalg.norm(A[:, None] - B.T[None], axis=-1), rtol=1e-6)
    np.testing.assert_allclose(nb.trapezoid(a, s[:4]).numpy(), np.trapezoid(A, SEQ[:4]), rtol=1e-6)
    np.testing.assert_allclose(nb.hann_window(8).numpy(), np.hanning(9)[:8], atol=1e-7)
    np.testing.assert_allclose(nb.kaiser_window(10, False, 5.0).numpy(), np.kaiser(10, 5.0), rtol=1e-6)
    np.testing.assert_allclose(nb.block_diag(a, b).numpy()[3:, 4:], B)
    assert nb.block_diag(a, b).shape == (7, 7)
    np.testing.assert_allclose(nb.hstack([a, b.T]).numpy(), np.hstack([A, B.T]))
    np.testing.assert_allclose(nb.vstack([a, a[0]]).numpy(), np.vstack([A, A[0]]))
    np.testing.assert_allclose(nb.dstack([a, a]).numpy(), np.dstack([A, A]))
    np.testing.assert_allclose(nb.column_stack([a[:, 0], a]).numpy(), np.column_stack([A[:, 0], A]))
    np.testing.assert_allclose(nb.cartesian_prod(s[:2], s[:3]).numpy(), [[x, y] for x in SEQ[:2] for y in SEQ[:3]])
    std, mean = nb.std_mean(a, 1)
    np.testing.assert_allclose(std.numpy(), A.std(1, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(mean.numpy(), A.mean(1), rtol=1e-6)
    assert nb.is_tensor(a) and not nb.is_tensor(A) and nb.is_floating_point(a) and nb.numel(a) == 12
    assert nb.allclose(a, a + 1e-9) and not nb.allclose(a, a + 1)
    assert nb.as_tensor(a) is a and nb.as_tensor(a, dtype=nb.float64).dtype == nb.float64
    r = nb.randint_like(a, 3, 7)
    assert r.shape == a.shape and r.dtype == a.dtype and 3 <= r.numpy().min() and r.numpy().max() < 7


def test_multinomial_draws_follow_the_weights():
    nb.manual_seed(0)
    w = nb.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 1.0, 1.0]])
    draws = nb.multinomial(w, 4000, replacement=True).numpy()
    assert draws.shape == (2, 4000) and draws.dtype == np.int64
    np.testing.assert_allclose(np.bincount(draws[0], minlength=4) / 4000, [0.1, 0.0, 0.6, 0.3], atol=0.03)
    np.testing.assert_allclose(np.bincount(draws[1], minlength=4) / 4000, [0.25] * 4, atol=0.03)
    once = nb.multinomial(w, 3).numpy()  # without replacement: distinct, never a zero weight
    assert all(len(set(row)) == 3 for row in once) and 1 not in once[0]
    firsts = np.array([nb.tensor([0.1, 0.0, 0.6, 0.3]).multinomial(1).item() for _ in range(400)])
    np.testing.assert_allclose(np.bincount(firsts, minlength=4) / 400, [0.1, 0.0, 0.6, 0.3], atol=0.08)
    with pytest.raises(ValueError, match="multinomial: cannot draw 5 samples without replacement from 4 categories"):
        nb.multinomial(w, 5)


def test_gradients_flow_through_the_composites():
    a = nb.tensor(A.astype(np.float64))
    g = nb.grad(lambda x: nb.cdist(x, x).sum())(a).numpy()
    assert np.all(np.isfinite(g))  # zero distances on the diagonal: gradient 0, not nan
    d = A[:, None].astype(np.float64) - A[None]
    n = np.linalg.norm(d, axis=-1)
    want = 2 * np.sum(np.divide(d, n[..., None], out=np.zeros_like(d), where=n[..., None] > 0), axis=1)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    g = nb.grad(lambda x: nb.trapezoid(x, dx=0.5).sum())(a).numpy()
    np.testing.assert_allclose(g, np.tile([0.25, 0.5, 0.5, 0.25], (3, 1)))
    g = nb.grad(lambda x: nb.block_diag(x, x[0]).sum())(a).numpy()
    np.testing.assert_allclose(g, np.vstack([np.full(4, 2.0), np.ones((2, 4))]))


def test_errors_name_the_argument():
    a = nb.tensor(A)
    with pytest.raises(TypeError, match="hstack: tensors must be a list or tuple of Tensors, got Tensor"):
        nb.hstack(a)
    with pytest.raises(ValueError, match=r"block_diag: tensors\[0\] must have at most 2 dims, got shape \(1, 3, 4\)"):
        nb.block_diag(a[None])
    with pytest.raises(ValueError, match=r"cdist: x1 \(3, 4\) and x2 \(3, 3\) must be \(..., P, M\) and \(..., R, M\)"):
        nb.cdist(a, nb.tensor(B.T[:, :3].copy()).T)
    with pytest.raises(ValueError, match="searchsorted: side must be 'left' or 'right', got 'up'"):
        nb.searchsorted(nb.tensor(SEQ), a, side="up")
    with pytest.raises(ValueError, match=r"bucketize: boundaries must be 1-D, got shape \(3, 4\)"):
        nb.bucketize(a, a)
    with pytest.raises(ValueError, match=r"cartesian_prod: tensors\[1\] must be 1-D, got shape \(3, 4\)"):
        nb.cartesian_prod(nb.tensor(SEQ), a)
    with pytest.raises(ValueError, match="hann_window: window_length must be a non-negative int, got -1"):
        nb.hann_window(-1)
    with pytest.raises(TypeError, match="mm: input must be a Tensor, got str"):
        nb.mm("a", a)


def test_dtype_limits_and_predicates():
    assert nb.finfo(nb.float16).eps == 2.0**-10 and nb.finfo(nb.float16).max == 65504.0
    assert nb.finfo(nb.bfloat16).eps == 2.0**-7 and nb.finfo().dtype == "float32"
    assert nb.finfo(nb.float64).resolution == 1e-15 and nb.finfo(nb.float32).tiny == np.finfo(np.float32).tiny
    assert (nb.iinfo(nb.int32).min, nb.iinfo(nb.int64).max) == (-(2**31), 2**63 - 1)
    with pytest.raises(TypeError, match="iinfo for integers"):
        nb.finfo(nb.int32)
    assert nb.can_cast(nb.int32, nb.float16) and nb.can_cast(nb.bool_, nb.int64)
    assert not nb.can_cast(nb.float32, nb.int64) and not nb.can_cast(nb.int32, nb.bool_)
    assert nb.is_signed(nb.tensor([1])) and not nb.is_signed(nb.tensor([True])) and not nb.is_complex(nb.tensor([1.0]))
    assert nb.get_default_dtype() == nb.float32
    assert nb.is_same_size(nb.tensor(A), nb.tensor(A + 1)) and not nb.is_same_size(nb.tensor(A), nb.tensor(B))
    a = nb.tensor(A)
    assert nb.conj(a) is a and nb.resolve_conj(a) is a and nb.resolve_neg(a) is a and nb.real(a) is a
    with pytest.raises(ValueError, match="at most 2 dimensions"):
        nb.t(nb.zeros(2, 2, 2))


def test_rng_state_round_trips_and_inference_mode_is_no_grad():
    nb.manual_seed(7)
    assert nb.initial_seed() == 7
    state = nb.get_rng_state()
    first = nb.rand(5).numpy()
    nb.set_rng_state(state)
    np.testing.assert_array_equal(nb.rand(5).numpy(), first)
    fresh = nb.seed()
    assert nb.initial_seed() == fresh
    x = nb.tensor([1.0], requires_grad=True)
    with nb.inference_mode():
        assert not (x * 2).requires_grad and nb.is_inference_mode_enabled()
    with nb.inference_mode(False):
        assert (x * 2).requires_grad and not nb.is_inference_mode_enabled()

    @nb.inference_mode()
    def predict(v):
        return v * 3

    assert not predict(x).requires_grad


def test_ex_variants_report_failures_without_raising_and_raise_when_asked():
    spd = nb.tensor(A[:, :3] @ A[:, :3].T + np.eye(3, dtype=np.float32))
    not_pd = nb.tensor(np.array([[1.0, 2.0], [2.0, 1.0]], np.float32))
    assert nb.linalg.cholesky_ex(spd).info.item() == 0
    assert nb.linalg.cholesky_ex(not_pd).info.item() == 2
    with pytest.raises(RuntimeError, match="not positive-definite"):
        nb.linalg.cholesky_ex(not_pd, check_errors=True)
    singular = nb.tensor(np.array([[1.0, 2.0], [2.0, 4.0]], np.float32))
    assert nb.linalg.inv_ex(singular).info.item() == 2
    with pytest.raises(RuntimeError, match="singular"):
        nb.linalg.solve_ex(singular, nb.ones(2, 1), check_errors=True)
    # tensorinv inverts for tensordot: tensordot(tensorinv(T, 2), T, 2) is the identity
    t = nb.tensor(np.kron(A[:, :3] + 4 * np.eye(3, dtype=np.float32), np.eye(2, dtype=np.float32)).reshape(3, 2, 6))
    ident = np.tensordot(nb.linalg.tensorinv(t, 2).numpy(), t.numpy(), 2)
    np.testing.assert_allclose(ident, np.eye(6, dtype=np.float32), atol=1e-5)
    with pytest.raises(ValueError, match="product of the first 1 dims"):
        nb.linalg.tensorinv(t, 1)


def test_new_composites_differentiate():
    a = nb.tensor(A, requires_grad=True)
    (nb.combinations(a[0], 2).sum() + nb.frobenius_norm(a, (0, 1)) + nb.clamp_min(a, 0.0).sum()).backward()
    fro = A / np.linalg.norm(A)
    counts = np.zeros_like(A)
    counts[0] = A.shape[1] - 1  # each element of a row appears in n - 1 pairs
    np.testing.assert_allclose(a.grad.numpy(), fro + counts + (A >= 0), rtol=1e-5, atol=1e-6)  # torch: 1 at the bound


def test_orthogonal_polynomials_read_tensor_degrees_and_bound_them():
    x = nb.tensor(np.array([0.25, -0.5, 2.0], np.float32))
    n = nb.tensor(np.array([3, 0, 2]))
    # T_3(0.25) = 4 x^3 - 3 x, T_0 = 1, T_2(2) = 2 x^2 - 1
    np.testing.assert_allclose(nb.chebyshev_polynomial_t(x, n).numpy(), [4 * 0.25**3 - 0.75, 1.0, 7.0], rtol=1e-6)
    np.testing.assert_allclose(nb.chebyshev_polynomial_t(x, nb.tensor([3.9, 0.2, 2.5])).numpy(), [-0.6875, 1.0, 7.0])
    assert nb.legendre_polynomial_p(x, -1).numpy().tolist() == [0.0, 0.0, 0.0]
    assert np.isnan(nb.hermite_polynomial_h(x, 129).numpy()).all()  # PyTorch's float32 limit
    with pytest.raises(ValueError, match="degree 2000 is above"):
        nb.legendre_polynomial_p(x, 2000)
    with pytest.raises(TypeError, match="n must be a number or a tensor"):
        nb.laguerre_polynomial_l(x, "3")
    xg = nb.tensor(np.array([0.3, -0.6], np.float32), requires_grad=True)
    nb.legendre_polynomial_p(xg, 3).sum().backward()  # P_3' = (15 x^2 - 3) / 2
    np.testing.assert_allclose(xg.grad.numpy(), (15 * np.array([0.3, -0.6]) ** 2 - 3) / 2, rtol=1e-5)


def test_gradient_matches_numpy_and_differentiates():
    x = np.array([0.0, 0.4, 1.0, 1.7, 3.0])
    f = np.sin(x).astype(np.float32)
    for order in (1, 2):
        (g,) = nb.gradient(nb.tensor(f), spacing=(nb.tensor(x.astype(np.float32)),), edge_order=order)
        np.testing.assert_allclose(g.numpy(), np.gradient(f, x, edge_order=order), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="needs at least 3"):
        nb.gradient(nb.tensor([1.0, 2.0]), edge_order=2)
    t = nb.tensor(f, requires_grad=True)
    nb.gradient(t)[0].sum().backward()  # a linear map: d sum / d f = the column sums of its matrix
    m = np.stack([np.gradient(np.eye(5)[k]) for k in range(5)])
    np.testing.assert_allclose(t.grad.numpy(), m.sum(axis=1), rtol=1e-6)


@pytest.mark.parametrize("name", ["eigvalsh", "svdvals", "nuc"])
def test_spectral_gradients_at_repeated_values_are_finite(name: str) -> None:
    """The vector terms of eigh/svd's derivative divide by value gaps; a caller of the values
    alone gets torch's finite gradient at repeated values (the identity, an orthogonal matrix)."""
    fns = {
        "eigvalsh": lambda L, x: L.linalg.eigvalsh(x).sum(),
        "svdvals": lambda L, x: (L.linalg.svdvals(x) ** 2).sum(),
        "nuc": lambda L, x: L.linalg.matrix_norm(x, "nuc"),
    }
    for matrix in (np.eye(3), np.diag([2.0, 2.0, 1.0])):
        x = nb.tensor(matrix, requires_grad=True)
        fns[name](nb, x).backward()
        assert np.isfinite(x.grad.numpy()).all()
        expected = {"eigvalsh": np.eye(3), "svdvals": 2 * matrix, "nuc": np.eye(3)}[name]
        np.testing.assert_allclose(x.grad.numpy(), expected, atol=1e-12)


def test_max_and_min_over_a_dim_return_values_and_indices_as_torch():
    """`nabla.max(q, 1)[0]` (a DQN target) took row 0 of the values: now (values, indices)."""
    q = nb.tensor([[1.0, 5.0], [7.0, 2.0], [0.0, 3.0]])
    np.testing.assert_array_equal(nb.max(q, 1)[0].numpy(), [5.0, 7.0, 3.0])
    np.testing.assert_array_equal(nb.max(q, dim=1).indices.numpy(), [1, 0, 1])
    values, indices = nb.min(q, 0, True)
    np.testing.assert_array_equal(values.numpy(), [[0.0, 2.0]])
    np.testing.assert_array_equal(indices.numpy(), [[2, 1]])
    np.testing.assert_array_equal(nb.max(q, axis=1).numpy(), [5.0, 7.0, 3.0])  # NumPy/JAX: values
    assert nb.max(q).item() == 7.0 and nb.min(q, axis=(0, 1), keepdims=True).shape == (1, 1)
    np.testing.assert_array_equal(nb.max(q, q * 2).numpy(), (q * 2).numpy())
    if torch is not None:
        t = torch.tensor(q.numpy())
        np.testing.assert_array_equal(nb.max(q, 1)[1].numpy(), torch.max(t, 1)[1].numpy())


def test_cdist_uses_one_matmul_for_many_rows_as_torch():
    """p=2 with more than 25 rows: |a|^2 + |b|^2 - 2 a b^T (memory P*R, not P*R*M), as torch's
    default compute_mode; the naive form otherwise or when asked."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((40, 8)).astype(np.float32), rng.standard_normal((30, 8)).astype(np.float32)
    want = np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1))
    for mode in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        np.testing.assert_allclose(nb.cdist(nb.tensor(a), nb.tensor(b), compute_mode=mode).numpy(), want, atol=2e-5)
    x = nb.tensor(a, requires_grad=True)
    nb.cdist(x, x).sum().backward()  # zero distances on the diagonal: finite gradients
    assert np.isfinite(x.grad.numpy()).all()
    with pytest.raises(ValueError, match="compute_mode must be one of"):
        nb.cdist(nb.tensor(a), nb.tensor(b), compute_mode="fast")
    if torch is not None:
        xt, xn = torch.tensor(a, requires_grad=True), nb.tensor(a, requires_grad=True)
        torch.cdist(xt, torch.tensor(b)).pow(2).sum().backward()
        nb.cdist(xn, nb.tensor(b)).pow(2).sum().backward()
        np.testing.assert_allclose(xn.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_torch_script_switches_and_legacy_tensor_methods():
    """The first lines of many training scripts, and legacy `x.new(...)` / `pin_memory()`."""
    nb.backends.cudnn.benchmark = True
    nb.backends.cuda.matmul.allow_tf32 = True
    nb.set_float32_matmul_precision("high")
    assert nb.get_float32_matmul_precision() == "high"
    nb.set_float32_matmul_precision("highest")
    with pytest.raises(ValueError, match="expected one of"):
        nb.set_float32_matmul_precision("low")
    x = nb.ones((2, 3), dtype=nb.float64)
    fresh = x.new(x.size()).normal_()  # (an old VAE's reparameterization)
    assert fresh.shape == (2, 3) and fresh.dtype == nb.float64
    assert x.new(4, 2).shape == (4, 2) and x.new([1, 2]).numpy().tolist() == [1.0, 2.0] and x.new().shape == (0,)
    assert x.pin_memory() is x and not x.is_pinned()


def test_set_default_dtype_reaches_factories_python_floats_and_layers():
    import nabla_nn as nn  # noqa: PLC0415 (the layer above nabla: only this test needs it)

    nb.set_default_dtype(nb.float64)
    try:
        made = [nb.zeros(2), nb.tensor([1.0, 2.0]), nb.tensor(1.5), nb.rand(2), nb.randn(2), nb.arange(0.0, 1.0, 0.5)]
        made += [nb.linspace(0, 1, 3), nb.eye(2), nb.full((2,), 1.5), nn.Linear(2, 3).weight, nn.LayerNorm(3).weight]
        assert all(t.dtype == nb.float64 for t in made) and nb.get_default_dtype() == nb.float64
        assert nb.arange(3).dtype == nb.int64
    finally:
        nb.set_default_dtype(nb.float32)
    assert nb.zeros(2).dtype == nb.float32
    with pytest.raises(TypeError, match="expected a floating dtype"):
        nb.set_default_dtype(nb.int32)


def test_legacy_constructors_size_and_seeding_spellings():
    assert nb.FloatTensor([1, 2]).dtype == nb.float32 and nb.LongTensor([1, 2]).dtype == nb.int64
    assert nb.FloatTensor(2, 3).shape == (2, 3) and nb.FloatTensor().shape == (0,)
    size = nb.ones(2, 3).size()
    assert isinstance(size, nb.Size) and size.numel() == 6 and size == (2, 3) and size[:-1] + (4,) == (2, 4)
    with pytest.raises(TypeError, match=r"use nabla.tensor\(data\)"):
        nb.Tensor([1.0, 2.0])
    nb.cuda.manual_seed_all(5)
    first = nb.rand(3).numpy()
    nb.cuda.manual_seed(5)
    np.testing.assert_array_equal(nb.rand(3).numpy(), first)
    nb.use_deterministic_algorithms(True)
    assert nb.are_deterministic_algorithms_enabled()
    nb.use_deterministic_algorithms(False)


def test_torch_func_and_autograd_functional_names():
    f = lambda x: (x**3).sum()  # noqa: E731
    x = nb.tensor([1.0, 2.0])
    grad, value = nb.func.grad_and_value(f)(x)
    assert value.item() == 9.0 and grad.tolist() == [3.0, 12.0]
    A = nb.autograd.functional
    assert A.jacobian(lambda t: t * t, x).tolist() == [[2.0, 0.0], [0.0, 4.0]]
    assert A.hessian(f, x).tolist() == [[6.0, 0.0], [0.0, 12.0]]
    out, g = A.vjp(f, x)
    assert out.item() == 9.0 and g.tolist() == [3.0, 12.0]
    assert A.jvp(lambda t: t * t, x, nb.ones(2))[1].tolist() == [2.0, 4.0]
    assert A.hvp(f, x, nb.ones(2))[1].tolist() == [6.0, 12.0]
    ja, jb = A.jacobian(lambda a, b: (a * b).sum(), (x, x * 2))
    assert ja.tolist() == [2.0, 4.0] and jb.tolist() == [1.0, 2.0]


def test_autograd_functional_results_are_detached_unless_create_graph_and_take_a_float32_v():
    """As torch: without create_graph the Jacobian, Hessian and products carry no autodiff
    history; with it, they do (second order through them); a float32 `v` works on float64."""
    A = nb.autograd.functional
    x = nb.tensor([1.0, 2.0], dtype=nb.float64, requires_grad=True)
    cube = lambda t: t**3  # noqa: E731
    assert not A.jacobian(cube, x).requires_grad and not A.hessian(lambda t: cube(t).sum(), x).requires_grad
    assert not any(r.requires_grad for r in A.vjp(cube, x, nb.ones(2)) + A.jvp(cube, x, nb.ones(2)))
    A.jacobian(cube, x, create_graph=True).sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]  # d/dx sum(diag(3x^2))
    v = nb.tensor([1.0, 0.0])  # float32, as torch users write it
    assert A.hvp(lambda t: cube(t).sum(), x, v)[1].tolist() == [6.0, 0.0]
    assert A.vjp(cube, x, v)[1].dtype == nb.float64 and A.jvp(cube, x, v)[1].tolist() == [3.0, 0.0]


def test_autograd_functional_strict_mode_names_the_independent_pair():
    A = nb.autograd.functional
    x, y = nb.tensor([1.0, 2.0]), nb.tensor([3.0, 4.0])
    msg = "Output 0 of the user-provided function is independent of input 1. This is not allowed in strict mode."
    for call in (
        lambda: A.jacobian(lambda a, b: a * 2, (x, y), strict=True),
        lambda: A.vjp(lambda a, b: (a * 2).sum(), (x, y), strict=True),
        lambda: A.hessian(lambda a, b: (a**2).sum(), (x, y), strict=True),
    ):
        with pytest.raises(RuntimeError, match=msg):
            call()
    ja, jb = A.jacobian(lambda a, b: a * b, (x, y), strict=True)  # (both inputs used: no error)
    assert ja.tolist() == [[3.0, 0.0], [0.0, 4.0]] and jb.tolist() == [[1.0, 0.0], [0.0, 2.0]]
    assert A.jacobian(lambda a, b: a * 2, (x, y))[1].tolist() == [[0.0, 0.0], [0.0, 0.0]]  # (not strict: zeros)
    if torch is not None:
        with pytest.raises(RuntimeError, match=msg):
            torch.autograd.functional.jacobian(lambda a, b: a * 2, (torch.ones(2), torch.ones(2)), strict=True)


def test_legacy_types_check_instances_and_take_a_size():
    x = nb.ones(2, 3)
    assert nb.FloatTensor(x.size()).shape == (2, 3)  # (a Size is sizes, not data)
    assert isinstance(x, nb.FloatTensor) and not isinstance(x, nb.LongTensor)
    assert isinstance(nb.LongTensor([1]), nb.LongTensor)


def test_cdist_p0_gives_zero_gradients_as_torch():
    a = nb.tensor(np.arange(6.0, dtype=np.float32).reshape(3, 2), requires_grad=True)
    nb.cdist(a, a * 2.0, p=0).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros((3, 2)))


def test_equal_is_torchs_bool_and_eq_is_elementwise():
    a, b = nb.tensor([1.0, 2.0]), nb.tensor([1.0, 2.0])
    assert nb.equal(a, b) is True and nb.equal(a, nb.tensor([1.0, 3.0])) is False
    assert nb.equal(a, nb.ones(3)) is False  # (different shapes: False, not a broadcast)
    assert nb.eq(a, nb.tensor([1.0, 3.0])).tolist() == [True, False] and nb.ops.equal is nb.eq
    if torch is not None:
        assert torch.equal(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])) is True

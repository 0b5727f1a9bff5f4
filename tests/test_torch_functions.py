"""torch's top-level functions under their torch names (nabla/torch_functions.py): each expression
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
T.as_tensor([1.5, 2.0])"""


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

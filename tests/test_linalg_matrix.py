"""nabla.ops.linalg_matrix: matrix_exp, householder_product, geqrf, qr, solve, inv, det, slogdet,
logdet, matrix_power; and torch's scaled products (addmm, ...) from nabla.ops.linalg.

The registry entries (tests/op_registry/linalg.py) check values against NumPy references and the
derivatives numerically; here: closed forms and invariants (exp of a diagonal, of a rotation
generator, of a skew-symmetric matrix; Q R = A; A X = B with pivoting), the accuracy limits of
matrix_exp's fixed scaling-and-squaring scheme, vmap/grad composition, errors, and (with
PyTorch installed) values and gradients against torch.linalg.
"""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb

RNG = np.random.default_rng(7)


def close(a, b, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def skew(n: int, scale: float = 1.0, batch: tuple = ()) -> np.ndarray:
    w = RNG.standard_normal(batch + (n, n)) * scale
    return w - np.swapaxes(w, -1, -2)


# -- matrix_exp --------------------------------------------------------------------------------
def test_matrix_exp_of_a_diagonal_is_the_exp_of_the_diagonal():
    d = np.array([-3.0, -0.5, 0.0, 0.25, 2.0, 5.0])
    close(nb.matrix_exp(nb.tensor(np.diag(d))).numpy(), np.diag(np.exp(d)), rtol=1e-12, atol=1e-12)
    close(nb.matrix_exp(nb.tensor(np.diag(d).astype(np.float32))).numpy(), np.diag(np.exp(d)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("t", [0.1, 1.0, 3.0, 40.0, 1000.0])
def test_matrix_exp_of_a_rotation_generator_is_a_rotation(t: float):
    a = np.array([[0.0, t], [-t, 0.0]])
    want = np.array([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]])
    close(nb.matrix_exp(nb.tensor(a)).numpy(), want, rtol=0, atol=1e-13 * max(1.0, t))
    close(nb.matrix_exp(nb.tensor(a.astype(np.float32))).numpy(), want, rtol=0, atol=3e-6 * max(1.0, t))


@pytest.mark.parametrize("scale", [1e-3, 0.3, 3.0, 30.0])
def test_matrix_exp_of_a_skew_symmetric_matrix_is_orthogonal(scale: float):
    a = skew(6, scale, batch=(3,))
    q = nb.matrix_exp(nb.tensor(a)).numpy()
    close(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(6), q.shape), rtol=0, atol=1e-12)
    q32 = nb.matrix_exp(nb.tensor(a.astype(np.float32))).numpy()
    tol = 3e-6 * max(1.0, scale)  # float32 rounding grows with the number of squarings (torch's more)
    close(np.swapaxes(q32, -1, -2) @ q32, np.broadcast_to(np.eye(6), q.shape), rtol=0, atol=tol)
    close(q32, q, rtol=0, atol=2 * tol)


def test_matrix_exp_inverse_and_zero():
    a = RNG.standard_normal((4, 4))
    e, e_neg = nb.matrix_exp(nb.tensor(a)).numpy(), nb.matrix_exp(nb.tensor(-a)).numpy()
    close(e @ e_neg, np.eye(4), rtol=0, atol=1e-12)
    close(nb.matrix_exp(nb.zeros(3, 3)).numpy(), np.eye(3), rtol=0, atol=0)
    assert nb.matrix_exp(nb.zeros(0, 2, 2)).shape == (0, 2, 2)


def test_matrix_exp_accuracy_bound_of_max_squarings():
    # ||A||_1 = 200 t: four squarings reach 1-norms up to 1.09 * 16 in float64, so beyond that the
    # Taylor polynomial alone cannot keep the rotation's accuracy; the default (16) can.
    a = np.array([[0.0, 100.0], [-100.0, 0.0]])
    want = np.array([[np.cos(100.0), np.sin(100.0)], [-np.sin(100.0), np.cos(100.0)]])
    close(nb.matrix_exp(nb.tensor(a)).numpy(), want, rtol=0, atol=1e-12)
    assert np.abs(nb.matrix_exp(nb.tensor(a), max_squarings=4).numpy() - want).max() > 1e-3
    close(nb.matrix_exp(nb.tensor(a / 1000.0), max_squarings=0).numpy(), _rot(0.1), rtol=0, atol=1e-15)


def test_matrix_exp_of_a_known_matrix_squares_as_often_as_its_norm_needs():
    # 1-norm 2e6, past 1.09 * 2^16: sixteen squarings left the Taylor polynomial's argument too
    # big (nan); torch's value is a rotation by 1e6 radians.
    a = nb.tensor(np.array([[0.0, 1e6], [-1e6, 0.0]]))
    close(nb.matrix_exp(a).numpy(), _rot(1e6), rtol=0, atol=1e-9)
    assert np.isnan(nb.matrix_exp(a, max_squarings=16).numpy()).all()  # an explicit cap holds
    assert np.isnan(nb.matrix_exp(a * 1.0).numpy()).all()  # (a pending input: 16, as documented)


def _rot(t: float) -> np.ndarray:
    return np.array([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]])


def test_matrix_exp_scales_each_matrix_of_a_batch_on_its_own():
    a = np.stack([_gen(0.01), _gen(50.0), _gen(3.0)])
    got = nb.matrix_exp(nb.tensor(a)).numpy()
    for i, t in enumerate([0.01, 50.0, 3.0]):
        close(got[i], _rot(t), rtol=0, atol=1e-12)
    vm = nb.vmap(nb.matrix_exp)(nb.tensor(a)).numpy()
    close(vm, got, rtol=0, atol=1e-14)


def _gen(t: float) -> np.ndarray:
    return np.array([[0.0, t], [-t, 0.0]])


def test_matrix_exp_gradient_of_a_diagonal_and_half_precision():
    # d/dd sum(exp(diag(d))) = exp(d)
    d = nb.tensor(np.array([0.5, -1.0, 2.0]))
    g = nb.grad(lambda v: nb.matrix_exp(v[:, None] * nb.eye(3, dtype=nb.float64)).sum())(d)
    close(g.numpy(), np.exp([0.5, -1.0, 2.0]), rtol=1e-12)
    h = nb.matrix_exp(nb.tensor(np.diag([0.5, 1.0]).astype(np.float16)))
    assert h.dtype == nb.float16
    close(h.astype(nb.float32).numpy(), np.diag(np.exp([0.5, 1.0])), rtol=1e-3)


def test_matrix_exp_errors():
    with pytest.raises(ValueError, match="square"):
        nb.matrix_exp(nb.zeros(2, 3))
    with pytest.raises(ValueError, match="matrix"):
        nb.matrix_exp(nb.zeros(3))
    with pytest.raises(TypeError, match="floating"):
        nb.matrix_exp(nb.tensor(np.eye(2, dtype=np.int64)))
    with pytest.raises(ValueError, match="max_squarings"):
        nb.matrix_exp(nb.zeros(2, 2), max_squarings=-1)


# -- householder_product / geqrf / qr ----------------------------------------------------------
def test_householder_product_of_one_reflector():
    x = np.array([[9.0, 9.0], [0.5, 9.0], [-2.0, 9.0]])  # only column 0 below the diagonal is read
    tau = np.array([0.7])
    v = np.array([1.0, 0.5, -2.0])
    want = (np.eye(3) - 0.7 * np.outer(v, v))[:, :2]
    close(nb.householder_product(nb.tensor(x), nb.tensor(tau)).numpy(), want, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 7, 8])
def test_householder_product_of_exact_reflectors_is_orthogonal(k: int):
    # tau = 2 / ||v||^2: each H_i is a reflection, so their product has orthonormal columns.
    x = RNG.standard_normal((9, 8))
    v = np.tril(x, -1)[:, :k] + np.eye(9, k)
    tau = 2.0 / (v * v).sum(axis=0)
    q = nb.householder_product(nb.tensor(x), nb.tensor(tau)).numpy()
    assert q.shape == (9, 8)
    close(q.T @ q, np.eye(8), rtol=0, atol=1e-13)
    want = np.eye(9)
    for i in range(k):
        want = want @ (np.eye(9) - tau[i] * np.outer(v[:, i], v[:, i]))
    close(q, want[:, :8], rtol=0, atol=1e-13)


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 6), (2, 6, 4), (1, 1)])
def test_qr_reconstructs_and_geqrf_forms_q(shape: tuple):
    a = RNG.standard_normal(shape)
    q, r = nb.qr(nb.tensor(a))
    q, r = q.numpy(), r.numpy()
    k = min(shape[-2:])
    assert q.shape == shape[:-2] + (shape[-2], k) and r.shape == shape[:-2] + (k, shape[-1])
    close(q @ r, a, rtol=0, atol=1e-13)
    close(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(k), shape[:-2] + (k, k)), rtol=0, atol=1e-13)
    close(np.tril(r, -1), 0 * r, atol=0)
    h, tau = nb.geqrf(nb.tensor(a))
    close(np.triu(h.numpy())[..., :k, :], r, atol=1e-14)
    hq = nb.householder_product(h[..., :, :k], tau).numpy()
    close(hq, q, atol=1e-14)
    qc, rc = nb.qr(nb.tensor(a), mode="complete")
    m = shape[-2]
    close(qc.numpy() @ rc.numpy(), a, atol=1e-13)
    close(np.swapaxes(qc.numpy(), -1, -2) @ qc.numpy(), np.broadcast_to(np.eye(m), shape[:-2] + (m, m)), atol=1e-13)
    qe, re = nb.qr(nb.tensor(a), mode="r")
    assert qe.shape == (0,)
    close(re.numpy(), r, atol=0)


def test_geqrf_matches_numpy_raw_qr_and_skips_zero_columns():
    a = RNG.standard_normal((5, 3))
    h, tau = np.linalg.qr(a, mode="raw")
    got_a, got_tau = nb.geqrf(nb.tensor(a))
    close(got_a.numpy(), h.T, atol=1e-14)
    close(got_tau.numpy(), tau, atol=1e-14)
    # A column already zero below the diagonal: LAPACK applies no reflection (tau = 0).
    e = np.array([[2.0, 1.0], [0.0, 3.0], [0.0, 4.0]])
    got_a, got_tau = nb.geqrf(nb.tensor(e))
    assert got_tau.numpy()[0] == 0.0 and got_a.numpy()[0, 0] == 2.0
    g = nb.grad(lambda x: nb.qr(x)[1].sum())(nb.tensor(e))
    assert np.isfinite(g.numpy()).all()


def test_qr_of_float32_and_errors():
    a = RNG.standard_normal((6, 4)).astype(np.float32)
    q, r = nb.qr(nb.tensor(a))
    assert q.dtype == nb.float32 and r.dtype == nb.float32
    close(q.numpy() @ r.numpy(), a, atol=1e-5)
    with pytest.raises(ValueError, match="mode"):
        nb.qr(nb.tensor(a), mode="economic")
    with pytest.raises(ValueError, match="rows"):
        nb.householder_product(nb.zeros(2, 3), nb.zeros(2))
    with pytest.raises(ValueError, match="at most"):
        nb.householder_product(nb.zeros(4, 2), nb.zeros(3))
    with pytest.raises(ValueError, match="batch"):
        nb.householder_product(nb.zeros(2, 4, 2), nb.zeros(3, 2))


# -- solve / inv -------------------------------------------------------------------------------
def test_solve_needs_and_does_pivoting():
    # A permutation-like matrix with a zero diagonal: elimination without row swaps divides by 0.
    a = np.array([[0.0, 2.0, 1.0], [1.0, 0.0, 3.0], [4.0, 1.0, 0.0]])
    b = RNG.standard_normal((3, 2))
    x = nb.solve(nb.tensor(a), nb.tensor(b)).numpy()
    close(a @ x, b, atol=1e-14)
    close(nb.inv(nb.tensor(a)).numpy() @ a, np.eye(3), atol=1e-14)
    p = np.eye(4)[[2, 0, 3, 1]]
    close(nb.inv(nb.tensor(p)).numpy(), p.T, atol=0)


def test_solve_shapes_vectors_broadcasting_and_left():
    a = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b = RNG.standard_normal((2, 3))  # A's shape without the last dim: a batch of vectors
    x = nb.solve(nb.tensor(a), nb.tensor(b)).numpy()
    assert x.shape == (2, 3)
    close(np.einsum("bij,bj->bi", a, x), b, atol=1e-13)
    b2 = RNG.standard_normal((3, 4))  # broadcast over A's batch
    x2 = nb.solve(nb.tensor(a), nb.tensor(b2)).numpy()
    close(a @ x2, np.broadcast_to(b2, (2, 3, 4)), atol=1e-13)
    b3 = RNG.standard_normal((5, 3))
    x3 = nb.solve(nb.tensor(a[0]), nb.tensor(b3), left=False).numpy()
    close(x3 @ a[0], b3, atol=1e-13)
    with pytest.raises(ValueError, match="square"):
        nb.solve(nb.zeros(2, 3), nb.zeros(2))
    with pytest.raises(ValueError, match="do not match"):
        nb.solve(nb.eye(3), nb.zeros(4, 2))
    with pytest.raises(TypeError, match="floating"):
        nb.inv(nb.tensor(np.eye(2, dtype=np.int64)))


def test_solve_of_a_singular_matrix_gives_non_finite_values():
    x = nb.solve(nb.tensor(np.ones((2, 2))), nb.tensor(np.ones(2))).numpy()
    assert not np.isfinite(x).all()


def test_solve_gradients_are_the_adjoint_solves():
    # dL/dB = A^-T G, dL/dA = -A^-T G X^T for L = <G, A^-1 B>.
    a = RNG.standard_normal((4, 4)) + 4 * np.eye(4)
    b, w = RNG.standard_normal((4, 2)), RNG.standard_normal((4, 2))
    ga, gb = nb.grad(lambda x, y: (nb.solve(x, y) * nb.tensor(w)).sum(), (0, 1))(nb.tensor(a), nb.tensor(b))
    x = np.linalg.solve(a, b)
    want_b = np.linalg.solve(a.T, w)
    close(gb.numpy(), want_b, atol=1e-12)
    close(ga.numpy(), -want_b @ x.T, atol=1e-12)


# -- against torch.linalg ----------------------------------------------------------------------
def _grads(fn, arrays, weights):
    def loss(*xs):
        outs = nb.tree_leaves(fn(*xs))
        return sum((o * nb.tensor(w)).sum() for o, w in zip(outs, weights, strict=True))

    return [g.numpy() for g in nb.grad(loss, tuple(range(len(arrays))))(*[nb.tensor(a) for a in arrays])]


def _torch_grads(fn, arrays, weights):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    outs = fn(*ts)
    outs = list(outs) if isinstance(outs, tuple | list) else [outs]
    sum((o * torch.tensor(w)).sum() for o, w in zip(outs, weights, strict=True)).backward()
    return [t.grad.numpy() for t in ts]


def _compare(fn, tfn, arrays, rtol, atol):
    got = [o.numpy() for o in nb.tree_leaves(fn(*[nb.tensor(a) for a in arrays]))]
    out = tfn(*[torch.tensor(a) for a in arrays])
    want = [w.numpy() for w in (list(out) if isinstance(out, tuple | list) else [out])]
    for g, w in zip(got, want, strict=True):
        close(g, w, rtol=rtol, atol=atol)
    weights = [RNG.standard_normal(w.shape) for w in want]
    for g, w in zip(_grads(fn, arrays, weights), _torch_grads(tfn, arrays, weights), strict=True):
        close(g, w, rtol=rtol, atol=atol)


@needs_torch
@pytest.mark.parametrize("scale", [0.01, 0.5, 2.0, 10.0])
@pytest.mark.parametrize("n", [1, 3, 8])
def test_matrix_exp_vs_torch(n: int, scale: float):
    a = RNG.standard_normal((2, n, n)) * scale
    want = torch.linalg.matrix_exp(torch.tensor(a)).numpy()
    tol = 1e-12 * np.abs(want).max()
    _compare(nb.matrix_exp, torch.linalg.matrix_exp, [a], rtol=1e-11, atol=tol)
    got32 = nb.matrix_exp(nb.tensor(a.astype(np.float32))).numpy()
    close(got32, want, rtol=0, atol=2e-5 * np.abs(want).max())


@needs_torch
@pytest.mark.parametrize("shape, k", [((5, 3), 3), ((6, 4), 2), ((4, 4), 4), ((2, 7, 5), 5)])
def test_householder_product_vs_torch(shape: tuple, k: int):
    a = RNG.standard_normal(shape)
    tau = RNG.uniform(0.2, 1.8, shape[:-2] + (k,))
    _compare(nb.householder_product, torch.linalg.householder_product, [a, tau], rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr_and_geqrf_vs_torch(shape: tuple, mode: str):
    a = RNG.standard_normal(shape)
    if mode == "reduced" or shape[-2] <= shape[-1]:  # torch has no gradient for complete tall QR
        _compare(lambda x: nb.qr(x, mode=mode), lambda x: torch.linalg.qr(x, mode=mode), [a], rtol=1e-10, atol=1e-12)
    else:
        q, r = nb.qr(nb.tensor(a), mode=mode)
        tq, tr = torch.linalg.qr(torch.tensor(a), mode=mode)
        close(q.numpy(), tq.numpy(), atol=1e-12)
        close(r.numpy(), tr.numpy(), atol=1e-12)
    h, tau = nb.geqrf(nb.tensor(a))
    th, ttau = torch.geqrf(torch.tensor(a))
    close(h.numpy(), th.numpy(), atol=1e-12)
    close(tau.numpy(), ttau.numpy(), atol=1e-12)


@needs_torch
@pytest.mark.parametrize("n", [1, 3, 6])
def test_solve_and_inv_vs_torch(n: int):
    a = RNG.standard_normal((2, n, n)) + 0.5 * np.eye(n)
    b = RNG.standard_normal((2, n, 3))
    _compare(nb.solve, torch.linalg.solve, [a, b], rtol=1e-9, atol=1e-10)
    _compare(nb.inv, torch.linalg.inv, [a], rtol=1e-9, atol=1e-10)
    _compare(
        lambda x, y: nb.solve(x, y, left=False),
        lambda x, y: torch.linalg.solve(x, y, left=False),
        [a, np.swapaxes(b, -1, -2)],
        rtol=1e-9,
        atol=1e-10,
    )


# -- determinants, matrix_power, torch's scaled products ---------------------------------------
def test_determinants_follow_their_definitions():
    a = RNG.standard_normal((4, 5, 5))
    close(nb.det(nb.tensor(a)).numpy(), np.linalg.det(a), rtol=1e-12)
    sign, logabs = nb.slogdet(nb.tensor(a))
    want_sign, want_log = np.linalg.slogdet(a)
    close(sign.numpy(), want_sign)
    close(logabs.numpy(), want_log, rtol=1e-12)
    big = np.eye(60) * 1e8  # det = 1e480 overflows; slogdet does not
    assert nb.det(nb.tensor(big)).item() == np.inf
    close(nb.slogdet(nb.tensor(big)).logabsdet.item(), 60 * np.log(1e8), rtol=1e-14)
    singular = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]])
    assert nb.det(nb.tensor(singular)).item() == 0.0
    assert tuple(x.item() for x in nb.slogdet(nb.tensor(singular))) == (0.0, -np.inf)
    assert nb.logdet(nb.tensor(singular)).item() == -np.inf
    assert np.isnan(nb.logdet(nb.tensor(np.diag([1.0, -2.0]))).item())
    # d det(A) / dA = det(A) A^-T (Jacobi's formula)
    g = nb.grad(lambda t: nb.det(t).sum())(nb.tensor(a)).numpy()
    close(g, np.linalg.det(a)[:, None, None] * np.swapaxes(np.linalg.inv(a), -1, -2), rtol=1e-10, atol=1e-12)


def test_matrix_power_by_squaring():
    a = RNG.standard_normal((2, 3, 3))
    for n in (0, 1, 2, 7, -1, -4):
        close(nb.matrix_power(nb.tensor(a), n).numpy(), np.linalg.matrix_power(a, n), rtol=1e-9, atol=1e-12)


def test_inputs_a_result_ignores_get_zero_gradients_not_none():
    """As torch: addmm(beta=0) and matrix_power(A, 0) keep their input in the graph, so an
    optimizer still updates it (weight decay, momentum); nan in the input stays out."""
    inp = nb.tensor(np.array([1.0, np.nan, 3.0]), requires_grad=True)
    m1 = nb.tensor(RNG.standard_normal((2, 4)), requires_grad=True)
    nb.addmm(inp, m1, nb.ones(4, 3), beta=0).sum().backward()
    np.testing.assert_array_equal(inp.grad.numpy(), np.zeros(3))
    np.testing.assert_allclose(m1.grad.numpy(), np.full((2, 4), 3.0))
    a = nb.tensor(RNG.standard_normal((2, 2)), requires_grad=True)
    out = nb.matrix_power(a, 0)
    np.testing.assert_array_equal(out.numpy(), np.eye(2))
    out.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros((2, 2)))
    g = nb.grad(lambda i: nb.baddbmm(i, nb.ones(1, 2, 3), nb.ones(1, 3, 2), beta=0).sum())(nb.ones(2, 2))
    np.testing.assert_array_equal(g.numpy(), np.zeros((2, 2)))


def test_scaled_products_and_their_errors():
    i, m1, m2 = RNG.standard_normal(5), RNG.standard_normal((3, 4)), RNG.standard_normal((4, 5))
    close(nb.addmm(nb.tensor(i), nb.tensor(m1), nb.tensor(m2), beta=0.5, alpha=-2).numpy(), 0.5 * i - 2 * m1 @ m2)
    nan = nb.tensor(np.full((3, 5), np.nan))
    close(nb.addmm(nan, nb.tensor(m1), nb.tensor(m2), beta=0).numpy(), m1 @ m2)  # beta = 0 ignores input
    with pytest.raises(
        ValueError, match=r"addmm: input of shape \(4,\) cannot be broadcast to the product's shape \(3, 5\)"
    ):
        nb.addmm(nb.ones(4), nb.tensor(m1), nb.tensor(m2))
    with pytest.raises(ValueError, match=r"addmm: mat1 must be 2-D, got shape \(4,\)"):
        nb.addmm(nb.ones(5), nb.ones(4), nb.tensor(m2))
    with pytest.raises(ValueError, match=r"mv: mat \(3, 4\) and vec \(3,\) do not match: vec needs 4 entries"):
        nb.mv(nb.tensor(m1), nb.ones(3))
    with pytest.raises(ValueError, match=r"baddbmm: batch1 \(2, 3, 4\) and batch2 \(3, 4, 5\) must be"):
        nb.baddbmm(nb.ones(3, 5), nb.ones(2, 3, 4), nb.ones(3, 4, 5))
    with pytest.raises(
        ValueError, match=r"det: A must be a batch of square matrices \(..., n, n\), got shape \(3, 4\)"
    ):
        nb.det(nb.tensor(m1))
    with pytest.raises(TypeError, match="matrix_power: n must be an int, got 1.5"):
        nb.matrix_power(nb.eye(3), 1.5)
    with pytest.raises(ValueError, match="diag_embed: dim1 and dim2 must differ, both are 1"):
        nb.diag_embed(nb.ones(3), 0, 1, -1)
    with pytest.raises(ValueError, match=r"diag: expected a 1-D or 2-D tensor, got shape \(2, 2, 2\)"):
        nb.diag(nb.ones(2, 2, 2))


@needs_torch
def test_determinant_gradients_vs_torch():
    a = RNG.standard_normal((3, 4, 4))
    for ours, theirs in (
        (nb.det, torch.linalg.det),
        (lambda t: nb.slogdet(t).logabsdet, lambda t: torch.linalg.slogdet(t).logabsdet),
    ):
        t = torch.tensor(a, requires_grad=True)
        theirs(t).sum().backward()
        got = nb.grad(lambda x, f=ours: f(x).sum())(nb.tensor(a)).numpy()
        close(got, t.grad.numpy(), rtol=1e-9, atol=1e-12)


# -- cholesky and triangular solves -------------------------------------------------------------
def _spd(*shape: int) -> np.ndarray:
    m = RNG.standard_normal(shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def test_cholesky_factors_and_solves():
    a = _spd(3, 5, 5)
    lower = nb.cholesky(nb.tensor(a))
    close(lower.numpy(), np.linalg.cholesky(a), rtol=1e-12, atol=1e-14)
    close(nb.cholesky(nb.tensor(a), upper=True).numpy(), np.swapaxes(np.linalg.cholesky(a), -1, -2), rtol=1e-12)
    garbage = a.copy()
    garbage[:, 0, 4] = 1e3  # the upper triangle is never read
    close(nb.cholesky(nb.tensor(garbage)).numpy(), np.linalg.cholesky(a), rtol=1e-12, atol=1e-14)
    upper_only = np.triu(a)  # with upper=True only the upper one is (it read the lower), as torch
    close(
        nb.cholesky(nb.tensor(upper_only), upper=True).numpy(), np.swapaxes(np.linalg.cholesky(a), -1, -2), rtol=1e-12
    )
    for m, info in (([[1.0, 1.0], [1.0, 1.0]], 2), ([[0.0, 0.0], [0.0, 1.0]], 1), ([[4.0, 2.0], [2.0, 5.0]], 0)):
        assert nb.linalg.cholesky_ex(nb.tensor(m)).info.item() == info  # torch's (a 0 pivot: was 0 / 2)
    assert np.isnan(nb.cholesky(nb.tensor(np.array([[1.0, 2.0], [2.0, 1.0]]))).numpy()).any()  # not PD: nan
    b = RNG.standard_normal((3, 5, 2))
    close(nb.cholesky_solve(nb.tensor(b), lower).numpy(), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    close(nb.cholesky_inverse(lower).numpy(), np.linalg.inv(a), rtol=1e-10, atol=1e-12)
    x, coefficient = nb.tensor(b).triangular_solve(lower, upper=False)
    close(x.numpy(), np.linalg.solve(np.linalg.cholesky(a), b), rtol=1e-10, atol=1e-12)
    close(coefficient.numpy(), lower.numpy())
    x = nb.tensor(b).triangular_solve(lower, upper=False, transpose=True).solution
    close(x.numpy(), np.linalg.solve(np.swapaxes(np.linalg.cholesky(a), -1, -2), b), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match=r"solve_triangular: A \(3, 3\) and B \(2, 1\) do not match: B needs 3 rows"):
        nb.solve_triangular(nb.eye(3), nb.ones(2, 1), upper=True)
    with pytest.raises(ValueError, match=r"cholesky: A must be a batch of square matrices"):
        nb.cholesky(nb.ones(2, 3))


@needs_torch
def test_cholesky_gradient_is_torchs_symmetric_one():
    a, w = _spd(2, 4, 4), RNG.standard_normal((2, 4, 4))
    t = torch.tensor(a, requires_grad=True)
    (torch.linalg.cholesky(t) ** 2 * torch.tensor(w)).sum().backward()
    got = nb.grad(lambda x: (nb.cholesky(x) ** 2 * nb.tensor(w)).sum())(nb.tensor(a)).numpy()
    close(got, t.grad.numpy(), rtol=1e-10, atol=1e-12)
    b = RNG.standard_normal((2, 4, 3))
    for upper in (True, False):
        tb, ta = torch.tensor(b, requires_grad=True), torch.tensor(a, requires_grad=True)
        torch.linalg.solve_triangular(ta, tb, upper=upper).sum().backward()
        ga, gb = nb.grad(lambda x, y, u=upper: nb.solve_triangular(x, y, upper=u).sum(), argnums=(0, 1))(
            nb.tensor(a), nb.tensor(b)
        )
        close(ga.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
        close(gb.numpy(), tb.grad.numpy(), rtol=1e-10, atol=1e-12)


# -- the nabla.linalg namespace -----------------------------------------------------------------
def test_linalg_namespace_has_torch_linalg_defaults():
    a = RNG.standard_normal((3, 4))
    x = nb.tensor(a)
    close(nb.linalg.norm(x).numpy(), np.linalg.norm(a), rtol=1e-12)  # flattened 2-norm
    close(nb.linalg.norm(x, 1).numpy(), np.linalg.norm(a, 1), rtol=1e-12)  # a 2-D x with ord: matrix norm
    close(nb.linalg.norm(x, np.inf).numpy(), np.linalg.norm(a, np.inf), rtol=1e-12)
    close(nb.linalg.norm(x, dim=1).numpy(), np.linalg.norm(a, axis=1), rtol=1e-12)
    close(nb.linalg.norm(x, -1, dim=(1, 0)).numpy(), np.linalg.norm(a.T, -1), rtol=1e-12)
    close(nb.linalg.norm(nb.tensor(a[0]), 3).numpy(), np.linalg.norm(a[0], 3), rtol=1e-12)
    close(nb.linalg.diagonal(nb.tensor(np.arange(18.0).reshape(2, 3, 3))).numpy(), [[0, 4, 8], [9, 13, 17]])
    close(
        nb.linalg.cross(nb.tensor(np.eye(3)), nb.tensor(np.roll(np.eye(3), 1, 0))).numpy(),
        np.cross(np.eye(3), np.roll(np.eye(3), 1, 0)),
    )
    assert nb.linalg.solve is nb.solve and nb.linalg.cholesky is nb.cholesky
    np.testing.assert_allclose(  # "nuc": the singular values' sum (tests/test_linalg_host.py has the rest)
        nb.linalg.matrix_norm(x, "nuc").numpy(), np.linalg.norm(x.numpy(), "nuc", axis=(-2, -1)), rtol=1e-5
    )
    with pytest.raises(
        ValueError, match=r"linalg.norm: with ord and no dim, x must be 1-D or 2-D, got shape \(2, 3, 4\)"
    ):
        nb.linalg.norm(nb.ones(2, 3, 4), 2)
    with pytest.raises(
        ValueError, match="multi_dot: tensors\\[0\\] \\(3, 4\\) and tensors\\[1\\] \\(3, 4\\) do not chain"
    ):
        nb.linalg.multi_dot([x, x])


# -- LU --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (3, 0), (0, 3)])
def test_lu_of_empty_matrices_has_torchs_shapes(shape):  # (it crashed stacking no pivots)
    p, lower, upper = nb.linalg.lu(nb.zeros(*shape))
    m, n = shape[-2:]
    assert (p.shape, lower.shape, upper.shape) == (shape[:-2] + (m, m), shape[:-2] + (m, 0), shape[:-2] + (0, n))
    pivots = nb.linalg.lu_factor(nb.zeros(*shape)).pivots
    assert pivots.shape == shape[:-2] + (0,) and pivots.dtype == nb.int32


def test_lu_reconstructs_and_solves():
    for shape in ((4, 4), (2, 5, 5), (5, 3), (3, 5)):
        a = RNG.standard_normal(shape)
        p, lower, upper = nb.lu(nb.tensor(a))
        close((p @ lower @ upper).numpy(), a, rtol=1e-12, atol=1e-12)
        assert np.all(np.abs(np.tril(lower.numpy(), -1)) <= 1.0 + 1e-12)  # partial pivoting bounds L
    a, b = RNG.standard_normal((2, 4, 4)), RNG.standard_normal((2, 4, 3))
    lu_data, pivots = nb.tensor(a).lu()
    close(nb.tensor(b).lu_solve(lu_data, pivots).numpy(), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    close(
        nb.lu_solve(lu_data, pivots, nb.tensor(b), adjoint=True).numpy(),
        np.linalg.solve(np.swapaxes(a, -1, -2), b),
        rtol=1e-10,
    )
    *_, infos = nb.tensor(a).lu(get_infos=True)
    assert infos.numpy().tolist() == [0, 0]
    with pytest.raises(ValueError, match=r"lu_solve: pivots must have shape \(2, 4\), got \(4,\)"):
        nb.lu_solve(lu_data, pivots[0], nb.tensor(b))
    with pytest.raises(ValueError, match="lu_factor: pivot=False is not supported"):
        nb.lu_factor(nb.tensor(a), pivot=False)


@needs_torch
def test_lu_gradients_vs_torch():
    a, w = RNG.standard_normal((2, 4, 4)), RNG.standard_normal((2, 4, 4))
    t = torch.tensor(a, requires_grad=True)
    _, tl, tu = torch.linalg.lu(t)
    ((tl + tu) * torch.tensor(w)).sum().backward()
    got = nb.grad(lambda x: ((nb.lu(x).L + nb.lu(x).U) * nb.tensor(w)).sum())(nb.tensor(a)).numpy()
    close(got, t.grad.numpy(), rtol=1e-9, atol=1e-12)
    t = torch.tensor(a, requires_grad=True)
    (torch.linalg.lu_factor(t).LU * torch.tensor(w)).sum().backward()
    got = nb.grad(lambda x: (nb.lu_factor(x).LU * nb.tensor(w)).sum())(nb.tensor(a)).numpy()
    close(got, t.grad.numpy(), rtol=1e-9, atol=1e-12)

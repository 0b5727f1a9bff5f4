"""nabla.ops.linalg_host: eigh, svd and what builds on them, computed by LAPACK on the host when
recorded. Values and gradients against PyTorch (vectors up to sign), forward-mode against
finite differences, errors, and a training step that uses one."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_optim as optim

RNG = np.random.default_rng(0)


def _sym(a: np.ndarray) -> np.ndarray:
    return a + np.swapaxes(a, -1, -2)


def _signs_fixed(vectors: np.ndarray, axis: int) -> np.ndarray:
    """Vectors along `axis` flipped so that their largest entry is positive."""
    idx = np.expand_dims(np.argmax(np.abs(vectors), axis=axis), axis)
    return vectors * np.sign(np.take_along_axis(vectors, idx, axis))


@needs_torch
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5)])
def test_eigh_matches_torch(shape):
    a = _sym(RNG.standard_normal(shape))
    values, vectors = nb.linalg.eigh(nb.tensor(a))
    t_values, t_vectors = torch.linalg.eigh(torch.tensor(a))
    np.testing.assert_allclose(values.numpy(), t_values.numpy(), atol=1e-12)
    np.testing.assert_allclose(_signs_fixed(vectors.numpy(), -2), _signs_fixed(t_vectors.numpy(), -2), atol=1e-10)
    upper = nb.linalg.eigvalsh(nb.tensor(np.triu(a)), UPLO="U")  # only the upper triangle is read
    np.testing.assert_allclose(upper.numpy(), t_values.numpy(), atol=1e-12)


@needs_torch
@pytest.mark.parametrize("shape", [(6, 3), (3, 6), (2, 4, 4)])
def test_svd_and_its_family_match_torch(shape):
    a = RNG.standard_normal(shape)
    u, s, vh = nb.linalg.svd(nb.tensor(a), full_matrices=False)
    tu, ts, tvh = torch.linalg.svd(torch.tensor(a), full_matrices=False)
    np.testing.assert_allclose(s.numpy(), ts.numpy(), atol=1e-12)
    np.testing.assert_allclose(_signs_fixed(u.numpy(), -2), _signs_fixed(tu.numpy(), -2), atol=1e-10)
    np.testing.assert_allclose(_signs_fixed(vh.numpy(), -1), _signs_fixed(tvh.numpy(), -1), atol=1e-10)
    ta = torch.tensor(a)
    np.testing.assert_allclose(nb.linalg.pinv(nb.tensor(a)).numpy(), torch.linalg.pinv(ta).numpy(), atol=1e-10)
    for ord in ("nuc", 2, -2):
        got = nb.linalg.matrix_norm(nb.tensor(a), ord, keepdim=True)
        want = torch.linalg.matrix_norm(ta, ord, keepdim=True)
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    assert nb.linalg.matrix_rank(nb.tensor(a)).tolist() == torch.linalg.matrix_rank(ta).tolist()


@needs_torch
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_full_matrices_match_torch_values_and_gradients(shape):
    a = RNG.standard_normal(shape)
    m, n = shape[-2:]
    w_u, w_v = RNG.standard_normal((*shape[:-2], m, m)), RNG.standard_normal((*shape[:-2], n, n))

    def loss(lib, x):
        u, s, vh = lib.linalg.svd(x)  # full_matrices=True, torch's default
        return (s**2).sum() + (u.abs() * lib.tensor(w_u)).sum() + (vh.abs() * lib.tensor(w_v)).sum()

    u, s, vh = nb.linalg.svd(nb.tensor(a))
    tu, ts, tvh = torch.linalg.svd(torch.tensor(a))
    assert (u.shape, s.shape, vh.shape) == (tuple(tu.shape), tuple(ts.shape), tuple(tvh.shape))
    np.testing.assert_allclose(s.numpy(), ts.numpy(), atol=1e-12)
    eye = np.broadcast_to(np.eye(m), u.shape)
    np.testing.assert_allclose(u.numpy() @ np.swapaxes(u.numpy(), -1, -2), eye, atol=1e-12)  # orthogonal
    # As torch, the columns of U and rows of Vh past min(m, n) get no gradient.
    g = nb.grad(lambda x: loss(nb, x))(nb.tensor(a))
    tx = torch.tensor(a, requires_grad=True)
    loss(torch, tx).backward()
    np.testing.assert_allclose(g.numpy(), tx.grad.numpy(), atol=1e-9)


def test_svd_of_an_empty_matrix_gives_identities_and_no_values():
    u, s, vh = nb.linalg.svd(nb.zeros((0, 3)))
    assert (u.shape, s.shape, vh.shape) == ((0, 0), (0,), (3, 3))
    np.testing.assert_array_equal(vh.numpy(), np.eye(3))


@needs_torch
def test_gradients_match_torch():
    a = RNG.standard_normal((5, 3))
    w_u, w_v = RNG.standard_normal((5, 3)), RNG.standard_normal((3, 3))
    sym = _sym(RNG.standard_normal((4, 4)))
    w_e = RNG.standard_normal((4, 4))

    def loss(lib, x, s):
        la = lib.linalg
        u, sv, vh = la.svd(x, full_matrices=False)
        values, vectors = la.eigh(s)
        return (
            (sv**2).sum()
            + (u.abs() * lib.tensor(w_u)).sum()
            + (vh.abs() * lib.tensor(w_v)).sum()
            + (values * lib.tensor(np.arange(4.0))).sum()
            + (vectors.abs() * lib.tensor(w_e)).sum()
            + la.cond(x[:3])
            + la.matrix_norm(x, "nuc")
            + la.pinv(x).sum()
        )

    gx, gs = nb.grad(lambda x, s: loss(nb, x, s), argnums=(0, 1))(nb.tensor(a), nb.tensor(sym))
    tx, ts = torch.tensor(a, requires_grad=True), torch.tensor(sym, requires_grad=True)
    loss(torch, tx, ts).backward()
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy(), atol=1e-9)
    np.testing.assert_allclose(gs.numpy(), ts.grad.numpy(), atol=1e-9)


@needs_torch
def test_double_backward_with_a_dropped_output_matches_torch():
    """The derivative rule computes a dropped output (eigh's values, svd's U) again; a backward
    with create_graph=True must differentiate through it too."""
    sym, a = _sym(RNG.standard_normal((3, 3))), RNG.standard_normal((4, 3))

    def loss(lib, s, x):
        vectors = lib.linalg.eigh(s)[1]  # the eigenvalues are dropped
        singular, vh = lib.linalg.svd(x, full_matrices=False)[1:]  # U is dropped
        return (vectors[:, 0] ** 3).sum() * vectors[0, 0].sign() + (singular**3).sum() + (vh[0] ** 3).sum()

    def second(lib, grad, s, x):
        gs, gx = grad(loss(lib, s, x), (s, x), create_graph=True)
        return grad((gs * gs).sum() + (gx * gx).sum(), (s, x))

    got = second(nb, nb.autograd.grad, nb.tensor(sym, requires_grad=True), nb.tensor(a, requires_grad=True))
    want = second(torch, torch.autograd.grad, *(torch.tensor(v, requires_grad=True) for v in (sym, a)))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-8)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_forward_mode_matches_finite_differences(shape):
    a, d = RNG.standard_normal(shape), RNG.standard_normal(shape)
    _, tangents = nb.jvp(lambda x: tuple(nb.linalg.svd(x, full_matrices=False)), (nb.tensor(a),), (nb.tensor(d),))
    h = 1e-6
    plus, minus = np.linalg.svd(a + h * d, full_matrices=False), np.linalg.svd(a - h * d, full_matrices=False)
    for t, p, m in zip(tangents, plus, minus, strict=True):
        np.testing.assert_allclose(t.numpy(), (p - m) / (2 * h), atol=1e-7)
    s, ds = _sym(a[:3, :3]), _sym(d[:3, :3])
    _, (d_values, d_vectors) = nb.jvp(lambda x: tuple(nb.linalg.eigh(x)), (nb.tensor(s),), (nb.tensor(ds),))
    (vp, up), (vm, um) = np.linalg.eigh(s + h * ds), np.linalg.eigh(s - h * ds)
    np.testing.assert_allclose(d_values.numpy(), (vp - vm) / (2 * h), atol=1e-7)
    np.testing.assert_allclose(d_vectors.numpy(), (up - um) / (2 * h), atol=1e-7)


def test_pinv_and_matrix_rank_keep_the_default_rtol_unless_atol_is_positive():
    # torch: rtol is 0 only for atol > 0; with atol=0 the 4e-16 singular value counted (rank 3)
    z = np.arange(1.0, 10.0).reshape(3, 3)
    assert nb.linalg.matrix_rank(nb.tensor(z), atol=0.0).item() == 2
    assert nb.linalg.matrix_rank(
        nb.tensor(np.stack([z, z])), atol=nb.tensor([0.0, 1.0], dtype=nb.float64)
    ).tolist() == [2, 2]
    np.testing.assert_allclose(
        nb.linalg.pinv(nb.tensor(z), atol=0.0).numpy(), np.linalg.pinv(z), rtol=1e-10, atol=1e-12
    )
    assert nb.linalg.matrix_rank(nb.tensor(z), atol=20.0).item() == 0  # (rtol 0: the cutoff is atol)


def test_lstsq_gives_the_minimum_norm_solution_and_the_rank():
    a = RNG.standard_normal((4, 2)) @ RNG.standard_normal((2, 5))  # rank 2, underdetermined
    b = RNG.standard_normal((4, 3))
    result = nb.linalg.lstsq(nb.tensor(a), nb.tensor(b))
    np.testing.assert_allclose(result.solution.numpy(), np.linalg.pinv(a) @ b, atol=1e-10)
    assert result.rank.tolist() == 2 and result.residuals.shape == (0,) and result.singular_values.shape == (0,)


def test_bad_input_and_compile_get_clear_errors():
    with pytest.raises(ValueError, match=r"eigh: expected square matrices \(\.\.\., n, n\), got shape \(2, 3\)"):
        nb.linalg.eigh(nb.ones((2, 3)))
    with pytest.raises(TypeError, match="svd: expected a float32 or float64 tensor, got dtype float16"):
        nb.linalg.svd(nb.ones((2, 2), dtype=nb.float16))
    with pytest.raises(NotImplementedError, match="forward-mode derivative for full_matrices=True of non-square"):
        nb.jvp(lambda x: tuple(nb.linalg.svd(x)), (nb.ones((3, 2)),), (nb.ones((3, 2)),))
    with pytest.raises(RuntimeError, match="outside the compiled function"):
        nb.compile(lambda x: nb.linalg.svdvals(x))(nb.ones((3, 3)))


def test_a_training_step_with_a_nuclear_norm_penalty_trains_and_caches():
    nb.manual_seed(0)
    model = nn.Linear(6, 4)
    opt = optim.SGD(model.parameters(), lr=0.05)
    x, y = nb.tensor(RNG.standard_normal((8, 6)).astype(np.float32)), nb.tensor(np.zeros((8, 4), np.float32))
    nb.reset_cache_info()
    losses = []
    for _ in range(6):
        opt.zero_grad()
        loss = nb.mean((model(x) - y) ** 2) + 0.1 * nb.linalg.matrix_norm(model.weight, "nuc")
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    # The weight is realized when the SVD reads it: each step is still one model, cached.
    info = nb.cache_info()
    assert (info.executions, info.misses, info.hits) == (6, 1, 5)

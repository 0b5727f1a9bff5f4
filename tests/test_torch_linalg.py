"""torch's top-level svd_lowrank, pca_lowrank and triangular_solve (nabla/torch_linalg.py), and
linalg.LinAlgError from the `*_ex` checks; against NumPy, and torch where installed."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb

RNG = np.random.default_rng(5)
LOW_RANK = RNG.normal(size=(30, 3)) @ RNG.normal(size=(3, 20))


def test_svd_lowrank_recovers_an_exactly_low_rank_matrix():
    nb.manual_seed(0)
    U, S, V = nb.svd_lowrank(nb.tensor(LOW_RANK), q=3)
    assert (U.shape, S.shape, V.shape) == ((30, 3), (3,), (20, 3))
    np.testing.assert_allclose((U.numpy() * S.numpy()) @ V.numpy().T, LOW_RANK, atol=1e-10)
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(LOW_RANK, compute_uv=False)[:3], rtol=1e-10)
    np.testing.assert_allclose(U.numpy().T @ U.numpy(), np.eye(3), atol=1e-12)
    with pytest.raises(ValueError, match=r"q must be an int in \[1, min\(m, n\) = 20\], got 21"):
        nb.svd_lowrank(nb.tensor(LOW_RANK), q=21)


def test_pca_lowrank_centers_and_gives_the_principal_directions():
    nb.manual_seed(0)
    U, S, V = nb.pca_lowrank(nb.tensor(LOW_RANK), q=3)
    centered = LOW_RANK - LOW_RANK.mean(0)
    _, s, vt = np.linalg.svd(centered, full_matrices=False)
    np.testing.assert_allclose(S.numpy(), s[:3], rtol=1e-10)
    np.testing.assert_allclose(np.abs(V.numpy()), np.abs(vt[:3].T), atol=1e-10)  # (up to sign)


def test_triangular_solve_returns_the_solution_and_a_copy_of_the_coefficient():
    L = np.tril(RNG.normal(size=(3, 3))) + 3 * np.eye(3)
    b = RNG.normal(size=(3, 2))
    for upper, transpose in ((False, False), (True, False), (False, True)):
        A = L.T if upper else L
        x, a = nb.triangular_solve(nb.tensor(b), nb.tensor(A), upper=upper, transpose=transpose)
        np.testing.assert_allclose((A.T if transpose else A) @ x.numpy(), b, atol=1e-12)
        np.testing.assert_array_equal(a.numpy(), A)


def test_cholesky_ex_raises_linalg_error_a_runtime_error():
    not_pd = nb.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=nb.float64)
    with pytest.raises(nb.linalg.LinAlgError, match="not positive-definite"):
        nb.linalg.cholesky_ex(not_pd, check_errors=True)
    assert issubclass(nb.linalg.LinAlgError, RuntimeError)
    jitter, factor = 0.0, None
    for jitter in (0.0, 1e-6, 2.0):  # the Gaussian-process retry loop, on the checking spelling
        try:
            factor = nb.linalg.cholesky_ex(not_pd + jitter * nb.eye(2, dtype=nb.float64), check_errors=True).L
            break
        except RuntimeError:
            continue
    assert jitter == 2.0 and np.isfinite(factor.numpy()).all()


def test_linspace_takes_0d_tensor_ends_and_comparing_with_a_string_is_false():
    assert nb.linspace(nb.tensor(0.0), nb.tensor(1.0), 3).tolist() == [0.0, 0.5, 1.0]
    assert nb.logspace(nb.tensor(0.0), 2, 3).tolist() == [1.0, 10.0, 100.0]
    assert (nb.ones(2) == "ERR") is False and (nb.ones(2) != "ERR") is True


@needs_torch
def test_lowrank_and_triangular_solve_match_torch():
    A = torch.tensor(LOW_RANK)
    np.testing.assert_allclose(
        nb.svd_lowrank(nb.tensor(LOW_RANK), q=3)[1].numpy(), torch.svd_lowrank(A, q=3)[1].numpy(), rtol=1e-10
    )
    np.testing.assert_allclose(
        nb.pca_lowrank(nb.tensor(LOW_RANK), q=3)[1].numpy(), torch.pca_lowrank(A, q=3)[1].numpy(), rtol=1e-10
    )
    L = np.tril(RNG.normal(size=(3, 3))) + 3 * np.eye(3)
    b = RNG.normal(size=(3, 2))
    with pytest.warns(UserWarning):
        want = torch.triangular_solve(torch.tensor(b), torch.tensor(L), upper=False, transpose=True).solution
    got = nb.triangular_solve(nb.tensor(b), nb.tensor(L), upper=False, transpose=True).solution
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)
    assert (torch.ones(2) == "ERR") is False

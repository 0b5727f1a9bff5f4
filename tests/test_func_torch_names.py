"""nabla.func with torch.func's keywords and defaults: vmap(in_dims, out_dims, randomness="error",
chunk_size), jacrev(chunk_size, _preallocate_and_copy), jacfwd(randomness), jvp(strict),
stack_module_state, and the meta-learning flows (per-sample gradients, model ensembling)
compared with torch.func where torch is importable."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch
from _oracle import torch_func as tf

import nabla as nb

RNG = np.random.default_rng(5)


def _r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# -- vmap ------------------------------------------------------------------------------------


def test_vmap_takes_in_dims_and_out_dims():
    a, b = _r(3, 4), _r(4)
    out = nb.func.vmap(lambda x, y: x * y, in_dims=(1, None), out_dims=1)(nb.tensor(a.T), nb.tensor(b))
    np.testing.assert_allclose(out.numpy(), (a * b).T, rtol=1e-6)
    assert out.shape == (4, 3)


def test_vmap_in_dims_pytree_prefix_and_kwargs_unmapped():
    d = {"w": nb.tensor(_r(5, 2)), "b": nb.tensor(_r(2))}
    out = nb.func.vmap(lambda p, scale: p["w"] * scale + p["b"], in_dims=({"w": 0, "b": None},))(d, scale=2.0)
    np.testing.assert_allclose(out.numpy(), d["w"].numpy() * 2.0 + d["b"].numpy(), rtol=1e-6)


def test_vmap_default_randomness_is_error_as_torch():
    with pytest.raises(RuntimeError, match="randomness='error'"):
        nb.func.vmap(lambda x: x + nb.randn(3))(nb.ones((2, 3)))
    # nabla.vmap keeps its own default ("different"): independent draws per row
    out = nb.vmap(lambda x: x + nb.randn(3))(nb.zeros((2, 3))).numpy()
    assert not np.allclose(out[0], out[1])
    same = nb.func.vmap(lambda x: x + nb.randn(3), randomness="same")(nb.zeros((2, 3))).numpy()
    np.testing.assert_array_equal(same[0], same[1])


def test_vmap_chunk_size_checked_and_gives_the_unchunked_values():
    x = nb.tensor(_r(7, 3))
    whole = nb.func.vmap(nb.sin)(x).numpy()
    for chunk in (1, 2, 7, 100):
        np.testing.assert_array_equal(nb.func.vmap(nb.sin, chunk_size=chunk)(x).numpy(), whole)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
            nb.func.vmap(nb.sin, chunk_size=bad)
    with pytest.raises(TypeError):  # keyword-only, as torch's
        nb.func.vmap(nb.sin, 0, 0, "error", 2)


# -- jacrev / jacfwd / hessian / jvp / vjp / grad ----------------------------------------------


def test_jacrev_accepts_torch_keywords():
    x = nb.tensor([0.5, 1.0, 2.0])
    want = np.diag(np.cos([0.5, 1.0, 2.0])).astype(np.float32)
    for kw in ({}, {"chunk_size": 1}, {"chunk_size": 2, "_preallocate_and_copy": True}):
        np.testing.assert_allclose(nb.func.jacrev(nb.sin, **kw)(x).numpy(), want, rtol=1e-6)
    jac, aux = nb.func.jacrev(lambda t: (nb.sin(t), t.sum()), has_aux=True)(x)
    np.testing.assert_allclose(jac.numpy(), want, rtol=1e-6)
    assert aux.item() == pytest.approx(3.5)
    with pytest.raises(ValueError, match="chunk_size"):
        nb.func.jacrev(nb.sin, chunk_size=0)
    with pytest.raises(TypeError):  # has_aux is keyword-only in torch.func.jacrev
        nb.func.jacrev(nb.sin, 0, True)


def test_jacfwd_randomness_default_error_and_same():
    x = nb.tensor([1.0, 2.0])
    assert nb.func.jacfwd(lambda t: t * t)(x).tolist() == [[2.0, 0.0], [0.0, 4.0]]
    with pytest.raises(RuntimeError, match="randomness='error'"):
        nb.func.jacfwd(lambda t: t * nb.randn(2))(x)
    nb.manual_seed(0)
    noise = nb.randn(2).numpy()
    nb.manual_seed(0)
    jac = nb.func.jacfwd(lambda t: t * nb.randn(2), randomness="same")(x).numpy()
    np.testing.assert_allclose(jac, np.diag(noise), rtol=1e-6)
    assert nb.jacfwd(lambda t: t * nb.randn(2))(x).shape == (2, 2)  # nabla.jacfwd: "same"
    with pytest.raises(ValueError, match="randomness must be"):
        nb.func.jacfwd(lambda t: t, randomness="sometimes")


def test_hessian_with_torch_defaults():
    x = nb.tensor([1.0, 2.0])
    assert nb.func.hessian(lambda t: (t**3).sum())(x).tolist() == [[6.0, 0.0], [0.0, 12.0]]
    with pytest.raises(RuntimeError, match="randomness='error'"):
        nb.func.hessian(lambda t: (t**2 * nb.randn(2)).sum())(x)


def test_jvp_strict_raises_for_an_output_independent_of_the_inputs():
    x = nb.tensor([0.0, 1.0])
    y, dy = nb.func.jvp(nb.sin, (x,), (nb.ones(2),), strict=True)
    np.testing.assert_allclose(dy.numpy(), np.cos([0.0, 1.0]), rtol=1e-6)
    const = lambda t: nb.ones(2)  # noqa: E731
    with pytest.raises(RuntimeError, match="independent of the inputs"):
        nb.func.jvp(const, (x,), (nb.ones(2),), strict=True)
    _, zero = nb.func.jvp(const, (x,), (nb.ones(2),))  # strict=False: zeros, as torch
    assert zero.tolist() == [0.0, 0.0]
    y, dy, aux = nb.func.jvp(lambda t: (t * 2, "aux"), (x,), (nb.ones(2),), has_aux=True)
    assert dy.tolist() == [2.0, 2.0] and aux == "aux"
    # after a strict failure the primal carries no leftover tangent
    assert nb.func.jvp(lambda t: t * x, (x,), (nb.ones(2),))[1].tolist() == [0.0, 1.0]


@needs_torch
def test_jvp_strict_matches_torch():
    with pytest.raises(RuntimeError, match="independent of the inputs"):
        tf.jvp(lambda t: torch.ones(2), (torch.zeros(2),), (torch.ones(2),), strict=True)


def test_vjp_grad_and_keywords_as_torch():
    x = nb.tensor([1.0, 2.0])
    g, aux = nb.func.grad(lambda t: ((t**2).sum(), t + 1), argnums=0, has_aux=True)(x)
    assert g.tolist() == [2.0, 4.0] and aux.tolist() == [2.0, 3.0]
    out, pull, aux = nb.func.vjp(lambda t: (t * 3, 7), x, has_aux=True)
    assert pull(nb.ones(2))[0].tolist() == [3.0, 3.0] and aux == 7

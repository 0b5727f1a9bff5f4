"""nabla.func with torch.func's keywords and defaults: vmap(in_dims, out_dims, randomness="error",
chunk_size), jacrev(chunk_size, _preallocate_and_copy), jacfwd(randomness), jvp(strict),
stack_module_state, and the meta-learning flows (per-sample gradients, model ensembling)
compared with torch.func where torch is importable."""

from __future__ import annotations

import numpy as np
import pytest

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

"""torch's top-level distance functions (`nabla.cosine_similarity`, `nabla.pairwise_distance`,
`nabla.pdist`): one implementation shared with nabla_nn.functional, checked against NumPy and
(when installed) torch."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn.functional as F

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 3)).astype(np.float32)
Y = RNG.standard_normal((4, 3)).astype(np.float32)


def test_top_level_names_are_the_functional_ones():
    assert nb.cosine_similarity is F.cosine_similarity
    assert nb.pairwise_distance is F.pairwise_distance
    assert nb.pdist is F.pdist


def test_nabla_does_not_import_nabla_nn():
    code = "import sys, nabla; nabla.pdist; assert 'nabla_nn' not in sys.modules, 'nabla imported nabla_nn'"
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_values_without_torch():
    x, y = nb.tensor(X), nb.tensor(Y)
    cos = (X * Y).sum(1) / (np.linalg.norm(X, axis=1) * np.linalg.norm(Y, axis=1))
    np.testing.assert_allclose(nb.cosine_similarity(x, y).numpy(), cos, rtol=1e-5)
    np.testing.assert_allclose(nb.pairwise_distance(x, y, eps=0.0).numpy(), np.linalg.norm(X - Y, axis=1), rtol=1e-5)
    i, j = np.triu_indices(4, 1)
    np.testing.assert_allclose(nb.pdist(x, 1.0).numpy(), np.abs(X[i] - X[j]).sum(1), rtol=1e-5)


def test_gradients_flow():
    x = nb.tensor(X, requires_grad=True)
    nb.pdist(x).sum().backward()
    assert x.grad.shape == X.shape and np.isfinite(x.grad.numpy()).all() and np.abs(x.grad.numpy()).sum() > 0


def test_errors_name_the_argument():
    with pytest.raises(TypeError, match="cosine_similarity: x2 must be a floating-point tensor"):
        nb.cosine_similarity(nb.tensor(X), nb.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="pdist: input must be a 2-D"):
        nb.pdist(nb.tensor(X[0]))
    with pytest.raises(ValueError, match="pdist: p must be non-negative"):
        nb.pdist(nb.tensor(X), -1.0)
    with pytest.raises(TypeError, match="pairwise_distance: eps must be a number"):
        nb.pairwise_distance(nb.tensor(X), nb.tensor(Y), eps="0")


@needs_torch
@pytest.mark.parametrize(
    "expr",
    [
        "T.cosine_similarity(x, y)",
        "T.cosine_similarity(x, y[:1], dim=-1)",
        "T.pairwise_distance(x, y)",
        "T.pairwise_distance(x, y, 1.0, 0.0, True)",
        "T.pdist(x)",
        "T.pdist(x, 0.5)",
        "T.pdist(x, float('inf'))",
    ],
)
def test_matches_torch(expr: str):
    ours = eval(expr, {"T": nb, "x": nb.tensor(X), "y": nb.tensor(Y)})  # noqa: S307
    ref = eval(expr, {"T": torch, "x": torch.tensor(X), "y": torch.tensor(Y)})  # noqa: S307
    assert tuple(ours.shape) == tuple(ref.shape)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)

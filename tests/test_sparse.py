"""nabla.sparse: torch.sparse's constructors and products on dense storage (a GCN's sparse
adjacency ported as is), against NumPy, and torch where installed."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb

EDGES = np.array([[0, 1, 1, 2, 2], [1, 0, 0, 2, 0]])
WEIGHTS = np.array([1.0, 2.0, 3.0, 4.0, 5.0], dtype=np.float32)


def _dense() -> np.ndarray:
    out = np.zeros((3, 3), dtype=np.float32)
    np.add.at(out, (EDGES[0], EDGES[1]), WEIGHTS)  # duplicates summed, as torch's coalesce
    return out


def test_sparse_coo_tensor_is_its_dense_tensor_and_mm_multiplies():
    A = nb.sparse_coo_tensor(EDGES, WEIGHTS, (3, 3))
    np.testing.assert_array_equal(A.numpy(), _dense())
    assert not A.is_sparse and A.to_dense() is A and A.to_sparse() is A and A.coalesce() is A
    h = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_allclose(nb.sparse.mm(A, nb.tensor(h)).numpy(), _dense() @ h)
    np.testing.assert_allclose(nb.sparse.addmm(nb.ones(3, 2), A, nb.tensor(h), beta=2.0).numpy(), 2 + _dense() @ h)
    assert nb.sparse.sum(A).item() == WEIGHTS.sum()
    np.testing.assert_array_equal(nb.sparse_coo_tensor(EDGES, WEIGHTS).shape, (3, 3))  # size inferred
    hybrid = nb.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]])
    assert hybrid.tolist() == [[1.0, 2.0], [0.0, 0.0], [3.0, 4.0]]
    csr = nb.sparse_csr_tensor([0, 1, 3], [1, 0, 2], [1.0, 2.0, 3.0], (2, 3))
    assert csr.tolist() == [[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]
    assert nb.sparse.FloatTensor(nb.tensor(EDGES), nb.tensor(WEIGHTS), (3, 3)).dtype == nb.float32


def test_values_get_gradients_and_bad_shapes_are_named():
    values = nb.tensor(WEIGHTS, requires_grad=True)
    A = nb.sparse_coo_tensor(nb.tensor(EDGES), values, (3, 3))
    (nb.sparse.mm(A, nb.ones(3, 1)) * nb.tensor([[1.0], [2.0], [3.0]])).sum().backward()
    np.testing.assert_array_equal(values.grad.numpy(), [1.0, 2.0, 2.0, 3.0, 3.0])  # d/dv: the row's weight
    leaf = nb.sparse_coo_tensor(EDGES, WEIGHTS, (3, 3), requires_grad=True)
    assert leaf.requires_grad and leaf.is_leaf
    with pytest.raises(ValueError, match=r"values must have nnz = 5 rows"):
        nb.sparse_coo_tensor(EDGES, WEIGHTS[:4], (3, 3))
    with pytest.raises(ValueError, match=r"size \(3,\) must be 2 sparse dims"):
        nb.sparse_coo_tensor(EDGES, WEIGHTS, (3,))


@needs_torch
def test_a_gcn_layer_on_a_sparse_adjacency_matches_torch():
    idx, w = torch.tensor(EDGES), torch.tensor(WEIGHTS)
    tA = torch.sparse_coo_tensor(idx, w, (3, 3))
    h = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    W = np.random.default_rng(1).normal(size=(4, 2)).astype(np.float32)
    want = torch.relu(torch.sparse.mm(tA, torch.tensor(h) @ torch.tensor(W)))
    got = nb.relu(nb.sparse.mm(nb.sparse_coo_tensor(EDGES, WEIGHTS, (3, 3)), nb.tensor(h) @ nb.tensor(W)))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(nb.sparse_coo_tensor(EDGES, WEIGHTS, (3, 3)).numpy(), tA.to_dense().numpy())

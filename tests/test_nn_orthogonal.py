"""nabla_nn.utils.parametrizations.orthogonal (PyTorch's): PyTorch's state_dict keys, an orthogonal
weight from registration on, the initial weight (the weight itself if orthogonal, else its QR's Q
with diag(R) >= 0), assignment through right_inverse, orthogonality kept while training (eager
and compiled), errors, and (with PyTorch installed) the same weight, outputs and gradients as torch
for the same state_dict, for square, tall and wide weights, each map, with and without
trivialization.
"""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla_nn.utils import parametrizations, parametrize
from nabla_nn.utils.parametrizations import orthogonal

RNG = np.random.default_rng(3)
MAPS = ["matrix_exp", "cayley", "householder"]
SHAPES = [(4, 4), (6, 3), (3, 6)]  # (out_features, in_features): square, tall, wide


def close(a, b, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def gram_error(w: np.ndarray) -> float:
    """max |Q^T Q - I| (orthonormal columns) for a tall Q, |Q Q^T - I| for a wide one."""
    g = np.swapaxes(w, -1, -2) @ w if w.shape[-2] >= w.shape[-1] else w @ np.swapaxes(w, -1, -2)
    return float(np.abs(g - np.eye(g.shape[-1])).max())


def linear(w: np.ndarray) -> nn.Linear:
    m = nn.Linear(w.shape[1], w.shape[0])
    m.load_state_dict({"weight": w, "bias": np.zeros(w.shape[0], np.float32)})
    return m


def q_factor(a: np.ndarray) -> np.ndarray:
    """The Q of a tall a = QR with diag(R) >= 0 (unique for full rank)."""
    q, r = np.linalg.qr(a.astype(np.float64))
    return q * np.sign(np.diagonal(r))


@pytest.mark.parametrize("triv", [True, False])
@pytest.mark.parametrize("orthogonal_map", MAPS)
@pytest.mark.parametrize("shape", SHAPES)
def test_registration_keys_and_an_orthogonal_start(shape: tuple, orthogonal_map: str, triv: bool):
    w = RNG.standard_normal(shape).astype(np.float32)
    m = orthogonal(linear(w), orthogonal_map=orthogonal_map, use_trivialization=triv)
    keys = ["bias", "parametrizations.weight.original"] + (["parametrizations.weight.0.base"] if triv else [])
    assert list(m.state_dict()) == keys
    assert type(m).__name__ == "ParametrizedLinear"
    assert m.weight.shape == shape
    q = m.weight.numpy()
    assert gram_error(q) < 1e-5
    original = m.parametrizations.weight.original.numpy()
    if triv:  # base = the QR's Q (a tall/wide weight completed by random columns), original = -I
        n = max(shape)
        assert m.parametrizations.weight[0].base.shape == (n, n)
        close(original, -np.eye(*shape), atol=0)
        want = q_factor(w) if shape[0] >= shape[1] else q_factor(w.T).T
        close(q, want, atol=2e-6)
    elif orthogonal_map == "householder":  # the reflectors of the QR, the signs of R on the diagonal
        want = q_factor(w) if shape[0] >= shape[1] else q_factor(w.T).T
        close(q, want, atol=2e-6)
        assert set(np.unique(np.diagonal(original))) <= {-1.0, 1.0}
    else:  # exp / cayley cannot be inverted: the original is kept, the weight is its image
        close(original, w, atol=0)


def test_default_map_and_an_orthogonal_weight_is_kept():
    assert orthogonal(nn.Linear(3, 3)).parametrizations.weight[0].orthogonal_map.name == "matrix_exp"
    assert orthogonal(nn.Linear(3, 5)).parametrizations.weight[0].orthogonal_map.name == "householder"
    assert orthogonal(nn.Linear(5, 3)).parametrizations.weight[0].orthogonal_map.name == "householder"
    p = np.eye(4, dtype=np.float32)[[1, 3, 0, 2]]  # orthogonal already: base is that matrix
    m = orthogonal(linear(p))
    close(m.parametrizations.weight[0].base.numpy(), p, atol=0)
    close(m.weight.numpy(), p, atol=1e-7)


@pytest.mark.parametrize("orthogonal_map", MAPS)
def test_assignment_goes_through_right_inverse(orthogonal_map: str):
    m = orthogonal(nn.Linear(3, 5), orthogonal_map=orthogonal_map)
    q = q_factor(RNG.standard_normal((5, 3))).astype(np.float32)
    m.weight = nb.tensor(q)
    close(m.weight.numpy(), q, atol=2e-6)
    with pytest.raises(ValueError, match="shape"):
        m.weight = nb.zeros(3, 5)
    plain = orthogonal(nn.Linear(3, 3), orthogonal_map=orthogonal_map, use_trivialization=False)
    q3 = q_factor(RNG.standard_normal((3, 3))).astype(np.float32)
    if orthogonal_map == "householder":
        plain.weight = nb.tensor(q3)
        close(plain.weight.numpy(), q3, atol=2e-6)
    else:
        with pytest.raises(NotImplementedError, match="use_trivialization=False"):
            plain.weight = nb.tensor(q3)


def test_a_batch_of_matrices():
    class Bank(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(nb.tensor(RNG.standard_normal((2, 5, 3)).astype(np.float32)))

    for orthogonal_map in MAPS:
        m = orthogonal(Bank(), orthogonal_map=orthogonal_map)
        assert m.weight.shape == (2, 5, 3)
        assert gram_error(m.weight.numpy()) < 1e-5
        assert m.parametrizations.weight[0].base.shape == (2, 5, 5)


@pytest.mark.parametrize("triv", [True, False])
@pytest.mark.parametrize("orthogonal_map", MAPS)
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6)])
def test_training_keeps_the_weight_orthogonal(shape: tuple, orthogonal_map: str, triv: bool):
    nb.manual_seed(0)
    out_f, in_f = shape
    model = nn.Sequential(nn.Linear(in_f, out_f), nn.Tanh(), nn.Linear(out_f, 2))
    orthogonal(model[0], orthogonal_map=orthogonal_map, use_trivialization=triv)
    opt = optim.SGD(model.parameters(), lr=0.5)
    x = nb.tensor(RNG.standard_normal((16, in_f)).astype(np.float32))
    y = nb.tensor(RNG.integers(0, 2, 16))
    w0 = model[0].weight.numpy()
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        assert gram_error(model[0].weight.numpy()) < 2e-5
    assert losses[-1] < losses[0]
    assert np.abs(model[0].weight.numpy() - w0).max() > 1e-3  # it moved, on the manifold
    if orthogonal_map == "householder":  # the diagonal is not trained (a truncation, as torch's)
        g = model[0].parametrizations.weight.original.grad.numpy()
        assert np.all(np.diagonal(g if shape[0] >= shape[1] else g.T) == 0)


def test_compiled_training_step_compiles_once_and_stays_orthogonal():
    nb.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 3))
    orthogonal(model[0])
    model.compile()
    opt = optim.Adam(model.parameters(), lr=0.05)
    rng = np.random.default_rng(1)
    batches = [(nb.tensor(rng.standard_normal((8, 5)).astype(np.float32)), nb.tensor(rng.integers(0, 3, 8)))] * 6
    nb.reset_cache_info()
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert gram_error(model[0].weight.numpy()) < 1e-5
    assert nb.cache_info().compiles <= 2


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="no parameter or buffer with name 'w'"):
        orthogonal(nn.Linear(2, 2), "w")
    with pytest.raises(ValueError, match="Got a tensor of 1 dimensions"):
        orthogonal(nn.Linear(2, 2), "bias")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", "cayley", "householder"'):
        orthogonal(nn.Linear(2, 2), orthogonal_map="polar")
    assert "orthogonal" in parametrizations.__all__
    parametrize.remove_parametrizations(m := orthogonal(nn.Linear(3, 3)), "weight")
    assert type(m) is nn.Linear and gram_error(m.weight.numpy()) < 1e-5


# -- against torch -------------------------------------------------------------------------------
def _torch_orthogonal(shape: tuple, orthogonal_map: str, triv: bool):
    out_f, in_f = shape
    tm = torch.nn.Linear(in_f, out_f)
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=orthogonal_map, use_trivialization=triv)
    with torch.no_grad():  # move away from the start (householder: its diagonal must stay +-1)
        original = tm.parametrizations.weight.original
        noise = 0.4 * torch.randn(original.shape, generator=torch.Generator().manual_seed(0))
        if orthogonal_map == "householder":
            noise = torch.tril(noise, -1) if shape[0] >= shape[1] else torch.triu(noise, 1)
        original.add_(noise)
    return tm


@needs_torch
@pytest.mark.parametrize("triv", [True, False])
@pytest.mark.parametrize("orthogonal_map", MAPS)
@pytest.mark.parametrize("shape", SHAPES)
def test_same_state_dict_same_weight_outputs_and_gradients_as_torch(shape: tuple, orthogonal_map: str, triv: bool):
    tm = _torch_orthogonal(shape, orthogonal_map, triv)
    m = orthogonal(nn.Linear(shape[1], shape[0]), orthogonal_map=orthogonal_map, use_trivialization=triv)
    assert list(m.state_dict()) == list(tm.state_dict())
    m.load_state_dict(tm.state_dict())  # a torch state_dict loads as it is
    close(m.weight.numpy(), tm.weight.detach().numpy(), atol=1e-6)
    x = RNG.standard_normal((5, shape[1])).astype(np.float32)
    y, ty = m(nb.tensor(x)), tm(torch.tensor(x))
    close(y.numpy(), ty.detach().numpy(), atol=2e-6)
    (y**2).sum().backward()
    (ty**2).sum().backward()
    close(
        m.parametrizations.weight.original.grad.numpy(),
        tm.parametrizations.weight.original.grad.numpy(),
        rtol=1e-4,
        atol=1e-5,
    )


@needs_torch
@pytest.mark.parametrize("orthogonal_map", MAPS)
@pytest.mark.parametrize("shape", SHAPES)
def test_registration_from_the_same_weight_matches_torch(shape: tuple, orthogonal_map: str):
    w = RNG.standard_normal(shape).astype(np.float32)
    for triv in (True, False):
        tm = torch.nn.Linear(shape[1], shape[0])
        with torch.no_grad():
            tm.weight.copy_(torch.tensor(w))
        torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=orthogonal_map, use_trivialization=triv)
        m = orthogonal(linear(w), orthogonal_map=orthogonal_map, use_trivialization=triv)
        close(m.weight.numpy(), tm.weight.detach().numpy(), atol=2e-6)
        if not (triv and shape[0] != shape[1]):  # torch's base then holds random columns
            for name, value in tm.parametrizations.state_dict().items():
                close(m.parametrizations.state_dict()[name].numpy(), value.numpy(), atol=2e-6)

"""nabla_nn.utils: parametrize (register/remove/cached, PyTorch's state_dict keys),
parametrizations (weight_norm, spectral_norm), the hook-based weight_norm / spectral_norm,
stateless.functional_call (through nabla.grad / vmap / compile), conv/linear-BatchNorm fusion and
skip_init.

Torch-free tests check values written down from torch 2.13, invariants, key lists and errors;
the `needs_torch` ones compare values and gradients with torch itself.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla_nn.parameter import Parameter
from nabla_nn.utils import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
    parametrizations,
    parametrize,
    remove_spectral_norm,
    remove_weight_norm,
    skip_init,
    spectral_norm,
    weight_norm,
)
from nabla_nn.utils.stateless import functional_call

RNG = np.random.default_rng(0)
W3 = np.array([[1.0, 2.0, 0.5], [-1.0, 0.25, 2.0], [0.75, -0.5, 1.5]], np.float32)
B3 = np.array([0.1, -0.2, 0.3], np.float32)
W23 = np.array([[3.0, 4.0, 0.0], [1.0, -2.0, 2.0]], np.float32)
X = np.array([[1.0, -1.0, 2.0], [0.5, 0.0, -1.5]], np.float32)


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):
        return A.triu()


class Double(nn.Module):  # no right_inverse: registration takes it as the identity
    def forward(self, X):
        return X * 2.0


class Widen(nn.Module):  # changes the shape: only with unsafe=True
    def forward(self, X):
        return nb.concatenate([X, X], axis=0)


def linear(w: np.ndarray, b: np.ndarray | None = None) -> nn.Linear:
    m = nn.Linear(w.shape[1], w.shape[0])
    m.load_state_dict({"weight": w, "bias": np.zeros(w.shape[0], np.float32) if b is None else b})
    return m


def close(a, b, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def np_of(t) -> np.ndarray:
    return t.detach().numpy() if hasattr(t, "detach") else t.numpy()


# -- parametrize: written-down values from torch 2.13 and invariants ---------------------------
def test_symmetric_parametrization_matches_torch_values():
    m = linear(W3, B3)
    weight = m.weight
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert m.parametrizations.weight.original is weight  # same object: an optimizer keeps it
    close(m.parametrizations.weight.original.numpy(), np.triu(W3))
    close(m.weight.numpy(), [[1.0, 2.0, 0.5], [2.0, 0.25, 2.0], [0.5, 2.0, 1.5]])
    y = m(nb.tensor(X))
    close(y.numpy(), [[0.1, 5.55, 1.8], [-0.15, -2.2, -1.7]])
    (y**2).sum().backward()
    close(weight.grad.numpy(), [[0.05, 8.7, 2.75], [0.0, -11.1, 25.2], [0.0, 0.0, 12.3]], rtol=1e-5, atol=1e-5)


def test_state_dict_keys_and_round_trip_are_pytorchs():
    m = parametrize.register_parametrization(linear(W3, B3), "weight", Symmetric())
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original"]
    other = parametrize.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
    other.load_state_dict({"bias": B3, "parametrizations.weight.original": np.triu(W3)})
    close(other.weight.numpy(), m.weight.numpy())
    with pytest.raises(RuntimeError, match="missing key"):
        other.load_state_dict({"bias": B3, "weight": W3})


def test_assignment_goes_through_right_inverse_and_chains_apply_in_order():
    m = parametrize.register_parametrization(linear(W3), "weight", Symmetric())
    original = m.parametrizations.weight.original
    m.weight = nb.tensor(W3.T.copy())
    assert m.parametrizations.weight.original is original
    close(original.numpy(), np.triu(W3.T))
    parametrize.register_parametrization(m, "weight", Double())
    assert len(m.parametrizations.weight) == 2
    sym = np.triu(W3.T) + np.triu(W3.T, 1).T
    close(m.weight.numpy(), 2 * sym)
    with pytest.raises(RuntimeError, match="Double does not implement right_inverse"):
        m.weight = nb.tensor(W3)


def test_remove_parametrizations_leaves_a_plain_parameter():
    m = parametrize.register_parametrization(linear(W3, B3), "weight", Symmetric())
    original = m.parametrizations.weight.original
    sym = m.weight.numpy()
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=True)
    assert type(m) is nn.Linear and not parametrize.is_parametrized(m)
    assert "parametrizations" not in m._modules
    assert m.weight is original and isinstance(m.weight, Parameter)
    close(m.weight.numpy(), sym)
    assert list(m.state_dict()) == ["bias", "weight"]

    m = parametrize.register_parametrization(linear(W3, B3), "weight", Symmetric())
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    close(m.weight.numpy(), np.triu(W3))


def test_weight_norm_parametrization_matches_torch_values():
    # torch 2.13: g doubled after registration; gradients of sum(y ** 2) for X.
    expected = {
        0: ([[10.0], [6.0]], [[2.6], [73.666664]], [[-5.12, 3.84, -34.0], [-3.1111107, 42.22222, 43.77778]]),
        1: ([[6.3245554, 8.944272, 4.0]], [[6.3245554, 16.09969, 71.0]], [[-14.0, -20.8, -34.0], [42.0, -41.6, 0.0]]),
        None: (11.661903, 40.130669, [[-43.294125, -47.05883, -34.0], [32.23529, -28.470585, 114.47058]]),
    }
    for dim, (g, grad_g, grad_v) in expected.items():
        m = parametrizations.weight_norm(linear(W23), dim=dim)
        pw = m.parametrizations.weight
        assert list(m.state_dict()) == [
            "bias",
            "parametrizations.weight.original0",
            "parametrizations.weight.original1",
        ]
        pw.original0.data = pw.original0 * 2.0
        close(pw.original0.numpy(), g)
        close(m.weight.numpy(), [[6.0, 8.0, 0.0], [2.0, -4.0, 4.0]])
        (m(nb.tensor(X)) ** 2).sum().backward()
        close(pw.original0.grad.numpy(), grad_g, rtol=1e-5, atol=1e-4)
        close(pw.original1.grad.numpy(), grad_v, rtol=1e-5, atol=1e-4)


def test_weight_norm_is_g_times_direction():
    conv = nn.Conv2d(2, 3, 3)
    parametrizations.weight_norm(conv)
    g, v = conv.parametrizations.weight.original0, conv.parametrizations.weight.original1
    assert g.shape == (3, 1, 1, 1) and v.shape == (3, 2, 3, 3)
    g.data = nb.tensor(np.array([1.0, 2.0, 3.0], np.float32).reshape(3, 1, 1, 1))
    vv = v.numpy()
    close(conv.weight.numpy(), g.numpy() * vv / np.sqrt((vv**2).sum(axis=(1, 2, 3), keepdims=True)))
    parametrize.remove_parametrizations(conv, "weight")
    assert type(conv.weight) is Parameter and list(conv.state_dict()) == ["bias", "weight"]
    close(np.sqrt((conv.weight.numpy() ** 2).sum(axis=(1, 2, 3))), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="leave_parametrized=False"):
        parametrize.remove_parametrizations(parametrizations.weight_norm(nn.Linear(2, 2)), "weight", False)


def test_spectral_norm_matches_torch_values_in_eval_and_training():
    m = parametrizations.spectral_norm(linear(W3, B3))
    assert list(m.state_dict()) == [
        "bias",
        "parametrizations.weight.original",
        "parametrizations.weight.0._u",
        "parametrizations.weight.0._v",
    ]
    sn = m.parametrizations.weight[0]
    sigma = np.linalg.norm(W3, 2)  # 15 power iterations at registration come close to it
    close(np.abs(sn._u.numpy() @ W3 @ sn._v.numpy()), sigma, rtol=1e-3)
    sn._u.data, sn._v.data = nb.tensor([0.6, 0.0, 0.8]), nb.tensor([0.0, 1.0, 0.0])
    m.eval()
    close(m.weight.numpy(), W3 / 0.8)  # eval: sigma = u . W v with the stored u, v
    close(sn._u.numpy(), [0.6, 0.0, 0.8])
    m.train()
    w = m.weight  # one power-iteration step, in place
    close(sn._u.numpy(), [0.96308684, 0.12038586, -0.24077171])
    close(sn._v.numpy(), [0.29968747, 0.93992883, 0.1634659])
    close(w.numpy(), W3 * 0.45261657)  # torch: W / sigma after the step


def test_spectral_norm_of_a_vector_and_conv_transpose_default_dim():
    m = nn.Linear(3, 3)
    parametrizations.spectral_norm(m, "bias")
    close(np.linalg.norm(m.bias.numpy()), 1.0)
    assert not hasattr(m.parametrizations.bias[0], "_u")
    ct = parametrizations.spectral_norm(nn.ConvTranspose2d(2, 5, 3))
    assert ct.parametrizations.weight[0].dim == 1 and ct.parametrizations.weight[0]._u.shape == (5,)


def test_cached_computes_each_parametrization_once():
    calls = []

    class Counting(nn.Module):
        def forward(self, X):
            calls.append(1)
            return X * 1.0

    m = parametrize.register_parametrization(nn.Linear(2, 2), "weight", Counting())
    calls.clear()
    with parametrize.cached():
        assert m.weight is m.weight
        with parametrize.cached():
            m.weight  # noqa: B018
    assert len(calls) == 1
    m.weight  # noqa: B018
    assert len(calls) == 2 and not parametrize._cache


def test_right_inverse_with_several_tensors_registers_original0_original1():
    class Sum(nn.Module):
        def forward(self, a, b):
            return a + b

        def right_inverse(self, w):
            return w * 0.25, w * 0.75

    m = parametrize.register_parametrization(linear(W3), "weight", Sum())
    pw = m.parametrizations.weight
    assert not hasattr(pw, "original") and pw.ntensors == 2
    assert isinstance(pw.original0, Parameter) and pw.original0.requires_grad
    close(pw.original0.numpy(), W3 * 0.25)
    close(m.weight.numpy(), W3)
    parametrize.remove_parametrizations(m, "weight")
    assert isinstance(m.weight, Parameter) and m.weight.requires_grad
    close(m.weight.numpy(), W3)


def test_buffers_can_be_parametrized_too():
    bn = nn.BatchNorm1d(3)
    bn.running_var.data = nb.tensor([1.0, 4.0, 9.0])
    parametrize.register_parametrization(bn, "running_var", Double())
    assert "parametrizations.running_var.original" in bn.state_dict()
    assert [n for n, _ in bn.named_buffers()][-1] == "parametrizations.running_var.original"
    close(bn.running_var.numpy(), [2.0, 8.0, 18.0])
    parametrize.remove_parametrizations(bn, "running_var")
    assert "running_var" in bn._buffers and type(bn) is nn.BatchNorm1d


def test_queries_and_errors_name_the_bad_argument():
    m = nn.Linear(3, 3)
    assert not parametrize.is_parametrized(m)
    with pytest.raises(ValueError, match="'wieght'"):
        parametrize.register_parametrization(m, "wieght", Symmetric())
    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(m, "weight", Widen())
    assert type(m) is nn.Linear and "weight" in m._parameters  # a failed registration changes nothing
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(m, "weight")
    parametrize.register_parametrization(m, "weight", Widen(), unsafe=True)
    assert m.weight.shape == (6, 3) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        m.weight = Parameter(nb.zeros(3, 3))
    with pytest.raises(TypeError, match="parametrization must be a Module"):
        parametrize.register_parametrization(nn.Linear(2, 2), "weight", lambda w: w)
    with pytest.raises(IndexError, match="Dimension out of range"):
        parametrizations.spectral_norm(nn.Linear(2, 2), dim=2)
    with pytest.raises(ValueError, match="n_power_iterations=0"):
        parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="no parameter or buffer with name 'w'"):
        parametrizations.spectral_norm(nn.Linear(2, 2), "w")


def test_parametrizations_are_per_instance_and_deepcopy_keeps_them():
    a = parametrize.register_parametrization(linear(W3), "weight", Symmetric())
    plain = nn.Linear(3, 3)
    assert "weight" in plain._parameters and type(plain) is nn.Linear
    b = copy.deepcopy(a)
    assert type(b) is type(a) and b.parametrizations.weight.original is not a.parametrizations.weight.original
    close(b.weight.numpy(), a.weight.numpy())
    parametrize.remove_parametrizations(b, "weight")
    assert parametrize.is_parametrized(a, "weight") and type(b) is nn.Linear


def test_transfer_parametrizations_and_params():
    a = parametrize.register_parametrization(linear(W3), "weight", Symmetric())
    b = parametrize.transfer_parametrizations_and_params(a, nn.Linear(3, 3))
    assert b.parametrizations.weight.original is a.parametrizations.weight.original
    close(b.weight.numpy(), a.weight.numpy())


def test_grad_of_a_parametrized_module_is_keyed_by_the_originals():
    m = parametrize.register_parametrization(linear(W3, B3), "weight", Symmetric())
    g = nb.grad(lambda mod: (mod(nb.tensor(X)) ** 2).sum())(m)
    assert [n for n, _ in g.named_parameters()] == ["bias", "parametrizations.weight.original"]
    (m(nb.tensor(X)) ** 2).sum().backward()
    close(g.parametrizations.weight.original.numpy(), m.parametrizations.weight.original.grad.numpy())


@pytest.mark.parametrize("kind", ["symmetric", "weight_norm", "spectral_norm"])
@pytest.mark.parametrize("compiled", [False, True])
def test_training_step_with_a_parametrized_linear_compiles_once(kind: str, compiled: bool):
    nb.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 3))
    if kind == "symmetric":
        parametrize.register_parametrization(model[0], "weight", Symmetric())
    else:
        getattr(parametrizations, kind)(model[0])
    if compiled:
        model.compile()
    opt = optim.Adam(model.parameters(), lr=0.05)  # the originals are what is trained
    assert any(n.startswith("0.parametrizations.weight.original") for n, _ in model.named_parameters())
    rng = np.random.default_rng(1)
    batches = [
        (nb.tensor(rng.standard_normal((8, 6)).astype(np.float32)), nb.tensor(rng.integers(0, 3, 8))) for _ in range(5)
    ] * 3
    u0 = model[0].parametrizations.weight[0]._u.numpy() if kind == "spectral_norm" else None
    nb.reset_cache_info()
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    info = nb.cache_info()
    assert (info.misses, info.hits, info.graph_builds) == (1, len(batches) - 1, 1)
    assert np.mean(losses[-5:]) < np.mean(losses[:5])  # the same batches, two passes later
    if u0 is not None:  # the power iteration's buffers are part of the step
        assert not np.allclose(model[0].parametrizations.weight[0]._u.numpy(), u0)


# -- hook-based weight_norm / spectral_norm ---------------------------------------------------
def test_hook_weight_norm_keys_invariant_and_removal():
    with pytest.warns(FutureWarning, match="deprecated"):
        m = weight_norm(linear(W23))
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    close(m.weight_g.numpy(), [[5.0], [3.0]])
    m.weight_g.data = nb.tensor([[10.0], [6.0]])
    y = m(nb.tensor(X))  # the pre-hook recomputes the weight
    close(m.weight.numpy(), [[6.0, 8.0, 0.0], [2.0, -4.0, 4.0]])
    close(y.numpy(), X @ np.array([[6.0, 8.0, 0.0], [2.0, -4.0, 4.0]]).T)
    with pytest.raises(RuntimeError, match="two weight_norm hooks"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weight_norm(m)
    remove_weight_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"] and isinstance(m.weight, Parameter)
    assert not m._forward_pre_hooks
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        remove_weight_norm(m)


def test_hook_spectral_norm_keys_values_and_removal():
    m = spectral_norm(linear(W3, B3))
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    m.weight_u.data, m.weight_v.data = nb.tensor([0.6, 0.0, 0.8]), nb.tensor([0.0, 1.0, 0.0])
    m.eval()
    m(nb.tensor(X))
    close(m.weight.numpy(), W3 / 0.8)
    m.train()
    m(nb.tensor(X))  # v first, then u (the hook's order, unlike the parametrization's)
    v = W3.T @ np.array([0.6, 0.0, 0.8], np.float32)
    v /= np.linalg.norm(v)
    u = W3 @ v
    u /= np.linalg.norm(u)
    close(m.weight_v.numpy(), v)
    close(m.weight_u.numpy(), u)
    close(m.weight.numpy(), W3 / (u @ W3 @ v))
    remove_spectral_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"]
    close(m.weight.numpy(), W3 / (u @ W3 @ v))
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        remove_spectral_norm(m)


# -- functional_call ------------------------------------------------------------------------
class Counter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.register_buffer("count", nb.zeros(()))

    def forward(self, x):
        self.count = self.count + 1.0  # replaced, not in place: functional_call hands it back
        return self.lin(x)


def test_functional_call_swaps_and_restores():
    m = Counter()
    w0 = m.lin.weight
    params = {"lin.weight": nb.tensor(W23), "lin.bias": nb.tensor([1.0, -1.0]), "count": nb.tensor(5.0)}
    out = functional_call(m, params, nb.tensor(X))
    close(out.numpy(), X @ W23.T + [1.0, -1.0])
    assert m.lin.weight is w0 and float(m.count.item()) == 0.0
    assert float(params["count"].item()) == 6.0  # torch's write-back of replaced tensors
    out = functional_call(m, ({"lin.weight": nb.tensor(W23)}, {"lin.bias": nb.zeros(2)}), args=(nb.tensor(X),))
    close(out.numpy(), X @ W23.T)


def test_functional_call_restores_after_an_error_and_checks_keys():
    class Boom(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = Parameter(nb.ones(2))

        def forward(self, x):
            raise RuntimeError("boom")

    m = Boom()
    w = m.w
    with pytest.raises(RuntimeError, match="boom"):
        functional_call(m, {"w": nb.zeros(2)}, nb.ones(2))
    assert m.w is w
    with pytest.raises(RuntimeError, match=r"Unexpected key\(s\): 'v'"):
        functional_call(m, {"w": nb.zeros(2), "v": nb.zeros(2)}, nb.ones(2), strict=True)
    with pytest.raises(RuntimeError, match=r"Missing key\(s\): 'w'"):
        functional_call(m, {}, nb.ones(2), strict=True)
    with pytest.raises(ValueError, match=r"\['w'\] appeared in multiple dictionaries"):
        functional_call(m, ({"w": nb.zeros(2)}, {"w": nb.zeros(2)}), nb.ones(2))
    with pytest.raises(TypeError, match="the value for 'w' must be a Tensor"):
        functional_call(m, {"w": [0.0, 0.0]}, nb.ones(2))
    assert m.w is w


def test_functional_call_ties_weights():
    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied()
    eye2 = nb.tensor(np.eye(2, dtype=np.float32) * 2)
    x = nb.tensor([[1.0, 3.0]])
    close(functional_call(m, {"a.weight": eye2}, x).numpy(), [[4.0, 12.0]])
    w = m.a.weight.numpy()
    close(functional_call(m, {"a.weight": eye2}, x, tie_weights=False).numpy(), (x.numpy() @ (2 * np.eye(2))) @ w.T)
    with pytest.raises(ValueError, match="tied"):
        functional_call(m, {"a.weight": eye2, "b.weight": nb.zeros(2, 2)}, x)


def test_functional_call_composes_with_grad_vmap_and_compile():
    m = nn.Linear(3, 2)
    x = nb.tensor(X)
    params = {"weight": nb.tensor(W23), "bias": nb.tensor([0.5, -0.5])}
    grads = nb.grad(lambda p: functional_call(m, p, x).sum())(params)
    close(grads["weight"].numpy(), np.tile(X.sum(0), (2, 1)))
    close(grads["bias"].numpy(), [2.0, 2.0])
    stacked = {k: nb.stack([v, v * 2.0]) for k, v in params.items()}
    out = nb.vmap(lambda p: functional_call(m, p, x))(stacked)
    base = X @ W23.T + [0.5, -0.5]
    close(out.numpy(), np.stack([base, 2 * base]))
    f = nb.compile(lambda p, x: functional_call(m, p, x))
    for _ in range(3):
        close(f({k: v * 1.0 for k, v in params.items()}, x).numpy(), base)
    assert (f.stats.misses, f.stats.hits) == (1, 2)  # the swapped-in tensors do not retrace


def test_functional_call_through_a_parametrization():
    m = parametrize.register_parametrization(linear(W3), "weight", Symmetric())
    original = m.parametrizations.weight.original
    out = functional_call(m, {"parametrizations.weight.original": nb.tensor(np.eye(3, dtype=np.float32))}, nb.tensor(X))
    close(out.numpy(), X)
    out = functional_call(m, {"weight": nb.tensor(W3.T.copy())}, nb.tensor(X))  # via right_inverse, as torch
    sym = np.triu(W3.T) + np.triu(W3.T, 1).T
    close(out.numpy(), X @ sym.T)
    assert m.parametrizations.weight.original is original
    close(original.numpy(), np.triu(W3))


@pytest.mark.parametrize("cls", [nn.RNN, nn.GRU, nn.LSTM])
def test_recurrent_layers_read_parametrized_weights_and_biases(cls):
    # The recurrent layers read their weights by name: a parametrized bias was dropped silently
    # and a parametrized weight crashed (both were taken from `_parameters`).
    x = nb.tensor(RNG.normal(size=(4, 2, 3)).astype(np.float32))
    m = cls(3, 4, bidirectional=True)
    before = m(x)[0].numpy()
    parametrize.register_parametrization(m, "bias_hh_l0", Double())
    parametrize.register_parametrization(m, "weight_ih_l0_reverse", Double())
    with parametrize.cached():
        out = m(x)[0].numpy()
    plain = cls(3, 4, bidirectional=True)
    state = {k: v.numpy() for k, v in m.state_dict().items()}
    plain.load_state_dict({k: nb.tensor(v) for k, v in state.items() if "parametrizations" not in k}, strict=False)
    plain.bias_hh_l0.data = nb.tensor(state["parametrizations.bias_hh_l0.original"] * 2)
    plain.weight_ih_l0_reverse.data = nb.tensor(state["parametrizations.weight_ih_l0_reverse.original"] * 2)
    close(out, plain(x)[0].numpy())
    assert np.abs(out - before).max() > 1e-3
    parametrizations.weight_norm(m, "weight_hh_l0")
    close(m(x)[0].numpy(), out)


# -- fusion and skip_init ---------------------------------------------------------------------
def _bn_with_stats(n: int, bn_cls=nn.BatchNorm2d):
    bn = bn_cls(n)
    bn.running_mean.data = nb.tensor(RNG.standard_normal(n).astype(np.float32))
    bn.running_var.data = nb.tensor(RNG.uniform(0.5, 2.0, n).astype(np.float32))
    bn.weight.data = nb.tensor(RNG.standard_normal(n).astype(np.float32))
    bn.bias.data = nb.tensor(RNG.standard_normal(n).astype(np.float32))
    return bn.eval()


def test_fuse_linear_bn_weights_written_values():
    w, b = fuse_linear_bn_weights(
        nb.tensor([[1.0, 2.0], [3.0, 4.0]]),
        nb.tensor([1.0, -1.0]),
        nb.tensor([0.5, -0.5]),
        nb.tensor([3.0, 0.0]),
        1.0,
        nb.tensor([4.0, 3.0]),
        nb.tensor([0.0, 1.0]),
    )
    assert isinstance(w, Parameter) and isinstance(b, Parameter)
    close(w.numpy(), [[2.0, 4.0], [9.0, 12.0]])
    close(b.numpy(), [1.0, -0.5])
    w, b = fuse_conv_bn_weights(
        nb.ones(2, 1, 1, 1), None, nb.tensor([1.0, 2.0]), nb.tensor([3.0, 0.0]), 1.0, None, None
    )
    close(w.numpy().ravel(), [0.5, 1.0])
    close(b.numpy(), [-0.5, -2.0])


@pytest.mark.parametrize("transpose", [False, True])
def test_fused_conv_equals_conv_then_bn(transpose: bool):
    conv = (nn.ConvTranspose2d(3, 4, 3) if transpose else nn.Conv2d(3, 4, 3, padding=1)).eval()
    bn = _bn_with_stats(4)
    x = nb.tensor(RNG.standard_normal((2, 3, 5, 5)).astype(np.float32))
    fused = fuse_conv_bn_eval(conv, bn, transpose=transpose)
    assert fused is not conv and type(fused) is type(conv)
    close(fused(x).numpy(), bn(conv(x)).numpy(), rtol=1e-4, atol=1e-5)
    lin = nn.Linear(3, 4).eval()
    bn1 = _bn_with_stats(4, nn.BatchNorm1d)
    xs = nb.tensor(RNG.standard_normal((5, 3)).astype(np.float32))
    close(fuse_linear_bn_eval(lin, bn1)(xs).numpy(), bn1(lin(xs)).numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        fuse_conv_bn_eval(conv.train(), bn)
    with pytest.raises(AssertionError, match="linear.out_features=4 and bn.num_features=3"):
        fuse_linear_bn_eval(lin, _bn_with_stats(3, nn.BatchNorm1d))


def test_skip_init():
    m = skip_init(nn.Linear, 5, 1)
    assert type(m) is nn.Linear and m.weight.shape == (1, 5)
    assert skip_init(nn.Linear, in_features=6, out_features=2, device="cpu").weight.shape == (2, 6)
    with pytest.raises(RuntimeError, match="Expected a Module"):
        skip_init(int)
    with pytest.raises(RuntimeError, match="'device' arg"):
        skip_init(nn.ReLU)


# -- torch parity -----------------------------------------------------------------------------
def _torch_linear(w: np.ndarray, b: np.ndarray | None = None):
    m = torch.nn.Linear(w.shape[1], w.shape[0])
    with torch.no_grad():
        m.weight.copy_(torch.tensor(w))
        m.bias.copy_(torch.tensor(np.zeros(w.shape[0], np.float32) if b is None else b))
    return m


class TorchSymmetric(torch.nn.Module if torch is not None else object):
    def forward(self, X):
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):
        return A.triu()


def _compare_step(m, tm, names: list[str], x: np.ndarray, rtol: float = 1e-5) -> None:
    """Forward, weight and the gradients of `names` (nabla names = torch names) vs torch."""
    y, ty = m(nb.tensor(x)), tm(torch.tensor(x))
    close(y.numpy(), np_of(ty), rtol=rtol, atol=1e-5)
    close(m.weight.numpy(), np_of(tm.weight), rtol=rtol, atol=1e-6)
    (y**2).sum().backward()
    (ty**2).sum().backward()
    tparams, params = dict(tm.named_parameters()), dict(m.named_parameters())
    for name in names:
        close(params[name].grad.numpy(), tparams[name].grad.numpy(), rtol=1e-4, atol=1e-4)


@needs_torch
def test_symmetric_parametrization_vs_torch():
    w, b, x = RNG.standard_normal((4, 4)).astype(np.float32), B3[:1].repeat(4), RNG.standard_normal((5, 4))
    tm = _torch_linear(w, b)
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", TorchSymmetric())
    m = parametrize.register_parametrization(linear(w, b), "weight", Symmetric())
    assert list(m.state_dict()) == list(tm.state_dict())
    close(m.parametrizations.weight.original.numpy(), np_of(tm.parametrizations.weight.original))
    _compare_step(m, tm, ["bias", "parametrizations.weight.original"], x.astype(np.float32))
    fresh = parametrize.register_parametrization(nn.Linear(4, 4), "weight", Symmetric())
    fresh.load_state_dict(tm.state_dict())  # a torch state_dict loads as it is
    close(fresh.weight.numpy(), np_of(tm.weight))


@needs_torch
@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations_vs_torch(leave: bool):
    w = RNG.standard_normal((3, 3)).astype(np.float32)
    tm = _torch_linear(w)
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", TorchSymmetric())
    m = parametrize.register_parametrization(linear(w), "weight", Symmetric())
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight", leave_parametrized=leave)
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=leave)
    assert list(m.state_dict()) == list(tm.state_dict())
    close(m.weight.numpy(), np_of(tm.weight))


@needs_torch
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_vs_torch(dim):
    conv_w = RNG.standard_normal((4, 3, 2, 2)).astype(np.float32)
    tm = torch.nn.Conv2d(3, 4, 2)
    m = nn.Conv2d(3, 4, 2)
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(conv_w))
    m.load_state_dict(tm.state_dict())
    torch.nn.utils.parametrizations.weight_norm(tm, dim=dim)
    parametrizations.weight_norm(m, dim=dim)
    assert list(m.state_dict()) == list(tm.state_dict())
    close(m.parametrizations.weight.original0.numpy(), np_of(tm.parametrizations.weight.original0))
    with torch.no_grad():  # a g that is not ||v||
        tm.parametrizations.weight.original0.mul_(torch.tensor(1.5))
    m.load_state_dict(tm.state_dict())
    x = RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)
    names = ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    _compare_step(m, tm, names, x, rtol=1e-4)
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
    parametrize.remove_parametrizations(m, "weight")
    close(m.weight.numpy(), np_of(tm.weight), rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("layer", ["linear", "conv", "conv_transpose"])
def test_spectral_norm_vs_torch(layer: str):
    make = {
        "linear": (lambda lib: lib.Linear(5, 4), (3, 5)),
        "conv": (lambda lib: lib.Conv2d(2, 3, 3), (2, 2, 5, 5)),
        "conv_transpose": (lambda lib: lib.ConvTranspose2d(2, 3, 3), (2, 2, 4, 4)),
    }
    factory, x_shape = make[layer]
    tm = factory(torch.nn)
    m = factory(nn)
    m.load_state_dict(tm.state_dict())
    torch.nn.utils.parametrizations.spectral_norm(tm)
    parametrizations.spectral_norm(m)
    assert list(m.state_dict()) == list(tm.state_dict())
    m.load_state_dict(tm.state_dict())  # torch's _u, _v (its random start) copied in
    x = RNG.standard_normal(x_shape).astype(np.float32)
    for _ in range(2):  # training mode: each access takes a power-iteration step
        m.zero_grad()
        tm.zero_grad()
        _compare_step(m, tm, ["bias", "parametrizations.weight.original"], x, rtol=1e-4)
    sn, tsn = m.parametrizations.weight[0], tm.parametrizations.weight[0]
    close(sn._u.numpy(), np_of(tsn._u), rtol=1e-4, atol=1e-5)
    close(sn._v.numpy(), np_of(tsn._v), rtol=1e-4, atol=1e-5)
    m.eval()
    tm.eval()
    close(m(nb.tensor(x)).numpy(), np_of(tm(torch.tensor(x))), rtol=1e-4, atol=1e-5)


@needs_torch
def test_hook_based_norms_vs_torch():
    w = RNG.standard_normal((4, 3)).astype(np.float32)
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tm = torch.nn.utils.weight_norm(_torch_linear(w), dim=1)
        m = weight_norm(linear(w), dim=1)
    assert list(m.state_dict()) == list(tm.state_dict())
    close(m.weight_g.numpy(), np_of(tm.weight_g))
    _compare_step(m, tm, ["weight_g", "weight_v"], x)
    tm = torch.nn.utils.spectral_norm(_torch_linear(w))
    m = spectral_norm(linear(w))
    assert list(m.state_dict()) == list(tm.state_dict())
    m.load_state_dict(tm.state_dict())
    for _ in range(2):
        m.zero_grad()
        tm.zero_grad()
        _compare_step(m, tm, ["weight_orig", "bias"], x)
    torch.nn.utils.remove_spectral_norm(tm)
    remove_spectral_norm(m)
    close(m.weight.numpy(), np_of(tm.weight))


@needs_torch
def test_functional_call_grad_vs_torch_func():
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    m.load_state_dict(tm.state_dict())
    values = {k: RNG.standard_normal(tuple(v.shape)).astype(np.float32) for k, v in tm.state_dict().items()}
    x = RNG.standard_normal((5, 3)).astype(np.float32)

    def loss(p):
        return (nb.func.functional_call(m, p, (nb.tensor(x),)) ** 2).sum()  # (torch.func's spelling)

    def tloss(p):
        return (torch.func.functional_call(tm, p, (torch.tensor(x),)) ** 2).sum()

    grads = nb.func.grad(loss)({k: nb.tensor(v) for k, v in values.items()})
    tgrads = torch.func.grad(tloss)({k: torch.tensor(v) for k, v in values.items()})
    for k in values:
        close(grads[k].numpy(), tgrads[k].numpy(), rtol=1e-4, atol=1e-5)
    assert nb.func.functional_call is not functional_call  # (one implementation, reached from both)
    tensors = {k: nb.tensor(v) for k, v in values.items()}
    np.testing.assert_array_equal(
        nb.func.functional_call(m, tensors, nb.tensor(x)).numpy(), functional_call(m, tensors, nb.tensor(x)).numpy()
    )


@needs_torch
def test_functional_call_of_a_parametrized_module_vs_torch():
    w = RNG.standard_normal((3, 3)).astype(np.float32)
    tm = _torch_linear(w)
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", TorchSymmetric())
    m = parametrize.register_parametrization(linear(w), "weight", Symmetric())
    x, value = RNG.standard_normal((2, 3)).astype(np.float32), RNG.standard_normal((3, 3)).astype(np.float32)
    for key in ("weight", "parametrizations.weight.original"):
        out = functional_call(m, {key: nb.tensor(value)}, nb.tensor(x))
        tout = torch.func.functional_call(tm, {key: torch.tensor(value)}, torch.tensor(x))
        close(out.numpy(), np_of(tout))
    close(m.parametrizations.weight.original.numpy(), np_of(tm.parametrizations.weight.original))


@needs_torch
@pytest.mark.parametrize("transpose", [False, True])
def test_fusion_vs_torch(transpose: bool):
    tconv = (torch.nn.ConvTranspose2d(3, 4, 3) if transpose else torch.nn.Conv2d(3, 4, 3, bias=False)).eval()
    tbn = torch.nn.BatchNorm2d(4).eval()
    with torch.no_grad():
        for t in (tbn.running_mean, tbn.weight, tbn.bias):
            t.copy_(torch.tensor(RNG.standard_normal(4).astype(np.float32)))
        tbn.running_var.copy_(torch.tensor(RNG.uniform(0.5, 2.0, 4).astype(np.float32)))
    conv = (nn.ConvTranspose2d(3, 4, 3) if transpose else nn.Conv2d(3, 4, 3, bias=False)).eval()
    bn = nn.BatchNorm2d(4).eval()
    conv.load_state_dict(tconv.state_dict())
    bn.load_state_dict(tbn.state_dict())
    tfused = torch.nn.utils.fuse_conv_bn_eval(tconv, tbn, transpose=transpose)
    fused = fuse_conv_bn_eval(conv, bn, transpose=transpose)
    assert list(fused.state_dict()) == list(tfused.state_dict())
    for key, value in tfused.state_dict().items():
        close(fused.state_dict()[key].numpy(), np_of(value))
    x = RNG.standard_normal((2, 3, 5, 5)).astype(np.float32)
    close(fused(nb.tensor(x)).numpy(), np_of(tfused(torch.tensor(x))), rtol=1e-4, atol=1e-5)
    tlin, tbn1 = torch.nn.Linear(3, 4).eval(), torch.nn.BatchNorm1d(4).eval()
    with torch.no_grad():
        tbn1.running_mean.copy_(torch.tensor(RNG.standard_normal(4).astype(np.float32)))
    lin, bn1 = nn.Linear(3, 4).eval(), nn.BatchNorm1d(4).eval()
    lin.load_state_dict(tlin.state_dict())
    bn1.load_state_dict(tbn1.state_dict())
    tfl = torch.nn.utils.fuse_linear_bn_eval(tlin, tbn1)
    fl = fuse_linear_bn_eval(lin, bn1)
    close(fl.weight.numpy(), np_of(tfl.weight))
    close(fl.bias.numpy(), np_of(tfl.bias))


@pytest.mark.parametrize("reparam", ["weight_norm", "spectral_norm"])
def test_legacy_hook_reparametrizations_under_module_compile(reparam: str) -> None:
    """The legacy weight_norm/spectral_norm set the module's weight in a forward pre-hook: under
    Module.compile the hook runs on the traced copy, whose forward reads that weight."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = nn.Sequential(nn.Linear(5, 4))
        getattr(nn.utils, reparam)(m[0])
        ref = copy.deepcopy(m)
        m.compile()
        x = nb.ones((3, 5))
        for _ in range(2):  # the traced step and a cached one (spectral_norm's power iteration each time)
            m(x).sum().backward()
            ref(x).sum().backward()
        if reparam == "weight_norm":
            with nb.no_grad():
                m[0].weight_g.mul_(2.0)
                ref[0].weight_g.mul_(2.0)
        np.testing.assert_allclose(m(x).numpy(), ref(x).numpy(), rtol=1e-5, atol=1e-6)


def test_a_tensor_a_hook_kept_from_a_compiled_trace_says_so() -> None:
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    m.compile()
    acts = {}
    m[0].register_forward_hook(lambda mod, args, out: acts.__setitem__("fc0", out))
    m(nb.ones((4, 2))).sum().backward()
    with pytest.raises(RuntimeError, match="made while a compiled function was traced"):
        acts["fc0"].numpy()

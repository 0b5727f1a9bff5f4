"""nabla.func with torch.func's keywords and defaults: vmap(in_dims, out_dims, randomness="error",
chunk_size), jacrev(chunk_size, _preallocate_and_copy), jacfwd(randomness), jvp(strict),
stack_module_state, and the meta-learning flows (per-sample gradients, model ensembling)
compared with torch.func where torch is importable."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from _oracle import needs_torch, torch
from _oracle import torch_func as tf

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
from nabla.autograd import forward_ad as fwAD

tfw = torch.autograd.forward_ad if torch is not None else None

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


# -- stack_module_state -----------------------------------------------------------------------


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        return self.out(nb.tanh(self.bn(self.fc(x))))


def test_stack_module_state_order_leaves_and_buffers():
    models = [_Net() for _ in range(3)]
    params, buffers = nb.func.stack_module_state(models)
    assert list(params) == [k for k, _ in models[0].named_parameters()]
    assert list(buffers) == [k for k, _ in models[0].named_buffers()]
    for name, p in params.items():
        assert p.shape == (3, *dict(models[0].named_parameters())[name].shape)
        assert p.requires_grad and p.is_leaf
        np.testing.assert_array_equal(p[1].numpy(), dict(models[1].named_parameters())[name].numpy())
    for b in buffers.values():
        assert not b.requires_grad and b.shape[0] == 3
    assert buffers["bn.num_batches_tracked"].dtype == nb.int64
    params["fc.weight"].sum().backward()  # a new leaf: the models' parameters get no gradient
    assert models[0].fc.weight.grad is None and params["fc.weight"].grad is not None


def test_stack_module_state_frozen_parameters_stay_without_grad():
    models = [nn.Linear(2, 2) for _ in range(2)]
    for m in models:
        m.bias.requires_grad_(False)
    params, _ = nb.func.stack_module_state(models)
    assert params["weight"].requires_grad and not params["bias"].requires_grad
    models[1].weight.requires_grad_(False)
    with pytest.raises(RuntimeError, match="Expected weight from each model to have the same .requires_grad"):
        nb.func.stack_module_state(models)


def test_stack_module_state_errors():
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        nb.func.stack_module_state([])
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        nb.func.stack_module_state([nn.Linear(2, 2), nn.Linear(2, 2).eval()])
    with pytest.raises(RuntimeError, match="same class.*Linear.*Tanh"):
        nb.func.stack_module_state([nn.Linear(2, 2), nn.Tanh()])
    with pytest.raises(RuntimeError, match="fc.weight.*one shape"):
        a, b = _Net(), _Net()
        b.fc = nn.Linear(3, 4, bias=True)
        b.fc.weight = nn.Parameter(nb.zeros((5, 3)))
        nb.func.stack_module_state([a, b])
    with pytest.raises(RuntimeError, match="same parameters"):
        nb.func.stack_module_state([nn.Linear(2, 2), nn.Linear(2, 2, bias=False)])


def test_stack_module_state_takes_a_module_list():
    params, _ = nb.func.stack_module_state(nn.ModuleList([nn.Linear(2, 3) for _ in range(4)]))
    assert params["weight"].shape == (4, 3, 2)


# -- the meta-learning flows, against torch.func ---------------------------------------------


def _pair(torch_model, nabla_model):
    state = {k: nb.tensor(v.detach().numpy()) for k, v in torch_model.state_dict().items()}
    nabla_model.load_state_dict(state)
    return nabla_model


@needs_torch
def test_per_sample_gradients_match_torch_func():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    nm = _pair(tm, nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)))
    x, y = _r(6, 4), RNG.integers(0, 3, size=6)

    def t_loss(p, xi, yi):
        out = tf.functional_call(tm, p, (xi[None],))
        return torch.nn.functional.cross_entropy(out, yi[None])

    def n_loss(p, xi, yi):
        out = nb.func.functional_call(nm, p, (xi[None],))
        return F.cross_entropy(out, yi[None])

    t_params = {k: v.detach() for k, v in tm.named_parameters()}
    n_params = {k: v.detach() for k, v in nm.named_parameters()}
    want = tf.vmap(tf.grad(t_loss), in_dims=(None, 0, 0))(t_params, torch.tensor(x), torch.tensor(y))
    got = nb.func.vmap(nb.func.grad(n_loss), in_dims=(None, 0, 0))(n_params, nb.tensor(x), nb.tensor(y))
    assert list(got) == list(want) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    for k in want:
        assert got[k].shape == tuple(want[k].shape)
        np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=1e-4, atol=1e-6)


class _TNet(torch.nn.Module if torch is not None else object):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(3, 4)
        self.bn = torch.nn.BatchNorm1d(4)
        self.out = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.out(torch.tanh(self.bn(self.fc(x))))


@needs_torch
def test_ensemble_with_stack_module_state_matches_torch_func():
    torch.manual_seed(1)
    t_models = [_TNet() for _ in range(3)]
    for i, m in enumerate(t_models):  # distinct running stats, used in eval mode
        m.bn.running_mean.fill_(0.1 * i)
        m.bn.running_var.fill_(1.0 + i)
        m.eval()
    n_models = [_pair(t, _Net()).eval() for t in t_models]
    x = _r(5, 3)

    t_params, t_buffers = tf.stack_module_state(t_models)
    t_base = copy.deepcopy(t_models[0]).to("meta")
    want = tf.vmap(lambda p, b, xx: tf.functional_call(t_base, (p, b), (xx,)), in_dims=(0, 0, None))(
        t_params, t_buffers, torch.tensor(x)
    )
    n_params, n_buffers = nb.func.stack_module_state(n_models)
    n_base = copy.deepcopy(n_models[0])  # no meta device: a real copy serves as the base
    got = nb.func.vmap(lambda p, b, xx: nb.func.functional_call(n_base, (p, b), (xx,)), in_dims=(0, 0, None))(
        n_params, n_buffers, nb.tensor(x)
    )
    assert list(n_params) == list(t_params) and list(n_buffers) == list(t_buffers)
    assert got.shape == tuple(want.shape) == (3, 5, 2)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_module_to_meta_raises_naming_the_deepcopy_alternative():
    m = nn.Linear(2, 3)
    before = m.weight.numpy().copy()
    for call in (lambda: copy.deepcopy(m).to("meta"), lambda: m.to(device="meta"), lambda: m.to("meta", nb.float64)):
        with pytest.raises(NotImplementedError, match=r"no 'meta' device.*copy\.deepcopy\(models\[0\]\)"):
            call()
    np.testing.assert_array_equal(m.weight.numpy(), before)
    assert m.weight.dtype == nb.float32  # nothing changed before the error
    out = nb.func.functional_call(
        copy.deepcopy(m), {"weight": nb.zeros((3, 2)), "bias": nb.ones(3)}, (nb.ones((1, 2)),)
    )
    assert out.tolist() == [[1.0, 1.0, 1.0]]


# -- nabla.autograd.forward_ad ----------------------------------------------------------------


def test_forward_ad_dual_tangent_through_ops():
    x = nb.tensor([0.0, 1.0, 2.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, nb.ones(3))
        y = nb.sin(d) * d
        out = fwAD.unpack_dual(y)
        assert isinstance(out, fwAD.UnpackedDualTensor) and out == (out.primal, out.tangent)
        v = np.array([0.0, 1.0, 2.0])
        np.testing.assert_allclose(out.primal.numpy(), np.sin(v) * v, rtol=1e-6)
        np.testing.assert_allclose(out.tangent.numpy(), np.cos(v) * v + np.sin(v), rtol=1e-6)
        assert fwAD.unpack_dual(out.primal).tangent is None  # the primal is not dual
        assert fwAD.unpack_dual(x).tangent is None  # make_dual left x as it was
    assert fwAD.unpack_dual(y).tangent is None and fwAD.unpack_dual(d).tangent is None  # level closed
    assert y._impl.tangent is None and d._impl.tangent is None
    np.testing.assert_allclose((nb.sin(d) * 2).numpy(), np.sin(v) * 2, rtol=1e-6)


def test_forward_ad_errors_as_torch():
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(nb.ones(2), nb.ones(2))
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD"):
            fwAD.enter_dual_level()
        with pytest.raises(RuntimeError, match="different size.*size \\[2\\].*size \\[3\\]"):
            fwAD.make_dual(nb.ones(2), nb.ones(3))
        with pytest.raises(ValueError, match="Expected primal to be floating point"):
            fwAD.make_dual(nb.ones(2, dtype=nb.int64), nb.ones(2))
    level = fwAD.enter_dual_level()  # the level is free again after the error inside
    fwAD.exit_dual_level(level=level)
    with pytest.raises(RuntimeError, match="not the last one"):
        fwAD.exit_dual_level()


def test_forward_ad_decorator_and_nested_func_jvp():
    x = nb.tensor([1.0, 2.0])

    @fwAD.dual_level()
    def tangent_of_square(v):
        return fwAD.unpack_dual(fwAD.make_dual(x, v) ** 2).tangent

    assert tangent_of_square(nb.tensor([1.0, 0.0])).tolist() == [2.0, 0.0]
    with fwAD.dual_level():
        d = fwAD.make_dual(x, nb.ones(2))
        _, jt = nb.func.jvp(lambda a: a * d, (x,), (nb.ones(2),))
        assert jt.tolist() == [1.0, 2.0]  # d/da (a * d) . 1 = d's primal
        assert fwAD.unpack_dual(jt).tangent.tolist() == [1.0, 1.0]  # d(jt)/d(level) = 1


@needs_torch
def test_forward_ad_module_jvp_matches_torch():
    """torch's forward-AD tutorial: dual parameters through functional_call."""
    torch.manual_seed(2)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    nm = _pair(tm, nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2)))
    x = _r(3, 4)
    dirs = {k: _r(*v.shape) for k, v in tm.named_parameters()}
    with tfw.dual_level():
        p = {k: tfw.make_dual(v.detach(), torch.tensor(dirs[k])) for k, v in tm.named_parameters()}
        want = tfw.unpack_dual(tf.functional_call(tm, p, (torch.tensor(x),))).tangent
    with fwAD.dual_level():
        p = {k: fwAD.make_dual(v.detach(), nb.tensor(dirs[k])) for k, v in nm.named_parameters()}
        got = fwAD.unpack_dual(nb.func.functional_call(nm, p, (nb.tensor(x),))).tangent
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert all(v._impl.tangent is None for v in nm.parameters())


@needs_torch
def test_forward_over_reverse_hvp_matches_torch():
    xv, vv = _r(3), _r(3)
    tx = torch.tensor(xv, requires_grad=True)
    with tfw.dual_level():
        d = tfw.make_dual(tx, torch.tensor(vv))
        (g,) = torch.autograd.grad((d**3).sum(), d, create_graph=True)
        want = tfw.unpack_dual(g).tangent
    nx = nb.tensor(xv, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(nx, nb.tensor(vv))
        (g,) = nb.autograd.grad((d**3).sum(), d, create_graph=True)
        got = fwAD.unpack_dual(g).tangent
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(got.detach().numpy(), 6 * xv * vv, rtol=1e-5)

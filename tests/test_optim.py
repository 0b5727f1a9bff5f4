"""nabla_optim optimizers: PyTorch's numerics, one graph per training step, state_dicts, errors."""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import pytest
from _oracle import needs_torch, torch
from max.graph import DeviceRef, Graph, TensorType

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla import DeviceMesh
from nabla.ops.base import Operation
from nabla_nn.parallel import colwise, rowwise, shard_module
from nabla_nn.parameter import Parameter
from nabla_optim.fused import fused_update

SHAPES = ((4, 3), (3,))
# Muon takes 2-D parameters only (a tall and a wide one); Adafactor factors the second moment
# of a matrix and of a batch of them, and keeps a vector's whole
OWN_SHAPES = {"Muon": ((4, 3), (3, 5)), "Adafactor": ((4, 3), (2, 3, 5), (3,))}


def _shapes(name: str) -> tuple:
    return OWN_SHAPES.get(name, SHAPES)


def _torch_opt(name: str, params: list, **kwargs: object) -> object:
    """PyTorch's optimizer `name`, its single-tensor implementation where it has a choice."""
    return getattr(torch.optim, name)(params, **({} if name == "Muon" else {"foreach": False}), **kwargs)


# (optimizer name, kwargs): each runs in nabla and PyTorch from the same start with the same grads.
CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.1, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "maximize": True, "eps": 1e-6}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "centered": True, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.1, "initial_accumulator_value": 0.1}),
    ("Adamax", {"lr": 0.01}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {"lr": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "momentum_decay": 0.01}),
    # RAdam rectifies from the 6th step on (rho_t > 5) where beta2 >= 0.9
    ("RAdam", {"lr": 0.01}),
    ("RAdam", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1, "maximize": True}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("Adadelta", {"lr": 1.0}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.1, "maximize": True}),
    ("Rprop", {"lr": 0.01}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (0.02, 0.08), "maximize": True}),
    ("ASGD", {"lr": 0.05}),
    # t0=2: mu = 1/2 after step 4, so steps 5 and 6 average
    ("ASGD", {"lr": 0.05, "lambd": 0.1, "alpha": 0.5, "t0": 2, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.05, "lambd": 0.05, "t0": 0.5, "maximize": True}),
    ("Adafactor", {}),
    ("Adafactor", {"lr": 0.1, "beta2_decay": -0.5, "eps": (1e-30, 1e-2), "d": 1.5, "weight_decay": 0.1}),
    ("Adafactor", {"lr": 0.05, "weight_decay": 0.01, "maximize": True}),
    ("Muon", {}),
    ("Muon", {"lr": 0.02, "momentum": 0.9, "nesterov": False, "weight_decay": 0.0}),
    ("Muon", {"lr": 0.02, "adjust_lr_fn": "match_rms_adamw", "ns_steps": 3, "eps": 1e-5}),
    ("Muon", {"lr": 0.05, "ns_coefficients": (2.0, -1.5, 0.5), "adjust_lr_fn": "original"}),
]

ALL_OPTIMIZERS = {
    "SGD": {"lr": 0.1, "momentum": 0.9},
    "Adam": {"lr": 0.01},
    "AdamW": {"lr": 0.01},
    "RMSprop": {"lr": 0.01, "momentum": 0.5},
    "Adagrad": {"lr": 0.1},
    "Adamax": {"lr": 0.01},
    "NAdam": {"lr": 0.01},
    "Lion": {"lr": 0.01, "weight_decay": 0.1},
    "RAdam": {"lr": 0.01},
    "Adadelta": {"lr": 1.0},
    "Rprop": {"lr": 0.01},
    "ASGD": {"lr": 0.05, "lambd": 0.01, "t0": 2},
    "Adafactor": {"lr": 0.05},
    "Muon": {"lr": 0.02},
}


def _data(steps: int, dtype: type = np.float32, seed: int = 0, shapes: tuple = SHAPES) -> tuple[list, list]:
    rng = np.random.default_rng(seed)
    inits = [rng.standard_normal(s).astype(dtype) for s in shapes]
    grads = [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(steps)]
    return inits, grads


def _run_nabla(name: str, kwargs: dict, inits: list, grads: list) -> tuple[list, optim.Optimizer]:
    params = [Parameter(nb.tensor(a)) for a in inits]
    opt = getattr(optim, name)(params, **kwargs)
    for step_grads in grads:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = nb.tensor(g)
        opt.step()
    return params, opt


# -- PyTorch parity ---------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_matches_torch(name: str, kwargs: dict) -> None:
    inits, grads = _data(6, shapes=_shapes(name))
    params, opt = _run_nabla(name, kwargs, inits, grads)
    tparams = [torch.nn.Parameter(torch.tensor(a)) for a in inits]
    topt = _torch_opt(name, tparams, **kwargs)
    for step_grads in grads:
        for p, g in zip(tparams, step_grads, strict=True):
            p.grad = torch.tensor(g)
        topt.step()
    for p, tp in zip(params, tparams, strict=True):
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-6, atol=1e-7)
        tstate, state = topt.state[tp], opt.state[p]
        assert set(tstate) <= set(state)
        for key, value in tstate.items():
            np.testing.assert_allclose(state[key].numpy(), value.numpy(), rtol=1e-6, atol=1e-7, err_msg=key)
            assert state[key].dtype == nb.float32
            assert state[key].shape == tuple(value.shape)


@needs_torch
@pytest.mark.parametrize("name", ["Adam", "NAdam", "SGD", "Adafactor", "Muon"])
def test_matches_torch_float64(name: str) -> None:
    kwargs = {"lr": 0.05, "momentum": 0.9} if name == "SGD" else {"lr": 0.05, "weight_decay": 0.01}
    inits, grads = _data(5, np.float64, shapes=_shapes(name))
    params, opt = _run_nabla(name, kwargs, inits, grads)
    tparams = [torch.nn.Parameter(torch.tensor(a)) for a in inits]
    topt = _torch_opt(name, tparams, **kwargs)
    for step_grads in grads:
        for p, g in zip(tparams, step_grads, strict=True):
            p.grad = torch.tensor(g)
        topt.step()
    for p, tp in zip(params, tparams, strict=True):
        assert p.dtype == nb.float64
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-12, atol=1e-14)
        for key, value in topt.state[tp].items():
            want = value.numpy()
            assert opt.state[p][key].numpy().dtype == want.dtype, key
            np.testing.assert_allclose(opt.state[p][key].numpy(), want, rtol=1e-12, atol=1e-14, err_msg=key)


@needs_torch
def test_matches_torch_with_a_scheduler_changing_lr_and_betas() -> None:
    inits, grads = _data(8)
    params = [Parameter(nb.tensor(a)) for a in inits]
    opt = optim.Adam(params, lr=0.01)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=10)
    tparams = [torch.nn.Parameter(torch.tensor(a)) for a in inits]
    topt = torch.optim.Adam(tparams, lr=0.01, foreach=False)
    tsched = torch.optim.lr_scheduler.OneCycleLR(topt, max_lr=0.05, total_steps=10)
    for step_grads in grads:
        for p, tp, g in zip(params, tparams, step_grads, strict=True):
            p.grad, tp.grad = nb.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
    for p, tp in zip(params, tparams, strict=True):
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-6, atol=1e-7)


# -- NumPy references (no torch) -------------------------------------------------------------
def test_sgd_momentum_matches_numpy() -> None:
    inits, grads = _data(6)
    lr, mom, damp, wd = 0.1, 0.9, 0.2, 0.01
    params, opt = _run_nabla("SGD", {"lr": lr, "momentum": mom, "dampening": damp, "weight_decay": wd}, inits, grads)
    for i, p in enumerate(params):
        w, buf = inits[i].astype(np.float64), None
        for step_grads in grads:
            g = step_grads[i] + wd * w
            buf = g if buf is None else mom * buf + (1 - damp) * g
            w = w - lr * buf
        np.testing.assert_allclose(p.numpy(), w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(opt.state[p]["momentum_buffer"].numpy(), buf, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam_matches_numpy(amsgrad: bool) -> None:
    inits, grads = _data(6)
    lr, (b1, b2), eps = 0.01, (0.9, 0.999), 1e-8
    params, opt = _run_nabla("Adam", {"lr": lr, "amsgrad": amsgrad}, inits, grads)
    for i, p in enumerate(params):
        w = inits[i].astype(np.float64)
        m = v = vmax = np.zeros_like(w)
        for t, step_grads in enumerate(grads, start=1):
            g = step_grads[i]
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            vmax = np.maximum(vmax, v)
            vhat = (vmax if amsgrad else v) / (1 - b2**t)
            w = w - lr * (m / (1 - b1**t)) / (np.sqrt(vhat) + eps)
        np.testing.assert_allclose(p.numpy(), w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(opt.state[p]["exp_avg_sq"].numpy(), v, rtol=1e-5, atol=1e-9)
        assert opt.state[p]["step"].item() == len(grads)


def _np_rmsprop(w, g, s, t, lr=0.01, alpha=0.9, eps=1e-8, momentum=0.5):
    s["sq"] = alpha * s.get("sq", 0) + (1 - alpha) * g * g
    s["avg"] = alpha * s.get("avg", 0) + (1 - alpha) * g  # centered
    s["buf"] = momentum * s.get("buf", 0) + g / (np.sqrt(s["sq"] - s["avg"] ** 2) + eps)
    return w - lr * s["buf"]


def _np_adagrad(w, g, s, t, lr=0.1, lr_decay=0.05, eps=1e-10):
    s["sum"] = s.get("sum", 0) + g * g
    return w - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(s["sum"]) + eps)


def _np_adamax(w, g, s, t, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["u"] = np.maximum(b2 * s.get("u", 0), np.abs(g) + eps)
    return w - lr / (1 - b1**t) * s["m"] / s["u"]


def _np_nadam(w, g, s, t, lr=0.01, b1=0.9, b2=0.999, eps=1e-8, psi=4e-3):
    mu, mu_next = (b1 * (1 - 0.5 * 0.96 ** (k * psi)) for k in (t, t + 1))
    s["prod"] = s.get("prod", 1.0) * mu
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    denom = np.sqrt(s["v"] / (1 - b2**t)) + eps
    return w - lr * (1 - mu) / (1 - s["prod"]) * g / denom - lr * mu_next / (1 - s["prod"] * mu_next) * s["m"] / denom


def _np_nesterov(w, g, s, t, lr=0.1, momentum=0.9):
    s["buf"] = g if t == 1 else momentum * s["buf"] + g
    return w - lr * (g + momentum * s["buf"])


NUMPY_REFERENCES = [
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "momentum": 0.5, "centered": True}, _np_rmsprop),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05}, _np_adagrad),
    ("Adamax", {"lr": 0.01}, _np_adamax),
    ("NAdam", {"lr": 0.01}, _np_nadam),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}, _np_nesterov),
]


@pytest.mark.parametrize(("name", "kwargs", "reference"), NUMPY_REFERENCES, ids=[r[0] for r in NUMPY_REFERENCES])
def test_matches_numpy_reference(name: str, kwargs: dict, reference: Callable) -> None:
    inits, grads = _data(6)
    params, _ = _run_nabla(name, kwargs, inits, grads)
    for i, p in enumerate(params):
        w, state = inits[i].astype(np.float64), {}
        for t, step_grads in enumerate(grads, start=1):
            w = reference(w, step_grads[i].astype(np.float64), state, t)
        np.testing.assert_allclose(p.numpy(), w, rtol=1e-5, atol=1e-6)


def test_adamw_decouples_weight_decay() -> None:
    inits, grads = _data(1)
    zero = [[np.zeros_like(g) for g in grads[0]]]
    params, _ = _run_nabla("AdamW", {"lr": 0.1, "weight_decay": 0.5}, inits, zero)
    # a zero gradient leaves the moments at 0: only the decay p *= 1 - lr * wd acts
    np.testing.assert_allclose(params[0].numpy(), inits[0] * (1 - 0.1 * 0.5), rtol=1e-6)


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_lion_matches_the_paper(weight_decay: float) -> None:
    inits, grads = _data(6)
    lr, (b1, b2) = 0.01, (0.9, 0.99)
    params, opt = _run_nabla("Lion", {"lr": lr, "weight_decay": weight_decay}, inits, grads)
    for i, p in enumerate(params):
        w, m = inits[i].astype(np.float64), np.zeros(inits[i].shape)
        for step_grads in grads:
            g = step_grads[i]
            w = w * (1 - lr * weight_decay) - lr * np.sign(b1 * m + (1 - b1) * g)
            m = b2 * m + (1 - b2) * g
        np.testing.assert_allclose(p.numpy(), w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(opt.state[p]["exp_avg"].numpy(), m, rtol=1e-5, atol=1e-7)
    assert optim.Lion(params).defaults["lr"] == 1e-4 and optim.Lion(params).defaults["betas"] == (0.9, 0.99)


# -- values written down from PyTorch 2.13 (torch.optim, foreach=False): checked without torch --
P0 = [1.0, -2.0, 0.5]
GRADS = [[0.5, -1.0, 0.0], [-0.3, -0.5, 1.0], [0.2, -0.8, 0.6], [-0.4, 0.3, 0.9], [0.7, -0.2, -0.5], [-0.6, 0.4, 0.8]]

# (name, kwargs, steps, parameter after them, state in PyTorch's order). Two steps; RAdam six,
# as only its sixth is rectified (rho_t > 5).
TORCH_VALUES = [
    (
        "RAdam",
        {"lr": 0.1, "weight_decay": 0.1},
        6,
        [0.86943007, -1.5704216, 0.26428467],
        {
            "step": 6.0,
            "exp_avg": [0.037857503, -0.18512794, 0.23512173],
            "exp_avg_sq": [0.001467214, 0.0030668122, 0.0032935333],
        },
    ),
    (
        "RAdam",
        {"lr": 0.1, "betas": (0.8, 0.9), "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True},
        6,
        [1.0140102, -2.1992772, 0.6959388],
        {
            "step": 6.0,
            "exp_avg": [0.030528007, 0.102015994, -0.33856001],
            "exp_avg_sq": [0.11664315, 0.1489975, 0.243964],
        },
    ),
    (
        "Adadelta",
        {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1},
        2,
        [0.9994344, -1.9980183, 0.49730414],
        {
            "step": 2.0,
            "square_avg": [0.06560895, 0.3283687, 0.22085308],
            "acc_delta": [1.0441257e-06, 1.3966937e-06, 2.7927795e-06],
        },
    ),
    (
        "Adadelta",
        {"eps": 1e-4, "maximize": True},
        2,
        [1.0077168, -2.052444, 0.531607],
        {"step": 2.0, "square_avg": [0.0315, 0.115, 0.1], "acc_delta": [0.00014648997, 0.00013332887, 9.990009e-05]},
    ),
    # the first coordinate's sign flips (its step is skipped and the step size hits the minimum),
    # the second's holds (it hits the maximum), the third's gradient was zero (factor 1)
    (
        "Rprop",
        {"lr": 0.01, "etas": (0.4, 1.5), "step_sizes": (0.005, 0.012)},
        2,
        [0.99, -1.978, 0.49],
        {"step": 2.0, "prev": [0.0, -0.5, 1.0], "step_size": [0.005, 0.012, 0.01]},
    ),
    (
        "Rprop",
        {"lr": 0.01, "maximize": True},
        2,
        [1.01, -2.022, 0.51],
        {"step": 2.0, "prev": [0.0, 0.5, -1.0], "step_size": [0.005, 0.012, 0.01]},
    ),
    # t0=-1: mu = 1/2 after the first step, so the second averages
    (
        "ASGD",
        {"lr": 0.1, "lambd": 0.5, "t0": -1.0, "weight_decay": 0.1},
        2,
        [0.86744076, -1.6288339, 0.34640637],
        {"step": 2.0, "eta": 0.09310125, "mu": 0.33333334, "ax": [0.8787204, -1.704417, 0.40820318]},
    ),
    (
        "ASGD",
        {"lr": 0.1, "alpha": 0.5, "maximize": True},
        2,
        [1.0199796, -2.1499586, 0.5999895],
        {"step": 2.0, "eta": 0.099999, "mu": 1.0, "ax": [1.0199796, -2.1499586, 0.5999895]},
    ),
]


@pytest.mark.parametrize(
    ("name", "kwargs", "steps", "want_p", "want_state"),
    TORCH_VALUES,
    ids=[f"{v[0]}-{i}" for i, v in enumerate(TORCH_VALUES)],
)
def test_matches_values_from_torch(name: str, kwargs: dict, steps: int, want_p: list, want_state: dict) -> None:
    p = Parameter(nb.tensor(np.array(P0, np.float32)))
    opt = getattr(optim, name)([p], **kwargs)
    for g in GRADS[:steps]:
        p.grad = nb.tensor(np.array(g, np.float32))
        opt.step()
    np.testing.assert_allclose(p.numpy(), want_p, rtol=1e-6, atol=1e-7)
    state = opt.state[p]
    assert list(state) == list(want_state)  # PyTorch's state_dict layout
    for key, value in want_state.items():
        assert state[key].dtype == nb.float32
        np.testing.assert_allclose(state[key].numpy(), value, rtol=1e-6, atol=1e-12, err_msg=key)


def test_maximize_ascends() -> None:
    p = Parameter(nb.tensor(np.zeros(3, np.float32)))
    opt = optim.SGD([p], lr=0.5, maximize=True)
    p.grad = nb.tensor(np.array([1.0, -2.0, 0.0], np.float32))
    opt.step()
    np.testing.assert_array_equal(p.numpy(), [0.5, -1.0, 0.0])


def test_defaults_are_pytorchs() -> None:
    p = [Parameter(nb.zeros(2))]
    assert optim.SGD(p).defaults["lr"] == 1e-3
    assert optim.Adam(p).defaults == {
        "lr": 1e-3,
        "betas": (0.9, 0.999),
        "eps": 1e-8,
        "weight_decay": 0,
        "amsgrad": False,
        "maximize": False,
        "decoupled_weight_decay": False,
    }
    assert optim.AdamW(p).defaults["weight_decay"] == 1e-2
    assert optim.RMSprop(p).defaults["lr"] == 1e-2 and optim.RMSprop(p).defaults["alpha"] == 0.99
    assert optim.Adagrad(p).defaults["eps"] == 1e-10
    assert optim.Adamax(p).defaults["lr"] == 2e-3
    assert optim.NAdam(p).defaults["momentum_decay"] == 4e-3


# -- one graph per step, compiled once --------------------------------------------------------
def _tiny_problem(seed: int = 0, name: str = "") -> tuple[list, nb.Tensor, nb.Tensor]:
    """A linear regression; Muon's bias is a (1, 3) matrix, as it takes 2-D parameters only."""
    rng = np.random.default_rng(seed)
    w = Parameter(nb.tensor(rng.standard_normal((4, 3)).astype(np.float32)))
    b = Parameter(nb.tensor(np.zeros((1, 3) if name == "Muon" else 3, np.float32)))
    x = nb.tensor(rng.standard_normal((8, 4)).astype(np.float32))
    y = nb.tensor(rng.standard_normal((8, 3)).astype(np.float32))
    return [w, b], x, y


def _fresh_cache() -> None:
    """Empty the model cache (an earlier test may have built the same graph) and its counters."""
    nb.clear_cache()
    nb.reset_cache_info()


def _loss(params: list, x: nb.Tensor, y: nb.Tensor) -> nb.Tensor:
    w, b = params
    return ((x @ w + b - y) ** 2).mean()


@pytest.mark.parametrize("name", list(ALL_OPTIMIZERS))
@pytest.mark.parametrize("scheduled", [False, True], ids=["fixed-lr", "scheduled-lr"])
def test_training_loop_compiles_once(name: str, scheduled: bool) -> None:
    params, x, y = _tiny_problem(name=name)
    opt = getattr(optim, name)(params, **ALL_OPTIMIZERS[name])
    sched = optim.lr_scheduler.ExponentialLR(opt, gamma=0.9) if scheduled else None
    _fresh_cache()
    losses = []
    for _ in range(10):
        opt.zero_grad()
        loss = _loss(params, x, y)
        loss.backward()
        assert not loss.is_realized and not params[0].grad.is_realized  # nothing ran yet
        opt.step()
        assert loss.is_realized and params[0].is_realized
        before = nb.cache_info().executions
        losses.append(loss.item())  # already computed by the step's graph
        assert nb.cache_info().executions == before
        if sched is not None:
            sched.step()
    info = nb.cache_info()
    assert (info.misses, info.hits, info.executions) == (1, 9, 10)
    assert losses[-1] < losses[0]
    if scheduled:
        assert opt.param_groups[0]["lr"] == pytest.approx(ALL_OPTIMIZERS[name]["lr"] * 0.9**10)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_one_cycle_momentum_changes_do_not_recompile(name: str) -> None:
    params, x, y = _tiny_problem()
    opt = getattr(optim, name)(params, lr=0.01, **({"momentum": 0.9} if name != "Adam" else {}))
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=12)
    _fresh_cache()
    momenta = []
    for _ in range(10):
        opt.zero_grad()
        _loss(params, x, y).backward()
        opt.step()
        sched.step()
        group = opt.param_groups[0]
        momenta.append(group["betas"][0] if name == "Adam" else group["momentum"])
    assert len(set(momenta)) == 10
    info = nb.cache_info()
    assert (info.misses, info.hits) == (1, 9)


def test_a_new_lr_is_used_without_recompiling() -> None:
    params, x, y = _tiny_problem()
    opt = optim.SGD(params, lr=0.1)
    for lr in (0.1, 0.5, 0.0):
        opt.param_groups[0]["lr"] = lr
        opt.zero_grad()
        _loss(params, x, y).backward()
        grad = params[1].grad.numpy()  # evaluates forward+backward (a separate graph)
        before = params[1].numpy()
        if lr == 0.1:
            _fresh_cache()
        nb.reset_cache_info()
        opt.step()
        assert nb.cache_info().misses == (1 if lr == 0.1 else 0)
        np.testing.assert_allclose(params[1].numpy(), before - np.float32(lr) * grad, rtol=1e-6, atol=1e-7)


def test_compiled_train_step_matches_eager() -> None:
    params, x, y = _tiny_problem()
    ref, _, _ = _tiny_problem()
    opt = optim.Adam(params, lr=0.01)
    ref_opt = optim.Adam(ref, lr=0.01)
    sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    ref_sched = optim.lr_scheduler.StepLR(ref_opt, step_size=2, gamma=0.5)

    @nb.compile
    def train_step(x: nb.Tensor, y: nb.Tensor) -> nb.Tensor:
        opt.zero_grad()
        loss = _loss(params, x, y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(5):
        loss = train_step(x, y)
        ref_opt.zero_grad()
        ref_loss = _loss(ref, x, y)
        ref_loss.backward()
        ref_opt.step()
        sched.step()
        ref_sched.step()
        assert loss.item() == ref_loss.item()
    for p, q in zip(params, ref, strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    assert opt.state[params[0]]["step"].item() == 5
    assert (train_step.stats.traces, train_step.stats.hits) == (1, 4)


# -- state_dict -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "kwargs"),
    [*ALL_OPTIMIZERS.items(), ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.5})],
)
def test_resume_from_state_dict_is_bit_identical(name: str, kwargs: dict) -> None:
    params, x, y = _tiny_problem(name=name)
    opt = getattr(optim, name)(params, **kwargs)

    def train(ps: list, o: optim.Optimizer, steps: int) -> None:
        for _ in range(steps):
            o.zero_grad()
            _loss(ps, x, y).backward()
            o.step()

    train(params, opt, 3)
    saved_params = [p.numpy().copy() for p in params]
    saved = opt.state_dict()
    train(params, opt, 3)
    resumed = [Parameter(nb.tensor(a)) for a in saved_params]
    opt2 = getattr(optim, name)(resumed, lr=123.0)
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["lr"] == kwargs["lr"]
    nb.reset_cache_info()
    train(resumed, opt2, 3)
    assert nb.cache_info().misses == 0  # the loaded state has the structure of the live one
    for p, q in zip(params, resumed, strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_state_dict_layout_and_snapshot() -> None:
    params, x, y = _tiny_problem()
    opt = optim.Adam([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.1}], lr=0.01)
    opt.zero_grad()
    _loss(params, x, y).backward()
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert [g["lr"] for g in sd["param_groups"]] == [0.01, 0.1]
    assert sorted(sd["state"]) == [0, 1]
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    first = sd["state"][0]["exp_avg"].numpy().copy()
    opt.step()  # a later step does not change a state_dict already taken
    np.testing.assert_array_equal(sd["state"][0]["exp_avg"].numpy(), first)
    assert sd["state"][0]["step"].item() == 1 and opt.state[params[0]]["step"].item() == 2


@needs_torch
@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("Adam", {"lr": 0.01}),
        ("RAdam", {"lr": 0.01}),
        ("Adadelta", {}),
        ("Rprop", {}),
        ("ASGD", {"t0": 1}),
        ("Adafactor", {"lr": 0.05}),
        ("Muon", {"lr": 0.02}),
    ],
)
def test_loads_a_torch_state_dict(name: str, kwargs: dict) -> None:
    inits, grads = _data(8 if name == "RAdam" else 4, shapes=_shapes(name))  # RAdam: past its rectification
    tparams = [torch.nn.Parameter(torch.tensor(a)) for a in inits]
    topt = _torch_opt(name, tparams, **kwargs)
    for step_grads in grads[:2]:
        for p, g in zip(tparams, step_grads, strict=True):
            p.grad = torch.tensor(g)
        topt.step()
    params = [Parameter(nb.tensor(p.detach().numpy().copy())) for p in tparams]
    opt = getattr(optim, name)(params)
    opt.load_state_dict(topt.state_dict())
    for step_grads in grads[2:]:
        for p, tp, g in zip(params, tparams, step_grads, strict=True):
            p.grad, tp.grad = nb.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
    for p, tp in zip(params, tparams, strict=True):
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_load_state_dict_errors() -> None:
    params, x, y = _tiny_problem()
    opt = optim.Adam(params)
    opt.zero_grad()
    _loss(params, x, y).backward()
    opt.step()
    sd = opt.state_dict()
    with pytest.raises(ValueError, match="2 parameter groups, the optimizer has 1"):
        optim.Adam(params).load_state_dict({"state": {}, "param_groups": sd["param_groups"] * 2})
    with pytest.raises(ValueError, match="group 0 has 2 parameters, the optimizer's group 0 has 1"):
        optim.Adam(params[:1]).load_state_dict(sd)
    swapped = optim.Adam([params[1], params[0]])
    with pytest.raises(ValueError, match=r"state 'exp_avg' of parameter 0 has shape \(4, 3\).*shape \(3,\)"):
        swapped.load_state_dict(sd)
    with pytest.raises(ValueError, match="'state' and 'param_groups'"):
        opt.load_state_dict({"state": {}})


# -- API behaviour ----------------------------------------------------------------------------
def test_zero_grad() -> None:
    params, x, y = _tiny_problem()
    opt = optim.SGD(params, lr=0.1)
    _loss(params, x, y).backward()
    opt.zero_grad(set_to_none=False)
    assert all(p.grad.is_realized and not p.grad.numpy().any() for p in params)
    opt.zero_grad()
    assert all(p.grad is None for p in params)


def test_frozen_parameters_are_skipped() -> None:
    params, x, y = _tiny_problem()
    frozen = Parameter(nb.tensor(np.ones(2, np.float32)), requires_grad=False)
    no_grad = Parameter(nb.tensor(np.ones(2, np.float32)))
    opt = optim.Adam([*params, frozen, no_grad], lr=0.1)
    _loss(params, x, y).backward()
    opt.step()
    np.testing.assert_array_equal(frozen.numpy(), [1, 1])
    np.testing.assert_array_equal(no_grad.numpy(), [1, 1])
    assert frozen not in opt.state and no_grad not in opt.state and params[0] in opt.state


def test_closure_runs_with_grad_enabled_and_returns_the_loss() -> None:
    params, x, y = _tiny_problem()
    opt = optim.SGD(params, lr=0.1)

    def closure() -> nb.Tensor:
        opt.zero_grad()
        loss = _loss(params, x, y)
        loss.backward()
        return loss

    with nb.no_grad():
        loss = opt.step(closure)
    assert loss.is_realized and params[0].grad is not None
    assert _loss(params, x, y).item() < loss.item()


def test_param_groups_and_add_param_group() -> None:
    a, b, c = (Parameter(nb.tensor(np.ones(2, np.float32))) for _ in range(3))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": c, "momentum": 0.0})
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5, 0.1]
    assert [g["momentum"] for g in opt.param_groups] == [0.9, 0.9, 0.0]
    for p in (a, b, c):
        p.grad = nb.tensor(np.ones(2, np.float32))
    opt.step()
    np.testing.assert_allclose([a.numpy()[0], b.numpy()[0], c.numpy()[0]], [0.9, 0.5, 0.9], rtol=1e-6)
    assert "momentum_buffer" not in opt.state[c]
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})


def test_named_parameters_are_accepted() -> None:
    params, _, _ = _tiny_problem()
    opt = optim.Adam([("w", params[0]), ("b", params[1])])
    assert opt.param_groups[0]["params"] == params
    assert opt.param_groups[0]["param_names"] == ["w", "b"]


def test_repr_is_pytorchs() -> None:
    opt = optim.SGD([Parameter(nb.zeros(2))], lr=0.1)
    assert repr(opt) == (
        "SGD (\nParameter Group 0\n    dampening: 0\n    lr: 0.1\n    maximize: False\n    momentum: 0\n"
        "    nesterov: False\n    weight_decay: 0\n)"
    )


def test_constructor_errors() -> None:
    p = Parameter(nb.zeros(2))
    with pytest.raises(TypeError, match=r"param 1 of group 0 is a Tensor \(wrap it: p = nabla_nn.Parameter"):
        optim.SGD([p, nb.zeros(2, requires_grad=True)])
    with pytest.raises(TypeError, match="param 0 of group 0 is a ndarray"):
        optim.SGD([np.zeros(2)])
    with pytest.raises(TypeError, match="single Parameter"):
        optim.SGD(p)
    with pytest.raises(TypeError, match="sets will change"):
        optim.SGD({p})
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([])
    with pytest.raises(ValueError, match="same parameter more than once"):
        optim.SGD([p, p])
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [p]}, {"params": [p]}])
    with pytest.raises(ValueError, match=r"^Invalid learning rate: -1.0$"):
        optim.SGD([p], lr=-1.0)
    with pytest.raises(ValueError, match="Invalid momentum value: -0.5"):
        optim.SGD([p], momentum=-0.5)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        optim.SGD([p], nesterov=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        optim.Adam([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Invalid epsilon value: -1"):
        optim.Adam([p], eps=-1)
    with pytest.raises(ValueError, match="Invalid weight_decay value: -0.1"):
        optim.AdamW([p], weight_decay=-0.1)
    with pytest.raises(ValueError, match="Invalid initial_accumulator_value value: -1"):
        optim.Adagrad([p], initial_accumulator_value=-1)
    with pytest.raises(ValueError, match="Invalid alpha value: -1"):
        optim.RMSprop([p], alpha=-1)


@pytest.mark.parametrize(
    ("name", "kwargs", "error", "message"),
    [
        ("RAdam", {"lr": -1.0}, ValueError, r"^Invalid learning rate: -1.0$"),
        ("RAdam", {"betas": (1.0, 0.999)}, ValueError, "Invalid beta parameter at index 0: 1.0"),
        ("RAdam", {"eps": -1e-8}, ValueError, "Invalid epsilon value: -1e-08"),
        ("RAdam", {"weight_decay": -0.1}, ValueError, "Invalid weight_decay value: -0.1"),
        ("Adadelta", {"rho": 1.5}, ValueError, "Invalid rho value: 1.5"),
        ("Adadelta", {"rho": -0.1}, ValueError, "Invalid rho value: -0.1"),
        ("Adadelta", {"eps": -1.0}, ValueError, "Invalid epsilon value: -1.0"),
        ("Adadelta", {"weight_decay": -1}, ValueError, "Invalid weight_decay value: -1"),
        ("Adadelta", {"lr": "1"}, TypeError, "lr must be a number, got str"),
        ("Rprop", {"lr": -0.01}, ValueError, "Invalid learning rate: -0.01"),
        ("Rprop", {"etas": (1.5, 1.2)}, ValueError, "Invalid eta values: 1.5, 1.2"),
        ("Rprop", {"etas": (0.5, 1.0)}, ValueError, "Invalid eta values: 0.5, 1.0"),
        ("Rprop", {"etas": 0.5}, ValueError, "etas must be a pair of floats, got 0.5"),
        ("Rprop", {"step_sizes": (1.0, 0.1)}, ValueError, "Invalid step_sizes values: 1.0, 0.1"),
        ("Rprop", {"step_sizes": (1e-6, "50")}, TypeError, "step_sizes must be a pair of floats"),
        ("ASGD", {"lr": -0.1}, ValueError, "Invalid learning rate: -0.1"),
        ("ASGD", {"weight_decay": -0.1}, ValueError, "Invalid weight_decay value: -0.1"),
        ("ASGD", {"t0": None}, TypeError, "t0 must be a number, got NoneType"),
        ("ASGD", {"lambd": "1e-4"}, TypeError, "lambd must be a number, got str"),
    ],
)
def test_bad_hyperparameters_raise_naming_them(name: str, kwargs: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        getattr(optim, name)([Parameter(nb.zeros(2))], **kwargs)


def test_radam_adadelta_rprop_asgd_defaults_are_pytorchs() -> None:
    p = [Parameter(nb.zeros(2))]
    assert optim.RAdam(p).defaults == {
        "lr": 1e-3,
        "betas": (0.9, 0.999),
        "eps": 1e-8,
        "weight_decay": 0,
        "maximize": False,
        "decoupled_weight_decay": False,
    }
    assert optim.Adadelta(p).defaults == {"lr": 1.0, "rho": 0.9, "eps": 1e-6, "weight_decay": 0, "maximize": False}
    assert optim.Rprop(p).defaults == {"lr": 1e-2, "etas": (0.5, 1.2), "step_sizes": (1e-6, 50), "maximize": False}
    assert optim.ASGD(p).defaults == {
        "lr": 1e-2,
        "lambd": 1e-4,
        "alpha": 0.75,
        "t0": 1e6,
        "weight_decay": 0,
        "maximize": False,
    }


@needs_torch
@pytest.mark.parametrize("name", ["RAdam", "Adadelta", "Rprop", "ASGD", "Adafactor", "Muon"])
def test_defaults_match_torchs(name: str) -> None:
    switches = {"foreach", "capturable", "differentiable", "fused"}  # accepted, not kept in a group
    theirs = getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2, 2))]).defaults
    assert getattr(optim, name)([Parameter(nb.zeros((2, 2)))]).defaults == {
        k: v for k, v in theirs.items() if k not in switches
    }


def test_changed_betas_enter_the_next_step() -> None:
    p = Parameter(nb.tensor(np.zeros(2, np.float32)))
    opt = optim.Adam([p], lr=0.1)
    g1, g2 = np.array([1.0, 2.0], np.float32), np.array([3.0, -1.0], np.float32)
    p.grad = nb.tensor(g1)
    opt.step()
    opt.param_groups[0]["betas"] = (0.5, 0.999)
    p.grad = nb.tensor(g2)
    opt.step()
    m1 = 0.1 * g1
    np.testing.assert_allclose(opt.state[p]["exp_avg"].numpy(), 0.5 * m1 + 0.5 * g2, rtol=1e-6)


def test_load_state_dict_under_a_compiled_step() -> None:
    params, x, y = _tiny_problem()
    opt = optim.Adam(params, lr=0.01)

    @nb.compile
    def train_step(x: nb.Tensor, y: nb.Tensor) -> nb.Tensor:
        opt.zero_grad()
        loss = _loss(params, x, y)
        loss.backward()
        opt.step()
        return loss

    train_step(x, y)
    train_step(x, y)
    saved_params, saved = [p.numpy().copy() for p in params], opt.state_dict()
    after = [train_step(x, y).item() for _ in range(3)]
    for p, a in zip(params, saved_params, strict=True):
        p.data = nb.tensor(a)
    opt.load_state_dict(saved)  # the compiled step keeps using the optimizer's state tensors
    assert [train_step(x, y).item() for _ in range(3)] == after
    assert train_step.stats.traces == 1


def test_adagrad_creates_state_at_construction() -> None:
    p = Parameter(nb.tensor(np.ones(3, np.float32)))
    opt = optim.Adagrad([p], initial_accumulator_value=0.5)
    sd = opt.state_dict()
    np.testing.assert_array_equal(sd["state"][0]["sum"].numpy(), [0.5, 0.5, 0.5])
    assert sd["state"][0]["step"].item() == 0 and opt.state[p]["sum"].is_realized


# -- one fused op per param group --------------------------------------------------------------
def _count_ops(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts: dict[str, int] = {}
    original = Operation._record  # every op call records through it

    def counting(self: Operation, *args: object) -> object:
        counts[self.name] = counts.get(self.name, 0) + 1
        return original(self, *args)

    monkeypatch.setattr(Operation, "_record", counting)
    return counts


@pytest.mark.parametrize("name", list(ALL_OPTIMIZERS))
def test_a_step_records_one_fused_op_per_param_group(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    inits, grads = _data(2, shapes=_shapes(name)[:2])
    params = [Parameter(nb.tensor(a)) for a in inits]
    frozen = Parameter(nb.tensor(np.ones((1, 2) if name == "Muon" else 2, np.float32)), requires_grad=False)
    groups = [{"params": [params[0], frozen]}, {"params": [params[1]], "lr": 0.05}]
    opt = getattr(optim, name)(groups, **ALL_OPTIMIZERS[name])
    for step_grads in grads:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = nb.tensor(g)
        with monkeypatch.context() as patch:
            counts = _count_ops(patch)
            opt.step()
        assert counts == {"optimizer_update": 2}
        assert all(p.is_realized for p in params)
    np.testing.assert_array_equal(frozen.numpy(), np.ones(frozen.shape))
    assert not np.array_equal(params[0].numpy(), inits[0])


def test_params_whose_state_differs_get_their_own_op(monkeypatch: pytest.MonkeyPatch) -> None:
    # `a` starts with dampening (a "momentum_started" flag); `b` joins after dampening is
    # switched off, so its state has no flag: two ops, each with PyTorch's semantics.
    rng = np.random.default_rng(3)
    a, b = (Parameter(nb.tensor(rng.standard_normal(3).astype(np.float32))) for _ in range(2))
    wa, wb = a.numpy().astype(np.float64), b.numpy().astype(np.float64)
    opt = optim.SGD([a, b], lr=0.1, momentum=0.9, dampening=0.5)
    buf_a = buf_b = None
    for step in range(4):
        ga, gb = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
        a.grad, b.grad = nb.tensor(ga), (nb.tensor(gb) if step > 0 else None)
        damp = 0.5 if step == 0 else 0.0
        opt.param_groups[0]["dampening"] = damp
        buf_a = ga if buf_a is None else 0.9 * buf_a + (1 - damp) * ga
        wa = wa - 0.1 * buf_a
        if step > 0:
            buf_b = gb if buf_b is None else 0.9 * buf_b + gb
            wb = wb - 0.1 * buf_b
        with monkeypatch.context() as patch:
            counts = _count_ops(patch)
            opt.step()
        assert counts == {"optimizer_update": 1 if step == 0 else 2}
    np.testing.assert_allclose(a.numpy(), wa, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.numpy(), wb, rtol=1e-5, atol=1e-6)
    assert "momentum_started" in opt.state[a] and "momentum_started" not in opt.state[b]


def test_a_mixed_dtype_group_keeps_each_dtype() -> None:
    p32 = Parameter(nb.tensor(np.ones(3, np.float32)))
    p64 = Parameter(nb.tensor(np.ones(2, np.float64)))
    opt = optim.Adam([p32, p64], lr=0.1)
    p32.grad, p64.grad = nb.tensor(np.ones(3, np.float32)), nb.tensor(np.ones(2, np.float64))
    opt.step()
    assert (p32.dtype, p64.dtype) == (nb.float32, nb.float64)
    assert opt.state[p64]["exp_avg"].dtype == nb.float64 and opt.state[p64]["step"].dtype == nb.float32
    # the first Adam step moves every coordinate by lr * m_hat / (sqrt(v_hat) + eps), m_hat = v_hat = 1
    np.testing.assert_allclose(p32.numpy(), [0.9] * 3, rtol=1e-6)
    np.testing.assert_allclose(p64.numpy(), [1 - 0.1 / (1 + 1e-8)] * 2, rtol=1e-15)


def test_a_rule_that_changes_a_dtype_is_rejected() -> None:
    def promoting(xp: object, p: np.ndarray, g: np.ndarray, state: tuple, s: dict) -> tuple:
        return p - g * s["lr"], state  # float64 lr not cast: the result would be float64

    p = Parameter(nb.tensor(np.ones(3, np.float32)))
    lr = nb.Tensor.from_numpy(np.array(0.1, np.float64))
    [(new_p, _)] = fused_update(promoting, [p], [nb.tensor(np.ones(3, np.float32))], [()], {"lr": lr})
    with pytest.raises(TypeError, match="output 0 is float64"):
        new_p.numpy()


def test_a_custom_optimizer_with_update_still_works() -> None:
    class HalfStep(optim.Optimizer):
        def __init__(self, params: list) -> None:
            super().__init__(params, {"lr": 0.5})

        def _update(self, p: Parameter, grad: nb.Tensor, state: dict, group: dict) -> None:
            p.sub_(grad * group["lr"])

    p = Parameter(nb.tensor(np.ones(2, np.float32)))
    p.grad = nb.tensor(np.array([1.0, 2.0], np.float32))
    HalfStep([p]).step()
    np.testing.assert_array_equal(p.numpy(), [0.5, 0.0])


# Every optimizer and flag combination, for the MAX graph construction check.
MAX_CASES = [
    *CASES,
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.5, "nesterov": False, "maximize": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "amsgrad": True}),
    ("AdamW", {"lr": 0.01, "maximize": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("Adagrad", {"lr": 0.1, "maximize": True}),
    ("NAdam", {"lr": 0.01, "maximize": True, "decoupled_weight_decay": True}),
    ("Lion", {"lr": 0.01}),
    ("Lion", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("Adadelta", {"lr": 1.0, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
]


@pytest.mark.parametrize(("name", "kwargs"), MAX_CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(MAX_CASES)])
def test_fused_update_builds_a_max_graph(name: str, kwargs: dict) -> None:
    # Graph construction only (MAX type-checks each op as it is added; no compile): the
    # recorded op's MAX kernel, on inputs of the recorded types, gives outputs of those types.
    inits, grads = _data(1, shapes=_shapes(name))
    params = [Parameter(nb.tensor(a)) for a in inits]
    opt = getattr(optim, name)(params, **kwargs)
    for p, g in zip(params, grads[0], strict=True):
        p.grad = nb.tensor(g)
    with nb.no_grad():
        opt._record_updates()
    node = params[0]._impl.output_refs
    assert node.op.name == "optimizer_update" and params[1]._impl.output_refs is node
    types = [TensorType(a.dtype, a.physical_shape, device=DeviceRef.CPU()) for a in node.args]
    with Graph(f"optimizer_update_{name}", input_types=types) as graph:
        outs = node.op.kernel(*[v.tensor for v in graph.inputs], **node.adapted_kwargs)
        graph.output(*outs)
    # (every recorded output, those no tensor holds included: the parameters' shared step
    # counts keep one of theirs)
    assert [(o.dtype, tuple(int(d) for d in o.shape)) for o in outs] == [(d, s) for s, d in node.out_avals]
    assert any(o.dtype == nb.float32 for o in outs)
    nb.evaluate(*params)  # the recorded step itself, on the NumPy executor


@pytest.mark.parametrize("name", list(ALL_OPTIMIZERS))
def test_fused_update_builds_a_max_graph_for_a_mixed_dtype_group(name: str) -> None:
    dtypes = (nb.float64, nb.bfloat16, nb.float16)
    shape = (1, 3) if name == "Muon" else 3
    params = []
    for dtype in dtypes:
        t = nb.tensor(np.ones(shape, np.float32)).to(dtype)
        t.realize()
        params.append(Parameter(t))
    # weight decay exercises the parameter in the update (Rprop has none)
    kwargs = {**ALL_OPTIMIZERS[name], **({"weight_decay": 0.1} if name != "Rprop" else {})}
    opt = getattr(optim, name)(params, **kwargs)
    for p in params:
        p.grad = nb.tensor(np.full(shape, 0.5, np.float32)).to(p.dtype)
    with nb.no_grad():
        opt._record_updates()
    node = params[0]._impl.output_refs
    types = [TensorType(a.dtype, a.physical_shape, device=DeviceRef.CPU()) for a in node.args]
    with Graph(f"optimizer_update_mixed_{name}", input_types=types) as graph:
        outs = node.op.kernel(*[v.tensor for v in graph.inputs], **node.adapted_kwargs)
        graph.output(*outs)
    assert {o.dtype for o in outs} >= set(dtypes)
    nb.evaluate(*params)
    assert [p.dtype for p in params] == list(dtypes)


def test_pytorch_implementation_switches_are_accepted_and_change_nothing():
    # foreach / fused / capturable choose how torch runs the same update (nanoGPT passes
    # fused=True to AdamW); nabla always fuses, so the steps are identical.
    flags = {
        optim.SGD: {"foreach": False, "fused": True},
        optim.Adam: {"foreach": True, "fused": True, "capturable": True},
        optim.AdamW: {"fused": True},
        optim.Adagrad: {"foreach": False, "fused": True},
        optim.Adamax: {"foreach": True, "capturable": True},
        optim.NAdam: {"foreach": True, "capturable": True},
        optim.RMSprop: {"foreach": True, "capturable": True},
        optim.RAdam: {"foreach": True, "capturable": True},
        optim.Adadelta: {"foreach": True, "capturable": True},
        optim.Rprop: {"foreach": True, "capturable": True},
        optim.ASGD: {"foreach": True, "capturable": True},
    }
    for cls, kw in flags.items():
        results = []
        for extra in ({}, kw):
            w = Parameter(nb.tensor(np.array([1.0, -2.0], np.float32)))
            opt = cls([w], lr=0.1, **extra)
            for _ in range(2):
                opt.zero_grad()
                (w * w).sum().backward()
                opt.step()
            results.append(w.numpy())
        np.testing.assert_array_equal(results[0], results[1], err_msg=cls.__name__)
        with pytest.raises(NotImplementedError, match="differentiable=True"):
            cls([Parameter(nb.ones(2))], lr=0.1, differentiable=True)


def _quadratic_run(make_opt, change, compiled: bool, steps: int = 4) -> tuple[np.ndarray, dict, object]:
    """`steps` SGD-style steps on sum(p * p * x); `change(opt)` runs after the second."""
    p = Parameter(nb.tensor(np.linspace(0.5, 1.5, 3, dtype=np.float32)))
    opt = make_opt([p])
    x = nb.tensor(np.array([1.0, 2.0, 3.0], np.float32))

    def step(x):
        opt.zero_grad()
        (p * p * x).sum().backward()
        opt.step()

    run = nb.compile(step) if compiled else step
    for i in range(steps):
        if i == 2:
            change(opt)
        run(x)
    state = {k: v.numpy() for k, v in opt.state[p].items()} if opt.state[p] else {}
    return p.numpy(), state, getattr(run, "stats", None)


def _set(**values):
    def change(opt):
        opt.param_groups[0].update(values)

    return change


@pytest.mark.parametrize(
    ("make_opt", "change"),
    [
        (lambda ps: optim.SGD(ps, lr=0.1), _set(weight_decay=1.0)),
        (lambda ps: optim.SGD(ps, lr=0.1), _set(maximize=True)),
        (lambda ps: optim.SGD(ps, lr=0.1), _set(momentum=0.9)),  # a momentum buffer appears
        (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), _set(nesterov=True)),
        (lambda ps: optim.Adam(ps, lr=0.1), _set(eps=1e-2, weight_decay=0.5)),
        (lambda ps: optim.RMSprop(ps, lr=0.01), _set(alpha=0.5, centered=True)),
        (
            lambda ps: optim.Adam(ps, lr=0.1),
            lambda o: o.load_state_dict(optim.Adam([Parameter(nb.ones(3))]).state_dict()),
        ),
    ],
)
def test_a_compiled_step_retraces_when_baked_in_hyperparameters_or_the_loaded_state_change(make_opt, change):
    """Constants baked into the traced step (weight decay, eps, flags, whether momentum is zero)
    and the state a state_dict load installs are guarded: the compiled step traces again and
    matches the eager loop (it kept the old values before)."""
    p_eager, state_eager, _ = _quadratic_run(make_opt, change, compiled=False)
    p_comp, state_comp, stats = _quadratic_run(make_opt, change, compiled=True)
    np.testing.assert_allclose(p_comp, p_eager, rtol=1e-6)
    assert state_comp.keys() == state_eager.keys()
    for k in state_eager:
        np.testing.assert_allclose(state_comp[k], state_eager[k], rtol=1e-6)
    assert stats.misses == 2 and stats.recompile_reasons[-1].endswith(
        "hyperparameters, param groups or loaded state changed"
    )


def test_a_scheduled_learning_rate_does_not_retrace_a_compiled_step():
    _, _, stats = _quadratic_run(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), _set(lr=0.01, momentum=0.5), True)
    assert (stats.misses, stats.hits) == (1, 3)


def test_zero_grad_without_set_to_none_zeroes_the_gradient_in_place():
    p = Parameter(nb.ones(3))
    opt = optim.SGD([p], lr=0.1)
    (p * p).sum().backward()
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and g._impl.is_realized  # as torch's grad.zero_(): a reference sees zeros
    np.testing.assert_array_equal(g.numpy(), np.zeros(3, np.float32))


def _hook_trace(lib, opt_cls, make_param) -> list:
    """Which optimizer hooks run, in order, with what they see (the same code for both libraries)."""
    p = make_param()
    opt = opt_cls([p], lr=0.1)
    seen: list = []
    handles = [
        lib.register_optimizer_step_pre_hook(lambda o, a, k: seen.append(("global pre", len(a), sorted(k)))),
        opt.register_step_pre_hook(lambda o, a, k: seen.append(("pre", o is opt))),
        opt.register_step_post_hook(lambda o, a, k: seen.append(("post", len(a)))),
        opt.register_state_dict_pre_hook(lambda o: seen.append("sd pre")),
        opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1}),
        opt.register_load_state_dict_pre_hook(lambda o, sd: {k: v for k, v in sd.items() if k != "extra"}),
        opt.register_load_state_dict_post_hook(lambda o: seen.append("load post")),
    ]
    (p * p).sum().backward()
    opt.step()
    opt.step(lambda: None)
    sd = opt.state_dict()
    seen.append(sorted(sd))
    opt.load_state_dict(sd)
    for h in handles:
        h.remove()
    opt.step()
    return seen


@needs_torch
def test_optimizer_hooks_match_torch():
    ours = _hook_trace(optim, optim.SGD, lambda: Parameter(nb.ones(3)))
    theirs = _hook_trace(
        sys.modules[torch.optim.Optimizer.__module__], torch.optim.SGD, lambda: torch.nn.Parameter(torch.ones(3))
    )
    assert ours == theirs
    assert ours[0] == ("global pre", 1, []) and ours[-2] == ["extra", "param_groups", "state"]


def test_a_step_pre_hook_can_replace_the_closure():
    p = Parameter(nb.ones(2))
    opt = optim.SGD([p], lr=0.5)
    opt.register_step_pre_hook(lambda o, args, kwargs: ((o, lambda: 42.0), {}))
    (p * p).sum().backward()
    assert opt.step() == 42.0
    np.testing.assert_allclose(p.numpy(), [0.0, 0.0])


def test_zero_grad_without_set_to_none_in_a_compiled_step_matches_eager():
    def run(compiled: bool) -> np.ndarray:
        p = Parameter(nb.tensor(np.array([1.0, 2.0, 3.0], np.float32)))
        opt = optim.SGD([p], lr=0.1, momentum=0.9)

        def step(x):
            opt.zero_grad(set_to_none=False)
            (p * p * x).sum().backward()
            opt.step()

        f = nb.compile(step) if compiled else step
        for _ in range(4):
            f(nb.ones(3))
        return p.numpy()

    np.testing.assert_allclose(run(True), run(False), rtol=1e-6)


# -- Adafactor ----------------------------------------------------------------------------------
def _np_adafactor(w, grads, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, maximize=False):
    """The algorithm of PyTorch's docs in float64 (means, not norms): (parameter, state)."""
    eps1 = float(np.finfo(w.dtype).eps) if eps[0] is None else eps[0]
    w = w.astype(np.float64)
    factored = w.ndim > 1
    state = {"row_var": 0.0, "col_var": 0.0} if factored else {"variance": 0.0}
    for t, g in enumerate(grads, start=1):
        g = -g.astype(np.float64) if maximize else g.astype(np.float64)
        decay = t**beta2_decay  # 1 - beta2_t
        alpha = max(eps[1], np.sqrt(np.mean(w * w))) * min(lr, 1 / np.sqrt(t))
        w = w * (1 - lr * weight_decay)
        if factored:
            r = state["row_var"] = (1 - decay) * state["row_var"] + decay * np.mean(g * g, -1, keepdims=True)
            c = state["col_var"] = (1 - decay) * state["col_var"] + decay * np.mean(g * g, -2, keepdims=True)
            v = r * c / np.maximum(np.mean(r, -2, keepdims=True), eps1)
        else:
            v = state["variance"] = (1 - decay) * state["variance"] + decay * g * g
        u = g / np.sqrt(np.maximum(v, eps1 * eps1))
        w = w - alpha * u / max(1.0, np.sqrt(np.mean(u * u)) / d)
    return w, state


@pytest.mark.parametrize("shape", [(), (5,), (4, 3), (2, 3, 5)], ids=["0-d", "1-d", "2-d", "3-d"])
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"lr": 0.1, "weight_decay": 0.1}, {"maximize": True, "eps": (1e-4, 1e-2), "d": 1.2, "beta2_decay": -0.6}],
    ids=["defaults", "weight-decay", "maximize"],
)
def test_adafactor_matches_numpy_reference(shape: tuple, kwargs: dict) -> None:
    inits, grads = _data(6, shapes=(shape,), seed=4)
    [p], opt = _run_nabla("Adafactor", kwargs, inits, grads)
    want_p, want_state = _np_adafactor(inits[0], [g[0] for g in grads], **kwargs)
    np.testing.assert_allclose(p.numpy(), want_p, rtol=2e-5, atol=1e-6)
    state = opt.state[p]
    assert list(state) == ["step", *want_state]  # PyTorch's state_dict layout
    assert state["step"].item() == 6
    for key, value in want_state.items():
        assert state[key].dtype == nb.float32
        np.testing.assert_allclose(state[key].numpy(), value, rtol=2e-5, atol=1e-9, err_msg=key)
    if len(shape) > 1:  # the factors of the second moment: a row and a column mean per matrix
        assert state["row_var"].shape == (*shape[:-1], 1) and state["col_var"].shape == (*shape[:-2], 1, shape[-1])
    else:
        assert state["variance"].shape == shape


def test_adafactor_eps1_none_is_the_first_parameters_dtype_epsilon() -> None:
    # gradients so small that the variance estimate is floored by eps1 ** 2
    def run(eps1: float | None, dtypes: tuple) -> list:
        rng = np.random.default_rng(5)
        params = [Parameter(nb.tensor(rng.standard_normal((3, 2)).astype(dt))) for dt in dtypes]
        opt = optim.Adafactor(params, lr=0.1, eps=(eps1, 1e-3))
        assert opt.param_groups[0]["eps"] == (eps1, 1e-3)
        for _ in range(2):
            for p in params:
                p.grad = nb.tensor((rng.standard_normal((3, 2)) * 1e-9).astype(p.numpy().dtype))
            opt.step()
        return [p.numpy() for p in params]

    eps32, eps64 = float(np.finfo(np.float32).eps), float(np.finfo(np.float64).eps)
    for dtypes in [(np.float32,), (np.float64,), (np.float64, np.float32)]:
        first = eps32 if dtypes[0] == np.float32 else eps64
        other = eps64 if first == eps32 else eps32
        got = run(None, dtypes)
        for a, b in zip(got, run(first, dtypes), strict=True):
            np.testing.assert_array_equal(a, b)
        assert not np.array_equal(got[0], run(other, dtypes)[0])  # it matters here


def test_adafactor_maximize_steps_along_the_gradient() -> None:
    inits, grads = _data(3, shapes=((4, 3), (3,)))
    up, _ = _run_nabla("Adafactor", {"lr": 0.05, "maximize": True}, inits, grads)
    down, _ = _run_nabla("Adafactor", {"lr": 0.05}, inits, [[-g for g in step] for step in grads])
    for a, b in zip(up, down, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_adafactor_weight_decay_is_decoupled_and_scaled_by_lr() -> None:
    inits, _ = _data(0, shapes=((4, 3), (3,)))
    zero = [[np.zeros_like(a) for a in inits]]
    params, _ = _run_nabla("Adafactor", {"lr": 0.1, "weight_decay": 0.5}, inits, zero)
    for p, a in zip(params, inits, strict=True):  # a zero gradient: no update, only p *= 1 - lr * wd
        np.testing.assert_allclose(p.numpy(), a * np.float32(1 - 0.1 * 0.5), rtol=1e-7)


def test_adafactor_state_dict_round_trip_and_shape_check() -> None:
    inits, grads = _data(4, shapes=((2, 3, 5), (4, 3), (3,)))
    params, opt = _run_nabla("Adafactor", {"lr": 0.05}, inits, grads[:2])
    saved_params, saved = [p.numpy().copy() for p in params], opt.state_dict()
    assert [tuple(saved["state"][i]["row_var"].shape) for i in (0, 1)] == [(2, 3, 1), (4, 1)]
    assert [tuple(saved["state"][i]["col_var"].shape) for i in (0, 1)] == [(2, 1, 5), (1, 3)]
    assert sorted(saved["state"][2]) == ["step", "variance"]
    for step_grads in grads[2:]:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = nb.tensor(g)
        opt.step()
    resumed, _ = _run_nabla("Adafactor", {}, saved_params, [])
    opt2 = optim.Adafactor(resumed)
    opt2.load_state_dict(saved)
    for step_grads in grads[2:]:
        for p, g in zip(resumed, step_grads, strict=True):
            p.grad = nb.tensor(g)
        opt2.step()
    for p, q in zip(params, resumed, strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
        for key, value in opt.state[p].items():
            np.testing.assert_array_equal(opt2.state[q][key].numpy(), value.numpy())
    saved["state"][1]["row_var"] = nb.zeros((4, 3))
    with pytest.raises(ValueError, match=r"'row_var' of parameter 1 has shape \(4, 3\), a parameter of shape \(4, 3\)"):
        optim.Adafactor(resumed).load_state_dict(saved)


# -- Muon ---------------------------------------------------------------------------------------
def _bf16(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (nearest, ties to even), as float32."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)


def _np_muon(w, grads, lr, weight_decay, momentum, nesterov, coefficients, ns_steps, eps, ratio):
    """PyTorch's Muon in float32 with its bfloat16 Newton-Schulz: (parameter, momentum_buffer)."""
    a, b, c = coefficients
    buf = np.zeros_like(w)
    lerp_small, lerp_big = np.float32(1 - momentum), np.float32(momentum)
    for g in grads:
        buf = buf + lerp_small * (g - buf)
        update = buf - (buf - g) * (np.float32(1) - lerp_big) if nesterov else buf
        x = _bf16(update)
        x = x.T if x.shape[0] > x.shape[1] else x
        x = _bf16(x / max(_bf16(np.sqrt(np.sum(x * x))), np.float32(eps)))
        for _ in range(ns_steps):
            gram = _bf16(x @ x.T)
            x = _bf16(x * np.float32(a) + _bf16(gram * np.float32(b) + (gram @ gram) * np.float32(c)) @ x)
        x = x.T if update.shape[0] > update.shape[1] else x
        w = w * np.float32(1 - lr * weight_decay) + x * np.float32(-lr * ratio)
    return w, buf


@pytest.mark.parametrize("nesterov", [True, False], ids=["nesterov", "plain"])
@pytest.mark.parametrize("adjust_lr_fn", [None, "original", "match_rms_adamw"])
def test_muon_matches_numpy_reference(nesterov: bool, adjust_lr_fn: str | None) -> None:
    shapes = ((6, 4), (3, 5), (4, 4))
    inits, grads = _data(4, shapes=shapes, seed=2)
    kwargs = {"lr": 0.02, "weight_decay": 0.1, "momentum": 0.9, "nesterov": nesterov, "adjust_lr_fn": adjust_lr_fn}
    params, opt = _run_nabla("Muon", kwargs, inits, grads)
    for i, (p, (rows, cols)) in enumerate(zip(params, shapes, strict=True)):
        ratio = 0.2 * max(rows, cols) ** 0.5 if adjust_lr_fn == "match_rms_adamw" else max(1, rows / cols) ** 0.5
        want_p, want_buf = _np_muon(
            inits[i], [g[i] for g in grads], 0.02, 0.1, 0.9, nesterov, (3.4445, -4.7750, 2.0315), 5, 1e-7, ratio
        )
        np.testing.assert_allclose(p.numpy(), want_p, rtol=1e-6, atol=1e-7)
        assert list(opt.state[p]) == ["momentum_buffer"]
        np.testing.assert_allclose(opt.state[p]["momentum_buffer"].numpy(), want_buf, rtol=1e-6, atol=1e-7)


def test_muon_update_is_orthogonalized_and_nesterov_changes_it() -> None:
    inits, grads = _data(3, shapes=((5, 3),), seed=1)
    first = {}
    for nesterov in (True, False):
        [p], _ = _run_nabla("Muon", {"lr": 1.0, "weight_decay": 0.0, "nesterov": nesterov}, inits, grads[:1])
        first[nesterov] = (inits[0] - p.numpy()) / np.sqrt(5 / 3)  # lr * sqrt(rows / cols) * O
    # a quintic iteration tuned for speed: singular values near 1, not exactly 1
    assert np.all(np.abs(np.linalg.svd(first[True], compute_uv=False) - 1) < 0.35)
    # after one step B = (1 - momentum) g, and nesterov's g + momentum (B - g) is a multiple of g:
    # the same orthogonalization but for bfloat16's rounding; later steps differ
    np.testing.assert_allclose(first[True], first[False], atol=0.02)
    later = [_run_nabla("Muon", {"lr": 0.1, "nesterov": n}, inits, grads)[0][0].numpy() for n in (True, False)]
    assert np.abs(later[0] - later[1]).max() > 1e-3


def test_muon_adjust_lr_fn_scales_the_step() -> None:
    _, grads = _data(1, shapes=((6, 4),), seed=3)
    steps = {}
    for fn in (None, "original", "match_rms_adamw"):  # from zero: the parameter is the step
        [p], _ = _run_nabla("Muon", {"lr": 0.01, "adjust_lr_fn": fn}, [np.zeros((6, 4), np.float32)], grads)
        steps[fn] = p.numpy().astype(np.float64)
    np.testing.assert_array_equal(steps[None], steps["original"])
    # original: lr * sqrt(max(1, 6 / 4)); match_rms_adamw: lr * 0.2 * sqrt(max(6, 4))
    np.testing.assert_allclose(steps["match_rms_adamw"] / steps[None], 0.2 * 6**0.5 / 1.5**0.5, rtol=1e-6)


def test_muon_rejects_parameters_that_are_not_matrices() -> None:
    with pytest.raises(
        ValueError, match=r"^Muon only supports 2D parameters whereas we found a parameter with size: \(3,\)$"
    ):
        optim.Muon([Parameter(nb.zeros((2, 2))), Parameter(nb.zeros(3))])
    with pytest.raises(ValueError, match=r"size: \(2, 3, 4\)"):
        optim.Muon([{"params": [Parameter(nb.zeros((2, 3, 4)))]}])
    opt = optim.Muon([Parameter(nb.zeros((2, 2)))])
    vector = Parameter(nb.zeros(3))
    opt.add_param_group({"params": [vector]})  # PyTorch checks this one when it steps
    vector.grad = nb.ones(3)
    with pytest.raises(ValueError, match="^Param gradient must be a 2D matrix$"):
        opt.step()


def test_muon_checks_its_iteration_when_it_steps() -> None:
    p = Parameter(nb.ones((2, 2)))
    p.grad = nb.ones((2, 2))
    with pytest.raises(ValueError, match="Number of steps must be less than 100"):
        optim.Muon([p], ns_steps=100).step()
    with pytest.raises(ValueError, match="Coefficients must be a tuple of exactly 3 values"):
        optim.Muon([p], ns_coefficients=(1.0, 2.0)).step()


BAD_HYPERPARAMETERS = [
    ("Adafactor", {"lr": -1.0}),
    ("Adafactor", {"beta2_decay": 0.5}),
    ("Adafactor", {"eps": (-1e-3, 1e-3)}),
    ("Adafactor", {"eps": (None, -1.0)}),
    ("Adafactor", {"d": 0.5}),
    ("Adafactor", {"weight_decay": -0.1}),
    ("Muon", {"lr": -0.1}),
    ("Muon", {"momentum": -0.9}),
    ("Muon", {"weight_decay": -1}),
    ("Muon", {"adjust_lr_fn": "spectral"}),
]


@pytest.mark.parametrize(
    ("name", "kwargs"), BAD_HYPERPARAMETERS, ids=[f"{n}-{next(iter(k))}" for n, k in BAD_HYPERPARAMETERS]
)
def test_adafactor_and_muon_errors_are_pytorchs(name: str, kwargs: dict) -> None:
    messages = {
        "lr": "Learning rate should be >= 0 but is: ",
        "beta2_decay": "beta2_decay should be <= 0 but is: 0.5",
        "d": "Clipping threshold d should be >= 1 but is: 0.5",
        "momentum": "momentum should be >= 0 but is: -0.9",
        "adjust_lr_fn": "Adjust learning rate function spectral is not supported",
    }
    key = next(iter(kwargs))
    if key == "eps":
        message = "epsilon1 should be >= 0" if kwargs["eps"][0] is not None else "epsilon2 should be >= 0 but is: -1.0"
    elif key == "weight_decay":
        message = "weight_decay should be >= 0" if name == "Adafactor" else "weight decay should be >= 0 but is: -1"
    else:
        message = messages[key]
    with pytest.raises(ValueError, match=message) as ours:
        getattr(optim, name)([Parameter(nb.zeros((2, 2)))], **kwargs)
    if torch is not None:
        with pytest.raises(ValueError) as theirs:
            getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2, 2))], **kwargs)
        assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_a_sharded_parameter_is_updated_whole_and_keeps_its_layout(name: str) -> None:
    """The update reads whole parameters (an RMS, matrix products): a tensor-parallel model
    trains as the single-device one does, its parameters and state keeping their layouts."""
    mesh = DeviceMesh("tp2", (2,), ("tp",))
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((8, 12)).astype(np.float32), rng.integers(0, 4, 8)) for _ in range(3)]

    def train(sharded: bool) -> tuple[dict, list]:
        nb.manual_seed(0)
        model = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 4))
        if sharded:
            shard_module(model, mesh, {"0": colwise("tp"), "2": rowwise("tp")})
        params = [p for p in model.parameters() if name != "Muon" or p.ndim == 2]
        opt = getattr(optim, name)(params, lr=0.05)
        layouts = [p.sharding for p in model.parameters()]
        for x, y in batches:
            model.zero_grad()
            F.cross_entropy(model(nb.tensor(x)), nb.tensor(y)).backward()
            opt.step()
        assert [p.sharding for p in model.parameters()] == layouts
        state = opt.state[model[0].weight]
        assert all((v.sharding is not None) == sharded for v in state.values())
        return {k: v.numpy() for k, v in model.state_dict().items()}, layouts

    want, _ = train(False)
    got, layouts = train(True)
    assert layouts[0] is not None and not layouts[0].is_replicated
    for key, value in want.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-5, atol=1e-6, err_msg=key)


# -- step counts shared by the parameters stepped together --------------------------------------
def _three_params() -> list[Parameter]:
    rng = np.random.default_rng(3)
    return [Parameter(nb.tensor(rng.standard_normal(s).astype(np.float32))) for s in ((4, 3), (3,), (2, 2))]


def _step(opt: optim.Optimizer, params: list, skip: Parameter | None = None) -> None:
    opt.zero_grad()
    for p in params:
        if p is not skip:
            p.grad = nb.tensor(np.full(p.shape, 0.5, np.float32))
    opt.step()


def test_parameters_stepped_together_share_one_step_value_behind_their_own_tensors():
    params = _three_params()
    opt = optim.Adam(params, lr=0.1)
    for _ in range(3):
        _step(opt, params)
    steps = [opt.state[p]["step"] for p in params]
    assert len({id(s) for s in steps}) == 3  # each parameter keeps its own Tensor object
    assert len({id(s._impl) for s in steps}) == 1  # one value: one graph input, computed once
    assert [s.item() for s in steps] == [3.0, 3.0, 3.0]
    # state_dict gives each parameter its own storage, as PyTorch's per-parameter step tensors
    saved = [s["step"] for s in opt.state_dict()["state"].values()]
    assert len({id(s._impl.data) for s in saved}) == 3 and [s.item() for s in saved] == [3.0, 3.0, 3.0]
    # a user's in-place change of one parameter's step leaves the others alone
    steps[0].add_(10.0)
    assert [s.item() for s in steps] == [13.0, 3.0, 3.0]


def test_a_parameter_without_a_gradient_keeps_its_step_while_the_others_advance():
    params = _three_params()
    opt, ref = optim.AdamW(params, lr=0.1), optim.AdamW([Parameter(nb.tensor(p.numpy())) for p in params], lr=0.1)
    for i in range(4):
        _step(opt, params, skip=params[1] if i in (1, 2) else None)
        _step(ref, ref.param_groups[0]["params"], skip=ref.param_groups[0]["params"][1] if i in (1, 2) else None)
    assert [opt.state[p]["step"].item() for p in params] == [4.0, 2.0, 4.0]
    for p, q in zip(params, ref.param_groups[0]["params"], strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    # parameters 0 and 2 still share their value; parameter 1 has its own since it skipped
    impls = [opt.state[p]["step"]._impl for p in params]
    assert impls[0] is impls[2] and impls[1] is not impls[0]


def test_a_loaded_state_shares_equal_step_counts_only():
    params = _three_params()
    opt = optim.Adam(params, lr=0.1)
    for i in range(3):
        _step(opt, params, skip=params[2] if i == 0 else None)
    saved = opt.state_dict()
    resumed = [Parameter(nb.tensor(p.numpy())) for p in params]
    opt2 = optim.Adam(resumed, lr=0.1)
    opt2.load_state_dict(saved)
    steps = [opt2.state[p]["step"] for p in resumed]
    assert [s.item() for s in steps] == [3.0, 3.0, 2.0]
    assert steps[0]._impl is steps[1]._impl and steps[2]._impl is not steps[0]._impl
    nb.reset_cache_info()
    _step(opt, params)
    _step(opt2, resumed)
    assert nb.cache_info().misses == 0  # the loaded state has the live one's structure
    for p, q in zip(params, resumed, strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_a_compiled_step_traces_again_when_shared_step_counts_part():
    # The trace reads the parameters' shared step value once; a loaded state whose counts
    # differ must not run that trace (it would give every parameter the first one's count).
    params = _three_params()
    ref = [Parameter(nb.tensor(p.numpy())) for p in params]
    opt, ref_opt = optim.Adam(params, lr=0.1), optim.Adam(ref, lr=0.1)

    @nb.compile
    def train_step() -> None:
        _step(opt, params)

    for _ in range(3):
        train_step()
    for i in range(3):
        _step(ref_opt, ref, skip=ref[2] if i == 0 else None)  # parameter 2 one step behind
    opt.load_state_dict(ref_opt.state_dict())
    for p, q in zip(params, ref, strict=True):
        p.data = nb.tensor(q.numpy())
    traces = train_step.stats.traces
    train_step()
    _step(ref_opt, ref)
    assert train_step.stats.traces == traces + 1
    assert [opt.state[p]["step"].item() for p in params] == [4.0, 4.0, 3.0]
    for p, q in zip(params, ref, strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())

"""nabla_optim optimizers: PyTorch's numerics, one graph per training step, state_dicts, errors."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest
from _optim_cases import ALL_OPTIMIZERS, CASES, make_data, run_nabla, shapes_of, torch_opt
from _oracle import needs_torch, torch

import nabla as nb
import nabla_optim as optim
from nabla_nn.parameter import Parameter


# -- PyTorch parity ---------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_matches_torch(name: str, kwargs: dict) -> None:
    inits, grads = make_data(6, shapes=shapes_of(name))
    params, opt = run_nabla(name, kwargs, inits, grads)
    tparams = [torch.nn.Parameter(torch.tensor(a)) for a in inits]
    topt = torch_opt(name, tparams, **kwargs)
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
    inits, grads = make_data(5, np.float64, shapes=shapes_of(name))
    params, opt = run_nabla(name, kwargs, inits, grads)
    tparams = [torch.nn.Parameter(torch.tensor(a)) for a in inits]
    topt = torch_opt(name, tparams, **kwargs)
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
    inits, grads = make_data(8)
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
    inits, grads = make_data(6)
    lr, mom, damp, wd = 0.1, 0.9, 0.2, 0.01
    params, opt = run_nabla("SGD", {"lr": lr, "momentum": mom, "dampening": damp, "weight_decay": wd}, inits, grads)
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
    inits, grads = make_data(6)
    lr, (b1, b2), eps = 0.01, (0.9, 0.999), 1e-8
    params, opt = run_nabla("Adam", {"lr": lr, "amsgrad": amsgrad}, inits, grads)
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
    inits, grads = make_data(6)
    params, _ = run_nabla(name, kwargs, inits, grads)
    for i, p in enumerate(params):
        w, state = inits[i].astype(np.float64), {}
        for t, step_grads in enumerate(grads, start=1):
            w = reference(w, step_grads[i].astype(np.float64), state, t)
        np.testing.assert_allclose(p.numpy(), w, rtol=1e-5, atol=1e-6)


def test_adamw_decouples_weight_decay() -> None:
    inits, grads = make_data(1)
    zero = [[np.zeros_like(g) for g in grads[0]]]
    params, _ = run_nabla("AdamW", {"lr": 0.1, "weight_decay": 0.5}, inits, zero)
    # a zero gradient leaves the moments at 0: only the decay p *= 1 - lr * wd acts
    np.testing.assert_allclose(params[0].numpy(), inits[0] * (1 - 0.1 * 0.5), rtol=1e-6)


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_lion_matches_the_paper(weight_decay: float) -> None:
    inits, grads = make_data(6)
    lr, (b1, b2) = 0.01, (0.9, 0.99)
    params, opt = run_nabla("Lion", {"lr": lr, "weight_decay": weight_decay}, inits, grads)
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
        "foreach": None,
        "capturable": False,
        "differentiable": False,
        "fused": None,
    }
    assert optim.AdamW(p).defaults["weight_decay"] == 1e-2
    if torch is not None:  # the same keys in defaults and every param group as torch's, for each optimizer
        tp = [torch.nn.Parameter(torch.zeros(2))]
        for name in (
            "SGD",
            "Adam",
            "AdamW",
            "RMSprop",
            "Adagrad",
            "Adamax",
            "NAdam",
            "RAdam",
            "Adadelta",
            "Rprop",
            "ASGD",
        ):
            ours, theirs = getattr(optim, name)(p, foreach=False), getattr(torch.optim, name)(tp, foreach=False)
            assert set(ours.defaults) == set(theirs.defaults), name
            assert set(ours.param_groups[0]) - {"initial_lr"} == set(theirs.param_groups[0]), name
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
    inits, grads = make_data(8 if name == "RAdam" else 4, shapes=shapes_of(name))  # RAdam: past its rectification
    tparams = [torch.nn.Parameter(torch.tensor(a)) for a in inits]
    topt = torch_opt(name, tparams, **kwargs)
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
        "SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n    foreach: None\n    fused: None\n"
        "    lr: 0.1\n    maximize: False\n    momentum: 0\n    nesterov: False\n    weight_decay: 0\n)"
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
        ("Rprop", {"step_sizes": (-1.0, 0.1)}, ValueError, "Invalid step_sizes values: -1.0, 0.1"),
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


_SWITCHES = {"foreach": None, "capturable": False, "differentiable": False}  # torch's, without effect


def test_radam_adadelta_rprop_asgd_defaults_are_pytorchs() -> None:
    p = [Parameter(nb.zeros(2))]
    assert optim.RAdam(p).defaults == {
        "lr": 1e-3,
        "betas": (0.9, 0.999),
        "eps": 1e-8,
        "weight_decay": 0,
        "maximize": False,
        "decoupled_weight_decay": False,
        **_SWITCHES,
    }
    assert optim.Adadelta(p).defaults == {
        "lr": 1.0,
        "rho": 0.9,
        "eps": 1e-6,
        "weight_decay": 0,
        "maximize": False,
        **_SWITCHES,
    }
    assert optim.Rprop(p).defaults == {
        "lr": 1e-2,
        "etas": (0.5, 1.2),
        "step_sizes": (1e-6, 50),
        "maximize": False,
        **_SWITCHES,
    }
    assert optim.ASGD(p).defaults == {
        "lr": 1e-2,
        "lambd": 1e-4,
        "alpha": 0.75,
        "t0": 1e6,
        "weight_decay": 0,
        "maximize": False,
        **_SWITCHES,
    }


@needs_torch
@pytest.mark.parametrize("name", ["RAdam", "Adadelta", "Rprop", "ASGD", "Adafactor", "Muon"])
def test_defaults_match_torchs(name: str) -> None:
    theirs = getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2, 2))]).defaults
    assert getattr(optim, name)([Parameter(nb.zeros((2, 2)))]).defaults == theirs  # with torch's switches


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
    q = Parameter(nb.tensor(np.ones(2, np.float32)))
    grouped = optim.Adagrad([{"params": [p], "initial_accumulator_value": 0.2}, {"params": [q]}], lr=0.1)
    # As PyTorch's: the constructor's value fills every group's sums, whatever a group says.
    assert [grouped.state[t]["sum"].numpy().tolist() for t in (p, q)] == [[0, 0, 0], [0, 0]]


def test_empty_groups_old_checkpoints_and_ported_steps_work_as_in_torch():
    p, q, r = (Parameter(nb.ones(2)) for _ in range(3))
    # an empty no-decay group (torch only rejects an empty top-level list)
    opt = optim.AdamW([{"params": [p]}, {"params": [], "weight_decay": 0.0}], lr=0.1)
    opt.add_param_group({"params": []})
    p.grad = nb.ones(2)
    opt.step()
    assert [len(g["params"]) for g in opt.state_dict()["param_groups"]] == [1, 0, 0]
    # a checkpoint from an older torch lacks newer group keys: the defaults fill them in
    saved, full = opt.state_dict(), opt.state_dict()
    for group in saved["param_groups"]:
        for key in ("maximize", "foreach", "capturable", "differentiable", "fused", "amsgrad"):
            group.pop(key)
    for param, state in ((q, saved), (r, full)):
        again = optim.AdamW([{"params": [param]}, {"params": []}, {"params": []}], lr=0.1)
        again.load_state_dict(state)
        param.grad = nb.ones(2)
        again.step()  # (raised KeyError: 'maximize')
        assert again.param_groups[0]["maximize"] is False
    np.testing.assert_array_equal(q.numpy(), r.numpy())

    # a subclass's own step runs the step hooks once and counts as a step for the schedulers
    class Ported(optim.SGD):
        def step(self, closure=None):
            calls.append("step")
            return super().step(closure)

    calls: list[str] = []
    ported = Ported([q], lr=0.1)
    ported.register_step_pre_hook(lambda *_: calls.append("pre"))
    ported.register_step_post_hook(lambda *_: calls.append("post"))
    scheduler = optim.lr_scheduler.StepLR(ported, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "lr_scheduler.step() before optimizer.step()"
        ported.step()
        scheduler.step()
    assert calls == ["pre", "step", "post"]


def test_optimizer_arguments_torch_takes_positionally():
    p = Parameter(nb.ones(2))
    assert optim.RMSprop([p], 0.01, 0.99, 1e-8, 0, 0, False, False, None, True).defaults["maximize"] is True
    assert optim.Adagrad([p], 0.01, 0, 0, 0, 1e-10, None).defaults["foreach"] is None
    assert optim.Adamax([p], 2e-3, (0.9, 0.999), 1e-8, 0, None).defaults["foreach"] is None


def test_rprop_takes_a_minimum_step_above_the_maximum_as_torch():
    p = Parameter(nb.ones(3))
    opt = optim.Rprop([p], lr=0.05, step_sizes=(0.1, 0.01))  # torch's clamp then gives the maximum
    for g in ([1.0, -1.0, 2.0], [1.0, 1.0, -2.0], [1.0, 1.0, 1.0]):
        p.grad = nb.tensor(g)
        opt.step()
    np.testing.assert_allclose(p.numpy(), [0.97, 1.0, 0.98], rtol=1e-6)  # torch 2.13


@pytest.mark.parametrize("name", ["Rprop", "Lion"])
def test_a_nan_gradient_element_has_sign_zero_as_torch(name: str) -> None:
    # torch.sign(nan) is 0: Rprop keeps that element's step size and does not move it; NumPy's
    # sign gave nan, and the element stayed nan for good. Rprop's values are torch 2.13's.
    p = Parameter(nb.ones(2))
    opt = getattr(optim, name)([p], lr=0.1)
    for g in ([np.nan, 1.0], [1.0, 1.0], [1.0, 1.0]):
        p.grad = nb.tensor(np.array(g, np.float32))
        opt.step()
    if name == "Rprop":
        np.testing.assert_allclose(p.numpy(), [0.78, 0.636], rtol=1e-6)
        np.testing.assert_allclose(opt.state[p]["step_size"].numpy(), [0.12, 0.144], rtol=1e-6)
    else:
        assert np.isfinite(p.numpy()).all() and p.numpy()[0] > p.numpy()[1]


def test_half_precision_parameters_are_updated_in_float32():
    """Each rule runs in float32 for float16/bfloat16 parameters, results rounded once: a
    gradient of 300 squared (9e4) overflowed float16's second moment to inf, and the params."""
    g = np.array([1e-4, 3e-3, -2e-5, 0.5, 300.0], np.float32)
    for dtype in (nb.float16, nb.bfloat16):
        p = Parameter(nb.tensor(np.array([1.0, 1.0, 1.0, 1.0, 100.0], np.float32)).to(dtype))
        opt = optim.AdamW([p], lr=1e-2, weight_decay=0.01, eps=1e-6)
        for _ in range(3):
            p.grad = nb.tensor(g).to(dtype)
            opt.step()
        v = opt.state[p]["exp_avg_sq"].to(nb.float32).numpy()
        assert p.dtype == dtype and opt.state[p]["exp_avg_sq"].dtype == dtype
        assert np.isfinite(v).all() and abs(v[4] - 270.0) < 1.0  # (0.1 * 300^2 * (1 - 0.999^3))
        assert np.isfinite(p.to(nb.float32).numpy()).all() and (np.abs(p.to(nb.float32).numpy()[:4] - 1) < 0.05).all()
        if dtype == nb.bfloat16:  # (torch's own values; its float16 moments underflow: a 88x step)
            np.testing.assert_allclose(p.to(nb.float32).numpy()[:4], [0.9648, 0.9648, 1.0234, 0.9648], atol=1e-3)

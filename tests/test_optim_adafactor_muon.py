"""Adafactor and Muon: NumPy references of PyTorch's algorithms, their errors, and whole-parameter
updates of sharded parameters."""

from __future__ import annotations

import numpy as np
import pytest
from _optim_cases import make_data, run_nabla
from _oracle import torch

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla import DeviceMesh
from nabla_nn.parallel import colwise, rowwise, shard_module
from nabla_nn.parameter import Parameter


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
    inits, grads = make_data(6, shapes=(shape,), seed=4)
    [p], opt = run_nabla("Adafactor", kwargs, inits, grads)
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
    inits, grads = make_data(3, shapes=((4, 3), (3,)))
    up, _ = run_nabla("Adafactor", {"lr": 0.05, "maximize": True}, inits, grads)
    down, _ = run_nabla("Adafactor", {"lr": 0.05}, inits, [[-g for g in step] for step in grads])
    for a, b in zip(up, down, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_adafactor_one_nonfinite_gradient_element_spoils_only_that_element(bad: float) -> None:
    # torch's Python max(eps2, rms) and max(1, ...) give the floor for a nan norm; np.maximum
    # gave nan, and every element of a 1-d parameter went nan. Values from torch 2.13.
    p = Parameter(nb.tensor(np.arange(1, 6, dtype=np.float32)))
    opt = optim.Adafactor([p], lr=0.01)
    p.grad = nb.tensor(np.array([bad, 1, 1, 1, 1], np.float32))
    opt.step()
    out = p.numpy()
    assert np.isnan(out[0])
    np.testing.assert_allclose(out[1:], [1.9668337, 2.9668338, 3.9668338, 4.9668336], rtol=1e-6)


def test_adafactor_weight_decay_is_decoupled_and_scaled_by_lr() -> None:
    inits, _ = make_data(0, shapes=((4, 3), (3,)))
    zero = [[np.zeros_like(a) for a in inits]]
    params, _ = run_nabla("Adafactor", {"lr": 0.1, "weight_decay": 0.5}, inits, zero)
    for p, a in zip(params, inits, strict=True):  # a zero gradient: no update, only p *= 1 - lr * wd
        np.testing.assert_allclose(p.numpy(), a * np.float32(1 - 0.1 * 0.5), rtol=1e-7)


def test_adafactor_state_dict_round_trip_and_shape_check() -> None:
    inits, grads = make_data(4, shapes=((2, 3, 5), (4, 3), (3,)))
    params, opt = run_nabla("Adafactor", {"lr": 0.05}, inits, grads[:2])
    saved_params, saved = [p.numpy().copy() for p in params], opt.state_dict()
    assert [tuple(saved["state"][i]["row_var"].shape) for i in (0, 1)] == [(2, 3, 1), (4, 1)]
    assert [tuple(saved["state"][i]["col_var"].shape) for i in (0, 1)] == [(2, 1, 5), (1, 3)]
    assert sorted(saved["state"][2]) == ["step", "variance"]
    for step_grads in grads[2:]:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = nb.tensor(g)
        opt.step()
    resumed, _ = run_nabla("Adafactor", {}, saved_params, [])
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
    inits, grads = make_data(4, shapes=shapes, seed=2)
    kwargs = {"lr": 0.02, "weight_decay": 0.1, "momentum": 0.9, "nesterov": nesterov, "adjust_lr_fn": adjust_lr_fn}
    params, opt = run_nabla("Muon", kwargs, inits, grads)
    for i, (p, (rows, cols)) in enumerate(zip(params, shapes, strict=True)):
        ratio = 0.2 * max(rows, cols) ** 0.5 if adjust_lr_fn == "match_rms_adamw" else max(1, rows / cols) ** 0.5
        want_p, want_buf = _np_muon(
            inits[i], [g[i] for g in grads], 0.02, 0.1, 0.9, nesterov, (3.4445, -4.7750, 2.0315), 5, 1e-7, ratio
        )
        np.testing.assert_allclose(p.numpy(), want_p, rtol=1e-6, atol=1e-7)
        assert list(opt.state[p]) == ["momentum_buffer"]
        np.testing.assert_allclose(opt.state[p]["momentum_buffer"].numpy(), want_buf, rtol=1e-6, atol=1e-7)


def test_muon_update_is_orthogonalized_and_nesterov_changes_it() -> None:
    inits, grads = make_data(3, shapes=((5, 3),), seed=1)
    first = {}
    for nesterov in (True, False):
        [p], _ = run_nabla("Muon", {"lr": 1.0, "weight_decay": 0.0, "nesterov": nesterov}, inits, grads[:1])
        first[nesterov] = (inits[0] - p.numpy()) / np.sqrt(5 / 3)  # lr * sqrt(rows / cols) * O
    # a quintic iteration tuned for speed: singular values near 1, not exactly 1
    assert np.all(np.abs(np.linalg.svd(first[True], compute_uv=False) - 1) < 0.35)
    # after one step B = (1 - momentum) g, and nesterov's g + momentum (B - g) is a multiple of g:
    # the same orthogonalization but for bfloat16's rounding; later steps differ
    np.testing.assert_allclose(first[True], first[False], atol=0.02)
    later = [run_nabla("Muon", {"lr": 0.1, "nesterov": n}, inits, grads)[0][0].numpy() for n in (True, False)]
    assert np.abs(later[0] - later[1]).max() > 1e-3


def test_muon_adjust_lr_fn_scales_the_step() -> None:
    _, grads = make_data(1, shapes=((6, 4),), seed=3)
    steps = {}
    for fn in (None, "original", "match_rms_adamw"):  # from zero: the parameter is the step
        [p], _ = run_nabla("Muon", {"lr": 0.01, "adjust_lr_fn": fn}, [np.zeros((6, 4), np.float32)], grads)
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

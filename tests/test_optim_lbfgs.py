"""nabla_optim.LBFGS: PyTorch's iterations, line search and state, step for step."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla_nn.parameter import Parameter

_RNG = np.random.default_rng(0)
_M = _RNG.standard_normal((4, 4))
_A = _M @ _M.T + 0.5 * np.eye(4)  # positive definite
_B = _RNG.standard_normal(4)
_X = _RNG.standard_normal((16, 3))
_Y = _X @ np.array([[1.0], [-2.0], [0.5]]) + 0.3 + 0.1 * _RNG.standard_normal((16, 1))
_W0 = _RNG.standard_normal((1, 3)) * 0.1

# PyTorch's state entries that are tensors or lists of tensors (compared elementwise).
_TENSOR_STATE = ("d", "prev_flat_grad", "H_diag", "old_dirs", "old_stps", "ro", "al")


def _problem(name: str, lib: str, dtype: type = np.float64) -> tuple[list, Callable[[], Any]]:
    """The parameters and loss function of a test problem, in nabla or PyTorch, from the same start."""
    if lib == "torch":
        tensor, param = (lambda a: torch.tensor(np.asarray(a, dtype))), torch.nn.Parameter
    else:
        tensor, param = (lambda a: nb.tensor(np.asarray(a, dtype))), Parameter
    if name == "quadratic":
        x, a, b = param(tensor([1.0, -1.0, 0.5, 2.0])), tensor(_A), tensor(_B)
        return [x], lambda: 0.5 * (x * (a @ x)).sum() - (b * x).sum()
    if name == "rosenbrock":
        x = param(tensor([-1.5, 2.0]))
        return [x], lambda: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    inputs, targets = tensor(_X), tensor(_Y)
    if lib == "torch":
        lin = torch.nn.Linear(3, 1, dtype=getattr(torch, np.dtype(dtype).name))
        with torch.no_grad():
            lin.weight.copy_(tensor(_W0))
            lin.bias.zero_()
        return [lin.weight, lin.bias], lambda: torch.nn.functional.mse_loss(lin(inputs), targets)
    lin = nn.Linear(3, 1, dtype=getattr(nb, np.dtype(dtype).name))
    lin.weight.data = tensor(_W0)
    lin.bias.data = tensor(np.zeros(1))
    return [lin.weight, lin.bias], lambda: F.mse_loss(lin(inputs), targets)


def _closure(opt: Any, loss_fn: Callable[[], Any]) -> Callable[[], Any]:
    def closure() -> Any:
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    return closure


def _array(x: Any) -> np.ndarray:
    """A nabla or PyTorch tensor's value, or a number, as an array."""
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return x.numpy() if isinstance(x, nb.Tensor) else np.asarray(x)


def _assert_state_close(state: dict, tstate: dict, rtol: float, atol: float) -> None:
    assert set(state) == set(tstate)
    assert (state["func_evals"], state["n_iter"]) == (tstate["func_evals"], tstate["n_iter"])
    assert float(state["t"]) == pytest.approx(float(tstate["t"]), rel=rtol, abs=atol)
    assert state["prev_loss"] == pytest.approx(tstate["prev_loss"], rel=rtol, abs=atol)
    for key in _TENSOR_STATE:
        ours, theirs = state.get(key), tstate.get(key)
        if isinstance(theirs, list):
            assert [v is None for v in ours] == [v is None for v in theirs], key
            pairs = [(a, b) for a, b in zip(ours, theirs, strict=True) if b is not None]
        else:
            pairs = [(ours, theirs)]
        for a, b in pairs:
            np.testing.assert_allclose(_array(a), _array(b), rtol=rtol, atol=atol, err_msg=key)


# -- PyTorch parity ---------------------------------------------------------------------------
PARITY = [
    ("quadratic", {"history_size": 2, "max_iter": 4}),
    ("quadratic", {"history_size": 2, "max_iter": 4, "line_search_fn": "strong_wolfe"}),
    ("rosenbrock", {"history_size": 3, "max_iter": 8}),
    ("rosenbrock", {"history_size": 3, "max_iter": 8, "line_search_fn": "strong_wolfe"}),
    ("linear", {"history_size": 2, "max_iter": 5, "lr": 0.5}),
    ("linear", {"history_size": 2, "max_iter": 5, "line_search_fn": "strong_wolfe"}),
]


@needs_torch
@pytest.mark.parametrize(("name", "kwargs"), PARITY, ids=[f"{n}-{k.get('line_search_fn')}" for n, k in PARITY])
def test_matches_torch_float64(name: str, kwargs: dict) -> None:
    params, loss_fn = _problem(name, "nabla")
    tparams, tloss_fn = _problem(name, "torch")
    opt, topt = optim.LBFGS(params, **kwargs), torch.optim.LBFGS(tparams, **kwargs)
    closure, tclosure = _closure(opt, loss_fn), _closure(topt, tloss_fn)
    for _ in range(3):
        loss, tloss = opt.step(closure), topt.step(tclosure)
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-10)
        for p, tp in zip(params, tparams, strict=True):
            np.testing.assert_allclose(p.numpy(), _array(tp), rtol=1e-6, atol=1e-12)
            assert p.requires_grad and p.is_leaf
        # (near the optimum, `al` is a difference of nearly equal terms: compared with an absolute tolerance)
        _assert_state_close(opt.state[params[0]], topt.state[tparams[0]], rtol=1e-6, atol=1e-8)
    # the history was truncated to history_size
    assert len(opt.state[params[0]]["old_dirs"]) == kwargs["history_size"]


@needs_torch
@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_matches_torch_float32(line_search_fn: str | None) -> None:
    params, loss_fn = _problem("linear", "nabla", np.float32)
    tparams, tloss_fn = _problem("linear", "torch", np.float32)
    kwargs = {"history_size": 2, "max_iter": 5, "lr": 0.5 if line_search_fn is None else 1}
    opt = optim.LBFGS(params, line_search_fn=line_search_fn, **kwargs)
    topt = torch.optim.LBFGS(tparams, line_search_fn=line_search_fn, **kwargs)
    # The line search reaches the optimum in two steps. There, whether one more iteration runs
    # is float32 rounding (tolerance_change=1e-9 is below its resolution, and torch sums in
    # another order): a third step took 3 iterations here and 2 in torch, 1e-5 apart.
    for _ in range(3 if line_search_fn is None else 2):
        loss, tloss = opt.step(_closure(opt, loss_fn)), topt.step(_closure(topt, tloss_fn))
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-5)
        for p, tp in zip(params, tparams, strict=True):
            assert p.dtype == nb.float32
            np.testing.assert_allclose(p.numpy(), _array(tp), rtol=1e-5, atol=1e-6)
        state, tstate = opt.state[params[0]], topt.state[tparams[0]]
        assert (state["func_evals"], state["n_iter"]) == (tstate["func_evals"], tstate["n_iter"])
        assert state["d"].dtype == nb.float32


@needs_torch
def test_resumes_from_a_torch_state_dict() -> None:
    kwargs = {"history_size": 3, "max_iter": 6, "line_search_fn": "strong_wolfe"}
    tparams, tloss_fn = _problem("rosenbrock", "torch")
    topt = torch.optim.LBFGS(tparams, **kwargs)
    tclosure = _closure(topt, tloss_fn)
    topt.step(tclosure)
    params, loss_fn = _problem("rosenbrock", "nabla")
    params[0].data = nb.tensor(_array(tparams[0]))
    opt = optim.LBFGS(params, **kwargs)
    opt.load_state_dict(topt.state_dict())
    for _ in range(2):
        opt.step(_closure(opt, loss_fn))
        topt.step(tclosure)
    np.testing.assert_allclose(params[0].numpy(), _array(tparams[0]), rtol=1e-8)
    _assert_state_close(opt.state[params[0]], topt.state[tparams[0]], rtol=1e-6, atol=1e-12)


# -- values written down from torch 2.13 (no torch needed) ------------------------------------
# torch.optim.LBFGS([x], history_size=3, max_iter=8, line_search_fn=...) on the 2-D Rosenbrock
# function from x = [-1.5, 2.0] (float64), two steps.
TORCH_VALUES = {
    None: {
        "losses": [12.5, 5.800255909536548],
        "x": [-0.8593526420389701, 0.7451290298198953],
        "counters": (16, 16),
        "prev_loss": 3.4898609886066048,
        "H_diag": 0.0013359391189038073,
    },
    "strong_wolfe": {
        "losses": [12.5, 5.400252051802793],
        "x": [-0.41863649824049837, 0.15173696261518574],
        "counters": (20, 15),
        "prev_loss": 2.3150748189237955,
        "H_diag": 0.003789129724722692,
    },
}


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_rosenbrock_matches_recorded_torch_values(line_search_fn: str | None) -> None:
    expected = TORCH_VALUES[line_search_fn]
    params, loss_fn = _problem("rosenbrock", "nabla")
    opt = optim.LBFGS(params, history_size=3, max_iter=8, line_search_fn=line_search_fn)
    closure = _closure(opt, loss_fn)
    losses = [opt.step(closure).item() for _ in range(2)]
    np.testing.assert_allclose(losses, expected["losses"], rtol=1e-10)
    np.testing.assert_allclose(params[0].numpy(), expected["x"], rtol=1e-9)
    state = opt.state[params[0]]
    assert (state["func_evals"], state["n_iter"]) == expected["counters"]
    assert state["t"] == 1  # lr: later iterations start from it
    assert state["prev_loss"] == pytest.approx(expected["prev_loss"], rel=1e-9)
    assert state["H_diag"].item() == pytest.approx(expected["H_diag"], rel=1e-9)
    assert len(state["old_dirs"]) == len(state["old_stps"]) == len(state["ro"]) == 3
    assert len(state["al"]) == 3 and state["d"].shape == (2,) and state["prev_flat_grad"].shape == (2,)


def test_minimizes_a_quadratic_to_the_solution() -> None:
    params, loss_fn = _problem("quadratic", "nabla")
    opt = optim.LBFGS(params, tolerance_change=1e-14, line_search_fn="strong_wolfe")
    opt.step(_closure(opt, loss_fn))
    np.testing.assert_allclose(params[0].numpy(), np.linalg.solve(_A, _B), rtol=1e-6)
    # at the optimum a step returns at the first evaluation (gradient below tolerance_grad)
    evals = opt.state[params[0]]["func_evals"]
    opt.step(_closure(opt, loss_fn))
    assert opt.state[params[0]]["func_evals"] == evals + 1


def test_each_line_search_evaluation_is_one_graph() -> None:
    params, loss_fn = _problem("quadratic", "nabla")
    # a tiny first step: the line search extrapolates, evaluating the closure several times in a row
    opt = optim.LBFGS(params, lr=1e-4, max_iter=1, max_eval=10, line_search_fn="strong_wolfe")
    starts: list[int] = []

    def closure() -> Any:
        starts.append(nb.cache_info().executions)
        return _closure(opt, loss_fn)()

    opt.step(closure)
    gaps = np.diff(starts).tolist()
    assert len(starts) >= 4 and gaps[1:] == [1] * (len(gaps) - 1)  # loss, gradient and g.d: one execution


# -- state_dict -------------------------------------------------------------------------------
@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_state_dict_round_trip_resumes_identically(line_search_fn: str | None) -> None:
    kwargs = {"history_size": 2, "max_iter": 4, "line_search_fn": line_search_fn}
    params, loss_fn = _problem("rosenbrock", "nabla")
    opt = optim.LBFGS(params, **kwargs)
    closure = _closure(opt, loss_fn)
    opt.step(closure)
    saved = opt.state_dict()
    assert saved["param_groups"][0]["history_size"] == 2 and saved["param_groups"][0]["params"] == [0]
    entry = saved["state"][0]
    assert {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad"} <= set(entry)
    n_iter, n_dirs = entry["n_iter"], len(entry["old_dirs"])

    params2, loss_fn2 = _problem("rosenbrock", "nabla")
    params2[0].data = nb.tensor(params[0].numpy())
    opt2 = optim.LBFGS(params2, **kwargs)
    opt2.load_state_dict(saved)
    closure2 = _closure(opt2, loss_fn2)
    for _ in range(2):
        assert opt.step(closure).item() == opt2.step(closure2).item()
    np.testing.assert_array_equal(params2[0].numpy(), params[0].numpy())
    state, state2 = opt.state[params[0]], opt2.state[params2[0]]
    assert (state2["func_evals"], state2["n_iter"]) == (state["func_evals"], state["n_iter"])
    for a, b in zip(state["old_dirs"], state2["old_dirs"], strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # the saved dict is a snapshot: later steps did not change it
    assert entry["n_iter"] == n_iter and len(entry["old_dirs"]) == n_dirs


def test_loaded_state_takes_the_parameters_dtype() -> None:
    params, loss_fn = _problem("linear", "nabla")
    opt = optim.LBFGS(params, history_size=2, max_iter=3)
    opt.step(_closure(opt, loss_fn))
    params32, _ = _problem("linear", "nabla", np.float32)
    opt32 = optim.LBFGS(params32, history_size=2, max_iter=3)
    opt32.load_state_dict(opt.state_dict())
    state = opt32.state[params32[0]]
    assert state["d"].dtype == nb.float32 and state["d"].shape == (4,)
    assert all(v.dtype == nb.float32 for v in state["old_dirs"] + state["ro"])


# -- errors -----------------------------------------------------------------------------------
def test_step_requires_a_closure() -> None:
    params, _ = _problem("quadratic", "nabla")
    opt = optim.LBFGS(params)
    with pytest.raises(TypeError, match="'closure'"):
        opt.step()


def test_one_param_group_only() -> None:
    a, b = Parameter(nb.zeros(2)), Parameter(nb.zeros(3))
    with pytest.raises(ValueError, match=r"LBFGS doesn't support per-parameter options \(parameter groups\)"):
        optim.LBFGS([{"params": [a]}, {"params": [b]}])
    opt = optim.LBFGS([a])
    opt.add_param_group({"params": [b]})
    with pytest.raises(ValueError, match="parameter groups"):
        opt.step(lambda: nb.zeros(()))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"lr": -1.0}, "Invalid learning rate: -1.0"),
        ({"max_iter": 0}, "max_iter"),
        ({"max_iter": 2.5}, "max_iter"),
        ({"max_eval": 0}, "max_eval"),
        ({"history_size": 0}, "history_size"),
        ({"tolerance_grad": -1e-3}, "tolerance_grad"),
        ({"tolerance_change": -1.0}, "tolerance_change"),
        ({"line_search_fn": "backtracking"}, "line_search_fn"),
    ],
)
def test_invalid_hyperparameters(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        optim.LBFGS([Parameter(nb.zeros(2))], **kwargs)


def test_defaults_match_torch() -> None:
    opt = optim.LBFGS([Parameter(nb.zeros(2))], max_iter=8)
    group = opt.param_groups[0]
    assert (group["lr"], group["max_eval"], group["history_size"]) == (1, 10, 100)
    assert (group["tolerance_grad"], group["tolerance_change"], group["line_search_fn"]) == (1e-7, 1e-9, None)


def test_step_inside_compile_raises() -> None:
    params, loss_fn = _problem("quadratic", "nabla")
    opt = optim.LBFGS(params)

    @nb.compile
    def train_step() -> Any:
        return opt.step(_closure(opt, loss_fn))

    with pytest.raises(RuntimeError, match="nabla.compile"):
        train_step()

"""nabla_optim.lr_scheduler: PyTorch's learning-rate sequences, closed forms, state, errors."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_optim as optim
from nabla_nn.parameter import Parameter
from nabla_optim import lr_scheduler as sched_mod

STEPS = 30


def _params() -> list[Parameter]:
    return [Parameter(nb.tensor(np.ones(2, np.float32))) for _ in range(2)]


def _sgd(momentum: float = 0.9) -> optim.SGD:
    a, b = _params()
    return optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.1, momentum=momentum)


def _run(sched: object, opt: object, steps: int = STEPS, metrics: list | None = None) -> list[tuple]:
    """Per epoch: each group's lr, momentum and beta1 (when present)."""
    out = []
    for e in range(steps):
        groups = opt.param_groups
        out.append(tuple((g["lr"], g.get("momentum"), g.get("betas", (None,))[0]) for g in groups))
        opt._opt_called = True  # as after an optimizer step (silences the order warning)
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[e])
    return out


# Each factory takes the scheduler module (torch's or ours) and an optimizer.
FACTORIES: dict[str, Callable] = {
    "LambdaLR": lambda m, o: m.LambdaLR(o, lr_lambda=[lambda e: 0.9**e, lambda e: 1 / (e + 1)]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lr_lambda=lambda e: 0.95),
    "StepLR": lambda m, o: m.StepLR(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.3),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=6),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.1, end_factor=0.8, total_iters=12),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=20, power=2.0),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2, eta_min=0.01),
    "OneCycleLR": lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=STEPS + 1),
    "OneCycleLR-linear-3phase": lambda m, o: m.OneCycleLR(
        o, max_lr=0.3, epochs=4, steps_per_epoch=8, anneal_strategy="linear", three_phase=True
    ),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, schedulers=[m.LinearLR(o, start_factor=0.1, total_iters=5), m.CosineAnnealingLR(o, T_max=10)], milestones=[5]
    ),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.5, total_iters=3), m.ExponentialLR(o, gamma=0.9)]
    ),
    # CyclicLR cycles SGD's momentum and Adam's beta1; _run records both.
    "CyclicLR-triangular": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "CyclicLR-triangular2-lists": lambda m, o: m.CyclicLR(
        o,
        base_lr=[0.01, 0.02],
        max_lr=[0.1, 0.3],
        step_size_up=3,
        step_size_down=5,
        mode="triangular2",
        base_momentum=[0.7, 0.85],
        max_momentum=[0.9, 0.95],
    ),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(
        o, base_lr=0.001, max_lr=0.05, step_size_up=5, step_size_down=2, mode="exp_range", gamma=0.97
    ),
    "CyclicLR-scale_fn-iterations": lambda m, o: m.CyclicLR(
        o, base_lr=0.01, max_lr=0.2, step_size_up=3, scale_fn=lambda x: 1 / (1 + 0.1 * x), scale_mode="iterations"
    ),
    "CyclicLR-scale_fn-cycle": lambda m, o: m.CyclicLR(
        o, base_lr=0.01, max_lr=0.2, step_size_up=2, step_size_down=6, scale_fn=lambda c: 0.8**c
    ),
    # initial_lr already set by another scheduler: PyTorch's epoch 0 uses it, later epochs base_lr.
    "CyclicLR-after-StepLR": lambda m, o: (
        m.StepLR(o, step_size=100),
        m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3),
    )[1],
}


@needs_torch
@pytest.mark.parametrize("name", list(FACTORIES))
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_lr_sequence_matches_torch(name: str, opt_name: str) -> None:
    a, b = _params()
    groups = [{"params": [a]}, {"params": [b], "lr": 0.05}]
    extra = {"momentum": 0.9} if opt_name == "SGD" else {}
    opt = getattr(optim, opt_name)(groups, lr=0.1, **extra)
    tp = [torch.nn.Parameter(torch.ones(2)) for _ in range(2)]
    topt = getattr(torch.optim, opt_name)([{"params": [tp[0]]}, {"params": [tp[1]], "lr": 0.05}], lr=0.1, **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns about stepping a scheduler without an optimizer step
        expected = _run(FACTORIES[name](torch.optim.lr_scheduler, topt), topt)
    ours = FACTORIES[name](sched_mod, opt)
    assert _run(ours, opt) == expected
    assert ours.get_last_lr() == [g["lr"] for g in opt.param_groups]


@needs_torch
def test_reduce_on_plateau_matches_torch() -> None:
    metrics = [1.0, 0.9, 0.9, 0.95, 0.91, 0.9, 0.5, 0.6, 0.6, 0.6, 0.6, 0.7, 0.4, 0.4, 0.41, 0.5, 0.5, 0.5]
    opt = _sgd()
    ours = sched_mod.ReduceLROnPlateau(opt, patience=2, cooldown=1, factor=0.5, min_lr=[0.01, 0.02])
    tp = [torch.nn.Parameter(torch.ones(2)) for _ in range(2)]
    topt = torch.optim.SGD([{"params": [tp[0]]}, {"params": [tp[1]], "lr": 0.05}], lr=0.1, momentum=0.9)
    theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, patience=2, cooldown=1, factor=0.5, min_lr=[0.01, 0.02])
    tensor_metrics = [nb.tensor(np.float32(m)) for m in metrics]
    assert _run(ours, opt, len(metrics), tensor_metrics) == _run(theirs, topt, len(metrics), metrics)


@needs_torch
def test_cyclic_without_momentum_cycling_matches_torch() -> None:
    a, b = _params()
    opt = optim.Adagrad([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.1)
    tp = [torch.nn.Parameter(torch.ones(2)) for _ in range(2)]
    topt = torch.optim.Adagrad([{"params": [tp[0]]}, {"params": [tp[1]], "lr": 0.05}], lr=0.1)
    kwargs = {"base_lr": [0.01, 0.005], "max_lr": 0.1, "step_size_up": 4, "mode": "triangular2"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _run(torch.optim.lr_scheduler.CyclicLR(topt, cycle_momentum=False, **kwargs), topt)
    ours = sched_mod.CyclicLR(opt, cycle_momentum=False, **kwargs)
    assert _run(ours, opt) == expected
    assert ours.get_last_lr() == [g["lr"] for g in opt.param_groups]
    assert "momentum" not in opt.param_groups[0] and "betas" not in opt.param_groups[0]


@needs_torch
def test_cyclic_state_dict_round_trip_matches_torch() -> None:
    class Decay:  # a callable object: state_dict saves its __dict__ (a lambda is not saved)
        def __init__(self) -> None:
            self.rate = 0.9

        def __call__(self, x: float) -> float:
            return self.rate**x

    def make(m: object, o: object, fn: Decay) -> object:
        return m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=fn, scale_mode="iterations")

    tp = [torch.nn.Parameter(torch.ones(2)) for _ in range(2)]
    topt = torch.optim.SGD([{"params": [tp[0]]}, {"params": [tp[1]], "lr": 0.05}], lr=0.1, momentum=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = make(torch.optim.lr_scheduler, topt, Decay())
        _run(theirs, topt, 5)
        expected = _run(theirs, topt, 10)

    opt = _sgd()
    ours = make(sched_mod, opt, Decay())
    _run(ours, opt, 5)
    saved_opt, saved = opt.state_dict(), ours.state_dict()
    assert saved["_scale_fn_custom"] == {"rate": 0.9} and "_scale_fn_ref" not in saved
    assert saved["last_epoch"] == 5 and "optimizer" not in saved

    opt2 = _sgd()
    fn2 = Decay()
    fn2.rate = 0.5  # restored from the saved state
    resumed = make(sched_mod, opt2, fn2)
    opt2.load_state_dict(saved_opt)
    resumed.load_state_dict(saved)
    assert fn2.rate == 0.9 and "_scale_fn_custom" in saved  # the caller's dict is not consumed
    assert _run(resumed, opt2, 10) == expected

    # Built-in modes: the scale function is rebuilt from the loaded mode and gamma.
    opt3 = _sgd()
    exp = sched_mod.CyclicLR(opt3, base_lr=0.01, max_lr=0.1, step_size_up=3, mode="exp_range", gamma=0.9)
    _run(exp, opt3, 4)
    saved_opt3, state = opt3.state_dict(), exp.state_dict()
    assert state["_scale_fn_custom"] is None and state["scale_mode"] == "iterations"
    rest = _run(exp, opt3, 6)
    opt4 = _sgd()
    exp2 = sched_mod.CyclicLR(opt4, base_lr=0.5, max_lr=1.0, step_size_up=7)
    opt4.load_state_dict(saved_opt3)
    exp2.load_state_dict(state)
    assert exp2.mode == "exp_range" and exp2.scale_fn(2) == 0.9**2
    assert _run(exp2, opt4, 6) == rest


# -- closed forms (no torch) --------------------------------------------------------------------
def _lrs(factory: Callable, steps: int = STEPS) -> list[float]:
    opt = _sgd()
    sched = factory(opt)
    return [lrs[0][0] for lrs in _run(sched, opt, steps)]


def test_step_multistep_exponential_closed_forms() -> None:
    assert _lrs(lambda o: sched_mod.StepLR(o, step_size=4, gamma=0.5)) == pytest.approx(
        [0.1 * 0.5 ** (e // 4) for e in range(STEPS)], rel=1e-12
    )
    assert _lrs(lambda o: sched_mod.MultiStepLR(o, milestones=[3, 10], gamma=0.1)) == pytest.approx(
        [0.1 * 0.1 ** ((e >= 3) + (e >= 10)) for e in range(STEPS)], rel=1e-12
    )
    assert _lrs(lambda o: sched_mod.ExponentialLR(o, gamma=0.9)) == pytest.approx(
        [0.1 * 0.9**e for e in range(STEPS)], rel=1e-12
    )


def test_cosine_linear_constant_lambda_polynomial_closed_forms() -> None:
    t, lo = 7, 0.001
    cosine = [lo + (0.1 - lo) * (1 + math.cos(math.pi * e / t)) / 2 for e in range(2 * t + 1)]
    assert _lrs(lambda o: sched_mod.CosineAnnealingLR(o, T_max=t, eta_min=lo), 2 * t + 1) == pytest.approx(
        cosine, rel=1e-10
    )
    linear = [0.1 * (0.25 + 0.75 * min(e, 6) / 6) for e in range(12)]
    assert _lrs(lambda o: sched_mod.LinearLR(o, start_factor=0.25, total_iters=6), 12) == pytest.approx(linear)
    constant = [0.1 * (0.5 if e < 4 else 1.0) for e in range(8)]
    assert _lrs(lambda o: sched_mod.ConstantLR(o, factor=0.5, total_iters=4), 8) == pytest.approx(constant)
    assert _lrs(lambda o: sched_mod.LambdaLR(o, lambda e: 1 / (e + 1)), 6) == [0.1 * (1 / (e + 1)) for e in range(6)]
    poly = [0.1 * (1 - min(e, 10) / 10) ** 2 for e in range(12)]
    assert _lrs(lambda o: sched_mod.PolynomialLR(o, total_iters=10, power=2.0), 12) == pytest.approx(poly, abs=1e-15)


def test_warm_restarts_return_to_the_base_lr() -> None:
    lrs = _lrs(lambda o: sched_mod.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2), 12)
    assert lrs[0] == lrs[3] == lrs[9] == pytest.approx(0.1)  # restarts after 3, then 6 epochs
    assert lrs[4] == pytest.approx(0.1 * (1 + math.cos(math.pi / 6)) / 2)


def test_one_cycle_endpoints_and_momentum() -> None:
    opt = _sgd()
    sched = sched_mod.OneCycleLR(opt, max_lr=1.0, total_steps=20, pct_start=0.25, div_factor=10, final_div_factor=100)
    seq = _run(sched, opt, 20)
    lrs, moms = [s[0][0] for s in seq], [s[0][1] for s in seq]
    assert lrs[0] == pytest.approx(0.1) and moms[0] == pytest.approx(0.95)
    assert lrs[4] == pytest.approx(1.0) and moms[4] == pytest.approx(0.85)  # peak at pct_start*total - 1
    assert lrs[19] == pytest.approx(0.1 / 100) and moms[19] == pytest.approx(0.95)
    assert opt.param_groups[0]["initial_lr"] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="Tried to step 21 times"):
        sched.step()


def test_one_cycle_cycles_adam_beta1() -> None:
    a, _ = _params()
    opt = optim.Adam([a], lr=0.1, betas=(0.9, 0.98))
    sched = sched_mod.OneCycleLR(opt, max_lr=0.1, total_steps=10, base_momentum=0.8, max_momentum=0.9)
    assert opt.param_groups[0]["betas"] == (0.9, 0.98)
    opt._opt_called = True
    for _ in range(3):
        sched.step()
    beta1, beta2 = opt.param_groups[0]["betas"]
    assert 0.8 < beta1 < 0.9 and beta2 == 0.98


def test_sequential_warmup_then_decay() -> None:
    def make(o: optim.Optimizer) -> sched_mod.SequentialLR:
        warm = sched_mod.LinearLR(o, start_factor=0.5, total_iters=2)
        decay = sched_mod.ExponentialLR(o, gamma=0.5)
        return sched_mod.SequentialLR(o, schedulers=[warm, decay], milestones=[2])

    assert _lrs(make, 5) == pytest.approx([0.05, 0.075, 0.1, 0.05, 0.025])


def test_chained_schedulers_compose() -> None:
    def make(o: optim.Optimizer) -> sched_mod.ChainedScheduler:
        return sched_mod.ChainedScheduler(
            [sched_mod.ConstantLR(o, factor=0.5, total_iters=2), sched_mod.ExponentialLR(o, gamma=0.9)]
        )

    assert _lrs(make, 4) == pytest.approx([0.05, 0.045, 0.081, 0.0729])


def test_reduce_on_plateau_with_tensor_metric() -> None:
    opt = _sgd()
    sched = sched_mod.ReduceLROnPlateau(opt, mode="max", patience=1, factor=0.5)
    for metric in [1.0, 2.0, 2.0, 2.0]:
        sched.step(nb.tensor(metric))
    assert [g["lr"] for g in opt.param_groups] == [0.05, 0.025]
    assert sched.get_last_lr() == [0.05, 0.025]
    sched.step(5)
    assert sched.best == 5.0 and sched.num_bad_epochs == 0


# -- state and protocol -------------------------------------------------------------------------
def test_initial_lr_and_base_lrs() -> None:
    opt = _sgd()
    sched = sched_mod.StepLR(opt, step_size=2)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.05]
    assert sched.base_lrs == [0.1, 0.05] and sched.last_epoch == 0
    with pytest.raises(KeyError, match="initial_lr"):
        sched_mod.StepLR(optim.SGD(_params()), step_size=2, last_epoch=3)


def test_state_dict_round_trip_continues_the_schedule() -> None:
    opt = _sgd()
    sched = sched_mod.CosineAnnealingLR(opt, T_max=10)
    _run(sched, opt, 4)
    saved_opt, saved = opt.state_dict(), sched.state_dict()
    assert "optimizer" not in saved and saved["last_epoch"] == 4
    rest = _run(sched, opt, 5)
    opt2 = _sgd()
    sched2 = sched_mod.CosineAnnealingLR(opt2, T_max=10)
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved)
    assert _run(sched2, opt2, 5) == rest


def test_lambda_state_dict_saves_callable_objects_only() -> None:
    class Factor:
        def __init__(self) -> None:
            self.rate = 0.5

        def __call__(self, epoch: int) -> float:
            return self.rate**epoch

    opt = _sgd()
    sched = sched_mod.LambdaLR(opt, [Factor(), lambda e: 1.0])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"rate": 0.5}, None]
    state["lr_lambdas"][0]["rate"] = 0.25
    sched.load_state_dict(state)
    assert sched.lr_lambdas[0].rate == 0.25


def _step_optimizer(opt: optim.Optimizer) -> None:
    for p in opt.param_groups[0]["params"]:
        p.grad = nb.tensor(np.ones(2, np.float32))
    opt.step()


def test_warns_when_stepped_before_the_optimizer() -> None:
    opt = _sgd()
    sched = sched_mod.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt2 = _sgd()
    sched2 = sched_mod.StepLR(opt2, step_size=2)
    _step_optimizer(opt2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched2.step()


def test_epoch_argument_uses_the_closed_form() -> None:
    opt = _sgd()
    sched = sched_mod.StepLR(opt, step_size=3, gamma=0.1)
    _step_optimizer(opt)
    with pytest.warns(UserWarning, match="deprecated"):
        sched.step(7)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.1**2)


def test_errors() -> None:
    opt = _sgd()
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        sched_mod.StepLR([], step_size=2)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        sched_mod.LambdaLR(opt, [lambda e: 1.0])
    with pytest.raises(ValueError, match="total_steps OR"):
        sched_mod.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="max_lr must have the same length"):
        sched_mod.OneCycleLR(opt, max_lr=[1.0], total_steps=5)
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        sched_mod.OneCycleLR(optim.Adagrad(_params()), max_lr=1.0, total_steps=5)
    with pytest.raises(ValueError, match="number of milestone points"):
        sched_mod.SequentialLR(opt, [sched_mod.StepLR(opt, 2)], milestones=[3])
    with pytest.raises(ValueError, match="same optimizer"):
        sched_mod.ChainedScheduler([sched_mod.StepLR(opt, 2), sched_mod.StepLR(_sgd(), 2)])
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        sched_mod.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode 'up' is unknown"):
        sched_mod.ReduceLROnPlateau(opt, mode="up")
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        sched_mod.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="positive integer T_0"):
        sched_mod.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="Adagrad has neither 'momentum' nor 'betas'"):
        sched_mod.CyclicLR(optim.Adagrad(_params()), base_lr=0.01, max_lr=0.1)
    with pytest.raises(ValueError, match="base_lr must have the same length"):
        sched_mod.CyclicLR(opt, base_lr=[0.01], max_lr=0.1)
    with pytest.raises(ValueError, match="mode must be 'triangular', 'triangular2' or 'exp_range', got 'sine'"):
        sched_mod.CyclicLR(opt, base_lr=0.01, max_lr=0.1, mode="sine")
    with pytest.raises(ValueError, match="scale_mode must be 'cycle' or 'iterations', got 'epoch'"):
        sched_mod.CyclicLR(opt, base_lr=0.01, max_lr=0.1, scale_fn=lambda x: 1.0, scale_mode="epoch")
    with pytest.raises(ValueError, match="step_size_up must be positive, got 0"):
        sched_mod.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=0)


def test_a_custom_scheduler_written_as_torchs_own_works():
    class Warm(sched_mod._LRScheduler):  # torch's older base name
        def get_lr(self):
            assert self._get_lr_called_within_step  # torch's built-in schedulers check it
            return [base * min(1.0, (self.last_epoch + 1) / 3) for base in self.base_lrs]

    opt = optim.SGD([Parameter(nb.zeros(2))], lr=0.3)
    sched = Warm(opt)
    lrs = [sched.get_last_lr()[0]]
    for _ in range(3):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    assert lrs == pytest.approx([0.1, 0.2, 0.3, 0.3]) and not sched._get_lr_called_within_step


def test_warm_restarts_names_a_bad_eta_min_like_torch():
    opt = optim.SGD([Parameter(nb.zeros(2))], lr=0.3)
    with pytest.raises(ValueError, match="Expected float or int eta_min"):
        sched_mod.CosineAnnealingWarmRestarts(opt, 2, 1, eta_min="a")


def test_a_multistep_schedule_resumed_from_a_checkpoint_file_continues(tmp_path) -> None:
    """A checkpoint's JSON holds MultiStepLR's milestone Counter as a dict: the closed form
    (what SequentialLR calls when it switches, and step(epoch)) still works after loading."""

    def make(opt):
        return sched_mod.SequentialLR(
            opt, [sched_mod.LinearLR(opt, 0.1, 1.0, 3), sched_mod.MultiStepLR(opt, [2, 2, 4], 0.5)], [3]
        )

    w = Parameter(nb.ones(2))
    opt = optim.SGD([w], lr=0.1)
    sched = make(opt)
    for _ in range(2):
        opt.step()
        sched.step()
    nn.save({"opt": opt.state_dict(), "sched": sched.state_dict()}, tmp_path / "ck.safetensors")
    lrs = []
    for _ in range(6):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    ck = nn.load(tmp_path / "ck.safetensors")
    opt2 = optim.SGD([w], lr=0.1)
    sched2 = make(opt2)
    opt2.load_state_dict(ck["opt"])
    sched2.load_state_dict(ck["sched"])
    resumed = []
    for _ in range(6):
        opt2.step()
        sched2.step()
        resumed.append(sched2.get_last_lr()[0])
    assert resumed == lrs and lrs[-1] == pytest.approx(0.1 * 0.25 * 0.5)

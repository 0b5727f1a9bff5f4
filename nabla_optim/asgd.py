"""ASGD: averaged stochastic gradient descent (Polyak and Juditsky, 1992)."""

from __future__ import annotations

import numbers
from typing import Any

import nabla as nb
from nabla import Tensor
from nabla_nn.parameter import Parameter

from .optimizer import Optimizer, ParamsT, check_implementation, check_lr, check_nonneg
from .state import realized_full, realized_step, realized_zeros_like

__all__ = ["ASGD"]


def asgd_rule(
    xp: Any,
    p: Any,
    g: Any,
    state: tuple,
    s: dict,
    *,
    lambd: float,
    alpha: float,
    t0: float,
    weight_decay: float,
    maximize: bool,
) -> tuple[Any, tuple]:
    """One parameter's ASGD step; `state` is (step, eta, mu, ax). The step uses the eta and mu
    of the previous step; their next values are float64 scalar math from the step count and
    the current lr, stored in their own dtype (float32), as PyTorch does in Python doubles."""
    step_t, eta, mu, ax = state
    step_t = step_t + 1
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g + p * weight_decay
    p = p * xp.cast(1 - lambd * xp.cast(eta, xp.float64), p)
    p = p - g * xp.cast(eta, p)
    # Averaging starts once mu drops below 1 (step > t0 + 1); until then ax copies p exactly.
    ax = xp.where(mu != 1, ax + (p - ax) * xp.cast(mu, p), p)
    lr, step = s["lr"], xp.cast(step_t, xp.float64)
    eta = xp.cast(lr / xp.pow(1 + lambd * lr * step, alpha), eta)
    mu = xp.cast(1 / xp.maximum(step - t0, 1.0), mu)
    return p, (step_t, eta, mu, ax)


def _check_number(name: str, value: Any) -> None:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")


class ASGD(Optimizer):
    """ASGD (PyTorch's `torch.optim.ASGD`, same defaults and update).

    Each step: `p = p * (1 - lambd * eta) - eta * g`; then the average `ax` follows `p` with
    weight `mu` (a copy of `p` while `mu` is 1); then `eta = lr / (1 + lambd * lr * step)^alpha`
    and `mu = 1 / max(1, step - t0)` for the next step.

    Args:
        params: parameters or param groups to optimize.
        lr: learning rate (default 1e-2).
        lambd: decay term (default 1e-4).
        alpha: power of the eta update (default 0.75).
        t0: step at which averaging starts (default 1e6).
        weight_decay: L2 penalty added to the gradient (default 0).
        maximize: maximize the objective instead of minimizing it.
        foreach, capturable: PyTorch's implementation switches, accepted and without effect
            (nabla records every parameter's update as one fused op); differentiable=True is
            not supported.

    State per parameter: "step", "eta" (starts at lr), "mu" (starts at 1), all float32
    scalars, and "ax" (the averaged parameter).

    Example:
        >>> opt = nabla_optim.ASGD(model.parameters(), lr=1e-2, t0=100)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    rule = staticmethod(asgd_rule)
    const_names = ("lambd", "alpha", "t0", "weight_decay")
    shared_state = ("step", "eta", "mu")  # (eta and mu read only the step and hyperparameters)
    flag_names = ("maximize",)

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_implementation(differentiable)  # foreach, capturable: one fused update anyway
        lr = check_lr(lr)
        check_nonneg("weight_decay", weight_decay)
        for name, value in (("lambd", lambd), ("alpha", alpha), ("t0", t0)):
            _check_number(name, value)  # any value PyTorch takes, but a number
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        return {
            "step": realized_step(),
            "eta": realized_full((), group["lr"], nb.float32),
            "mu": realized_full((), 1.0, nb.float32),
            "ax": realized_zeros_like(p),
        }

    def _state_keys(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> tuple[str, ...]:
        return ("step", "eta", "mu", "ax")

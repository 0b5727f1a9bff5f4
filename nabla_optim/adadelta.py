"""Adadelta: steps scaled by the ratio of running RMS of past updates and of gradients."""

from __future__ import annotations

from typing import Any

from nabla import Tensor
from nabla_nn.parameter import Parameter

from .optimizer import Optimizer, ParamsT, check_implementation, check_lr, check_nonneg
from .state import realized_step, realized_zeros_like

__all__ = ["Adadelta"]


def adadelta_rule(
    xp: Any,
    p: Any,
    g: Any,
    state: tuple,
    s: dict,
    *,
    rho: float,
    eps: float,
    weight_decay: float,
    maximize: bool,
) -> tuple[Any, tuple]:
    """One parameter's Adadelta step; `state` is (step, square_avg, acc_delta)."""
    step, square_avg, acc_delta = state
    step = step + 1
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g + p * weight_decay
    square_avg = square_avg * rho + g * g * (1 - rho)
    std = xp.sqrt(square_avg + eps)
    delta = xp.sqrt(acc_delta + eps) / std * g
    acc_delta = acc_delta * rho + delta * delta * (1 - rho)
    return p - delta * xp.cast(s["lr"], p), (step, square_avg, acc_delta)


class Adadelta(Optimizer):
    """Adadelta (PyTorch's `torch.optim.Adadelta`, same defaults and update).

    Each step: `v = rho * v + (1 - rho) * g^2`; `d = sqrt(u + eps) / sqrt(v + eps) * g`;
    `u = rho * u + (1 - rho) * d^2`; `p -= lr * d`.

    Args:
        params: parameters or param groups to optimize.
        lr: coefficient that scales the delta before it is applied (default 1.0).
        rho: coefficient of the running averages of the squared gradient and squared delta
            (default 0.9), in [0, 1].
        eps: term added to the averages inside the square roots (default 1e-6).
        weight_decay: L2 penalty added to the gradient (default 0).
        maximize: maximize the objective instead of minimizing it.
        foreach, capturable: PyTorch's implementation switches, accepted and without effect
            (nabla records every parameter's update as one fused op); differentiable=True is
            not supported.

    State per parameter: "step" (float32 scalar), "square_avg", "acc_delta".

    Example:
        >>> opt = nabla_optim.Adadelta(model.parameters())
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    rule = staticmethod(adadelta_rule)
    const_names = ("rho", "eps", "weight_decay")
    flag_names = ("maximize",)

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_implementation(differentiable)  # foreach, capturable: one fused update anyway
        lr = check_lr(lr)
        check_nonneg("rho", rho)
        if rho > 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonneg("eps", eps, "epsilon value")
        check_nonneg("weight_decay", weight_decay)
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        return {"step": realized_step(), "square_avg": realized_zeros_like(p), "acc_delta": realized_zeros_like(p)}

    def _state_keys(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> tuple[str, ...]:
        return ("step", "square_avg", "acc_delta")

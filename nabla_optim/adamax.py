"""Adamax: Adam with the infinity norm in place of the second moment."""

from __future__ import annotations

from typing import Any

from nabla import Tensor
from nabla_nn.parameter import Parameter

from .adam import lerp
from .optimizer import Optimizer, ParamsT, check_betas, check_implementation, check_lr, check_nonneg
from .state import realized_step, realized_zeros_like

__all__ = ["Adamax"]


def adamax_rule(
    xp: Any,
    p: Any,
    g: Any,
    state: tuple,
    s: dict,
    *,
    eps: float,
    weight_decay: float,
    maximize: bool,
) -> tuple[Any, tuple]:
    """One parameter's Adamax step; `state` is (step, exp_avg, exp_inf)."""
    if maximize:
        g = -g
    lr, beta1, beta2 = s["lr"], s["beta1"], s["beta2"]
    step, exp_avg, exp_inf = state
    step = step + 1
    if weight_decay != 0:
        g = g + p * weight_decay
    exp_avg = lerp(exp_avg, g, xp.cast(1 - beta1, p))
    exp_inf = xp.maximum(exp_inf * xp.cast(beta2, p), xp.abs(g) + eps)
    clr = lr / (1 - xp.pow(beta1, xp.cast(step, xp.float64)))
    return p - exp_avg * xp.cast(clr, p) / exp_inf, (step, exp_avg, exp_inf)


class Adamax(Optimizer):
    """Adamax (PyTorch's `torch.optim.Adamax`, same defaults and update).

    Args:
        params: parameters or param groups to optimize.
        lr: learning rate (default 2e-3).
        betas: coefficients of the gradient average and the infinity norm (default (0.9, 0.999)).
        eps: term added to the norm (default 1e-8).
        weight_decay: L2 penalty added to the gradient (default 0).
        maximize: maximize the objective instead of minimizing it.
        foreach, fused, capturable: PyTorch's implementation switches, accepted and without
            effect (nabla records every parameter's update as one fused op); differentiable=True
            is not supported.

    State per parameter: "step", "exp_avg", "exp_inf".

    Example:
        >>> opt = nabla_optim.Adamax(model.parameters())
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    rule = staticmethod(adamax_rule)
    scalar_names = ("lr", "beta1", "beta2")
    const_names = ("eps", "weight_decay")
    flag_names = ("maximize",)

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,  # (positional, as in torch)
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_implementation(differentiable)  # foreach, fused, capturable: one fused update anyway
        lr = check_lr(lr)
        check_nonneg("eps", eps, "epsilon value")
        betas = check_betas(betas)
        check_nonneg("weight_decay", weight_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        return {"step": realized_step(), "exp_avg": realized_zeros_like(p), "exp_inf": realized_zeros_like(p)}

    def _state_keys(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> tuple[str, ...]:
        return ("step", "exp_avg", "exp_inf")

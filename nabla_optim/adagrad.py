"""Adagrad: per-coordinate learning rates from the sum of squared gradients."""

from __future__ import annotations

from typing import Any

from nabla import Tensor
from nabla_nn.parameter import Parameter

from .optimizer import Optimizer, ParamsT, check_implementation, check_lr, check_nonneg
from .state import realized_step, realized_zeros_like, share_scalars

__all__ = ["Adagrad"]


def adagrad_rule(
    xp: Any,
    p: Any,
    g: Any,
    state: tuple,
    s: dict,
    *,
    lr_decay: float,
    weight_decay: float,
    eps: float,
    maximize: bool,
) -> tuple[Any, tuple]:
    """One parameter's Adagrad step; `state` is (step, sum)."""
    if maximize:
        g = -g
    step, state_sum = state
    step = step + 1
    if weight_decay != 0:
        g = g + p * weight_decay
    clr = s["lr"] / (1 + (xp.cast(step, xp.float64) - 1) * lr_decay)
    state_sum = state_sum + g * g
    std = xp.sqrt(state_sum) + eps
    return p - g * xp.cast(clr, p) / std, (step, state_sum)


class Adagrad(Optimizer):
    """Adagrad (PyTorch's `torch.optim.Adagrad`, same defaults and update).

    The step size is `lr / (1 + (step - 1) * lr_decay)`; the update divides by
    `sqrt(sum of squared gradients) + eps`. As in PyTorch, the state of every parameter is
    created by the constructor (so `state_dict()` lists it before the first step).

    Args:
        params: parameters or param groups to optimize.
        lr: learning rate (default 1e-2).
        lr_decay: learning rate decay (default 0).
        weight_decay: L2 penalty added to the gradient (default 0).
        initial_accumulator_value: starting value of the sum (default 0).
        eps: term added to the denominator (default 1e-10).
        maximize: maximize the objective instead of minimizing it.
        foreach, fused, capturable: PyTorch's implementation switches, accepted and without
            effect (nabla records every parameter's update as one fused op); differentiable=True
            is not supported.

    Example:
        >>> opt = nabla_optim.Adagrad(model.parameters(), lr=0.1)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    rule = staticmethod(adagrad_rule)
    scalar_names = ("lr",)
    const_names = ("lr_decay", "weight_decay", "eps")
    flag_names = ("maximize",)

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,  # (positional, as in torch)
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_implementation(differentiable)  # foreach, fused, capturable: one fused update anyway
        lr = check_lr(lr)
        check_nonneg("lr_decay", lr_decay)
        check_nonneg("weight_decay", weight_decay)
        check_nonneg("initial_accumulator_value", initial_accumulator_value)
        check_nonneg("eps", eps, "epsilon value")
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            # As PyTorch's: the constructor's initial_accumulator_value, whatever a group says
            # (a group's own value is read only for parameters added later, by add_param_group).
            for p in group["params"]:
                self.state[p].update(
                    {"step": realized_step(), "sum": realized_zeros_like(p, initial_accumulator_value)}
                )
            share_scalars([[self.state[p][k] for p in group["params"]] for k in self.shared_state])

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        return {"step": realized_step(), "sum": realized_zeros_like(p, group["initial_accumulator_value"])}

    def _state_keys(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> tuple[str, ...]:
        return ("step", "sum")

"""RMSprop: gradients divided by a running root mean square."""

from __future__ import annotations

from typing import Any

from nabla import Tensor
from nabla_nn.parameter import Parameter

from .adam import lerp
from .optimizer import Optimizer, ParamsT, check_implementation, check_lr, check_nonneg
from .state import ensure_state, realized_step, realized_zeros_like

__all__ = ["RMSprop"]


def rmsprop_rule(
    xp: Any,
    p: Any,
    g: Any,
    state: tuple,
    s: dict,
    *,
    alpha: float,
    eps: float,
    weight_decay: float,
    momentum: bool,
    centered: bool,
    maximize: bool,
) -> tuple[Any, tuple]:
    """One parameter's RMSprop step; `state` is (step, square_avg[, momentum_buffer][, grad_avg])
    (`momentum` says whether the group's momentum is nonzero; its value is `s["momentum"]`)."""
    if maximize:
        g = -g
    step, square_avg, *rest = state
    step = step + 1
    if weight_decay != 0:
        g = g + p * weight_decay
    square_avg = square_avg * alpha + g * g * (1 - alpha)
    new_state: tuple = (step, square_avg)
    if centered:
        grad_avg = lerp(rest[-1], g, 1 - alpha)
        avg = xp.sqrt(square_avg - grad_avg * grad_avg)
    else:
        avg = xp.sqrt(square_avg)
    avg = avg + eps
    lr = xp.cast(s["lr"], p)
    if momentum:
        buf = rest[0] * xp.cast(s["momentum"], p) + g / avg
        new_state += (buf,)
        p = p - buf * lr
    else:
        p = p - g * lr / avg
    if centered:
        new_state += (grad_avg,)
    return p, new_state


class RMSprop(Optimizer):
    """RMSprop (PyTorch's `torch.optim.RMSprop`, same defaults and update).

    Args:
        params: parameters or param groups to optimize.
        lr: learning rate (default 1e-2).
        alpha: smoothing constant of the squared-gradient average (default 0.99).
        eps: term added to the denominator (default 1e-8).
        weight_decay: L2 penalty added to the gradient (default 0).
        momentum: momentum factor (default 0).
        centered: normalize by an estimate of the gradient's variance instead.
        maximize: maximize the objective instead of minimizing it.
        foreach, fused, capturable: PyTorch's implementation switches, accepted and without
            effect (nabla records every parameter's update as one fused op); differentiable=True
            is not supported.

    State per parameter: "step", "square_avg", with momentum "momentum_buffer", and when
    centered "grad_avg".

    Example:
        >>> opt = nabla_optim.RMSprop(model.parameters(), lr=1e-2, momentum=0.9)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    rule = staticmethod(rmsprop_rule)
    scalar_names = ("lr", "momentum")
    const_names = ("alpha", "eps", "weight_decay")
    flag_names = ("centered", "maximize")

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,  # (the rest positional too, in torch's order)
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_implementation(differentiable)  # foreach, fused, capturable: one fused update anyway
        lr = check_lr(lr)
        check_nonneg("eps", eps, "epsilon value")
        check_nonneg("momentum", momentum)
        check_nonneg("weight_decay", weight_decay)
        check_nonneg("alpha", alpha)
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        state = {"step": realized_step(), "square_avg": realized_zeros_like(p)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = realized_zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = realized_zeros_like(p)
        return state

    def _state_keys(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> tuple[str, ...]:
        keys = ("step", "square_avg")
        if group["momentum"] > 0:
            ensure_state(state, "momentum_buffer", lambda: realized_zeros_like(p))
            keys += ("momentum_buffer",)
        if group["centered"]:
            ensure_state(state, "grad_avg", lambda: realized_zeros_like(p))
            keys += ("grad_avg",)
        return keys

    def rule_consts(self, group: dict[str, Any]) -> dict[str, Any]:
        return super().rule_consts(group) | {"momentum": bool(group["momentum"] > 0)}

"""Adam (and the shared update AdamW uses with decoupled weight decay)."""

from __future__ import annotations

from typing import Any

from nabla import Tensor
from nabla_nn.parameter import Parameter

from .optimizer import Optimizer, ParamsT, check_betas, check_implementation, check_lr, check_nonneg
from .state import ensure_state, realized_step, realized_zeros_like

__all__ = ["Adam"]


def lerp(avg: Any, target: Any, weight: Any) -> Any:
    """PyTorch's `avg.lerp_(target, weight)` for weight < 0.5: avg + weight * (target - avg)."""
    return avg + (target - avg) * weight


def adam_moments(
    xp: Any, p: Any, g: Any, moments: tuple, s: dict, weight_decay: float, decoupled: bool, maximize: bool
) -> tuple[Any, Any, Any]:
    """The start Adam's family shares (Adam, AdamW, RAdam): the sign for `maximize`, weight
    decay (an L2 term in the gradient, or `decoupled` on the parameter, as AdamW), and the two
    running moments. Returns (p, exp_avg, exp_avg_sq)."""
    if maximize:
        g = -g
    exp_avg, exp_avg_sq = moments
    if weight_decay != 0:
        if decoupled:
            p = p * xp.cast(1 - s["lr"] * weight_decay, p)
        else:
            g = g + p * weight_decay
    exp_avg = lerp(exp_avg, g, xp.cast(1 - s["beta1"], p))
    exp_avg_sq = exp_avg_sq * xp.cast(s["beta2"], p) + g * g * xp.cast(1 - s["beta2"], p)
    return p, exp_avg, exp_avg_sq


def adam_rule(
    xp: Any,
    p: Any,
    g: Any,
    state: tuple,
    s: dict,
    *,
    eps: float,
    weight_decay: float,
    amsgrad: bool,
    maximize: bool,
    decoupled_weight_decay: bool,
) -> tuple[Any, tuple]:
    """One parameter's Adam step; `state` is (step, exp_avg, exp_avg_sq[, max_exp_avg_sq]).
    Bias corrections are float64 scalar math, cast to the parameter's dtype as PyTorch does."""
    lr, beta1, beta2 = s["lr"], s["beta1"], s["beta2"]
    step_t = state[0] + 1
    p, exp_avg, exp_avg_sq = adam_moments(xp, p, g, state[1:3], s, weight_decay, decoupled_weight_decay, maximize)
    step = xp.cast(step_t, xp.float64)
    bias_correction1 = 1 - xp.pow(beta1, step)
    bias_correction2_sqrt = xp.sqrt(1 - xp.pow(beta2, step))
    step_size = lr / bias_correction1
    new_state = (step_t, exp_avg, exp_avg_sq)
    second = exp_avg_sq
    if amsgrad:
        second = xp.maximum(state[3], exp_avg_sq)
        new_state += (second,)
    denom = xp.sqrt(second) / xp.cast(bias_correction2_sqrt, p) + eps
    return p - exp_avg * xp.cast(step_size, p) / denom, new_state


class Adam(Optimizer):
    """Adam (PyTorch's `torch.optim.Adam`, same defaults and update).

    Args:
        params: parameters or param groups to optimize.
        lr: learning rate (default 1e-3).
        betas: coefficients of the running averages of the gradient and its square
            (default (0.9, 0.999)).
        eps: term added to the denominator (default 1e-8).
        weight_decay: L2 penalty added to the gradient (default 0), or decoupled (AdamW).
        amsgrad: use the AMSGrad variant (the maximum of past second moments).
        maximize: maximize the objective instead of minimizing it.
        foreach, fused, capturable: PyTorch's implementation switches, accepted and without
            effect (nabla records every parameter's update as one fused op); differentiable=True
            is not supported.
        decoupled_weight_decay: decay the weights directly, as AdamW does.

    State per parameter: "step" (float32 scalar), "exp_avg", "exp_avg_sq", and with amsgrad
    "max_exp_avg_sq".

    Example:
        >>> opt = nabla_optim.Adam(model.parameters(), lr=1e-3)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    rule = staticmethod(adam_rule)
    scalar_names = ("lr", "beta1", "beta2")
    const_names = ("eps", "weight_decay")
    flag_names = ("amsgrad", "maximize", "decoupled_weight_decay")

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
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
            "amsgrad": amsgrad,
            "maximize": maximize,
            "decoupled_weight_decay": decoupled_weight_decay,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        state = {"step": realized_step(), "exp_avg": realized_zeros_like(p), "exp_avg_sq": realized_zeros_like(p)}
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = realized_zeros_like(p)
        return state

    def _state_keys(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> tuple[str, ...]:
        if group["amsgrad"]:
            ensure_state(state, "max_exp_avg_sq", lambda: realized_zeros_like(p))
            return ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq")
        return ("step", "exp_avg", "exp_avg_sq")

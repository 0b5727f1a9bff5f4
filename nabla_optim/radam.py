"""RAdam: Adam with a rectified (variance-corrected) adaptive learning rate."""

from __future__ import annotations

from typing import Any

from nabla import Tensor
from nabla_nn.parameter import Parameter

from .adam import adam_moments
from .optimizer import Optimizer, ParamsT, check_betas, check_implementation, check_lr, check_nonneg
from .state import realized_step, realized_zeros_like

__all__ = ["RAdam"]


def radam_rule(
    xp: Any,
    p: Any,
    g: Any,
    state: tuple,
    s: dict,
    *,
    eps: float,
    weight_decay: float,
    decoupled_weight_decay: bool,
    maximize: bool,
) -> tuple[Any, tuple]:
    """One parameter's RAdam step; `state` is (step, exp_avg, exp_avg_sq). The SMA length and
    the rectification are float64 scalar math; PyTorch's `if rho_t > 5` is a select."""
    lr, beta1, beta2 = s["lr"], s["beta1"], s["beta2"]
    step_t = state[0] + 1
    p, exp_avg, exp_avg_sq = adam_moments(xp, p, g, state[1:], s, weight_decay, decoupled_weight_decay, maximize)
    step = xp.cast(step_t, xp.float64)
    bias_correction1 = 1 - xp.pow(beta1, step)
    bias_correction2 = 1 - xp.pow(beta2, step)
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * xp.pow(beta2, step) / bias_correction2
    # NaN while rho_t <= 4 (sqrt of a negative): only read where rho_t > 5.
    rect = xp.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
    update = exp_avg / xp.cast(bias_correction1, p) * xp.cast(lr, p)
    adaptive_lr = xp.cast(xp.sqrt(bias_correction2), p) / (xp.sqrt(exp_avg_sq) + eps)
    update = xp.where(rho_t > 5.0, update * adaptive_lr * xp.cast(rect, p), update)
    return p - update, (step_t, exp_avg, exp_avg_sq)


class RAdam(Optimizer):
    """RAdam (PyTorch's `torch.optim.RAdam`, same defaults and update).

    Adam whose adaptive step is scaled by a rectification term once the approximated simple
    moving average's length `rho_t` exceeds 5; before that, a bias-corrected momentum step.

    Args:
        params: parameters or param groups to optimize.
        lr: learning rate (default 1e-3).
        betas: coefficients of the running averages of the gradient and its square
            (default (0.9, 0.999)).
        eps: term added to the denominator (default 1e-8).
        weight_decay: L2 penalty added to the gradient (default 0), or decoupled.
        decoupled_weight_decay: decay the weights directly (`p *= 1 - lr * weight_decay`),
            as AdamW does.
        maximize: maximize the objective instead of minimizing it.
        foreach, capturable: PyTorch's implementation switches, accepted and without effect
            (nabla records every parameter's update as one fused op); differentiable=True is
            not supported.

    State per parameter: "step" (float32 scalar), "exp_avg", "exp_avg_sq".

    Example:
        >>> opt = nabla_optim.RAdam(model.parameters(), lr=1e-3)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    rule = staticmethod(radam_rule)
    scalar_names = ("lr", "beta1", "beta2")
    const_names = ("eps", "weight_decay")
    flag_names = ("decoupled_weight_decay", "maximize")

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_implementation(differentiable)  # foreach, capturable: one fused update anyway
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
            "decoupled_weight_decay": decoupled_weight_decay,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        return {"step": realized_step(), "exp_avg": realized_zeros_like(p), "exp_avg_sq": realized_zeros_like(p)}

    def _state_keys(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> tuple[str, ...]:
        return ("step", "exp_avg", "exp_avg_sq")

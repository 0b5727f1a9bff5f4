"""NAdam: Adam with Nesterov momentum."""

from __future__ import annotations

from typing import Any

import nabla as nb
from nabla import Tensor
from nabla_nn.parameter import Parameter

from .adam import lerp
from .optimizer import Optimizer, ParamsT, check_betas, check_implementation, check_lr, check_nonneg
from .state import realized_full, realized_step, realized_zeros_like

__all__ = ["NAdam"]


def nadam_rule(
    xp: Any,
    p: Any,
    g: Any,
    state: tuple,
    s: dict,
    *,
    eps: float,
    weight_decay: float,
    momentum_decay: float,
    decoupled_weight_decay: bool,
    maximize: bool,
) -> tuple[Any, tuple]:
    """One parameter's NAdam step; `state` is (step, mu_product, exp_avg, exp_avg_sq)."""
    if maximize:
        g = -g
    lr, beta1, beta2 = s["lr"], s["beta1"], s["beta2"]
    step_t, mu_product, exp_avg, exp_avg_sq = state
    step_t = step_t + 1
    step = xp.cast(step_t, xp.float64)
    bias_correction2 = 1 - xp.pow(beta2, step)
    if weight_decay != 0:
        if decoupled_weight_decay:
            p = p * xp.cast(1 - lr * weight_decay, p)
        else:
            g = g + p * weight_decay
    mu = beta1 * (1.0 - 0.5 * xp.pow(0.96, step * momentum_decay))
    mu_next = beta1 * (1.0 - 0.5 * xp.pow(0.96, (step + 1) * momentum_decay))
    mu_product = mu_product * xp.cast(mu, mu_product)  # PyTorch keeps it in float32 too
    exp_avg = lerp(exp_avg, g, xp.cast(1 - beta1, p))
    exp_avg_sq = exp_avg_sq * xp.cast(beta2, p) + g * g * xp.cast(1 - beta2, p)
    denom = xp.sqrt(exp_avg_sq / xp.cast(bias_correction2, p)) + eps
    product = xp.cast(mu_product, xp.float64)
    grad_coef = lr * (1.0 - mu) / (1.0 - product)
    avg_coef = lr * mu_next / (1.0 - product * mu_next)
    p = p - g * xp.cast(grad_coef, p) / denom
    p = p - exp_avg * xp.cast(avg_coef, p) / denom
    return p, (step_t, mu_product, exp_avg, exp_avg_sq)


class NAdam(Optimizer):
    """NAdam (PyTorch's `torch.optim.NAdam`, same defaults and update).

    Args:
        params: parameters or param groups to optimize.
        lr: learning rate (default 2e-3).
        betas: running-average coefficients (default (0.9, 0.999)).
        eps: term added to the denominator (default 1e-8).
        weight_decay: weight decay (default 0).
        momentum_decay: the momentum schedule's decay psi (default 4e-3).
        decoupled_weight_decay: decay the weights directly, as AdamW does.
        maximize: maximize the objective instead of minimizing it.
        foreach, fused, capturable: PyTorch's implementation switches, accepted and without
            effect (nabla records every parameter's update as one fused op); differentiable=True
            is not supported.

    State per parameter: "step", "mu_product" (float32 scalars), "exp_avg", "exp_avg_sq".

    Example:
        >>> opt = nabla_optim.NAdam(model.parameters())
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    rule = staticmethod(nadam_rule)
    scalar_names = ("lr", "beta1", "beta2")
    const_names = ("eps", "weight_decay", "momentum_decay")
    shared_state = ("step", "mu_product")  # (mu_product reads only itself, the step and betas)
    flag_names = ("decoupled_weight_decay", "maximize")

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_implementation(differentiable)  # foreach, fused, capturable: one fused update anyway
        lr = check_lr(lr)
        check_nonneg("eps", eps, "epsilon value")
        betas = check_betas(betas)
        check_nonneg("weight_decay", weight_decay)
        check_nonneg("momentum_decay", momentum_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        return {
            "step": realized_step(),
            "mu_product": realized_full((), 1.0, nb.float32),
            "exp_avg": realized_zeros_like(p),
            "exp_avg_sq": realized_zeros_like(p),
        }

    def _state_keys(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> tuple[str, ...]:
        return ("step", "mu_product", "exp_avg", "exp_avg_sq")

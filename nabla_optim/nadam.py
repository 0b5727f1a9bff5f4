"""NAdam: Adam with Nesterov momentum."""

from __future__ import annotations

from typing import Any

import nabla as nb
from nabla import Tensor
from nabla_nn.parameter import Parameter

from .adam import lerp_
from .optimizer import (
    Optimizer,
    ParamsT,
    as_dtype_of,
    check_betas,
    check_lr,
    check_nonneg,
    realized_full,
    realized_step,
    realized_zeros_like,
)

__all__ = ["NAdam"]


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

    State per parameter: "step", "mu_product" (float32 scalars), "exp_avg", "exp_avg_sq".

    Example:
        >>> opt = nabla_optim.NAdam(model.parameters())
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

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
    ) -> None:
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
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        return {
            "step": realized_step(),
            "mu_product": realized_full((), 1.0, nb.float32),
            "exp_avg": realized_zeros_like(p),
            "exp_avg_sq": realized_zeros_like(p),
        }

    def _update(self, p: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        g = -grad if group["maximize"] else grad
        lr, beta1, beta2 = (self._scalar(group, n) for n in ("lr", "beta1", "beta2"))
        step_t, mu_product = state["step"], state["mu_product"]
        step_t.add_(1)
        step = step_t.to(nb.float64)
        bias_correction2 = 1 - beta2**step
        if group["weight_decay"] != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(as_dtype_of(1 - lr * group["weight_decay"], p))
            else:
                g = g + p * group["weight_decay"]
        decay = group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
        mu_product.mul_(as_dtype_of(mu, mu_product))  # PyTorch keeps it in float32 too
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        lerp_(exp_avg, g, as_dtype_of(1 - beta1, p))
        exp_avg_sq.mul_(as_dtype_of(beta2, p)).add_(g * g * as_dtype_of(1 - beta2, p))
        denom = nb.sqrt(exp_avg_sq / as_dtype_of(bias_correction2, p)) + group["eps"]
        product = mu_product.to(nb.float64)
        grad_coef = lr * (1.0 - mu) / (1.0 - product)
        avg_coef = lr * mu_next / (1.0 - product * mu_next)
        p.sub_(g * as_dtype_of(grad_coef, p) / denom)
        p.sub_(exp_avg * as_dtype_of(avg_coef, p) / denom)

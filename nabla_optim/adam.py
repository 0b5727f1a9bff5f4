"""Adam (and the shared update AdamW uses with decoupled weight decay)."""

from __future__ import annotations

from typing import Any

import nabla as nb
from nabla import Tensor
from nabla_nn.parameter import Parameter

from .optimizer import (
    Optimizer,
    ParamsT,
    as_dtype_of,
    check_betas,
    check_lr,
    check_nonneg,
    realized_step,
    realized_zeros_like,
)

__all__ = ["Adam"]


def lerp_(avg: Tensor, target: Tensor, weight: Tensor) -> None:
    """PyTorch's `avg.lerp_(target, weight)` for weight < 0.5: avg + weight * (target - avg)."""
    avg.add_((target - avg) * weight)


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
        decoupled_weight_decay: decay the weights directly, as AdamW does.

    State per parameter: "step" (float32 scalar), "exp_avg", "exp_avg_sq", and with amsgrad
    "max_exp_avg_sq".

    Example:
        >>> opt = nabla_optim.Adam(model.parameters(), lr=1e-3)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

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
        decoupled_weight_decay: bool = False,
    ) -> None:
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
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        state = {"step": realized_step(), "exp_avg": realized_zeros_like(p), "exp_avg_sq": realized_zeros_like(p)}
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = realized_zeros_like(p)
        return state

    def _update(self, p: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        g = -grad if group["maximize"] else grad
        lr, beta1, beta2 = (self._scalar(group, n) for n in ("lr", "beta1", "beta2"))
        step_t = state["step"]
        step_t.add_(1)
        if group["weight_decay"] != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(as_dtype_of(1 - lr * group["weight_decay"], p))
            else:
                g = g + p * group["weight_decay"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        lerp_(exp_avg, g, as_dtype_of(1 - beta1, p))
        exp_avg_sq.mul_(as_dtype_of(beta2, p)).add_(g * g * as_dtype_of(1 - beta2, p))
        step = step_t.to(nb.float64)
        bias_correction1 = 1 - beta1**step
        bias_correction2_sqrt = nb.sqrt(1 - beta2**step)
        step_size = lr / bias_correction1
        if group["amsgrad"]:
            max_sq = state.setdefault("max_exp_avg_sq", realized_zeros_like(p))
            max_sq.copy_(nb.maximum(max_sq, exp_avg_sq))
            exp_avg_sq = max_sq
        denom = nb.sqrt(exp_avg_sq) / as_dtype_of(bias_correction2_sqrt, p) + group["eps"]
        p.sub_(exp_avg * as_dtype_of(step_size, p) / denom)

"""Adamax: Adam with the infinity norm in place of the second moment."""

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
    realized_step,
    realized_zeros_like,
)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax (PyTorch's `torch.optim.Adamax`, same defaults and update).

    Args:
        params: parameters or param groups to optimize.
        lr: learning rate (default 2e-3).
        betas: coefficients of the gradient average and the infinity norm (default (0.9, 0.999)).
        eps: term added to the norm (default 1e-8).
        weight_decay: L2 penalty added to the gradient (default 0).
        maximize: maximize the objective instead of minimizing it.

    State per parameter: "step", "exp_avg", "exp_inf".

    Example:
        >>> opt = nabla_optim.Adamax(model.parameters())
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        *,
        maximize: bool = False,
    ) -> None:
        lr = check_lr(lr)
        check_nonneg("eps", eps, "epsilon value")
        betas = check_betas(betas)
        check_nonneg("weight_decay", weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "maximize": maximize}
        super().__init__(params, defaults)

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        return {"step": realized_step(), "exp_avg": realized_zeros_like(p), "exp_inf": realized_zeros_like(p)}

    def _update(self, p: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        g = -grad if group["maximize"] else grad
        lr, beta1, beta2 = (self._scalar(group, n) for n in ("lr", "beta1", "beta2"))
        step_t = state["step"]
        step_t.add_(1)
        if group["weight_decay"] != 0:
            g = g + p * group["weight_decay"]
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        lerp_(exp_avg, g, as_dtype_of(1 - beta1, p))
        exp_inf.copy_(nb.maximum(exp_inf * as_dtype_of(beta2, p), nb.abs(g) + group["eps"]))
        clr = lr / (1 - beta1 ** step_t.to(nb.float64))
        p.sub_(exp_avg * as_dtype_of(clr, p) / exp_inf)

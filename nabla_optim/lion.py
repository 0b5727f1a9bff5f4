"""Lion: sign of an interpolated momentum (Chen et al., 2023, "Symbolic Discovery of
Optimization Algorithms"). Not in PyTorch; the update follows the paper's Algorithm 2."""

from __future__ import annotations

from typing import Any

import nabla as nb
from nabla import Tensor
from nabla_nn.parameter import Parameter

from .optimizer import Optimizer, ParamsT, as_dtype_of, check_betas, check_lr, check_nonneg, realized_zeros_like

__all__ = ["Lion"]


class Lion(Optimizer):
    """Lion (EvoLved Sign Momentum).

    Each step: `p *= 1 - lr * weight_decay`; `p -= lr * sign(beta1 * m + (1 - beta1) * g)`;
    `m = beta2 * m + (1 - beta2) * g`. Use a learning rate 3-10x smaller than AdamW's and a
    weight decay 3-10x larger.

    Args:
        params: parameters or param groups to optimize.
        lr: learning rate (default 1e-4).
        betas: interpolation and momentum coefficients (default (0.9, 0.99)).
        weight_decay: decoupled weight decay (default 0).
        maximize: maximize the objective instead of minimizing it.

    State per parameter: "exp_avg".

    Example:
        >>> opt = nabla_optim.Lion(model.parameters(), lr=1e-4, weight_decay=1e-2)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-4,
        betas: tuple[float, float] = (0.9, 0.99),
        weight_decay: float = 0,
        *,
        maximize: bool = False,
    ) -> None:
        lr = check_lr(lr)
        betas = check_betas(betas)
        check_nonneg("weight_decay", weight_decay)
        defaults = {"lr": lr, "betas": betas, "weight_decay": weight_decay, "maximize": maximize}
        super().__init__(params, defaults)

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        return {"exp_avg": realized_zeros_like(p)}

    def _update(self, p: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        g = -grad if group["maximize"] else grad
        lr, beta1, beta2 = (self._scalar(group, n) for n in ("lr", "beta1", "beta2"))
        if group["weight_decay"] != 0:
            p.mul_(as_dtype_of(1 - lr * group["weight_decay"], p))
        exp_avg = state["exp_avg"]
        direction = nb.sign(exp_avg * as_dtype_of(beta1, p) + g * as_dtype_of(1 - beta1, p))
        p.sub_(direction * as_dtype_of(lr, p))
        exp_avg.mul_(as_dtype_of(beta2, p)).add_(g * as_dtype_of(1 - beta2, p))

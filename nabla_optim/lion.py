"""Lion: sign of an interpolated momentum (Chen et al., 2023, "Symbolic Discovery of
Optimization Algorithms"). Not in PyTorch; the update follows the paper's Algorithm 2."""

from __future__ import annotations

from typing import Any

from nabla import Tensor
from nabla_nn.parameter import Parameter

from .optimizer import Optimizer, ParamsT, check_betas, check_lr, check_nonneg
from .state import realized_zeros_like

__all__ = ["Lion"]


def lion_rule(
    xp: Any,
    p: Any,
    g: Any,
    state: tuple,
    s: dict,
    *,
    weight_decay: float,
    maximize: bool,
) -> tuple[Any, tuple]:
    """One parameter's Lion step; `state` is (exp_avg,)."""
    if maximize:
        g = -g
    lr, beta1, beta2 = s["lr"], s["beta1"], s["beta2"]
    if weight_decay != 0:
        p = p * xp.cast(1 - lr * weight_decay, p)
    (exp_avg,) = state
    direction = xp.sign(exp_avg * xp.cast(beta1, p) + g * xp.cast(1 - beta1, p))
    p = p - direction * xp.cast(lr, p)
    exp_avg = exp_avg * xp.cast(beta2, p) + g * xp.cast(1 - beta2, p)
    return p, (exp_avg,)


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

    rule = staticmethod(lion_rule)
    scalar_names = ("lr", "beta1", "beta2")
    const_names = ("weight_decay",)
    flag_names = ("maximize",)

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

    def _state_keys(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> tuple[str, ...]:
        return ("exp_avg",)

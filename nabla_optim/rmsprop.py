"""RMSprop: gradients divided by a running root mean square."""

from __future__ import annotations

from typing import Any

import nabla as nb
from nabla import Tensor
from nabla_nn.parameter import Parameter

from .adam import lerp_
from .optimizer import Optimizer, ParamsT, as_dtype_of, check_lr, check_nonneg, realized_step, realized_zeros_like

__all__ = ["RMSprop"]


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

    State per parameter: "step", "square_avg", with momentum "momentum_buffer", and when
    centered "grad_avg".

    Example:
        >>> opt = nabla_optim.RMSprop(model.parameters(), lr=1e-2, momentum=0.9)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
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
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        state = {"step": realized_step(), "square_avg": realized_zeros_like(p)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = realized_zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = realized_zeros_like(p)
        return state

    def _update(self, p: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        g = -grad if group["maximize"] else grad
        state["step"].add_(1)
        if group["weight_decay"] != 0:
            g = g + p * group["weight_decay"]
        alpha = group["alpha"]
        square_avg = state["square_avg"]
        square_avg.mul_(alpha).add_(g * g * (1 - alpha))
        if group["centered"]:
            grad_avg = state.setdefault("grad_avg", realized_zeros_like(p))
            lerp_(grad_avg, g, 1 - alpha)
            avg = nb.sqrt(square_avg - grad_avg * grad_avg)
        else:
            avg = nb.sqrt(square_avg)
        avg = avg + group["eps"]
        lr = as_dtype_of(self._scalar(group, "lr"), p)
        if group["momentum"] > 0:
            buf = state.setdefault("momentum_buffer", realized_zeros_like(p))
            buf.mul_(as_dtype_of(self._scalar(group, "momentum"), p)).add_(g / avg)
            p.sub_(buf * lr)
        else:
            p.sub_(g * lr / avg)

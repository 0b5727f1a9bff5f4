"""SGD: stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from typing import Any

import nabla as nb
from nabla import Tensor
from nabla_nn.parameter import Parameter

from .optimizer import Optimizer, ParamsT, as_dtype_of, check_lr, check_nonneg, realized_full, realized_zeros_like

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent (PyTorch's `torch.optim.SGD`, same defaults and update).

    With `momentum`, `buf = momentum * buf + (1 - dampening) * g` (the first step sets
    `buf = g`), and the step uses `g + momentum * buf` (Nesterov) or `buf`.

    Args:
        params: parameters or param groups to optimize.
        lr: learning rate (default 1e-3).
        momentum: momentum factor (default 0).
        dampening: dampening for momentum (default 0).
        weight_decay: L2 penalty added to the gradient (default 0).
        nesterov: use Nesterov momentum (needs momentum > 0 and zero dampening).
        maximize: maximize the objective instead of minimizing it.

    State per parameter (with momentum): "momentum_buffer", plus "momentum_started" (a bool
    scalar) when dampening is nonzero: PyTorch's first step copies the gradient into the
    buffer, which a fixed-structure graph reproduces by selecting on that flag.

    Example:
        >>> opt = nabla_optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        lr = check_lr(lr)
        check_nonneg("momentum", momentum)
        check_nonneg("weight_decay", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        if group["momentum"] == 0:
            return {}
        state = {"momentum_buffer": realized_zeros_like(p)}
        if group["dampening"] != 0:
            state["momentum_started"] = realized_full((), False, nb.bool_)
        return state

    def _update(self, p: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        g = -grad if group["maximize"] else grad
        if group["weight_decay"] != 0:
            g = g + p * group["weight_decay"]
        if group["momentum"] != 0:
            buf = state.get("momentum_buffer")
            if buf is None:  # momentum switched on after the first step
                buf = state["momentum_buffer"] = realized_zeros_like(p)
                state["momentum_started"] = realized_full((), False, nb.bool_)
            momentum = as_dtype_of(self._scalar(group, "momentum"), p)
            dampening = group["dampening"]
            if dampening == 0 and "momentum_started" not in state:
                buf.copy_(buf * momentum + g)  # on the first step 0 * m + g is exactly g
            else:
                started = state.setdefault("momentum_started", realized_full((), True, nb.bool_))
                buf.copy_(nb.where(started, buf * momentum + g * (1 - dampening), g))
                started.fill_(True)
            g = g + buf * momentum if group["nesterov"] else buf
        p.sub_(g * as_dtype_of(self._scalar(group, "lr"), p))

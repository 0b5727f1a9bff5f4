"""SGD: stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from typing import Any

import nabla as nb
from nabla import Tensor
from nabla_nn.parameter import Parameter

from .optimizer import Optimizer, ParamsT, check_implementation, check_lr, check_nonneg
from .state import ensure_state, realized_full, realized_zeros_like

__all__ = ["SGD"]


def sgd_rule(
    xp: Any,
    p: Any,
    g: Any,
    state: tuple,
    s: dict,
    *,
    weight_decay: float,
    dampening: float,
    nesterov: bool,
    maximize: bool,
) -> tuple[Any, tuple]:
    """One parameter's SGD step. `state` is () without momentum, `(buf,)`, or `(buf, started)`
    where the bool `started` selects PyTorch's first step (`buf = g`) in a fixed graph."""
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g + p * weight_decay
    if state:
        momentum = xp.cast(s["momentum"], p)
        if len(state) == 1:  # zero dampening from the start: 0 * m + g is exactly g at first
            buf = state[0] * momentum + g
            state = (buf,)
        else:
            buf, started = state
            buf = xp.where(started, buf * momentum + g * (1 - dampening), g)
            state = (buf, xp.full_like(started, True))
        g = g + buf * momentum if nesterov else buf
    return p - g * xp.cast(s["lr"], p), state


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
        foreach, fused, capturable: PyTorch's implementation switches, accepted and without
            effect (nabla records every parameter's update as one fused op); differentiable=True
            is not supported.

    State per parameter (with momentum): "momentum_buffer", plus "momentum_started" (a bool
    scalar) when dampening is nonzero: PyTorch's first step copies the gradient into the
    buffer, which a fixed-structure graph reproduces by selecting on that flag.

    Example:
        >>> opt = nabla_optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    rule = staticmethod(sgd_rule)
    scalar_names = ("lr", "momentum")
    const_names = ("weight_decay", "dampening")
    flag_names = ("nesterov", "maximize")
    structural_names = ("momentum",)

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
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_implementation(differentiable)  # foreach, fused, capturable: one fused update anyway
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
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        if group["momentum"] == 0:
            return {}
        state = {"momentum_buffer": realized_zeros_like(p)}
        if group["dampening"] != 0:
            state["momentum_started"] = realized_full((), False, nb.bool_)
        return state

    def _state_keys(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> tuple[str, ...]:
        if group["momentum"] == 0:
            return ()
        if not isinstance(state.get("momentum_buffer"), Tensor):  # momentum switched on later
            state["momentum_buffer"] = realized_zeros_like(p)
            state["momentum_started"] = realized_full((), False, nb.bool_)
        elif group["dampening"] != 0:  # dampening switched on later: the buffer has started
            ensure_state(state, "momentum_started", lambda: realized_full((), True, nb.bool_))
        if isinstance(state.get("momentum_started"), Tensor):
            return ("momentum_buffer", "momentum_started")
        return ("momentum_buffer",)

"""Rprop: resilient backpropagation, per-element step sizes adapted from the gradient's sign."""

from __future__ import annotations

import numbers
from typing import Any

from nabla import Tensor
from nabla_nn.parameter import Parameter

from .optimizer import Optimizer, ParamsT, check_implementation, check_lr
from .state import realized_step, realized_zeros_like

__all__ = ["Rprop"]


def rprop_rule(
    xp: Any,
    p: Any,
    g: Any,
    state: tuple,
    s: dict,
    *,
    etaminus: float,
    etaplus: float,
    step_size_min: float,
    step_size_max: float,
    maximize: bool,
) -> tuple[Any, tuple]:
    """One parameter's Rprop step; `state` is (step, prev, step_size)."""
    step, prev, step_size = state
    step = step + 1
    if maximize:
        g = -g
    sign = xp.sign(g * prev)
    flipped = -sign > 0  # not `sign < 0`: MAX computes it as not(>=), true for NaN
    # etaplus where the sign held, etaminus where it flipped, 1 where g * prev is 0 or nan (sign 0, as torch)
    factor = xp.where(sign > 0, etaplus, xp.where(flipped, etaminus, sign * 0 + 1))
    step_size = xp.minimum(xp.maximum(step_size * factor, step_size_min), step_size_max)
    g = xp.where(flipped, 0, g)  # after a sign flip: no step, and no flip seen at the next step
    return p - xp.sign(g) * step_size, (step, g, step_size)


def _check_pair(name: str, value: Any) -> tuple[float, float]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise ValueError(f"{name} must be a pair of floats, got {value!r}")
    for v in value:
        if not isinstance(v, numbers.Real) or isinstance(v, bool):
            raise TypeError(f"{name} must be a pair of floats, got {value!r}")
    return (float(value[0]), float(value[1]))


class Rprop(Optimizer):
    """Rprop (PyTorch's `torch.optim.Rprop`, same defaults and update).

    Each element has its own step size, starting at `lr`: multiplied by `etaplus` while the
    gradient keeps its sign, by `etaminus` when it flips (and that step is skipped), clamped to
    `step_sizes`; the parameter moves by `-sign(g) * step_size`. `lr` is only read when a
    parameter's state is created, so a scheduler changing it has no effect (as in PyTorch).

    Args:
        params: parameters or param groups to optimize.
        lr: initial step size (default 1e-2).
        etas: (etaminus, etaplus), the step sizes' decrease and increase factors
            (default (0.5, 1.2)), with 0 < etaminus < 1 < etaplus.
        step_sizes: (minimum, maximum) allowed step size (default (1e-6, 50)).
        maximize: maximize the objective instead of minimizing it.
        foreach, capturable: PyTorch's implementation switches, accepted and without effect
            (nabla records every parameter's update as one fused op); differentiable=True is
            not supported.

    State per parameter: "step" (float32 scalar), "prev" (the last gradient, zeroed where its
    sign flipped), "step_size".

    Example:
        >>> opt = nabla_optim.Rprop(model.parameters(), lr=1e-2, etas=(0.5, 1.2))
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    rule = staticmethod(rprop_rule)
    scalar_names = ()  # lr only seeds "step_size"
    flag_names = ("maximize",)

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_implementation(differentiable)  # foreach, capturable: one fused update anyway
        lr = check_lr(lr)
        etaminus, etaplus = _check_pair("etas", etas)
        if not 0.0 < etaminus < 1.0 < etaplus:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        low, high = _check_pair("step_sizes", step_sizes)
        if not (low >= 0.0 and high >= 0.0):  # (low > high is torch's too: the clamp gives high)
            raise ValueError(f"Invalid step_sizes values: {step_sizes[0]}, {step_sizes[1]}")
        defaults = {
            "lr": lr,
            "etas": tuple(etas),
            "step_sizes": tuple(step_sizes),
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        return {
            "step": realized_step(),
            "prev": realized_zeros_like(p),
            "step_size": realized_zeros_like(p, group["lr"]),
        }

    def _state_keys(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> tuple[str, ...]:
        return ("step", "prev", "step_size")

    def rule_consts(self, group: dict[str, Any]) -> dict[str, Any]:
        etaminus, etaplus = group["etas"]
        low, high = group["step_sizes"]
        bounds = {"etaminus": float(etaminus), "etaplus": float(etaplus)}
        return super().rule_consts(group) | bounds | {"step_size_min": float(low), "step_size_max": float(high)}

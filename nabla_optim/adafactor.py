"""Adafactor: Adam-like steps whose second moment of a matrix is factored into row and column means."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from nabla import Tensor
from nabla.core.common import dtypes as _dt
from nabla_nn.parameter import Parameter

from .fused import whole_parameter
from .optimizer import Optimizer, ParamsT
from .state import realized_full, realized_step, realized_zeros_like

__all__ = ["Adafactor"]

_BFLOAT16_EPS = 2.0**-7  # torch.finfo(torch.bfloat16).eps; NumPy has no bfloat16


def norm(xp: Any, x: Any, axis: int | None = None) -> Any:
    """PyTorch's `x.norm(2)` (over `axis`, kept as a size-1 dim; None: of all, 0-d), in `x`'s
    dtype: accumulated in float32 for 16-bit dtypes, as PyTorch does, then rounded."""
    acc = xp.cast(x, xp.float32) if xp.is_half(x) else x
    return xp.cast(xp.sqrt(xp.sum(acc * acc, axis)), x)


def _numel(x: Any) -> int:
    return math.prod(int(n) for n in x.shape)


@whole_parameter
def adafactor_rule(
    xp: Any,
    p: Any,
    g: Any,
    state: tuple,
    s: dict,
    *,
    beta2_decay: float,
    eps1: float,
    eps2: float,
    d: float,
    weight_decay: float,
    maximize: bool,
) -> tuple[Any, tuple]:
    """One parameter's Adafactor step; `state` is (step, row_var, col_var) for a parameter of
    two or more dims (the second moment's factors over its last two), (step, variance)
    otherwise. The step-dependent scalars and the parameter's RMS are float64 math, as
    PyTorch's Python floats; the update's RMS clips it to at most `d`."""
    lr = s["lr"]
    if maximize:
        g = -g
    step_t = state[0] + 1
    step = xp.cast(step_t, xp.float64)
    one_minus_beta2 = xp.cast(xp.pow(step, xp.full_like(step, beta2_decay)), p)
    rho = xp.minimum(lr, 1 / xp.sqrt(step))
    alpha = _python_max(xp, eps2, xp.cast(norm(xp, p), xp.float64) / math.sqrt(_numel(p))) * rho
    if weight_decay != 0:
        p = p * xp.cast(1 - lr * weight_decay, p)
    if len(state) == 3:  # factored: row_var (..., m, 1), col_var (..., 1, n)
        m, n = int(p.shape[-2]), int(p.shape[-1])
        row_mean = norm(xp, g, -1)
        row_var = xp.lerp(state[1], row_mean * row_mean / float(n), one_minus_beta2)
        col_mean = norm(xp, g, -2)
        col_var = xp.lerp(state[2], col_mean * col_mean / float(m), one_minus_beta2)
        row_var_mean = xp.maximum(xp.sum(row_var, -2) / float(m), eps1)
        var_estimate = row_var * col_var / row_var_mean
        new_state = (step_t, row_var, col_var)
    else:
        var_estimate = xp.lerp(state[1], g * g, one_minus_beta2)
        new_state = (step_t, var_estimate)
    update = 1 / xp.sqrt(xp.maximum(var_estimate, eps1 * eps1)) * g
    denom = _python_max(xp, 1.0, xp.cast(norm(xp, update), xp.float64) / (math.sqrt(_numel(update)) * d))
    return p + update * xp.cast(-alpha / denom, p), new_state


def _python_max(xp: Any, floor: float, x: Any) -> Any:
    """PyTorch's Python `max(floor, x)` on a 0-d value: `floor` unless x is above it, so a nan
    norm (one inf gradient element) gives `floor` and only that element goes nan."""
    return xp.where(x > floor, x, xp.full_like(x, floor))


def _finfo_eps(dtype: Any) -> float:
    """`torch.finfo(dtype).eps`: the gap between 1 and the next value of `dtype`."""
    if dtype == _dt.bfloat16:
        return _BFLOAT16_EPS
    return float(np.finfo(_dt.to_numpy_dtype(dtype)).eps)


def _number(name: str, value: Any) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return float(value)


class Adafactor(Optimizer):
    """Adafactor (PyTorch's `torch.optim.Adafactor`, same defaults and update).

    A parameter of two or more dims keeps its second moment factored over the last two: a row
    mean (..., m, 1) and a column mean (..., 1, n) of the squared gradient, whose outer product
    divided by the rows' mean estimates it; a vector keeps the full one. The moment's decay
    follows the step t (`1 - beta2_t = t ** beta2_decay`), the step is relative to the
    parameter's size: `max(eps2, RMS(p)) * min(lr, 1 / sqrt(t))`, and the update is clipped to
    an RMS of at most `d`. As PyTorch's, `lr` also scales the decoupled weight decay.

    Args:
        params: parameters or param groups to optimize.
        lr: the relative step's maximum, also the weight decay's scale (default 1e-2).
        beta2_decay: exponent of the second moment's decay rate, <= 0 (default -0.8).
        eps: (eps1, eps2): eps1 floors the variance estimate (None: the parameter's dtype's
            machine epsilon, that of the group's first parameter with a gradient, as PyTorch
            takes it), eps2 the parameter's RMS in the step size (default (None, 1e-3)).
        d: clipping threshold of the update's RMS, >= 1 (default 1.0).
        weight_decay: decoupled weight decay, `p *= 1 - lr * weight_decay` (default 0).
        foreach: PyTorch's implementation switch, accepted and without effect (nabla records
            every parameter's update as one fused op).
        maximize: maximize the objective instead of minimizing it.

    State per parameter: "step" (float32 scalar), then "row_var" and "col_var" for a parameter
    of two or more dims, "variance" otherwise. A param group holding both kinds records one op
    per kind.

    Example:
        >>> opt = nabla_optim.Adafactor(model.parameters(), lr=1e-2)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    rule = staticmethod(adafactor_rule)
    const_names = ("beta2_decay", "d", "weight_decay")
    flag_names = ("maximize",)

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        if isinstance(lr, Tensor):
            if lr.numel() != 1:
                raise ValueError("Tensor lr must be 1-element")
            lr = float(lr.item())
        if not 0.0 <= _number("lr", lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= _number("beta2_decay", beta2_decay):
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if not isinstance(eps, tuple | list) or len(eps) != 2:
            raise ValueError(f"eps must be a pair (eps1 or None, eps2), got {eps!r}")
        if eps[0] is not None and not 0.0 <= _number("eps[0]", eps[0]):
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= _number("eps[1]", eps[1]):
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= _number("d", d):
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= _number("weight_decay", weight_decay):
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {
            "lr": lr,
            "beta2_decay": beta2_decay,
            "eps": tuple(eps),
            "d": d,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
        }
        super().__init__(params, defaults)

    def rule_consts(self, group: dict[str, Any]) -> dict[str, Any]:
        eps1, eps2 = group["eps"]
        if eps1 is None:  # PyTorch: the first stepped parameter's dtype's, for the whole group
            first = next((p for p in group["params"] if p.grad is not None and p.requires_grad), None)
            eps1 = _finfo_eps(first.dtype if first is not None else _dt.float32)
        return super().rule_consts(group) | {"eps1": float(eps1), "eps2": float(eps2)}

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        if p.ndim > 1:
            return {
                "step": realized_step(),
                "row_var": realized_full(self._state_shape(p, "row_var"), 0.0, p.dtype),
                "col_var": realized_full(self._state_shape(p, "col_var"), 0.0, p.dtype),
            }
        return {"step": realized_step(), "variance": realized_zeros_like(p)}

    def _state_keys(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> tuple[str, ...]:
        return ("step", "row_var", "col_var") if p.ndim > 1 else ("step", "variance")

    def _state_shape(self, p: Parameter, key: str) -> tuple[int, ...]:
        shape = tuple(p.shape)
        if key == "row_var":
            return (*shape[:-1], 1)
        if key == "col_var":
            return (*shape[:-2], 1, shape[-1])
        return shape

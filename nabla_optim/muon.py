"""Muon: momentum whose update is orthogonalized by a Newton-Schulz iteration (2-D parameters)."""

from __future__ import annotations

import math
import numbers
from typing import Any

from nabla import Tensor
from nabla_nn.parameter import Parameter

from .fused import whole_parameter
from .optimizer import Optimizer, ParamsT
from .state import realized_zeros_like

__all__ = ["Muon"]

# PyTorch's (from Keller Jordan's Muon): the quintic iteration's coefficients, eps, steps
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
EPS = 1e-7
DEFAULT_NS_STEPS = 5
_ADJUST_LR_FNS = ("original", "match_rms_adamw")


def zeropower_via_newtonschulz(xp: Any, x: Any, a: float, b: float, c: float, steps: int, eps: float) -> Any:
    """PyTorch's Newton-Schulz orthogonalization of a 2-D `x`, in bfloat16 as PyTorch runs it:
    float32 math whose every result (each product with its scaled addend, as `addmm` gives it)
    is rounded to bfloat16's precision. Returns float32 values that bfloat16 holds."""
    bf16 = xp.round_to_bfloat16
    x = bf16(xp.cast(x, xp.float32))
    tall = int(x.shape[0]) > int(x.shape[1])
    if tall:
        x = xp.transpose(x, 0, 1)
    x = bf16(x / bf16(xp.maximum(bf16(xp.sqrt(xp.sum(x * x))), eps)))  # spectral norm at most 1
    for _ in range(steps):
        gram = bf16(xp.matmul(x, xp.transpose(x, 0, 1)))
        gram_update = bf16(gram * b + xp.matmul(gram, gram) * c)
        x = bf16(x * a + xp.matmul(gram_update, x))
    return xp.transpose(x, 0, 1) if tall else x


def adjusted_lr_ratio(adjust_lr_fn: str | None, shape: tuple[int, ...]) -> float:
    """PyTorch's factor on lr for a (rows, cols) parameter: "original" (None) sqrt(max(1, rows
    / cols)), "match_rms_adamw" 0.2 * sqrt(max(rows, cols))."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return 0.2 * math.sqrt(max(rows, cols))
    return 1.0


@whole_parameter
def muon_rule(
    xp: Any,
    p: Any,
    g: Any,
    state: tuple,
    s: dict,
    *,
    weight_decay: float,
    nesterov: bool,
    ns_a: float,
    ns_b: float,
    ns_c: float,
    ns_steps: int,
    eps: float,
    adjust_lr_fn: str | None,
) -> tuple[Any, tuple]:
    """One 2-D parameter's Muon step; `state` is (momentum_buffer,)."""
    lr, momentum = s["lr"], s["momentum"]
    buf = xp.lerp(state[0], g, xp.cast(1 - momentum, p))
    update = xp.lerp(g, buf, xp.cast(momentum, p)) if nesterov else buf
    ortho = xp.cast(zeropower_via_newtonschulz(xp, update, ns_a, ns_b, ns_c, ns_steps, eps), p)
    ratio = adjusted_lr_ratio(adjust_lr_fn, tuple(int(n) for n in p.shape))
    if weight_decay != 0:
        p = p * xp.cast(1 - lr * weight_decay, p)
    return p + ortho * xp.cast(-(lr * ratio), p), (buf,)


def _number(name: str, value: Any) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return float(value)


class Muon(Optimizer):
    """Muon (PyTorch's `torch.optim.Muon`, same defaults and update), for 2-D parameters only.

    The momentum buffer `B = momentum * B + (1 - momentum) * g` (a lerp, as PyTorch's), or with
    nesterov `g`'s lerp towards it, is orthogonalized by `ns_steps` Newton-Schulz iterations run
    in bfloat16 as PyTorch runs them; the parameter decays by `1 - lr * weight_decay` and moves
    by `-adjusted_lr` times the result. Optimize biases, embeddings and other non-2-D
    parameters with another optimizer (AdamW, say).

    Args:
        params: 2-D parameters or param groups to optimize (others raise ValueError).
        lr: learning rate (default 1e-3).
        weight_decay: decoupled weight decay (default 0.1).
        momentum: momentum factor (default 0.95).
        nesterov: use Nesterov momentum (default True).
        ns_coefficients: (a, b, c) of the quintic Newton-Schulz iteration
            (default (3.4445, -4.7750, 2.0315)).
        eps: floor of the norm the update is divided by first (default 1e-7).
        ns_steps: Newton-Schulz iterations, fewer than 100 (default 5).
        adjust_lr_fn: the lr's scale by the parameter's (rows, cols): "original" (None)
            sqrt(max(1, rows / cols)), "match_rms_adamw" 0.2 * sqrt(max(rows, cols)), which
            matches AdamW's update RMS (default None).

    State per parameter: "momentum_buffer".

    Example:
        >>> hidden = [p for p in model.parameters() if p.ndim == 2]
        >>> opt = nabla_optim.Muon(hidden, lr=0.02, momentum=0.95)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    rule = staticmethod(muon_rule)
    scalar_names = ("lr", "momentum")
    const_names = ("weight_decay", "eps")
    flag_names = ("nesterov",)

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B, DEFAULT_C),
        eps: float = EPS,
        ns_steps: int = DEFAULT_NS_STEPS,
        adjust_lr_fn: str | None = None,
    ) -> None:
        if isinstance(lr, Tensor):
            if lr.numel() != 1:
                raise ValueError("Tensor lr must be 1-element")
            lr = float(lr.item())
        if not 0.0 <= _number("lr", lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= _number("momentum", momentum):
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= _number("weight_decay", weight_decay):
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in _ADJUST_LR_FNS:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {
            "lr": lr,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "nesterov": nesterov,
            "ns_coefficients": ns_coefficients,
            "eps": eps,
            "ns_steps": ns_steps,
            "adjust_lr_fn": adjust_lr_fn,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(
                        f"Muon only supports 2D parameters whereas we found a parameter with size: {tuple(p.shape)}"
                    )

    def rule_consts(self, group: dict[str, Any]) -> dict[str, Any]:
        # PyTorch checks these when it steps
        if group["ns_steps"] >= 100:
            raise ValueError("Number of steps must be less than 100 for computational efficiency")
        if len(group["ns_coefficients"]) != 3:
            raise ValueError("Coefficients must be a tuple of exactly 3 values")
        a, b, c = (float(v) for v in group["ns_coefficients"])
        extra = {"ns_a": a, "ns_b": b, "ns_c": c, "ns_steps": int(group["ns_steps"])}
        return super().rule_consts(group) | extra | {"adjust_lr_fn": group["adjust_lr_fn"]}

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        return {"momentum_buffer": realized_zeros_like(p)}

    def _state_keys(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> tuple[str, ...]:
        if p.ndim != 2:  # a parameter added by add_param_group (PyTorch checks it when it steps)
            raise ValueError("Param gradient must be a 2D matrix")
        return ("momentum_buffer",)

"""AdamW: Adam with decoupled weight decay."""

from __future__ import annotations

from .adam import Adam
from .optimizer import ParamsT, check_implementation

__all__ = ["AdamW"]


class AdamW(Adam):
    """AdamW (PyTorch's `torch.optim.AdamW`): Adam whose weight decay multiplies the weights by
    `1 - lr * weight_decay` each step instead of entering the gradient's moments.

    Args:
        params: parameters or param groups to optimize.
        lr: learning rate (default 1e-3).
        betas: running-average coefficients (default (0.9, 0.999)).
        eps: term added to the denominator (default 1e-8).
        weight_decay: decoupled weight decay (default 1e-2).
        amsgrad: use the AMSGrad variant.
        maximize: maximize the objective instead of minimizing it.
        foreach, fused, capturable: PyTorch's implementation switches, accepted and without
            effect (nabla records every parameter's update as one fused op); differentiable=True
            is not supported.

    Example:
        >>> opt = nabla_optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_implementation(differentiable)
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize, decoupled_weight_decay=True)

    def _load_state_dict(self, state_dict: dict) -> None:
        super()._load_state_dict(state_dict)
        for group in self.param_groups:  # as PyTorch: AdamW always decouples
            group["decoupled_weight_decay"] = True

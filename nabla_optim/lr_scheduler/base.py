"""The scheduler base class and the helpers every schedule shares."""

from __future__ import annotations

import warnings
from typing import Any

from ..optimizer import Optimizer


def _check_optimizer(optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _lrs(optimizer: Optimizer) -> list[float]:
    return [group["lr"] for group in optimizer.param_groups]


def _per_group(name: str, optimizer: Optimizer, value: Any) -> list:
    """A value per param group: a list of the right length, or one value for all."""
    if isinstance(value, list | tuple):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. {name} has {len(value)} values, "
                f"param_groups has {len(optimizer.param_groups)}."
            )
        return list(value)
    return [value] * len(optimizer.param_groups)


def _uses_beta1(optimizer: Optimizer) -> bool:
    """For cycle_momentum: whether the optimizer's momentum is betas[0] (else "momentum")."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError(
            "optimizer must support momentum or beta1 with `cycle_momentum` option enabled: "
            f"{type(optimizer).__name__} has neither 'momentum' nor 'betas'; pass cycle_momentum=False"
        )
    return "betas" in optimizer.defaults


def _set_momentum(group: dict[str, Any], value: float, use_beta1: bool) -> None:
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


class LRScheduler:
    """Base class of the schedulers: subclasses define `get_lr()` (the chainable form, from the
    current lrs) and optionally `_get_closed_form_lr()` (used when `step(epoch)` is given).

    Constructing a scheduler sets `initial_lr` in each param group (when `last_epoch == -1`)
    and takes its first step, which sets the epoch-0 learning rate, as PyTorch does.

    Args:
        optimizer: the optimizer whose learning rates it sets.
        last_epoch: index of the last epoch; -1 starts fresh. Resuming with a larger value
            needs `initial_lr` in the param groups (load the optimizer's state first).

    Example:
        >>> sched = StepLR(opt, step_size=30, gamma=0.1)
        >>> for epoch in range(100):
        ...     train_one_epoch(); sched.step()
    """

    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming a scheduler "
                        f"with last_epoch={last_epoch}; load the optimizer's state_dict first"
                    )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._get_lr_called_within_step = False  # torch's flag: a subclass's get_lr may read it
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[float]:
        """The learning rates the last `step()` set, one per param group."""
        return self._last_lr

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or, deprecated, jump to `epoch`) and set the new learning rates.
        Call it after `optimizer.step()`."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`: call them in the order "
                "optimizer.step(), lr_scheduler.step(), or the first value of the schedule is skipped.",
                UserWarning,
                stacklevel=2,
            )
        self._step_count += 1
        if epoch is not None:
            warnings.warn(
                "The epoch parameter in `scheduler.step()` is deprecated; call `scheduler.step()`",
                UserWarning,
                stacklevel=2,
            )
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            group["lr"] = lr
        self._last_lr = _lrs(self.optimizer)

"""Cyclical schedules stepped every batch, cycling momentum (or Adam's beta1) against the lr: OneCycleLR and CyclicLR."""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from functools import partial
from typing import Any

from ..optimizer import Optimizer
from .base import LRScheduler, _check_optimizer, _per_group, _set_momentum, _uses_beta1


class OneCycleLR(LRScheduler):
    """The 1cycle policy: lr rises from max_lr/div_factor to max_lr, then anneals to
    max_lr/(div_factor*final_div_factor); momentum (or Adam's beta1) cycles the opposite way.
    Step it after every batch.

    Args:
        optimizer: the optimizer.
        max_lr: peak learning rate, or one per param group.
        total_steps: total number of steps (or give epochs and steps_per_epoch).
        epochs: number of epochs.
        steps_per_epoch: steps per epoch.
        pct_start: fraction of the cycle spent increasing the lr (default 0.3).
        anneal_strategy: "cos" or "linear".
        cycle_momentum: cycle "momentum" (SGD, RMSprop) or betas[0] (Adam family) too.
        base_momentum: lowest momentum (default 0.85), or one per group.
        max_momentum: highest momentum (default 0.95), or one per group.
        div_factor: initial_lr = max_lr / div_factor (default 25).
        final_div_factor: min_lr = initial_lr / final_div_factor (default 1e4).
        three_phase: use a third phase that anneals to min_lr after a symmetric cycle.
        last_epoch: index of the last step (-1 starts fresh).

    Example:
        >>> sched = OneCycleLR(opt, max_lr=0.01, total_steps=1000)
        >>> for x, y in batches:
        ...     train_step(x, y); sched.step()
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        self._schedule_phases = _phases(pct_start, self.total_steps, three_phase)
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, peak in zip(optimizer.param_groups, max_lrs, strict=True):
                group["initial_lr"] = peak / div_factor
                group["max_lr"] = peak
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _uses_beta1(optimizer)
            highs = _per_group("max_momentum", optimizer, max_momentum)
            lows = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for high, low, group in zip(highs, lows, optimizer.param_groups, strict=True):
                    _set_momentum(group, high, self.use_beta1)
                    group["max_momentum"] = high
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(
                f"Tried to step {step_num} times. The specified number of total steps is {self.total_steps}"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lr = self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        m = self._anneal(group[phase["start_momentum"]], group[phase["end_momentum"]], pct)
                    break
                start_step = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                _set_momentum(group, m, self.use_beta1)
        return lrs


def _total_steps(total_steps: int | None, epochs: int | None, steps_per_epoch: int | None) -> int:
    if total_steps is not None:
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs is not None and steps_per_epoch is not None:
        if not isinstance(epochs, int) or epochs <= 0:
            raise ValueError(f"Expected positive integer epochs, but got {epochs}")
        if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
            raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
        return epochs * steps_per_epoch
    raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")


def _phases(pct_start: float, total: int, three_phase: bool) -> list[dict[str, Any]]:
    def phase(end: float, lr0: str, lr1: str, m0: str, m1: str) -> dict[str, Any]:
        return {"end_step": end, "start_lr": lr0, "end_lr": lr1, "start_momentum": m0, "end_momentum": m1}

    if three_phase:
        return [
            phase(float(pct_start * total) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
            phase(float(2 * pct_start * total) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
            phase(total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
        ]
    return [
        phase(float(pct_start * total) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
        phase(total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
    ]


class CyclicLR(LRScheduler):
    """Cyclical learning rates (CLR): lr goes from base_lr up to max_lr in `step_size_up` steps
    and back down in `step_size_down`, the amplitude scaled per cycle or per step; momentum (or
    Adam's beta1) cycles the opposite way. Step it after every batch.

    Modes: "triangular" (constant amplitude), "triangular2" (amplitude halved each cycle),
    "exp_range" (amplitude scaled by gamma**iteration). A `scale_fn` replaces the mode; it is
    called with the cycle number (scale_mode "cycle") or the step count ("iterations").

    Args:
        optimizer: the optimizer; its lrs are set to base_lr at construction (when
            `last_epoch == -1`).
        base_lr: lower lr boundary, or one per param group.
        max_lr: upper lr boundary, or one per param group (reached only if the scale is 1).
        step_size_up: steps in the increasing half of a cycle (default 2000).
        step_size_down: steps in the decreasing half (default: step_size_up).
        mode: "triangular", "triangular2" or "exp_range"; ignored when scale_fn is given.
        gamma: the base of "exp_range"'s scale, gamma**iteration (default 1).
        scale_fn: custom amplitude scale, a function of one argument with values in [0, 1].
            Saved by `state_dict()` only if it is a callable object (its `__dict__`), as in PyTorch.
        scale_mode: "cycle" or "iterations": what scale_fn is evaluated on (default "cycle").
        cycle_momentum: cycle "momentum" (SGD, RMSprop) or betas[0] (Adam family) too.
        base_momentum: momentum at the lr peak (default 0.8), or one per group.
        max_momentum: momentum at base_lr (default 0.9), or one per group.
        last_epoch: index of the last step (-1 starts fresh).

    Example:
        >>> opt = nabla_optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        >>> sched = CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=10)
        >>> for x, y in batches:
        ...     train_step(x, y); sched.step()
    """

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.8,
        max_momentum: float | list[float] = 0.9,
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        if not step_size_up > 0:
            raise ValueError(f"step_size_up must be positive, got {step_size_up}")
        if step_size_down is not None and not step_size_down >= 0:
            raise ValueError(f"step_size_down must be non-negative or None, got {step_size_down}")
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(
                f"mode is invalid and scale_fn is None: mode must be 'triangular', 'triangular2' or "
                f"'exp_range', got {mode!r}"
            )
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_ref: Callable[[float], float]
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _uses_beta1(optimizer)
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for high, low, group in zip(
                    self.max_momentums, self.base_momentums, optimizer.param_groups, strict=True
                ):
                    _set_momentum(group, high, self.use_beta1)
                    group["max_momentum"] = high
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch)
        # As in PyTorch: the first step used the groups' initial_lr (base_lr unless another
        # scheduler set initial_lr first); every later step uses base_lr.
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = self._triangular_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = self._triangular2_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = partial(self._exp_range_scale_fn, self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x: float) -> float:
        """The amplitude scale at `x` (a cycle number or a step count, see `scale_mode`)."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    @staticmethod
    def _triangular_scale_fn(x: float) -> float:
        return 1.0

    @staticmethod
    def _triangular2_scale_fn(x: float) -> float:
        return 1 / (2.0 ** (x - 1))

    @staticmethod
    def _exp_range_scale_fn(gamma: float, x: float) -> float:
        return gamma**x

    def get_lr(self) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        # scale_fn is called once per group and value, as PyTorch does (a stateful one sees the same calls)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = []
        for base, peak in zip(self.base_lrs, self.max_lrs, strict=True):
            height = (peak - base) * scale_factor
            lrs.append(base + height * self.scale_fn(at))
        if self.cycle_momentum:
            momentums = []
            for low, high in zip(self.base_momentums, self.max_momentums, strict=True):
                height = (high - low) * scale_factor
                momentums.append(high - height * self.scale_fn(at))
            for group, momentum in zip(self.optimizer.param_groups, momentums, strict=True):
                _set_momentum(group, momentum, self.use_beta1)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer; a custom scale_fn is saved only if it is a
        callable object (as its `__dict__`), not a function or lambda."""
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)  # rebuilt from mode and gamma on load
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()

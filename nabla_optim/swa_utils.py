"""Stochastic weight averaging and parameter EMA (torch.optim.swa_utils): `AveragedModel`, the
`SWALR` schedule, `update_bn`, and the averaging functions.

An update is lazy like every op: `ema.update_parameters(model)` records one lerp per parameter
and is computed with the next evaluation (typically the next `opt.step()`, in the same graph).
The averaging weight is not a constant: 1 / (n + 1) is computed in the graph from the
`n_averaged` buffer, 1 - decay is an input. The first update (a copy) is a lerp by 1, so a loop
that averages after every step compiles two models: its first step, then every later step with
the previous step's average folded in. `n_averaged` is counted on the host too, so nothing
reads a device value to decide. Inside `nabla.compile` the count is updated in place in the
graph, and the first update is guarded: one trace for it, one for all later ones.

Example:
    >>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
    >>> for x, y in loader:
    ...     opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    ...     ema.update_parameters(model)
    >>> ema(x_test)  # the averaged weights
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable
from typing import Any

import nabla as nb
from nabla.core.graph.tracing import note_guard, tracing
from nabla_nn import Module
from nabla_nn.modules.normalization import _BatchNorm

from .lr_scheduler.base import LRScheduler, _per_group
from .optimizer import Optimizer

__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]


def _weight(value: float, like: nb.Tensor) -> nb.Tensor:
    """A per-call scalar as realized data: a graph input, so new values never recompile."""
    return nb.tensor(value, dtype=like.dtype, device=like.device)


def _mix(a: nb.Tensor, b: nb.Tensor, weight_a: float, weight_b: float) -> nb.Tensor:
    """weight_a * a + weight_b * b in a's dtype; an integer tensor (a BatchNorm's
    num_batches_tracked) is mixed in float32 and truncated, as torch's copy_ of its float result."""
    if nb.is_floating_point(a):
        return a * _weight(weight_a, a) + b * _weight(weight_b, a)
    af, bf = a.to(nb.float32), b.to(nb.float32)
    return (af * _weight(weight_a, af) + bf * _weight(weight_b, af)).to(a.dtype)


def _count_plus_one(num_averaged: Any) -> Any:
    """n + 1, in the graph when n is a tensor (AveragedModel's `n_averaged`: a compiled step
    reads it on every call instead of baking the count it was traced with)."""
    return num_averaged + 1 if isinstance(num_averaged, nb.Tensor) else int(num_averaged) + 1


def _mean_weight(num_averaged: Any, like: nb.Tensor) -> nb.Tensor:
    """The running mean's weight 1 / (n + 1) in `like`'s dtype."""
    if isinstance(num_averaged, nb.Tensor):
        return nb.reciprocal(_count_plus_one(num_averaged).to(like.dtype))
    return _weight(1.0 / (float(num_averaged) + 1.0), like)


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[[list, list, Any], None]:
    """EMA over lists of tensors, in place: ema = decay * ema + (1 - decay) * current."""
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    def ema_update(ema_params: list, current_params: list, num_averaged: Any) -> None:
        for ema, current in zip(ema_params, current_params, strict=True):
            if nb.is_floating_point(ema):
                ema.lerp_(current, _weight(1.0 - decay, ema))
            else:  # (torch's copy_ of ema * decay + current * (1 - decay): truncated)
                ema.copy_(_mix(ema, current, decay, 1.0 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable[[list, list, Any], None]:
    """The running mean over lists of tensors, in place: avg += (current - avg) / (n + 1)."""

    def swa_update(averaged: list, current_params: list, num_averaged: Any) -> None:
        for avg, current in zip(averaged, current_params, strict=True):
            if nb.is_floating_point(avg):
                avg.lerp_(current, _mean_weight(num_averaged, avg))
            else:
                avg.copy_(avg + nb.floor_divide(current - avg, _count_plus_one(num_averaged)))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[nb.Tensor, nb.Tensor, Any], nb.Tensor]:
    """EMA of one tensor: decay * ema + (1 - decay) * current."""
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    def ema_update(ema: nb.Tensor, current: nb.Tensor, num_averaged: Any) -> nb.Tensor:
        return _mix(ema, current, decay, 1.0 - decay)

    return ema_update


def get_swa_avg_fn() -> Callable[[nb.Tensor, nb.Tensor, Any], nb.Tensor]:
    """The running mean of one tensor: avg + (current - avg) / (n + 1)."""

    def swa_update(averaged: nb.Tensor, current: nb.Tensor, num_averaged: Any) -> nb.Tensor:
        return averaged + (current - averaged) / _count_plus_one(num_averaged)  # (torch's formula)

    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters (and, with use_buffers, buffers) are averaged over the
    models passed to `update_parameters`: the running mean by default (SWA), or any `avg_fn`
    (one tensor at a time) or `multi_avg_fn` (lists of tensors, in place), e.g. the EMA of
    `get_ema_multi_avg_fn(decay)`. Its forward is the copy's forward; `n_averaged` is a buffer,
    so the averaged model saves and loads with its state_dict (PyTorch's keys: `module.*`,
    `n_averaged`).

    Args:
        model: the model to average (deep-copied).
        device: move the copy there.
        avg_fn: `avg_fn(averaged, current, n_averaged) -> new averaged` per tensor.
        multi_avg_fn: `multi_avg_fn(averaged_list, current_list, n_averaged)`, in place.
        use_buffers: average the buffers too (else they are copied from `model` each update).
    """

    def __init__(
        self,
        model: Module,
        device: Any = None,
        avg_fn: Callable | None = None,
        multi_avg_fn: Callable | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise ValueError("Only one of avg_fn and multi_avg_fn should be provided")
        if not isinstance(model, Module):
            raise TypeError(f"AveragedModel: model must be a nabla_nn.Module, got {type(model).__name__}")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", nb.tensor(0, dtype=nb.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers
        self._count = 0
        self._counted = self.n_averaged._impl  # the value _count was read from or written as

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _averaged(self, model: Module) -> tuple[list, list]:
        if self.use_buffers:
            mine = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            mine, theirs = list(self.module.parameters()), list(model.parameters())
        if len(mine) != len(theirs):
            raise ValueError(
                f"AveragedModel.update_parameters: model has {len(theirs)} tensors to average, the averaged copy "
                f"{len(mine)}: pass the model this AveragedModel was made from"
            )
        return [p.detach() for p in mine], [p.detach().to(a.device) for p, a in zip(theirs, mine, strict=True)]

    def update_parameters(self, model: Module) -> None:
        """Fold `model`'s current parameters into the average (the first call copies them)."""
        # (nabla.compile: the first update, a copy, is another program than the later ones)
        note_guard(lambda: self._synced_count() == 0, "AveragedModel's first update")
        mine, theirs = self._averaged(model)
        with nb.no_grad():
            if self._synced_count() == 0:  # a copy; floats as a lerp by 1 (exact), the op every later update runs
                for avg, current in zip(mine, theirs, strict=True):
                    if nb.is_floating_point(avg):
                        avg.lerp_(current, _weight(1.0, avg))
                    else:
                        avg.copy_(current)
            elif self.multi_avg_fn is not None:  # (n_averaged as a tensor, as torch passes it)
                self.multi_avg_fn(mine, theirs, self.n_averaged)
            elif self.avg_fn is not None:
                for avg, current in zip(mine, theirs, strict=True):
                    avg.copy_(self.avg_fn(avg, current, self.n_averaged))
            else:
                get_swa_multi_avg_fn()(mine, theirs, self.n_averaged)  # (1 / (n + 1) in the graph)
            if not self.use_buffers:  # buffers (BatchNorm's running stats) follow the model
                for mine_b, theirs_b in zip(self.module.buffers(), model.buffers(), strict=True):
                    mine_b.detach().copy_(theirs_b.detach().to(mine_b.device))
        self._count += 1
        if tracing():  # a compiled step counts in place: its later calls run no Python
            self.n_averaged.add_(1)
        else:  # (realized: the next step reads it as an input, and the host count stays true)
            self.n_averaged = nb.tensor(self._count, dtype=nb.int64, device=self.n_averaged.device)
        self._counted = self.n_averaged._impl

    def _synced_count(self) -> int:
        """The host counter, which follows n_averaged whenever it changed since (load_state_dict,
        the user's reset, a compiled step's update): read once then. Read from a share of its
        storage, so a compiled step tracing this read does not guard the tensor itself."""
        if self.n_averaged._impl is not self._counted:
            self.n_averaged.realize()
            self._count = int(nb.Tensor(self.n_averaged._impl.share()).item())
            self._counted = self.n_averaged._impl
        return self._count


class SWALR(LRScheduler):
    """Anneals each param group's learning rate to `swa_lr` over `anneal_epochs` epochs
    (cosine or linear) and keeps it there (torch.optim.swa_utils.SWALR).

    Args:
        optimizer: the optimizer.
        swa_lr: the target learning rate (one, or one per param group).
        anneal_epochs: epochs of annealing (0: switch at once).
        anneal_strategy: "cos" or "linear".
        last_epoch: index of the last epoch (-1 starts fresh).

    Example:
        >>> swa_sched = SWALR(opt, swa_lr=0.05, anneal_epochs=5)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: float | list,
        anneal_epochs: int = 10,
        anneal_strategy: str = "cos",
        last_epoch: int = -1,
    ) -> None:
        for lr, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        if isinstance(anneal_epochs, bool) or not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_func = self._cos_anneal if anneal_strategy == "cos" else self._linear_anneal
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cos_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs, strict=True)]


def update_bn(loader: Iterable, model: Module, device: Any = None) -> None:
    """Recompute every BatchNorm's running statistics with one pass over `loader` (each item a
    batch, or a list/tuple whose first entry is the input), as a cumulative average; the model's
    training mode and the layers' momenta are restored afterwards."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with nb.no_grad():
        for batch in loader:
            x = batch[0] if isinstance(batch, list | tuple) else batch
            if not isinstance(x, nb.Tensor):
                x = nb.tensor(x)
            model(x if device is None else x.to(device))
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)

"""Optimizer: the base class of every optimizer (PyTorch's `torch.optim.Optimizer`).

A training step is one graph. `step()` records every parameter and state update lazily (in-place
methods under `no_grad`) and ends with one `nabla.evaluate`, which also computes everything else
still pending: the forward pass, the backward pass and the loss. To make that graph the same from
the first step on, so that a training loop compiles once and then only hits the cache:

  - optimizer state (moments, step counts) is created as *realized* tensors at a parameter's
    first step, never as lazy fills that only the first step's graph would contain;
  - hyperparameters a scheduler changes (`lr`, `momentum`, `betas`) stay Python floats in
    `param_groups`, as in PyTorch, but enter the graph as realized float64 scalars (graph inputs)
    whose storage is replaced when the Python value changes, so a new learning rate never
    recompiles. Scalar math on them (bias corrections) runs in float64 inside the graph and is
    cast to the parameter's dtype, as PyTorch does it in Python doubles;
  - other hyperparameters (eps, weight_decay, ...) are constants baked into the graph (part of
    the fused op's key; inside `nabla.compile` a guard on them, and on the state's layout,
    makes the compiled step trace again when they change or a state_dict is loaded).

Each step records ONE op per param group (`nabla_optim.fused`): the per-parameter math is a
*rule* written once with operators, run on every parameter of the group inside that op. A
subclass defines

  - `_init_state(p, group)`: the realized initial state of a parameter;
  - `rule` (a `staticmethod`): `rule(xp, p, g, state, scalars, **consts) -> (new_p, new_state)`;
  - `scalar_names`: the scheduled hyperparameters the rule reads (`scalars[name]`, float64);
  - `const_names` / `flag_names`: the other hyperparameters the rule takes (as Python floats /
    bools), baked into the graph; `rule_consts(group)` may add derived ones;
  - `_state_keys(p, state, group)`: the state entries the rule reads and returns, in order
    (creating any that a changed hyperparameter now needs).

A subclass that sets no `rule` may instead define `_update(p, grad, state, group)` with
in-place tensor ops (one op per operation, recorded per parameter).
"""

from __future__ import annotations

import copy
import functools
import numbers
from collections import defaultdict
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.common.devices import CPU_DEVICE, Device
from nabla.core.common.hooks import RemovableHandle, add_hook
from nabla.core.graph.tracing import note_guard, tracing
from nabla_nn.module_state import _assembled
from nabla_nn.parameter import Parameter

from .fused import fused_update_
from .state import (
    accelerator_of,
    load_value,
    placed_like,
    realized_zeros_like,
    reshare,
    saved_value,
    share_loaded,
    share_scalars,
    state_layout,
)

__all__ = ["Optimizer", "ParamsT", "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook"]

# Hooks every optimizer's step runs (before its own): PyTorch's global step hooks.
_GLOBAL_STEP_PRE_HOOKS: dict[int, Callable] = {}
_GLOBAL_STEP_POST_HOOKS: dict[int, Callable] = {}


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Run `hook(optimizer, args, kwargs)` before every optimizer's `step()`; it may return
    new `(args, kwargs)`. Returns a handle whose `remove()` unregisters it."""
    return add_hook(_GLOBAL_STEP_PRE_HOOKS, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Run `hook(optimizer, args, kwargs)` after every optimizer's `step()`."""
    return add_hook(_GLOBAL_STEP_POST_HOOKS, hook)


ParamsT = Iterable[Parameter] | Iterable[dict[str, Any]] | Iterable[tuple[str, Parameter]]

# Hyperparameters that schedulers change: graph inputs, read from the group by these getters.
_SCHEDULED: dict[str, Callable[[dict], Any]] = {
    "lr": lambda g: g["lr"],
    "momentum": lambda g: g["momentum"],
    "beta1": lambda g: g["betas"][0],
    "beta2": lambda g: g["betas"][1],
}


class _ParamGroup(dict):
    """A param group: a plain dict to the user, whose scheduled hyperparameters also live in
    realized float64 scalar tensors (one object per name, kept for the group's lifetime so a
    compiled step that captured it reads the new value on its next call)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._scalars: dict[str, list] = {}  # name -> [python value, Tensor]

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self.sync()

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        super().update(*args, **kwargs)
        self.sync()

    def scalar(self, name: str) -> Tensor:
        """The graph input holding hyperparameter `name` ("lr", "momentum", "beta1", "beta2"). It
        lives where the group's parameters do: on an accelerator it is uploaded once per value,
        not every step."""
        value = float(_SCHEDULED[name](self))
        entry = self._scalars.get(name)
        device = self._device()
        if entry is None:
            entry = [value, Tensor.from_numpy(np.array(value, np.float64)).to(device)]
            self._scalars[name] = entry
        elif entry[0] != value or entry[1]._impl.device is not device:
            # Same Tensor object, new storage: graphs (cached or compiled) read it as an input.
            impl = entry[1]._impl
            impl.device = device  # (a host value: copied up on first use, then kept there)
            impl.set_realized(np.array(value, np.float64))
            entry[0] = value
        return entry[1]

    def _device(self) -> Device:
        """The accelerator the group's (unsharded) parameters are on, else the CPU."""
        params = self.get("params")
        device = accelerator_of(params[0]) if params else None
        return CPU_DEVICE if device is None else device

    def sync(self) -> None:
        for name in list(self._scalars):
            if _has_value(self, name):
                self.scalar(name)


def _has_value(group: dict, name: str) -> bool:
    try:
        _SCHEDULED[name](group)
    except (KeyError, IndexError, TypeError):
        return False
    return True


def check_implementation(differentiable: bool) -> None:
    """PyTorch's implementation switches. `foreach`, `fused` and `capturable` choose how torch
    runs the same update; nabla always records every parameter's update as one fused op, so
    they are accepted and change nothing. `differentiable=True` (autodiff through the step)
    is not supported."""
    if differentiable:
        raise NotImplementedError(
            "differentiable=True is not supported: the optimizer step is one fused update without a gradient"
        )


def check_nonneg(name: str, value: Any, what: str | None = None) -> None:
    """PyTorch's hyperparameter check: ValueError("Invalid learning rate: -1.0")."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what or name + ' value'}: {value}")


def check_lr(lr: Any) -> float:
    if isinstance(lr, Tensor):
        if lr.numel() != 1:
            raise ValueError(f"Tensor lr must be 1-element, got shape {lr.shape}")
        lr = float(lr.item())
    check_nonneg("lr", lr, "learning rate")
    return lr


def check_betas(betas: Any) -> tuple[float, float]:
    if not isinstance(betas, tuple | list) or len(betas) != 2:
        raise ValueError(f"betas must be a pair of floats, got {betas!r}")
    for i, b in enumerate(betas):
        if not isinstance(b, numbers.Real) or not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")
    return (float(betas[0]), float(betas[1]))


def _hooked_step(step: Callable) -> Callable:
    """An optimizer's `step` with PyTorch's step hooks around it (once: a subclass's step that
    calls `super().step()` runs them once) and the mark schedulers check (`_opt_called`)."""

    @functools.wraps(step)
    def hooked(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        pre = (*_GLOBAL_STEP_PRE_HOOKS.values(), *getattr(self, "_step_pre_hooks", {}).values())
        post = (*_GLOBAL_STEP_POST_HOOKS.values(), *getattr(self, "_step_post_hooks", {}).values())
        if getattr(self, "_in_hooked_step", False) or not (pre or post):
            loss = step(self, *args, **kwargs)
        else:
            self._in_hooked_step = True
            try:
                loss = _run_with_hooks(self, step, (self, *args), kwargs, pre, post)
            finally:
                self._in_hooked_step = False
        self._opt_called = True  # schedulers warn when stepped before the optimizer
        return loss

    return hooked


def _run_with_hooks(opt: Optimizer, step: Callable, args: tuple, kwargs: dict, pre: tuple, post: tuple) -> Any:
    # As PyTorch: hooks see the step's arguments with the optimizer first.
    for hook in pre:
        result = hook(opt, args, kwargs)
        if result is not None:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError(f"an optimizer step pre-hook must return None or (args, kwargs), got {result!r}")
            args, kwargs = result
    loss = step(*args, **kwargs)
    for hook in post:
        hook(opt, args, kwargs)
    return loss


class Optimizer:
    """Base class for all optimizers (PyTorch's `torch.optim.Optimizer`).

    Args:
        params: an iterable of `nabla_nn.Parameter`s, of `(name, Parameter)` pairs (as
            `model.named_parameters()` gives), or of dicts (param groups) with a "params" entry
            and per-group hyperparameters.
        defaults: default hyperparameters for groups that do not set them.

    Attributes:
        param_groups: list of dicts, each with "params" and its hyperparameters (Python values;
            changing them, e.g. `group["lr"] = 0.01`, takes effect at the next step without a
            recompile for lr/momentum/betas).
        state: per-parameter state (dict keyed by the Parameter), realized tensors.

    Only `nabla_nn.Parameter`s are accepted (a plain Tensor raises TypeError: wrap it with
    `nabla_nn.Parameter(t)` and use the parameter in the model). A parameter whose `grad` is
    None or whose `requires_grad` is False is skipped by `step()`.

    Example:
        >>> opt = nabla_optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        >>> opt.zero_grad()
        >>> loss = loss_fn(model(x), y)
        >>> loss.backward()
        >>> opt.step()              # forward, backward, update and loss: one graph
    """

    # The per-parameter update (a staticmethod, see the module doc); None: `_update` instead.
    rule: Callable[..., Any] | None = None
    # The scheduled hyperparameters `rule` reads as float64 graph inputs.
    scalar_names: tuple[str, ...] = ("lr",)
    # The group's other hyperparameters `rule` takes, as Python floats and bools (a NumPy
    # float64 would promote float32 arrays in the NumPy kernel).
    const_names: tuple[str, ...] = ()
    flag_names: tuple[str, ...] = ()
    # Scheduled hyperparameters whose being zero decides which state exists (a momentum buffer).
    structural_names: tuple[str, ...] = ()
    # Scalar state entries whose update reads only themselves and the group's hyperparameters
    # (the step count): parameters that start and step together hold one value (one impl
    # behind their own Tensor objects), so the step's graph reads and computes it once, not
    # once per parameter (see `share_scalars`).
    shared_state: tuple[str, ...] = ("step",)

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self._state_epoch = 0  # counts loads that replaced state tensors: a compiled step retraces
        # PyTorch's optimizer hooks, id -> hook (see the register_* methods)
        self._step_pre_hooks: dict[int, Callable] = {}
        self._step_post_hooks: dict[int, Callable] = {}
        self._state_dict_pre_hooks: dict[int, Callable] = {}
        self._state_dict_post_hooks: dict[int, Callable] = {}
        self._load_state_dict_pre_hooks: dict[int, Callable] = {}
        self._load_state_dict_post_hooks: dict[int, Callable] = {}
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Parameters or dicts, "
                f"but got a single {type(params).__name__}"
            )
        if isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of "
                "tensors in sets will change between runs. Please use a list instead."
            )
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __repr__(self) -> str:
        out = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            out += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    out += f"    {key}: {group[key]}\n"
        return out + ")"

    # -- param groups ---------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (e.g. layers unfrozen during fine-tuning) with its own
        hyperparameters; missing ones are taken from `defaults`.

        Example:
            >>> opt.add_param_group({"params": head.parameters(), "lr": 1e-3})
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        if "params" not in param_group:
            raise ValueError("param_group must have a 'params' entry")
        group = _ParamGroup(param_group)
        params, names = self._extract_params(group["params"], len(self.param_groups))
        dict.__setitem__(group, "params", params)
        if names:
            dict.__setitem__(group, "param_names", names)
        for name, default in self.defaults.items():
            group.setdefault(name, default)
        new_ids = {id(p) for p in params}
        for group_index, other in enumerate(self.param_groups):
            if ("param_names" in other) != ("param_names" in group):
                raise ValueError("all optimizer param groups should be with/without names")
            if any(id(p) in new_ids for p in other["params"]):
                raise ValueError(
                    f"some parameters appear in more than one parameter group (already in group {group_index})"
                )
        self.param_groups.append(group)

    def _extract_params(self, params: Any, group_index: int) -> tuple[list[Parameter], list[str]]:
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of "
                "tensors in sets will change between runs. Please use a list instead."
            )
        out: list[Parameter] = []
        names: list[str] = []
        for i, item in enumerate(list(params)):
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
                names.append(item[0])
                item = item[1]
            if not isinstance(item, Parameter):
                hint = (
                    " (wrap it: p = nabla_nn.Parameter(t), and use p in the model and afterwards: unlike torch's, a "
                    "nabla Parameter does not share t's storage, so t keeps its value)"
                    if isinstance(item, Tensor)
                    else ""
                )
                raise TypeError(
                    f"optimizer params must be nabla_nn.Parameter objects, but param {i} of group "
                    f"{group_index} is a {type(item).__name__}{hint}"
                )
            out.append(item)
        if names and len(names) != len(out):
            raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        if len({id(p) for p in out}) != len(out):
            raise ValueError(f"param group {group_index} contains the same parameter more than once")
        return out, names  # (an empty group is allowed, as in PyTorch: an empty no-decay group)

    # -- gradients ------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized parameters.

        Args:
            set_to_none: set `.grad` to None (the default; the next backward assigns fresh
                gradients). With False, each existing gradient tensor is zeroed in place (its
                storage becomes realized zeros), as PyTorch's `grad.zero_()`.
        """
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:  # without reading .grad: a compiled step must not depend on it
                    p.grad = None
                elif (g := p.grad) is not None:
                    g.data = realized_zeros_like(g)

    # -- step -----------------------------------------------------------------------------
    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's own `step` (an optimizer ported from PyTorch) runs the step hooks and
        tells the schedulers the optimizer stepped, as PyTorch wraps every optimizer's step."""
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _hooked_step(cls.__dict__["step"])

    @_hooked_step
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; returns the closure's loss if given.

        The updates are recorded lazily and computed, together with everything else pending
        (forward, backward, loss), as one graph at the end of the call. Inside `nabla.compile`
        nothing is evaluated: the traced step becomes part of the compiled function.

        Args:
            closure: re-evaluates the model and returns the loss (run with grad enabled).
        """
        return self._step(closure)

    def _step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with nb.enable_grad():
                loss = closure()
        with nb.no_grad():
            updated = self._record_updates()
        if updated and not tracing():
            nb.evaluate(*updated)
        return loss

    def _record_updates(self) -> list[Tensor]:
        """Record every parameter's update lazily; returns the tensors it changed."""
        updated: list[Tensor] = []
        traced = tracing()
        if traced:  # (a compiled step bakes these in: it must trace again when they change)
            note_guard(self._trace_guard, f"{type(self).__name__}'s hyperparameters, param groups or loaded state")
        states = self.state
        for i, group in enumerate(self.param_groups):
            if not isinstance(group, _ParamGroup):  # a dict put in param_groups by hand
                group = self.param_groups[i] = _ParamGroup(group)
            if self.rule is None:  # (a fused step reads every scalar again: `_fused_step`)
                group.sync()  # catches changes the dict did not see (a mutated list)
            # Parameters whose state has the same entries share one fused op (all of a group's,
            # unless a hyperparameter change left some with a different state).
            batches: dict[tuple[str, ...], list[Parameter]] = {}
            fresh: set[int] = set()  # parameters whose state starts now
            for p in group["params"]:
                # (every parameter every step: outside a trace, .grad and .requires_grad read directly)
                if (p.grad if traced else p._grad) is None or not p._impl.requires_grad:
                    continue
                state = states[p]
                if not state:
                    state.update(placed_like(p, self._init_state(p, group)))
                    fresh.add(id(p))
                if self.rule is None:
                    self._update(p, p.grad, state, group)
                    updated.append(p)
                    updated.extend(v for v in state.values() if isinstance(v, Tensor))
                else:
                    batches.setdefault(self._state_keys(p, state, group), []).append(p)
            for keys, params in batches.items():
                if len(fresh) > 1:  # (initial values are equal within a group; one value per fused op)
                    share_scalars([[states[p].get(k) for p in params if id(p) in fresh] for k in self.shared_state])
                updated += self._fused_step(group, params, keys)
        if traced:  # (after the updates: the sharing and state the next call's inputs will have)
            note_guard(self._sharing, f"which parameters of {type(self).__name__} share one step count")
            note_guard(self._state_objects, f"{type(self).__name__}'s state tensors (cleared or replaced)")
        return updated

    def _sharing(self) -> tuple:
        """Per group and shared state entry, which parameters hold one value (the index of the
        first parameter holding it): a compiled step reads each shared value once, so it must
        trace again when they part (a loaded state with unequal step counts)."""
        out = []
        for g in self.param_groups:
            for k in self.shared_state:
                first: dict[int, int] = {}
                entries = [self.state[p].get(k) if p in self.state else None for p in g["params"]]
                out.append(
                    tuple(
                        first.setdefault(id(t._impl), i) if isinstance(t, Tensor) else -1 for i, t in enumerate(entries)
                    )
                )
        return tuple(out)

    def _fused_step(self, group: _ParamGroup, params: list[Parameter], keys: tuple[str, ...]) -> list[Tensor]:
        """Record one fused update of `params` (whose state entries `keys` the rule updates)."""
        # Runs every step for every parameter: plain loops, attributes read directly.
        states, grads = [], []
        state = self.state
        for p in params:
            entries = state[p]
            row = tuple([entries.get(k) for k in keys])
            for v in row:  # (a loop, not all(): no generator per parameter)
                if not isinstance(v, Tensor):
                    for k in keys:
                        self._state_tensor(p, k)  # raises, naming the entry
            states.append(row)
            g = p._grad
            grads.append(g if g._impl.dtype is p._impl.dtype else g.to(p.dtype))
        scalars = {name: group.scalar(name) for name in self.scalar_names}
        shared = [keys.index(k) for k in self.shared_state if k in keys]
        before = [[row[i]._impl for row in states] for i in shared]
        # (`_step` evaluates the updated tensors at once, or a trace records them: not pending)
        fused_update_(self.rule, params, grads, states, scalars, pending=False, **self.rule_consts(group))
        for i, impls in zip(shared, before, strict=True):  # entries that came in as one value leave as one
            reshare([row[i] for row in states], impls)
        return [t for p, row in zip(params, states, strict=True) for t in (p, *row)]

    def _trace_guard(self) -> tuple:
        """What a traced step depends on besides its graph inputs: each group's constants and
        parameters, whether its structural hyperparameters are zero, and the loaded state."""
        groups = tuple(
            (
                tuple(self.rule_consts(g).items()) if self.rule is not None else (),
                tuple(g[k] == 0 for k in self.structural_names),
                tuple(map(id, g["params"])),
            )
            for g in self.param_groups
        )
        return groups, self._state_epoch

    def _state_objects(self) -> tuple:
        """Which tensor each parameter's state holds, after a step: a traced step reads and
        updates those objects, so `state.clear()` or a replaced buffer must trace again."""
        state = self.state
        return tuple(_state_ids(state[p]) if p in state else None for g in self.param_groups for p in g["params"])

    def _state_tensor(self, p: Parameter, key: str) -> Tensor:
        value = self.state[p].get(key)
        if not isinstance(value, Tensor):
            raise KeyError(
                f"{type(self).__name__} state of a parameter of shape {tuple(p.shape)} needs a tensor "
                f"{key!r}, got {type(value).__name__} (was the state loaded from another optimizer?)"
            )
        return value

    # -- what a subclass defines ----------------------------------------------------------
    def rule_consts(self, group: dict[str, Any]) -> dict[str, Any]:
        """The rule's constant arguments for `group` (Python bools and floats)."""
        consts: dict[str, Any] = {k: float(group[k]) for k in self.const_names}
        return consts | {k: bool(group[k]) for k in self.flag_names}

    def _state_keys(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> tuple[str, ...]:
        """The state entries `rule` reads and returns, in order; adds those now missing."""
        return tuple(k for k, v in state.items() if isinstance(v, Tensor))

    def _init_state(self, p: Parameter, group: dict[str, Any]) -> dict[str, Tensor]:
        """The initial state of `p`: realized tensors only."""
        return {}

    def _state_shape(self, p: Parameter, key: str) -> tuple[int, ...]:
        """The shape a loaded state tensor `key` of `p` must have unless it is a scalar: the
        parameter's (Adafactor's factored second moment has others)."""
        return tuple(p.shape)

    def _update(self, p: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        raise NotImplementedError(f"{type(self).__name__} defines neither a `rule` nor `_update`")

    @staticmethod
    def _scalar(group: _ParamGroup, name: str) -> Tensor:
        """The graph input holding a scheduled hyperparameter of `group`."""
        return group.scalar(name)

    # -- hooks (PyTorch's) ------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Run `hook(optimizer, args, kwargs)` before each `step()` (`args` starts with the
        optimizer, as PyTorch's); a non-None result must be new `(args, kwargs)` for the step.

        Example:
            >>> handle = opt.register_step_pre_hook(lambda o, args, kwargs: print("stepping"))
            >>> handle.remove()
        """
        return add_hook(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Run `hook(optimizer, args, kwargs)` after each `step()`."""
        return add_hook(self._step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Run `hook(optimizer)` before `state_dict()` builds the dict."""
        return add_hook(self._state_dict_pre_hooks, hook, prepend=prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Run `hook(optimizer, state_dict)` on what `state_dict()` returns; a non-None result
        replaces it."""
        return add_hook(self._state_dict_post_hooks, hook, prepend=prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Run `hook(optimizer, state_dict)` before `load_state_dict()` loads it; a non-None
        result is loaded instead."""
        return add_hook(self._load_state_dict_pre_hooks, hook, prepend=prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Run `hook(optimizer)` after `load_state_dict()` has loaded."""
        return add_hook(self._load_state_dict_post_hooks, hook, prepend=prepend)

    # -- state dict -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in PyTorch's layout.

        Returns `{"state": {param_index: {name: tensor, ...}}, "param_groups": [{...hyper-
        parameters, "params": [param_index, ...]}]}`, indices numbering the parameters of all
        groups in order. The tensors are snapshots (realized storage is never mutated), so
        later steps do not change a state_dict already taken. State sharded on a DeviceMesh
        (that of a sharded parameter) is assembled into ordinary tensors, as a module's
        `state_dict()` does, so a checkpoint does not depend on the layout.

        Example:
            >>> sd = opt.state_dict()
            >>> sd["state"][0]["exp_avg"].sharding is None   # even for a sharded parameter
            True
        """
        for hook in tuple(self._state_dict_pre_hooks.values()):
            hook(self)
        out = self._state_dict()
        for hook in tuple(self._state_dict_post_hooks.values()):
            result = hook(self, out)
            out = out if result is None else result
        return out

    def _state_dict(self) -> dict[str, Any]:
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        pending = [v for s in self.state.values() for v in s.values() if isinstance(v, Tensor) and not v.is_realized]
        if pending:
            nb.evaluate(*pending)
        state = {}
        sharded: list[tuple[dict[str, Any], str]] = []
        for p, s in self.state.items():
            if s and id(p) in index:
                entry = {k: saved_value(v, k in self.shared_state) for k, v in s.items()}
                sharded += [(entry, k) for k, v in entry.items() if isinstance(v, Tensor) and v.sharding is not None]
                state[index[id(p)]] = entry
        if sharded:
            full = _assembled([entry[k] for entry, k in sharded])
            for (entry, k), value in zip(sharded, full, strict=True):
                entry[k] = value
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state saved by `state_dict()` (or PyTorch's, with tensors/arrays as values).

        Group and parameter counts must match; state tensors of a parameter's shape must have
        it. Floating state (but not "step") is cast to the parameter's dtype, as PyTorch does.
        Each state tensor goes to its parameter's accelerator, if it is on one, and is laid out
        like its parameter, whatever layout it was saved from:
        split to a sharded parameter's spec (scalars such as "step" replicated on its mesh),
        unsharded for an unsharded one, so the next step has the structure it had before the
        load (no recompile). Resuming from a loaded state continues training exactly as if it
        had not stopped.

        Example:
            >>> opt.load_state_dict(torch_opt.state_dict())   # into a sharded model's optimizer too
        """
        for hook in tuple(self._load_state_dict_pre_hooks.values()):
            result = hook(self, state_dict)
            state_dict = state_dict if result is None else result
        self._load_state_dict(state_dict)
        for hook in tuple(self._load_state_dict_post_hooks.values()):
            hook(self)

    def _load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            keys = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict).__name__
            raise ValueError(f"optimizer state_dict must be a dict with 'state' and 'param_groups', got {keys}")
        saved_groups = copy.deepcopy(list(state_dict["param_groups"]))
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"loaded state dict has {len(saved_groups)} parameter groups, the optimizer has {len(self.param_groups)}"
            )
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups, strict=True)):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(
                    f"loaded state dict's parameter group {i} has {len(saved['params'])} parameters, "
                    f"the optimizer's group {i} has {len(group['params'])}"
                )
        id_map = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups),
                chain.from_iterable(g["params"] for g in self.param_groups),
                strict=True,
            )
        )
        new_state: dict[Parameter, dict[str, Any]] = {}
        for key, values in state_dict["state"].items():
            if key not in id_map:
                raise ValueError(f"loaded state dict has state for parameter {key!r}, which no parameter group lists")
            p = id_map[key]
            # load_value gives unsharded host tensors; placed_like puts them where the parameter is.
            new_state[p] = placed_like(
                p, {k: load_value(p, key, k, v, self._state_shape(p, k)) for k, v in values.items()}
            )
        pending = [v for s in new_state.values() for v in s.values() if isinstance(v, Tensor) and not v.is_realized]
        if pending:  # bfloat16 state is split by an op: realize it, or it would join the next step's graph
            nb.evaluate(*pending)
        self._install_state(new_state)
        if self.rule is not None:  # equal loaded step counts are one value again, as before saving
            for group in self.param_groups:
                by_entries: dict[tuple, list[dict[str, Any]]] = {}  # (as the step batches them)
                for p in group["params"]:
                    if self.state.get(p):
                        by_entries.setdefault(tuple(self.state[p]), []).append(self.state[p])
                for rows in by_entries.values():
                    share_loaded(rows, self.shared_state)
        for group, saved in zip(self.param_groups, saved_groups, strict=True):
            params, names = group["params"], group.get("param_names")
            dict.clear(group)
            saved["params"] = params
            if names is not None and "param_names" not in saved:
                saved["param_names"] = names
            if isinstance(saved.get("betas"), list):
                saved["betas"] = tuple(saved["betas"])
            for name, default in self.defaults.items():  # keys an older PyTorch did not save
                saved.setdefault(name, default)
            group.update(saved)

    def _install_state(self, new_state: dict[Parameter, dict[str, Any]]) -> None:
        """Replace the state, reusing each existing Tensor object (a compiled step captured it);
        a state with other entries makes a compiled step trace again (`_trace_guard`)."""
        old = self.state
        before = state_layout(old)
        self.state = defaultdict(dict)
        for p, values in new_state.items():
            previous = old.get(p, {})
            merged = {}
            for k, v in values.items():
                prev = previous.get(k)
                if isinstance(v, Tensor) and isinstance(prev, Tensor):
                    prev.data = v
                    merged[k] = prev
                else:
                    merged[k] = v
            self.state[p] = merged
        if state_layout(self.state) != before:
            self._state_epoch += 1


def _state_ids(entries: dict) -> tuple:
    """A parameter's state entries, tensors by id (updated in place, they stay the same objects;
    another value's change, such as a counter's, is not structure)."""
    return tuple((k, id(v) if isinstance(v, Tensor) else None) for k, v in entries.items())

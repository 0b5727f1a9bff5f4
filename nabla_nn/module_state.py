"""Module's state_dict methods (`_StateDict`, a base class of `Module`: state_dict,
load_state_dict, their hooks' registration, extra state, save_weights / load_weights) and
what they use: PyTorch's walk over the submodules with their prefixes and state_dict hooks
(`_Save`, `_Load`), lazy modules' materialization, the defaults submodules supply for missing
keys (BatchNorm's num_batches_tracked), PyTorch's placeholders and tensors, and sharded
values moved between a mesh layout and the host."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.common import dtypes as _dt
from nabla.core.common.hooks import RemovableHandle, add_hook

from . import serialization
from .parameter import Parameter, is_lazy

if TYPE_CHECKING:  # type hints only: module.py imports this file
    from .module import Module


_EXTRA_STATE_KEY = "_extra_state"  # PyTorch's key suffix for get_extra_state's value


class IncompatibleKeys(NamedTuple):
    """What `load_state_dict` did not match: keys the module expected and keys it did not know."""

    missing_keys: list[str]
    unexpected_keys: list[str]


class _StateDict:
    """`Module`'s state_dict methods: saving and loading by PyTorch name, with PyTorch's hooks
    and extra state, and safetensors checkpoints."""

    def state_dict(self, destination: Any = None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by PyTorch name ("layers.0.weight"), in
        registration order. Shared tensors appear under every name. Each value is the
        tensor's `.data`: an in-place op on it writes through to the module (as in PyTorch),
        but unlike PyTorch it holds the values of the moment it was taken, so take the
        state_dict after training (or `keep_vars=True`, the Parameter objects themselves). A
        value sharded on a DeviceMesh is assembled into one ordinary tensor (a copy), so
        checkpoints do not depend on the layout.

        `prefix` is prepended as given (PyTorch's: pass "model." for "model.weight"). A module
        that overrides `get_extra_state` adds its result under "<its prefix>_extra_state". As in
        PyTorch, a new dict (not a given `destination`) gets `_metadata`: each module's
        `{"version": module._version}` under its name, and each module's state_dict pre- and
        post-hooks run with its prefix (`register_state_dict_pre_hook`, `register_state_dict_post_hook`).
        """
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()  # type: ignore[attr-defined]
        save = _Save(keep_vars)
        destination = save.module(self, destination, prefix)
        save.flush()
        return destination

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(module, prefix, keep_vars)` before this module's entries are saved by
        `state_dict` (also when a parent's state_dict saves it, with its prefix there).

        Example:
            >>> handle = model.fc.register_state_dict_pre_hook(lambda m, prefix, keep_vars: print(prefix))
            >>> model.state_dict()  # prints "fc."
        """
        return add_hook(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(module, state_dict, prefix, local_metadata)` once this module and its
        submodules are in the state_dict; the hook may change `state_dict` (and `local_metadata`,
        this module's `_metadata` entry) in place, and must return None.

        Example:
            >>> def drop_bias(module, state_dict, prefix, local_metadata):
            ...     state_dict.pop(prefix + "bias")
            >>> handle = model.fc.register_state_dict_post_hook(drop_bias)
        """
        try:  # PyTorch marks the function: `_register_state_dict_hook` then refuses it
            hook._from_public_api = True  # type: ignore[attr-defined]
        except AttributeError:  # (a bound method: the flag below is enough)
            pass
        return add_hook(self._state_dict_hooks, (hook, True))

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """PyTorch's private `state_dict` post-hook: `hook(module, state_dict, prefix,
        local_metadata)` may also return a new dict, which `state_dict` returns when it was
        called on this module (a parent keeps its own dict, as in PyTorch)."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError(
                "Cannot register the same function as the state dict post hook that was previously registered via "
                "register_state_dict_post_hook"
            )
        return add_hook(self._state_dict_hooks, (hook, False))

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)` before this module's entries are loaded by
        `load_state_dict` (also through a parent, with this module's prefix).

        `state_dict` is this module's own dict (a copy: the caller's mapping never changes):
        the hook may rename, add or drop entries in place, and its submodules then load from it.
        `local_metadata` is this module's entry in the caller's `_metadata` (else empty);
        `strict` is always True, as in PyTorch (the lists are filled either way);
        `missing_keys`, `unexpected_keys` and `error_msgs` are the load's lists, which the hook
        may extend (an error message fails the load).

        Example:
            >>> def rename(module, sd, prefix, *args):
            ...     if prefix + "w" in sd:
            ...         sd[prefix + "weight"] = sd.pop(prefix + "w")
            >>> handle = model.fc.register_load_state_dict_pre_hook(rename)
        """
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook: Callable, with_module: bool = False) -> RemovableHandle:
        """PyTorch's private load pre-hook: `register_load_state_dict_pre_hook`'s, called
        without the module argument unless `with_module`."""
        return add_hook(self._load_state_dict_pre_hooks, (hook, with_module))

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(module, incompatible_keys)` once this module and its submodules are loaded.

        `incompatible_keys` holds the load's `missing_keys` and `unexpected_keys` lists as they
        are then (those of the modules loaded so far, in PyTorch's order); the hook may change
        them in place, which decides a strict load's error (clear them and it loads). It must
        return None. A load that fails after it ran still changes nothing in the model.

        Example:
            >>> def ignore_head(module, keys):
            ...     keys.missing_keys[:] = [k for k in keys.missing_keys if not k.startswith("head.")]
            >>> handle = model.register_load_state_dict_post_hook(ignore_head)
        """
        return add_hook(self._load_state_dict_post_hooks, hook)

    def get_extra_state(self) -> Any:
        """Override (with `set_extra_state`) to save state that is not a tensor under
        "<prefix>_extra_state" in the state_dict, as PyTorch."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called: override it to "
            "return the module's extra state"
        )

    def set_extra_state(self, state: Any) -> None:
        """Override to restore what `get_extra_state` returned (called by `load_state_dict`)."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called: override it to "
            "restore the module's extra state"
        )

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        """PyTorch's: this module's own parameters, persistent buffers and extra state (not its
        submodules') into `destination`. A subclass may override it, calling this, to save
        more entries or other names; `state_dict` calls the override."""
        for name, t in _own_tensors(self).items():
            destination[prefix + name] = t if keep_vars else t.data
        if type(self).get_extra_state is not _StateDict.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY] = self.get_extra_state()

    def _load_from_state_dict(
        self,
        state_dict: dict[str, Any],
        prefix: str,
        local_metadata: dict,
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        """PyTorch's: load this module's own parameters and persistent buffers from
        `state_dict` (its entries, keys with the full prefix), adding to `missing_keys` and
        `error_msgs`. A subclass may override it to upgrade old checkpoints: change
        `state_dict` in place (rename, convert), then call this. `load_state_dict` calls the
        override; the load stays atomic."""
        if not _ACTIVE_LOADS:
            raise RuntimeError("_load_from_state_dict runs inside load_state_dict: call module.load_state_dict(...)")
        _ACTIVE_LOADS[-1].own(self, state_dict, prefix, missing_keys, error_msgs)

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> IncompatibleKeys:
        """Copy values from `state_dict` into this module's parameters and persistent buffers.

        Every value is checked: a shape mismatch raises naming the key, the expected and the
        actual shape (a value of another dtype is cast to the module's, as PyTorch's; with
        `assign=True` the state_dict's tensors themselves become the module's, Parameters
        kept as the same objects); with `strict`, missing and unexpected keys are listed in the
        error. A failed load changes nothing in the model. Returns `(missing_keys,
        unexpected_keys)`. Values may be Tensors or NumPy arrays; they are realized, so a
        loaded model's training step has the same structure as any other. A parameter sharded
        on a DeviceMesh keeps its layout (the loaded value is split to it), and an unsharded
        one stays unsharded whatever layout the loaded value had. Lazy submodules (LazyLinear,
        ...) are first materialized to the loaded shapes under their prefix (their
        `_materialize_from_state_dict`); a failed load undoes that too.

        As PyTorch's, the load walks the submodules with their prefixes: each runs its load
        pre-hooks on its own copy of the entries (`register_load_state_dict_pre_hook`: a hook
        may rename keys), then loads, then, after its submodules, runs its load post-hooks
        (`register_load_state_dict_post_hook`: a hook may change the missing and unexpected
        keys, deciding a strict load's error). The caller's mapping is never changed. Extra
        state (`set_extra_state`) is set last, once the load has succeeded, and a failed load
        puts every loaded tensor back, also when it fails after post-hooks ran (what the hooks
        themselves changed is theirs to undo).
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"load_state_dict: expected a mapping of name -> tensor, got {type(state_dict).__name__}")
        load = _Load(state_dict, assign, _StateDict.set_extra_state)
        try:
            load.module(self, load.root_dict(state_dict), "")
            problems = list(load.error_msgs)
            if strict and load.missing:
                problems.append(f"missing key(s): {', '.join(load.missing)}")
            if strict and load.unexpected:
                problems.append(f"unexpected key(s): {', '.join(load.unexpected)}")
            if problems:
                raise RuntimeError(
                    f"Error(s) in loading state_dict for {type(self).__name__}:\n  " + "\n  ".join(problems)
                )
            load.flush()
        except BaseException:
            for step in reversed(load.undo):  # put every loaded value and materialized lazy tensor back
                step()
            raise
        for module, state in load.extras:
            module.set_extra_state(state)
        return IncompatibleKeys(load.missing, load.unexpected)

    def save_weights(self, path: Any, metadata: dict | None = None) -> None:
        """Write the state_dict as safetensors (atomically: a crash never loses the old file)."""
        serialization.save(self, path, metadata=metadata)

    def load_weights(self, path: Any, strict: bool = True) -> IncompatibleKeys:
        """Load a safetensors file (ours or PyTorch's); a bad file leaves the module unchanged."""
        return serialization.load_into(self, path, strict=strict)


class _Save:
    """One `Module.state_dict` call: PyTorch's recursive `state_dict`. Each module records its
    `_metadata` entry (`{"version": module._version}`) when the destination has `_metadata`, runs
    its pre-hooks `hook(module, prefix, keep_vars)`, saves its parameters, persistent buffers and
    extra state, then its children's (prefix "<prefix><name>."), then runs its post-hooks
    `hook(module, destination, prefix, local_metadata)`. Sharded values are assembled on the host
    in one batch at the end, or before a post-hook runs, so hooks see the values returned.

    Args:
        keep_vars: store the tensors themselves instead of their `.data`.
    """

    def __init__(self, keep_vars: bool) -> None:
        self.keep_vars = keep_vars
        self.pending: list[tuple[Any, str]] = []  # (destination, key) of sharded values to assemble
        self.memo: dict[int, Tensor] = {}  # one host copy per storage, across batches (tied weights)
        self.assembled: list[Tensor] = []  # the values assembled: kept, so the storage ids in memo stay theirs

    def module(self, module: Module, destination: Any, prefix: str) -> Any:
        """Save `module` and its descendants into `destination`; returns what `module.state_dict`
        returns (a private post-hook may replace the dict)."""
        local_metadata = {"version": module._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in module._state_dict_pre_hooks.values():
            hook(module, prefix, self.keep_vars)
        before = len(destination)
        module._save_to_state_dict(destination, prefix, self.keep_vars)  # (a subclass may override it)
        if not self.keep_vars:  # the sharded values among the entries it added (read from the end)
            added = list(itertools.islice(reversed(destination.items()), len(destination) - before))
            sharded = [k for k, v in reversed(added) if isinstance(v, Tensor) and v.sharding is not None]
            self.pending += [(destination, k) for k in sharded]
        for name, child in module._modules.items():
            if child is not None:
                self.module(child, destination, f"{prefix}{name}.")
        if module._state_dict_hooks:
            self.flush()
            for hook, public in module._state_dict_hooks.values():
                result = hook(module, destination, prefix, local_metadata)
                if public or getattr(hook, "_from_public_api", False):
                    if result is not None:
                        raise RuntimeError("state_dict post-hook must return None")
                elif result is not None:  # the private API's new dict: what this call returns
                    destination = result
        return destination

    def flush(self) -> None:
        """Replace the sharded values saved so far with ordinary tensors holding their global values."""
        if self.pending:
            values = [d[k] for d, k in self.pending]
            self.assembled += values
            full = _assembled(values, self.memo)
            for (d, k), value in zip(self.pending, full, strict=True):
                d[k] = value
            self.pending.clear()


class _Load:
    """One `Module.load_state_dict` call: PyTorch's recursive `load`, made atomic.

    Each module gets its own dict (the root a shallow copy of the caller's, keeping its
    `_metadata`; a child the entries of its parent's dict under "<prefix><name>.", taken after
    the parent's hooks ran) and its `local_metadata` (its `_metadata` entry, else empty). In
    order: its `_state_dict_defaults` (BatchNorm's `_load_from_state_dict` upgrade), its lazy
    materialization (PyTorch's `_lazy_load_hook`, registered first), its load pre-hooks (which
    may change its dict), then its own tensors are checked, its extra state noted, its children
    loaded, and its load post-hooks run with the shared missing/unexpected lists. Checked values
    are loaded in one batch (`flush`) at the end, or before any hook runs, so a hook sees the
    values PyTorch would have copied by then. Every change is recorded in `undo`, so the
    caller puts the model back if the load fails.

    Args:
        state_dict: the caller's mapping (its `_metadata` is read).
        assign: `load_state_dict`'s; adds `assign_to_params_buffers` to every `local_metadata`.
        base_set_extra_state: `Module.set_extra_state`, which a module must override to load extra state.
    """

    def __init__(self, state_dict: Mapping[str, Any], assign: bool, base_set_extra_state: Callable) -> None:
        self.metadata = getattr(state_dict, "_metadata", None)
        self.assign = assign
        self.base_set_extra_state = base_set_extra_state
        self.missing: list[str] = []
        self.unexpected: list[str] = []
        self.error_msgs: list[str] = []
        self.staged: list[tuple[Tensor, Tensor]] = []  # (target, checked value) not loaded yet
        self.assigned: list[tuple[Module, str, Tensor, Tensor]] = []  # assign=True: (module, name, target, value)
        self.extras: list[tuple[Module, Any]] = []  # set once the load has succeeded
        self.undo: list[Callable[[], None]] = []

    def root_dict(self, state_dict: Mapping[str, Any]) -> OrderedDict:
        """The root module's dict: a shallow copy, so hooks never change the caller's mapping."""
        copied = OrderedDict(state_dict)
        if self.metadata is not None:
            copied._metadata = self.metadata  # type: ignore[attr-defined]
        return copied

    def module(self, module: Module, local: dict, prefix: str) -> None:
        """Load `module` and its descendants from `local` (keys with the full prefix)."""
        local_metadata = {} if self.metadata is None else self.metadata.get(prefix[:-1], {})
        if self.assign:  # (a new dict: PyTorch writes into the caller's _metadata)
            local_metadata = {**local_metadata, "assign_to_params_buffers": True}
        defaults = getattr(type(module), "_state_dict_defaults", None)
        if defaults is not None:
            local.update(defaults(module, prefix, local, local_metadata))
        materialize = getattr(type(module), "_materialize_from_state_dict", None)
        if materialize is not None:
            steps, found = materialize(module, prefix, local)
            self.undo += steps
            self.error_msgs += found
        if module._load_state_dict_pre_hooks:
            self.flush()
        for hook, with_module in module._load_state_dict_pre_hooks.values():
            args = (local, prefix, local_metadata, True, self.missing, self.unexpected, self.error_msgs)
            if with_module:
                hook(module, *args)
            else:
                hook(*args)
        if type(module)._load_from_state_dict is not _StateDict._load_from_state_dict:  # a subclass's (PyTorch's)
            _ACTIVE_LOADS.append(self)
            try:
                args = (local, prefix, local_metadata, True, self.missing, self.unexpected, self.error_msgs)
                module._load_from_state_dict(*args)
            finally:
                _ACTIVE_LOADS.pop()
        else:
            self.own(module, local, prefix, self.missing, self.error_msgs)
        own = _own_tensors(module)
        extra_key = prefix + _EXTRA_STATE_KEY
        if type(module).set_extra_state is not self.base_set_extra_state:
            if extra_key in local:  # set once every tensor has loaded
                self.extras.append((module, local[extra_key]))
            else:
                self.missing.append(extra_key)
        elif extra_key in local:
            self.unexpected.append(extra_key)
        children: dict[str, dict] = {}
        modules, unexpected, n = module._modules, self.unexpected, len(prefix)
        for key, value in local.items():  # PyTorch's strict check, and each child's entries
            if n and not key.startswith(prefix):
                continue
            head, dot, _ = key[n:].partition(".")
            if not dot:
                if head not in own and key != extra_key:
                    unexpected.append(key)
            elif head not in modules:
                unexpected.append(key)
            elif (entries := children.get(head)) is not None:
                entries[key] = value
            else:
                children[head] = {key: value}
        for name, child in module._modules.items():
            if child is not None:
                self.module(child, children.get(name, {}), f"{prefix}{name}.")
        if module._load_state_dict_post_hooks:
            self.flush()
            incompatible = IncompatibleKeys(self.missing, self.unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not expected to return "
                        "new values, if incompatible_keys need to be modified, it should be done inplace."
                    )

    def own(self, module: Module, local: dict, prefix: str, missing: list[str], errors: list[str]) -> None:
        """Check and stage `module`'s own tensors from `local` (`_load_from_state_dict`)."""
        for name, target in _own_tensors(module).items():
            key = prefix + name
            if key not in local:
                missing.append(key)
                continue
            value = _checked_value(key, target, local[key], self.assign, errors)
            if value is not None and self.assign:
                self.assigned.append((module, name, target, value))
            elif value is not None:
                self.staged.append((target, value if value.dtype == target.dtype else value.to(target.dtype)))

    def flush(self) -> None:
        """Load the values checked so far (realized, in their target's layout and device),
        recording how to undo it: in one batch at the end, or before a hook runs, so that it
        sees what PyTorch would have loaded by then."""
        self._assign()
        staged = self.staged
        if not staged:
            return
        self.staged = []
        values = [v for _, v in staged]
        if pending := [v for v in values if not v.is_realized]:
            nb.evaluate(*pending)
        values = [_in_layout_of(target, value) for (target, _), value in zip(staged, values, strict=True)]
        if pending := [v for v in values if not v.is_realized]:
            nb.evaluate(*pending)
        for (target, _), value in zip(staged, values, strict=True):
            self.undo.append(_restorer(target))
            target.data = value.to(target.device)  # a model on an accelerator stays there, as PyTorch's copy_

    def _assign(self) -> None:
        """assign=True: the state_dict's tensors become the module's own (PyTorch's `assign`):
        a Parameter stays that very object (two modules loaded from one share it); another
        tensor is made a Parameter that requires grad as the one it replaces."""
        assigned, self.assigned = self.assigned, []
        if pending := [v for *_, v in assigned if not v.is_realized]:
            nb.evaluate(*pending)
        for module, name, target, value in assigned:
            if name in module._parameters and not isinstance(value, Parameter):
                value = Parameter(value, requires_grad=target.requires_grad)
            elif isinstance(value, Parameter):
                value.requires_grad_(target.requires_grad)
            setattr(module, name, value)  # (through Module.__setattr__: compiled calls see the swap)
            self.undo.append(lambda m=module, n=name, t=target: setattr(m, n, t))


_ACTIVE_LOADS: list[_Load] = []  # the load a `_load_from_state_dict` override's super() call belongs to


def _own_tensors(module: Module) -> dict[str, Tensor]:
    """A module's parameters and persistent buffers by name (what it saves and loads itself)."""
    own = {name: t for name, t in module._parameters.items() if t is not None}
    skip = module._non_persistent_buffers
    own.update((name, t) for name, t in module._buffers.items() if t is not None and name not in skip)
    return own


def _restorer(target: Tensor) -> Callable[[], None]:
    """An undo step giving `target` back the value it holds now."""
    impl = target._impl
    return lambda: target._install(impl)


def _checked_value(key: str, target: Tensor, value: Any, assign: bool, problems: list[str]) -> Tensor | None:
    """`value` as a nabla Tensor that can load into `target`, or None with the reason in `problems`
    (or nothing to load: both are lazy placeholders, as PyTorch)."""
    if is_lazy(target) or _is_placeholder(value):
        if not (is_lazy(target) and _is_placeholder(value)):
            which = "the module's tensor" if is_lazy(target) else "the state_dict's value"
            problems.append(f"{key}: {which} is an uninitialized placeholder (run a dry run first)")
        return None
    if not isinstance(value, Tensor | np.ndarray | np.generic) and hasattr(value, "__array__"):
        value = serialization.foreign_array(value)  # another library's tensor (a torch state_dict)
    if isinstance(value, np.ndarray | np.generic):
        value = nb.Tensor.from_numpy(np.array(value, copy=True))  # the caller may reuse the array
    if not isinstance(value, Tensor):
        kind = f"{type(value).__module__}.{type(value).__qualname__}"
        problems.append(f"{key}: expected a nabla Tensor or a NumPy array, got {kind}")
    elif target.ndim == 0 and tuple(value.shape) == (1,):  # torch loads an old 1-element save
        return nb.reshape(value, ())
    elif tuple(value.shape) != tuple(target.shape):
        problems.append(f"{key}: shape {tuple(value.shape)} in the state_dict, the module has {target.shape}")
    else:  # (another dtype is cast to the module's, as PyTorch's copy_; assign keeps it)
        return value
    return None


def _is_placeholder(value: Any) -> bool:
    """Whether a state_dict value is an uninitialized lazy tensor: ours, or PyTorch's (a lazy
    torch module's state_dict), recognized by its mixin's name so torch need not be imported."""
    return is_lazy(value) or any(c.__name__ == "UninitializedTensorMixin" for c in type(value).__mro__)


def _assembled(values: list[Tensor], memo: dict[int, Tensor] | None = None) -> list[Tensor]:
    """Sharded values as ordinary tensors holding their global values, assembled on the host
    (no model to build). Values on one storage (tied parameters) give one tensor, also across
    calls sharing `memo`."""
    nb.evaluate(*(v for v in values if not v.is_realized))
    memo = {} if memo is None else memo
    out = []
    for v in values:
        key = id(v._impl.data)
        if key not in memo:
            if v.dtype == _dt.bfloat16:  # NumPy has no bfloat16: gather it with an op
                memo[key] = nb.unshard(v)
            else:
                memo[key] = Tensor.from_numpy(v.numpy())
        out.append(memo[key])
    nb.evaluate(*(v for v in out if not v.is_realized))
    return out


def _in_layout_of(target: Tensor, value: Tensor) -> Tensor:
    """`value` in `target`'s layout: split to a sharded target's spec, gathered for an unsharded one."""
    spec = target.sharding
    if spec is None:
        return value if value.sharding is None else _assembled([value])[0]
    return nb.shard(value.data, spec.mesh, spec.without_partial())

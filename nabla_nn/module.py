"""Module: the base class of every layer and model (PyTorch's `torch.nn.Module`).

A module owns parameters, buffers and submodules, registered by attribute assignment, and
names them the way PyTorch does ("layers.0.weight"), so state_dicts move between the two.
Modules are pytrees (their leaves are parameters and buffers), so a model passes through
`nabla.grad`, `nabla.vmap` and `nabla.compile` as an argument.
"""

from __future__ import annotations

import itertools
import sys
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import nabla as nb
from nabla import Tensor
from nabla.core.common.hooks import RemovableHandle, add_hook
from nabla.core.graph.tracing import TRACE, note_guard

from .backward_hooks import _BackwardHookCall
from .module_hooks import GLOBAL_BACKWARD_HOOKS, GLOBAL_FORWARD_HOOKS, GLOBAL_FORWARD_PRE_HOOKS
from .module_modes import _Modes
from .module_pytree import (
    _compiled_forward,
    _flatten_module,
    _forward_of,
    _module_token,
    _Store,
    _Tree,
    _unflatten_module,
)
from .module_state import IncompatibleKeys, _StateDict
from .parameter import Buffer, Parameter

__all__ = ["Module", "RemovableHandle", "IncompatibleKeys"]

_STATE_DICT_HOOK_STORES = (
    "_state_dict_pre_hooks",
    "_state_dict_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)


class Module(_Modes, _StateDict):
    """Base class for all layers and models.

    Subclass it, create parameters and submodules in `__init__`, and write `forward`:

    Example:
        >>> class MLP(Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc1 = nn.Linear(4, 8)
        ...         self.fc2 = nn.Linear(8, 2)
        ...     def forward(self, x):
        ...         return self.fc2(nb.relu(self.fc1(x)))
        >>> [name for name, _ in MLP().named_parameters()]
        ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']
    """

    training: bool
    _version: int = 1  # PyTorch's: saved in the state_dict's `_metadata`, read back by `_state_dict_defaults`
    _compiles_in_place = True  # `nabla.compile(model)` calls `model.compile()` and returns the model

    @property
    def _non_persistent_buffers_set(self) -> set[str]:
        """torch's private name for the non-persistent buffers' names (read by HF loaders)."""
        return self._non_persistent_buffers

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", _Store())
        object.__setattr__(self, "_buffers", _Store())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", _Store())
        # (forward and backward hooks are traced into a compiled call: their stores count changes)
        object.__setattr__(self, "_forward_hooks", _Store())
        object.__setattr__(self, "_forward_pre_hooks", _Store())
        object.__setattr__(self, "_backward_hooks", _Store())  # id -> ("full" | "pre", hook)
        # state_dict hooks, as PyTorch's (a flag beside a hook where it needs one):
        object.__setattr__(self, "_state_dict_pre_hooks", OrderedDict())  # id -> hook
        object.__setattr__(self, "_state_dict_hooks", OrderedDict())  # id -> (hook, public: must return None)
        object.__setattr__(self, "_load_state_dict_pre_hooks", OrderedDict())  # id -> (hook, with_module)
        object.__setattr__(self, "_load_state_dict_post_hooks", OrderedDict())  # id -> hook
        object.__setattr__(self, "_compiled", None)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    _trace_clone = False  # a structural copy `nabla.compile` traces with (see `_unflatten_module`)

    # -- calling ------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Runs once per layer per step: without hooks, compile or a trace, nothing but the forward.
        # (A layer's error names its path from this method's frames: see `_call_path`.)
        if (
            self._forward_pre_hooks
            or self._forward_hooks
            or self._backward_hooks
            or self._compiled is not None
            or TRACE.state is not None
            or GLOBAL_FORWARD_PRE_HOOKS
            or GLOBAL_FORWARD_HOOKS
            or GLOBAL_BACKWARD_HOOKS
        ):
            return self._call_with_extras(args, kwargs)
        return self.forward(*args, **kwargs)

    def _call_with_extras(self, args: tuple, kwargs: dict) -> Any:
        state = TRACE.state
        if state is None:
            return self._call_hooked(args, kwargs)
        # Traced by nabla.compile: the outermost module called guards its structure, so a later
        # `eval()` or a replaced parameter or layer traces again instead of running stale ops.
        if state.module_depth == 0 and not self._trace_clone:
            note_guard(self._trace_signature, f"{type(self).__name__}'s training mode, submodules or parameters")
        state.module_depth += 1
        try:
            return self._call_hooked(args, kwargs)
        finally:
            state.module_depth -= 1

    def _trace_signature(self) -> tuple:
        """What a trace through this module depends on besides tensor values: every submodule,
        its training flag and hooks, and which tensor object each parameter and buffer name holds."""
        named, modes = self._tree()
        return modes, tuple((n, id(t)) for n, t in named)

    def _call_hooked(self, args: tuple, kwargs: dict) -> Any:
        # Every module's hooks (module_hooks.py) first, then this module's, as in PyTorch.
        forward_hooks = (*GLOBAL_FORWARD_HOOKS.values(), *self._forward_hooks.values())
        out, ran = None, 0  # `ran`: forward hooks started, so an error runs only the always_call ones after them
        try:
            for hook, with_kwargs in (*GLOBAL_FORWARD_PRE_HOOKS.values(), *self._forward_pre_hooks.values()):
                if with_kwargs:
                    result = hook(self, args, kwargs)
                    if result is not None:
                        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict)):
                            raise RuntimeError(
                                "a forward pre-hook registered with with_kwargs=True must return None or a tuple "
                                f"(args, kwargs), got {type(result).__name__}"
                            )
                        args, kwargs = result
                        args = args if isinstance(args, tuple) else (args,)
                    continue
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
            hooked = self._backward_hooks or GLOBAL_BACKWARD_HOOKS
            backward = _BackwardHookCall(self) if hooked and nb.is_grad_enabled() else None
            if backward is not None:
                args = backward.wrap_inputs(args)
            # Compiled: with parameters (or inputs) that require grad, the forward joins the lazy
            # step as one differentiable op; otherwise it runs its cached model.
            compiled = self._compiled
            out = self.forward(*args, **kwargs) if compiled is None else compiled(self, *args, **kwargs)
            for hook, with_kwargs, _ in forward_hooks:
                ran += 1
                result = hook(self, args, kwargs, out) if with_kwargs else hook(self, args, out)
                if result is not None:
                    out = result
        except Exception:
            for hook, with_kwargs, always_call in forward_hooks[ran:]:
                if always_call:  # PyTorch: runs on the way out of a failed call; its own error only warns
                    try:
                        result = hook(self, args, kwargs, out) if with_kwargs else hook(self, args, out)
                        out = out if result is None else result
                    except Exception as e:
                        warnings.warn(
                            "module forward hook with ``always_call=True`` raised an exception that was silenced "
                            f"as another error was raised in forward: {e}",
                            stacklevel=2,
                        )
            raise
        return out if backward is None else backward.wrap_outputs(out)

    def register_forward_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False, always_call: bool = False
    ) -> RemovableHandle:
        """Call `hook(module, args, output)` after every forward; a non-None result replaces the output.

        Args:
            hook: the function; with `with_kwargs`, `hook(module, args, kwargs, output)`.
            prepend: run it before the hooks already registered (else after them).
            with_kwargs: pass the forward's keyword arguments too.
            always_call: also run it when the call raises (with the output so far, None if the
                forward failed); the error is then re-raised.

        Example:
            >>> handle = model.fc.register_forward_hook(lambda m, args, out: print(out.shape))
            >>> handle.remove()
        """
        return add_hook(self._forward_hooks, (hook, with_kwargs, always_call), prepend=prepend)

    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Call `hook(module, args)` before every forward; a non-None result replaces the args.

        Args:
            hook: the function; with `with_kwargs`, `hook(module, args, kwargs)` returning None or
                a new `(args, kwargs)` pair.
            prepend: run it before the hooks already registered (else after them).
            with_kwargs: pass (and let the hook replace) the forward's keyword arguments too.
        """
        return add_hook(self._forward_pre_hooks, (hook, with_kwargs), prepend=prepend)

    def register_full_backward_hook(self, hook: Callable, *, prepend: bool = False) -> RemovableHandle:
        """Call `hook(module, grad_input, grad_output)` when the gradients of this module's
        inputs have been computed; a non-None result (a tuple like grad_input) replaces them.

        As in PyTorch, grad_input and grad_output hold one entry per positional argument and
        per output tensor (None for non-tensors and tensors without gradient), keyword
        arguments are ignored, and a module none of whose inputs needs a gradient calls the
        hook with grad_input of Nones once grad_output is known. A backward through a module
        with backward hooks runs its VJP rules each time (it is not replayed).

        Example:
            >>> handle = model.fc.register_full_backward_hook(lambda m, gi, go: print(go[0].shape))
        """
        return add_hook(self._backward_hooks, ("full", hook), prepend=prepend)

    def register_full_backward_pre_hook(self, hook: Callable, *, prepend: bool = False) -> RemovableHandle:
        """Call `hook(module, grad_output)` when the gradients of this module's outputs have been
        computed, before they flow into the module; a non-None result (a tuple like
        grad_output) replaces them."""
        return add_hook(self._backward_hooks, ("pre", hook), prepend=prepend)

    def compile(self, **kwargs: Any) -> None:
        """Compile this module's forward for hot paths (`nabla.compile` keyword arguments apply).

        The forward is traced once per input signature. Calls without autodiff (under
        `nb.no_grad()`, or with frozen parameters) then run one cached MAX model. Calls that
        record gradients add the whole forward to the lazy trace as one op, and `backward()`
        adds its gradient as one more, so a training step (forward, backward, optimizer
        update) stays one cached model while Python records a handful of ops instead of
        hundreds. Recompiles and retraces are explained in `self.compile_stats`.

        Args:
            **kwargs: `nabla.compile`'s; argument numbers in `dynamic_dims` and
                `static_argnums` count `forward`'s arguments (`{0: 0}`: dim 0 of the input).

        Example:
            >>> model.compile(dynamic_dims={0: 0})  # one model for every batch size
        """
        # Argument numbers count forward's arguments; the compiled function takes the module first.
        dims = kwargs.get("dynamic_dims")
        if isinstance(dims, dict):
            kwargs["dynamic_dims"] = {k + 1 if type(k) is int else k: v for k, v in dims.items()}
        static = kwargs.get("static_argnums", ())
        kwargs["static_argnums"] = static + 1 if type(static) is int else tuple(i + 1 for i in static)
        object.__setattr__(self, "_compiled", nb.compile(_forward_of(self), **kwargs))

    @property
    def compile_stats(self) -> Any:
        """The compiled forward's `CompileStats` (hits, misses, recompile_reasons), or None."""
        return None if self._compiled is None else self._compiled.stats

    def input_error(self, got: tuple, expected: str) -> ValueError:
        """An error naming this layer's path in the model being called, e.g.
        `layers.1 (Linear in_features=512) got input (32, 256), expected (..., 512)`."""
        return ValueError(f"{self._where()} got input {_shape_str(got)}, expected {expected}")

    def input_type_error(self, got: Any) -> TypeError:
        """`input_error` for an input that is not a Tensor (a list, a NumPy array), e.g.
        `layers.0 (Linear in_features=4 ...): input must be a Tensor, got list`."""
        return TypeError(f"{self._where()}: input must be a Tensor, got {type(got).__name__}")

    def _where(self) -> str:
        """This layer's path in the model being called and its settings: `layers.1 (Linear ...)`."""
        label = f"{type(self).__name__} {self.extra_repr().replace(', ', ' ')}".strip()
        path = _call_path(self)
        return f"{path} ({label})" if path else f"({label})"

    # -- registration -------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep=params)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' (Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep=self._modules)
            self._modules[name] = value
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' (Module or None)")
            self._modules[name] = None
        elif isinstance(value, Buffer):  # `self.x = nn.Buffer(t)` registers a buffer (PyTorch >= 2.5)
            if params is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self.register_buffer(name, value, value.persistent)
        elif params is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None expected)")
            self._buffers[name] = value
        else:  # (a plain attribute is part of a compiled call's structure too: `_attributes`)
            _Tree.version += 1
            object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: dict | None = None) -> None:
        """Drop `name` from every store but `keep`, the one it is being assigned in: there a
        new value takes the old one's place, so state_dict keys keep their order (PyTorch's)."""
        self.__dict__.pop(name, None)
        for d in (self._parameters, self._buffers, self._modules):
            if d is not keep:
                d.pop(name, None)
        self._non_persistent_buffers.discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers.discard(name)
                return
        _Tree.version += 1  # (see __setattr__)
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def _check_name(self, name: Any, what: str, store: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string, got {type(name).__name__}")
        if not name or "." in name:
            raise KeyError(f'{what} name can\'t be empty or contain ".", got {name!r}')
        # As PyTorch: a name taken by another kind of member (or a plain attribute) is not replaced.
        if name not in store and hasattr(self, name):
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder) under `name`."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' (Parameter or None)")
        self._forget(name, keep=self._parameters)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state that is not trained (BatchNorm's running_mean). Persistent
        buffers are part of the state_dict."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (Tensor or None)")
        if isinstance(tensor, Parameter):
            raise TypeError(f"buffer '{name}' cannot be a Parameter; use register_parameter")
        self._forget(name, keep=self._buffers)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under `name` (`self.name = module` does the same)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module", self._modules)
        self._forget(name, keep=self._modules)
        self._modules[name] = module

    register_module = add_module

    # -- traversal ----------------------------------------------------------------------------
    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """(name, module) for this module and every descendant, depth first; `memo` (a set of
        modules, as PyTorch's) holds modules to skip and collects those visited."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def _named_members(
        self, store: str, prefix: str, recurse: bool, remove_duplicate: bool
    ) -> Iterator[tuple[str, Tensor]]:
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        seen: set[int] = set()
        for mod_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """(name, parameter) pairs with PyTorch's dotted names; a shared parameter appears once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path ("layers.0"); "" is this module."""
        module = self
        for part in target.split(".") if target else []:
            child = module._modules.get(part)
            if not isinstance(child, Module):  # PyTorch's wording, and the whole path looked up
                what = f"`{part}` is not an nn.Module" if hasattr(module, part) else f"has no attribute `{part}`"
                owner = "" if what[0] == "`" else f"{module._get_name()} "
                raise AttributeError(f"{owner}{what} (looking up '{target}')")
            module = child
        return module

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put `module` at a dotted path ("layers.0"), replacing a submodule there or (unless
        `strict`) adding one under an existing parent."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path ("layers.0.weight"), with PyTorch's errors."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        param = getattr(module, name)
        if not isinstance(param, Parameter):  # a buffer, a None placeholder, a plain attribute
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path ("bn.running_mean"), with PyTorch's errors."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return module._buffers[name]

    # -- modes and bulk changes: module_modes.py's _Modes (train, eval, apply, to, zero_grad, ...)
    # -- state_dict: module_state.py's _StateDict (state_dict, load_state_dict, their hooks, ...)

    # -- printing -----------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses in `repr` (override in layers)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = [line for line in self.extra_repr().split("\n") if line]
        for name, module in self._modules.items():
            child = repr(module).replace("\n", "\n  ")
            lines.append(f"({name}): {child}")
        if not self._modules:
            return f"{self._get_name()}({', '.join(lines)})" if len(lines) <= 1 else self._block(lines)
        return self._block(lines)

    def _block(self, lines: list[str]) -> str:
        return f"{self._get_name()}(\n  " + "\n  ".join(lines) + "\n)"

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_flat", None)  # a compiled call's cached flatten (module_pytree.py)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name in _STATE_DICT_HOOK_STORES:  # a state from before these stores existed (as PyTorch's __setstate__)
            if name not in self.__dict__:
                self.__dict__[name] = OrderedDict()
        for name in ("_parameters", "_buffers", "_modules", "_forward_hooks", "_forward_pre_hooks", "_backward_hooks"):
            # (a state pickled with plain dicts)
            if type(self.__dict__.get(name)) is not _Store:
                self.__dict__[name] = _Store(self.__dict__.get(name, ()))


def _shape_str(shape: tuple) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _modules_being_called() -> list[Module]:
    """The modules whose `__call__` is running in this thread, outermost first: read from the
    Python stack when an error needs them, so calling a module keeps no record. A compiled
    module's trace calls its (cloned) self through `_compiled_forward`: those frames count too,
    so an error under `Module.compile()` names the same path as eager."""
    call, compiled = Module.__call__.__code__, _compiled_forward.__code__
    found = []
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is call or frame.f_code is compiled:  # (identity: equal code objects may differ)
            found.append(frame.f_locals["self"])
        frame = frame.f_back
    return found[::-1]


def _call_path(module: Module) -> str:
    """The dotted name of `module` under the outermost module being called ("" at the top)."""
    stack = _modules_being_called()
    if module not in stack:
        return ""
    chain = stack[: stack.index(module) + 1]
    parts = []
    for parent, child in itertools.pairwise(chain):
        # Containers a parent iterates without calling (ModuleList) sit between the two.
        name = next((n for n, m in parent.named_modules(remove_duplicate=False) if n and m is child), None)
        if name is None:  # called through a plain attribute or a closure: no registered name
            continue
        parts.append(name)
    return ".".join(parts)


nb.register_pytree_node(
    Module, _flatten_module, _unflatten_module, lambda d: [f".{n}" for n in d.names], token=_module_token
)

"""Module's modes and bulk changes (`_Modes`, a base class of `Module`): train / eval, apply,
requires_grad_, zero_grad, and to(dtype, device) with its spellings (float, half, cuda, ...),
over every parameter and buffer of a module tree (`_tree`: the one walk a compiled call's
flatten and guard read too)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.common import dtypes as _dt
from nabla.core.common.devices import names_device
from nabla.transforms.captures import below, code_reads, user_object

from .module_hooks import GLOBAL_BACKWARD_HOOKS, GLOBAL_FORWARD_HOOKS, GLOBAL_FORWARD_PRE_HOOKS
from .module_pytree import _TensorId, _Tree, container_attribute

if TYPE_CHECKING:  # type hints only: module.py imports this file
    from .module import Module


class _Modes:
    """`Module`'s methods that change a whole module tree: its training mode, its parameters'
    `requires_grad` and gradients, their dtype and device."""

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call `fn` on every submodule (children first) and on self; returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def train(self, mode: bool = True) -> Module:
        """Set training mode (Dropout drops, BatchNorm uses batch statistics); returns self."""
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean, got {mode!r}")
        object.__setattr__(self, "training", mode)
        _Tree.version += 1
        for m in self.children():  # through each child's train, so an override (a frozen BatchNorm) holds
            m.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's `.grad`: to None, or (`set_to_none=False`) zero each gradient
        tensor in place, as PyTorch's `grad.zero_()` (its storage becomes realized zeros)."""
        for p in self.parameters():
            if set_to_none:  # without reading .grad: a compiled step must not depend on it
                p.grad = None
            elif (g := p.grad) is not None:  # zeros like the gradient (its dtype may differ from p's)
                g.data = Tensor.from_numpy(np.zeros(g.shape, _dt.to_numpy_dtype(g.dtype)), dtype=g.dtype)

    def to(self, dtype: Any = None, device: Any = None, non_blocking: bool = False) -> Module:
        """Move parameters and buffers to `device` and cast floating ones to `dtype`, in place
        (the same Parameter objects, so an optimizer made before still holds them). Either
        argument may come first, as in PyTorch, or a tensor gives both (`to(other)`);
        `non_blocking` is accepted (moves are always complete when this returns).

        Example:
            >>> model.to("gpu")
            >>> model.to(nb.bfloat16)
        """
        if isinstance(dtype, Tensor):  # torch's to(tensor): its dtype and device
            dtype, device = dtype.dtype, dtype.device
        _reject_meta(dtype, device)
        if names_device(dtype):
            dtype, device = device, dtype
        if device is not None:
            self._move(device)
        if dtype is None:
            return self
        dt = _dt.as_dtype(dtype)
        if not _dt.is_float(dt):
            raise TypeError(f"Module.to only accepts floating dtypes, got {dt.name}")
        tensors = [t for _, t in self._all_tensors() if _dt.is_float(t.dtype) and t.dtype != dt]
        grads = []
        for t in tensors:
            t.data = nb.cast(t.data, dt)
            if t.grad is not None:  # as PyTorch's _apply: a gradient follows its parameter's dtype
                t.grad = nb.cast(t.grad, dt)
                grads.append(t.grad)
        nb.evaluate(*tensors, *grads)
        return self

    def type(self, dst_type: Any) -> Module:
        """Cast every floating parameter and buffer to `dst_type` (PyTorch's `Module.type`)."""
        return self.to(dst_type)

    def float(self) -> Module:
        return self.to(nb.float32)

    def double(self) -> Module:
        return self.to(nb.float64)

    def half(self) -> Module:
        return self.to(nb.float16)

    def bfloat16(self) -> Module:
        return self.to(nb.bfloat16)

    def cpu(self) -> Module:
        return self.to(device="cpu")

    def cuda(self, device: Any = None) -> Module:
        """PyTorch's spelling of `to("gpu:N")` (accelerator 0 by default)."""
        return self.to(device="gpu" if device is None else device)

    def _move(self, device: Any) -> None:
        for _, t in self._all_tensors():
            moved = t.detach().to(device)
            if moved.device is not t.device:  # (a tensor already there is left as it is)
                t.data = moved
            if t.grad is not None:  # as PyTorch's _apply: a gradient follows its parameter
                t.grad = t.grad.to(device)

    def _all_tensors(self) -> list[tuple[str, Tensor]]:
        return self._tree()[0]

    def _tree(self) -> tuple[list[tuple[str, Tensor]], tuple]:
        """One walk for a compiled call's flatten: `[*named_parameters(), *named_buffers()]`
        and what else a trace through the tree depends on: the hooks on every module, then each
        module (by identity: a swapped layer traces again), its training flag, its hooks and its
        plain attributes (`_attributes`), in `modules()` order, without nested generators."""
        params: list[tuple[str, Tensor]] = []
        buffers: list[tuple[str, Tensor]] = []
        modes: list = [_hook_ids(GLOBAL_FORWARD_PRE_HOOKS, GLOBAL_FORWARD_HOOKS, GLOBAL_BACKWARD_HOOKS)]
        seen_modules: set[int] = set()
        seen_params: set[int] = set()
        seen_buffers: set[int] = set()
        stack = [("", self)]
        while stack:  # depth first, children in order: the order of named_modules()
            prefix, module = stack.pop()
            if id(module) in seen_modules:
                continue
            seen_modules.add(id(module))
            modes.append(
                (
                    module,
                    module.training,
                    _hook_ids(module._forward_pre_hooks, module._forward_hooks, module._backward_hooks),
                    _attributes(module),
                )
            )
            dot = f"{prefix}." if prefix else ""
            for out, seen, store in (
                (params, seen_params, module._parameters),
                (buffers, seen_buffers, module._buffers),
            ):
                for name, value in store.items():
                    if value is not None and id(value) not in seen:
                        seen.add(id(value))
                        out.append((dot + name, value))
            stack += [(dot + name, m) for name, m in reversed(module._modules.items()) if m is not None]
        return params + buffers, tuple(modes)


_PLAIN = (int, float, bool, str, type(None))
_INTERNAL = frozenset({"training", "_trace_clone"})  # (training: a mode of its own)


def _attributes(module: Module) -> tuple:
    """The plain attributes a trace may have read as constants (Dropout's `p`, a user's
    `self.scale` or `self.mode`): numbers, strings, None and tuples of them by value, tensors
    that are not parameters or buffers by identity, public lists, dicts and other tuples by
    content (`_ContainerKey`). A change traces again, as torch.compile's
    guards on module attributes."""
    out = []
    for name, value in module.__dict__.items():
        if name in _INTERNAL:
            continue
        kind = type(value)
        if kind in _PLAIN or (kind is tuple and all(type(v) in _PLAIN for v in value)):
            out.append((name, value))
        elif isinstance(value, Tensor):
            out.append((name, _TensorId(id(value))))
        elif not name.startswith("_") and name in (reads := _forward_reads(type(module))):
            if kind in (list, dict, tuple):
                out.append((name, container_attribute(value)))  # (read by forward: `self.scales`)
            elif user_object(value):  # `self.cfg.scale`: the attributes read below it
                out.append((name, container_attribute(value, below(reads, name))))
    return tuple(out)


_FORWARD_READS: dict[type, frozenset] = {}


def _forward_reads(cls: type) -> frozenset:
    """The attributes a module class's `forward` reads from `self` (its bytecode): a list it
    does not read (`self.history.append(loss)` outside forward) is not guarded."""
    found = _FORWARD_READS.get(cls)
    if found is None:
        code = getattr(getattr(cls, "forward", None), "__code__", None)
        if code is None:
            found = frozenset()
        else:
            reads = code_reads(code)
            found = frozenset(reads.attrs.get(reads.params[0], ())) if reads.params else frozenset()
        _FORWARD_READS[cls] = found
    return found


def _hook_ids(pre: dict, forward: dict, backward: dict) -> tuple | None:
    """Which hooks are registered (their handles' ids; None when there are none)."""
    return (tuple(pre), tuple(forward), tuple(backward)) if pre or forward or backward else None


def _reject_meta(*args: Any) -> None:
    """`Module.to("meta")` (torch's shape-only skeleton for functional_call) has no nabla
    equivalent: raise naming the alternative, a real copy of the module.

    Example:
        >>> base = copy.deepcopy(models[0])   # instead of copy.deepcopy(models[0]).to("meta")
    """
    if any(isinstance(a, str) and a.strip().lower() == "meta" for a in args):
        raise NotImplementedError(
            "Module.to: nabla has no 'meta' device (tensors without data). For a functional_call "
            "base, as in torch.func's ensembling recipe, use a real copy instead: "
            "base = copy.deepcopy(models[0]); functional_call replaces its parameters and buffers"
        )

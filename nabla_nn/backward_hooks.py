"""Module backward hooks (`register_full_backward_hook`, `register_full_backward_pre_hook`):
one call of a hooked module wraps its inputs and outputs in `grad_hook` identities, so the hooks
see the module's gradients together, as PyTorch's BackwardHook does."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import nabla as nb
from nabla import Tensor
from nabla.ops.view import grad_hook

from .module_hooks import GLOBAL_BACKWARD_HOOKS

if TYPE_CHECKING:  # annotations only: module.py imports this module
    from .module import Module


class _BackwardHookCall:
    """One call of a module with backward hooks (PyTorch's BackwardHook): one `grad_hook`
    identity over its input tensors and one over its output tensors gather the module's
    gradients together, so the hooks see them all at once, and only this call's part of an
    input's gradient (a tensor also used elsewhere gets its other parts elsewhere)."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.n_args = 0
        self.positions: list[int] = []  # the positional arguments that take a gradient
        self.grad_output: tuple = ()
        self.n_outputs = 0
        self.output_positions: list[int] = []
        self.outputs_hooked = True
        self.constants: dict[int, Tensor] = {}

    def wrap_inputs(self, args: tuple) -> tuple:
        self.n_args = len(args)
        self.positions = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        if not self.positions:
            return args
        # Other tensor arguments get zeros in grad_input (PyTorch's BackwardHookFunction marks
        # them non-differentiable, which materializes zeros).
        self.constants = {i: a for i, a in enumerate(args) if isinstance(a, Tensor) and not a.requires_grad}
        wrapped = grad_hook([args[i] for i in self.positions], self._input_grads)
        new = list(args)
        for i, w in zip(self.positions, wrapped, strict=True):
            new[i] = w
        return tuple(new)

    def wrap_outputs(self, out: Any) -> Any:
        """Hook the output tensors: a Tensor, or the Tensors at the top level of a tuple (as
        PyTorch; grad_output has one entry per tuple element, None for the rest). Another kind
        of output (a list, a dict) is not hooked, and the hooks do not run (PyTorch warns)."""
        top = out if isinstance(out, tuple) else (out,)
        if not isinstance(out, tuple | Tensor):
            warnings.warn(
                "For backward hooks to be called, module output should be a Tensor or a tuple of Tensors "
                f"but received {type(out)}",
                stacklevel=4,  # the user's call of the module
            )
            self.outputs_hooked = False
            return out
        idx = [i for i, o in enumerate(top) if isinstance(o, Tensor) and o.requires_grad]
        if not idx:
            return out
        self.n_outputs, self.output_positions = len(top), idx
        new = list(top)
        for i, w in zip(idx, grad_hook([top[i] for i in idx], self._output_grads), strict=True):
            new[i] = w
        return tuple(new) if isinstance(out, tuple) else new[0]

    def _hooks(self, kind: str) -> list:
        """This kind's hooks: every module's (module_hooks.py) first, then the module's own."""
        hooks = (*GLOBAL_BACKWARD_HOOKS.values(), *self.module._backward_hooks.values())
        return [hook for k, hook in hooks if k == kind]

    def _output_grads(self, cotangents: list) -> list:
        packed: list = [None] * self.n_outputs
        for i, g in zip(self.output_positions, cotangents, strict=True):
            packed[i] = g
        grad_output = tuple(packed)
        for hook in self._hooks("pre"):
            result = hook(self.module, grad_output)
            if result is not None:
                grad_output = _replacement(result, grad_output, "a full backward pre-hook", "grad_output")
        self.grad_output = grad_output
        if not self.positions:  # no input takes a gradient: the hooks run now, as in PyTorch
            self._run_full((None,) * self.n_args)
        return [grad_output[i] for i in self.output_positions]

    def _input_grads(self, cotangents: list) -> list:
        if not self.outputs_hooked:
            return cotangents
        grad_input: list = [None] * self.n_args
        for i, g in zip(self.positions, cotangents, strict=True):
            grad_input[i] = g
        for i, a in self.constants.items():
            grad_input[i] = nb.zeros_like(a)
        result = self._run_full(tuple(grad_input))
        return [result[i] for i in self.positions]

    def _run_full(self, grad_input: tuple) -> tuple:
        for hook in self._hooks("full"):
            result = hook(self.module, grad_input, self.grad_output)
            if result is not None:
                grad_input = _replacement(result, grad_input, "a full backward hook", "grad_input")
        return grad_input


def _replacement(result: Any, old: tuple, who: str, what: str) -> tuple:
    """A hook's replacement for `old`: as many entries; None where a gradient had none stays
    None, None for an existing gradient zeroes it."""
    new = tuple(result) if isinstance(result, tuple | list) else (result,)
    if len(new) != len(old):
        raise RuntimeError(f"{who} returned {len(new)} values, but {what} has {len(old)}")
    for n, o in zip(new, old, strict=True):
        if n is not None and o is not None and tuple(n.shape) != tuple(o.shape):
            raise RuntimeError(f"{who} returned a gradient of shape {tuple(n.shape)} for one of shape {tuple(o.shape)}")
    return tuple(nb.zeros_like(o) if n is None and o is not None else n for n, o in zip(new, old, strict=True))

"""Hooks on every module (PyTorch's `torch.nn.modules.module.register_module_forward_hook` and
the like): they run for each module call, before the module's own hooks of the same kind.

Example:
    >>> handle = nabla_nn.register_module_forward_hook(lambda m, args, out: print(type(m).__name__))
    >>> model(x)  # prints each module's class name as its forward returns
    >>> handle.remove()
"""

from __future__ import annotations

from collections.abc import Callable

from nabla.core.common.hooks import RemovableHandle, add_hook

from .module_pytree import _Store

# Same entry layouts as a module's own registries (module.py): forward pre-hooks (hook, with_kwargs),
# forward hooks (hook, with_kwargs, always_call), backward hooks ("full" | "pre", hook). Like
# those, each change bumps the module trees' version: a compiled module traces its hooks in.
GLOBAL_FORWARD_PRE_HOOKS: _Store = _Store()
GLOBAL_FORWARD_HOOKS: _Store = _Store()
GLOBAL_BACKWARD_HOOKS: _Store = _Store()


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """Call `hook(module, args)` before every module's forward; a non-None result replaces the args.

    Args:
        hook: the function, run before the module's own forward pre-hooks.
    """
    return add_hook(GLOBAL_FORWARD_PRE_HOOKS, (hook, False))


def register_module_forward_hook(
    hook: Callable, *, with_kwargs: bool = False, always_call: bool = False
) -> RemovableHandle:
    """Call `hook(module, args, output)` after every module's forward; a non-None result replaces
    the output.

    Args:
        hook: the function, run before the module's own forward hooks; with `with_kwargs`,
            `hook(module, args, kwargs, output)`.
        with_kwargs: pass the forward's keyword arguments too.
        always_call: also run it when the call raises (the error is then re-raised).
    """
    return add_hook(GLOBAL_FORWARD_HOOKS, (hook, with_kwargs, always_call))


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """Call `hook(module, grad_output)` when the gradients of any module's outputs are known; a
    non-None result replaces them. Runs before the module's own backward pre-hooks.

    Args:
        hook: the function.
    """
    return add_hook(GLOBAL_BACKWARD_HOOKS, ("pre", hook))


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """Call `hook(module, grad_input, grad_output)` when the gradients of any module's inputs
    are computed; a non-None result replaces grad_input. Runs before the module's own backward hooks.

    Args:
        hook: the function.
    """
    return add_hook(GLOBAL_BACKWARD_HOOKS, ("full", hook))

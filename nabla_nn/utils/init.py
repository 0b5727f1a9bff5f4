"""`skip_init` (PyTorch's `torch.nn.utils.skip_init`): build a module whose parameter values
are left unspecified, for code that initializes them itself."""

from __future__ import annotations

import inspect
from typing import Any, TypeVar

from ..module import Module

__all__ = ["skip_init"]

ModuleT = TypeVar("ModuleT", bound=Module)


def skip_init(module_cls: type[ModuleT], *args: Any, **kwargs: Any) -> ModuleT:
    """Instantiate `module_cls(*args, **kwargs)` without promising any parameter or buffer values.

    As in PyTorch, the class must take a `device` argument. PyTorch builds the module on its
    "meta" device and allocates empty storage; nabla has no meta device and layers initialize
    on the host cheaply, so the module is simply built on `device`: its values are whatever its
    constructor made (skip_init promises nothing about them; initialize them yourself).

    Args:
        module_cls: a Module subclass.
        *args: its constructor's positional arguments.
        **kwargs: its constructor's keyword arguments (`device` included, default the CPU).

    Returns:
        The module.

    Example:
        >>> m = skip_init(nn.Linear, 5, 1)
        >>> init.zeros_(m.weight)
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    return module_cls(*args, **kwargs)

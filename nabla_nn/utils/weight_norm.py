"""Hook-based weight normalization (PyTorch's deprecated `torch.nn.utils.weight_norm`): the
weight is split into parameters `<name>_g` and `<name>_v` and recomputed by a forward pre-hook
before every call. Prefer `nabla_nn.utils.parametrizations.weight_norm`."""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

import nabla as nb
from nabla import Tensor

from ..module import Module
from ..parameter import Parameter, is_lazy
from .parametrizations import _norm_except_dim

__all__ = ["WeightNorm", "remove_weight_norm", "weight_norm"]

ModuleT = TypeVar("ModuleT", bound=Module)


class WeightNorm:
    """The forward pre-hook: `module.<name> = g * v / ||v||` before each call.

    Args:
        name: the weight's name.
        dim: the dimension kept by the norm; None (or -1) normalizes the whole tensor.
    """

    name: str
    dim: int

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        """The weight from the module's current `<name>_g` and `<name>_v`."""
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        """Split `module.<name>` into `<name>_g`, `<name>_v` and register the hook."""
        warnings.warn(
            "`torch.nn.utils.weight_norm` is deprecated in favor of `torch.nn.utils.parametrizations.weight_norm`.",
            FutureWarning,
            stacklevel=3,
        )
        if _find_hook(module, WeightNorm, name) is not None:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if is_lazy(weight):
            raise ValueError(
                "The module passed to `WeightNorm` can't have uninitialized parameters. "
                "Make sure to run the dummy forward before applying weight normalization"
            )
        del module._parameters[name]
        with nb.no_grad():
            g = Parameter(_norm_except_dim(weight, fn.dim))
        nb.evaluate(g)
        module.register_parameter(name + "_g", g)
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))  # a plain attribute, recomputed by the hook
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        """Put the current weight back as a plain parameter."""
        with nb.no_grad():
            weight = Parameter(self.compute_weight(module))
        nb.evaluate(weight)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, weight)

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def _find_hook(module: Module, kind: type, name: str) -> int | None:
    """The id of `module`'s forward pre-hook of class `kind` for tensor `name`, or None."""
    for key, (hook, *_) in module._forward_pre_hooks.items():
        if isinstance(hook, kind) and hook.name == name:
            return key
    return None


def _remove_hook(module: ModuleT, kind: type, name: str, label: str) -> ModuleT:
    """Undo a hook-based reparametrization `kind` of `name` (its `remove` restores a plain parameter)."""
    key = _find_hook(module, kind, name)
    if key is None:
        raise ValueError(f"{label} of '{name}' not found in {module}")
    module._forward_pre_hooks[key][0].remove(module)
    del module._forward_pre_hooks[key]
    return module


def weight_norm(module: ModuleT, name: str = "weight", dim: int | None = 0) -> ModuleT:
    """Weight normalization with a forward pre-hook (deprecated in PyTorch): `module.<name>`
    becomes g * v / ||v||, with parameters `<name>_g` (magnitude) and `<name>_v` (direction).

    Args:
        module: the module owning the weight.
        name: the weight's name.
        dim: the dimension kept by the norm; None normalizes the whole tensor.

    Returns:
        `module`.

    Example:
        >>> m = weight_norm(nn.Linear(20, 40))
        >>> m.weight_g.shape, m.weight_v.shape
        ((40, 1), (40, 20))
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: ModuleT, name: str = "weight") -> ModuleT:
    """Undo `weight_norm`: `module.<name>` is a plain parameter holding the current weight.

    Args:
        module: the module.
        name: the weight's name.

    Returns:
        `module`.

    Example:
        >>> remove_weight_norm(weight_norm(nn.Linear(20, 40)))
    """
    return _remove_hook(module, WeightNorm, name, "weight_norm")

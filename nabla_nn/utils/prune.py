"""Pruning (PyTorch's `torch.nn.utils.prune`): zero a fraction of a parameter's entries or
channels through a mask, with torch's mechanics and state_dict keys.

Pruning `module.<name>` moves the parameter to `<name>_orig` (the same Parameter: the optimizer
still updates it), registers the buffer `<name>_mask`, and a forward pre-hook recomputes
`module.<name> = <name>_orig * <name>_mask` before every call (so gradients reach `_orig`
masked). Pruning the same tensor again combines the methods in a `PruningContainer`: the new
amount applies to the entries (or channels) still unpruned. `remove` makes the pruned weight a
plain parameter again.

Masks are computed on the host with NumPy from the current values (they are data, not part of
the graph). The magnitude-based methods pick what torch's do (ties aside); the random ones
draw from nabla's global generator (`nabla.manual_seed`), not torch's.

Example:
    >>> m = prune.l1_unstructured(nn.Linear(4, 3), "weight", amount=0.5)
    >>> sorted(m.state_dict())
    ['bias', 'weight_mask', 'weight_orig']
    >>> int(m.weight_mask.sum().item())
    6
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor

from ..module import Module

__all__ = [
    "BasePruningMethod",
    "CustomFromMask",
    "Identity",
    "L1Unstructured",
    "LnStructured",
    "PruningContainer",
    "RandomStructured",
    "RandomUnstructured",
    "custom_from_mask",
    "global_unstructured",
    "identity",
    "is_pruned",
    "l1_unstructured",
    "ln_structured",
    "random_structured",
    "random_unstructured",
    "remove",
]


# -- amounts and dims (torch's checks and wording) ---------------------------------------------------
def _check_amount(amount: Any) -> None:
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
        not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0
    ):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _count(amount: Any, size: int) -> int:
    """How many of `size` entries (or channels) `amount` prunes: an int as is, a fraction rounded."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
        return int(amount)
    return round(float(amount) * size)


def _check_structured(t: np.ndarray, dim: int) -> int:
    if t.ndim <= 1:
        raise ValueError(
            "Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
            f"{t.shape} with {t.ndim} dims"
        )
    if not -t.ndim <= dim < t.ndim:
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")
    return dim % t.ndim


def _channels(t: np.ndarray, dim: int, keep: np.ndarray) -> np.ndarray:
    """A mask of t's shape that is 1 on the channels `keep` (indices or booleans) along `dim`."""
    mask = np.zeros(t.shape, dtype=t.dtype)
    index = [slice(None)] * t.ndim
    index[dim] = keep
    mask[tuple(index)] = 1
    return mask


# -- methods -------------------------------------------------------------------------------------------
class BasePruningMethod:
    """A pruning method: `compute_mask(t, default_mask)` on NumPy arrays (t: the importance
    scores), applied as a forward pre-hook named by `_tensor_name` (torch's base class)."""

    PRUNING_TYPE: str = "unstructured"
    _tensor_name: str | None = None

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    def apply_mask(self, module: Module) -> Tensor:
        """`<name>_orig * <name>_mask` of `module` (lazy: gradients reach `_orig`)."""
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any, importance_scores: Any = None, **kwargs: Any) -> Any:
        """Prune `module.<name>` with `cls(*args, **kwargs)`, combined with earlier pruning."""
        method = _composite(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        scores = _host(orig if importance_scores is None else importance_scores)
        if scores.shape != tuple(orig.shape):
            raise ValueError(f"importance_scores should have the same shape as parameter {name} of {module}")
        fresh = not isinstance(method, PruningContainer)
        if fresh:  # the Parameter moves to <name>_orig; <name> becomes a plain attribute
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default = np.ones(tuple(orig.shape), dtype=_host(orig).dtype)
        else:
            default = _host(getattr(module, name + "_mask"))
        try:
            mask = method.compute_mask(scores.astype(default.dtype, copy=False), default)
            module.register_buffer(name + "_mask", nb.tensor(np.ascontiguousarray(mask), dtype=orig.dtype))
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if fresh:  # undo: the parameter is back under its name
                module.register_parameter(name, getattr(module, name + "_orig"))
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Any, default_mask: Any = None, importance_scores: Any = None) -> Tensor:
        """`t` times the mask this method computes for it (nothing registered)."""
        values = _host(t)
        default = np.ones_like(values) if default_mask is None else _host(default_mask)
        mask = self.compute_mask(values if importance_scores is None else _host(importance_scores), default)
        return nb.tensor(values * mask)

    def remove(self, module: Module) -> None:
        """Make `module.<name>` a plain Parameter holding the pruned values again."""
        weight = self.apply_mask(module)
        if self._tensor_name in module.__dict__:
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = nb.tensor(_host(weight), dtype=orig.dtype)
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _host(t: Any) -> np.ndarray:
    return np.array(t.detach().numpy() if isinstance(t, Tensor) else t)


def _composite(cls: type, module: Module, name: str, *args: Any, **kwargs: Any) -> BasePruningMethod:
    """The new method, or a container of the tensor's earlier pruning and it (its hook is
    unregistered: the caller registers the result)."""
    keys = [k for k, (hook, *_) in module._forward_pre_hooks.items() if _prunes(hook, name)]
    old = module._forward_pre_hooks[keys[0]][0] if keys else None
    for k in keys:
        del module._forward_pre_hooks[k]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if old is None:
        return method
    container = old if isinstance(old, PruningContainer) else PruningContainer(old)
    container.add_pruning_method(method)
    return container


def _prunes(hook: Any, name: str) -> bool:
    return isinstance(hook, BasePruningMethod) and hook._tensor_name == name


class PruningContainer(BasePruningMethod):
    """Successive pruning of one tensor: each method prunes what the earlier ones left."""

    def __init__(self, *methods: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        self._tensor_name = methods[0]._tensor_name if methods else None
        for method in methods:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(
                f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to "
                f"PruningContainer. Found '{method._tensor_name}'"
            )
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Any:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        """The last method's mask over the part of `t` the current mask keeps."""
        method = self._pruning_methods[-1]
        index: Any = default_mask == 1
        if method.PRUNING_TYPE == "structured":
            dim = method.dim % t.ndim if -t.ndim <= method.dim < t.ndim else method.dim
            if not 0 <= dim < t.ndim:
                raise IndexError(f"Index is out of bounds for tensor of size {t.shape}: dim={method.dim}")
            others = tuple(d for d in range(t.ndim) if d != dim)
            index = [slice(None)] * t.ndim
            index[dim] = default_mask.sum(axis=others) != 0
            index = tuple(index)
        elif method.PRUNING_TYPE == "global":
            index = (slice(None),) * t.ndim
        new = default_mask.astype(t.dtype, copy=True)
        new[index] = method.compute_mask(t[index], default_mask[index])
        return new


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (or the current mask)."""

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> Any:  # type: ignore[override]
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes `amount` entries (int) or that fraction of them, picked at random."""

    def __init__(self, amount: int | float) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        k = _count(self.amount, t.size)
        mask = default_mask.copy()
        if k:
            draws = nb.rand(max(t.size, 1)).numpy()[: t.size]
            mask.reshape(-1)[np.argsort(-draws, kind="stable")[:k]] = 0  # (torch: topk of uniform draws)
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float) -> Any:  # type: ignore[override]
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the `amount` entries (int, or a fraction) of smallest absolute value."""

    def __init__(self, amount: int | float) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        k = _count(self.amount, t.size)
        mask = default_mask.copy()
        if k:
            mask.reshape(-1)[np.argsort(np.abs(t).reshape(-1), kind="stable")[:k]] = 0
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, importance_scores: Any = None) -> Any:  # type: ignore[override]
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes `amount` channels (int, or a fraction) along `dim`, picked at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        dim = _check_structured(t, self.dim)
        n = t.shape[dim]
        k = _count(self.amount, n)
        if not k:
            return default_mask
        draws = nb.rand(n).numpy()
        keep = np.sort(np.argsort(-draws, kind="stable")[: n - k])
        return _channels(t, dim, keep) * default_mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, dim: int = -1) -> Any:  # type: ignore[override]
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the `amount` channels (int, or a fraction) along `dim` of smallest L`n` norm
    (`n`: a number, inf, -inf, "fro" or "nuc" as torch.norm's `p`)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, n: Any, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        dim = _check_structured(t, self.dim)
        n = t.shape[dim]
        k = _count(self.amount, n)
        if not k:
            return default_mask
        norms = _norms(t, self.n, dim)
        keep = np.argsort(-norms, kind="stable")[: n - k]
        return _channels(t, dim, keep) * default_mask

    @classmethod
    def apply(
        cls, module: Module, name: str, amount: int | float, n: Any, dim: int, importance_scores: Any = None
    ) -> Any:  # type: ignore[override]
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


def _norms(t: np.ndarray, p: Any, dim: int) -> np.ndarray:
    """The p-norm of each channel along `dim` (over all its other entries)."""
    rows = np.moveaxis(t, dim, 0).reshape(t.shape[dim], -1).astype(np.float64)
    if p == "nuc":
        return np.array([np.linalg.norm(np.moveaxis(t, dim, 0)[i], "nuc") for i in range(rows.shape[0])])
    q = 2.0 if p == "fro" else float(p)
    if np.isinf(q):
        return np.abs(rows).max(axis=1) if q > 0 else np.abs(rows).min(axis=1)
    if q == 0:
        return (rows != 0).sum(axis=1).astype(np.float64)
    return (np.abs(rows) ** q).sum(axis=1) ** (1.0 / q)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given mask is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Any) -> None:
        self.mask = _host(mask)

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        if default_mask.shape != self.mask.shape:
            raise ValueError(f"mask has shape {self.mask.shape}, the tensor {self._tensor_name!r} {default_mask.shape}")
        return default_mask * self.mask.astype(default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Any) -> Any:  # type: ignore[override]
        return super().apply(module, name, mask=mask)


# -- functions -------------------------------------------------------------------------------------
def identity(module: Module, name: str) -> Module:
    """Reparametrize `module.<name>` with an all-ones mask (prunes nothing).

    Args:
        module: the module holding the tensor.
        name: its parameter name.

    Example:
        >>> prune.identity(nn.Linear(2, 3), "bias").bias_mask.tolist()
        [1.0, 1.0, 1.0]
    """
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: int | float) -> Module:
    """Prune `amount` (an int count, or a fraction in [0, 1]) of `module.<name>`'s entries,
    picked at random (nabla's global generator).

    Example:
        >>> m = prune.random_unstructured(nn.Linear(4, 2), "weight", amount=3)
        >>> int((m.weight_mask == 0).sum().item())
        3
    """
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: int | float, importance_scores: Any = None) -> Module:
    """Prune the `amount` (count or fraction) entries of `module.<name>` of smallest absolute
    value (of `importance_scores`, if given: a tensor of the parameter's shape).

    Example:
        >>> m = prune.l1_unstructured(nn.Linear(4, 2), "weight", amount=0.25)
        >>> int((m.weight_mask == 0).sum().item())
        2
    """
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: int | float, dim: int) -> Module:
    """Prune `amount` (count or fraction) channels of `module.<name>` along `dim`, at random.

    Example:
        >>> m = prune.random_structured(nn.Linear(4, 4), "weight", amount=1, dim=0)
        >>> int((m.weight_mask.sum(1) == 0).sum().item())
        1
    """
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(
    module: Module, name: str, amount: int | float, n: Any, dim: int, importance_scores: Any = None
) -> Module:
    """Prune the `amount` (count or fraction) channels of `module.<name>` along `dim` with the
    smallest L`n` norm (`n`: as torch.norm's `p`).

    Example:
        >>> m = prune.ln_structured(nn.Conv2d(1, 4, 3), "weight", amount=0.5, n=2, dim=0)
        >>> int((m.weight_mask.sum((1, 2, 3)) == 0).sum().item())
        2
    """
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(
    parameters: Iterable[tuple[Module, str]], pruning_method: type, importance_scores: Any = None, **kwargs: Any
) -> None:
    """Prune several tensors as one: `pruning_method` (unstructured, e.g. L1Unstructured with
    `amount=`) picks among all their entries together, so layers lose different fractions.

    Args:
        parameters: (module, name) pairs.
        pruning_method: an unstructured BasePruningMethod subclass.
        importance_scores: {(module, name): scores}; default: the tensors' values.
        kwargs: the method's arguments (`amount=`).

    Example:
        >>> a, b = nn.Linear(4, 4), nn.Linear(4, 2)
        >>> prune.global_unstructured([(a, "weight"), (b, "weight")], prune.L1Unstructured, amount=6)
    """
    pairs = list(parameters)
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], Module)):
            raise TypeError(f"global_unstructured: parameters must be (module, name) pairs, got {pair!r}")
    scores = importance_scores or {}
    values = np.concatenate([_host(scores.get((m, n), getattr(m, n))).reshape(-1) for m, n in pairs])
    default = np.concatenate([_current_mask(m, n).reshape(-1) for m, n in pairs])
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(
            'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
            f"{pruning_method} of type {method.PRUNING_TYPE}"
        )
    mask = PruningContainer(method).compute_mask(values.astype(np.float64), default)
    start = 0
    for m, n in pairs:
        shape = tuple(getattr(m, n).shape)
        size = int(np.prod(shape))
        custom_from_mask(m, n, mask[start : start + size].reshape(shape))
        start += size


def _current_mask(module: Module, name: str) -> np.ndarray:
    mask = getattr(module, name + "_mask", None)
    return np.ones(tuple(getattr(module, name).shape)) if mask is None else _host(mask).astype(np.float64)


def custom_from_mask(module: Module, name: str, mask: Any) -> Module:
    """Prune `module.<name>` where `mask` (a tensor or array of its shape) is 0.

    Example:
        >>> prune.custom_from_mask(nn.Linear(2, 2), "bias", nb.tensor([0.0, 1.0])).bias_mask.tolist()
        [0.0, 1.0]
    """
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module: Module, name: str) -> Module:
    """Make the pruning of `module.<name>` permanent: `<name>` is a plain Parameter holding the
    pruned values; `<name>_orig`, `<name>_mask` and the hook are gone.

    Example:
        >>> m = prune.remove(prune.l1_unstructured(nn.Linear(4, 2), "weight", 0.5), "weight")
        >>> sorted(m.state_dict())
        ['bias', 'weight']
    """
    for key, (hook, *_) in list(module._forward_pre_hooks.items()):
        if _prunes(hook, name):
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Module) -> bool:
    """Whether `module` or a submodule has a pruned tensor.

    Example:
        >>> prune.is_pruned(prune.identity(nn.Linear(2, 2), "weight"))
        True
    """
    return any(
        isinstance(hook, BasePruningMethod) for m in module.modules() for hook, *_ in m._forward_pre_hooks.values()
    )

"""Parametrizations: a module's tensor computed from other tensors on every access (PyTorch's
`torch.nn.utils.parametrize`).

`register_parametrization(module, "weight", P())` moves `module.weight` to
`module.parametrizations.weight.original` (or `original0`, `original1`, ... when P's
`right_inverse` returns several tensors) and makes `module.weight` read `P(original)`. As in
PyTorch, the module's class is swapped for a subclass (`ParametrizedLinear`) holding a property
per parametrized name, so unparametrized modules pay nothing, and the state_dict keys are
PyTorch's (`parametrizations.weight.original`): a torch state_dict of a parametrized model loads
as it is. The originals are ordinary parameters and buffers of the child `parametrizations`,
so optimizers, `nabla.grad`/`vmap` (modules are pytrees) and `Module.compile` see them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import nabla as nb
from nabla import Tensor

from ..module import Module
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]

_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextmanager
def cached() -> Iterator[None]:
    """Compute each parametrized tensor once inside the block (PyTorch's `parametrize.cached`).

    Useful when a forward reads a parametrized weight several times (an RNN's recurrent
    kernel, tied weights); the cached values are dropped when the outermost block exits.

    Example:
        >>> with parametrize.cached():
        ...     out = model(x)
    """
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _maybe_set(dest: Tensor, src: Tensor) -> None:
    """PyTorch's `dest.set_(src)`: `dest` (the same object, so an optimizer holding it still
    does) takes `src`'s value, realized so a training step's graph never includes it."""
    if src is not dest:
        dest.data = src
        nb.evaluate(dest)


def _right_inverse_of(modules: Sequence[Module], value: Any, *, identity_if_missing: bool) -> Any:
    """`value` through each parametrization's `right_inverse`, last registered first."""
    with nb.no_grad():
        for module in reversed(modules):
            inverse = getattr(module, "right_inverse", None)
            if inverse is None:
                if identity_if_missing:  # registration: a missing right_inverse is the identity
                    continue
                raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
            try:
                value = inverse(value)
            except NotImplementedError:
                if not identity_if_missing:
                    raise
    return value


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and the original tensor(s) they are computed from:
    `module.parametrizations[name]` (made by `register_parametrization`, not by users).

    The original is held under `original`, or under `original0`, `original1`, ... when the
    first parametrization's `right_inverse` returns a sequence of tensors.

    Args:
        modules: the parametrizations, applied first to last.
        original: the parameter or buffer being parametrized. With one tensor from
            `right_inverse` it keeps its identity (its value becomes `right_inverse(original)`),
            so an optimizer created before still trains it.
        unsafe: skip the check that the parametrization keeps the tensor's shape and dtype.

    Example:
        >>> register_parametrization(linear, "weight", Symmetric())
        >>> type(linear.parametrizations.weight).__name__, linear.parametrizations.weight.original.shape
        ('ParametrizationList', (3, 3))
    """

    original: Tensor
    unsafe: bool

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        new = _right_inverse_of(self, original, identity_if_missing=True)
        if not isinstance(new, Tensor | Sequence):
            raise ValueError(
                f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). Got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            self._register_original(original, new)
        else:
            self._register_originals(original, new)
        if not unsafe:
            _check_same_kind(self(), original, "unparametrized", "parametrized")

    def _register_original(self, original: Tensor, new: Tensor) -> None:
        if original.dtype != new.dtype:
            raise ValueError(
                "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}"
            )
        if original.device != new.device:
            raise ValueError(
                "When `right_inverse` outputs one tensor, it may not change the device.\n"
                f"original.device: {original.device}\nright_inverse(original).device: {new.device}"
            )
        _maybe_set(original, new)  # the same object: no need to re-register it with the optimizer
        _register_parameter_or_buffer(self, "original", original)

    def _register_originals(self, original: Tensor, new: Sequence[Any]) -> None:
        for i, value in enumerate(new):
            if not isinstance(value, Tensor):
                raise ValueError(
                    "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                    f"Got element {i} of the sequence with type {type(value).__name__}."
                )
            # New tensors: as in PyTorch, the caller adds them to an optimizer made before.
            if isinstance(original, Parameter):
                value = Parameter(value, original.requires_grad)
            else:
                value = value.detach().requires_grad_(original.requires_grad)
            nb.evaluate(value)
            _register_parameter_or_buffer(self, f"original{i}", value)

    def right_inverse(self, value: Tensor) -> None:
        """Set the original(s) from a value of the parametrized tensor: the parametrizations'
        `right_inverse` in reverse registration order (what `module.weight = value` calls).

        Args:
            value: the new value of the parametrized tensor.
        """
        value = _right_inverse_of(self, value, identity_if_missing=False)
        if self.is_tensor:
            if not isinstance(value, Tensor):
                raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
            if value.dtype != self.original.dtype:
                raise ValueError(
                    f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                    f"while `original` has dtype {self.original.dtype}"
                )
            _maybe_set(self.original, value)
            return
        if not isinstance(value, Sequence):
            raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
        if len(value) != self.ntensors:
            raise ValueError(
                f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                f"Got a sequence of length {len(value)}."
            )
        for i, tensor in enumerate(value):
            original_i = getattr(self, f"original{i}")
            if not isinstance(tensor, Tensor):
                raise ValueError(
                    f"'right_inverse' must return a sequence of tensors. Got element {i} of type {type(tensor).__name__}."
                )
            if original_i.dtype != tensor.dtype:
                raise ValueError(
                    f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} "
                    f"while `original{i}` has dtype {original_i.dtype}"
                )
            _maybe_set(original_i, tensor)

    def forward(self) -> Tensor:
        modules = iter(self._modules.values())
        first = next(modules)
        if self.is_tensor:
            x = first(self.original)
        else:
            x = first(*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in modules:
            x = module(x)
        return x


def _check_same_kind(value: Any, reference: Tensor, ref_name: str, value_name: str) -> None:
    """A parametrization registered without `unsafe` must keep the tensor's dtype and shape."""
    if not isinstance(value, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
    if value.dtype != reference.dtype:
        raise ValueError(
            "Registering a parametrization may not change the dtype of the tensor, unless the `unsafe` flag is "
            f"enabled.\n{ref_name} dtype: {reference.dtype}\n{value_name} dtype: {value.dtype}"
        )
    if tuple(value.shape) != tuple(reference.shape):
        raise ValueError(
            "Registering a parametrization may not change the shape of the tensor, unless the `unsafe` flag is "
            f"enabled.\n{ref_name} shape: {tuple(reference.shape)}\n{value_name} shape: {tuple(value.shape)}"
        )


def _inject_new_class(module: Module) -> None:
    """Swap the module's class for a subclass (`ParametrizedLinear`) that can hold properties:
    one class per module, so a property never shows on other instances of the layer."""
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {})


def _inject_property(module: Module, tensor_name: str) -> None:
    """`module.<tensor_name>`: the parametrized value on read, `right_inverse` on assignment."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self: Module) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)  # self, not the registering module: a pytree copy has its own
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """Make `module.<tensor_name>` read `parametrization(original)`, computed on every access.

    The first registration on a tensor moves it to `module.parametrizations[tensor_name].original`
    (its value replaced by `parametrization.right_inverse(value)` when the parametrization has
    one; the same object, so an optimizer holding it still trains it). If `right_inverse`
    returns a sequence, the tensors become `original0`, `original1`, ... (new parameters to give
    the optimizer). Registering on an already parametrized tensor appends to its list.
    Assigning `module.<tensor_name> = value` calls `right_inverse` to set the original(s).

    Args:
        module: the module owning the tensor.
        tensor_name: the parameter or buffer to parametrize (or a parametrized one).
        parametrization: a Module whose `forward` maps the original(s) to the tensor; an
            optional `right_inverse` maps a tensor back to the original(s).
        unsafe: allow the parametrization to change the tensor's shape or dtype (not checked).

    Returns:
        `module`, now of class `Parametrized<its class>`.

    Example:
        >>> class Symmetric(nn.Module):
        ...     def forward(self, X):
        ...         return X.triu() + X.triu(1).mT
        >>> m = register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
        >>> list(m.state_dict())
        ['bias', 'parametrizations.weight.original']
    """
    if not isinstance(parametrization, Module):
        raise TypeError(f"parametrization must be a Module, got {type(parametrization).__name__}")
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_appended(module, tensor_name, parametrization)
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe  # once unsafe, always unsafe (as PyTorch)
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        if original is None:
            raise ValueError(f"register_parametrization: module.{tensor_name} is None, there is nothing to parametrize")
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)  # first: it checks everything
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name "
            f"'{tensor_name}'"
        )
    _realize(module.parametrizations[tensor_name])
    return module


def _check_appended(module: Module, tensor_name: str, parametrization: Module) -> None:
    """A parametrization added to a list maps the tensor's space to itself (and back)."""
    current = getattr(module, tensor_name)
    _check_same_kind(
        parametrization(current), current, f"module.{tensor_name}", f"parametrization(module.{tensor_name})"
    )
    inverse = getattr(parametrization, "right_inverse", None)
    if inverse is None:
        return
    try:
        with nb.no_grad():
            back = inverse(parametrization(current))
    except NotImplementedError:
        return
    if not isinstance(back, Tensor):
        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(back).__name__}")
    _check_same_kind(back, current, f"module.{tensor_name}", "parametrization.right_inverse")


def _realize(module: Module) -> None:
    """Compute what registration left pending (a spectral norm's power-iteration buffers), so
    the first training step's graph is the same as every later one's."""
    nb.evaluate(*(t for _, t in module._all_tensors()))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether `module` has a parametrization on `tensor_name` (on any tensor when None).

    Args:
        module: the module to query.
        tensor_name: the name of the parametrized tensor, or None for any.

    Example:
        >>> is_parametrized(nn.Linear(2, 2))
        False
    """
    parametrizations = module._modules.get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Turn `module.<tensor_name>` back into a plain parameter or buffer.

    With `leave_parametrized`, it keeps its current parametrized value (in the original tensor
    object when there is one original, so optimizers still hold it); otherwise it becomes the
    unparametrized `original` (only possible with a single original).

    Args:
        module: the module owning the parametrization.
        tensor_name: the parametrized tensor's name.
        leave_parametrized: keep the parametrized value (True) or the original (False).

    Returns:
        `module`, back to its own class once no tensor is parametrized.

    Example:
        >>> remove_parametrizations(m, "weight")
        >>> list(m.state_dict())
        ['bias', 'weight']
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with nb.no_grad():
                _maybe_set(original, getattr(module, tensor_name))
    elif leave_parametrized:
        value = getattr(module, tensor_name)  # (with grad recorded: requires_grad tells Parameter or buffer)
        original = Parameter(value) if value.requires_grad else value.detach()
        nb.evaluate(original)
    else:
        raise ValueError(
            "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of "
            "a sequence of tensors."
        )
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before parametrizations were registered (its class if none were).

    Args:
        module: the module to query.

    Example:
        >>> type_before_parametrizations(m).__name__
        'Linear'
    """
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(
    from_module: Module, to_module: Module, tensor_name: str | None = None
) -> Module:
    """Register `from_module`'s parametrizations (of `tensor_name`, or all) on `to_module` and
    make its originals the same tensors, creating the parameter on `to_module` if it lacks one.

    Args:
        from_module: the parametrized module.
        to_module: the module to parametrize.
        tensor_name: the one tensor to transfer, or None for every parametrized one.

    Returns:
        `to_module`.

    Example:
        >>> transfer_parametrizations_and_params(m, nn.Linear(3, 3))
    """
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        keys = ["original"] if source.is_tensor else [f"original{i}" for i in range(source.ntensors)]
        for key in keys:
            setattr(target, key, getattr(source, key))
    return to_module

"""Calling a module with other parameter and buffer values (PyTorch's `torch.func.functional_call`,
also `torch.nn.utils.stateless.functional_call`).

The named tensors are swapped into the module for the call and the originals put back
afterwards, even when the call raises. Inside `nabla.grad` or `nabla.vmap` the dict of values is
the transformed argument, so `grad(lambda p: loss(functional_call(model, p, x)))(params)`
differentiates with respect to the dict, as `torch.func.grad` does.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from nabla import Tensor
from nabla import func as nabla_func
from nabla.core.graph.tracing import TRACE, note_guard

from ..module import Module

__all__ = ["functional_call"]

_MISSING: Any = object()  # a name the module did not have before the swap


def _merged(parameter_and_buffer_dicts: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """One mapping from a dict (itself) or a sequence of dicts with distinct keys (a new one)."""
    if isinstance(parameter_and_buffer_dicts, Mapping):
        return parameter_and_buffer_dicts
    if isinstance(parameter_and_buffer_dicts, Sequence) and not isinstance(parameter_and_buffer_dicts, str):
        if not all(isinstance(d, Mapping) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts: dict[str, int] = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        return {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    raise ValueError(
        "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
        f"but got {type(parameter_and_buffer_dicts)}"
    )


def _named_tensors(module: Module) -> list[tuple[str, Tensor]]:
    """Every parameter and buffer under every name it has (tied tensors repeat)."""
    return [
        *module.named_parameters(remove_duplicate=False),
        *module.named_buffers(remove_duplicate=False),
    ]


def _untied(module: Module, values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` plus, for each given name of a tied tensor, its other names with the same value."""
    names_of: dict[int, set[str]] = {}
    for name, tensor in _named_tensors(module):
        names_of.setdefault(id(tensor), set()).add(name)
    tied = {name: names for names in names_of.values() if len(names) > 1 for name in names}
    out = dict(values)
    for name in [n for n in values if n in tied]:
        given = [n for n in tied[name] if n in values]
        if len({id(values[n]) for n in given}) > 1:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(tied[name])}, which are tied. "
                "Consider using tie_weights=False"
            )
        out.update(dict.fromkeys(tied[name], values[name]))
    return out


def _check_keys(module: Module, values: Mapping[str, Any]) -> None:
    valid = {name for name, _ in _named_tensors(module)}
    missing, unexpected = sorted(valid - set(values)), sorted(set(values) - valid)
    errors = [f"Unexpected key(s): {', '.join(map(repr, unexpected))}."] if unexpected else []
    errors += [f"Missing key(s): {', '.join(map(repr, missing))}."] if missing else []
    if errors:
        raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(errors))


def _owner(module: Module, path: str) -> tuple[Module, str]:
    """The submodule holding the dotted `path`'s last part, and that part."""
    prefix, _, attr = path.rpartition(".")
    owner = module
    for part in prefix.split(".") if prefix else []:
        child = getattr(owner, part, None)
        if not isinstance(child, Module):
            raise AttributeError(f"{owner._get_name()} has no submodule `{part}` (looking up '{path}')")
        owner = child
    return owner, attr


def _swap(module: Module, path: str, value: Any) -> Any:
    """Put `value` at `path` (_MISSING: remove it) and return what was there (PyTorch's
    `swap_tensor`): parameter and buffer slots are replaced directly; anything else (a
    parametrized name, a plain attribute) is assigned, so a parametrization's right_inverse runs."""
    if value is not _MISSING and value is not None and not isinstance(value, Tensor):
        raise TypeError(f"functional_call: the value for '{path}' must be a Tensor, got {type(value).__name__}")
    owner, name = _owner(module, path)
    for store in (owner._parameters, owner._buffers):
        if name in store:
            old = store[name]
            if value is _MISSING:
                del store[name]
            else:
                store[name] = value
            return old
    old = getattr(owner, name, _MISSING)
    if old is not _MISSING and old is not None and not isinstance(old, Tensor):
        raise TypeError(f"functional_call: attribute `{path}` is a {type(old).__name__}, not a Tensor")
    if value is not _MISSING:
        setattr(owner, name, value)
    elif old is not _MISSING:
        delattr(owner, name)
    return old


def _swap_all(module: Module, values: Mapping[str, Any]) -> dict[str, Any]:
    """Swap every value in, undoing the ones done if one fails; returns the previous values."""
    previous: dict[str, Any] = {}
    try:
        for path, value in values.items():
            previous[path] = _swap(module, path, value)
    except BaseException:
        for path, old in reversed(previous.items()):
            _swap(module, path, old)
        raise
    return previous


@contextmanager
def _reparametrized(module: Module, values: Mapping[str, Any], given: Mapping[str, Any]) -> Iterator[None]:
    previous = _swap_all(module, values)
    try:
        yield
    finally:
        current = _swap_all(module, dict(reversed(previous.items())))
        # A tensor the module replaced (`self.count = self.count + 1`) goes into the caller's dict, as PyTorch.
        if isinstance(given, dict):
            given.update({k: current[k] for k in given if current.get(k, _MISSING) is not _MISSING})


def functional_call(
    module: Module,
    parameter_and_buffer_dicts: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]] | None = None,
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
    parameters_and_buffers: Mapping[str, Tensor] | None = None,
) -> Any:
    """Call `module(*args, **kwargs)` with the named parameters and buffers replaced by the given
    tensors; the module's own are put back afterwards (also when the call raises).

    Names are `named_parameters`/`named_buffers` ones ("fc.weight"); names left out keep the
    module's tensors. A parametrized tensor's name ("weight") is assigned through its
    parametrization's `right_inverse`, as in PyTorch; pass
    "parametrizations.weight.original" to differentiate through the parametrization. Tensors
    the module replaces during the call (not in place) are written back into the given dict.

    Args:
        module: the module to call.
        parameter_and_buffer_dicts: a dict of name -> tensor, or a sequence of such dicts with
            distinct keys.
        args: the positional arguments (one value that is not a tuple is the only one).
        kwargs: the keyword arguments.
        tie_weights: a value given for one name of a tensor the module ties (shares under
            several names) replaces it under every name; different values for tied names raise.
        strict: the names must be exactly the module's parameters and buffers.
        parameters_and_buffers: torch.nn.utils.stateless's name of the dict, by keyword.

    Returns:
        What the module returns.

    Example:
        >>> params = {k: v.detach() for k, v in model.named_parameters()}
        >>> grads = nb.grad(lambda p: F.mse_loss(functional_call(model, p, (x,)), y))(params)
    """
    if parameters_and_buffers is not None:
        if parameter_and_buffer_dicts is not None:
            raise TypeError("functional_call: pass parameter_and_buffer_dicts or parameters_and_buffers, not both")
        parameter_and_buffer_dicts = parameters_and_buffers
    if parameter_and_buffer_dicts is None:
        raise TypeError("functional_call: missing the dict of parameters and buffers")
    given = _merged(parameter_and_buffer_dicts)
    values = _untied(module, given) if tie_weights else given
    if strict:
        _check_keys(module, values)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    kwargs = {} if kwargs is None else kwargs
    state = TRACE.state
    if state is None:
        with _reparametrized(module, values, given):
            return module(*args, **kwargs)
    # Traced by nabla.compile: guard the module as it is outside the call; the call itself must not
    # guard the swapped-in tensors (new objects on every call: it would trace again each time).
    note_guard(module._trace_signature, f"{type(module).__name__}'s training mode, submodules or parameters")
    state.module_depth += 1
    try:
        with _reparametrized(module, values, given):
            return module(*args, **kwargs)
    finally:
        state.module_depth -= 1


nabla_func.register_functional_call(functional_call)  # (nabla.func.functional_call, torch.func's name)

"""Containers (PyTorch's `torch.nn.modules.container`): Sequential, ModuleList, ModuleDict,
ParameterList, ParameterDict. Children are named as in PyTorch ("0", "1", ... or the dict
keys), so state_dict keys match ("layers.1.weight")."""

from __future__ import annotations

import operator
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from nabla import Tensor

from ..module import Module
from ..parameter import Parameter

__all__ = ["Container", "ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]


def _index(idx: Any, size: int, what: str) -> int:
    """`idx` as a position in [0, size), with PyTorch's IndexError otherwise."""
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range for {what} of length {size}")
    return idx % size


def _renumber(container: Module, modules: list[Module]) -> None:
    """Children "0", "1", ... in order, rebuilt in the module's own store: a change there is
    seen (a compiled forward retraces); a new dict would hide this and every later change."""
    container._modules.clear()
    container._modules.update((str(i), m) for i, m in enumerate(modules))


def _check_module(module: Any, where: str) -> Module:
    if not isinstance(module, Module):
        raise TypeError(f"{where}: {type(module).__name__} is not a Module subclass")
    return module


def _check_factor(seq: Sequential, other: Any) -> None:
    if not isinstance(other, int):
        raise TypeError(f"unsupported operand type(s) for *: {type(seq)} and {type(other)}")
    if other <= 0:
        raise ValueError(f"Non-positive multiplication factor {other} for {type(seq)}")


class Sequential(Module):
    """Modules called in order, each on the previous one's output.

    Children are named "0", "1", ... or, from an OrderedDict, by its keys.

    Args:
        *args: the modules, or one OrderedDict of name -> module.

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> list(model.state_dict())
        ['0.weight', '0.bias', '2.weight', '2.bias']
        >>> model = nn.Sequential(OrderedDict([("fc", nn.Linear(4, 2)), ("act", nn.ReLU())]))
        >>> model.fc.out_features
        2
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, _check_module(module, f"Sequential[{key!r}]"))
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), _check_module(module, f"Sequential argument {idx}"))

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[list(self._modules)[_index(idx, len(self), "Sequential")]]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        self._modules[key] = _check_module(module, "Sequential.__setitem__")

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        for key in keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(self), "Sequential")]]:
            del self._modules[key]
        _renumber(self, list(self._modules.values()))  # as PyTorch does

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return type(self)(*self, *other)

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return self.extend(other)

    def __mul__(self, other: int) -> Sequential:
        _check_factor(self, other)
        return type(self)(*(list(self) * other))

    def __rmul__(self, other: int) -> Sequential:
        return self.__mul__(other)

    def __imul__(self, other: int) -> Sequential:
        """`seq *= n`: the same modules appended n - 1 more times, in place (as PyTorch)."""
        _check_factor(self, other)
        return self.extend(list(self) * (other - 1))

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, module: Module) -> Sequential:
        """Add `module` at the end; returns self."""
        self.add_module(str(len(self)), _check_module(module, "Sequential.append"))
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Insert `module` before position `index` (negative counts from the end); returns self."""
        _check_module(module, "Sequential.insert")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        index = index + n if index < 0 else index
        modules = list(self._modules.values())
        modules.insert(index, module)
        _renumber(self, modules)
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        """Append every module of `sequential`; returns self."""
        for module in sequential:
            self.append(module)
        return self

    def pop(self, key: int | slice) -> Module:
        """Remove and return the module at `key`."""
        v = self[key]
        del self[key]
        return v

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered as children "0", "1", ... (it has no forward).

    Args:
        modules: an iterable of modules to add.

    Example:
        >>> layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        >>> list(layers.state_dict())[:2]
        ['0.weight', '0.bias']
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self += modules

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx: int, module: Module) -> None:
        self._modules[str(_index(idx, len(self), "ModuleList"))] = _check_module(module, "ModuleList.__setitem__")

    def __delitem__(self, idx: int | slice) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                del self._modules[str(k)]
        else:
            del self._modules[str(_index(idx, len(self), "ModuleList"))]
        _renumber(self, list(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return type(self)([*self, *other])

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]

    def insert(self, index: int, module: Module) -> None:
        """Insert `module` before position `index`."""
        _check_module(module, "ModuleList.insert")
        modules = list(self._modules.values())
        modules.insert(index, module)
        _renumber(self, modules)

    def append(self, module: Module) -> ModuleList:
        """Add `module` at the end; returns self."""
        self.add_module(str(len(self)), _check_module(module, "ModuleList.append"))
        return self

    def pop(self, key: int | slice) -> Module:
        """Remove and return the module at `key`."""
        v = self[key]
        del self[key]
        return v

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Append every module of `modules`; returns self."""
        if not isinstance(modules, Iterable) or isinstance(modules, Module) and not isinstance(modules, ModuleList):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got {type(modules).__name__}")
        for module in modules:
            self.append(module)
        return self

    def __repr__(self) -> str:
        """Runs of identical reprs are compressed to "(0-2): 3 x Linear(...)", as PyTorch."""
        reprs = [repr(m).replace("\n", "\n  ") for m in self]
        if not reprs:
            return f"{self._get_name()}()"
        lines, start = [], 0
        for i in range(1, len(reprs) + 1):
            if i == len(reprs) or reprs[i] != reprs[start]:
                head = f"({start})" if i - start == 1 else f"({start}-{i - 1}): {i - start} x"
                lines.append(f"{head}: {reprs[start]}" if i - start == 1 else f"{head} {reprs[start]}")
                start = i
        return self._block(lines)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ModuleList has no forward: call its modules (iterate over it) instead")


class ModuleDict(Module):
    """A dict of modules, registered as children under their keys (it has no forward).

    Args:
        modules: a mapping or an iterable of (key, module) pairs.

    Example:
        >>> heads = nn.ModuleDict({"cls": nn.Linear(8, 10), "box": nn.Linear(8, 4)})
        >>> list(heads.state_dict())
        ['cls.weight', 'cls.bias', 'box.weight', 'box.bias']
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        if key not in self._modules:
            raise KeyError(f"ModuleDict has no key {key!r} (keys: {list(self._modules)})")
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, _check_module(module, f"ModuleDict[{key!r}]"))

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Remove and return the module under `key`."""
        v = self[key]
        del self[key]
        return v

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add (or replace) modules from a mapping, a ModuleDict or an iterable of (key, module)
        pairs, in their order."""
        if isinstance(modules, Mapping | ModuleDict):
            for key, module in modules.items():
                self[key] = module
            return
        if not isinstance(modules, Iterable):
            raise TypeError(
                f"ModuleDict.update should be called with a mapping or iterable, got {type(modules).__name__}"
            )
        for j, m in enumerate(modules):
            if not isinstance(m, tuple | list) or len(m) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} should be a (key, module) pair, got {m!r}")
            self[m[0]] = m[1]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ModuleDict has no forward: call its modules instead")


def _as_parameter(value: Any) -> Any:
    """Tensors and arrays become Parameters (as PyTorch's ParameterList/Dict); others stay."""
    if isinstance(value, Parameter) or value is None:
        return value
    if isinstance(value, np.ndarray):
        value = Tensor.from_numpy(value)
    if isinstance(value, Tensor):
        return Parameter(value.realize() if not value.is_realized else value)
    return value


def _param_lines(items: Iterable[tuple[Any, Any]]) -> str:
    """PyTorch's ParameterList/Dict extra_repr, indented two spaces as there (so one entry
    prints inline, several as an indented block); dtypes keep nabla's names ("float32")."""
    lines = []
    for key, value in items:
        if isinstance(value, Tensor):
            size = "x".join(str(d) for d in value.shape)
            kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
            lines.append(f"  ({key}): {kind} containing: [{value.dtype.name} of size {size}]")
        else:
            lines.append(f"  ({key}): Object of type: {type(value).__name__}")
    return "\n".join(lines)


class ParameterList(Module):
    """A list of parameters, registered as "0", "1", ... (tensors are wrapped as Parameters).

    Args:
        values: an iterable of parameters (or tensors) to add.

    Example:
        >>> params = nn.ParameterList([nn.Parameter(nb.randn(4, 4)) for _ in range(3)])
        >>> list(params.state_dict())
        ['0', '1', '2']
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        object.__setattr__(self, "_size", 0)
        if values is not None:
            self += values

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(_index(idx, len(self), "ParameterList")))

    def __setitem__(self, idx: int, param: Any) -> None:
        setattr(self, str(_index(idx, len(self), "ParameterList")), _as_parameter(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters: Iterable[Any]) -> ParameterList:
        return self.extend(parameters)

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value: Any) -> ParameterList:
        """Add `value` at the end; returns self."""
        new_idx = len(self)
        object.__setattr__(self, "_size", new_idx + 1)
        setattr(self, str(new_idx), _as_parameter(value))
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Append every value; returns self."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got {type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return _param_lines(enumerate(self))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ParameterList has no forward")


class ParameterDict(Module):
    """A dict of parameters registered under their keys (tensors are wrapped as Parameters).

    Args:
        parameters: a mapping or an iterable of (key, parameter) pairs.

    Example:
        >>> params = nn.ParameterDict({"scale": nn.Parameter(nb.ones(3))})
        >>> list(params.state_dict())
        ['scale']
    """

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        object.__setattr__(self, "_keys", {})
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys:
            raise KeyError(f"ParameterDict has no key {key!r} (keys: {list(self._keys)})")
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict keys must be strings, got {type(key).__name__}")
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        """A new ParameterDict with the same parameters (not copied)."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for k in list(self._keys):
            del self[k]

    def pop(self, key: str) -> Any:
        """Remove and return the parameter under `key`."""
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple[str, Any]:
        if not self._keys:
            raise KeyError("popitem(): ParameterDict is empty")
        k = next(reversed(self._keys))
        return k, self.pop(k)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        return ParameterDict((k, default) for k in keys)

    def keys(self) -> Iterable[str]:
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterable[Any]:
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        """Add (or replace) parameters from a mapping or an iterable of (key, value) pairs.

        As PyTorch: an OrderedDict, a ParameterDict or pairs keep their order; the keys of any
        other mapping (a plain dict) are added in sorted order."""
        if isinstance(parameters, OrderedDict | ParameterDict):
            for key, value in parameters.items():
                self[key] = value
            return
        if isinstance(parameters, Mapping):
            for key, value in sorted(parameters.items()):
                self[key] = value
            return
        if not isinstance(parameters, Iterable):
            raise TypeError(f"ParametersDict.update should be called with an iterable, got {type(parameters).__name__}")
        for j, p in enumerate(parameters):
            if not isinstance(p, tuple | list) or len(p) != 2:
                raise ValueError(f"ParameterDict update sequence element #{j} should be a (key, value) pair, got {p!r}")
            self[p[0]] = p[1]

    def __or__(self, other: ParameterDict) -> ParameterDict:
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self

    def extra_repr(self) -> str:
        return _param_lines(self.items())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ParameterDict has no forward")


class Container(Module):
    """Deprecated in PyTorch (a FutureWarning at construction): a Module whose keyword
    arguments become its children. Subclass `Module` instead.

    Example:
        >>> box = nn.Container(fc=nn.Linear(2, 3))  # FutureWarning
    """

    def __init__(self, **kwargs: Module) -> None:
        warnings.warn(
            "`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
            "Subclass that instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)

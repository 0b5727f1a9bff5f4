"""Custom ops: wrap a MAX custom Mojo kernel (or any MAX graph code) as a nabla op with
user-supplied shape inference, NumPy reference kernel and derivative rules.

`custom_op(...)` returns a `CustomOp`, an `Operation` like every built-in op: calling it
records one node in the lazy trace, the NumPy executor runs `numpy_kernel`, the MAX executor
lowers it with `max.graph.ops.custom` (a kernel registered with `@register("name")` in a Mojo
package) or with `max_kernel` (Python code building MAX graph ops), and autodiff uses the `vjp`
and `jvp` rules, which are written with nabla ops and so are themselves differentiable.

Under vmap (`vmap_method`): "sequential" (the default) runs the user's kernels once per batch
element, slicing the inputs and stacking the outputs inside the lowering; "broadcast_all" hands
them the batched inputs, batch dims leading, for ops that treat leading dims independently.

The Mojo package (`kernel_path`: a source directory with `__init__.mojo`, or a compiled
`.mojoc`) is built once (cached by the content of its sources) and handed to MAX through `custom_extensions` by the MAX
executor. The op's identity and its kernel path are part of the compiled-model cache key.

See docs/custom_ops.md for a complete example.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from max.dtype import DType
from max.graph import TensorType, ops

from ..core.common import dtypes as _dt
from ..core.graph.executors import graph_device
from ..core.tensor.impl import TensorImpl
from ..core.tensor.tensor import Tensor
from .base import AVal, Operation, public
from .mojo_kernels import compiled_package, load_into_graph

__all__ = ["custom_op"]

_UIDS = itertools.count()
_KEY = "_custom_op"  # hidden kwarg: the op's identity in cache keys; stripped before user code
_BATCH = "_batch_dims"  # hidden kwarg under vmap: how many leading dims are batch dims
_VMAP_METHODS = ("sequential", "broadcast_all")


def _check_kernel_path(path: Any, name: str) -> Path:
    path = Path(path).expanduser().resolve()
    if path.is_file() and path.suffix == ".mojoc":
        return path
    if path.is_dir() and (path / "__init__.mojo").is_file():
        return path
    raise ValueError(
        f"custom_op {name!r}: kernel_path={str(path)!r} is not a Mojo package "
        "(a directory containing __init__.mojo, or a compiled .mojoc file)"
    )


def _as_aval(value: Any, name: str) -> AVal:
    if not (isinstance(value, tuple | list) and len(value) == 2 and isinstance(value[0], tuple | list)):
        raise TypeError(
            f"custom op {name!r}: abstract_eval must return (shape, dtype) or a list of them, got {value!r}"
        )
    shape, dtype = value
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise TypeError(f"custom op {name!r}: abstract_eval returned a bad shape {shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"custom op {name!r}: abstract_eval returned a negative dimension in {dims}")
    return dims, _dt.as_dtype(dtype, arg=f"custom op {name!r}: abstract_eval dtype")


def _as_tuple(result: Any) -> tuple:
    return tuple(result) if isinstance(result, tuple | list) else (result,)


class CustomOp(Operation):
    """A user-defined op (build one with `custom_op`).

    Instances carry the user's functions; the class name "custom" is what the op registry
    covers. Static keyword arguments of a call are passed to every piece (abstract_eval,
    numpy_kernel, vjp, jvp, max_kernel) and, for a Mojo kernel, as its compile-time parameters.
    """

    name = "custom"  # no sharding rule: the user's kernels see whole values (sharded inputs are gathered)

    def __init__(
        self,
        name: str,
        *,
        abstract_eval: Callable[..., Any],
        numpy_kernel: Callable[..., Any],
        vjp: Callable[..., Any] | None = None,
        jvp: Callable[..., Any] | None = None,
        max_kernel: Callable[..., Any] | None = None,
        mojo_kernel: str | None = None,
        kernel_path: Any = None,
        differentiable: bool = True,
        vmap_method: str = "sequential",
    ) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"custom_op: name must be a non-empty string, got {name!r}")
        for arg, fn in (("abstract_eval", abstract_eval), ("numpy_kernel", numpy_kernel)):
            if not callable(fn):
                raise TypeError(f"custom_op {name!r}: {arg} must be callable, got {type(fn).__name__}")
        for arg, fn in (("vjp", vjp), ("jvp", jvp), ("max_kernel", max_kernel)):
            if fn is not None and not callable(fn):
                raise TypeError(f"custom_op {name!r}: {arg} must be callable or None, got {type(fn).__name__}")
        if max_kernel is not None and (kernel_path is not None or mojo_kernel is not None):
            raise ValueError(f"custom_op {name!r}: give either max_kernel or a Mojo kernel (kernel_path), not both")
        if mojo_kernel is not None and kernel_path is None:
            raise ValueError(f"custom_op {name!r}: mojo_kernel={mojo_kernel!r} needs kernel_path (its Mojo package)")
        if vmap_method not in _VMAP_METHODS:
            raise ValueError(f"custom_op {name!r}: vmap_method must be one of {_VMAP_METHODS}, got {vmap_method!r}")
        self.name = name
        self.vmap_method = vmap_method
        self.differentiable = bool(differentiable)
        self._abstract_eval = abstract_eval
        self._numpy_kernel = numpy_kernel
        self._vjp = vjp
        self._jvp = jvp
        self._max_kernel = max_kernel
        self.mojo_kernel = mojo_kernel or name
        self.kernel_path = None if kernel_path is None else _check_kernel_path(kernel_path, name)
        self._key = (next(_UIDS), name, None if self.kernel_path is None else str(self.kernel_path))

    @property
    def custom_extensions(self) -> tuple[Path, ...]:
        """Compiled kernel packages MAX must load for this op (read by the MAX executor)."""
        return () if self.kernel_path is None else (compiled_package(self.kernel_path, f"custom op {self.name!r}"),)

    # -- calling ---------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        for i, a in enumerate(args):
            if not isinstance(a, Tensor):
                raise TypeError(f"custom op {self.name!r}: argument {i} must be a Tensor, got {type(a).__name__}")
        for key in (_KEY, _BATCH):
            if key in kwargs:
                raise TypeError(f"custom op {self.name!r}: {key} is a reserved keyword")
        return super().__call__(*args, **kwargs)

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        return {**kwargs, _KEY: self._key, **({_BATCH: batch_dims} if batch_dims else {})}

    @staticmethod
    def _user(kwargs: dict) -> dict:
        return {k: v for k, v in kwargs.items() if k not in (_KEY, _BATCH)}

    def _sequential(self, kwargs: dict) -> int:
        """The number of batch dims the kernels loop over (0: call the user's kernel once)."""
        return kwargs.get(_BATCH, 0) if self.vmap_method == "sequential" else 0

    # -- the pieces, delegating to the user's functions --------------------------------------
    def compute_physical_shape(self, impls: list[TensorImpl], kwargs: dict) -> list[AVal]:
        return self._physical_avals([(i.physical_shape, i.dtype) for i in impls], kwargs)

    def _physical_avals(self, avals: list[AVal], kwargs: dict) -> list[AVal]:
        bd = kwargs.get(_BATCH, 0)
        prefix = avals[0][0][:bd] if bd else ()
        if self._sequential(kwargs):  # the user's shape rule sees one batch element
            return [(prefix + s, d) for s, d in self._avals([(s[bd:], d) for s, d in avals], kwargs)]
        out = self._avals(avals, kwargs)
        for shape, _ in out:
            if shape[:bd] != prefix:
                raise ValueError(
                    f"custom op {self.name!r} (vmap_method='broadcast_all'): abstract_eval returned shape "
                    f"{shape}, which does not keep the inputs' leading batch dims {prefix}"
                )
        return out

    def _avals(self, avals: list[AVal], kwargs: dict) -> list[AVal]:
        result = self._abstract_eval(*avals, **self._user(kwargs))
        if isinstance(result, list):
            if not result:
                raise TypeError(f"custom op {self.name!r}: abstract_eval returned no outputs")
            return [_as_aval(r, self.name) for r in result]
        return [_as_aval(result, self.name)]

    def kernel(self, *values: Any, **kwargs: Any) -> Any:
        bd = self._sequential(kwargs)
        if not bd:
            return self._kernel(*values, **kwargs)
        # vmap, sequential: one lowering per batch element, outputs stacked
        prefix = tuple(int(d) for d in values[0].shape[:bd])
        n = math.prod(prefix)
        if n == 0:
            avals = self._physical_avals([(prefix + tuple(v.shape[bd:]), v.dtype) for v in values], kwargs)
            out = [ops.broadcast_to(ops.constant(0, d, values[0].device), s) for s, d in avals]
        else:
            flat = [ops.reshape(v, (n, *v.shape[bd:])) for v in values]
            runs = [_as_tuple(self._kernel(*[f[i] for f in flat], **kwargs)) for i in range(n)]
            out = [ops.reshape(ops.stack(list(r), 0), prefix + tuple(r[0].shape)) for r in zip(*runs, strict=True)]
        return tuple(out) if len(out) > 1 else out[0]

    def _kernel(self, *values: Any, **kwargs: Any) -> Any:
        user = self._user(kwargs)
        if self._max_kernel is not None:
            return self._max_kernel(*values, **user)
        if self.kernel_path is None:
            raise NotImplementedError(
                f"custom op {self.name!r} has no MAX lowering: pass kernel_path= (a Mojo package) or max_kernel="
            )
        load_into_graph(self.custom_extensions)
        for key, value in user.items():
            if not isinstance(value, bool | int | float | str | DType):
                raise TypeError(
                    f"custom op {self.name!r}: keyword {key}={value!r} cannot be a Mojo kernel parameter "
                    "(use a bool, int, float, str or dtype)"
                )
        avals = self._avals([(tuple(int(d) for d in v.shape), v.dtype) for v in values], kwargs)
        device = values[0].device if values else graph_device()
        out_types = [TensorType(dtype, shape, device=device) for shape, dtype in avals]
        results = ops.custom(self.mojo_kernel, device, list(values), out_types, parameters=user or None)
        tensors = tuple(r.tensor for r in results)
        return tensors if len(tensors) > 1 else tensors[0]

    def numpy_kernel(self, *arrays: np.ndarray, **kwargs: Any) -> Any:
        bd = self._sequential(kwargs)
        user = self._user(kwargs)
        if not bd:
            return self._numpy_kernel(*arrays, **user)
        prefix = arrays[0].shape[:bd]
        n = math.prod(prefix)
        if n == 0:
            avals = self._physical_avals([(a.shape, _dt.from_numpy_dtype(a.dtype)) for a in arrays], kwargs)
            out = [np.zeros(s, _dt.to_numpy_dtype(d)) for s, d in avals]
        else:
            flat = [a.reshape((n, *a.shape[bd:])) for a in arrays]
            runs = [_as_tuple(self._numpy_kernel(*[f[i] for f in flat], **user)) for i in range(n)]
            out = [
                np.stack([np.asarray(x) for x in r]).reshape(prefix + np.shape(r[0])) for r in zip(*runs, strict=True)
            ]
        return tuple(out) if len(out) > 1 else out[0]

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kwargs: Any) -> list:
        if self._vjp is None:
            raise NotImplementedError(
                f"custom op {self.name!r} has no vjp rule: pass vjp= to custom_op for reverse-mode derivatives"
            )
        result = self._vjp(primals, cotangents, outputs, **self._user(kwargs))
        return self._rule_result(result, len(primals), "vjp", "input cotangents")

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kwargs: Any) -> list:
        if self._jvp is None:
            raise NotImplementedError(
                f"custom op {self.name!r} has no jvp rule: pass jvp= to custom_op for forward-mode derivatives"
            )
        result = self._jvp(primals, tangents, outputs, **self._user(kwargs))
        return self._rule_result(result, len(outputs), "jvp", "output tangents")

    def _rule_result(self, result: Any, expected: int, rule: str, what: str) -> list:
        if isinstance(result, Tensor) or result is None:
            result = [result]
        result = list(result)
        if len(result) != expected:
            raise ValueError(f"custom op {self.name!r}: {rule} returned {len(result)} {what}, expected {expected}")
        for r in result:
            if r is not None and not isinstance(r, Tensor):
                raise TypeError(f"custom op {self.name!r}: {rule} must return Tensors or None, got {type(r).__name__}")
        return result

    def __repr__(self) -> str:
        return f"<custom op {self.name}>"


@public()
def custom_op(
    name: str,
    *,
    abstract_eval: Callable[..., Any],
    numpy_kernel: Callable[..., Any],
    vjp: Callable[..., Any] | None = None,
    jvp: Callable[..., Any] | None = None,
    max_kernel: Callable[..., Any] | None = None,
    mojo_kernel: str | None = None,
    kernel_path: Any = None,
    differentiable: bool = True,
    vmap_method: str = "sequential",
) -> CustomOp:
    """Define a new op from user functions; call the result like a function of Tensors.

    Every function receives the call's static keyword arguments (Python bool/int/float/str or
    dtypes) as keywords; they are part of the compiled-model cache key and, for a Mojo kernel,
    its compile-time parameters.

    Args:
        name: the op's name (and the Mojo kernel's registered name unless `mojo_kernel` says
            otherwise).
        abstract_eval: `(*avals, **kw) -> (shape, dtype)` or a list of them for several
            outputs, where each aval is an input's `(shape, dtype)`. Raise here on bad input.
        numpy_kernel: `(*arrays, **kw) -> array` (or a tuple): the reference implementation
            the NumPy executor runs.
        vjp: `(primals, cotangents, outputs, **kw) -> [one cotangent (or None) per input]`,
            written with nabla ops. Without it, reverse mode raises.
        jvp: `(primals, tangents, outputs, **kw) -> [one tangent per output]`.
        max_kernel: `(*values, **kw) -> value(s)` building the op from `max.graph.ops` on
            TensorValues (an alternative to a Mojo kernel).
        mojo_kernel: the name the Mojo kernel is registered under (default: `name`).
        kernel_path: the Mojo package holding the kernel: a source directory with
            `__init__.mojo` (built once, cached by content) or a compiled `.mojoc`.
        differentiable: False for ops whose outputs never carry gradients (integer outputs).
        vmap_method: how `vmap` batches the op (names as in JAX's `pure_callback`).
            "sequential" (default, always correct): the kernels run once per batch element
            and the outputs are stacked. "broadcast_all": every piece receives the batched
            inputs, all with the same leading batch dims, and must return outputs with those
            leading dims (for elementwise ops, or ops that treat leading dims independently).

    Example:
        >>> cube = nabla.custom_op(
        ...     "my_cube",
        ...     abstract_eval=lambda x: x,
        ...     numpy_kernel=lambda x: x**3,
        ...     vjp=lambda primals, cots, outs: [cots[0] * 3 * primals[0] ** 2],
        ...     jvp=lambda primals, tans, outs: [tans[0] * 3 * primals[0] ** 2],
        ...     kernel_path="kernels/",  # a Mojo package with @register("my_cube")
        ... )
        >>> y = cube(nabla.tensor([1.0, 2.0]))
    """
    return CustomOp(
        name,
        abstract_eval=abstract_eval,
        numpy_kernel=numpy_kernel,
        vjp=vjp,
        jvp=jvp,
        max_kernel=max_kernel,
        mojo_kernel=mojo_kernel,
        kernel_path=kernel_path,
        differentiable=differentiable,
        vmap_method=vmap_method,
    )

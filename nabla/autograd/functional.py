"""torch.autograd.functional (`nabla.autograd.functional`): Jacobians, Hessians and vector
products of a function at given inputs, computed with nabla's transforms.

Example:
    >>> nabla.autograd.functional.jacobian(lambda x: x * x, nabla.tensor([1.0, 2.0])).tolist()
    [[2.0, 0.0], [0.0, 4.0]]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.common.context import enable_grad
from ..core.common.pytree import tree_flatten, tree_unflatten
from ..core.tensor import Tensor
from ..ops import ones_like
from ..transforms.grad import grad as _grad
from ..transforms.grad import jvp as _jvp
from ..transforms.grad import vjp as _vjp
from ..transforms.jacobians import hessian as _hessian
from ..transforms.jacobians import jacfwd, jacrev

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _inputs(inputs: Any) -> tuple[bool, tuple]:
    return (True, (inputs,)) if isinstance(inputs, Tensor) else (False, tuple(inputs))


def _directions(v: Any, single: bool, xs: tuple) -> tuple:
    """The tangent per input: `v` as given (in its input's dtype: torch takes a float32 `v` for a
    float64 input), or ones (torch's default for one-element inputs)."""
    if v is None:
        return tuple(ones_like(x) for x in xs)
    vs = (v,) if single else tuple(v)
    return tuple(
        t.to(x.dtype) if isinstance(t, Tensor) and t.dtype != x.dtype else t for t, x in zip(vs, xs, strict=False)
    )


def _check_strict(func: Callable, xs: tuple, strict: bool) -> None:
    """torch's strict mode: raise if an output does not depend on an input (its Jacobian block
    would be zeros by construction). Runs `func` once more, lazily, on inputs that record."""
    if not strict:
        return
    probes = [x.detach().requires_grad_(True) for x in xs]
    with enable_grad():
        outs = tree_flatten(func(*probes))[0]
    for i, out in enumerate(o for o in outs if isinstance(o, Tensor)):
        reached = _ancestors(out._impl)
        for j, p in enumerate(probes):
            if id(p._impl) not in reached:
                raise RuntimeError(
                    f"Output {i} of the user-provided function is independent of input {j}. This is not allowed in "
                    "strict mode."
                )


def _ancestors(impl: Any) -> set[int]:
    """The ids of the impls `impl` was computed from (itself included), through recorded ops."""
    seen, stack = {id(impl)}, [impl]
    while stack:
        node = stack.pop().output_refs
        for arg in () if node is None else node.args:
            if id(arg) not in seen:
                seen.add(id(arg))
                stack.append(arg)
    return seen


def _result(value: Any, create_graph: bool) -> Any:
    """torch's results: detached unless `create_graph` (then differentiable, for higher orders)."""
    if create_graph:
        return value
    leaves, treedef = tree_flatten(value)
    return tree_unflatten(treedef, [x.detach() if isinstance(x, Tensor) else x for x in leaves])


def jacobian(
    func: Callable,
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian of `func` at `inputs` (a tensor, or a tuple: then one block per input)."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f"jacobian: strategy must be 'reverse-mode' or 'forward-mode', got {strategy!r}")
    single, xs = _inputs(inputs)
    _check_strict(func, xs, strict)
    transform = jacfwd if strategy == "forward-mode" else jacrev
    return _result(transform(func, argnums=0 if single else tuple(range(len(xs))))(*xs), create_graph)


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False, **kw: Any) -> Any:
    """The Hessian of scalar `func` at `inputs` (per pair of inputs for a tuple)."""
    single, xs = _inputs(inputs)
    _check_strict(func, xs, strict)
    return _result(_hessian(func, argnums=0 if single else tuple(range(len(xs))))(*xs), create_graph)


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """`(func(inputs), v^T J)`; `v` may be omitted for a one-element output."""
    single, xs = _inputs(inputs)
    _check_strict(func, xs, strict)
    out, pull = _vjp(func, *xs)
    cotangent = ones_like(out) if v is None else v
    if isinstance(out, Tensor) and isinstance(cotangent, Tensor) and cotangent.dtype != out.dtype:
        cotangent = cotangent.to(out.dtype)  # (as torch takes it)
    grads = pull(cotangent)
    return _result((out, grads[0] if single else tuple(grads)), create_graph)


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """`(func(inputs), J v)`; `v` may be omitted for a one-element input."""
    single, xs = _inputs(inputs)
    _check_strict(func, xs, strict)
    vs = _directions(v, single, xs)
    return _result(_jvp(func, xs, vs), create_graph)


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """`(func(inputs), H v)` for scalar `func` (forward over reverse)."""
    single, xs = _inputs(inputs)
    _check_strict(func, xs, strict)
    vs = _directions(v, single, xs)
    argnums = 0 if single else tuple(range(len(xs)))
    _, product = _jvp(_grad(func, argnums), xs, vs)
    return _result((func(*xs), product), create_graph)


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """`(func(inputs), v^T H)`: `hvp`, the Hessian being symmetric."""
    return hvp(func, inputs, v, create_graph, strict)

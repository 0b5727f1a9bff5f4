"""grad, value_and_grad, vjp and jvp: functional entry points to the same autodiff engine
that `Tensor.backward()` uses."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core.autograd.engine import backward_on_trace
from ..core.common import dtypes as _dt
from ..core.common.context import enable_grad, vmap_depth
from ..core.common.pytree import leaf_paths, tree_flatten, tree_map, tree_unflatten
from ..core.tensor.tensor import Tensor
from ..ops.base import new_jvp_level
from ..ops.creation import tensor, zeros_like
from ..ops.view import detach_trace, identity


def _wrt_leaf(x: Any, where: str, name: str) -> Tensor:
    """A fresh traced alias of `x`: gradients stop here, so closures over `x` stay constants
    (no perturbation confusion in nested grads) while an outer trace still reaches `x`."""
    if not isinstance(x, Tensor):
        x = tensor(x)
    if not _dt.is_float(x.dtype):
        raise TypeError(
            f"{where}: can only differentiate with respect to floating-point inputs, but {name} has dtype {x.dtype.name}"
        )
    with enable_grad():
        w = identity(x)
    w._impl.requires_grad = True
    return w


def _write_back_in_place_updates(leaves: list, wrt: list, wrt_impls: list) -> None:
    """An argument fn updated in place (BatchNorm's running stats in a module passed to grad)
    keeps the new value, as in PyTorch: fn ran on an alias of it, so install the alias's new
    value (without its autodiff history) in the caller's tensor. Values batched by a vmap
    inside fn cannot be written to an unbatched argument and are left out."""
    for x, w, before in zip(leaves, wrt, wrt_impls, strict=True):
        if w is x or w._impl is before or not isinstance(x, Tensor):
            continue
        if w._impl.batch_dims > x._impl.batch_dims:
            continue
        x._install(detach_trace(w)._impl)


def _is_constant_leaf(x: Any, direct: set[int]) -> bool:
    return isinstance(x, Tensor) and not _dt.is_float(x.dtype) and id(x) not in direct


def argnums_tuple(argnums: int | Sequence[int], nargs: int, where: str) -> tuple[int, ...]:
    """`argnums` (an int or a sequence) as non-negative positions; `where` names the transform."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not -nargs <= n < nargs:
            raise ValueError(f"{where}: argnums {argnums} is out of range for {nargs} positional arguments")
    positions = tuple(n % nargs for n in nums)
    if len(set(positions)) != len(positions):  # (a repeat's gradient came out as zeros)
        raise ValueError(f"{where}: argnums {argnums} must name each argument once (as torch.func and JAX)")
    return positions


def vjp(fn: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """Run `fn(*primals)` and return `(output, vjp_fn)` (plus `aux` with `has_aux=True`).

    `vjp_fn(cotangent)` returns one cotangent per primal, with the primals' pytree structure.
    It may be called under a vmap (over a batch of cotangents); if `fn` has vmaps of its own,
    `fn` is then traced again inside that vmap.

    Example:
        >>> y, f_vjp = nabla.vjp(nabla.sin, x)
        >>> (dx,) = f_vjp(nabla.ones_like(y))
    """
    return _vjp(fn, primals, has_aux, "vjp")


def _vjp(fn: Callable, primals: tuple, has_aux: bool, where: str, names: list[str] | None = None) -> tuple:
    """vjp, with errors naming `where` (the public transform) and each leaf by `names`."""
    leaves, treedef = tree_flatten(primals)
    names = names or [f"primals{p}" for p in leaf_paths(primals)]
    # Inside an outer grad (or with inputs that require grad) keep the result differentiable.
    nested = any(isinstance(x, Tensor) and x.requires_grad for x in leaves)
    # Integer/bool tensors inside a container (a Module's step counters) are carried along as
    # constants with a None gradient; a non-float tensor passed directly is an error.
    direct = {id(p) for p in primals}
    wrt = [x if _is_constant_leaf(x, direct) else _wrt_leaf(x, where, n) for x, n in zip(leaves, names, strict=True)]
    depth = vmap_depth()
    # The values differentiated against, held before fn runs: an in-place op inside fn
    # (`w.mul_(2)`) gives the facade a new value, but the gradient is w.r.t. the one passed in.
    wrt_impls = [w._impl for w in wrt]
    with enable_grad():
        result = fn(*tree_unflatten(treedef, wrt))
    _write_back_in_place_updates(leaves, wrt, wrt_impls)
    aux = None
    if has_aux:
        if not (isinstance(result, tuple) and len(result) == 2):
            raise TypeError(f"{where}: with has_aux=True, fn must return a pair (output, aux)")
        result, aux = result
    out_leaves, out_def = tree_flatten(result)
    for o in out_leaves:
        if not isinstance(o, Tensor):
            raise TypeError(f"{where}: fn must return Tensors, got {type(o).__name__}")
    plain = not nested and not _reaches_outer_grad([o._impl for o in out_leaves], wrt_impls)

    def vjp_fn(cotangent: Any) -> tuple:
        if vmap_depth() > depth and wrt and _has_inner_levels([o._impl for o in out_leaves], wrt_impls[0].seq, depth):
            # Called under a vmap that was not active when fn ran, and fn has vmaps of its own:
            # their levels would collide with the new one. Trace fn again at this depth.
            return _vjp(fn, primals, has_aux, where, names)[1](cotangent)
        cot_leaves, cot_def = tree_flatten(cotangent)
        if cot_def != out_def:
            raise ValueError(f"vjp_fn: cotangent structure {cot_def} does not match output structure {out_def}")
        cots = []
        for i, (o, c) in enumerate(zip(out_leaves, cot_leaves, strict=True)):
            c = c if isinstance(c, Tensor) else tensor(c, o.dtype)
            if c.shape != o.shape:
                raise ValueError(f"vjp_fn: cotangent {i} has shape {c.shape}, output has shape {o.shape}")
            cots.append(c)
        grads = backward_on_trace([o._impl for o in out_leaves], cots, wrt_impls)
        res = [
            None if _is_constant_leaf(w, direct) else grads[id(i)][1] if id(i) in grads else zeros_like(w)
            for w, i in zip(wrt, wrt_impls, strict=True)
        ]
        if plain:  # top level: results are plain values, as with torch.func / JAX
            res = [None if r is None else detach_trace(r) for r in res]
        return tree_unflatten(treedef, res)

    vjp_fn.top_level = plain  # (value_and_grad returns the value and aux as plain values then)
    return (result, vjp_fn, aux) if has_aux else (result, vjp_fn)


def _plain(x: Any) -> Any:
    """A traced tensor as a value without autodiff history (forward-mode tangents kept)."""
    return detach_trace(x) if isinstance(x, Tensor) and x.requires_grad else x


def _reaches_outer_grad(roots: list, wrt_impls: list) -> bool:
    """Whether fn's outputs depend on a tensor that requires grad other than the arguments
    differentiated: one fn closes over (`grad(lambda a: (a * w).sum())` inside a grad of `w`,
    or a Module's parameters). The gradients then keep that dependence, for the outer grad or
    `backward()` to differentiate, as JAX and torch.func do."""
    start = min((i.seq for i in wrt_impls), default=0)  # tensors older than this came from outside
    stop = {id(i) for i in wrt_impls}
    stack, seen = list(roots), set()
    while stack:
        impl = stack.pop()
        if id(impl) in seen or id(impl) in stop:
            continue
        seen.add(id(impl))
        if impl.seq < start or impl.output_refs is None:
            if impl.requires_grad:
                return True
            continue
        stack.extend(impl.output_refs.args)
    return False


def _has_inner_levels(roots: list, start: int, depth: int) -> bool:
    """Whether the trace from `roots` back to tensors created before `start` batches anything
    over more than `depth` vmap levels (that is, contains a vmap of its own)."""
    stack, seen = list(roots), set()
    while stack:
        impl = stack.pop()
        if id(impl) in seen or impl.seq < start:
            continue
        seen.add(id(impl))
        if impl.batch_dims > depth:
            return True
        if impl.output_refs is not None:
            stack.extend(impl.output_refs.args)
    return False


def value_and_grad(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """Return a function computing `(fn(*args), gradient)`; with `has_aux`, `((value, aux), gradient)`.

    Args:
        fn: a function returning a scalar Tensor (or `(scalar, aux)` with `has_aux=True`).
        argnums: which positional argument(s) to differentiate; a tuple gives a tuple of grads.
        has_aux: fn returns a pair whose second element is passed through.
    """

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        nums = argnums_tuple(argnums, len(args), "grad")

        def partial(*diff_args: Any) -> Any:
            full = list(args)
            for n, a in zip(nums, diff_args, strict=True):
                full[n] = a
            return fn(*full, **kwargs)

        names = [f"args[{n}]{p}" for n in nums for p in leaf_paths(args[n])]
        out = _vjp(partial, tuple(args[n] for n in nums), has_aux, "grad", names)
        value, pullback = out[0], out[1]
        if not isinstance(value, Tensor) or value.numel() != 1:
            shape = value.shape if isinstance(value, Tensor) else type(value).__name__
            raise TypeError(
                f"grad: fn must return a scalar Tensor, got {shape}; use vjp or jacrev for non-scalar outputs"
            )
        if not _dt.is_float(value.dtype):  # (as JAX: an integer output has no gradient)
            raise TypeError(f"grad: fn must return a floating-point scalar, got dtype {value.dtype.name}")
        grads = pullback(tensor(1.0, value.dtype).reshape(value.shape))
        grads = grads[0] if isinstance(argnums, int) else tuple(grads)
        aux = out[2] if has_aux else None
        if pullback.top_level:  # plain values, as torch.func and JAX return: no trace kept alive
            value, aux = _plain(value), tree_map(_plain, aux)  # (`total = total + loss` in a loop)
        return ((value, aux) if has_aux else value), grads

    return wrapped


def grad(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """Return a function computing the gradient of scalar-valued `fn` (JAX's `grad`).

    Example:
        >>> df = nabla.grad(lambda x: (x * x).sum())
        >>> df(nabla.tensor([1.0, 2.0])).numpy()
        array([2., 4.], dtype=float32)
    """
    vg = value_and_grad(fn, argnums, has_aux)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        (value, grads) = vg(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapped


def jvp(
    fn: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False, *, strict: bool = False
) -> tuple:
    """Forward mode: `(fn(*primals), J @ tangents)`, with tangents pushed through each op's jvp_rule.

    Args:
        fn: the function; its positional arguments are the primals (pytrees of Tensors).
        primals: a tuple of arguments.
        tangents: a tuple of the same structure, shapes and dtypes.
        has_aux: fn returns `(output, aux)`; the result is then `(output, tangent, aux)`.
        strict: raise (torch.func.jvp's strict=True) when an output does not depend on the
            primals, instead of returning zeros as its tangent.

    Example:
        >>> y, dy = nabla.jvp(nabla.sin, (x,), (nabla.ones_like(x),))   # dy = cos(x)
    """
    if not isinstance(primals, tuple | list) or not isinstance(tangents, tuple | list):
        raise TypeError(
            f"jvp: primals and tangents must be tuples of arguments, got {type(primals).__name__} "
            f"and {type(tangents).__name__}"
        )
    p_leaves, p_def = tree_flatten(tuple(primals))
    t_leaves, t_def = tree_flatten(tuple(tangents))
    if p_def != t_def:
        raise ValueError(f"jvp: tangents structure {t_def} does not match primals structure {p_def}")
    inputs = []
    level = new_jvp_level()  # nested jvps get higher levels than the ones around them
    direct = {id(p) for p in primals}  # (integer tensors inside a container are carried along)
    for path, p, t in zip(leaf_paths(tuple(primals)), p_leaves, t_leaves, strict=True):
        if isinstance(p, Tensor) and id(p) in direct and not _dt.is_float(p.dtype):
            raise TypeError(f"jvp: primals{path} has dtype {p.dtype.name}; only floating-point primals have tangents")
        p = p if isinstance(p, Tensor) else tensor(p)
        t = t if isinstance(t, Tensor) else tensor(t, p.dtype)
        if p.shape != t.shape or p.dtype != t.dtype:
            raise ValueError(
                f"jvp: tangents{path} has shape {t.shape} and dtype {t.dtype.name}, "
                f"but primals{path} has shape {p.shape} and dtype {p.dtype.name}"
            )
        x = identity(p)  # carries p's tangents of outer jvps, if any
        x._impl.tangent = {**(x._impl.tangent or {}), level: t._impl}
        inputs.append(x)
    before = [x._impl for x in inputs]
    out = fn(*tree_unflatten(p_def, inputs))
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError("jvp: with has_aux=True, fn must return a pair (output, aux)")
        out, aux = out
    o_leaves, o_def = tree_flatten(out)
    for o in o_leaves:
        if not isinstance(o, Tensor):
            raise TypeError(f"jvp: fn must return Tensors, got {type(o).__name__}")
    independent = any(level not in (o._impl.tangent or {}) for o in o_leaves)
    tans = [Tensor(o._impl.tangent[level]) if level in (o._impl.tangent or {}) else zeros_like(o) for o in o_leaves]
    if not any(isinstance(t, Tensor) and t.requires_grad for t in t_leaves):
        # a tangent of an output without autodiff history is a plain value too (it may have
        # been computed from traced values, as jvp of a grad is)
        tans = [t if o.requires_grad else _plain(t) for o, t in zip(o_leaves, tans, strict=True)]
    roots = [x._impl for x in [*inputs, *o_leaves, *tree_flatten(aux)[0]] if isinstance(x, Tensor)]
    if inputs:
        _clear_tangents(roots, min(x._impl.seq for x in inputs), level)
    _write_back_in_place_updates(p_leaves, inputs, before)  # (after: without this jvp's tangents)
    if strict and independent:  # (torch's error, raised after the cleanup above)
        raise RuntimeError(
            "jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. "
            "This is not allowed with strict=True."
        )
    tangent_out = tree_unflatten(o_def, tans)
    return (out, tangent_out, aux) if has_aux else (out, tangent_out)


def _clear_tangents(roots: list, start: int, level: int) -> None:
    """Drop the tangents one jvp attached (to its inputs, intermediates and outputs): left in
    place, they would make later ops on these tensors (a VJP rule during backward, another jvp)
    run forward mode again. Only tensors created by this call (seq >= start) are touched."""
    stack = [r for r in roots if r.seq >= start]
    seen: set[int] = set()
    while stack:
        impl = stack.pop()
        if id(impl) in seen:
            continue
        seen.add(id(impl))
        if impl.tangent and level in impl.tangent:
            del impl.tangent[level]
            impl.tangent = impl.tangent or None
        node = impl.output_refs
        if node is not None:
            stack.extend(a for a in node.args if a.seq >= start)
            stack.extend(o for o in node.outputs() if o is not None)

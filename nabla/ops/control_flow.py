"""Control flow: `where`, and JAX's `cond`, `while_loop`, `fori_loop` and `scan` over pytrees.

The lazy core has no MAX loop or region op yet, so control flow is resolved while tracing:

- `cond` with a Python bool or a realized (concrete) predicate calls one branch. With a
  pending predicate it calls both and selects each output leaf with `where`, as `lax.select`
  would; gradients flow into the branch that was taken.
- `scan` and `fori_loop` with Python-int bounds unroll: each iteration's ops join the trace,
  so reverse- and forward-mode derivatives come for free.
- `while_loop` evaluates `cond_fun` on the host before every iteration (a data-dependent trip
  count), which computes everything pending at that point. As in JAX, reverse-mode
  differentiation through a `while_loop` raises a clear error (forward mode works);
  `fori_loop` with Tensor bounds is such a `while_loop`.

Under vmap a predicate may differ per batch element (it is batched): `cond` then selects per
element, and `while_loop` runs until every element is done, freezing finished ones with
`where` (JAX's batching rule for while_loop).

Every iteration checks that the carry keeps its pytree structure, shapes and dtypes, and
names the offending leaf when it does not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.common.context import is_grad_enabled, no_grad
from ..core.common.pytree import tree_flatten, tree_leaves, tree_unflatten
from ..core.sharding import OpShardingRule
from ..core.tensor.dispatch import OPS
from ..core.tensor.tensor import Tensor
from . import batching as _batching
from . import binary as _bin
from . import reduction as _red
from .base import AVal, Operation, public
from .cast import cast
from .creation import arange, full, tensor
from .view import broadcast_shapes, broadcast_to, reshape, unsqueeze

__all__ = ["cond", "fori_loop", "scan", "where", "while_loop"]


# -- where -------------------------------------------------------------------------------------
class WhereOp(Operation):
    name = "where"
    sharding_rule = "elementwise"

    def abstract_eval(self, cond: AVal, x: AVal, y: AVal) -> AVal:
        return x

    def kernel(self, cond: Any, x: Any, y: Any) -> Any:
        return ops.where(cond, x, y)

    def numpy_kernel(self, cond: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.where(cond, x, y)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        cond = primals[0]
        g = cotangents[0]
        zero = full((), 0, g.dtype)
        return [None, where(cond, g, zero), where(cond, zero, g)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        return [where(primals[0], tangents[1], tangents[2])]


_where = WhereOp()


_NO_VALUE = object()


@public()
def where(condition: Any, x: Any = _NO_VALUE, y: Any = _NO_VALUE) -> Any:
    """Elementwise `x if condition else y`, broadcasting all three (`torch.where`). With the
    condition alone, `condition.nonzero(as_tuple=True)`: the indices where it holds, per dim.

    Example:
        >>> nabla.where(nabla.tensor([True, False]), 1.0, nabla.tensor([5.0, 6.0])).tolist()
        [1.0, 6.0]
    """
    if not isinstance(condition, Tensor):
        raise TypeError(f"where: condition must be a Tensor, got {type(condition).__name__}")
    if x is _NO_VALUE and y is _NO_VALUE:
        return condition.nonzero(as_tuple=True)
    if x is _NO_VALUE or y is _NO_VALUE:
        raise TypeError("where: pass both x and y, or neither (the indices where condition holds)")
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        # Two Python scalars: type them together, as torch.where does.
        x = full((), x, _dt.promote_types(_dt.python_scalar_dtype(x), _dt.python_scalar_dtype(y)))
    x, y = _bin.binary_operands("where", x, y)
    shape = broadcast_shapes(condition.shape, x.shape, op="where")
    cond_ = broadcast_to(cast(condition, _dt.bool_), shape)
    return _where(cond_, broadcast_to(x, shape), broadcast_to(y, shape))


# -- pytree helpers ----------------------------------------------------------------------------
def _paths(tree: Any, prefix: str = "") -> list[str]:
    """A readable path for each leaf of `tree`, in `tree_flatten` order (e.g. "[1]['w']")."""
    if tree is None:
        return []
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return [p for f, c in zip(tree._fields, tree, strict=True) for p in _paths(c, f"{prefix}.{f}")]
    if type(tree) is tuple or type(tree) is list:
        return [p for i, c in enumerate(tree) for p in _paths(c, f"{prefix}[{i}]")]
    if type(tree) is dict:
        return [p for k in sorted(tree, key=repr) for p in _paths(tree[k], f"{prefix}[{k!r}]")]
    leaves = tree_leaves(tree)
    if len(leaves) == 1 and leaves[0] is tree:
        return [prefix]
    return [f"{prefix}<{i}>" for i in range(len(leaves))]


def _describe(treedef: Any) -> str:
    """A compact picture of a pytree structure, leaves drawn as `*`."""
    return repr(tree_unflatten(treedef, ["*"] * treedef.num_leaves))


def _aval(t: Tensor) -> str:
    return f"shape {t.shape} {t.dtype.name}"


def _to_leaf(value: Any, op: str, what: str) -> Tensor:
    """Loop carries, scanned values and branch outputs are Tensors; Python/NumPy numbers and
    arrays are converted (ints to int64, floats to float32, as `nabla.tensor` does)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, bool | int | float | np.generic | np.ndarray):
        return tensor(value)
    raise TypeError(f"{op}: {what} must be a Tensor or a number, got {type(value).__name__}")


def _leaves_of(tree: Any, op: str, what: str) -> tuple[list[Tensor], Any, list[str]]:
    leaves, treedef = tree_flatten(tree)
    paths = _paths(tree)
    if len(paths) != len(leaves):
        paths = [f"<{i}>" for i in range(len(leaves))]
    return [_to_leaf(v, op, f"{what}{p}") for v, p in zip(leaves, paths, strict=True)], treedef, paths


def _match_carry(op: str, what: str, ref: list[Tensor], ref_def: Any, paths: list[str], tree: Any) -> list[Tensor]:
    """The leaves of `tree`, checked against the carry's structure, shapes and dtypes."""
    leaves, treedef = tree_flatten(tree)
    if treedef != ref_def:
        raise TypeError(
            f"{op}: {what} must return a carry with the same structure as the initial value: "
            f"expected {_describe(ref_def)}, got {_describe(treedef)}"
        )
    out = []
    for path, r, leaf in zip(paths, ref, leaves, strict=True):
        leaf = _to_leaf(leaf, op, f"{what} carry{path}")
        if leaf.shape != r.shape or leaf.dtype != r.dtype:
            raise TypeError(
                f"{op}: {what} changed carry{path} from {_aval(r)} to {_aval(leaf)}; "
                "a loop carry must keep its shapes and dtypes"
            )
        out.append(leaf)
    return out


def _host_bool(value: Any, op: str, what: str) -> bool:
    """Read a scalar predicate on the host (evaluates a pending tensor)."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise TypeError(f"{op}: {what} must return a scalar predicate, got a tensor of shape {value.shape}")
        return bool(value.item())
    if isinstance(value, bool | int | float | np.generic):
        return bool(value)
    raise TypeError(f"{op}: {what} must return a bool or a scalar Tensor, got {type(value).__name__}")


def _batched(value: Any) -> bool:
    return isinstance(value, Tensor) and value._impl.batch_dims > 0


def host_array(x: Tensor) -> np.ndarray:
    """The value of `x` on the host, its vmap batch dims (if any) leading: for code that decides
    on the host from a value that may differ per batch element (loop predicates, sizes)."""
    impl = x._impl
    prefix = impl.physical_shape[: impl.batch_dims]
    with no_grad():
        for level in range(len(prefix), 0, -1):
            x = _batching.move_from_batch(x, 0, prefix[:level])
        return x.numpy()


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


# -- cond --------------------------------------------------------------------------------------
def _concrete_pred(pred: Any) -> bool | Tensor:
    """The branch to take (a bool), or the scalar predicate Tensor when it is still pending."""
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise TypeError(f"cond: pred must be a scalar, got a tensor of shape {pred.shape}")
        if pred._impl.is_realized and not pred._impl.batch_dims:
            return bool(pred.item())
        return reshape(pred, ())
    if isinstance(pred, np.ndarray):
        if pred.size != 1:
            raise TypeError(f"cond: pred must be a scalar, got an array of shape {pred.shape}")
        return bool(pred.reshape(()).item())
    if isinstance(pred, bool | int | float | np.generic):
        return bool(pred)
    raise TypeError(f"cond: pred must be a bool or a scalar Tensor, got {type(pred).__name__}")


@public()
def cond(pred: Any, true_fn: Callable, false_fn: Callable, *operands: Any) -> Any:
    """`true_fn(*operands)` if `pred` else `false_fn(*operands)` (JAX's `lax.cond`).

    A Python bool or a realized tensor picks one branch. A pending tensor predicate (and any
    predicate under `nabla.compile`) runs both branches and selects each output leaf with
    `where`, so both must return the same pytree structure, shapes and dtypes. Gradients then
    reach only the branch that was taken, as with `where`: a branch whose derivative is
    infinite at the operands (`sqrt` of a negative) still gives NaN (0 * inf), unlike JAX's
    `lax.cond`; guard its operands (`sqrt(clamp(v, 0))`), or realize the predicate first. Under
    vmap a batched predicate selects per batch element the same way.

    Args:
        pred: a bool, or a scalar (one-element) Tensor; nonzero means true.
        true_fn, false_fn: functions of `*operands` returning pytrees of Tensors.
        operands: passed to the branch functions.

    Example:
        >>> x = nabla.tensor([1.0, -2.0])
        >>> nabla.cond(x.sum() > 0, lambda v: v * 2, lambda v: -v, x).tolist()
        [-1.0, 2.0]
    """
    for name, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if not callable(fn):
            raise TypeError(f"cond: {name} must be callable, got {type(fn).__name__}")
    choice = _concrete_pred(pred)
    if isinstance(choice, bool):
        return (true_fn if choice else false_fn)(*operands)
    t_out, f_out = true_fn(*operands), false_fn(*operands)
    t_leaves, t_def = tree_flatten(t_out)
    f_leaves, f_def = tree_flatten(f_out)
    if t_def != f_def:
        raise TypeError(
            "cond: true_fn and false_fn must return the same structure: "
            f"true_fn gave {_describe(t_def)}, false_fn gave {_describe(f_def)}"
        )
    paths = _paths(t_out)
    if len(paths) != len(t_leaves):
        paths = [f"<{i}>" for i in range(len(t_leaves))]
    out = []
    for path, a, b in zip(paths, t_leaves, f_leaves, strict=True):
        a = _to_leaf(a, "cond", f"true_fn output{path}")
        b = _to_leaf(b, "cond", f"false_fn output{path}")
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(
                f"cond: true_fn and false_fn outputs differ at output{path}: true_fn gave {_aval(a)}, "
                f"false_fn gave {_aval(b)}"
            )
        out.append(where(choice, a, b))
    return tree_unflatten(t_def, out)


# -- while_loop --------------------------------------------------------------------------------
class WhileLoopOp(Operation):
    """Marks the outputs of a `while_loop` that autodiff records: identity forward and in
    forward mode, an error in reverse mode (the trip count was decided on the host)."""

    name = "while_loop"
    always_tuple = True

    def abstract_eval(self, *avals: AVal) -> list[AVal]:
        return list(avals)

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        # identity: each carry keeps its layout (no partial_ok: it would mark every carry partial)
        dims = [tuple((f"t{k}_{d}",) for d in range(len(s))) for k, s in enumerate(in_shapes)]
        sizes = {f"t{k}_{d}": n for k, s in enumerate(in_shapes) for d, n in enumerate(s)}
        return OpShardingRule(tuple(dims), tuple(dims), sizes, frozenset(), None)

    def kernel(self, *values: Any) -> Any:
        return tuple(values)

    def numpy_kernel(self, *arrays: np.ndarray) -> tuple:
        return tuple(arrays)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        raise RuntimeError(
            "while_loop: reverse-mode differentiation does not work for while_loop (its trip count is "
            "data-dependent, as in JAX); use fori_loop with Python int bounds or scan for a fixed trip "
            "count, or forward mode (nabla.jvp)"
        )

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        return list(tangents)


_while_loop = WhileLoopOp()


@public()
def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """`val = init_val; while cond_fun(val): val = body_fun(val); return val` (JAX's `lax.while_loop`).

    `cond_fun` is read on the host before every iteration: a pending predicate is evaluated
    then (with everything else pending). The carry must keep its pytree structure, shapes and
    dtypes. Forward-mode derivatives work; reverse mode raises, as in JAX. Under vmap, with a
    predicate that differs per batch element, the loop runs until every element is done and
    finished elements keep their carry.

    Example:
        >>> nabla.while_loop(lambda v: v < 10, lambda v: v * 2, nabla.tensor(1)).item()
        16
    """
    for name, fn in (("cond_fun", cond_fun), ("body_fun", body_fun)):
        if not callable(fn):
            raise TypeError(f"while_loop: {name} must be callable, got {type(fn).__name__}")
    leaves, treedef, paths = _leaves_of(init_val, "while_loop", "init_val")
    val = tree_unflatten(treedef, leaves)
    while True:
        pred = cond_fun(val)
        if _batched(pred):  # vmap: step the elements still running, freeze the others
            if pred.numel() != 1:
                raise TypeError(f"while_loop: cond_fun must return a scalar predicate, got shape {pred.shape}")
            pred = cast(reshape(pred, ()), _dt.bool_)
            if not host_array(pred).any():
                break
            new = _match_carry("while_loop", "body_fun", leaves, treedef, paths, body_fun(val))
            leaves = [where(pred, n, old) for n, old in zip(new, leaves, strict=True)]
        elif _host_bool(pred, "while_loop", "cond_fun"):
            leaves = _match_carry("while_loop", "body_fun", leaves, treedef, paths, body_fun(val))
        else:
            break
        val = tree_unflatten(treedef, leaves)
    traced = [i for i, leaf in enumerate(leaves) if leaf.requires_grad]
    if traced and is_grad_enabled():
        marked = _while_loop(*[leaves[i] for i in traced])
        for i, m in zip(traced, marked, strict=True):
            leaves[i] = m
        val = tree_unflatten(treedef, leaves)
    return val


# -- fori_loop ---------------------------------------------------------------------------------
@public()
def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any) -> Any:
    """`for i in range(lower, upper): val = body_fun(i, val)` (JAX's `lax.fori_loop`).

    With Python int bounds the loop unrolls into the trace and `i` is a Python int, so both
    derivative modes work. With Tensor bounds it is a `while_loop` (`i` is a 0-d Tensor, the
    bound is read on the host each iteration, reverse mode raises), as in JAX.

    Example:
        >>> nabla.fori_loop(0, 4, lambda i, v: v + i, nabla.tensor(0.0)).item()
        6.0
    """
    if not callable(body_fun):
        raise TypeError(f"fori_loop: body_fun must be callable, got {type(body_fun).__name__}")
    for name, bound in (("lower", lower), ("upper", upper)):
        if isinstance(bound, Tensor):
            if bound.numel() != 1 or not _dt.is_integer(bound.dtype):
                raise TypeError(f"fori_loop: {name} must be an int or a scalar integer Tensor, got {_aval(bound)}")
        elif not _is_int(bound):
            raise TypeError(f"fori_loop: {name} must be an int or a scalar integer Tensor, got {bound!r}")
    if _is_int(lower) and _is_int(upper):
        leaves, treedef, paths = _leaves_of(init_val, "fori_loop", "init_val")
        for i in range(int(lower), int(upper)):
            val = tree_unflatten(treedef, leaves)
            leaves = _match_carry("fori_loop", "body_fun", leaves, treedef, paths, body_fun(i, val))
        return tree_unflatten(treedef, leaves)
    dtype = next(b.dtype for b in (lower, upper) if isinstance(b, Tensor))
    start = reshape(cast(lower, dtype), ()) if isinstance(lower, Tensor) else full((), int(lower), dtype)
    stop = reshape(cast(upper, dtype), ()) if isinstance(upper, Tensor) else full((), int(upper), dtype)

    def body(carry: tuple) -> tuple:
        i, val = carry
        return _bin.add(i, 1), body_fun(i, val)

    return while_loop(lambda carry: _bin.less(carry[0], stop), body, (start, init_val))[1]


# -- scan --------------------------------------------------------------------------------------
def _unstack(x: Tensor) -> list[Tensor]:
    """The slices `x[0], x[1], ...` along the leading axis."""
    unbind = getattr(OPS, "unbind", None)
    if unbind is not None:
        return list(unbind(x, 0))
    return _unstack_fallback(x)


def _unstack_fallback(x: Tensor) -> list[Tensor]:
    """Slices from existing ops only (masked sums): O(n^2), used until an `unbind` op exists."""
    n = x.shape[0]
    idx = reshape(arange(n), (n,) + (1,) * (x.ndim - 1))
    zero = full((), 0, x.dtype)
    return [cast(_red.sum(where(_bin.equal(idx, i), x, zero), 0), x.dtype) for i in range(n)]


def _stack(ys: list[Tensor]) -> Tensor:
    """Stack tensors of one shape and dtype along a new leading axis."""
    stack = getattr(OPS, "stack", None)
    if stack is not None:
        return stack(list(ys), 0)
    return _stack_fallback(ys)


def _stack_fallback(ys: list[Tensor]) -> Tensor:
    """Stacking from existing ops only (selects): O(n^2), used until a `stack` op exists."""
    n, shape = len(ys), ys[0].shape
    idx = reshape(arange(n), (n,) + (1,) * len(shape))
    out = None
    for i, y in enumerate(ys):
        row = broadcast_to(unsqueeze(y, 0), (n, *shape))
        out = row if out is None else where(_bin.equal(idx, i), row, out)
    return out


def _scan_step(f: Callable, carry: Any, x: Any) -> tuple[Any, Any]:
    out = f(carry, x)
    if not isinstance(out, tuple | list) or len(out) != 2:
        raise TypeError(f"scan: f must return a pair (carry, y), got {type(out).__name__}")
    return out[0], out[1]


@public()
def scan(f: Callable, init: Any, xs: Any, length: int | None = None, reverse: bool = False) -> tuple[Any, Any]:
    """Loop `f(carry, x) -> (carry, y)` over the leading axis of `xs` (JAX's `lax.scan`).

    Returns `(final carry, ys)` where each leaf of `ys` stacks the per-step `y` leaves along a
    new leading axis. `xs` is a pytree of Tensors with a common leading dimension (or None,
    with `length`). `reverse=True` runs from the last slice to the first; `ys` stays aligned
    with `xs`. The loop unrolls into the trace, so gradients flow through it.

    Example:
        >>> xs = nabla.tensor([1.0, 2.0, 3.0])
        >>> total, partial = nabla.scan(lambda c, x: (c + x, c + x), nabla.tensor(0.0), xs)
        >>> partial.tolist()
        [1.0, 3.0, 6.0]
    """
    if not callable(f):
        raise TypeError(f"scan: f must be callable, got {type(f).__name__}")
    if length is not None and (not _is_int(length) or length < 0):
        raise ValueError(f"scan: length must be a non-negative int, got {length!r}")
    x_leaves, x_def, x_paths = _leaves_of(xs, "scan", "xs")
    n = None if length is None else int(length)
    for path, x in zip(x_paths, x_leaves, strict=True):
        if x.ndim == 0:
            raise ValueError(f"scan: xs{path} is 0-d; every leaf of xs needs a leading axis to scan over")
        if n is None:
            n = x.shape[0]
        elif x.shape[0] != n:
            expected = f"length={length}" if length is not None else f"xs{x_paths[0]} has {n}"
            raise ValueError(f"scan: xs{path} has leading dimension {x.shape[0]}, but {expected}")
    if n is None:
        raise ValueError("scan: length is required when xs has no leaves (e.g. xs=None)")
    c_leaves, c_def, c_paths = _leaves_of(init, "scan", "init")
    if n == 0:
        return tree_unflatten(c_def, c_leaves), _empty_ys(f, tree_unflatten(c_def, c_leaves), x_leaves, x_def)
    slices = [_unstack(x) for x in x_leaves]
    steps: list[list[Tensor] | None] = [None] * n
    y_def, y_ref, y_paths = None, None, None
    for i in reversed(range(n)) if reverse else range(n):
        x_i = tree_unflatten(x_def, [s[i] for s in slices])
        new_carry, y = _scan_step(f, tree_unflatten(c_def, c_leaves), x_i)
        c_leaves = _match_carry("scan", "f", c_leaves, c_def, c_paths, new_carry)
        if y_def is None:
            y_ref, y_def, y_paths = _leaves_of(y, "scan", "y")
            steps[i] = y_ref
            continue
        y_leaves, this_def = tree_flatten(y)
        if this_def != y_def:
            raise TypeError(
                f"scan: f must return y with the same structure every step: "
                f"first {_describe(y_def)}, then {_describe(this_def)}"
            )
        checked = []
        for path, r, leaf in zip(y_paths, y_ref, y_leaves, strict=True):
            leaf = _to_leaf(leaf, "scan", f"y{path}")
            if leaf.shape != r.shape or leaf.dtype != r.dtype:
                raise TypeError(f"scan: f returned y{path} as {_aval(r)}, then as {_aval(leaf)} at step {i}")
            checked.append(leaf)
        steps[i] = checked
    ys = [_stack([step[k] for step in steps]) for k in range(len(y_ref))]
    return tree_unflatten(c_def, c_leaves), tree_unflatten(y_def, ys)


def _empty_ys(f: Callable, carry: Any, x_leaves: list[Tensor], x_def: Any) -> Any:
    """`ys` of a zero-length scan: f is called once on placeholder slices (then discarded) to
    learn the structure, shapes and dtypes of y, as JAX does by tracing it."""
    with no_grad():
        x = tree_unflatten(x_def, [full(x.shape[1:], 0, x.dtype) for x in x_leaves])
        _, y = _scan_step(f, carry, x)
        y_leaves, y_def, _ = _leaves_of(y, "scan", "y")
    return tree_unflatten(y_def, [full((0, *leaf.shape), 0, leaf.dtype) for leaf in y_leaves])

"""Shape ops: reshape, permute/transpose, broadcast_to, squeeze, unsqueeze, identity, detach.

`broadcast_to`'s VJP is the one place where cotangents of broadcast operands are summed back
to their shapes: binary ops broadcast explicitly through it, so no other rule handles it.
"""

from __future__ import annotations

import math
import operator
import weakref
from typing import Any

import numpy as np
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.sharding import OpShardingRule
from ..core.sharding import rules as _rules
from ..core.tensor.dispatch import OPS, register
from ..core.tensor.impl import TensorImpl
from ..core.tensor.tensor import Tensor
from . import reduction as _red
from .base import AVal, Operation, public

__all__ = [
    "broadcast_shapes",
    "broadcast_to",
    "detach",
    "stop_gradient",
    "expand_dims",
    "flatten",
    "grad_hook",
    "identity",
    "permute",
    "ravel",
    "reshape",
    "squeeze",
    "swapaxes",
    "transpose",
    "unsqueeze",
    "view",
]


def normalize_axis(axis: int, rank: int, op: str, arg: str = "dim") -> int:
    if type(axis) is int and -rank <= axis < rank:  # the common case first: ops call this a lot
        return axis + rank if axis < 0 else axis
    if isinstance(axis, Tensor) and axis.ndim == 0 and not _dt.is_float(axis.dtype):
        axis = operator.index(axis)  # (a Python int argument of nabla.compile: specialized per value)
    if not isinstance(axis, int | np.integer) or isinstance(axis, bool):
        raise TypeError(f"{op}: {arg} must be an int, got {axis!r}")
    if not -rank <= axis < max(rank, 1):
        raise ValueError(f"{op}: {arg}={axis} is out of range for a tensor of rank {rank}")
    return int(axis) % max(rank, 1)


def _physical_axes(axes: tuple[int, ...], batch_dims: int) -> tuple[int, ...]:
    return tuple(a + batch_dims for a in axes)


# -- reshape -----------------------------------------------------------------------------------
class ReshapeOp(Operation):
    saves_values = False  # (see Operation.saves_values)
    name = "reshape"

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        (x,) = impls
        shape = _resolve_shape(kwargs["shape"], x.logical_shape)
        return {"shape": x.physical_shape[:batch_dims] + shape}

    def abstract_eval(self, x: AVal, *, shape: tuple) -> AVal:
        return shape, x[1]

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _rules.reshape(in_shapes[0], out_shapes[0])

    def local_kwargs(self, kwargs: dict, in_avals: list, out_shapes: list) -> dict:
        # Each device reshapes its own piece: the rule keeps a split or merged dim sharded only
        # where the pieces match, so a size mismatch is a rule bug (NumPy would fail later, lazily).
        if math.prod(in_avals[0][0]) != math.prod(out_shapes[0]):
            raise RuntimeError(
                f"internal error: reshape's sharding rule gives a local input of shape {in_avals[0][0]} "
                f"and a local output of shape {out_shapes[0]}"
            )
        return {"shape": out_shapes[0]}

    def kernel(self, x: Any, *, shape: tuple) -> Any:
        return ops.reshape(x, shape)

    def numpy_kernel(self, x: np.ndarray, *, shape: tuple) -> np.ndarray:
        return x.reshape(shape)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kw: Any) -> list:
        return [reshape(cotangents[0], primals[0].shape)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        return [reshape(tangents[0], outputs[0].shape)]


def _resolve_shape(shape: Any, old: tuple[int, ...]) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    size = int(math.prod(old))
    if all(type(s) is int and s >= 0 for s in shape) and math.prod(shape) == size:
        return shape  # the common case (every layer's head split), in one pass
    if sum(1 for s in shape if s == -1) > 1:
        raise ValueError(f"reshape: only one dimension can be -1, got {shape}")
    known = int(math.prod([s for s in shape if s != -1]))
    if -1 in shape:
        if known == 0 or size % known:
            raise ValueError(f"reshape: cannot reshape a tensor of shape {old} into {shape}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    if int(math.prod(shape)) != size or any(s < 0 for s in shape):
        raise ValueError(f"reshape: cannot reshape a tensor of shape {old} ({size} elements) into {shape}")
    return tuple(int(s) for s in shape)


_reshape = ReshapeOp()


@public()
def reshape(x: Tensor, shape: Any) -> Tensor:
    """Return `x` with a new shape of the same size (one dimension may be -1)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if tuple(shape) == x.shape:
        return x
    return _reshape(x, shape=shape)


view = reshape


@public()
def ravel(x: Tensor) -> Tensor:
    """`x` as a 1-D tensor (`torch.ravel`: reshape(x, (-1,)))."""
    return reshape(x, (-1,))


@public()
def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dimensions `start_dim..end_dim` into one."""
    if x.ndim == 0:
        return reshape(x, (1,))
    s = normalize_axis(start_dim, x.ndim, "flatten", "start_dim")
    e = normalize_axis(end_dim, x.ndim, "flatten", "end_dim")
    # -1 (not the product) lets a symbolic batch size pass through; with no elements it would
    # be ambiguous, so an empty tensor gets the product itself.
    merged = math.prod(x.shape[s : e + 1]) if 0 in x.shape else -1
    return reshape(x, x.shape[:s] + (merged,) + x.shape[e + 1 :])


# -- permute / transpose -----------------------------------------------------------------------
class PermuteOp(Operation):
    saves_values = False  # (see Operation.saves_values)
    name = "permute"

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        rank = len(impls[0].logical_shape)
        dims = kwargs["dims"]
        if (
            not batch_dims
            and type(dims) is tuple
            and sorted(dims) == list(range(rank))
            and {type(d) for d in dims} <= {int}
        ):
            return kwargs  # already normalized (every head split's permute)
        dims = tuple(normalize_axis(d, rank, "permute", "dims") for d in dims)
        if sorted(dims) != list(range(rank)):
            raise ValueError(f"permute: dims {kwargs['dims']} is not a permutation of {rank} dimensions")
        return {"dims": tuple(range(batch_dims)) + _physical_axes(dims, batch_dims)}

    def abstract_eval(self, x: AVal, *, dims: tuple) -> AVal:
        return tuple(x[0][d] for d in dims), x[1]

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _rules.permutation(in_shapes[0], kwargs["dims"])

    def kernel(self, x: Any, *, dims: tuple) -> Any:
        return ops.permute(x, list(dims))

    def numpy_kernel(self, x: np.ndarray, *, dims: tuple) -> np.ndarray:
        return np.transpose(x, dims)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, dims: tuple) -> list:
        inverse = tuple(int(i) for i in np.argsort(dims))
        return [_permute(cotangents[0], dims=inverse)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, dims: tuple) -> list:
        return [_permute(tangents[0], dims=dims)]


_permute = PermuteOp()


@public()
def permute(x: Tensor, dims: Any) -> Tensor:
    """Reorder dimensions: `permute(x, (2, 0, 1))`."""
    dims = tuple(dims)
    if len(dims) != x.ndim:
        raise ValueError(f"permute: dims {dims} has {len(dims)} entries, tensor has rank {x.ndim}")
    if dims == tuple(range(x.ndim)):
        return x
    return _permute(x, dims=dims)


@public()
def transpose(x: Tensor, dim0: int = -2, dim1: int = -1) -> Tensor:
    """Swap two dimensions (PyTorch's `transpose(dim0, dim1)`)."""
    if x.ndim < 2 and (dim0, dim1) == (-2, -1):
        return x
    a = normalize_axis(dim0, x.ndim, "transpose", "dim0")
    b = normalize_axis(dim1, x.ndim, "transpose", "dim1")
    dims = list(range(x.ndim))
    dims[a], dims[b] = dims[b], dims[a]
    return permute(x, dims)


swapaxes = transpose


# -- broadcast_to ------------------------------------------------------------------------------
def broadcast_shapes(*shapes: tuple[int, ...], op: str = "broadcast") -> tuple[int, ...]:
    """NumPy broadcasting of shapes, with an error that names the op and every shape."""
    if len(shapes) == 2:  # binary ops, on every call: one pass, no sets
        a, b = shapes
        if a == b:
            return tuple(a)
        if len(a) < len(b):
            a, b = b, a
        out, off = list(a), len(a) - len(b)
        for i, d in enumerate(b):
            o = a[off + i]
            if o == 1:
                out[off + i] = d
            elif d != 1 and d != o:
                raise ValueError(f"{op}: shapes {tuple(shapes[0])}, {tuple(shapes[1])} cannot be broadcast together")
        return tuple(out)
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dims = {s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0}
        dims.discard(1)
        if len(dims) > 1:
            shown = ", ".join(str(tuple(s)) for s in shapes)
            raise ValueError(f"{op}: shapes {shown} cannot be broadcast together")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


class BroadcastToOp(Operation):
    saves_values = False  # (see Operation.saves_values)
    name = "broadcast_to"

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        (x,) = impls
        shape = tuple(int(s) for s in kwargs["shape"])
        old = x.logical_shape
        if len(shape) < len(old) or broadcast_shapes(old, shape, op="broadcast_to") != shape:
            raise ValueError(f"broadcast_to: cannot broadcast a tensor of shape {old} to {shape}")
        lead = x.physical_shape[:batch_dims]
        if not batch_dims or len(shape) == len(old):
            return {"shape": lead + shape}
        # Under vmap the new logical dims go between the batch dims and the old logical ones.
        return {"shape": lead + shape, "expand": lead + (1,) * (len(shape) - len(old)) + old}

    def abstract_eval(self, x: AVal, *, shape: tuple, expand: tuple = ()) -> AVal:
        return shape, x[1]

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _rules.broadcast(in_shapes[0], out_shapes[0])

    def local_kwargs(self, kwargs: dict, in_avals: list, out_shapes: list) -> dict:
        return {"shape": out_shapes[0]}

    def kernel(self, x: Any, *, shape: tuple, expand: tuple = ()) -> Any:
        return ops.broadcast_to(ops.reshape(x, expand) if expand else x, shape)

    def numpy_kernel(self, x: np.ndarray, *, shape: tuple, expand: tuple = ()) -> np.ndarray:
        return np.broadcast_to(x.reshape(expand) if expand else x, shape)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kw: Any) -> list:
        return [sum_to_shape(cotangents[0], primals[0].shape)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        return [broadcast_to(tangents[0], outputs[0].shape)]


_broadcast_to = BroadcastToOp()


@public()
def broadcast_to(x: Tensor, shape: Any) -> Tensor:
    """Broadcast `x` to `shape` with NumPy rules."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    return _broadcast_to(x, shape=shape)


def sum_to_shape(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum a broadcast cotangent back to `shape`: the inverse of broadcasting, in one place."""
    if x.shape == tuple(shape):
        return x
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and x.shape[lead + i] != 1)
    return reshape(_red.sum(x, axes, keepdims=False), shape) if axes else reshape(x, shape)


# -- squeeze / unsqueeze -----------------------------------------------------------------------
@public()
def squeeze(x: Tensor, dim: Any = None) -> Tensor:
    """Remove size-1 dimensions (all, or those in `dim`)."""
    if dim is None:
        axes = [i for i, s in enumerate(x.shape) if s == 1]
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        axes = [normalize_axis(d, x.ndim, "squeeze") for d in dims]
        # PyTorch semantics: a listed dimension whose size is not 1 is left alone.
        axes = [a for a in axes if x.shape[a] == 1]
    return reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in axes))


@public()
def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dimension at `dim` (negative counts from the end of the result)."""
    d = normalize_axis(dim, x.ndim + 1, "unsqueeze")
    return reshape(x, x.shape[:d] + (1,) + x.shape[d:])


expand_dims = unsqueeze


# -- identity / detach -------------------------------------------------------------------------
class IdentityOp(Operation):
    saves_values = False  # (see Operation.saves_values)
    name = "identity"
    sharding_rule = "elementwise"
    partial_ok = "additive"

    def abstract_eval(self, x: AVal) -> AVal:
        return x

    def kernel(self, x: Any) -> Any:
        return x

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return x

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kw: Any) -> list:
        return [cotangents[0]]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        return [tangents[0]]


class DetachTraceOp(IdentityOp):
    """Cut from the reverse-mode trace only: `grad` detaches its results this way, and
    jvp(grad(f)) (forward-over-reverse) must still see their tangents."""

    name = "detach_trace"
    differentiable = False


class DetachOp(IdentityOp):
    """The user's detach (torch's `detach()`, JAX's `stop_gradient`): a constant to reverse and
    forward mode alike, so jvp, jacfwd and hessian see no tangent through it."""

    name = "detach"
    differentiable = False

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        return [None]


class RebindOp(Operation):
    """`value`, standing where `source` stood in the autodiff trace: a non-leaf tensor whose
    value an in-place write replaced keeps its history, as a torch tensor keeps its grad_fn.

    With `passes=True` (a write outside autodiff: `y.data = v`, `y.detach().zero_()`, an
    in-place op under no_grad) the cotangent passes to `source` unchanged (the straight-through
    estimator); with False (an op that overwrote the value: `y.zero_()`, `y.fill_(1)`)
    `source` gets zeros."""

    name = "rebind"
    sharding_rule = "elementwise"

    def abstract_eval(self, source: AVal, value: AVal, *, passes: bool) -> AVal:
        return value

    def kernel(self, source: Any, value: Any, *, passes: bool) -> Any:
        return value

    def numpy_kernel(self, source: np.ndarray, value: np.ndarray, *, passes: bool) -> np.ndarray:
        return value

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, passes: bool) -> list:
        return [cotangents[0] if passes else OPS.zeros_like(cotangents[0]), cotangents[0]]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, passes: bool) -> list:
        return [tangents[0] if passes else tangents[1]]


identity = register("identity")(IdentityOp())
_detach, _detach_trace, _rebind = DetachOp(), DetachTraceOp(), RebindOp()


@register("rebind")
def rebind(source: Tensor, value: Tensor, passes: bool) -> Tensor:
    """`value` in `source`'s place in the autodiff trace (see RebindOp); for in-place writes."""
    return _rebind(source, value, passes=passes)


@register("detach_trace")
def detach_trace(x: Tensor) -> Tensor:
    """`x` cut from reverse-mode traces, its tangents kept (see DetachTraceOp)."""
    if x._impl.is_realized:
        return Tensor(x._impl.share())
    return _detach_trace(x)


class GradHookOp(Operation):
    """The identity on several tensors at once, whose VJP hands all their cotangents to a
    Python function (which may replace them): module backward hooks, which need a module's
    gradients together. The function is found through the op's outputs (`_GRAD_HOOK_FNS`), so
    the op's key stays the same call after call; a backward through it is not replayed."""

    name = "grad_hook"
    partial_ok = "additive"
    replayable = False
    always_tuple = True
    none_cotangents = True  # an output without a gradient reaches the function as None (torch's)

    def abstract_eval(self, *xs: AVal) -> list[AVal]:
        return list(xs)

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        terms = ", ".join(" ".join(f"t{i}d{d}" for d in range(len(s))) for i, s in enumerate(in_shapes))
        return OpShardingRule.parse(f"{terms} -> {terms}", in_shapes, out_shapes, partial_ok=self.partial_ok)

    def kernel(self, *xs: Any) -> Any:
        return list(xs)

    def numpy_kernel(self, *xs: np.ndarray) -> tuple:
        return xs

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        fn = next((_GRAD_HOOK_FNS.get(o._impl) for o in outputs if o is not None), None)
        new = fn(list(cotangents)) if fn is not None else None
        return list(cotangents) if new is None else list(new)

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        return list(tangents)


_grad_hook = GradHookOp()
_GRAD_HOOK_FNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # output impl -> function


@public()
def grad_hook(tensors: list[Tensor], fn: Any) -> tuple[Tensor, ...]:
    """`tensors` again (new tensors, the identity), such that a backward through them calls
    `fn(cotangents)` once with the list of their cotangents; a non-None result (one tensor
    per input, each of its shape) replaces them. For library code (module backward hooks)."""
    outs = _grad_hook(*tensors)
    for o in outs:
        _GRAD_HOOK_FNS[o._impl] = fn
    return outs


@public()
def detach(x: Tensor) -> Tensor:
    """A tensor with `x`'s value, cut from autodiff (reverse and forward mode: JAX's
    `stop_gradient`). Shares data once `x` is realized."""
    if x._impl.is_realized:
        return Tensor(x._impl.share())
    return _detach(x)


stop_gradient = public("stop_gradient")(detach)

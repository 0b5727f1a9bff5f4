"""One op for a whole optimizer step: every parameter's update written once, run fused.

An optimizer's per-parameter math is a *rule*: a plain function of array values written with
operators and a small math namespace `xp` (sqrt, maximum, where, cast, ...). `FusedUpdate`
is an `Operation` whose MAX kernel runs the rule on MAX graph values and whose NumPy kernel
runs it on arrays, once per parameter. So a step over 30 parameters records ONE op in the
lazy trace instead of ~40 per parameter: the Python cost of a training step no longer grows
with the optimizer, while the compiled graph holds the same elementwise math.

A rule has the signature

    rule(xp, p, g, state: tuple, scalars: dict, **consts) -> (new_p, new_state: tuple)

`scalars` are 0-d float64 graph inputs (hyperparameters a scheduler may change); `consts`
are Python values baked into the graph (eps, weight_decay, flags). Python floats are weakly
typed in MAX and in NumPy 2 (`v * 0.9` keeps float32); float64 scalars must be cast to the
parameter's dtype (`xp.cast(s, p)`) before they meet parameter-dtype values, since MAX does
not promote and NumPy would silently widen. Every output must keep its input's shape and
dtype: both kernels check it, so a rule that promotes fails on the NumPy executor too. A state
tensor may have a shape of its own (Adafactor's row and column factors): its output keeps it.

Besides elementwise math, `xp` has reductions (`sum`), `matmul` and `transpose` for rules that
read a whole parameter (Adafactor's RMS, Muon's orthogonalization). Such a rule is marked with
`@whole_parameter`: a parameter sharded on a DeviceMesh is then gathered for its update and
split back to its layout after it, since a shard alone would give another norm or product.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from max.dtype import DType
from max.graph import ops

from nabla import Tensor
from nabla.core.common import dtypes as _dt
from nabla.core.graph.artifacts import source_hash
from nabla.core.graph.executors import round_to_bfloat16
from nabla.core.sharding import OpShardingRule
from nabla.ops.base import AVal, Operation
from nabla.ops.communication import reshard

__all__ = ["MAX_MATH", "NUMPY_MATH", "FusedUpdate", "fused_update", "fused_update_", "whole_parameter"]


class _NumpyMath:
    """The rule namespace on NumPy arrays (the reference executor)."""

    float32 = DType.float32
    float64 = DType.float64

    @staticmethod
    def cast(x: Any, like: Any) -> Any:
        dtype = like if isinstance(like, DType) else _dt.from_numpy_dtype(np.asarray(like).dtype)
        return np.asarray(x).astype(_dt.to_numpy_dtype(dtype))

    @staticmethod
    def full_like(x: Any, value: float | bool) -> Any:
        """An array of `x`'s shape and dtype filled with `value`."""
        return np.full_like(x, value)

    sqrt = staticmethod(np.sqrt)
    abs = staticmethod(np.abs)
    maximum = staticmethod(np.maximum)

    @staticmethod
    def sign(x: Any) -> Any:
        """torch.sign: 0 at nan (np.sign gives nan), as `_MaxMath.sign`."""
        return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)

    minimum = staticmethod(np.minimum)
    where = staticmethod(np.where)
    exp = staticmethod(np.exp)

    @staticmethod
    def pow(base: Any, exponent: Any) -> Any:
        return np.power(base, exponent)

    @staticmethod
    def is_half(x: Any) -> bool:
        """Whether `x` is float16 or bfloat16 (PyTorch's reductions accumulate those in float32;
        this executor already holds bfloat16 as float32)."""
        return x.dtype == np.float16

    @staticmethod
    def lerp(start: Any, end: Any, weight: Any) -> Any:
        """PyTorch's `start.lerp(end, weight)` (its two formulas, by the weight's size)."""
        return np.where(np.abs(weight) < 0.5, start + weight * (end - start), end - (end - start) * (1 - weight))

    @staticmethod
    def sum(x: Any, axis: int | None = None) -> Any:
        """The sum over `axis`, kept as a dimension of size 1 (as MAX's); None: of all, 0-d."""
        return np.asarray(np.sum(x)) if axis is None else np.sum(x, axis=axis, keepdims=True)

    matmul = staticmethod(np.matmul)

    @staticmethod
    def transpose(x: Any, axis_1: int, axis_2: int) -> Any:
        return np.swapaxes(x, axis_1, axis_2)

    @staticmethod
    def round_to_bfloat16(x: Any) -> Any:
        """float32 values rounded (to nearest, ties to even) to bfloat16's precision, kept float32."""
        return round_to_bfloat16(x)


class _MaxMath:
    """The same namespace on MAX graph values."""

    float32 = DType.float32
    float64 = DType.float64

    @staticmethod
    def cast(x: Any, like: Any) -> Any:
        return ops.cast(x, like if isinstance(like, DType) else like.dtype)

    @staticmethod
    def full_like(x: Any, value: float | bool) -> Any:
        filled = ops.constant(value, x.dtype, x.device)
        return filled if x.rank == 0 else ops.broadcast_to(filled, x.shape)

    sqrt = staticmethod(ops.sqrt)
    abs = staticmethod(ops.abs)
    exp = staticmethod(ops.exp)
    maximum = staticmethod(ops.max)
    minimum = staticmethod(ops.min)

    @staticmethod
    def sign(x: Any) -> Any:
        zero = ops.constant(0, x.dtype, x.device)
        return ops.cast(ops.greater(x, zero), x.dtype) - ops.cast(ops.greater(zero, x), x.dtype)

    @staticmethod
    def where(cond: Any, a: Any, b: Any) -> Any:
        return ops.where(cond, a, b)

    @staticmethod
    def pow(base: Any, exponent: Any) -> Any:
        if not hasattr(base, "dtype"):
            base = ops.constant(base, exponent.dtype, exponent.device)
        return ops.pow(base, exponent)

    @staticmethod
    def is_half(x: Any) -> bool:
        return x.dtype in (DType.float16, DType.bfloat16)

    @staticmethod
    def lerp(start: Any, end: Any, weight: Any) -> Any:
        small = ops.greater(ops.constant(0.5, weight.dtype, weight.device), ops.abs(weight))
        return ops.where(small, start + weight * (end - start), end - (end - start) * (1 - weight))

    @staticmethod
    def sum(x: Any, axis: int | None = None) -> Any:
        if axis is not None:
            return ops.sum(x, axis=axis)
        return ops.reshape(ops.sum(ops.reshape(x, [-1]), axis=0), [])

    matmul = staticmethod(ops.matmul)
    transpose = staticmethod(ops.transpose)

    @staticmethod
    def round_to_bfloat16(x: Any) -> Any:
        return ops.cast(ops.cast(x, DType.bfloat16), x.dtype)


NUMPY_MATH = _NumpyMath()
MAX_MATH = _MaxMath()


class FusedUpdate(Operation):
    """Applies `rule` to every (param, grad, state) triple of one param group.

    Inputs: the scalars, then per parameter `p, g, *state`. Outputs: per parameter
    `new_p, *new_state`, with the input's shapes and dtypes. Not differentiable.
    """

    name = "optimizer_update"
    differentiable = False
    always_tuple = True

    def abstract_eval(self, *avals: AVal, rule: Callable, names: tuple, n_state: int, consts: tuple) -> list[AVal]:
        per = 2 + n_state
        out: list[AVal] = []
        for base in range(len(names), len(avals), per):
            out += [avals[base], *avals[base + 2 : base + per]]
        return out

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        """Per parameter, its gradient, state and outputs share the parameter's factors, so an
        update runs where the parameter's shards live (a partial-sum gradient is reduced first).
        A `whole_parameter` rule keeps every factor whole: it updates gathered parameters."""
        per, first = 2 + kwargs["n_state"], len(kwargs["names"])
        gathered = kwargs["rule"].whole
        operands: list = [()] * first
        results: list = []
        sizes: dict = {}
        for k, base in enumerate(range(first, len(in_shapes), per)):
            shape = in_shapes[base]
            dims = tuple((f"p{k}_{d}",) for d in range(len(shape)))
            sizes.update({f"p{k}_{d}": n for d, n in enumerate(shape)})

            def like(other: tuple, k: int = k, dims: tuple = dims, shape: tuple = shape) -> tuple:
                # state of another shape (a step counter) gets factors of its own: kept whole
                if other == shape and not gathered:
                    return dims
                return tuple((f"_p{k}s{d}",) for d in range(len(other)))

            operands += [like(s) for s in in_shapes[base : base + per]]
            results += [like(in_shapes[i]) for i in (base, *range(base + 2, base + per))]
        whole = frozenset(f for t in operands + results for d in t for f in d if f.startswith("_"))
        return OpShardingRule(tuple(operands), tuple(results), sizes, whole, reduction=None)

    def _apply(self, xp: Any, values: tuple, rule: Callable, names: tuple, n_state: int, consts: tuple) -> list:
        scalars = dict(zip(names, values[: len(names)], strict=True))
        per = 2 + n_state
        out: list = []
        for base in range(len(names), len(values), per):
            p, g, *state = values[base : base + per]
            if xp.is_half(p):  # float16/bfloat16: the math in float32, each result rounded once
                wide = [xp.cast(v, xp.float32) if xp.is_half(v) else v for v in (p, g, *state)]
                new_p, new_state = rule(xp, wide[0], wide[1], tuple(wide[2:]), scalars, **dict(consts))
                new_p = xp.cast(new_p, p)
                new_state = tuple(xp.cast(n, s) if xp.is_half(s) else n for n, s in zip(new_state, state, strict=False))
            else:
                new_p, new_state = rule(xp, p, g, tuple(state), scalars, **dict(consts))
            if len(new_state) != n_state:
                raise RuntimeError(f"optimizer rule {rule}: returned {len(new_state)} state values, expected {n_state}")
            out += [new_p, *new_state]
        return out

    def kernel(self, *values: Any, **kwargs: Any) -> list:
        results = self._apply(MAX_MATH, values, **kwargs)
        like = [values[i] for i in self._output_sources(len(values), kwargs)]
        for i, (r, x) in enumerate(zip(results, like, strict=True)):
            if r.dtype != x.dtype or list(r.shape) != list(x.shape):
                raise TypeError(
                    f"optimizer rule {kwargs['rule']}: output {i} is {r.dtype} {list(r.shape)}, "
                    f"its input is {x.dtype} {list(x.shape)}"
                )
        return results

    def numpy_kernel(self, *arrays: Any, **kwargs: Any) -> list:
        # The rules divide (sqrt of a zero moment, 1/0 on a zero grad): no warnings, as the ops.
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            results = [np.asarray(r) for r in self._apply(NUMPY_MATH, arrays, **kwargs)]
        like = [arrays[i] for i in self._output_sources(len(arrays), kwargs)]
        for i, (r, x) in enumerate(zip(results, like, strict=True)):
            if r.dtype != x.dtype or r.shape != x.shape:  # MAX would reject it: fail here too
                raise TypeError(
                    f"optimizer rule {kwargs['rule']}: output {i} is {r.dtype} {r.shape}, its input is {x.dtype} {x.shape}"
                )
        return results

    @staticmethod
    def _output_sources(n_values: int, kwargs: dict) -> list[int]:
        """Index of the input each output mirrors (p for new_p, the state for new_state)."""
        per, first = 2 + kwargs["n_state"], len(kwargs["names"])
        return [i for base in range(first, n_values, per) for i in (base, *range(base + 2, base + per))]


_fused = FusedUpdate()


class _Rule:
    """A rule as a static op argument: keyed by its qualified name (two optimizers sharing a
    rule share compiled models) and its module's source (a model stored on disk for a rule
    is never loaded after the rule's code changed)."""

    __slots__ = ("code", "fn", "key", "whole")

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.whole = bool(getattr(fn, "whole_parameter", False))
        self.key = f"{fn.__module__}.{fn.__qualname__}"
        self.code = source_hash(fn.__module__)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return self.key

    def structural_key(self) -> tuple[str, str]:
        return self.key, self.code


_RULES: dict[Callable, _Rule] = {}


def whole_parameter(rule: Callable) -> Callable:
    """Mark `rule` as reading its parameter whole (a norm, a matrix product): a sharded
    parameter is gathered for the update and its results are split back to its layout.

    Example:
        >>> @whole_parameter
        ... def normalized(xp, p, g, state, s):
        ...     return p - g / xp.sqrt(xp.sum(g * g)) * xp.cast(s["lr"], p), state
    """
    rule.whole_parameter = True  # type: ignore[attr-defined]
    return rule


def fused_update(
    rule: Callable,
    params: list[Tensor],
    grads: list[Tensor],
    states: list[tuple[Tensor, ...]],
    scalars: dict[str, Tensor],
    **consts: Any,
) -> list[tuple[Tensor, tuple[Tensor, ...]]]:
    """Record one op that updates every parameter with `rule`.

    Args:
        rule: `rule(xp, p, g, state, scalars, **consts) -> (new_p, new_state)`.
        params: the parameters (any mix of shapes and float dtypes).
        grads: their gradients, each of its parameter's dtype.
        states: per parameter, the state tensors the rule reads (same count for all).
        scalars: 0-d float64 tensors (graph inputs) by name.
        **consts: Python values baked into the graph (part of the cache key).

    Returns:
        `(new_p, new_state)` per parameter, promise tensors that own their values: assign
        them with `p._adopt(new_p)`.

    Example:
        >>> def sgd(xp, p, g, state, s, *, wd):
        ...     return p - (g + p * wd) * xp.cast(s["lr"], p), state
        >>> [(new_w, _)] = fused_update(sgd, [w], [w.grad], [()], {"lr": lr_t}, wd=0.01)
    """
    inputs, kwargs = _operands(rule, params, grads, states, scalars, consts)
    outs = _fused(*inputs, **kwargs)
    per = 1 + kwargs["n_state"]
    return [(outs[i], tuple(outs[i + 1 : i + per])) for i in range(0, len(outs), per)]


def fused_update_(
    rule: Callable,
    params: list[Tensor],
    grads: list[Tensor],
    states: list[tuple[Tensor, ...]],
    scalars: dict[str, Tensor],
    *,
    pending: bool = True,
    **consts: Any,
) -> None:
    """`fused_update` that writes each new value into its tensor: every parameter and state
    tensor then holds its updated value (a promise), keeping its `requires_grad`. With
    `pending=False` the caller evaluates them at once (an optimizer's step), so they are not
    tracked as pending results (a rule's constant can not be named `pending`).

    Example:
        >>> fused_update_(sgd, [w], [w.grad], [()], {"lr": lr_t}, wd=0.01)  # w is updated
    """
    inputs, kwargs = _operands(rule, params, grads, states, scalars, consts)
    targets = [t for p, s in zip(params, states, strict=True) for t in (p, *s)]
    layouts = [t._impl.sharding for t in targets] if kwargs["rule"].whole else []
    _fused.write_into(targets, inputs, kwargs, pending=pending)
    for t, spec in zip(targets, layouts, strict=False):  # a whole_parameter rule's: gathered
        if spec is not None and t._impl.sharding != spec:
            t._adopt(reshard(t, spec.without_partial()))


def _operands(rule: Callable, params: list, grads: list, states: list, scalars: dict, consts: dict) -> tuple:
    """The fused op's inputs (the scalars, then per parameter p, g, *state) and kwargs."""
    n_state = len(states[0]) if states else 0
    names = tuple(sorted(scalars))
    inputs = [scalars[n] for n in names]
    for p, g, s in zip(params, grads, states, strict=True):
        if len(s) != n_state:
            raise ValueError(f"fused_update: every parameter needs {n_state} state tensors, got {len(s)}")
        inputs += [p, g, *s]
    wrapped = _RULES.get(rule) or _RULES.setdefault(rule, _Rule(rule))
    return inputs, {"rule": wrapped, "names": names, "n_state": n_state, "consts": _Consts(sorted(consts.items()))}


class _Consts(tuple):
    """A rule's constants, (name, value) pairs by name, keyed by their `repr` (exact for the
    bools and floats rules take: -0.0 and 0.0 differ, nan matches itself): one call a step
    where freezing them pair by pair made ~15."""

    __slots__ = ()

    def structural_key(self) -> tuple:
        return ("consts", tuple.__repr__(self))

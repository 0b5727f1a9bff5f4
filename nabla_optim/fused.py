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
dtype: both kernels check it, so a rule that promotes fails on the NumPy executor too.
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
from nabla.core.sharding import OpShardingRule
from nabla.ops.base import AVal, Operation

__all__ = ["MAX_MATH", "NUMPY_MATH", "FusedUpdate", "fused_update", "fused_update_"]


class _NumpyMath:
    """The rule namespace on NumPy arrays (the reference executor)."""

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
    sign = staticmethod(np.sign)
    maximum = staticmethod(np.maximum)
    minimum = staticmethod(np.minimum)
    where = staticmethod(np.where)
    exp = staticmethod(np.exp)

    @staticmethod
    def pow(base: Any, exponent: Any) -> Any:
        return np.power(base, exponent)


class _MaxMath:
    """The same namespace on MAX graph values."""

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
        update runs where the parameter's shards live (a partial-sum gradient is reduced first)."""
        per, first = 2 + kwargs["n_state"], len(kwargs["names"])
        operands: list = [()] * first
        results: list = []
        sizes: dict = {}
        for k, base in enumerate(range(first, len(in_shapes), per)):
            shape = in_shapes[base]
            dims = tuple((f"p{k}_{d}",) for d in range(len(shape)))
            sizes.update({f"p{k}_{d}": n for d, n in enumerate(shape)})

            def like(other: tuple, k: int = k, dims: tuple = dims, shape: tuple = shape) -> tuple:
                # state of another shape (a step counter) gets factors of its own: kept whole
                return dims if other == shape else tuple((f"_p{k}s{d}",) for d in range(len(other)))

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

    __slots__ = ("code", "fn", "key")

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.key = f"{fn.__module__}.{fn.__qualname__}"
        self.code = source_hash(fn.__module__)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return self.key

    def structural_key(self) -> tuple[str, str]:
        return self.key, self.code


_RULES: dict[Callable, _Rule] = {}


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
    **consts: Any,
) -> None:
    """`fused_update` that writes each new value into its tensor: every parameter and state
    tensor then holds its updated value (a promise), keeping its `requires_grad`.

    Example:
        >>> fused_update_(sgd, [w], [w.grad], [()], {"lr": lr_t}, wd=0.01)  # w is updated
    """
    inputs, kwargs = _operands(rule, params, grads, states, scalars, consts)
    _fused.call_into([t for p, s in zip(params, states, strict=True) for t in (p, *s)], *inputs, **kwargs)


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

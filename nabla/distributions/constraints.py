"""Constraints on parameters and values (torch.distributions.constraints).

A constraint's `check(value)` gives a boolean tensor, True where `value` satisfies it, with
`event_dim` rightmost dims reduced. It takes a nabla Tensor (computed with nabla ops, lazily) or
a NumPy array: argument validation checks the values the host already has with NumPy, so a
check never evaluates a pending graph.

Example:
    >>> from nabla.distributions import constraints
    >>> constraints.positive.check(nabla.tensor([1.0, -1.0]))
    Tensor([ True, False], dtype=bool)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import linalg, ops
from ..core.tensor import Tensor
from ..torch_functions import narrow, select
from .utils import known_host

__all__ = [
    "Constraint",
    "boolean",
    "cat",
    "dependent",
    "dependent_property",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "is_dependent",
    "less_than",
    "lower_cholesky",
    "lower_triangular",
    "multinomial",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_definite",
    "positive_integer",
    "real",
    "real_vector",
    "simplex",
    "stack",
    "symmetric",
    "unit_interval",
]


class UnknownValues(Exception):
    """A NumPy check needs a bound whose values the host does not have yet."""


def _xp(value: Any) -> Any:
    return np if isinstance(value, np.ndarray) else ops


def _bound(bound: Any, value: Any) -> Any:
    """A bound for a check of `value`: a tensor bound for a NumPy check must be known."""
    if isinstance(value, np.ndarray) and isinstance(bound, Tensor):
        known = known_host(bound)  # (a number broadcast to a tensor's shape is known)
        if known is None:
            raise UnknownValues
        return known
    return bound


def _is_integer(value: Any) -> Any:
    return _xp(value).floor(value) == value


class Constraint:
    """Base class: a region of values; `check(value)` says elementwise whether it is in it.

    Attributes:
        is_discrete: whether the region is discrete (integers, booleans, one-hot vectors).
        event_dim: how many rightmost dims together make one point (1 for simplex).
    """

    is_discrete = False
    event_dim = 0

    def check(self, value: Any) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder: the region depends on other parameters (Uniform's low and high); it is
    not checked."""

    def __init__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> None:
        self._is_discrete, self._event_dim = is_discrete, event_dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> _Dependent:
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value: Any) -> Any:
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Any) -> bool:
    """Whether `constraint` is a `dependent` placeholder (not checked)."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property that is also a dependent constraint: `support` of a distribution whose
    support depends on its parameters (`Uniform.support` is `interval(low, high)`)."""

    def __init__(self, fn: Any = None, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> None:
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn: Any) -> _DependentProperty:  # type: ignore[override]
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """`base_constraint` with `reinterpreted_batch_ndims` more dims taken as one event."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        if not isinstance(base_constraint, Constraint):
            raise TypeError(f"independent: base_constraint must be a Constraint, got {base_constraint!r}")
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError(
                f"independent: reinterpreted_batch_ndims must be an int >= 0, got {reinterpreted_batch_ndims!r}"
            )
        self.base_constraint, self.reinterpreted_batch_ndims = base_constraint, reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Any) -> Any:
        result = self.base_constraint.check(value)
        if result.ndim < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.ndim}")
        n = self.reinterpreted_batch_ndims
        return _xp(result).all(result, tuple(range(-n, 0))) if n else result

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Any) -> Any:
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value: Any) -> Any:
        xp = _xp(value)
        return xp.all((value == 0) | (value == 1), -1) & (xp.sum(value, -1) == 1)


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Any) -> Any:
        lo, hi = _bound(self.lower_bound, value), _bound(self.upper_bound, value)
        return _is_integer(value) & (value >= lo) & (value <= hi)

    def __repr__(self) -> str:
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Any) -> Any:
        return _is_integer(value) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Real(Constraint):
    def check(self, value: Any) -> Any:
        return value == value  # (False for nan only; infinities are real, as in torch)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Any) -> Any:
        return _bound(self.lower_bound, value) < value

    def __repr__(self) -> str:
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Any) -> Any:
        return _bound(self.lower_bound, value) <= value

    def __repr__(self) -> str:
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Any) -> Any:
        return value < _bound(self.upper_bound, value)

    def __repr__(self) -> str:
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Any) -> Any:
        return (_bound(self.lower_bound, value) <= value) & (value <= _bound(self.upper_bound, value))

    def __repr__(self) -> str:
        return f"Interval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    def check(self, value: Any) -> Any:
        return (_bound(self.lower_bound, value) <= value) & (value < _bound(self.upper_bound, value))

    def __repr__(self) -> str:
        return f"HalfOpenInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Simplex(Constraint):
    """Non-negative vectors summing to 1 (within 1e-6, as torch)."""

    event_dim = 1

    def check(self, value: Any) -> Any:
        xp = _xp(value)
        return xp.all(value >= 0, -1) & (xp.abs(xp.sum(value, -1) - 1) < 1e-6)


class _Multinomial(Constraint):
    """Non-negative vectors summing to at most `upper_bound` (torch's weaker check of a
    Multinomial's counts, which should sum to it exactly)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Any) -> Any:
        xp = _xp(value)
        return xp.all(value >= 0, -1) & (xp.sum(value, -1) <= _bound(self.upper_bound, value))

    def __repr__(self) -> str:
        return f"Multinomial(upper_bound={self.upper_bound})"


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value: Any) -> Any:
        xp = _xp(value)
        return xp.all(xp.all(xp.tril(value) == value, -1), -1)


class _LowerCholesky(Constraint):
    """Lower-triangular matrices with a positive diagonal."""

    event_dim = 2

    def check(self, value: Any) -> Any:
        xp = _xp(value)
        lower = xp.all(xp.all(xp.tril(value) == value, -1), -1)
        return lower & xp.all(xp.diagonal(value, 0, -2, -1) > 0, -1)


class _Symmetric(Constraint):
    event_dim = 2

    def check(self, value: Any) -> Any:
        xp = _xp(value)
        close = xp.abs(value - xp.swapaxes(value, -1, -2)) <= 1e-6 + 1e-5 * xp.abs(xp.swapaxes(value, -1, -2))
        return xp.all(xp.all(close, -1), -1)


class _PositiveDefinite(_Symmetric):
    """Symmetric matrices with a Cholesky factorization (all eigenvalues positive)."""

    def check(self, value: Any) -> Any:
        sym = super().check(value)
        if isinstance(value, np.ndarray):
            if not sym.all():
                return sym
            return np.linalg.eigvalsh(value.astype(np.float64)).min(-1) > 0
        return ops.logical_and(sym, linalg.cholesky_ex(value).info == 0)


def _narrow(value: Any, dim: int, start: int, length: int) -> Any:
    if isinstance(value, np.ndarray):
        return np.take(value, range(start, start + length), axis=dim)
    return narrow(value, dim, start, length)


def _check_dim(value: Any, dim: int) -> None:
    if not -value.ndim <= dim < value.ndim:
        raise ValueError(f"dim {dim} out of range for value with {value.ndim} dimensions")


class _Cat(Constraint):
    """`cseq[i]` on the i-th block (of `lengths[i]` entries) along `dim`, as `torch.cat`
    joins them."""

    def __init__(self, cseq: Any, dim: int = 0, lengths: Any = None) -> None:
        if not all(isinstance(c, Constraint) for c in cseq):
            raise TypeError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.cseq)
        if len(self.lengths) != len(self.cseq):
            raise ValueError(f"lengths ({len(self.lengths)}) must match cseq ({len(self.cseq)})")
        self.dim = dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(c.event_dim for c in self.cseq)

    def check(self, value: Any) -> Any:
        _check_dim(value, self.dim)
        checks, start = [], 0
        for c, n in zip(self.cseq, self.lengths, strict=True):
            checks.append(c.check(_narrow(value, self.dim, start, n)))
            start += n
        return np.concatenate(checks, self.dim) if isinstance(value, np.ndarray) else ops.cat(checks, self.dim)


class _Stack(Constraint):
    """`cseq[i]` on the i-th slice along `dim`, as `torch.stack` joins them."""

    def __init__(self, cseq: Any, dim: int = 0) -> None:
        if not all(isinstance(c, Constraint) for c in cseq):
            raise TypeError("All elements of cseq must be Constraint instances")
        self.cseq, self.dim = list(cseq), dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value: Any) -> Any:
        _check_dim(value, self.dim)
        if isinstance(value, np.ndarray):
            slices = [np.take(value, i, axis=self.dim) for i in range(value.shape[self.dim])]
            return np.stack([c.check(v) for v, c in zip(slices, self.cseq, strict=True)], self.dim)
        slices = [select(value, self.dim, i) for i in range(value.shape[self.dim])]
        return ops.stack([c.check(v) for v, c in zip(slices, self.cseq, strict=True)], self.dim)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
symmetric = _Symmetric()
positive_definite = _PositiveDefinite()
multinomial = _Multinomial
cat = _Cat
stack = _Stack

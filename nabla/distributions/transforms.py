"""Invertible transforms with log-Jacobians (torch.distributions.transforms), for
`TransformedDistribution`: Exp, Affine, Sigmoid, Tanh and their compositions.

Example:
    >>> t = ComposeTransform([AffineTransform(0.0, 2.0), ExpTransform()])
    >>> x = nabla.tensor([0.0, 1.0])
    >>> t.inv(t(x))  # x again
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from . import constraints
from .utils import _finfo, sum_rightmost

__all__ = [
    "AffineTransform",
    "ComposeTransform",
    "ExpTransform",
    "SigmoidTransform",
    "TanhTransform",
    "Transform",
]


class Transform:
    """A differentiable, invertible map y = f(x) with `log_abs_det_jacobian(x, y)`.

    Args:
        cache_size: 1 remembers the last (x, y) pair, so that `inv(y)` of a y this transform
            just made gives back exactly its x (SAC's `TanhTransform(cache_size=1)`: atanh of
            a tanh that rounded to 1 would be inf); 0 caches nothing.
    """

    bijective = False
    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real
    sign: Any = 1

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError(f"cache_size must be 0 or 1, got {cache_size!r}")
        self._cache_size = cache_size
        self._cached_x_y: tuple[Any, Any] = (None, None)
        self._inv: Transform | None = None

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform (`t.inv(y)` is x)."""
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        raise NotImplementedError(f"{type(self).__name__}.with_cache is not implemented")

    def __call__(self, x: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = (x, y)
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = (x, y)
        return x

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """log |dy/dx| at x (y = self(x))."""
        raise NotImplementedError

    def forward_shape(self, shape: tuple) -> tuple:
        return shape

    def inverse_shape(self, shape: tuple) -> tuple:
        return shape

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform (`t.inv`), sharing its cache."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.codomain

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.domain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self._inv.bijective

    @property
    def sign(self) -> Any:  # type: ignore[override]
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._inv!r})"


class ComposeTransform(Transform):
    """Apply `parts` in order: `ComposeTransform([f, g])(x)` is g(f(x)).

    Args:
        parts: the transforms.
        cache_size: see `Transform`.
    """

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        if not all(isinstance(p, Transform) for p in parts):
            raise TypeError(f"ComposeTransform: parts must be Transforms, got {parts!r}")
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim  # (the composite's event dim)
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = Transform.__hash__

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(p.bijective for p in self.parts)

    @property
    def sign(self) -> Any:  # type: ignore[override]
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    def _call(self, x: Tensor) -> Tensor:
        for part in self.parts:
            x = part(x)
        return x

    def _inverse(self, y: Tensor) -> Tensor:
        for part in reversed(self.parts):
            y = part.inv(y)
        return y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if not self.parts:
            return ops.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total: Any = 0.0
        event_dim = self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:], strict=True):
            total = total + sum_rightmost(part.log_abs_det_jacobian(a, b), event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape: tuple) -> tuple:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: tuple) -> tuple:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}([{', '.join(repr(p) for p in self.parts)}])"


class ExpTransform(Transform):
    """y = exp(x)."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpTransform)

    def __hash__(self) -> int:
        return hash(ExpTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class SigmoidTransform(Transform):
    """y = sigmoid(x), clamped into [tiny, 1 - eps] so that its inverse stays finite."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SigmoidTransform)

    def __hash__(self) -> int:
        return hash(SigmoidTransform)

    def _call(self, x: Tensor) -> Tensor:
        info = _finfo(x.dtype)
        return ops.clamp(ops.sigmoid(x), float(info.tiny), 1.0 - float(info.eps))

    def _inverse(self, y: Tensor) -> Tensor:
        info = _finfo(y.dtype)
        y = ops.clamp(y, float(info.tiny), 1.0 - float(info.eps))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -ops.softplus(-x) - ops.softplus(x)


class TanhTransform(Transform):
    """y = tanh(x) (squashing a Gaussian policy's actions into (-1, 1), as SAC does).

    Example:
        >>> d = TransformedDistribution(Normal(0.0, 1.0), [TanhTransform(cache_size=1)])
        >>> a = d.rsample((4,))
        >>> d.log_prob(a)  # the cache returns the pre-tanh sample: no atanh(±1)
    """

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TanhTransform)

    def __hash__(self) -> int:
        return hash(TanhTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return ops.atanh(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        # log(1 - tanh(x)^2), written to stay finite for large |x|
        return 2.0 * (math.log(2.0) - x - ops.softplus(-2.0 * x))


class AffineTransform(Transform):
    """y = loc + scale * x, pointwise; `event_dim` rightmost dims make one event.

    Args:
        loc: the shift (Tensor or number).
        scale: the scale (Tensor or number, nonzero).
        event_dim: how many rightmost dims of x form one event (their log-Jacobians sum).
        cache_size: see `Transform`.
    """

    bijective = True

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    def __eq__(self, other: object) -> bool:
        # (numbers by value, tensors by identity: comparing their values would evaluate them)
        def same(a: Any, b: Any) -> bool:
            return a is b or (isinstance(a, Number) and isinstance(b, Number) and a == b)

        return (
            isinstance(other, AffineTransform)
            and same(self.loc, other.loc)
            and same(self.scale, other.scale)
            and self._event_dim == other._event_dim
        )

    __hash__ = Transform.__hash__

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(constraints.real, self._event_dim) if self._event_dim else constraints.real

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return self.domain

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def sign(self) -> Any:  # type: ignore[override]
        if isinstance(self.scale, Number):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        shape = tuple(x.shape)
        if isinstance(self.scale, Number):
            result = ops.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self._event_dim:  # (each event's dims summed, after broadcasting the scale over them)
            result = ops.sum(ops.broadcast_to(result, ops.broadcast_shapes(tuple(result.shape), shape)),
                             tuple(range(-self._event_dim, 0)))  # fmt: skip
            shape = shape[: -self._event_dim]
        return ops.broadcast_to(result, shape)

    def forward_shape(self, shape: tuple) -> tuple:
        return ops.broadcast_shapes(
            tuple(shape), tuple(getattr(self.loc, "shape", ())), tuple(getattr(self.scale, "shape", ()))
        )

    def inverse_shape(self, shape: tuple) -> tuple:
        return self.forward_shape(shape)

    def __repr__(self) -> str:
        def show(v: Any) -> str:  # (a tensor by its shape: printing never evaluates)
            return f"Tensor of shape {tuple(v.shape)}" if isinstance(v, Tensor) else repr(v)

        return f"{self.__class__.__name__}(loc={show(self.loc)}, scale={show(self.scale)}, event_dim={self._event_dim})"

"""Invertible transforms with log-Jacobians (torch.distributions.transforms), for
`TransformedDistribution` and for mapping unconstrained parameters onto a constraint
(`biject_to` / `transform_to`): Exp, Power, Affine, Abs, Sigmoid, Softplus, Tanh, Softmax,
StickBreaking, LowerCholesky, PositiveDefinite, and the Compose, Independent, Reshape, Cat and
Stack functors.

Example:
    >>> t = ComposeTransform([AffineTransform(0.0, 2.0), ExpTransform()])
    >>> x = nabla.tensor([0.0, 1.0])
    >>> t.inv(t(x))  # x again
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import numpy as np

from .. import linalg, ops
from ..core.tensor import Size, Tensor
from ..torch_functions import narrow, select
from . import constraints
from .utils import _finfo, broadcast_all, known_host, sum_rightmost

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "CatTransform",
    "ComposeTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
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
        """This transform with a cache of `cache_size` (0 or 1)."""
        if self._cache_size == cache_size:
            return self
        return self._with_cache(cache_size)

    def _with_cache(self, cache_size: int) -> Transform:
        """A copy of this transform with another cache size (transforms whose `__init__` takes
        more than `cache_size` rebuild themselves here)."""
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
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


def _parameter_free(cls: type[Transform]) -> type[Transform]:
    """Class decorator for a transform without parameters: all its instances are equal (`__eq__`
    is `isinstance(other, cls)`, as torch writes in each such class) and hash alike."""
    cls.__eq__ = lambda self, other: isinstance(other, cls)  # type: ignore[method-assign]
    cls.__hash__ = lambda self: hash(cls)  # type: ignore[method-assign]
    return cls


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

    def _with_cache(self, cache_size: int) -> Transform:
        return ComposeTransform(self.parts, cache_size=cache_size)

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


@_parameter_free
class ExpTransform(Transform):
    """y = exp(x)."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


@_parameter_free
class SigmoidTransform(Transform):
    """y = sigmoid(x), clamped into [tiny, 1 - eps] so that its inverse stays finite."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        info = _finfo(x.dtype)
        return ops.clamp(ops.sigmoid(x), float(info.tiny), 1.0 - float(info.eps))

    def _inverse(self, y: Tensor) -> Tensor:
        info = _finfo(y.dtype)
        y = ops.clamp(y, float(info.tiny), 1.0 - float(info.eps))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -ops.softplus(-x) - ops.softplus(x)


@_parameter_free
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


identity_transform = ComposeTransform([])
"""The identity map (torch's `identity_transform`: a composition of no transforms)."""


def _same_values(a: Any, b: Any) -> bool:
    """Whether two parameters are equal: numbers by value, tensors by identity or by values the
    host already has (comparing pending values would evaluate them)."""
    if a is b:
        return True
    ka, kb = known_host(a), known_host(b)
    return ka is not None and kb is not None and ka.shape == kb.shape and bool(np.all(ka == kb))


@_parameter_free
class AbsTransform(Transform):
    """y = |x| (not injective: its `inv` is the identity on y >= 0, as torch's).

    Example:
        >>> AbsTransform()(nabla.tensor([-2.0, 3.0]))
        Tensor([2., 3.], dtype=float32)
    """

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class PowerTransform(Transform):
    """y = x ** exponent on x > 0.

    Args:
        exponent: the power (Tensor or number; a tensor broadcasts with x).
        cache_size: see `Transform`.

    Example:
        >>> PowerTransform(2.0)(nabla.tensor([3.0]))
        Tensor([9.], dtype=float32)
    """

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def _with_cache(self, cache_size: int) -> Transform:
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self) -> Any:  # type: ignore[override]
        return self.exponent.sign()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PowerTransform) and _same_values(self.exponent, other.exponent)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape: tuple) -> tuple:
        return ops.broadcast_shapes(tuple(shape), tuple(self.exponent.shape))

    def inverse_shape(self, shape: tuple) -> tuple:
        return ops.broadcast_shapes(tuple(shape), tuple(self.exponent.shape))


@_parameter_free
class SoftplusTransform(Transform):
    """y = log(1 + exp(x)) (linear for x > 20), onto the positive reals.

    Example:
        >>> t = SoftplusTransform()
        >>> t.inv(t(nabla.tensor([-1.0, 5.0])))  # x again
    """

    domain = constraints.real
    codomain = constraints.positive
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        return ops.softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -ops.softplus(-x)


@_parameter_free
class SoftmaxTransform(Transform):
    """y = softmax(x) over the last dim, onto the simplex. Not bijective (adding a constant to x
    gives the same y); `inv` is log. For optimization, not for HMC (use StickBreakingTransform).

    Example:
        >>> SoftmaxTransform()(nabla.zeros(4))
        Tensor([0.25, 0.25, 0.25, 0.25], dtype=float32)
    """

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x: Tensor) -> Tensor:
        probs = (x - ops.amax(x, -1, True)).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def forward_shape(self, shape: tuple) -> tuple:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


def _stick_offset(k: int, dtype: Any) -> Tensor:
    """log(K, K - 1, ..., 1) for K = k: the shift that maps x = 0 to the simplex's centre."""
    return ops.arange(k, 0, -1, dtype=dtype).log()


@_parameter_free
class StickBreakingTransform(Transform):
    """A bijection from R^K onto the (K+1)-simplex by stick breaking: each coordinate takes a
    sigmoid fraction of what is left (x = 0 maps to the uniform vector). Bijective, so fit for
    HMC; it mixes coordinates (for optimization SoftmaxTransform acts more coordinate-wise).

    Example:
        >>> StickBreakingTransform()(nabla.zeros(3))
        Tensor([0.25, 0.25, 0.25, 0.25], dtype=float32)
    """

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        info = _finfo(x.dtype)
        z = ops.clamp(ops.sigmoid(x - _stick_offset(x.shape[-1], x.dtype)), float(info.tiny), 1.0 - float(info.eps))
        z_cumprod = (1 - z).cumprod(-1)
        return ops.pad(z, (0, 1), value=1.0) * ops.pad(z_cumprod, (1, 0), value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        y_crop = y[..., :-1]
        sf = ops.clamp(1 - y_crop.cumsum(-1), float(_finfo(y.dtype).tiny))
        return y_crop.log() - sf.log() + _stick_offset(y_crop.shape[-1], y.dtype)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        x = x - _stick_offset(x.shape[-1], x.dtype)
        # (1 - sigmoid(x) = exp(-x) sigmoid(x))
        return (-x + ops.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: tuple) -> tuple:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return (*shape[:-1], shape[-1] + 1)

    def inverse_shape(self, shape: tuple) -> tuple:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return (*shape[:-1], shape[-1] - 1)


def _tril_exp_diag(x: Tensor, fn: str) -> Tensor:
    diag = getattr(ops.diagonal(x, 0, -2, -1), fn)()
    return ops.tril(x, -1) + ops.diag_embed(diag)


@_parameter_free
class LowerCholeskyTransform(Transform):
    """Square matrices onto lower-triangular ones with a positive diagonal: the strict lower
    triangle kept, the diagonal exponentiated (a Cholesky factor's parameterization). Its log
    Jacobian is not defined (as in torch).

    Example:
        >>> LowerCholeskyTransform()(nabla.zeros(2, 2))
        Tensor([[1., 0.], [0., 1.]], dtype=float32)
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x: Tensor) -> Tensor:
        return _tril_exp_diag(x, "exp")

    def _inverse(self, y: Tensor) -> Tensor:
        return _tril_exp_diag(y, "log")


@_parameter_free
class PositiveDefiniteTransform(Transform):
    """Square matrices onto positive definite ones: L L^T of `LowerCholeskyTransform`'s L.

    Example:
        >>> PositiveDefiniteTransform()(nabla.zeros(2, 2))
        Tensor([[1., 0.], [0., 1.]], dtype=float32)
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x: Tensor) -> Tensor:
        lower = LowerCholeskyTransform()(x)
        return ops.matmul(lower, lower.mT)

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(linalg.cholesky(y))


class IndependentTransform(Transform):
    """`base_transform` with `reinterpreted_batch_ndims` more rightmost dims taken as one event:
    the map is unchanged, its log-Jacobian is summed over those dims.

    Args:
        base_transform: the transform.
        reinterpreted_batch_ndims: how many extra rightmost dims form one event.
        cache_size: see `Transform`.

    Example:
        >>> t = IndependentTransform(ExpTransform(), 1)
        >>> t.log_abs_det_jacobian(x, t(x)).shape  # x of shape (2, 3): summed over the 3
        (2,)
    """

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def _with_cache(self, cache_size: int) -> Transform:
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, IndependentTransform)
            and self.base_transform == other.base_transform
            and self.reinterpreted_batch_ndims == other.reinterpreted_batch_ndims
        )

    __hash__ = Transform.__hash__

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self.base_transform.bijective

    @property
    def sign(self) -> Any:  # type: ignore[override]
        return self.base_transform.sign

    def _call(self, x: Tensor) -> Tensor:
        if x.ndim < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        if y.ndim < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def forward_shape(self, shape: tuple) -> tuple:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        return self.base_transform.inverse_shape(shape)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class ReshapeTransform(Transform):
    """Reshape the rightmost `in_shape` dims to `out_shape` (same number of elements); unit
    Jacobian.

    Args:
        in_shape: the input event shape.
        out_shape: the output event shape.
        cache_size: see `Transform`.

    Example:
        >>> ReshapeTransform((4,), (2, 2))(nabla.zeros(3, 4)).shape
        (3, 2, 2)
    """

    bijective = True

    def __init__(self, in_shape: Any, out_shape: Any, cache_size: int = 0) -> None:
        self.in_shape, self.out_shape = Size(tuple(in_shape)), Size(tuple(out_shape))
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    def _with_cache(self, cache_size: int) -> Transform:
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ReshapeTransform)
            and self.in_shape == other.in_shape
            and self.out_shape == other.out_shape
        )

    __hash__ = Transform.__hash__

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.out_shape))

    def _call(self, x: Tensor) -> Tensor:
        batch = tuple(x.shape[: x.ndim - len(self.in_shape)])
        return x.reshape(batch + tuple(self.out_shape))

    def _inverse(self, y: Tensor) -> Tensor:
        batch = tuple(y.shape[: y.ndim - len(self.out_shape)])
        return y.reshape(batch + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return ops.zeros(tuple(x.shape[: x.ndim - len(self.in_shape)]), dtype=x.dtype)

    @staticmethod
    def _reshape(shape: tuple, old: Size, new: Size) -> tuple:
        shape = tuple(shape)
        if len(shape) < len(old):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(old)
        if shape[cut:] != tuple(old):
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {tuple(old)}")
        return shape[:cut] + tuple(new)

    def forward_shape(self, shape: tuple) -> tuple:
        return self._reshape(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        return self._reshape(shape, self.out_shape, self.in_shape)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({tuple(self.in_shape)}, {tuple(self.out_shape)})"


def _check_dim(x: Tensor, dim: int, length: int, what: str) -> None:
    if not -x.ndim <= dim < x.ndim:
        raise ValueError(f"dim {dim} out of range for {what} with {x.ndim} dimensions")
    if x.shape[dim] != length:
        raise ValueError(f"{what}.size({dim}) = {x.shape[dim]} must equal {length}")


class _JoinTransform(Transform):
    """What Cat and Stack share: `transforms[i]` applied to the i-th piece of x along `dim` and
    the results joined again; subclasses say how x is cut (`_pieces`, `_size`) and joined
    (`_join`, `_join_constraints`)."""

    def __init__(self, tseq: Any, dim: int = 0, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    @property
    def _size(self) -> int:
        raise NotImplementedError

    def _pieces(self, z: Tensor) -> list[Tensor]:
        raise NotImplementedError

    def _join(self, parts: list[Tensor]) -> Tensor:
        raise NotImplementedError

    def _join_constraints(self, parts: list[constraints.Constraint]) -> constraints.Constraint:
        raise NotImplementedError

    def _split(self, z: Tensor, what: str) -> list[Tensor]:
        _check_dim(z, self.dim, self._size, what)
        return self._pieces(z)

    def _call(self, x: Tensor) -> Tensor:
        return self._join([t(p) for t, p in zip(self.transforms, self._split(x, "x"), strict=True)])

    def _inverse(self, y: Tensor) -> Tensor:
        return self._join([t.inv(p) for t, p in zip(self.transforms, self._split(y, "y"), strict=True)])

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._join_constraints([t.domain for t in self.transforms])

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._join_constraints([t.codomain for t in self.transforms])


class CatTransform(_JoinTransform):
    """Apply `tseq[i]` to the i-th block (of `lengths[i]` entries) along `dim`, as `torch.cat`
    joins them.

    Args:
        tseq: the transforms.
        dim: the dim the blocks are laid along.
        lengths: each block's length (1 each by default).
        cache_size: see `Transform`.

    Example:
        >>> t = CatTransform([ExpTransform(), identity_transform], dim=0, lengths=[2, 2])
        >>> t(nabla.zeros(4))
        Tensor([1., 1., 0., 0.], dtype=float32)
    """

    def __init__(self, tseq: Any, dim: int = 0, lengths: Any = None, cache_size: int = 0) -> None:
        super().__init__(tseq, dim, cache_size)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        return sum(self.lengths)

    _size = length

    def _with_cache(self, cache_size: int) -> Transform:
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _pieces(self, z: Tensor) -> list[Tensor]:
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return [narrow(z, self.dim, s, n) for s, n in zip(starts, self.lengths, strict=True)]

    def _join(self, parts: list[Tensor]) -> Tensor:
        return ops.cat(parts, self.dim)

    def _join_constraints(self, parts: list[constraints.Constraint]) -> constraints.Constraint:
        return constraints.cat(parts, self.dim, self.lengths)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        parts = []
        for t, xb, yb in zip(self.transforms, self._split(x, "x"), self._split(y, "y"), strict=True):
            parts.append(sum_rightmost(t.log_abs_det_jacobian(xb, yb), self.event_dim - t.event_dim))
        dim = (self.dim - x.ndim if self.dim >= 0 else self.dim) + self.event_dim
        if dim < 0:  # (the dim is a batch dim of the log-Jacobian: join the blocks' values)
            return ops.cat(parts, dim)
        total = parts[0]
        for part in parts[1:]:
            total = total + part
        return total


class StackTransform(_JoinTransform):
    """Apply `tseq[i]` to the i-th slice along `dim`, as `torch.stack` joins them.

    Args:
        tseq: the transforms, one per slice.
        dim: the dim the slices are laid along.
        cache_size: see `Transform`.

    Example:
        >>> StackTransform([ExpTransform(), identity_transform], dim=1)(nabla.zeros(3, 2))[0]
        Tensor([1., 0.], dtype=float32)
    """

    @property
    def _size(self) -> int:
        return len(self.transforms)

    def _with_cache(self, cache_size: int) -> Transform:
        return StackTransform(self.transforms, self.dim, cache_size)

    def _pieces(self, z: Tensor) -> list[Tensor]:
        return [select(z, self.dim, i) for i in range(z.shape[self.dim])]

    def _join(self, parts: list[Tensor]) -> Tensor:
        return ops.stack(parts, self.dim)

    def _join_constraints(self, parts: list[constraints.Constraint]) -> constraints.Constraint:
        return constraints.stack(parts, self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        parts = zip(self.transforms, self._split(x, "x"), self._split(y, "y"), strict=True)
        return ops.stack([t.log_abs_det_jacobian(a, b) for t, a, b in parts], self.dim)

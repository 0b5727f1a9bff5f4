"""torch.special's orthogonal polynomials of degree n at x: Chebyshev T, U, V, W (and their
shifted forms on [0, 1]), Hermite H (physicists') and He (probabilists'), Laguerre L, Legendre P.

Composites of elementwise ops, following PyTorch's algorithm branch for branch so values agree
to rounding: n < 0 gives 0; the endpoints have closed values; for the Chebyshev kinds, degrees
above a small threshold inside (-1, 1) use the trigonometric forms (cos(n acos x), ...); all other
points run the three-term recurrence, unrolled in the graph up to the largest degree. A degree
tensor is therefore read on the host (its maximum sizes the graph; a float degree is truncated,
as in PyTorch), and degrees above `MAX_DEGREE` are refused. Derivatives in x come from the ops
(PyTorch gives these functions none); the degree gets none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.common import dtypes as _dt
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import unary as _un
from .base import public
from .cast import cast
from .creation import full_like, tensor

__all__ = [
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
]

MAX_DEGREE = 1024  # the recurrence is unrolled: a larger degree would build a huge graph


def _operands(x: Any, n: Any, op: str) -> tuple[Tensor, Tensor, int]:
    """(x as the result's float dtype, the degrees as int64, the largest degree)."""
    if isinstance(n, bool) or not isinstance(n, Tensor | int | float | np.integer | np.floating):
        raise TypeError(f"{op}: n must be a number or a tensor, got {type(n).__name__}")
    if not isinstance(x, Tensor | int | float | np.integer | np.floating) or isinstance(x, bool):
        raise TypeError(f"{op}: input must be a tensor or a number, got {type(x).__name__}")
    dtype = _bin.result_type(x, n)
    dtype = dtype if _dt.is_float(dtype) else _dt.DEFAULT_FLOAT
    xt = cast(x, dtype) if isinstance(x, Tensor) else tensor(float(x), dtype)
    if isinstance(n, Tensor):
        degrees = cast(_un.trunc(n), _dt.int64) if _dt.is_float(n.dtype) else cast(n, _dt.int64)
        top = int(np.max(degrees.numpy(), initial=0))  # (the graph's size depends on it: read now)
    else:
        top = int(n)
        degrees = tensor(top, _dt.int64)
    if top > MAX_DEGREE:
        raise ValueError(f"{op}: degree {top} is above the {MAX_DEGREE} this implementation unrolls")
    return xt, degrees, max(top, 0)


def _by_degree(n: Tensor, top: int, p0: Tensor, p1: Tensor, step: Callable[[int, Tensor, Tensor], Tensor]) -> Tensor:
    """p_n per element from p_0, p_1 and p_(k) = step(k, p_(k-2), p_(k-1)), k = 2..top."""
    out = _bin.where_(_bin.equal(n, 0), p0, p1)
    prev, cur = p0, p1
    for k in range(2, top + 1):
        prev, cur = cur, step(k, prev, cur)
        out = _bin.where_(_bin.greater_equal(n, k), cur, out)
    return out


def _finish(n: Tensor, value: Tensor) -> Tensor:
    """0 for a negative degree (PyTorch's), and the result broadcast with n."""
    return _bin.where_(_bin.less(n, 0), 0.0, value)


def _sign_of_parity(n: Tensor, dtype: Any) -> Tensor:
    """(-1)^n as `dtype`."""
    return _bin.sub(1.0, _bin.mul(cast(_bin.remainder(n, 2), dtype), 2.0))


# -- Chebyshev polynomials ------------------------------------------------------------------------
# per kind: p_1(y); the value at y = 1 and at y = -1 (before the (-1)^n sign) in terms of n
_CHEBYSHEV_FIRST = {"t": (1.0, 0.0), "u": (2.0, 0.0), "v": (2.0, -1.0), "w": (2.0, 1.0)}
_THRESHOLD = {False: {"t": 6, "u": 8, "v": 8, "w": 8}, True: {"t": 6, "u": 6, "v": 6, "w": 4}}


def _chebyshev(kind: str, shifted: bool, x: Any, n: Any, op: str) -> Tensor:
    x, n, top = _operands(x, n, op)
    dtype = x.dtype
    y = _bin.sub(_bin.add(x, x), 1.0) if shifted else x
    nf = cast(n, dtype)
    one = full_like(y, 1.0)
    scale, shift = _CHEBYSHEV_FIRST[kind]
    p1 = _bin.add(_bin.mul(y, scale), shift)
    two_y = _bin.add(y, y)
    value = _by_degree(n, top, one, p1, lambda k, p, q: _bin.sub(_bin.mul(two_y, q), p))
    # inside (-1, 1) above the threshold: the trigonometric form
    theta = _un.acos(_bin.where_(_bin.less(_un.abs(y), 1.0), y, 0.0))
    value = _bin.where_(
        _bin.logical_and(_bin.greater(n, _THRESHOLD[shifted][kind]), _bin.less(_un.abs(y), 1.0)),
        _trig(kind, shifted, y, nf, n, theta),
        value,
    )
    # the endpoints (PyTorch tests x itself: |x| == 1, or x == 1 and x == 0 when shifted)
    sign = _sign_of_parity(n, dtype)
    odd_count = _bin.add(_bin.mul(nf, 2.0), 1.0)  # 2n + 1
    at_one = {"t": 1.0, "u": _bin.add(nf, 1.0), "v": 1.0, "w": odd_count}[kind]
    at_minus = {"t": sign, "u": _bin.mul(sign, _bin.add(nf, 1.0)), "v": _bin.mul(sign, odd_count), "w": sign}[kind]
    upper, lower = (_bin.equal(x, 1.0), _bin.equal(x, 0.0)) if shifted else (_bin.equal(y, 1.0), _bin.equal(y, -1.0))
    value = _bin.where_(upper, at_one, _bin.where_(lower, at_minus, value))
    return _finish(n, value)


def _trig(kind: str, shifted: bool, y: Tensor, nf: Tensor, n: Tensor, theta: Tensor) -> Tensor:
    if kind == "t":
        return _un.cos(_bin.mul(nf, theta))
    if kind == "u":
        s = _un.sin(theta)
        ratio = _bin.div(_un.sin(_bin.mul(_bin.add(nf, 1.0), theta)), s)
        limit = _bin.div(_bin.mul(_bin.add(nf, 1.0), _un.cos(_bin.mul(_bin.add(nf, 1.0), theta))), y)
        return _bin.where_(_bin.not_equal(s, 0.0), ratio, limit)
    half = _bin.mul(theta, 0.5)
    angle = _bin.mul(_bin.add(nf, 0.5), theta)
    sign = _sign_of_parity(n, y.dtype)
    odd_count = _bin.add(_bin.mul(nf, 2.0), 1.0)
    if kind == "v":
        ratio = _bin.div(_un.cos(angle), _un.cos(half))
        return _bin.where_(_bin.not_equal(_un.sin(half), 1.0), ratio, _bin.mul(sign, odd_count))
    ratio = _bin.div(_un.sin(angle), _un.sin(half))
    degenerate = sign if shifted else _bin.where_(_bin.greater(y, 0.0), odd_count, sign)
    return _bin.where_(_bin.not_equal(_un.cos(half), 1.0), ratio, degenerate)


@public()
def chebyshev_polynomial_t(input: Any, n: Any) -> Tensor:
    """Chebyshev polynomial of the first kind T_n(x) (torch.special.chebyshev_polynomial_t).

    Example:
        >>> nabla.chebyshev_polynomial_t(nabla.tensor([0.5]), 2).item()
        -0.5
    """
    return _chebyshev("t", False, input, n, "chebyshev_polynomial_t")


@public()
def chebyshev_polynomial_u(input: Any, n: Any) -> Tensor:
    """Chebyshev polynomial of the second kind U_n(x) (torch.special.chebyshev_polynomial_u)."""
    return _chebyshev("u", False, input, n, "chebyshev_polynomial_u")


@public()
def chebyshev_polynomial_v(input: Any, n: Any) -> Tensor:
    """Chebyshev polynomial of the third kind V_n(x) (torch.special.chebyshev_polynomial_v)."""
    return _chebyshev("v", False, input, n, "chebyshev_polynomial_v")


@public()
def chebyshev_polynomial_w(input: Any, n: Any) -> Tensor:
    """Chebyshev polynomial of the fourth kind W_n(x) (torch.special.chebyshev_polynomial_w)."""
    return _chebyshev("w", False, input, n, "chebyshev_polynomial_w")


@public()
def shifted_chebyshev_polynomial_t(input: Any, n: Any) -> Tensor:
    """T_n(2x - 1), the first kind shifted to [0, 1] (torch.special.shifted_chebyshev_polynomial_t)."""
    return _chebyshev("t", True, input, n, "shifted_chebyshev_polynomial_t")


@public()
def shifted_chebyshev_polynomial_u(input: Any, n: Any) -> Tensor:
    """U_n(2x - 1) (torch.special.shifted_chebyshev_polynomial_u)."""
    return _chebyshev("u", True, input, n, "shifted_chebyshev_polynomial_u")


@public()
def shifted_chebyshev_polynomial_v(input: Any, n: Any) -> Tensor:
    """V_n(2x - 1) (torch.special.shifted_chebyshev_polynomial_v)."""
    return _chebyshev("v", True, input, n, "shifted_chebyshev_polynomial_v")


@public()
def shifted_chebyshev_polynomial_w(input: Any, n: Any) -> Tensor:
    """W_n(2x - 1) (torch.special.shifted_chebyshev_polynomial_w)."""
    return _chebyshev("w", True, input, n, "shifted_chebyshev_polynomial_w")


# -- Hermite, Laguerre, Legendre ----------------------------------------------------------------
# PyTorch's degree limits for Hermite polynomials (above: nan), by dtype
_HERMITE_LIMIT = {_dt.float32: 128, _dt.float64: 512}


def _hermite(x: Any, n: Any, physicists: bool, op: str) -> Tensor:
    x, n, top = _operands(x, n, op)
    limit = _HERMITE_LIMIT.get(x.dtype, 1024)
    one = full_like(x, 1.0)
    if physicists:  # H_(j+1) = 2x H_j - 2j H_(j-1)
        two_x = _bin.add(x, x)
        value = _by_degree(
            n, min(top, limit), one, two_x, lambda k, p, q: _bin.sub(_bin.mul(two_x, q), _bin.mul(p, 2.0 * (k - 1)))
        )
    else:  # He_(j+1) = x He_j - j He_(j-1)
        value = _by_degree(
            n, min(top, limit), one, x, lambda k, p, q: _bin.sub(_bin.mul(x, q), _bin.mul(p, float(k - 1)))
        )
    return _finish(n, _bin.where_(_bin.greater(n, limit), float("nan"), value))


@public()
def hermite_polynomial_h(input: Any, n: Any) -> Tensor:
    """Physicists' Hermite polynomial H_n(x) (torch.special.hermite_polynomial_h); nan above
    degree 128 in float32 and 512 in float64, as PyTorch.

    Example:
        >>> nabla.hermite_polynomial_h(nabla.tensor([1.0]), 3).item()
        -4.0
    """
    return _hermite(input, n, True, "hermite_polynomial_h")


@public()
def hermite_polynomial_he(input: Any, n: Any) -> Tensor:
    """Probabilists' Hermite polynomial He_n(x) (torch.special.hermite_polynomial_he)."""
    return _hermite(input, n, False, "hermite_polynomial_he")


@public()
def laguerre_polynomial_l(input: Any, n: Any) -> Tensor:
    """Laguerre polynomial L_n(x) (torch.special.laguerre_polynomial_l): 1 at x = 0."""
    x, n, top = _operands(input, n, "laguerre_polynomial_l")
    one = full_like(x, 1.0)
    one_minus_x = _bin.sub(1.0, x)

    def step(k: int, p: Tensor, q: Tensor) -> Tensor:  # L_k from L_(k-1), L_(k-2)
        j = k - 1
        return _bin.div(_bin.sub(_bin.mul(_bin.add(one_minus_x, float(2 * j)), q), _bin.mul(p, float(j))), float(k))

    value = _by_degree(n, top, one, one_minus_x, step)
    return _finish(n, _bin.where_(_bin.equal(x, 0.0), 1.0, value))


@public()
def legendre_polynomial_p(input: Any, n: Any) -> Tensor:
    """Legendre polynomial P_n(x) (torch.special.legendre_polynomial_p)."""
    x, n, top = _operands(input, n, "legendre_polynomial_p")
    one = full_like(x, 1.0)

    def step(k: int, p: Tensor, q: Tensor) -> Tensor:  # P_k from P_(k-1), P_(k-2)
        j = k - 1
        return _bin.div(_bin.sub(_bin.mul(_bin.mul(x, float(2 * j + 1)), q), _bin.mul(p, float(j))), float(k))

    value = _by_degree(n, top, one, x, step)
    at_ends = _bin.where_(_bin.greater(x, 0.0), 1.0, _sign_of_parity(n, x.dtype))
    return _finish(n, _bin.where_(_bin.equal(_un.abs(x), 1.0), at_ends, value))

"""Special functions: the gamma family (lgamma, digamma, polygamma, the Hurwitz zeta, mvlgamma)
and torch.special's xlog1py and entr; the error-function family is in `special_erf.py`, the
modified Bessel functions in `special_bessel.py`. `nabla.special` re-exports them all under
torch.special's names.

Each primitive's formula is written once over an elementwise library (`_MaxMath` for the MAX
lowering, `_NumpyMath` for the NumPy kernel, which evaluates it in float64 and rounds once), so
the two executors compute the same algorithm. Every formula has a static structure: recurrences
that shift an argument run a fixed number of masked steps, so one graph serves every value.

    lgamma   x < 0: reflection; [0.5, 2.5): Taylor series of lgamma about 2 (accurate at the
             roots 1 and 2); elsewhere: shift to >= 10, Stirling's series.  d/dx = digamma
    digamma  x < 0: reflection; shift to >= 10, asymptotic series.      d/dx = polygamma(1, x)
    zeta     Hurwitz zeta(x, q) as Cephes: 9 terms (more while q + k < 10), Euler-Maclaurin.
             d/dq = -x zeta(x + 1, q); no derivative in x (as PyTorch)
    polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1 (reflected below 0 with the
             derivatives of cot), digamma for n = 0: a composite, so its derivatives come free.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from max.dtype import DType
from max.graph import ops

from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import unary as _un
from .base import is_zero_tangent, public
from .binary import BinaryOperation, _MaxLib, _NumpyLib, binary_operands
from .control_flow import host_array
from .creation import full
from .unary import UnaryOperation, _float_input

__all__ = [
    "digamma",
    "entr",
    "lgamma",
    "mvlgamma",
    "polygamma",
    "xlog1py",
    "xlogy",
    "zeta",
]

_EULER_GAMMA = 0.57721566490153286061
_HALF_LN_2PI = 0.5 * math.log(2.0 * math.pi)
_LN_PI = math.log(math.pi)
_INF, _NAN = math.inf, math.nan


# -- the elementwise libraries the formulas are written over --------------------------------------
class _MaxMath(_MaxLib):
    log = staticmethod(ops.log)
    log1p = staticmethod(ops.log1p)
    exp = staticmethod(ops.exp)
    sin = staticmethod(ops.sin)
    cos = staticmethod(ops.cos)
    floor = staticmethod(ops.floor)
    sqrt = staticmethod(ops.sqrt)
    logical_not = staticmethod(ops.logical_not)


class _NumpyMath(_NumpyLib):
    log = staticmethod(np.log)
    log1p = staticmethod(np.log1p)
    exp = staticmethod(np.exp)
    sin = staticmethod(np.sin)
    cos = staticmethod(np.cos)
    floor = staticmethod(np.floor)
    sqrt = staticmethod(np.sqrt)
    logical_not = staticmethod(np.logical_not)


def _on_max(formula: Any, *xs: Any) -> Any:
    """A formula lowered to MAX; half-precision inputs are evaluated in float32 and rounded."""
    dtype = xs[0].dtype
    if dtype in (DType.float16, DType.bfloat16):
        return ops.cast(formula(_MaxMath, *[ops.cast(x, DType.float32) for x in xs]), dtype)
    return formula(_MaxMath, *xs)


def _on_numpy(formula: Any, *xs: np.ndarray) -> np.ndarray:
    """A formula on NumPy in float64, rounded once (masked-out lanes may warn: they are unused)."""
    with np.errstate(all="ignore"):
        return np.asarray(formula(_NumpyMath, *[x.astype(np.float64) for x in xs])).astype(xs[0].dtype)


class _Formula:
    """An elementwise primitive whose `formula(lib, *xs)` is both its MAX lowering and its NumPy
    kernel (mixed in before UnaryOperation / BinaryOperation)."""

    formula: Any = None

    def kernel(self, *xs: Any) -> Any:
        return _on_max(type(self).formula, *xs)

    def numpy_kernel(self, *xs: np.ndarray) -> np.ndarray:
        return _on_numpy(type(self).formula, *xs)


def _horner(lib: Any, z: Any, coeffs: tuple) -> Any:
    """coeffs[0] z^(n-1) + ... + coeffs[-1]."""
    acc = lib.add(lib.mul(z, coeffs[0]), coeffs[1])
    for c in coeffs[2:]:
        acc = lib.add(lib.mul(acc, z), c)
    return acc


def _shift_up(lib: Any, z: Any, steps: int, limit: float, update: Any, acc: Any) -> tuple[Any, Any]:
    """Up to `steps` masked steps z -> z + 1 while z < limit, folding each z left behind into
    `acc` with `update(acc, z)` (a fixed structure for what Cephes writes as a while loop)."""
    for _ in range(steps):
        below = lib.less(z, limit)
        acc = lib.where(below, update(acc, z), acc)
        z = lib.where(below, lib.add(z, 1.0), z)
    return z, acc


def _is_pole(lib: Any, x: Any) -> Any:
    """x is 0 or a negative integer (-inf included)."""
    return lib.logical_and(lib.less(x, 0.5), lib.equal(lib.floor(x), x))


def _near_zero(lib: Any, x: Any) -> Any:
    """x - round(x), in [-1/2, 1/2] and exact: the argument of sin(pi x) and cot(pi x) reduced
    without the error of pi x itself (both have period 1 up to sign)."""
    return lib.sub(x, lib.floor(lib.add(x, 0.5)))


def _sinpi_abs(lib: Any, x: Any) -> Any:
    """|sin(pi x)|."""
    return lib.abs(lib.sin(lib.mul(_near_zero(lib, x), math.pi)))


# -- lgamma --------------------------------------------------------------------------------------
def _zeta_minus_one(k: np.ndarray) -> np.ndarray:
    """zeta(k) - 1 for integers k >= 2: 998 terms and an Euler-Maclaurin tail (float64-exact)."""
    n = np.arange(2.0, 1000.0)
    k = k[:, None].astype(np.float64)
    head = (n ** (-k)).sum(axis=1)
    m = 1000.0  # the tail sum_{n >= m} n^-k
    k = k[:, 0]
    tail = (
        m ** (1 - k) / (k - 1) + 0.5 * m ** (-k) + k * m ** (-k - 1) / 12 - k * (k + 1) * (k + 2) * m ** (-k - 3) / 720
    )
    return head + tail


# lgamma(2 + e) = (1 - gamma) e + sum_{k >= 2} (-1)^k (zeta(k) - 1) / k e^k, for |e| <= 0.5: 30
# terms leave < 1e-18 (the k-th term is below (e/2)^k / k). Highest power first, for Horner.
_K = np.arange(2, 31)
_LGAMMA2_TAYLOR = tuple(float(c) for c in ((-1.0) ** _K * _zeta_minus_one(_K) / _K)[::-1]) + (1.0 - _EULER_GAMMA, 0.0)
# Stirling: lgamma(z) = (z - 1/2) log z - z + log(2 pi) / 2 + sum B_2k / (2k (2k - 1) z^(2k - 1)).
_STIRLING = (1 / 156, -691 / 360360, 1 / 1188, -1 / 1680, 1 / 1260, -1 / 360, 1 / 12)


def _lgamma_positive(lib: Any, y: Any) -> Any:
    """lgamma(y) for y > 0 (other lanes: any value)."""
    mid = lib.logical_and(lib.less(y, 2.5), lib.logical_not(lib.less(y, 0.5)))  # [0.5, 2.5)
    u = lib.where(mid, y, 2.0)
    low = lib.less(u, 1.5)  # lgamma(u) = lgamma(u + 1) - log(u), and u + 1 is about 2
    e = lib.where(low, lib.sub(u, 1.0), lib.sub(u, 2.0))  # exact (Sterbenz)
    near = lib.sub(_horner(lib, e, _LGAMMA2_TAYLOR), lib.where(low, lib.log1p(e), 0.0))
    z, prod = _shift_up(lib, lib.where(mid, 10.0, y), 10, 10.0, lib.mul, lib.add(lib.mul(y, 0.0), 1.0))
    r = lib.div(1.0, z)
    series = lib.mul(r, _horner(lib, lib.mul(r, r), _STIRLING))
    far = lib.add(lib.sub(lib.mul(lib.sub(z, 0.5), lib.log(z)), z), _HALF_LN_2PI)
    far = lib.sub(lib.add(far, series), lib.log(prod))
    return lib.where(mid, near, far)


def _lgamma_formula(lib: Any, x: Any) -> Any:
    reflect = lib.less(x, 0.0)
    y = lib.where(reflect, lib.sub(1.0, x), x)
    y = lib.where(lib.logical_or(lib.is_nan(y), lib.is_inf(y)), 2.0, y)  # chosen below
    lg = _lgamma_positive(lib, y)
    # lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
    sinpi = _sinpi_abs(lib, lib.where(reflect, x, 0.25))
    out = lib.where(reflect, lib.sub(lib.sub(_LN_PI, lib.log(sinpi)), lg), lg)
    out = lib.where(lib.logical_or(_is_pole(lib, x), lib.is_inf(x)), _INF, out)
    return lib.where(lib.is_nan(x), x, out)


class LgammaOp(_Formula, UnaryOperation):
    name = "lgamma"
    formula = staticmethod(_lgamma_formula)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.mul(cotangents[0], digamma(primals[0]))]


# -- digamma -------------------------------------------------------------------------------------
# psi(z) = log z - 1/(2z) - sum B_2k / (2k z^2k), z >= 10 (the first term left out is < 1e-17)
_PSI_SERIES = (1 / 12, -691 / 32760, 1 / 132, -1 / 240, 1 / 252, -1 / 120, 1 / 12)


def _digamma_formula(lib: Any, x: Any) -> Any:
    reflect = lib.less(x, 0.0)
    y = lib.where(reflect, lib.sub(1.0, x), x)
    y = lib.where(lib.logical_or(lib.is_nan(y), lib.is_inf(y)), 1.0, y)
    z, acc = _shift_up(lib, y, 10, 10.0, lambda a, z: lib.add(a, lib.div(1.0, z)), lib.mul(y, 0.0))
    r2 = lib.div(1.0, lib.mul(z, z))
    psi = lib.sub(lib.sub(lib.log(z), lib.div(0.5, z)), lib.mul(r2, _horner(lib, r2, _PSI_SERIES)))
    psi = lib.sub(psi, acc)
    # psi(x) = psi(1 - x) - pi cot(pi x)
    f = lib.mul(_near_zero(lib, lib.where(reflect, x, 0.25)), math.pi)
    out = lib.where(reflect, lib.sub(psi, lib.div(lib.mul(lib.cos(f), math.pi), lib.sin(f))), psi)
    # PyTorch: psi(+-0) = -+inf, nan at the negative integers, psi(inf) = inf
    zero = lib.equal(x, 0.0)
    out = lib.where(zero, lib.div(-1.0, x), out)
    out = lib.where(lib.logical_and(_is_pole(lib, x), lib.logical_not(zero)), _NAN, out)
    out = lib.where(lib.logical_and(lib.is_inf(x), lib.greater(x, 0.0)), _INF, out)
    return lib.where(lib.is_nan(x), x, out)


class DigammaOp(_Formula, UnaryOperation):
    name = "digamma"
    formula = staticmethod(_digamma_formula)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.mul(cotangents[0], polygamma(1, primals[0]))]


# -- Hurwitz zeta --------------------------------------------------------------------------------
# Cephes' zeta.c: (2k)! / B_2k for the Euler-Maclaurin correction terms.
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18)  # fmt: skip


def _zeta_formula(lib: Any, x: Any, q: Any) -> Any:
    """sum_{k >= 0} (q + k)^-x, as Cephes: the first terms (at least 9, more until q + k >= 10),
    then the Euler-Maclaurin tail. Accurate for q > -6; q <= 0 needs an integer x."""
    bad = lib.logical_or(lib.logical_or(lib.is_nan(x), lib.is_nan(q)), lib.logical_or(lib.is_inf(x), lib.is_inf(q)))
    bad = lib.logical_or(bad, lib.logical_not(lib.greater(x, 1.0)))
    xs, qs = lib.where(bad, 2.0, x), lib.where(bad, 1.0, q)
    odd = lib.equal(lib.sub(xs, lib.mul(lib.floor(lib.mul(xs, 0.5)), 2.0)), 1.0)

    def term(w: Any) -> Any:  # w^-x, for negative w too (an integer x)
        zero = lib.equal(w, 0.0)
        p = lib.pow(lib.where(zero, 1.0, lib.abs(w)), lib.mul(xs, -1.0))
        p = lib.where(lib.logical_and(lib.less(w, 0.0), odd), lib.mul(p, -1.0), p)
        return lib.where(zero, _INF, p)

    s, w = term(qs), lib.add(qs, 1.0)
    for _ in range(8):
        s, w = lib.add(s, term(w)), lib.add(w, 1.0)
    w, s = _shift_up(lib, w, 7, 10.0, lambda a, z: lib.add(a, term(z)), s)
    b = term(w)
    s = lib.add(s, b)  # the last term, w^-x, is half taken back by the trapezoid correction
    s = lib.sub(lib.add(s, lib.div(lib.mul(b, w), lib.sub(xs, 1.0))), lib.mul(b, 0.5))
    # B_2j / (2j)! x (x+1) ... (x+2j-2) w^(-x-2j+1), the rising product and the powers of w
    # folded into one running factor (apart, the product overflows float32 where w^-x underflows)
    k = 0.0
    for coeff in _ZETA_A:
        b = lib.div(lib.mul(b, lib.add(xs, k)), w)
        s = lib.add(s, lib.div(b, coeff))
        b = lib.div(lib.mul(b, lib.add(xs, k + 1.0)), w)
        k += 2.0
    # the domain, as Cephes: x = 1 or q a pole: inf; x < 1, or q < 0 with x not an integer: nan
    int_q = lib.equal(lib.floor(q), q)
    out = lib.where(lib.logical_and(lib.less(q, 0.0), lib.logical_not(lib.equal(lib.floor(x), x))), _NAN, s)
    out = lib.where(lib.logical_and(lib.logical_not(lib.greater(q, 0.0)), int_q), _INF, out)
    out = lib.where(lib.equal(q, _INF), 0.0, out)
    x_inf = lib.equal(x, _INF)  # q^-inf
    out = lib.where(lib.logical_and(x_inf, lib.greater(q, 1.0)), 0.0, out)
    out = lib.where(lib.logical_and(x_inf, lib.equal(q, 1.0)), 1.0, out)
    out = lib.where(lib.logical_and(x_inf, lib.logical_and(lib.less(q, 1.0), lib.greater(q, 0.0))), _INF, out)
    out = lib.where(lib.less(x, 1.0), _NAN, lib.where(lib.equal(x, 1.0), _INF, out))
    return lib.where(lib.logical_or(lib.is_nan(x), lib.is_nan(q)), lib.add(x, q), out)


class ZetaOp(_Formula, BinaryOperation):
    """Hurwitz zeta(x, q) (torch.special.zeta(input, other))."""

    name = "zeta"
    formula = staticmethod(_zeta_formula)

    def _dq(self, x: Tensor, q: Tensor) -> Tensor:
        return _un.neg(_bin.mul(x, _zeta(_bin.add(x, 1.0), q)))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x, q = primals
        if x.requires_grad:
            raise NotImplementedError("zeta: the derivative with respect to x (the exponent) is not implemented")
        return [None, _bin.mul(cotangents[0], self._dq(x, q))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        if not is_zero_tangent(tangents[0]):
            raise NotImplementedError("zeta: the derivative with respect to x (the exponent) is not implemented")
        return [_bin.mul(tangents[1], self._dq(*primals))]


# -- public functions ----------------------------------------------------------------------------
_lgamma, _digamma, _zeta = LgammaOp(), DigammaOp(), ZetaOp()


@public()
def lgamma(x: Tensor) -> Tensor:
    """Elementwise log |Gamma(x)| (torch.lgamma, torch.special.gammaln); inf at 0 and the
    negative integers. Integer inputs give float32.

    Example:
        >>> nb.lgamma(nb.tensor([0.5, 1.0, 10.0])).numpy()  # log(sqrt(pi)), 0, log(9!)
        array([ 0.5723649,  0.       , 12.801827 ], dtype=float32)
    """
    return _lgamma(_float_input(x, "lgamma"))


@public()
def digamma(x: Tensor) -> Tensor:
    """Elementwise psi(x) = d/dx lgamma(x) (torch.digamma, torch.special.psi): -inf at +0, inf
    at -0 and nan at the negative integers, as PyTorch. Integer inputs give float32."""
    return _digamma(_float_input(x, "digamma"))


@public()
def zeta(x: Any, q: Any) -> Tensor:
    """Elementwise Hurwitz zeta function sum_{k >= 0} (q + k)^-x (torch.special.zeta(input,
    other)): inf for x = 1, nan for x < 1, and the limit 0 for q = inf (PyTorch: nan).
    Differentiable in `q` only, as PyTorch. Accurate for q > -6 (below that, an integer x and a
    non-integer q lose accuracy)."""
    return _zeta(*binary_operands("zeta", x, q, float_result=True))


def _check_order(n: Any, name: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise TypeError(f"{name}: n must be an int, got {n!r}")
    if n < 0:
        raise ValueError(f"{name}: n must be non-negative, got {n}")
    return int(n)


def _cot_derivative(n: int) -> tuple:
    """The polynomial P_n with d^n/dx^n cot(x) = P_n(cot x), highest power first:
    P_0 = c, P_(k+1) = -(1 + c^2) P_k'(c)."""
    p = np.polynomial.Polynomial([0.0, 1.0])
    for _ in range(n):
        p = -np.polynomial.Polynomial([1.0, 0.0, 1.0]) * p.deriv()
    return tuple(float(c) for c in p.coef[::-1])


@public()
def polygamma(n: int, x: Tensor) -> Tensor:
    """Elementwise n-th derivative of digamma (torch.polygamma(n, input)): digamma for n = 0,
    (-1)^(n+1) n! zeta(n + 1, x) for n >= 1, and below 0 the reflection
    psi_n(x) = (-1)^n psi_n(1 - x) - pi^(n+1) P_n(cot(pi x)). Integer inputs give float32.

    Example:
        >>> nb.polygamma(1, nb.tensor([1.0])).item()  # pi^2 / 6
        1.644934...
    """
    n = _check_order(n, "polygamma")
    x = _float_input(x, "polygamma")
    if n == 0:
        return digamma(x)
    reflect = _bin.less(x, 0.0)
    order = full((), float(n + 1), x.dtype)
    y = _bin.where_(reflect, _bin.sub(1.0, x), x)
    scale = (-1.0) ** (n + 1) * math.factorial(n)
    positive = _bin.mul(_zeta(*binary_operands("polygamma", order, y)), scale)
    r = _bin.where_(_bin.logical_and(reflect, _un.isfinite(x)), x, 0.25)  # -inf: a pole, below
    f = _bin.mul(_bin.sub(r, _un.floor(_bin.add(r, 0.5))), math.pi)  # cot(pi x) = cot(pi (x - round(x)))
    c = _bin.div(_un.cos(f), _un.sin(f))
    coeffs = _cot_derivative(n)
    poly = full((), coeffs[0], x.dtype)
    for coeff in coeffs[1:]:
        poly = _bin.add(_bin.mul(poly, c), coeff)
    mirrored = _bin.sub(_bin.mul(positive, (-1.0) ** n), _bin.mul(poly, math.pi ** (n + 1)))
    out = _bin.where_(reflect, mirrored, positive)
    return _bin.where_(_bin.logical_and(reflect, _bin.equal(_un.floor(x), x)), _pole(n), out)


def _pole(n: int) -> float:
    # zeta(n + 1, q) at a pole is +inf (Cephes); PyTorch's trigamma gives +inf there too
    return _INF if n % 2 == 1 else -_INF


@public()
def mvlgamma(x: Tensor, p: int) -> Tensor:
    """Elementwise multivariate log-gamma of dimension p (torch.mvlgamma, torch.special.multigammaln):
    p (p - 1) / 4 log(pi) + sum_{j < p} lgamma(x - j / 2). PyTorch requires every x > (p - 1) / 2;
    a realized tensor that breaks this is an error here too."""
    if isinstance(p, bool) or not isinstance(p, int | np.integer) or p < 1:
        raise ValueError(f"mvlgamma: p must be a positive int, got {p!r}")
    x = _float_input(x, "mvlgamma")
    _check_above(x, (p - 1) / 2)
    out = lgamma(x)
    for j in range(1, int(p)):
        out = _bin.add(out, lgamma(_bin.sub(x, j / 2)))
    return _bin.add(out, p * (p - 1) / 4 * _LN_PI)


def _check_above(x: Tensor, bound: float) -> None:
    impl = x._impl
    if not impl.is_realized or impl.batch_dims or impl.sharding is not None or x.numel() == 0:
        return
    low = float(np.min(host_array(x)))
    if not low > bound:
        raise ValueError(f"mvlgamma: all elements must be greater than (p-1)/2 = {bound}, got {low}")


@public()
def xlogy(x: Any, y: Any) -> Tensor:
    """Elementwise x * log(y), and 0 where x == 0 (unless y is nan); float result. As PyTorch's,
    its x-gradient is log(y), and 0 where x == 0 and y <= 0."""
    x, y = binary_operands("xlogy", x, y, float_result=True)
    return _x_times(x, y, _un.log, low=0.0)


def _x_times(x: Tensor, y: Tensor, log_fn: Any, low: float) -> Tensor:
    """x * log_fn(y), 0 where x == 0 unless y is nan (xlogy, xlog1py). Where x == 0 and
    log_fn(y) is finite the product is that 0 itself, so the x-gradient there is log_fn(y)."""
    zero = _bin.logical_and(_bin.equal(x, 0.0), _un.logical_not(_un.isnan(y)))
    bad = _bin.logical_and(zero, _bin.logical_or(_bin.less_equal(y, low), _un.isinf(y)))
    return _bin.where_(bad, 0.0, _bin.mul(x, log_fn(_bin.where_(bad, low + 1.0, y))))


@public()
def xlog1py(x: Any, y: Any) -> Tensor:
    """Elementwise x * log1p(y), 0 where x == 0 unless y is nan (torch.special.xlog1py); as
    PyTorch's, its x-gradient is log1p(y), and 0 where x == 0 and y <= -1."""
    return _x_times(*binary_operands("xlog1py", x, y, float_result=True), _un.log1p, low=-1.0)


@public()
def entr(x: Tensor) -> Tensor:
    """Elementwise entropy term -x log x: 0 at 0, -inf below 0 (torch.special.entr)."""
    x = _float_input(x, "entr")
    positive = _bin.greater(x, 0.0)
    safe = _bin.where_(positive, x, 1.0)
    out = _bin.where_(positive, _un.neg(_bin.mul(safe, _un.log(safe))), 0.0)
    out = _bin.where_(_bin.less(x, 0.0), -_INF, out)
    return _bin.where_(_un.isnan(x), x, out)

"""Special functions: the gamma family (lgamma, digamma, polygamma, the Hurwitz zeta, mvlgamma),
the error-function family (erfc, erfcx, log_ndtr, erfinv, ndtri, ndtr), the modified Bessel
functions i0, i0e, i1, i1e, and torch.special's xlog1py and entr. `nabla.special` re-exports them under torch.special's names.

Each primitive's formula is written once over an elementwise library (`_MaxMath` for the MAX
lowering, `_NumpyMath` for the NumPy kernel, which evaluates it in float64 and rounds once), so
the two executors compute the same algorithm. Every formula has a static structure: recurrences
that shift an argument run a fixed number of masked steps, so one graph serves every value.

    lgamma   x < 0: reflection; [0.5, 2.5): Taylor series of lgamma about 2 (accurate at the
             roots 1 and 2); elsewhere: shift to >= 10, Stirling's series.  d/dx = digamma
    digamma  x < 0: reflection; shift to >= 10, asymptotic series.      d/dx = polygamma(1, x)
    zeta     Hurwitz zeta(x, q) as Cephes: 9 terms (more while q + k < 10), Euler-Maclaurin.
             d/dq = -x zeta(x + 1, q); no derivative in x (as PyTorch)
    erfc     Cephes' rational functions; erfcx and log_ndtr use their scaled part (exp(x^2)
             erfc(x) without the exponential), so neither under- nor overflows in the tails.
    erfinv   Giles' double-precision polynomials in w = -log(1 - y^2).
             d/dy = sqrt(pi) / 2 exp(erfinv(y)^2)
    i0e, i1e Cephes' Chebyshev series for e^-|x| I_n(x); i0 and i1 multiply by e^|x|.
             d/dx i0e = i1e - sign(x) i0e, d/dx i1e = i0e - i1e (sign(x) + 1/x)
    ndtri    Cephes' (as PyTorch).  d/dp = sqrt(2 pi) exp(ndtri(p)^2 / 2)
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
from .binary import BinaryOperation, _MaxLib, _NumpyLib, _x_times, binary_operands
from .control_flow import host_array
from .creation import full
from .unary import UnaryOperation, _float_input

__all__ = [
    "digamma",
    "entr",
    "erfc",
    "erfcx",
    "erfinv",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "lgamma",
    "log_ndtr",
    "mvlgamma",
    "ndtr",
    "ndtri",
    "polygamma",
    "xlog1py",
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


class LgammaOp(UnaryOperation):
    name = "lgamma"

    def kernel(self, x: Any) -> Any:
        return _on_max(_lgamma_formula, x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return _on_numpy(_lgamma_formula, x)

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


class DigammaOp(UnaryOperation):
    name = "digamma"

    def kernel(self, x: Any) -> Any:
        return _on_max(_digamma_formula, x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return _on_numpy(_digamma_formula, x)

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


class ZetaOp(BinaryOperation):
    """Hurwitz zeta(x, q) (torch.special.zeta(input, other))."""

    name = "zeta"

    def kernel(self, x: Any, q: Any) -> Any:
        return _on_max(_zeta_formula, x, q)

    def numpy_kernel(self, x: np.ndarray, q: np.ndarray) -> np.ndarray:
        return _on_numpy(_zeta_formula, x, q)

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


# -- erfc, erfcx, log_ndtr ----------------------------------------------------------------------
# Cephes' ndtr.c: erf(x) = x T(x^2) / U(x^2) for |x| < 1; erfc(x) = exp(-x^2) P(x) / Q(x) for
# 1 <= x < 8 and exp(-x^2) R(x) / S(x) above. Highest power first; Q, S, U lead with 1.
_ERF_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
          7.00332514112805075473e3, 5.55923013010394962768e4)  # fmt: skip
_ERF_U = (1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
          2.26290000613890934246e4, 4.92673942608635921086e4)  # fmt: skip
_ERFC_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
           4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
           9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2)  # fmt: skip
_ERFC_Q = (1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
           9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
           1.65666309194161350182e3, 5.57535340817727675546e2)  # fmt: skip
_ERFC_R = (5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0,
           6.16021097993053585195e0, 7.40974269950448939160e0, 2.97886665372100240670e0)  # fmt: skip
_ERFC_S = (1.0, 2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1,
           1.70814450747565897222e1, 9.60896809063285878198e0, 3.36907645100081516050e0)  # fmt: skip
_SQRT_HALF = math.sqrt(0.5)


def _erf_small(lib: Any, x: Any) -> Any:
    """erf(x) for |x| <= 1 (other lanes: any value)."""
    z = lib.mul(x, x)
    return lib.div(lib.mul(x, _horner(lib, z, _ERF_T)), _horner(lib, z, _ERF_U))


# exp(a^2) erfc(a) = 1 / (a sqrt(pi)) (1 - 1/(2a^2) + 3/(4a^4) - ...) for a >= 50, where R / S
# would overflow for huge a; 6 terms leave < 1e-18.
_ERFCX_ASYMPTOTIC = (-945 / 32, 105 / 16, -15 / 8, 3 / 4, -1 / 2, 1.0)


def _erfc_scaled(lib: Any, a: Any) -> Any:
    """exp(a^2) erfc(a) for a >= 1 (other lanes: any value): the rational part alone."""
    a = lib.where(lib.less(a, 1.0), 1.0, a)
    near, far = lib.less(a, 8.0), lib.logical_not(lib.less(a, 50.0))
    am = lib.where(near, a, 1.0)
    af = lib.where(lib.logical_or(near, far), 8.0, a)
    p = lib.div(_horner(lib, am, _ERFC_P), _horner(lib, am, _ERFC_Q))
    r = lib.div(_horner(lib, af, _ERFC_R), _horner(lib, af, _ERFC_S))
    inv = lib.div(1.0, lib.where(far, a, 50.0))
    series = lib.mul(lib.mul(inv, 1.0 / math.sqrt(math.pi)), _horner(lib, lib.mul(inv, inv), _ERFCX_ASYMPTOTIC))
    return lib.where(near, p, lib.where(far, series, r))


def _minus_square(lib: Any, a: Any) -> tuple[Any, Any]:
    """-a^2 as hi + lo with hi = -m^2 exact (m is a rounded to 1/128): exp(hi) exp(lo) keeps
    the relative accuracy that exp(-a^2) loses to the rounding of a^2 (Cephes' expx2)."""
    m = lib.div(lib.floor(lib.add(lib.mul(a, 128.0), 0.5)), 128.0)
    f = lib.sub(a, m)
    return lib.mul(lib.mul(m, m), -1.0), lib.mul(lib.mul(lib.add(lib.mul(m, 2.0), f), f), -1.0)


def _erfc_formula(lib: Any, x: Any) -> Any:
    a = lib.abs(x)
    small = lib.less(a, 1.0)
    a = lib.where(small, 1.0, lib.where(lib.greater(a, 30.0), 30.0, a))  # erfc(30) = 0 in float64
    hi, lo = _minus_square(lib, a)
    tail = lib.mul(lib.mul(lib.exp(hi), lib.exp(lo)), _erfc_scaled(lib, a))
    tail = lib.where(lib.less(x, 0.0), lib.sub(2.0, tail), tail)
    out = lib.where(small, lib.sub(1.0, _erf_small(lib, lib.where(small, x, 0.0))), tail)
    return lib.where(lib.is_nan(x), x, out)


def _erfcx_formula(lib: Any, x: Any) -> Any:
    """The rational part alone for x >= 1; erfc(x) exp(x^2) below (inf once that overflows)."""
    small = lib.less(x, 1.0)
    xs = lib.where(small, lib.where(lib.less(x, -30.0), -30.0, x), 0.0)
    hi, lo = _minus_square(lib, xs)
    below = lib.mul(_erfc_formula(lib, xs), lib.mul(lib.exp(lib.mul(hi, -1.0)), lib.exp(lib.mul(lo, -1.0))))
    out = lib.where(small, below, _erfc_scaled(lib, x))
    out = lib.where(lib.equal(x, _INF), 0.0, out)
    return lib.where(lib.is_nan(x), x, out)


def _log_ndtr_formula(lib: Any, x: Any) -> Any:
    """log(erfc(a) / 2) with a = -x / sqrt 2: below x = -sqrt 2 (a > 1) in logarithms,
    -a^2 + log(erfcx(a) / 2), so it never underflows; log1p(-erfc(-a) / 2) above x = 1; the log
    of ndtr between."""
    a = lib.mul(x, -_SQRT_HALF)
    low = lib.greater(a, 1.0)
    al = lib.where(low, lib.where(lib.is_inf(a), 1.0, a), 1.0)
    lower = lib.sub(lib.log(lib.mul(_erfc_scaled(lib, al), 0.5)), lib.mul(al, al))
    high = lib.greater(x, 1.0)
    upper = lib.log1p(lib.mul(_erfc_formula(lib, lib.where(high, lib.mul(a, -1.0), 1.0)), -0.5))
    middle = lib.log(lib.mul(_erfc_formula(lib, lib.where(lib.logical_or(low, high), 0.0, a)), 0.5))
    out = lib.where(low, lower, lib.where(high, upper, middle))
    out = lib.where(lib.equal(x, -_INF), -_INF, out)
    return lib.where(lib.is_nan(x), x, out)


class ErfcOp(UnaryOperation):
    name = "erfc"

    def kernel(self, x: Any) -> Any:
        return _on_max(_erfc_formula, x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return _on_numpy(_erfc_formula, x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x = primals[0]  # d/dx erfc(x) = -2 / sqrt(pi) exp(-x^2)
        return [_bin.mul(cotangents[0], _bin.mul(_un.exp(_un.neg(_bin.mul(x, x))), -2.0 / math.sqrt(math.pi)))]


class ErfcxOp(UnaryOperation):
    name = "erfcx"

    def kernel(self, x: Any) -> Any:
        return _on_max(_erfcx_formula, x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return _on_numpy(_erfcx_formula, x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x, y = primals[0], outputs[0]  # d/dx erfcx(x) = 2 x erfcx(x) - 2 / sqrt(pi)
        return [_bin.mul(cotangents[0], _bin.sub(_bin.mul(_bin.mul(x, y), 2.0), 2.0 / math.sqrt(math.pi)))]


class LogNdtrOp(UnaryOperation):
    name = "log_ndtr"

    def kernel(self, x: Any) -> Any:
        return _on_max(_log_ndtr_formula, x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return _on_numpy(_log_ndtr_formula, x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        # d/dx log ndtr(x) = pdf(x) / ndtr(x) = exp(-x^2/2 - log_ndtr(x)) / sqrt(2 pi): no 0 / 0
        x, y = primals[0], outputs[0]
        ratio = _un.exp(_bin.sub(_bin.mul(_bin.mul(x, x), -0.5), y))
        return [_bin.mul(cotangents[0], _bin.mul(ratio, 1.0 / math.sqrt(2.0 * math.pi)))]


# -- modified Bessel functions of the first kind --------------------------------------------------
# Cephes' i0.c / i1.c (what PyTorch runs): Chebyshev series for e^-|x| I_n(x) on [0, 8] in
# |x|/2 - 2, and for e^-|x| sqrt|x| I_n(x) above 8 in 32/|x| - 2.
_I0E_A = (-4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
          1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
          -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
          9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
          -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
          1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
          -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
          1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
          -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
          1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1)  # fmt: skip
_I0E_B = (-7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
          3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
          1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
          -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
          7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
          -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
          3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
          2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
          8.04490411014108831608e-1)  # fmt: skip
_I1E_A = (2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16,
          -1.10559694773538630805e-15, 7.60068429473540693410e-15, -5.04218550472791168711e-14,
          3.22379336594557470981e-13, -1.98397439776494371520e-12, 1.17361862988909016308e-11,
          -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-9,
          9.38153738649577178388e-9, -4.44505912879632808065e-8, 2.00329475355213526229e-7,
          -8.56872026469545474066e-7, 3.47025130813767847674e-6, -1.32731636560394358279e-5,
          4.78156510755005422638e-5, -1.61760815825896745588e-4, 5.12285956168575772895e-4,
          -1.51357245063125314899e-3, 4.15642294431288815669e-3, -1.05640848946261981558e-2,
          2.47264490306265168283e-2, -5.29459812080949914269e-2, 1.02643658689847095384e-1,
          -1.76416518357834055153e-1, 2.52587186443633654823e-1)  # fmt: skip
_I1E_B = (7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17,
          -3.20952592199342395980e-17, 2.96262899764595013876e-16, 3.30820231092092828324e-16,
          -1.88035477551078244854e-15, -3.81440307243700780478e-15, 1.04202769841288027642e-14,
          4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
          -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11,
          3.25260358301548823856e-11, -1.89749581235054123450e-11, -5.58974346219658380687e-10,
          -3.83538038596423702205e-9, -2.63146884688951950684e-8, -2.51223623787020892529e-7,
          -3.88256480887769039346e-6, -1.10588938762623716291e-4, -9.76109749136146840777e-3,
          7.78576235018280120474e-1)  # fmt: skip


def _chebyshev(lib: Any, t: Any, coeffs: tuple) -> Any:
    """Cephes' chbevl: the Chebyshev series sum' c_k T_k(t / 2) (Clenshaw's recurrence)."""
    b0, b1, b2 = lib.add(lib.mul(t, 0.0), coeffs[0]), lib.mul(t, 0.0), None
    for c in coeffs[1:]:
        b2, b1 = b1, b0
        b0 = lib.add(lib.sub(lib.mul(t, b1), b2), c)
    return lib.mul(lib.sub(b0, b2), 0.5)


def _bessel_scaled(lib: Any, x: Any, inner: tuple, outer: tuple, odd: bool) -> Any:
    """e^-|x| I_n(x) for n = 0 (even) or 1 (odd): Cephes' two Chebyshev series."""
    a = lib.abs(x)
    small = lib.logical_not(lib.greater(a, 8.0))
    near = _chebyshev(lib, lib.sub(lib.mul(lib.where(small, a, 0.0), 0.5), 2.0), inner)
    if odd:
        near = lib.mul(near, a)
    af = lib.where(small, 8.0, a)
    far = lib.div(_chebyshev(lib, lib.sub(lib.div(32.0, af), 2.0), outer), lib.sqrt(af))
    out = lib.where(small, near, far)
    if odd:
        out = lib.where(lib.less(x, 0.0), lib.mul(out, -1.0), out)
    return lib.where(lib.is_nan(x), x, out)


def _i0e_formula(lib: Any, x: Any) -> Any:
    return _bessel_scaled(lib, x, _I0E_A, _I0E_B, odd=False)


def _i1e_formula(lib: Any, x: Any) -> Any:
    return _bessel_scaled(lib, x, _I1E_A, _I1E_B, odd=True)


class I0eOp(UnaryOperation):
    name = "i0e"

    def kernel(self, x: Any) -> Any:
        return _on_max(_i0e_formula, x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return _on_numpy(_i0e_formula, x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x = primals[0]  # d/dx e^-|x| I0(x) = i1e(x) - sign(x) i0e(x)
        return [_bin.mul(cotangents[0], _bin.sub(_i1e(x), _bin.mul(_un.sign(x), outputs[0])))]


class I1eOp(UnaryOperation):
    name = "i1e"

    def kernel(self, x: Any) -> Any:
        return _on_max(_i1e_formula, x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return _on_numpy(_i1e_formula, x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        # d/dx e^-|x| I1(x) = i0e(x) - i1e(x) (sign(x) + 1/x); 1/2 at 0
        x, y = primals[0], outputs[0]
        zero = _bin.equal(x, 0.0)
        ratio = _bin.div(y, _bin.where_(zero, 1.0, x))
        slope = _bin.sub(_i0e(x), _bin.add(_bin.mul(_un.sign(x), y), ratio))
        return [_bin.mul(cotangents[0], _bin.where_(zero, 0.5, slope))]


# -- erfinv and ndtri ----------------------------------------------------------------------------
# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), double precision:
# erfinv(y) = y P(w) with w = -log((1 - y)(1 + y)), one polynomial on each of three ranges of w.
_GILES_1 = (-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
            1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
            6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
            2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
            1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
            4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
            0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
            0.24015818242558961693, 1.6536545626831027356)  # fmt: skip
_GILES_2 = (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
            1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
            2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
            6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
            0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
            -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
            3.0838856104922207635)  # fmt: skip
_GILES_3 = (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
            -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
            2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
            -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
            7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
            1.0103004648645343977, 4.8499064014085844221)  # fmt: skip


def _giles(lib: Any, w: Any) -> Any:
    """erfinv(y) / y as a function of w = -log((1 - y)(1 + y)) >= 0 (finite)."""
    root = lib.sqrt(w)
    small, mid = lib.less(w, 6.25), lib.less(w, 16.0)
    p1 = _horner(lib, lib.sub(lib.where(small, w, 3.125), 3.125), _GILES_1)
    p2 = _horner(lib, lib.sub(lib.where(mid, root, 3.25), 3.25), _GILES_2)
    p3 = _horner(lib, lib.sub(root, 5.0), _GILES_3)
    return lib.where(small, p1, lib.where(mid, p2, p3))


def _erfinv_formula(lib: Any, y: Any) -> Any:
    at_one, at_minus_one = lib.equal(y, 1.0), lib.equal(y, -1.0)
    outside = lib.greater(lib.abs(y), 1.0)
    inside = lib.logical_not(lib.logical_or(lib.logical_or(at_one, at_minus_one), outside))
    ys = lib.where(inside, y, 0.0)
    w = lib.mul(lib.log(lib.mul(lib.sub(1.0, ys), lib.add(1.0, ys))), -1.0)  # (1 - y)(1 + y): exact near +-1
    out = lib.mul(ys, _giles(lib, w))
    out = lib.where(at_one, _INF, lib.where(at_minus_one, -_INF, out))
    return lib.where(lib.logical_or(outside, lib.is_nan(y)), _NAN, out)


# Cephes' ndtri (what PyTorch runs): a rational function of p - 1/2 in the middle, and of
# 1 / sqrt(-2 log p) in each tail (two ranges). Highest power first; Q* lead with 1.
_NDTRI_P0 = (-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1,
             1.39312609387279679503e1, -1.23916583867381258016e0)  # fmt: skip
_NDTRI_Q0 = (1.0, 1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1,
             -2.25462687854119370527e2, 2.00260212380060660359e2, -8.20372256168333339912e1,
             1.59056225126211695515e1, -1.18331621121330003142e0)  # fmt: skip
_NDTRI_P1 = (4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1,
             4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
             -1.40256079171354495875e-1, -3.50424626827848203418e-2, -8.57456785154685413611e-4)  # fmt: skip
_NDTRI_Q1 = (1.0, 1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1,
             1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1,
             -3.80806407691578277194e-2, -9.33259480895457427372e-4)  # fmt: skip
_NDTRI_P2 = (3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0,
             1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
             3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9)  # fmt: skip
_NDTRI_Q2 = (1.0, 6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0,
             2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4,
             2.89247864745380683936e-6, 6.79019408009981274425e-9)  # fmt: skip
_EXP_M2 = math.exp(-2.0)


def _ndtri_formula(lib: Any, p: Any) -> Any:
    upper = lib.greater(p, 1.0 - _EXP_M2)
    y = lib.where(upper, lib.sub(1.0, p), p)
    central = lib.greater(y, _EXP_M2)
    c = lib.sub(lib.where(central, y, 0.5), 0.5)
    c2 = lib.mul(c, c)
    middle = lib.add(c, lib.mul(c, lib.div(lib.mul(c2, _horner(lib, c2, _NDTRI_P0)), _horner(lib, c2, _NDTRI_Q0))))
    t = lib.where(lib.logical_or(central, lib.logical_not(lib.greater(y, 0.0))), _EXP_M2, y)
    x = lib.sqrt(lib.mul(lib.log(t), -2.0))
    z = lib.div(1.0, x)
    near = lib.less(x, 8.0)
    tail = lib.where(
        near,
        lib.div(_horner(lib, z, _NDTRI_P1), _horner(lib, z, _NDTRI_Q1)),
        lib.div(_horner(lib, z, _NDTRI_P2), _horner(lib, z, _NDTRI_Q2)),
    )
    tail = lib.sub(lib.sub(x, lib.div(lib.log(x), x)), lib.mul(z, tail))
    out = lib.where(central, lib.mul(middle, math.sqrt(2.0 * math.pi)), lib.where(upper, tail, lib.mul(tail, -1.0)))
    out = lib.where(lib.equal(p, 0.0), -_INF, lib.where(lib.equal(p, 1.0), _INF, out))
    out = lib.where(lib.logical_or(lib.less(p, 0.0), lib.greater(p, 1.0)), _NAN, out)
    return lib.where(lib.is_nan(p), p, out)


class ErfinvOp(UnaryOperation):
    name = "erfinv"

    def kernel(self, y: Any) -> Any:
        return _on_max(_erfinv_formula, y)

    def numpy_kernel(self, y: np.ndarray) -> np.ndarray:
        return _on_numpy(_erfinv_formula, y)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x = outputs[0]  # d/dy erfinv(y) = sqrt(pi) / 2 exp(erfinv(y)^2)
        return [_bin.mul(cotangents[0], _bin.mul(_un.exp(_bin.mul(x, x)), math.sqrt(math.pi) / 2))]


class NdtriOp(UnaryOperation):
    name = "ndtri"

    def kernel(self, p: Any) -> Any:
        return _on_max(_ndtri_formula, p)

    def numpy_kernel(self, p: np.ndarray) -> np.ndarray:
        return _on_numpy(_ndtri_formula, p)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        z = outputs[0]  # d/dp ndtri(p) = sqrt(2 pi) exp(z^2 / 2)
        return [_bin.mul(cotangents[0], _bin.mul(_un.exp(_bin.mul(_bin.mul(z, z), 0.5)), math.sqrt(2 * math.pi)))]


# -- public functions ----------------------------------------------------------------------------
_lgamma, _digamma, _zeta, _erfinv, _ndtri = LgammaOp(), DigammaOp(), ZetaOp(), ErfinvOp(), NdtriOp()
_erfc, _erfcx, _log_ndtr = ErfcOp(), ErfcxOp(), LogNdtrOp()
_i0e, _i1e = I0eOp(), I1eOp()


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
def i0e(x: Tensor) -> Tensor:
    """Elementwise exponentially scaled modified Bessel function e^-|x| I0(x)
    (torch.special.i0e). Integer inputs give float32."""
    return _i0e(_float_input(x, "i0e"))


@public()
def i1e(x: Tensor) -> Tensor:
    """Elementwise exponentially scaled modified Bessel function e^-|x| I1(x)
    (torch.special.i1e). Integer inputs give float32."""
    return _i1e(_float_input(x, "i1e"))


@public()
def i0(x: Tensor) -> Tensor:
    """Elementwise modified Bessel function of the first kind, order 0 (torch.i0):
    e^|x| i0e(x), Cephes' Chebyshev series. Integer inputs give float32."""
    x = _float_input(x, "i0")
    return _bin.mul(_un.exp(_un.abs(x)), _i0e(x))


@public()
def i1(x: Tensor) -> Tensor:
    """Elementwise modified Bessel function of the first kind, order 1 (torch.special.i1):
    e^|x| i1e(x). Integer inputs give float32."""
    x = _float_input(x, "i1")
    return _bin.mul(_un.exp(_un.abs(x)), _i1e(x))


@public()
def erfinv(y: Tensor) -> Tensor:
    """Elementwise inverse error function on [-1, 1] (+-inf at +-1, nan outside): Giles'
    double-precision approximation. Integer inputs give float32.

    Example:
        >>> nb.erfinv(nb.tensor([0.0, 0.5])).numpy()
        array([0.       , 0.4769363], dtype=float32)
    """
    return _erfinv(_float_input(y, "erfinv"))


@public()
def erfc(x: Tensor) -> Tensor:
    """Elementwise complementary error function 1 - erf(x), accurate in the tails where
    1 - erf(x) rounds to 0 (Cephes' rational approximations). Integer inputs give float32."""
    return _erfc(_float_input(x, "erfc"))


@public()
def erfcx(x: Tensor) -> Tensor:
    """Elementwise scaled complementary error function exp(x^2) erfc(x) (torch.special.erfcx),
    finite for large x where erfc underflows. Integer inputs give float32."""
    return _erfcx(_float_input(x, "erfcx"))


@public()
def ndtr(x: Tensor) -> Tensor:
    """The standard normal CDF (torch.special.ndtr): erfc(-x / sqrt 2) / 2, accurate in the
    lower tail."""
    x = _float_input(x, "ndtr")
    return _bin.mul(erfc(_bin.mul(x, -_SQRT_HALF)), 0.5)


@public()
def log_ndtr(x: Tensor) -> Tensor:
    """Elementwise log of the standard normal CDF (torch.special.log_ndtr), computed in
    logarithms below x = -1 so it stays finite (log_ndtr(-40) = -804.6). Integer inputs give
    float32."""
    return _log_ndtr(_float_input(x, "log_ndtr"))


@public()
def ndtri(p: Tensor) -> Tensor:
    """The standard normal quantile, the inverse of `ndtr` (torch.special.ndtri): Cephes'
    algorithm, as PyTorch; -inf at 0, inf at 1, nan outside [0, 1]. Integer inputs give float32."""
    return _ndtri(_float_input(p, "ndtri"))


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

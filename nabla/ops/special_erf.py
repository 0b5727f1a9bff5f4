"""The error-function family (torch.special's erfc, erfcx, log_ndtr, erfinv, ndtri, ndtr), each
formula written once over `special.py`'s elementwise libraries for the MAX lowering and the
float64 NumPy kernel.

    erfc     Cephes' rational functions; erfcx and log_ndtr use their scaled part (exp(x^2)
             erfc(x) without the exponential), so neither under- nor overflows in the tails.
    erfinv   Giles' double-precision polynomials in w = -log(1 - y^2).
             d/dy = sqrt(pi) / 2 exp(erfinv(y)^2)
    ndtri    Cephes' (as PyTorch).  d/dp = sqrt(2 pi) exp(ndtri(p)^2 / 2)
"""

from __future__ import annotations

import math
from typing import Any

from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import unary as _un
from .base import public
from .special import _INF, _NAN, _Formula, _horner
from .unary import UnaryOperation, _float_input

__all__ = ["erfc", "erfcx", "erfinv", "log_ndtr", "ndtr", "ndtri"]


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


class ErfcOp(_Formula, UnaryOperation):
    name = "erfc"
    formula = staticmethod(_erfc_formula)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x = primals[0]  # d/dx erfc(x) = -2 / sqrt(pi) exp(-x^2)
        return [_bin.mul(cotangents[0], _bin.mul(_un.exp(_un.neg(_bin.mul(x, x))), -2.0 / math.sqrt(math.pi)))]


class ErfcxOp(_Formula, UnaryOperation):
    name = "erfcx"
    formula = staticmethod(_erfcx_formula)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x, y = primals[0], outputs[0]  # d/dx erfcx(x) = 2 x erfcx(x) - 2 / sqrt(pi)
        return [_bin.mul(cotangents[0], _bin.sub(_bin.mul(_bin.mul(x, y), 2.0), 2.0 / math.sqrt(math.pi)))]


class LogNdtrOp(_Formula, UnaryOperation):
    name = "log_ndtr"
    formula = staticmethod(_log_ndtr_formula)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        # d/dx log ndtr(x) = pdf(x) / ndtr(x) = exp(-x^2/2 - log_ndtr(x)) / sqrt(2 pi): no 0 / 0
        x, y = primals[0], outputs[0]
        ratio = _un.exp(_bin.sub(_bin.mul(_bin.mul(x, x), -0.5), y))
        return [_bin.mul(cotangents[0], _bin.mul(ratio, 1.0 / math.sqrt(2.0 * math.pi)))]


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


class ErfinvOp(_Formula, UnaryOperation):
    name = "erfinv"
    formula = staticmethod(_erfinv_formula)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x = outputs[0]  # d/dy erfinv(y) = sqrt(pi) / 2 exp(erfinv(y)^2)
        return [_bin.mul(cotangents[0], _bin.mul(_un.exp(_bin.mul(x, x)), math.sqrt(math.pi) / 2))]


class NdtriOp(_Formula, UnaryOperation):
    name = "ndtri"
    formula = staticmethod(_ndtri_formula)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        z = outputs[0]  # d/dp ndtri(p) = sqrt(2 pi) exp(z^2 / 2)
        return [_bin.mul(cotangents[0], _bin.mul(_un.exp(_bin.mul(_bin.mul(z, z), 0.5)), math.sqrt(2 * math.pi)))]


# -- public functions ----------------------------------------------------------------------------
_erfc, _erfcx, _log_ndtr, _erfinv, _ndtri = ErfcOp(), ErfcxOp(), LogNdtrOp(), ErfinvOp(), NdtriOp()


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

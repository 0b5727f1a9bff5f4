"""Bessel functions (torch's i0 and torch.special's i0e, i1, i1e, bessel_j0/j1/y0/y1,
modified_bessel_i0/i1/k0/k1, scaled_modified_bessel_k0/k1, spherical_bessel_j0): formulas
written once over `special.py`'s elementwise libraries, with Cephes' coefficients (what PyTorch
runs, so values agree to rounding).

    i0e, i1e   Chebyshev series for e^-|x| I_n(x); i0 and i1 multiply by e^|x|.
               d/dx i0e = i1e - sign(x) i0e, d/dx i1e = i0e - i1e (sign(x) + 1/x)
    j0, j1     rational functions of x^2 for |x| <= 5, Hankel's asymptotic form above;
    y0, y1     d/dx j0 = -j1, d/dx j1 = j0 - j1 / x (1/2 at 0); y likewise
    k0e, k1e   e^x K_n(x): Chebyshev series on (0, 2] (through I_n) and above 2; k0, k1 = e^-x k_ne.
               d/dx k0 = -k1, d/dx k1 = -k0 - k1 / x; d/dx k0e = k0e - k1e, d/dx k1e = k1e - k0e - k1e / x
    sph. j0    sin(x) / x (a series below 1/2); d/dx = (cos x - j0) / x
    airy_ai    Cephes' airy.c: asymptotic forms below -2.09 and above 2.09, the Maclaurin series
               between (a fixed number of terms); no derivative, as in PyTorch

PyTorch gives the Bessel functions of torch.special no derivatives; these have them.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import unary as _un
from .base import public
from .special import _Formula, _horner
from .unary import UnaryOperation, _float_input

__all__ = [
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "spherical_bessel_j0",
]


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


class I0eOp(_Formula, UnaryOperation):
    name = "i0e"
    formula = staticmethod(_i0e_formula)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x = primals[0]  # d/dx e^-|x| I0(x) = i1e(x) - sign(x) i0e(x)
        return [_bin.mul(cotangents[0], _bin.sub(_i1e(x), _bin.mul(_un.sign(x), outputs[0])))]


class I1eOp(_Formula, UnaryOperation):
    name = "i1e"
    formula = staticmethod(_i1e_formula)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        # d/dx e^-|x| I1(x) = i0e(x) - i1e(x) (sign(x) + 1/x); 1/2 at 0
        x, y = primals[0], outputs[0]
        zero = _bin.equal(x, 0.0)
        ratio = _bin.div(y, _bin.where_(zero, 1.0, x))
        slope = _bin.sub(_i0e(x), _bin.add(_bin.mul(_un.sign(x), y), ratio))
        return [_bin.mul(cotangents[0], _bin.where_(zero, 0.5, slope))]


# -- public functions ----------------------------------------------------------------------------
_i0e, _i1e = I0eOp(), I1eOp()


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
def modified_bessel_i0(x: Tensor) -> Tensor:
    """torch.special.modified_bessel_i0: I0(x), the same function as `i0`."""
    return i0(x)


@public()
def modified_bessel_i1(x: Tensor) -> Tensor:
    """torch.special.modified_bessel_i1: I1(x), the same function as `i1`."""
    return i1(x)


# -- Bessel functions of the first and second kind (Cephes' j0.c, j1.c) --------------------------
_PIO4 = 0.785398163397448309615660845819875721
_THPIO4 = 2.356194490192344928846982537459627163
_SQ2OPI = 0.797884560802865355879892119868763737  # sqrt(2 / pi)
_TWOOPI = 0.636619772367581343075535053490057448  # 2 / pi
# Hankel's P and Q for order 0 and order 1, in z = 25 / x^2
_P0P = (7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e00, 5.44725003058768775090e00,
        8.74716500199817011941e00, 5.30324038235394892183e00, 9.99999999999999997821e-01)  # fmt: skip
_P0Q = (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e00, 5.47097740330417105182e00,
        8.76190883237069594232e00, 5.30605288235394617618e00, 1.00000000000000000218e00)  # fmt: skip
_Q0P = (-1.13663838898469149931e-02, -1.28252718670509318512e00, -1.95539544257735972385e01, -9.32060152123768231369e01,
        -1.77681167980488050595e02, -1.47077505154951170175e02, -5.14105326766599330220e01, -6.05014350600728481186e00)  # fmt: skip
_Q0Q = (6.43178256118178023184e01, 8.56430025976980587198e02, 3.88240183605401609683e03, 7.24046774195652478189e03,
        5.93072701187316984827e03, 2.06209331660327847417e03, 2.42005740240291393179e02)  # fmt: skip
_P1P = (7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e00, 5.11207951146807644818e00,
        8.42404590141772420927e00, 5.21451598682361504063e00, 1.00000000000000000254e00)  # fmt: skip
_P1Q = (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e00, 5.07386386128601488557e00,
        8.39985554327604159757e00, 5.20982848682361821619e00, 9.99999999999999997461e-01)  # fmt: skip
_Q1P = (5.10862594750176621635e-02, 4.98213872951233449420e00, 7.58238284132545283818e01, 3.66779609360150777800e02,
        7.10856304998926107277e02, 5.97489612400613639965e02, 2.11688757100572135698e02, 2.52070205858023719784e01)  # fmt: skip
_Q1Q = (7.42373277035675149943e01, 1.05644886038262816351e03, 4.98641058337653607651e03, 9.56231892404756170795e03,
        7.99704160447350683650e03, 2.82619278517639096600e03, 3.36093607810698293419e02)  # fmt: skip
# |x| <= 5: J0 = (x^2 - r1^2)(x^2 - r2^2) R(x^2), J1 = x (x^2 - r1^2)(x^2 - r2^2) R(x^2) (r: the first zeros)
_J0RP = (-4.79443220978201773821e09, 1.95617491946556577543e12, -2.49248344360967716204e14, 9.70862251047306323952e15)
_J0RQ = (4.99563147152651017219e02, 1.73785401676374683123e05, 4.84409658339962045305e07, 1.11855537045356834862e10,
         2.11277520115489217587e12, 3.10518229857422583814e14, 3.18121955943204943306e16, 1.71086294081043136091e18)  # fmt: skip
_J1RP = (-8.99971225705559398224e08, 4.52228297998194034323e11, -7.27494245221818276015e13, 3.68295732863852883286e15)
_J1RQ = (6.20836478118054335476e02, 2.56987256757748830383e05, 8.35146791431949253037e07, 2.21511595479792499675e10,
         4.74914122079991414898e12, 7.84369607876235854894e14, 8.95222336184627338078e16, 5.32278620332680085395e18)  # fmt: skip
_J0ZEROS = (5.78318596294678452118e00, 3.04712623436620863991e01)
_J1ZEROS = (1.46819706421238932572e01, 4.92184563216946036703e01)
# 0 < x <= 5: Y0 = R(x^2) + 2/pi log(x) J0, Y1 = x R(x^2) + 2/pi (J1 log(x) - 1/x)
_Y0P = (1.55924367855235737965e04, -1.46639295903971606143e07, 5.43526477051876500413e09, -9.82136065717911466409e11,
        8.75906394395366999549e13, -3.46628303384729719441e15, 4.42733268572569800351e16, -1.84950800436986690637e16)  # fmt: skip
_Y0Q = (1.04128353664259848412e03, 6.26107330137134956842e05, 2.68919633393814121987e08, 8.64002487103935000337e10,
        2.02979612750105546709e13, 3.17157752842975028269e15, 2.50596256172653059228e17)  # fmt: skip
_Y1P = (1.26320474790178026440e09, -6.47355876379160291031e11, 1.14509511541823727583e14, -8.12770255501325109621e15,
        2.02439475713594898196e17, -7.78877196265950026825e17)  # fmt: skip
_Y1Q = (5.94301592346128195359e02, 2.35564092943068577943e05, 7.34811944459721705660e07, 1.87601316108706159478e10,
        3.88231277496238566008e12, 6.20557727146953693363e14, 6.87141087355300489866e16, 3.97270608116560655612e18)  # fmt: skip


def _hankel(lib: Any, a: Any, order: int, second_kind: bool) -> Any:
    """J_n or Y_n (n = order) at a > 5 from Hankel's asymptotic expansion."""
    if order == 0:
        z, (pp, pq, qp, qq), shift = lib.div(25.0, lib.mul(a, a)), (_P0P, _P0Q, _Q0P, _Q0Q), _PIO4
    else:  # (as Cephes: 5/x squared as a product)
        five = lib.div(5.0, a)
        z, (pp, pq, qp, qq), shift = lib.mul(five, five), (_P1P, _P1Q, _Q1P, _Q1Q), _THPIO4
    p = lib.div(_horner(lib, z, pp), _horner(lib, z, pq))
    q = lib.mul(lib.div(5.0, a), lib.div(_horner(lib, z, qp), _horner(lib, z, qq)))
    s = lib.sub(a, shift)
    if second_kind:
        main = lib.add(lib.mul(p, lib.sin(s)), lib.mul(q, lib.cos(s)))
    else:
        main = lib.sub(lib.mul(p, lib.cos(s)), lib.mul(q, lib.sin(s)))
    return lib.div(lib.mul(main, _SQ2OPI), lib.sqrt(a))


def _j0_formula(lib: Any, x: Any) -> Any:
    a = lib.abs(x)
    x2 = lib.mul(a, a)
    r1, r2 = _J0ZEROS
    near = lib.div(lib.mul(lib.mul(lib.sub(x2, r1), lib.sub(x2, r2)), _horner(lib, x2, _J0RP)), _horner(lib, x2, _J0RQ))
    near = lib.where(lib.less(a, 1e-5), lib.sub(1.0, lib.div(x2, 4.0)), near)
    return lib.where(lib.greater(a, 5.0), _hankel(lib, a, 0, False), near)


def _j1_formula(lib: Any, x: Any) -> Any:
    a = lib.abs(x)
    x2 = lib.mul(x, x)
    r1, r2 = _J1ZEROS
    rational = lib.div(_horner(lib, x2, _J1RP), _horner(lib, x2, _J1RQ))
    near = lib.mul(lib.mul(lib.mul(rational, x), lib.sub(x2, r1)), lib.sub(x2, r2))  # odd in x itself
    far = _hankel(lib, a, 1, False)
    far = lib.where(lib.less(x, 0.0), lib.mul(far, -1.0), far)
    return lib.where(lib.greater(a, 5.0), far, near)


def _y_domain(lib: Any, x: Any, out: Any) -> Any:
    """Y_n's values off (0, inf): -inf at 0, nan below."""
    out = lib.where(lib.equal(x, 0.0), -float("inf"), out)
    return lib.where(lib.less(x, 0.0), float("nan"), out)


def _y0_formula(lib: Any, x: Any) -> Any:
    x2 = lib.mul(x, x)
    near = lib.add(
        lib.div(_horner(lib, x2, _Y0P), _horner(lib, x2, _Y0Q)),
        lib.mul(lib.mul(lib.log(x), _TWOOPI), _j0_formula(lib, x)),
    )
    out = lib.where(lib.greater(x, 5.0), _hankel(lib, x, 0, True), near)
    return _y_domain(lib, x, out)


def _y1_formula(lib: Any, x: Any) -> Any:
    x2 = lib.mul(x, x)
    rational = lib.mul(x, lib.div(_horner(lib, x2, _Y1P), _horner(lib, x2, _Y1Q)))
    log_part = lib.sub(lib.mul(_j1_formula(lib, x), lib.log(x)), lib.div(1.0, x))
    near = lib.add(rational, lib.mul(log_part, _TWOOPI))
    out = lib.where(lib.greater(x, 5.0), _hankel(lib, x, 1, True), near)
    return _y_domain(lib, x, out)


class _BesselOp(_Formula, UnaryOperation):
    """A Bessel function primitive: its formula, and a VJP written with the functions here."""

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.mul(cotangents[0], self.derivative(primals[0], outputs[0]))]

    def derivative(self, x: Tensor, y: Tensor) -> Tensor:
        raise NotImplementedError


def _over_x(x: Tensor, value: Tensor) -> Tensor:
    """value / x, with x = 0 replaced by 1 (callers pick the limit there)."""
    return _bin.div(value, _bin.where_(_bin.equal(x, 0.0), 1.0, x))


class J0Op(_BesselOp):
    name = "bessel_j0"
    formula = staticmethod(_j0_formula)

    def derivative(self, x: Tensor, y: Tensor) -> Tensor:
        return _un.neg(_j1(x))


class J1Op(_BesselOp):
    name = "bessel_j1"
    formula = staticmethod(_j1_formula)

    def derivative(self, x: Tensor, y: Tensor) -> Tensor:
        return _bin.where_(_bin.equal(x, 0.0), 0.5, _bin.sub(_j0(x), _over_x(x, y)))


class Y0Op(_BesselOp):
    name = "bessel_y0"
    formula = staticmethod(_y0_formula)

    def derivative(self, x: Tensor, y: Tensor) -> Tensor:
        return _un.neg(_y1(x))


class Y1Op(_BesselOp):
    name = "bessel_y1"
    formula = staticmethod(_y1_formula)

    def derivative(self, x: Tensor, y: Tensor) -> Tensor:
        return _bin.sub(_y0(x), _bin.div(y, x))


# -- modified Bessel functions of the second kind (Cephes' k0.c, k1.c) ---------------------------
# Chebyshev series in x^2 - 2 on (0, 2] and in 8/x - 2 above 2
_K0A = (1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11, 1.90451637722020886025e-09,
        2.53479107902614945675e-07, 2.28621210311945178607e-05, 1.26461541144692592338e-03, 3.59799365153615016266e-02,
        3.44289899924628486886e-01, -5.35327393233902768720e-01)  # fmt: skip
_K0B = (5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17, -1.67823109680541210385e-16,
        5.51205597852431940784e-16, -1.84859337734377901440e-15, 6.34007647740507060557e-15, -2.22751332699166985548e-14,
        8.03289077536357521100e-14, -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
        1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10, -1.69753450938905987466e-09,
        8.57403401741422608519e-09, -4.66048989768794782956e-08, 2.76681363944501510342e-07, -1.83175552271911948767e-06,
        1.39498137188764993662e-05, -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
        2.44030308206595545468e00)  # fmt: skip
_K1A = (-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13, -1.41148839263352776110e-10,
        -2.21338763073472585583e-08, -2.43340614156596823496e-06, -1.73028895751305206302e-04, -6.97572385963986435018e-03,
        -1.22611180822657148235e-01, -3.53155960776544875667e-01, 1.52530022733894777053e00)  # fmt: skip
_K1B = (-5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17, 1.83809354436663880070e-16,
        -6.05704724837331885336e-16, 2.03870316562433424052e-15, -7.01983709041831346144e-15, 2.47715442448130437068e-14,
        -8.97670518232499435011e-14, 3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
        -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10, 2.01504975519703286596e-09,
        -1.03457624656780970260e-08, 5.74108412545004946722e-08, -3.50196060308781257119e-07, 2.40648494783721712015e-06,
        -1.93619797416608296024e-05, 1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
        2.72062619048444266945e00)  # fmt: skip


def _k_formula(lib: Any, x: Any, order: int, scaled: bool) -> Any:
    """K_n(x) (n = order), or e^x K_n(x) when `scaled`: inf at 0, nan below."""
    near_series = _chebyshev(lib, lib.sub(lib.mul(x, x), 2.0), _K1A if order else _K0A)
    log_half = lib.log(lib.mul(x, 0.5))
    if order == 0:  # I0(x) = e^x i0e(x) for x >= 0
        near = lib.sub(near_series, lib.mul(log_half, lib.mul(lib.exp(x), _i0e_formula(lib, x))))
    else:
        near = lib.add(lib.mul(log_half, lib.mul(lib.exp(x), _i1e_formula(lib, x))), lib.div(near_series, x))
    far = lib.div(_chebyshev(lib, lib.sub(lib.div(8.0, x), 2.0), _K1B if order else _K0B), lib.sqrt(x))
    if scaled:
        near = lib.mul(near, lib.exp(x))
    else:
        far = lib.mul(far, lib.exp(lib.mul(x, -1.0)))
    out = lib.where(lib.greater(x, 2.0), far, near)
    out = lib.where(lib.equal(x, 0.0), float("inf"), out)
    return lib.where(lib.less(x, 0.0), float("nan"), out)


class K0Op(_BesselOp):
    name = "modified_bessel_k0"

    @staticmethod
    def formula(lib: Any, x: Any) -> Any:
        return _k_formula(lib, x, 0, False)

    def derivative(self, x: Tensor, y: Tensor) -> Tensor:
        return _un.neg(_k1(x))


class K1Op(_BesselOp):
    name = "modified_bessel_k1"

    @staticmethod
    def formula(lib: Any, x: Any) -> Any:
        return _k_formula(lib, x, 1, False)

    def derivative(self, x: Tensor, y: Tensor) -> Tensor:
        return _un.neg(_bin.add(_k0(x), _bin.div(y, x)))


class K0eOp(_BesselOp):
    name = "scaled_modified_bessel_k0"

    @staticmethod
    def formula(lib: Any, x: Any) -> Any:
        return _k_formula(lib, x, 0, True)

    def derivative(self, x: Tensor, y: Tensor) -> Tensor:
        return _bin.sub(y, _k1e(x))


class K1eOp(_BesselOp):
    name = "scaled_modified_bessel_k1"

    @staticmethod
    def formula(lib: Any, x: Any) -> Any:
        return _k_formula(lib, x, 1, True)

    def derivative(self, x: Tensor, y: Tensor) -> Tensor:
        return _bin.sub(_bin.sub(y, _k0e(x)), _bin.div(y, x))


# -- spherical Bessel function of the first kind -------------------------------------------------
_SPHERICAL_SERIES = (1 / 6227020800.0, -1 / 39916800.0, 1 / 362880.0, -1 / 5040.0, 1 / 120.0, -1 / 6.0, 1.0)
# its derivative's series divided by x: sum_k (-1)^k 2k x^(2k-2) / (2k+1)!
_SPHERICAL_SLOPE = (12 / 6227020800.0, -10 / 39916800.0, 8 / 362880.0, -6 / 5040.0, 4 / 120.0, -2 / 6.0)


def _spherical_j0_formula(lib: Any, x: Any) -> Any:
    near = _horner(lib, lib.mul(x, x), _SPHERICAL_SERIES)
    out = lib.where(lib.less(lib.abs(x), 0.5), near, lib.div(lib.sin(x), x))
    return lib.where(lib.is_inf(x), 0.0, out)


class SphericalJ0Op(_BesselOp):
    name = "spherical_bessel_j0"
    formula = staticmethod(_spherical_j0_formula)

    def derivative(self, x: Tensor, y: Tensor) -> Tensor:
        series = _horner(_bin, _bin.mul(x, x), _SPHERICAL_SLOPE)  # (the binary ops are a `lib` too)
        small = _bin.less(_un.abs(x), 0.5)
        return _bin.where_(small, _bin.mul(x, series), _over_x(x, _bin.sub(_un.cos(x), y)))


# -- the Airy function Ai (Cephes' airy.c) --------------------------------------------------------
_AI_AN = (3.46538101525629032477e-01, 1.20075952739645805542e01, 7.62796053615234516538e01, 1.68089224934630576269e02,
          1.59756391350164413639e02, 7.05360906840444183113e01, 1.40264691163389668864e01, 9.99999999999999995305e-01)  # fmt: skip
_AI_AD = (5.67594532638770212846e-01, 1.47562562584847203173e01, 8.45138970141474626562e01, 1.77318088145400459522e02,
          1.64234692871529701831e02, 7.14778400825575695274e01, 1.40959135607834029598e01, 1.00000000000000000470e00)  # fmt: skip
_AI_AFN = (-1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01, -2.79779981545119124951e-01,
           -4.91900132609500318020e-02, -4.06265923594885404393e-03, -1.59276496239262096340e-04, -2.77649108155232920844e-06,
           -1.67787698489114633780e-08)  # fmt: skip
_AI_AFD = (1.33560420706553243746e01, 3.26825032795224613948e01, 2.67367040941499554804e01, 9.18707402907259625840e00,
           1.47529146771666414581e00, 1.15687173795188044134e-01, 4.40291641615211203805e-03, 7.54720348287414296618e-05,
           4.51850092970580378464e-07)  # fmt: skip
_AI_AGN = (1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e00, 9.39169229816650230044e-01,
           3.51465656105547619242e-01, 6.33888919628925490927e-02, 5.85804113048388458567e-03, 2.82851600836737019778e-04,
           6.98793669997260967291e-06, 8.11789239554389293311e-08, 3.41551784765923618484e-10)  # fmt: skip
_AI_AGD = (9.30892908077441974853e00, 1.98352928718312140417e01, 1.55646628932864612953e01, 5.47686069422975497931e00,
           9.54293611618961883998e-01, 8.64580826352392193095e-02, 4.12656523824222607191e-03, 1.01259085116509135510e-04,
           1.17166733214413521882e-06, 4.91834570062930015649e-09)  # fmt: skip
_SQPII = 5.64189583547756286948e-01  # 1 / sqrt(pi)
_AI_C1, _AI_C2 = 0.355028053887817239260, 0.258819403792806798405  # Ai(0), -Ai'(0)
_AI_SERIES_TERMS = 14  # |x| < 2.09: the terms past the 14th are below float64's epsilon


def _airy_ai_formula(lib: Any, x: Any) -> Any:
    below, under = lib.less(x, -2.09), lib.less(x, 2.09)  # the three regions: below, between, above
    # below -2.09: oscillating asymptotic form
    neg = lib.where(below, x, -3.0)
    zeta_n = lib.div(lib.mul(lib.mul(neg, -2.0), lib.sqrt(lib.mul(neg, -1.0))), 3.0)
    z = lib.div(1.0, zeta_n)
    zz = lib.mul(z, z)
    f_ratio = lib.div(lib.mul(zz, _horner(lib, zz, _AI_AFN)), _horner(lib, zz, _AI_AFD))
    g_ratio = lib.div(lib.mul(z, _horner(lib, zz, _AI_AGN)), _horner(lib, zz, _AI_AGD))
    t = lib.add(zeta_n, 0.25 * math.pi)
    osc = lib.sub(lib.mul(lib.sin(t), lib.add(f_ratio, 1.0)), lib.mul(lib.cos(t), g_ratio))
    left = lib.div(lib.mul(osc, _SQPII), lib.sqrt(lib.sqrt(lib.mul(neg, -1.0))))
    # from 2.09 up: exponentially decaying asymptotic form
    pos = lib.where(under, 3.0, x)
    zeta_p = lib.div(lib.mul(lib.mul(pos, 2.0), lib.sqrt(pos)), 3.0)
    inv = lib.div(1.0, zeta_p)
    ratio = lib.div(_horner(lib, inv, _AI_AN), _horner(lib, inv, _AI_AD))
    right = lib.div(lib.mul(ratio, _SQPII), lib.mul(lib.mul(lib.sqrt(lib.sqrt(pos)), 2.0), lib.exp(zeta_p)))
    # between: Ai = c1 f - c2 g with the Maclaurin series f, g in x^3
    mid = lib.where(lib.logical_and(under, lib.logical_not(below)), x, 0.0)
    cube = lib.mul(lib.mul(mid, mid), mid)
    f = m = lib.add(lib.mul(mid, 0.0), 1.0)
    g = n = mid
    k = 1.0
    for _ in range(_AI_SERIES_TERMS):
        m = lib.div(lib.mul(m, cube), (k + 1.0) * (k + 2.0))
        n = lib.div(lib.mul(n, cube), (k + 2.0) * (k + 3.0))
        k += 3.0
        f, g = lib.add(f, m), lib.add(g, n)
    middle = lib.sub(lib.mul(f, _AI_C1), lib.mul(g, _AI_C2))
    out = lib.where(below, left, lib.where(under, middle, right))
    out = lib.where(lib.greater(x, 103.892), 0.0, out)
    return lib.where(lib.is_inf(x), float("nan"), out)


class AiryAiOp(_Formula, UnaryOperation):
    name = "airy_ai"
    formula = staticmethod(_airy_ai_formula)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        raise NotImplementedError("airy_ai has no derivative (as in PyTorch: Ai' is not built)")


_airy_ai = AiryAiOp()


@public()
def airy_ai(x: Tensor) -> Tensor:
    """Elementwise Airy function Ai(x) (torch.special.airy_ai): Cephes' algorithm, PyTorch's
    values to rounding (nan at +-inf, 0 above 103.892). Not differentiable, as in PyTorch.
    Integer inputs give float32."""
    return _airy_ai(_float_input(x, "airy_ai"))


_j0, _j1, _y0, _y1 = J0Op(), J1Op(), Y0Op(), Y1Op()
_k0, _k1, _k0e, _k1e = K0Op(), K1Op(), K0eOp(), K1eOp()
_spherical_j0 = SphericalJ0Op()


def _bessel_public(op: Any, name: str, summary: str) -> Any:
    def fn(x: Tensor) -> Tensor:
        return op(_float_input(x, name))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{summary} (torch.special.{name}); differentiable (torch's is not).
    Integer inputs give float32."""
    return public(name)(fn)


bessel_j0 = _bessel_public(_j0, "bessel_j0", "Elementwise Bessel function of the first kind of order 0, J0(x)")
bessel_j1 = _bessel_public(_j1, "bessel_j1", "Elementwise Bessel function of the first kind of order 1, J1(x)")
bessel_y0 = _bessel_public(
    _y0, "bessel_y0", "Elementwise Bessel function of the second kind of order 0, Y0(x) (-inf at 0, nan below)"
)
bessel_y1 = _bessel_public(
    _y1, "bessel_y1", "Elementwise Bessel function of the second kind of order 1, Y1(x) (-inf at 0, nan below)"
)
modified_bessel_k0 = _bessel_public(
    _k0, "modified_bessel_k0", "Elementwise modified Bessel function of the second kind of order 0, K0(x)"
)
modified_bessel_k1 = _bessel_public(
    _k1, "modified_bessel_k1", "Elementwise modified Bessel function of the second kind of order 1, K1(x)"
)
scaled_modified_bessel_k0 = _bessel_public(
    _k0e, "scaled_modified_bessel_k0", "Elementwise exponentially scaled K0: e^x K0(x)"
)
scaled_modified_bessel_k1 = _bessel_public(
    _k1e, "scaled_modified_bessel_k1", "Elementwise exponentially scaled K1: e^x K1(x)"
)
spherical_bessel_j0 = _bessel_public(
    _spherical_j0,
    "spherical_bessel_j0",
    "Elementwise spherical Bessel function of the first kind of order 0, sin(x) / x",
)

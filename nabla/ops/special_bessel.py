"""The modified Bessel functions of the first kind (torch's i0 and torch.special's i0e, i1, i1e),
formulas written once over `special.py`'s elementwise libraries.

    i0e, i1e Cephes' Chebyshev series for e^-|x| I_n(x); i0 and i1 multiply by e^|x|.
             d/dx i0e = i1e - sign(x) i0e, d/dx i1e = i0e - i1e (sign(x) + 1/x)
"""

from __future__ import annotations

from typing import Any

from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import unary as _un
from .base import public
from .special import _Formula
from .unary import UnaryOperation, _float_input

__all__ = ["i0", "i0e", "i1", "i1e"]


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

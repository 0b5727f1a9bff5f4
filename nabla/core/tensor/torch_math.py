"""torch.Tensor's elementwise and linear-algebra methods (`x.exp()`, `x.maximum(y)`, `x.arcsin()`,
`x.addmm(a, b)`, `x.det()`, `x.svd()`): a mixin of `Tensor`, beside `TorchMethods`. Most are
the op of the same name, or torch's other name for one, reached through the dispatch table; a
few are a line or two over the op library (`trace`, `lu`, `triangular_solve`, `angle`) or the
real-valued answer for complex numbers (`conj`, `real`, `is_conj`).
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import TYPE_CHECKING, Any

from ..common import dtypes as _dt
from .dispatch import OPS

if TYPE_CHECKING:  # annotations only: tensor.py imports this module
    from .tensor import Tensor

# What triangular_solve returns, as torch's return_types.
_TriangularSolveResult = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])


class TorchMath:
    """torch.Tensor's elementwise, matrix-product and matrix-function methods (mixed into `Tensor`)."""

    __slots__ = ()

    # -- elementwise methods (the ops of the same name) -------------------------------------------------------------
    def exp(self) -> Tensor:
        return OPS.exp(self)

    def log(self) -> Tensor:
        return OPS.log(self)

    def sqrt(self) -> Tensor:
        return OPS.sqrt(self)

    def tanh(self) -> Tensor:
        return OPS.tanh(self)

    def relu(self) -> Tensor:
        return OPS.relu(self)

    def sigmoid(self) -> Tensor:
        return OPS.sigmoid(self)

    def pow(self, exponent: Any) -> Tensor:
        return OPS.pow(self, exponent)

    def matmul(self, other: Any) -> Tensor:
        return OPS.matmul(self, other)

    def abs(self) -> Tensor:
        return OPS.abs(self)

    def sign(self) -> Tensor:
        return OPS.sign(self)

    def expm1(self) -> Tensor:
        return OPS.expm1(self)

    def log1p(self) -> Tensor:
        return OPS.log1p(self)

    def log2(self) -> Tensor:
        return OPS.log2(self)

    def rsqrt(self) -> Tensor:
        return OPS.rsqrt(self)

    def square(self) -> Tensor:
        return OPS.square(self)

    def reciprocal(self) -> Tensor:
        return OPS.reciprocal(self)

    def sin(self) -> Tensor:
        return OPS.sin(self)

    def cos(self) -> Tensor:
        return OPS.cos(self)

    def tan(self) -> Tensor:
        return OPS.tan(self)

    def sinh(self) -> Tensor:
        return OPS.sinh(self)

    def cosh(self) -> Tensor:
        return OPS.cosh(self)

    def asin(self) -> Tensor:
        return OPS.asin(self)

    def acos(self) -> Tensor:
        return OPS.acos(self)

    def atan(self) -> Tensor:
        return OPS.atan(self)

    def erf(self) -> Tensor:
        return OPS.erf(self)

    def floor(self) -> Tensor:
        return OPS.floor(self)

    def ceil(self) -> Tensor:
        return OPS.ceil(self)

    def trunc(self) -> Tensor:
        return OPS.trunc(self)

    def isnan(self) -> Tensor:
        return OPS.isnan(self)

    def isinf(self) -> Tensor:
        return OPS.isinf(self)

    def isfinite(self) -> Tensor:
        return OPS.isfinite(self)

    def logical_not(self) -> Tensor:
        return OPS.logical_not(self)

    def neg(self) -> Tensor:
        return OPS.neg(self)

    def silu(self) -> Tensor:
        return OPS.silu(self)

    def gelu(self, approximate: str = "none") -> Tensor:
        return OPS.gelu(self, approximate)

    def softplus(self, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
        return OPS.softplus(self, beta, threshold)

    def round(self, decimals: int = 0) -> Tensor:
        return OPS.round(self, decimals)

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        return OPS.clamp(self, min, max)

    clip = clamp

    def nan_to_num(self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
        return OPS.nan_to_num(self, nan, posinf, neginf)

    def masked_fill(self, mask: Tensor, value: Any) -> Tensor:
        return OPS.masked_fill(self, mask, value)

    def logical_and(self, other: Any) -> Tensor:
        return OPS.logical_and(self, other)

    def logical_or(self, other: Any) -> Tensor:
        return OPS.logical_or(self, other)

    def logical_xor(self, other: Any) -> Tensor:
        return OPS.logical_xor(self, other)

    def maximum(self, other: Any) -> Tensor:
        return OPS.maximum(self, other)

    def minimum(self, other: Any) -> Tensor:
        return OPS.minimum(self, other)

    def remainder(self, other: Any) -> Tensor:
        return OPS.remainder(self, other)

    def atan2(self, other: Any) -> Tensor:
        return OPS.atan2(self, other)

    def dot(self, other: Any) -> Tensor:
        return OPS.dot(self, other)

    def outer(self, other: Any) -> Tensor:
        return OPS.outer(self, other)

    def cross(self, other: Any, dim: int | None = None) -> Tensor:
        """torch.cross: dim=None takes the first dimension of size 3."""
        return OPS.cross(self, other, dim)

    def kron(self, other: Any) -> Tensor:
        return OPS.kron(self, other)

    # -- matrix products and matrix functions -------------------------------------------------------
    def mv(self, vec: Any) -> Tensor:
        return OPS.mv(self, vec)

    def ger(self, vec2: Any) -> Tensor:
        return OPS.outer(self, vec2)

    def inner(self, other: Any) -> Tensor:
        return OPS.inner(self, other)

    def vdot(self, other: Any) -> Tensor:
        return OPS.vdot(self, other)

    def addmm(self, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        return OPS.addmm(self, mat1, mat2, beta=beta, alpha=alpha)

    def addmv(self, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        return OPS.addmv(self, mat, vec, beta=beta, alpha=alpha)

    def addr(self, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        return OPS.addr(self, vec1, vec2, beta=beta, alpha=alpha)

    def addbmm(self, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        return OPS.addbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    def baddbmm(self, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        return OPS.baddbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    def diag(self, diagonal: int = 0) -> Tensor:
        return OPS.diag(self, diagonal)

    def diag_embed(self, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
        return OPS.diag_embed(self, offset, dim1, dim2)

    def diagflat(self, offset: int = 0) -> Tensor:
        return OPS.diagflat(self, offset)

    def trace(self) -> Tensor:
        """The sum of a matrix's diagonal (torch.trace: 2-D only)."""
        if self.ndim != 2:
            raise ValueError(f"trace: expected a matrix (2-D), got shape {self.shape}")
        return OPS.sum(OPS.diagonal(self))

    def matrix_power(self, n: int) -> Tensor:
        return OPS.matrix_power(self, n)

    def matrix_exp(self) -> Tensor:
        return OPS.matrix_exp(self)

    def inverse(self) -> Tensor:
        return OPS.inv(self)

    def det(self) -> Tensor:
        return OPS.det(self)

    def logdet(self) -> Tensor:
        return OPS.logdet(self)

    def slogdet(self) -> Any:
        return OPS.slogdet(self)

    def qr(self, some: bool = True) -> Any:
        """torch.Tensor.qr: the reduced factors, or the complete ones for some=False."""
        return OPS.qr(self, "reduced" if some else "complete")

    def geqrf(self) -> Any:
        return OPS.geqrf(self)

    def orgqr(self, input2: Any) -> Tensor:
        return OPS.householder_product(self, input2)

    def lu(self, pivot: bool = True, get_infos: bool = False) -> Any:
        """torch.Tensor.lu: `(LU, pivots)` of lu_factor, and zeros as `infos` with get_infos
        (a singular matrix gives a zero pivot, not an error)."""
        factors = OPS.lu_factor(self, pivot=pivot)
        if not get_infos:
            return tuple(factors)
        return (*factors, OPS.zeros(*self.shape[:-2], dtype=factors.pivots.dtype))

    def lu_solve(self, LU_data: Any, LU_pivots: Any) -> Tensor:  # noqa: N803
        return OPS.lu_solve(LU_data, LU_pivots, self)

    def multinomial(self, num_samples: int, replacement: bool = False, *, generator: Any = None) -> Tensor:
        return OPS.multinomial(self, num_samples, replacement, generator=generator)

    def prelu(self, weight: Any) -> Tensor:
        return OPS.prelu(self, weight)

    def frexp(self) -> Any:
        return OPS.frexp(self)

    def histogram(self, bins: Any = 100, *, range: Any = None, weight: Any = None, density: bool = False) -> Any:  # noqa: A002
        return OPS.histogram(self, bins, range=range, weight=weight, density=density)

    def unique_consecutive(
        self, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
    ) -> Any:
        return OPS.unique_consecutive(self, return_inverse, return_counts, dim)

    def cholesky(self, upper: bool = False) -> Tensor:
        return OPS.cholesky(self, upper)

    def cholesky_solve(self, input2: Any, upper: bool = False) -> Tensor:
        return OPS.cholesky_solve(self, input2, upper)

    def cholesky_inverse(self, upper: bool = False) -> Tensor:
        return OPS.cholesky_inverse(self, upper)

    def triangular_solve(self, A: Any, upper: bool = True, transpose: bool = False, unitriangular: bool = False) -> Any:
        """torch.triangular_solve: X with A X = self (A^T X = self for transpose=True), and A."""
        coefficient = A.transpose(-2, -1) if transpose else A
        x = OPS.solve_triangular(coefficient, self, upper=upper != transpose, unitriangular=unitriangular)
        return _TriangularSolveResult(x, A.clone())

    def svd(self, some: bool = True, compute_uv: bool = True) -> Any:
        return OPS.svd(self, some, compute_uv)

    def pinverse(self, rcond: float = 1e-15) -> Tensor:
        return OPS.pinverse(self, rcond)

    # -- more elementwise methods (torch's names for nabla's ops) -------------------------------------
    def absolute(self) -> Tensor:
        return OPS.abs(self)

    def negative(self) -> Tensor:
        return OPS.neg(self)

    def positive(self) -> Tensor:
        return OPS.positive(self)

    def fix(self) -> Tensor:
        return OPS.trunc(self)

    def sgn(self) -> Tensor:
        return OPS.sign(self)

    def arccos(self) -> Tensor:
        return OPS.acos(self)

    def arcsin(self) -> Tensor:
        return OPS.asin(self)

    def arctan(self) -> Tensor:
        return OPS.atan(self)

    def asinh(self) -> Tensor:
        return OPS.asinh(self)

    def acosh(self) -> Tensor:
        return OPS.acosh(self)

    def atanh(self) -> Tensor:
        return OPS.atanh(self)

    arcsinh, arccosh, arctanh = asinh, acosh, atanh

    def log10(self) -> Tensor:
        return OPS.log10(self)

    def exp2(self) -> Tensor:
        return OPS.exp2(self)

    def sinc(self) -> Tensor:
        return OPS.sinc(self)

    def deg2rad(self) -> Tensor:
        return OPS.deg2rad(self)

    def rad2deg(self) -> Tensor:
        return OPS.rad2deg(self)

    def erfc(self) -> Tensor:
        return OPS.erfc(self)

    def i0(self) -> Tensor:
        return OPS.i0(self)

    def lgamma(self) -> Tensor:
        return OPS.lgamma(self)

    def digamma(self) -> Tensor:
        return OPS.digamma(self)

    def polygamma(self, n: int) -> Tensor:
        return OPS.polygamma(n, self)

    def mvlgamma(self, p: int) -> Tensor:
        return OPS.mvlgamma(self, p)

    def erfinv(self) -> Tensor:
        return OPS.erfinv(self)

    def logit(self, eps: float | None = None) -> Tensor:
        return OPS.logit(self, eps)

    def signbit(self) -> Tensor:
        return OPS.signbit(self)

    def isposinf(self) -> Tensor:
        return OPS.isposinf(self)

    def isneginf(self) -> Tensor:
        return OPS.isneginf(self)

    def isreal(self) -> Tensor:
        return OPS.isreal(self)

    def angle(self) -> Tensor:
        """The argument of a real number: pi for negative values, else 0 (nan stays nan); float."""
        x = self if _dt.is_float(self.dtype) else OPS.cast(self, _dt.DEFAULT_FLOAT)
        return OPS.where(OPS.isnan(x), x, OPS.where(OPS.less(x, 0), math.pi, 0.0))

    def hardshrink(self, lambd: float = 0.5) -> Tensor:
        """self where |self| > lambd, else 0 (torch.nn.functional.hardshrink)."""
        return OPS.where(OPS.greater(OPS.abs(self), lambd), self, 0.0)

    def conj(self) -> Tensor:
        """Self: nabla's tensors are real."""
        return self

    resolve_conj = resolve_neg = conj

    def conj_physical(self) -> Tensor:
        """A copy: nabla's tensors are real."""
        return OPS.identity(self)

    def is_conj(self) -> bool:
        return False

    def is_neg(self) -> bool:
        return False

    @property
    def real(self) -> Tensor:
        """Self: nabla's tensors are real."""
        return self

    def arctan2(self, other: Any) -> Tensor:
        return OPS.atan2(self, other)

    def logaddexp(self, other: Any) -> Tensor:
        return OPS.logaddexp(self, other)

    def logaddexp2(self, other: Any) -> Tensor:
        return OPS.logaddexp2(self, other)

    def hypot(self, other: Any) -> Tensor:
        return OPS.hypot(self, other)

    def copysign(self, other: Any) -> Tensor:
        return OPS.copysign(self, other)

    def heaviside(self, values: Any) -> Tensor:
        return OPS.heaviside(self, values)

    def xlogy(self, other: Any) -> Tensor:
        return OPS.xlogy(self, other)

    def nextafter(self, other: Any) -> Tensor:
        return OPS.nextafter(self, other)

    def bitwise_left_shift(self, other: Any) -> Tensor:
        return OPS.bitwise_left_shift(self, other)

    def bitwise_right_shift(self, other: Any) -> Tensor:
        return OPS.bitwise_right_shift(self, other)

    def fmax(self, other: Any) -> Tensor:
        return OPS.fmax(self, other)

    def fmin(self, other: Any) -> Tensor:
        return OPS.fmin(self, other)

    def float_power(self, exponent: Any) -> Tensor:
        return OPS.float_power(self, exponent)

    def isclose(self, other: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> Tensor:
        return OPS.isclose(self, other, rtol, atol, equal_nan)

    def gcd(self, other: Any) -> Tensor:
        return OPS.gcd(self, other)

    def lcm(self, other: Any) -> Tensor:
        return OPS.lcm(self, other)

    def ldexp(self, other: Any) -> Tensor:
        return OPS.ldexp(self, other)

    def addcmul(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        return OPS.addcmul(self, tensor1, tensor2, value)

    def addcdiv(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        return OPS.addcdiv(self, tensor1, tensor2, value)

    def bitwise_and(self, other: Any) -> Tensor:
        return OPS.bitwise_and(self, other)

    def bitwise_or(self, other: Any) -> Tensor:
        return OPS.bitwise_or(self, other)

    def bitwise_xor(self, other: Any) -> Tensor:
        return OPS.bitwise_xor(self, other)

    def bitwise_not(self) -> Tensor:
        return OPS.bitwise_not(self)

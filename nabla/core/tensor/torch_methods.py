"""PyTorch's Tensor methods that are other methods or ops under another name or argument
convention (`x.t()`, `x.add(y, alpha=2)`, `x.new_zeros(3)`, `x.eq(y)`, `x.narrow(0, 1, 2)`):
a mixin of `Tensor`, so code written for torch.Tensor runs unchanged. Each is a line or two over
the op library (reached through the dispatch table) and Tensor's own methods, as are the
elementwise methods (`x.exp()`, `x.maximum(y)`: the ops of the same name). The in-place
variants (`x.abs_()`, `x.eq_(y)`, `x.unsqueeze_(0)`, `x.uniform_()`) are the other mixin,
in `torch_inplace.py`. Also torch's gradient-hook registration (`register_hook`), whose hooks the
autograd engine runs.
"""

from __future__ import annotations

import builtins
import math
import weakref
from collections import namedtuple
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..common import dtypes as _dt
from ..common.hooks import RemovableHandle, add_hook
from .dispatch import OPS
from .impl import GRAD_HOOKS

if TYPE_CHECKING:  # annotations only: tensor.py imports this module
    from .tensor import Tensor

# What max(dim) / min(dim) / kthvalue / median(dim) return, as torch's return_types.
ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])


class TorchMethods:
    """torch.Tensor's aliases and small compositions (mixed into `Tensor`)."""

    __slots__ = ()

    # -- gradient hooks -----------------------------------------------------------------------
    def register_hook(self, hook: Callable[[Any], Any]) -> RemovableHandle:
        """Call `hook(grad)` whenever a gradient for this tensor is computed; a non-None result
        replaces the gradient (for what flows on, or what a leaf accumulates in `.grad`).

        As in PyTorch, a leaf's hooks stay with the tensor across optimizer steps; a non-leaf's
        apply to the value it had when they were registered. A backward that runs hooks is
        not replayed (its Python runs each time).

        Args:
            hook: a function of the gradient, returning None or a tensor of the same shape.

        Example:
            >>> x = nabla.tensor([1.0, 2.0], requires_grad=True)
            >>> handle = x.register_hook(lambda g: g * 10)
            >>> (x * x).sum().backward()
            >>> x.grad.numpy()
            array([20., 40.], dtype=float32)
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.is_leaf:
            self._impl.facade = weakref.ref(self)
            hooks = _slot(self, "_hooks")
        else:
            hooks = GRAD_HOOKS.on_impl.setdefault(self._impl, {})
        GRAD_HOOKS.count += 1
        return add_hook(hooks, hook, on_remove=GRAD_HOOKS.removed)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Any], None]) -> RemovableHandle:
        """Call `hook(tensor)` after `backward()` has accumulated this leaf's `.grad` (PyTorch's
        hook for optimizers that step per parameter as gradients arrive).

        Args:
            hook: a function of this tensor; its result is ignored.
        """
        if not self.requires_grad or not self.is_leaf:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        self._impl.facade = weakref.ref(self)
        GRAD_HOOKS.post_count += 1
        return add_hook(_slot(self, "_post_hooks"), hook, on_remove=GRAD_HOOKS.post_removed)

    # -- arithmetic with PyTorch's keyword conventions -----------------------------------------
    def add(self, other: Any, *, alpha: Any = 1) -> Any:
        return OPS.add(self, _scaled(other, alpha))

    def sub(self, other: Any, *, alpha: Any = 1) -> Any:
        return OPS.sub(self, _scaled(other, alpha))

    subtract = sub

    def mul(self, other: Any) -> Any:
        return OPS.mul(self, other)

    multiply = mul

    def div(self, other: Any, *, rounding_mode: str | None = None) -> Any:
        """`self / other`; rounding_mode "floor" or "trunc" rounds the quotient (torch.div)."""
        return OPS.div(self, other, rounding_mode=rounding_mode)

    divide = true_divide = div

    def floor_divide(self, other: Any) -> Any:
        return OPS.floor_divide(self, other)

    def fmod(self, other: Any) -> Any:
        return OPS.fmod(self, other)

    def frac(self) -> Any:
        """The fractional part, with the sign of self: self - trunc(self)."""
        return OPS.sub(self, OPS.trunc(self))

    def lerp(self, end: Any, weight: Any) -> Any:
        """self + weight * (end - self), as PyTorch computes it: end - (end - self) * (1 - weight)
        where |weight| >= 0.5, so weight 1 gives `end` exactly."""
        diff = OPS.sub(end, self)
        if not hasattr(weight, "_impl"):  # a number (Python or NumPy scalar)
            weight = float(weight)
            if abs(weight) < 0.5:
                return OPS.add(self, OPS.mul(diff, weight))
            return OPS.sub(end, OPS.mul(diff, 1 - weight))
        low = OPS.add(self, OPS.mul(weight, diff))
        high = OPS.sub(end, OPS.mul(diff, OPS.sub(1, weight)))
        return OPS.where(OPS.less(OPS.abs(weight), 0.5), low, high)

    def clamp_min(self, min: Any) -> Any:  # noqa: A002
        return OPS.clamp(self, min, None)

    def clamp_max(self, max: Any) -> Any:  # noqa: A002
        return OPS.clamp(self, None, max)

    def mm(self, mat2: Any) -> Any:
        """Matrix product of two 2-D tensors (torch.mm: no broadcasting)."""
        if self.ndim != 2 or mat2.ndim != 2:
            raise ValueError(f"mm: expected 2-D tensors, got shapes {self.shape} and {tuple(mat2.shape)}")
        return OPS.matmul(self, mat2)

    def bmm(self, mat2: Any) -> Any:
        """Batched matrix product of two 3-D tensors (torch.bmm: no broadcasting)."""
        if self.ndim != 3 or mat2.ndim != 3 or self.shape[0] != mat2.shape[0]:
            raise ValueError(f"bmm: expected 3-D tensors with one batch size, got {self.shape} and {tuple(mat2.shape)}")
        return OPS.matmul(self, mat2)

    def dist(self, other: Any, p: float = 2) -> Any:
        """The p-norm of self - other, over every element."""
        return OPS.sub(self, other).norm(p)

    # -- comparisons ------------------------------------------------------------------------
    def eq(self, other: Any) -> Any:
        return OPS.equal(self, other)

    def ne(self, other: Any) -> Any:
        return OPS.not_equal(self, other)

    not_equal = ne

    def gt(self, other: Any) -> Any:
        return OPS.greater(self, other)

    greater = gt

    def ge(self, other: Any) -> Any:
        return OPS.greater_equal(self, other)

    greater_equal = ge

    def lt(self, other: Any) -> Any:
        return OPS.less(self, other)

    less = lt

    def le(self, other: Any) -> Any:
        return OPS.less_equal(self, other)

    less_equal = le

    def equal(self, other: Any) -> bool:
        """True when both have the same shape and the same values (computes them)."""
        return tuple(self.shape) == tuple(other.shape) and builtins.bool(OPS.equal(self, other).all().item())

    def allclose(self, other: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> bool:
        """|self - other| <= atol + rtol * |other| everywhere (computes them), as torch.allclose."""
        return builtins.bool(np.allclose(self.numpy(), np.asarray(other.numpy()), rtol, atol, equal_nan))

    def where(self, condition: Any, other: Any) -> Any:
        """self where `condition`, else `other` (torch's method form of where)."""
        return OPS.where(condition, self, other)

    # -- reductions and selections ----------------------------------------------------------
    def amax(self, dim: Any = None, keepdim: bool = False) -> Any:
        return OPS.max(self, all_if_empty(dim), keepdim)

    def amin(self, dim: Any = None, keepdim: bool = False) -> Any:
        return OPS.min(self, all_if_empty(dim), keepdim)

    def count_nonzero(self, dim: Any = None) -> Any:
        return OPS.cast(OPS.not_equal(self, 0), _dt.int64).sum(dim)

    def kthvalue(self, k: int, dim: int = -1, keepdim: bool = False) -> Any:
        """(values, indices) of the k-th smallest entries along `dim` (k from 1)."""
        n = self.shape[dim] if self.ndim else 1
        if not 1 <= k <= n:
            raise ValueError(f"kthvalue: k={k} is out of range for a dimension of size {n}")
        values, indices = OPS.topk(self, k, dim, False, True)
        return _pick(values, indices, dim, k - 1, keepdim, self.ndim)

    def median(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """The lower median (torch's): of every element, or (values, indices) along `dim`. A
        nan makes the median nan (along `dim`: with the first nan's index), as in PyTorch."""
        if dim is None:
            flat = self.reshape(-1)
            median = flat.kthvalue((flat.shape[0] + 1) // 2)[0]
            return OPS.where(OPS.isnan(flat).any(), math.nan, median) if _dt.is_float(self.dtype) else median
        n = self.shape[dim] if self.ndim else 1
        values, indices = self.kthvalue((n + 1) // 2, dim, keepdim)
        if not _dt.is_float(self.dtype):
            return ValuesIndices(values, indices)
        nan = OPS.isnan(self)
        has_nan = nan.any(dim, keepdim)
        first_nan = OPS.argmax(OPS.cast(nan, _dt.int32), dim, keepdim)
        return ValuesIndices(OPS.where(has_nan, math.nan, values), OPS.where(has_nan, first_nan, indices))

    def diff(self, n: int = 1, dim: int = -1) -> Any:
        """Differences of neighbours along `dim`, n times (torch.diff without prepend/append)."""
        out = self
        for _ in range(n):
            d = dim % out.ndim
            hi = out[(slice(None),) * d + (slice(1, None),)]
            lo = out[(slice(None),) * d + (slice(None, -1),)]
            out = OPS.not_equal(hi, lo) if out.dtype == _dt.bool_ else OPS.sub(hi, lo)
        return out

    def cummax(self, dim: int) -> Any:
        """(values, indices) of the running maximum along `dim` (ties: the last index)."""
        return OPS.cummax(self, dim)

    def cummin(self, dim: int) -> Any:
        """(values, indices) of the running minimum along `dim` (ties: the last index)."""
        return OPS.cummin(self, dim)

    def unique(
        self,
        sorted: bool = True,  # noqa: A002
        return_inverse: bool = False,
        return_counts: bool = False,
        dim: int | None = None,
    ) -> Any:
        """The distinct values (reads the values: the count depends on them); see `nabla.unique`."""
        return OPS.unique(self, sorted, return_inverse, return_counts, dim)

    def take_along_dim(self, indices: Any, dim: int | None = None) -> Any:
        return OPS.take_along_dim(self, indices, dim)

    def masked_select(self, mask: Any) -> Any:
        """The entries where `mask` (broadcast) is True, as a 1-D tensor. Its length depends on
        the mask's values, so the mask is computed first (not inside `nabla.compile`)."""
        shape = np.broadcast_shapes(tuple(self.shape), tuple(mask.shape))
        where = np.flatnonzero(np.broadcast_to(mask.numpy(), shape))
        flat = OPS.broadcast_to(self, shape).reshape(-1)
        return OPS.take(flat, OPS.tensor(where.astype(np.int64)), 0)

    def nonzero(self, *, as_tuple: bool = False) -> Any:
        """Indices of the non-zero entries, (count, ndim) int64, or one 1-D tensor per dim with
        `as_tuple` (computes the values: the count depends on them)."""
        idx = np.nonzero(self.numpy())
        if as_tuple:
            return tuple(OPS.tensor(i.astype(np.int64)) for i in idx)
        return OPS.tensor(np.stack(idx, axis=1).astype(np.int64).reshape(-1, self.ndim))

    # -- shape and views -------------------------------------------------------------------
    def t(self) -> Any:
        """The transpose of a 2-D tensor; 0-D and 1-D tensors are returned as they are."""
        if self.ndim > 2:
            raise ValueError(f"t() expects a tensor with <= 2 dimensions, got shape {self.shape}")
        return self if self.ndim < 2 else self.transpose(0, 1)

    def narrow(self, dim: int, start: int, length: int) -> Any:
        """The `length` entries from `start` along `dim` (a view)."""
        d = dim % builtins.max(self.ndim, 1)
        start = start % self.shape[d] if start < 0 else start
        if length < 0 or start + length > self.shape[d]:
            raise IndexError(f"narrow: start {start} + length {length} exceeds dimension {dim} of size {self.shape[d]}")
        return self[(slice(None),) * d + (slice(start, start + length),)]

    def select(self, dim: int, index: int) -> Any:
        """The slice at `index` along `dim`, which is removed (a view)."""
        return self[(slice(None),) * (dim % self.ndim) + (index,)]

    def tensor_split(self, indices_or_sections: Any, dim: int = 0) -> tuple:
        return OPS.tensor_split(self, indices_or_sections, dim)

    def swapdims(self, dim0: int, dim1: int) -> Any:
        return self.swapaxes(dim0, dim1)

    def view_as(self, other: Any) -> Any:
        return self.view(tuple(other.shape))

    def reshape_as(self, other: Any) -> Any:
        return self.reshape(tuple(other.shape))

    def type_as(self, other: Any) -> Any:
        return OPS.cast(self, other.dtype)

    def contiguous(self) -> Any:
        """Self: nabla's tensors are always laid out contiguously."""
        return self

    def is_contiguous(self) -> bool:
        return True

    # -- new tensors like this one ----------------------------------------------------------
    def new_zeros(self, *size: Any, dtype: Any = None, requires_grad: bool = False) -> Any:
        return OPS.zeros(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_ones(self, *size: Any, dtype: Any = None, requires_grad: bool = False) -> Any:
        return OPS.ones(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_empty(self, *size: Any, dtype: Any = None, requires_grad: bool = False) -> Any:
        return self.new_zeros(*size, dtype=dtype, requires_grad=requires_grad)

    def new_full(self, size: Any, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False) -> Any:
        return OPS.full(size, fill_value, dtype or self.dtype, requires_grad=requires_grad)

    def new_tensor(self, data: Any, *, dtype: Any = None, requires_grad: bool = False) -> Any:
        out = OPS.tensor(data, dtype or self.dtype)
        return out.requires_grad_(True) if requires_grad else out

    # -- metadata ---------------------------------------------------------------------------
    def is_floating_point(self) -> bool:
        return _dt.is_float(self.dtype)

    def is_complex(self) -> bool:
        return False

    def nelement(self) -> int:
        return self.numel()

    def ndimension(self) -> int:
        return self.ndim

    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.size_in_bytes

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

    def multinomial(self, num_samples: int, replacement: bool = False) -> Tensor:
        return OPS.multinomial(self, num_samples, replacement)

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

    def svd(self, some: bool = True, compute_uv: bool = True) -> Any:
        return OPS.svd(self, some, compute_uv)

    def pinverse(self, rcond: float = 1e-15) -> Tensor:
        return OPS.pinverse(self, rcond)

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

    # -- more reductions and statistics ----------------------------------------------------------------
    def nansum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        return OPS.nansum(self if dtype is None else OPS.cast(self, dtype), all_if_empty(dim), keepdim)

    def nanmean(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return OPS.nanmean(self, all_if_empty(dim), keepdim)

    def aminmax(self, *, dim: int | None = None, keepdim: bool = False) -> Any:
        """(min, max) over `dim` (every element when None), as torch.aminmax."""
        return OPS.aminmax(self, dim, keepdim)

    def logcumsumexp(self, dim: int) -> Tensor:
        return OPS.logcumsumexp(self, dim)

    def renorm(self, p: float, dim: int, maxnorm: float) -> Tensor:
        return OPS.renorm(self, p, dim, maxnorm)

    def msort(self) -> Tensor:
        return OPS.msort(self)

    def nanmedian(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """The lower median ignoring nan: of every element, or (values, indices) along `dim`."""
        return OPS.nanmedian(self, dim, keepdim)

    def quantile(
        self, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"
    ) -> Tensor:
        return OPS.quantile(self, q, dim, keepdim, interpolation=interpolation)

    def nanquantile(
        self, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"
    ) -> Tensor:
        return OPS.nanquantile(self, q, dim, keepdim, interpolation=interpolation)

    def mode(self, dim: int = -1, keepdim: bool = False) -> Any:
        """(values, indices): the most frequent value along `dim` and its last index."""
        return OPS.mode(self, dim, keepdim)

    def histc(self, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
        return OPS.histc(self, bins, min, max)

    def bincount(self, weights: Any = None, minlength: int = 0) -> Tensor:
        return OPS.bincount(self, weights, minlength)

    def cov(self, *, correction: int = 1, fweights: Any = None, aweights: Any = None) -> Tensor:
        return OPS.cov(self, correction=correction, fweights=fweights, aweights=aweights)

    def corrcoef(self) -> Tensor:
        return OPS.corrcoef(self)

    def argwhere(self) -> Tensor:
        """Indices of the non-zero entries, (count, ndim) int64 (computes the values)."""
        return self.nonzero()

    # -- more shapes and views -------------------------------------------------------------------------
    def ravel(self) -> Tensor:
        return self.reshape(-1)

    def rot90(self, k: int = 1, dims: Any = (0, 1)) -> Tensor:
        return OPS.rot90(self, k, dims)

    def fliplr(self) -> Tensor:
        return OPS.fliplr(self)

    def flipud(self) -> Tensor:
        return OPS.flipud(self)

    def hsplit(self, indices_or_sections: Any) -> tuple:
        return OPS.hsplit(self, indices_or_sections)

    def vsplit(self, indices_or_sections: Any) -> tuple:
        return OPS.vsplit(self, indices_or_sections)

    def dsplit(self, indices_or_sections: Any) -> tuple:
        return OPS.dsplit(self, indices_or_sections)

    def unfold(self, dimension: int, size: int, step: int) -> Tensor:
        """The windows of `size` entries every `step` along `dimension`, in a new last dim."""
        return OPS.unfold(self, dimension, size, step)

    def split_with_sizes(self, split_sizes: Any, dim: int = 0) -> tuple:
        return self.split(list(split_sizes), dim)

    def unsafe_split(self, split_size: Any, dim: int = 0) -> tuple:
        return self.split(split_size, dim)

    def unsafe_chunk(self, chunks: int, dim: int = 0) -> tuple:
        return self.chunk(chunks, dim)

    unsafe_split_with_sizes = split_with_sizes

    def narrow_copy(self, dim: int, start: int, length: int) -> Tensor:
        """`narrow`, as a new tensor (not a view)."""
        return OPS.identity(self.narrow(dim, start, length))

    def sum_to_size(self, *size: Any) -> Tensor:
        """Sum the dims that broadcasting `size` to self's shape expanded (the reverse of `expand`)."""
        size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], tuple | list) else tuple(size)
        lead = self.ndim - len(size)
        if lead < 0 or any(s not in (1, n) for s, n in zip(size, self.shape[lead:], strict=True)):
            raise RuntimeError(f"sum_to_size: size {list(size)} is not expandable to size {list(self.shape)}")
        out = self.sum(tuple(range(lead))) if lead else self
        dims = tuple(i for i, (s, n) in enumerate(zip(size, out.shape, strict=True)) if s == 1 and n != 1)
        return out.sum(dims, keepdim=True) if dims else out

    @property
    def H(self) -> Tensor:  # noqa: N802
        """The (conjugate) transpose of a 2-D tensor."""
        if self.ndim != 2:
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors), got shape {self.shape}")
        return self.transpose(0, 1)

    @property
    def mH(self) -> Tensor:  # noqa: N802
        return self.transpose(-2, -1)

    def adjoint(self) -> Tensor:
        """The (conjugate) transpose of the last two dims."""
        return self.transpose(-2, -1)

    # -- more indexing -----------------------------------------------------------------------------------
    def take(self, index: Any) -> Tensor:
        """Entries of the flattened tensor at `index` (negative from the end), of index's shape."""
        return OPS.take(self, index)

    def put(self, index: Any, source: Any, accumulate: bool = False) -> Tensor:
        """A copy of self with `source` written (added, with `accumulate`) at the flat `index`."""
        n = builtins.max(self.numel(), 1)
        flat_index = OPS.remainder(OPS.reshape(_as_tensor(index), (-1,)), n)  # negatives from the end
        flat_source = OPS.reshape(OPS.cast(_as_tensor(source), self.dtype), (-1,))
        scatter = OPS.scatter_add if accumulate else OPS.scatter
        return OPS.reshape(scatter(OPS.reshape(self, (-1,)), 0, flat_index, flat_source), self.shape)

    def index_put(self, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
        """A copy of self with `self[indices] = values` (added, with `accumulate`)."""
        index = tuple(indices)
        return OPS.at(self)[index].add(values) if accumulate else OPS.setitem(self, index, values)

    def index_add(self, dim: int, index: Any, source: Any, *, alpha: Any = 1) -> Tensor:
        return OPS.index_add(self, dim, index, source, alpha=alpha)

    def index_reduce(self, dim: int, index: Any, source: Any, reduce: str, *, include_self: bool = True) -> Tensor:
        return OPS.index_reduce(self, dim, index, source, reduce, include_self=include_self)

    def index_copy(self, dim: int, index: Any, source: Any) -> Tensor:
        return OPS.index_copy(self, dim, index, source)

    def index_fill(self, dim: int, index: Any, value: Any) -> Tensor:
        return OPS.index_fill(self, dim, index, value)

    def scatter_reduce(self, dim: int, index: Any, src: Any, reduce: str, *, include_self: bool = True) -> Tensor:
        return OPS.scatter_reduce(self, dim, index, src, reduce, include_self=include_self)

    def masked_scatter(self, mask: Any, source: Any) -> Tensor:
        return OPS.masked_scatter(self, mask, source)

    def select_scatter(self, src: Any, dim: int, index: int) -> Tensor:
        return OPS.select_scatter(self, src, dim, index)

    def slice_scatter(
        self, src: Any, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1
    ) -> Tensor:
        return OPS.slice_scatter(self, src, dim, start, end, step)

    def diagonal_scatter(self, src: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        return OPS.diagonal_scatter(self, src, offset, dim1, dim2)

    # -- random draws shaped like this tensor ------------------------------------------------------------
    def bernoulli(self, p: float | None = None) -> Tensor:
        """0/1 draws: with probabilities self (torch's `input.bernoulli()`), or `p` for every entry."""
        if p is None:
            return OPS.bernoulli(self)
        return OPS.cast(OPS.bernoulli(float(p), self.shape), self.dtype)

    # -- dtype conversions and metadata ----------------------------------------------------------------
    def bfloat16(self) -> Tensor:
        return OPS.cast(self, _dt.bfloat16)

    def byte(self) -> Tensor:
        """uint8 is not a nabla dtype: raises TypeError naming the supported ones."""
        return OPS.cast(self, _dt.DType.uint8)

    def char(self) -> Tensor:
        """int8 is not a nabla dtype: raises TypeError naming the supported ones."""
        return OPS.cast(self, _dt.DType.int8)

    def short(self) -> Tensor:
        """int16 is not a nabla dtype: raises TypeError naming the supported ones."""
        return OPS.cast(self, _dt.DType.int16)

    def is_signed(self) -> bool:
        """Whether the dtype can hold negative values (all but bool)."""
        return self.dtype != _dt.bool_ and self.dtype != _dt.uint64

    def is_same_size(self, other: Any) -> bool:
        return tuple(self.shape) == tuple(other.shape)

    def is_nonzero(self) -> bool:
        """The truth value of a one-element tensor (computes it)."""
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self.numel()} elements is ambiguous")
        return builtins.bool(self.item())

    @property
    def is_cpu(self) -> bool:
        return not self.device.is_accelerator

    def get_device(self) -> int:
        """The accelerator's index, or -1 on the CPU (PyTorch's convention)."""
        return self.device.index if self.device.is_accelerator else -1

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.size_in_bytes

    @property
    def nbytes(self) -> int:
        """Bytes of all elements."""
        return self.numel() * self.dtype.size_in_bytes


def all_if_empty(dim: Any) -> Any:
    """PyTorch's dim=() or dim=[] reduces every dim (None); NumPy's axis=() reduces none."""
    return None if isinstance(dim, tuple | list) and not dim else dim


def _scaled(other: Any, alpha: Any) -> Any:
    """alpha * other (torch's `alpha=`): a Python product for numbers, an op for tensors."""
    if alpha == 1:
        return other
    return OPS.mul(other, alpha) if hasattr(other, "_impl") else other * alpha


def _pick(values: Any, indices: Any, dim: int, k: int, keepdim: bool, ndim: int) -> tuple:
    """Entry k along `dim` of (values, indices), keeping the dim as size 1 with `keepdim`."""
    d = dim % builtins.max(ndim, 1)
    index = (slice(None),) * d + ((slice(k, k + 1),) if keepdim else (k,))
    if ndim == 0:
        return ValuesIndices(values.reshape(()), indices.reshape(()))
    return ValuesIndices(values[index], indices[index])


_TriangularSolveResult = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])


def _slot(t: Any, name: str) -> dict:
    """The hook dict in slot `name` of `t`, made on first use (unset slots cost nothing per tensor)."""
    hooks = getattr(t, name, None)
    if hooks is None:
        hooks = {}
        setattr(t, name, hooks)
    return hooks


def _as_tensor(value: Any) -> Any:
    return value if hasattr(value, "_impl") else OPS.tensor(value)


def _src_or_value(src: Any, value: Any, what: str) -> Any:
    """scatter's `src` (a tensor) or `value=` (a number): exactly one."""
    if (src is None) == (value is None):
        raise TypeError(f"{what}: pass exactly one of src and value")
    return value if src is None else src

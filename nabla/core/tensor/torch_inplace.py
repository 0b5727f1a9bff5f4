"""torch.Tensor's in-place methods (`x.abs_()`, `x.eq_(y)`, `x.index_add_(...)`, `x.unsqueeze_(0)`,
random fills such as `x.uniform_()`): a mixin of `Tensor`, beside `TorchMethods`.

Each is a functional update under the hood, through Tensor's `_in_place` (the op's result, cast
to self's dtype; a result of a higher dtype category is an error, as in PyTorch), `_restride`
(a shape change: self becomes a view of its old value) or `_replace_impl` (a new value, such as
a random draw). Views write through to their base.
"""

from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..common import dtypes as _dt
from .dispatch import OPS
from .torch_methods import TorchMethods, _src_or_value

if TYPE_CHECKING:  # annotations only: tensor.py imports this module
    from .tensor import Tensor


class TorchInPlace:
    """torch.Tensor's in-place variants (mixed into `Tensor`)."""

    __slots__ = ()

    # -- in-place variants: `self = op(self, ...)`, through `_in_place` (views write through; a
    # result of a higher dtype category than self's is an error; others are cast to self's dtype,
    # so `x.eq_(y)` writes 1.0 / 0.0 into a float x, as PyTorch) ------------------------------------
    def abs_(self) -> Tensor:
        return self._in_place("abs_", OPS.abs)

    absolute_ = abs_

    def neg_(self) -> Tensor:
        return self._in_place("neg_", OPS.neg)

    negative_ = neg_

    def sign_(self) -> Tensor:
        return self._in_place("sign_", OPS.sign)

    sgn_ = sign_

    def floor_(self) -> Tensor:
        return self._in_place("floor_", OPS.floor)

    def ceil_(self) -> Tensor:
        return self._in_place("ceil_", OPS.ceil)

    def trunc_(self) -> Tensor:
        return self._in_place("trunc_", OPS.trunc)

    fix_ = trunc_

    def round_(self, decimals: int = 0) -> Tensor:
        return self._in_place("round_", OPS.round, decimals)

    def frac_(self) -> Tensor:
        return self._in_place("frac_", TorchMethods.frac)

    def exp_(self) -> Tensor:
        return self._in_place("exp_", OPS.exp)

    def exp2_(self) -> Tensor:
        return self._in_place("exp2_", OPS.exp2)

    def expm1_(self) -> Tensor:
        return self._in_place("expm1_", OPS.expm1)

    def log_(self) -> Tensor:
        return self._in_place("log_", OPS.log)

    def log2_(self) -> Tensor:
        return self._in_place("log2_", OPS.log2)

    def log10_(self) -> Tensor:
        return self._in_place("log10_", OPS.log10)

    def log1p_(self) -> Tensor:
        return self._in_place("log1p_", OPS.log1p)

    def sqrt_(self) -> Tensor:
        return self._in_place("sqrt_", OPS.sqrt)

    def rsqrt_(self) -> Tensor:
        return self._in_place("rsqrt_", OPS.rsqrt)

    def square_(self) -> Tensor:
        return self._in_place("square_", OPS.square)

    def reciprocal_(self) -> Tensor:
        return self._in_place("reciprocal_", OPS.reciprocal)

    def sin_(self) -> Tensor:
        return self._in_place("sin_", OPS.sin)

    def cos_(self) -> Tensor:
        return self._in_place("cos_", OPS.cos)

    def tan_(self) -> Tensor:
        return self._in_place("tan_", OPS.tan)

    def sinh_(self) -> Tensor:
        return self._in_place("sinh_", OPS.sinh)

    def cosh_(self) -> Tensor:
        return self._in_place("cosh_", OPS.cosh)

    def tanh_(self) -> Tensor:
        return self._in_place("tanh_", OPS.tanh)

    def asin_(self) -> Tensor:
        return self._in_place("asin_", OPS.asin)

    def acos_(self) -> Tensor:
        return self._in_place("acos_", OPS.acos)

    def atan_(self) -> Tensor:
        return self._in_place("atan_", OPS.atan)

    arcsin_, arccos_, arctan_ = asin_, acos_, atan_

    def asinh_(self) -> Tensor:
        return self._in_place("asinh_", OPS.asinh)

    def acosh_(self) -> Tensor:
        return self._in_place("acosh_", OPS.acosh)

    def atanh_(self) -> Tensor:
        return self._in_place("atanh_", OPS.atanh)

    arcsinh_, arccosh_, arctanh_ = asinh_, acosh_, atanh_

    def sigmoid_(self) -> Tensor:
        return self._in_place("sigmoid_", OPS.sigmoid)

    def relu_(self) -> Tensor:
        return self._in_place("relu_", OPS.relu)

    def erf_(self) -> Tensor:
        return self._in_place("erf_", OPS.erf)

    def erfc_(self) -> Tensor:
        return self._in_place("erfc_", OPS.erfc)

    def sinc_(self) -> Tensor:
        return self._in_place("sinc_", OPS.sinc)

    def deg2rad_(self) -> Tensor:
        return self._in_place("deg2rad_", OPS.deg2rad)

    def rad2deg_(self) -> Tensor:
        return self._in_place("rad2deg_", OPS.rad2deg)

    def i0_(self) -> Tensor:
        return self._in_place("i0_", OPS.i0)

    def lgamma_(self) -> Tensor:
        return self._in_place("lgamma_", OPS.lgamma)

    def digamma_(self) -> Tensor:
        return self._in_place("digamma_", OPS.digamma)

    def polygamma_(self, n: int) -> Tensor:
        return self._in_place("polygamma_", lambda x: OPS.polygamma(n, x))

    def mvlgamma_(self, p: int) -> Tensor:
        return self._in_place("mvlgamma_", OPS.mvlgamma, p)

    def erfinv_(self) -> Tensor:
        return self._in_place("erfinv_", OPS.erfinv)

    def index_reduce_(self, dim: int, index: Any, source: Any, reduce: str, *, include_self: bool = True) -> Tensor:
        return self._in_place("index_reduce_", OPS.index_reduce, dim, index, source, reduce, include_self=include_self)

    def addmm_(self, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        return self._in_place("addmm_", OPS.addmm, mat1, mat2, beta=beta, alpha=alpha)

    def addmv_(self, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        return self._in_place("addmv_", OPS.addmv, mat, vec, beta=beta, alpha=alpha)

    def addr_(self, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        return self._in_place("addr_", OPS.addr, vec1, vec2, beta=beta, alpha=alpha)

    def addbmm_(self, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        return self._in_place("addbmm_", OPS.addbmm, batch1, batch2, beta=beta, alpha=alpha)

    def baddbmm_(self, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        return self._in_place("baddbmm_", OPS.baddbmm, batch1, batch2, beta=beta, alpha=alpha)

    def logit_(self, eps: float | None = None) -> Tensor:
        return self._in_place("logit_", OPS.logit, eps)

    def nan_to_num_(self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
        return self._in_place("nan_to_num_", OPS.nan_to_num, nan, posinf, neginf)

    def clamp_min_(self, min: Any) -> Tensor:  # noqa: A002
        return self._in_place("clamp_min_", OPS.clamp, min, None)

    def clamp_max_(self, max: Any) -> Tensor:  # noqa: A002
        return self._in_place("clamp_max_", OPS.clamp, None, max)

    def clip_(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        return self._in_place("clip_", OPS.clamp, min, max)

    def logical_not_(self) -> Tensor:
        return self._in_place("logical_not_", OPS.logical_not)

    def bitwise_not_(self) -> Tensor:
        return self._in_place("bitwise_not_", OPS.bitwise_not)

    def pow_(self, exponent: Any) -> Tensor:
        return self._in_place("pow_", OPS.pow, exponent)

    def float_power_(self, exponent: Any) -> Tensor:
        """In place: self ** exponent in float64, so self must be float64 (as PyTorch)."""
        if self.dtype != _dt.float64:
            raise RuntimeError(
                f"float_power_: the base has dtype {self.dtype.name} but the operation's result requires dtype float64"
            )
        return self._in_place("float_power_", OPS.float_power, exponent)

    def remainder_(self, other: Any) -> Tensor:
        return self._in_place("remainder_", OPS.remainder, other)

    def fmod_(self, other: Any) -> Tensor:
        return self._in_place("fmod_", OPS.fmod, other)

    def floor_divide_(self, other: Any) -> Tensor:
        return self._in_place("floor_divide_", OPS.floor_divide, other)

    def true_divide_(self, other: Any) -> Tensor:
        return self._in_place("true_divide_", OPS.div, other)

    def divide_(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        return self.div_(other, rounding_mode=rounding_mode)

    def multiply_(self, other: Any) -> Tensor:
        return self.mul_(other)

    def subtract_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return self.sub_(other, alpha=alpha)

    def atan2_(self, other: Any) -> Tensor:
        return self._in_place("atan2_", OPS.atan2, other)

    arctan2_ = atan2_

    def hypot_(self, other: Any) -> Tensor:
        return self._in_place("hypot_", OPS.hypot, other)

    def copysign_(self, other: Any) -> Tensor:
        return self._in_place("copysign_", OPS.copysign, other)

    def heaviside_(self, values: Any) -> Tensor:
        return self._in_place("heaviside_", OPS.heaviside, values)

    def xlogy_(self, other: Any) -> Tensor:
        return self._in_place("xlogy_", OPS.xlogy, other)

    def nextafter_(self, other: Any) -> Tensor:
        return self._in_place("nextafter_", OPS.nextafter, other)

    def bitwise_left_shift_(self, other: Any) -> Tensor:
        return self._in_place("bitwise_left_shift_", OPS.bitwise_left_shift, other)

    def bitwise_right_shift_(self, other: Any) -> Tensor:
        return self._in_place("bitwise_right_shift_", OPS.bitwise_right_shift, other)

    def ldexp_(self, other: Any) -> Tensor:
        return self._in_place("ldexp_", OPS.ldexp, other)

    def gcd_(self, other: Any) -> Tensor:
        return self._in_place("gcd_", OPS.gcd, other)

    def lcm_(self, other: Any) -> Tensor:
        return self._in_place("lcm_", OPS.lcm, other)

    def lerp_(self, end: Any, weight: Any) -> Tensor:
        return self._in_place("lerp_", TorchMethods.lerp, end, weight)

    def addcmul_(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        return self._in_place("addcmul_", OPS.addcmul, tensor1, tensor2, value)

    def addcdiv_(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        return self._in_place("addcdiv_", OPS.addcdiv, tensor1, tensor2, value)

    def eq_(self, other: Any) -> Tensor:
        return self._in_place("eq_", OPS.equal, other)

    def ne_(self, other: Any) -> Tensor:
        return self._in_place("ne_", OPS.not_equal, other)

    def lt_(self, other: Any) -> Tensor:
        return self._in_place("lt_", OPS.less, other)

    def le_(self, other: Any) -> Tensor:
        return self._in_place("le_", OPS.less_equal, other)

    def gt_(self, other: Any) -> Tensor:
        return self._in_place("gt_", OPS.greater, other)

    def ge_(self, other: Any) -> Tensor:
        return self._in_place("ge_", OPS.greater_equal, other)

    not_equal_, less_, less_equal_, greater_, greater_equal_ = ne_, lt_, le_, gt_, ge_

    def logical_and_(self, other: Any) -> Tensor:
        return self._in_place("logical_and_", OPS.logical_and, other)

    def logical_or_(self, other: Any) -> Tensor:
        return self._in_place("logical_or_", OPS.logical_or, other)

    def logical_xor_(self, other: Any) -> Tensor:
        return self._in_place("logical_xor_", OPS.logical_xor, other)

    def bitwise_and_(self, other: Any) -> Tensor:
        return self._in_place("bitwise_and_", OPS.bitwise_and, other)

    def bitwise_or_(self, other: Any) -> Tensor:
        return self._in_place("bitwise_or_", OPS.bitwise_or, other)

    def bitwise_xor_(self, other: Any) -> Tensor:
        return self._in_place("bitwise_xor_", OPS.bitwise_xor, other)

    def cumsum_(self, dim: int) -> Tensor:
        return self._in_place("cumsum_", OPS.cumsum, dim)

    def cumprod_(self, dim: int) -> Tensor:
        return self._in_place("cumprod_", OPS.cumprod, dim)

    def tril_(self, diagonal: int = 0) -> Tensor:
        return self._in_place("tril_", OPS.tril, diagonal)

    def triu_(self, diagonal: int = 0) -> Tensor:
        return self._in_place("triu_", OPS.triu, diagonal)

    def renorm_(self, p: float, dim: int, maxnorm: float) -> Tensor:
        return self._in_place("renorm_", OPS.renorm, p, dim, maxnorm)

    def scatter_(
        self, dim: int, index: Any, src: Any = None, *, value: Any = None, reduce: str | None = None
    ) -> Tensor:
        return self._in_place("scatter_", OPS.scatter, dim, index, _src_or_value(src, value, "scatter_"), reduce)

    def scatter_add_(self, dim: int, index: Any, src: Any) -> Tensor:
        return self._in_place("scatter_add_", OPS.scatter_add, dim, index, src)

    def scatter_reduce_(self, dim: int, index: Any, src: Any, reduce: str, *, include_self: bool = True) -> Tensor:
        return self._in_place("scatter_reduce_", OPS.scatter_reduce, dim, index, src, reduce, include_self=include_self)

    def index_add_(self, dim: int, index: Any, source: Any, *, alpha: Any = 1) -> Tensor:
        return self._in_place("index_add_", OPS.index_add, dim, index, source, alpha=alpha)

    def index_copy_(self, dim: int, index: Any, source: Any) -> Tensor:
        return self._in_place("index_copy_", OPS.index_copy, dim, index, source)

    def index_fill_(self, dim: int, index: Any, value: Any) -> Tensor:
        return self._in_place("index_fill_", OPS.index_fill, dim, index, value)

    def index_put_(self, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
        return self._in_place("index_put_", TorchMethods.index_put, indices, values, accumulate)

    def put_(self, index: Any, source: Any, accumulate: bool = False) -> Tensor:
        return self._in_place("put_", TorchMethods.put, index, source, accumulate)

    def masked_scatter_(self, mask: Any, source: Any) -> Tensor:
        return self._in_place("masked_scatter_", OPS.masked_scatter, mask, source)

    def fill_diagonal_(self, fill_value: Any, wrap: bool = False) -> Tensor:
        """Fill the main diagonal (every index equal) with `fill_value`; a tall 2-D matrix's
        diagonal restarts below each square block with `wrap`, as PyTorch's."""
        if self.ndim < 2 or (self.ndim > 2 and len(set(self.shape)) != 1):
            raise RuntimeError(f"fill_diagonal_: dimensions must be >= 2 and all of one length, got {self.shape}")
        mask = np.zeros(self.numel(), bool)
        stride = builtins.sum(math.prod(self.shape[d + 1 :]) for d in range(self.ndim))  # (i, i, ..., i)
        mask[0 : self.numel() if wrap and self.ndim == 2 else builtins.min(self.shape) * stride : stride] = True
        return self._in_place("fill_diagonal_", OPS.masked_fill, OPS.tensor(mask.reshape(self.shape)), fill_value)

    # shape-changing in-place ops: self becomes a view of its old value (PyTorch changes only the
    # view's metadata; storage, and a view's base, stay as they are)
    def squeeze_(self, dim: Any = None) -> Tensor:
        return self._restride("squeeze_", "reshape", OPS.squeeze(self, dim).shape)

    def unsqueeze_(self, dim: int) -> Tensor:
        return self._restride("unsqueeze_", "reshape", OPS.unsqueeze(self, dim).shape)

    def t_(self) -> Tensor:
        if self.ndim > 2:
            raise ValueError(f"t_() expects a tensor with <= 2 dimensions, got shape {self.shape}")
        return self if self.ndim < 2 else self.transpose_(0, 1)

    def transpose_(self, dim0: int, dim1: int) -> Tensor:
        perm = list(range(self.ndim))
        a, b = dim0 % builtins.max(self.ndim, 1), dim1 % builtins.max(self.ndim, 1)
        if self.ndim:
            perm[a], perm[b] = perm[b], perm[a]
        return self._restride("transpose_", "permute", tuple(perm))

    swapaxes_ = swapdims_ = transpose_

    def detach_(self) -> Tensor:
        """Cut this tensor from autodiff in place: it becomes a leaf that does not require grad."""
        if self._is_view():
            raise RuntimeError("detach_: can't detach views in-place; use detach() instead")
        self._install(OPS.detach(self)._impl)
        self._impl.requires_grad = False
        self._impl.facade = None
        return self

    # random fills (outside autodiff: a leaf that requires grad keeps doing so, under no_grad)
    # (each takes torch's `generator=`: a nabla.Generator, or None for the global one)
    def uniform_(self, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Tensor:
        if _is_number(a) and _is_number(b) and a > b:
            raise ValueError(f"uniform_: expects a range [a, b) with a <= b, got a={a} > b={b}")
        return self._replace_impl(OPS.uniform(self.shape, a, b, dtype=self.dtype, generator=generator), "uniform_")

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
        draw = OPS.normal(self.shape, mean, std, dtype=self.dtype, generator=generator)
        return self._replace_impl(draw, "normal_")

    def bernoulli_(self, p: Any = 0.5, *, generator: Any = None) -> Tensor:
        """0/1 draws, 1 with probability `p` (a number, or a tensor broadcast to self's shape)."""
        if hasattr(p, "_impl"):
            OPS._check_probabilities(p, "bernoulli_")
            draw = OPS.bernoulli(OPS.broadcast_to(OPS.cast(p, _dt.float32), self.shape), generator=generator)
        else:
            if _is_number(p) and not 0.0 <= p <= 1.0:
                raise ValueError(f"bernoulli_: p must be a probability in [0, 1], got p={p}")
            draw = OPS.bernoulli(float(p), self.shape, generator=generator)
        return self._replace_impl(OPS.cast(draw, self.dtype), "bernoulli_")

    def exponential_(self, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
        if _is_number(lambd) and not lambd > 0:  # (nan too; inf gives zeros, as torch)
            raise ValueError(f"exponential_: lambd must be positive, got lambd={lambd}")
        u = OPS.uniform(self.shape, 0.0, 1.0, dtype=self.dtype, generator=generator)
        return self._replace_impl(OPS.div(OPS.neg(OPS.log1p(OPS.neg(u))), lambd), "exponential_")

    def geometric_(self, p: float, *, generator: Any = None) -> Tensor:
        """The number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
        if not _is_number(p) or not 0 < p < 1:
            raise ValueError(f"geometric_: p must be a probability in (0, 1), got p={p!r}")
        u = OPS.uniform(self.shape, 0.0, 1.0, dtype=_dt.float64, generator=generator)
        k = OPS.ceil(OPS.div(OPS.log1p(OPS.neg(u)), math.log1p(-p)))
        return self._replace_impl(OPS.cast(OPS.maximum(k, 1.0), self.dtype), "geometric_")

    def log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator: Any = None) -> Tensor:
        if _is_number(std) and not std > 0:
            raise ValueError(f"log_normal_: std must be positive, got std={std}")
        draw = OPS.normal(self.shape, mean, std, dtype=self.dtype, generator=generator)
        return self._replace_impl(OPS.exp(draw), "log_normal_")

    def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator: Any = None) -> Tensor:
        if _is_number(sigma) and not sigma > 0:
            raise ValueError(f"cauchy_: sigma must be positive, got sigma={sigma}")
        u = OPS.uniform(self.shape, 0.0, 1.0, dtype=self.dtype, generator=generator)
        return self._replace_impl(
            OPS.add(OPS.mul(OPS.tan(OPS.mul(OPS.sub(u, 0.5), math.pi)), sigma), median), "cauchy_"
        )

    def random_(self, from_: int = 0, to: int | None = None, *, generator: Any = None) -> Tensor:
        """Uniform integers in [from_, to) (`random_(to)`: [0, to); no bound: [0, the dtype's
        largest exactly representable integer]). [from_, to) must fit in the dtype, as torch checks."""
        low, high = (0, from_) if to is None and from_ != 0 else (from_, to)
        if high is None:
            if _dt.is_integer(self.dtype):  # (at most 2**53: draws are made through float64)
                high = builtins.min(int(np.iinfo(_dt.to_numpy_dtype(self.dtype)).max), 2**53) + 1
            else:
                high = {_dt.float16: 2**11, _dt.bfloat16: 2**8, _dt.float32: 2**24}.get(self.dtype, 2**53) + 1
        low, high = int(low), int(high)
        if high <= low:
            raise ValueError(f"random_: expects from to be less than to, got from={low} >= to={high}")
        if self.dtype != _dt.bool_:
            OPS._randint_bounds(low, high, self.dtype, "random_", ("from_", "to"))
        draw = OPS.randint(low, high, self.shape, dtype=self.dtype, generator=generator)
        return self._replace_impl(draw, "random_")


def _is_number(value: Any) -> bool:
    """A Python or NumPy real number (not a bool), whose value a fill method checks at once."""
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)

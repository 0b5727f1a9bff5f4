"""PyTorch's Tensor methods that are other methods or ops under another name or argument
convention (`x.t()`, `x.add(y, alpha=2)`, `x.new_zeros(3)`, `x.eq(y)`, `x.narrow(0, 1, 2)`):
a mixin of `Tensor`, so code written for torch.Tensor runs unchanged. Each is a line or two over
the op library (reached through the dispatch table) and Tensor's own methods. The elementwise
and linear-algebra methods (`x.exp()`, `x.maximum(y)`, `x.det()`: the ops of the same name) are
a mixin of their own, in `torch_math.py`; the in-place variants (`x.abs_()`, `x.eq_(y)`,
`x.unsqueeze_(0)`, `x.uniform_()`) another, in `torch_inplace.py`. Also torch's gradient-hook
registration (`register_hook`), whose hooks the autograd engine runs.
"""

from __future__ import annotations

import builtins
import math
import operator
import weakref
from collections import namedtuple
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..common import dtypes as _dt
from ..common.hooks import RemovableHandle, add_hook
from .dispatch import OPS
from .impl import GRAD_HOOKS
from .strides import is_contiguous, layout_of
from .views import storage_owner

if TYPE_CHECKING:  # annotations only: tensor.py imports this module
    from .tensor import Tensor

# What max(dim) / min(dim) / kthvalue / median(dim) return, as torch's return_types.
ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])


def _dim(dim: Any, ndim: int, op: str) -> int:
    """`dim` as an axis in [0, ndim) (a Python int argument of nabla.compile is specialized on,
    through `operator.index`)."""
    d, n = operator.index(dim), builtins.max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


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
        GRAD_HOOKS.added()
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
        GRAD_HOOKS.added(post=True)
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
            if not _dt.is_float(self.dtype):
                return median
            nan = OPS.isnan(flat)
            has_nan = nan.any()  # the derivative is shared by the tied elements, or by the nans
            ties = OPS.where(has_nan, nan, OPS.equal(flat, OPS.detach(median)))
            return OPS.evenly_differentiated(flat, OPS.where(has_nan, math.nan, median), ties)
        n = self.shape[dim] if self.ndim else 1
        values, indices = self.kthvalue((n + 1) // 2, dim, keepdim)
        if not _dt.is_float(self.dtype):
            return ValuesIndices(values, indices)
        nan = OPS.isnan(self)
        has_nan = nan.any(dim, keepdim)
        first_nan = OPS.argmax(OPS.cast(nan, _dt.int32), dim, True)
        at_nan = OPS.take_along_dim(self, first_nan, dim)  # (the nan, with its derivative)
        if not keepdim:
            at_nan, first_nan = at_nan.squeeze(dim), first_nan.squeeze(dim)
        return ValuesIndices(OPS.where(has_nan, at_nan, values), OPS.where(has_nan, first_nan, indices))

    def diff(self, n: int = 1, dim: int = -1) -> Any:
        """Differences of neighbours along `dim`, n times (torch.diff without prepend/append)."""
        out = self
        for _ in range(n):
            d = _dim(dim, out.ndim, "diff")
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
        idx = np.nonzero(np.atleast_1d(self.numpy()))  # (a 0-d tensor reads as one element, as torch)
        if self.ndim == 0:
            return (
                (OPS.tensor(idx[0].astype(np.int64)),) if as_tuple else OPS.tensor(np.zeros((len(idx[0]), 0), np.int64))
            )
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
        d = _dim(dim, self.ndim, "narrow")
        start = start % self.shape[d] if start < 0 else start
        if length < 0 or start + length > self.shape[d]:
            raise IndexError(f"narrow: start {start} + length {length} exceeds dimension {dim} of size {self.shape[d]}")
        return self[(slice(None),) * d + (slice(start, start + length),)]

    def select(self, dim: int, index: int) -> Any:
        """The slice at `index` along `dim`, which is removed (a view)."""
        return self[(slice(None),) * _dim(dim, self.ndim, "select") + (index,)]

    def swapdims(self, dim0: int, dim1: int) -> Any:
        return self.swapaxes(dim0, dim1)

    def view_as(self, other: Any) -> Any:
        return self.view(tuple(other.shape))

    def reshape_as(self, other: Any) -> Any:
        return self.reshape(tuple(other.shape))

    def type_as(self, other: Any) -> Any:
        return OPS.cast(self, other.dtype)

    def contiguous(self, memory_format: Any = None) -> Any:
        """Self, unless self is a view PyTorch lays out non-contiguously (a transpose, a strided
        slice, a diagonal): then a copy, so in-place ops on it leave the viewed tensor alone."""
        return self if getattr(self, "_view", None) is None or self.is_contiguous() else OPS.identity(self)

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether PyTorch's strides for this tensor are row-major (see `strides.py`)."""
        return is_contiguous(*layout_of(self))

    def stride(self, dim: int | None = None) -> Any:
        """PyTorch's strides in elements: row-major, except for views taken by a transpose,
        slice, diagonal or unfold, which have their base's."""
        strides = layout_of(self)[1]
        return strides if dim is None else strides[dim]

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

    def new(self, *args: Any) -> Any:
        """torch's legacy `x.new(*sizes)` (an uninitialized tensor of x's dtype: zeros here),
        `x.new(sequence)` (data in x's dtype) or `x.new()` (empty)."""
        if not args:
            return self.new_zeros(0)
        if len(args) == 1 and not isinstance(args[0], int) and not _is_size(args[0]):
            return self.new_tensor(args[0])
        return self.new_zeros(*args)

    def pin_memory(self) -> Any:
        """torch's page-locked copy for faster host-to-GPU transfers: this tensor (MAX copies
        host buffers to the device itself)."""
        return self

    def is_pinned(self) -> bool:
        return False

    # -- torch.sparse's layout methods: nabla stores every tensor dense (see nabla/sparse.py) --
    def to_dense(self, dtype: Any = None) -> Tensor:
        """This tensor (already dense), in `dtype` if given."""
        return self if dtype is None else self.to(dtype)

    def to_sparse(self, *args: Any, **kwargs: Any) -> Any:
        """This tensor: nabla has no sparse layout, and `nabla.sparse.mm` takes it as it is."""
        return self

    def coalesce(self) -> Any:
        return self

    @property
    def is_sparse(self) -> bool:
        return False

    def data_ptr(self) -> int:
        """An int naming this tensor's storage, for identity checks (torch's address of the
        first element): a tensor and its views (`x[0]`, `x.T`, `x.view(...)`, `.data`,
        `detach()`: the views whose in-place writes reach `x`) give the same number, distinct
        tensors different ones, an empty tensor 0. It is no address: nabla's values live in
        the graph engine (and views have no byte offset), so it cannot be dereferenced.

        Example:
            >>> x = nabla.zeros(2, 3)
            >>> x.T.data_ptr() == x.data_ptr() != x.clone().data_ptr()
            True
        """
        if self.numel() == 0:
            return 0
        owner, generation = storage_owner(self)
        return (generation << 48) | id(owner)  # (CPython ids are below 2**48; `.data =` starts a new storage)

    def share_memory_(self) -> Any:
        """torch's move to shared memory for other processes: self unchanged (nabla runs in
        one process; a DataLoader loads in it)."""
        return self

    def is_shared(self) -> bool:
        """Whether the storage is in shared memory: never (see `share_memory_`)."""
        return False

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
        flat_index = OPS.reshape(OPS.index_from_end(_as_tensor(index), self.numel(), "put", 0), (-1,))
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


def _is_size(value: Any) -> bool:
    """A shape given as one argument (`x.new(x.size())`: nabla's `size()` is a tuple, so a
    tuple of ints is a size here, where torch reads a plain tuple as data), not data."""
    return isinstance(value, tuple) and all(isinstance(v, int) for v in value)

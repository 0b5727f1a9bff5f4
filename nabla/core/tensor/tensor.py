"""Tensor: the user-facing facade. It holds only `_impl` (the state) and `.grad`.

Every method delegates: data access goes to the graph engine, math goes to ops through the
dispatch table (`OPS`), `backward` goes to the autograd engine.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
from max.dtype import DType

from ..common import dtypes as _dt
from ..common.context import is_grad_enabled
from ..graph.engine import GRAPH
from ..graph.executors import storage_to_numpy
from .dispatch import OPS
from .impl import Device, TensorImpl


def _axis_arg(dim: Any, axis: Any, what: str) -> Any:
    """Accept PyTorch's `dim=` and NumPy's `axis=` (not both)."""
    if dim is not None and axis is not None:
        raise TypeError(f"{what}: pass either dim= or axis=, not both")
    return dim if dim is not None else axis


class Tensor:
    """An n-dimensional array with lazy evaluation and autodiff.

    Operations return immediately with shape and dtype known; values are computed (as one
    compiled graph for everything pending) when you ask for data: `.numpy()`, `.item()`,
    `print(t)`.

    Example:
        >>> x = nabla.tensor([[1.0, 2.0]], requires_grad=True)
        >>> y = (x * x).sum()
        >>> y.backward()
        >>> x.grad.numpy()
        array([[2., 4.]], dtype=float32)
    """

    __slots__ = ("_impl", "_grad", "__weakref__")
    __array_priority__ = 1000  # NumPy defers `ndarray + Tensor` to us

    def __init__(self, impl: TensorImpl) -> None:
        self._impl = impl
        self._grad: Tensor | None = None
        if not impl.is_realized:
            GRAPH.add_unrealized(self)

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_numpy(cls, array: np.ndarray, *, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
        """Wrap a NumPy array as a realized tensor (copied if its dtype or layout must change)."""
        target = _dt.as_dtype(dtype) if dtype is not None else _dt.from_numpy_dtype(array.dtype)
        if target == _dt.bfloat16:
            return cls.from_numpy(array, dtype=_dt.float32).to(_dt.bfloat16).requires_grad_(requires_grad)
        storage = np.asarray(array, dtype=_dt.to_numpy_dtype(target), order="C")
        impl = TensorImpl(storage.shape, target, data=storage)
        return cls(impl).requires_grad_(requires_grad)

    # -- metadata (never evaluates) -------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._impl.logical_shape

    @property
    def dtype(self) -> DType:
        return self._impl.dtype

    @property
    def device(self) -> Device:
        return self._impl.device

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return self.ndim

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self.shape[dim]

    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    @property
    def is_realized(self) -> bool:
        return self._impl.is_realized

    # -- autodiff state -------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._impl.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Mark a leaf tensor as requiring gradients (in place, returns self)."""
        if not self._impl.is_leaf and not requires_grad and self._impl.requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables; use detach() for a non-leaf")
        if not self._impl.is_leaf:
            return self
        if requires_grad and not _dt.is_float(self.dtype):
            raise RuntimeError(
                f"only tensors of floating point dtype can require gradients, got dtype {self.dtype.name}"
            )
        self._impl.requires_grad = bool(requires_grad)
        self._impl.facade = weakref.ref(self) if requires_grad else None
        return self

    @property
    def is_leaf(self) -> bool:
        return self._impl.is_leaf

    @property
    def grad(self) -> Tensor | None:
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None and tuple(value.shape) != tuple(self.shape):
            raise RuntimeError(f"assigned grad has shape {value.shape}, tensor has shape {self.shape}")
        self._grad = value

    def detach(self) -> Tensor:
        """A tensor with the same value that is not part of any autodiff trace."""
        return OPS.detach(self)

    def backward(self, gradient: Tensor | None = None, retain_graph: bool = False, create_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into `.grad` of every leaf with `requires_grad=True`.

        Args:
            gradient: the cotangent; required unless self is a scalar.
            retain_graph: keep the trace so backward can run through it again.
            create_graph: record the backward ops, for higher-order gradients.
        """
        OPS.backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph)

    # -- data access (evaluates) ----------------------------------------------------------
    def realize(self) -> Tensor:
        """Compute this tensor (and everything else pending) now."""
        GRAPH.evaluate([self._impl])
        return self

    def numpy(self) -> np.ndarray:
        """The value as a NumPy array (shares memory with the tensor's buffer on CPU)."""
        self.realize()
        if self._impl.dtype == _dt.bfloat16:
            return OPS.cast(self, _dt.float32).numpy()
        array = storage_to_numpy(self._impl.data)
        if self._impl.batch_dims:
            raise RuntimeError("cannot read the value of a tensor inside vmap")
        return array

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)

    def item(self) -> Any:
        if self.numel() != 1:
            raise ValueError(f"item(): only one-element tensors can be converted, got shape {self.shape}")
        return self.numpy().reshape(()).item()

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if _dt.is_float(self.dtype) or self.dtype == _dt.bool_:
            raise TypeError("only integer tensors can be used as an index")
        return int(self.item())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(f"the truth value of a tensor with shape {self.shape} is ambiguous")
        return bool(self.item())

    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), separator=", ", prefix="Tensor(")
        extra = f", dtype={self.dtype.name}"
        if self.requires_grad:
            extra += ", requires_grad=True"
        return f"Tensor({body}{extra})"

    __hash__ = object.__hash__  # __eq__ is elementwise, identity hashing stays

    # -- arithmetic ----------------------------------------------------------------------
    def __add__(self, other: Any) -> Tensor:
        return OPS.add(self, other)

    def __radd__(self, other: Any) -> Tensor:
        return OPS.add(other, self)

    def __sub__(self, other: Any) -> Tensor:
        return OPS.sub(self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return OPS.sub(other, self)

    def __mul__(self, other: Any) -> Tensor:
        return OPS.mul(self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return OPS.mul(other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return OPS.div(self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return OPS.div(other, self)

    def __pow__(self, other: Any) -> Tensor:
        return OPS.pow(self, other)

    def __rpow__(self, other: Any) -> Tensor:
        return OPS.pow(other, self)

    def __matmul__(self, other: Any) -> Tensor:
        return OPS.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return OPS.matmul(other, self)

    def __neg__(self) -> Tensor:
        return OPS.neg(self)

    def __pos__(self) -> Tensor:
        return self

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return OPS.equal(self, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return OPS.not_equal(self, other)

    def __lt__(self, other: Any) -> Tensor:
        return OPS.less(self, other)

    def __le__(self, other: Any) -> Tensor:
        return OPS.less_equal(self, other)

    def __gt__(self, other: Any) -> Tensor:
        return OPS.greater(self, other)

    def __ge__(self, other: Any) -> Tensor:
        return OPS.greater_equal(self, other)

    # -- elementwise methods -------------------------------------------------------------
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

    # -- reductions (dim=/keepdim= as in PyTorch, axis=/keepdims= as in NumPy) -----------
    def sum(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None) -> Tensor:
        return OPS.sum(self, _axis_arg(dim, axis, "sum"), keepdims if keepdims is not None else keepdim)

    def mean(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None) -> Tensor:
        return OPS.mean(self, _axis_arg(dim, axis, "mean"), keepdims if keepdims is not None else keepdim)

    def max(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None) -> Any:
        """Without `dim`: the maximum. With `dim` (PyTorch): `(values, indices)`; with `axis`: values."""
        keep = keepdims if keepdims is not None else keepdim
        if dim is not None and not isinstance(dim, Tensor):
            return OPS.max_with_indices(self, dim, keep)
        if isinstance(dim, Tensor):
            return OPS.maximum(self, dim)
        return OPS.max(self, axis, keep)

    def min(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None) -> Any:
        """Without `dim`: the minimum. With `dim` (PyTorch): `(values, indices)`; with `axis`: values."""
        keep = keepdims if keepdims is not None else keepdim
        if dim is not None and not isinstance(dim, Tensor):
            return OPS.min_with_indices(self, dim, keep)
        if isinstance(dim, Tensor):
            return OPS.minimum(self, dim)
        return OPS.min(self, axis, keep)

    def argmax(
        self, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None
    ) -> Tensor:
        return OPS.argmax(self, _axis_arg(dim, axis, "argmax"), keepdims if keepdims is not None else keepdim)

    def argmin(
        self, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None
    ) -> Tensor:
        return OPS.argmin(self, _axis_arg(dim, axis, "argmin"), keepdims if keepdims is not None else keepdim)

    # -- shape methods -------------------------------------------------------------------
    def reshape(self, *shape: Any) -> Tensor:
        return OPS.reshape(self, shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape)

    def view(self, *shape: Any) -> Tensor:
        return self.reshape(*shape)

    def flatten(self) -> Tensor:
        return OPS.reshape(self, (-1,))

    def transpose(self, dim0: int = -2, dim1: int = -1) -> Tensor:
        return OPS.transpose(self, dim0, dim1)

    @property
    def T(self) -> Tensor:  # noqa: N802  (PyTorch/NumPy name)
        return OPS.permute(self, tuple(reversed(range(self.ndim))))

    @property
    def mT(self) -> Tensor:  # noqa: N802
        return OPS.transpose(self, -2, -1)

    def permute(self, *dims: Any) -> Tensor:
        return OPS.permute(self, dims[0] if len(dims) == 1 and isinstance(dims[0], tuple | list) else dims)

    def squeeze(self, dim: Any = None, *, axis: Any = None) -> Tensor:
        return OPS.squeeze(self, _axis_arg(dim, axis, "squeeze"))

    def unsqueeze(self, dim: int) -> Tensor:
        return OPS.unsqueeze(self, dim)

    def broadcast_to(self, shape: Any) -> Tensor:
        return OPS.broadcast_to(self, shape)

    def expand(self, *shape: Any) -> Tensor:
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape
        full = tuple(s if s != -1 else self.shape[i - (len(shape) - self.ndim)] for i, s in enumerate(shape))
        return OPS.broadcast_to(self, full)

    def expand_as(self, other: Tensor) -> Tensor:
        return OPS.broadcast_to(self, other.shape)

    # -- dtype / device ------------------------------------------------------------------
    def astype(self, dtype: Any) -> Tensor:
        return OPS.cast(self, dtype)

    def to(self, dtype: Any = None, *, device: Any = None) -> Tensor:
        """Cast to `dtype`. Devices other than the CPU arrive with a later version."""
        if device is not None and str(device) not in ("cpu", "cpu:0"):
            raise ValueError(f"to(): device must be 'cpu' in this version, got {device!r}")
        return self if dtype is None else OPS.cast(self, dtype)

    def type(self, dtype: Any) -> Tensor:
        return OPS.cast(self, dtype)

    def float(self) -> Tensor:
        return OPS.cast(self, _dt.float32)

    def double(self) -> Tensor:
        return OPS.cast(self, _dt.float64)

    def half(self) -> Tensor:
        return OPS.cast(self, _dt.float16)

    def long(self) -> Tensor:
        return OPS.cast(self, _dt.int64)

    def int(self) -> Tensor:
        return OPS.cast(self, _dt.int32)

    def bool(self) -> Tensor:
        return OPS.cast(self, _dt.bool_)

    def cpu(self) -> Tensor:
        return self

    def clone(self) -> Tensor:
        return OPS.identity(self)


def grad_enabled_for(impls: list[TensorImpl]) -> bool:
    """Whether an op on these inputs records autodiff state."""
    return is_grad_enabled() and any(i.requires_grad for i in impls)

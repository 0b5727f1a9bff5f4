"""Tensor: the user-facing facade. It holds only `_impl` (the state) and `.grad`.

Every method delegates: data access goes to the graph engine, math goes to ops through the
dispatch table (`OPS`), `backward` goes to the autograd engine. Groups of methods are mixins
beside it: view write-through (`views.py`), shape methods, torch's aliases, elementwise and
linear-algebra methods, and in-place variants.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
from max.dtype import DType

from ..common import dtypes as _dt
from ..common.context import is_grad_enabled
from ..common.devices import CPU_DEVICE
from ..graph.engine import GRAPH
from ..graph.executors import available_device, host_array, storage_item, storage_on, storage_to_numpy
from ..graph.tracing import TRACE, ConcretizationError, note_grad, note_grad_read, note_guard, note_mutation
from .dispatch import OPS
from .impl import RETAINED, Device, TensorImpl
from .printing import format_array
from .tensor_shape_methods import ShapeMethods, _axis_arg
from .torch_inplace import TorchInPlace
from .torch_math import TorchMath
from .torch_methods import TorchMethods, _scaled, all_if_empty
from .views import ViewMethods


class Tensor(ViewMethods, ShapeMethods, TorchMethods, TorchMath, TorchInPlace):
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

    # `_view` is set only on views (see `views.py`): (base, base's value then, kind, arg)
    # `_hooks`, `_post_hooks`: a leaf's gradient hooks (see register_hook), set when registered
    __slots__ = ("_impl", "_grad", "_view", "_layout", "_hooks", "_post_hooks", "__weakref__")
    __array_priority__ = 1000  # NumPy defers `ndarray + Tensor` to us

    def __init__(self, impl: TensorImpl) -> None:
        self._impl = impl
        self._grad: Tensor | None = None
        try:
            pending = impl.data is None
        except AttributeError:  # `nabla.Tensor([1.0, 2.0])`, torch's legacy constructor
            raise TypeError(
                f"Tensor(...) wraps nabla's internal TensorImpl; to make a tensor from {type(impl).__name__} data "
                "use nabla.tensor(data) (or nabla.FloatTensor(data), nabla.zeros(*size))"
            ) from None
        if pending:
            GRAPH.add_unrealized(self)

    # -- construction -------------------------------------------------------------------
    @classmethod
    def _operand(cls, impl: TensorImpl) -> Tensor:
        """A facade through which library code passes `impl` to an op and then drops: not
        tracked as a pending result (`Tensor(impl)` is, when unrealized)."""
        t = object.__new__(cls)
        t._impl, t._grad = impl, None
        return t

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
        impl = self._impl  # (TensorImpl.logical_shape inlined: layers read shapes on every call)
        return impl.physical_shape[impl.batch_dims :]

    @property
    def dtype(self) -> DType:
        return self._impl.dtype

    @property
    def device(self) -> Device:
        return self._impl.device

    @property
    def sharding(self) -> Any:
        """The tensor's ShardingSpec on a DeviceMesh, or None for an ordinary tensor."""
        return self._impl.sharding

    def local_shape(self, position: int) -> tuple[int, ...]:
        """The shape of the part device `position` of the mesh holds (the shape if unsharded)."""
        spec = self._impl.sharding
        return self.shape if spec is None else spec.local_shape(self._impl.physical_shape, position)

    def shards(self) -> list[np.ndarray]:
        """Each mesh device's local value, by device position (evaluates)."""
        spec = self._impl.sharding
        if spec is None:
            return [self.numpy()]
        self.realize()
        pieces = [storage_to_numpy(p) for p in self._impl.data]
        return [pieces[i] for i in spec.piece_of]

    @property
    def ndim(self) -> int:
        impl = self._impl
        return len(impl.physical_shape) - impl.batch_dims

    def dim(self) -> int:
        return self.ndim

    def size(self, dim: int | None = None) -> Any:
        """torch's: the shape as a `nabla.Size` (a tuple with `numel()`), or one dim's size."""
        return Size(self.shape) if dim is None else self.shape[dim]

    def numel(self) -> int:
        return int(math.prod(self.shape))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        """The tensor's rows (`x[0]`, `x[1]`, ...), as torch's; a 0-d tensor is not iterable."""
        if not self.shape:
            needs_python_value(self)  # (`flip(x, d)` with d a Python int argument of nabla.compile)
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

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
        if not self.is_leaf:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables; use detach() for a non-leaf"
                )
            return self
        if requires_grad and not _dt.is_float(self.dtype):
            raise RuntimeError(
                f"only tensors of floating point dtype can require gradients, got dtype {self.dtype.name}"
            )
        if requires_grad and not self._impl.is_leaf:  # computed without grad (`x + noise`): a new leaf
            self._install(OPS.detach(self)._impl)
        self._impl.requires_grad = bool(requires_grad)
        self._impl.facade = weakref.ref(self) if requires_grad else None
        return self

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in `.grad` when `backward()` runs (a leaf's is
        kept anyway), as in PyTorch."""
        if not self.requires_grad:
            raise RuntimeError("retain_grad: the tensor does not require grad")
        if not self.is_leaf:
            self._impl.facade = weakref.ref(self)
            RETAINED.add(self._impl)

    @property
    def retains_grad(self) -> bool:
        return self._impl in RETAINED

    @property
    def is_leaf(self) -> bool:
        """PyTorch's: every tensor that does not require grad is a leaf, and so is one that does
        but was not computed by a recorded op."""
        impl = self._impl
        return not impl.requires_grad or impl.is_leaf

    @property
    def grad_fn(self) -> GradFn | None:
        """PyTorch's: the recorded op that computed this tensor (None for a leaf, or a tensor
        that does not require grad); `grad_fn.name()` is torch's style of name, "MulBackward0"."""
        return None if self.is_leaf else GradFn(self._impl.output_refs)

    @property
    def grad(self) -> Tensor | None:
        if TRACE.state is not None and note_grad_read(self):  # nabla.compile: the caller's .grad
            g = self._grad  # is an input, read again on each call: computed, not a recipe to bake in
            # (pending from before the trace; an argument's .grad is a placeholder, and a value an
            # in-place op inside the trace gave it, `p.grad.mul_(0)`, is part of the trace)
            impl = None if g is None else g._impl
            if (
                impl is not None
                and impl.data is None
                and impl.output_refs is not None
                and impl.seq < TRACE.state.start_seq
            ):
                GRAPH.evaluate([impl])
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None and tuple(value.shape) != tuple(self.shape):
            raise RuntimeError(f"assigned grad has shape {value.shape}, tensor has shape {self.shape}")
        if value is not None and value.dtype != self.dtype:  # (as torch: a later step would mix dtypes)
            raise RuntimeError(
                f"attempting to assign a gradient with dtype {value.dtype.name} to a tensor with dtype "
                f"{self.dtype.name}; cast it first (grad.to(tensor.dtype))"
            )
        note_grad(self)
        self._grad = value

    def _same_value(self) -> Tensor:
        """Another plain Tensor on this value (a realized one stays realized; autodiff reaches
        this tensor through it): the view an op that changed nothing gives (`x[:]`)."""
        return Tensor(self._impl)

    def detach(self) -> Tensor:
        """A tensor with the same value that is not part of any autodiff trace; in-place ops
        on it update this tensor, as PyTorch's shared storage does."""
        return OPS.detach(self)._as_view_of(self, "alias", None)

    def __deepcopy__(self, memo: dict) -> Tensor:
        """A copy that shares no state (`copy.deepcopy(model)`); realized storage is immutable
        (in-place ops swap in a new value), so the copy may share it."""
        impl = self.realize()._impl
        new = type(self).__new__(type(self))
        Tensor.__init__(new, impl.share())
        if self.requires_grad:
            new.requires_grad_(True)
        memo[id(self)] = new
        return new

    def __copy__(self) -> Tensor:
        """`copy.copy`: another facade on the same value (and gradient, view base, hooks)."""
        new = type(self).__new__(type(self))
        Tensor.__init__(new, self._impl)
        for name in ("_grad", "_view", "_layout", "_hooks", "_post_hooks"):
            if hasattr(self, name):
                setattr(new, name, getattr(self, name))
        return new

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickle the value (computed first), dtype and `requires_grad`; not the autodiff
        history, a view's base or a mesh layout (a sharded tensor pickles its global value)."""
        if not self.is_leaf:
            raise RuntimeError(
                "cannot pickle a non-leaf tensor that requires grad (its history cannot be saved): pickle "
                "t.detach() instead"
            )
        return (_rebuild_tensor, (self.numpy(), self.dtype.name, self.requires_grad))

    @property
    def data(self) -> Tensor:
        """PyTorch's `.data`: the value without autodiff history (a realized tensor shares
        storage); in-place ops on it update this tensor (`p.data.zero_()`)."""
        if self._impl.is_realized and not self._impl.batch_dims:
            return Tensor(self._impl.share())._as_view_of(self, "alias", None)
        return OPS.detach(self)._as_view_of(self, "alias", None)

    @data.setter
    def data(self, value: Tensor) -> None:
        """Swap in a new value (any shape) outside autodiff, keeping `requires_grad`: how
        initializers and checkpoint loading fill a parameter without recording an op. A
        non-leaf keeps its history, as torch's keeps its grad_fn: gradients pass through to it
        (`y.data = y.data.round()`, the straight-through estimator)."""
        if not isinstance(value, Tensor):
            raise TypeError(f".data must be assigned a Tensor, got {type(value).__name__}")
        self._swap_storage()
        if value._impl.is_realized and not value._impl.batch_dims:
            impl = value._impl.share()
        else:
            impl = OPS.detach(value)._impl
        old = self._impl
        if (
            old.requires_grad
            and not old.is_leaf
            and (impl.physical_shape, impl.dtype) == (old.physical_shape, old.dtype)
        ):
            self._take_value(Tensor(impl), outside_autodiff=True)
            return
        self._install(impl)

    @staticmethod
    def _install_all(facades: list[Tensor], impls: list, pending: bool = True) -> None:
        """`_install` of each impl into its facade (an optimizer's update writing ~3 tensors per
        parameter every step): one check of the trace state, the per-facade work inlined.
        `pending=False`: the caller evaluates the facades at once, so they are not tracked."""
        if TRACE.state is not None:  # nabla.compile records each mutation
            for facade, impl in zip(facades, impls, strict=True):
                facade._install(impl)
            return
        track, ref = GRAPH.add_unrealized if pending else None, weakref.ref
        for facade, impl in zip(facades, impls, strict=True):
            grad = impl.requires_grad = facade._impl.requires_grad
            facade._impl = impl
            if track is not None and impl.data is None:
                track(facade)
            impl.facade = ref(facade) if grad else None

    def _install(self, impl: TensorImpl) -> None:
        """Make `impl` this facade's value outside autodiff, keeping `requires_grad`."""
        note_mutation(self)
        impl.requires_grad = self._impl.requires_grad
        self._impl = impl
        if not impl.is_realized:
            GRAPH.add_unrealized(self)
        impl.facade = weakref.ref(self) if impl.requires_grad else None

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        """Accumulate d(self)/d(leaf) into `.grad` of every leaf with `requires_grad=True`.

        Args:
            gradient: the cotangent; required unless self is a scalar.
            retain_graph: keep the trace so backward can run through it again (default:
                `create_graph`, as in PyTorch).
            create_graph: record the backward ops, for higher-order gradients.
            inputs: only these tensors (leaves or not) accumulate into their `.grad`.
        """
        OPS.backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)

    # -- data access (evaluates) ----------------------------------------------------------
    def realize(self) -> Tensor:
        """Compute this tensor (and everything else pending) now."""
        GRAPH.evaluate([self._impl])
        return self

    def _read(self) -> Any:
        """The computed storage, read into Python: counted, since a recorded backward must not
        depend on a value that reached Python. Not inside vmap (one value per batch element)."""
        impl = self._impl
        if impl.batch_dims:
            raise RuntimeError(
                "cannot read the value of a batched tensor inside vmap (it has a different value per batch "
                "element); return it from the vmapped function instead"
            )
        state = TRACE.state
        if state is not None:
            if impl.seq < state.start_seq:
                _guard_value(self, impl)
            elif impl.data is None:
                _guard_sources(impl, state)
        if impl.data is None:
            GRAPH.evaluate([impl])
        GRAPH.host_reads += 1
        return impl.data

    def numpy(self) -> np.ndarray:
        """The value as a NumPy array (shares memory with the tensor's buffer on CPU)."""
        data = self._read()
        spec = self._impl.sharding
        if spec is not None:  # the global value, assembled on the host from the devices' pieces
            return spec.assemble([storage_to_numpy(p) for p in data], self._impl.physical_shape)
        if self._impl.dtype == _dt.bfloat16:  # widened exactly to float32 on the host (no cast graph)
            return storage_to_numpy(data)
        return host_array(self._impl)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)

    def item(self) -> Any:
        if self.numel() != 1:
            raise ValueError(f"item(): only one-element tensors can be converted, got shape {self.shape}")
        impl = self._impl
        if impl.sharding is not None or impl.dtype == _dt.bfloat16:
            return self.numpy().reshape(()).item()
        return storage_item(self._read())

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

    def __format__(self, spec: str) -> str:
        """`f"{loss:.4f}"` formats a 0-d tensor's value, as in PyTorch."""
        if self.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __repr__(self) -> str:
        body = format_array(self.numpy(), prefix="Tensor(")
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
        if other is None or isinstance(other, str | bytes):  # `t == None`, `t == "ERR"`: False, as torch
            return False
        return OPS.equal(self, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        if other is None or isinstance(other, str | bytes):
            return True
        return OPS.not_equal(self, other)

    def __lt__(self, other: Any) -> Tensor:
        return OPS.less(self, other)

    def __le__(self, other: Any) -> Tensor:
        return OPS.less_equal(self, other)

    def __gt__(self, other: Any) -> Tensor:
        return OPS.greater(self, other)

    def __ge__(self, other: Any) -> Tensor:
        return OPS.greater_equal(self, other)

    def __floordiv__(self, other: Any) -> Tensor:
        return OPS.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return OPS.floor_divide(other, self)

    def __mod__(self, other: Any) -> Tensor:
        return OPS.remainder(self, other)

    def __rmod__(self, other: Any) -> Tensor:
        return OPS.remainder(other, self)

    def __abs__(self) -> Tensor:
        return OPS.abs(self)

    def __and__(self, other: Any) -> Tensor:
        return OPS.bitwise_and(self, other)

    def __rand__(self, other: Any) -> Tensor:
        return OPS.bitwise_and(other, self)

    def __or__(self, other: Any) -> Tensor:
        return OPS.bitwise_or(self, other)

    def __ror__(self, other: Any) -> Tensor:
        return OPS.bitwise_or(other, self)

    def __xor__(self, other: Any) -> Tensor:
        return OPS.bitwise_xor(self, other)

    def __rxor__(self, other: Any) -> Tensor:
        return OPS.bitwise_xor(other, self)

    def __invert__(self) -> Tensor:
        return OPS.bitwise_not(self)

    def __lshift__(self, other: Any) -> Tensor:
        return OPS.bitwise_left_shift(self, other)

    def __rlshift__(self, other: Any) -> Tensor:
        return OPS.bitwise_left_shift(other, self)

    def __rshift__(self, other: Any) -> Tensor:
        return OPS.bitwise_right_shift(self, other)

    def __rrshift__(self, other: Any) -> Tensor:
        return OPS.bitwise_right_shift(other, self)

    # -- indexing (x[idx] reads; x[idx] = v is recorded as a functional update) -----------
    def __getitem__(self, index: Any) -> Tensor:
        out = OPS.getitem(self, index)
        return out._as_view_of(self, "index", index) if _is_basic_index(index) else out

    def __setitem__(self, index: Any, value: Any) -> None:
        view = getattr(value, "_view", None)
        if view is not None and view[0] is self and view[1] is self._impl and view[3] is index:
            return  # `x[i] += v`: the in-place op on the view x[i] already wrote it through
        self._sync_view()
        self._replace_impl(OPS.setitem(self, index, value), "__setitem__")

    @property
    def at(self) -> Any:
        """JAX-style functional updates: `x.at[idx].set(v)`, `.add(v)`, `.multiply(v)`, `.get()`."""
        return OPS.at(self)

    # -- in-place arithmetic (functional updates under the hood, PyTorch names) ----------
    def _in_place(self, what: str, op: Any, *args: Any, **kwargs: Any) -> Tensor:
        """`self = op(self, *args, **kwargs)` in place; a view first takes its base's current value.
        As in PyTorch, a result of a higher category (bool < int < float) than self's is an error."""
        self._sync_view()
        new = op(self, *args, **kwargs)
        kind = [_dt.is_integer(d) + 2 * _dt.is_float(d) for d in (new.dtype, self.dtype)]
        if kind[0] > kind[1]:
            raise RuntimeError(
                f"{what}: result type {new.dtype.name} can't be cast to the desired output type {self.dtype.name}"
            )
        return self._replace_impl(new, what)

    def add_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return self._in_place("add_", OPS.add, _scaled(other, alpha))

    def sub_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return self._in_place("sub_", OPS.sub, _scaled(other, alpha))

    def mul_(self, other: Any) -> Tensor:
        return self._in_place("mul_", OPS.mul, other)

    def div_(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        return self._in_place("div_", OPS.div, other, rounding_mode=rounding_mode)

    def zero_(self) -> Tensor:
        return self._replace_impl(OPS.zeros_like(self), "zero_")

    def fill_(self, value: Any) -> Tensor:
        return self._replace_impl(OPS.full(self.shape, value, self.dtype), "fill_")

    def copy_(self, src: Any) -> Tensor:
        src = src if isinstance(src, Tensor) else OPS.tensor(src, self.dtype)
        return self._replace_impl(OPS.broadcast_to(OPS.cast(src, self.dtype), self.shape), "copy_")

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        return self._in_place("clamp_", OPS.clamp, min, max)

    def masked_fill_(self, mask: Tensor, value: Any) -> Tensor:
        return self._in_place("masked_fill_", OPS.masked_fill, mask, value)

    # `a += b` updates `a` in place, as in PyTorch (without these, Python rebinds the name)
    def __iadd__(self, other: Any) -> Tensor:
        return self.add_(other)

    def __isub__(self, other: Any) -> Tensor:
        return self.sub_(other)

    def __imul__(self, other: Any) -> Tensor:
        return self.mul_(other)

    def __itruediv__(self, other: Any) -> Tensor:
        return self.div_(other)

    def __ifloordiv__(self, other: Any) -> Tensor:
        return self._in_place("__ifloordiv__", OPS.floor_divide, other)

    def __imod__(self, other: Any) -> Tensor:
        return self._in_place("__imod__", OPS.remainder, other)

    def __ipow__(self, other: Any) -> Tensor:
        return self._in_place("__ipow__", OPS.pow, other)

    def __iand__(self, other: Any) -> Tensor:
        return self._in_place("__iand__", OPS.bitwise_and, other)

    def __ior__(self, other: Any) -> Tensor:
        return self._in_place("__ior__", OPS.bitwise_or, other)

    def __ixor__(self, other: Any) -> Tensor:
        return self._in_place("__ixor__", OPS.bitwise_xor, other)

    def __ilshift__(self, other: Any) -> Tensor:
        return self._in_place("__ilshift__", OPS.bitwise_left_shift, other)

    def __irshift__(self, other: Any) -> Tensor:
        return self._in_place("__irshift__", OPS.bitwise_right_shift, other)

    # -- reductions (dim=/keepdim= as in PyTorch, axis=/keepdims= as in NumPy) -----------
    def sum(
        self,
        dim: Any = None,
        keepdim: bool = False,
        *,
        dtype: Any = None,
        axis: Any = None,
        keepdims: bool | None = None,
    ) -> Tensor:
        return _reduced(OPS.sum, "sum", self, all_if_empty(dim), keepdim, dtype, axis, keepdims)

    def mean(
        self,
        dim: Any = None,
        keepdim: bool = False,
        *,
        dtype: Any = None,
        axis: Any = None,
        keepdims: bool | None = None,
    ) -> Tensor:
        return _reduced(OPS.mean, "mean", self, all_if_empty(dim), keepdim, dtype, axis, keepdims)

    def max(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None) -> Any:
        """Without `dim`: the maximum. With `dim` (PyTorch): `(values, indices)`; with `axis`: values."""
        keep = keepdims if keepdims is not None else keepdim
        if dim is not None and not is_tensor_operand(dim):
            return OPS.max_with_indices(self, dim, keep)
        if dim is not None:
            return OPS.maximum(self, dim)
        return OPS.max(self, axis, keep)

    def min(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None) -> Any:
        """Without `dim`: the minimum. With `dim` (PyTorch): `(values, indices)`; with `axis`: values."""
        keep = keepdims if keepdims is not None else keepdim
        if dim is not None and not is_tensor_operand(dim):
            return OPS.min_with_indices(self, dim, keep)
        if dim is not None:
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

    def prod(
        self,
        dim: Any = None,
        keepdim: bool = False,
        *,
        dtype: Any = None,
        axis: Any = None,
        keepdims: bool | None = None,
    ) -> Tensor:
        return _reduced(OPS.prod, "prod", self, dim, keepdim, dtype, axis, keepdims)

    def var(
        self, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *, correction: float | None = None
    ) -> Tensor:
        """PyTorch's overloads: `var(dim, unbiased, keepdim)`, `var(unbiased)`, `correction=`."""
        dim, correction = _var_args(dim, unbiased, correction)
        return OPS.var(self, dim, correction=correction, keepdims=keepdim)

    def std(
        self, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *, correction: float | None = None
    ) -> Tensor:
        """PyTorch's overloads: `std(dim, unbiased, keepdim)`, `std(unbiased)`, `correction=`."""
        dim, correction = _var_args(dim, unbiased, correction)
        return OPS.std(self, dim, correction=correction, keepdims=keepdim)

    def logsumexp(self, dim: Any, keepdim: bool = False) -> Tensor:
        axes = all_if_empty(dim)
        if axes is None and dim is not None and not keepdim and self.ndim:  # as torch 2.13
            raise RuntimeError(f"logsumexp: output with shape [] doesn't match the broadcast shape {[1] * self.ndim}")
        return OPS.logsumexp(self, axes, keepdim)

    def any(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return OPS.any(self, dim, keepdim)

    def all(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return OPS.all(self, dim, keepdim)

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Tensor:
        return OPS.norm(self, p, all_if_empty(dim), keepdim)

    def cumsum(self, dim: int, *, dtype: Any = None) -> Tensor:
        return OPS.cumsum(self, dim, dtype=dtype)

    def cumprod(self, dim: int, *, dtype: Any = None) -> Tensor:
        return OPS.cumprod(self, dim, dtype=dtype)

    def softmax(self, dim: int, dtype: Any = None) -> Tensor:
        return OPS.softmax(self, dim, dtype=dtype)

    def log_softmax(self, dim: int, dtype: Any = None) -> Tensor:
        return OPS.log_softmax(self, dim, dtype=dtype)

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:  # noqa: A002
        return OPS.topk(self, k, dim, largest, sorted)

    def sort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Any:
        return OPS.sort(self, dim, descending, stable=stable)

    def argsort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
        return OPS.argsort(self, dim, descending, stable=stable)

    # -- dtype / device ------------------------------------------------------------------
    def astype(self, dtype: Any) -> Tensor:
        return OPS.cast(self, dtype)

    def to(
        self, *args: Any, dtype: Any = None, device: Any = None, non_blocking: bool = False, copy: bool = False
    ) -> Tensor:
        """PyTorch's forms: `to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other)` (its
        dtype and device). A device is "cpu", "gpu", "gpu:N", "cuda:N" or a `nabla.Device`; see
        `_moved_to` for what moving costs. `non_blocking` and `copy` change nothing."""
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, str | Device) or type(a).__name__ == "device":
                device = a
            else:
                dtype = a
        out = self if dtype is None else OPS.cast(self, dtype)
        return out if device is None else out._moved_to(device)

    def _moved_to(self, device: Any) -> Tensor:
        """This tensor on `device` (itself if it is there). A realized tensor is copied there
        now, as PyTorch copies (a batch moved before a step is not uploaded inside it).
        Otherwise (a pending value, or one autodiff records) it is a copy op whose result is on
        `device`."""
        target = available_device(device, "to()")
        impl = self._impl
        if target is impl.device:
            return self
        if impl.is_realized and not (impl.requires_grad and is_grad_enabled()):
            moved = impl.share()
            moved.device = target
            moved.data = storage_on(moved.data, impl.dtype, target)
            return Tensor(moved)
        out = OPS.identity(self)
        out._impl.device = target
        return out

    def type(self, dtype: Any = None) -> Any:
        """PyTorch's `type`: without an argument, the tensor's type name ("torch.FloatTensor");
        with a dtype or such a name, the tensor cast to it."""
        if dtype is None:
            return _dt.tensor_type_name(self.dtype)
        return OPS.cast(self, _dt.as_dtype_or_type_name(dtype))

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

    def short(self) -> Tensor:
        return OPS.cast(self, _dt.int16)

    def char(self) -> Tensor:
        return OPS.cast(self, _dt.int8)

    def byte(self) -> Tensor:
        return OPS.cast(self, _dt.uint8)

    def bool(self) -> Tensor:
        return OPS.cast(self, _dt.bool_)

    def cpu(self) -> Tensor:
        return self._moved_to(CPU_DEVICE)

    def cuda(self, device: Any = None) -> Tensor:
        """PyTorch's spelling of `to("gpu:N")` (accelerator 0 by default)."""
        return self._moved_to("gpu" if device is None else device)

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor lives on an accelerator (PyTorch's name)."""
        return self._impl.device.is_accelerator

    def clone(self) -> Tensor:
        return OPS.identity(self)


def _rebuild_tensor(array: np.ndarray, dtype: str, requires_grad: bool) -> Tensor:
    """Unpickle a Tensor (see `Tensor.__reduce_ex__`)."""
    return Tensor.from_numpy(array, dtype=getattr(DType, dtype), requires_grad=requires_grad)


def _is_basic_index(index: Any) -> bool:
    """Ints, slices, None and Ellipsis select a view (PyTorch); tensor, list and bool indices copy."""
    items = index if type(index) is tuple else (index,)
    return all(
        i is None or i is Ellipsis or type(i) is slice or (isinstance(i, int | np.integer) and not isinstance(i, bool))
        for i in items
    )


def _correction(correction: float, unbiased: bool | None) -> float:
    """PyTorch's older `unbiased=` flag maps onto `correction` (1 or 0)."""
    return correction if unbiased is None else (1 if unbiased else 0)


def _reduced(
    op: Any, name: str, x: Tensor, dim: Any, keepdim: bool, dtype: Any, axis: Any, keepdims: bool | None
) -> Tensor:
    """sum/mean/prod: PyTorch's dim/keepdim or NumPy's axis/keepdims (and `dtype=`, which the op takes)."""
    return op(x, _axis_arg(dim, axis, name), keepdims if keepdims is not None else keepdim, dtype=dtype)


def _var_args(dim: Any, unbiased: bool | None, correction: float | None) -> tuple[Any, float]:
    """var/std's (dims, correction) from PyTorch's overloads: a bool first argument is
    `unbiased` (`x.var(False)`); `unbiased` and `correction` are not both given."""
    if isinstance(dim, bool):
        if unbiased is not None:
            raise TypeError(f"var/std: got unbiased twice ({dim!r} as the first argument and unbiased={unbiased!r})")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError("var/std: pass either unbiased or correction, not both")
    return all_if_empty(dim), _correction(1 if correction is None else correction, unbiased)


def grad_enabled_for(impls: list[TensorImpl]) -> bool:
    """Whether an op on these inputs records autodiff state."""
    return is_grad_enabled() and any(i.requires_grad for i in impls)


def is_tensor_operand(x: Any) -> bool:
    """Whether `x` is a tensor operand, for overloads that take a tensor or an int (`max(other)`
    vs `max(dim)`): a Python int argument of `nabla.compile` (a weakly typed 0-d placeholder)
    is an int there, which the trace specializes on."""
    return isinstance(x, Tensor) and not x._impl.weak_type


def needs_python_value(x: Any) -> None:
    """Raise ConcretizationError if `x` is a Python number argument of `nabla.compile` (a weakly
    typed placeholder) used where only a Python value can go: the compiled function then traces
    once per value of that argument."""
    if isinstance(x, Tensor) and x._impl.weak_type and x._impl.data is None:
        raise ConcretizationError()


class GradFn:
    """The op that computed a tensor, as PyTorch's `grad_fn` names it (for inspection)."""

    __slots__ = ("_node",)

    def __init__(self, node: Any) -> None:
        self._node = node

    def name(self) -> str:
        return "".join(part.capitalize() for part in self._node.op.name.split("_")) + "Backward0"

    @property
    def next_functions(self) -> tuple:
        """(grad_fn of each input, 0), None for inputs without history, as torch's."""
        return tuple((None if not a.requires_grad or a.is_leaf else GradFn(a.output_refs), 0) for a in self._node.args)

    def __repr__(self) -> str:
        return f"<{self.name()} object>"


def _guard_value(facade: Tensor, impl: TensorImpl) -> None:
    """nabla.compile: the trace reads the value of a tensor it captured (`w.item()`, `float(w)`),
    so that value is baked into the model; a later in-place update of `w` (which gives it a new
    impl) makes the compiled function trace again instead of running with the old value."""
    ref, held = weakref.ref(facade), weakref.ref(impl)

    def current() -> Any:
        f = ref()
        return held if f is not None and f._impl is held() else None

    note_guard(current, f"the value of a captured tensor {tuple(facade.shape)} read with .item()/.numpy()")


def _guard_sources(impl: TensorImpl, state: Any) -> None:
    """nabla.compile: the trace reads a value it computed from captured tensors (`if thr > 2`,
    `(w * 2).item()`), so guard each captured tensor it came from, as `_guard_value` guards a
    direct read. (A value that depends on an argument raises ConcretizationError when computed.)"""
    seen, stack = set(), [impl]
    while stack:
        node = stack.pop().output_refs
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for arg in node.args:
            if arg.seq < state.start_seq:
                facade = state.facades.get(id(arg))
                if facade is not None and facade._impl is arg:
                    _guard_value(facade, arg)
            elif arg.data is None:
                stack.append(arg)


class Size(tuple):
    """torch.Size: a shape, a tuple of ints that also has `numel()` (what `x.size()` returns)."""

    def numel(self) -> int:
        return int(math.prod(self))

    def __getitem__(self, index: Any) -> Any:
        item = tuple.__getitem__(self, index)
        return Size(item) if isinstance(index, slice) else item

    def __repr__(self) -> str:
        return f"nabla.Size({list(self)})"

"""Creation ops: tensors from data, constant fills, ranges, masks and random numbers.

Data (`tensor`, `asarray`) becomes a realized tensor at once: it is a graph *input*, so new
data never changes a cache key. Fills, ranges and masks are graph ops (`host_constant`): they
fold into whatever graph consumes them, and evaluated on their own they are computed on the
host without a compile. Random ops read a per-call uint64 seed *input*, so a cached model
still draws fresh numbers on every run, and `manual_seed` makes the sequence repeat.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from max.graph import Dim, TensorType, ops

from ..core.common import dtypes as _dt
from ..core.common.context import vmap_randomness, vmap_sizes
from ..core.common.devices import CPU_DEVICE, Device
from ..core.graph.executors import available_device, graph_device, host_values, round_to_bfloat16, storage_on
from ..core.tensor.dispatch import OPS, register
from ..core.tensor.tensor import Tensor, needs_python_value
from . import binary as _bin
from .base import AVal, Operation, public
from .cast import cast
from .random_state import generator_arg, seed_tensor

__all__ = [
    "arange",
    "asarray",
    "bernoulli",
    "dropout",
    "empty",
    "empty_like",
    "eye",
    "from_numpy",
    "full",
    "full_like",
    "linspace",
    "logspace",
    "normal",
    "ones",
    "ones_like",
    "permutation",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "randperm",
    "tensor",
    "tri",
    "uniform",
    "zeros",
    "zeros_like",
]


def _shape_arg(shape: Any, op: str) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        shape = shape[0]
    try:
        dims = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: shape must be a sequence of ints, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{op}: shape must be non-negative, got {dims}")
    return dims


def _size_arg(value: Any, op: str, arg: str) -> int:
    """A non-negative Python int argument (`n`, `steps`)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{op}: {arg} must be an int, got {value!r}")
    if value < 0:
        raise ValueError(f"{op}: {arg} must be non-negative, got {value}")
    return int(value)


def _number_arg(value: Any, op: str, arg: str) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{op}: {arg} must be a Python number, got {value!r}")
    return value


def _scalar_tensor(value: Any) -> bool:
    return isinstance(value, Tensor) and value.ndim == 0


def _check_device(device: Any, op: str) -> Device:
    """The Device a factory's `device` argument names (the CPU for None); a clear error for a
    bad name or an accelerator this machine lacks."""
    return CPU_DEVICE if device is None else available_device(device, op)


def _placed(out: Tensor, device: Device) -> Tensor:
    """A tensor a factory just made, placed on `device` (it has no readers yet): a realized
    one's storage is copied there now, as `Tensor.to` copies."""
    if device is not CPU_DEVICE:
        impl = out._impl
        impl.device = device
        if impl.is_realized:
            impl.data = storage_on(impl.data, impl.dtype, device)
    return out


def _finish(out: Tensor, device: Device, requires_grad: bool) -> Tensor:
    """A factory's new tensor placed on `device` (from `_check_device`, checked before any
    work) and, for torch's `requires_grad=True`, made a leaf that requires grad (float dtypes
    only: an integer one raises, as torch does). On the CPU and without grad it is `out` as is."""
    out = _placed(out, device)
    return out.requires_grad_() if requires_grad else out


def _like_device(x: Tensor, device: Any, op: str) -> Device:
    """A `*_like` factory's device: `device`, or x's when None (torch's default)."""
    return _check_device(x.device if device is None else device, op)


def _check_tensor(x: Any, op: str, arg: str = "x") -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")


# -- data --------------------------------------------------------------------------------------
def tensor(
    data: Any, dtype: Any = None, *, requires_grad: bool = False, device: Any = None, pin_memory: bool = False
) -> Tensor:
    """Create a tensor from a Python scalar, nested list, NumPy array or Tensor (always copies).

    Python floats default to float32 and ints to int64, as in PyTorch; NumPy arrays keep
    their dtype.

    Args:
        data: the values.
        dtype: optional dtype (`nabla.float32`, `"float32"`, `np.float32`, ...).
        requires_grad: record operations on this tensor for autodiff.
        device: where the tensor lives ("cpu", "gpu:0", a `nabla.device`, `x.device`).
        pin_memory: accepted for PyTorch compatibility and ignored.

    Example:
        >>> nabla.tensor([[1, 2], [3, 4]], dtype=nabla.float32).shape
        (2, 2)
    """
    dev = _check_device(device, "tensor")
    if isinstance(data, Tensor):
        out = data.detach()
        out = cast(out, dtype) if dtype is not None else out
        return _placed(Tensor.from_numpy(np.array(out.numpy()), dtype=out.dtype, requires_grad=requires_grad), dev)
    try:
        array = np.array(data)
    except ValueError:
        raise TypeError(f"tensor: cannot build a tensor from ragged nested sequences: {data!r:.80}") from None
    if dtype is None:
        if array.dtype == np.float64 and not isinstance(data, np.ndarray | np.generic):
            dtype = _dt.DEFAULT_FLOAT  # Python floats: PyTorch's default dtype
        elif array.dtype.kind in "iu" and not isinstance(data, np.ndarray | np.generic):
            dtype = _dt.int64
    if array.dtype == object:
        raise TypeError(f"tensor: cannot build a tensor from {type(data).__name__} data of ragged or mixed shape")
    return _placed(Tensor.from_numpy(array, dtype=dtype, requires_grad=requires_grad), dev)


def asarray(data: Any, dtype: Any = None, *, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Like `tensor` but without copying a NumPy array whose dtype and layout already fit.

    Args:
        data: the values; a Tensor of that dtype and device is returned itself.
        dtype: optional dtype.
        device: where the result lives (None: the CPU, or a Tensor's own device); a Tensor
            elsewhere is copied there, as `Tensor.to`.
        requires_grad: make the result require grad (a Tensor returned itself is marked in
            place, as torch.asarray does).
    """
    dev = _check_device(device, "asarray")
    if isinstance(data, Tensor):
        out = data if dtype is None else cast(data, dtype)
        out = out if device is None else out.to(dev)
        return out.requires_grad_() if requires_grad else out
    if isinstance(data, np.ndarray):
        return _finish(Tensor.from_numpy(data, dtype=dtype), dev, requires_grad)
    return tensor(data, dtype, requires_grad=requires_grad, device=dev)


def from_numpy(array: np.ndarray) -> Tensor:
    return asarray(array)


# -- fills -------------------------------------------------------------------------------------
class FullOp(Operation):
    # No sharding rule: creation ops here take no tensor, so they never see a sharded operand.
    name = "full"
    host_constant = True
    differentiable = False

    def abstract_eval(self, *, shape: tuple, value: Any, dtype: Any) -> AVal:
        return shape, dtype

    def kernel(self, *, shape: tuple, value: Any, dtype: Any) -> Any:
        if isinstance(value, Dim):  # a size-dependent value under compile's dynamic dims
            scalar = ops.cast(ops.reshape(ops.shape_to_tensor([value]), ()), dtype)
            return ops.broadcast_to(scalar, shape)
        return ops.broadcast_to(ops.constant(value, dtype, graph_device()), shape)

    def numpy_kernel(self, *, shape: tuple, value: Any, dtype: Any) -> np.ndarray:
        return np.full(shape, value, dtype=_dt.to_numpy_dtype(dtype))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kwargs: Any) -> list:
        return []

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kwargs: Any) -> list:
        return [None]


_full = FullOp()


def _fill_value(value: Any, op: str) -> Any:
    needs_python_value(value)  # (a Python number argument of nabla.compile: specialized per value)
    if isinstance(value, Tensor):
        raise TypeError(f"{op}: fill_value must be a Python scalar, got a Tensor (use nabla.where or broadcasting)")
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, bool | int | float):
        raise TypeError(f"{op}: fill_value must be a Python scalar, got {type(value).__name__}")
    return value


@public()
def full(
    shape: Any = None,
    fill_value: Any = None,
    dtype: Any = None,
    *,
    size: Any = None,
    requires_grad: bool = False,
    device: Any = None,
    layout: Any = None,
) -> Tensor:
    """A tensor of `shape` filled with `fill_value` (dtype inferred from the value if omitted).

    Args:
        shape: the shape (or torch's `size=`).
        fill_value: a Python scalar, or a 0-d tensor broadcast (torch's full(size, tensor)).
        dtype: optional dtype.
        requires_grad: make the result a leaf that requires grad (float dtypes only).
        device: where the result lives ("cpu", "gpu:0", a `nabla.device`, `x.device`).
        layout: accepted for PyTorch compatibility and ignored.

    Example:
        >>> nabla.full((2, 3), 1.5).dtype
        float32
    """
    if size is not None:  # torch's keyword for the shape
        if shape is not None:
            raise TypeError(f"full: pass the shape once, as shape or size=, not both (got {shape!r} and {size!r})")
        shape = size
    if shape is None or fill_value is None:
        raise TypeError("full: the shape (or size=) and fill_value are required, e.g. full((2, 3), 1.5)")
    dev = _check_device(device, "full")
    if isinstance(fill_value, Tensor) and fill_value.ndim == 0 and not fill_value._impl.weak_type:
        # torch's full(size, tensor): the value broadcast (no host read); its kind gives the dtype
        kind = _dt.DEFAULT_FLOAT if _dt.is_float(fill_value.dtype) else fill_value.dtype
        dt = _dt.as_dtype(dtype) if dtype is not None else (_dt.int64 if _dt.is_integer(kind) else kind)
        shape = _shape_arg((shape,) if isinstance(shape, int) else tuple(shape), "full")
        return _finish(OPS.broadcast_to(cast(fill_value, dt), shape), dev, requires_grad)
    fill_value = _fill_value(fill_value, "full")
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.python_scalar_dtype(fill_value)
    if _dt.is_float(dt):
        fill_value = float(fill_value)
    elif dt == _dt.bool_:
        fill_value = bool(fill_value)
    else:
        fill_value = _dt.checked_int(int(fill_value), dt, "full")
    out = _full(
        shape=_shape_arg((shape,) if isinstance(shape, int) else tuple(shape), "full"), value=fill_value, dtype=dt
    )
    return _finish(out, dev, requires_grad)


@public()
def zeros(
    *shape: Any,
    size: Any = None,
    dtype: Any = None,
    requires_grad: bool = False,
    device: Any = None,
    layout: Any = None,
) -> Tensor:
    """A tensor of zeros: `zeros(2, 3)` or `zeros((2, 3))`. float32 unless `dtype` says otherwise.

    Args:
        shape: the shape, positionally or as torch's `size=`.
        dtype, requires_grad, device, layout: as `full`'s.
    """
    dev = _check_device(device, "zeros")
    shape = _shape_or_size(shape, size, "zeros")
    return full(_shape_arg(shape, "zeros"), 0, dtype or _dt.DEFAULT_FLOAT, requires_grad=requires_grad, device=dev)


@public()
def ones(
    *shape: Any,
    size: Any = None,
    dtype: Any = None,
    requires_grad: bool = False,
    device: Any = None,
    layout: Any = None,
) -> Tensor:
    """A tensor of ones: `ones(2, 3)` or `ones((2, 3))`. float32 unless `dtype` says otherwise.

    Args:
        shape: the shape, positionally or as torch's `size=`.
        dtype, requires_grad, device, layout: as `full`'s.
    """
    dev = _check_device(device, "ones")
    shape = _shape_or_size(shape, size, "ones")
    return full(_shape_arg(shape, "ones"), 1, dtype or _dt.DEFAULT_FLOAT, requires_grad=requires_grad, device=dev)


@public()
def empty(
    *shape: Any,
    size: Any = None,
    dtype: Any = None,
    requires_grad: bool = False,
    device: Any = None,
    layout: Any = None,
    pin_memory: bool = False,
) -> Tensor:
    """An uninitialized tensor in PyTorch; here (deterministically) zeros of `shape`.

    Args:
        shape: the shape, positionally or as torch's `size=`.
        dtype, requires_grad, device, layout: as `full`'s.
        pin_memory: accepted for PyTorch compatibility and ignored.
    """
    dev = _check_device(device, "empty")
    shape = _shape_or_size(shape, size, "empty")
    return full(_shape_arg(shape, "empty"), 0, dtype or _dt.DEFAULT_FLOAT, requires_grad=requires_grad, device=dev)


@public()
def zeros_like(
    x: Tensor,
    dtype: Any = None,
    *,
    requires_grad: bool = False,
    device: Any = None,
    layout: Any = None,
    memory_format: Any = None,
) -> Tensor:
    """Zeros with the shape of `x` (and its dtype unless `dtype` is given).

    Args:
        x: the tensor whose shape (and dtype) to take.
        dtype: optional dtype.
        requires_grad: make the result a leaf that requires grad (float dtypes only).
        device: where the result lives; None (torch's default) is x's device.
        layout, memory_format: accepted for PyTorch compatibility and ignored.
    """
    _check_tensor(x, "zeros_like")
    dev = _like_device(x, device, "zeros_like")
    return full(x.shape, 0, dtype or x.dtype, requires_grad=requires_grad, device=dev)


@public()
def ones_like(
    x: Tensor,
    dtype: Any = None,
    *,
    requires_grad: bool = False,
    device: Any = None,
    layout: Any = None,
    memory_format: Any = None,
) -> Tensor:
    """Ones with the shape of `x` (and its dtype unless `dtype` is given).

    Args:
        x: the tensor whose shape (and dtype) to take.
        dtype: optional dtype.
        requires_grad: make the result a leaf that requires grad (float dtypes only).
        device: where the result lives; None (torch's default) is x's device.
        layout, memory_format: accepted for PyTorch compatibility and ignored.
    """
    _check_tensor(x, "ones_like")
    dev = _like_device(x, device, "ones_like")
    return full(x.shape, 1, dtype or x.dtype, requires_grad=requires_grad, device=dev)


@public()
def empty_like(
    x: Tensor,
    dtype: Any = None,
    *,
    requires_grad: bool = False,
    device: Any = None,
    layout: Any = None,
    memory_format: Any = None,
) -> Tensor:
    """`empty` with the shape of `x`: zeros, as `zeros_like`.

    Args:
        x: the tensor whose shape (and dtype) to take.
        dtype: optional dtype.
        requires_grad: make the result a leaf that requires grad (float dtypes only).
        device: where the result lives; None (torch's default) is x's device.
        layout, memory_format: accepted for PyTorch compatibility and ignored.
    """
    _check_tensor(x, "empty_like")
    dev = _like_device(x, device, "empty_like")
    return full(x.shape, 0, dtype or x.dtype, requires_grad=requires_grad, device=dev)


@public()
def full_like(
    x: Tensor,
    fill_value: Any,
    dtype: Any = None,
    *,
    requires_grad: bool = False,
    device: Any = None,
    layout: Any = None,
    memory_format: Any = None,
) -> Tensor:
    """`fill_value` with the shape of `x`; the value is converted to x's dtype (2.5 -> 2 for ints).

    Args:
        x: the tensor whose shape (and dtype) to take.
        dtype: optional dtype.
        requires_grad: make the result a leaf that requires grad (float dtypes only).
        device: where the result lives; None (torch's default) is x's device.
        layout, memory_format: accepted for PyTorch compatibility and ignored.
    """
    _check_tensor(x, "full_like")
    dev = _like_device(x, device, "full_like")
    return full(x.shape, fill_value, dtype or x.dtype, requires_grad=requires_grad, device=dev)


# -- ranges ------------------------------------------------------------------------------------
class ArangeOp(Operation):
    name = "arange"  # no sharding rule: no tensor inputs
    host_constant = True
    differentiable = False

    def abstract_eval(self, *, start: Any, step: Any, length: int, dtype: Any) -> AVal:
        return (length,), dtype

    def kernel(self, *, start: Any, step: Any, length: int, dtype: Any) -> Any:
        device = graph_device()
        work = dtype if _dt.is_float(dtype) else _dt.int64
        idx = ops.range(0, length, 1, out_dim=length, dtype=work, device=device)
        out = idx * ops.constant(step, work, device) + ops.constant(start, work, device)
        return ops.cast(out, dtype)

    def numpy_kernel(self, *, start: Any, step: Any, length: int, dtype: Any) -> np.ndarray:
        return (start + step * np.arange(length)).astype(_dt.to_numpy_dtype(dtype))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kwargs: Any) -> list:
        return []

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kwargs: Any) -> list:
        return [None]


_arange = ArangeOp()


@public()
def arange(
    start: Any,
    end: Any = None,
    step: Any = 1,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    layout: Any = None,
) -> Tensor:
    """Values from `start` to `end` (exclusive) by `step`, as `torch.arange` / `np.arange`.

    Args:
        start, end, step: Python numbers (or 0-d tensors); `arange(n)` is `arange(0, n)`.
        dtype: optional dtype (int64 for all-int arguments, else float32).
        device: where the result lives ("cpu", "gpu:0", a `nabla.device`, `x.device`).
        requires_grad: make the result a leaf that requires grad (float dtypes only).
        layout: accepted for PyTorch compatibility and ignored.

    Example:
        >>> nabla.arange(0, 5, 2).tolist()
        [0, 2, 4]
    """
    dev = _check_device(device, "arange")
    if end is None:
        start, end = 0, start
    start, end, step = (
        v.item() if isinstance(v, Tensor | np.generic) and not v.shape else v for v in (start, end, step)
    )
    for name, v in (("start", start), ("end", end), ("step", step)):
        if not isinstance(v, int | float) or isinstance(v, bool):
            raise TypeError(f"arange: {name} must be a Python number, got {v!r}")
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    length = max(0, math.ceil((end - start) / step))
    all_int = all(isinstance(v, int) for v in (start, end, step))
    dt = _dt.as_dtype(dtype) if dtype is not None else (_dt.int64 if all_int else _dt.DEFAULT_FLOAT)
    cast_num = float if _dt.is_float(dt) else int
    return _finish(_arange(start=cast_num(start), step=cast_num(step), length=length, dtype=dt), dev, requires_grad)


class LinspaceOp(Operation):
    """`steps` evenly spaced values from `start` to `end` (both included); with `base`, the
    values are the exponents (`logspace`). Computed in float64 with PyTorch's symmetric formula
    (the first half counts up from `start`, the second half down from `end`), then cast."""

    name = "linspace"  # no sharding rule: no tensor inputs
    host_constant = True
    differentiable = False

    def abstract_eval(self, *, start: float, end: float, steps: int, base: Any, dtype: Any) -> AVal:
        return (steps,), dtype

    def kernel(self, *, start: float, end: float, steps: int, base: Any, dtype: Any) -> Any:
        device = graph_device()
        if steps == 0:
            return ops.broadcast_to(ops.constant(0, dtype, device), (0,))
        f64 = _dt.float64
        step = (end - start) / (steps - 1) if steps > 1 else 0.0
        idx = ops.range(0, steps, 1, out_dim=steps, dtype=f64, device=device)
        up = ops.constant(start, f64, device) + idx * ops.constant(step, f64, device)
        down = ops.constant(end, f64, device) - (ops.constant(steps - 1, f64, device) - idx) * ops.constant(
            step, f64, device
        )
        values = ops.where(ops.greater(ops.constant(steps // 2, f64, device), idx), up, down)
        if base is not None:
            values = ops.pow(ops.constant(base, f64, device), values)
        return ops.cast(values, dtype)

    def numpy_kernel(self, *, start: float, end: float, steps: int, base: Any, dtype: Any) -> np.ndarray:
        idx = np.arange(steps, dtype=np.float64)
        step = (end - start) / (steps - 1) if steps > 1 else 0.0
        values = np.where(idx < steps // 2, start + idx * step, end - (steps - 1 - idx) * step)
        if base is not None:
            values = np.power(np.float64(base), values)
        return values.astype(_dt.to_numpy_dtype(dtype))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kwargs: Any) -> list:
        return []

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kwargs: Any) -> list:
        return [None]


_linspace = LinspaceOp()


def _space(
    op: str, start: Any, end: Any, steps: Any, base: Any, dtype: Any, device: Any, requires_grad: bool
) -> Tensor:
    dev = _check_device(device, op)
    # (0-d tensor ends are read as numbers, as torch does: `linspace(t0, t1, n)`)
    start = float(_number_arg(start.item() if _scalar_tensor(start) else start, op, "start"))
    end = float(_number_arg(end.item() if _scalar_tensor(end) else end, op, "end"))
    steps = _size_arg(steps, op, "steps")
    if steps == 1:
        end = start  # PyTorch: a single step is `start`
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.DEFAULT_FLOAT
    return _finish(_linspace(start=start, end=end, steps=steps, base=base, dtype=dt), dev, requires_grad)


@public()
def linspace(
    start: Any,
    end: Any,
    steps: int,
    dtype: Any = None,
    *,
    device: Any = None,
    requires_grad: bool = False,
    layout: Any = None,
) -> Tensor:
    """`steps` evenly spaced values from `start` to `end` inclusive (`torch.linspace`).

    float32 unless `dtype` is given; integer dtypes truncate, as in PyTorch.

    Args:
        start, end: Python numbers (or 0-d tensors).
        steps: how many values.
        dtype: optional dtype (float32 by default).
        device: where the result lives ("cpu", "gpu:0", a `nabla.device`, `x.device`).
        requires_grad: make the result a leaf that requires grad (float dtypes only).
        layout: accepted for PyTorch compatibility and ignored.

    Example:
        >>> nabla.linspace(0, 1, 5).tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    return _space("linspace", start, end, steps, None, dtype, device, requires_grad)


@public()
def logspace(
    start: Any,
    end: Any,
    steps: int,
    base: float = 10.0,
    dtype: Any = None,
    *,
    device: Any = None,
    requires_grad: bool = False,
    layout: Any = None,
) -> Tensor:
    """`base ** linspace(start, end, steps)` (`torch.logspace`).

    Args:
        start, end: the first and last exponents.
        steps: how many values.
        base: the base of the powers.
        dtype: optional dtype (float32 by default).
        device: where the result lives ("cpu", "gpu:0", a `nabla.device`, `x.device`).
        requires_grad: make the result a leaf that requires grad (float dtypes only).
        layout: accepted for PyTorch compatibility and ignored.

    Example:
        >>> nabla.logspace(0, 2, 3).tolist()
        [1.0, 10.0, 100.0]
    """
    base = float(_number_arg(base, "logspace", "base"))
    return _space("logspace", start, end, steps, base, dtype, device, requires_grad)


# -- masks -------------------------------------------------------------------------------------
class _IndexMaskOp(Operation):
    """An (n, m) mask computed from row index i and column index j (1 where `test(i, j, k)`)."""

    host_constant = True  # no sharding rule: no tensor inputs
    differentiable = False

    def abstract_eval(self, *, n: int, m: int, k: int, dtype: Any) -> AVal:
        return (n, m), dtype

    def max_test(self, rows: Any, cols: Any, k: Any) -> Any:
        raise NotImplementedError

    def numpy_test(self, rows: np.ndarray, cols: np.ndarray, k: int) -> np.ndarray:
        raise NotImplementedError

    def kernel(self, *, n: int, m: int, k: int, dtype: Any) -> Any:
        device = graph_device()
        if n == 0 or m == 0:
            return ops.broadcast_to(ops.constant(0, dtype, device), (n, m))
        i64 = _dt.int64
        rows = ops.broadcast_to(ops.reshape(ops.range(0, n, 1, out_dim=n, dtype=i64, device=device), (n, 1)), (n, m))
        cols = ops.broadcast_to(ops.reshape(ops.range(0, m, 1, out_dim=m, dtype=i64, device=device), (1, m)), (n, m))
        return ops.cast(self.max_test(rows, cols, ops.constant(k, i64, device)), dtype)

    def numpy_kernel(self, *, n: int, m: int, k: int, dtype: Any) -> np.ndarray:
        rows, cols = np.indices((n, m))
        return self.numpy_test(rows, cols, k).astype(_dt.to_numpy_dtype(dtype))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kwargs: Any) -> list:
        return []

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kwargs: Any) -> list:
        return [None]


class EyeOp(_IndexMaskOp):
    name = "eye"

    def max_test(self, rows: Any, cols: Any, k: Any) -> Any:
        return ops.equal(cols - rows, k)

    def numpy_test(self, rows: np.ndarray, cols: np.ndarray, k: int) -> np.ndarray:
        return cols - rows == k


class TriOp(_IndexMaskOp):
    name = "tri"

    def max_test(self, rows: Any, cols: Any, k: Any) -> Any:
        return ops.greater_equal(rows + k, cols)

    def numpy_test(self, rows: np.ndarray, cols: np.ndarray, k: int) -> np.ndarray:
        return cols <= rows + k


_eye, _tri = EyeOp(), TriOp()


@public()
def eye(
    n: int,
    m: int | None = None,
    dtype: Any = None,
    *,
    device: Any = None,
    requires_grad: bool = False,
    layout: Any = None,
) -> Tensor:
    """The (n, m) identity matrix (`torch.eye`); m defaults to n, float32 unless `dtype` is given.

    Args:
        n, m: the numbers of rows and columns.
        dtype: optional dtype.
        device: where the result lives ("cpu", "gpu:0", a `nabla.device`, `x.device`).
        requires_grad: make the result a leaf that requires grad (float dtypes only).
        layout: accepted for PyTorch compatibility and ignored.

    Example:
        >>> nabla.eye(2).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    dev = _check_device(device, "eye")
    n = _size_arg(n, "eye", "n")
    m = n if m is None else _size_arg(m, "eye", "m")
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.DEFAULT_FLOAT
    return _finish(_eye(n=n, m=m, k=0, dtype=dt), dev, requires_grad)


@public()
def tri(n: int, m: int | None = None, k: int = 0, dtype: Any = None) -> Tensor:
    """NumPy's `tri`: an (n, m) mask with ones at and below the `k`-th diagonal (`j <= i + k`).

    m defaults to n; float32 unless `dtype` is given (NumPy's default is float64).

    Example:
        >>> nabla.tri(3, k=-1).tolist()
        [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
    """
    n = _size_arg(n, "tri", "n")
    m = n if m is None else _size_arg(m, "tri", "m")
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise TypeError(f"tri: k must be an int, got {k!r}")
    return _tri(n=n, m=m, k=int(k), dtype=_dt.as_dtype(dtype) if dtype is not None else _dt.DEFAULT_FLOAT)


# -- random ------------------------------------------------------------------------------------
class RandomOp(Operation):
    """Draws from `distribution`, reading its seed from a uint64 graph input.

    distributions: "uniform" (a=low, b=high), "normal" (a=mean, b=std), "bernoulli" (a=p:
    1 with probability p, else 0), "randint" (integers in [a, b)), "permutation" (a random
    permutation of range(shape[0])).
    """

    name = "random"  # no sharding rule: its one input is the internal seed, never sharded
    host_constant = True
    differentiable = False

    def abstract_eval(self, seed: AVal, *, distribution: str, shape: tuple, dtype: Any, a: Any, b: Any) -> AVal:
        return shape, dtype

    def kernel(self, seed: Any, *, distribution: str, shape: tuple, dtype: Any, a: Any, b: Any) -> Any:
        device = graph_device()
        ops.random.set_seed(seed)
        if distribution == "uniform":
            return ops.random.uniform(TensorType(dtype, shape, device=device), range=(a, b))
        if distribution == "normal":
            return ops.random.gaussian(TensorType(dtype, shape, device=device), mean=a, std=b)
        if distribution == "bernoulli":
            u = ops.random.uniform(TensorType(_dt.float32, shape, device=device), range=(0.0, 1.0))
            return ops.cast(ops.greater(ops.constant(a, _dt.float32, device), u), dtype)
        if distribution == "randint":
            f64 = _dt.float64
            u = ops.random.uniform(TensorType(f64, shape, device=device), range=(float(a), float(b)))
            # floor, kept below `high` should rounding ever reach it
            values = ops.min(ops.floor(u), ops.constant(float(b - 1), f64, device))
            return ops.cast(values, dtype)
        if distribution == "permutation":
            (n,) = shape
            if n == 0:
                return ops.broadcast_to(ops.constant(0, dtype, device), (0,))
            keys = ops.random.uniform(TensorType(_dt.float64, shape, device=device), range=(0.0, 1.0))
            return ops.cast(ops.argsort(keys), dtype)
        raise ValueError(f"random: unknown distribution {distribution!r}")

    def numpy_kernel(
        self, seed: np.ndarray, *, distribution: str, shape: tuple, dtype: Any, a: Any, b: Any
    ) -> np.ndarray:
        rng = np.random.default_rng(int(seed[0]))
        if distribution == "uniform":
            return _below_high(rng.uniform(a, b, size=shape), a, b, dtype)
        if distribution == "normal":
            return rng.normal(a, b, size=shape)
        if distribution == "bernoulli":
            return rng.random(size=shape) < a
        if distribution == "randint":
            return rng.integers(a, b, size=shape)
        if distribution == "permutation":
            return rng.permutation(shape[0])
        raise ValueError(f"random: unknown distribution {distribution!r}")

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kwargs: Any) -> list:
        return [None]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kwargs: Any) -> list:
        return [None]


_random = RandomOp()


def _below_high(u: np.ndarray, low: float, high: float, dtype: Any) -> np.ndarray:
    """float64 draws in [low, high) rounded to `dtype` as the executor stores them, with any
    that round up to `high` (1.0 in 0.02% of float16 draws: exponential_ then gives inf) set to
    the largest value of the dtype below it, as torch's draws never reach `high`."""
    if not _dt.is_float(dtype) or dtype == _dt.float64 or not high > low:
        return u
    if dtype == _dt.bfloat16:  # (held as float32 rounded to bfloat16's precision)
        v = round_to_bfloat16(u.astype(np.float32))
        top = np.asarray(round_to_bfloat16(np.array([high], np.float32)))
        step = -0x10000 if top[0] > 0 else 0x10000
        below = (top.view(np.int32) + step).view(np.float32)[0] if top[0] != 0 else -np.float32(2.0**-133)
    else:
        v = u.astype(_dt.to_numpy_dtype(dtype))
        below = np.nextafter(v.dtype.type(high), v.dtype.type(-np.inf))
    return np.where(v >= high, below, v)


def _draw(distribution: str, shape: tuple, dtype: Any, a: Any = 0.0, b: Any = 0.0, generator: Any = None) -> Tensor:
    modes = vmap_randomness()
    if not modes or all(m == "same" for m in modes):
        return _random(seed_tensor(generator), distribution=distribution, shape=shape, dtype=dtype, a=a, b=b)
    if "error" in modes:
        raise RuntimeError(
            "vmap: a random op was called inside vmap(..., randomness='error'); pass randomness='different' "
            "(independent draws per batch element) or randomness='same'"
        )
    if distribution == "permutation":
        raise NotImplementedError("randperm inside vmap(randomness='different') is not supported; draw it outside")
    # One draw with a leading dim per vmap level ("same" levels get size 1, then broadcast),
    # each made a batch dim: every batch element gets its own numbers. The "same" levels inside
    # the last "different" one are left out: the draw is not batched over them (so it can leave
    # them with out_axes=None, as jacfwd's aux does).
    last = max(i for i, m in enumerate(modes) if m == "different")
    sizes, modes = vmap_sizes()[: last + 1], modes[: last + 1]
    lead = tuple(n if m == "different" else 1 for n, m in zip(sizes, modes, strict=True))
    x = _random(seed_tensor(generator), distribution=distribution, shape=lead + shape, dtype=dtype, a=a, b=b)
    if lead != sizes:
        x = OPS.broadcast_to(x, sizes + shape)
    for level in range(len(sizes)):
        x = OPS.move_to_batch(x, 0, sizes[:level])
    return x


def _float_dtype(dtype: Any, op: str) -> Any:
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.DEFAULT_FLOAT
    if not _dt.is_float(dt):
        raise TypeError(f"{op}: dtype must be a floating dtype, got {dt.name}")
    return dt


def _random_tensor(
    distribution: str,
    shape: tuple,
    a: float,
    b: float,
    dtype: Any,
    requires_grad: bool,
    op: str,
    generator: Any,
    device: Any = None,
) -> Tensor:
    dev = _check_device(device, op)
    dt = _float_dtype(dtype, op)
    out = _draw(distribution, _shape_arg(shape, op), dt, float(a), float(b), generator_arg(generator, op))
    return _finish(out, dev, requires_grad)


def _shape_or_size(shape: tuple, size: Any, op: str) -> tuple:
    """The `*shape` of rand/randn, or torch's `size=` spelling of it (not both)."""
    if size is None:
        return shape
    if shape:
        raise TypeError(
            f"{op}: pass the shape once, positionally or as size=, not both (got {shape!r} and size={size!r})"
        )
    return (size,)


@public()
def rand(
    *shape: Any,
    size: Any = None,
    generator: Any = None,
    dtype: Any = None,
    requires_grad: bool = False,
    device: Any = None,
    layout: Any = None,
    pin_memory: bool = False,
) -> Tensor:
    """Uniform samples in [0, 1): `rand(2, 3)`, `rand((2, 3))` or `rand(size=(2, 3))`.

    Args:
        shape: the shape, positionally or as torch's `size=`.
        generator: a `nabla.Generator` to draw from (None: the global one).
        dtype: a floating dtype (float32 by default).
        requires_grad: make the result a leaf that requires grad.
        device: where the result lives ("cpu", "gpu:0", a `nabla.device`, `x.device`).
        layout, pin_memory: accepted for PyTorch compatibility and ignored.
    """
    shape = _shape_or_size(shape, size, "rand")
    return _random_tensor("uniform", shape, 0.0, 1.0, dtype, requires_grad, "rand", generator, device)


@public()
def randn(
    *shape: Any,
    size: Any = None,
    generator: Any = None,
    dtype: Any = None,
    requires_grad: bool = False,
    device: Any = None,
    layout: Any = None,
    pin_memory: bool = False,
) -> Tensor:
    """Standard normal samples: `randn(2, 3)`, `randn((2, 3))` or `randn(size=(2, 3))`.

    Args:
        shape: the shape, positionally or as torch's `size=`.
        generator: a `nabla.Generator` to draw from (None: the global one).
        dtype: a floating dtype (float32 by default).
        requires_grad: make the result a leaf that requires grad.
        device: where the result lives ("cpu", "gpu:0", a `nabla.device`, `x.device`).
        layout, pin_memory: accepted for PyTorch compatibility and ignored.
    """
    shape = _shape_or_size(shape, size, "randn")
    return _random_tensor("normal", shape, 0.0, 1.0, dtype, requires_grad, "randn", generator, device)


@public()
def uniform(
    shape: Any = (), low: float = 0.0, high: float = 1.0, *, dtype: Any = None, generator: Any = None
) -> Tensor:
    """Uniform samples in [low, high)."""
    for name, v in (("low", low), ("high", high)):
        _number_arg(v, "uniform", name)
    return _random_tensor(
        "uniform", (shape,) if isinstance(shape, int) else tuple(shape), low, high, dtype, False, "uniform", generator
    )


_UNSET: Any = object()


@public()
def normal(
    *args: Any,
    mean: Any = _UNSET,
    std: Any = _UNSET,
    size: Any = None,
    shape: Any = _UNSET,
    dtype: Any = None,
    generator: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    layout: Any = None,
    pin_memory: bool = False,
) -> Tensor:
    """Normal samples, in either spelling:

    - `normal(shape, mean=0.0, std=1.0)` (NumPy's and JAX's order): a shape first;
    - PyTorch's `normal(mean, std=1.0, size=None)`: a tensor mean and/or std give one sample
      per element of their broadcast shape, with that element's mean and std; numbers give
      `size` samples. A tensor or float first argument, `size=`, a tensor `mean=` or `std=`,
      or a sequence third means this. `mean=` and `std=` keywords mean the same in both.

    `device=` and `requires_grad=` (with `layout=`/`pin_memory=`, ignored) are for samples of a
    given shape or size, as torch's; with a tensor mean or std the result follows them.

    Example:
        >>> nabla.normal((2, 3), 0.0, 0.1).shape, nabla.normal(nabla.zeros(3), std=0.1).shape
        ((2, 3), (3,))
        >>> nabla.normal(2.0, std=3.0, size=(4,)).shape
        (4,)
    """
    if len(args) > 3:
        raise TypeError(f"normal: takes at most 3 positional arguments, got {len(args)}")
    torch_form = shape is _UNSET and (
        size is not None
        or (args and isinstance(args[0], Tensor | float))
        or isinstance(mean, Tensor)
        or isinstance(std, Tensor)
        or (len(args) == 3 and isinstance(args[2], tuple | list))
    )
    names = ("mean", "std", "size") if torch_form else ("shape", "mean", "std")
    given = {"mean": mean, "std": std, "size": _UNSET if size is None else size, "shape": shape}
    for name, value in zip(names, args, strict=False):
        if given[name] is not _UNSET:
            raise TypeError(f"normal: got multiple values for argument {name!r} (positionally and as {name}=)")
        given[name] = value
    mean, std = given["mean"], 1.0 if given["std"] is _UNSET else given["std"]
    if torch_form:  # PyTorch's normal(mean, std=1.0, size=None)
        if mean is _UNSET:
            raise TypeError("normal: mean is required in PyTorch's form normal(mean, std=1.0, size=None)")
        size = None if given["size"] is _UNSET else given["size"]
        return _normal_torch(mean, std, size, dtype, generator, device, requires_grad)
    shape = () if given["shape"] is _UNSET else given["shape"]
    mean = 0.0 if mean is _UNSET else mean
    for name, v in (("mean", mean), ("std", std)):
        _number_arg(v, "normal", name)
    if not std >= 0:  # (nan too)
        raise ValueError(f"normal: std must be non-negative, got {std}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _random_tensor("normal", shape, mean, std, dtype, requires_grad, "normal", generator, device)


def _normal_torch(
    mean: Any, std: Any, size: Any, dtype: Any, generator: Any, device: Any, requires_grad: bool
) -> Tensor:
    """PyTorch's `normal(mean, std, size)`: mean + std * N(0, 1) of their broadcast shape, or
    of `size` when both are numbers."""
    tensors = [v for v in (mean, std) if isinstance(v, Tensor)]
    for name, v in (("mean", mean), ("std", std)):
        if not isinstance(v, Tensor):
            _number_arg(v, "normal", name)
    if not isinstance(std, Tensor) and not std >= 0:  # (nan too)
        raise ValueError(f"normal: std must be non-negative, got {std}")
    if isinstance(std, Tensor):
        known = known_values(std)
        if known is not None and known.size and not (known >= 0).all():
            bad = known[~(known >= 0)].reshape(-1)[0]
            raise ValueError(f"normal: all elements of std must be non-negative, got {bad}")
    if not tensors:
        if size is None:
            raise TypeError("normal: with a number mean and std, pass size= (the shape of the samples)")
        size = (size,) if isinstance(size, int) else tuple(size)
        return _random_tensor("normal", size, mean, std, dtype, requires_grad, "normal", generator, device)
    if device is not None or requires_grad:
        raise TypeError("normal: device= and requires_grad= are for a number mean and std with size=, as in torch")
    if size is not None:
        raise TypeError(f"normal: size={size!r} is for a number mean and std; a tensor mean or std gives the shape")
    shape = np.broadcast_shapes(*(tuple(t.shape) for t in tensors))
    float_dtype = dtype or next((t.dtype for t in tensors if _dt.is_float(t.dtype)), None)
    eps = _random_tensor("normal", shape, 0.0, 1.0, float_dtype, False, "normal", generator)
    return _bin.add(_bin.mul(eps, std), mean)


@public()
def rand_like(
    x: Tensor,
    dtype: Any = None,
    *,
    generator: Any = None,
    requires_grad: bool = False,
    device: Any = None,
    layout: Any = None,
    memory_format: Any = None,
) -> Tensor:
    """Uniform [0, 1) samples with the shape (and dtype, unless given) of `x`.

    Args:
        x: the tensor whose shape (and dtype) to take.
        dtype: optional floating dtype.
        generator: a `nabla.Generator` to draw from (None: the global one).
        requires_grad: make the result a leaf that requires grad.
        device: where the result lives; None (torch's default) is x's device.
        layout, memory_format: accepted for PyTorch compatibility and ignored.
    """
    _check_tensor(x, "rand_like")
    dev = _like_device(x, device, "rand_like")
    return rand(x.shape, dtype=dtype or x.dtype, generator=generator, requires_grad=requires_grad, device=dev)


@public()
def randn_like(
    x: Tensor,
    dtype: Any = None,
    *,
    generator: Any = None,
    requires_grad: bool = False,
    device: Any = None,
    layout: Any = None,
    memory_format: Any = None,
) -> Tensor:
    """Standard normal samples with the shape (and dtype, unless given) of `x`.

    Args:
        x: the tensor whose shape (and dtype) to take.
        dtype: optional floating dtype.
        generator: a `nabla.Generator` to draw from (None: the global one).
        requires_grad: make the result a leaf that requires grad.
        device: where the result lives; None (torch's default) is x's device.
        layout, memory_format: accepted for PyTorch compatibility and ignored.
    """
    _check_tensor(x, "randn_like")
    dev = _like_device(x, device, "randn_like")
    return randn(x.shape, dtype=dtype or x.dtype, generator=generator, requires_grad=requires_grad, device=dev)


def known_values(x: Tensor) -> np.ndarray | None:
    """`x`'s value for an eager argument check (index bounds, probabilities), when the host has
    it already: None for a promise (a check never evaluates anything), inside vmap, and for a
    value on an accelerator (`host_values`: reading it back would wait for the device every
    step; PyTorch's CUDA kernels check on the device)."""
    impl = x._impl
    if impl.data is None or impl.batch_dims:
        return None
    if impl.sharding is None:
        return host_values(impl)
    return None if impl.device.is_accelerator else x.numpy()


@register("_check_probabilities")  # (also for Tensor.bernoulli_)
def _check_probabilities(p: Tensor, op: str) -> None:
    """torch's [0, 1] check of a tensor of probabilities, when the host has its values."""
    known = known_values(p)
    if known is not None and known.size and not ((known >= 0) & (known <= 1)).all():
        bad = known[~((known >= 0) & (known <= 1))].reshape(-1)[0]
        raise ValueError(f"{op}: p must hold probabilities in [0, 1], got {bad}")


def _probability(p: Any, op: str) -> float:
    p = _number_arg(p, op, "p")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: p must be a probability in [0, 1], got {p}")
    return float(p)


@public()
def bernoulli(p: Any, shape: Any = None, *, generator: Any = None) -> Tensor:
    """0/1 samples that are 1 with probability `p`.

    `p` is a float tensor of probabilities (`torch.bernoulli(input)`: the result has its shape
    and dtype), or a Python float together with `shape` (float32 result). Not differentiable:
    the gradient with respect to `p` is zero, as in PyTorch.

    Example:
        >>> nabla.bernoulli(0.5, (2, 3)).shape
        (2, 3)
    """
    if isinstance(p, Tensor):
        if shape is not None:
            raise TypeError("bernoulli: shape must be omitted when p is a Tensor (the result has p's shape)")
        if not _dt.is_float(p.dtype):
            raise TypeError(f"bernoulli: p must be a floating tensor of probabilities, got dtype {p.dtype.name}")
        _check_probabilities(p, "bernoulli")
        u = _draw("uniform", p.shape, p.dtype, 0.0, 1.0, generator_arg(generator, "bernoulli"))
        return cast(_bin.less(u, p), p.dtype)
    p = _probability(p, "bernoulli")
    if shape is None:
        raise TypeError("bernoulli: shape is required when p is a Python float")
    shape = _shape_arg((shape,) if isinstance(shape, int) else tuple(shape), "bernoulli")
    return _draw("bernoulli", shape, _dt.DEFAULT_FLOAT, p, generator=generator_arg(generator, "bernoulli"))


@register("_randint_bounds")  # (also for Tensor.random_)
def _randint_bounds(low: int, high: int, dt: Any, op: str, names: tuple[str, str] = ("low", "high")) -> None:
    """PyTorch's range check for integer draws into `dt`: low and high - 1 must be values of
    the dtype (an integer dtype's range; a float dtype's finite range), or the draws would wrap."""
    if _dt.is_integer(dt):
        info = np.iinfo(_dt.to_numpy_dtype(dt))
        lowest, highest = int(info.min), int(info.max)
    else:
        highest = 3.3895313892515355e38 if dt == _dt.bfloat16 else float(np.finfo(_dt.to_numpy_dtype(dt)).max)
        lowest = -highest
    if not lowest <= low <= highest:
        raise ValueError(f"{op}: {names[0]}={low} is out of bounds for {dt.name}: it must lie in [{lowest}, {highest}]")
    if not lowest <= high - 1 <= highest:
        raise ValueError(
            f"{op}: {names[1]} - 1 = {high - 1} is out of bounds for {dt.name}: it must lie in [{lowest}, {highest}]"
        )


@public()
def randint(
    low: Any = None,
    high: Any = None,
    shape: Any = None,
    dtype: Any = None,
    *,
    size: Any = None,
    generator: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    layout: Any = None,
) -> Tensor:
    """Uniform random integers in [low, high) (`torch.randint`); `randint(high, shape)` uses low=0.
    The shape may be given as torch's `size=`: `randint(0, 10, size=(2, 3))`, `randint(10, size=(3,))`,
    `randint(high=10, size=(3,))`. [low, high) must fit in `dtype`, as torch checks.

    Args:
        low, high: the bounds, ints (high excluded).
        shape: the shape (or torch's `size=`).
        dtype: int64 unless given (any integer or floating dtype).
        generator: a `nabla.Generator` to draw from (None: the global one).
        device: where the result lives ("cpu", "gpu:0", a `nabla.device`, `x.device`).
        requires_grad: make the result a leaf that requires grad (a float dtype only, as torch).
        layout: accepted for PyTorch compatibility and ignored.

    Example:
        >>> nabla.randint(0, 10, (2, 3)).dtype
        int64
    """
    dev = _check_device(device, "randint")
    if size is not None:
        if shape is not None or isinstance(high, tuple | list):
            raise TypeError(f"randint: pass the shape once, positionally or as size=, not both (size={size!r})")
        shape = size
        if high is None:  # randint(high, size=...)
            low, high = 0, low
    if shape is None and isinstance(high, tuple | list):  # randint(high, shape)
        low, high, shape = 0, low, high
    if low is None:  # randint(high=10, size=...)
        low = 0
    if shape is None:
        raise TypeError("randint: shape is required, e.g. randint(0, 10, (2, 3)) or randint(0, 10, size=(2, 3))")
    for name, v in (("low", low), ("high", high)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise TypeError(f"randint: {name} must be an int, got {v!r}")
    low, high = int(low), int(high)
    if high <= low:
        raise ValueError(f"randint: high={high} must be greater than low={low}")
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.int64
    if dt == _dt.bool_:
        raise TypeError("randint: dtype must be an integer or floating dtype, got bool")
    _randint_bounds(low, high, dt, "randint")
    shape = _shape_arg((shape,) if isinstance(shape, int) else tuple(shape), "randint")
    return _finish(_draw("randint", shape, dt, low, high, generator_arg(generator, "randint")), dev, requires_grad)


@public()
def randperm(
    n: int,
    dtype: Any = None,
    *,
    generator: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    layout: Any = None,
    pin_memory: bool = False,
) -> Tensor:
    """A random permutation of `0 .. n-1` (`torch.randperm`), int64 unless `dtype` is given.

    Args:
        n: the length.
        dtype: int64 unless given (any integer or floating dtype).
        generator: a `nabla.Generator` to draw from (None: the global one).
        device: where the result lives ("cpu", "gpu:0", a `nabla.device`, `x.device`).
        requires_grad: make the result a leaf that requires grad (a float dtype only, as torch).
        layout, pin_memory: accepted for PyTorch compatibility and ignored.

    Example:
        >>> sorted(nabla.randperm(4).tolist())
        [0, 1, 2, 3]
    """
    dev = _check_device(device, "randperm")
    n = _size_arg(n, "randperm", "n")
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.int64
    if dt == _dt.bool_:
        raise TypeError("randperm: dtype must be an integer or floating dtype, got bool")
    out = _draw("permutation", (n,), dt, generator=generator_arg(generator, "randperm"))
    return _finish(out, dev, requires_grad)


@public()
def permutation(n: int) -> Tensor:
    """NumPy's `random.permutation(n)`: a random int64 permutation of `0 .. n-1`."""
    if isinstance(n, Tensor):
        raise TypeError("permutation: n must be an int (shuffling a tensor is not supported yet)")
    return randperm(n)


@public()
def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Inverted dropout: zero each element with probability `p` and scale the rest by 1/(1-p).

    Identity when `training` is False or p == 0; p == 1 gives zeros. Differentiable with respect
    to `x`: the gradient is masked and scaled by the same mask as the forward pass.

    Example:
        >>> y = nabla.dropout(nabla.ones(1000), p=0.25)   # entries are 0 or 4/3
    """
    _check_tensor(x, "dropout")
    if not _dt.is_float(x.dtype):
        raise TypeError(f"dropout: x must be a floating tensor, got dtype {x.dtype.name}")
    p = _probability(p, "dropout")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return _bin.mul(x, 0.0)
    mask = _draw("bernoulli", x.shape, x.dtype, 1.0 - p)
    return _bin.mul(x, _bin.div(mask, 1.0 - p))


register("tensor")(tensor)

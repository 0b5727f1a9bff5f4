"""Creation ops: tensors from data, constant fills, ranges and random numbers.

Data (`tensor`, `asarray`) becomes a realized tensor at once: it is a graph *input*, so new
data never changes a cache key. Fills and ranges are graph ops: they fold into whatever graph
consumes them. Random ops read a per-call uint64 seed *input*, so a cached model still draws
fresh numbers on every run.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
from max.graph import DeviceRef, TensorType, ops

from ..core.common import dtypes as _dt
from ..core.tensor.dispatch import register
from ..core.tensor.impl import Device
from ..core.tensor.tensor import Tensor
from .base import AVal, Operation
from .cast import cast

__all__ = [
    "arange",
    "asarray",
    "from_numpy",
    "full",
    "full_like",
    "manual_seed",
    "normal",
    "ones",
    "ones_like",
    "rand",
    "rand_like",
    "randn",
    "randn_like",
    "tensor",
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


def _check_device(device: Any, op: str) -> None:
    if device is not None and str(device) not in ("cpu", "cpu:0") and not isinstance(device, Device):
        raise ValueError(f"{op}: device must be 'cpu' in this version, got {device!r}")


# -- data --------------------------------------------------------------------------------------
def tensor(data: Any, dtype: Any = None, *, requires_grad: bool = False, device: Any = None) -> Tensor:
    """Create a tensor from a Python scalar, nested list, NumPy array or Tensor (always copies).

    Python floats default to float32 and ints to int64, as in PyTorch; NumPy arrays keep
    their dtype.

    Args:
        data: the values.
        dtype: optional dtype (`nabla.float32`, `"float32"`, `np.float32`, ...).
        requires_grad: record operations on this tensor for autodiff.

    Example:
        >>> nabla.tensor([[1, 2], [3, 4]], dtype=nabla.float32).shape
        (2, 2)
    """
    _check_device(device, "tensor")
    if isinstance(data, Tensor):
        out = data.detach()
        out = cast(out, dtype) if dtype is not None else out
        return Tensor.from_numpy(np.array(out.numpy()), dtype=out.dtype, requires_grad=requires_grad)
    try:
        array = np.array(data)
    except ValueError:
        raise TypeError(f"tensor: cannot build a tensor from ragged nested sequences: {data!r:.80}") from None
    if dtype is None:
        if array.dtype == np.float64 and not isinstance(data, np.ndarray | np.generic):
            dtype = _dt.float32  # Python floats: PyTorch's default dtype
        elif array.dtype.kind in "iu" and not isinstance(data, np.ndarray | np.generic):
            dtype = _dt.int64
    if array.dtype == object:
        raise TypeError(f"tensor: cannot build a tensor from {type(data).__name__} data of ragged or mixed shape")
    return Tensor.from_numpy(array, dtype=dtype, requires_grad=requires_grad)


def asarray(data: Any, dtype: Any = None) -> Tensor:
    """Like `tensor` but without copying a NumPy array whose dtype and layout already fit."""
    if isinstance(data, Tensor):
        return data if dtype is None else cast(data, dtype)
    if isinstance(data, np.ndarray):
        return Tensor.from_numpy(data, dtype=dtype)
    return tensor(data, dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    return asarray(array)


# -- fills and ranges ------------------------------------------------------------------------
class FullOp(Operation):
    name = "full"
    host_constant = True
    differentiable = False

    def abstract_eval(self, *, shape: tuple, value: Any, dtype: Any) -> AVal:
        return shape, dtype

    def kernel(self, *, shape: tuple, value: Any, dtype: Any) -> Any:
        return ops.broadcast_to(ops.constant(value, dtype, DeviceRef.CPU()), shape)

    def numpy_kernel(self, *, shape: tuple, value: Any, dtype: Any) -> np.ndarray:
        return np.full(shape, value, dtype=_dt.to_numpy_dtype(dtype))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kwargs: Any) -> list:
        return []

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kwargs: Any) -> list:
        return [None]


_full = FullOp()


def _fill_value(value: Any, op: str) -> Any:
    if isinstance(value, Tensor):
        raise TypeError(f"{op}: fill_value must be a Python scalar, got a Tensor (use nabla.where or broadcasting)")
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, bool | int | float):
        raise TypeError(f"{op}: fill_value must be a Python scalar, got {type(value).__name__}")
    return value


def full(shape: Any, fill_value: Any, dtype: Any = None, *, requires_grad: bool = False, device: Any = None) -> Tensor:
    """A tensor of `shape` filled with `fill_value` (dtype inferred from the value if omitted)."""
    _check_device(device, "full")
    fill_value = _fill_value(fill_value, "full")
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.python_scalar_dtype(fill_value)
    if _dt.is_float(dt):
        fill_value = float(fill_value)
    elif dt == _dt.bool_:
        fill_value = bool(fill_value)
    else:
        fill_value = int(fill_value)
    out = _full(
        shape=_shape_arg((shape,) if isinstance(shape, int) else tuple(shape), "full"), value=fill_value, dtype=dt
    )
    return out.requires_grad_() if requires_grad else out


def zeros(*shape: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    """A tensor of zeros: `zeros(2, 3)` or `zeros((2, 3))`. float32 unless `dtype` says otherwise."""
    return full(_shape_arg(shape, "zeros"), 0, dtype or _dt.float32, requires_grad=requires_grad, device=device)


def ones(*shape: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    """A tensor of ones: `ones(2, 3)` or `ones((2, 3))`. float32 unless `dtype` says otherwise."""
    return full(_shape_arg(shape, "ones"), 1, dtype or _dt.float32, requires_grad=requires_grad, device=device)


def zeros_like(x: Tensor, dtype: Any = None) -> Tensor:
    return full(x.shape, 0, dtype or x.dtype)


def ones_like(x: Tensor, dtype: Any = None) -> Tensor:
    return full(x.shape, 1, dtype or x.dtype)


def full_like(x: Tensor, fill_value: Any, dtype: Any = None) -> Tensor:
    return full(x.shape, fill_value, dtype or x.dtype)


class ArangeOp(Operation):
    name = "arange"
    host_constant = True
    differentiable = False

    def abstract_eval(self, *, start: Any, step: Any, length: int, dtype: Any) -> AVal:
        return (length,), dtype

    def kernel(self, *, start: Any, step: Any, length: int, dtype: Any) -> Any:
        device = DeviceRef.CPU()
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


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Values from `start` to `end` (exclusive) by `step`, as `torch.arange` / `np.arange`."""
    _check_device(device, "arange")
    if end is None:
        start, end = 0, start
    for name, v in (("start", start), ("end", end), ("step", step)):
        if not isinstance(v, int | float) or isinstance(v, bool):
            raise TypeError(f"arange: {name} must be a Python number, got {v!r}")
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    length = max(0, math.ceil((end - start) / step))
    all_int = all(isinstance(v, int) for v in (start, end, step))
    dt = _dt.as_dtype(dtype) if dtype is not None else (_dt.int64 if all_int else _dt.float32)
    cast_num = float if _dt.is_float(dt) else int
    return _arange(start=cast_num(start), step=cast_num(step), length=length, dtype=dt)


# -- random ------------------------------------------------------------------------------------
class _SeedGenerator:
    """Nabla's global RNG: a counter hashed with the user's seed gives each random op call its
    own 64-bit seed, passed to the graph as an input."""

    def __init__(self, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> None:
        with self._lock:
            self._seed = int(seed)
            self._counter = 0

    def next_seed(self) -> int:
        with self._lock:
            self._counter += 1
            mixed = np.random.SeedSequence([self._seed & 0xFFFFFFFFFFFFFFFF, self._counter]).generate_state(
                2, np.uint32
            )
            return (int(mixed[0]) << 32) | int(mixed[1])


_GENERATOR = _SeedGenerator(0)


def manual_seed(seed: int) -> None:
    """Seed nabla's random number generator (random ops after this repeat the same values)."""
    _GENERATOR.manual_seed(seed)


def _seed_tensor() -> Tensor:
    return Tensor.from_numpy(np.array([_GENERATOR.next_seed()], dtype=np.uint64))


class RandomOp(Operation):
    """Draws from `distribution` ("uniform" with a=low, b=high; "normal" with a=mean, b=std)."""

    name = "random"
    host_constant = True
    differentiable = False

    def abstract_eval(self, seed: AVal, *, distribution: str, shape: tuple, dtype: Any, a: float, b: float) -> AVal:
        return shape, dtype

    def kernel(self, seed: Any, *, distribution: str, shape: tuple, dtype: Any, a: float, b: float) -> Any:
        ops.random.set_seed(seed)
        like = TensorType(dtype, shape, device=DeviceRef.CPU())
        if distribution == "uniform":
            return ops.random.uniform(like, range=(a, b))
        return ops.random.gaussian(like, mean=a, std=b)

    def numpy_kernel(
        self, seed: np.ndarray, *, distribution: str, shape: tuple, dtype: Any, a: float, b: float
    ) -> np.ndarray:
        rng = np.random.default_rng(int(seed[0]))
        if distribution == "uniform":
            return rng.uniform(a, b, size=shape)
        return rng.normal(a, b, size=shape)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kwargs: Any) -> list:
        return [None]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kwargs: Any) -> list:
        return [None]


_random = RandomOp()


def _random_tensor(
    distribution: str, shape: tuple, a: float, b: float, dtype: Any, requires_grad: bool, op: str
) -> Tensor:
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.float32
    if not _dt.is_float(dt):
        raise TypeError(f"{op}: dtype must be a floating dtype, got {dt.name}")
    out = _random(
        _seed_tensor(), distribution=distribution, shape=_shape_arg(shape, op), dtype=dt, a=float(a), b=float(b)
    )
    return out.requires_grad_() if requires_grad else out


def rand(*shape: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1)."""
    return _random_tensor("uniform", shape, 0.0, 1.0, dtype, requires_grad, "rand")


def randn(*shape: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples."""
    return _random_tensor("normal", shape, 0.0, 1.0, dtype, requires_grad, "randn")


def uniform(shape: Any = (), low: float = 0.0, high: float = 1.0, *, dtype: Any = None) -> Tensor:
    """Uniform samples in [low, high)."""
    return _random_tensor(
        "uniform", (shape,) if isinstance(shape, int) else tuple(shape), low, high, dtype, False, "uniform"
    )


def normal(shape: Any = (), mean: float = 0.0, std: float = 1.0, *, dtype: Any = None) -> Tensor:
    """Normal samples with the given mean and standard deviation."""
    if std < 0:
        raise ValueError(f"normal: std must be non-negative, got {std}")
    return _random_tensor(
        "normal", (shape,) if isinstance(shape, int) else tuple(shape), mean, std, dtype, False, "normal"
    )


def rand_like(x: Tensor) -> Tensor:
    return rand(x.shape, dtype=x.dtype)


def randn_like(x: Tensor) -> Tensor:
    return randn(x.shape, dtype=x.dtype)


register("zeros_like")(zeros_like)
register("ones_like")(ones_like)
register("tensor")(tensor)
register("full")(full)

"""torch's top-level functions that nabla's op library spells otherwise or has only as Tensor
methods: `nabla.mm(a, b)`, `nabla.median(x, dim)`, `nabla.hstack(...)`, `nabla.cdist(x1, x2)`,
`nabla.searchsorted(...)`, window functions, ... Each is a composite of public ops (or the Tensor
method of the same name), so derivatives, vmap and the MAX lowering come from those ops;
`tests/test_torch_functions.py` checks them against torch and NumPy.
"""

from __future__ import annotations

import builtins
import itertools
import math
from collections import namedtuple
from typing import Any

import numpy as np

from . import ops
from .core.common import dtypes as _dt
from .core.common.context import set_autocast
from .core.tensor import Size, Tensor
from .core.tensor.dispatch import register
from .core.tensor.tensor import _var_args
from .ops.cast import autocast_operands, autocast_to_float32
from .ops.creation import known_values
from .ops.linalg import _as_tensor
from .ops.linalg import vander as _linalg_vander
from .ops.reduction import _safe_root, keep_in_graph
from .ops.view import normalize_axis

__all__ = [
    "BFloat16Tensor",
    "BoolTensor",
    "ByteTensor",
    "CharTensor",
    "DoubleTensor",
    "FloatTensor",
    "HalfTensor",
    "IntTensor",
    "LongTensor",
    "ShortTensor",
    "adjoint",
    "allclose",
    "argwhere",
    "as_tensor",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "bartlett_window",
    "blackman_window",
    "block_diag",
    "bmm",
    "broadcast_tensors",
    "bucketize",
    "cartesian_prod",
    "cdist",
    "chain_matmul",
    "clamp_max",
    "clamp_min",
    "clone",
    "column_stack",
    "combinations",
    "count_nonzero",
    "diff",
    "dist",
    "dstack",
    "empty_strided",
    "equal",
    "fill",
    "frac",
    "frexp",
    "frobenius_norm",
    "hamming_window",
    "hann_window",
    "histogram",
    "hstack",
    "index_put",
    "index_reduce",
    "inverse",
    "is_floating_point",
    "is_nonzero",
    "is_same_size",
    "is_tensor",
    "isin",
    "kaiser_window",
    "kthvalue",
    "lerp",
    "masked_select",
    "max",
    "median",
    "min",
    "mm",
    "multinomial",
    "narrow",
    "nonzero",
    "nuclear_norm",
    "numel",
    "prelu",
    "randint_like",
    "row_stack",
    "rsub",
    "scalar_tensor",
    "searchsorted",
    "select",
    "split_with_sizes",
    "std_mean",
    "swapdims",
    "t",
    "tril_indices",
    "triu_indices",
    "unique_consecutive",
    "unravel_index",
    "vander",
    "var_mean",
    "vstack",
]

FrexpResult = namedtuple("FrexpResult", ["mantissa", "exponent"])
HistogramResult = namedtuple("HistogramResult", ["hist", "bin_edges"])
StdMean = namedtuple("StdMean", ["std", "mean"])
VarMean = namedtuple("VarMean", ["var", "mean"])


def _tensor(x: Any, op: str, arg: str = "input") -> Tensor:
    return _as_tensor(x, op, arg)


def _tensors(xs: Any, op: str) -> list[Tensor]:
    if isinstance(xs, Tensor) or not isinstance(xs, list | tuple):
        raise TypeError(f"{op}: tensors must be a list or tuple of Tensors, got {type(xs).__name__}")
    return [_tensor(x, op, f"tensors[{i}]") for i, x in enumerate(xs)]


# -- torch functions that are nabla Tensor methods -----------------------------------------------
def mm(input: Any, mat2: Any) -> Tensor:
    """torch.mm: the product of two matrices (2-D only)."""
    return _tensor(input, "mm").mm(mat2)


def bmm(input: Any, mat2: Any) -> Tensor:
    """torch.bmm: batched matrix products of (b, n, m) and (b, m, p)."""
    return _tensor(input, "bmm").bmm(mat2)


def clone(input: Any) -> Tensor:
    """torch.clone: a copy that autodiff tracks."""
    return _tensor(input, "clone").clone()


def lerp(input: Any, end: Any, weight: Any) -> Tensor:
    """torch.lerp: input + weight * (end - input)."""
    return _tensor(input, "lerp").lerp(end, weight)


def median(input: Any, dim: int | None = None, keepdim: bool = False) -> Any:
    """torch.median: the lower median of all elements, or `(values, indices)` over `dim`."""
    return _tensor(input, "median").median(dim, keepdim)


def max(input: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: Any = None) -> Any:  # noqa: A001
    """torch.max: the maximum of all elements; over an int `dim` (positional or `dim=`),
    `(values, indices)` as torch; with a tensor second argument the elementwise maximum. The
    NumPy/JAX spelling `max(x, axis=..., keepdims=...)` (or a tuple of dims) gives the values only."""
    if isinstance(dim, tuple | list):  # (torch has no tuple form: NumPy's, values only)
        dim, axis = None, dim
    return _tensor(input, "max").max(dim, keepdim, axis=axis, keepdims=keepdims)


def min(input: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: Any = None) -> Any:  # noqa: A001
    """torch.min: as `max` (`(values, indices)` over an int `dim`; values with `axis=`)."""
    if isinstance(dim, tuple | list):
        dim, axis = None, dim
    return _tensor(input, "min").min(dim, keepdim, axis=axis, keepdims=keepdims)


class _LegacyTensorType(type):
    """`isinstance(x, nabla.FloatTensor)`: a Tensor of that dtype, as torch's legacy types."""

    _dtype: Any = None

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype == cls._dtype


class _LegacyTensor(metaclass=_LegacyTensorType):
    """torch's legacy constructors: `FloatTensor(data)`, `FloatTensor(*sizes)` or
    `FloatTensor(x.size())` (zeros: torch's are uninitialized), `FloatTensor()` (empty)."""

    def __new__(cls, *args: Any) -> Tensor:  # type: ignore[misc]
        if len(args) == 1 and isinstance(args[0], Size):
            args = tuple(args[0])
        elif len(args) == 1 and not isinstance(args[0], int):
            return ops.tensor(args[0], cls._dtype)
        if not args:
            return ops.zeros((0,), dtype=cls._dtype)
        if not all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            raise TypeError(f"{cls.__name__}: expected data or sizes (ints), got {args!r}")
        return ops.zeros(args, dtype=cls._dtype)


def _legacy(dtype: Any, name: str) -> type:
    return _LegacyTensorType(
        name, (_LegacyTensor,), {"_dtype": dtype, "__doc__": f"A {dtype.name} tensor (torch's legacy {name})."}
    )


FloatTensor = _legacy(_dt.float32, "FloatTensor")
DoubleTensor = _legacy(_dt.float64, "DoubleTensor")
HalfTensor = _legacy(_dt.float16, "HalfTensor")
BFloat16Tensor = _legacy(_dt.bfloat16, "BFloat16Tensor")
LongTensor = _legacy(_dt.int64, "LongTensor")
IntTensor = _legacy(_dt.int32, "IntTensor")
ShortTensor = _legacy(_dt.int16, "ShortTensor")
CharTensor = _legacy(_dt.int8, "CharTensor")
ByteTensor = _legacy(_dt.uint8, "ByteTensor")
BoolTensor = _legacy(_dt.bool_, "BoolTensor")


def kthvalue(input: Any, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """torch.kthvalue: `(values, indices)` of the k-th smallest element over `dim`."""
    return _tensor(input, "kthvalue").kthvalue(k, dim, keepdim)


def nonzero(input: Any, *, as_tuple: bool = False) -> Any:
    """torch.nonzero: the indices of nonzero elements (read on the host: the size depends on them)."""
    return _tensor(input, "nonzero").nonzero(as_tuple=as_tuple)


def argwhere(input: Any) -> Tensor:
    """torch.argwhere: `nonzero(input)`."""
    return _tensor(input, "argwhere").argwhere()


def narrow(input: Any, dim: int, start: int, length: int) -> Tensor:
    """torch.narrow: `length` entries of `dim` from `start` (a view)."""
    return _tensor(input, "narrow").narrow(dim, start, length)


def select(input: Any, dim: int, index: int) -> Tensor:
    """torch.select: the slice at `index` of `dim`, which is removed (a view)."""
    return _tensor(input, "select").select(dim, index)


def masked_select(input: Any, mask: Any) -> Tensor:
    """torch.masked_select: the elements where the broadcast `mask` is True, as a 1-D tensor."""
    return _tensor(input, "masked_select").masked_select(mask)


def allclose(input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """torch.allclose: whether |input - other| <= atol + rtol |other| everywhere."""
    return _tensor(input, "allclose").allclose(other, rtol, atol, equal_nan)


def equal(input: Any, other: Any) -> bool:  # (nabla.ops.equal / nabla.eq: the elementwise comparison)
    """torch.equal: whether both have the same shape and the same values, a Python bool (reads
    them). The elementwise comparison is `nabla.eq` (`nabla.ops.equal`), as torch's `eq`.

    Example:
        >>> nabla.equal(nabla.ones(2), nabla.ones(2)), nabla.eq(nabla.ones(2), nabla.ones(2)).tolist()
        (True, [True, True])
    """
    return _tensor(input, "equal").equal(_tensor(other, "equal", "other"))


def count_nonzero(input: Any, dim: Any = None) -> Tensor:
    """torch.count_nonzero over `dim` (all elements when None)."""
    return _tensor(input, "count_nonzero").count_nonzero(dim)


def diff(input: Any, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None) -> Tensor:
    """torch.diff: the n-th forward difference over `dim`, after `prepend`/`append` are joined."""
    x = _tensor(input, "diff")
    parts = [
        _tensor(p, "diff", name)
        for p, name in ((prepend, "prepend"), (x, "input"), (append, "append"))
        if p is not None
    ]
    return (ops.cat(parts, dim) if len(parts) > 1 else x).diff(n, dim)


def dist(input: Any, other: Any, p: float = 2) -> Tensor:
    """torch.dist: the p-norm of input - other."""
    return _tensor(input, "dist").dist(other, p)


def frac(input: Any) -> Tensor:
    """torch.frac: input - trunc(input)."""
    return _tensor(input, "frac").frac()


def numel(input: Any) -> int:
    """torch.numel: the number of elements."""
    return _tensor(input, "numel").numel()


def is_tensor(obj: Any) -> bool:
    """torch.is_tensor: whether obj is a nabla Tensor."""
    return isinstance(obj, Tensor)


def is_floating_point(input: Any) -> bool:
    return _tensor(input, "is_floating_point").is_floating_point()


def is_nonzero(input: Any) -> bool:
    return _tensor(input, "is_nonzero").is_nonzero()


def rsub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """torch.rsub: other - alpha * input."""
    x = _tensor(input, "rsub")
    return ops.sub(other, x if alpha == 1 else ops.mul(x, alpha))


# -- creation --------------------------------------------------------------------------------------
def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """torch.as_tensor: `data` itself when it is a Tensor of that dtype and device, else a tensor of it."""
    if isinstance(data, Tensor):
        out = data if dtype is None else data.astype(dtype)
        return out if device is None else out.to(device)
    return ops.tensor(data, dtype=dtype, device=device)


def scalar_tensor(
    s: Any,
    dtype: Any = None,
    device: Any = None,
    *,
    requires_grad: bool = False,
    layout: Any = None,
    pin_memory: bool = False,
) -> Tensor:
    """torch.scalar_tensor: a 0-d tensor (float32 by default, as torch).

    Args:
        s: the value, a Python number.
        dtype: optional dtype.
        device: where the result lives ("cpu", "gpu:0", a `nabla.device`, `x.device`).
        requires_grad: make the result a leaf that requires grad (float dtypes only).
        layout, pin_memory: accepted for PyTorch compatibility and ignored.
    """
    return ops.tensor(float(s) if dtype is None else s, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_strided(
    size: Any,
    stride: Any,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """torch.empty_strided for row-major (contiguous) strides: `empty(size)`, zeros here.

    Args:
        size: the shape.
        stride: the strides in elements; only the row-major ones of `size` are supported.
        dtype, device, requires_grad: as `nabla.empty`'s.
        layout, pin_memory: accepted for PyTorch compatibility and ignored.
    """
    shape = tuple(size)
    if len(tuple(stride)) != len(shape):
        raise ValueError(f"empty_strided: stride {tuple(stride)} must have one entry per dim of size {shape}")
    row_major = [int(np.prod(shape[i + 1 :], dtype=np.int64)) for i in range(len(shape))]
    if any(n > 1 and int(st) != rm for n, st, rm in zip(shape, stride, row_major, strict=True)):
        raise NotImplementedError(
            f"empty_strided: only row-major strides are supported ({tuple(row_major)} for size {shape}), "
            f"got {tuple(stride)}"
        )
    return ops.empty(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def randint_like(
    input: Any,
    low: int = 0,
    high: int | None = None,
    *,
    dtype: Any = None,
    generator: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    layout: Any = None,
    memory_format: Any = None,
) -> Tensor:
    """torch.randint_like: integers in [low, high) of input's shape (and dtype unless given);
    `randint_like(x, high)` as in torch.

    Args:
        input: the tensor whose shape (and dtype) to take.
        low, high: the bounds (high excluded).
        dtype: optional dtype.
        generator: a `nabla.Generator` to draw from (None: the global one).
        device: where the result lives; None (torch's default) is input's device.
        requires_grad: make the result a leaf that requires grad (a float dtype only, as torch).
        layout, memory_format: accepted for PyTorch compatibility and ignored.
    """
    x = _tensor(input, "randint_like")
    if high is None:
        low, high = 0, low
    return ops.randint(
        low,
        high,
        tuple(x.shape),
        dtype=dtype or x.dtype,
        generator=generator,
        device=x.device if device is None else device,
        requires_grad=requires_grad,
    )


def _window(name: str, n: int, periodic: bool) -> tuple[np.ndarray, int]:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise ValueError(f"{name}: window_length must be a non-negative int, got {n!r}")
    m = n + 1 if periodic else n  # a periodic window is the symmetric one of n + 1, last point dropped
    return np.arange(m, dtype=np.float64), m


def _finish_window(values: np.ndarray, n: int, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    if n == 1:  # torch: every window of length 1 is [1]
        values = np.ones(1)
    dt = dtype or _dt.float32
    if not n:
        return ops.zeros(0, dtype=dt, device=device, requires_grad=requires_grad)
    return ops.tensor(values[:n], dtype=dt, device=device, requires_grad=requires_grad)


def _cosine_window(name: str, n: int, periodic: bool, dtype: Any, coeffs: tuple, *placement: Any) -> Tensor:
    k, m = _window(name, n, periodic)
    if m == 1:
        return _finish_window(np.ones(1), n, dtype, *placement)
    phase = 2 * math.pi * k / (m - 1)
    values = sum(c * (-1) ** i * np.cos(i * phase) for i, c in enumerate(coeffs))
    return _finish_window(values, n, dtype, *placement)


# The windows' keywords after dtype (torch's): device=, requires_grad= (a leaf that requires
# grad), and layout= (with hamming's pin_memory=) accepted and ignored.
def hann_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """torch.hann_window: 0.5 - 0.5 cos(2 pi k / (N - 1)) (N = window_length + 1 when periodic)."""
    return _cosine_window("hann_window", window_length, periodic, dtype, (0.5, 0.5), device, requires_grad)


def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    """torch.hamming_window: alpha - beta cos(2 pi k / (N - 1))."""
    return _cosine_window("hamming_window", window_length, periodic, dtype, (alpha, beta), device, requires_grad)


def blackman_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """torch.blackman_window: 0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))."""
    coeffs = (0.42, 0.5, 0.08)
    return _cosine_window("blackman_window", window_length, periodic, dtype, coeffs, device, requires_grad)


def bartlett_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """torch.bartlett_window: the triangle 1 - |2k / (N - 1) - 1|."""
    k, m = _window("bartlett_window", window_length, periodic)
    values = np.ones(1) if m == 1 else 1 - np.abs(2 * k / (m - 1) - 1)
    return _finish_window(values, window_length, dtype, device, requires_grad)


def kaiser_window(
    window_length: int,
    periodic: bool = True,
    beta: float = 12.0,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """torch.kaiser_window: I0(beta sqrt(1 - (2k / (N - 1) - 1)^2)) / I0(beta)."""
    k, m = _window("kaiser_window", window_length, periodic)
    values = (
        np.ones(1) if m == 1 else np.i0(beta * np.sqrt(np.clip(1 - (2 * k / (m - 1) - 1) ** 2, 0, None))) / np.i0(beta)
    )
    return _finish_window(values, window_length, dtype, device, requires_grad)


# -- shapes ----------------------------------------------------------------------------------------
def _atleast_shape(shape: tuple, ndim: int) -> tuple:
    """torch's: a scalar becomes (1,) * ndim, a vector (1, n) or (1, n, 1), a matrix (m, n, 1)."""
    if len(shape) >= ndim:
        return shape
    if not shape:
        return (1,) * ndim
    if len(shape) == 1:
        return (1, shape[0], 1)[:ndim] if ndim == 3 else (1, shape[0])[-ndim:]
    return shape + (1,)


def _atleast_all(op: str, ndim: int, xs: Any) -> list[Tensor]:
    return [ops.reshape(x, _atleast_shape(tuple(x.shape), ndim)) for x in (_tensor(t, op) for t in xs)]


def _atleast(op: str, ndim: int, tensors: tuple) -> Any:
    xs = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], list | tuple) else tensors
    out = _atleast_all(op, ndim, xs)
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*tensors: Any) -> Any:
    """torch.atleast_1d: each tensor with at least one dim (a tuple for several)."""
    return _atleast("atleast_1d", 1, tensors)


def atleast_2d(*tensors: Any) -> Any:
    """torch.atleast_2d: a vector becomes a row (1, n)."""
    return _atleast("atleast_2d", 2, tensors)


def atleast_3d(*tensors: Any) -> Any:
    """torch.atleast_3d: a vector becomes (1, n, 1), a matrix (m, n, 1)."""
    return _atleast("atleast_3d", 3, tensors)


def broadcast_tensors(*tensors: Any) -> tuple[Tensor, ...]:
    """torch.broadcast_tensors: every tensor broadcast to their common shape."""
    xs = [_tensor(t, "broadcast_tensors", f"tensors[{i}]") for i, t in enumerate(tensors)]
    shape = ops.broadcast_shapes(*[x.shape for x in xs])
    return tuple(ops.broadcast_to(x, shape) for x in xs)


def hstack(tensors: Any) -> Tensor:
    """torch.hstack: 1-D tensors joined end to end, others along dim 1."""
    xs = _atleast_all("hstack", 1, _tensors(tensors, "hstack"))
    return ops.cat(xs, 0 if xs[0].ndim == 1 else 1)


def vstack(tensors: Any) -> Tensor:
    """torch.vstack (row_stack): rows stacked, 1-D tensors as rows."""
    return ops.cat(_atleast_all("vstack", 2, _tensors(tensors, "vstack")), 0)


row_stack = vstack


def dstack(tensors: Any) -> Tensor:
    """torch.dstack: joined along the third dim (atleast_3d first)."""
    return ops.cat(_atleast_all("dstack", 3, _tensors(tensors, "dstack")), 2)


def column_stack(tensors: Any) -> Tensor:
    """torch.column_stack: 0-D and 1-D tensors become columns, then joined along dim 1."""
    xs = [ops.reshape(x, (x.numel(), 1)) if x.ndim <= 1 else x for x in _tensors(tensors, "column_stack")]
    return ops.cat(xs, 1)


def block_diag(*tensors: Any) -> Tensor:
    """torch.block_diag: the (at most 2-D) tensors on the diagonal of one matrix, zeros elsewhere."""
    xs = []
    for i, t in enumerate(tensors):
        x = _tensor(t, "block_diag", f"tensors[{i}]")
        if x.ndim > 2:
            raise ValueError(f"block_diag: tensors[{i}] must have at most 2 dims, got shape {x.shape}")
        xs.append(ops.reshape(x, (1,) * (2 - x.ndim) + tuple(x.shape)) if x.ndim < 2 else x)
    if not xs:
        return ops.zeros(1, 0)
    dtype = xs[0].dtype
    for x in xs[1:]:
        dtype = _dt.promote_types(dtype, x.dtype)
    width = sum(x.shape[1] for x in xs)
    rows, left = [], 0
    for x in xs:
        rows.append(ops.pad(x.astype(dtype), (left, width - left - x.shape[1])))
        left += x.shape[1]
    return ops.cat(rows, 0)


def cartesian_prod(*tensors: Any) -> Tensor:
    """torch.cartesian_prod: every combination of the 1-D tensors' elements, one per row (a
    single tensor comes back as it is)."""
    xs = [_tensor(t, "cartesian_prod", f"tensors[{i}]") for i, t in enumerate(tensors)]
    for i, x in enumerate(xs):
        if x.ndim != 1:
            raise ValueError(f"cartesian_prod: tensors[{i}] must be 1-D, got shape {x.shape}")
    if len(xs) == 1:
        return xs[0]
    grids = ops.meshgrid(*xs, indexing="ij")
    return ops.stack([ops.reshape(g, (g.numel(),)) for g in grids], 1)


# -- distances, searching, statistics ------------------------------------------------------
_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def cdist(x1: Any, x2: Any, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """torch.cdist: the p-norm distances between the rows of x1 (..., P, M) and x2 (..., R, M),
    (..., P, R); batch dims broadcast. The gradient at a zero distance is 0, as torch's.

    For p = 2 with more than 25 rows on either side (torch's `compute_mode` default), the
    squared distances come from one matmul, |a|^2 + |b|^2 - 2 a b^T, as torch's: memory
    O(P R), not O(P R M) (with torch's rounding for nearly equal rows)."""
    a, b = _tensor(x1, "cdist", "x1"), _tensor(x2, "cdist", "x2")
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-1]:
        raise ValueError(f"cdist: x1 {a.shape} and x2 {b.shape} must be (..., P, M) and (..., R, M)")
    if p < 0:
        raise ValueError(f"cdist: p must be non-negative, got {p}")
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"cdist: compute_mode must be one of {_CDIST_MODES}, got {compute_mode!r}")
    previous = set_autocast(None)  # (cdist runs in float32 under torch's autocast)
    try:
        a, b = autocast_to_float32(a), autocast_to_float32(b)
        large = a.shape[-2] > 25 or b.shape[-2] > 25
        if p == 2 and (compute_mode == _CDIST_MODES[1] or (compute_mode == _CDIST_MODES[0] and large)):
            return _euclidean_by_matmul(a, b)
        d = ops.sub(ops.unsqueeze(a, -2), ops.unsqueeze(b, -3))  # (..., P, R, M)
        out = ops.norm(d, float(p), -1)
        return keep_in_graph(out, d) if p == 0 else out  # (p=0 counts: a zero gradient, as torch)
    finally:
        set_autocast(previous)


def _euclidean_by_matmul(a: Tensor, b: Tensor) -> Tensor:
    aa = ops.sum(ops.mul(a, a), axis=-1, keepdims=True)  # (..., P, 1)
    bb = ops.unsqueeze(ops.sum(ops.mul(b, b), axis=-1), -2)  # (..., 1, R)
    d2 = ops.maximum(ops.sub(ops.add(aa, bb), ops.mul(ops.matmul(a, ops.swapaxes(b, -1, -2)), 2.0)), 0.0)
    return _safe_root(d2, 2.0)  # (a zero distance has gradient 0, as norm's)


def searchsorted(
    sorted_sequence: Any,
    input: Any,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter: Any = None,
) -> Tensor:
    """torch.searchsorted: for each value, the index where it would be inserted into the sorted
    last dim of `sorted_sequence` (the first such index, or the last for right=True / side='right').
    A 1-D sequence serves every value; otherwise the leading dims match input's."""
    seq, x = _tensor(sorted_sequence, "searchsorted", "sorted_sequence"), _tensor(input, "searchsorted")
    if side is not None:
        if side not in ("left", "right"):
            raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
        right = side == "right"
    if sorter is not None:
        seq = ops.take_along_dim(seq, sorter, -1)
    if seq.ndim > 1 and tuple(seq.shape[:-1]) != tuple(x.shape[:-1]):
        raise ValueError(
            f"searchsorted: sorted_sequence {seq.shape} and input {x.shape} must have the same leading dims"
        )
    vals = ops.unsqueeze(x, -1)  # (..., V, 1) against (..., 1, N)
    bounds = seq if seq.ndim == 1 else ops.unsqueeze(seq, -2)
    below = ops.less_equal(bounds, vals) if right else ops.less(bounds, vals)
    if _dt.is_float(x.dtype):  # NaN sorts last (torch's and NumPy's order): after every bound
        below = ops.logical_or(below, ops.isnan(vals))
    return ops.sum(below.astype(_dt.int64), -1).astype(_dt.int32 if out_int32 else _dt.int64)


def bucketize(input: Any, boundaries: Any, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """torch.bucketize: the bucket of each value among the sorted 1-D `boundaries` (right=False:
    boundaries[i-1] < x <= boundaries[i])."""
    b = _tensor(boundaries, "bucketize", "boundaries")
    if b.ndim != 1:
        raise ValueError(f"bucketize: boundaries must be 1-D, got shape {b.shape}")
    return searchsorted(b, input, out_int32=out_int32, right=right)


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """torch.isin: whether each element occurs in test_elements (a bool tensor of elements' shape)."""
    x, t = _tensor(elements, "isin", "elements"), _tensor(test_elements, "isin", "test_elements")
    found = ops.any(ops.equal(ops.unsqueeze(x, -1), ops.reshape(t, (t.numel(),))), -1)
    return ops.logical_not(found) if invert else found


def std_mean(
    input: Any, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *, correction: Any = None
) -> StdMean:
    """torch.std_mean: `(std, mean)` over `dim` (`unbiased` or `correction`, as torch.std)."""
    x = _tensor(input, "std_mean")
    dim, correction = _var_args(dim, unbiased, correction)
    return StdMean(ops.std(x, dim, correction, keepdim), ops.mean(x, dim, keepdim))


def var_mean(
    input: Any, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *, correction: Any = None
) -> VarMean:
    """torch.var_mean: `(var, mean)` over `dim` (`unbiased` or `correction`, as torch.var)."""
    x = _tensor(input, "var_mean")
    dim, correction = _var_args(dim, unbiased, correction)
    return VarMean(ops.var(x, dim, correction, keepdim), ops.mean(x, dim, keepdim))


# -- sampling, activations, float decomposition, runs ----------------------------------------------
@register()
def multinomial(input: Any, num_samples: int, replacement: bool = False, *, generator: Any = None) -> Tensor:
    """torch.multinomial: `num_samples` category indices per row of the (unnormalized,
    non-negative) weights `input` (1-D or 2-D), int64. With replacement, inverse-CDF sampling;
    without, the Gumbel top-k trick (each draw a category not drawn before in its row). The
    draws come from `generator` (a nabla.Generator; nabla's global one, `nabla.manual_seed`,
    by default), fresh on each call."""
    w = _tensor(input, "multinomial")
    if w.ndim not in (1, 2) or not _dt.is_float(w.dtype):
        raise ValueError(
            f"multinomial: input must be a 1-D or 2-D floating tensor of weights, got {w.dtype.name} {w.shape}"
        )
    if isinstance(num_samples, bool) or not isinstance(num_samples, int | np.integer) or num_samples <= 0:
        raise ValueError(f"multinomial: num_samples must be a positive int, got {num_samples!r}")
    known = known_values(w)  # (checked when the host has the weights)
    if known is not None and not (np.isfinite(known) & (known >= 0)).all():
        raise ValueError("multinomial: the weights contain inf, nan or a negative value")
    positive = None if known is None or not known.size else known.reshape(-1, w.shape[-1]).sum(-1) > 0
    if positive is not None and not positive.all():
        where = f" in row {int(np.argmin(positive))}" if w.ndim == 2 else ""
        raise ValueError(f"multinomial: invalid multinomial distribution (sum of probabilities <= 0){where}")
    n = w.shape[-1]
    if not replacement and num_samples > n:
        raise ValueError(f"multinomial: cannot draw {num_samples} samples without replacement from {n} categories")
    rows = w if w.ndim == 2 else ops.unsqueeze(w, 0)
    if replacement:
        cdf = ops.cumsum(rows, -1)
        u = ops.mul(ops.rand(rows.shape[0], num_samples, dtype=w.dtype, generator=generator), cdf.narrow(-1, n - 1, 1))
        out = ops.sum(ops.less_equal(ops.unsqueeze(cdf, -2), ops.unsqueeze(u, -1)).astype(_dt.int64), -1)
        out = ops.minimum(out, n - 1)  # u == total (rounding): the last category
    else:
        gumbel = ops.neg(ops.log(ops.neg(ops.log(ops.rand(*rows.shape, dtype=w.dtype, generator=generator)))))
        keys = ops.where(ops.greater(rows, 0), ops.add(ops.log(rows), gumbel), -math.inf)
        out = ops.topk(keys, num_samples, -1).indices
    return out if w.ndim == 2 else ops.reshape(out, (num_samples,))


@register()
def prelu(input: Any, weight: Any) -> Tensor:
    """torch.prelu: max(0, x) + weight * min(0, x), a 1-D weight per channel (dim 1) or one."""
    x, w = autocast_operands(_tensor(input, "prelu"), _tensor(weight, "prelu", "weight"))  # (on autocast's list)
    if w.numel() > 1:
        if x.ndim < 2 or w.ndim != 1 or w.shape[0] != x.shape[1]:
            raise ValueError(f"prelu: weight of shape {w.shape} must have one entry per channel of input {x.shape}")
        w = ops.reshape(w, (w.shape[0],) + (1,) * (x.ndim - 2))
    return ops.where(ops.greater_equal(x, 0), x, ops.mul(w, x))


@register()
def frexp(input: Any) -> FrexpResult:
    """torch.frexp: `(mantissa, exponent)` with input = mantissa * 2^exponent, 0.5 <= |mantissa| < 1
    (exponent int32; 0, inf and nan give themselves and 0)."""
    x = _tensor(input, "frexp")
    if not _dt.is_float(x.dtype):
        raise TypeError(f"frexp: expected a floating-point tensor, got dtype {x.dtype.name}")
    finite = ops.logical_and(ops.isfinite(x), ops.not_equal(x, 0))
    safe = ops.where(finite, ops.abs(x), 1.0)
    e = ops.add(ops.floor(ops.log2(safe)), 1.0)
    half = ops.floor(ops.mul(e, 0.5))  # 2^-e in two factors: 2^-e alone overflows for subnormal x
    m = ops.mul(ops.mul(safe, ops.exp2(ops.neg(half))), ops.exp2(ops.sub(half, e)))
    e = ops.where(ops.greater_equal(m, 1.0), ops.add(e, 1.0), ops.where(ops.less(m, 0.5), ops.sub(e, 1.0), e))
    m = ops.where(ops.greater_equal(m, 1.0), ops.mul(m, 0.5), ops.where(ops.less(m, 0.5), ops.mul(m, 2.0), m))
    m = ops.where(finite, ops.where(ops.less(x, 0), ops.neg(m), m), x)
    return FrexpResult(m, ops.where(finite, e, 0.0).astype(_dt.int32))


@register()
def unique_consecutive(
    input: Any, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> Any:
    """torch.unique_consecutive: each run of equal consecutive elements (or slices along `dim`)
    kept once. The size depends on the values, which are read on the host; not differentiable."""
    x = _tensor(input, "unique_consecutive")
    data = x.numpy()
    if dim is None:
        flat = data.reshape(-1)
        starts = np.ones(flat.shape[0], bool)
        starts[1:] = flat[1:] != flat[:-1]
        values = flat[starts]
    else:
        d = normalize_axis(dim, x.ndim, "unique_consecutive", "dim")
        moved = np.moveaxis(data, d, 0)
        starts = np.ones(moved.shape[0], bool)
        starts[1:] = np.any((moved[1:] != moved[:-1]).reshape(moved.shape[0] - 1, -1), axis=1) if moved.shape[0] else []
        values = np.moveaxis(moved[starts], 0, d)
    run = np.cumsum(starts) - 1
    out = [ops.tensor(np.ascontiguousarray(values), dtype=x.dtype)]
    if return_inverse:
        out.append(ops.tensor(run.reshape(data.shape if dim is None else (-1,)).astype(np.int64)))
    if return_counts:
        out.append(ops.tensor(np.bincount(run, minlength=int(starts.sum())).astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


@register()
def histogram(input: Any, bins: Any = 100, *, range: Any = None, weight: Any = None, density: bool = False) -> Any:  # noqa: A002
    """torch.histogram: `(hist, bin_edges)` of the flattened input. `bins` is a count of equal
    bins over `range` (the data's min and max by default, widened by 1/2 each way when they are
    equal) or a 1-D tensor of increasing edges; bin i holds edges[i] <= x < edges[i + 1], the last
    one also its right edge, and values outside are dropped. `weight` (input's shape) weights
    each value; `density` divides by the total and the bin widths. No gradient."""
    x = _tensor(input, "histogram")
    if not _dt.is_float(x.dtype):
        raise TypeError(f"histogram: expected a floating-point tensor, got dtype {x.dtype.name}")
    flat = ops.reshape(x, (x.numel(),))
    if isinstance(bins, Tensor):
        if bins.ndim != 1 or bins.shape[0] < 2:
            raise ValueError(f"histogram: bins must be a 1-D tensor of at least 2 edges, got shape {bins.shape}")
        edges = bins.astype(x.dtype)
    else:
        if isinstance(bins, bool) or not isinstance(bins, int | np.integer) or bins <= 0:
            raise ValueError(f"histogram: bins must be a positive int or a tensor of edges, got {bins!r}")
        if range is not None:
            lo, hi = (ops.tensor(float(v), dtype=x.dtype) for v in range)
            if float(range[0]) > float(range[1]):
                raise ValueError(f"histogram: range must be (min, max) with min <= max, got {tuple(range)}")
        elif flat.numel():
            lo, hi = ops.min(flat), ops.max(flat)
        else:
            lo, hi = ops.tensor(0.0, dtype=x.dtype), ops.tensor(0.0, dtype=x.dtype)
        same = ops.equal(lo, hi)
        lo, hi = ops.where(same, ops.sub(lo, 0.5), lo), ops.where(same, ops.add(hi, 0.5), hi)
        steps = ops.tensor(np.arange(int(bins) + 1) / int(bins), dtype=x.dtype)
        edges = ops.add(lo, ops.mul(ops.sub(hi, lo), steps))
    n_bins = edges.shape[0] - 1
    first, last = edges.narrow(0, 0, 1), edges.narrow(0, n_bins, 1)
    inside = ops.logical_and(ops.greater_equal(flat, first), ops.less_equal(flat, last))
    pos = ops.sub(searchsorted(edges, flat, right=True), 1)
    pos = ops.clamp(ops.where(inside, pos, 0), 0, n_bins - 1)  # the last edge itself: the last bin
    w = ops.ones_like(flat) if weight is None else ops.reshape(_tensor(weight, "histogram", "weight"), (x.numel(),))
    hist = ops.scatter_add(ops.zeros(n_bins, dtype=x.dtype), 0, pos, ops.where(inside, w.astype(x.dtype), 0.0))
    if density:
        hist = ops.div(hist, ops.mul(ops.sum(hist), edges.diff()))
    return HistogramResult(hist.detach(), edges.detach())


def index_put(input: Any, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """torch.index_put: a copy of input with `input[indices] = values` (added, with `accumulate`:
    repeated indices then sum)."""
    return _tensor(input, "index_put").index_put(indices, values, accumulate)


@register()
def index_reduce(input: Any, dim: int, index: Any, source: Any, reduce: str, *, include_self: bool = True) -> Tensor:
    """torch.index_reduce: input with source's slice i along `dim` folded into input's slice
    index[i] by "prod", "mean", "amax" or "amin" (with include_self=False, input's own values
    of the slices an index names are left out); a scatter_reduce with the index spread over
    source's other dims."""
    x, src = _tensor(input, "index_reduce"), _tensor(source, "index_reduce", "source")
    idx = _tensor(index, "index_reduce", "index")
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise ValueError(f"index_reduce: reduce must be 'prod', 'mean', 'amax' or 'amin', got {reduce!r}")
    d = normalize_axis(dim, builtins.max(x.ndim, 1), "index_reduce", "dim")
    if idx.ndim != 1 or src.ndim != x.ndim or (src.ndim and src.shape[d] != idx.shape[0]):
        raise ValueError(
            f"index_reduce: index must be 1-D with one entry per slice of source along dim {d}, "
            f"got index {idx.shape} and source {src.shape}"
        )
    spread = ops.broadcast_to(ops.reshape(idx, tuple(-1 if k == d else 1 for k in range(src.ndim))), src.shape)
    return ops.scatter_reduce(x, d, spread, src, reduce, include_self=include_self)


# -- shapes, products and norms under torch's names -------------------------------------------
def t(input: Any) -> Tensor:
    """torch.t: a 2-D tensor transposed; 0-D and 1-D tensors as they are."""
    x = _tensor(input, "t")
    if x.ndim > 2:
        raise ValueError(f"t: expected a tensor of at most 2 dimensions, got shape {x.shape}; use transpose")
    return x if x.ndim < 2 else ops.transpose(x, 0, 1)


def swapdims(input: Any, dim0: int, dim1: int) -> Tensor:
    """torch.swapdims: `transpose(input, dim0, dim1)`."""
    return ops.transpose(_tensor(input, "swapdims"), dim0, dim1)


def adjoint(input: Any) -> Tensor:
    """torch.adjoint: the conjugate transpose of the last two dims (nabla is real: the transpose)."""
    x = _tensor(input, "adjoint")
    if x.ndim < 2:
        raise ValueError(f"adjoint: expected a tensor of at least 2 dimensions, got shape {x.shape}")
    return ops.transpose(x, -2, -1)


def inverse(input: Any) -> Tensor:
    """torch.inverse: `linalg.inv(input)`."""
    return ops.inv(input)


def chain_matmul(*matrices: Any) -> Tensor:
    """torch.chain_matmul: the product of 2-D matrices, in the cheapest order (`linalg.multi_dot`)."""
    return ops.multi_dot(list(matrices)) if len(matrices) > 1 else _tensor(matrices[0], "chain_matmul")


def frobenius_norm(input: Any, dim: Any = (-2, -1), keepdim: bool = False) -> Tensor:
    """torch.frobenius_norm: sqrt of the sum of squares over `dim` (one or two dims)."""
    x = _tensor(input, "frobenius_norm")
    return ops.vector_norm(x, 2, dim, keepdim)


def nuclear_norm(input: Any, dim: Any = (-2, -1), keepdim: bool = False) -> Tensor:
    """torch.nuclear_norm: the sum of the singular values of the matrices over `dim`."""
    if isinstance(dim, bool):  # torch.nuclear_norm(input, keepdim)
        dim, keepdim = (-2, -1), dim
    return ops.matrix_norm(_tensor(input, "nuclear_norm"), "nuc", tuple(dim), keepdim)


def clamp_min(input: Any, min: Any) -> Tensor:  # noqa: A002
    """torch.clamp_min: `clamp(input, min=min)`."""
    return ops.clamp(_tensor(input, "clamp_min"), min=min)


def clamp_max(input: Any, max: Any) -> Tensor:  # noqa: A002
    """torch.clamp_max: `clamp(input, max=max)`."""
    return ops.clamp(_tensor(input, "clamp_max"), max=max)


def split_with_sizes(input: Any, split_sizes: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """torch.split_with_sizes: `split(input, list(split_sizes), dim)`."""
    return ops.split(_tensor(input, "split_with_sizes"), list(split_sizes), dim)


def fill(input: Any, value: Any) -> Tensor:
    """torch.fill: a new tensor of input's shape and dtype filled with `value` (a number or 0-d tensor)."""
    x = _tensor(input, "fill")
    if isinstance(value, Tensor):
        if value.ndim:
            raise ValueError(f"fill: value must be a number or a 0-d tensor, got shape {value.shape}")
        return ops.broadcast_to(value.astype(x.dtype), x.shape)
    return ops.full_like(x, value)


def is_same_size(input: Any, other: Any) -> bool:
    """torch.is_same_size: whether the two tensors have the same shape."""
    return tuple(_tensor(input, "is_same_size").shape) == tuple(_tensor(other, "is_same_size", "other").shape)


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """torch.vander: the Vandermonde matrix of a 1-D x, powers decreasing from N - 1 to 0 (or
    increasing); `nabla.linalg.vander` is torch.linalg's, increasing over the last dim."""
    t = _tensor(x, "vander", "x")
    if t.ndim != 1:
        raise ValueError(f"vander: x must be a one-dimensional tensor, got shape {t.shape}")
    out = _linalg_vander(t, N)
    return out if increasing else ops.flip(out, -1)


# -- index helpers ------------------------------------------------------------------------------
def _index_dtype(dtype: Any, op: str) -> Any:
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.int64
    if dt not in (_dt.int32, _dt.int64):
        raise TypeError(f"{op}: dtype must be int32 or int64, got {dt.name}")
    return dt


def _triangle_indices(op: str, row: int, col: int, offset: int, dtype: Any, lower: bool, device: Any) -> Tensor:
    for name, v in (("row", row), ("col", col), ("offset", offset)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise TypeError(f"{op}: {name} must be an int, got {v!r}")
    if row < 0 or col < 0:
        raise ValueError(f"{op}: row and col must be non-negative, got {row} and {col}")
    rows, cols = (np.tril_indices if lower else np.triu_indices)(row, int(offset), col)
    return ops.tensor(np.stack([rows, cols]).astype(np.int64), dtype=_index_dtype(dtype, op), device=device)


def tril_indices(
    row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None, layout: Any = None
) -> Tensor:
    """torch.tril_indices: the (2, N) row and column indices of the lower triangle of a row x col
    matrix (diagonal `offset`), in row-major order; `device=` places them (`layout=` is ignored)."""
    return _triangle_indices("tril_indices", row, col, offset, dtype, True, device)


def triu_indices(
    row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None, layout: Any = None
) -> Tensor:
    """torch.triu_indices: the (2, N) indices of the upper triangle (diagonal `offset`); `device=`
    places them (`layout=` is ignored)."""
    return _triangle_indices("triu_indices", row, col, offset, dtype, False, device)


def unravel_index(indices: Any, shape: Any) -> tuple[Tensor, ...]:
    """torch.unravel_index: flat indices into a tensor of `shape` as one coordinate tensor per dim."""
    idx = _tensor(indices, "unravel_index", "indices")
    if _dt.is_float(idx.dtype) or idx.dtype == _dt.bool_:
        raise TypeError(f"unravel_index: indices must be an integer tensor, got dtype {idx.dtype.name}")
    dims = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    if any(isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0 for d in dims):
        raise ValueError(f"unravel_index: shape must hold non-negative ints, got {shape!r}")
    out = []
    stride = math.prod(dims)
    for d in dims:
        stride //= builtins.max(d, 1)
        out.append(ops.remainder(ops.floor_divide(idx, stride), d) if d else ops.mul(idx, 0))
    return tuple(out)


def combinations(input: Any, r: int = 2, with_replacement: bool = False) -> Tensor:
    """torch.combinations: the length-r combinations of a 1-D tensor's elements, one per row
    (itertools.combinations' order); a gather of input, so gradients reach it."""
    x = _tensor(input, "combinations")
    if x.ndim != 1:
        raise ValueError(f"combinations: expected a 1-D tensor, got shape {x.shape}")
    if isinstance(r, bool) or not isinstance(r, int | np.integer) or r < 0:
        raise ValueError(f"combinations: r must be a non-negative int, got {r!r}")
    if r == 0:  # (torch's: no combinations, shape (0,))
        return ops.zeros(0, dtype=x.dtype)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = np.array(list(pick(range(x.shape[0]), int(r))), np.int64).reshape(-1, int(r))
    return ops.reshape(ops.index_select(x, 0, ops.tensor(rows.reshape(-1))), rows.shape)

"""torch.testing's `assert_close` and `make_tensor` for nabla tensors.

`assert_close` follows torch 2.13: the default tolerances per dtype, nested sequences and
mappings compared item by item (a failure names its path, "item [1]['w']"), Python numbers
and NumPy arrays compared as torch compares them (an array against a tensor is a TypeError,
as in torch) and torch's messages ("Tensor-likes are not close!", "Mismatched elements: ...",
"Greatest absolute difference: ... at index (1,) (up to 1e-05 allowed)"). torch's deprecated
`assert_allclose` is left out.
"""

from __future__ import annotations

import cmath
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .core.common import dtypes as _dt
from .core.tensor import Tensor
from .ops.random_state import next_seed_array

__all__ = ["assert_close", "make_tensor"]

# torch's defaults, {dtype: (rtol, atol)}; integers and bool: exact
_TOLERANCES = {_dt.float16: (1e-3, 1e-5), _dt.bfloat16: (1.6e-2, 1e-5), _dt.float32: (1.3e-6, 1e-5),
               _dt.float64: (1e-7, 1e-7)}  # fmt: skip
_NUMBER_DTYPES = {int: _dt.int64, float: _dt.float64}


class _Failure(Exception):
    """A mismatch: its exception type, torch's message and the path of the failing item."""

    def __init__(self, kind: type[Exception], msg: str, path: tuple[Any, ...]) -> None:
        super().__init__(msg)
        self.kind, self.msg, self.path = kind, msg, path

    def error(self, msg: str | Callable[[str], str] | None) -> Exception:
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.msg + (
            f"\n\nThe failure occurred for item {''.join(str([k]) for k in self.path)}" if self.path else ""
        )
        return self.kind(msg(text) if callable(msg) else text)


def _tolerances(
    dtypes: Sequence[Any], rtol: float | None, atol: float | None, path: tuple[Any, ...]
) -> tuple[float, float]:
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise _Failure(
            ValueError, f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.", path
        )
    if rtol is not None:
        return rtol, atol  # type: ignore[return-value]
    pairs = [_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _mismatch_msg(what: str, extra: str, abs_diff: Any, rel_diff: Any, rtol: float, atol: float,
                  abs_idx: tuple[int, ...] | None = None, rel_idx: tuple[int, ...] | None = None) -> str:  # fmt: skip
    """torch's `_make_mismatch_msg`."""
    equal = rtol == 0 and atol == 0

    def line(kind: str, diff: Any, idx: tuple[int, ...] | None, tol: float) -> str:
        text = (
            f"{kind.title()} difference: {diff}"
            if idx is None
            else f"Greatest {kind} difference: {diff} at index {idx}"
        )
        return text + ("" if equal else f" (up to {tol} allowed)") + "\n"

    msg = f"{what} are not {'equal' if equal else 'close'}!\n\n{extra}\n"
    return (msg + line("absolute", abs_diff, abs_idx, atol) + line("relative", rel_diff, rel_idx, rtol)).strip()


def _scalar_msg(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = math.inf if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, rel_diff, rtol, atol)


def _compare_numbers(actual: Any, expected: Any, path: tuple[Any, ...], opts: dict[str, Any]) -> None:
    if isinstance(actual, bool | np.bool_) and isinstance(expected, bool | np.bool_):
        if bool(actual) is not bool(expected):
            raise _Failure(AssertionError, f"Booleans mismatch: {bool(actual)} is not {bool(expected)}", path)
        return
    actual, expected = (v.item() if isinstance(v, np.number) else v for v in (actual, expected))
    rtol, atol = _tolerances([_NUMBER_DTYPES.get(type(v), _dt.int64) for v in (actual, expected)], opts["rtol"],
                             opts["atol"], path)  # fmt: skip
    if opts["check_dtype"] and type(actual) is not type(expected):
        raise _Failure(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.", path)
    if actual == expected or (opts["equal_nan"] and cmath.isnan(actual) and cmath.isnan(expected)):
        return
    diff = abs(actual - expected)
    if not (cmath.isfinite(diff) and diff <= atol + rtol * abs(expected)):
        raise _Failure(AssertionError, _scalar_msg(actual, expected, rtol, atol), path)


def _tensor_parts(x: Tensor | np.ndarray) -> tuple[np.ndarray, Any, str, tuple[int, ...]]:
    """(values, nabla dtype, device, strides in elements) of a tensor or NumPy array."""
    if isinstance(x, Tensor):
        return x.detach().numpy(), x.dtype, str(x.device), tuple(x.stride())
    return x, _dt.from_numpy_dtype(x.dtype), "cpu:0", tuple(s // max(x.itemsize, 1) for s in x.strides)


def _compare_tensors(actual: Any, expected: Any, path: tuple[Any, ...], opts: dict[str, Any]) -> None:
    a, a_dt, a_dev, a_stride = _tensor_parts(actual)
    e, e_dt, e_dev, e_stride = _tensor_parts(expected)
    rtol, atol = _tolerances([a_dt, e_dt], opts["rtol"], opts["atol"], path)

    def attr(name: str, got: Any, want: Any) -> None:
        raise _Failure(AssertionError, f"The values for attribute '{name}' do not match: {got} != {want}.", path)

    if a.shape != e.shape:
        attr("shape", a.shape, e.shape)
    if opts["check_stride"] and a_stride != e_stride:
        attr("stride()", a_stride, e_stride)
    if opts["check_device"] and a_dev != e_dev:
        attr("device", a_dev, e_dev)
    if opts["check_dtype"] and a_dt != e_dt:
        attr("dtype", a_dt.name, e_dt.name)
    if a_dt != e_dt:  # compared in the promoted dtype, as torch
        common = _dt.to_numpy_dtype(_dt.promote_types(a_dt, e_dt))
        a, e = a.astype(common), e.astype(common)
    _compare_values(a, e, rtol, atol, opts["equal_nan"], path)


def _compare_values(
    a: np.ndarray, e: np.ndarray, rtol: float, atol: float, equal_nan: bool, path: tuple[Any, ...]
) -> None:
    floating = a.dtype.kind == "f"
    if floating:
        with np.errstate(invalid="ignore", over="ignore"):
            matches = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
    else:
        a, e = a.astype(np.int64), e.astype(np.int64)
        matches = a == e if rtol == 0 and atol == 0 else np.abs(a - e) <= atol + rtol * np.abs(e)
    if bool(np.all(matches)):
        return
    if a.ndim == 0:
        raise _Failure(AssertionError, _scalar_msg(a.item(), e.item(), rtol, atol), path)
    n, bad = matches.size, int(matches.size - np.count_nonzero(matches))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        abs_diff = np.abs(a - e).reshape(-1)
        abs_diff[matches.reshape(-1)] = 0
        denominator = np.abs(e).reshape(-1)
        if not floating:  # torch divides integers in float32 (its default dtype)
            rel_diff = abs_diff.astype(np.float32) / denominator.astype(np.float32)
        else:
            rel_diff = abs_diff / denominator
        rel_diff[matches.reshape(-1)] = 0
    ia, ir = int(np.argmax(abs_diff)), int(np.argmax(rel_diff))
    raise _Failure(AssertionError, _mismatch_msg(
        "Tensor-likes", f"Mismatched elements: {bad} / {n} ({bad / n:.1%})", abs_diff[ia].item(), float(rel_diff[ir]),
        rtol, atol, tuple(int(i) for i in np.unravel_index(ia, a.shape)),
        tuple(int(i) for i in np.unravel_index(ir, a.shape))), path)  # fmt: skip


def _compare(actual: Any, expected: Any, path: tuple[Any, ...], opts: dict[str, Any]) -> None:
    """torch's `originate_pairs` and `Pair.compare`: recurse into sequences and mappings."""
    if isinstance(actual, Sequence) and isinstance(expected, Sequence) and not isinstance(actual, str) \
            and not isinstance(expected, str):  # fmt: skip
        if len(actual) != len(expected):
            raise _Failure(
                AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", path
            )
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _compare(a, e, (*path, i), opts)
    elif isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            missing, extra = sorted(set(expected) - set(actual)), sorted(set(actual) - set(expected))
            raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                           f"Missing keys in the actual mapping: {missing}\n"
                           f"Additional keys in the actual mapping: {extra}", path)  # fmt: skip
        try:
            keys = sorted(actual)
        except TypeError:
            keys = list(actual)
        for k in keys:
            _compare(actual[k], expected[k], (*path, k), opts)
    elif actual is None or expected is None:
        if not (actual is None and expected is None):
            raise _Failure(AssertionError, f"None mismatch: {actual} is not {expected}", path)
    elif isinstance(actual, int | float | np.number | np.bool_) and isinstance(
        expected, int | float | np.number | np.bool_
    ):
        _compare_numbers(actual, expected, path, opts)
    elif (isinstance(actual, Tensor) and isinstance(expected, Tensor)) or (
        isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray)
    ):
        _compare_tensors(actual, expected, path, opts)
    else:
        raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                       f"{type(expected)}.", path)  # fmt: skip


def assert_close(
    actual: Any,
    expected: Any,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg: str | Callable[[str], str] | None = None,
) -> None:
    """torch.testing.assert_close: raise AssertionError unless `actual` and `expected` are close,
    `|actual - expected| <= atol + rtol * |expected|` elementwise, with equal shapes (and
    dtypes, devices unless told not to check them).

    Args:
        actual, expected: tensors, NumPy arrays, Python numbers, None, or sequences and mappings
            of them (compared item by item).
        rtol, atol: the tolerances, given together or not at all; by default the looser dtype's:
            float16 1e-3/1e-5, bfloat16 1.6e-2/1e-5, float32 1.3e-6/1e-5, float64 1e-7/1e-7,
            integers and bool 0/0 (exact).
        equal_nan: whether two NaNs count as equal.
        check_device, check_dtype, check_stride: whether those must match (dtypes that are
            not checked are promoted to a common one before comparing).
        allow_subclasses, check_layout: accepted as torch's (nabla tensors are all strided).
        msg: the message instead of the generated one, or a callable given the generated one.

    Example:
        >>> nabla.testing.assert_close(nabla.tensor([1.0, 2.0]), nabla.tensor([1.0, 2.000001]))
        >>> nabla.testing.assert_close({"w": x}, {"w": x + 1})
        AssertionError: Tensor-likes are not close! ... The failure occurred for item ['w']
    """
    __tracebackhide__ = True
    opts = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan, "check_device": check_device,
            "check_dtype": check_dtype, "check_stride": check_stride}  # fmt: skip
    try:
        _compare(actual, expected, (), opts)
    except _Failure as failure:
        raise failure.error(msg) from None


def make_tensor(
    *shape: int | Sequence[int],
    dtype: Any,
    device: Any = None,
    low: float | None = None,
    high: float | None = None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """torch.testing.make_tensor: a tensor of values drawn uniformly from [low, high) (defaults
    [-9, 9) for floats, [-9, 10) for integers (from 0 for uint8), {False, True} for bool),
    from nabla's global generator (`manual_seed` repeats it).

    Args:
        *shape: the sizes, or one sequence of them.
        dtype: the dtype (required, as torch).
        device: where it lives (default cpu).
        low, high: the interval, clamped to the dtype's range.
        requires_grad: for floating dtypes only.
        noncontiguous: a strided view (every other element of a tensor twice as long).
        exclude_zero: replace zeros by 1 (integers) or the dtype's smallest normal (floats).
        memory_format: accepted for torch compatibility.

    Example:
        >>> x = nabla.testing.make_tensor(2, 3, dtype=nabla.float32, low=0, high=1)
    """
    dt = _dt.as_dtype(dtype)
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = tuple(shape[0])
    dims = tuple(int(s) for s in shape)  # type: ignore[arg-type]
    floating = _dt.is_float(dt)
    if requires_grad and not floating:
        raise ValueError(
            f"make_tensor: requires_grad=True is not supported for boolean and integral dtypes, but got {dt.name}"
        )
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"make_tensor: `low` and `high` cannot be NaN, but got low={low} and high={high}")
    if dt == _dt.bool_:
        lo, hi, default = 0, 2, (0, 2)
    elif floating:
        info = np.finfo(np.float32 if dt == _dt.bfloat16 else _dt.to_numpy_dtype(dt))
        lo, hi, default = float(info.min), float(info.max), (-9, 9)
    else:
        info = np.iinfo(_dt.to_numpy_dtype(dt))
        lo, hi, default = int(info.min), int(info.max) + (dt != _dt.int64), (-9, 10)
    low, high = default[0] if low is None else low, default[1] if high is None else high
    if low >= high:
        raise ValueError(f"make_tensor: `low` must be less than `high`, but got {low} >= {high}")
    if high < lo or low >= hi:
        raise ValueError(f"make_tensor: the interval [{low}, {high}) lies outside {dt.name}'s range [{lo}, {hi})")
    low, high = min(max(low, lo), hi), min(max(high, lo), hi)
    noncontiguous = noncontiguous and math.prod(dims) > 1
    full = (*dims[:-1], 2 * dims[-1]) if noncontiguous else dims
    rng = np.random.default_rng(int(next_seed_array()[0]))
    if floating:
        values = rng.uniform(low / 2, high / 2, full) * 2 if high - low >= hi else rng.uniform(low, high, full)
        values = values.astype(np.float32 if dt == _dt.bfloat16 else _dt.to_numpy_dtype(dt))
        if exclude_zero:
            values[values == 0] = np.finfo(values.dtype).tiny
    else:
        values = rng.integers(math.ceil(low), math.ceil(high), full, endpoint=False)
        if exclude_zero:
            values[values == 0] = 1
    result = Tensor.from_numpy(np.ascontiguousarray(values)).to(dt)
    if device is not None:
        result = result.to(device)
    if noncontiguous:
        result = result[..., 1::2]
    if requires_grad:
        result.requires_grad_(True)
    return result

"""torch's dtype queries, random-number state and grad modes under torch's names:
`nabla.finfo(nabla.float16).eps`, `nabla.can_cast`, `nabla.get_rng_state()` /
`set_rng_state`, `nabla.inference_mode()`, and the complex-number queries a real-only
library answers trivially (`is_complex`, `conj`, `real`). `tests/test_torch_functions.py`
checks them beside torch_functions.py's.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .core.common import dtypes as _dt
from .core.common.context import no_grad
from .core.tensor import Tensor
from .ops.linalg import _as_tensor
from .ops.random_state import default_generator

__all__ = [
    "are_deterministic_algorithms_enabled",
    "can_cast",
    "conj",
    "finfo",
    "get_default_dtype",
    "get_float32_matmul_precision",
    "get_rng_state",
    "iinfo",
    "inference_mode",
    "initial_seed",
    "is_complex",
    "is_inference_mode_enabled",
    "is_signed",
    "real",
    "resolve_conj",
    "resolve_neg",
    "seed",
    "set_default_dtype",
    "set_float32_matmul_precision",
    "set_rng_state",
    "use_deterministic_algorithms",
]


# -- dtypes ---------------------------------------------------------------------------------------
_BF16_FINFO = {"bits": 16, "eps": 0.0078125, "max": 3.3895313892515355e38, "tiny": 1.1754943508222875e-38,
               "resolution": 0.01}  # fmt: skip


class finfo:  # noqa: N801 (torch's name)
    """torch.finfo: the limits of a floating dtype (bits, eps, max, min, tiny, smallest_normal,
    resolution, dtype); float32 by default.

    Example:
        >>> nabla.finfo(nabla.float16).eps
        0.0009765625
    """

    def __init__(self, type: Any = None) -> None:  # noqa: A002
        dt = _dt.DEFAULT_FLOAT if type is None else _dt.as_dtype(type)
        if not _dt.is_float(dt):
            raise TypeError(f"finfo: expected a floating dtype, got {dt.name}; use iinfo for integers")
        self.dtype = dt.name
        if dt == _dt.bfloat16:
            v = _BF16_FINFO
            self.bits, self.eps, self.max, self.tiny, self.resolution = (
                v["bits"], v["eps"], v["max"], v["tiny"], v["resolution"]
            )  # fmt: skip
        else:
            info = np.finfo(_dt.to_numpy_dtype(dt))
            self.bits, self.eps, self.max = info.bits, float(info.eps), float(info.max)
            self.tiny, self.resolution = float(info.tiny), 10.0**-info.precision
        self.min = -self.max
        self.smallest_normal = self.tiny

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
            f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})"
        )


class iinfo:  # noqa: N801 (torch's name)
    """torch.iinfo: the limits of an integer dtype (bits, min, max, dtype).

    Example:
        >>> nabla.iinfo(nabla.int32).max
        2147483647
    """

    def __init__(self, type: Any) -> None:  # noqa: A002
        dt = _dt.as_dtype(type)
        if not _dt.is_integer(dt):
            raise TypeError(f"iinfo: expected an integer dtype, got {dt.name}; use finfo for floats")
        info = np.iinfo(_dt.to_numpy_dtype(dt))
        self.dtype, self.bits, self.min, self.max = dt.name, info.bits, int(info.min), int(info.max)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


def _kind(dtype: Any) -> int:
    dt = _dt.as_dtype(dtype)
    return 0 if dt == _dt.bool_ else 2 if _dt.is_float(dt) else 1


def can_cast(from_: Any, to: Any) -> bool:
    """torch.can_cast: whether torch's casting rules allow `from_` -> `to` implicitly (never to a
    lower kind: float -> integer or bool, integer -> bool)."""
    return _kind(from_) <= _kind(to)


def is_signed(input: Any) -> bool:
    """torch.is_signed: whether the tensor's dtype is signed (floats and signed integers)."""
    return _as_tensor(input, "is_signed", "input").dtype != _dt.bool_


def is_complex(input: Any) -> bool:
    """torch.is_complex: always False (nabla has no complex dtypes)."""
    _as_tensor(input, "is_complex", "input")
    return False


def get_default_dtype() -> Any:
    """torch.get_default_dtype: the dtype of Python floats made tensors (float32 unless
    `set_default_dtype` changed it)."""
    return _dt.DEFAULT_FLOAT


def set_default_dtype(d: Any) -> None:
    """torch.set_default_dtype: the floating dtype of factories (`zeros`, `rand`, `arange` of
    floats, `tensor` of Python floats...) and of new layers' parameters when none is given.

    Example:
        >>> nabla.set_default_dtype(nabla.float64)   # float64 scientific code, as in torch
        >>> nabla.zeros(2).dtype
        float64
    """
    _dt.set_default_float(_dt.as_dtype(d))


def conj(input: Any) -> Tensor:
    """torch.conj: the input itself (nabla's tensors are real)."""
    return _as_tensor(input, "conj", "input")


def resolve_conj(input: Any) -> Tensor:
    """torch.resolve_conj: the input itself (nabla's tensors are real)."""
    return _as_tensor(input, "resolve_conj", "input")


def resolve_neg(input: Any) -> Tensor:
    """torch.resolve_neg: the input itself (nabla has no lazy negation bit)."""
    return _as_tensor(input, "resolve_neg", "input")


def real(input: Any) -> Tensor:
    """torch.real: the input itself (a real tensor is its own real part, as in torch)."""
    return _as_tensor(input, "real", "input")


# -- random state and grad modes -------------------------------------------------------------------
def initial_seed() -> int:
    """torch.initial_seed: the seed of nabla's generator (the last `manual_seed` or `seed`)."""
    return default_generator.initial_seed()


def seed() -> int:
    """torch.seed: seed nabla's generator with a fresh nondeterministic value and return it."""
    return default_generator.seed()


def get_rng_state() -> Tensor:
    """torch.get_rng_state: the global generator's state as an int64 tensor (seed, draws so
    far); `set_rng_state` of it repeats the random numbers drawn after it."""
    return default_generator.get_state()


def set_rng_state(new_state: Any) -> None:
    """torch.set_rng_state: restore a state from `get_rng_state`."""
    default_generator.set_state(new_state)


_deterministic = [False]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """torch.use_deterministic_algorithms: recorded; nabla's draws and kernels already give the
    same results run after run under one executor."""
    _deterministic[0] = bool(mode)


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic[0]


_MATMUL_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = ["highest"]


def set_float32_matmul_precision(precision: str) -> None:
    """torch.set_float32_matmul_precision: recorded ("highest", "high" or "medium") so scripts
    that set it run; MAX's float32 matmuls are float32 whatever it says."""
    if precision not in _MATMUL_PRECISIONS:
        raise ValueError(f"set_float32_matmul_precision: expected one of {_MATMUL_PRECISIONS}, got {precision!r}")
    _matmul_precision[0] = precision


def get_float32_matmul_precision() -> str:
    return _matmul_precision[0]


class _Inference(threading.local):
    def __init__(self) -> None:
        self.enabled = False


_INFERENCE = _Inference()


class inference_mode(no_grad):  # noqa: N801 (torch's name)
    """torch.inference_mode: nabla's `no_grad` (a context manager, or a decorator with or
    without parentheses); `mode=False` turns gradient recording back on inside, as torch's.

    Example:
        >>> with nabla.inference_mode():
        ...     nabla.is_inference_mode_enabled()
        True
    """

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode):  # `@inference_mode` without parentheses
            return cls()(mode)
        return object.__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        super().__init__()
        self._inference = bool(mode)
        self._mode = not self._inference
        self._outer: list[bool] = []

    def __enter__(self) -> None:
        self._outer.append(_INFERENCE.enabled)
        _INFERENCE.enabled = self._inference
        super().__enter__()

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        _INFERENCE.enabled = self._outer.pop()

    def _fresh(self) -> inference_mode:
        return inference_mode(self._inference)


def is_inference_mode_enabled() -> bool:
    """torch.is_inference_mode_enabled: whether an `inference_mode()` block is active (not a
    plain `no_grad`)."""
    return _INFERENCE.enabled

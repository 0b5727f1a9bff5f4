"""torch's dtype and device names: `nabla.long` for `torch.long` (nabla's own names are
`int64`, `float32`, ...), `nabla.device("cuda", 0)`, `nabla.cuda.is_available()`.

Kept in a module of their own because they shadow Python's `int`, `float` and `bool`: no code
here uses those builtins. (`nabla.bool` is `nabla.bool_`.)
"""

from __future__ import annotations

import math
import types
from typing import Any

from max.driver import accelerator_count

from . import amp
from .core.common import dtypes as _dt
from .core.common.devices import Device, as_device
from .ops.random_state import default_generator

__all__ = [
    "backends",
    "bool",
    "cpu",
    "cuda",
    "device",
    "double",
    "e",
    "float",
    "half",
    "inf",
    "int",
    "long",
    "nan",
    "pi",
    "short",
]

long, int, short, float, double, half = _dt.int64, _dt.int32, _dt.int16, _dt.float32, _dt.float64, _dt.float16  # noqa: A001
bool = _dt.bool_  # noqa: A001
inf, nan, pi, e = math.inf, math.nan, math.pi, math.e  # torch.inf, torch.nan, torch.pi, torch.e


def device(spec: Any, index: Any = None) -> Device:
    """torch.device: `device("cuda:0")`, `device("cuda", 0)`, `device("cpu")`."""
    return as_device(spec if index is None else f"{spec}:{index}")


def _is_available() -> bool:
    """Whether MAX finds an accelerator (`torch.cuda.is_available()`)."""
    return accelerator_count() > 0


def _manual_seed(seed: int) -> None:
    """torch.cuda.manual_seed(_all): nabla has one generator for every device."""
    default_generator.manual_seed(seed)


cuda = types.SimpleNamespace(
    is_available=_is_available,
    device_count=accelerator_count,
    amp=types.SimpleNamespace(autocast=amp.cuda_autocast, GradScaler=amp.GradScaler),
    manual_seed=_manual_seed,
    manual_seed_all=_manual_seed,
)
cpu = types.SimpleNamespace(amp=types.SimpleNamespace(autocast=amp.cpu_autocast, GradScaler=amp.GradScaler))


# torch.backends' switches, which training scripts set first thing (`cudnn.benchmark = True`,
# `cuda.matmul.allow_tf32 = True`): kept so those lines run; MAX chooses its kernels itself.
backends = types.SimpleNamespace(
    cudnn=types.SimpleNamespace(benchmark=False, deterministic=False, enabled=True, allow_tf32=True),
    cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False)),
    mps=types.SimpleNamespace(is_available=lambda: False),
)

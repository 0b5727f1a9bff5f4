"""Mixed precision as torch.amp spells it: `autocast` regions and a `GradScaler`.

- `autocast(device_type, dtype=None, enabled=True)`: inside the region, matmuls (so `Linear`,
  `bmm`, `einsum`, `addmm`, attention's products) and convolutions cast their float32 operands
  to `dtype` (bfloat16 by default on "cpu", float16 on "cuda"), and the losses run in float32
  (softmax / log_softmax too under "cuda"), as torch's autocast lists them. Other ops run in
  their inputs' dtype. Parameters stay float32: the casts are ops in the graph, so gradients come
  back to them in float32.
- `is_autocast_enabled(device_type)` / `get_autocast_dtype(device_type)`: torch 2.13's queries
  (also top-level `nabla.` names).
- `GradScaler`: scales a float16 loss so small gradients do not flush to zero, unscales the
  gradients before the step, skips a step whose gradients hold inf or nan and adapts the scale
  (torch's `init_scale`, `growth_factor`, `backoff_factor`, `growth_interval`). With
  `enabled=False` every method passes through, as torch's.

Example:
    >>> scaler = nabla.amp.GradScaler(enabled=False)
    >>> with nabla.autocast("cpu", dtype=nabla.bfloat16):
    ...     loss = loss_fn(model(x), y)
    >>> scaler.scale(loss).backward()
    >>> scaler.step(opt)
    >>> scaler.update()
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

from max.driver import accelerator_count

from .core.common import dtypes as _dt
from .core.common.context import autocast_device, decorated, no_grad, set_autocast
from .core.graph.tracing import note_guard
from .core.tensor import Tensor
from .ops import all as _all
from .ops import isfinite as _isfinite
from .ops import stack as _stack

__all__ = ["GradScaler", "autocast", "cpu_autocast", "cuda_autocast", "get_autocast_dtype", "is_autocast_enabled"]

_DEFAULT_DTYPES = {"cpu": _dt.bfloat16, "cuda": _dt.float16, "gpu": _dt.float16}


class _Configured(threading.local):
    """Per thread, the dtype each device's innermost autocast region set (enabled or not, as
    torch's autocast sets the device's dtype on entering and restores it on leaving)."""

    def __init__(self) -> None:
        self.stacks: dict[str, list[Any]] = {}


_CONFIGURED = _Configured()


def _device(device_type: Any, who: str) -> str:
    """The device type's key ("gpu" is nabla's alias of "cuda")."""
    if device_type not in _DEFAULT_DTYPES:
        raise RuntimeError(f"{who}: device_type must be 'cpu' or 'cuda', got {device_type!r}")
    return "cuda" if device_type == "gpu" else device_type


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """torch.is_autocast_enabled: whether an enabled `autocast` region for `device_type` is
    active in this thread. Without an argument, torch's default: "cuda".

    nabla has one autocast region at a time: entering one for another device ends the
    outer region's effect until it exits (torch keeps one per device).

    Args:
        device_type: "cpu" or "cuda" (None: "cuda", as torch).

    Example:
        >>> with nabla.autocast("cpu"):
        ...     nabla.is_autocast_enabled("cpu"), nabla.is_autocast_enabled()
        (True, False)
    """
    wanted = _device("cuda" if device_type is None else device_type, "is_autocast_enabled")
    active = autocast_device()
    return active is not None and _device(active, "is_autocast_enabled") == wanted


def get_autocast_dtype(device_type: str) -> Any:
    """torch.get_autocast_dtype: the dtype autocast uses for `device_type`: the innermost
    region's for that device (even a disabled one, as torch), else the default (bfloat16 on
    "cpu", float16 on "cuda").

    Args:
        device_type: "cpu" or "cuda".

    Example:
        >>> with nabla.autocast("cpu", dtype=nabla.float16):
        ...     nabla.get_autocast_dtype("cpu")
        DType.float16
    """
    key = _device(device_type, "get_autocast_dtype")
    stack = _CONFIGURED.stacks.get(key)
    return stack[-1] if stack else _DEFAULT_DTYPES[key]


class autocast:  # noqa: N801 (torch's name)
    """torch.autocast: a region (a `with` block or a decorated function) where matmuls and
    convolutions run in a lower precision `dtype` (see the module doc).

    Args:
        device_type: "cpu" or "cuda" (torch's names; the default dtype follows it).
        dtype: bfloat16 or float16 (default: bfloat16 on "cpu", float16 on "cuda").
        enabled: False makes the region a no-op.
        cache_enabled: accepted for torch's signature (nabla caches nothing per region).
    """

    def __init__(
        self, device_type: str = "cpu", dtype: Any = None, enabled: bool = True, cache_enabled: Any = None
    ) -> None:
        if device_type not in _DEFAULT_DTYPES:
            raise ValueError(f"autocast: device_type must be 'cpu' or 'cuda', got {device_type!r}")
        self.device_type = device_type
        self.fast_dtype = _DEFAULT_DTYPES[device_type] if dtype is None else _dt.as_dtype(dtype)
        if self.fast_dtype not in (_dt.bfloat16, _dt.float16):
            raise ValueError(f"autocast: dtype must be bfloat16 or float16, got {self.fast_dtype.name}")
        self._enabled = bool(enabled)
        self._previous: list[Any] = []

    def __enter__(self) -> None:
        self._previous.append(set_autocast((self.fast_dtype, self.device_type) if self._enabled else None))
        _CONFIGURED.stacks.setdefault(_device(self.device_type, "autocast"), []).append(self.fast_dtype)

    def __exit__(self, *exc: object) -> None:
        _CONFIGURED.stacks[_device(self.device_type, "autocast")].pop()
        set_autocast(self._previous.pop())

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return decorated(lambda: autocast(self.device_type, self.fast_dtype, self._enabled), fn)


class _DeviceAutocast(autocast):
    """torch.cpu.amp.autocast / torch.cuda.amp.autocast: `autocast` for one device, `enabled`
    first (torch's deprecated spellings, still common in training scripts)."""

    device = "cpu"

    def __init__(self, enabled: bool = True, dtype: Any = None, cache_enabled: Any = True) -> None:
        super().__init__(self.device, dtype, enabled, cache_enabled)


class cpu_autocast(_DeviceAutocast):  # noqa: N801 (torch.cpu.amp.autocast)
    device = "cpu"


class cuda_autocast(_DeviceAutocast):  # noqa: N801 (torch.cuda.amp.autocast)
    device = "cuda"


class GradScaler:
    """torch.amp.GradScaler: loss scaling for float16 training.

    Args:
        device: "cuda" (torch's default) or "cpu". A "cuda" scaler where no accelerator exists
            disables itself with a warning, as torch's does.
        init_scale: the first scale.
        growth_factor: the scale is multiplied by this after `growth_interval` steps in a row
            without inf or nan gradients.
        backoff_factor: ... and by this after a step that had some (the step is skipped).
        growth_interval: see growth_factor.
        enabled: False: `scale` returns its argument, `step` just steps, the rest do nothing.

    Example:
        >>> scaler = GradScaler()
        >>> scaler.scale(loss).backward()
        >>> scaler.unscale_(opt)              # optional: before clipping the gradients
        >>> scaler.step(opt)                  # skipped if a gradient is inf or nan
        >>> scaler.update()
    """

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        if enabled and _device(device, "GradScaler") == "cuda" and accelerator_count() == 0:
            # (as torch's: a script written for CUDA runs unscaled where there is none)
            warnings.warn("GradScaler is enabled, but CUDA is not available.  Disabling.", UserWarning, stacklevel=2)
            enabled = False
        if not growth_factor > 1.0:
            raise ValueError(f"GradScaler: growth_factor must be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be in (0, 1), got {backoff_factor}")
        self._enabled = bool(enabled)
        self._scale = float(init_scale)
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval, self._growth_tracker = int(growth_interval), 0
        self._unscaled: dict[int, bool] = {}  # id(optimizer) -> whether its gradients had inf/nan
        self._started = False  # scale() was called (torch creates its scale tensor then)

    def is_enabled(self) -> bool:
        return self._enabled

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def _check_started(self, method: str) -> None:
        """torch's check that `scale()` ran first: a loop that calls step/update without it is
        out of order (its loss was never scaled)."""
        if not self._started:
            raise AssertionError(
                f"Attempted {method} but _scale is None.  This may indicate your script did not use "
                "scaler.scale(loss or outputs) earlier in the iteration."
            )

    def get_scale(self) -> float:
        return self._scale if self._enabled else 1.0

    def scale(self, outputs: Any) -> Any:
        """`outputs` (a tensor, or a list/tuple of them) times the current scale."""
        if not self._enabled:
            return outputs
        note_guard(self.get_scale, "GradScaler's scale")  # (a compiled step bakes it in)
        self._started = True
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, list | tuple):
            return type(outputs)(self.scale(o) for o in outputs)
        raise TypeError(f"GradScaler.scale: outputs must be a Tensor or a list/tuple of them, got {type(outputs)}")

    def unscale_(self, optimizer: Any) -> None:
        """Divide the optimizer's gradients by the scale (in place), noting inf/nan among them."""
        if not self._enabled:
            return
        self._check_started("unscale_")
        if id(optimizer) in self._unscaled:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        note_guard(self.get_scale, "GradScaler's scale")
        inv = 1.0 / self._scale
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        with no_grad():
            for g in grads:
                g.mul_(inv)
            finite = [_all(_isfinite(g)) for g in grads]
            bad = bool(finite) and not bool(_all(_stack(finite)).item())  # (one read for them all)
        self._unscaled[id(optimizer)] = bad

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """`optimizer.step(...)`, after `unscale_` if not done yet; skipped (None returned) when a
        gradient holds inf or nan."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_started("step")
        if id(optimizer) not in self._unscaled:
            self.unscale_(optimizer)
        if self._unscaled[id(optimizer)]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Adapt the scale after the steps since the last update (or set it to `new_scale`)."""
        if not self._enabled:
            return
        self._check_started("update")
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
        elif any(self._unscaled.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        elif self._unscaled:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._unscaled = {}

    def state_dict(self) -> dict:
        if not self._enabled:
            return {}
        return {
            "scale": self._scale,
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("GradScaler.load_state_dict: the state_dict is empty (saved from a disabled scaler?)")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])

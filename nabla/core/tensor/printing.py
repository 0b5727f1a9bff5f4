"""How `Tensor.__repr__` formats values: NumPy's `array2string` defaults until
`nabla.set_printoptions` (torch's function) is first called, torch's options after it.

torch's formatting is followed where NumPy allows: `precision` digits after the point for
every element (`1.5000`), integral floats as `1.`, scientific notation when the values span
more than three decades (or `sci_mode` forces it on or off), `threshold` / `edgeitems`
summarization and `linewidth`.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

__all__ = ["get_printoptions", "set_printoptions"]

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


@dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None
    active: bool = False  # False: NumPy's own array2string defaults (nabla's formatting)


_OPTS = _PrintOptions()


def _check_int(value: Any, name: str, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"set_printoptions: {name} must be an int >= {low}, got {value!r}")


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """torch.set_printoptions: how tensors print from now on. Options left None keep their
    value (a `profile` first resets all four); `sci_mode` None means automatic.

    Args:
        precision: digits after the decimal point (torch's default 4).
        threshold: element count above which the tensor is summarized (default 1000).
        edgeitems: items shown at each end of a summarized dimension (default 3).
        linewidth: characters per line (default 80).
        profile: "default", "short" (precision 2, edgeitems 2) or "full" (never summarize).
        sci_mode: True / False forces scientific notation on / off; None chooses.

    Example:
        >>> nabla.set_printoptions(precision=2)
        >>> nabla.tensor([1.23456, 2.0])
        Tensor([1.23, 2.00], dtype=float32)
    """
    new = replace(_OPTS, sci_mode=sci_mode, active=True)
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        new = replace(new, **_PROFILES[profile])
    for name, value, low in (("precision", precision, 0), ("edgeitems", edgeitems, 1), ("linewidth", linewidth, 1)):
        if value is not None:
            _check_int(value, name, low)
            new = replace(new, **{name: int(value)})
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, int | float | np.number) or threshold < 0:
            raise ValueError(f"set_printoptions: threshold must be a number >= 0, got {threshold!r}")
        new = replace(new, threshold=threshold)
    if sci_mode is not None and not isinstance(sci_mode, bool):
        raise ValueError(f"set_printoptions: sci_mode must be True, False or None, got {sci_mode!r}")
    for name in ("precision", "threshold", "edgeitems", "linewidth", "sci_mode", "active"):
        setattr(_OPTS, name, getattr(new, name))


def get_printoptions() -> dict[str, Any]:
    """The current options (torch._tensor_str.get_printoptions), as `set_printoptions` kwargs."""
    return {k: getattr(_OPTS, k) for k in ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")}


def _reset() -> None:
    """Back to nabla's own formatting (NumPy's defaults), as before any `set_printoptions`."""
    _OPTS.__dict__.update(_PrintOptions().__dict__)


def _float_formatter(values: np.ndarray, precision: int, sci: bool) -> Any:
    """A formatter printing every float with `precision` digits, fixed or scientific, padded to
    one width (as torch aligns its columns)."""
    spec = f".{precision}{'e' if sci else 'f'}"

    def one(v: Any) -> str:
        return format(float(v), spec) if np.isfinite(v) else str(float(v))

    width = max((len(one(v)) for v in values.reshape(-1)), default=0)
    return lambda v: one(v).rjust(width)


def format_array(arr: np.ndarray, prefix: str) -> str:
    """The body of a tensor's repr: `arr` as `array2string` writes it under the options."""
    if not _OPTS.active:
        return np.array2string(arr, separator=", ", prefix=prefix)
    threshold = sys.maxsize if _OPTS.threshold == math.inf else int(_OPTS.threshold)
    kwargs: dict[str, Any] = {"separator": ", ", "prefix": prefix, "threshold": threshold,
                              "edgeitems": _OPTS.edgeitems, "max_line_width": _OPTS.linewidth}  # fmt: skip
    if arr.dtype.kind != "f" or arr.size == 0:
        return np.array2string(arr, **kwargs)
    values = arr.astype(np.float64)
    finite = values[np.isfinite(values)]
    integral = bool(np.all(finite == np.round(finite)))  # torch prints these as `1.`
    if _OPTS.sci_mode is True or (_OPTS.sci_mode is False and not integral):
        shown = values if arr.size <= threshold else _edges(values, _OPTS.edgeitems)
        fmt = _float_formatter(shown, _OPTS.precision, _OPTS.sci_mode)
        return np.array2string(arr, formatter={"float_kind": fmt}, **kwargs)
    floatmode = "maxprec" if integral else "fixed"
    return np.array2string(
        arr, precision=_OPTS.precision, floatmode=floatmode, suppress_small=_OPTS.sci_mode is False, **kwargs
    )


def _edges(values: np.ndarray, edgeitems: int) -> np.ndarray:
    """The elements a summarized print shows (the first and last `edgeitems` of each dim)."""
    for axis, n in enumerate(values.shape):
        if n > 2 * edgeitems:
            idx = np.r_[0:edgeitems, n - edgeitems : n]
            values = np.take(values, idx, axis=axis)
    return values

"""Devices: where a tensor lives and where a program runs (the host CPU or an accelerator)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Device:
    """Where a tensor lives: the host CPU ("cpu") or accelerator `index` ("gpu"). Get one with
    `as_device`, which returns one shared object per device (compared by identity in op calls)."""

    kind: str = "cpu"
    index: int = 0

    @property
    def is_accelerator(self) -> bool:
        return self.kind != "cpu"

    @property
    def type(self) -> str:
        """PyTorch's name for the kind: "cpu" or "cuda" (`x.device.type == "cuda"`)."""
        return "cuda" if self.is_accelerator else "cpu"

    def __repr__(self) -> str:
        return f"{self.kind}:{self.index}"

    def __str__(self) -> str:
        return repr(self)


CPU_DEVICE = Device("cpu", 0)
_DEVICES: dict[tuple[str, int], Device] = {("cpu", 0): CPU_DEVICE}
_KINDS = {"cpu": "cpu", "gpu": "gpu", "cuda": "gpu", "accelerator": "gpu"}


def names_device(value: Any) -> bool:
    """Whether `value` is a Device or a device's name ("cpu", "cuda:0", "gpu") rather than, say,
    a dtype: how `Module.to` tells its two arguments apart."""
    return isinstance(value, Device) or (isinstance(value, str) and value.partition(":")[0].strip().lower() in _KINDS)


def as_device(spec: Any) -> Device:
    """The Device named by `spec`: a Device, "cpu", "gpu", "gpu:1", PyTorch's "cuda:0", an int
    (accelerator N, as `torch.device(1)`), or a `torch.device` (by its string)."""
    if isinstance(spec, Device):
        return _DEVICES.setdefault((spec.kind, spec.index), spec)
    if isinstance(spec, int) and not isinstance(spec, bool) and spec >= 0:
        spec = f"gpu:{spec}"
    text = str(spec).strip().lower()
    kind, _, index = text.partition(":")
    if kind not in _KINDS or (index and not index.isdigit()) or (kind == "cpu" and index not in ("", "0")):
        raise ValueError(f"device must be 'cpu', 'gpu', 'gpu:N' or 'cuda:N', got {spec!r}")
    key = (_KINDS[kind], int(index or 0))
    device = _DEVICES.get(key)
    if device is None:
        device = _DEVICES[key] = Device(*key)
    return device

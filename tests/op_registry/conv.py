"""Registry entries for nabla.ops.conv."""

from __future__ import annotations

from .spec import OpSpec

SPECS: list[OpSpec] = []

"""Registry entries for nabla.ops.custom."""

from __future__ import annotations

from .spec import OpSpec

SPECS: list[OpSpec] = []

"""Registry entries for nabla.ops.creation."""

from __future__ import annotations

from .spec import OpSpec

SPECS: list[OpSpec] = []

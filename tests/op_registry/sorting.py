"""Registry entries for nabla.ops.sorting."""

from __future__ import annotations

from .spec import OpSpec

SPECS: list[OpSpec] = []

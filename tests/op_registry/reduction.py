"""Registry entries for nabla.ops.reduction."""

from __future__ import annotations

from .spec import OpSpec

SPECS: list[OpSpec] = []

"""Registry entries for nabla.ops.indexing."""

from __future__ import annotations

from .spec import OpSpec

SPECS: list[OpSpec] = []

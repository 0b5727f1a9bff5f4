"""Registry entries for nabla.ops.linalg."""

from __future__ import annotations

from .spec import OpSpec

SPECS: list[OpSpec] = []

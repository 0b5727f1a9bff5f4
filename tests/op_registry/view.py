"""Registry entries for nabla.ops.view."""

from __future__ import annotations

from .spec import OpSpec

SPECS: list[OpSpec] = []

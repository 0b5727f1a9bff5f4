"""Registry entries for nabla.ops.control_flow."""

from __future__ import annotations

from .spec import OpSpec

SPECS: list[OpSpec] = []

"""PyTorch as an optional numerical oracle for the tests.

Test modules import `torch`, `TF` (`torch.nn.functional`), `torch_func` (`torch.func`) and the
`needs_torch` marker from here instead of each guarding its own import: when PyTorch is not
installed these names are None and every test marked `needs_torch` is skipped, while the rest of
the suite still runs.
"""

from __future__ import annotations

import pytest

try:
    import torch
    import torch.func as torch_func
    import torch.nn.functional as TF
except ImportError:  # torch is an optional oracle
    torch = None
    torch_func = None
    TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

__all__ = ["TF", "needs_torch", "torch", "torch_func"]

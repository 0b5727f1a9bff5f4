"""torch.nn.modules.batchnorm's names (the classes live in `normalization.py`), so code that
checks `isinstance(m, nn.modules.batchnorm._BatchNorm)` in an init loop finds them."""

from .lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm, _BatchNorm, _NormBase

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "SyncBatchNorm",
    "_BatchNorm",
    "_NormBase",
]

"""Learning-rate schedulers (PyTorch's `torch.optim.lr_scheduler`, same formulas and values).

A scheduler only changes Python floats in `optimizer.param_groups` ("lr", and "momentum" or
"betas" for OneCycleLR and CyclicLR). The optimizer feeds those to its graph as inputs, so a
schedule never changes the training step's graph: nothing recompiles.
"""

from .base import LRScheduler
from .cyclic import CyclicLR, OneCycleLR
from .schedules import (
    ChainedScheduler,
    ConstantLR,
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    ReduceLROnPlateau,
    SequentialLR,
    StepLR,
)

_LRScheduler = LRScheduler  # torch's older name, still subclassed by existing code

__all__ = [
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
]

"""Dropout: elementwise (`dropout`), whole channels (`dropout1d/2d/3d`), and SELU's alpha dropout.

Masks come from nabla's random ops, whose seed is a graph input: a training step draws new
masks every call without changing the graph. The `inplace=` flag is accepted and ignored
(results are always new tensors).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.common import dtypes as _dt

from ._checks import in_place as _in_place

__all__ = ["alpha_dropout", "dropout", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout"]

# -selu_alpha * selu_scale: the value SELU saturates to, which alpha dropout drops to.
_ALPHA_PRIME = 1.7580993408473766


def _check(input: Any, p: Any, op: str) -> float:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    if not _dt.is_float(input.dtype):
        raise TypeError(f"{op}: input must be a floating-point tensor, got dtype {input.dtype.name}")
    if isinstance(p, bool) or not isinstance(p, int | float | np.integer | np.floating):
        raise TypeError(f"{op}: p must be a number, got {p!r}")
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    return float(p)


def _keep_mask(shape: tuple, p: float, dtype: Any) -> Tensor:
    """1 with probability 1 - p, else 0, in `dtype`."""
    return nb.cast(nb.bernoulli(1.0 - p, shape), dtype)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p) (in training).

    Args:
        input: a floating-point tensor.
        p: probability of zeroing an element, in [0, 1].
        training: apply dropout; when False the input is returned unchanged.
        inplace: write the result into `input` and return it.

    Example:
        >>> y = F.dropout(nb.ones(1000), p=0.25)   # entries are 0 or 4/3
    """
    p = _check(input, p, "dropout")
    return _in_place(input, nb.dropout(input, p, bool(training)), inplace)


def _feature_shape(input: Tensor, spatial: int, op: str) -> tuple:
    """Mask shape (N, C, 1, ...) (or (C, 1, ...) unbatched): one draw per channel."""
    if input.ndim not in (spatial + 1, spatial + 2):
        raise ValueError(
            f"{op}: expected {spatial + 1}-D (unbatched) or {spatial + 2}-D (batched) input, got shape {input.shape}"
        )
    lead = input.ndim - spatial
    return tuple(input.shape[:lead]) + (1,) * spatial


def _feature_dropout(input: Tensor, p: float, training: bool, spatial: int, op: str) -> Tensor:
    shape = _feature_shape(input, spatial, op)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    return input * (_keep_mask(shape, p, input.dtype) * (1.0 / (1.0 - p)))


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) with probability p; scale the rest by 1 / (1 - p).

    Args:
        input: (N, C, L) or (C, L), floating point.
        p: probability of zeroing a channel, in [0, 1].
        training: apply dropout; when False the input is returned unchanged.
        inplace: write the result into `input` and return it.

    Example:
        >>> F.dropout1d(nb.ones(2, 4, 8), 0.5).shape
        (2, 4, 8)
    """
    return _in_place(input, _feature_dropout(input, _check(input, p, "dropout1d"), training, 1, "dropout1d"), inplace)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) with probability p; scale the rest by 1 / (1 - p).

    A 3-D input is taken as (N, C, L) (channel-wise 1-D dropout), as PyTorch does today (with
    the same warning).

    Args:
        input: (N, C, H, W) or (N, C, L), floating point.
        p: probability of zeroing a channel, in [0, 1].
        training: apply dropout; when False the input is returned unchanged.
        inplace: write the result into `input` and return it.

    Example:
        >>> F.dropout2d(nb.ones(2, 4, 5, 5), 0.5).shape
        (2, 4, 5, 5)
    """
    p = _check(input, p, "dropout2d")
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: received a 3-D input; as PyTorch, it is taken as (N, C, L) and whole channels are "
            "dropped (1-D channel dropout). Use dropout1d for that, or a 4-D input.",
            stacklevel=2,
        )
        return _in_place(input, _feature_dropout(input, p, training, 1, "dropout2d"), inplace)
    return _in_place(input, _feature_dropout(input, p, training, 2, "dropout2d"), inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p.

    Args:
        input: (N, C, D, H, W) or (C, D, H, W), floating point.
        p: probability of zeroing a channel, in [0, 1].
        training: apply dropout; when False the input is returned unchanged.
        inplace: write the result into `input` and return it.

    Example:
        >>> F.dropout3d(nb.ones(2, 4, 3, 3, 3), 0.5).shape
        (2, 4, 3, 3, 3)
    """
    return _in_place(input, _feature_dropout(input, _check(input, p, "dropout3d"), training, 3, "dropout3d"), inplace)


def _alpha(input: Tensor, p: float, training: bool, shape: tuple) -> Tensor:
    """PyTorch's alpha dropout: dropped entries become -alpha', then an affine map keeps the mean
    and variance of a standard normal input."""
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = _keep_mask(shape, p, input.dtype)
    a = 1.0 / math.sqrt((_ALPHA_PRIME**2 * p + 1.0) * (1.0 - p))
    b = (keep - 1.0) * (_ALPHA_PRIME * a) + _ALPHA_PRIME * a * p
    return input * (keep * a) + b


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout (for SELU networks): keeps zero mean and unit variance. Off unless training.

    Args:
        input: a floating-point tensor.
        p: probability of dropping an element, in [0, 1].
        training: apply dropout (default False, as PyTorch).
        inplace: write the result into `input` and return it.

    Example:
        >>> F.alpha_dropout(nb.ones(4), 0.5).tolist()  # training=False: unchanged
        [1.0, 1.0, 1.0, 1.0]
    """
    p = _check(input, p, "alpha_dropout")
    return _in_place(input, _alpha(input, p, bool(training), tuple(input.shape)), inplace)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels of (N, C, *) (one draw per sample and channel).

    Args:
        input: (N, C, *), floating point.
        p: probability of dropping a channel, in [0, 1].
        training: apply dropout (default False, as PyTorch).
        inplace: write the result into `input` and return it.

    Example:
        >>> F.feature_alpha_dropout(nb.ones(2, 3, 4), 0.5, training=True).shape
        (2, 3, 4)
    """
    p = _check(input, p, "feature_alpha_dropout")
    if input.ndim < 2:
        raise ValueError(f"feature_alpha_dropout: expected input of shape (N, C, *), got {input.shape}")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _in_place(input, _alpha(input, p, bool(training), shape), inplace)

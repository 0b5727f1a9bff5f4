"""Lookup tables: `embedding` (rows of a weight matrix by index) and `one_hot`."""

from __future__ import annotations

from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.common import dtypes as _dt

__all__ = ["embedding", "one_hot"]


def _padding_idx(padding_idx: Any, num_embeddings: int) -> int | None:
    if padding_idx is None:
        return None
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, int | np.integer):
        raise TypeError(f"embedding: padding_idx must be an int or None, got {padding_idx!r}")
    p = int(padding_idx)
    if not -num_embeddings <= p < num_embeddings:
        raise ValueError(f"embedding: padding_idx={p} must be within num_embeddings={num_embeddings}")
    return p + num_embeddings if p < 0 else p


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of `weight` at the integer indices `input`: the result has shape (*input.shape, D).

    Args:
        input: integer tensor of indices in [0, num_embeddings).
        weight: (num_embeddings, D).
        padding_idx: the row at this index gets no gradient (it still appears in the output,
            as in PyTorch). Negative values count from the end.
        max_norm: renormalizing rows in place is not supported (must be None).
        norm_type: unused without max_norm.
        scale_grad_by_freq: not supported (must be False).
        sparse: accepted; the gradient is always a dense tensor with the same values.

    Example:
        >>> F.embedding(nb.tensor([[0, 2]]), nb.ones(5, 3)).shape
        (1, 2, 3)
    """
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError("embedding: input and weight must be Tensors")
    if not _dt.is_integer(input.dtype):
        raise TypeError(f"embedding: input must be an integer tensor of indices, got dtype {input.dtype.name}")
    if weight.ndim != 2:
        raise ValueError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got shape {weight.shape}")
    if max_norm is not None:
        raise NotImplementedError("embedding: max_norm is not supported (it renormalizes weight rows in place)")
    if scale_grad_by_freq:
        raise NotImplementedError("embedding: scale_grad_by_freq=True is not supported")
    pad = _padding_idx(padding_idx, weight.shape[0])
    flat = nb.reshape(input, (input.numel(),))
    out = nb.reshape(nb.index_select(weight, 0, flat), (*input.shape, weight.shape[1]))
    if pad is None:
        return out
    # Same values; positions that read the padding row pass their gradient to a detached copy.
    is_pad = nb.unsqueeze(nb.equal(input, pad), -1)
    return nb.where(is_pad, nb.detach(out), out)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding with a new last dim of size num_classes (-1: max(tensor) + 1,
    which reads the data).

    Args:
        tensor: integer class values in [0, num_classes).
        num_classes: size of the new last dimension, or -1 to infer it from the data.

    Example:
        >>> F.one_hot(nb.tensor([0, 2]), 3).tolist()
        [[1, 0, 0], [0, 0, 1]]
    """
    return nb.one_hot(tensor, num_classes)
